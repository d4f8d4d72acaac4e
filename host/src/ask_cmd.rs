//! `ask-user ask`: sends a request to a running host and prints the answer,
//! for shell scripts and agents without MCP.
//!
//! Exit codes: 0 answered (the batch on stdout), 2 bad input (core's message
//! on stderr; also the host's 400/422), 3 `ASK_CANCELLED`, 4 `ASK_TIMEOUT`,
//! 1 anything else. Every failure prints one `Error: <message> (<CODE>)` line
//! to stderr.

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

/// The host `ask-user ask` talks to when given none.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7411";

/// `ask-user ask`.
#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    /// The host (the URL `ask-user serve` printed also works: its token is used).
    #[arg(long, env = "ASK_USER_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// The host's token.
    #[arg(long, env = "ASK_USER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
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
    match &outcome {
        AskOutcome::Answered(batch) => {
            println!(
                "{}",
                serde_json::to_string(batch).expect("answer batches always serialise")
            );
        }
        AskOutcome::BadInput(line)
        | AskOutcome::Cancelled(line)
        | AskOutcome::TimedOut(line)
        | AskOutcome::Failed(line) => eprintln!("{line}"),
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
    send(endpoint, token, &request).await
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

/// The ask endpoint and the token: `--token`, else a `?token=` on `--url`.
fn endpoint(args: &AskArgs, session: &SessionId) -> Result<(Url, Option<String>), AskOutcome> {
    let mut url = Url::parse(&args.url)
        .map_err(|e| bad_input(format!("--url: {:?} is not a URL: {e}", args.url)))?;
    if url.scheme() != "http" {
        return Err(bad_input(format!(
            "--url: the host speaks plain http on loopback, not {:?}",
            url.scheme()
        )));
    }
    let url_token = url
        .query_pairs()
        .find(|(key, _)| key == "token")
        .map(|(_, value)| value.into_owned());
    let token = args.token.clone().or(url_token);
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| bad_input(format!("--url: {:?} cannot take a path", args.url)))?
        .pop_if_empty()
        .extend(["api", "sessions", session.as_str(), "ask"]);
    if let Some(ms) = args.timeout_ms {
        url.query_pairs_mut()
            .append_pair("timeout_ms", &ms.to_string());
    }
    Ok((url, token))
}

async fn send(endpoint: Url, token: Option<String>, request: &AskRequest) -> AskOutcome {
    let client = reqwest::Client::new();
    let mut call = client
        .post(endpoint.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_string(request).expect("requests always serialise"));
    if let Some(token) = token {
        call = call.bearer_auth(token);
    }
    let response = match call.send().await {
        Ok(response) => response,
        Err(e) => return failed(format!("cannot reach the host at {endpoint}: {e}")),
    };
    let status = response.status();
    let body = match response.text().await {
        Ok(body) => body,
        Err(e) => return failed(format!("the host's answer broke off: {e}")),
    };
    if status == StatusCode::OK {
        return match AnswerBatch::from_json(&body) {
            Ok(batch) => AskOutcome::Answered(batch),
            Err(error) => failed(format!(
                "the host answered something that is not a batch: {}",
                error.message
            )),
        };
    }
    from_error_response(status, &body)
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
    let line = format!("Error: {} ({})", error.message, error.code);
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
            session: "s-1".to_owned(),
            timeout_ms,
            file: None,
        }
    }

    #[test]
    fn the_endpoint_is_the_sessions_ask_route_with_the_timeout() {
        let (url, token) = endpoint(
            &args("http://127.0.0.1:7411/", Some("t"), Some(50)),
            &session(),
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:7411/api/sessions/s-1/ask?timeout_ms=50"
        );
        assert_eq!(token.as_deref(), Some("t"));
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
