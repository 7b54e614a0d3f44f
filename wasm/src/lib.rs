//! WebAssembly bindings for edgerag-core.
