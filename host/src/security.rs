//! Secure defaults: `Host` and `Origin` checks (DNS rebinding, cross-site
//! requests), the token (Bearer header or HttpOnly cookie), and the landing
//! step that trades `/?token=` for the cookie.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{Ipv4Addr, Ipv6Addr};
use subtle::ConstantTimeEq;

/// The name of the cookie that carries the token for this host's port
/// (cookies are shared across ports, so two hosts must not overwrite each other's).
pub fn cookie_name(port: u16) -> String {
    format!("ask_user_token_{port}")
}

/// Compares in constant time (the length is not secret).
pub fn token_matches(expected: &str, presented: &str) -> bool {
    expected.as_bytes().ct_eq(presented.as_bytes()).into()
}

/// Whether `name` (a host name without port, `[::1]` with brackets) is a
/// loopback name or address, or one of `allowed`.
pub fn host_name_allowed(name: &str, allowed: &[String]) -> bool {
    let name = name.to_ascii_lowercase();
    if name == "localhost" {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        if v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()) {
            return true;
        }
    } else if name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()) {
        return true;
    }
    allowed.iter().any(|a| a.eq_ignore_ascii_case(&name))
}

/// Splits `authority` (`name[:port]`) into name and optional port; `None`
/// when it is malformed.
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (name, rest) = authority.split_at(end + 1);
        match rest {
            "" => (name, None),
            _ => (name, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        }
    };
    if name.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some((name, port))
}

/// Whether the `Host` header names this host (loopback or `--allow-host`).
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    split_authority(host).is_some_and(|(name, _)| host_name_allowed(name, allowed))
}

/// Whether an `Origin` is the host's own: `http://` + a loopback name or an
/// allowed host, with the host's port.
pub fn origin_allowed(origin: &str, port: u16, allowed: &[String]) -> bool {
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    let Some((name, Some(origin_port))) = split_authority(authority) else {
        return false;
    };
    let loopback = ["127.0.0.1", "localhost", "[::1]"];
    let name_ok = loopback.iter().any(|l| l.eq_ignore_ascii_case(name))
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name));
    name_ok && origin_port.parse::<u16>().ok() == Some(port)
}

/// Refuses (403) a request whose `Host` is not loopback or allowed, or whose
/// `Origin` is not the host's own. Runs before everything else.
pub async fn check_host_and_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let config = state.config();
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if host_allowed(host, &config.allow_hosts) => {}
        Some(_) => {
            return ApiError::Forbidden(
                "the Host header names neither a loopback address nor an --allow-host name"
                    .to_owned(),
            )
            .into_response();
        }
        None => {
            return ApiError::Forbidden("the request has no Host header".to_owned())
                .into_response();
        }
    }
    if let Some(origin) = request.headers().get(ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, config.port, &config.allow_hosts));
        if !ok {
            return ApiError::Forbidden(
                "cross-origin requests are refused: the Origin is not this host's own".to_owned(),
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// Whether the request presents the token (Bearer header or this host's cookie).
pub fn authorized(headers: &HeaderMap, token: &str, port: u16) -> bool {
    let bearer = headers
        .get_all(AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .any(|presented| token_matches(token, presented.trim()));
    if bearer {
        return true;
    }
    let name = cookie_name(port);
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(k, v)| k == name && token_matches(token, v))
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

/// Refuses (401) an `/api` request without the token.
pub async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let config = state.config();
    let allowed = authorized(request.headers(), &config.token, config.port)
        || events_query_token(request.method(), request.uri())
            .is_some_and(|presented| token_matches(&config.token, &presented));
    if allowed {
        next.run(request).await
    } else {
        ApiError::Unauthorized.into_response()
    }
}

/// The landing step: `GET /?token=...` with the right token sets the HttpOnly
/// SameSite=Strict cookie and redirects to the same path without the query,
/// so the token leaves the address bar; a wrong token is 401.
pub async fn token_landing(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let presented = (request.method() == Method::GET)
        .then(|| request.uri().query())
        .flatten()
        .and_then(|query| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(k, _)| *k == "token")
                .map(|(_, v)| v.to_owned())
        });
    let Some(presented) = presented else {
        return next.run(request).await;
    };
    let config = state.config();
    if !token_matches(&config.token, &presented) {
        return ApiError::Unauthorized.into_response();
    }
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        cookie_name(config.port),
        config.token
    );
    let location = landing_location(request.uri());
    let path = location.as_str();
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(cookie), Ok(location)) =
        (HeaderValue::from_str(&cookie), HeaderValue::from_str(path))
    {
        headers.insert(SET_COOKIE, cookie);
        headers.insert(LOCATION, location);
    }
    response
}

/// Where `/?token=...` redirects: the same path and query less the token, so
/// the token leaves the address bar and `?session=` survives.
fn landing_location(uri: &axum::http::Uri) -> String {
    let kept: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect();
    if kept.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_landing_keeps_every_other_query_parameter() {
        let at = |uri: &str| landing_location(&uri.parse().unwrap());
        assert_eq!(at("/?token=abc"), "/");
        assert_eq!(at("/?session=team-a&token=abc"), "/?session=team-a");
        assert_eq!(at("/?token=abc&session=b&x=1"), "/?session=b&x=1");
        assert_eq!(at("/embed/?tokenish=1&token=abc"), "/embed/?tokenish=1");
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
    fn token_comparison_needs_the_exact_token() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abc", "abd"));
        assert!(!token_matches("abc", "ab"));
        assert!(!token_matches("abc", ""));
    }
}
