use super::*;
use crate::index::kmeans::SplitMix;

/// Seeded draws for test data.
struct Rng(SplitMix);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next()
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f32 {
        let u = ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }

    /// `n` random unit vectors of `dim` values, row-major.
    fn unit_vectors(&mut self, n: usize, dim: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let row: Vec<f32> = (0..dim).map(|_| self.normal()).collect();
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            out.extend(row.iter().map(|x| x / norm));
        }
        out
    }
}

fn params(quantization: Quantization, exact_below: usize) -> DenseParams {
    DenseParams { quantization, exact_below, ..DenseParams::default() }
}

fn chunks(hits: &[Scored]) -> Vec<u32> {
    hits.iter().map(|h| h.chunk).collect()
}

/// Fraction of `exact`'s chunks that `approx` found.
fn overlap(approx: &[Scored], exact: &[Scored]) -> f32 {
    let found = exact.iter().filter(|e| approx.iter().any(|a| a.chunk == e.chunk)).count();
    found as f32 / exact.len().max(1) as f32
}

#[test]
fn exact_search_equals_a_naive_reference() {
    let mut rng = Rng(SplitMix(1));
    let dim = 37; // not a multiple of the lane count: exercises the tail
    let data = rng.unit_vectors(300, dim);
    let index = DenseIndex::build(&data, dim, params(Quantization::F32, 1_000), 7).unwrap();
    assert!(!index.has_graph());
    for query in rng.unit_vectors(5, dim).chunks_exact(dim) {
        let mut naive: Vec<(u32, f64)> = data
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| (i as u32, v.iter().zip(query).map(|(a, b)| f64::from(a * b)).sum()))
            .collect();
        naive.sort_by(|a, b| b.1.total_cmp(&a.1));
        let hits = index.search(query, 10, |_| true).unwrap();
        assert_eq!(chunks(&hits), naive[..10].iter().map(|n| n.0).collect::<Vec<_>>());
        for (hit, (_, score)) in hits.iter().zip(&naive) {
            assert!((f64::from(hit.score) - score).abs() < 1e-5);
        }
    }
}

#[test]
fn hnsw_recall_at_10_is_high_at_default_parameters() {
    // 64 rather than 384 dimensions keeps the unoptimised test build fast; random unit vectors
    // have no neighbourhood structure, so this is a harder case than real embeddings.
    let mut rng = Rng(SplitMix(2));
    let dim = 64;
    let data = rng.unit_vectors(2_000, dim);
    let index = DenseIndex::build(&data, dim, params(Quantization::Int8, 0), 42).unwrap();
    assert!(index.has_graph());
    index.validate().unwrap();
    let queries = rng.unit_vectors(50, dim);
    let recall: f32 = queries
        .chunks_exact(dim)
        .map(|q| {
            let approx = index.search(q, 10, |_| true).unwrap();
            overlap(&approx, &index.search_exact(q, 10, |_| true).unwrap())
        })
        .sum::<f32>()
        / 50.0;
    assert!(recall >= 0.95, "recall@10 {recall}");
}

#[test]
fn int8_round_trip_is_within_half_a_step_and_ranks_like_f32() {
    let mut rng = Rng(SplitMix(3));
    let dim = 384;
    let data = rng.unit_vectors(1_000, dim);
    let f32_index = DenseIndex::build(&data, dim, params(Quantization::F32, 5_000), 1).unwrap();
    let int8 = DenseIndex::build(&data, dim, params(Quantization::Int8, 5_000), 1).unwrap();
    let mut scales = vec![0f32; dim];
    for row in data.chunks_exact(dim) {
        for (s, x) in scales.iter_mut().zip(row) {
            *s = s.max(x.abs() / 127.0);
        }
    }
    for (i, row) in data.chunks_exact(dim).enumerate() {
        let restored = int8.vector(i as u32).unwrap();
        for ((x, y), s) in row.iter().zip(&restored).zip(&scales) {
            assert!((x - y).abs() <= s / 2.0 + 1e-6, "{x} vs {y}");
        }
    }
    let queries = rng.unit_vectors(40, dim);
    let agreement: f32 = queries
        .chunks_exact(dim)
        .map(|q| {
            let exact = f32_index.search(q, 10, |_| true).unwrap();
            overlap(&int8.search(q, 10, |_| true).unwrap(), &exact)
        })
        .sum::<f32>()
        / 40.0;
    assert!(agreement >= 0.9, "int8 vs f32 top-10 overlap {agreement}");
    // Requantising the f32 index gives the index an int8 build makes.
    let mut requantized = f32_index.clone();
    requantized.requantize(Quantization::Int8);
    assert_eq!(requantized, int8);
}

#[test]
fn filters_apply_before_the_cut_to_k() {
    let mut rng = Rng(SplitMix(4));
    let dim = 32;
    let data = rng.unit_vectors(1_500, dim);
    let query = &rng.unit_vectors(1, dim);
    for exact_below in [0, 10_000] {
        let index =
            DenseIndex::build(&data, dim, params(Quantization::F32, exact_below), 5).unwrap();
        let even = index.search(query, 10, |c| c % 2 == 0).unwrap();
        assert_eq!(even.len(), 10);
        assert!(even.iter().all(|h| h.chunk % 2 == 0));
        let reference = index.search_exact(query, 10, |c| c % 2 == 0).unwrap();
        assert!(overlap(&even, &reference) >= 0.9);
        // So selective that the HNSW beam holds none of them: the exact fallback finds all.
        let few = [3, 700, 1_499];
        let hits = index.search(query, 10, |c| few.contains(&c)).unwrap();
        let mut found = chunks(&hits);
        found.sort_unstable();
        assert_eq!(found, few);
        assert!(index.search(query, 10, |_| false).unwrap().is_empty());
    }
}

#[test]
fn postcard_round_trip_keeps_the_index() {
    let mut rng = Rng(SplitMix(5));
    let dim = 24;
    let data = rng.unit_vectors(600, dim);
    for quantization in [Quantization::F32, Quantization::Int8] {
        let index = DenseIndex::build(&data, dim, params(quantization, 100), 9).unwrap();
        let bytes = postcard::to_allocvec(&index).unwrap();
        let decoded: DenseIndex = postcard::from_bytes(&bytes).unwrap();
        decoded.validate().unwrap();
        assert_eq!(decoded, index);
        let query = &data[..dim];
        assert_eq!(decoded.search(query, 5, |_| true).unwrap()[0].chunk, 0);
    }
}

#[test]
fn validate_rejects_corrupted_ids_and_data() {
    let mut rng = Rng(SplitMix(6));
    let dim = 16;
    let data = rng.unit_vectors(200, dim);
    let index = DenseIndex::build(&data, dim, params(Quantization::Int8, 0), 3).unwrap();
    index.validate().unwrap();
    let corrupt = |change: &dyn Fn(&mut Graph)| {
        let mut copy = index.clone();
        change(copy.graph.as_mut().unwrap());
        copy.validate().is_err()
    };
    assert!(corrupt(&|g| g.layers[0].targets[0] = 200));
    assert!(corrupt(&|g| g.chunks[1] = g.chunks[0]));
    assert!(corrupt(&|g| g.chunks[0] = 999));
    assert!(corrupt(&|g| *g.layers[0].offsets.last_mut().unwrap() += 1));
    assert!(corrupt(&|g| g.layers[0].offsets[1] = 10_000));
    assert!(corrupt(&|g| g.layers.clear()));
    let mut mislabelled = index.clone();
    mislabelled.params.quantization = Quantization::F32;
    assert!(mislabelled.validate().is_err());
}

#[test]
fn validate_rejects_vector_data_that_is_not_whole_rows() {
    let dim = 16;
    let data = Rng(SplitMix(7)).unit_vectors(200, dim);
    let params = params(Quantization::F32, 1_000);
    let mut bytes =
        postcard::to_allocvec(&DenseIndex::build(&data, dim, params, 3).unwrap()).unwrap();
    assert!(postcard::from_bytes::<DenseIndex>(&bytes[..bytes.len() - 1]).is_err());
    // The dimension follows the parameters; 200 × 16 values are not whole rows of 15.
    let at = postcard::to_allocvec(&params).unwrap().len();
    assert_eq!(bytes[at], 16);
    bytes[at] = 15;
    let decoded: DenseIndex = postcard::from_bytes(&bytes).unwrap();
    assert!(matches!(decoded.validate(), Err(Error::Decode(_))));
}

#[test]
fn bad_input_and_mismatched_queries_are_errors() {
    let params = DenseParams::default();
    assert!(DenseIndex::build(&[1.0, 0.0, 0.0], 2, params, 0).is_err());
    assert!(DenseIndex::build(&[1.0, f32::NAN], 2, params, 0).is_err());
    assert!(DenseIndex::build(&[1.0], 0, params, 0).is_err());
    let zero_ef = DenseParams { ef_search: 0, ..params };
    assert!(DenseIndex::build(&[1.0, 0.0], 2, zero_ef, 0).is_err());
    let index = DenseIndex::build(&[1.0, 0.0, 0.0, 1.0], 2, params, 0).unwrap();
    assert!(matches!(index.search(&[1.0], 1, |_| true), Err(Error::Query(_))));
    assert_eq!(index.search(&[0.0, 1.0], 1, |_| true).unwrap()[0].chunk, 1);
    let empty = DenseIndex::build(&[], 2, params, 0).unwrap();
    assert!(empty.is_empty());
    assert!(empty.search(&[1.0, 0.0], 3, |_| true).unwrap().is_empty());
}
