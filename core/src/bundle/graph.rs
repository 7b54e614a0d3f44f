//! The keyword graph of a paged bundle (format version 4): graph retrieval reads the keywords
//! a query matches, their APPEARS_IN lists and the links of the chunks it expands from, and
//! nothing else.
//!
//! # Layout
//!
//! - **Keywords** (section `keywords`): the keyword nodes in key order (a keyword's index is
//!   its place), packed whole into slots; each holds its key, display form, kind and chunk
//!   count, its SIMILAR_TO neighbours, and where its APPEARS_IN list lies. The directory keeps
//!   the first key and index of every slot ([`PagedGraph::keyword_routes`]), so a keyword is
//!   one slot read, found by key or by index.
//! - **Appearances** (section `appearances`): a byte stream cut into slots; a keyword's list is
//!   its chunks (by address) with its weight in each, best first.
//! - **Words** (sections `words` and `word data`): the word index (a key word → the keywords
//!   whose key holds it) that loose matching reads. A query word matches every keyword its
//!   word, or a word sharing its prefix, is in, and scores the chunks of all of them; read by
//!   keyword, they are scattered over the file (a cold SciFact query read 2 MB in 297 ranges
//!   that way, 4 KB slots). So each word's entry in the word data stream holds, for each of
//!   its keywords, what a search needs of it: its node and its APPEARS_IN list, repeated
//!   under each word of its key (262 KB in 49 ranges: `make bench`, section "Keyword graph
//!   of format 4"). Words lie in order, so the words
//!   sharing a prefix are one span. The `words` section lists each word and where its entry
//!   lies, in order, and the directory keeps each of its slots' first word. Words in more
//!   keywords than loose matching follows are left out.
//! - **Links** (section `links`): per chunk, in chunk order, its keywords with their weights,
//!   the chunks before and after it in its document, and which of its keywords are names
//!   (files with [`NAMED`]: the multi-hop expansion looks for bridges among the names of the
//!   chunks it starts from, and reads their nodes only; without it, the nodes of all their
//!   keywords); the directory keeps each slot's first chunk address.
//!
//! Where the first keys of a section's slots are too many for the directory, they lie in a
//! section of their own ([`routes`](super::paged::routes)), read as a lookup needs them: a
//! round more, the first time.
//!
//! # Search
//!
//! The search is the one the graph in memory runs ([`crate::graph`]), over these sections: it
//! asks for everything a step needs at once, and each step reads in one round of ranges, or
//! two where it must first learn where lists lie. Matching a query takes two rounds (the
//! keys it names exactly with the words' slots, read together, then the words' entries),
//! the lists of exact matches two, and each hop up to three (the frontier's links, then the
//! nodes and lists of the keywords it follows that the words did not bring). Chunks are
//! numbered by address, which orders them as their indices do, so results are those of the
//! graph in memory, addresses for indices.
//! Every list of keywords or chunks is refused unless it names each once, as writers store
//! it, so a hostile file cannot make a search repeat its work.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::paged::routes::Routes;
use super::paged::{MAX_STREAM_READ, NAMED, PagedFile, PagedWriter, RangeSource};
use crate::graph::data::{ChunkLinks, GraphData, KeywordInfo, WordEntry, WordProbe};
use crate::graph::search::{self, Start};
use crate::graph::{GraphHit, GraphIndex, GraphSearch, KeywordGraph, MAX_LOOSE};
use crate::index::Scored;
use crate::keywords::KeywordKind;
use crate::text::Analyzer;
use crate::{Error, Result};

/// Where the keyword graph lies in a paged file, and what its directory holds of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagedGraph {
    /// Chunks in the corpus.
    pub chunks: u32,
    /// The section of the keyword nodes.
    pub keywords: u32,
    /// The first key and keyword index of each slot of `keywords` (or of their own section's,
    /// as for every route list here: [`routes`](super::paged::routes)).
    pub keyword_routes: Vec<(String, u32)>,
    /// The section of the APPEARS_IN lists.
    pub appearances: u32,
    /// The section of the word index.
    pub words: u32,
    /// The first word of each slot of `words`.
    pub word_routes: Vec<String>,
    /// The section of the words' entries.
    pub word_data: u32,
    /// The section of the chunks' links.
    pub links: u32,
    /// The first chunk address of each slot of `links`.
    pub link_routes: Vec<u32>,
}

/// A keyword node as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Node {
    key: String,
    display: String,
    kind: KeywordKind,
    chunks: u32,
    similar: Vec<(u32, f32)>,
    /// Where its APPEARS_IN list lies in the appearances stream.
    start: u64,
    len: u32,
}

/// A word of the word index: where its entry lies in the word data stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Word {
    word: String,
    start: u64,
    len: u32,
}

/// A keyword in a word's entry: what a search needs of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Summary {
    keyword: u32,
    info: KeywordInfo,
    /// Its APPEARS_IN list, best first.
    list: Vec<(u32, f32)>,
}

/// A chunk's links as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Links {
    address: u32,
    keywords: Vec<(u32, f32)>,
    neighbours: Vec<u32>,
    /// Those of `keywords` that are names, ascending (files with [`NAMED`]).
    names: Vec<u32>,
}

/// A chunk's links as files without [`NAMED`] store them.
#[derive(Debug, Deserialize)]
struct Unnamed {
    address: u32,
    keywords: Vec<(u32, f32)>,
    neighbours: Vec<u32>,
}

impl PagedGraph {
    /// Writes the graph of `index` (built from `graph`) into new sections of `writer`, in
    /// slots of `slot` bytes (more where a record needs them), chunk `i` being at
    /// `addresses[i]`.
    ///
    /// # Errors
    /// [`Error::Config`] when `addresses` does not cover the index's chunks or a record cannot
    /// be encoded; as [`PagedWriter::section`].
    pub fn write(
        writer: &mut PagedWriter,
        index: &GraphIndex,
        graph: &KeywordGraph,
        addresses: &[u32],
        slot: u32,
    ) -> Result<Self> {
        if addresses.len() != index.chunk_count() {
            return Err(Error::Config(format!(
                "{} chunk addresses for a graph of {} chunks",
                addresses.len(),
                index.chunk_count()
            )));
        }
        // The index only links chunks below its count.
        let address = |chunk: u32| addresses[chunk as usize];
        let mut stream = Vec::new();
        let mut lists = Vec::with_capacity(graph.keywords.len());
        let mut nodes = Vec::with_capacity(graph.keywords.len());
        for (node, keyword) in graph.keywords.iter().zip(0..) {
            let mut list: Vec<(u32, f32)> =
                index.chunks_of(keyword).map(|(c, w)| (address(c), w)).collect();
            list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let encoded = postcard::to_allocvec(&list).map_err(encoding)?;
            let (start, len) = (stream.len() as u64, encoded.len());
            let len = u32::try_from(len).map_err(|_| encoding("a list past 4 GB"))?;
            stream.extend_from_slice(&encoded);
            lists.push(list);
            let mut similar: Vec<(u32, f32)> = index.similar_to(keyword).collect();
            similar.sort_by_key(|&(k, _)| k);
            nodes.push(Node {
                key: node.key.clone(),
                display: node.display.clone(),
                kind: node.kind,
                chunks: node.chunks,
                similar,
                start,
                len,
            });
        }
        let (keywords, firsts) = writer.records("keywords", slot, &nodes)?;
        let keyword_routes = firsts.into_iter().map(|f| (nodes[f].key.clone(), f as u32)).collect();
        let keyword_routes = writer.routes(keywords, slot, keyword_routes)?;
        let appearances = writer.stream("appearances", slot, &stream)?;
        let (words, word_routes, word_data) = write_words(writer, index, &nodes, &lists, slot)?;
        let (links, link_routes) = write_links(writer, index, graph, addresses, slot)?;
        Ok(Self {
            chunks: addresses.len() as u32,
            keywords,
            keyword_routes,
            appearances,
            words,
            word_routes,
            word_data,
            links,
            link_routes,
        })
    }

    /// Graph retrieval for `query`, as [`GraphIndex::search`], chunks by address.
    ///
    /// # Errors
    /// [`Error::Decode`] for a record that does not decode; as [`PagedFile::slots`].
    pub async fn search<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        query: &str,
        analyzer: &Analyzer,
        k: usize,
        options: &GraphSearch,
        allow: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<GraphHit>> {
        let start = Start::Query(query, analyzer);
        search::search(&self.reader(file), start, k, options, allow).await
    }

    /// Graph retrieval from `keywords`, as [`GraphIndex::search_keywords`], chunks by address.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn search_keywords<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        keywords: &[u32],
        k: usize,
        options: &GraphSearch,
        allow: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<GraphHit>> {
        search::search(&self.reader(file), Start::Keywords(keywords), k, options, allow).await
    }

    /// The keywords `query` matches, as [`GraphIndex::matched_keywords`].
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn matched_keywords<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        query: &str,
        analyzer: &Analyzer,
    ) -> Result<Vec<(u32, f32)>> {
        search::matched_keywords(&self.reader(file), query, analyzer).await
    }

    /// Chunks one bridge entity away from `seeds`, as [`GraphIndex::bridge`], by address.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn bridge<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        query: &str,
        analyzer: &Analyzer,
        seeds: &[Scored],
        allow: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<Scored>> {
        search::bridge(&self.reader(file), query, analyzer, seeds, allow).await
    }

    /// The display forms of `keywords`, unknown ones left out; one read of the slots that
    /// hold them.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn displays<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        keywords: &[u32],
    ) -> Result<HashMap<u32, String>> {
        let nodes = self.reader(file).nodes(keywords).await?;
        Ok(nodes.into_iter().map(|(k, node)| (k, node.display)).collect())
    }

    /// The graph read from `file`, as graph retrieval reads it; what one reader read, it keeps
    /// for its later reads.
    pub(crate) fn reader<'a, S, B>(&'a self, file: &'a PagedFile<S, B>) -> Reader<'a, S, B> {
        Reader { graph: self, file, seen: RefCell::default() }
    }
}

/// Writes the word index: sections `words` and `word data` (see the [module docs](self)).
/// Returns them and the first word of each slot of `words`.
fn write_words(
    writer: &mut PagedWriter,
    index: &GraphIndex,
    nodes: &[Node],
    lists: &[Vec<(u32, f32)>],
    slot: u32,
) -> Result<(u32, Vec<String>, u32)> {
    let mut data = Vec::new();
    let mut words = Vec::new();
    for (word, ids) in index.words().iter().filter(|(_, ids)| ids.len() <= MAX_LOOSE) {
        let summaries: Vec<Summary> = ids
            .iter()
            .map(|&keyword| {
                let (node, list) = (&nodes[keyword as usize], &lists[keyword as usize]);
                let info = KeywordInfo {
                    key: node.key.clone(),
                    kind: node.kind,
                    chunks: node.chunks,
                    similar: node.similar.clone(),
                };
                Summary { keyword, info, list: list.clone() }
            })
            .collect();
        let encoded = postcard::to_allocvec(&summaries).map_err(encoding)?;
        let len = u32::try_from(encoded.len()).map_err(|_| encoding("an entry past 4 GB"))?;
        words.push(Word { word: word.clone(), start: data.len() as u64, len });
        data.extend_from_slice(&encoded);
    }
    let (section, firsts) = writer.records("words", slot, &words)?;
    let routes = firsts.into_iter().map(|f| words[f].word.clone()).collect();
    let routes = writer.routes(section, slot, routes)?;
    Ok((section, routes, writer.stream("word data", slot, &data)?))
}

/// Writes section `links` (and sets [`NAMED`]), chunk `i` being at `addresses[i]`; returns it
/// and the first chunk address of each of its slots.
fn write_links(
    writer: &mut PagedWriter,
    index: &GraphIndex,
    graph: &KeywordGraph,
    addresses: &[u32],
    slot: u32,
) -> Result<(u32, Vec<u32>)> {
    // The index only links chunks below its count, which `addresses` covers.
    let address = |chunk: u32| addresses[chunk as usize];
    let links: Vec<Links> = (0..addresses.len() as u32)
        .map(|chunk| {
            let mut keywords: Vec<(u32, f32)> = index.keywords_of(chunk).collect();
            keywords.sort_by_key(|&(k, _)| k);
            let mut neighbours: Vec<u32> =
                index.neighbours_in_document(chunk).map(address).collect();
            neighbours.sort_unstable();
            let names = graph.names(keywords.iter().map(|&(k, _)| k));
            Links { address: address(chunk), keywords, neighbours, names }
        })
        .collect();
    let (section, firsts) = writer.records("links", slot, &links)?;
    writer.flag(NAMED);
    let routes =
        writer.routes(section, slot, firsts.into_iter().map(|f| links[f].address).collect())?;
    Ok((section, routes))
}

fn encoding(e: impl std::fmt::Display) -> Error {
    Error::Config(format!("the keyword graph cannot be encoded: {e}"))
}

/// Whether `items` are strictly increasing, as a writer stores every list of keywords or
/// chunks: a list naming one twice (which would make a search repeat its work for each time)
/// is refused.
fn increasing<T: PartialOrd>(items: impl IntoIterator<Item = T>) -> bool {
    let mut items = items.into_iter();
    let Some(mut previous) = items.next() else {
        return true;
    };
    items.all(|item| {
        let ordered = previous < item;
        previous = item;
        ordered
    })
}

/// Whether an APPEARS_IN list names each chunk once.
fn distinct_chunks(list: &[(u32, f32)]) -> bool {
    let mut chunks: Vec<u32> = list.iter().map(|&(chunk, _)| chunk).collect();
    chunks.sort_unstable();
    increasing(chunks)
}

fn does_not_add_up(what: impl std::fmt::Display) -> Error {
    Error::Decode(format!("{what} does not add up"))
}

/// Reads a [`PagedGraph`]'s sections of one file, for one query (its search and bridge).
pub(crate) struct Reader<'a, S, B> {
    graph: &'a PagedGraph,
    file: &'a PagedFile<S, B>,
    /// The keywords the words read so far hold: asked for next, they need no read.
    seen: RefCell<HashMap<u32, Summary>>,
}

impl<S: RangeSource, B> Reader<'_, S, B> {
    /// The records of `slots` of `section`, by slot.
    async fn records<T: DeserializeOwned>(
        &self,
        section: u32,
        slots: impl IntoIterator<Item = u32>,
    ) -> Result<BTreeMap<u32, Vec<T>>> {
        let mut slots: Vec<u32> = slots.into_iter().collect();
        slots.sort_unstable();
        slots.dedup();
        let records = self.file.records(section, &slots).await?;
        Ok(slots.into_iter().zip(records).collect())
    }

    /// What `get` takes of those of `keywords` that words read so far hold, and the others.
    fn seen<T>(
        &self,
        keywords: &[u32],
        get: impl Fn(&Summary) -> T,
    ) -> (HashMap<u32, T>, Vec<u32>) {
        let seen = self.seen.borrow();
        let (mut found, mut unseen) = (HashMap::new(), Vec::new());
        for &k in keywords {
            match seen.get(&k) {
                Some(summary) => _ = found.insert(k, get(summary)),
                None => unseen.push(k),
            }
        }
        (found, unseen)
    }

    /// The stored nodes of `keywords` (those that exist).
    async fn nodes(&self, keywords: &[u32]) -> Result<HashMap<u32, Node>> {
        let routes = Routes::of(self.file, self.graph.keywords, &self.graph.keyword_routes);
        let located = routes.locate(keywords, |&k, route| route.1 <= k).await?;
        let routed: Vec<(u32, u32, u32)> = keywords
            .iter()
            .zip(located)
            .filter_map(|(&k, found)| found.map(|(slot, (_, first))| (k, slot, first)))
            .collect();
        let slots = self.records::<Node>(self.graph.keywords, routed.iter().map(|r| r.1)).await?;
        let found = routed.into_iter().filter_map(|(k, slot, first)| {
            let node = slots.get(&slot)?.get(k.checked_sub(first)? as usize)?;
            Some((k, node.clone()))
        });
        let nodes: HashMap<u32, Node> = found.collect();
        match nodes.values().find(|node| !increasing(node.similar.iter().map(|s| s.0))) {
            Some(node) => Err(does_not_add_up(format!("the SIMILAR_TO list of {:?}", node.key))),
            None => Ok(nodes),
        }
    }
}

impl<S: RangeSource, B> GraphData for Reader<'_, S, B> {
    fn chunk_count(&self) -> u32 {
        self.graph.chunks
    }

    async fn find(&self, keys: &[String]) -> Result<Vec<u32>> {
        let routes = Routes::of(self.file, self.graph.keywords, &self.graph.keyword_routes);
        let located = routes.locate(keys, |key, route| route.0 <= *key).await?;
        let routed: Vec<(&String, u32, u32)> = keys
            .iter()
            .zip(located)
            .filter_map(|(key, found)| found.map(|(slot, (_, first))| (key, slot, first)))
            .collect();
        let slots = self.records::<Node>(self.graph.keywords, routed.iter().map(|r| r.1)).await?;
        let found = routed.into_iter().filter_map(|(key, slot, first)| {
            let place = slots.get(&slot)?.iter().position(|node| node.key == *key)?;
            first.checked_add(place as u32)
        });
        Ok(found.collect())
    }

    async fn words(&self, probes: &[WordProbe<'_>], limit: usize) -> Result<Vec<Vec<WordEntry>>> {
        // The slots from the one `text` would lie in to the last holding a word it begins: the
        // last routed by a word up to `text` and, for a prefix, the last by one before `text`
        // or beginning with it.
        let routes = Routes::of(self.file, self.graph.words, &self.graph.word_routes);
        let ends: Vec<(&str, bool)> =
            probes.iter().flat_map(|p| [(p.text, false), (p.text, p.prefix)]).collect();
        let before = |&(text, prefix): &(&str, bool), route: &String| {
            route.as_str() <= text || (prefix && route.starts_with(text))
        };
        let located = routes.locate(&ends, before).await?;
        let slot = |found: &Option<(u32, String)>| found.as_ref().map(|(slot, _)| *slot);
        let spans: Vec<std::ops::Range<u32>> = located
            .chunks_exact(2)
            .map(|ends| {
                slot(&ends[0]).unwrap_or(0)..slot(&ends[1]).map_or(0, |last| last.saturating_add(1))
            })
            .collect();
        let slots: BTreeMap<u32, Vec<Word>> =
            self.records(self.graph.words, spans.iter().flat_map(Clone::clone)).await?;
        let matching = |probe: &WordProbe<'_>, word: &str| {
            word == probe.text || (probe.prefix && word.starts_with(probe.text))
        };
        let found: Vec<Vec<&Word>> = probes
            .iter()
            .zip(spans)
            .map(|(probe, span)| {
                let words = span.filter_map(|slot| slots.get(&slot)).flatten();
                words.filter(|word| matching(probe, &word.word)).collect()
            })
            .collect();
        // A word two probes found is read once; entries of different words never overlap.
        let mut wanted: Vec<&Word> = found.iter().flatten().copied().collect();
        wanted.sort_by(|a, b| (a.start, &a.word).cmp(&(b.start, &b.word)));
        wanted.dedup_by(|a, b| (a.start, &a.word) == (b.start, &b.word));
        let end = |word: &Word| word.start.saturating_add(u64::from(word.len));
        if let Some(pair) = wanted.windows(2).find(|pair| pair[1].start < end(pair[0])) {
            return Err(does_not_add_up(format!("the entry of word {:?}", pair[1].word)));
        }
        let spans: Vec<(u64, u64)> = wanted.iter().map(|w| (w.start, u64::from(w.len))).collect();
        let read = self.file.stream(self.graph.word_data, &spans, MAX_STREAM_READ).await?;
        let mut entries: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut seen = self.seen.borrow_mut();
        for (word, bytes) in wanted.iter().zip(read) {
            let summaries: Vec<Summary> = postcard::from_bytes(&bytes).map_err(|e| {
                Error::Decode(format!("the entry of word {:?}: {e}", word.word).to_lowercase())
            })?;
            let sound = |s: &Summary| {
                increasing(s.info.similar.iter().map(|n| n.0)) && distinct_chunks(&s.list)
            };
            if !increasing(summaries.iter().map(|s| s.keyword)) || !summaries.iter().all(sound) {
                return Err(does_not_add_up(format!("the entry of word {:?}", word.word)));
            }
            entries.insert(word.start, summaries.iter().map(|s| s.keyword).collect());
            seen.extend(summaries.into_iter().map(|summary| (summary.keyword, summary)));
        }
        let entry = |word: &Word| {
            let ids = entries.get(&word.start).filter(|ids| ids.len() <= limit)?;
            Some((word.word.clone(), ids.clone()))
        };
        Ok(found.into_iter().map(|words| words.into_iter().filter_map(entry).collect()).collect())
    }

    async fn keywords(&self, keywords: &[u32]) -> Result<HashMap<u32, KeywordInfo>> {
        let (mut found, unseen) = self.seen(keywords, |summary| summary.info.clone());
        let info = |(k, node): (u32, Node)| {
            let Node { key, kind, chunks, similar, .. } = node;
            (k, KeywordInfo { key, kind, chunks, similar })
        };
        found.extend(self.nodes(&unseen).await?.into_iter().map(info));
        Ok(found)
    }

    async fn appearances(&self, keywords: &[u32]) -> Result<HashMap<u32, Vec<(u32, f32)>>> {
        let (mut found, unseen) = self.seen(keywords, |summary| summary.list.clone());
        let nodes: Vec<(u32, Node)> = self.nodes(&unseen).await?.into_iter().collect();
        let spans: Vec<(u64, u64)> =
            nodes.iter().map(|(_, n)| (n.start, u64::from(n.len))).collect();
        // A list holds each chunk at most once: a varint address and a weight each.
        let longest = u64::from(self.graph.chunks) * 9 + 5;
        let read = self.file.stream(self.graph.appearances, &spans, longest).await?;
        for ((k, node), bytes) in nodes.into_iter().zip(read) {
            let list: Vec<(u32, f32)> = postcard::from_bytes(&bytes).map_err(|e| {
                Error::Decode(format!("the appearances of {:?}: {e}", node.key).to_lowercase())
            })?;
            if !distinct_chunks(&list) {
                return Err(does_not_add_up(format!("the appearances of {:?}", node.key)));
            }
            found.insert(k, list);
        }
        Ok(found)
    }

    async fn links(&self, chunks: &[u32]) -> Result<HashMap<u32, ChunkLinks>> {
        let routes = Routes::of(self.file, self.graph.links, &self.graph.link_routes);
        let located = routes.locate(chunks, |&c, &first| first <= c).await?;
        let routed: Vec<(u32, u32)> = chunks
            .iter()
            .zip(located)
            .filter_map(|(&c, found)| found.map(|(slot, _)| (c, slot)))
            .collect();
        let slots = routed.iter().map(|r| r.1);
        let named = self.file.flags() & NAMED != 0;
        let slots: BTreeMap<u32, Vec<Links>> = match named {
            true => self.records(self.graph.links, slots).await?,
            false => {
                let unnamed = self.records::<Unnamed>(self.graph.links, slots).await?;
                let links = |l: Unnamed| Links {
                    address: l.address,
                    keywords: l.keywords,
                    neighbours: l.neighbours,
                    names: Vec::new(),
                };
                let slot = |(slot, unnamed): (u32, Vec<Unnamed>)| {
                    (slot, unnamed.into_iter().map(links).collect())
                };
                unnamed.into_iter().map(slot).collect()
            }
        };
        let mut found = HashMap::new();
        for (chunk, slot) in routed {
            let Some(links) = slots.get(&slot).and_then(|s| s.iter().find(|l| l.address == chunk))
            else {
                continue;
            };
            let holds = |k: &u32| links.keywords.binary_search_by_key(k, |&(k, _)| k).is_ok();
            if !increasing(links.keywords.iter().map(|k| k.0))
                || !increasing(&links.neighbours)
                || !increasing(&links.names)
                || !links.names.iter().all(holds)
            {
                return Err(does_not_add_up(format!("the links of chunk {chunk}")));
            }
            found.insert(
                chunk,
                ChunkLinks {
                    keywords: links.keywords.clone(),
                    neighbours: links.neighbours.clone(),
                    names: named.then(|| links.names.clone()),
                },
            );
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::paged::{InMemory, VERSION, now};

    /// A graph of one keyword `a` (its list `list`, SIMILAR_TO itself twice when `similar`) in
    /// chunks whose links name their keywords `keywords`, none of them names.
    fn file_with(
        list: Vec<(u32, f32)>,
        similar: Vec<(u32, f32)>,
        keywords: Vec<(u32, f32)>,
    ) -> PagedFile<InMemory, PagedGraph> {
        named(list, similar, keywords, vec![])
    }

    /// [`file_with`], the links saying that `names` of their keywords are names.
    fn named(
        list: Vec<(u32, f32)>,
        similar: Vec<(u32, f32)>,
        keywords: Vec<(u32, f32)>,
        names: Vec<u32>,
    ) -> PagedFile<InMemory, PagedGraph> {
        let mut writer = PagedWriter::new();
        let stream = postcard::to_allocvec(&list).unwrap();
        let node = Node {
            key: "a".into(),
            display: "A".into(),
            kind: KeywordKind::Phrase,
            chunks: 2,
            similar,
            start: 0,
            len: stream.len() as u32,
        };
        let (keywords_section, _) = writer.records("keywords", 4096, &[node]).unwrap();
        let appearances = writer.stream("appearances", 4096, &stream).unwrap();
        let (words, _) = writer.records::<Word>("words", 4096, &[]).unwrap();
        let word_data = writer.stream("word data", 4096, &[]).unwrap();
        let chunk = |address| Links {
            address,
            keywords: keywords.clone(),
            neighbours: vec![],
            names: names.clone(),
        };
        let (links, _) = writer.records("links", 4096, &[chunk(0), chunk(1)]).unwrap();
        writer.flag(NAMED);
        let graph = PagedGraph {
            chunks: 2,
            keywords: keywords_section,
            keyword_routes: vec![("a".into(), 0)],
            appearances,
            words,
            word_routes: vec![],
            word_data,
            links,
            link_routes: vec![0],
        };
        let bytes = writer.finish(graph, VERSION, VERSION).unwrap();
        now(PagedFile::open(InMemory(bytes), 1 << 20)).unwrap()
    }

    fn search(file: &PagedFile<InMemory, PagedGraph>) -> Result<Vec<u32>> {
        let options = GraphSearch::default();
        let hits = now(file.body().search_keywords(file, &[0], 10, &options, &|_| true))?;
        Ok(hits.iter().map(|hit| hit.chunk).collect())
    }

    #[test]
    fn lists_naming_a_chunk_or_keyword_twice_are_refused() {
        let (list, one) = (vec![(0, 1.0), (1, 0.5)], vec![(0, 1.0)]);
        assert_eq!(search(&file_with(list.clone(), vec![], one.clone())).unwrap(), [0, 1]);
        let refused = |file| search(&file).unwrap_err().to_string();
        let twice = vec![(1, 1.0), (0, 0.5), (1, 0.5)];
        assert_eq!(
            refused(file_with(twice, vec![], one.clone())),
            "malformed bundle payload: the appearances of \"a\" does not add up"
        );
        let similar = vec![(0, 0.9), (0, 0.8)];
        assert!(refused(file_with(list.clone(), similar, one)).contains("SIMILAR_TO"));
        let keywords = vec![(0, 1.0), (0, 1.0)];
        assert!(refused(file_with(list.clone(), vec![], keywords)).contains("the links of chunk"));
        // Names that are not among the chunk's keywords, or named twice.
        let one = vec![(0, 1.0)];
        assert_eq!(search(&named(list.clone(), vec![], one.clone(), vec![0])).unwrap(), [0, 1]);
        for names in [vec![1], vec![0, 0]] {
            let file = named(list.clone(), vec![], one.clone(), names);
            assert!(refused(file).contains("the links of chunk"));
        }
    }
}
