//! The llama architecture (decoder-only transformer: RMS norm, rotary positions, grouped-query
//! attention, SwiGLU feed-forward) over quantized weights read from a GGUF file.
//!
//! Written for small models on a CPU, in the process or in wasm:
//! - matrices stay quantized; the ones whose type candle has no SIMD kernel for (`Q4_1`, …)
//!   are re-quantized to `Q8_0` as they load ([`Weights::Fast`]), which has kernels for AVX2,
//!   NEON and wasm SIMD128 — several times faster for about 1.7× their memory;
//! - the token embedding stays quantized too (rows are expanded as they are looked up), and is
//!   the output projection when the file has none (tied embeddings);
//! - the KV cache grows in steps and is written in place, and the heads sharing a key/value
//!   head are computed in one product rather than copying keys and values per head.

use std::io::{Read, Seek};
use std::sync::Arc;

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::kv_cache::KvCache;
use candle_nn::ops::{rms_norm, softmax_last_dim};
use candle_nn::rotary_emb::rope_i;

use super::PROMPT_SLICE;

/// Positions the KV cache grows by.
const CACHE_STEP: usize = 512;

/// How matrices are kept in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// As stored in the file.
    AsStored,
    /// Types without SIMD kernels in candle re-quantized to `Q8_0` (the default).
    Fast,
}

/// The hyper-parameters read from the `llama.*` metadata.
#[derive(Debug, Clone, Copy)]
struct Shape {
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    rope_base: f32,
    eps: f32,
}

struct Layer {
    attn_norm: Tensor,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    o: Matrix,
    ffn_norm: Tensor,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
    cache: KvCache,
}

/// Rows of input from which a product expands the matrix to f32 and multiplies with f32
/// kernels (blocked, SIMD) instead of one quantized dot product per row and column: prompt
/// slices take this path, generated tokens the quantized one.
const EXPAND_FROM_ROWS: usize = 16;

/// A weight matrix, multiplied by on the right (`x · Wᵀ`).
struct Matrix {
    quantized: QMatMul,
    stored: Arc<QTensor>,
}

impl Matrix {
    fn new(stored: Arc<QTensor>) -> Result<Self> {
        Ok(Self { quantized: QMatMul::from_arc(Arc::clone(&stored))?, stored })
    }

    /// `x · Wᵀ` for `x` of shape `(1, rows, columns)`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.dim(1)? < EXPAND_FROM_ROWS {
            return self.quantized.forward(x);
        }
        // Exact: each weight is its block's scale times its small integer.
        let weights = self.stored.dequantize(&Device::Cpu)?;
        x.broadcast_matmul(&weights.t()?)
    }
}

/// A llama model's weights and KV cache.
pub(crate) struct Llama {
    embedding: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: Matrix,
    shape: Shape,
    /// Rotation frequencies, one per pair of a head's dimensions.
    frequencies: Tensor,
}

impl Llama {
    /// Reads the model described by `content` from `reader`.
    pub(crate) fn read<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        weights: Weights,
    ) -> Result<Self> {
        let device = &Device::Cpu;
        let get = |key: &str| {
            content
                .metadata
                .get(key)
                .ok_or_else(|| candle_core::Error::Msg(format!("the metadata has no {key}")))
        };
        let width = get("llama.embedding_length")?.to_u32()? as usize;
        let heads = get("llama.attention.head_count")?.to_u32()? as usize;
        let kv_heads = get("llama.attention.head_count_kv")?.to_u32()? as usize;
        let blocks = get("llama.block_count")?.to_u32()? as usize;
        if heads == 0
            || kv_heads == 0
            || !heads.is_multiple_of(kv_heads)
            || !width.is_multiple_of(2 * heads)
        {
            candle_core::bail!("{heads} attention heads and {kv_heads} key/value heads of {width}");
        }
        let head_dim = width / heads;
        // Variants this implementation does not compute are refused rather than run wrong.
        for key in ["llama.rope.dimension_count", "llama.attention.key_length"] {
            if let Ok(value) = get(key)
                && value.to_u32()? as usize != head_dim
            {
                candle_core::bail!("{key} differs from the heads' width {head_dim}: not supported");
            }
        }
        if content.tensor_infos.contains_key("rope_freqs.weight") {
            candle_core::bail!("scaled rotary embeddings (rope_freqs) are not supported");
        }
        let shape = Shape {
            heads,
            kv_heads,
            head_dim,
            rope_base: get("llama.rope.freq_base").and_then(|v| v.to_f32()).unwrap_or(10_000.0),
            eps: get("llama.attention.layer_norm_rms_epsilon")?.to_f32()?,
        };
        let mut file = File { content, reader, weights };
        let mut layers = Vec::with_capacity(blocks);
        for block in 0..blocks {
            let name = |part: &str| format!("blk.{block}.{part}.weight");
            layers.push(Layer {
                attn_norm: file.vector(&name("attn_norm"))?,
                q: file.matrix(&name("attn_q"))?,
                k: file.matrix(&name("attn_k"))?,
                v: file.matrix(&name("attn_v"))?,
                o: file.matrix(&name("attn_output"))?,
                ffn_norm: file.vector(&name("ffn_norm"))?,
                gate: file.matrix(&name("ffn_gate"))?,
                up: file.matrix(&name("ffn_up"))?,
                down: file.matrix(&name("ffn_down"))?,
                cache: KvCache::new(2, CACHE_STEP),
            });
        }
        // Looked up row by row, and the output projection when the file has none.
        let embedding = file.tensor("token_embd.weight")?;
        let embedding = Arc::new(file.fast(embedding)?);
        let output = if content.tensor_infos.contains_key("output.weight") {
            file.matrix("output.weight")?
        } else {
            Matrix::new(Arc::clone(&embedding))?
        };
        let norm = file.vector("output_norm.weight")?;
        let pairs = shape.head_dim / 2;
        let frequencies: Vec<f32> = (0..pairs)
            .map(|i| 1.0 / shape.rope_base.powf((2 * i) as f32 / shape.head_dim as f32))
            .collect();
        let frequencies = Tensor::from_vec(frequencies, (1, pairs), device)?;
        Ok(Self { embedding, layers, norm, output, shape, frequencies })
    }

    /// Runs `tokens` from position 0, [`PROMPT_SLICE`] at a time, and returns the logits of
    /// the token after them; the cache then holds them.
    pub(crate) fn prefill(&mut self, tokens: &[u32]) -> Result<Tensor> {
        for layer in &mut self.layers {
            layer.cache.reset();
        }
        let mut logits = None;
        for slice in tokens.chunks(PROMPT_SLICE) {
            logits = Some(self.forward(slice)?);
        }
        logits.ok_or_else(|| candle_core::Error::Msg("no tokens to run".to_owned()))
    }

    /// Runs `tokens`, at positions following those already in the cache, and returns the
    /// logits of the next token after the last one (`vocabulary` floats).
    pub(crate) fn forward(&mut self, tokens: &[u32]) -> Result<Tensor> {
        let device = &Device::Cpu;
        let Shape { heads, kv_heads, head_dim, eps, .. } = self.shape;
        let (start, len) = (self.cached(), tokens.len());
        let ids = Tensor::new(tokens, device)?;
        let mut x = self.embedding.embedding(&ids)?.unsqueeze(0)?;
        let (cos, sin) = self.rotation(start, len)?;
        // Heads sharing a key/value head are stacked, as if they were more positions.
        let group = heads / kv_heads;
        let mask = (len > 1).then(|| causal_mask(start, len, group)).transpose()?;
        let scale = 1.0 / (head_dim as f64).sqrt();
        for layer in &mut self.layers {
            let h = rms_norm(&x, &layer.attn_norm, eps)?;
            let split = |t: Tensor, n: usize| {
                t.reshape((1, len, n, head_dim))?.transpose(1, 2)?.contiguous()
            };
            let q = rope_i(&split(layer.q.forward(&h)?, heads)?, &cos, &sin)?;
            let k = rope_i(&split(layer.k.forward(&h)?, kv_heads)?, &cos, &sin)?;
            let v = split(layer.v.forward(&h)?, kv_heads)?;
            let (k, v) = layer.cache.append(&k, &v)?;
            let q = q.reshape((1, kv_heads, group * len, head_dim))?;
            let scores = (q.matmul(&k.t()?)? * scale)?;
            let scores = match &mask {
                Some(mask) => scores.broadcast_add(mask)?,
                None => scores,
            };
            let attended = softmax_last_dim(&scores)?.matmul(&v.contiguous()?)?;
            let attended = attended.reshape((1, heads, len, head_dim))?.transpose(1, 2)?;
            x = (x + layer.o.forward(&attended.reshape((1, len, heads * head_dim))?)?)?;

            let h = rms_norm(&x, &layer.ffn_norm, eps)?;
            let gated =
                (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (x + layer.down.forward(&gated)?)?;
        }
        let last = x.narrow(1, len - 1, 1)?;
        let last = rms_norm(&last, &self.norm, eps)?;
        self.output.forward(&last)?.flatten_all()?.to_dtype(DType::F32)
    }

    /// Positions in the KV cache.
    fn cached(&self) -> usize {
        self.layers.first().map_or(0, |layer| layer.cache.current_seq_len())
    }

    /// The rotary embedding's cosines and sines at positions `start..start + len`.
    fn rotation(&self, start: usize, len: usize) -> Result<(Tensor, Tensor)> {
        let positions: Vec<f32> = (start..start + len).map(|p| p as f32).collect();
        let angles = Tensor::from_vec(positions, (len, 1), &Device::Cpu)?
            .broadcast_mul(&self.frequencies)?;
        Ok((angles.cos()?, angles.sin()?))
    }
}

/// The tensors of a GGUF file, read one at a time.
struct File<'a, R> {
    content: &'a Content,
    reader: &'a mut R,
    weights: Weights,
}

impl<R: Read + Seek> File<'_, R> {
    fn tensor(&mut self, name: &str) -> Result<QTensor> {
        self.content.tensor(self.reader, name, &Device::Cpu)
    }

    /// A vector (a norm's weights) in f32.
    fn vector(&mut self, name: &str) -> Result<Tensor> {
        self.tensor(name)?.dequantize(&Device::Cpu)
    }

    /// A matrix to multiply by, re-quantized as [`Weights`] says.
    fn matrix(&mut self, name: &str) -> Result<Matrix> {
        let stored = self.tensor(name)?;
        Matrix::new(Arc::new(self.fast(stored)?))
    }

    /// `stored` as [`Weights`] says: re-quantized to `Q8_0` for [`Weights::Fast`] when candle
    /// has no SIMD kernel for its type.
    fn fast(&self, stored: QTensor) -> Result<QTensor> {
        match self.weights {
            Weights::Fast if !has_simd_kernel(stored.dtype()) => {
                QTensor::quantize(&stored.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)
            }
            _ => Ok(stored),
        }
    }
}

/// Whether candle multiplies matrices of this type with SIMD on the platforms edgerag runs
/// on (x86-64 AVX2, aarch64 NEON, wasm SIMD128).
fn has_simd_kernel(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::F32
            | GgmlDType::F16
            | GgmlDType::BF16
            | GgmlDType::Q4_0
            | GgmlDType::Q8_0
            | GgmlDType::Q4K
            | GgmlDType::Q6K
    )
}

/// The additive mask hiding later positions from each of `len` new positions (after `start`
/// cached ones), repeated for the `group` heads stacked per key/value head:
/// `(group × len, start + len)`.
fn causal_mask(start: usize, len: usize, group: usize) -> Result<Tensor> {
    let total = start + len;
    let mask: Vec<f32> = (0..group * len)
        .flat_map(|row| {
            let position = start + row % len;
            (0..total).map(move |j| if j > position { f32::NEG_INFINITY } else { 0.0 })
        })
        .collect();
    Tensor::from_vec(mask, (group * len, total), &Device::Cpu)?.unsqueeze(0)?.unsqueeze(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_hides_later_positions_for_every_stacked_head() -> Result<()> {
        let mask = causal_mask(1, 2, 2)?.squeeze(0)?.squeeze(0)?.to_vec2::<f32>()?;
        let inf = f32::NEG_INFINITY;
        let row_at_1 = vec![0.0, 0.0, inf];
        let row_at_2 = vec![0.0, 0.0, 0.0];
        assert_eq!(mask, [row_at_1.clone(), row_at_2.clone(), row_at_1, row_at_2]);
        Ok(())
    }
}
