//! The server-sent-events decoder (`llm::sse::SseDecoder`) as the LLM client uses it: a body
//! arriving in pieces of any size must give the same events as the body in one piece, each
//! event read as a streamed chat-completion chunk. An event written by `sse::event` reads
//! back as itself.
#![no_main]

use edgerag_core::llm::protocol::{StreamChunk, error_message};
use edgerag_core::llm::sse::{SseDecoder, event};
use libfuzzer_sys::fuzz_target;

fn decode<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    let mut decoder = SseDecoder::new();
    let mut events: Vec<String> = pieces.flat_map(|piece| decoder.feed(piece)).collect();
    events.extend(decoder.finish());
    events
}

fuzz_target!(|data: &[u8]| {
    let Some((&size, body)) = data.split_first() else { return };
    let whole = decode(std::iter::once(body));
    let pieces = decode(body.chunks(usize::from(size % 32) + 1));
    assert_eq!(whole, pieces, "pieces of {} bytes decode differently", size % 32 + 1);
    for data in &whole {
        if let Ok(chunk) = serde_json::from_str::<StreamChunk>(data) {
            let _ = chunk.choices.iter().filter_map(|c| c.delta.content.as_deref()).count();
        }
        let _ = error_message(data);
        if !data.contains(['\n', '\r']) {
            let written = event(Some("token"), data);
            assert_eq!(decode(std::iter::once(written.as_bytes())), std::slice::from_ref(data));
        }
    }
});
