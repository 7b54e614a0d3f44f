//! The paged reader (format version 4), `PagedFile`, and the chunk store and BM25 index read
//! through it: the bytes as they come (header, directory hash), then with every hash made to
//! match what it names, so that the directory's sections and the slots behind them are
//! decoded, searched and read, hostile slot sizes, counts, entries and blocks included.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    edgerag_fuzz::read_paged(data);
    edgerag_fuzz::read_paged(&edgerag_fuzz::with_valid_hashes(data));
});
