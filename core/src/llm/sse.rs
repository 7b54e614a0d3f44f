//! Server-sent events, as chat-completions streams use them: `data:` lines, events separated
//! by a blank line, fed in pieces that may split lines (and UTF-8 characters) anywhere.

/// One event as a server writes it: an optional `event:` name and one `data:` line (`data` must
/// not contain a newline; compact JSON never does).
pub fn event(name: Option<&str>, data: &str) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// Turns body pieces into event payloads.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes after the last complete line.
    pending: Vec<u8>,
    /// `data:` lines of the event being read.
    data: Vec<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes` and returns the payloads of the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        // Only the new bytes can end a line: each byte is looked at once, however long the
        // line, and the consumed lines are removed at once, however many.
        let mut search = self.pending.len();
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut from = 0;
        while let Some(end) = self
            .pending
            .get(search..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
            .map(|offset| search + offset)
        {
            let line = String::from_utf8_lossy(self.pending.get(from..end).unwrap_or_default());
            let line = line.trim_end_matches('\r').to_owned();
            self.line(&line, &mut events);
            from = end + 1;
            search = from;
        }
        self.pending.drain(..from);
        events
    }

    /// Ends the stream: the payload of a last event not followed by a blank line.
    pub fn finish(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.pending);
        let mut events = Vec::new();
        let rest = String::from_utf8_lossy(&rest);
        if !rest.trim().is_empty() {
            self.line(rest.trim_end_matches(['\n', '\r']), &mut events);
        }
        self.line("", &mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                events.push(self.data.join("\n"));
                self.data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            self.data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        }
        // Comments (`: keep-alive`) and the `event:`, `id:`, `retry:` fields carry nothing
        // chat completions need.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let stream = "data: {\"a\":1}\n\n: keep-alive\n\ndata: h\u{e9}llo\r\n\r\ndata: [DONE]\n\n";
        for split in 0..stream.len() {
            let mut decoder = SseDecoder::new();
            let (head, tail) = stream.as_bytes().split_at(split);
            let mut events = decoder.feed(head);
            events.extend(decoder.feed(tail));
            events.extend(decoder.finish());
            assert_eq!(events, ["{\"a\":1}", "h\u{e9}llo", "[DONE]"], "split at {split}");
        }
    }

    #[test]
    fn multi_line_data_and_a_missing_final_blank_line() {
        let mut decoder = SseDecoder::new();
        let mut events = decoder.feed(b"event: x\ndata: one\ndata:two\n\ndata: last");
        events.extend(decoder.finish());
        assert_eq!(events, ["one\ntwo", "last"]);
    }

    #[test]
    fn long_lines_and_many_lines_are_read_in_linear_time() {
        // A megabyte line fed a byte at a time, then ten thousand events in one piece: each
        // byte is scanned once (quadratic scanning would take minutes here).
        let mut decoder = SseDecoder::new();
        let long = format!("data: {}\n\n", "x".repeat(1 << 20));
        let mut events = Vec::new();
        for byte in long.as_bytes() {
            events.extend(decoder.feed(std::slice::from_ref(byte)));
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), 1 << 20);
        let many = "data: e\n\n".repeat(10_000);
        assert_eq!(decoder.feed(many.as_bytes()).len(), 10_000);
    }

    #[test]
    fn written_events_read_back() {
        let written = [event(Some("token"), r#"{"text":"a"}"#), event(None, "[DONE]")].concat();
        assert_eq!(written, "event: token\ndata: {\"text\":\"a\"}\n\ndata: [DONE]\n\n");
        assert_eq!(SseDecoder::new().feed(written.as_bytes()), [r#"{"text":"a"}"#, "[DONE]"]);
    }
}
