//! The library face of `edgerag-cli`, for fuzz targets: the parts of the `edgerag` binary that
//! take bytes from outside and can be exercised without sockets or files. Only the HTTP/1.1
//! request-head parser of `edgerag serve` is here ([`serve::request::parse`]); everything else
//! is the binary's (`src/main.rs`). This library uses nothing but `std`.

pub mod serve {
    //! `edgerag serve`'s wire protocol, as far as fuzz targets need it.

    pub mod request;
}
