//! The native LLM transport: a blocking HTTP client (ureq) whose exchanges and body reads run
//! on tokio's blocking threads, raced against tokio's timer, so an answer's deadline can end
//! a request still waiting for its server.

use std::future::Future;
use std::io::Read;
use std::time::Duration;

use edgerag_core::llm::{HttpRequest, HttpResponse, ResponseBody, Transport, TransportError};
use ureq::Agent;

/// HTTP over a blocking client. Each exchange and each read of a body runs on a thread of the
/// runtime's blocking pool and waits run on its timer, so the futures can be raced: an answer's
/// deadline (`--ask-timeout`) ends a request that is still waiting for its server.
#[derive(Debug)]
pub(crate) struct NativeTransport {
    agent: Agent,
}

impl NativeTransport {
    pub(crate) fn new(timeout: Duration) -> Self {
        let config = edgerag_cli::http::client().timeout_global(Some(timeout));
        let agent = config.http_status_as_error(false).build().into();
        Self { agent }
    }
}

/// A response body read from the blocking client, one read at a time on the blocking pool;
/// `None` once a read was abandoned (its future dropped) or failed.
pub(crate) struct NativeBody(Option<Box<dyn Read + Send>>);

impl ResponseBody for NativeBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        let mut reader = self
            .0
            .take()
            .ok_or_else(|| TransportError::Failed("the response was abandoned".into()))?;
        let (reader, read) = blocking(move || {
            let mut buffer = vec![0; 8192];
            let read = reader.read(&mut buffer).map(|n| {
                buffer.truncate(n);
                buffer
            });
            (reader, read)
        })
        .await?;
        self.0 = Some(reader);
        match read {
            Ok(buffer) if buffer.is_empty() => Ok(None),
            Ok(buffer) => Ok(Some(buffer)),
            Err(e) => Err(transport_error(&e.to_string())),
        }
    }
}

impl Transport for NativeTransport {
    type Body = NativeBody;

    async fn post(&self, request: HttpRequest) -> Result<HttpResponse<NativeBody>, TransportError> {
        let agent = self.agent.clone();
        blocking(move || {
            let mut call = agent.post(&request.url);
            for (name, value) in &request.headers {
                call = call.header(name, value);
            }
            let response = call.send(request.body.as_bytes()).map_err(|e| match e {
                ureq::Error::Timeout(_) => TransportError::Timeout,
                // The message names the host and the failure; it never holds headers.
                other => TransportError::Failed(other.to_string()),
            })?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = NativeBody(Some(Box::new(response.into_body().into_reader())));
            Ok(HttpResponse { status, retry_after, body })
        })
        .await?
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// Runs blocking `work` on the runtime's blocking pool. Dropping the future abandons the
/// result (the work runs to its end, bounded by the HTTP client's timeout).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TransportError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| TransportError::Failed(format!("the HTTP thread failed: {e}")))
}

/// A read error: ureq reports its timeout through the reader as an I/O error.
fn transport_error(message: &str) -> TransportError {
    if message.contains("timeout") || message.contains("timed out") {
        TransportError::Timeout
    } else {
        TransportError::Failed(message.to_owned())
    }
}

/// Runs a future on this thread's runtime (one per thread, made on first use): the native
/// transport's exchanges run on its blocking pool and its waits on its timer. Returns as soon
/// as the future is done: an exchange the future stopped waiting for (past the answer's
/// deadline) is left to end on its own, not waited for, then or when the thread ends.
///
/// # Panics
/// When the runtime cannot start (the system refuses it threads or timers).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    /// A runtime that does not wait for abandoned exchanges when its thread ends.
    struct Local(Option<tokio::runtime::Runtime>);
    impl Drop for Local {
        fn drop(&mut self) {
            if let Some(runtime) = self.0.take() {
                runtime.shutdown_background();
            }
        }
    }
    thread_local! {
        #[allow(clippy::expect_used)]
        static RUNTIME: Local = Local(Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("a runtime for the LLM client"),
        ));
    }
    RUNTIME.with(|local| match &local.0 {
        Some(runtime) => runtime.block_on(future),
        None => unreachable!("the runtime is taken only when its thread ends"),
    })
}
