//! Building the HNSW graph with `instant-distance` and copying it into [`Graph`].
//!
//! `instant-distance` keeps its adjacency lists private; its serde form (feature `with-serde`)
//! is the only way to read them. The graph is therefore serialised once, at build time, and
//! decoded into [`Mirror`], which restates that layout (0.6.1: `ef_search`, the points, the
//! layer-0 nodes of `2·M = 64` neighbour slots, the upper layers of `M = 32` slots; an unused
//! slot holds `u32::MAX`). Bundles never contain `instant-distance`'s own structures, so a
//! change of its layout can break building (caught by the tests), never reading old bundles.

use instant_distance::{Builder, Point};
use serde::{Deserialize, Serialize, de};

use super::graph::{Graph, Links};
use super::vectors::dot;
use crate::{Error, Result};

/// `M` of `instant-distance` 0.6.1: neighbour slots per node in the upper layers (twice as
/// many in layer 0).
const M: usize = 32;

/// One vector as an `instant-distance` point. It serialises as nothing: only the graph is
/// read back.
#[derive(Clone, Copy)]
struct Unit<'a>(&'a [f32]);

impl Point for Unit<'_> {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(self.0, other.0)
    }
}

impl Serialize for Unit<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// The serde layout of `instant_distance::Hnsw<Unit>`.
#[derive(Deserialize)]
struct Mirror {
    _ef_search: usize,
    points: Vec<()>,
    zero: Vec<Slots<{ 2 * M }>>,
    layers: Vec<Vec<Slots<M>>>,
}

/// A node's fixed-size neighbour array (`PointId`s), cut at the first unused slot.
struct Slots<const N: usize>(Vec<u32>);

impl<'de, const N: usize> Deserialize<'de> for Slots<N> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_tuple(N, SlotsVisitor::<N>)
    }
}

struct SlotsVisitor<const N: usize>;

impl<'de, const N: usize> de::Visitor<'de> for SlotsVisitor<N> {
    type Value = Slots<N>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{N} point ids")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut ids = Vec::with_capacity(N);
        for i in 0..N {
            let id: u32 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(i, &self))?;
            ids.push(id);
        }
        let used = ids.iter().position(|&id| id == u32::MAX).unwrap_or(N);
        ids.truncate(used);
        Ok(Slots(ids))
    }
}

/// Builds the HNSW graph of `flat` (`len × dim` unit vectors) with `ef_construction`, simple
/// neighbour selection (the nearest `2·M` candidates) and a fixed `seed`.
///
/// # Errors
/// [`Error::Index`] if the built graph cannot be read back.
pub(super) fn hnsw(flat: &[f32], dim: usize, ef_construction: usize, seed: u64) -> Result<Graph> {
    let points: Vec<Unit<'_>> = flat.chunks_exact(dim).map(Unit).collect();
    let (hnsw, ids) = Builder::default()
        .ef_construction(ef_construction)
        .select_heuristic(None)
        .seed(seed)
        .build_hnsw(points);
    let failed = |e: postcard::Error| Error::Index(format!("reading the HNSW graph back: {e}"));
    let bytes = postcard::to_allocvec(&hnsw).map_err(failed)?;
    let mirror: Mirror = postcard::from_bytes(&bytes).map_err(failed)?;
    let mut chunks = vec![0u32; ids.len()];
    for (chunk, id) in ids.iter().enumerate() {
        let slot = chunks.get_mut(id.into_inner() as usize);
        *slot.ok_or_else(|| Error::Index("HNSW point id out of range".into()))? = chunk as u32;
    }
    if mirror.points.len() != chunks.len() {
        return Err(Error::Index("HNSW graph does not hold every vector".into()));
    }
    let mut layers = vec![links(&mirror.zero)];
    layers.extend(mirror.layers.iter().map(|l| links(l)));
    Ok(Graph { chunks, layers })
}

/// Compressed-row adjacency lists of one layer.
fn links<const N: usize>(nodes: &[Slots<N>]) -> Links {
    let mut offsets = Vec::with_capacity(nodes.len() + 1);
    offsets.push(0);
    let mut targets = Vec::new();
    for Slots(ids) in nodes {
        targets.extend_from_slice(ids);
        offsets.push(targets.len() as u32);
    }
    Links { offsets, targets }
}
