//! The bundle decoder, `Bundle::from_bytes`: the bytes as they come (header checks: magic,
//! versions, flags, length, checksum), then with the header made valid so that the payload
//! reaches postcard and `Bundle::validate`. A decoded bundle must encode and decode to the
//! same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(error) = edgerag_core::Bundle::from_bytes(data) {
        edgerag_fuzz::check_refusal(&error);
    }
    edgerag_fuzz::decode_round_trip(&edgerag_fuzz::with_valid_header(data));
});
