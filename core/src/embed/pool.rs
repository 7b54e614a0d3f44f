//! Pooling token vectors into one vector per text, and L2 normalisation.

use candle_core::{DType, Tensor};

use super::Pooling;

/// Pools `hidden` (batch × tokens × dimension) into batch × dimension.
///
/// Mean pooling weights each token by `mask` (batch × tokens, 1 for real tokens and 0 for
/// padding), so padding never enters the mean.
pub(super) fn pool(
    hidden: &Tensor,
    mask: &Tensor,
    pooling: Pooling,
) -> candle_core::Result<Tensor> {
    match pooling {
        Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
        Pooling::Mean => {
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // batch × tokens × 1
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // batch × dimension
            // Every input holds at least its special tokens; the floor only guards division.
            let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?; // batch × 1
            summed.broadcast_div(&counts)
        }
    }
}

/// Scales each row of `vectors` (batch × dimension) to unit length, like PyTorch's
/// `F.normalize` (a zero row stays zero).
pub(super) fn normalize(vectors: &Tensor) -> candle_core::Result<Tensor> {
    let norms = vectors.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
    vectors.broadcast_div(&norms)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use candle_core::{Device, Tensor};

    use super::*;

    #[test]
    fn mean_pooling_ignores_padding() {
        // Two texts: the first has 2 real tokens and 2 padded positions holding large values.
        let hidden = Tensor::new(
            &[
                [[1.0f32, 2.0], [3.0, 4.0], [100.0, 100.0], [-50.0, 7.0]],
                [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [6.0, 6.0]],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(&[[1u32, 1, 0, 0], [1, 1, 1, 1]], &Device::Cpu).unwrap();
        let pooled = pool(&hidden, &mask, Pooling::Mean).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(pooled, vec![vec![2.0, 3.0], vec![3.0, 3.0]]);
        let cls = pool(&hidden, &mask, Pooling::Cls).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(cls, vec![vec![1.0, 2.0], vec![1.0, 1.0]]);
    }

    #[test]
    fn normalize_gives_unit_rows_and_keeps_zero_rows() {
        let v = Tensor::new(&[[3.0f32, 4.0], [0.0, 0.0]], &Device::Cpu).unwrap();
        let n = normalize(&v).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(n, vec![vec![0.6, 0.8], vec![0.0, 0.0]]);
    }
}
