//! edgerag-core: documents in, a versioned corpus bundle out, searched anywhere.

pub mod bundle;
pub mod chunk;
mod error;
pub mod eval;
pub mod graph;
pub mod index;
pub mod keywords;
pub mod load;
pub mod query;
pub mod text;

pub use bundle::{BuildOptions, Bundle, BundleBuilder};
pub use error::{Error, Result};
pub use load::{DocKind, Document, load};
pub use query::{Hit, Mode, SearchOptions, Searcher};

/// Content hash used for document and chunk ids: the first 16 bytes of BLAKE3, in hex.
pub fn content_id(bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    hash.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
}
