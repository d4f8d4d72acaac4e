//! The page: the files built into the binary (`ASK_USER_PAGE_DIST` at build
//! time; see `build.rs`), or a `--dist` folder, at `/` with its `embed/`
//! folder at `/embed/`; or, in a binary built without the page, a short
//! notice at `/` that says how to build it.
//!
//! Each file goes out in the best encoding the client takes (brotli or gzip,
//! compressed at build time) with `Vary: Accept-Encoding`; content-hashed
//! names are cached for a year as immutable, everything else (`index.html`)
//! revalidates with its ETag and gets 304 when unchanged. Every response
//! carries the page's Content-Security-Policy and `X-Frame-Options: DENY`.
//! Unknown paths fall back to `index.html`, except under `/embed/` and for
//! names with an extension (a missing script is a 404, never HTML). Next to
//! the page's files the host serves the installable app's manifest, service
//! worker and icons ([`app`]).

mod app;
pub mod csp;
mod files;
pub mod negotiate;

pub use files::{Asset, Caching, PageFiles};

use crate::server::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{
    ACCEPT_ENCODING, ALLOW, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH,
    CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use files::file_path;
use negotiate::Encoding;
use std::path::Path;

/// What `/` says in a binary built without the page (and `serve` prints once).
pub const NO_PAGE_NOTICE: &str = "this ask-user binary was built without its page: the API and MCP \
work, but / shows only a notice. Build a binary that carries the page with `cargo xtask dist` \
(it lands in target/dist/ask-user), or serve a Trunk build with `ask-user serve --dist DIR`.";

const NO_PAGE_HTML: &str = "<!doctype html><meta charset=utf-8><title>ask-user</title>\
<p>ask-user is running, but this binary was built without its page. The API and MCP work.</p>\
<p>Build a binary that carries the page with <code>cargo xtask dist</code> (it lands in \
<code>target/dist/ask-user</code>), or start one with <code>cargo xtask run</code>; or serve a \
Trunk build with <code>ask-user serve --dist DIR</code>.</p>";

/// Whether this binary carries the page.
pub fn embedded() -> bool {
    PageFiles::embedded().is_some()
}

/// The page routes: `dist` when given, else the page built into the binary,
/// else the notice.
pub fn router(dist: Option<&Path>) -> Router<AppState> {
    let files = match dist {
        Some(dir) => match PageFiles::dir(dir) {
            Ok(files) => Some(files),
            Err(err) => {
                tracing::error!(dist = %crate::logged::logged(dir.display()), err = %crate::logged::logged(&err), "cannot serve the page from --dist");
                None
            }
        },
        None => PageFiles::embedded(),
    };
    match files {
        Some(files) => Router::new().fallback(move |request: Request| {
            let files = files.clone();
            async move { serve_file(&files, request).await }
        }),
        None => Router::new().fallback(|request: Request| async move { notice(&request) }),
    }
}

async fn serve_file(files: &PageFiles, request: Request) -> Response {
    let head = request.method() == Method::HEAD;
    if request.method() != Method::GET && !head {
        return method_not_allowed();
    }
    let path = request.uri().path();
    let asset = match (app::get(path), file_path(path)) {
        (Some(app_file), _) => Some(app_file),
        (None, Some(file)) => files.get(&file).await,
        (None, None) => None,
    };
    let asset = match asset {
        Some(asset) => asset,
        None if falls_back_to_index(path) => match files.get("index.html").await {
            Some(index) => index,
            None => return not_found(),
        },
        None => return not_found(),
    };
    let headers = request.headers();
    let accept = headers.get(ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
    let if_none_match = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok());
    respond(&asset, accept, if_none_match, head)
}

/// Whether a path that names no file gets `index.html` (the app's own
/// routes): not under `/embed/`, and not a name with an extension.
fn falls_back_to_index(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    !(path == "/embed" || path.starts_with("/embed/") || last.contains('.'))
}

/// The response for `asset`: the negotiated encoding, caching headers, and
/// 304 when `If-None-Match` names its ETag.
fn respond(
    asset: &Asset,
    accept_encoding: Option<&str>,
    if_none_match: Option<&str>,
    head: bool,
) -> Response {
    let encoding = negotiate::choose(
        accept_encoding,
        asset.brotli.is_some(),
        asset.gzip.is_some(),
    );
    let etag = format!("\"{}{}\"", asset.etag, encoding.etag_suffix());
    let mut builder = Response::builder()
        .header(CACHE_CONTROL, asset.caching.header())
        .header(ETAG, &etag)
        .header(CONTENT_SECURITY_POLICY, asset.policy.clone())
        .header(X_FRAME_OPTIONS, "DENY");
    if asset.brotli.is_some() || asset.gzip.is_some() {
        builder = builder.header(VARY, "accept-encoding");
    }
    if if_none_match.is_some_and(|tags| negotiate::none_match(tags, &etag)) {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .expect("valid headers");
    }
    let bytes = match encoding {
        Encoding::Brotli => asset.brotli.clone(),
        Encoding::Gzip => asset.gzip.clone(),
        Encoding::Identity => None,
    }
    .unwrap_or_else(|| asset.identity.clone());
    if let Some(coding) = encoding.header() {
        builder = builder.header(CONTENT_ENCODING, coding);
    }
    builder = builder
        .header(CONTENT_TYPE, asset.content_type)
        .header(CONTENT_LENGTH, bytes.len());
    let body = if head {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    builder.body(body).expect("valid headers")
}

fn notice(request: &Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return method_not_allowed();
    }
    if request.uri().path() != "/" {
        return not_found();
    }
    let mut response = (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-cache"),
        ],
        NO_PAGE_HTML,
    )
        .into_response();
    frame_and_policy(&mut response);
    response
}

fn not_found() -> Response {
    let mut response = (StatusCode::NOT_FOUND, "not found\n").into_response();
    frame_and_policy(&mut response);
    response
}

fn method_not_allowed() -> Response {
    let mut response = (
        StatusCode::METHOD_NOT_ALLOWED,
        [(ALLOW, "GET, HEAD")],
        "only GET and HEAD\n",
    )
        .into_response();
    frame_and_policy(&mut response);
    response
}

fn frame_and_policy(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp::BASE_POLICY),
    );
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_routes_fall_back_to_the_index_and_missing_files_do_not() {
        assert!(falls_back_to_index("/"));
        assert!(falls_back_to_index("/some/deep/link"));
        assert!(falls_back_to_index("/%00"));
        assert!(!falls_back_to_index("/missing-0123456789abcdef.js"));
        assert!(!falls_back_to_index("/embed/anything"));
        assert!(!falls_back_to_index("/embed"));
    }
}
