//! The pages a [`super::PagedFile`] keeps once read, least recently used first out, within a
//! byte budget.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Which page: of which section, and its index there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    /// The section's index in the directory.
    pub(crate) section: u32,
    /// The page's index in the section.
    pub(crate) index: u32,
}

/// Checked pages, at most `budget` bytes of them (a page larger than the whole budget is
/// handed out but not kept).
#[derive(Debug)]
pub struct PageCache {
    budget: usize,
    held: usize,
    /// Each page and the tick of its last use.
    pages: HashMap<Key, (Arc<[u8]>, u64)>,
    /// The pages by last use, oldest first.
    by_use: BTreeMap<u64, Key>,
    tick: u64,
}

impl PageCache {
    /// An empty cache that holds at most `budget` bytes of pages.
    pub fn new(budget: usize) -> Self {
        Self { budget, held: 0, pages: HashMap::new(), by_use: BTreeMap::new(), tick: 0 }
    }

    /// The bytes of pages held.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The page, if held, marked as just used.
    pub(crate) fn get(&mut self, key: Key) -> Option<Arc<[u8]>> {
        self.tick += 1;
        let (page, used) = self.pages.get_mut(&key)?;
        self.by_use.remove(used);
        *used = self.tick;
        self.by_use.insert(self.tick, key);
        Some(Arc::clone(page))
    }

    /// Keeps `page`, evicting the least recently used pages to make room for it.
    pub(crate) fn put(&mut self, key: Key, page: Arc<[u8]>) {
        if page.len() > self.budget {
            return;
        }
        if let Some((old, used)) = self.pages.remove(&key) {
            self.by_use.remove(&used);
            self.held -= old.len();
        }
        while self.held + page.len() > self.budget {
            let Some((_, oldest)) = self.by_use.pop_first() else { break };
            if let Some((evicted, _)) = self.pages.remove(&oldest) {
                self.held -= evicted.len();
            }
        }
        self.tick += 1;
        self.held += page.len();
        self.by_use.insert(self.tick, key);
        self.pages.insert(key, (page, self.tick));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(index: u32) -> Key {
        Key { section: 0, index }
    }

    fn page(len: usize) -> Arc<[u8]> {
        vec![0; len].into()
    }

    #[test]
    fn evicts_the_least_recently_used_within_the_budget() {
        let mut cache = PageCache::new(100);
        cache.put(key(0), page(40));
        cache.put(key(1), page(40));
        assert!(cache.get(key(0)).is_some(), "0 is now the most recently used");
        cache.put(key(2), page(40));
        assert!(cache.get(key(1)).is_none(), "1 made room");
        assert!(cache.get(key(0)).is_some() && cache.get(key(2)).is_some());
        assert_eq!(cache.held(), 80);

        cache.put(key(3), page(100));
        assert_eq!((cache.held(), cache.get(key(0)).is_none()), (100, true), "all made room");
        cache.put(key(4), page(101));
        assert!(cache.get(key(4)).is_none() && cache.get(key(3)).is_some(), "too large to keep");
        cache.put(key(3), page(10));
        assert_eq!(cache.held(), 10, "a page put again replaces itself");
        assert!(cache.get(Key { section: 1, ..key(3) }).is_none(), "another section's page");
    }
}
