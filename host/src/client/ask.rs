//! `ask-user ask`: sends a request to a running host and prints the answer,
//! for shell scripts and agents without MCP.
//!
//! When the connection drops before the answer (a proxy restart, a laptop
//! waking up), it posts the same request again, with backoff, for up to the
//! host's default detach grace: the host attaches the new post to the same
//! question (or hands back the answer given meanwhile), so it exits as if
//! nothing happened. A host it cannot reach at the first try is an error at
//! once. For a loopback host it ignores proxy variables (`http_proxy`,
//! `HTTP_PROXY`, `ALL_PROXY`, ...): the request never leaves the machine.
//!
//! Exit codes: 0 answered (the batch on stdout), 2 bad input (core's message
//! on stderr; also the host's 400/422), 3 `ASK_CANCELLED`, 4 `ASK_TIMEOUT`,
//! 1 anything else. Every failure prints one `Error: <message> (<CODE>)` line
//! to stderr. What it prints carries the agent's and the person's text, so
//! controls a terminal would act on are shown, not sent: as `⟨U+XXXX⟩` on
//! stderr, as JSON escapes in the answer (the same JSON value).

use super::{DEFAULT_URL, HostUrl, http_client};
use ask_user_core::display::{escape_json_for_terminal, neutralise_for_terminal};
use ask_user_core::tool::render_error;
use ask_user_core::wire::ErrorBody;
use ask_user_core::{
    AnswerBatch, AskRequest, DEFAULT_SESSION, ErrorCode, SessionId, UserInteractionError,
};
use clap::Args;
use reqwest::{StatusCode, Url};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::time::Instant;

/// How long `ask-user ask` keeps posting its request again after the
/// connection dropped: the host's default detach grace, after which the host
/// no longer keeps the question for it.
pub const REASK_WINDOW: Duration =
    Duration::from_secs(ask_user_core::wire::DEFAULT_DETACH_GRACE_SECS);

/// The first pause before posting again; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest pause between two posts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// `ask-user ask`.
#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    /// The host (the URL `ask-user serve` printed also works: its token is used).
    /// The token kept in the data directory is sent only to a loopback host
    /// (127.0.0.0/8, ::1, localhost); for any other host give its token
    /// (--token, ASK_USER_TOKEN or ?token= on the URL), or it is refused.
    #[arg(long, env = "ASK_USER_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// The host's token. Default: a `?token=` on --url, else the token file in
    /// the data directory (which `ask-user serve` keeps there).
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Where the host keeps its token file.
    #[command(flatten)]
    pub data_dir: crate::data_dir::DataDirArg,
    /// The session (conversation) to ask in.
    #[arg(long, default_value = DEFAULT_SESSION)]
    pub session: String,
    /// Give up with `ASK_TIMEOUT` (exit 4) after this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// The request (the tool's arguments) as a JSON file; `-` or nothing reads stdin.
    #[arg(value_name = "FILE|-")]
    pub file: Option<PathBuf>,
}

/// How `ask-user ask` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskOutcome {
    /// The person answered.
    Answered(AnswerBatch),
    /// The request, the arguments or the host's verdict on them were bad (exit 2).
    BadInput(String),
    /// The person cancelled (exit 3).
    Cancelled(String),
    /// Nobody answered in time (exit 4).
    TimedOut(String),
    /// Anything else (exit 1).
    Failed(String),
}

impl AskOutcome {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            AskOutcome::Answered(_) => 0,
            AskOutcome::Failed(_) => 1,
            AskOutcome::BadInput(_) => 2,
            AskOutcome::Cancelled(_) => 3,
            AskOutcome::TimedOut(_) => 4,
        }
    }

    fn from_core(error: &UserInteractionError) -> Self {
        let line = render_error(error);
        match error.code {
            ErrorCode::EmptyQuestions
            | ErrorCode::BadIntent
            | ErrorCode::BadRequest
            | ErrorCode::BadAnswer => AskOutcome::BadInput(line),
            ErrorCode::AskCancelled => AskOutcome::Cancelled(line),
            ErrorCode::AskTimeout => AskOutcome::TimedOut(line),
            _ => AskOutcome::Failed(line),
        }
    }
}

/// Runs `ask-user ask`: prints the batch (stdout) or the error line (stderr)
/// and returns the exit code.
pub async fn run(args: AskArgs) -> ExitCode {
    let outcome = ask(&args).await;
    // Labels and text come from the agent and the person: nothing printed
    // may drive the terminal (the JSON stays the same value).
    match &outcome {
        AskOutcome::Answered(batch) => {
            let json = serde_json::to_string(batch).expect("answer batches always serialise");
            println!("{}", escape_json_for_terminal(&json));
        }
        AskOutcome::BadInput(line)
        | AskOutcome::Cancelled(line)
        | AskOutcome::TimedOut(line)
        | AskOutcome::Failed(line) => eprintln!("{}", neutralise_for_terminal(line)),
    }
    ExitCode::from(outcome.exit_code())
}

fn bad_input(message: impl Into<String>) -> AskOutcome {
    AskOutcome::BadInput(render_error(&UserInteractionError::bad_request(message)))
}

fn failed(message: impl Into<String>) -> AskOutcome {
    AskOutcome::Failed(render_error(&UserInteractionError::failed(message)))
}

/// Reads and checks the request locally, then asks the host and waits.
pub async fn ask(args: &AskArgs) -> AskOutcome {
    let text = match read_input(args.file.as_deref()) {
        Ok(text) => text,
        Err(outcome) => return outcome,
    };
    // Checked here first, so bad input never reaches (or waits on) the host.
    let request = match AskRequest::from_json(&text) {
        Ok(request) => request,
        Err(error) => return AskOutcome::from_core(&error),
    };
    let session = match SessionId::parse(&args.session) {
        Ok(session) => session,
        // Core's message names `session:`; here it is the flag.
        Err(error) => return bad_input(format!("--{}", error.message)),
    };
    if args.timeout_ms == Some(0) {
        return bad_input("--timeout-ms: must be at least 1");
    }
    let (endpoint, token) = match endpoint(args, &session) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let timeout = args.timeout_ms.map(Duration::from_millis);
    send(endpoint, token, &request, timeout).await
}

fn read_input(file: Option<&std::path::Path>) -> Result<String, AskOutcome> {
    match file {
        Some(path) if path.as_os_str() != "-" => std::fs::read_to_string(path)
            .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display()))),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| bad_input(format!("cannot read the request from stdin: {e}")))?;
            Ok(text)
        }
    }
}

/// The ask endpoint and the token (see [`HostUrl::token`]).
fn endpoint(args: &AskArgs, session: &SessionId) -> Result<(Url, Option<String>), AskOutcome> {
    let host = HostUrl::parse(&args.url).map_err(bad_input)?;
    let token = host
        .token(
            args.token.as_deref(),
            &args.data_dir,
            "with --token or ASK_USER_TOKEN",
        )
        .map_err(|message| {
            if host.is_loopback() {
                failed(message)
            } else {
                bad_input(message)
            }
        })?;
    let mut url = host.base().clone();
    url.path_segments_mut()
        .map_err(|()| bad_input(format!("--url: {:?} cannot take a path", args.url)))?
        .pop_if_empty()
        .extend(["api", "sessions", session.as_str(), "ask"]);
    Ok((url, token))
}

/// The URL of one post: with what is left of `timeout` after `elapsed`, so a
/// post made again after a dropped connection keeps the original deadline.
fn post_url(endpoint: &Url, timeout: Option<Duration>, elapsed: Duration) -> Url {
    let mut url = endpoint.clone();
    if let Some(timeout) = timeout {
        let left = timeout
            .saturating_sub(elapsed)
            .max(Duration::from_millis(1));
        url.query_pairs_mut()
            .append_pair("timeout_ms", &left.as_millis().to_string());
    }
    url
}

/// Posts the request until the host answers: again, with backoff, when the
/// connection drops before the answer.
async fn send(
    endpoint: Url,
    token: Option<String>,
    request: &AskRequest,
    timeout: Option<Duration>,
) -> AskOutcome {
    let client = http_client(&endpoint);
    let body = serde_json::to_string(request).expect("requests always serialise");
    let started = Instant::now();
    let mut dropped_at: Option<Instant> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let url = post_url(&endpoint, timeout, started.elapsed());
        let error = match post(&client, url, token.as_deref(), body.clone()).await {
            Ok((status, body)) => return outcome(status, &body),
            Err(error) => error,
        };
        if dropped_at.is_none() && error.is_connect() {
            return failed(format!("cannot reach the host at {endpoint}: {error}"));
        }
        let since = *dropped_at.get_or_insert_with(Instant::now);
        if since.elapsed() >= REASK_WINDOW {
            return failed(format!(
                "the connection to the host at {endpoint} kept failing for {} s: {error}",
                REASK_WINDOW.as_secs()
            ));
        }
        tracing::debug!(error = %crate::logged::logged(&error), "the connection dropped before the answer; asking again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// What `ask-user ask` names itself with on the ask (`X-Ask-User-Agent`).
pub fn agent_header() -> String {
    format!(
        "{}/{}",
        ask_user_core::wire::CLI_ASKER_NAME,
        env!("CARGO_PKG_VERSION")
    )
}

/// One post: the status and body, or the transport's error.
async fn post(
    client: &reqwest::Client,
    url: Url,
    token: Option<&str>,
    body: String,
) -> Result<(StatusCode, String), reqwest::Error> {
    let mut call = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(ask_user_core::wire::AGENT_HEADER, agent_header())
        .body(body);
    if let Some(token) = token {
        call = call.bearer_auth(token);
    }
    let response = call.send().await?;
    let status = response.status();
    Ok((status, response.text().await?))
}

/// The outcome of the host's answer.
fn outcome(status: StatusCode, body: &str) -> AskOutcome {
    if status == StatusCode::OK {
        return match AnswerBatch::from_json(body) {
            Ok(batch) => AskOutcome::Answered(batch),
            Err(error) => failed(format!(
                "the host answered something that is not a batch: {}",
                error.message
            )),
        };
    }
    from_error_response(status, body)
}

/// The outcome of a non-200 answer from the host.
pub fn from_error_response(status: StatusCode, body: &str) -> AskOutcome {
    let Ok(ErrorBody { error }) = serde_json::from_str::<ErrorBody>(body) else {
        return failed(format!(
            "the host answered HTTP {status} without an error body"
        ));
    };
    if let Some(core) = error.to_core() {
        return AskOutcome::from_core(&core);
    }
    let line = ask_user_core::tool::error_line(&error.message, &error.code);
    match status {
        StatusCode::BAD_REQUEST
        | StatusCode::UNPROCESSABLE_ENTITY
        | StatusCode::PAYLOAD_TOO_LARGE => AskOutcome::BadInput(line),
        _ => AskOutcome::Failed(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionId {
        SessionId::parse("s-1").unwrap()
    }

    fn args(url: &str, token: Option<&str>, timeout_ms: Option<u64>) -> AskArgs {
        AskArgs {
            url: url.to_owned(),
            token: token.map(str::to_owned),
            data_dir: Default::default(),
            session: "s-1".to_owned(),
            timeout_ms,
            file: None,
        }
    }

    #[test]
    fn the_endpoint_is_the_sessions_ask_route_with_what_is_left_of_the_timeout() {
        let (url, token) = endpoint(
            &args("http://127.0.0.1:7411/", Some("t"), Some(50)),
            &session(),
        )
        .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:7411/api/sessions/s-1/ask");
        assert_eq!(token.as_deref(), Some("t"));
        let timeout = Some(Duration::from_millis(50));
        assert_eq!(
            post_url(&url, timeout, Duration::ZERO).as_str(),
            "http://127.0.0.1:7411/api/sessions/s-1/ask?timeout_ms=50"
        );
        assert_eq!(
            post_url(&url, timeout, Duration::from_millis(30)).as_str(),
            "http://127.0.0.1:7411/api/sessions/s-1/ask?timeout_ms=20"
        );
        assert_eq!(
            post_url(&url, timeout, Duration::from_secs(9)).as_str(),
            "http://127.0.0.1:7411/api/sessions/s-1/ask?timeout_ms=1",
            "the host times it out itself"
        );
        assert_eq!(post_url(&url, None, Duration::from_secs(9)), url);
    }

    #[test]
    fn the_printed_open_url_lends_its_token() {
        let (url, token) = endpoint(
            &args("http://127.0.0.1:9/?token=abc", None, None),
            &session(),
        )
        .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/api/sessions/s-1/ask");
        assert_eq!(token.as_deref(), Some("abc"));
        let (_, token) = endpoint(
            &args("http://127.0.0.1:9/?token=abc", Some("x"), None),
            &session(),
        )
        .unwrap();
        assert_eq!(token.as_deref(), Some("x"));
    }

    #[test]
    fn only_plain_http_urls_are_accepted() {
        assert_eq!(
            endpoint(&args("https://example.com", None, None), &session())
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            endpoint(&args("not a url", None, None), &session())
                .unwrap_err()
                .exit_code(),
            2
        );
    }

    #[test]
    fn host_errors_map_to_exit_codes() {
        let body = |code: &str| {
            format!(
                r#"{{"error":{{"name":"UserInteractionError","code":"{code}","message":"m"}}}}"#
            )
        };
        let cases = [
            (StatusCode::CONFLICT, "ASK_CANCELLED", 3),
            (StatusCode::REQUEST_TIMEOUT, "ASK_TIMEOUT", 4),
            (StatusCode::BAD_REQUEST, "BAD_REQUEST", 2),
            (StatusCode::BAD_REQUEST, "EMPTY_QUESTIONS", 2),
            (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", 2),
            (StatusCode::UNAUTHORIZED, "UNAUTHORIZED", 1),
            (StatusCode::SERVICE_UNAVAILABLE, "ASK_ABORTED", 1),
            (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_PENDING", 1),
        ];
        for (status, code, exit) in cases {
            let outcome = from_error_response(status, &body(code));
            assert_eq!(outcome.exit_code(), exit, "{code}");
            let (AskOutcome::BadInput(line)
            | AskOutcome::Cancelled(line)
            | AskOutcome::TimedOut(line)
            | AskOutcome::Failed(line)) = outcome
            else {
                panic!("{code} is not an answer");
            };
            assert_eq!(line, format!("Error: m ({code})"));
        }
        assert_eq!(
            from_error_response(StatusCode::BAD_GATEWAY, "<html>").exit_code(),
            1
        );
    }
}
