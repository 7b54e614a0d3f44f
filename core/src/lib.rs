//! edgerag-core: documents in, a versioned corpus bundle out, searched anywhere.
//!
//! The pipeline runs the same on native targets and on `wasm32-unknown-unknown`: load
//! documents from bytes, chunk them, extract keywords, build the keyword graph and the BM25
//! index, encode everything as one [`Bundle`], query it with a [`Searcher`], and answer
//! questions with citations ([`answer::Answerer`]): extractively, or through an
//! OpenAI-compatible LLM ([`llm`]). The crate does no I/O: hosts (the CLI, the browser, the
//! edge worker) read and write the bytes and carry the LLM's HTTP requests.
//!
//! ```
//! use edgerag_core::answer::{Answerer, AskOptions};
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
//!
//! // Offline, an answer quotes the best sentences and cites them.
//! let answerer = Answerer::new(&searcher, AskOptions::default());
//! let answer = answerer.extractive("who improved the steam engine?")?;
//! assert!(answer.answer.contains("in 1781 with a separate condenser [S1]."));
//! assert_eq!(answer.citations[0].chunk_id, hits[0].chunk_id);
//! # Ok(())
//! # }
//! ```

pub mod answer;
pub mod bundle;
pub mod chunk;
pub mod completions;
#[cfg(feature = "embed")]
pub mod embed;
mod error;
pub mod eval;
#[cfg(feature = "generate")]
pub mod generate;
pub mod graph;
pub mod index;
pub mod keywords;
pub mod limits;
pub mod llm;
pub mod load;
pub mod query;
pub mod request;
pub mod text;

pub use bundle::{BuildOptions, Bundle, BundleBuilder};
pub use error::{Error, Result, one_line};
pub use load::{DocKind, Document, load};
pub use query::{Hit, Mode, SearchOptions, Searcher};

/// Content hash used for document and chunk ids: the first 16 bytes of BLAKE3, in hex.
pub fn content_id(bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    hash.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
}
