//! Packing: which runs of units become chunks, and how much overlap each chunk carries.

use std::ops::Range;

use super::units::{Unit, UnitKind, largest_fitting};
use super::{ChunkConfig, Sizer};

/// The units of one chunk: `carry..first` is the overlap taken from the previous chunk,
/// `first..end` the chunk's own units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Draft {
    pub(super) carry: usize,
    pub(super) first: usize,
    pub(super) end: usize,
}

/// A run of whole regions (a section on one page) that is chunked on its own.
#[derive(Debug)]
struct Group {
    units: Range<usize>,
    /// Whether the group is one region; groups of several (small) regions become one chunk.
    single: bool,
}

/// Decides the chunks of a document's units (see the module docs of [`super`]).
pub(super) fn plan(
    text: &str,
    units: &[Unit],
    config: &ChunkConfig,
    sizer: &dyn Sizer,
) -> Vec<Draft> {
    let planner = Planner::new(text, units, config, sizer);
    let mut drafts = Vec::new();
    for group in planner.groups() {
        let packed = if group.single {
            planner.merge_small(planner.pack(group.units))
        } else {
            vec![group.units]
        };
        let fitted: Vec<Range<usize>> =
            packed.into_iter().flat_map(|draft| planner.split_to_max(draft)).collect();
        if group.single {
            drafts.extend(planner.add_overlap(&fitted));
        } else {
            drafts.extend(fitted.into_iter().map(|r| Draft {
                carry: r.start,
                first: r.start,
                end: r.end,
            }));
        }
    }
    drafts
}

/// A document's units with their configuration, sizer and size estimates.
struct Planner<'a> {
    text: &'a str,
    units: &'a [Unit],
    config: &'a ChunkConfig,
    sizer: &'a dyn Sizer,
    /// Size of the gap (whitespace) before each unit; 0 for the first.
    gaps: Vec<usize>,
    /// `prefix[i]`: sizes of units `..i` and of the gaps before them.
    prefix: Vec<usize>,
}

impl<'a> Planner<'a> {
    fn new(
        text: &'a str,
        units: &'a [Unit],
        config: &'a ChunkConfig,
        sizer: &'a dyn Sizer,
    ) -> Self {
        let gaps: Vec<usize> = units
            .iter()
            .enumerate()
            .map(|(i, unit)| match i.checked_sub(1) {
                Some(prev) => sizer.size(&text[units[prev].range.end..unit.range.start]),
                None => 0,
            })
            .collect();
        let mut prefix = Vec::with_capacity(units.len() + 1);
        let mut total = 0;
        prefix.push(total);
        for (unit, gap) in units.iter().zip(&gaps) {
            total += gap + unit.size;
            prefix.push(total);
        }
        Self { text, units, config, sizer, gaps, prefix }
    }

    /// Estimated size of the text spanning `units` (non-empty): the sum of the parts' sizes,
    /// exact for characters and close for tokens.
    fn size(&self, units: Range<usize>) -> usize {
        self.prefix[units.end] - self.prefix[units.start] - self.gaps[units.start]
    }

    /// Measured size of the text spanning `units` (non-empty) is at most `max`.
    fn fits_exactly(&self, units: Range<usize>) -> bool {
        let span = self.units[units.start].range.start..self.units[units.end - 1].range.end;
        self.sizer.size(&self.text[span]) <= self.config.max
    }

    fn headings_only(&self, units: Range<usize>) -> bool {
        self.units[units].iter().all(|u| u.kind == UnitKind::Heading)
    }

    /// Maximal runs of units of the same section and page; headings count as part of the
    /// content that follows them.
    fn regions(&self) -> Vec<Range<usize>> {
        let mut keys = Vec::with_capacity(self.units.len());
        let mut next_content = None;
        for unit in self.units.iter().rev() {
            let own = (unit.section, unit.page);
            keys.push(match (unit.kind, next_content) {
                (UnitKind::Heading, Some(content)) => content,
                _ => own,
            });
            if unit.kind != UnitKind::Heading {
                next_content = Some(own);
            }
        }
        keys.reverse();
        let mut regions: Vec<Range<usize>> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match regions.last_mut() {
                Some(last) if keys[last.start] == *key => last.end = i + 1,
                _ => regions.push(i..i + 1),
            }
        }
        regions
    }

    /// Regions, with runs of neighbours that are each below `min` joined while they fit `max`.
    fn groups(&self) -> Vec<Group> {
        let (min, max) = (self.config.min, self.config.max);
        let mut groups: Vec<Group> = Vec::new();
        for region in self.regions() {
            match groups.last_mut() {
                Some(last)
                    if self.size(last.units.clone()) < min
                        && self.size(region.clone()) < min
                        && self.size(last.units.start..region.end) <= max =>
                {
                    last.units.end = region.end;
                    last.single = false;
                }
                _ => groups.push(Group { units: region, single: true }),
            }
        }
        groups
    }

    /// Greedy packing of one region: units accumulate while the chunk stays within `target`,
    /// or within `max` while the chunk is still below `min` or holds only headings.
    fn pack(&self, region: Range<usize>) -> Vec<Range<usize>> {
        let ChunkConfig { target, max, min, .. } = *self.config;
        let mut drafts = Vec::new();
        let mut start = region.start;
        for next in region.start + 1..region.end {
            let grown = self.size(start..next + 1);
            let needs_more = self.size(start..next) < min || self.headings_only(start..next);
            if grown > target && !(needs_more && grown <= max) {
                drafts.push(start..next);
                start = next;
            }
        }
        drafts.push(start..region.end);
        drafts
    }

    /// Merges each draft below `min` into a neighbour while the result fits `max`: the
    /// previous one first, or the next one first for a draft that opens with a heading.
    fn merge_small(&self, mut drafts: Vec<Range<usize>>) -> Vec<Range<usize>> {
        let mut i = 0;
        while i < drafts.len() {
            if self.size(drafts[i].clone()) >= self.config.min {
                i += 1;
                continue;
            }
            let prev = i.checked_sub(1);
            let next = Some(i + 1).filter(|&n| n < drafts.len());
            let order = if self.units[drafts[i].start].kind == UnitKind::Heading {
                [next, prev]
            } else {
                [prev, next]
            };
            let partner = order.into_iter().flatten().find(|&j| {
                self.size(drafts[i.min(j)].start..drafts[i.max(j)].end) <= self.config.max
            });
            match partner {
                Some(j) => {
                    let low = i.min(j);
                    drafts[low].end = drafts[low + 1].end;
                    drafts.remove(low + 1);
                    i = low;
                }
                None => i += 1,
            }
        }
        drafts
    }

    /// `draft` whole if its measured size fits `max`, else cut into runs of units that do.
    /// Only needed where sizes do not add up exactly (tokens).
    fn split_to_max(&self, draft: Range<usize>) -> Vec<Range<usize>> {
        if self.fits_exactly(draft.clone()) {
            return vec![draft];
        }
        let mut pieces = Vec::new();
        let mut at = draft.start;
        while at < draft.end {
            let end = largest_fitting(at + 1, draft.end, |b| self.fits_exactly(at..b));
            pieces.push(at..end);
            at = end;
        }
        pieces
    }

    /// Turns consecutive drafts of one region into chunks, each starting with whole sentences
    /// carried over from the end of the previous one.
    fn add_overlap(&self, drafts: &[Range<usize>]) -> Vec<Draft> {
        let budget = (f64::from(self.config.overlap) * self.config.target as f64) as usize;
        let mut out = Vec::with_capacity(drafts.len());
        for (k, draft) in drafts.iter().enumerate() {
            let mut carry = match k.checked_sub(1) {
                Some(prev) => self.carry_start(drafts[prev].clone(), draft.clone(), budget),
                None => draft.start,
            };
            while carry < draft.start && !self.fits_exactly(carry..draft.end) {
                carry += 1;
            }
            out.push(Draft { carry, first: draft.start, end: draft.end });
        }
        out
    }

    /// First unit of the overlap of `next`: trailing prose sentences of `prev` totalling at
    /// most `budget`, keeping `next` within `max` and leaving `prev` at least one unit of its own.
    fn carry_start(&self, prev: Range<usize>, next: Range<usize>, budget: usize) -> usize {
        let mut carry = next.start;
        while carry > prev.start + 1 {
            let candidate = carry - 1;
            let eligible = self.units[candidate].kind == UnitKind::Sentence
                && self.size(candidate..next.start) <= budget
                && self.size(candidate..next.end) <= self.config.max;
            if !eligible {
                break;
            }
            carry = candidate;
        }
        carry
    }
}
