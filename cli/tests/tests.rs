//! End-to-end tests of the `edgerag` binary on real documents.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod ask;
mod build;
mod cli;
mod embed;
mod eval;
mod hostile;
mod judge;
mod llm_server;
mod local;
mod quantize;
mod search;
mod serve;
mod source;
mod support;
