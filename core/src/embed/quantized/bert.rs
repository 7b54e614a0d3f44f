//! The BERT encoder on quantized weights: the same computation as candle-transformers'
//! `BertModel`, with the linear layers' products computed in integers on the `q8_0` matrices
//! (`matmul.rs`), and the word embeddings gathered row by row from their `q8_0` table (only the
//! rows of the batch's tokens are ever expanded).
//!
//! The products round the activations to 16 bits per block of 32 and sum exactly in integers,
//! in one fixed order of `f32` operations on every platform, so the browser, the edge and the
//! CLI compute the same products. (GGML's `q8_0 × q8_0` kernels round the activations to 8
//! bits, which costs accuracy, and sum in a different order on each platform's kernel, enough
//! (≈ 1e-3) to swap near-tied search results between hosts.) The rest of the encoder runs in
//! `f32` on candle's kernels, whose summation order differs between platforms by ≈ 1e-6, as the
//! `f32` model's does.

use std::collections::HashMap;

use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm};
use candle_transformers::models::bert::{Config, HiddenAct};

use super::matmul::{Activations, Linear};
use super::{activation, attention};

/// The loaded tensors, taken out by name as the layers are assembled, and the bytes of what
/// the layers hold of them.
pub(super) struct Weights {
    tensors: HashMap<String, QTensor>,
    held: usize,
}

impl Weights {
    pub(super) fn new(tensors: HashMap<String, QTensor>) -> Self {
        Self { tensors, held: 0 }
    }

    fn remove(&mut self, name: &str) -> candle_core::Result<QTensor> {
        self.tensors
            .remove(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {name}")))
    }

    /// A tensor as stored (held as is).
    fn take(&mut self, name: &str) -> candle_core::Result<QTensor> {
        let tensor = self.remove(name)?;
        self.held += tensor.storage_size_in_bytes();
        Ok(tensor)
    }

    /// A tensor stored as `f32`, as a plain tensor.
    fn float(&mut self, name: &str) -> candle_core::Result<Tensor> {
        self.take(name)?.dequantize(&Device::Cpu)
    }

    fn linear(&mut self, prefix: &str) -> candle_core::Result<Linear> {
        let weight = self.remove(&format!("{prefix}.weight"))?;
        let bias = self.remove(&format!("{prefix}.bias"))?.dequantize(&Device::Cpu)?;
        let linear = Linear::new(&weight, bias.to_vec1()?)?;
        self.held += linear.bytes();
        Ok(linear)
    }

    fn norm(&mut self, prefix: &str, eps: f64) -> candle_core::Result<LayerNorm> {
        let weight = self.float(&format!("{prefix}.weight"))?;
        Ok(LayerNorm::new(weight, self.float(&format!("{prefix}.bias"))?, eps))
    }
}

/// One transformer layer.
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// A BERT encoder with quantized weights.
pub(crate) struct Bert {
    words: QTensor,
    positions: Tensor,
    token_types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    activation: HiddenAct,
    /// Bytes of the weights held.
    weight_bytes: usize,
}

impl Bert {
    /// Assembles the encoder from `weights` (already checked against the tensor list).
    pub(super) fn load(config: &Config, weights: &mut Weights) -> candle_core::Result<Self> {
        let eps = config.layer_norm_eps;
        let words = weights.take("embeddings.word_embeddings.weight")?;
        let positions = weights.float("embeddings.position_embeddings.weight")?;
        let token_types = Embedding::new(
            weights.float("embeddings.token_type_embeddings.weight")?,
            config.hidden_size,
        );
        let norm = weights.norm("embeddings.LayerNorm", eps)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    query: weights.linear(&format!("{p}.attention.self.query"))?,
                    key: weights.linear(&format!("{p}.attention.self.key"))?,
                    value: weights.linear(&format!("{p}.attention.self.value"))?,
                    attention_output: weights.linear(&format!("{p}.attention.output.dense"))?,
                    attention_norm: weights
                        .norm(&format!("{p}.attention.output.LayerNorm"), eps)?,
                    intermediate: weights.linear(&format!("{p}.intermediate.dense"))?,
                    output: weights.linear(&format!("{p}.output.dense"))?,
                    output_norm: weights.norm(&format!("{p}.output.LayerNorm"), eps)?,
                })
            })
            .collect::<candle_core::Result<_>>()?;
        let heads = config.num_attention_heads;
        Ok(Self {
            words,
            positions,
            token_types,
            norm,
            layers,
            heads,
            head_size: config.hidden_size / heads,
            activation: config.hidden_act,
            weight_bytes: weights.held,
        })
    }

    /// Bytes of the weights held: the packed matrices (see [`Linear`]), the `q8_0` word
    /// embeddings and the `f32` vectors.
    pub(crate) fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    /// The last layer's token vectors (batch × tokens × hidden) of `ids` (batch × tokens), with
    /// `mask` 1 for real tokens and 0 for padding.
    pub(crate) fn forward(
        &self,
        ids: &Tensor,
        token_types: &Tensor,
        mask: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let words = self.words.embedding(ids)?;
        let x = (words + self.token_types.forward(token_types)?)?
            .broadcast_add(&self.positions.narrow(0, 0, tokens)?)?;
        let mut x = self.norm.forward(&x)?;
        let mask = mask.to_dtype(DType::U32)?.flatten_all()?.to_vec1::<u32>()?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &mask)?;
        }
        Ok(x)
    }

    fn layer(&self, layer: &Layer, x: &Tensor, mask: &[u32]) -> candle_core::Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        let rounded = Activations::new(&x.flatten_all()?.to_vec1::<f32>()?, hidden);
        let [query, key, value] =
            [&layer.query, &layer.key, &layer.value].map(|linear| linear.apply(&rounded));
        let context =
            attention::attend(&query?, &key?, &value?, mask, tokens, self.heads, self.head_size)?;
        let attended = layer.attention_output.apply(&Activations::new(&context, hidden))?;
        let attended = Tensor::from_vec(attended, (batch, tokens, hidden), &Device::Cpu)?;
        let attended = layer.attention_norm.forward(&(attended + x)?)?;
        let hidden = layer.intermediate.forward(&attended)?;
        let hidden = match self.activation {
            HiddenAct::Gelu => {
                let mut values = hidden.flatten_all()?.to_vec1::<f32>()?;
                activation::gelu(&mut values);
                Tensor::from_vec(values, hidden.shape(), &Device::Cpu)?
            }
            HiddenAct::GeluApproximate => hidden.gelu()?,
            HiddenAct::Relu => hidden.relu()?,
        };
        layer.output_norm.forward(&(layer.output.forward(&hidden)? + attended)?)
    }
}
