//! Secure defaults: `Host` and `Origin` checks (DNS rebinding, cross-site
//! requests), the token (Bearer header or HttpOnly cookie), the landing
//! step that trades `/?token=` for the cookie, the throttle of wrong tokens,
//! and the rule a given token must follow.
//!
//! With `--remote https://NAME[:PORT]` a request reaches the host either on
//! loopback ([`Reach::Local`]: everything as before) or through that origin
//! ([`Reach::Remote`]: the person's side only, never with the master token;
//! the agents' endpoints only with `--remote-agents`). A loopback peer (the
//! TLS front) may say who the client is with `X-Forwarded-For`; nobody else
//! may.

use crate::server::credential::Credential;
use crate::server::error::ApiError;
use crate::server::state::AppState;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;
use url::form_urlencoded;

pub use crate::server::guard::{
    ClientAddr, FAILURE_BURST, FAILURE_LOG_INTERVAL, FAILURES_PER_SECOND, Guard, MAX_TRACKED_PEERS,
    MIN_TOKEN_CHARS, Reach, RemoteOrigin, check_token, client_addr, cookie_name, host_allowed,
    host_name_allowed, origin_allowed, token_matches,
};

/// Refuses (403) a request whose `Host` is neither loopback (or allowed) nor
/// the `--remote` origin, whose `Origin` is not the one its `Host` names, or
/// that comes from another machine without naming the `--remote` origin.
/// Records the [`Reach`] and the [`ClientAddr`]. Runs before everything else.
pub async fn check_host_and_origin(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let config = state.config();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |info| info.0.ip());
    let client = client_addr(peer, request.headers());
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    let Some(host) = host else {
        return ApiError::Forbidden("the request has no Host header".to_owned()).into_response();
    };
    let remote = config.remote.as_ref();
    let reach = if remote.is_some_and(|r| r.admits_host(host)) {
        Reach::Remote
    } else if host_allowed(host, &config.allow_hosts) {
        if !client.is_loopback() {
            return ApiError::Forbidden(match remote {
                Some(remote) => format!(
                    "a request from another machine must come to {} (the --remote origin)",
                    remote.origin
                ),
                None => "a request from another machine needs `ask-user serve --remote \
                         https://NAME`"
                    .to_owned(),
            })
            .into_response();
        }
        Reach::Local
    } else {
        return ApiError::Forbidden(
            "the Host header names neither a loopback address, an --allow-host name nor the \
             --remote origin"
                .to_owned(),
        )
        .into_response();
    };
    if let Some(origin) = request.headers().get(ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| match (reach, remote) {
            (Reach::Remote, Some(remote)) => o.eq_ignore_ascii_case(&remote.origin),
            _ => origin_allowed(o, config.port, &config.allow_hosts),
        });
        if !ok {
            return ApiError::Forbidden(
                "cross-origin requests are refused: the Origin is not this host's own".to_owned(),
            )
            .into_response();
        }
    }
    request.extensions_mut().insert(reach);
    request.extensions_mut().insert(ClientAddr(client));
    next.run(request).await
}

/// Whether `path` is one of the agents' endpoints (`…/ask`, `/mcp`): on the
/// `--remote` origin only with `--remote-agents`.
pub fn is_agent_endpoint(path: &str) -> bool {
    path == crate::server::mcp::MCP_PATH
        || (path.starts_with("/api/sessions/") && path.ends_with("/ask"))
}

/// The reach [`check_host_and_origin`] recorded (local when it did not run:
/// a router driven in-process).
fn reach_of(request: &Request) -> Reach {
    request
        .extensions()
        .get::<Reach>()
        .copied()
        .unwrap_or(Reach::Local)
}

/// Why the remote origin refuses the master token.
pub const MASTER_TOKEN_REMOTE: &str = "the master token is refused on the --remote origin: \
    a device answers with its own credential (pair it with `ask-user pair` or the page's \
    \"Pair a device\")";

/// What a request presents as credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// The token (Bearer, or `?token=` on an event stream) or this run's cookie.
    Valid,
    /// Something that is not: a wrong Bearer token, cookie or `?token=`.
    Wrong,
    /// Nothing at all (not a guess, so never throttled).
    Nothing,
    /// The master token (or its cookie) where it is refused: on the
    /// `--remote` origin.
    Master,
}

/// What `headers` (and, for an event stream, the query) present, checked
/// against `state`'s token and cookie.
pub fn presented(
    state: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Presented {
    let config = state.config();
    let guard = state.guard();
    let mut wrong = false;
    for presented in headers
        .get_all(AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
    {
        if token_matches(&config.token, presented.trim()) {
            return Presented::Valid;
        }
        wrong = true;
    }
    let name = cookie_name(config.port);
    for (_, value) in headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(k, _)| *k == name)
    {
        if token_matches(guard.cookie_value(), value) {
            return Presented::Valid;
        }
        wrong = true;
    }
    if let Some(presented) = events_query_token(method, uri) {
        if token_matches(&config.token, &presented) {
            return Presented::Valid;
        }
        wrong = true;
    }
    if wrong {
        Presented::Wrong
    } else {
        Presented::Nothing
    }
}

/// Whether the request presents valid credentials (what the accept loop
/// asks to tell the page's and agents' connections from an attacker's): the
/// master token or the page's cookie, or a paired device's cookie (a
/// device's stream through the front is as much the person's as the page's,
/// and is not evicted at the cap to make room for a stranger).
pub fn presents_credentials(
    state: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> bool {
    presented(state, method, uri, headers) == Presented::Valid
        || crate::server::devices::presented_credential(headers)
            .is_some_and(|credential| state.devices().authenticate(&credential).is_some())
        || headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|presented| state.people().authenticate(presented.trim()).is_some())
}

/// The `?token=` of a `GET …/events` request, percent-decoded. `EventSource`
/// cannot send headers, so a page without the cookie (an embed given the
/// token) can only authenticate its event stream this way; nothing else
/// accepts a token in the URL.
pub fn events_query_token(method: &Method, uri: &axum::http::Uri) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct TokenQuery {
        token: Option<String>,
    }
    if method != Method::GET || !uri.path().ends_with("/events") {
        return None;
    }
    axum::extract::Query::<TokenQuery>::try_from_uri(uri)
        .ok()?
        .0
        .token
}

/// The client's address: the one [`check_host_and_origin`] trusted (the
/// forwarded one behind a loopback front), else the peer as the accept loop
/// recorded it (none in-process, e.g. a router driven without a socket:
/// those share one throttle).
fn peer_of(request: &Request) -> IpAddr {
    if let Some(ClientAddr(client)) = request.extensions().get::<ClientAddr>() {
        return *client;
    }
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip())
}

/// Checks a request's credentials, throttling wrong ones per peer (see
/// [`Guard`]).
fn authenticate(
    state: &AppState,
    peer: IpAddr,
    presented: impl FnOnce() -> Presented,
) -> Result<(), ApiError> {
    let guard = state.guard();
    let now = Instant::now();
    // A remote peer has an address of its own, so a throttled one is refused
    // before its guess is even looked at. Local processes all share the
    // loopback address: refusing the right token there would let any of them
    // lock the page and the agents out, so the token is still checked.
    if !peer.is_loopback()
        && let Some(wait) = guard.throttled(peer, now)
    {
        return Err(ApiError::AuthThrottled {
            retry_after_secs: wait,
        });
    }
    match presented() {
        Presented::Valid => Ok(()),
        Presented::Nothing => Err(ApiError::Unauthorized),
        Presented::Master => Err(ApiError::Forbidden(MASTER_TOKEN_REMOTE.to_owned())),
        Presented::Wrong => match guard.record_failure(peer, now) {
            Ok(()) => Err(ApiError::Unauthorized),
            Err(wait) => Err(ApiError::AuthThrottled {
                retry_after_secs: wait,
            }),
        },
    }
}

/// Refuses (401) an `/api` request without the token; 429
/// `TOO_MANY_AUTH_FAILURES` once its peer presented too many wrong ones. On
/// the `--remote` origin: a paired device's cookie, never the master token,
/// and the agents' endpoints only with `--remote-agents`. Records who the
/// request authenticated as ([`Credential`]); a device's response (its
/// streams) ends when the device is revoked.
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = peer_of(&request);
    if let Some(bearer) = people_bearer(&state, &request) {
        return with_bearer(state, peer, request, next, bearer).await;
    }
    if reach_of(&request) == Reach::Remote {
        let agents = is_agent_endpoint(request.uri().path());
        if agents && !state.config().remote_agents {
            return ApiError::Forbidden(
                "the agents' endpoints (…/ask, /mcp) answer on loopback only; start the host \
                 with --remote-agents to open them on the --remote origin (with the master token)"
                    .to_owned(),
            )
            .into_response();
        }
        if !agents {
            let device = crate::server::devices::presented_credential(request.headers())
                .map(|credential| state.devices().authenticate(&credential));
            let checked = authenticate(&state, peer, || match &device {
                Some(Some(_)) => Presented::Valid,
                // An unknown or revoked device credential is a wrong guess.
                Some(None) => Presented::Wrong,
                None => match presented(&state, request.method(), request.uri(), request.headers())
                {
                    // Checked like any credential (so guesses are throttled),
                    // then refused even when right.
                    Presented::Valid => Presented::Master,
                    other => other,
                },
            });
            if let Err(error) = checked {
                return error.into_response();
            }
            let Some(Some(device)) = device else {
                return ApiError::Unauthorized.into_response();
            };
            crate::server::devices::note_seen(state.record(), &device);
            request
                .extensions_mut()
                .insert(Credential::Device(device.clone()));
            let response = next.run(request).await;
            return device_response(response, state, device);
        }
    }
    let checked = authenticate(&state, peer, || {
        presented(&state, request.method(), request.uri(), request.headers())
    });
    match checked {
        Ok(()) => {
            request.extensions_mut().insert(Credential::Master);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}

/// The person's credential or agent token a request presents (a Bearer
/// header, or `?token=` on an event stream), if one is.
fn people_bearer(state: &AppState, request: &Request) -> Option<crate::server::people::Bearer> {
    let people = state.people();
    request
        .headers()
        .get_all(AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .find_map(|presented| people.authenticate(presented.trim()))
        .or_else(|| {
            events_query_token(request.method(), request.uri())
                .and_then(|presented| people.authenticate(&presented))
        })
}

/// Whether `path` answers, cancels or writes to a person (what an agent
/// token may never do).
fn is_answering_path(path: &str) -> bool {
    path.starts_with("/api/sessions/")
        && (path.ends_with("/answer") || path.ends_with("/cancel") || path.ends_with("/messages"))
}

/// A request with a person's credential or an agent token (issue 24): on
/// loopback and on the `--remote` origin (they are per person, revocable and
/// kept hashed, unlike the master token), the agents' endpoints there only
/// with `--remote-agents`; an agent token reaches the agents' endpoints
/// only. Its response ends when the person or the token is removed.
async fn with_bearer(
    state: AppState,
    peer: IpAddr,
    mut request: Request,
    next: Next,
    bearer: crate::server::people::Bearer,
) -> Response {
    use crate::server::people::{AGENT_CANNOT_ANSWER, AGENT_CANNOT_ANSWER_WHY, Bearer};
    // A throttled remote peer is refused before anything else, as always.
    if let Err(error) = authenticate(&state, peer, || Presented::Valid) {
        return error.into_response();
    }
    let path = request.uri().path();
    let agents = is_agent_endpoint(path);
    if agents && reach_of(&request) == Reach::Remote && !state.config().remote_agents {
        return ApiError::Forbidden(
            "the agents' endpoints (…/ask, /mcp) answer on loopback only; start the host \
             with --remote-agents to open them on the --remote origin"
                .to_owned(),
        )
        .into_response();
    }
    let removed = match &bearer {
        Bearer::Agent(_) if is_answering_path(path) => {
            return ApiError::NotAllowed {
                code: AGENT_CANNOT_ANSWER,
                message: AGENT_CANNOT_ANSWER_WHY.to_owned(),
            }
            .into_response();
        }
        Bearer::Agent(_) if !agents => {
            return ApiError::Forbidden(
                "an agent token may only ask (…/ask, /mcp): lists, streams, history, devices \
                 and people are the people's"
                    .to_owned(),
            )
            .into_response();
        }
        Bearer::Agent(agent) => {
            let removed = agent.removed.clone();
            request
                .extensions_mut()
                .insert(Credential::Agent(agent.clone()));
            removed
        }
        Bearer::Person(person) => {
            let removed = person.removed.clone();
            request
                .extensions_mut()
                .insert(Credential::Person(person.clone()));
            removed
        }
    };
    let response = next.run(request).await;
    response.map(|body| {
        use futures_util::StreamExt;
        axum::body::Body::from_stream(
            body.into_data_stream()
                .take_until(removed.cancelled_owned()),
        )
    })
}

/// A device's `response`: its body cut off when the device is revoked (its
/// event stream ends at once), and every chunk it sends (an event, the
/// stream's keep-alive) counts as seeing the device, so a phone with the
/// page open stays "last seen" now, not when its stream began.
fn device_response(
    response: Response,
    state: AppState,
    device: Arc<crate::server::credential::Device>,
) -> Response {
    use futures_util::StreamExt;
    let revoked = device.revoked.clone();
    response.map(|body| {
        axum::body::Body::from_stream(
            body.into_data_stream()
                .inspect(move |_| crate::server::devices::note_seen(state.record(), &device))
                .take_until(revoked.cancelled_owned()),
        )
    })
}

/// The landing step: `GET /?token=...` with the right token sets the HttpOnly
/// SameSite=Strict cookie (an HMAC of the token under this run's key, never
/// the token) and redirects to the same path on this host without the token,
/// so the token leaves the address bar; a wrong token is 401 (throttled like
/// any wrong token).
pub async fn token_landing(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let presented = (request.method() == Method::GET)
        .then(|| landing_token(request.uri()))
        .flatten();
    let Some(presented) = presented else {
        return next.run(request).await;
    };
    let config = state.config();
    if reach_of(&request) == Reach::Remote {
        return ApiError::Forbidden(MASTER_TOKEN_REMOTE.to_owned()).into_response();
    }
    let checked = authenticate(&state, peer_of(&request), || {
        if token_matches(&config.token, &presented) {
            Presented::Valid
        } else {
            Presented::Wrong
        }
    });
    if let Err(error) = checked {
        return error.into_response();
    }
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        cookie_name(config.port),
        state.guard().cookie_value()
    );
    let location = landing_location(request.uri());
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(cookie), Ok(location)) = (
        HeaderValue::from_str(&cookie),
        HeaderValue::from_str(&location),
    ) {
        headers.insert(SET_COOKIE, cookie);
        headers.insert(LOCATION, location);
    }
    response
}

/// The `token` parameter of a query, percent-decoded.
fn landing_token(uri: &axum::http::Uri) -> Option<String> {
    form_urlencoded::parse(uri.query()?.as_bytes())
        .find(|(key, _)| key == "token")
        .map(|(_, value)| value.into_owned())
}

/// Where `/?token=...` redirects: the same path and query less the token, so
/// the token leaves the address bar and `?session=` survives. Always a path
/// on this host: leading slashes (and backslashes, which browsers read as
/// slashes) collapse to one, so `//evil.example/` cannot become a
/// scheme-relative URL.
fn landing_location(uri: &axum::http::Uri) -> String {
    let path = format!("/{}", uri.path().trim_start_matches(['/', '\\']));
    let kept: Vec<(String, String)> =
        form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .filter(|(key, _)| key != "token")
            .map(|(key, value)| (key.into_owned(), value.into_owned()))
            .collect();
    if kept.is_empty() {
        return path;
    }
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(kept)
        .finish();
    format!("{path}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::guard::{X_FORWARDED_FOR, cookie_value, peer_key};
    use std::net::Ipv6Addr;
    use std::time::Duration;

    #[test]
    fn the_token_landing_keeps_every_other_query_parameter() {
        let at = |uri: &str| landing_location(&uri.parse().unwrap());
        assert_eq!(at("/?token=abc"), "/");
        assert_eq!(at("/?session=team-a&token=abc"), "/?session=team-a");
        assert_eq!(at("/?token=abc&session=b&x=1"), "/?session=b&x=1");
        assert_eq!(at("/embed/?tokenish=1&token=abc"), "/embed/?tokenish=1");
        assert_eq!(at("/?token=abc&note=a%20b%26c"), "/?note=a+b%26c");
    }

    #[test]
    fn the_token_landing_only_redirects_to_a_path_on_this_host() {
        let at = |uri: &str| landing_location(&uri.parse().unwrap());
        assert_eq!(at("//evil.example/?token=abc"), "/evil.example/");
        assert_eq!(at("///evil.example?token=abc&x=1"), "/evil.example?x=1");
        assert_eq!(at("/%2F%2Fevil.example?token=abc"), "/%2F%2Fevil.example");
    }

    #[test]
    fn a_given_token_needs_22_characters_of_the_url_safe_set() {
        assert!(check_token(&"a".repeat(22)).is_ok());
        assert!(check_token("0123456789abcdef0123456789abcdef").is_ok());
        let short = check_token("s3cret").unwrap_err();
        assert!(
            short.contains("6 characters") && short.contains("at least 22"),
            "{short}"
        );
        let spaced = check_token(&format!("{} x", "a".repeat(30))).unwrap_err();
        assert!(spaced.contains("' '"), "{spaced}");
        assert!(check_token("").is_err());
    }

    #[test]
    fn the_cookie_is_an_hmac_of_the_token_under_the_runs_key() {
        let token = "0123456789abcdef0123456789abcdef";
        let one = Guard::new(token);
        let other = Guard::new(token);
        assert_eq!(one.cookie_value().len(), 64);
        assert!(!one.cookie_value().contains(token));
        assert_ne!(one.cookie_value(), other.cookie_value(), "a key per run");
        assert_eq!(cookie_value(b"k", token), cookie_value(b"k", token));
        assert_ne!(
            cookie_value(b"k", token),
            cookie_value(b"k", "another-token-of-22-chars")
        );
    }

    #[test]
    fn wrong_tokens_are_throttled_per_peer_after_a_burst_and_let_through_again_as_time_passes() {
        let guard = Guard::new("0123456789abcdef0123456789abcdef");
        let start = Instant::now();
        let attacker: IpAddr = "10.0.0.7".parse().unwrap();
        for _ in 0..FAILURE_BURST {
            assert_eq!(guard.record_failure(attacker, start), Ok(()));
        }
        assert_eq!(guard.record_failure(attacker, start), Err(1));
        assert_eq!(guard.throttled(attacker, start), Some(1));
        // Another peer has its own budget.
        let other: IpAddr = "10.0.0.8".parse().unwrap();
        assert_eq!(guard.throttled(other, start), None);
        assert_eq!(guard.record_failure(other, start), Ok(()));
        // A fifth of a second later, one more wrong token is let through.
        let later = start + Duration::from_millis(1000 / u64::from(FAILURES_PER_SECOND));
        assert_eq!(guard.throttled(attacker, later), None);
        assert_eq!(guard.record_failure(attacker, later), Ok(()));
        assert!(guard.record_failure(attacker, later).is_err());
    }

    #[test]
    fn ipv6_peers_share_a_budget_per_64_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        assert_eq!(peer_key(a), peer_key(b));
        assert_ne!(peer_key(a), peer_key("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(
            peer_key("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            peer_key(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        );
    }

    #[test]
    fn loopback_hosts_are_allowed_with_or_without_port() {
        for host in [
            "127.0.0.1:7411",
            "localhost",
            "LOCALHOST:1",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(host_allowed(host, &[]), "{host}");
        }
    }

    #[test]
    fn foreign_and_malformed_hosts_are_refused() {
        for host in [
            "evil.example",
            "evil.example:7411",
            "10.0.0.1",
            "[::2]:1",
            "127.0.0.1:",
            "",
            ":80",
            "[::1",
        ] {
            assert!(!host_allowed(host, &[]), "{host}");
        }
    }

    #[test]
    fn allow_host_admits_that_name_only() {
        let allowed = vec!["box.lan".to_owned()];
        assert!(host_allowed("box.lan:7411", &allowed));
        assert!(!host_allowed("other.lan:7411", &allowed));
    }

    #[test]
    fn origin_must_be_http_loopback_with_the_hosts_port() {
        assert!(origin_allowed("http://127.0.0.1:7411", 7411, &[]));
        assert!(origin_allowed("http://localhost:7411", 7411, &[]));
        assert!(origin_allowed("http://[::1]:7411", 7411, &[]));
        assert!(!origin_allowed("http://127.0.0.1:7412", 7411, &[]));
        assert!(!origin_allowed("https://127.0.0.1:7411", 7411, &[]));
        assert!(!origin_allowed("http://evil.example:7411", 7411, &[]));
        assert!(!origin_allowed("null", 7411, &[]));
        assert!(!origin_allowed("http://127.0.0.1", 7411, &[]));
    }

    #[test]
    fn only_an_event_stream_get_takes_the_token_from_its_query() {
        let uri = |u: &str| u.parse::<axum::http::Uri>().unwrap();
        assert_eq!(
            events_query_token(&Method::GET, &uri("/api/sessions/a/events?token=a%2Bb")),
            Some("a+b".to_owned())
        );
        assert_eq!(
            events_query_token(&Method::GET, &uri("/api/sessions/a/events")),
            None
        );
        assert_eq!(
            events_query_token(&Method::POST, &uri("/api/sessions/a/events?token=t")),
            None
        );
        assert_eq!(
            events_query_token(&Method::GET, &uri("/api/sessions/a/questions?token=t")),
            None
        );
    }

    #[test]
    fn the_remote_origin_is_an_https_host_name_with_an_optional_port_and_nothing_else() {
        let tailnet = RemoteOrigin::parse("https://Box.Tailnet.ts.net").unwrap();
        assert_eq!(tailnet.origin, "https://box.tailnet.ts.net");
        assert_eq!(
            (tailnet.name.as_str(), tailnet.port),
            ("box.tailnet.ts.net", 443)
        );
        let lan = RemoteOrigin::parse("https://box.lan:8443/").unwrap();
        assert_eq!(lan.origin, "https://box.lan:8443");
        assert_eq!(lan.port, 8443);
        for (bad, says) in [
            ("http://box.lan", "must be https://"),
            ("https://10.0.0.2", "host name"),
            ("https://box.lan/page", "origin alone"),
            ("https://box.lan/?q=1", "origin alone"),
            ("https://me@box.lan", "origin alone"),
            ("box.lan", "not a URL"),
        ] {
            let why = RemoteOrigin::parse(bad).unwrap_err();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }

    #[test]
    fn the_remote_origin_admits_its_own_host_header_and_port_only() {
        let tailnet = RemoteOrigin::parse("https://box.tailnet.ts.net").unwrap();
        assert!(tailnet.admits_host("box.tailnet.ts.net"));
        assert!(tailnet.admits_host("BOX.tailnet.ts.net:443"));
        assert!(!tailnet.admits_host("box.tailnet.ts.net:7411"));
        assert!(!tailnet.admits_host("evil.example"));
        assert!(!tailnet.admits_host("box.tailnet.ts.net.evil.example"));
        let lan = RemoteOrigin::parse("https://phone.test:8443").unwrap();
        assert!(lan.admits_host("phone.test:8443"));
        assert!(!lan.admits_host("phone.test"));
    }

    #[test]
    fn forwarded_addresses_are_believed_from_a_loopback_peer_only_and_the_last_one_counts() {
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(X_FORWARDED_FOR, HeaderValue::from_str(value).unwrap());
            headers
        };
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let lan: IpAddr = "192.0.2.7".parse().unwrap();
        let phone: IpAddr = "100.64.0.9".parse().unwrap();
        assert_eq!(client_addr(loopback, &headers("100.64.0.9")), phone);
        // A client's own X-Forwarded-For comes first; the front appends the truth.
        assert_eq!(
            client_addr(loopback, &headers("127.0.0.1, 100.64.0.9")),
            phone
        );
        assert_eq!(
            client_addr(loopback, &headers("[2001:db8::1]:5000")),
            "2001:db8::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_addr(lan, &headers("127.0.0.1")),
            lan,
            "not from a LAN peer"
        );
        assert_eq!(client_addr(loopback, &headers("nonsense")), loopback);
        assert_eq!(client_addr(loopback, &HeaderMap::new()), loopback);
    }

    #[test]
    fn the_agents_endpoints_are_ask_and_mcp() {
        assert!(is_agent_endpoint("/mcp"));
        assert!(is_agent_endpoint("/api/sessions/s1/ask"));
        assert!(!is_agent_endpoint("/api/sessions/s1/questions"));
        assert!(!is_agent_endpoint("/api/sessions/s1/questions/q_1/answer"));
        assert!(!is_agent_endpoint("/mcpx"));
    }

    #[test]
    fn token_comparison_needs_the_exact_token() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abc", "abd"));
        assert!(!token_matches("abc", "ab"));
        assert!(!token_matches("abc", ""));
    }
}
