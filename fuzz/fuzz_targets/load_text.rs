//! The text loader, `load_as(DocKind::Text, …)`, and the build of the document it gives:
//! the document must keep the loaders' conventions (`edgerag_fuzz::check_document`) and
//! its bundle must encode, decode and answer queries.
#![no_main]

use edgerag_core::DocKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    edgerag_fuzz::load_and_build(DocKind::Text, "fuzz.txt", data);
});
