//! The BERT encoder on quantized weights: the same computation as candle-transformers'
//! `BertModel`, with the matrices kept `q8_0` and expanded to `f32` one linear layer at a time,
//! just before that layer runs, and the word embeddings gathered row by row from their `q8_0`
//! table (only the rows of the batch's tokens are ever expanded).
//!
//! Expanding a `q8_0` value (`f16` scale × `i8`) to `f32` is exact, and the activations stay
//! `f32`, so every host computes what the `f32` model computes on the same weights: the result
//! differs between platforms only by the `f32` summation order of their matrix kernels
//! (≈ 1e-6), as the `f32` model's does. Quantizing the activations too (GGML's `q8_0 × q8_0`
//! kernels) is faster but rounds differently on each platform's kernel, enough (≈ 1e-3) to swap
//! near-tied search results between the browser, the edge and the CLI.

use std::collections::HashMap;

use candle_core::quantized::QTensor;
use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm};
use candle_transformers::models::bert::{Config, HiddenAct};

/// The loaded tensors, taken out by name as the layers are assembled.
pub(super) struct Weights(pub(super) HashMap<String, QTensor>);

impl Weights {
    fn take(&mut self, name: &str) -> candle_core::Result<QTensor> {
        self.0.remove(name).ok_or_else(|| candle_core::Error::Msg(format!("no tensor {name}")))
    }

    /// A tensor stored as `f32`, as a plain tensor.
    fn float(&mut self, name: &str) -> candle_core::Result<Tensor> {
        self.take(name)?.dequantize(&Device::Cpu)
    }

    fn linear(&mut self, prefix: &str) -> candle_core::Result<Linear> {
        let weight = self.take(&format!("{prefix}.weight"))?;
        Ok(Linear { weight, bias: self.float(&format!("{prefix}.bias"))? })
    }

    fn norm(&mut self, prefix: &str, eps: f64) -> candle_core::Result<LayerNorm> {
        let weight = self.float(&format!("{prefix}.weight"))?;
        Ok(LayerNorm::new(weight, self.float(&format!("{prefix}.bias"))?, eps))
    }
}

/// A linear layer: quantized weight (outputs × inputs), `f32` bias.
struct Linear {
    weight: QTensor,
    bias: Tensor,
}

impl Linear {
    /// `candle_nn::Linear`'s product, on the weight expanded for this call only.
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let weight = self.weight.dequantize(&Device::Cpu)?;
        candle_nn::Linear::new(weight, Some(self.bias.clone())).forward(x)
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
        })
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
        let mask = additive_mask(mask)?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &mask)?;
        }
        Ok(x)
    }

    fn layer(&self, layer: &Layer, x: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens, _) = x.dims3()?;
        let heads = |t: Tensor| {
            t.reshape((batch, tokens, self.heads, self.head_size))?.transpose(1, 2)?.contiguous()
        };
        let query = heads(layer.query.forward(x)?)?;
        let key = heads(layer.key.forward(x)?)?;
        let value = heads(layer.value.forward(x)?)?;
        let scores = (query.matmul(&key.t()?)? / (self.head_size as f64).sqrt())?;
        let probabilities = candle_nn::ops::softmax(&scores.broadcast_add(mask)?, D::Minus1)?;
        let context = probabilities.matmul(&value)?.transpose(1, 2)?.contiguous()?;
        let context = context.flatten_from(D::Minus2)?;
        let attended =
            layer.attention_norm.forward(&(layer.attention_output.forward(&context)? + x)?)?;
        let hidden = layer.intermediate.forward(&attended)?;
        let hidden = match self.activation {
            HiddenAct::Gelu => hidden.gelu_erf()?,
            HiddenAct::GeluApproximate => hidden.gelu()?,
            HiddenAct::Relu => hidden.relu()?,
        };
        layer.output_norm.forward(&(layer.output.forward(&hidden)? + attended)?)
    }
}

/// The attention mask as candle's `BertModel` makes it: batch × 1 × 1 × tokens, 0 where a
/// token may be attended and the lowest `f32` where it is padding.
fn additive_mask(mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(DType::F32)?;
    (mask.ones_like()? - &mask)?.affine(f64::from(f32::MIN), 0.0)
}
