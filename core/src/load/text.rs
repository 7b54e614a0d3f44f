//! Plain text: paragraphs are separated by blank lines.

use super::{BlockKind, DocumentBuilder};
use crate::{Document, Result};

pub(super) fn load(text: &str) -> Result<Document> {
    let mut b = DocumentBuilder::new();
    let mut paragraph = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            b.block(BlockKind::Paragraph, &paragraph, None);
            paragraph.clear();
        } else {
            paragraph.push_str(line);
            paragraph.push('\n');
        }
    }
    b.finish()
}
