//! HTTP plumbing: JSON errors, request bodies within the size limit, CORS, bearer-token auth
//! and server-sent event streams.

use edgerag_core::Error;
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde_json::{Value, json};
use worker::{Headers, Request, Response, console_error};

use crate::config::Config;

/// A request that cannot be served, as the client sees it: a status, a stable code and a
/// message that tells the client what to change and reveals nothing internal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    /// 400: the request is malformed.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "bad_request", message)
    }

    /// 500: a failure the client cannot fix. `detail` goes to the worker's log only.
    pub(crate) fn internal(detail: &str) -> Self {
        console_error!("edgerag: internal error: {detail}");
        Self::new(500, "internal", "the worker failed to handle the request")
    }

    /// The JSON body: `{"error": {"code", "message"}}`.
    pub(crate) fn body(&self) -> Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }

    /// The error as a response.
    pub(crate) fn response(&self) -> worker::Result<Response> {
        json_response(self.status, &self.body())
    }
}

impl From<Error> for ApiError {
    /// Core's errors: the caller's mistakes are 4xx with core's message; an LLM that fails is
    /// 502; anything else is internal.
    fn from(error: Error) -> Self {
        match &error {
            Error::Query(_) | Error::Request(_) | Error::Config(_) => {
                Self::bad_request(error.to_string())
            }
            Error::NoVectors(_) | Error::ModelMismatch { .. } => {
                Self::new(409, "dense_unavailable", error.to_string())
            }
            Error::LlmRejected { .. } => Self::new(502, "llm_rejected", error.to_string()),
            Error::LlmUnavailable(_) | Error::LlmResponse { .. } => {
                Self::new(502, "llm_failed", error.to_string())
            }
            _ => Self::internal(&error.to_string()),
        }
    }
}

impl From<worker::Error> for ApiError {
    fn from(error: worker::Error) -> Self {
        Self::internal(&error.to_string())
    }
}

/// A JSON response with `status`.
pub(crate) fn json_response<T: Serialize>(status: u16, value: &T) -> worker::Result<Response> {
    Ok(Response::from_json(value)?.with_status(status))
}

/// The body of `request` as a JSON object, refused when larger than the configured limit
/// (413), not JSON (400) or not an object (400).
pub(crate) async fn json_object(
    request: &mut Request,
    config: &Config,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    let too_large = || {
        ApiError::new(
            413,
            "too_large",
            format!("the request body is larger than {} bytes", config.max_body),
        )
    };
    let declared = request.headers().get("content-length").ok().flatten();
    if declared.and_then(|n| n.parse::<usize>().ok()).is_some_and(|n| n > config.max_body) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    // A request without a body has no stream: it is read as empty (and refused as not JSON).
    if let Ok(mut stream) = request.stream() {
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
            if body.len() > config.max_body {
                return Err(too_large());
            }
        }
    }
    match serde_json::from_slice(&body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::bad_request("the request body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request(format!("the request body is not JSON: {e}"))),
    }
}

/// Removes `field` from `object`: a string if present.
pub(crate) fn take_string(
    object: &mut serde_json::Map<String, Value>,
    field: &str,
) -> Result<Option<String>, ApiError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ApiError::bad_request(format!("{field} must be a string"))),
    }
}

/// Removes `field` from `object`: a boolean, `false` if absent.
pub(crate) fn take_bool(
    object: &mut serde_json::Map<String, Value>,
    field: &str,
) -> Result<bool, ApiError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(flag)) => Ok(flag),
        Some(_) => Err(ApiError::bad_request(format!("{field} must be true or false"))),
    }
}

/// What is left of a body, read as the request type `T` (unknown fields refused by `T`).
pub(crate) fn rest<T: serde::de::DeserializeOwned>(
    object: serde_json::Map<String, Value>,
) -> Result<T, ApiError> {
    Ok(edgerag_core::request::from_json(Value::Object(object))?)
}

/// Checks the bearer token when one is configured.
pub(crate) fn authorize(request: &Request, config: &Config) -> Result<(), ApiError> {
    let Some(token) = &config.auth_token else {
        return Ok(());
    };
    let given = request.headers().get("authorization").ok().flatten();
    let given = given.as_deref().and_then(|h| h.strip_prefix("Bearer ")).unwrap_or_default();
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(ApiError::new(401, "unauthorized", "a valid Authorization: Bearer token is required"))
    }
}

/// Compares secrets in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Methods and headers a browser may use across origins.
const CORS_METHODS: &str = "GET, POST, OPTIONS";
const CORS_HEADERS: &str = "Authorization, Content-Type";

/// The answer to a CORS preflight (`OPTIONS`): 204 for an allowed origin, 403 otherwise.
pub(crate) fn preflight(request: &Request, config: &Config) -> Result<Response, ApiError> {
    let origin = request.headers().get("origin").ok().flatten();
    match origin {
        Some(origin) if config.allows_origin(&origin) => {
            let headers = Headers::new();
            headers.set("access-control-allow-methods", CORS_METHODS)?;
            headers.set("access-control-allow-headers", CORS_HEADERS)?;
            headers.set("access-control-max-age", "86400")?;
            Ok(Response::empty()?.with_status(204).with_headers(headers))
        }
        _ => Err(ApiError::new(403, "forbidden_origin", "this origin may not call the API")),
    }
}

/// Adds the CORS headers a response to `origin` needs when that origin is allowed.
pub(crate) fn with_cors(response: Response, origin: Option<&str>, config: &Config) -> Response {
    let mut response = response;
    if let Some(origin) = origin.filter(|o| config.allows_origin(o)) {
        let headers = response.headers_mut();
        let allowed = if config.cors_origins.iter().any(|o| o == "*") { "*" } else { origin };
        _ = headers.set("access-control-allow-origin", allowed);
        _ = headers.append("vary", "Origin");
    }
    response
}

/// A `text/event-stream` response of `events`.
pub(crate) fn event_stream(
    events: impl Stream<Item = Vec<u8>> + 'static,
) -> Result<Response, ApiError> {
    let headers = Headers::new();
    headers.set("content-type", "text/event-stream; charset=utf-8")?;
    headers.set("cache-control", "no-cache")?;
    Ok(Response::from_stream(events.map(Ok::<_, worker::Error>))?.with_headers(headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_content_only() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}
