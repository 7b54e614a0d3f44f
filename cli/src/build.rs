//! `edgerag build`: files and directories in, a corpus bundle out.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use edgerag_cli::source::blocking;
use edgerag_core::bundle::{BuildFailure, BuildSummary};
use edgerag_core::chunk::ChunkConfig;
use edgerag_core::index::dense::Quantization;
use edgerag_core::request::BuildRequest;
use edgerag_core::{BundleBuilder, DocKind, Document};
use serde::Serialize;

use crate::flags::model::ModelArgs;
use crate::indexing::finish;
use crate::open::{self, Opened};
use crate::{files, output};

/// Arguments of `edgerag build`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Files or directories (searched recursively) to index.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where to write the bundle.
    #[arg(short, long)]
    output: PathBuf,
    /// Corpus name recorded in the manifest [default: the output file's stem].
    #[arg(long)]
    name: Option<String>,
    /// Fail on the first file that cannot be loaded instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// An earlier build of this corpus: vectors of unchanged chunks are reused, only new
    /// chunks are embedded.
    #[arg(long, value_name = "BUNDLE")]
    update: Option<PathBuf>,
    /// Format of the bundle: 4 (read by range, from a file or a URL) or 3 (read whole; with
    /// the HNSW graph of dense search, for readers older than format 4).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(3..=4))]
    format: u16,
    #[command(flatten)]
    settings: Settings,
    /// Print a JSON summary instead of text (and no progress bars).
    #[arg(long)]
    json: bool,
}

/// Build settings shared by `build` and `eval`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Settings {
    /// Target chunk size [default: 200 tokens with a model, 800 characters without].
    #[arg(long)]
    chunk_target: Option<usize>,
    /// Maximum chunk size [default: 256 tokens with a model, 1200 characters without].
    #[arg(long)]
    chunk_max: Option<usize>,
    /// Minimum chunk size; smaller chunks are merged [default: 40 tokens / 160 characters].
    #[arg(long)]
    chunk_min: Option<usize>,
    /// Overlap between consecutive chunks, as a fraction of the target (whole sentences).
    #[arg(long, default_value_t = ChunkConfig::chars().overlap)]
    chunk_overlap: f32,
    /// Drop keywords found in more than this fraction of chunks.
    #[arg(long, default_value_t = edgerag_core::keywords::KeywordConfig::default().max_df)]
    max_df: f32,
    /// Keywords never dropped by the frequency filter (repeatable).
    #[arg(long = "keep", value_name = "KEYWORD")]
    keep: Vec<String>,
    /// Creation time to record (Unix seconds) [default: $SOURCE_DATE_EPOCH, else now].
    #[arg(long)]
    created: Option<u64>,
    /// Link keywords whose embeddings have at least this cosine similarity (SIMILAR_TO
    /// edges); 0 links them lexically only. Needs the model.
    #[arg(long, value_name = "COSINE", default_value_t = edgerag_core::graph::SEMANTIC_THRESHOLD)]
    keyword_similarity: f32,
    /// Storage of the chunk vectors: int8 (a quarter of the bytes, same ranking) or f32.
    #[arg(long, value_name = "int8|f32", default_value = "int8", value_parser = parse_quantization)]
    vectors: Quantization,
    /// Build without embeddings (no dense retrieval; no model needed).
    #[arg(long)]
    no_embed: bool,
    #[command(flatten)]
    model: ModelArgs,
}

impl Settings {
    /// The model flags.
    pub(crate) fn model(&self) -> &ModelArgs {
        &self.model
    }

    /// The chosen vector storage.
    pub(crate) fn quantization(&self) -> Quantization {
        self.vectors
    }

    /// A bundle builder for a corpus called `corpus`, to be written in format `format`: with
    /// the embedding model (chunks sized in its tokens) unless `--no-embed`, else chunks sized
    /// in characters.
    pub(crate) fn builder(
        &self,
        corpus: String,
        format: u16,
        quiet: bool,
    ) -> Result<BundleBuilder> {
        let request = BuildRequest {
            name: Some(corpus),
            created: self.created.or_else(source_date_epoch),
            embed: Some(!self.no_embed),
            chunk_target: self.chunk_target,
            chunk_max: self.chunk_max,
            chunk_min: self.chunk_min,
            chunk_overlap: Some(self.chunk_overlap),
            max_df: Some(self.max_df),
            keep: self.keep.clone(),
            keyword_similarity: Some(self.keyword_similarity),
            vectors: Some(self.vectors),
            format: Some(format),
        };
        let model = match request.embeds(true) {
            true => Some(std::rc::Rc::new(self.model.load(quiet)?)),
            false => None,
        };
        Ok(request.builder(model, now())?)
    }
}

fn parse_quantization(value: &str) -> Result<Quantization, String> {
    match value {
        "int8" => Ok(Quantization::Int8),
        "f32" => Ok(Quantization::F32),
        other => Err(format!("unknown vector storage {other:?}: int8 or f32")),
    }
}

fn source_date_epoch() -> Option<u64> {
    std::env::var("SOURCE_DATE_EPOCH").ok()?.parse().ok()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The JSON summary of a build: core's, with where it went and what it took.
#[derive(Debug, Serialize)]
struct Summary {
    bundle: String,
    #[serde(flatten)]
    build: BuildSummary,
    /// Files in directories that are not a supported type.
    skipped: usize,
    seconds: f64,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let inputs = files::collect(&args.inputs)?;
    if inputs.files.is_empty() {
        bail!("no .txt, .md, .html or .pdf files found in the given inputs");
    }
    let corpus = args.name.clone().unwrap_or_else(|| {
        let stem = args.output.file_stem().map(|s| s.to_string_lossy().into_owned());
        stem.unwrap_or_else(|| "corpus".to_owned())
    });
    let mut builder = args.settings.builder(corpus, args.format, args.json)?;
    if let Some(path) = &args.update {
        reuse_vectors(&mut builder, path)
            .with_context(|| format!("--update {}", path.display()))?;
    }

    let failed = add_files(&mut builder, &inputs.files, &args)?;
    if builder.documents() == 0 {
        bail!("none of the {} input files could be loaded", inputs.files.len());
    }

    let reused_vectors = builder.reused_vectors();
    let bundle = finish(builder, args.json)?;
    let bytes = bundle.encode(args.format)?;
    files::write_atomic(&args.output, &bytes)?;

    let summary = Summary {
        bundle: args.output.display().to_string(),
        build: BuildSummary {
            counts: bundle.manifest.counts,
            bytes: bytes.len(),
            reused_vectors,
            failed,
        },
        skipped: inputs.skipped.len(),
        seconds: started.elapsed().as_secs_f64(),
    };
    if args.json {
        return output::json(&summary);
    }
    print(&summary);
    Ok(())
}

/// Has `builder` reuse the vectors of the earlier build at `path`, of any format.
fn reuse_vectors(builder: &mut BundleBuilder, path: &Path) -> Result<()> {
    match open::open_any(&path.display().to_string())? {
        Opened::Whole(previous) => Ok(builder.reuse_vectors(previous.bundle())?),
        Opened::ByRange(previous) => match &previous.manifest().embedding {
            Some(spec) => Ok(builder.reuse_vectors_of(spec, blocking(previous.vectors())?)?),
            None => Ok(()),
        },
    }
}

/// Loads each of `files` into `builder`, with a progress bar; the files that could not be
/// loaded (the first one's error with `--strict`).
fn add_files(
    builder: &mut BundleBuilder,
    files: &[files::Input],
    args: &Args,
) -> Result<Vec<BuildFailure>> {
    let bar = output::progress(files.len() as u64, "loading", args.json);
    let mut failed = Vec::new();
    for input in files {
        let path = &input.path;
        bar.set_message(short_name(path));
        let loaded = files::read_document(path).and_then(|bytes| {
            load(&input.name, &bytes).with_context(|| path.display().to_string())
        });
        match loaded {
            Ok(doc) => {
                builder.add(doc);
            }
            Err(error) if args.strict => return Err(error),
            Err(error) => {
                if !args.json {
                    output::warn(Some(&bar), &format!("{error:#} (skipped)"));
                }
                let error = error.root_cause().to_string();
                failed.push(BuildFailure { source: input.name.clone(), error });
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(failed)
}

/// The summary as a line for people.
fn print(summary: &Summary) {
    let (counts, failed) = (&summary.build.counts, &summary.build.failed);
    output::line(&format!(
        "wrote {} ({} bytes): {} documents, {} chunks ({} duplicates removed), {} keywords, {} edges, {} vectors in {:.1}s",
        summary.bundle,
        summary.build.bytes,
        counts.documents,
        counts.chunks,
        counts.duplicates_removed,
        counts.keywords,
        counts.edges,
        counts.vectors,
        summary.seconds,
    ));
    if !failed.is_empty() {
        output::line(&format!("{} file(s) failed and were skipped", failed.len()));
    }
}

/// Loads one document. The PDF parser can panic on malformed files; core turns the panic into
/// an error, and the default panic message is muted meanwhile so the user sees one clear line.
fn load(name: &str, bytes: &[u8]) -> edgerag_core::Result<Document> {
    if DocKind::from_path(name) != Some(DocKind::Pdf) {
        return edgerag_core::load(name, bytes);
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let doc = edgerag_core::load(name, bytes);
    std::panic::set_hook(hook);
    doc
}

fn short_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
