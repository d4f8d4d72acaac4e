//! The page: the built frontend from `--dist` at `/` (unknown paths fall back
//! to its `index.html`), its `embed/` folder at `/embed/`, or a short notice
//! when no frontend was built.

use crate::state::AppState;
use axum::Router;
use axum::response::Html;
use axum::routing::get;
use std::path::Path;
use tower_http::services::{ServeDir, ServeFile};

const NO_FRONTEND: &str = "<!doctype html><meta charset=utf-8><title>ask-user</title>\
<p>ask-user is running, but no built frontend was found. Build it with \
<code>trunk build --release</code> (or <code>cargo xtask run</code>) and start \
<code>ask-user serve --dist dist</code>.</p>";

/// The page routes for `dist` (or the notice when there is none).
pub fn router(dist: Option<&Path>) -> Router<AppState> {
    match dist.filter(|d| d.join("index.html").is_file()) {
        Some(dist) => {
            let mut router = Router::new();
            let embed = dist.join("embed");
            if embed.is_dir() {
                // No index.html fallback here: a missing embed asset is a 404.
                router = router.nest_service("/embed", ServeDir::new(embed));
            }
            router.fallback_service(
                ServeDir::new(dist).fallback(ServeFile::new(dist.join("index.html"))),
            )
        }
        None => Router::new().route("/", get(|| async { Html(NO_FRONTEND) })),
    }
}
