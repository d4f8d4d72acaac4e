//! A question's JSON, written once: what a stream sends and the record keeps,
//! without serialising the request again. Both the pending table and the
//! store use it, so it imports neither.

use ask_user_core::AskRequest;
use ask_user_core::wire::{AskedBy, QuestionRequested};
use bytes::Bytes;

/// `question` exactly as `serde_json` writes core's `QuestionRequested`,
/// written around `request_json`, its request's canonical JSON: what a stream
/// sends and the record keeps, without serialising the request again.
pub fn question_json(question: &QuestionRequested, request_json: &[u8]) -> String {
    let json = std::str::from_utf8(request_json).expect("serde_json writes UTF-8");
    let id = serde_json::to_string(&question.id).expect("strings serialise");
    let session = serde_json::to_string(&question.session).expect("strings serialise");
    let tail = question_tail(question.created_at_ms, question.asked_by.as_ref());
    format!(r#"{{"id":{id},"session":{session},"request":{json}{tail}"#)
}

/// A request's canonical JSON (`serde_json::to_vec`), in an allocation of
/// its own size: a pending question keeps it for as long as it waits.
pub fn request_json(request: &AskRequest) -> Bytes {
    let mut json = serde_json::to_vec(request).expect("requests always serialise");
    json.shrink_to_fit();
    Bytes::from(json)
}

/// What `serde_json` writes after a question's request in core's
/// `QuestionRequested` and `PendingQuestion`: the time, the asker if known,
/// and the closing brace.
pub fn question_tail(created_at_ms: u64, asked_by: Option<&AskedBy>) -> String {
    match asked_by {
        Some(asked_by) => {
            let asked_by = serde_json::to_string(asked_by).expect("askers always serialise");
            format!(r#","created_at_ms":{created_at_ms},"asked_by":{asked_by}}}"#)
        }
        None => format!(r#","created_at_ms":{created_at_ms}}}"#),
    }
}
