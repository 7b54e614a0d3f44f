//! The hash tree over a section's slots: the directory holds its root, each slot carries the
//! hashes that lead from itself to the root, so a slot read alone is checked alone.
//!
//! Leaves are `BLAKE3(0x00 ‖ payload)`, inner nodes `BLAKE3(0x01 ‖ left ‖ right)` (distinct
//! prefixes, so a leaf never passes for a node). The leaves are padded with zero hashes to a
//! power of two, `2^depth`; a proof lists the `depth` sibling hashes from the leaf up.

/// A BLAKE3 hash.
pub type Hash = [u8; 32];

/// Bytes of one hash in a proof.
pub const HASH_LEN: usize = 32;

/// The hash of a slot's payload.
pub fn leaf(payload: &[u8]) -> Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&[0]);
    hasher.update(payload);
    *hasher.finalize().as_bytes()
}

fn node(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&[1]);
    hasher.update(left);
    hasher.update(right);
    *hasher.finalize().as_bytes()
}

/// Levels of a tree over `leaves` leaves: `⌈log₂ leaves⌉`.
pub fn depth(leaves: usize) -> usize {
    (usize::BITS - leaves.saturating_sub(1).leading_zeros()) as usize
}

/// A whole tree, as a writer builds it.
#[derive(Debug)]
pub struct Tree {
    /// `levels[0]` the leaves, each next level half as long, the last the root alone.
    levels: Vec<Vec<Hash>>,
}

impl Tree {
    /// The tree over `leaves` (at least one).
    pub fn new(leaves: Vec<Hash>) -> Self {
        let depth = depth(leaves.len());
        let mut levels = vec![leaves];
        levels[0].resize(1 << depth, [0; 32]);
        while let Some(below) = levels.last().filter(|level| level.len() > 1) {
            let above = below.chunks_exact(2).map(|pair| node(&pair[0], &pair[1])).collect();
            levels.push(above);
        }
        Self { levels }
    }

    /// The root.
    pub fn root(&self) -> Hash {
        self.levels.last().and_then(|level| level.first()).copied().unwrap_or([0; 32])
    }

    /// The sibling hashes from leaf `index` up to the root, concatenated.
    pub fn proof(&self, index: usize) -> Vec<u8> {
        let mut proof = Vec::with_capacity((self.levels.len() - 1) * HASH_LEN);
        for (height, level) in self.levels.iter().take(self.levels.len() - 1).enumerate() {
            proof.extend_from_slice(&level[(index >> height) ^ 1]);
        }
        proof
    }
}

/// The root that `leaf` at `index` leads to through `proof` (sibling hashes from the leaf up,
/// concatenated; its length a whole number of hashes).
pub fn root_of(leaf: Hash, index: usize, proof: &[u8]) -> Hash {
    let siblings = proof.chunks_exact(HASH_LEN);
    siblings.enumerate().fold(leaf, |hash, (height, sibling)| {
        let mut other = [0; 32];
        other.copy_from_slice(sibling);
        if (index >> height) & 1 == 0 { node(&hash, &other) } else { node(&other, &hash) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaf_proves_the_root_and_only_at_its_place() {
        for count in [1usize, 2, 3, 5, 8, 13] {
            let leaves: Vec<Hash> = (0..count as u8).map(|i| leaf(&[i; 7])).collect();
            let tree = Tree::new(leaves.clone());
            assert_eq!(tree.proof(0).len(), depth(count) * HASH_LEN);
            for (i, hash) in leaves.iter().enumerate() {
                let proof = tree.proof(i);
                assert_eq!(root_of(*hash, i, &proof), tree.root(), "{count} leaves, leaf {i}");
                if count > 1 {
                    assert_ne!(root_of(*hash, i ^ 1, &proof), tree.root(), "another place");
                    assert_ne!(root_of(leaf(&[99; 7]), i, &proof), tree.root(), "another leaf");
                }
            }
        }
        assert_eq!(Tree::new(vec![leaf(b"only")]).root(), leaf(b"only"), "one leaf is the root");
        let depths = [0, 1, 2, 3, 4, 5, 1 << 31, (1 << 31) + 1, usize::MAX].map(depth);
        let bits = usize::BITS as usize;
        assert_eq!(depths, [0, 0, 1, 2, 2, 3, 31, 32, bits], "no overflow on any target");
        assert_ne!(leaf(&[]), [0; 32], "padding is not the hash of an empty slot");
    }
}
