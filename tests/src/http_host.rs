//! The host in-process on a loopback port, and a small client for its HTTP
//! contract: JSON calls, the agent's blocking ask, and an SSE reader.

use crate::wait::within;
use ask_user_core::wire::SessionEvent;
use ask_user_host::{AppState, HostConfig, random_token, serve};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::task::JoinHandle;

/// A host served in-process on `127.0.0.1:<free port>`.
pub struct TestHost {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The host's state (shutdown handle, store, ask).
    pub state: AppState,
    /// A client with no default headers (add the token per call).
    pub client: reqwest::Client,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestHost {
    /// Starts a host with the default configuration.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a host after `configure` adjusted its configuration.
    pub async fn start_with(configure: impl FnOnce(&mut HostConfig)) -> Self {
        Self::start_recording(
            configure,
            std::sync::Arc::new(ask_user_host::server::store::EphemeralStore),
        )
        .await
    }

    /// [`TestHost::start_with`], keeping its record in `record`.
    pub async fn start_recording(
        configure: impl FnOnce(&mut HostConfig),
        record: std::sync::Arc<dyn ask_user_host::server::store::Store>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("bound address").port();
        let mut config = HostConfig::new(random_token(), port);
        configure(&mut config);
        let state = AppState::recording(config, record);
        let server = tokio::spawn(serve(listener, state.clone()));
        Self {
            base: format!("http://127.0.0.1:{port}"),
            state,
            client: reqwest::Client::new(),
            server: Some(server),
        }
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.state.config().token
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request with the Bearer token.
    pub fn authed(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(self.token())
    }

    /// `GET path` with the token → (status, JSON body).
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        send(self.authed(reqwest::Method::GET, path)).await
    }

    /// `POST path` with the token and a raw body → (status, JSON body).
    pub async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
        send(self.authed(reqwest::Method::POST, path).body(body)).await
    }

    /// Starts the agent's blocking ask in `session` (with an optional query) and
    /// returns the task that ends with its (status, JSON body).
    pub fn ask(
        &self,
        session: &str,
        query: &str,
        request: &Value,
    ) -> JoinHandle<(StatusCode, Value)> {
        let builder = self
            .authed(
                reqwest::Method::POST,
                &format!("/api/sessions/{session}/ask{query}"),
            )
            .body(request.to_string());
        tokio::spawn(send(builder))
    }

    /// Answers question `id` of `session` with `answer`.
    pub async fn answer(&self, session: &str, id: &str, answer: &Value) -> (StatusCode, Value) {
        self.post(
            &format!("/api/sessions/{session}/questions/{id}/answer"),
            answer.to_string(),
        )
        .await
    }

    /// Cancels question `id` of `session`.
    pub async fn cancel(&self, session: &str, id: &str) -> (StatusCode, Value) {
        self.post(
            &format!("/api/sessions/{session}/questions/{id}/cancel"),
            "",
        )
        .await
    }

    /// The ids pending in `session` per `GET .../questions`.
    pub async fn pending_ids(&self, session: &str) -> Vec<String> {
        let (status, body) = self
            .get(&format!("/api/sessions/{session}/questions"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["pending"]
            .as_array()
            .expect("pending is a list")
            .iter()
            .map(|q| q["id"].as_str().expect("id is a string").to_owned())
            .collect()
    }

    /// Opens `session`'s event stream.
    pub async fn events(&self, session: &str) -> EventStream {
        let response = within(
            "the event stream to open",
            self.authed(
                reqwest::Method::GET,
                &format!("/api/sessions/{session}/events"),
            )
            .send(),
        )
        .await
        .expect("event stream request");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "events are Server-Sent Events"
        );
        EventStream::new(response)
    }

    /// Shuts the host down through its handle and waits for `serve` to return.
    pub async fn shutdown(&mut self) {
        self.state.shutdown_handle().shutdown();
        if let Some(server) = self.server.take() {
            within("the server to stop", server)
                .await
                .expect("server task")
                .expect("serve returns Ok");
        }
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

/// Sends `builder` and reads the body as JSON (`Value::Null` when empty or not JSON).
pub async fn send(builder: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = builder.send().await.expect("request reaches the host");
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// One SSE frame: the event name and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// `event:` (empty when absent).
    pub event: String,
    /// `data:` lines joined with newlines.
    pub data: String,
}

impl Frame {
    /// The frame as a core [`SessionEvent`].
    pub fn session_event(&self) -> SessionEvent {
        SessionEvent::parse(&self.event, &self.data)
            .unwrap_or_else(|| panic!("not a session event: {self:?}"))
    }

    /// The data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// Reads Server-Sent Events frames from a response (comments are skipped).
pub struct EventStream {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl EventStream {
    /// Reads frames from `response`'s body.
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next frame, or `None` when the stream ended.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame {
                    event: String::new(),
                    data: String::new(),
                };
                let mut is_frame = false;
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        frame.event = name.trim_start().to_owned();
                        is_frame = true;
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if !frame.data.is_empty() {
                            frame.data.push('\n');
                        }
                        frame.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        is_frame = true;
                    }
                }
                if is_frame {
                    return Some(frame);
                }
                continue; // a keep-alive comment
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// The next frame, panicking if the stream ends or hangs.
    pub async fn next(&mut self) -> Frame {
        within("the next event", self.next_frame())
            .await
            .expect("the event stream ended early")
    }

    /// Reads the replay up to and including `session/synced`; returns the
    /// replayed `question/requested` ids and the synced `pending` ids.
    pub async fn replay(&mut self) -> (Vec<String>, Vec<String>) {
        let (replayed, pending) = self.replay_detached().await;
        (replayed.into_iter().map(|(id, _)| id).collect(), pending)
    }

    /// Reads the replay up to and including `session/synced`; returns each
    /// replayed question's id with whether a `question/detached` followed its
    /// `question/requested`, and the synced `pending` ids.
    pub async fn replay_detached(&mut self) -> (Vec<(String, bool)>, Vec<String>) {
        let mut replayed: Vec<(String, bool)> = Vec::new();
        loop {
            let frame = self.next().await;
            match frame.session_event() {
                SessionEvent::QuestionRequested(q) => replayed.push((q.id, false)),
                SessionEvent::QuestionDetached(d) => match replayed.last_mut() {
                    Some((id, detached)) if *id == d.id && !*detached => *detached = true,
                    _ => panic!(
                        "question/detached {} does not follow its question/requested",
                        d.id
                    ),
                },
                SessionEvent::SessionSynced(synced) => return (replayed, synced.pending),
                other => panic!("unexpected event during replay: {other:?}"),
            }
        }
    }

    /// Waits for the next `question/detached` and returns its id.
    pub async fn detached(&mut self) -> String {
        match self.next().await.session_event() {
            SessionEvent::QuestionDetached(d) => d.id,
            other => panic!("expected question/detached, got {other:?}"),
        }
    }

    /// Waits for the next `question/attached` and returns its id.
    pub async fn attached(&mut self) -> String {
        match self.next().await.session_event() {
            SessionEvent::QuestionAttached(a) => a.id,
            other => panic!("expected question/attached, got {other:?}"),
        }
    }

    /// Waits for the next `question/requested` and returns it.
    pub async fn requested(&mut self) -> ask_user_core::wire::QuestionRequested {
        match self.next().await.session_event() {
            SessionEvent::QuestionRequested(q) => q,
            other => panic!("expected question/requested, got {other:?}"),
        }
    }

    /// Waits for the next `question/resolved` and returns it.
    pub async fn resolved(&mut self) -> ask_user_core::wire::QuestionResolved {
        match self.next().await.session_event() {
            SessionEvent::QuestionResolved(r) => r,
            other => panic!("expected question/resolved, got {other:?}"),
        }
    }
    /// Waits for `id`'s `question/resolved`, letting one `question/detached`
    /// of it come first: a client that cancels may drop the call's stream a
    /// moment before its `notifications/cancelled` arrives, and the host
    /// detaches and then aborts (its hang-up linger).
    pub async fn resolved_maybe_after_detach(
        &mut self,
        id: &str,
    ) -> ask_user_core::wire::QuestionResolved {
        match self.next().await.session_event() {
            SessionEvent::QuestionDetached(detached) if detached.id == id => self.resolved().await,
            SessionEvent::QuestionResolved(resolved) => resolved,
            other => panic!("expected question/resolved, got {other:?}"),
        }
    }
}

/// Asserts an error response: its status, its machine code, and that its
/// message says `says` (the part a person reads to learn why).
#[track_caller]
pub fn assert_error(response: &(StatusCode, Value), status: StatusCode, code: &str, says: &str) {
    let (got, body) = response;
    assert_eq!(*got, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(says),
        "the message should say {says:?}: {body}"
    );
}
