//! The paged reader (format version 4), `PagedFile`: the bytes as they come (header, directory
//! hash), then with every hash made to match what it names, so that the directory's sections
//! and the slots behind them are decoded and read, hostile slot sizes and counts included.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    edgerag_fuzz::read_paged(data);
    edgerag_fuzz::read_paged(&edgerag_fuzz::with_valid_hashes(data));
});
