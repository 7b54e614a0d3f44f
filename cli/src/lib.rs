//! The library face of `edgerag-cli`: what the `edgerag` binary (`src/main.rs`) shares with
//! the benchmark harness (`edgerag-bench`) and the fuzz targets. The binary's commands are its
//! own; here are the pieces they stand on that another crate needs:
//!
//! - [`output`]: stdout, stderr and progress bars as every command writes them;
//! - [`files`]: reading inputs and bundles, writing atomically;
//! - [`http`]: the HTTP client configuration every command starts from;
//! - [`models`] and [`flags::model`]: finding, fetching and checking the embedding and chat
//!   models, and the `--model` flag;
//! - [`beir`]: reading a BEIR data set and a bundle saved from one;
//! - [`indexing`]: a build's indexing steps with progress bars (and their times);
//! - [`source`]: reading a bundle by byte range from a local file or an HTTP(S) URL;
//! - [`byteranges`]: several byte ranges in one HTTP response, as `serve` writes them and
//!   [`source`] reads them;
//! - [`serve::request`]: the HTTP/1.1 request-head parser of `edgerag serve`, for fuzz targets.

pub mod beir;
pub mod byteranges;
pub mod files;
pub mod http;
pub mod indexing;
pub mod models;
pub mod output;
pub mod source;

pub mod flags {
    //! Flags shared by several commands; the binary has the others.

    pub mod model;
}

pub mod serve {
    //! `edgerag serve`'s wire protocol, as far as fuzz targets need it.

    pub mod request;
}
