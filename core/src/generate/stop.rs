//! Stop sequences over streamed text: text that might be the start of a stop sequence is held
//! back until the next piece shows whether it is, so a stop sequence is never streamed.

/// Where a stream stands after a piece of text.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Text that can be passed on (possibly empty).
    Go(String),
    /// A stop sequence was reached: the text before it, and nothing after.
    Stop(String),
}

/// Watches a stream for any of its stop sequences.
pub(super) struct StopWatch {
    stops: Vec<String>,
    held: String,
}

impl StopWatch {
    /// Watches for `stops` (empty ones are ignored).
    pub(super) fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Takes the next piece of the stream.
    pub(super) fn push(&mut self, piece: &str) -> Step {
        self.held.push_str(piece);
        let earliest = self.stops.iter().filter_map(|stop| self.held.find(stop.as_str())).min();
        if let Some(at) = earliest {
            let before = self.held[..at].to_owned();
            self.held.clear();
            return Step::Stop(before);
        }
        // Hold back the longest tail that begins some stop sequence.
        let keep = self
            .stops
            .iter()
            .flat_map(|stop| {
                let held = &self.held;
                (1..stop.len().min(held.len() + 1))
                    .filter(|&n| held.is_char_boundary(held.len() - n))
                    .filter(move |&n| stop.starts_with(&held[held.len() - n..]))
            })
            .max()
            .unwrap_or(0);
        let ready = self.held.len() - keep;
        let out = self.held[..ready].to_owned();
        self.held.drain(..ready);
        Step::Go(out)
    }

    /// What is still held back when the stream ends without a stop sequence.
    pub(super) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool) {
        let stops: Vec<String> = stops.iter().map(|s| (*s).to_owned()).collect();
        let mut watch = StopWatch::new(&stops);
        let mut out = Vec::new();
        for piece in pieces {
            match watch.push(piece) {
                Step::Go(text) => out.push(text),
                Step::Stop(text) => {
                    out.push(text);
                    return (out, true);
                }
            }
        }
        out.push(watch.finish());
        (out, false)
    }

    #[test]
    fn a_stop_split_over_pieces_is_held_back_then_cut() {
        let (out, stopped) = run(&["\n\nQuestion:"], &["Rollo", " led.\n", "\nQuest", "ion: who"]);
        assert!(stopped);
        assert_eq!(out, ["Rollo", " led.", "", ""]);
    }

    #[test]
    fn a_false_start_is_released_and_the_end_flushes() {
        let (out, stopped) = run(&["</s>"], &["a <", "b", " c</", "d"]);
        assert!(!stopped);
        assert_eq!(out.concat(), "a <b c</d");
        assert_eq!(out[0], "a ");
        let (out, stopped) = run(&[], &["é", "x"]);
        assert_eq!((out.concat(), stopped), ("éx".to_owned(), false));
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        let (out, stopped) = run(&["END", "ST"], &["a STOP then END"]);
        assert!(stopped);
        assert_eq!(out.concat(), "a ");
    }
}
