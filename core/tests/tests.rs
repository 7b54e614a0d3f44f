//! Integration tests of edgerag-core: the whole pipeline on real documents.

mod bundle;
mod common;
mod search;
