//! Shared helpers: real fixtures and bundles built from them.

use edgerag_core::{BuildOptions, Bundle, BundleBuilder, Document, load};

/// Reads a file from `core/tests/fixtures/`.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fixture documents (real text: Wikipedia articles via SQuAD, a freedesktop.org spec PDF).
pub(crate) fn documents() -> Vec<Document> {
    FIXTURE_DOCUMENTS.iter().map(|name| load(name, &fixture(name)).expect(name)).collect()
}

/// The fixture documents the pipeline tests index.
pub(crate) const FIXTURE_DOCUMENTS: &[&str] =
    &["normans.md", "computational-complexity.html", "shared-mime-info-spec.pdf"];

/// A bundle of the fixture documents, built with default options and a fixed creation time.
pub(crate) fn bundle() -> Bundle {
    let options =
        BuildOptions { corpus: "fixtures".into(), created: 1_700_000_000, ..Default::default() };
    let mut builder = BundleBuilder::new(options).expect("options");
    for doc in documents() {
        builder.add(doc);
    }
    builder.finish(&mut |_| {}).expect("build")
}

/// The output of a future that waits on nothing outside itself, as reading a file held in
/// memory or asking a scripted provider does.
pub(crate) fn now<F: std::future::Future>(future: F) -> F::Output {
    edgerag_core::bundle::paged::ready_now(future).expect("a future that waits on nothing")
}

/// `name` in the shared evaluation data (`../shared/data` beside the repository, or
/// `$EDGERAG_DATA`), if it is there.
pub(crate) fn shared_data(name: &str) -> Option<std::path::PathBuf> {
    let data = std::env::var_os("EDGERAG_DATA").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
        std::path::PathBuf::from,
    );
    Some(data.join(name)).filter(|path| path.exists())
}
