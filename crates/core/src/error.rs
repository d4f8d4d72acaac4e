//! The error vocabulary of ask-user: every failure an agent or a page sees
//! carries one of these machine-routable codes (the host adds transport codes
//! of its own in its error type).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The most characters of a value from outside (a field name, a label, an
/// id) an error message quotes: a message stays small whatever it was sent.
pub const MAX_QUOTED_CHARS: usize = 80;

/// At most `max` characters of `text`, then `…` when some were left out.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `text` as an error message quotes a value from outside: in double quotes
/// with escapes (`{:?}`), at most [`MAX_QUOTED_CHARS`] characters of it.
pub fn quoted(text: &str) -> String {
    format!("{:?}", shorten(text, MAX_QUOTED_CHARS))
}

/// `message` (serde's words about a value from outside) with every span in
/// backticks or double quotes cut to [`MAX_QUOTED_CHARS`] characters:
/// serde quotes an unknown field, variant or string whole.
pub fn shorten_quotes_in(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(1024));
    let mut rest = message;
    while let Some(open) = rest.find(['`', '"']) {
        let delimiter = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        // A `"`-quoted span is Rust's `{:?}`: `\"` does not close it.
        let close = if delimiter == '"' {
            let mut escaped = false;
            rest.char_indices()
                .find(|&(_, c)| {
                    let closes = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })
                .map(|(at, _)| at)
        } else {
            rest.find('`')
        };
        let Some(close) = close else {
            out.push_str(&shorten(rest, MAX_QUOTED_CHARS));
            return out;
        };
        out.push_str(&shorten(&rest[..close], MAX_QUOTED_CHARS));
        out.push(delimiter);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The machine-routable part of a [`UserInteractionError`].
///
/// A caller routes on the code, never on the message: `AskCancelled` (the person
/// closed the question) is distinct from every other failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The request held no question.
    EmptyQuestions,
    /// A question's presentation `intent` is malformed or does not fit the question.
    BadIntent,
    /// Any other request rule was broken.
    BadRequest,
    /// An answer batch does not fit its request.
    BadAnswer,
    /// No user-interaction provider is registered.
    NoProvider,
    /// A second provider was registered while one is active.
    DuplicateProvider,
    /// The asking side gave up, or the provider was disposed.
    AskAborted,
    /// The person closed the question.
    AskCancelled,
    /// Nobody answered in time.
    AskTimeout,
    /// The provider could not present the question.
    AskFailed,
    /// The question is no longer pending (answered, cancelled, aborted or unknown).
    NotPending,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::EmptyQuestions,
        ErrorCode::BadIntent,
        ErrorCode::BadRequest,
        ErrorCode::BadAnswer,
        ErrorCode::NoProvider,
        ErrorCode::DuplicateProvider,
        ErrorCode::AskAborted,
        ErrorCode::AskCancelled,
        ErrorCode::AskTimeout,
        ErrorCode::AskFailed,
        ErrorCode::NotPending,
    ];

    /// The code as it appears on the wire, e.g. `"ASK_CANCELLED"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::EmptyQuestions => "EMPTY_QUESTIONS",
            ErrorCode::BadIntent => "BAD_INTENT",
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::BadAnswer => "BAD_ANSWER",
            ErrorCode::NoProvider => "NO_PROVIDER",
            ErrorCode::DuplicateProvider => "DUPLICATE_PROVIDER",
            ErrorCode::AskAborted => "ASK_ABORTED",
            ErrorCode::AskCancelled => "ASK_CANCELLED",
            ErrorCode::AskTimeout => "ASK_TIMEOUT",
            ErrorCode::AskFailed => "ASK_FAILED",
            ErrorCode::NotPending => "NOT_PENDING",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An ask-user failure: a machine code and a human message.
///
/// Serialised as `{"name": "UserInteractionError", "code": "...", "message": "..."}`.
/// Two errors are equal when their code and message are: the
/// [cause](Self::cause) a provider attached is not part of the value.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message} ({code})")]
pub struct UserInteractionError {
    /// What went wrong, for programs.
    pub code: ErrorCode,
    /// What went wrong, for people; names the offending field or item.
    pub message: String,
    cause: Option<Cause>,
}

impl PartialEq for UserInteractionError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message
    }
}

impl Eq for UserInteractionError {}

/// A provider's own account of a failure, in its own type: core has no code
/// for a transport's limits or storage, so a host's refusal crosses the seam
/// as `ASK_FAILED` carrying its typed reason, read back by type, never by
/// message.
#[derive(Clone)]
struct Cause(std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cause(..)")
    }
}

/// The `name` every serialised [`UserInteractionError`] carries.
pub const ERROR_NAME: &str = "UserInteractionError";

impl UserInteractionError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            cause: None,
        }
    }

    /// This error carrying `cause`, a value of the caller's own type that
    /// [`cause`](Self::cause) gives back (and nothing serialises).
    #[must_use]
    pub fn with_cause<T: std::any::Any + Send + Sync>(mut self, cause: T) -> Self {
        self.cause = Some(Cause(std::sync::Arc::new(cause)));
        self
    }

    /// The cause attached by [`with_cause`](Self::with_cause), when it is a `T`.
    pub fn cause<T: std::any::Any>(&self) -> Option<&T> {
        self.cause.as_ref()?.0.downcast_ref()
    }

    /// `EMPTY_QUESTIONS` with the standard message.
    pub fn empty_questions() -> Self {
        Self::new(
            ErrorCode::EmptyQuestions,
            "ask_user_question requires at least one question",
        )
    }

    /// `BAD_REQUEST` naming what was wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    /// `BAD_INTENT` naming what was wrong.
    pub fn bad_intent(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadIntent, message)
    }

    /// `BAD_ANSWER` naming what was wrong.
    pub fn bad_answer(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadAnswer, message)
    }

    /// `NO_PROVIDER` with the standard message.
    pub fn no_provider() -> Self {
        Self::new(
            ErrorCode::NoProvider,
            "no user-interaction provider is registered",
        )
    }

    /// `DUPLICATE_PROVIDER` with the standard message.
    pub fn duplicate_provider() -> Self {
        Self::new(
            ErrorCode::DuplicateProvider,
            "a user-interaction provider is already registered",
        )
    }

    /// `ASK_ABORTED` with the standard message.
    pub fn aborted() -> Self {
        Self::new(
            ErrorCode::AskAborted,
            "ask_user_question was aborted before the user answered",
        )
    }

    /// `ASK_ABORTED` because the provider went away while the question was open.
    pub fn provider_disposed() -> Self {
        Self::new(
            ErrorCode::AskAborted,
            "ask_user_question was aborted because the provider was disposed",
        )
    }

    /// `ASK_CANCELLED` with the standard message.
    pub fn cancelled() -> Self {
        Self::new(
            ErrorCode::AskCancelled,
            "the user cancelled ask_user_question",
        )
    }

    /// `ASK_TIMEOUT` with the standard message.
    pub fn timeout() -> Self {
        Self::new(
            ErrorCode::AskTimeout,
            "ask_user_question timed out before the user answered",
        )
    }

    /// `ASK_FAILED` naming why the provider could not present the question.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::AskFailed, message)
    }

    /// `NOT_PENDING` naming why.
    pub fn not_pending(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotPending, message)
    }

    /// True when the person closed the question (as opposed to any other failure).
    pub fn is_cancelled(&self) -> bool {
        self.code == ErrorCode::AskCancelled
    }
}

#[derive(Serialize)]
struct ErrorWire<'a> {
    name: &'a str,
    code: ErrorCode,
    message: &'a str,
}

impl Serialize for UserInteractionError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ErrorWire {
            name: ERROR_NAME,
            code: self.code,
            message: &self.message,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for UserInteractionError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Owned {
            name: String,
            code: ErrorCode,
            message: String,
        }
        let wire = Owned::deserialize(deserializer)?;
        if wire.name != ERROR_NAME {
            return Err(serde::de::Error::custom(format_args!(
                "expected name {ERROR_NAME:?}, got {:?}",
                wire.name
            )));
        }
        Ok(Self::new(wire.code, wire.message))
    }
}
