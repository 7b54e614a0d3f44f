//! What graph retrieval reads of a graph, behind one trait, so that one search runs over the
//! graph in memory ([`GraphIndex`]) and over the graph sections of a paged bundle.
//!
//! Every method takes a batch: a search asks, at each step, for all it needs to take that
//! step (the lists of every matched keyword, the links of every chunk of a hop), so that a
//! paged graph reads them together, in one round of range requests (or two, where it must
//! first read where the lists lie).

use std::collections::HashMap;
use std::future::{Future, ready};

use serde::{Deserialize, Serialize};

use super::{GraphIndex, KeywordGraph};
use crate::Result;
use crate::keywords::KeywordKind;

/// What a search needs of a keyword node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeywordInfo {
    /// Matching form.
    pub(crate) key: String,
    /// What the keyword is.
    pub(crate) kind: KeywordKind,
    /// Chunks it appears in.
    pub(crate) chunks: u32,
    /// Its SIMILAR_TO neighbours (in either direction), with the similarity.
    pub(crate) similar: Vec<(u32, f32)>,
}

/// What a search needs of a chunk: its keywords and its neighbours in its document.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChunkLinks {
    /// The keywords it holds, with their weight in it.
    pub(crate) keywords: Vec<(u32, f32)>,
    /// The chunks before and after it in its document (NEXT either way).
    pub(crate) neighbours: Vec<u32>,
    /// Those of its keywords that are names, ascending; `None` when the graph does not tell
    /// (a paged bundle written before its links did), and a search must read their nodes.
    pub(crate) names: Option<Vec<u32>>,
}

/// A lookup in the word index: the entry of `text` itself, or, with `prefix`, of every word
/// starting with `text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WordProbe<'a> {
    pub(crate) text: &'a str,
    pub(crate) prefix: bool,
}

/// An entry of the word index: a key word and the keywords whose key holds it.
pub(crate) type WordEntry = (String, Vec<u32>);

/// The reads of graph retrieval. Chunks are numbered as the host's filter numbers them (chunk
/// indices in memory, chunk addresses in a paged bundle); either way in chunk order, so that
/// ties break alike. Unknown keywords and chunks are left out of the answers.
pub(crate) trait GraphData {
    /// Chunks in the corpus (for the keywords' idf).
    fn chunk_count(&self) -> u32;

    /// The keywords whose key is one of `keys`.
    fn find(&self, keys: &[String]) -> impl Future<Output = Result<Vec<u32>>>;

    /// For each probe, its entries of the word index, in word order. An entry naming more than
    /// `limit` keywords may be left out: searches ignore it.
    fn words(
        &self,
        probes: &[WordProbe<'_>],
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Vec<WordEntry>>>>;

    /// The nodes of `keywords`.
    fn keywords(&self, keywords: &[u32])
    -> impl Future<Output = Result<HashMap<u32, KeywordInfo>>>;

    /// APPEARS_IN: the chunks each of `keywords` appears in, with its weight there.
    fn appearances(
        &self,
        keywords: &[u32],
    ) -> impl Future<Output = Result<HashMap<u32, Vec<(u32, f32)>>>>;

    /// The links of each of `chunks`.
    fn links(&self, chunks: &[u32]) -> impl Future<Output = Result<HashMap<u32, ChunkLinks>>>;
}

/// A [`GraphIndex`] with the stored graph it was built from: the graph in memory, whose reads
/// are ready at once and never fail.
pub(crate) struct InMemory<'a> {
    pub(crate) index: &'a GraphIndex,
    pub(crate) graph: &'a KeywordGraph,
}

impl GraphData for InMemory<'_> {
    fn chunk_count(&self) -> u32 {
        self.index.chunks as u32
    }

    fn find(&self, keys: &[String]) -> impl Future<Output = Result<Vec<u32>>> {
        let keywords = &self.graph.keywords;
        let found = keys
            .iter()
            .filter_map(|key| keywords.binary_search_by(|k| k.key.as_str().cmp(key)).ok())
            .map(|i| i as u32);
        ready(Ok(found.collect()))
    }

    fn words(
        &self,
        probes: &[WordProbe<'_>],
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Vec<WordEntry>>>> {
        let words = &self.index.words;
        let entries = |probe: &WordProbe<'_>| {
            let start = words.partition_point(|(w, _)| w.as_str() < probe.text);
            words[start..]
                .iter()
                .take_while(|(w, _)| w == probe.text || (probe.prefix && w.starts_with(probe.text)))
                .filter(|(_, ids)| ids.len() <= limit)
                .cloned()
                .collect()
        };
        ready(Ok(probes.iter().map(entries).collect()))
    }

    fn keywords(
        &self,
        keywords: &[u32],
    ) -> impl Future<Output = Result<HashMap<u32, KeywordInfo>>> {
        let info = |k: u32| {
            let node = self.graph.keywords.get(k as usize)?;
            let similar = self.index.similar_to(k).collect();
            let (key, kind, chunks) = (node.key.clone(), node.kind, node.chunks);
            Some((k, KeywordInfo { key, kind, chunks, similar }))
        };
        ready(Ok(keywords.iter().filter_map(|&k| info(k)).collect()))
    }

    fn appearances(
        &self,
        keywords: &[u32],
    ) -> impl Future<Output = Result<HashMap<u32, Vec<(u32, f32)>>>> {
        let known = keywords.iter().filter(|&&k| (k as usize) < self.graph.keywords.len());
        ready(Ok(known.map(|&k| (k, self.index.chunks_of(k).collect())).collect()))
    }

    fn links(&self, chunks: &[u32]) -> impl Future<Output = Result<HashMap<u32, ChunkLinks>>> {
        let known = chunks.iter().filter(|&&c| (c as usize) < self.index.chunks);
        let links = |c: u32| {
            let keywords: Vec<(u32, f32)> = self.index.keywords_of(c).collect();
            let names = Some(self.graph.names(keywords.iter().map(|&(k, _)| k)));
            let neighbours = self.index.neighbours_in_document(c).collect();
            ChunkLinks { keywords, neighbours, names }
        };
        ready(Ok(known.map(|&c| (c, links(c))).collect()))
    }
}
