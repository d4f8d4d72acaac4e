//! The host's one error type and its JSON response.

use crate::server::pending::PendingLimit;
use crate::server::store::StoreError;
use ask_user_core::wire::{ErrorBody, WireError};
use ask_user_core::{ErrorCode, UserInteractionError};
use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Every way a request to the host can fail.
///
/// Its response is always `{"error": {"name": "UserInteractionError", "code", "message"}}`
/// with the status of [`ApiError::status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// A core error (validation, cancel, timeout, abort, not pending, …).
    Interaction(UserInteractionError),
    /// `TOO_MANY_PENDING` (429): one more question would break a limit:
    /// `--max-pending`, the per-session limit or `--max-pending-bytes`.
    TooManyPending {
        /// Which limit, and its value.
        limit: PendingLimit,
    },
    /// `TOO_MANY_STREAMS` (429): `--max-streams` event streams are open.
    TooManyStreams {
        /// The configured limit.
        limit: usize,
    },
    /// `TOO_MANY_SESSIONS` (429): `--max-mcp-sessions` MCP sessions are
    /// already open, so a new `initialize` is refused.
    TooManySessions {
        /// The configured limit.
        limit: usize,
    },
    /// `TOO_MANY_STREAMS` (429): as many inbox streams (`GET /api/events`)
    /// as the host allows are already open.
    TooManyInboxStreams {
        /// The limit.
        limit: usize,
    },
    /// `UNAUTHORIZED` (401): the token is missing or wrong.
    Unauthorized,
    /// `TOO_MANY_AUTH_FAILURES` (429, with `Retry-After`): this address
    /// presented too many wrong tokens lately.
    AuthThrottled {
        /// Seconds until a token from this address is looked at again.
        retry_after_secs: u64,
    },
    /// `FORBIDDEN` (403): the `Host` or `Origin` is not allowed; says which.
    Forbidden(String),
    /// 403 with a code of its own (issue 24): `AGENT_CANNOT_ANSWER` (an
    /// agent token answers, cancels or writes), `NOT_IN_AUDIENCE` (a person
    /// outside the question's audience).
    NotAllowed {
        /// The machine code.
        code: &'static str,
        /// Why.
        message: String,
    },
    /// `CONFLICT` (409): a person or an agent token of that name exists.
    Conflict(String),
    /// `PAIRING_CODE_GONE` (410): a pairing code used, expired or never issued.
    Gone(String),
    /// `PAYLOAD_TOO_LARGE` (413): the body is over the limit.
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// `NOT_FOUND` (404): no such route.
    NotFound(String),
    /// `METHOD_NOT_ALLOWED` (405): the route exists, the method does not.
    MethodNotAllowed,
    /// The ask, answer or message was not kept, so it was not acknowledged:
    /// `STORE_UNAVAILABLE` (503) when the store cannot write, `STORE_FULL`
    /// (507) at `--max-store-bytes` with nothing left to prune,
    /// `TOO_MANY_WRITES` (429) past the session's `--max-session-write-bytes`.
    Store(crate::server::store::StoreError),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Interaction(error) => status_of(error.code),
            ApiError::TooManyPending { .. }
            | ApiError::TooManyStreams { .. }
            | ApiError::TooManySessions { .. }
            | ApiError::TooManyInboxStreams { .. }
            | ApiError::AuthThrottled { .. }
            | ApiError::Store(StoreError::TooFast(_)) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Store(StoreError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Store(StoreError::Full(_)) => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) | ApiError::NotAllowed { .. } => StatusCode::FORBIDDEN,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// The machine code: a core [`ErrorCode`] or the transport's own.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Interaction(error) => error.code.as_str(),
            ApiError::TooManyPending { .. } => "TOO_MANY_PENDING",
            ApiError::TooManyStreams { .. } => "TOO_MANY_STREAMS",
            ApiError::TooManySessions { .. } => "TOO_MANY_SESSIONS",
            ApiError::TooManyInboxStreams { .. } => "TOO_MANY_STREAMS",
            ApiError::Unauthorized => "UNAUTHORIZED",
            ApiError::AuthThrottled { .. } => "TOO_MANY_AUTH_FAILURES",
            ApiError::Forbidden(_) => "FORBIDDEN",
            ApiError::NotAllowed { code, .. } => code,
            ApiError::Conflict(_) => "CONFLICT",
            ApiError::Gone(_) => "PAIRING_CODE_GONE",
            ApiError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::Store(StoreError::Unavailable(_)) => "STORE_UNAVAILABLE",
            ApiError::Store(StoreError::Full(_)) => "STORE_FULL",
            ApiError::Store(StoreError::TooFast(_)) => "TOO_MANY_WRITES",
        }
    }

    /// The human message.
    pub fn message(&self) -> String {
        match self {
            ApiError::Interaction(error) => error.message.clone(),
            ApiError::TooManyPending {
                limit: PendingLimit::Total(limit),
            } => format!(
                "too many pending questions: at most {limit} may wait at once in all sessions \
                 (--max-pending); answer or cancel some first"
            ),
            ApiError::TooManyPending {
                limit: PendingLimit::PerSession(limit),
            } => format!(
                "too many pending questions in this session: at most {limit} may wait in one \
                 session (what the page holds); answer or cancel some first"
            ),
            ApiError::TooManyPending {
                limit: PendingLimit::Bytes(limit),
            } => format!(
                "pending questions hold too many bytes: at most {limit} bytes of requests may \
                 wait at once in all sessions (--max-pending-bytes); answer or cancel some first"
            ),
            ApiError::TooManyStreams { limit } => format!(
                "too many event streams: at most {limit} may be open at once (--max-streams); \
                 close a tab or wait for one to close"
            ),
            ApiError::TooManySessions { limit } => format!(
                "too many MCP sessions: at most {limit} may be open at once; close one \
                 (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to expire"
            ),
            ApiError::TooManyInboxStreams { limit } => format!(
                "too many inbox streams: at most {limit} may be open at once; \
                 close another tab's page or use GET /api/sessions"
            ),
            ApiError::Unauthorized => {
                "missing or wrong token: send `Authorization: Bearer <token>` \
                 or open the URL the host printed"
                    .to_owned()
            }
            ApiError::AuthThrottled { retry_after_secs } => format!(
                "too many wrong tokens from this address: wait {retry_after_secs} s (Retry-After), \
                 then send the token `ask-user serve` printed"
            ),
            ApiError::Forbidden(why) | ApiError::Gone(why) | ApiError::Conflict(why) => why.clone(),
            ApiError::NotAllowed { message, .. } => message.clone(),
            ApiError::PayloadTooLarge { limit } => {
                format!("request body is larger than {limit} bytes")
            }
            ApiError::NotFound(path) => format!("no such route: {path}"),
            ApiError::MethodNotAllowed => "method not allowed on this route".to_owned(),
            ApiError::Store(StoreError::Unavailable(why)) => format!(
                "the host could not record this, so it did not happen: {why}; see GET /api/health"
            ),
            ApiError::Store(StoreError::Full(why)) => {
                format!("the host's record is full, so this did not happen: {why}")
            }
            ApiError::Store(StoreError::TooFast(why)) => format!(
                "this session writes too fast, so this did not happen: {why}; wait a minute"
            ),
        }
    }

    /// The core error, when this is one (e.g. for MCP's `Error: ...` line).
    pub fn as_interaction(&self) -> Option<&UserInteractionError> {
        match self {
            ApiError::Interaction(error) => Some(error),
            _ => None,
        }
    }

    /// The wire form of this error.
    pub fn to_wire(&self) -> WireError {
        WireError::new(self.code(), self.message())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for ApiError {}

impl From<UserInteractionError> for ApiError {
    fn from(error: UserInteractionError) -> Self {
        ApiError::Interaction(error)
    }
}

/// The status each core code maps to.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::EmptyQuestions | ErrorCode::BadIntent | ErrorCode::BadRequest => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::BadAnswer => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::AskCancelled | ErrorCode::NotPending => StatusCode::CONFLICT,
        ErrorCode::AskTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorCode::AskAborted | ErrorCode::NoProvider => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::DuplicateProvider | ErrorCode::AskFailed => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.to_wire(),
        };
        let mut response = (self.status(), Json(body)).into_response();
        if let ApiError::AuthThrottled { retry_after_secs } = self {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response
    }
}
