//! The LLM transport at the edge: workers-rs `Fetch` with an `AbortController`, under one
//! deadline (a `Delay`) for the whole exchange, body included.

use std::pin::{Pin, pin};
use std::time::Duration;

use edgerag_core::llm::{HttpRequest, HttpResponse, ResponseBody, Transport, TransportError};
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use worker::wasm_bindgen::JsValue;
use worker::{AbortController, ByteStream, Delay, Fetch, Headers, Method, Request, RequestInit};

/// Sends LLM requests with the Workers runtime's `fetch`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WorkerTransport;

impl Transport for WorkerTransport {
    type Body = WorkerBody;

    async fn post(&self, request: HttpRequest) -> Result<HttpResponse<WorkerBody>, TransportError> {
        let headers = Headers::new();
        for (name, value) in &request.headers {
            headers.set(name, value).map_err(failed)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(JsValue::from_str(&request.body)));
        let outgoing = Request::new_with_init(&request.url, &init).map_err(failed)?;
        let controller = AbortController::default();
        let mut deadline = Box::pin(Delay::from(request.timeout));
        let fetch = Fetch::Request(outgoing);
        let signal = controller.signal();
        let sent = fetch.send_with_signal(&signal);
        let mut response = match select(pin!(sent), deadline.as_mut()).await {
            Either::Left((response, _)) => response.map_err(failed)?,
            Either::Right(_) => {
                controller.abort();
                return Err(TransportError::Timeout);
            }
        };
        let retry_after = response.headers().get("retry-after").ok().flatten();
        Ok(HttpResponse {
            status: response.status_code(),
            retry_after,
            body: WorkerBody {
                stream: response.stream().ok(),
                deadline,
                controller: Some(controller),
            },
        })
    }

    async fn sleep(&self, duration: Duration) {
        Delay::from(duration).await;
    }
}

/// A response body read from its stream, under the request's deadline.
pub(crate) struct WorkerBody {
    /// `None` once read to the end (or for a response without a body).
    stream: Option<ByteStream>,
    deadline: Pin<Box<Delay>>,
    /// Aborts the exchange when the body is dropped before its end.
    controller: Option<AbortController>,
}

impl ResponseBody for WorkerBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        match select(stream.next(), self.deadline.as_mut()).await {
            Either::Left((Some(Ok(bytes)), _)) => Ok(Some(bytes)),
            Either::Left((Some(Err(error)), _)) => {
                self.stream = None;
                Err(failed(error))
            }
            Either::Left((None, _)) => {
                self.stream = None;
                self.controller = None;
                Ok(None)
            }
            Either::Right(_) => {
                self.stream = None;
                Err(TransportError::Timeout)
            }
        }
    }
}

impl Drop for WorkerBody {
    /// Cancels whatever of the body is still coming.
    fn drop(&mut self) {
        if let Some(controller) = self.controller.take() {
            controller.abort();
        }
    }
}

/// A runtime error as a transport failure.
fn failed(error: worker::Error) -> TransportError {
    TransportError::Failed(error.to_string())
}
