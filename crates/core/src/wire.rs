//! The frames the host and the browser exchange on a session's event stream
//! (Server-Sent Events), and the small bodies of its HTTP API. Event names and
//! JSON field names are exact.

use crate::answer::AnswerBatch;
use crate::error::UserInteractionError;
use crate::limits::{MAX_ASKER_NAME, MAX_ASKER_VERSION, MAX_FIRST_QUESTION_CHARS};
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
/// SSE event name of the inbox stream (`GET /api/events`): the list of
/// sessions changed; the data is the whole [`SessionList`].
pub const INBOX_CHANGED: &str = "inbox/changed";

/// The HTTP header an agent names itself with on `POST …/ask`:
/// `name/version` or just `name` (see [`AskedBy::from_agent_header`]).
pub const AGENT_HEADER: &str = "x-ask-user-agent";
/// The name `ask-user ask` sends in [`AGENT_HEADER`]; a header with this name
/// makes the asker [`AskerKind::Cli`].
pub const CLI_ASKER_NAME: &str = "ask-user ask";

/// How long a host keeps a question whose caller went away, unless told
/// otherwise (`--detach-grace`); a client may ask again within it.
pub const DEFAULT_DETACH_GRACE_SECS: u64 = 600;

/// How the host learnt who asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AskerKind {
    /// An MCP client, named by its `initialize` clientInfo.
    Mcp,
    /// `ask-user ask`.
    Cli,
    /// A plain HTTP client, named by its [`AGENT_HEADER`].
    Http,
    /// The host's own demo agent (`ask-user --demo`).
    Demo,
}

/// Who asked a question, as the host learnt it. Display text only: the
/// constructors remove control characters, trim, and cap the name at
/// [`MAX_ASKER_NAME`] and the version at [`MAX_ASKER_VERSION`] characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskedBy {
    /// How the host learnt it.
    pub kind: AskerKind,
    /// The asker's name, e.g. `"claude-code"`.
    pub name: String,
    /// Its version, when it said one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl AskedBy {
    /// A cleaned asker; `None` when the name is empty once cleaned. An empty
    /// version is dropped.
    ///
    /// ```
    /// use ask_user_core::wire::{AskedBy, AskerKind};
    /// let asker = AskedBy::new(AskerKind::Mcp, " claude\u{7}-code ", Some("1.0\n")).unwrap();
    /// assert_eq!((asker.name.as_str(), asker.version.as_deref()), ("claude-code", Some("1.0")));
    /// assert_eq!(AskedBy::new(AskerKind::Mcp, " \t", None), None);
    /// ```
    pub fn new(kind: AskerKind, name: &str, version: Option<&str>) -> Option<Self> {
        let name = clean(name, MAX_ASKER_NAME);
        if name.is_empty() {
            return None;
        }
        let version = version
            .map(|v| clean(v, MAX_ASKER_VERSION))
            .filter(|v| !v.is_empty());
        Some(Self {
            kind,
            name,
            version,
        })
    }

    /// Reads an [`AGENT_HEADER`] value, `name/version` (split at the first
    /// `/`) or just `name`; `None` when it names nobody.
    ///
    /// ```
    /// use ask_user_core::wire::{AskedBy, AskerKind};
    /// let asker = AskedBy::from_agent_header(AskerKind::Http, "my-bot/2.1").unwrap();
    /// assert_eq!((asker.name.as_str(), asker.version.as_deref()), ("my-bot", Some("2.1")));
    /// let asker = AskedBy::from_agent_header(AskerKind::Http, "my-bot").unwrap();
    /// assert_eq!((asker.name.as_str(), asker.version), ("my-bot", None));
    /// ```
    pub fn from_agent_header(kind: AskerKind, value: &str) -> Option<Self> {
        match value.split_once('/') {
            Some((name, version)) => Self::new(kind, name, Some(version)),
            None => Self::new(kind, value, None),
        }
    }

    /// The asker of a `POST …/ask` with this [`AGENT_HEADER`] value:
    /// [`AskerKind::Cli`] when it is [`CLI_ASKER_NAME`]'s, else
    /// [`AskerKind::Http`].
    ///
    /// ```
    /// use ask_user_core::wire::{AskedBy, AskerKind};
    /// let cli = AskedBy::from_http_header("ask-user ask/0.1.0").unwrap();
    /// assert_eq!((cli.kind, cli.name.as_str()), (AskerKind::Cli, "ask-user ask"));
    /// assert_eq!(AskedBy::from_http_header("curl/8").unwrap().kind, AskerKind::Http);
    /// ```
    pub fn from_http_header(value: &str) -> Option<Self> {
        let mut asker = Self::from_agent_header(AskerKind::Http, value)?;
        if asker.name == CLI_ASKER_NAME {
            asker.kind = AskerKind::Cli;
        }
        Some(asker)
    }
}

/// `text` without control characters, trimmed, at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    let kept: String = text.chars().filter(|c| !c.is_control()).collect();
    let trimmed = kept.trim();
    match trimmed.char_indices().nth(max) {
        Some((end, _)) => trimmed[..end].trim_end().to_owned(),
        None => trimmed.to_owned(),
    }
}

/// `text` cut to at most `max` characters (for previews such as
/// [`SessionEntry::first_question`]).
pub fn preview(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

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
    /// Who asked, when the host knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<AskedBy>,
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
    /// Every outcome.
    pub const ALL: [Outcome; 5] = [
        Outcome::Answered,
        Outcome::Cancelled,
        Outcome::Aborted,
        Outcome::Timeout,
        Outcome::Disposed,
    ];

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

    /// The outcome `word` names on the wire ([`Outcome::as_str`]'s inverse).
    pub fn from_wire(word: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|outcome| outcome.as_str() == word)
    }
}

/// `question/resolved`: a question stopped waiting; every tab drops it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionResolved {
    /// The ask's id.
    pub id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What the transcript keeps of it. The host always sends it; optional
    /// only so frames of older hosts still parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<TranscriptRecord>,
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

impl Role {
    /// Every role.
    pub const ALL: [Role; 2] = [Role::User, Role::Agent];

    /// The role as it appears on the wire, e.g. `"agent"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Agent => "agent",
        }
    }

    /// The role `word` names on the wire ([`Role::as_str`]'s inverse).
    pub fn from_wire(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == word)
    }
}

/// Whether `byte` may appear in an id the host and pages exchange (session
/// ids, question ids, page ids): `A-Z a-z 0-9 _ -`.
pub const fn is_id_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Whether `id` is 1 to `max_len` bytes, each an [`is_id_byte`].
pub fn is_id(id: &str, max_len: usize) -> bool {
    (1..=max_len).contains(&id.len()) && id.bytes().all(is_id_byte)
}

/// Unix milliseconds now (not on wasm32, which has no clock without the browser).
#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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
    /// When the host took it (Unix milliseconds); 0 in frames of older hosts.
    #[serde(default)]
    pub at_ms: u64,
    /// Who wrote it, for the person's messages: the host's page or a paired
    /// device (absent for an agent's messages and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<AnsweredBy>,
}

/// What the transcript keeps of a resolved question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptRecord {
    /// The question's id.
    pub id: String,
    /// What was asked.
    pub request: AskRequest,
    /// Who asked, when the host knew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<AskedBy>,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
    /// When it stopped waiting (Unix milliseconds).
    pub resolved_at_ms: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The normalised answer (with its `note`); present exactly when
    /// `outcome` is [`Outcome::Answered`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerBatch>,
    /// Who answered or cancelled (absent for other outcomes, and in records
    /// kept before hosts said so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<AnsweredBy>,
}

/// Who gave an answer or a cancel: the host's own page, a paired device, or
/// a person with their own credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnsweredBy {
    /// `page`, `device` or `person`.
    pub kind: AnswererKind,
    /// The device, when `kind` is `device`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceRef>,
    /// The person's name, on a host with people: who answered (with their
    /// own credential, or on a device paired under them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

impl AnsweredBy {
    /// The host's own page (loopback, the token's cookie).
    pub fn page() -> Self {
        Self {
            kind: AnswererKind::Page,
            device: None,
            person: None,
        }
    }

    /// A paired device.
    pub fn device(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind: AnswererKind::Device,
            device: Some(DeviceRef {
                id: id.into(),
                name: name.into(),
            }),
            person: None,
        }
    }

    /// A person, with their own credential.
    pub fn person(name: impl Into<String>) -> Self {
        Self {
            kind: AnswererKind::Person,
            device: None,
            person: Some(name.into()),
        }
    }

    /// The same, naming the person it was on behalf of.
    pub fn for_person(self, name: Option<String>) -> Self {
        Self {
            person: name,
            ..self
        }
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswererKind {
    /// The host's own page.
    Page,
    /// A paired device.
    Device,
    /// A person's own credential (`ask-user people add`), no device.
    Person,
}

/// A paired device, as a record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRef {
    /// The device's id.
    pub id: String,
    /// The name it gave itself.
    pub name: String,
}

/// One entry of a session's transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TranscriptEntry {
    /// `{"kind": "message", "id", "role", "text", "at_ms"}`
    Message(MessageCreated),
    /// `{"kind": "record", "id", "request", …}`
    Record(TranscriptRecord),
}

impl TranscriptEntry {
    /// When it happened (a message's `at_ms`, a record's `resolved_at_ms`).
    pub fn at_ms(&self) -> u64 {
        match self {
            TranscriptEntry::Message(message) => message.at_ms,
            TranscriptEntry::Record(record) => record.resolved_at_ms,
        }
    }
}

/// The body of `GET /api/sessions/{session}/transcript`: the most recent
/// entries (at most [`crate::limits::MAX_TRANSCRIPT_ENTRIES`]), oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Transcript {
    /// Messages and records in time order.
    pub entries: Vec<TranscriptEntry>,
    /// The demo agent (`ask-user serve --demo`) listens in this session: a
    /// message starts its questions (the empty page says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub demo_agent: bool,
}

/// One session of `GET /api/sessions` and of `inbox/changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEntry {
    /// The session id.
    pub id: String,
    /// How many questions wait in it.
    pub pending: u32,
    /// When something last happened in it (Unix milliseconds).
    pub last_activity_ms: u64,
    /// The most recent asker in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<AskedBy>,
    /// The oldest pending question's text, at most
    /// [`MAX_FIRST_QUESTION_CHARS`] characters (see [`preview`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_question: Option<String>,
    /// The newest pending batch's first question, cut like `first_question`:
    /// what a notification of an arrival names (`None` from an older host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_question: Option<String>,
}

impl SessionEntry {
    /// The order of `GET /api/sessions`: sessions with pending questions
    /// first, then the most recently active, then by id.
    pub fn urgency_order(&self, other: &Self) -> std::cmp::Ordering {
        (other.pending > 0)
            .cmp(&(self.pending > 0))
            .then(other.last_activity_ms.cmp(&self.last_activity_ms))
            .then_with(|| self.id.cmp(&other.id))
    }

    /// Cuts a question's text to what `first_question` holds.
    pub fn first_question_of(text: &str) -> String {
        preview(text, MAX_FIRST_QUESTION_CHARS)
    }
}

/// The body of `GET /api/sessions` and the data of `inbox/changed`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionList {
    /// Most urgent first (see [`SessionEntry::urgency_order`]).
    pub sessions: Vec<SessionEntry>,
}

/// The SSE side of an event enum whose every variant holds one payload:
/// `name`, `data`, `parse` and `from_deserializer`, from one table of variants
/// and their event names, so that every stream reads and writes its frames
/// the same way.
macro_rules! sse_event {
    ($event:ident { $($variant:ident => $name:ident),+ $(,)? }) => {
        impl $event {
            /// The SSE event name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $name,)+
                }
            }

            /// The SSE data: the payload as compact JSON.
            pub fn data(&self) -> String {
                let json = match self {
                    $(Self::$variant(payload) => serde_json::to_string(payload),)+
                };
                json.expect("wire payloads always serialise")
            }

            /// Reads an event from its SSE name and data; `None` for an
            /// unknown name (so newer hosts can add events) or data that does
            /// not parse.
            pub fn parse(name: &str, data: &str) -> Option<Self> {
                let mut json = serde_json::Deserializer::from_str(data);
                let event = Self::from_deserializer(name, &mut json)?;
                json.end().ok()?;
                Some(event)
            }

            /// [`Self::parse`] from any serde deserializer of the data, e.g.
            /// serde-wasm-bindgen's over the browser's `JSON.parse`, which
            /// keeps serde_json out of the page's wasm.
            pub fn from_deserializer<'de, D: serde::Deserializer<'de>>(
                name: &str,
                data: D,
            ) -> Option<Self> {
                match name {
                    $($name => Deserialize::deserialize(data).ok().map(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

/// One event of the inbox stream (`GET /api/events`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxEvent {
    /// `inbox/changed`
    Changed(SessionList),
}

sse_event!(InboxEvent {
    Changed => INBOX_CHANGED,
});

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

sse_event!(SessionEvent {
    QuestionRequested => QUESTION_REQUESTED,
    QuestionResolved => QUESTION_RESOLVED,
    SessionSynced => SESSION_SYNCED,
    MessageCreated => MESSAGE_CREATED,
    QuestionDetached => QUESTION_DETACHED,
    QuestionAttached => QUESTION_ATTACHED,
});

/// One entry of `GET /api/sessions/{session}/questions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingQuestion {
    /// The ask's id.
    pub id: String,
    /// What is asked.
    pub request: AskRequest,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
    /// Who asked, when the host knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<AskedBy>,
}

/// The body of `GET /api/sessions/{session}/questions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingList {
    /// Pending questions, oldest first.
    pub pending: Vec<PendingQuestion>,
}

/// [`PendingQuestion`] by reference, serialised exactly the same: a host
/// writes the list from shared requests without copying them.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PendingQuestionRef<'a> {
    /// The ask's id.
    pub id: &'a str,
    /// What is asked.
    pub request: &'a AskRequest,
    /// When the host registered it (Unix milliseconds).
    pub created_at_ms: u64,
    /// Who asked, when the host knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<&'a AskedBy>,
}

/// [`PendingList`] by reference, serialised exactly the same.
#[derive(Debug, Clone, Serialize)]
pub struct PendingListRef<'a> {
    /// Pending questions, oldest first.
    pub pending: Vec<PendingQuestionRef<'a>>,
}

/// The body of a successful answer or cancel: `{"status": "answered"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusBody {
    /// `"answered"`, `"cancelled"` or `"ok"`.
    pub status: String,
}

/// The body of `POST /api/page-opener`: whether a page may be opened in a
/// browser now (`open`: no page is connected), how many pages are connected,
/// and which host run this is. Asking changes nothing on the host: opening
/// once per run is the opener's to keep (`ask-user mcp` marks the run in its
/// data directory), so no caller can use the answer up for another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageOpener {
    /// No page is connected: one may be opened.
    pub open: bool,
    /// Event streams (pages) connected to the host.
    pub pages: usize,
    /// This host run's id (random, new at every start); empty from hosts
    /// older than it.
    #[serde(default)]
    pub run: String,
}

/// The body of `POST /api/sessions/{session}/messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// What the person wrote.
    pub text: String,
}

impl PostMessage {
    /// A transcript message is not blank and holds at most
    /// [`crate::limits::MAX_CUSTOM_CHARS`] characters (as a free-text answer).
    pub fn validate(&self) -> Result<(), UserInteractionError> {
        use crate::limits::MAX_CUSTOM_CHARS;
        if self.text.trim().is_empty() {
            return Err(UserInteractionError::bad_request("text: must not be empty"));
        }
        // At most MAX_CUSTOM_CHARS bytes means at most that many chars: skip the count.
        if self.text.len() > MAX_CUSTOM_CHARS {
            let chars = self.text.chars().count();
            if chars > MAX_CUSTOM_CHARS {
                return Err(UserInteractionError::bad_request(format!(
                    "text: at most {MAX_CUSTOM_CHARS} characters, got {chars}"
                )));
            }
        }
        Ok(())
    }
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
