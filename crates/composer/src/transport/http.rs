//! The host's HTTP API: answer, cancel and message POSTs with gloo-net, and the
//! session's event stream with `EventSource`.

use super::{EventSink, EventStream, LocalFuture, PostError, QuestionTransport, StreamStatus};
use ask_user_core::wire::{ErrorBody, PostMessage, SessionList, Transcript};
use ask_user_core::{AnswerBatch, SessionId};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What a query value may hold unencoded: RFC 3986's unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The host's HTTP API for one session.
///
/// Same origin: the HttpOnly session cookie authenticates everything. Cross
/// origin: pass a token; POSTs send `Authorization: Bearer`, and because
/// `EventSource` cannot send headers, the events URL carries `?token=`.
///
/// Session ids ([`SessionId`]) and the host's question ids are
/// `[A-Za-z0-9_-]`, so they go into paths as they are; only the token, which
/// the embedding page hands over as any text, is percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTransport {
    base_url: String,
    session: SessionId,
    token: Option<String>,
}

impl HttpTransport {
    /// The API at `base_url` (empty for same origin) for `session`.
    pub fn new(base_url: impl Into<String>, session: SessionId, token: Option<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            session,
            token: token.filter(|t| !t.is_empty()),
        }
    }

    /// `{base}/api/sessions/{session}`.
    pub fn session_url(&self) -> String {
        format!("{}/api/sessions/{}", self.base_url, self.session)
    }

    /// The event stream's URL (with `?token=` when a token is set).
    pub fn events_url(&self) -> String {
        match &self.token {
            Some(token) => format!(
                "{}/events?token={}",
                self.session_url(),
                utf8_percent_encode(token, QUERY_VALUE)
            ),
            None => format!("{}/events", self.session_url()),
        }
    }

    /// The URL of one question's action (`answer` or `cancel`); `id` is one the
    /// host minted (`[A-Za-z0-9_-]`, as in `question/requested`).
    pub fn question_url(&self, id: &str, action: &str) -> String {
        format!("{}/questions/{id}/{action}", self.session_url())
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
    match crate::json::from_str::<ErrorBody>(text) {
        Some(body) => PostError {
            status: Some(status),
            code: Some(body.error.code),
            message: body.error.message,
        },
        None => PostError {
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
        // Serialising plain strings cannot fail; if it ever did, the host's
        // refusal of an empty body would show, never a silent success.
        let body = crate::json::to_string(batch).unwrap_or_default();
        self.post(self.question_url(id, "answer"), Some(body))
    }

    fn post_cancel(&self, id: &str) -> LocalFuture<Result<(), PostError>> {
        self.post(self.question_url(id, "cancel"), None)
    }

    fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>> {
        let body = crate::json::to_string(&PostMessage {
            text: text.to_owned(),
        })
        .unwrap_or_default();
        self.post(format!("{}/messages", self.session_url()), Some(body))
    }

    fn open_events(&self, sink: EventSink) -> EventStream {
        open_event_source(&self.events_url(), sink)
    }

    fn load_transcript(&self) -> LocalFuture<Result<Transcript, PostError>> {
        self.get_json(
            format!("{}/transcript", self.session_url()),
            crate::json::transcript,
        )
    }
}

impl HttpTransport {
    /// `GET {base}/api/events`, the inbox stream (with `?token=` when set).
    pub fn inbox_events_url(&self) -> String {
        match &self.token {
            Some(token) => format!(
                "{}/api/events?token={}",
                self.base_url,
                utf8_percent_encode(token, QUERY_VALUE)
            ),
            None => format!("{}/api/events", self.base_url),
        }
    }

    /// A GET of JSON, with the Bearer token when set, read by `parse`.
    fn get_json<T: 'static>(
        &self,
        url: String,
        parse: fn(&str) -> Option<T>,
    ) -> LocalFuture<Result<T, PostError>> {
        let token = self.token.clone();
        Box::pin(async move {
            let mut request = gloo_net::http::Request::get(&url);
            if let Some(token) = &token {
                request = request.header("Authorization", &format!("Bearer {token}"));
            }
            let response = request
                .send()
                .await
                .map_err(|e| PostError::network(format!("the host could not be reached: {e}")))?;
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            if !response.ok() {
                return Err(error_from_body(status, &text));
            }
            parse(&text).ok_or_else(|| PostError {
                status: Some(status),
                code: None,
                message: format!("{url}: the host's answer did not parse"),
            })
        })
    }
}

impl crate::inbox::InboxTransport for HttpTransport {
    fn load_sessions(&self) -> LocalFuture<Result<SessionList, PostError>> {
        self.get_json(
            format!("{}/api/sessions", self.base_url),
            crate::json::from_str,
        )
    }

    fn open_inbox(&self, on_list: std::rc::Rc<dyn Fn(SessionList)>) -> EventStream {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        let Ok(source) = web_sys::EventSource::new(&self.inbox_events_url()) else {
            return EventStream::new(|| {});
        };
        let listener = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            let data = event
                .dyn_ref::<web_sys::MessageEvent>()
                .and_then(|m| m.data().as_string());
            if let Some(list) = data.and_then(|d| crate::json::from_str::<SessionList>(&d)) {
                on_list(list);
            }
        });
        let _ = source.add_event_listener_with_callback(
            ask_user_core::wire::INBOX_CHANGED,
            listener.as_ref().unchecked_ref(),
        );
        EventStream::new(move || {
            source.close();
            let _ = source.remove_event_listener_with_callback(
                ask_user_core::wire::INBOX_CHANGED,
                listener.as_ref().unchecked_ref(),
            );
            drop(listener);
        })
    }
}

fn open_event_source(url: &str, sink: EventSink) -> EventStream {
    use ask_user_core::wire::{
        MESSAGE_CREATED, QUESTION_ATTACHED, QUESTION_DETACHED, QUESTION_REQUESTED,
        QUESTION_RESOLVED, SESSION_SYNCED,
    };
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    // A URL the browser refuses (a malformed base URL) never connects: say so
    // for good instead of "connecting" forever.
    let Ok(source) = web_sys::EventSource::new(url) else {
        sink.status(StreamStatus::Failed);
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
            if let Some(frame) = crate::json::session_event(name, &data) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionId {
        SessionId::parse(id).unwrap()
    }

    #[test]
    fn urls_follow_the_host_contract() {
        let t = HttpTransport::new("http://127.0.0.1:7777/", session("team-a_1"), None);
        assert_eq!(
            t.events_url(),
            "http://127.0.0.1:7777/api/sessions/team-a_1/events"
        );
        assert_eq!(
            t.question_url("q_0f3a", "answer"),
            "http://127.0.0.1:7777/api/sessions/team-a_1/questions/q_0f3a/answer"
        );
        let same_origin = HttpTransport::new("", SessionId::default(), None);
        assert_eq!(
            same_origin.question_url("abc", "cancel"),
            "/api/sessions/default/questions/abc/cancel"
        );
    }

    #[test]
    fn a_token_rides_percent_encoded_on_the_events_url_because_event_source_sends_no_headers() {
        let t = HttpTransport::new(
            "https://h.example",
            SessionId::default(),
            Some("a+b/c&d=e Z-._~".into()),
        );
        assert_eq!(
            t.events_url(),
            "https://h.example/api/sessions/default/events?token=a%2Bb%2Fc%26d%3De%20Z-._~"
        );
        let empty = HttpTransport::new("", SessionId::default(), Some(String::new()));
        assert_eq!(empty.events_url(), "/api/sessions/default/events");
    }

    #[test]
    fn host_error_bodies_become_readable_errors_with_their_code() {
        let e = error_from_body(
            409,
            r#"{"error":{"name":"UserInteractionError","code":"NOT_PENDING","message":"question abc is not pending"}}"#,
        );
        assert_eq!(
            e.to_string(),
            "question abc is not pending (409 NOT_PENDING)"
        );
        let bad = error_from_body(
            422,
            r#"{"error":{"name":"UserInteractionError","code":"BAD_ANSWER","message":"answers: missing"}}"#,
        );
        assert_eq!(bad.code.as_deref(), Some("BAD_ANSWER"));
        let plain = error_from_body(502, "Bad Gateway");
        assert_eq!(plain.to_string(), "Bad Gateway (502)");
    }
}
