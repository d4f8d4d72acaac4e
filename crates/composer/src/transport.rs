//! How the composer talks to its host: the caller provides a [`QuestionTransport`]
//! (answer and cancel POSTs, message POSTs, the session's event stream).
//! [`HttpTransport`] is the host's HTTP API; tests provide a fake.

use ask_user_core::AnswerBatch;
use ask_user_core::wire::{ErrorBody, PostMessage, SessionEvent};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// A future that runs on the browser's single thread.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// A failed POST, readable by a person and routable by a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// The HTTP status, `None` when the request never got an answer.
    pub status: Option<u16>,
    /// The host's machine code (`BAD_ANSWER`, `NOT_PENDING`, `UNAUTHORIZED`, …).
    pub code: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl PostError {
    /// A failure without an HTTP answer (offline, DNS, CORS, …).
    pub fn network(message: impl Into<String>) -> Self {
        Self {
            status: None,
            code: None,
            message: message.into(),
        }
    }

    /// True for the host's `409 NOT_PENDING`: someone else resolved it.
    pub fn is_not_pending(&self) -> bool {
        self.code.as_deref() == Some(ask_user_core::ErrorCode::NotPending.as_str())
            || (self.code.is_none() && self.status == Some(409))
    }
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.status, &self.code) {
            (Some(status), Some(code)) => write!(f, "{} ({status} {code})", self.message),
            (Some(status), None) => write!(f, "{} ({status})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Whether the event stream is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStatus {
    /// Opening or reconnecting.
    Connecting,
    /// Open: frames flow.
    Open,
    /// Closed on purpose (hidden tab, unmount).
    Closed,
    /// Refused for good (e.g. 401 after the host restarted with a new token);
    /// the browser will not retry by itself.
    Failed,
}

/// Where a transport delivers what the event stream says.
#[derive(Clone)]
pub struct EventSink {
    on_event: Rc<dyn Fn(SessionEvent)>,
    on_status: Rc<dyn Fn(StreamStatus)>,
}

impl EventSink {
    /// A sink calling these functions.
    pub fn new(
        on_event: impl Fn(SessionEvent) + 'static,
        on_status: impl Fn(StreamStatus) + 'static,
    ) -> Self {
        Self {
            on_event: Rc::new(on_event),
            on_status: Rc::new(on_status),
        }
    }

    /// Delivers one frame.
    pub fn event(&self, event: SessionEvent) {
        (self.on_event)(event)
    }

    /// Reports the stream's status.
    pub fn status(&self, status: StreamStatus) {
        (self.on_status)(status)
    }
}

/// An open event stream; dropping it closes the stream.
pub struct EventStream {
    close: Option<Box<dyn FnOnce()>>,
}

impl EventStream {
    /// A stream closed by calling `close` once.
    pub fn new(close: impl FnOnce() + 'static) -> Self {
        Self {
            close: Some(Box::new(close)),
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        if let Some(close) = self.close.take() {
            close();
        }
    }
}

/// The host a composer talks to.
pub trait QuestionTransport {
    /// `POST …/questions/{id}/answer` with the batch.
    fn post_answer(&self, id: &str, batch: &AnswerBatch) -> LocalFuture<Result<(), PostError>>;
    /// `POST …/questions/{id}/cancel`.
    fn post_cancel(&self, id: &str) -> LocalFuture<Result<(), PostError>>;
    /// `POST …/messages` with `{"text"}`.
    fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>>;
    /// Opens the session's event stream, delivering frames to `sink` until the
    /// returned handle is dropped. Every open replays what is pending.
    fn open_events(&self, sink: EventSink) -> EventStream;
}

/// A shared transport, cheap to clone.
#[derive(Clone)]
pub struct Transport(pub Rc<dyn QuestionTransport>);

impl Transport {
    /// Wraps a transport.
    pub fn new(transport: impl QuestionTransport + 'static) -> Self {
        Self(Rc::new(transport))
    }
}

impl std::ops::Deref for Transport {
    type Target = dyn QuestionTransport;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

/// The host's HTTP API for one session.
///
/// Same origin: the HttpOnly session cookie authenticates everything. Cross
/// origin: pass a token; POSTs send `Authorization: Bearer`, and because
/// `EventSource` cannot send headers, the events URL carries `?token=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTransport {
    base_url: String,
    session: String,
    token: Option<String>,
}

impl HttpTransport {
    /// The API at `base_url` (empty for same origin) for `session`.
    pub fn new(
        base_url: impl Into<String>,
        session: impl Into<String>,
        token: Option<String>,
    ) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            session: session.into(),
            token: token.filter(|t| !t.is_empty()),
        }
    }

    /// `{base}/api/sessions/{session}` with the session percent-encoded.
    pub fn session_url(&self) -> String {
        format!("{}/api/sessions/{}", self.base_url, encode(&self.session))
    }

    /// The event stream's URL (with `?token=` when a token is set).
    pub fn events_url(&self) -> String {
        match &self.token {
            Some(token) => format!("{}/events?token={}", self.session_url(), encode(token)),
            None => format!("{}/events", self.session_url()),
        }
    }

    /// The URL of one question's action (`answer` or `cancel`).
    pub fn question_url(&self, id: &str, action: &str) -> String {
        format!("{}/questions/{}/{action}", self.session_url(), encode(id))
    }

    fn post(&self, url: String, body: Option<String>) -> LocalFuture<Result<(), PostError>> {
        let token = self.token.clone();
        Box::pin(async move {
            let mut builder = gloo_net::http::Request::post(&url);
            if let Some(token) = &token {
                builder = builder.header("Authorization", &format!("Bearer {token}"));
            }
            let request = match body {
                Some(body) => builder
                    .header("Content-Type", "application/json")
                    .body(body),
                None => builder.build(),
            }
            .map_err(|e| PostError::network(e.to_string()))?;
            let response = request
                .send()
                .await
                .map_err(|e| PostError::network(format!("the host could not be reached: {e}")))?;
            if response.ok() {
                return Ok(());
            }
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            Err(error_from_body(status, &text))
        })
    }
}

/// Reads the host's `{"error": {"code", "message"}}` body, or keeps the raw text.
pub fn error_from_body(status: u16, text: &str) -> PostError {
    match serde_json::from_str::<ErrorBody>(text) {
        Ok(body) => PostError {
            status: Some(status),
            code: Some(body.error.code),
            message: body.error.message,
        },
        Err(_) => PostError {
            status: Some(status),
            code: None,
            message: if text.trim().is_empty() {
                format!("the host answered {status}")
            } else {
                text.trim().chars().take(300).collect()
            },
        },
    }
}

impl QuestionTransport for HttpTransport {
    fn post_answer(&self, id: &str, batch: &AnswerBatch) -> LocalFuture<Result<(), PostError>> {
        let body = serde_json::to_string(batch).expect("an answer batch always serialises");
        self.post(self.question_url(id, "answer"), Some(body))
    }

    fn post_cancel(&self, id: &str) -> LocalFuture<Result<(), PostError>> {
        self.post(self.question_url(id, "cancel"), None)
    }

    fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>> {
        let body = serde_json::to_string(&PostMessage {
            text: text.to_owned(),
        })
        .expect("a message always serialises");
        self.post(format!("{}/messages", self.session_url()), Some(body))
    }

    fn open_events(&self, sink: EventSink) -> EventStream {
        open_event_source(&self.events_url(), sink)
    }
}

fn open_event_source(url: &str, sink: EventSink) -> EventStream {
    use ask_user_core::wire::{
        MESSAGE_CREATED, QUESTION_ATTACHED, QUESTION_DETACHED, QUESTION_REQUESTED,
        QUESTION_RESOLVED, SESSION_SYNCED,
    };
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    let Ok(source) = web_sys::EventSource::new(url) else {
        sink.status(StreamStatus::Connecting);
        return EventStream::new(|| {});
    };
    sink.status(StreamStatus::Connecting);
    type Listener = Closure<dyn FnMut(web_sys::Event)>;
    let mut listeners: Vec<(&'static str, Listener)> = Vec::new();
    for name in [
        QUESTION_REQUESTED,
        QUESTION_RESOLVED,
        SESSION_SYNCED,
        MESSAGE_CREATED,
        QUESTION_DETACHED,
        QUESTION_ATTACHED,
    ] {
        let sink = sink.clone();
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            let Some(data) = event
                .dyn_ref::<web_sys::MessageEvent>()
                .and_then(|m| m.data().as_string())
            else {
                return;
            };
            if let Some(frame) = SessionEvent::parse(name, &data) {
                sink.event(frame);
            }
        });
        let _ = source.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
        listeners.push((name, closure));
    }
    let open_sink = sink.clone();
    let on_open =
        Closure::<dyn FnMut(web_sys::Event)>::new(move |_| open_sink.status(StreamStatus::Open));
    // EventSource reconnects by itself after a dropped connection (the replay on
    // reopen makes that lossless), but not after an HTTP error: then it is CLOSED.
    let error_sink = sink.clone();
    let error_source = source.clone();
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        error_sink.status(
            if error_source.ready_state() == web_sys::EventSource::CLOSED {
                StreamStatus::Failed
            } else {
                StreamStatus::Connecting
            },
        )
    });
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    EventStream::new(move || {
        source.close();
        source.set_onopen(None);
        source.set_onerror(None);
        for (name, closure) in &listeners {
            let _ =
                source.remove_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
        }
        drop((listeners, on_open, on_error));
        sink.status(StreamStatus::Closed);
    })
}

/// Percent-encodes a path segment or query value (RFC 3986 unreserved kept).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_host_contract_and_encode_their_parts() {
        let t = HttpTransport::new("http://127.0.0.1:7777/", "my team", None);
        assert_eq!(
            t.events_url(),
            "http://127.0.0.1:7777/api/sessions/my%20team/events"
        );
        assert_eq!(
            t.question_url("q/1", "answer"),
            "http://127.0.0.1:7777/api/sessions/my%20team/questions/q%2F1/answer"
        );
        let same_origin = HttpTransport::new("", "default", None);
        assert_eq!(
            same_origin.question_url("abc", "cancel"),
            "/api/sessions/default/questions/abc/cancel"
        );
    }

    #[test]
    fn a_token_rides_on_the_events_url_because_event_source_sends_no_headers() {
        let t = HttpTransport::new("https://h.example", "default", Some("a+b/c".into()));
        assert_eq!(
            t.events_url(),
            "https://h.example/api/sessions/default/events?token=a%2Bb%2Fc"
        );
        let empty = HttpTransport::new("", "default", Some(String::new()));
        assert_eq!(empty.events_url(), "/api/sessions/default/events");
    }

    #[test]
    fn host_error_bodies_become_readable_errors_and_409_is_not_pending() {
        let e = error_from_body(
            409,
            r#"{"error":{"name":"UserInteractionError","code":"NOT_PENDING","message":"question abc is not pending"}}"#,
        );
        assert!(e.is_not_pending());
        assert_eq!(
            e.to_string(),
            "question abc is not pending (409 NOT_PENDING)"
        );
        let bad = error_from_body(
            422,
            r#"{"error":{"name":"UserInteractionError","code":"BAD_ANSWER","message":"answers: missing"}}"#,
        );
        assert!(!bad.is_not_pending());
        assert_eq!(bad.code.as_deref(), Some("BAD_ANSWER"));
        let plain = error_from_body(502, "Bad Gateway");
        assert_eq!(plain.to_string(), "Bad Gateway (502)");
    }
}

/// A POST a [`MemoryTransport`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedPost {
    /// `POST …/questions/{id}/answer`.
    Answer {
        /// The question id.
        id: String,
        /// The batch.
        batch: AnswerBatch,
    },
    /// `POST …/questions/{id}/cancel`.
    Cancel {
        /// The question id.
        id: String,
    },
    /// `POST …/messages`.
    Message {
        /// The text.
        text: String,
    },
}

type PostHook = Rc<dyn Fn(&MemoryTransport, &RecordedPost)>;

#[derive(Default)]
struct MemoryInner {
    sinks: Vec<(u64, EventSink)>,
    next_sink: u64,
    opens: usize,
    posts: Vec<RecordedPost>,
    replies: std::collections::VecDeque<Result<(), PostError>>,
    replay: Vec<SessionEvent>,
    on_post: Option<PostHook>,
}

/// An in-memory host for tests, fixtures and demos: it records every POST,
/// answers them from a queue (success by default), replays a list of frames on
/// every stream open (like the host does), and lets the caller emit frames.
#[derive(Clone, Default)]
pub struct MemoryTransport {
    inner: Rc<std::cell::RefCell<MemoryInner>>,
}

impl MemoryTransport {
    /// A host with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers a frame to every open stream now.
    pub fn emit(&self, event: SessionEvent) {
        let sinks: Vec<EventSink> = self
            .inner
            .borrow()
            .sinks
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for sink in sinks {
            sink.event(event.clone());
        }
    }

    /// Frames every stream open delivers first (the host's replay).
    pub fn set_replay(&self, events: Vec<SessionEvent>) {
        self.inner.borrow_mut().replay = events;
    }

    /// The reply to the next POST (later POSTs succeed unless queued too).
    pub fn reply_next(&self, reply: Result<(), PostError>) {
        self.inner.borrow_mut().replies.push_back(reply);
    }

    /// Runs after every POST is recorded (e.g. to emit `question/resolved`).
    pub fn on_post(&self, f: impl Fn(&MemoryTransport, &RecordedPost) + 'static) {
        self.inner.borrow_mut().on_post = Some(Rc::new(f));
    }

    /// Every POST so far, in order.
    pub fn posts(&self) -> Vec<RecordedPost> {
        self.inner.borrow().posts.clone()
    }

    /// How many streams were opened so far.
    pub fn opens(&self) -> usize {
        self.inner.borrow().opens
    }

    /// How many streams are open now.
    pub fn open_streams(&self) -> usize {
        self.inner.borrow().sinks.len()
    }

    fn record(&self, post: RecordedPost) -> LocalFuture<Result<(), PostError>> {
        let (reply, hook) = {
            let mut inner = self.inner.borrow_mut();
            inner.posts.push(post.clone());
            (
                inner.replies.pop_front().unwrap_or(Ok(())),
                inner.on_post.clone(),
            )
        };
        if let Some(hook) = hook {
            hook(self, &post);
        }
        Box::pin(async move { reply })
    }
}

impl QuestionTransport for MemoryTransport {
    fn post_answer(&self, id: &str, batch: &AnswerBatch) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Answer {
            id: id.to_owned(),
            batch: batch.clone(),
        })
    }

    fn post_cancel(&self, id: &str) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Cancel { id: id.to_owned() })
    }

    fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Message {
            text: text.to_owned(),
        })
    }

    fn open_events(&self, sink: EventSink) -> EventStream {
        let key = {
            let mut inner = self.inner.borrow_mut();
            inner.opens += 1;
            inner.next_sink += 1;
            let key = inner.next_sink;
            inner.sinks.push((key, sink.clone()));
            key
        };
        // Like a real stream, the replay arrives after the open returns.
        let inner = Rc::clone(&self.inner);
        wasm_bindgen_futures::spawn_local(async move {
            let replay = {
                let inner = inner.borrow();
                if !inner.sinks.iter().any(|(k, _)| *k == key) {
                    return;
                }
                inner.replay.clone()
            };
            sink.status(StreamStatus::Open);
            for event in replay {
                sink.event(event);
            }
        });
        let inner = Rc::clone(&self.inner);
        EventStream::new(move || {
            inner.borrow_mut().sinks.retain(|(k, _)| *k != key);
        })
    }
}
