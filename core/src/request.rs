//! Options as hosts receive them from their callers — JavaScript objects in the browser, JSON
//! bodies at the edge — turned into [`SearchOptions`], [`AskOptions`] and [`LlmConfig`] in one
//! place, with the same defaults and checks everywhere.
//!
//! Every field is optional. Names are snake_case (`min_relevance`), and the camelCase spelling
//! JavaScript uses (`minRelevance`) is accepted too. Unknown fields are refused, so a typo is an
//! error rather than a silently ignored option.
//!
//! ```
//! use edgerag_core::request::SearchRequest;
//!
//! let request: SearchRequest =
//!     serde_json::from_str(r#"{"k": 3, "mode": "bm25", "filter": {"kinds": ["pdf"]}}"#).unwrap();
//! let options = request.options(10).unwrap();
//! assert_eq!((options.k, options.mode.as_str()), (3, "bm25"));
//! assert!(serde_json::from_str::<SearchRequest>(r#"{"topK": 3}"#).is_err());
//! ```
//!
//! Hosts read a request with [`from_json`], so that a bad one is refused with the same message
//! everywhere.

#[cfg(feature = "embed")]
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::BuildOptions;
use crate::answer::{Answer, Answerer, AskOptions};
use crate::bundle::FORMAT_VERSION;
use crate::bundle::paged::VERSION as PAGED_VERSION;
use crate::chunk::ChunkConfig;
use crate::graph::GraphSearch;
use crate::index::dense::Quantization;
use crate::index::fusion::Fusion;
use crate::llm::{ApiKey, ChatModel, GROQ_BASE_URL, LlmClient, LlmConfig, MAX_TIMEOUT, Transport};
use crate::query::{Corpus, Filter, Mode, SearchOptions};
#[cfg(feature = "embed")]
use crate::{BundleBuilder, embed::Embedder};
use crate::{Error, Result};

/// A request of type `T` read from its JSON form, as every host reads one: unknown fields are
/// refused (by `T`), and what was wrong is said on one line.
///
/// ```
/// use edgerag_core::request::{SearchRequest, from_json};
///
/// let error = from_json::<SearchRequest>(serde_json::json!({"topK": 3})).unwrap_err();
/// assert!(error.to_string().starts_with("invalid request: unknown field `topK`"));
/// ```
///
/// # Errors
/// [`Error::Request`] when `json` is not a `T`.
pub fn from_json<T: serde::de::DeserializeOwned>(json: serde_json::Value) -> Result<T> {
    // A value's errors name no position in a text, unlike those of a string read.
    serde_json::from_value(json).map_err(|e| Error::Request(crate::one_line(&e.to_string())))
}

/// Most results a request may ask for.
pub const MAX_K: usize = 1000;

/// What a search asks for.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchRequest {
    /// Number of results (default: the host's, 10 for search).
    pub k: Option<usize>,
    /// Retrieval mode (default hybrid).
    pub mode: Option<Mode>,
    /// Whether to explain each result.
    pub explain: bool,
    /// Metadata restrictions (`filters` is accepted too).
    #[serde(alias = "filters")]
    pub filter: Filter,
    /// Weight of the dense signal in hybrid mode.
    #[serde(alias = "denseWeight")]
    pub dense_weight: Option<f32>,
    /// Weight of the graph signal in hybrid mode.
    #[serde(alias = "graphWeight")]
    pub graph_weight: Option<f32>,
    /// Weight of multi-hop expansion in hybrid mode.
    #[serde(alias = "bridgeWeight")]
    pub bridge_weight: Option<f32>,
    /// Best results multi-hop expansion starts from.
    #[serde(alias = "bridgeSeeds")]
    pub bridge_seeds: Option<usize>,
    /// How hybrid mode fuses its signals: `"convex"` (default) or `"rrf"`.
    #[serde(deserialize_with = "fusion")]
    pub fusion: Option<Fusion>,
    /// Dense partitions probed in a bundle read by range (default: the bundle's).
    pub probe: Option<u32>,
    /// Bytes of postings BM25 may read in a bundle read by range (default 256 KiB).
    #[serde(alias = "bm25Budget")]
    pub bm25_budget: Option<u64>,
}

impl SearchRequest {
    /// The search options, with `default_k` results unless `k` is given.
    ///
    /// # Errors
    /// [`Error::Query`] for `k` or `bridge_seeds` outside `1..=MAX_K`, a negative or
    /// non-finite weight, a page range that starts at 0 or runs backwards, or a `probe` of 0.
    pub fn options(&self, default_k: usize) -> Result<SearchOptions> {
        let defaults = SearchOptions::default();
        let count = |given: Option<usize>, default: usize, name: &str| {
            let n = given.unwrap_or(default);
            if (1..=MAX_K).contains(&n) {
                Ok(n)
            } else {
                Err(Error::Query(format!("{name} must be between 1 and {MAX_K} (got {n})")))
            }
        };
        let k = count(self.k, default_k, "k")?;
        let bridge_seeds = count(self.bridge_seeds, defaults.graph.bridge_seeds, "bridge_seeds")?;
        if let Some((from, to)) = self.filter.pages
            && (from == 0 || from > to)
        {
            return Err(Error::Query(format!(
                "pages count from 1 and the range must not run backwards (got {from}-{to})"
            )));
        }
        let weight = |given: Option<f32>, default: f32, name: &str| match given {
            Some(w) if !(w.is_finite() && w >= 0.0) => {
                Err(Error::Query(format!("{name} must be a number >= 0 (got {w})")))
            }
            given => Ok(given.unwrap_or(default)),
        };
        if self.probe == Some(0) {
            return Err(Error::Query("probe must be at least 1 partition (got 0)".into()));
        }
        Ok(SearchOptions {
            k,
            mode: self.mode.unwrap_or(defaults.mode),
            dense_weight: weight(self.dense_weight, defaults.dense_weight, "dense_weight")?,
            graph_weight: weight(self.graph_weight, defaults.graph_weight, "graph_weight")?,
            bridge_weight: weight(self.bridge_weight, defaults.bridge_weight, "bridge_weight")?,
            fusion: self.fusion.unwrap_or(defaults.fusion),
            graph: GraphSearch { bridge_seeds, ..defaults.graph.clone() },
            explain: self.explain,
            filter: self.filter.clone(),
            probe: self.probe,
            bm25_budget: self.bm25_budget,
            ..defaults
        })
    }
}

/// A fusion field, by name ([`Fusion`]'s `FromStr`).
fn fusion<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Fusion>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|name| name.parse().map_err(serde::de::Error::custom))
        .transpose()
}

/// What a build asks for. Sizes count the model's tokens when the build embeds, else
/// characters; missing sizes take the defaults of that unit ([`ChunkConfig::tokens`],
/// [`ChunkConfig::chars`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildRequest {
    /// Corpus name recorded in the manifest.
    pub name: Option<String>,
    /// Creation time to record, Unix seconds (default: the host's clock).
    pub created: Option<u64>,
    /// Whether to embed the chunks when a model is available (default true).
    pub embed: Option<bool>,
    /// Target chunk size.
    #[serde(alias = "chunkTarget")]
    pub chunk_target: Option<usize>,
    /// Largest chunk size.
    #[serde(alias = "chunkMax")]
    pub chunk_max: Option<usize>,
    /// Smallest chunk size (smaller chunks are merged).
    #[serde(alias = "chunkMin")]
    pub chunk_min: Option<usize>,
    /// Overlap between consecutive chunks, a fraction of the target.
    #[serde(alias = "chunkOverlap")]
    pub chunk_overlap: Option<f32>,
    /// Keywords in more than this fraction of chunks are dropped.
    #[serde(alias = "maxDf")]
    pub max_df: Option<f32>,
    /// Keywords never dropped by that filter.
    pub keep: Vec<String>,
    /// Cosine similarity of keyword embeddings that links them (SIMILAR_TO); 0 links them
    /// lexically only.
    #[serde(alias = "keywordSimilarity")]
    pub keyword_similarity: Option<f32>,
    /// Storage of the vectors: `"int8"` (default) or `"f32"`.
    pub vectors: Option<Quantization>,
    /// Format of the bundle: 4 (default; read by range) or 3 (read whole, with the HNSW
    /// graph of dense search, for readers older than format 4).
    pub format: Option<u16>,
}

impl BuildRequest {
    /// Whether the build embeds, given whether a model is available.
    pub fn embeds(&self, model_available: bool) -> bool {
        model_available && self.embed.unwrap_or(true)
    }

    /// The format the bundle is written in ([`Bundle::encode`]).
    ///
    /// # Errors
    /// [`Error::Config`] for a format builds do not write.
    ///
    /// [`Bundle::encode`]: crate::Bundle::encode
    pub fn format(&self) -> Result<u16> {
        match self.format.unwrap_or(PAGED_VERSION) {
            format @ (FORMAT_VERSION | PAGED_VERSION) => Ok(format),
            other => Err(Error::Config(format!(
                "a build writes format {FORMAT_VERSION} or {PAGED_VERSION}, not {other}"
            ))),
        }
    }

    /// A builder for what this asks, embedding with `model` when there is one and the request
    /// embeds, created at `now` unless `created` is given; for format 4 it builds no HNSW
    /// graph ([`BundleBuilder::without_hnsw`]).
    ///
    /// # Errors
    /// As [`format`](Self::format) and [`BundleBuilder::new`].
    #[cfg(feature = "embed")]
    pub fn builder(&self, model: Option<Rc<Embedder>>, now: u64) -> Result<BundleBuilder> {
        let mut builder = match model.filter(|_| self.embeds(true)) {
            Some(model) => BundleBuilder::with_model(self.options(true, now), model)?,
            None => BundleBuilder::new(self.options(false, now))?,
        };
        if self.format()? == PAGED_VERSION {
            builder.without_hnsw();
        }
        Ok(builder)
    }

    /// The build options for a build that embeds (`embedding`) or not, created at `now`
    /// unless `created` is given. Values are checked by [`BundleBuilder::new`].
    ///
    /// [`BundleBuilder::new`]: crate::BundleBuilder::new
    pub fn options(&self, embedding: bool, now: u64) -> BuildOptions {
        let sizes = if embedding { ChunkConfig::tokens() } else { ChunkConfig::chars() };
        let mut options = BuildOptions {
            corpus: self.name.clone().unwrap_or_else(|| BuildOptions::default().corpus),
            created: self.created.unwrap_or(now),
            chunk: ChunkConfig {
                target: self.chunk_target.unwrap_or(sizes.target),
                max: self.chunk_max.unwrap_or(sizes.max),
                min: self.chunk_min.unwrap_or(sizes.min),
                overlap: self.chunk_overlap.unwrap_or(sizes.overlap),
            },
            ..BuildOptions::default()
        };
        options.keywords.max_df = self.max_df.unwrap_or(options.keywords.max_df);
        options.keywords.keep.clone_from(&self.keep);
        if let Some(similarity) = self.keyword_similarity {
            options.graph.semantic_threshold = (similarity != 0.0).then_some(similarity);
        }
        options.dense.quantization = self.vectors.unwrap_or_default();
        options
    }
}

/// What a question asks for: retrieval, answer settings and, optionally, the LLM to use.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskRequest {
    /// How the sources are retrieved, its fields at the top level of the JSON (`k` is the
    /// most sources, 5 by default).
    #[serde(flatten)]
    pub search: SearchRequest,
    /// Answer extractively even when an LLM is given.
    pub extractive: bool,
    /// Sentences in an extractive answer.
    pub sentences: Option<usize>,
    /// Relevance below which the answer is a refusal, made without the LLM.
    #[serde(alias = "minRelevance")]
    pub min_relevance: Option<f32>,
    /// Token budget of the sources in the prompt.
    #[serde(alias = "contextTokens")]
    pub context_tokens: Option<usize>,
    /// Let the LLM choose the graph's starting keywords.
    #[serde(alias = "llmKeywords")]
    pub llm_keywords: bool,
    /// Longest wait for the LLM over the whole answer, in milliseconds (default 120 000;
    /// see [`AskOptions::deadline`]); past it the answer is extractive.
    #[serde(alias = "deadlineMs")]
    pub deadline_ms: Option<u64>,
    /// The LLM; without it, answers are extractive.
    pub llm: Option<LlmRequest>,
}

impl AskRequest {
    /// The answer options.
    ///
    /// # Errors
    /// [`Error::Query`] as [`SearchRequest::options`], for zero sentences or context tokens,
    /// a minimum relevance outside `[0, 1]`, or a deadline of 0 or over an hour.
    pub fn options(&self) -> Result<AskOptions> {
        self.options_from(AskOptions::default())
    }

    /// The answer options, `defaults` where the request says nothing ([`AskOptions::local`]
    /// for answers written by a model in the process).
    ///
    /// # Errors
    /// As [`AskRequest::options`].
    pub fn options_from(&self, defaults: AskOptions) -> Result<AskOptions> {
        let search = self.search.options(defaults.search.k)?;
        let min_relevance = self.min_relevance.unwrap_or(defaults.min_relevance);
        if !(0.0..=1.0).contains(&min_relevance) {
            return Err(Error::Query(format!(
                "min_relevance must be between 0 and 1 (got {min_relevance})"
            )));
        }
        let positive = |given: Option<usize>, default: usize, name: &str| match given {
            Some(0) => Err(Error::Query(format!("{name} must be at least 1"))),
            given => Ok(given.unwrap_or(default)),
        };
        Ok(AskOptions {
            search,
            context_tokens: positive(
                self.context_tokens,
                defaults.context_tokens,
                "context_tokens",
            )?,
            min_relevance,
            sentences: positive(self.sentences, defaults.sentences, "sentences")?,
            llm_keywords: self.llm_keywords,
            deadline: match self.deadline_ms {
                None => defaults.deadline,
                Some(ms) if ms > 0 && Duration::from_millis(ms) <= MAX_TIMEOUT => {
                    Duration::from_millis(ms)
                }
                Some(ms) => {
                    return Err(Error::Query(format!(
                        "deadline_ms must be between 1 and {} (got {ms})",
                        MAX_TIMEOUT.as_millis()
                    )));
                }
            },
            ..defaults
        })
    }

    /// The LLM to answer with: `None` for extractive answers (none given, or `extractive`).
    ///
    /// # Errors
    /// [`Error::Config`] as [`LlmRequest::config`]; [`Error::Query`] when `llm_keywords` is
    /// asked without an LLM.
    pub fn llm(&self) -> Result<Option<LlmConfig>> {
        let config = match (&self.llm, self.extractive) {
            (Some(llm), false) => Some(llm.config()?),
            _ => None,
        };
        if self.llm_keywords && config.is_none() {
            return Err(Error::Query("llm_keywords needs an LLM".to_owned()));
        }
        Ok(config)
    }
}

impl AskRequest {
    /// Answers `question` from `searcher` as this request asks: extractively without an LLM
    /// (or with `extractive`), else written by the LLM reached through `transport`, its first
    /// reply streamed to `on_token` when given. Every host answers through this.
    ///
    /// # Errors
    /// As [`AskRequest::options`], [`AskRequest::llm`] and [`Answerer::ask`].
    pub async fn answer<T: Transport>(
        &self,
        searcher: &impl Corpus,
        question: &str,
        transport: T,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Answer> {
        let answerer = Answerer::new(searcher, self.options()?);
        let client = self.llm()?.map(|config| LlmClient::new(config, transport)).transpose()?;
        answerer.answer(client.as_ref(), question, on_token).await
    }

    /// Answers `question` from `searcher` with a model running in the process (see
    /// `generate::LocalModel`), unless the request asks for an extractive answer, with
    /// [`AskOptions::local`] where the request says nothing.
    ///
    /// # Errors
    /// [`Error::Query`] when the request also names a remote `llm`; otherwise as
    /// [`AskRequest::answer`].
    pub async fn answer_with<M: ChatModel>(
        &self,
        searcher: &impl Corpus,
        question: &str,
        model: &M,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Answer> {
        if self.llm.is_some() {
            return Err(Error::Query(
                "llm: a remote LLM and a local model cannot both write the answer".to_owned(),
            ));
        }
        if self.llm_keywords && self.extractive {
            return Err(Error::Query("llm_keywords needs an LLM".to_owned()));
        }
        let options = self.options_from(AskOptions::local())?;
        let model = (!self.extractive).then_some(model);
        Answerer::new(searcher, options).answer(model, question, on_token).await
    }
}

/// The LLM an answer is written by: an OpenAI-compatible endpoint, Groq's by default. Its
/// `Debug` output hides the key ([`ApiKey`]'s own).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmRequest {
    /// Base URL of the API (`…/v1`).
    #[serde(alias = "baseUrl")]
    pub base_url: Option<String>,
    /// The API key (never printed: see [`ApiKey`]).
    #[serde(alias = "apiKey", deserialize_with = "api_key")]
    pub api_key: Option<ApiKey>,
    /// Models to try in order.
    pub models: Vec<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens per answer.
    #[serde(alias = "maxTokens")]
    pub max_tokens: Option<u32>,
    /// Limit on one request, in milliseconds.
    #[serde(alias = "timeoutMs")]
    pub timeout_ms: Option<u64>,
    /// Retries per model after a transient failure.
    pub retries: Option<u32>,
}

impl LlmRequest {
    /// The client configuration: the fields given, [`LlmConfig::default`] for the others.
    ///
    /// # Errors
    /// [`Error::Config`] as [`LlmConfig::validate`].
    pub fn config(&self) -> Result<LlmConfig> {
        let defaults = LlmConfig::default();
        let config = LlmConfig {
            base_url: self.base_url.clone().unwrap_or_else(|| GROQ_BASE_URL.to_owned()),
            api_key: self.api_key.clone(),
            models: if self.models.is_empty() {
                defaults.models.clone()
            } else {
                self.models.clone()
            },
            temperature: self.temperature.unwrap_or(defaults.temperature),
            max_tokens: self.max_tokens.unwrap_or(defaults.max_tokens),
            timeout: self.timeout_ms.map_or(defaults.timeout, Duration::from_millis),
            retries: self.retries.unwrap_or(defaults.retries),
            ..defaults
        };
        config.validate()?;
        Ok(config)
    }
}

/// An API key field: a blank key counts as none.
fn api_key<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<ApiKey>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.and_then(ApiKey::new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::DocKind;

    fn ask(json: &str) -> Result<AskRequest, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn camel_case_and_snake_case_are_the_same_option() {
        let a = ask(r#"{"minRelevance": 0.5, "contextTokens": 100, "llmKeywords": true}"#).unwrap();
        let b =
            ask(r#"{"min_relevance": 0.5, "context_tokens": 100, "llm_keywords": true}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.min_relevance, Some(0.5));
    }

    #[test]
    fn defaults_are_the_core_defaults() {
        assert_eq!(ask("{}").unwrap().options().unwrap(), AskOptions::default());
        let search = SearchRequest::default().options(10).unwrap();
        assert_eq!(search, SearchOptions { k: 10, ..SearchOptions::default() });
        assert_eq!(ask("{}").unwrap().llm().unwrap(), None);
    }

    #[test]
    fn filters_and_modes_are_read() {
        let request: SearchRequest = serde_json::from_str(
            r#"{"mode": "dense", "filters": {"documents": ["a.md"], "pages": [2, 4], "kinds": ["pdf", "markdown"]}}"#,
        )
        .unwrap();
        let options = request.options(10).unwrap();
        assert_eq!(options.mode, Mode::Dense);
        assert_eq!(options.filter.documents, ["a.md"]);
        assert_eq!(options.filter.pages, Some((2, 4)));
        assert_eq!(options.filter.kinds, [DocKind::Pdf, DocKind::Markdown]);
    }

    #[test]
    fn bad_values_are_refused_with_their_name() {
        let message = |r: Result<AskOptions>| r.unwrap_err().to_string();
        assert!(message(ask(r#"{"k": 0}"#).unwrap().options()).contains("k must be between 1"));
        assert!(message(ask(r#"{"sentences": 0}"#).unwrap().options()).contains("sentences"));
        let pages = ask(r#"{"filter": {"pages": [5, 2]}}"#).unwrap();
        assert!(message(pages.options()).contains("must not run backwards"));
        assert!(
            message(ask(r#"{"minRelevance": 2}"#).unwrap().options()).contains("min_relevance")
        );
        assert!(ask(r#"{"mode": "fuzzy"}"#).is_err());
        assert!(ask(r#"{"topK": 3}"#).unwrap_err().to_string().contains("unknown field `topK`"));
        assert!(ask(r#"{"filter": {"page": [1, 2]}}"#).is_err());
        let weight = SearchRequest { dense_weight: Some(-1.0), ..SearchRequest::default() };
        assert!(weight.options(10).unwrap_err().to_string().contains("dense_weight"));
        assert!(ask(r#"{"fusion": "max"}"#).unwrap_err().to_string().contains("convex or rrf"));
        let seeds = ask(r#"{"bridgeSeeds": 0}"#).unwrap();
        assert!(message(seeds.options()).contains("bridge_seeds must be between 1"));
        assert!(message(ask(r#"{"probe": 0}"#).unwrap().options()).contains("probe must be"));
        assert!(ask(r#"{"bm25Budget": -1}"#).is_err());
    }

    #[test]
    fn what_a_search_by_range_reads_reaches_the_search_options() {
        let options = ask(r#"{"probe": 32, "bm25Budget": 1048576}"#).unwrap().options().unwrap();
        assert_eq!((options.search.probe, options.search.bm25_budget), (Some(32), Some(1 << 20)));
        let snake = ask(r#"{"probe": 32, "bm25_budget": 1048576}"#).unwrap().options().unwrap();
        assert_eq!(snake, options);
    }

    #[test]
    fn hybrid_tuning_reaches_the_search_options() {
        let options = ask(r#"{"fusion": "rrf", "bridgeSeeds": 5, "graphWeight": 0.4}"#)
            .unwrap()
            .options()
            .unwrap()
            .search;
        assert_eq!(options.fusion, Fusion::Rrf { k: 60.0 });
        assert_eq!((options.graph.bridge_seeds, options.graph_weight), (5, 0.4));
        let search: SearchRequest = serde_json::from_str(r#"{"fusion": "convex"}"#).unwrap();
        assert_eq!(search.options(10).unwrap().fusion, Fusion::Convex);
        let both = ask(r#"{"k": 3, "bridgeWeight": 0, "fusion": "convex", "sentences": 2}"#);
        let both = both.unwrap();
        let search = SearchRequest { k: Some(3), bridge_weight: Some(0.0), ..search };
        assert_eq!((both.search, both.sentences), (search, Some(2)));
    }

    #[test]
    fn builds_size_chunks_in_the_unit_of_the_build() {
        let request: BuildRequest =
            serde_json::from_str(r#"{"name": "docs", "chunkMax": 300, "vectors": "f32"}"#).unwrap();
        let options = request.options(true, 7);
        assert_eq!((options.corpus.as_str(), options.created), ("docs", 7));
        assert_eq!(options.chunk, ChunkConfig { max: 300, ..ChunkConfig::tokens() });
        assert_eq!(options.dense.quantization, Quantization::F32);
        assert_eq!(
            request.options(false, 7).chunk,
            ChunkConfig { max: 300, ..ChunkConfig::chars() }
        );
        let plain = BuildRequest { keyword_similarity: Some(0.0), ..BuildRequest::default() };
        assert_eq!(plain.options(true, 0).graph.semantic_threshold, None);
        assert!(BuildRequest::default().embeds(true));
        assert!(!BuildRequest { embed: Some(false), ..BuildRequest::default() }.embeds(true));
        assert!(!BuildRequest::default().embeds(false));
    }

    #[test]
    fn builds_write_format_4_unless_asked_for_3() {
        let format = |json: &str| serde_json::from_str::<BuildRequest>(json).unwrap().format();
        assert_eq!(format("{}").unwrap(), 4);
        assert_eq!(format(r#"{"format": 3}"#).unwrap(), 3);
        let error = format(r#"{"format": 2}"#).unwrap_err().to_string();
        assert!(error.contains("a build writes format 3 or 4, not 2"), "{error}");
    }

    #[test]
    fn an_llm_is_used_only_when_given_and_not_overruled() {
        let request = ask(
            r#"{"llm": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-secret", "models": ["m"], "timeoutMs": 1500}}"#,
        )
        .unwrap();
        let config = request.llm().unwrap().unwrap();
        assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(config.models, ["m"]);
        assert_eq!(config.timeout, Duration::from_millis(1500));
        assert_eq!(config.api_key, ApiKey::new("sk-secret"));
        assert!(!format!("{request:?}").contains("sk-secret"));
        let extractive = AskRequest { extractive: true, ..request.clone() };
        assert_eq!(extractive.llm().unwrap(), None);
        let blank_key = ask(r#"{"llm": {"apiKey": "  "}}"#).unwrap();
        assert_eq!(blank_key.llm().unwrap().unwrap().api_key, None);
        let bad_url = ask(r#"{"llm": {"baseUrl": "ftp://x"}}"#).unwrap();
        assert!(bad_url.llm().unwrap_err().to_string().contains("http://"));
        assert!(ask(r#"{"llmKeywords": true}"#).unwrap().llm().is_err());
        let forever = ask(r#"{"llm": {"timeoutMs": 10000000000}}"#).unwrap();
        assert!(forever.llm().unwrap_err().to_string().contains("at most 3600 s"));
    }

    #[test]
    fn the_deadline_is_read_in_milliseconds_and_bounded() {
        let options = ask(r#"{"deadlineMs": 2500}"#).unwrap().options().unwrap();
        assert_eq!(options.deadline, Duration::from_millis(2500));
        assert_eq!(ask("{}").unwrap().options().unwrap().deadline, Duration::from_secs(120));
        for bad in [r#"{"deadline_ms": 0}"#, r#"{"deadline_ms": 3600001}"#] {
            let error = ask(bad).unwrap().options().unwrap_err().to_string();
            assert!(error.contains("deadline_ms must be between 1 and 3600000"), "{error}");
        }
    }
}
