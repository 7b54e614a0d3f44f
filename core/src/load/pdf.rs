//! PDF text extraction, page by page, via pdf-extract.

use crate::{Document, Result};

pub(super) fn load(_bytes: &[u8]) -> Result<Document> {
    unimplemented!("in progress")
}
