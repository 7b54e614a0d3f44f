//! Integration tests of edgerag-core: the whole pipeline on real documents.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

#[cfg(feature = "embed")]
mod answer;
mod bundle;
mod common;
#[cfg(feature = "embed")]
mod embed;
#[cfg(feature = "generate")]
mod generate;
mod paged;
#[cfg(feature = "embed")]
mod quantized;
mod search;
