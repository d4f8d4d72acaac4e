//! The JSON routes under `/api`: the agent's ask, the browser's answer and
//! cancel, the pending list, transcript messages and health.

use crate::server::credential::Credential;
use crate::server::error::ApiError;
use crate::server::extract::{BodyText, QuestionId, Session};
use crate::server::pending::{SharedEvent, question_tail};
use crate::server::people::Viewer;
use crate::server::state::{AppState, AskOptions};
use crate::server::store::{HistoryPage, HistoryQuery, StoreError};
use ask_user_core::wire::AnsweredBy;
use ask_user_core::wire::{
    AGENT_HEADER, AskedBy, MessageCreated, Outcome, PostMessage, Role, SessionEvent, StatusBody,
};
use ask_user_core::{AnswerBatch, AskRequest, SessionId, UserInteractionError};
use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, stream};
use serde::Deserialize;
use std::convert::Infallible;
use std::time::Duration;

/// The longest `?timeout_ms=` (one week), so a deadline never overflows.
pub const MAX_TIMEOUT_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The routes that need the token.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/sessions/{session}/ask", post(ask))
        .route("/api/sessions/{session}/questions", get(list))
        .route("/api/page-opener", post(page_opener))
        .route(
            "/api/sessions/{session}/questions/{id}/answer",
            post(answer),
        )
        .route(
            "/api/sessions/{session}/questions/{id}/cancel",
            post(cancel),
        )
        .route("/api/sessions/{session}/messages", post(message))
        .route("/api/history", get(history))
}

/// `GET /api/history?session=&before=&since=&limit=&cursor=` → a page of
/// at most `limit` resolved questions, newest first (question, outcome,
/// answer, times), with `next_cursor` to pass as `cursor` for the next page
/// while there is one. `limit` defaults to 50 and is at most 500.
async fn history(
    State(state): State<AppState>,
    credential: Option<Extension<Credential>>,
    query: Result<Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<HistoryPage>, ApiError> {
    let Query(query) = query
        .map_err(|e| UserInteractionError::bad_request(format!("query: {}", e.body_text())))?;
    if let Some(session) = &query.session {
        SessionId::parse(session)?;
    }
    // SQLite's integers are i64: a larger instant would wrap to a negative one.
    for (name, ms) in [("since", query.since), ("before", query.before)] {
        if ms.is_some_and(|ms| i64::try_from(ms).is_err()) {
            return Err(UserInteractionError::bad_request(format!(
                "query: {name} is at most {} (Unix ms)",
                i64::MAX
            ))
            .into());
        }
    }
    let record = state.record().clone();
    // Reads run on the blocking pool, never on the runtime's threads.
    let mut page = tokio::task::spawn_blocking(move || record.history(&query))
        .await
        .map_err(|e| ApiError::Store(StoreError::Unavailable(e.to_string())))?
        .map_err(ApiError::Store)?;
    // A person reads the records of the questions they could see (escalated
    // ones if resolved after their escalation); a page may then hold fewer
    // than `limit`, its cursor still right.
    if let Viewer::Person(person) = Viewer::of(&state, credential.as_ref().map(|c| &c.0)) {
        page.records.retain(|r| {
            crate::server::people::record_admits(&r.question, r.resolved_at_ms, &person)
        });
    }
    Ok(Json(page))
}

/// The body of `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Health {
    /// `"ok"`, or `"degraded"` while the store cannot write.
    pub status: String,
    /// Why the store cannot write (only when degraded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

/// `GET /api/health` → `{"status": "ok"}`, or `{"status": "degraded",
/// "store": "<reason>"}` while the store cannot write. No token needed; the
/// reason names the database file, so it is given only with the token (a
/// path tells who runs the host and where they keep their data).
pub async fn health(
    State(state): State<AppState>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Json<Health> {
    let store = state.record().trouble().map(|why| {
        if crate::server::security::presents_credentials(&state, &method, &uri, &headers) {
            why
        } else {
            NO_TOKEN_TROUBLE.to_owned()
        }
    });
    Json(Health {
        status: if store.is_some() { "degraded" } else { "ok" }.to_owned(),
        store,
    })
}

/// What health says of a store that cannot write to a caller without the token.
pub const NO_TOKEN_TROUBLE: &str =
    "the store cannot write; GET /api/health with the token says why";

/// `POST /api/page-opener` → `{"open": bool, "pages": n, "run": id}`:
/// `open` while no page is connected (see [`AppState::page_opener`]).
async fn page_opener(State(state): State<AppState>) -> Json<ask_user_core::wire::PageOpener> {
    Json(state.page_opener())
}

/// The query of `POST /api/sessions/{session}/ask`.
#[derive(Debug, Deserialize)]
pub struct AskQuery {
    /// Give up with `ASK_TIMEOUT` after this many milliseconds.
    pub timeout_ms: Option<u64>,
}

/// `POST /api/sessions/{session}/ask`: validate, register (or attach to the
/// detached question this request asked before), wait for the answer.
async fn ask(
    State(state): State<AppState>,
    Session(session): Session,
    query: Result<Query<AskQuery>, QueryRejection>,
    headers: HeaderMap,
    BodyText(body): BodyText,
) -> Result<Json<AnswerBatch>, ApiError> {
    let Query(query) = query
        .map_err(|e| UserInteractionError::bad_request(format!("query: {}", e.body_text())))?;
    let timeout = match query.timeout_ms {
        Some(ms) if ms == 0 || ms > MAX_TIMEOUT_MS => {
            return Err(UserInteractionError::bad_request(format!(
                "timeout_ms: must be between 1 and {MAX_TIMEOUT_MS}, got {ms}"
            ))
            .into());
        }
        ms => ms.map(Duration::from_millis),
    };
    let request = AskRequest::from_json(&body)?;
    // Display text only: read as UTF-8 (lossily); a header naming nobody is no asker.
    let asked_by = headers
        .get(AGENT_HEADER)
        .and_then(|value| AskedBy::from_http_header(&String::from_utf8_lossy(value.as_bytes())));
    // The text is not kept beside the parsed request while the ask waits.
    drop(body);
    let options = AskOptions {
        timeout,
        asked_by,
        ..AskOptions::default()
    };
    // If the agent hangs up, axum drops this future and the provider's guard
    // detaches the question; posting the same request again attaches to it.
    state.ask(&session, request, options).await.map(Json)
}

/// `GET /api/sessions/{session}/questions` → `{"pending": [...]}`, oldest first.
///
/// The table's lock is held only to take the shared entries; the body is then
/// written from each request's JSON, kept since it was asked, so a list
/// serialises no request and holds no copy of the table: it hands the shared
/// bytes to the socket a chunk at a time as the reader takes them.
async fn list(
    State(state): State<AppState>,
    Session(session): Session,
    credential: Option<Extension<Credential>>,
) -> Response {
    let mut events = state.pending().pending_events(session.as_str());
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    if !viewer.sees_all() {
        events.retain(|event| viewer.sees(event));
    }
    (
        [(CONTENT_TYPE, "application/json")],
        Body::from_stream(pending_json_chunks(events)),
    )
        .into_response()
}

/// `{"pending": [...]}` exactly as `serde_json` writes core's `PendingList`
/// (field order and all), in chunks: per question its id, the shared request
/// JSON, then its time and asker; only the small parts are serialised here.
fn pending_json_chunks(
    events: Vec<SharedEvent>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let questions = events
        .into_iter()
        .filter_map(|event| {
            let SessionEvent::QuestionRequested(q) = &*event else {
                return None;
            };
            let id = serde_json::to_string(&q.id).expect("strings serialise");
            let head = format!(r#"{{"id":{id},"request":"#);
            let tail = question_tail(q.created_at_ms, q.asked_by.as_ref());
            Some((head, event.request_json()?, tail))
        })
        .enumerate()
        .flat_map(|(n, (head, request, tail))| {
            let head = if n == 0 { head } else { format!(",{head}") };
            [Bytes::from(head), request, Bytes::from(tail)]
        });
    let chunks = std::iter::once(Bytes::from_static(br#"{"pending":["#))
        .chain(questions)
        .chain(std::iter::once(Bytes::from_static(b"]}")));
    stream::iter(chunks.map(Ok))
}

/// `POST /api/sessions/{session}/questions/{id}/answer`: the first valid answer wins.
async fn answer(
    State(state): State<AppState>,
    Session(session): Session,
    QuestionId(id): QuestionId,
    credential: Option<Extension<Credential>>,
    BodyText(body): BodyText,
) -> Result<Json<StatusBody>, ApiError> {
    let batch = AnswerBatch::from_json(&body)?;
    let device = device_of(&credential);
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    viewer.may_answer(&state, session.as_str(), &id)?;
    state
        .answer_by(&session, &id, batch, answered_by(credential, &viewer))
        .await?;
    crate::server::devices::note_answered(state.record(), device);
    Ok(Json(StatusBody {
        status: Outcome::Answered.as_str().to_owned(),
    }))
}

/// `POST /api/sessions/{session}/questions/{id}/cancel`: the person closed it.
async fn cancel(
    State(state): State<AppState>,
    Session(session): Session,
    QuestionId(id): QuestionId,
    credential: Option<Extension<Credential>>,
) -> Result<Json<StatusBody>, ApiError> {
    let device = device_of(&credential);
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    viewer.may_answer(&state, session.as_str(), &id)?;
    state
        .cancel_by(&session, &id, answered_by(credential, &viewer))
        .await?;
    crate::server::devices::note_answered(state.record(), device);
    Ok(Json(StatusBody {
        status: Outcome::Cancelled.as_str().to_owned(),
    }))
}

/// The paired device a request came from, if it came from one.
fn device_of(
    credential: &Option<Extension<Credential>>,
) -> Option<std::sync::Arc<crate::server::credential::Device>> {
    match credential {
        Some(Extension(Credential::Device(device))) => Some(device.clone()),
        _ => None,
    }
}

/// Who answers: the page with the master credential (or the token), a
/// paired device, or a person's own credential; naming the person on a host
/// with people.
fn answered_by(credential: Option<Extension<Credential>>, viewer: &Viewer) -> Option<AnsweredBy> {
    let by = match credential {
        Some(Extension(Credential::Device(device))) => {
            AnsweredBy::device(&device.record.id, &device.record.name)
        }
        Some(Extension(Credential::Person(person))) => {
            return Some(AnsweredBy::person(&person.record.name));
        }
        _ => AnsweredBy::page(),
    };
    Some(by.for_person(viewer.person_name()))
}

/// `POST /api/sessions/{session}/messages` `{"text"}`: a transcript message
/// from the person, broadcast as `message/created`.
async fn message(
    State(state): State<AppState>,
    Session(session): Session,
    credential: Option<Extension<Credential>>,
    BodyText(body): BodyText,
) -> Result<Json<MessageCreated>, ApiError> {
    let post: PostMessage = serde_json::from_str(&body)
        .map_err(|e| UserInteractionError::bad_request(format!("message: {e}")))?;
    post.validate()?;
    let device = device_of(&credential);
    let viewer = Viewer::of(&state, credential.as_ref().map(|c| &c.0));
    let message = state
        .post_message_by(
            &session,
            Role::User,
            post.text,
            answered_by(credential, &viewer),
        )
        .await?;
    crate::server::devices::note_answered(state.record(), device);
    Ok(Json(message))
}

/// Any other `/api` path: 404 as JSON.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(ask_user_core::error::shorten(uri.path(), 200))
}

/// A known `/api` path with the wrong method: 405 as JSON.
pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_core::wire::{AskerKind, PendingListRef, PendingQuestionRef, QuestionRequested};
    use futures_util::StreamExt;

    /// Every optional field, non-ASCII text and characters JSON must escape.
    fn requested(n: u64, asked_by: Option<AskedBy>) -> SharedEvent {
        let request = AskRequest::from_value(serde_json::json!({"questions": [
            {"id": "plan", "question": "Ship \"v2\"\\now?\n\tÜber 🚀 \u{7}", "header": "Plan ✓",
             "detail": "<b>&</b> \u{2028} \r\n", "multi_select": false,
             "options": [{"label": "Yes (Recommended)", "description": "ja – 是"}, {"label": "No"}],
             "intent": {"kind": "plan-review", "approve": "Yes (Recommended)"}},
            {"id": "free", "question": "Anything else?"}
        ]}))
        .unwrap();
        let request_json = serde_json::to_vec(&request).unwrap().into();
        let question = QuestionRequested {
            id: format!("q_{n:032x}"),
            session: "s".to_owned(),
            request,
            created_at_ms: 1_700_000_000_000 + n,
            asked_by,
        };
        if n.is_multiple_of(2) {
            SharedEvent::requested(question, request_json)
        } else {
            // Not kept by a table: its JSON is made when listed.
            SharedEvent::from(SessionEvent::QuestionRequested(question))
        }
    }

    async fn listed(events: Vec<SharedEvent>) -> String {
        let chunks: Vec<Bytes> = pending_json_chunks(events)
            .map(|chunk| chunk.unwrap())
            .collect()
            .await;
        String::from_utf8(chunks.concat()).unwrap()
    }

    fn serialised(events: &[SharedEvent]) -> String {
        let pending = events
            .iter()
            .map(|event| {
                let SessionEvent::QuestionRequested(q) = &**event else {
                    unreachable!()
                };
                PendingQuestionRef {
                    id: &q.id,
                    request: &q.request,
                    created_at_ms: q.created_at_ms,
                    asked_by: q.asked_by.as_ref(),
                }
            })
            .collect();
        serde_json::to_string(&PendingListRef { pending }).unwrap()
    }

    #[tokio::test]
    async fn the_streamed_list_is_byte_for_byte_cores_pending_list_serialised() {
        let asker = AskedBy {
            kind: AskerKind::Http,
            name: "agent \"ü\"".to_owned(),
            version: Some("1.0\n".to_owned()),
        };
        let nameless = AskedBy {
            kind: AskerKind::Cli,
            name: "cli".to_owned(),
            version: None,
        };
        for events in [
            vec![],
            vec![requested(0, Some(asker.clone()))],
            vec![
                requested(1, None),
                requested(2, Some(asker)),
                requested(3, Some(nameless)),
            ],
        ] {
            let body = listed(events.clone()).await;
            assert_eq!(body, serialised(&events));
            // And it reads back as core's owned type.
            let list: ask_user_core::wire::PendingList = serde_json::from_str(&body).unwrap();
            assert_eq!(list.pending.len(), events.len());
        }
    }
}
