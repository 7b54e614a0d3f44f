//! The request-head parser of `edgerag serve` (`edgerag_cli::serve::request::parse`), with the
//! limits the server uses and with tiny ones that every input can reach. It is a pure function
//! over the bytes received so far, so what it promises can be checked: a whole head parses the
//! same alone and followed by anything (the next request's bytes); none of its proper prefixes
//! is refused or taken for a head; a head still open is within the head-size limit; a refusal
//! has one of the documented statuses and stays a refusal whatever arrives after it.
#![no_main]

use edgerag_cli::serve::request::{Limits, parse};
use libfuzzer_sys::fuzz_target;

const TINY: Limits = Limits { head_bytes: 64, headers: 2, body_bytes: 16 };
const STATUSES: [u16; 7] = [400, 411, 413, 414, 417, 431, 505];

fn check(data: &[u8], limits: &Limits) {
    let outcome = parse(data, limits);
    match &outcome {
        Ok(Some((head, used))) => {
            let used = *used;
            assert!(used <= data.len() && used <= limits.head_bytes, "head of {used} bytes");
            assert!(head.headers.len() <= limits.headers, "{} header fields", head.headers.len());
            assert!(head.content_length <= limits.body_bytes, "body of {}", head.content_length);
            assert!(!head.method.is_empty() && !head.target.is_empty(), "{head:?}");
            let whole = &data[..used];
            assert_eq!(parse(whole, limits), outcome, "the bytes after the head changed it");
            let mut followed = whole.to_vec();
            followed.extend_from_slice(b"\x00GET / HTTP/9.9\r\n\r\n");
            assert_eq!(parse(&followed, limits), outcome, "the bytes after the head changed it");
            // Every prefix when short, else 64 of them spread out and the last few.
            let step = if used <= 512 { 1 } else { used / 64 };
            for cut in (0..used).step_by(step).chain(used.saturating_sub(4)..used) {
                assert_eq!(parse(&data[..cut], limits), Ok(None), "prefix of {cut} bytes");
            }
        }
        Ok(None) => {
            assert!(data.len() <= limits.head_bytes, "an open head past the limit")
        }
        Err(rejection) => {
            assert!(STATUSES.contains(&rejection.status), "status {}", rejection.status);
            assert!(!rejection.reason.is_empty() && !rejection.reason.contains('\n'));
            let mut more = data.to_vec();
            more.extend_from_slice(b"\r\n\r\n");
            assert_eq!(parse(&more, limits), outcome, "a refusal undone by more bytes");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data, &Limits::SERVE);
    check(data, &TINY);
});
