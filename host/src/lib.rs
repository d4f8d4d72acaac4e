//! # ask-user-host
//!
//! The thin axum half of ask-user: it owns the pending questions, the agent's ask
//! endpoint and MCP, and serves the built page. Every rule comes from
//! `ask-user-core`; this crate re-implements none.

use axum::{Json, Router, routing::get};
use serde_json::json;

/// The application's router.
pub fn app() -> Router {
    Router::new().route("/api/health", get(|| async { Json(json!({"status": "ok"})) }))
}
