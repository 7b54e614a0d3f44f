//! HTML via scraper (html5ever).

use crate::{Document, Result};

pub(super) fn load(_bytes: &[u8]) -> Result<Document> {
    unimplemented!("in progress")
}
