//! The tensors of a BERT encoder: names, shapes and how the quantized file stores each. One
//! list serves the writer ([`super::quantize`]), the reader and the weight count of the `f32`
//! model, so they cannot disagree.

use candle_core::quantized::GgmlDType;
use candle_transformers::models::bert::Config;

/// How a tensor is stored in the quantized file (and held in memory after loading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `q8_0`: blocks of 32 values along a row, an `f16` scale and 32 `i8` each.
    Q8,
    /// Plain `f32` (biases, LayerNorms, position and token-type embeddings).
    F32,
}

impl Kind {
    /// The GGML type of this kind.
    pub(crate) fn dtype(self) -> GgmlDType {
        match self {
            Kind::Q8 => GgmlDType::Q8_0,
            Kind::F32 => GgmlDType::F32,
        }
    }
}

/// One tensor of the encoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// Name, as in Hugging Face's `BertModel` without a `bert.` prefix.
    pub(crate) name: String,
    /// Shape in PyTorch order (rows × columns for matrices).
    pub(crate) shape: Vec<usize>,
    /// Storage in the quantized file.
    pub(crate) kind: Kind,
}

impl Spec {
    fn new(name: String, shape: &[usize], kind: Kind) -> Self {
        Self { name, shape: shape.to_vec(), kind }
    }

    /// Number of values.
    pub(crate) fn elements(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Every tensor the encoder uses, in file order: the embeddings, then each layer. The pooler
/// is not among them (sentence embeddings pool the last layer themselves).
pub(crate) fn all(config: &Config) -> Vec<Spec> {
    let (h, i) = (config.hidden_size, config.intermediate_size);
    let mut specs = vec![
        Spec::new("embeddings.word_embeddings.weight".into(), &[config.vocab_size, h], Kind::Q8),
        Spec::new(
            "embeddings.position_embeddings.weight".into(),
            &[config.max_position_embeddings, h],
            Kind::F32,
        ),
        Spec::new(
            "embeddings.token_type_embeddings.weight".into(),
            &[config.type_vocab_size, h],
            Kind::F32,
        ),
    ];
    norm(&mut specs, "embeddings.LayerNorm", h);
    for layer in 0..config.num_hidden_layers {
        let p = format!("encoder.layer.{layer}");
        for part in ["query", "key", "value"] {
            linear(&mut specs, &format!("{p}.attention.self.{part}"), h, h);
        }
        linear(&mut specs, &format!("{p}.attention.output.dense"), h, h);
        norm(&mut specs, &format!("{p}.attention.output.LayerNorm"), h);
        linear(&mut specs, &format!("{p}.intermediate.dense"), h, i);
        linear(&mut specs, &format!("{p}.output.dense"), i, h);
        norm(&mut specs, &format!("{p}.output.LayerNorm"), h);
    }
    specs
}

/// A linear layer from `inputs` to `outputs`: its weight (outputs × inputs, quantized) and bias.
fn linear(specs: &mut Vec<Spec>, prefix: &str, inputs: usize, outputs: usize) {
    specs.push(Spec::new(format!("{prefix}.weight"), &[outputs, inputs], Kind::Q8));
    specs.push(Spec::new(format!("{prefix}.bias"), &[outputs], Kind::F32));
}

/// A LayerNorm's scale and shift.
fn norm(specs: &mut Vec<Spec>, prefix: &str, size: usize) {
    specs.push(Spec::new(format!("{prefix}.weight"), &[size], Kind::F32));
    specs.push(Spec::new(format!("{prefix}.bias"), &[size], Kind::F32));
}
