//! The one error type of `edgerag-core`.

/// Everything that can go wrong in `edgerag-core`.
///
/// Messages are written for the person running the tool: they name the input and the problem,
/// and never contain secrets or internal paths. Hosts add the file name where they know it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input was empty (or held only whitespace).
    #[error("the document is empty")]
    Empty,
    /// The input is not valid UTF-8 where text was expected.
    #[error("not valid UTF-8 text (invalid byte at offset {offset})")]
    InvalidUtf8 {
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The file type is not one edgerag can read.
    #[error("unsupported file type {0:?} (supported: .txt, .md, .markdown, .html, .htm, .pdf)")]
    UnsupportedType(String),
    /// Support for this format was not compiled in (a disabled cargo feature).
    #[error("{0} support is not compiled in (enable the `{1}` feature of edgerag-core)")]
    FormatDisabled(&'static str, &'static str),
    /// The bytes are binary data (a NUL, or mostly control bytes; UTF-16 without a byte-order
    /// mark reads so too), whatever the file's extension says.
    #[error("binary data, not a text document")]
    Binary,
    /// An input is over one of the documented limits of [`crate::limits`] (its size, its
    /// nesting, what it inflates to); the message names the limit.
    #[error("{0}")]
    Limit(String),
    /// A PDF could not be parsed or holds no extractable text.
    #[error("unreadable PDF: {0}")]
    Pdf(String),
    /// The bytes are not an edgerag bundle.
    #[error("not an edgerag bundle (wrong magic bytes)")]
    NotABundle,
    /// The bundle ends before its header or payload is complete.
    #[error("truncated bundle: expected {expected} bytes, found {found}")]
    Truncated {
        /// Bytes the header announces.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// The payload checksum does not match: the file was corrupted.
    #[error("corrupted bundle: checksum mismatch")]
    Corrupted,
    /// A page of a bundle read by range does not match its hash: the file was corrupted, or
    /// the server sent other bytes (the page is named: `slot 12 of section "chunks"`).
    #[error("corrupted bundle: {0} does not match its hash")]
    CorruptedPage(String),
    /// A page of a bundle read by range lies past the end of the file: the file was cut short
    /// (the page is named, as for [`Error::CorruptedPage`]).
    #[error("truncated bundle: {0} lies past the end of the file")]
    TruncatedPage(String),
    /// The bytes of a bundle read by range could not be had (the file or server failed).
    #[error("reading the bundle: {0}")]
    Read(String),
    /// The bundle was written by a newer edgerag that this version cannot read.
    #[error(
        "bundle format version {found} needs a newer edgerag (this one reads versions {oldest}..={current})"
    )]
    TooNew {
        /// Oldest format version the file says a reader must understand.
        found: u16,
        /// Oldest version this build reads.
        oldest: u16,
        /// Version this build writes.
        current: u16,
    },
    /// A bundle of format version 4, meant to be read by range, was given to a reader of
    /// whole files (versions 1 to 3).
    #[error(
        "this bundle (format version 4) is read by range, not whole: query it with `edgerag search` or `edgerag ask`, or build one of format 3 for this host (`edgerag build --format 3`)"
    )]
    ReadByRange,
    /// The bundle was written in a format version this build no longer reads.
    #[error(
        "bundle format version {found} is too old (this edgerag reads versions {oldest}..={current}); rebuild the bundle"
    )]
    TooOld {
        /// Version found in the file.
        found: u16,
        /// Oldest version this build reads.
        oldest: u16,
        /// Version this build writes.
        current: u16,
    },
    /// The payload passed its checksum but could not be decoded.
    #[error("malformed bundle payload: {0}")]
    Decode(String),
    /// A build produced nothing to index.
    #[error("no documents to index")]
    NoDocuments,
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An index could not be built (its builder failed in a way the input does not explain).
    #[error("could not build the index: {0}")]
    Index(String),
    /// A query is unusable (for example empty after analysis).
    #[error("invalid query: {0}")]
    Query(String),
    /// A host's request could not be read as the request type (an unknown field, a value of
    /// the wrong type); the message is on one line, without the position in the JSON.
    #[error("invalid request: {0}")]
    Request(String),
    /// A query or build used an embedding model other than the bundle's.
    #[error(
        "the bundle's vectors come from {bundle}, but the embedding model given is {given}: \
         use the bundle's model, or rebuild the bundle"
    )]
    ModelMismatch {
        /// The bundle's model.
        bundle: String,
        /// The model offered.
        given: String,
    },
    /// Dense retrieval was asked of a bundle without vectors, or without a model to embed
    /// the query.
    #[error("{0}")]
    NoVectors(String),
    /// An embedding model's files cannot be used, or running the model failed. The message
    /// starts with the file concerned where there is one (`config.json: …`).
    #[error("embedding model: {0}")]
    Model(String),
    /// A line of an evaluation data set could not be parsed.
    #[error("{file} line {line}: {message}")]
    Dataset {
        /// Which file of the data set.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The LLM provider refused a request (an HTTP 4xx other than 429): its message, which
    /// retrying cannot change (a bad key, an unknown model, a too-long prompt).
    #[error("the LLM provider rejected the request to {model} (HTTP {status}): {message}")]
    LlmRejected {
        /// The model asked.
        model: String,
        /// HTTP status.
        status: u16,
        /// The provider's message (the API key removed).
        message: String,
    },
    /// Every model failed transiently (rate limits, server errors, timeouts), each named with
    /// its last failure.
    #[error("no LLM answered: {0}")]
    LlmUnavailable(String),
    /// The LLM's reply breaks the protocol (not JSON, no text, a broken stream).
    #[error("unexpected reply from the LLM ({model}): {message}")]
    LlmResponse {
        /// The model that replied.
        model: String,
        /// What is wrong.
        message: String,
    },
    /// A local chat model's file cannot be used (an unsupported architecture, tokenizer or
    /// chat template; a missing tensor), or generating with it failed.
    #[error("local model: {0}")]
    Generation(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` with its control characters (line breaks among them) escaped as Rust escapes them
/// (`\n`, `\u{1b}`), so that a message quoting what a file, a request or a peer held stays
/// on one line. Hosts use it for the messages of other crates' errors, which may quote it.
///
/// ```
/// assert_eq!(edgerag_core::one_line("unknown field `a\nb`"), "unknown field `a\\nb`");
/// ```
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c.is_control() {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out
}
