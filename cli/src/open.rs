//! A bundle opened for querying, from a file or an HTTP(S) URL: by range when it is of format
//! 4, whole when it is an older file; with the embedding model its mode needs.

use std::path::Path;

use anyhow::{Context, Result};
use edgerag_cli::source::{self, BundleSource};
use edgerag_core::bundle::paged::Reads;
use edgerag_core::{Error, Mode};
use serde::Serialize;

use crate::files;
use crate::flags::model::{self, ModelArgs};

/// A bundle ready to query: of format 4 read by range, older ones read whole.
pub(crate) type Opened = edgerag_core::query::Opened<BundleSource>;

/// Opens the bundle at `location` (a file or a URL), loading its model when `mode` uses its
/// vectors (see [`model::for_mode`]).
///
/// # Errors
/// As [`open_any`]; errors of loading the model.
pub(crate) fn open(location: &str, model: &ModelArgs, mode: Mode, quiet: bool) -> Result<Opened> {
    let mut opened = open_any(location)?;
    let spec = opened.manifest().embedding.as_ref();
    if let Some(embedder) = model::for_mode(spec, model, mode, quiet)? {
        opened.set_embedder(Box::new(embedder))?;
    }
    Ok(opened)
}

/// Opens the bundle at `location` (a file or a URL) without a model: of format 4 by range
/// (reading its directory only), an older file whole.
///
/// # Errors
/// An older format at a URL (it would have to be downloaded whole); errors of reading the
/// bundle.
pub(crate) fn open_any(location: &str) -> Result<Opened> {
    match source::open_lazy(location) {
        Ok(searcher) => Ok(Opened::ByRange(searcher)),
        Err(Error::TooOld { .. }) if !source::is_url(location) => {
            Ok(Opened::Whole(files::open_bundle(Path::new(location))?))
        }
        Err(Error::TooOld { found, .. }) => Err(anyhow::anyhow!(
            "{location}: a bundle of format {found} is read whole: download it, or convert it \
             to format 4 (`edgerag convert`) to query it by range"
        )),
        Err(error) => Err(error).context(location.to_owned()),
    }
}

/// What `--json` prints: a command's `output`, and for a bundle read by range what reading it
/// cost (opening included) and each section's share.
#[derive(Debug, Serialize)]
pub(crate) struct WithIo<'a, T> {
    #[serde(flatten)]
    pub(crate) output: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) io: Option<Reads>,
}
