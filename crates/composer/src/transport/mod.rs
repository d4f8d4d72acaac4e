//! How the composer talks to its host: the caller provides a [`QuestionTransport`]
//! (answer and cancel POSTs, message POSTs, the session's event stream).
//! [`HttpTransport`] is the host's HTTP API; [`MemoryTransport`] is a host in
//! memory for tests, fixtures and demos.

mod http;
mod memory;

pub use http::{HttpTransport, error_from_body};
pub use memory::{MemoryTransport, RecordedPost};

use ask_user_core::AnswerBatch;
use ask_user_core::wire::{SessionEvent, Transcript};
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
    /// Refused for good (e.g. 401 after the host restarted with a new token),
    /// or the stream could not be created at all; the browser will not retry
    /// by itself.
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
    /// `GET …/transcript`: the conversation so far (messages and the records
    /// of resolved questions). A host without one has an empty transcript.
    fn load_transcript(&self) -> LocalFuture<Result<Transcript, PostError>> {
        Box::pin(async { Ok(Transcript::default()) })
    }
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
