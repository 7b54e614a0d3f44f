//! edgerag-core: documents in, a versioned corpus bundle out, searched anywhere.
//!
//! (Crate docs with a runnable example: see below once the pipeline is complete.)

pub mod chunk;
mod error;
pub mod graph;
pub mod keywords;
pub mod load;
pub mod text;

pub use error::{Error, Result};
pub use load::{DocKind, Document, load};

/// Content hash used for document and chunk ids: the first 16 bytes of BLAKE3, in hex.
pub fn content_id(bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    hash.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
}
