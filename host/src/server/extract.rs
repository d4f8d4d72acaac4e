//! Extractors whose refusals are the host's JSON errors.

use crate::server::error::ApiError;
use ask_user_core::limits::MAX_ID_CHARS;
use ask_user_core::{SessionId, UserInteractionError};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;

/// The largest request body the host reads (256 KiB).
pub const BODY_LIMIT: usize = 256 * 1024;

async fn path_param<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    name: &str,
) -> Result<String, ApiError> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|e| UserInteractionError::bad_request(format!("path: {}", e.body_text())))?;
    params
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
        .ok_or_else(|| UserInteractionError::bad_request(format!("path: no `{name}`")).into())
}

/// The `{session}` path segment as core's [`SessionId`] (400 with core's
/// message otherwise).
#[derive(Debug, Clone)]
pub struct Session(pub SessionId);

impl<S: Send + Sync> FromRequestParts<S> for Session {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let session = path_param(parts, state, "session").await?;
        Ok(Self(SessionId::parse(&session)?))
    }
}

/// Whether `id` can name a pending question: `[A-Za-z0-9_-]{1,MAX_ID_CHARS}`
/// (core's id limit). The host mints `q_` and 32 hex digits.
pub fn valid_question_id(id: &str) -> bool {
    ask_user_core::wire::is_id(id, MAX_ID_CHARS)
}

/// The `{id}` path segment of a question, checked against
/// `[A-Za-z0-9_-]{1,64}` before it is used (400 otherwise, echoing at most 80
/// characters of it).
#[derive(Debug, Clone)]
pub struct QuestionId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for QuestionId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let id = path_param(parts, state, "id").await?;
        if !valid_question_id(&id) {
            return Err(UserInteractionError::bad_request(format!(
                "question: {} ({} characters) is not a question id; ids are 1 to {MAX_ID_CHARS} of A-Z a-z 0-9 _ -, as in question/requested",
                ask_user_core::error::quoted(&id),
                id.chars().count()
            ))
            .into());
        }
        Ok(Self(id))
    }
}

/// The request body as UTF-8 text, at most [`BODY_LIMIT`] bytes (413 beyond).
#[derive(Debug, Clone)]
pub struct BodyText(pub String);

impl<S: Send + Sync> FromRequest<S> for BodyText {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge { limit: BODY_LIMIT }
                } else {
                    UserInteractionError::bad_request(format!("body: {}", rejection.body_text()))
                        .into()
                }
            })?;
        // Without a copy: the body's buffer becomes the string.
        String::from_utf8(Vec::from(bytes))
            .map(Self)
            .map_err(|_| UserInteractionError::bad_request("body: not UTF-8 text").into())
    }
}
