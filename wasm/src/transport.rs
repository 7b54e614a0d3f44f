//! The LLM transport of JavaScript hosts: the global `fetch` with a streamed body, an
//! `AbortController` for the timeout, and `setTimeout` for waits. The globals exist in pages,
//! Web Workers, Node and edge workers alike.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use edgerag_core::llm::{HttpRequest, HttpResponse, ResponseBody, Transport, TransportError};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, Request, RequestInit, Response};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_request(request: &Request) -> Promise;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, milliseconds: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Sends LLM requests with `fetch`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FetchTransport;

impl Transport for FetchTransport {
    type Body = FetchBody;

    async fn post(&self, request: HttpRequest) -> Result<HttpResponse<FetchBody>, TransportError> {
        let deadline = Rc::new(Deadline::start(request.timeout)?);
        let init = RequestInit::new();
        init.set_method("POST");
        init.set_body(&JsValue::from_str(&request.body));
        init.set_signal(Some(&deadline.controller.signal()));
        let req = Request::new_with_str_and_init(&request.url, &init).map_err(failed)?;
        for (name, value) in &request.headers {
            req.headers().set(name, value).map_err(failed)?;
        }
        let response: Response = JsFuture::from(fetch_request(&req))
            .await
            .map_err(|e| deadline.error(e))?
            .dyn_into()
            .map_err(failed)?;
        let retry_after = response.headers().get("retry-after").ok().flatten();
        let reader = response.body().map(|body| body.get_reader().unchecked_into());
        Ok(HttpResponse {
            status: response.status(),
            retry_after,
            body: FetchBody { reader, deadline },
        })
    }

    async fn sleep(&self, duration: Duration) {
        let wait = Promise::new(&mut |resolve, _| {
            set_timeout(&resolve, duration.as_millis() as f64);
        });
        _ = JsFuture::from(wait).await;
    }
}

/// A response body read from its stream, under the request's deadline.
#[derive(Debug)]
pub(crate) struct FetchBody {
    reader: Option<ReadableStreamDefaultReader>,
    deadline: Rc<Deadline>,
}

impl ResponseBody for FetchBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        let Some(reader) = &self.reader else {
            return Ok(None);
        };
        let read = JsFuture::from(reader.read()).await.map_err(|e| self.deadline.error(e))?;
        let done = Reflect::get(&read, &"done".into()).map_err(failed)?;
        if done.as_bool().unwrap_or(true) {
            return Ok(None);
        }
        let value = Reflect::get(&read, &"value".into()).map_err(failed)?;
        Ok(Some(value.dyn_into::<Uint8Array>().map_err(failed)?.to_vec()))
    }
}

/// Aborts a request when its timeout passes, and remembers that it did.
#[derive(Debug)]
struct Deadline {
    controller: AbortController,
    timer: JsValue,
    fired: Rc<Cell<bool>>,
    /// Kept alive until the timer is cleared.
    _abort: Closure<dyn FnMut()>,
}

impl Deadline {
    fn start(timeout: Duration) -> Result<Self, TransportError> {
        let controller = AbortController::new().map_err(failed)?;
        let fired = Rc::new(Cell::new(false));
        let abort = {
            let (controller, fired) = (controller.clone(), Rc::clone(&fired));
            Closure::<dyn FnMut()>::new(move || {
                fired.set(true);
                controller.abort();
            })
        };
        let timer = set_timeout(abort.as_ref().unchecked_ref(), timeout.as_millis() as f64);
        Ok(Self { controller, timer, fired, _abort: abort })
    }

    /// What a failed `fetch` or read means: the timeout if it fired, else the failure.
    fn error(&self, error: JsValue) -> TransportError {
        if self.fired.get() { TransportError::Timeout } else { failed(error) }
    }
}

impl Drop for Deadline {
    /// The exchange is over: stop the timer, and cancel whatever of the body is still coming
    /// (nothing, when it was read to the end).
    fn drop(&mut self) {
        clear_timeout(&self.timer);
        self.controller.abort();
    }
}

/// A JavaScript exception as a transport failure, with its message.
fn failed(error: JsValue) -> TransportError {
    let message = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "the request failed".to_owned());
    TransportError::Failed(message)
}
