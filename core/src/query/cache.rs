//! A small least-recently-used cache for query embeddings and rankings.

use std::collections::VecDeque;
use std::sync::Mutex;

/// A bounded LRU map behind a mutex, so a `&Searcher` can fill it. Lookups are linear: the
/// cache holds a few hundred entries at most, where that beats hashing the keys twice.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    entries: Mutex<VecDeque<(String, V)>>,
    capacity: usize,
}

impl<V: Clone> Lru<V> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { entries: Mutex::new(VecDeque::with_capacity(capacity)), capacity }
    }

    /// The cached value for `key`, marked most recently used.
    pub(crate) fn get(&self, key: &str) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let at = entries.iter().position(|(k, _)| k == key)?;
        let entry = entries.remove(at)?;
        let value = entry.1.clone();
        entries.push_front(entry);
        Some(value)
    }

    /// Stores `value` for `key`, evicting the least recently used entry when full.
    pub(crate) fn put(&self, key: String, value: V) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = entries.iter().position(|(k, _)| *k == key) {
            entries.remove(at);
        }
        if entries.len() == self.capacity {
            entries.pop_back();
        }
        entries.push_front((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let cache = Lru::new(2);
        cache.put("a".into(), 1);
        cache.put("b".into(), 2);
        assert_eq!(cache.get("a"), Some(1));
        cache.put("c".into(), 3);
        assert_eq!(cache.get("b"), None);
        assert_eq!(cache.get("a"), Some(1));
        assert_eq!(cache.get("c"), Some(3));
        cache.put("c".into(), 4);
        assert_eq!(cache.get("c"), Some(4));
    }
}
