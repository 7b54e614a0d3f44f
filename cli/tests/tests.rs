//! End-to-end tests of the `edgerag` binary on real documents.

mod build;
mod cli;
mod eval;
mod search;
