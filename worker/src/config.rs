//! The worker's configuration: `[vars]` in `wrangler.toml` and secrets (`wrangler secret put`).
//!
//! | name | kind | meaning |
//! |------|------|---------|
//! | `EDGERAG_BUNDLES` | var | bundles served, `name=source` separated by commas; the first is the default |
//! | `EDGERAG_MODEL` | var | the quantized embedding model (`edgerag models quantize`), a source; empty: no dense retrieval |
//! | `EDGERAG_MODEL_ID` | var | the model's id as bundles record it (default all-MiniLM-L6-v2's) |
//! | `EDGERAG_CORS_ORIGINS` | var | origins allowed to call the API from a browser, separated by commas; `*` for any |
//! | `EDGERAG_MAX_BODY_BYTES` | var | largest request body (default 65,536) |
//! | `EDGERAG_LLM_BASE_URL` | var | OpenAI-compatible API for written answers (default Groq's when a key is set) |
//! | `EDGERAG_LLM_MODELS` | var | models to try in order, separated by commas |
//! | `EDGERAG_LLM_API_KEY` | secret | the LLM's key (`GROQ_API_KEY` and `OPENAI_API_KEY` are read too) |
//! | `EDGERAG_AUTH_TOKEN` | secret | when set, every request but `/v1/health` needs `Authorization: Bearer <token>` |
//!
//! A source is `assets:/path` (a file of the Workers static assets, binding `ASSETS`, at most
//! 25 MiB) or `r2:key` (an object of the R2 bucket bound as `BUNDLES`, for larger files).
//! Without an LLM (no key and no base URL) answers are extractive.

use edgerag_core::embed::EmbedderOptions;
use edgerag_core::llm::{API_KEY_VARIABLES, ApiKey};
use edgerag_core::request::LlmRequest;

/// The static-assets binding.
pub(crate) const ASSETS_BINDING: &str = "ASSETS";
/// The R2 bucket binding.
pub(crate) const R2_BINDING: &str = "BUNDLES";
/// Default largest request body.
const DEFAULT_MAX_BODY: usize = 64 * 1024;

/// Where a file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A path of the static assets (starting with `/`).
    Assets(String),
    /// A key of the R2 bucket.
    R2(String),
}

impl Source {
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let source = if let Some(path) = text.strip_prefix("assets:") {
            let path = path.trim_start_matches('/');
            (!path.is_empty()).then(|| Source::Assets(format!("/{path}")))
        } else if let Some(key) = text.strip_prefix("r2:") {
            (!key.is_empty()).then(|| Source::R2(key.to_owned()))
        } else {
            None
        };
        source.ok_or_else(|| format!("{text:?} is not a source (assets:/path or r2:key)"))
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Assets(path) => write!(f, "assets:{path}"),
            Source::R2(key) => write!(f, "r2:{key}"),
        }
    }
}

/// A bundle the worker serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BundleEntry {
    /// The name requests choose it by.
    pub(crate) name: String,
    /// Where its bytes are.
    pub(crate) source: Source,
}

/// The whole configuration.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Bundles served; the first is the default. Never empty.
    pub(crate) bundles: Vec<BundleEntry>,
    /// The quantized embedding model, if dense retrieval is on.
    pub(crate) model: Option<Source>,
    /// The id bundles embedded with that model record.
    pub(crate) model_id: String,
    /// Origins allowed by CORS (`*` allows any).
    pub(crate) cors_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub(crate) max_body: usize,
    /// The LLM answers are written by; `None`: extractive answers.
    pub(crate) llm: Option<LlmRequest>,
    /// The bearer token requests must carry, if any.
    pub(crate) auth_token: Option<String>,
}

impl Config {
    /// Reads the configuration through `get`, which returns a var's or secret's value.
    ///
    /// # Errors
    /// A message for the operator naming the variable that is missing or malformed.
    pub(crate) fn read(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let bundles = var("EDGERAG_BUNDLES")
            .ok_or("EDGERAG_BUNDLES is not set: name the bundles to serve (name=assets:/path)")?;
        let bundles = bundles
            .split(',')
            .filter(|entry| !entry.trim().is_empty())
            .map(|entry| {
                let (name, source) = entry.split_once('=').ok_or_else(|| {
                    format!("EDGERAG_BUNDLES: {:?} is not name=source", entry.trim())
                })?;
                let name = name.trim();
                if name.is_empty()
                    || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                {
                    return Err(format!(
                        "EDGERAG_BUNDLES: bundle name {name:?} must be letters, digits, '.', '_' \
                         or '-'"
                    ));
                }
                let source = Source::parse(source).map_err(|e| format!("EDGERAG_BUNDLES: {e}"))?;
                Ok(BundleEntry { name: name.to_owned(), source })
            })
            .collect::<Result<Vec<_>, String>>()?;
        if bundles.is_empty() {
            return Err("EDGERAG_BUNDLES names no bundle".to_owned());
        }
        for (i, entry) in bundles.iter().enumerate() {
            if bundles[..i].iter().any(|other| other.name == entry.name) {
                return Err(format!("EDGERAG_BUNDLES: bundle {:?} is named twice", entry.name));
            }
        }
        let model = var("EDGERAG_MODEL")
            .map(|m| Source::parse(&m).map_err(|e| format!("EDGERAG_MODEL: {e}")))
            .transpose()?;
        let max_body = match var("EDGERAG_MAX_BODY_BYTES") {
            None => DEFAULT_MAX_BODY,
            Some(text) => text.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("EDGERAG_MAX_BODY_BYTES: {text:?} is not a positive number")
            })?,
        };
        let list = |name: &str| -> Vec<String> {
            var(name)
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let api_key = API_KEY_VARIABLES.iter().find_map(|name| var(name)).and_then(ApiKey::new);
        let base_url = var("EDGERAG_LLM_BASE_URL");
        let llm = (api_key.is_some() || base_url.is_some()).then(|| LlmRequest {
            base_url,
            api_key,
            models: list("EDGERAG_LLM_MODELS"),
            ..LlmRequest::default()
        });
        if let Some(llm) = &llm {
            llm.config().map_err(|e| format!("EDGERAG_LLM_*: {e}"))?;
        }
        Ok(Self {
            bundles,
            model,
            model_id: var("EDGERAG_MODEL_ID")
                .unwrap_or_else(|| EmbedderOptions::MINILM_ID.to_owned()),
            cors_origins: list("EDGERAG_CORS_ORIGINS"),
            max_body,
            llm,
            auth_token: var("EDGERAG_AUTH_TOKEN"),
        })
    }

    /// The bundle named `name`, or the default one.
    pub(crate) fn bundle(&self, name: Option<&str>) -> Option<&BundleEntry> {
        match name {
            None => self.bundles.first(),
            Some(name) => self.bundles.iter().find(|b| b.name == name),
        }
    }

    /// The names of the bundles, for messages.
    pub(crate) fn bundle_names(&self) -> String {
        self.bundles.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// Whether a browser page at `origin` may call the API.
    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        self.cors_origins.iter().any(|allowed| allowed == "*" || allowed == origin)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Config, String> {
        let vars: HashMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Config::read(|name| vars.get(name).cloned())
    }

    #[test]
    fn bundles_model_and_limits_are_read() {
        let config = read(&[
            ("EDGERAG_BUNDLES", " demo=assets:/bundles/demo.bundle, big=r2:corpora/big.bundle ,"),
            ("EDGERAG_MODEL", "assets:models/minilm.gguf"),
            ("EDGERAG_CORS_ORIGINS", "https://a.example, http://localhost:8080"),
            ("EDGERAG_MAX_BODY_BYTES", "1024"),
        ])
        .unwrap();
        assert_eq!(config.bundles.len(), 2);
        assert_eq!(config.bundle(None).unwrap().name, "demo");
        assert_eq!(
            config.bundle(Some("big")).unwrap().source,
            Source::R2("corpora/big.bundle".into())
        );
        assert!(config.bundle(Some("nope")).is_none());
        assert_eq!(config.model, Some(Source::Assets("/models/minilm.gguf".into())));
        assert_eq!(config.model_id, EmbedderOptions::MINILM_ID);
        assert_eq!(config.max_body, 1024);
        assert!(config.allows_origin("http://localhost:8080"));
        assert!(!config.allows_origin("https://evil.example"));
        assert!(config.llm.is_none() && config.auth_token.is_none());
        assert_eq!(config.bundle_names(), "demo, big");
    }

    #[test]
    fn an_api_key_or_base_url_turns_the_llm_on() {
        let bundles = ("EDGERAG_BUNDLES", "demo=r2:demo.bundle");
        let keyed = read(&[bundles, ("GROQ_API_KEY", "gsk-secret")]).unwrap();
        let llm = keyed.llm.as_ref().unwrap().config().unwrap();
        assert!(llm.api_key.is_some() && llm.base_url.contains("groq"));
        let local = read(&[
            bundles,
            ("EDGERAG_LLM_BASE_URL", "http://127.0.0.1:9999/v1"),
            ("EDGERAG_LLM_MODELS", "small, large"),
            ("EDGERAG_AUTH_TOKEN", "t0ken"),
        ])
        .unwrap();
        let llm = local.llm.unwrap().config().unwrap();
        assert_eq!(llm.models, ["small", "large"]);
        assert!(llm.api_key.is_none());
        assert_eq!(local.auth_token.as_deref(), Some("t0ken"));
        assert!(!format!("{keyed:?}").contains("gsk-secret"), "the key leaks into Debug");
    }

    #[test]
    fn mistakes_name_the_variable() {
        let error = |vars: &[(&str, &str)]| read(vars).unwrap_err();
        assert!(error(&[]).starts_with("EDGERAG_BUNDLES is not set"));
        assert!(error(&[("EDGERAG_BUNDLES", "demo")]).contains("not name=source"));
        assert!(error(&[("EDGERAG_BUNDLES", "demo=http://x")]).contains("assets:/path or r2:key"));
        assert!(error(&[("EDGERAG_BUNDLES", "a b=r2:x")]).contains("must be letters"));
        assert!(error(&[("EDGERAG_BUNDLES", "a=r2:x,a=r2:y")]).contains("named twice"));
        assert!(error(&[("EDGERAG_BUNDLES", "a=r2:")]).contains("is not a source"));
        let bundles = ("EDGERAG_BUNDLES", "a=r2:x");
        assert!(error(&[bundles, ("EDGERAG_MODEL", "x.gguf")]).starts_with("EDGERAG_MODEL:"));
        assert!(error(&[bundles, ("EDGERAG_MAX_BODY_BYTES", "0")]).contains("positive"));
        assert!(error(&[bundles, ("EDGERAG_LLM_BASE_URL", "ftp://x")]).starts_with("EDGERAG_LLM_"));
    }
}
