//! Cloudflare Worker for edgerag.
//!
//! The HTTP API (search, ask, OpenAI-compatible chat) arrives with the edge-worker issue; this
//! crate already builds against edgerag-core so the workspace, and the bundle format it will
//! serve, stay in one piece.

pub use edgerag_core::Searcher;
