//! The frames the host and the browser exchange on a session's event stream
//! (Server-Sent Events), and the small bodies of its HTTP API. Event names and
//! JSON field names are exact.

use crate::error::UserInteractionError;
use crate::request::AskRequest;
use serde::{Deserialize, Serialize};

/// SSE event name: a question is waiting for an answer.
pub const QUESTION_REQUESTED: &str = "question/requested";
/// SSE event name: a question stopped waiting.
pub const QUESTION_RESOLVED: &str = "question/resolved";
/// SSE event name: the replay is over; these ids are pending now.
pub const SESSION_SYNCED: &str = "session/synced";
/// SSE event name: a transcript message.
pub const MESSAGE_CREATED: &str = "message/created";
/// SSE event name: no call waits on a pending question any more (the agent's
/// client stopped waiting or its connection dropped); it stays answerable and
/// the answer is kept until the agent asks again.
pub const QUESTION_DETACHED: &str = "question/detached";
/// SSE event name: a call waits on a detached question again.
pub const QUESTION_ATTACHED: &str = "question/attached";

/// `question/requested`: a question is waiting. Replayed with the same id on
/// every stream open while it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionRequested {
    /// Host-minted, unguessable id of this ask.
    pub id: String,
    /// The session it belongs to.
    pub session: String,
    /// What is asked.
    pub request: AskRequest,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
}

/// How a question stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The person answered.
    Answered,
    /// The person closed it (`ASK_CANCELLED` to the agent).
    Cancelled,
    /// The asking side gave up (`ASK_ABORTED` to the agent).
    Aborted,
    /// Nobody answered in time (`ASK_TIMEOUT` to the agent).
    Timeout,
    /// The host shut down (`ASK_ABORTED` to the agent).
    Disposed,
}

impl Outcome {
    /// The outcome as it appears on the wire, e.g. `"cancelled"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Cancelled => "cancelled",
            Outcome::Aborted => "aborted",
            Outcome::Timeout => "timeout",
            Outcome::Disposed => "disposed",
        }
    }
}

/// `question/resolved`: a question stopped waiting; every tab drops it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionResolved {
    /// The ask's id.
    pub id: String,
    /// How it ended.
    pub outcome: Outcome,
}

/// `question/detached` and `question/attached`: which question changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionRef {
    /// The ask's id.
    pub id: String,
}

/// `session/synced`: sent after the replay; a client drops any item not listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSynced {
    /// Ids pending now, oldest first.
    pub pending: Vec<String>,
}

/// Who wrote a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The agent.
    Agent,
}

/// `message/created`: a transcript message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageCreated {
    /// Host-minted id.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// The text, shown as sent.
    pub text: String,
}

/// One event of a session's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// `question/requested`
    QuestionRequested(QuestionRequested),
    /// `question/resolved`
    QuestionResolved(QuestionResolved),
    /// `session/synced`
    SessionSynced(SessionSynced),
    /// `message/created`
    MessageCreated(MessageCreated),
    /// `question/detached`
    QuestionDetached(QuestionRef),
    /// `question/attached`
    QuestionAttached(QuestionRef),
}

impl SessionEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            SessionEvent::QuestionRequested(_) => QUESTION_REQUESTED,
            SessionEvent::QuestionResolved(_) => QUESTION_RESOLVED,
            SessionEvent::SessionSynced(_) => SESSION_SYNCED,
            SessionEvent::MessageCreated(_) => MESSAGE_CREATED,
            SessionEvent::QuestionDetached(_) => QUESTION_DETACHED,
            SessionEvent::QuestionAttached(_) => QUESTION_ATTACHED,
        }
    }

    /// The SSE data: the payload as compact JSON.
    pub fn data(&self) -> String {
        let json = match self {
            SessionEvent::QuestionRequested(e) => serde_json::to_string(e),
            SessionEvent::QuestionResolved(e) => serde_json::to_string(e),
            SessionEvent::SessionSynced(e) => serde_json::to_string(e),
            SessionEvent::MessageCreated(e) => serde_json::to_string(e),
            SessionEvent::QuestionDetached(e) | SessionEvent::QuestionAttached(e) => {
                serde_json::to_string(e)
            }
        };
        json.expect("wire payloads always serialise")
    }

    /// Reads an event from its SSE name and data; `None` for an unknown name
    /// (so newer hosts can add events) or data that does not parse.
    pub fn parse(name: &str, data: &str) -> Option<Self> {
        let mut json = serde_json::Deserializer::from_str(data);
        let event = Self::from_deserializer(name, &mut json)?;
        json.end().ok()?;
        Some(event)
    }

    /// [`SessionEvent::parse`] from any serde deserializer of the data, e.g.
    /// serde-wasm-bindgen's over the browser's `JSON.parse`, which keeps
    /// serde_json out of the page's wasm.
    pub fn from_deserializer<'de, D: serde::Deserializer<'de>>(
        name: &str,
        data: D,
    ) -> Option<Self> {
        Some(match name {
            QUESTION_REQUESTED => {
                SessionEvent::QuestionRequested(Deserialize::deserialize(data).ok()?)
            }
            QUESTION_RESOLVED => {
                SessionEvent::QuestionResolved(Deserialize::deserialize(data).ok()?)
            }
            SESSION_SYNCED => SessionEvent::SessionSynced(Deserialize::deserialize(data).ok()?),
            MESSAGE_CREATED => SessionEvent::MessageCreated(Deserialize::deserialize(data).ok()?),
            QUESTION_DETACHED => {
                SessionEvent::QuestionDetached(Deserialize::deserialize(data).ok()?)
            }
            QUESTION_ATTACHED => {
                SessionEvent::QuestionAttached(Deserialize::deserialize(data).ok()?)
            }
            _ => return None,
        })
    }
}

/// One entry of `GET /api/sessions/{session}/questions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingQuestion {
    /// The ask's id.
    pub id: String,
    /// What is asked.
    pub request: AskRequest,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
}

/// The body of `GET /api/sessions/{session}/questions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingList {
    /// Pending questions, oldest first.
    pub pending: Vec<PendingQuestion>,
}

/// The body of a successful answer or cancel: `{"status": "answered"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusBody {
    /// `"answered"`, `"cancelled"` or `"ok"`.
    pub status: String,
}

/// The body of `POST /api/page-opener`: whether the caller should open the
/// page in a browser (`open`: no page is connected and none was opened for
/// this host run; `true` once per run) and how many pages are connected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageOpener {
    /// Open the page now.
    pub open: bool,
    /// Event streams (pages) connected to the host.
    pub pages: usize,
}

/// The body of `POST /api/sessions/{session}/messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// What the person wrote.
    pub text: String,
}

/// Every error body of the host: `{"error": {"name", "code", "message"}}`.
///
/// `code` is a core [`crate::ErrorCode`] or one of the transport's own
/// refusals (`UNAUTHORIZED`, `FORBIDDEN`, `PAYLOAD_TOO_LARGE`,
/// `TOO_MANY_PENDING`, …), so it is kept as a string here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: WireError,
}

/// The error inside an [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    /// Always `"UserInteractionError"`.
    pub name: String,
    /// Machine code.
    pub code: String,
    /// Human message.
    pub message: String,
}

impl WireError {
    /// A transport error with a code of its own.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            name: crate::error::ERROR_NAME.to_owned(),
            code: code.into(),
            message: message.into(),
        }
    }

    /// The core error this is, when its code is one of core's.
    pub fn to_core(&self) -> Option<UserInteractionError> {
        let code = crate::ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == self.code)?;
        Some(UserInteractionError::new(code, self.message.clone()))
    }
}

impl From<UserInteractionError> for WireError {
    fn from(error: UserInteractionError) -> Self {
        Self::new(error.code.as_str(), error.message)
    }
}

/// Whether a refused answer or cancel POST means the question is not pending
/// any more (someone else resolved it): the host's `NOT_PENDING` code, or a
/// bare 409 without an error body. A 409 with another code is some other
/// refusal and is shown as one.
pub fn is_not_pending(status: Option<u16>, code: Option<&str>) -> bool {
    match code {
        Some(code) => code == crate::ErrorCode::NotPending.as_str(),
        None => status == Some(409),
    }
}
