//! Routes: the first key of each slot of a section, from which an index finds the slot a key
//! lies in, by binary search.
//!
//! The directory keeps a section's routes when they encode to at most [`INLINE_ROUTES`] bytes
//! (the default; [`PagedWriter::with_inline_routes`]). Longer ones would make the directory,
//! which opening reads whole, grow with the corpus: they lie instead in a section of their own
//! named `"<name> routes"`, of `(slot, key)` records packed as [`PagedWriter::records`] packs
//! them, and the directory keeps the routes of *that* section. A lookup then reads the one
//! slot of it that routes the key (kept in the page cache like any other), and the file's
//! header sets [`ROUTED`], so that readers older than this layout refuse it.
//!
//! [`PagedWriter::with_inline_routes`]: super::PagedWriter::with_inline_routes
//! [`PagedWriter::records`]: super::PagedWriter::records

use serde::de::DeserializeOwned;

use super::{PagedFile, ROUTED, RangeSource, route};
use crate::Result;

/// Bytes of the longest routes the directory keeps by default: four indexes' worth keep the
/// directory of any corpus within one opening read.
pub const INLINE_ROUTES: usize = 4 << 10;

/// The name of the section that holds the routes of section `name`, when they have one.
pub(crate) fn section_name(name: &str) -> String {
    format!("{name} routes")
}

/// The routes of one section of a file, as a reader finds them.
#[derive(Debug)]
pub(crate) struct Routes<'a, S, B, K> {
    file: &'a PagedFile<S, B>,
    /// What the directory keeps: the routes, or those of the routes' own section.
    top: &'a [K],
    /// The routes' own section, if they have one.
    section: Option<u32>,
}

impl<'a, S: RangeSource, B, K: Clone + DeserializeOwned> Routes<'a, S, B, K> {
    /// The routes of section `section` of `file`, `top` being what its index keeps of them in
    /// the directory.
    pub(crate) fn of(file: &'a PagedFile<S, B>, section: u32, top: &'a [K]) -> Self {
        let own = || {
            let name = &file.sections().get(section as usize)?.name;
            file.section(&section_name(name))
        };
        let section = if file.flags() & ROUTED == 0 { None } else { own() };
        Self { file, top, section }
    }

    /// For each of `items`, the last route for which `before(item, key)` holds, as the slot it
    /// routes to and its key; `None` where it holds for none. `before` must hold for a leading
    /// run of the routes, as for `partition_point` (`key <= item`, for instance). Routes in a
    /// section of their own are read in one call for all the items.
    ///
    /// # Errors
    /// As [`PagedFile::records`].
    pub(crate) async fn locate<T>(
        &self,
        items: &[T],
        before: impl Fn(&T, &K) -> bool,
    ) -> Result<Vec<Option<(u32, K)>>> {
        let last = |item: &T, keys: &[K]| route(keys.partition_point(|key| before(item, key)));
        let tops: Vec<Option<u32>> = items.iter().map(|item| last(item, self.top)).collect();
        let Some(section) = self.section else {
            let found = |at: Option<u32>| Some((at?, self.top.get(at? as usize)?.clone()));
            return Ok(tops.into_iter().map(found).collect());
        };
        let mut slots: Vec<u32> = tops.iter().flatten().copied().collect();
        slots.sort_unstable();
        slots.dedup();
        let read: Vec<Vec<(u32, K)>> = self.file.records(section, &slots).await?;
        let found = |item: &T, top: Option<u32>| {
            let records = read.get(slots.binary_search(&top?).ok()?)?;
            let at = route(records.partition_point(|(_, key)| before(item, key)))?;
            records.get(at as usize).cloned()
        };
        Ok(items.iter().zip(tops).map(|(item, top)| found(item, top)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::paged::{InMemory, PagedWriter, VERSION, now};

    /// A file of one data section whose routes are `keys` (the section's slots are empty).
    fn file(keys: &[String], inline: usize) -> PagedFile<InMemory, Vec<String>> {
        let mut writer = PagedWriter::new().with_inline_routes(inline);
        let data = writer.section("words", 1024, |_| Ok(vec![[0u8; 1]; keys.len()])).unwrap();
        let top = writer.routes(data, 2048, keys.to_vec()).unwrap();
        let bytes = writer.finish(top, VERSION, VERSION).unwrap();
        now(PagedFile::open(InMemory(bytes), 1 << 20)).unwrap()
    }

    #[test]
    fn routes_in_their_own_section_route_as_in_the_directory() {
        let keys: Vec<String> = (0..5000).map(|i| format!("{:05}", i * 2)).collect();
        let probes: Vec<String> =
            (0..10_003).map(|i| format!("{i:05}")).chain(["".into()]).collect();
        let before = |probe: &String, key: &String| key <= probe;
        let inline = file(&keys, usize::MAX);
        let routed = file(&keys, 0);
        assert_eq!(inline.flags(), 0);
        assert_eq!(routed.flags(), ROUTED);
        assert!(inline.body().len() == keys.len() && routed.body().len() < keys.len() / 50);
        let expected = now(Routes::of(&inline, 0, inline.body()).locate(&probes, before));
        let opened = routed.io();
        let got = now(Routes::of(&routed, 0, routed.body()).locate(&probes, before));
        assert_eq!(got.unwrap(), expected.unwrap());
        // Every slot of the routes' section was read, once, in one range.
        let section = routed.section(&section_name("words")).unwrap();
        let read = routed.io().bytes - opened.bytes;
        assert_eq!(read, routed.sections()[section as usize].len());
        assert_eq!(routed.io().requests - opened.requests, 1);
        // A key before the first routes to no slot; the last key, to the last slot.
        let ends = [String::new(), "99999".into()];
        let got = now(Routes::of(&routed, 0, routed.body()).locate(&ends, before));
        assert_eq!(got.unwrap(), vec![None, Some((4999, "09998".into()))]);
    }
}
