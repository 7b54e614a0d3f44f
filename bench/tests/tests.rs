//! End-to-end tests of the `edgerag-bench` harness on real data.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod bench;
mod run;
#[path = "../../cli/tests/support.rs"]
mod support;
