//! Spherical k-means over int8 vectors: the partitions of an inverted-file (IVF) index, so
//! that a search scores the query against the centroids and then only the members of the
//! partitions nearest it.
//!
//! Centroids start at vectors drawn by k-means++ with a seeded generator and move by Lloyd
//! iterations (each vector goes to the centroid of largest dot product; a centroid becomes
//! its members' normalised mean) over a sample of at most [`SAMPLE_PER_PARTITION`] vectors a
//! partition. A centroid left without members takes the sampled vector its centroid serves
//! worst. Every
//! vector is then assigned to its nearest centroid. Work is `O(ITERATIONS × sample ×
//! partitions × dim)`, then `O(len × partitions × dim)`; the same seed gives the same
//! partitions on every platform.
//!
//! The sample grows with the partitions, so one level costs their square: about 8 s for
//! 390 partitions of 100k vectors, and a hundred times that at 1M. Above [`FLAT_UP_TO`]
//! partitions, k-means therefore runs in two levels: `√partitions` groups over the sample,
//! then each group's share of the partitions over its part of the sample; a vector goes to
//! its nearest group, then to the nearest partition in it (as hierarchical k-means does,
//! a vector near a group's border can miss its nearest partition). Work is then
//! `O(ITERATIONS × sample × √partitions × dim)` and `O(len × √partitions × dim)`.

use super::dense::{Int8Rows, dot, dot_i8, scaled};

/// Lloyd iterations.
const ITERATIONS: usize = 12;
/// Vectors sampled per partition for the iterations (all of them in smaller corpora).
const SAMPLE_PER_PARTITION: usize = 64;
/// Partitions up to which k-means runs in one level by default.
pub(crate) const FLAT_UP_TO: usize = 256;

/// Centroids (unit rows, `partitions × dim`) and the partition of each vector; above
/// [`FLAT_UP_TO`] partitions, the groups too.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Partitions {
    /// `partitions × dim` values.
    pub(crate) centroids: Vec<f32>,
    /// The partition of each vector.
    pub(crate) assignment: Vec<u32>,
    /// The groups of a two-level build (none in one level): each group's centroid (unit,
    /// `dim` values) and its partitions, `firsts[g]..firsts[g + 1]`.
    pub(crate) groups: Vec<f32>,
    /// See `groups`: one more than the groups.
    pub(crate) firsts: Vec<usize>,
}

impl Partitions {
    /// About `rows.len() / target` partitions (at least one) of `rows`; `seed` fixes the
    /// initial centroids. Above `flat_up_to` partitions ([`FLAT_UP_TO`] by default), k-means
    /// runs in two levels (see the [module docs](self)).
    pub(crate) fn build(rows: &Int8Rows<'_>, target: usize, seed: u64, flat_up_to: usize) -> Self {
        let (len, dim) = (rows.len(), rows.dim);
        let count = (len / target.max(1)).clamp(1, len.max(1));
        let mut random = SplitMix(seed);
        let mut sample: Vec<usize> = (0..len).collect();
        shuffle(&mut sample, &mut random);
        sample.truncate(count.saturating_mul(SAMPLE_PER_PARTITION));
        if count <= flat_up_to {
            let centroids = lloyd(rows, &sample, count, &mut random);
            let prepared = scaled(&centroids, rows.scales);
            let assignment =
                (0..len).map(|i| nearest(&prepared, dim, rows.row(i)).0 as u32).collect();
            return Self { centroids, assignment, groups: Vec::new(), firsts: Vec::new() };
        }
        // Groups, then each group's share of the partitions over its part of the sample.
        let groups = count.isqrt().max(1);
        let groups = lloyd(rows, &sample, groups, &mut random);
        let top = scaled(&groups, rows.scales);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups.len() / dim.max(1)];
        for &i in &sample {
            members[nearest(&top, dim, rows.row(i)).0].push(i);
        }
        let (mut centroids, mut firsts) = (Vec::with_capacity(count * dim), Vec::new());
        for part in &members {
            let share = (count * part.len()).div_ceil(sample.len().max(1)).max(1);
            firsts.push(centroids.len() / dim.max(1));
            centroids.extend(lloyd(rows, part, share.min(part.len().max(1)), &mut random));
        }
        firsts.push(centroids.len() / dim.max(1));
        let prepared = scaled(&centroids, rows.scales);
        let assignment = (0..len)
            .map(|i| {
                let (row, g) = (rows.row(i), nearest(&top, dim, rows.row(i)).0);
                let within = &prepared[firsts[g] * dim..firsts[g + 1] * dim];
                (firsts[g] + nearest(within, dim, row).0) as u32
            })
            .collect();
        Self { centroids, assignment, groups, firsts }
    }
}

/// `count` unit centroids of the rows `sample` by Lloyd iterations from a k-means++ start
/// (zero rows where there are fewer rows than centroids).
fn lloyd(rows: &Int8Rows<'_>, sample: &[usize], count: usize, random: &mut SplitMix) -> Vec<f32> {
    let dim = rows.dim;
    let mut centroids = seeds(rows, sample, count, random);
    centroids.resize(count * dim, 0.0);
    for _ in 0..ITERATIONS {
        let prepared = scaled(&centroids, rows.scales);
        let assigned: Vec<(usize, f32)> =
            sample.iter().map(|&i| nearest(&prepared, dim, rows.row(i))).collect();
        let mut sums = vec![0f32; count * dim];
        let mut sizes = vec![0usize; count];
        for (&i, &(p, _)) in sample.iter().zip(&assigned) {
            sizes[p] += 1;
            for (s, &x) in sums[p * dim..(p + 1) * dim].iter_mut().zip(rows.row(i)) {
                *s += f32::from(x);
            }
        }
        for sum in sums.chunks_exact_mut(dim) {
            sum.iter_mut().zip(rows.scales).for_each(|(s, scale)| *s *= scale);
        }
        // Centroids left without members take the sampled rows worst served by theirs.
        let mut worst: Vec<usize> = (0..sample.len()).collect();
        worst.sort_by(|&a, &b| assigned[a].1.total_cmp(&assigned[b].1).then(a.cmp(&b)));
        let mut spare = worst.into_iter().map(|s| sample[s]);
        for p in (0..count).filter(|&p| sizes[p] == 0) {
            if let Some(i) = spare.next() {
                sums[p * dim..(p + 1) * dim].copy_from_slice(&rows.get(i));
            }
        }
        sums.chunks_exact_mut(dim).for_each(normalise);
        centroids = sums;
    }
    centroids
}

/// k-means++ seeding (Arthur & Vassilvitskii 2007): the first centroid a row of `sample`
/// drawn at random, each next one drawn with a probability proportional to its distance
/// (`1 − cos`, squared) to the nearest centroid drawn so far; at most `count`, fewer when
/// every row is already a centroid.
fn seeds(rows: &Int8Rows<'_>, sample: &[usize], count: usize, random: &mut SplitMix) -> Vec<f32> {
    let mut centroids: Vec<f32> = Vec::with_capacity(count * rows.dim);
    let Some(&first) = sample.get(random.next() as usize % sample.len().max(1)) else {
        return centroids;
    };
    centroids.extend(rows.get(first));
    let mut nearest = vec![f32::MAX; sample.len()];
    for c in 1..count {
        let last = scaled(&centroids[(c - 1) * rows.dim..], rows.scales);
        for (d, &i) in nearest.iter_mut().zip(sample) {
            let distance = (1.0 - dot_i8(rows.row(i), &last)).max(0.0);
            *d = d.min(distance * distance);
        }
        let total: f64 = nearest.iter().map(|&d| f64::from(d)).sum();
        if total <= 0.0 {
            break;
        }
        // A draw in [0, total), then the row whose share of it holds the draw.
        let mut draw = (random.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let pick = nearest.iter().position(|&d| {
            draw -= f64::from(d);
            draw < 0.0
        });
        let i = sample[pick.unwrap_or(sample.len() - 1)];
        centroids.extend(rows.get(i));
    }
    centroids
}

/// An order of `centroids` (`dim` values each) in which each is followed by the nearest of
/// those not yet placed, from the first: partitions near one another in space end up near
/// one another in a file, so the few a query probes coalesce into fewer reads.
pub(crate) fn chain(centroids: &[f32], dim: usize) -> Vec<u32> {
    let count = centroids.len().checked_div(dim).unwrap_or(0);
    let row = |p: usize| &centroids[p * dim..(p + 1) * dim];
    let mut left: Vec<usize> = (1..count).collect();
    let mut order = Vec::with_capacity(count);
    let mut at = 0;
    if count > 0 {
        order.push(0);
    }
    while !left.is_empty() {
        let scores = left.iter().map(|&p| dot(row(at), row(p)));
        let best = scores.enumerate().max_by(|a, b| a.1.total_cmp(&b.1)).map_or(0, |(i, _)| i);
        at = left.swap_remove(best);
        order.push(at as u32);
    }
    order
}

/// The prepared centroid of largest dot product with `row`, and that product.
fn nearest(prepared: &[f32], dim: usize, row: &[i8]) -> (usize, f32) {
    let mut best = (0, f32::NEG_INFINITY);
    for (p, centroid) in prepared.chunks_exact(dim.max(1)).enumerate() {
        let score = dot_i8(row, centroid);
        if score > best.1 {
            best = (p, score);
        }
    }
    best
}

/// Scales `v` to unit length (a zero vector stays zero).
fn normalise(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Fisher–Yates with `random`.
fn shuffle<T>(items: &mut [T], random: &mut SplitMix) {
    for i in (1..items.len()).rev() {
        let j = (random.next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// SplitMix64 (Steele, Lea & Flood 2014): a seeded, portable source of random draws.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    /// The next draw.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `groups × 20` rows of dimension `groups` in tight groups around the axes, interleaved.
    fn rows(groups: usize) -> Vec<i8> {
        let mut random = SplitMix(9);
        let mut values = Vec::new();
        for i in 0..groups * 20 {
            let mut row = vec![0i8; groups];
            for x in &mut row {
                *x = (random.next() % 9) as i8 - 4;
            }
            row[i % groups] = 100;
            values.extend(row);
        }
        values
    }

    /// Asserts that each of the `groups` groups of `rows` is a partition of its own.
    fn assert_grouped(partitions: &Partitions, groups: usize) {
        for (i, p) in partitions.assignment.iter().enumerate() {
            assert_eq!(*p, partitions.assignment[i % groups], "row {i}");
        }
        let mut distinct = partitions.assignment[..groups].to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), groups, "{:?}", partitions.assignment);
    }

    #[test]
    fn groups_become_partitions_and_the_seed_fixes_them() {
        let values = rows(3);
        let scales = [0.01; 3];
        let rows = Int8Rows { dim: 3, scales: &scales, values: &values };
        for seed in 0..10 {
            assert_grouped(&Partitions::build(&rows, 20, seed, FLAT_UP_TO), 3);
        }
        let partitions = Partitions::build(&rows, 20, 1, FLAT_UP_TO);
        assert_eq!(partitions.centroids.len(), 3 * 3);
        assert_eq!(Partitions::build(&rows, 20, 1, FLAT_UP_TO), partitions);
        // Fewer rows than a partition: one partition; none: one empty centroid.
        assert_eq!(Partitions::build(&rows, 1000, 1, FLAT_UP_TO).assignment, vec![0; 60]);
        let none = Int8Rows { dim: 3, scales: &scales, values: &[] };
        assert!(Partitions::build(&none, 20, 1, FLAT_UP_TO).assignment.is_empty());
        // The chain visits every centroid once.
        let mut order = chain(&partitions.centroids, 3);
        order.sort_unstable();
        assert_eq!(order, [0, 1, 2]);
    }

    #[test]
    fn two_levels_find_the_same_groups() {
        let values = rows(8);
        let scales = [0.01; 8];
        let rows = Int8Rows { dim: 8, scales: &scales, values: &values };
        // 8 partitions: 2 groups of about 4, whatever the seed.
        for seed in 0..10 {
            let partitions = Partitions::build(&rows, 20, seed, 1);
            assert_grouped(&partitions, 8);
            assert_eq!((partitions.groups.len(), partitions.firsts.len()), (2 * 8, 3));
            assert_eq!(partitions.firsts.last(), Some(&(partitions.centroids.len() / 8)));
        }
    }
}
