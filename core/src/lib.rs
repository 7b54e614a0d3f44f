//! edgerag-core: documents in, a versioned corpus bundle out, searched anywhere.
//!
//! The pipeline runs the same on native targets and on `wasm32-unknown-unknown`: load
//! documents from bytes, chunk them, extract keywords, build the keyword graph and the BM25
//! index, encode everything as one [`Bundle`], and query it with a [`Searcher`]. The crate does
//! no I/O: hosts (the CLI, the browser, the edge worker) read and write the bytes.
//!
//! ```
//! use edgerag_core::{BuildOptions, Bundle, BundleBuilder, Mode, SearchOptions, Searcher};
//!
//! # fn main() -> edgerag_core::Result<()> {
//! let markdown = b"# Steam engine\n\n\
//!     A steam engine is a heat engine that performs mechanical work using steam as its \
//!     working fluid. James Watt improved it in 1781 with a separate condenser.\n\n\
//!     ## Uses\n\nSteam engines drove pumps, locomotives, ships and factory machinery.";
//! let mut builder = BundleBuilder::new(BuildOptions::default())?;
//! builder.add(edgerag_core::load("steam.md", markdown)?);
//! let bundle = builder.finish(&mut |_progress| {})?;
//!
//! // A bundle is a file: encode it once, ship it, decode it anywhere.
//! let bytes = bundle.to_bytes()?;
//! let searcher = Searcher::new(Bundle::from_bytes(&bytes)?);
//!
//! let options = SearchOptions { k: 1, mode: Mode::Hybrid, ..SearchOptions::default() };
//! let hits = searcher.search("who improved the steam engine?", &options)?;
//! assert_eq!(hits[0].title, "Steam engine");
//! assert!(hits[0].text.contains("James Watt"));
//! # Ok(())
//! # }
//! ```

pub mod bundle;
pub mod chunk;
#[cfg(feature = "embed")]
pub mod embed;
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
