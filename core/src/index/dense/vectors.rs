//! Vector storage (f32, or int8 with per-dimension scales) and the dot-product kernels.

use serde::{Deserialize, Serialize};

/// How a [`DenseIndex`](super::DenseIndex) stores its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantization {
    /// Full precision: 4 bytes per dimension.
    F32,
    /// Symmetric scalar quantisation: 1 byte per dimension plus one f32 scale per dimension
    /// (`scale_d = max_i |x_id| / 127`, `q_id = round(x_id / scale_d)`).
    #[default]
    Int8,
}

/// Row-major vectors of one dimension, `len × dim` values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Vectors {
    dim: u32,
    data: Data,
}

/// The stored values. Both encode as one postcard byte string (little-endian f32, or
/// two's-complement i8), which decodes with a copy instead of element by element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Data {
    F32(#[serde(with = "f32_bytes")] Vec<f32>),
    Int8 {
        /// Per-dimension scales, `dim` entries.
        scales: Vec<f32>,
        #[serde(with = "i8_bytes")]
        values: Vec<i8>,
    },
}

/// Eight independent partial sums: floating-point addition is not associative, so a single
/// running sum would not vectorise; eight lanes fill one AVX or two SSE/simd128 registers.
const LANES: usize = 8;

/// `Σ a_i · b_i` over the common length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_with(a, b, |x| x)
}

/// `values` (rows of `scales.len()` values) multiplied by `scales`, dimension by dimension:
/// a query or a centroid in the form [`dot_i8`] takes against int8 rows.
pub(crate) fn scaled(values: &[f32], scales: &[f32]) -> Vec<f32> {
    let dim = scales.len().max(1);
    values.chunks(dim).flat_map(|row| row.iter().zip(scales).map(|(x, s)| x * s)).collect()
}

/// An int8 row dequantised with `scales`.
pub(crate) fn dequantized(row: &[i8], scales: &[f32]) -> Vec<f32> {
    row.iter().zip(scales).map(|(&q, s)| f32::from(q) * s).collect()
}

/// `Σ a_i · b_i` with `a` widened from i8.
pub(crate) fn dot_i8(a: &[i8], b: &[f32]) -> f32 {
    dot_with(a, b, f32::from)
}

/// `Σ a_i · b_i` with `a` int8 values as stored, a byte each (two's complement).
pub(crate) fn dot_i8_bytes(a: &[u8], b: &[f32]) -> f32 {
    dot_with(a, b, |x| f32::from(x as i8))
}

#[inline(always)]
fn dot_with<T: Copy>(a: &[T], b: &[f32], widen: impl Fn(T) -> f32) -> f32 {
    let n = a.len().min(b.len());
    let (a_blocks, a_tail) = a[..n].as_chunks::<LANES>();
    let (b_blocks, b_tail) = b[..n].as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for (x, y) in a_blocks.iter().zip(b_blocks) {
        for ((s, &x), &y) in acc.iter_mut().zip(x).zip(y) {
            *s += widen(x) * y;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(&x, &y)| widen(x) * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Borrowed int8 vectors: `values` holds `len × dim` of them, row-major, and row `i`
/// stands for `scales ⊙ row(i)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Int8Rows<'a> {
    /// Dimension of every row.
    pub(crate) dim: usize,
    /// Per-dimension scales, `dim` of them.
    pub(crate) scales: &'a [f32],
    /// The rows.
    pub(crate) values: &'a [i8],
}

impl Int8Rows<'_> {
    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.values.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Row `i`, quantised.
    pub(crate) fn row(&self, i: usize) -> &[i8] {
        &self.values[i * self.dim..(i + 1) * self.dim]
    }

    /// Row `i`, dequantised.
    pub(crate) fn get(&self, i: usize) -> Vec<f32> {
        dequantized(self.row(i), self.scales)
    }
}

impl Vectors {
    /// The rows, when they are stored as int8.
    pub(super) fn int8(&self) -> Option<Int8Rows<'_>> {
        match &self.data {
            Data::F32(_) => None,
            Data::Int8 { scales, values } => Some(Int8Rows { dim: self.dim(), scales, values }),
        }
    }

    /// Stores `flat` (`len × dim`, row-major) with `quantization`.
    pub(super) fn new(flat: &[f32], dim: u32, quantization: Quantization) -> Self {
        let data = match quantization {
            Quantization::F32 => Data::F32(flat.to_vec()),
            Quantization::Int8 => quantize(flat, dim as usize),
        };
        Self { dim, data }
    }

    /// Dimension of every vector.
    pub(super) fn dim(&self) -> usize {
        self.dim as usize
    }

    /// Number of vectors (0 for a malformed dimension of 0).
    pub(super) fn len(&self) -> usize {
        let values = match &self.data {
            Data::F32(values) => values.len(),
            Data::Int8 { values, .. } => values.len(),
        };
        values.checked_div(self.dim()).unwrap_or(0)
    }

    /// The storage format.
    pub(super) fn quantization(&self) -> Quantization {
        match self.data {
            Data::F32(_) => Quantization::F32,
            Data::Int8 { .. } => Quantization::Int8,
        }
    }

    /// Why the storage is inconsistent, if it is: a dimension of 0 with values, values not a
    /// whole number of rows, or scales that are not `dim` finite non-negative numbers.
    pub(super) fn problem(&self) -> Option<&'static str> {
        let (values, scales_ok) = match &self.data {
            Data::F32(values) => (values.len(), true),
            Data::Int8 { scales, values } => (
                values.len(),
                scales.len() == self.dim() && scales.iter().all(|s| s.is_finite() && *s >= 0.0),
            ),
        };
        if values > 0 && (self.dim == 0 || !values.is_multiple_of(self.dim())) {
            Some("vector data is not a whole number of rows")
        } else if !scales_ok {
            Some("int8 scales do not match the dimension")
        } else {
            None
        }
    }

    /// The query in the form [`score`](Self::score) expects: unchanged for f32, multiplied by
    /// the per-dimension scales for int8 (so `q · dequant(x) = (q ⊙ scale) · x_i8`).
    pub(super) fn prepare(&self, query: &[f32]) -> Vec<f32> {
        match &self.data {
            Data::F32(_) => query.to_vec(),
            Data::Int8 { scales, .. } => scaled(query, scales),
        }
    }

    /// Dot product of a [`prepare`](Self::prepare)d query with vector `row` (0 if out of range).
    pub(super) fn score(&self, prepared: &[f32], row: u32) -> f32 {
        let range = self.row_range(row);
        match &self.data {
            Data::F32(values) => values.get(range).map_or(0.0, |v| dot(v, prepared)),
            Data::Int8 { values, .. } => values.get(range).map_or(0.0, |v| dot_i8(v, prepared)),
        }
    }

    /// Vector `row`, dequantised.
    pub(super) fn get(&self, row: u32) -> Option<Vec<f32>> {
        let range = self.row_range(row);
        match &self.data {
            Data::F32(values) => values.get(range).map(<[f32]>::to_vec),
            Data::Int8 { scales, values } => values.get(range).map(|v| dequantized(v, scales)),
        }
    }

    fn row_range(&self, row: u32) -> std::ops::Range<usize> {
        let start = row as usize * self.dim();
        start..start + self.dim()
    }
}

/// Symmetric per-dimension int8 quantisation of `flat` (`len × dim`).
fn quantize(flat: &[f32], dim: usize) -> Data {
    let mut scales = vec![0f32; dim];
    for row in flat.chunks_exact(dim) {
        for (s, x) in scales.iter_mut().zip(row) {
            *s = s.max(x.abs());
        }
    }
    for s in &mut scales {
        *s /= 127.0;
    }
    let values = flat
        .chunks_exact(dim)
        .flat_map(|row| row.iter().zip(&scales))
        .map(|(x, &s)| if s > 0.0 { (x / s).round().clamp(-127.0, 127.0) as i8 } else { 0 })
        .collect();
    Data::Int8 { scales, values }
}

/// `Vec<f32>` as one byte string of little-endian values.
mod f32_bytes {
    use serde::{Deserializer, Serializer, de};

    pub(super) fn serialize<S: Serializer>(values: &[f32], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        let bytes = d.deserialize_bytes(super::BytesVisitor)?;
        let (words, rest) = bytes.as_chunks::<4>();
        if !rest.is_empty() {
            return Err(de::Error::custom("f32 vector data is not a multiple of 4 bytes"));
        }
        Ok(words.iter().map(|w| f32::from_le_bytes(*w)).collect())
    }
}

/// `Vec<i8>` as one byte string.
mod i8_bytes {
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(values: &[i8], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = values.iter().map(|v| v.to_le_bytes()[0]).collect();
        s.serialize_bytes(&bytes)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i8>, D::Error> {
        let bytes = d.deserialize_bytes(super::BytesVisitor)?;
        Ok(bytes.iter().map(|&b| i8::from_le_bytes([b])).collect())
    }
}

/// Accepts a byte string, borrowed or owned.
struct BytesVisitor;

impl<'de> serde::de::Visitor<'de> for BytesVisitor {
    type Value = std::borrow::Cow<'de, [u8]>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(v.to_vec().into())
    }

    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Self::Value, E> {
        Ok(v.into())
    }
}
