//! The pairing pages, served by the host itself (plain HTML and one script,
//! in English and Simplified Chinese like the page): `/pair` on the device
//! (names itself, waits for approval, collects its credential; each refusal
//! said in words) and `/devices` on the host's own page (pair a device with
//! its QR code and the approval question, list and revoke devices).

use crate::server::pages::csp::BASE_POLICY;
use axum::Router;
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_FRAME_OPTIONS};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const PAIR_HTML: &str = include_str!("devices_page/pair.html");
const DEVICES_HTML: &str = include_str!("devices_page/devices.html");
const SCRIPT: &str = include_str!("devices_page/devices.js");
const STYLE: &str = include_str!("devices_page/devices.css");

/// `/pair`, `/devices` and their script and style.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/pair",
            get(|| async { file(PAIR_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/devices",
            get(|| async { file(DEVICES_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/devices.js",
            get(|| async { file(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/devices.css",
            get(|| async { file(STYLE, "text/css; charset=utf-8") }),
        )
}

fn file(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(BASE_POLICY),
    );
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
