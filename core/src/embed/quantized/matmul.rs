//! The linear layers of the quantized encoder, computed in integers: `q8_0` weights times
//! activations rounded to 16-bit integers, summed exactly in `i32` within each 32-value block.
//!
//! An activation row is cut into the weights' blocks of 32 values; each block gets a scale
//! `d = max |x| / 32767` and values `round(x / d)`, so rounding moves a value by at most
//! 1/65534 of its block's largest magnitude (the weights' own `q8_0` rounding is 1/254). A
//! block's product with a weight row is then an exact integer, scaled by both blocks' scales
//! and added to the output in block order: one fixed sequence of `f32` operations, the same
//! with simd128 in WebAssembly as on any native target, so every host computes the same bits.
//!
//! 16-bit activations cost no more than 8-bit ones here: simd128's integer product
//! (`i32x4.dot_i16x8_s`, SSE2's `pmaddwd`) multiplies 16-bit lanes, so 8-bit values would be
//! widened to 16 bits anyway, and 8-bit activations lose accuracy (their rounding is 128 times
//! coarser: min cosine 0.994 to sentence-transformers' vectors, against 0.9997 with these).
//!
//! Weights are repacked once at load for that product: for every 8 output rows and every pair
//! of input columns, the 8 rows' two values lie next to each other, so one 16-byte load feeds
//! eight outputs while a pair of activations is broadcast to every lane. A tile of 4
//! activation rows × 8 outputs keeps 8 integer and 8 float accumulators in registers.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

/// Values per `q8_0` block (and per activation block).
const BLOCK: usize = 32;
/// Output rows per tile: two lanes' worth of four.
const NR: usize = 8;
/// Activation rows per tile.
const MR: usize = 4;
/// Bytes of one `q8_0` block: an `f16` scale, then 32 `i8`.
const Q8_0_BYTES: usize = 2 + BLOCK;
/// Largest magnitude of a rounded activation.
const I16_MAX: f32 = i16::MAX as f32;

/// A linear layer (`y = x·Wᵀ + b`) on `q8_0` weights packed for [`tile`].
pub(super) struct Linear {
    outputs: usize,
    inputs: usize,
    /// For each group of [`NR`] output rows and each block: for each pair of columns in the
    /// block, the [`NR`] rows' two values.
    quants: Vec<PackedBlock>,
    /// For each group of [`NR`] output rows and each block: the [`NR`] rows' block scales.
    scales: Vec<[f32; NR]>,
    bias: Vec<f32>,
}

/// One block of [`NR`] weight rows, ordered for [`tile`].
type PackedBlock = [[i8; 2 * NR]; BLOCK / 2];

/// One block of an activation row: its values in pairs, each pair in an `i32` (the first value
/// in the low half) as [`Lanes::broadcast`] takes it.
type ActivationBlock = [i32; BLOCK / 2];

impl Linear {
    /// Packs a `q8_0` weight (outputs × inputs) and its bias. The outputs must be a multiple
    /// of 8 and the inputs of 32 (the quantized file's sizes are multiples of 32).
    pub(super) fn new(weight: &QTensor, bias: Vec<f32>) -> candle_core::Result<Self> {
        let (outputs, inputs) = weight.shape().dims2()?;
        if weight.dtype() != GgmlDType::Q8_0
            || outputs % NR != 0
            || inputs % BLOCK != 0
            || bias.len() != outputs
        {
            return Err(candle_core::Error::Msg(format!(
                "a linear layer needs a q8_0 weight of multiple-of-8 × multiple-of-32 values and \
                 a bias per output, not {:?} {outputs} × {inputs} with {} biases",
                weight.dtype(),
                bias.len()
            )));
        }
        let data = weight.data()?;
        let blocks = inputs / BLOCK;
        let block = |row: usize, b: usize| {
            let at = (row * blocks + b) * Q8_0_BYTES;
            &data[at..at + Q8_0_BYTES]
        };
        let mut quants = Vec::with_capacity(outputs / NR * blocks);
        let mut scales = Vec::with_capacity(outputs / NR * blocks);
        for group in (0..outputs).step_by(NR) {
            for b in 0..blocks {
                quants.push(std::array::from_fn(|pair| {
                    std::array::from_fn(|i| block(group + i / 2, b)[2 + 2 * pair + i % 2] as i8)
                }));
                scales.push(std::array::from_fn(|row| {
                    let scale = block(group + row, b);
                    half::f16::from_le_bytes([scale[0], scale[1]]).to_f32()
                }));
            }
        }
        Ok(Self { outputs, inputs, quants, scales, bias })
    }

    /// Bytes held: one per weight, a scale per 32 weights, and the bias.
    pub(super) fn bytes(&self) -> usize {
        size_of_val(self.quants.as_slice())
            + size_of_val(self.scales.as_slice())
            + size_of_val(self.bias.as_slice())
    }

    /// `x·Wᵀ + b` for `x` of any shape whose last dimension is the layer's inputs.
    pub(super) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut shape = x.dims().to_vec();
        let inputs = shape.last().copied().unwrap_or(0);
        let out = self.apply(&Activations::new(&x.flatten_all()?.to_vec1::<f32>()?, inputs))?;
        if let Some(last) = shape.last_mut() {
            *last = self.outputs;
        }
        Tensor::from_vec(out, shape, &Device::Cpu)
    }

    /// `x·Wᵀ + b` for rows already rounded: rows × outputs, row after row. Layers that read
    /// the same input (attention's query, key and value) round it once.
    pub(super) fn apply(&self, x: &Activations) -> candle_core::Result<Vec<f32>> {
        if x.inputs != self.inputs {
            return Err(candle_core::Error::Msg(format!(
                "a linear layer of {} inputs got rows of {}",
                self.inputs, x.inputs
            )));
        }
        let mut out = vec![0f32; x.rows * self.outputs];
        self.multiply::<Native>(x, &mut out);
        Ok(out)
    }

    /// Writes `activations · Wᵀ + b` into `out` (rows × outputs).
    fn multiply<L: Lanes>(&self, activations: &Activations, out: &mut [f32]) {
        let (rows, blocks) = (activations.rows, self.inputs / BLOCK);
        for first in (0..rows).step_by(MR) {
            let tile_rows = MR.min(rows - first);
            let x: [_; MR] = std::array::from_fn(|r| activations.row(first + r));
            for group in 0..self.outputs / NR {
                let weights = group * blocks..(group + 1) * blocks;
                let sums = tile::<L>(x, &self.quants[weights.clone()], &self.scales[weights]);
                for (r, sums) in sums.iter().enumerate().take(tile_rows) {
                    let column = group * NR;
                    let row = &mut out[(first + r) * self.outputs + column..][..NR];
                    let bias = &self.bias[column..column + NR];
                    let sums = [L::to_array(sums.low), L::to_array(sums.high)];
                    for ((out, sum), bias) in row.iter_mut().zip(sums.as_flattened()).zip(bias) {
                        *out = sum + bias;
                    }
                }
            }
        }
    }
}

/// Activation rows rounded to 16 bits per block, padded with zero rows to a multiple of
/// [`MR`] rows.
pub(super) struct Activations {
    /// Each row's blocks.
    blocks: Vec<ActivationBlock>,
    /// Each row's block scales.
    scales: Vec<f32>,
    /// Values per row.
    inputs: usize,
    /// Rows, without the padding.
    rows: usize,
}

impl Activations {
    /// Rounds `values`, rows of `inputs` values each (a multiple of 32, as every layer's
    /// inputs are; see [`Linear::new`]).
    pub(super) fn new(values: &[f32], inputs: usize) -> Self {
        let rows = values.len().checked_div(inputs).unwrap_or(0);
        let row_blocks = inputs / BLOCK;
        let padded = rows.div_ceil(MR) * MR * row_blocks;
        let mut blocks = vec![[0i32; BLOCK / 2]; padded];
        let mut scales = vec![0f32; padded];
        for ((values, block), scale) in values.chunks_exact(BLOCK).zip(&mut blocks).zip(&mut scales)
        {
            let largest = values.iter().fold(0f32, |m, x| m.max(x.abs()));
            *scale = largest / I16_MAX;
            let inverse = if largest > 0.0 { I16_MAX / largest } else { 0.0 };
            let round = |x: f32| round_to_even(x * inverse) as i16 as u16;
            for (pair, values) in block.iter_mut().zip(values.chunks_exact(2)) {
                *pair = (u32::from(round(values[0])) | u32::from(round(values[1])) << 16) as i32;
            }
        }
        Self { blocks, scales, inputs, rows }
    }

    /// Row `r`'s blocks and block scales.
    fn row(&self, r: usize) -> (&[ActivationBlock], &[f32]) {
        let row_blocks = self.inputs / BLOCK;
        let range = r * row_blocks..(r + 1) * row_blocks;
        (&self.blocks[range.clone()], &self.scales[range])
    }
}

/// `v` rounded to the nearest integer, ties to even, for `|v| < 2²²`: adding and taking away
/// 1.5 · 2²³ leaves no fraction bits to round into. The same bits on every target, and
/// inlined where `f32::round_ties_even` is a library call (x86-64 without SSE4.1).
#[inline(always)]
pub(super) fn round_to_even(v: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0;
    (v + SHIFT) - SHIFT
}

/// One tile: four activation rows `x` (blocks and block scales) times the [`NR`] output rows
/// packed in `quants` and `scales`; for each row, its [`NR`] sums.
///
/// The rows and columns are indexed in fixed-size arrays, and the four rows spelled out, so
/// that the loop needs no bounds checks or iterator calls and its accumulators stay in
/// registers even in the WebAssembly module, which is built for size (where LLVM neither
/// unrolls loops nor inlines iterator adapters).
#[inline(always)]
fn tile<L: Lanes>(
    x: [(&[ActivationBlock], &[f32]); MR],
    quants: &[PackedBlock],
    scales: &[[f32; NR]],
) -> [Eight<L::Floats>; MR] {
    let [(x0, d0), (x1, d1), (x2, d2), (x3, d3)] = x;
    let zero = Eight { low: L::splat(0.0), high: L::splat(0.0) };
    let (mut s0, mut s1, mut s2, mut s3) = (zero, zero, zero, zero);
    for b in 0..quants.len() {
        let (q, (a0, a1, a2, a3)) = (&quants[b], (&x0[b], &x1[b], &x2[b], &x3[b]));
        let zero = Eight { low: L::zero(), high: L::zero() };
        let (mut e0, mut e1, mut e2, mut e3) = (zero, zero, zero, zero);
        for p in 0..BLOCK / 2 {
            let (low, high) = L::widen(&q[p]);
            e0 = e0.dot_add::<L>(L::broadcast(a0[p]), low, high);
            e1 = e1.dot_add::<L>(L::broadcast(a1[p]), low, high);
            e2 = e2.dot_add::<L>(L::broadcast(a2[p]), low, high);
            e3 = e3.dot_add::<L>(L::broadcast(a3[p]), low, high);
        }
        let (low, high) = scales[b].split_at(NR / 2);
        let w = Eight { low: L::floats(low), high: L::floats(high) };
        s0 = s0.scale_add::<L>(w, d0[b], e0);
        s1 = s1.scale_add::<L>(w, d1[b], e1);
        s2 = s2.scale_add::<L>(w, d2[b], e2);
        s3 = s3.scale_add::<L>(w, d3[b], e3);
    }
    [s0, s1, s2, s3]
}

/// Values for a tile row's [`NR`] outputs: the first four, then the last four.
#[derive(Clone, Copy)]
struct Eight<T> {
    low: T,
    high: T,
}

impl<T: Copy> Eight<T> {
    /// Adds the products of the activation pair `x` with the outputs' weight pairs.
    #[inline(always)]
    fn dot_add<L: Lanes<Ints = T>>(self, x: L::Pairs, low: L::Pairs, high: L::Pairs) -> Self {
        Eight { low: L::dot_add(self.low, x, low), high: L::dot_add(self.high, x, high) }
    }

    /// Adds a block's exact sums scaled by the weights' block scales `w` and the activations'
    /// block scale `d`: `self + (w · d) · exact`.
    #[inline(always)]
    fn scale_add<L: Lanes<Floats = T>>(self, w: Eight<T>, d: f32, exact: Eight<L::Ints>) -> Self {
        let d = L::splat(d);
        let term = |w, exact| L::mul(L::mul(w, d), L::to_floats(exact));
        Eight {
            low: L::add(self.low, term(w.low, exact.low)),
            high: L::add(self.high, term(w.high, exact.high)),
        }
    }
}

/// The few vector operations of [`tile`], on four lanes. Every implementation computes the
/// same values: integer sums are exact, and each `f32` operation is one IEEE operation per
/// lane (no fused multiply-add).
trait Lanes {
    /// Eight `i16`, read as four pairs.
    type Pairs: Copy;
    /// Four `i32`.
    type Ints: Copy;
    /// Four `f32`.
    type Floats: Copy;

    /// Sixteen `i8` widened to `i16`: the first eight, then the last eight.
    fn widen(q: &[i8; 16]) -> (Self::Pairs, Self::Pairs);
    /// A pair of `i16` (packed in an `i32`, the first in the low half) in every lane.
    fn broadcast(pair: i32) -> Self::Pairs;
    /// Four zeros.
    fn zero() -> Self::Ints;
    /// `acc` plus, in each lane, the sum of the lane's two products of `a` and `b`.
    fn dot_add(acc: Self::Ints, a: Self::Pairs, b: Self::Pairs) -> Self::Ints;
    /// Each lane converted to the nearest `f32`.
    fn to_floats(v: Self::Ints) -> Self::Floats;
    /// The first four values of `v`.
    fn floats(v: &[f32]) -> Self::Floats;
    /// `v` in every lane.
    fn splat(v: f32) -> Self::Floats;
    /// Lane-wise product.
    fn mul(a: Self::Floats, b: Self::Floats) -> Self::Floats;
    /// Lane-wise sum.
    fn add(a: Self::Floats, b: Self::Floats) -> Self::Floats;
    /// The lanes in order.
    fn to_array(v: Self::Floats) -> [f32; 4];
}

/// The lanes this build multiplies with.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
type Native = simd128::Simd128;
/// The lanes this build multiplies with.
#[cfg(target_arch = "x86_64")]
type Native = sse2::Sse2;
/// The lanes this build multiplies with.
#[cfg(not(any(all(target_arch = "wasm32", target_feature = "simd128"), target_arch = "x86_64")))]
type Native = Portable;

/// Plain arrays: the reference the vector implementations are tested against, and the lanes
/// of targets without one.
#[cfg_attr(
    any(all(target_arch = "wasm32", target_feature = "simd128"), target_arch = "x86_64"),
    allow(dead_code)
)]
struct Portable;

impl Lanes for Portable {
    type Pairs = [i16; 8];
    type Ints = [i32; 4];
    type Floats = [f32; 4];

    #[inline(always)]
    fn widen(q: &[i8; 16]) -> ([i16; 8], [i16; 8]) {
        (std::array::from_fn(|i| i16::from(q[i])), std::array::from_fn(|i| i16::from(q[8 + i])))
    }

    #[inline(always)]
    fn broadcast(pair: i32) -> [i16; 8] {
        let (low, high) = (pair as i16, (pair >> 16) as i16);
        std::array::from_fn(|i| if i % 2 == 0 { low } else { high })
    }

    #[inline(always)]
    fn zero() -> [i32; 4] {
        [0; 4]
    }

    #[inline(always)]
    fn dot_add(acc: [i32; 4], a: [i16; 8], b: [i16; 8]) -> [i32; 4] {
        let product = |i: usize| i32::from(a[i]) * i32::from(b[i]);
        std::array::from_fn(|l| {
            acc[l].wrapping_add(product(2 * l).wrapping_add(product(2 * l + 1)))
        })
    }

    #[inline(always)]
    fn to_floats(v: [i32; 4]) -> [f32; 4] {
        v.map(|v| v as f32)
    }

    #[inline(always)]
    fn floats(v: &[f32]) -> [f32; 4] {
        [v[0], v[1], v[2], v[3]]
    }

    #[inline(always)]
    fn splat(v: f32) -> [f32; 4] {
        [v; 4]
    }

    #[inline(always)]
    fn mul(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        std::array::from_fn(|l| a[l] * b[l])
    }

    #[inline(always)]
    fn add(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        std::array::from_fn(|l| a[l] + b[l])
    }

    #[inline(always)]
    fn to_array(v: [f32; 4]) -> [f32; 4] {
        v
    }
}

/// WebAssembly's 128-bit SIMD: `i32x4.dot_i16x8_s` does two products per lane.
///
/// The one `unsafe` operation reads 16 bytes through a pointer made from a reference to
/// exactly 16 bytes (WebAssembly loads need no alignment).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[allow(unsafe_code)]
mod simd128 {
    use core::arch::wasm32::{
        f32x4, f32x4_add, f32x4_convert_i32x4, f32x4_extract_lane, f32x4_mul, f32x4_splat,
        i16x8_extend_high_i8x16, i16x8_extend_low_i8x16, i32x4_add, i32x4_dot_i16x8, i32x4_splat,
        v128, v128_load,
    };

    pub(super) struct Simd128;

    impl super::Lanes for Simd128 {
        type Pairs = v128;
        type Ints = v128;
        type Floats = v128;

        #[inline(always)]
        fn widen(q: &[i8; 16]) -> (v128, v128) {
            // SAFETY: `q` is 16 readable bytes.
            let v = unsafe { v128_load(q.as_ptr().cast::<v128>()) };
            (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v))
        }

        #[inline(always)]
        fn broadcast(pair: i32) -> v128 {
            i32x4_splat(pair)
        }

        #[inline(always)]
        fn zero() -> v128 {
            i32x4_splat(0)
        }

        #[inline(always)]
        fn dot_add(acc: v128, a: v128, b: v128) -> v128 {
            i32x4_add(acc, i32x4_dot_i16x8(a, b))
        }

        #[inline(always)]
        fn to_floats(v: v128) -> v128 {
            f32x4_convert_i32x4(v)
        }

        #[inline(always)]
        fn floats(v: &[f32]) -> v128 {
            f32x4(v[0], v[1], v[2], v[3])
        }

        #[inline(always)]
        fn splat(v: f32) -> v128 {
            f32x4_splat(v)
        }

        #[inline(always)]
        fn mul(a: v128, b: v128) -> v128 {
            f32x4_mul(a, b)
        }

        #[inline(always)]
        fn add(a: v128, b: v128) -> v128 {
            f32x4_add(a, b)
        }

        #[inline(always)]
        fn to_array(v: v128) -> [f32; 4] {
            [
                f32x4_extract_lane::<0>(v),
                f32x4_extract_lane::<1>(v),
                f32x4_extract_lane::<2>(v),
                f32x4_extract_lane::<3>(v),
            ]
        }
    }
}

/// x86-64's SSE2 (every x86-64 processor has it): `pmaddwd` does two products per lane.
///
/// The intrinsics are `unsafe` because they require SSE2, which every x86-64 processor has
/// (it is part of the target's baseline); the one load reads a reference to exactly 16 bytes.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod sse2 {
    use std::arch::x86_64::{
        __m128, __m128i, _mm_add_epi32, _mm_add_ps, _mm_cvtepi32_ps, _mm_cvtss_f32,
        _mm_loadu_si128, _mm_madd_epi16, _mm_mul_ps, _mm_set_ps, _mm_set1_epi32, _mm_set1_ps,
        _mm_setzero_si128, _mm_shuffle_ps, _mm_srai_epi16, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
    };

    pub(super) struct Sse2;

    impl super::Lanes for Sse2 {
        type Pairs = __m128i;
        type Ints = __m128i;
        type Floats = __m128;

        #[inline(always)]
        fn widen(q: &[i8; 16]) -> (__m128i, __m128i) {
            // SAFETY: SSE2 is always present on x86-64, and `q` is 16 readable bytes.
            unsafe {
                let v = _mm_loadu_si128(q.as_ptr().cast::<__m128i>());
                // Each byte into the high half of a 16-bit lane, shifted down with its sign.
                let (low, high) = (_mm_unpacklo_epi8(v, v), _mm_unpackhi_epi8(v, v));
                (_mm_srai_epi16::<8>(low), _mm_srai_epi16::<8>(high))
            }
        }

        #[inline(always)]
        fn broadcast(pair: i32) -> __m128i {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_set1_epi32(pair) }
        }

        #[inline(always)]
        fn zero() -> __m128i {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_setzero_si128() }
        }

        #[inline(always)]
        fn dot_add(acc: __m128i, a: __m128i, b: __m128i) -> __m128i {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_add_epi32(acc, _mm_madd_epi16(a, b)) }
        }

        #[inline(always)]
        fn to_floats(v: __m128i) -> __m128 {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_cvtepi32_ps(v) }
        }

        #[inline(always)]
        fn floats(v: &[f32]) -> __m128 {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_set_ps(v[3], v[2], v[1], v[0]) }
        }

        #[inline(always)]
        fn splat(v: f32) -> __m128 {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_set1_ps(v) }
        }

        #[inline(always)]
        fn mul(a: __m128, b: __m128) -> __m128 {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_mul_ps(a, b) }
        }

        #[inline(always)]
        fn add(a: __m128, b: __m128) -> __m128 {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe { _mm_add_ps(a, b) }
        }

        #[inline(always)]
        fn to_array(v: __m128) -> [f32; 4] {
            // SAFETY: SSE2 is always present on x86-64.
            unsafe {
                [
                    _mm_cvtss_f32(v),
                    _mm_cvtss_f32(_mm_shuffle_ps::<0b01_01_01_01>(v, v)),
                    _mm_cvtss_f32(_mm_shuffle_ps::<0b10_10_10_10>(v, v)),
                    _mm_cvtss_f32(_mm_shuffle_ps::<0b11_11_11_11>(v, v)),
                ]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A weight of `outputs × inputs` values spread over several magnitudes, quantized.
    fn weight(outputs: usize, inputs: usize) -> (Tensor, QTensor) {
        let values: Vec<f32> = (0..outputs * inputs)
            .map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0 * (1 + i % 5) as f32)
            .collect();
        let float = Tensor::from_vec(values, (outputs, inputs), &Device::Cpu).unwrap();
        let quantized = QTensor::quantize(&float, GgmlDType::Q8_0).unwrap();
        (float, quantized)
    }

    #[test]
    fn matches_the_product_on_the_dequantized_weights() {
        let (outputs, inputs) = (24, 96);
        let (_, quantized) = weight(outputs, inputs);
        let bias: Vec<f32> = (0..outputs).map(|i| i as f32 / 10.0 - 1.0).collect();
        let layer = Linear::new(&quantized, bias.clone()).unwrap();
        // 2 × 3 rows: the last tile is partly padding. One row has a large outlier.
        let x: Vec<f32> = (0..6 * inputs)
            .map(|i| if i == 100 { 40.0 } else { ((i * 31 % 17) as f32 - 8.0) / 3.0 })
            .collect();
        let x = Tensor::from_vec(x, (2, 3, inputs), &Device::Cpu).unwrap();
        let got = layer.forward(&x).unwrap();
        assert_eq!(got.dims(), [2, 3, outputs]);

        let dequantized = quantized.dequantize(&Device::Cpu).unwrap();
        let bias = Tensor::from_vec(bias, outputs, &Device::Cpu).unwrap();
        let want = candle_nn::Linear::new(dequantized, Some(bias));
        let want = candle_core::Module::forward(&want, &x).unwrap();
        let (got, want) =
            (got.flatten_all().unwrap().to_vec1::<f32>().unwrap(), want.flatten_all().unwrap());
        let want = want.to_vec1::<f32>().unwrap();
        let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= scale * 1e-4, "{g} against {w} (largest {scale})");
        }
    }

    #[test]
    fn the_vector_lanes_compute_the_same_bits_as_plain_arrays() {
        let (outputs, inputs) = (32, 1536);
        let (_, quantized) = weight(outputs, inputs);
        let layer = Linear::new(&quantized, vec![0.25; outputs]).unwrap();
        let rows = 7;
        let x: Vec<f32> =
            (0..rows * inputs).map(|i| ((i * 7 % 23) as f32 - 11.0) * (i % 13) as f32).collect();
        let activations = Activations::new(&x, inputs);
        let (mut native, mut portable) = (vec![0f32; rows * outputs], vec![1f32; rows * outputs]);
        layer.multiply::<Native>(&activations, &mut native);
        layer.multiply::<Portable>(&activations, &mut portable);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&native), bits(&portable));
    }

    #[test]
    fn refuses_weights_it_cannot_pack() {
        let (float, quantized) = weight(12, 64);
        assert!(Linear::new(&quantized, vec![0.0; 12]).is_err(), "12 outputs");
        let (_, quantized) = weight(16, 64);
        assert!(Linear::new(&quantized, vec![0.0; 15]).is_err(), "15 biases");
        let f32_weight = QTensor::quantize(&float, GgmlDType::F32).unwrap();
        assert!(Linear::new(&f32_weight, vec![0.0; 12]).is_err(), "f32");
    }

    #[test]
    fn rounds_to_the_nearest_integer_ties_to_even() {
        for v in [-32767.0f32, -2.5, -1.5, -0.7, -0.5, 0.0, 0.49, 0.5, 1.5, 2.5, 3.2, 32766.5] {
            assert_eq!(round_to_even(v), v.round_ties_even(), "{v}");
        }
    }

    #[test]
    fn all_zero_blocks_give_the_bias() {
        let (_, quantized) = weight(8, 32);
        let layer = Linear::new(&quantized, vec![0.5; 8]).unwrap();
        let x = Tensor::zeros((5, 32), candle_core::DType::F32, &Device::Cpu).unwrap();
        let y = layer.forward(&x).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(y, vec![0.5; 40]);
    }
}
