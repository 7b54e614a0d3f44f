//! The dense index of a paged bundle (format version 4): inverted-file (IVF) partitions, so
//! that a query reads the vectors of the few partitions nearest it, not every vector.
//!
//! # Layout
//!
//! - **Directory** ([`Ivf`]): the dimension, the int8 scales of every dimension, the
//!   partition count, the default number probed, and the two sections.
//! - **Centroids** (section `centroids`): a record per partition, in file order, packed whole
//!   into slots (a postcard `Vec` per slot): the centroid, quantised to int8 with its own
//!   scale, its member count, and where its list lies in the `lists` stream. It weighs about
//!   `dim + 16` bytes a partition, 0.4 % of the lists at [`PARTITION`] vectors a partition:
//!   1.5 MB at 1M vectors.
//! - **Groups** (section `centroid groups`, above [`FLAT_UP_TO`] partitions): k-means then
//!   runs in two levels (`√partitions` groups, each split into its share of the partitions;
//!   see `index::kmeans`), and each group's partitions follow one another in section
//!   `centroids`. A record per group: its centroid (int8 with its scale), the slots of
//!   `centroids` that hold its partitions' records, how many records of the first come before
//!   them, and how many are its. Readers find the section by name; a reader that does not know
//!   it reads every centroid, as it would without it.
//! - **Lists** (section `lists`, a byte stream cut into slots): each partition's members'
//!   chunk addresses (ascending, varint gaps), then their int8 rows in the same order.
//!   Partitions follow a nearest-neighbour chain of their centroids ([`kmeans::chain`]), so
//!   the partitions a query probes tend to lie side by side and are read in fewer ranges.
//! - **Coded lists** (files with the header flag [`CODED`], which builds set for an index of
//!   more than one partition): a list holds, instead of its members' rows, where their rows
//!   start in section `rows` (a varint), their addresses, then for each member a binary
//!   code of its row against the partition's centroid (a bit a dimension, set where the row
//!   exceeds it), a factor (`f32`) and the first 8 bytes of the BLAKE3 hash of its row: 60
//!   bytes a member of 384 dimensions, against 384 for its row.
//! - **Rows** (section `rows`, with [`CODED`]): the int8 rows, in the order of the lists,
//!   whole rows a slot. A search reads the rows it rescores alone
//!   ([`PagedFile::pieces`]), each checked against the hash its list keeps (a slot's proof
//!   would cost more than the row), and a rebuild reads whole slots, checked as any slot.
//!
//! # Search
//!
//! The query is scored against the centroids; the `probe` nearest partitions are read, in
//! one read of the slots they lie in, and every allowed member is scored as
//! [`DenseIndex`] scores it (`(q ⊙ scales) · row`, the very same floats; an f32 index is
//! stored, and so scored, in its int8 form). So probing every partition of lists of rows is
//! exact search, and a bundle of at most [`PARTITION`] vectors (one partition, never coded)
//! always answers exactly. When fewer than `k` of the members read are allowed (a selective
//! filter), twice as many partitions are probed, until `k` are found or all are read.
//!
//! A member of a coded list is scored by estimate from its code (RaBitQ's
//! estimator, without its random rotation); the [`RESCORE`] × `k` best estimates (at least
//! [`MIN_RESCORED`]) are then scored with their rows, read together in one more read, as
//! above, and the `k` best of those returned: the scores a search returns are exact, what it
//! may miss is a vector its code underestimates.
//!
//! A search that does not say how many partitions to probe probes as many as have their
//! centroid within [`REACH`] (1.3) times the query's distance to the nearest centroid, from a
//! quarter to twice the index's `probe` (by default 4 to 32 of [`PROBE`]): SPANN's
//! query-aware pruning. A query near one cluster reads few lists; one between clusters, where
//! a fixed probe misses more, reads more.
//!
//! Without groups, a search reads every centroid (the slots stay in the page cache, within
//! its budget). With them, it reads the groups' records, then the centroids of the groups
//! nearest the query, best first, until they hold 8 times the partitions it may probe,
//! and picks among those: what it reads of the centroids depends on the probe, not on the
//! corpus (at 1M vectors, about 62 groups of 63 partitions: the groups weigh 25 KB, and
//! probing 16 reads 2 or 3 groups' centroids, about 60 KB, instead of 1.5 MB; the default,
//! which may probe 32, about 190 KB).
//!
//! # Measured
//!
//! `make bench` (section "Dense partitions of format 4"): SciFact's 11,289 real int8 vectors
//! (all-MiniLM-L6-v2) in 44 partitions, its 809 judged train queries embedded, recall@10
//! against exact search, a cold query (empty cache) reading the centroids and its lists in
//! 16 KB slots:
//!
//! | probed | recall@10 | ranges | bytes |
//! |---:|---:|---:|---:|
//! | 4 | 0.838 | 3.7 | 579 KB |
//! | 8 | 0.929 | 5.2 | 1.09 MB |
//! | 16 | 0.984 | 6.7 | 2.04 MB |
//! | 32 | 0.999 | 6.9 | 3.58 MB |
//! | **within reach** (default) | **0.995** | 6.1 | 2.60 MB |
//!
//! These are lists of rows (`coded: false`). Coded lists, as builds write them, on the same
//! vectors and queries, probing within reach (a scratch run over the saved bundle, cold
//! queries): recall@10 0.986 in 506 KB a query for `k = 10` (100 rows rescored), against 0.995
//! in 2.60 MB; recall@100 0.887 in 544 KB for `k = 100` (200 rescored), against 0.984.
//! Rescoring 20 found only 0.877 of the 10, and 0.879 probing every partition: the estimate,
//! not the probe, caps what a coded search finds, hence [`MIN_RESCORED`]. nDCG@10 on
//! SciFact (`eval beir --format 4`) is the same with coded lists: dense 0.6780, hybrid 0.7229.
//!
//! What a fixed probe finds is not what ranks: nDCG@10 of dense retrieval on the same queries
//! (`edgerag eval beir --format 4 --mode dense`, the in-memory HNSW index of format 3: 0.6816)
//! follows how many of the judged documents reach the top 100, which takes more partitions
//! than the top 10 does. Probing 16 gives 0.6690, 23 gives 0.6768, 32 gives 0.6804; probing
//! within reach gives 0.6780 from about 23 partitions a query on average (hybrid: 0.7224,
//! format 3 0.7261). At about the same mean a fixed probe does nearly as well on SciFact (23:
//! 0.6768); the rule gains more at a smaller mean (within 1.2 times, at least 8: 0.6746 from
//! 16 partitions on average, against 0.6690 for a fixed 16) and with more partitions (below).
//!
//! (k-means++ seeding; from random seeds, probing 16 found 0.976 in 1.78 MB, a little less
//! per byte read.)
//!
//! Groups cost some recall, mostly through the two-level k-means rather than through what a
//! search reads of the centroids. The same vectors in partitions of about 32, so that there
//! are more than [`FLAT_UP_TO`]: 352 in one level, 362 in two (18 groups):
//!
//! | probed | one level: recall@10 | bytes | two levels: recall@10 | bytes |
//! |---:|---:|---:|---:|---:|
//! | 16 | 0.890 | 522 KB | 0.852 | 471 KB |
//! | 32 | 0.942 | 848 KB | 0.929 | 824 KB |
//! | 64 | 0.978 | 1.44 MB | 0.973 | 1.39 MB |
//! | 128 | 0.996 | 2.45 MB | 0.995 | 2.36 MB |
//! | within reach | 0.932 | 663 KB | 0.916 | 691 KB |
//!
//! Probing within reach finds more a byte read there: 0.932 in 663 KB, between what fixed
//! probes of 16 and 32 find (0.890 and 0.942) in 522 and 848 KB.
//!
//! Reading groups until they hold 16 times the partitions probed, not 8, finds 0.864 at
//! probe 16, for 11 % more bytes. At this size the whole centroid table is 140 KB; at 1M
//! vectors it is 1.5 MB, which two levels no longer read.
//!
//! Real queries sit far from their neighbours' centroids (one partition holds about half of
//! the top 10), so a corpus this small must probe a third of it; ordering the partitions by
//! the chain took a query's ranges at probe 16 from 11.3 (k-means order) to about 7. The probe
//! is a count, not a share: at 1M vectors the same 16 partitions read about the same bytes
//! of lists, and the groups keep what is read of the centroids about the same too. Vectors
//! that hardly cluster (the bench's synthetic ones) put every centroid at about the same
//! distance from a query, so a search left to its default probes 32 there: 3.3 MB of lists
//! a cold query at 1M vectors, against 1.6 MB probing 16.
//!
//! [`kmeans::chain`]: crate::index::kmeans::chain

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::paged::{CODED, PagedFile, PagedWriter, RangeSource};
use super::varint;
use crate::index::dense::{
    DenseIndex, Int8Rows, Quantization, dequantized, dot, dot_i8, dot_i8_bytes, scaled,
};
use crate::index::kmeans::{self, Partitions, chain};
use crate::index::{Scored, top_k};
use crate::{Error, Result};

/// How a dense index is partitioned and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IvfParams {
    /// Vectors a partition, about.
    pub partition: usize,
    /// Partitions a search probes unless told otherwise.
    pub probe: u32,
    /// Partitions up to which the index has one level; above, they are grouped, and a search
    /// reads the centroids of the groups nearest the query only.
    pub flat_up_to: usize,
    /// Whether the lists of an index of more than one partition hold a binary code of each
    /// vector, its row apart ([`CODED`]), rather than its row.
    pub coded: bool,
}

/// Partitions of about [`PARTITION`] vectors, [`PROBE`] of them probed, grouped above
/// [`FLAT_UP_TO`], coded.
impl Default for IvfParams {
    fn default() -> Self {
        Self { partition: PARTITION, probe: PROBE, flat_up_to: FLAT_UP_TO, coded: true }
    }
}

/// Vectors a partition by default.
pub const PARTITION: usize = 256;
/// Partitions a search probes by default, typically (see [`REACH`] and the [module
/// docs](self)).
pub const PROBE: u32 = 16;
/// A search left to its default probes as many partitions as have their centroid within this
/// factor of the query's distance to the nearest centroid (SPANN's query-aware pruning): from a
/// quarter to twice the index's [`Ivf::probe`], fewer for a query near one cluster, more for
/// one between several. On SciFact's real queries that reads about as much as a fixed probe
/// of 23 and finds what one of 32 finds (see the [module docs](self)).
pub const REACH: f32 = 1.3;
/// Partitions up to which the index has one level by default (about 65,000 vectors).
pub const FLAT_UP_TO: usize = kmeans::FLAT_UP_TO;
/// A grouped search reads the centroids of the groups nearest the query until they hold this
/// many times the partitions it probes.
const WIDEN: usize = 8;
/// The name of the section of the groups' records.
const GROUPS: &str = "centroid groups";
/// The name of the section of the rows of a coded index ([`CODED`]).
const ROWS: &str = "rows";
/// Bytes of the hash of a row that its entry in a coded list keeps.
const ROW_HASH: usize = 8;
/// Bytes of an entry of a coded list besides its code: its factor (an `f32`) and its row's
/// hash.
const ENTRY_TAIL: usize = 4 + ROW_HASH;
/// A search of a coded index rescores, with their rows, this many times the `k` it returns of
/// the candidates its codes estimate best (at least [`MIN_RESCORED`]).
pub const RESCORE: usize = 2;
/// The fewest candidates a search of a coded index rescores: 38 KB of rows at 384
/// dimensions. On SciFact's vectors, rescoring 20 finds 0.91 of the exact 10, 50 finds 0.98,
/// 100 finds 0.99 (a sample of its documents as queries, their partitions within reach).
pub const MIN_RESCORED: usize = 100;
/// The longest list a reader accepts, and the most bytes of lists read at once.
const MAX_LIST: u64 = 64 << 20;
/// The most partitions a reader accepts (a billion vectors at [`PARTITION`] a partition).
const MAX_PARTITIONS: u32 = 1 << 22;

/// Where the dense index lies in a paged file, and what its directory holds of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ivf {
    /// Dimension of the vectors.
    pub dim: u32,
    /// The int8 scale of each dimension.
    pub scales: Vec<f32>,
    /// Vectors indexed.
    pub chunks: u32,
    /// Partitions.
    pub partitions: u32,
    /// Partitions a search probes unless told otherwise, typically: from a quarter to twice
    /// as many, as [`REACH`] says.
    pub probe: u32,
    /// The section of the centroid records.
    pub centroids: u32,
    /// The section of the lists.
    pub lists: u32,
}

/// A group's record: its centroid, and where its partitions' records lie in section
/// `centroids`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Group {
    /// The centroid is `scale · values`.
    scale: f32,
    values: Vec<i8>,
    /// The slots holding its records: `slots` from `slot`.
    slot: u32,
    slots: u32,
    /// Records of the first of them that come before the group's.
    skip: u32,
    /// Its partitions.
    count: u32,
}

/// A partition's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Centroid {
    /// The centroid is `scale · values`.
    scale: f32,
    values: Vec<i8>,
    /// Members.
    count: u32,
    /// Where its list lies in the lists stream.
    start: u64,
    len: u64,
}

impl Ivf {
    /// Writes `index` into new sections `centroids` and `lists` of `writer`, in slots of
    /// `slot` bytes, chunk `i` being at `addresses[i]` (ascending), partitioned by k-means from
    /// `seed` as `params` say. An f32 index is stored as int8.
    ///
    /// # Errors
    /// [`Error::Config`] when `addresses` does not cover the index's chunks or does not
    /// ascend; as [`PagedWriter::section`].
    pub fn write(
        writer: &mut PagedWriter,
        index: &DenseIndex,
        addresses: &[u32],
        slot: u32,
        params: IvfParams,
        seed: u64,
    ) -> Result<Self> {
        if addresses.len() != index.len() || !addresses.windows(2).all(|w| w[0] < w[1]) {
            return Err(Error::Config(format!(
                "{} ascending chunk addresses are needed for a dense index of {} chunks",
                addresses.len(),
                index.len()
            )));
        }
        let requantized;
        let rows = match index.int8_rows() {
            Some(rows) => rows,
            None => {
                let mut int8 = index.clone();
                int8.requantize(Quantization::Int8);
                requantized = int8;
                requantized.int8_rows().ok_or_else(|| Error::Config("no int8 rows".into()))?
            }
        };
        let Partitions { centroids, assignment, groups, firsts } =
            Partitions::build(&rows, params.partition, seed, params.flat_up_to);
        let dim = rows.dim;
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); centroids.len() / dim.max(1)];
        for (chunk, &p) in assignment.iter().enumerate() {
            members[p as usize].push(chunk);
        }
        // The partitions in chain order, each group's together (groups in chain order too).
        let runs: Vec<(Option<usize>, Vec<u32>)> = if groups.is_empty() {
            vec![(None, chain(&centroids, dim))]
        } else {
            let of = |g: usize| {
                let within = chain(&centroids[firsts[g] * dim..firsts[g + 1] * dim], dim);
                within.into_iter().map(|p| (firsts[g] + p as usize) as u32).collect()
            };
            chain(&groups, dim).into_iter().map(|g| (Some(g as usize), of(g as usize))).collect()
        };
        let coded = params.coded && members.iter().filter(|m| !m.is_empty()).count() > 1;
        let mut stream = Vec::new();
        // The rows of a coded index, in the order of the lists.
        let mut stored = Vec::with_capacity(rows.len() * dim);
        let mut records = Vec::new();
        // Each group and the records of its partitions.
        let mut spans = Vec::new();
        for (group, partitions) in runs {
            let first = records.len();
            for p in partitions {
                let (centroid, members) =
                    (&centroids[p as usize * dim..][..dim], &members[p as usize]);
                if members.is_empty() {
                    continue;
                }
                let (scale, values) = quantised(centroid);
                let start = stream.len() as u64;
                if coded {
                    let centre = in_row_units(scale, &values, rows.scales);
                    coded_list(&mut stream, &mut stored, &rows, addresses, members, &centre);
                } else {
                    list(&mut stream, &rows, addresses, members);
                }
                let len = stream.len() as u64 - start;
                let count = members.len() as u32;
                records.push(Centroid { scale, values, count, start, len });
            }
            if let Some(g) = group.filter(|_| records.len() > first) {
                spans.push((&groups[g * dim..][..dim], first..records.len()));
            }
        }
        let (centroids, starts) = writer.records("centroids", slot, &records)?;
        if !spans.is_empty() {
            // The slot a record lies in, and its place there.
            let place = |record: usize| {
                let slot = starts.partition_point(|&first| first <= record) - 1;
                (slot, record - starts[slot])
            };
            let groups: Vec<Group> = spans
                .into_iter()
                .map(|(centroid, members)| {
                    let ((first, skip), (last, _)) = (place(members.start), place(members.end - 1));
                    let (scale, values) = quantised(centroid);
                    Group {
                        scale,
                        values,
                        slot: first as u32,
                        slots: (last - first + 1) as u32,
                        skip: skip as u32,
                        count: members.len() as u32,
                    }
                })
                .collect();
            writer.records(GROUPS, slot, &groups)?;
        }
        // A coded list is about a sixth of a list of rows: in slots a quarter as large, what
        // a query reads past the lists it probes (to the ends of their first and last slots)
        // shrinks with them.
        let lists = writer.stream("lists", if coded { slot / 4 } else { slot }, &stream)?;
        if coded {
            // Whole rows a slot, however deep its proof (2³² slots at most).
            let row_slot = slot.max(u32::try_from(dim + 32 * 32).unwrap_or(u32::MAX));
            writer.section(ROWS, row_slot, |capacity| {
                Ok(stored.chunks((capacity / dim.max(1)).max(1) * dim.max(1)).collect())
            })?;
            writer.flag(CODED);
        }
        let too_many = || Error::Config("more than u32::MAX vectors".into());
        Ok(Self {
            dim: u32::try_from(dim).map_err(|_| too_many())?,
            scales: rows.scales.to_vec(),
            chunks: u32::try_from(rows.len()).map_err(|_| too_many())?,
            partitions: u32::try_from(records.len()).map_err(|_| too_many())?,
            probe: params.probe,
            centroids,
            lists,
        })
    }

    /// The `k` chunks (by address) whose vectors have the largest dot product with `query`
    /// among those for which `allow` holds, probing `probe` partitions (when `None`, those
    /// within [`REACH`] of the query, from a quarter to twice [`Ivf::probe`]; more when a
    /// filter leaves fewer than `k`): see the [module docs](self).
    ///
    /// # Errors
    /// [`Error::Query`] for a query of another dimension; [`Error::Decode`] for records or
    /// lists that do not add up; as [`PagedFile::slots`].
    pub async fn search<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        query: &[f32],
        k: usize,
        probe: Option<u32>,
        allow: impl Fn(u32) -> bool,
    ) -> Result<Vec<Scored>> {
        if query.len() != self.dim as usize {
            return Err(Error::Query(format!(
                "the query embedding has {} dimensions, the index {}",
                query.len(),
                self.dim
            )));
        }
        let groups = match file.section(GROUPS) {
            Some(section) => Some(self.groups(file, section).await?),
            None => None,
        };
        let layout = self.layout(file)?;
        let prepared = scaled(query, &self.scales);
        let typical = self.probe.max(1) as usize;
        let asked = probe.map(|p| p.max(1) as usize);
        let mut probe = asked.unwrap_or(typical.saturating_mul(2));
        let (mut nearest, mut complete) =
            self.nearest(file, groups.as_deref(), layout, query, probe).await?;
        if asked.is_none() {
            let reached = within_reach(&nearest[..probe.min(nearest.len())], query);
            probe = reached.clamp(typical.div_ceil(4), probe);
        }
        let (mut probed, mut found) = (HashSet::new(), Vec::new());
        // A coded index's candidates: `found` scores them by estimate, `chunk` being their
        // index here.
        let (mut estimator, mut candidates) = (None, Vec::new());
        let dim = self.dim as usize;
        loop {
            // The nearest partitions not probed yet.
            let next: Vec<&Centroid> =
                nearest.iter().take(probe).filter(|r| probed.insert(r.start)).collect();
            for (record, list) in next.iter().zip(self.lists(file, &next, layout).await?) {
                let members = list
                    .addresses
                    .iter()
                    .copied()
                    .zip(list.entries.chunks_exact(layout.entry(dim)));
                let members = members.enumerate().filter(|(_, (address, _))| allow(*address));
                match layout {
                    Layout::Rows => {
                        for (_, (chunk, row)) in members {
                            found.push(Scored { chunk, score: dot_i8_bytes(row, &prepared) });
                        }
                    }
                    Layout::Coded(_) => {
                        let estimator = estimator.get_or_insert_with(|| Estimator::new(&prepared));
                        let centre = in_row_units(record.scale, &record.values, &self.scales);
                        let base = estimator.base(&centre);
                        for (j, (chunk, entry)) in members {
                            let (code, tail) = entry.split_at(dim.div_ceil(8));
                            let (factor, hash) = tail.split_at(4);
                            let factor = f32::from_le_bytes(factor.try_into().unwrap_or_default());
                            let hash = hash.try_into().unwrap_or_default();
                            let score = base + factor * estimator.signed(code);
                            let row = list.first_row.saturating_add(j as u64);
                            found.push(Scored { chunk: candidates.len() as u32, score });
                            candidates.push(Candidate { chunk, row, hash });
                        }
                    }
                }
            }
            if found.len() >= k || (complete && probe >= nearest.len()) {
                break;
            }
            probe = probe.saturating_mul(2);
            if !complete {
                (nearest, complete) =
                    self.nearest(file, groups.as_deref(), layout, query, probe).await?;
            }
        }
        match layout {
            Layout::Rows => Ok(top_k(found, k)),
            Layout::Coded(rows) => {
                let best = top_k(found, k.saturating_mul(RESCORE).max(MIN_RESCORED));
                let best: Vec<&Candidate> =
                    best.iter().filter_map(|s| candidates.get(s.chunk as usize)).collect();
                let read = self.rows(file, rows, &best).await?;
                let rescored = best.iter().zip(read).map(|(candidate, row)| Scored {
                    chunk: candidate.chunk,
                    score: dot_i8_bytes(&row, &prepared),
                });
                Ok(top_k(rescored.collect::<Vec<_>>(), k))
            }
        }
    }

    /// The rows of `candidates` of a coded index (as stored, a byte a value), read together,
    /// each checked against the hash its list keeps.
    ///
    /// # Errors
    /// [`Error::CorruptedPage`] for a row that does not match its hash; [`Error::Decode`] for
    /// one past the section; as [`PagedFile::pieces`].
    async fn rows<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        rows: RowSection,
        candidates: &[&Candidate],
    ) -> Result<Vec<Vec<u8>>> {
        let dim = self.dim;
        let pieces = candidates
            .iter()
            .map(|c| rows.place(c.row, dim).map(|(slot, at)| (slot, at, dim)))
            .collect::<Result<Vec<_>>>()?;
        let read = file.pieces(rows.section, &pieces).await?;
        candidates
            .iter()
            .zip(read)
            .map(|(candidate, bytes)| {
                if row_hash(&bytes) != candidate.hash {
                    return Err(Error::CorruptedPage(format!(
                        "row {} of section {ROWS:?}",
                        candidate.row
                    )));
                }
                Ok(bytes)
            })
            .collect()
    }

    /// How the lists of this index in `file` hold its vectors.
    ///
    /// # Errors
    /// [`Error::Decode`] for a coded index without its rows, or rows that do not fit a slot.
    fn layout<S: RangeSource, B>(&self, file: &PagedFile<S, B>) -> Result<Layout> {
        if file.flags() & CODED == 0 {
            return Ok(Layout::Rows);
        }
        let section = file.section(ROWS);
        let capacity = section.and_then(|s| file.sections().get(s as usize)).map(|s| s.capacity());
        match (section, capacity) {
            (Some(section), Some(capacity)) if self.dim > 0 && capacity >= self.dim as usize => {
                let per_slot = u32::try_from(capacity / self.dim as usize).unwrap_or(u32::MAX);
                Ok(Layout::Coded(RowSection { section, per_slot }))
            }
            _ => Err(Error::Decode(format!(
                "the dense index has no section {ROWS:?} of rows of {} bytes",
                self.dim
            ))),
        }
    }

    /// Every vector of the index with its chunk's address, as the bundle in memory gives
    /// them (int8 rows times their scales). It reads every list: for rebuilding a corpus (to
    /// reuse its vectors), not for queries.
    ///
    /// # Errors
    /// [`Error::Decode`] for records or lists that do not add up; errors of reading them.
    pub async fn vectors<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
    ) -> Result<Vec<(u32, Vec<f32>)>> {
        let layout = self.layout(file)?;
        let records = self.records(file, layout).await?;
        let dim = self.dim as usize;
        let mut vectors = Vec::with_capacity(self.chunks as usize);
        let lists = self.lists(file, &records.iter().collect::<Vec<_>>(), layout).await?;
        let Layout::Coded(rows) = layout else {
            for list in lists {
                let rows = list
                    .entries
                    .chunks_exact(dim)
                    .map(|row| dequantized(&as_i8(row), &self.scales));
                vectors.extend(list.addresses.into_iter().zip(rows));
            }
            return Ok(vectors);
        };
        // Each member's address and where its row lies; the slots those are in, read whole.
        let mut placed = Vec::with_capacity(self.chunks as usize);
        for list in &lists {
            for (j, &address) in list.addresses.iter().enumerate() {
                placed.push((
                    address,
                    rows.place(list.first_row.saturating_add(j as u64), self.dim)?,
                ));
            }
        }
        let mut slots: Vec<u32> = placed.iter().map(|(_, (slot, _))| *slot).collect();
        slots.sort_unstable();
        slots.dedup();
        let payloads = file.slots(rows.section, &slots).await?;
        for (address, (slot, at)) in placed {
            let payload = slots.binary_search(&slot).ok().and_then(|i| payloads.get(i));
            let at = at as usize;
            let bytes = payload.and_then(|p| p.get(at..at + dim)).ok_or_else(|| {
                Error::Decode(format!("a row of the dense index lies past slot {slot}"))
            })?;
            vectors.push((address, dequantized(&as_i8(bytes), &self.scales)));
        }
        Ok(vectors)
    }

    /// The lists of the partitions of `records`, in order, read together in reads of at most
    /// [`MAX_LIST`] bytes.
    async fn lists<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        records: &[&Centroid],
        layout: Layout,
    ) -> Result<Vec<List>> {
        let mut lists = Vec::with_capacity(records.len());
        let mut rest = records;
        while !rest.is_empty() {
            let mut bytes = 0;
            let take = rest
                .iter()
                .take_while(|r| {
                    bytes += r.len;
                    // The first always: a list is at most MAX_LIST bytes.
                    bytes <= MAX_LIST || bytes == r.len
                })
                .count();
            let (batch, after) = rest.split_at(take);
            let spans: Vec<(u64, u64)> = batch.iter().map(|r| (r.start, r.len)).collect();
            let read = file.stream(self.lists, &spans, MAX_LIST).await?;
            for (r, bytes) in batch.iter().zip(&read) {
                lists.push(decode(bytes, r.count, layout, self.dim as usize)?);
            }
            rest = after;
        }
        Ok(lists)
    }

    /// The records of the partitions nearest `query`, nearest first, among which a search
    /// probing `probe` picks; and whether they are all the partitions. Without `groups`, all
    /// the partitions; with them, those of the groups nearest the query, until they hold
    /// [`WIDEN`] × `probe` partitions.
    async fn nearest<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        groups: Option<&[Group]>,
        layout: Layout,
        query: &[f32],
        probe: usize,
    ) -> Result<(Vec<Centroid>, bool)> {
        let wanted = probe.saturating_mul(WIDEN);
        let (records, complete) = match groups {
            None => (self.records(file, layout).await?, true),
            Some(groups) => self.grouped(file, groups, layout, query, wanted).await?,
        };
        let mut scored: Vec<(f32, Centroid)> =
            records.into_iter().map(|r| (r.scale * dot_i8(&r.values, query), r)).collect();
        // Stable: ties keep file order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok((scored.into_iter().map(|(_, r)| r).collect(), complete))
    }

    /// The records of the groups nearest `query`, best first, until they hold `wanted`
    /// partitions (all of them when the groups hold fewer); and whether that is every group.
    async fn grouped<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        groups: &[Group],
        layout: Layout,
        query: &[f32],
        wanted: usize,
    ) -> Result<(Vec<Centroid>, bool)> {
        let mut nearest: Vec<(f32, &Group)> =
            groups.iter().map(|g| (g.scale * dot_i8(&g.values, query), g)).collect();
        nearest.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut held = 0;
        let chosen: Vec<&Group> = nearest
            .into_iter()
            .map(|(_, g)| g)
            .take_while(|g| {
                let more = held < wanted;
                held += g.count as usize;
                more
            })
            .collect();
        let mut slots: Vec<u32> = chosen.iter().flat_map(|g| g.slot..g.slot + g.slots).collect();
        slots.sort_unstable();
        slots.dedup();
        let read = file.records::<Centroid>(self.centroids, &slots).await?;
        let mut records = Vec::new();
        for group in &chosen {
            let at = slots.partition_point(|&s| s < group.slot);
            let held = read[at..at + group.slots as usize].iter().flatten();
            let before = records.len();
            records.extend(held.skip(group.skip as usize).take(group.count as usize).cloned());
            if records.len() - before != group.count as usize
                || !records[before..].iter().all(|r| self.fits(r, layout))
            {
                return Err(Error::Decode(format!(
                    "a group of the dense index does not hold its {} centroid records",
                    group.count
                )));
            }
        }
        Ok((records, chosen.len() == groups.len()))
    }

    /// The records of the groups of partitions (section `section`), checked: of the index's
    /// dimension, within section `centroids`, their partitions adding up to the index's.
    async fn groups<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        section: u32,
    ) -> Result<Vec<Group>> {
        let sections = file.sections();
        let slots = |section: u32| sections.get(section as usize).map_or(0, |s| s.slots);
        let (own, centroids) = (slots(section), slots(self.centroids));
        let mut partitions = 0u64;
        let groups: Vec<Group> = if self.directory_fits() && own <= self.partitions {
            let all: Vec<u32> = (0..own).collect();
            file.records(section, &all).await?.into_iter().flatten().collect()
        } else {
            Vec::new()
        };
        let consistent = groups.iter().all(|g| {
            partitions += u64::from(g.count);
            g.values.len() == self.dim as usize
                && g.scale.is_finite()
                && g.scale >= 0.0
                && g.slots > 0
                && u64::from(g.slot) + u64::from(g.slots) <= u64::from(centroids)
        }) && partitions == u64::from(self.partitions);
        if !consistent {
            return Err(Error::Decode(format!(
                "the dense index's {} groups do not add up to {} partitions",
                groups.len(),
                self.partitions
            )));
        }
        Ok(groups)
    }

    /// Every partition's record, checked: one per partition, of the index's dimension, their
    /// lists one after the other, their members adding up to the chunks.
    async fn records<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        layout: Layout,
    ) -> Result<Vec<Centroid>> {
        let slots = file.sections().get(self.centroids as usize).map_or(0, |s| s.slots);
        // A slot holds at least one record.
        if self.partitions > MAX_PARTITIONS || slots > self.partitions {
            return Err(Error::Decode(format!(
                "the dense index has {} partitions in {slots} slots",
                self.partitions
            )));
        }
        let slots: Vec<u32> = (0..slots).collect();
        let records: Vec<Centroid> =
            file.records(self.centroids, &slots).await?.into_iter().flatten().collect();
        let (mut end, mut members) = (0u64, 0u64);
        let consistent = records.len() == self.partitions as usize
            && records.iter().all(|r| {
                let ok = self.fits(r, layout) && r.start == end;
                (end, members) = (end.saturating_add(r.len), members + u64::from(r.count));
                ok
            })
            && members == u64::from(self.chunks)
            && self.directory_fits();
        if !consistent {
            return Err(Error::Decode(format!(
                "the dense index's {} centroid records do not add up to {} partitions of {} \
                 chunks",
                records.len(),
                self.partitions,
                self.chunks
            )));
        }
        Ok(records)
    }

    /// Whether what the directory says of the index can be searched: a dimension, its
    /// scales, at most [`MAX_PARTITIONS`].
    fn directory_fits(&self) -> bool {
        self.dim > 0
            && self.partitions <= MAX_PARTITIONS
            && self.scales.len() == self.dim as usize
            && self.scales.iter().all(|s| s.is_finite() && *s >= 0.0)
    }

    /// Whether a partition's record is one of this index: a centroid of its dimension, a list
    /// of at most [`MAX_LIST`] bytes with room for its members' entries.
    fn fits(&self, r: &Centroid, layout: Layout) -> bool {
        r.values.len() == self.dim as usize
            && r.scale.is_finite()
            && r.scale >= 0.0
            && r.len <= MAX_LIST
            && u64::from(r.count).saturating_mul(layout.entry(self.dim as usize) as u64) <= r.len
    }
}

/// How many of the partitions `nearest` lie within [`REACH`] times the distance from `query`
/// to the nearest of their centroids.
fn within_reach(nearest: &[Centroid], query: &[f32]) -> usize {
    let norm: f32 = query.iter().map(|x| x * x).sum();
    let squared: Vec<f32> = nearest
        .iter()
        .map(|r| {
            let length: f32 = r.values.iter().map(|&v| f32::from(v) * f32::from(v)).sum();
            norm - 2.0 * r.scale * dot_i8(&r.values, query) + r.scale * r.scale * length
        })
        .collect();
    let nearest = squared.iter().copied().fold(f32::INFINITY, f32::min).max(0.0);
    squared.iter().filter(|&&d| d <= REACH * REACH * nearest).count()
}

/// `centroid` as int8 values and their scale.
fn quantised(centroid: &[f32]) -> (f32, Vec<i8>) {
    let scale = centroid.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
    let values = centroid.iter().map(|x| if scale > 0.0 { (x / scale).round() as i8 } else { 0 });
    (scale, values.collect())
}

/// How the lists of an index hold its vectors.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Each member's int8 row (files without [`CODED`]).
    Rows,
    /// Each member's code, factor and row hash (files with [`CODED`]); the rows lie apart.
    Coded(RowSection),
}

/// Where the rows of a coded index lie: section `section`, `per_slot` whole rows a slot, in
/// the order of the lists.
#[derive(Debug, Clone, Copy)]
struct RowSection {
    section: u32,
    per_slot: u32,
}

impl RowSection {
    /// The slot holding row `row` of `dim` bytes, and where the row starts in its payload.
    ///
    /// # Errors
    /// [`Error::Decode`] for a row past any slot.
    fn place(self, row: u64, dim: u32) -> Result<(u32, u32)> {
        let per_slot = u64::from(self.per_slot);
        let slot = u32::try_from(row / per_slot).map_err(|_| {
            Error::Decode(format!("row {row} of the dense index lies past its rows"))
        })?;
        // Below per_slot rows of dim bytes: within a slot's payload, a u32.
        Ok((slot, (row % per_slot) as u32 * dim))
    }
}

impl Layout {
    /// Bytes of a member's entry in a list, for vectors of `dim` dimensions.
    fn entry(self, dim: usize) -> usize {
        match self {
            Self::Rows => dim,
            Self::Coded(_) => dim.div_ceil(8) + ENTRY_TAIL,
        }
    }
}

/// A partition's list, decoded.
struct List {
    /// The members' chunk addresses, ascending.
    addresses: Vec<u32>,
    /// Where the members' rows start in section `rows` (a coded list; else 0).
    first_row: u64,
    /// The members' entries, one after the other ([`Layout::entry`] bytes each).
    entries: Vec<u8>,
}

/// A member of a coded list among a search's candidates.
struct Candidate {
    /// Its chunk's address.
    chunk: u32,
    /// Its row in section `rows`, and the hash of the row that its entry keeps.
    row: u64,
    hash: [u8; ROW_HASH],
}

/// Estimates the score `q′ · x` of the row `x` of a member of a coded list, `q′` being the
/// query times the scales, from its code: `q′ · c + f · Σᵢ ±q′ᵢ`, where `c` is its partition's
/// centroid, the signs those of `x − c` that the code keeps, and `f = ‖x − c‖² / ‖x − c‖₁`
/// the factor its entry keeps (RaBitQ's estimator of `q′ · (x − c)`, with the code's signs
/// as the unit vector's quantisation, without its random rotation).
struct Estimator<'a> {
    prepared: &'a [f32],
    /// For each byte of a code and each of its values, the sum of `q′ᵢ` over its set bits.
    table: Vec<f32>,
    /// `Σᵢ q′ᵢ`.
    total: f32,
}

impl<'a> Estimator<'a> {
    fn new(prepared: &'a [f32]) -> Self {
        let mut table = vec![0f32; prepared.len().div_ceil(8) * 256];
        for (byte, sums) in table.chunks_exact_mut(256).enumerate() {
            for value in 1..256usize {
                let bit = byte * 8 + value.trailing_zeros() as usize;
                sums[value] = sums[value & (value - 1)] + prepared.get(bit).copied().unwrap_or(0.0);
            }
        }
        Self { prepared, table, total: prepared.iter().sum() }
    }

    /// `q′ · c` for a partition's centroid `centre` (in the rows' units).
    fn base(&self, centre: &[f32]) -> f32 {
        dot(self.prepared, centre)
    }

    /// `Σᵢ ±q′ᵢ`, the signs being the bits of `code`.
    fn signed(&self, code: &[u8]) -> f32 {
        let set: f32 =
            code.iter().zip(self.table.chunks_exact(256)).map(|(&v, sums)| sums[v as usize]).sum();
        2.0 * set - self.total
    }
}

/// A partition's centroid (`scale · values`) in the units of the int8 rows: each dimension
/// over its scale (0 where the scale is 0, as every row's value is).
fn in_row_units(scale: f32, values: &[i8], scales: &[f32]) -> Vec<f32> {
    let unit = |(&v, &s): (&i8, &f32)| if s > 0.0 { scale * f32::from(v) / s } else { 0.0 };
    values.iter().zip(scales).map(unit).collect()
}

/// The code of `row` against its partition's centroid `centre` (bit `i` set where `row`
/// exceeds it in dimension `i`) and its factor `‖e‖² / ‖e‖₁`, `e` being `row − centre`.
fn code(row: &[i8], centre: &[f32]) -> (Vec<u8>, f32) {
    let mut code = vec![0u8; row.len().div_ceil(8)];
    let (mut squares, mut sum) = (0f32, 0f32);
    for (i, (&x, &c)) in row.iter().zip(centre).enumerate() {
        let e = f32::from(x) - c;
        if e > 0.0 {
            code[i / 8] |= 1 << (i % 8);
        }
        squares += e * e;
        sum += e.abs();
    }
    (code, if sum > 0.0 { squares / sum } else { 0.0 })
}

/// The hash of a row that its entry in a coded list keeps.
fn row_hash(row: &[u8]) -> [u8; ROW_HASH] {
    let mut hash = [0; ROW_HASH];
    hash.copy_from_slice(&blake3::hash(row).as_bytes()[..ROW_HASH]);
    hash
}

/// Bytes as the int8 values they store.
fn as_i8(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|&x| x as i8).collect()
}

/// Appends the list of `members` (chunk indices, ascending, at ascending addresses) to
/// `stream`: their addresses (varint gaps), then their rows.
fn list(stream: &mut Vec<u8>, rows: &Int8Rows<'_>, addresses: &[u32], members: &[usize]) {
    addresses_of(stream, addresses, members);
    for &chunk in members {
        stream.extend(rows.row(chunk).iter().map(|&x| x as u8));
    }
}

/// Appends the addresses of `members` to `stream`, as varint gaps.
fn addresses_of(stream: &mut Vec<u8>, addresses: &[u32], members: &[usize]) {
    let mut previous = 0;
    for &chunk in members {
        varint::push(stream, u64::from(addresses[chunk] - previous));
        previous = addresses[chunk];
    }
}

/// Appends the coded list of `members` (chunk indices, ascending, at ascending addresses) of a
/// partition whose centroid is `centre` (in the rows' units) to `stream`, and their rows to
/// `stored` (the rows of the lists before, in order): where its rows start there, the
/// addresses (varint gaps), then each member's code, factor and row hash.
fn coded_list(
    stream: &mut Vec<u8>,
    stored: &mut Vec<u8>,
    rows: &Int8Rows<'_>,
    addresses: &[u32],
    members: &[usize],
    centre: &[f32],
) {
    varint::push(stream, (stored.len() / rows.dim.max(1)) as u64);
    addresses_of(stream, addresses, members);
    for &chunk in members {
        let row = rows.row(chunk);
        let (code, factor) = code(row, centre);
        let start = stored.len();
        stored.extend(row.iter().map(|&x| x as u8));
        stream.extend(code);
        stream.extend(factor.to_le_bytes());
        stream.extend(row_hash(&stored[start..]));
    }
}

/// The list of `count` members of dimension `dim` that `bytes` hold, as `layout` lays it out.
fn decode(bytes: &[u8], count: u32, layout: Layout, dim: usize) -> Result<List> {
    let bad = || Error::Decode("a list of the dense index does not decode".into());
    let mut at = bytes;
    let first_row = match layout {
        Layout::Rows => 0,
        Layout::Coded { .. } => varint::take(&mut at).ok_or_else(bad)?,
    };
    // Each member takes at least a byte of address.
    let mut addresses = Vec::with_capacity((count as usize).min(bytes.len()));
    let mut address = 0u32;
    for i in 0..count {
        let next = varint::take_gap(&mut at, address).ok_or_else(bad)?;
        if i > 0 && next == address {
            return Err(bad());
        }
        address = next;
        addresses.push(address);
    }
    if Some(at.len()) != (count as usize).checked_mul(layout.entry(dim)) {
        return Err(bad());
    }
    Ok(List { addresses, first_row, entries: at.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::paged::{InMemory, VERSION, now};

    /// A file of one partition of dimension 2 whose record is `record` and whose lists stream
    /// is `stream`, indexing `chunks` chunks.
    fn file_with(record: Centroid, stream: &[u8], chunks: u32) -> PagedFile<InMemory, Ivf> {
        file_of(record, stream, chunks, 1)
    }

    /// [`file_with`], its directory claiming `partitions` partitions.
    fn file_of(
        record: Centroid,
        stream: &[u8],
        chunks: u32,
        partitions: u32,
    ) -> PagedFile<InMemory, Ivf> {
        grouped(record, stream, chunks, partitions, &[])
    }

    /// [`file_of`], with `groups` when there are any.
    fn grouped(
        record: Centroid,
        stream: &[u8],
        chunks: u32,
        partitions: u32,
        groups: &[Group],
    ) -> PagedFile<InMemory, Ivf> {
        let mut writer = PagedWriter::new();
        let (centroids, _) = writer.records("centroids", 4096, &[record]).unwrap();
        if !groups.is_empty() {
            writer.records(GROUPS, 4096, groups).unwrap();
        }
        let lists = writer.stream("lists", 4096, stream).unwrap();
        let (scales, probe) = (vec![0.01, 0.01], 1);
        let ivf = Ivf { dim: 2, scales, chunks, partitions, probe, centroids, lists };
        let bytes = writer.finish(ivf, VERSION, VERSION).unwrap();
        now(PagedFile::open(InMemory(bytes), 1 << 20)).unwrap()
    }

    fn search(file: &PagedFile<InMemory, Ivf>) -> Result<Vec<Scored>> {
        now(file.body().search(file, &[1.0, 0.0], 10, None, |_| true))
    }

    fn record(count: u32, len: u64) -> Centroid {
        Centroid { scale: 1.0, values: vec![1, 0], count, start: 0, len }
    }

    #[test]
    fn lists_are_read_back_and_hostile_ones_refused() {
        // Chunks 5 and 9: gaps 5 and 4, then their rows.
        let list = [5, 4, 100, 0, 0, 127];
        let hits = search(&file_with(record(2, 6), &list, 2)).unwrap();
        let chunks: Vec<u32> = hits.iter().map(|hit| hit.chunk).collect();
        assert_eq!(chunks, [5, 9]);
        assert!((hits[0].score - 1.0).abs() < 1e-6, "{hits:?}");
        let add_up = "do not add up";
        // Members that are not the chunks, rows longer than the list, a list past the stream.
        let cases = [(record(2, 6), 3, add_up), (record(4, 6), 4, add_up)];
        for (record, chunks, message) in cases {
            let error = search(&file_with(record, &list, chunks)).unwrap_err().to_string();
            assert!(error.contains(message), "{error}");
        }
        let past = search(&file_with(record(2, 60_000), &list, 2)).unwrap_err().to_string();
        assert!(past.contains("lie past its end"), "{past}");
        // A gap past any address, and rows of the wrong length.
        let bad = "a list of the dense index does not decode";
        let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 4, 1, 1, 1, 1];
        let error = search(&file_with(record(2, 15), &huge, 2)).unwrap_err().to_string();
        assert!(error.contains(bad), "{error}");
        let error = search(&file_with(record(2, 5), &list, 2)).unwrap_err().to_string();
        assert!(error.contains(bad), "{error}");
        // The same chunk twice.
        let twice = [5, 0, 100, 0, 0, 127];
        let error = search(&file_with(record(2, 6), &twice, 2)).unwrap_err().to_string();
        assert!(error.contains(bad), "{error}");
        // More slots of records than partitions, or more partitions than any reader takes.
        for partitions in [0, MAX_PARTITIONS + 1] {
            let file = file_of(record(2, 6), &list, 2, partitions);
            let error = search(&file).unwrap_err().to_string();
            assert!(error.contains("partitions in 1 slots"), "{error}");
        }
    }

    #[test]
    fn a_code_estimates_its_rows_score_exactly_when_its_residual_is_even() {
        // A row at ±3 from its centroid in every dimension (10, not a multiple of 8): its
        // factor is 3, and the estimate `q′ · c + 3 · Σ ±q′ᵢ` is the score itself.
        let centre: Vec<f32> = (0..10).map(|i| i as f32 - 4.5).collect();
        let signs = [1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0];
        let row: Vec<i8> = centre.iter().zip(signs).map(|(c, s)| (c + 3.0 * s) as i8).collect();
        let centre: Vec<f32> =
            row.iter().zip(signs).map(|(&x, s)| f32::from(x) - 3.0 * s).collect();
        let (code, factor) = code(&row, &centre);
        assert_eq!(code, [0b1011_1001, 0b10]);
        assert!((factor - 3.0).abs() < 1e-6, "{factor}");
        let prepared: Vec<f32> = (0..10).map(|i| (i as f32 * 0.7).sin()).collect();
        let estimator = Estimator::new(&prepared);
        let estimate = estimator.base(&centre) + factor * estimator.signed(&code);
        let exact: f32 = row.iter().zip(&prepared).map(|(&x, q)| f32::from(x) * q).sum();
        assert!((estimate - exact).abs() < 1e-4, "{estimate} for {exact}");
        // An uneven residual is estimated, not known: near, on the side its signs say.
        let uneven: Vec<i8> = row.iter().zip(0..).map(|(&x, i)| x + (i % 3) as i8).collect();
        let (code, factor) = super::code(&uneven, &centre);
        let estimate = estimator.base(&centre) + factor * estimator.signed(&code);
        let exact: f32 = uneven.iter().zip(&prepared).map(|(&x, q)| f32::from(x) * q).sum();
        assert!((estimate - exact).abs() < 0.5 * exact.abs().max(1.0), "{estimate} for {exact}");
    }

    #[test]
    fn the_partitions_within_reach_are_those_near_the_nearest() {
        let at = |x: f32, y: f32| {
            let (scale, values) = quantised(&[x, y]);
            Centroid { scale, values, count: 1, start: 0, len: 2 }
        };
        let query = [1.0, 0.0];
        // At distances 0.1 and 0.12 (within 1.3 times the nearest's), 0.2 and 1: in any order.
        let nearest = [at(0.8, 0.0), at(0.88, 0.0), at(0.0, 0.0), at(0.9, 0.0)];
        assert_eq!(within_reach(&nearest, &query), 2);
        // Around the query, at the same distance: all of them.
        let around = [at(0.9, 0.1), at(0.9, -0.1), at(1.1, 0.1)];
        assert_eq!(within_reach(&around, &query), 3);
        assert_eq!(within_reach(&[], &query), 0);
    }

    #[test]
    fn groups_are_read_back_and_hostile_ones_refused() {
        let list = [5, 4, 100, 0, 0, 127];
        let group = |slot, slots, skip, count| Group {
            scale: 1.0,
            values: vec![1, 0],
            slot,
            slots,
            skip,
            count,
        };
        let file = |groups: &[Group]| grouped(record(2, 6), &list, 2, 1, groups);
        let hits = search(&file(&[group(0, 1, 0, 1)])).unwrap();
        assert_eq!(hits.iter().map(|hit| hit.chunk).collect::<Vec<_>>(), [5, 9]);
        // Slots past the table, none, partitions that do not add up, or a record of another
        // dimension.
        let add_up = "the dense index's 1 groups do not add up to 1 partitions";
        for hostile in [group(1, 1, 0, 1), group(0, 0, 0, 1), group(u32::MAX, 2, 0, 1)] {
            let error = search(&file(&[hostile])).unwrap_err().to_string();
            assert!(error.contains(add_up), "{error}");
        }
        let two = search(&file(&[group(0, 1, 0, 2)])).unwrap_err().to_string();
        assert!(two.contains(add_up), "{two}");
        let wide = Group { values: vec![1, 0, 0], ..group(0, 1, 0, 1) };
        let error = search(&file(&[wide])).unwrap_err().to_string();
        assert!(error.contains(add_up), "{error}");
        // A group that skips past its records, or whose record is not of the index.
        let held = "a group of the dense index does not hold its 1 centroid records";
        let error = search(&file(&[group(0, 1, 1, 1)])).unwrap_err().to_string();
        assert!(error.contains(held), "{error}");
        let odd = Centroid { values: vec![1], ..record(2, 6) };
        let error = search(&grouped(odd, &list, 2, 1, &[group(0, 1, 0, 1)])).unwrap_err();
        assert!(error.to_string().contains(held), "{error}");
    }
}
