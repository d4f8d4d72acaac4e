//! The server room: the axum host. `app(state) -> Router` builds the routes
//! with no side effects; [`serve`] owns the lifecycle (background tasks, the
//! accept loop in [`accept`], the last writes kept at shutdown). The pending
//! table (`pending`), the durable record (`store`), the streams, MCP and the
//! pages live here; the client programs (`crate::client`) reach none of it.

pub mod accept;
pub mod api;
pub mod canonical;
pub mod credential;
pub mod demo;
pub mod devices;
pub mod devices_page;
pub mod error;
pub mod events;
pub mod extract;
pub mod guard;
pub mod inbox;
pub mod limits;
pub mod mcp;
pub mod mcp_state;
pub mod pages;
pub mod pending;
pub mod people;
pub mod provider;
pub mod push;
pub mod security;
pub mod state;
pub mod store;
pub mod transcript;

pub use self::accept::DRAIN_TIMEOUT;
pub use self::error::ApiError;
pub use self::pending::{PendingTable, Resolution, SharedEvent, Subscription};
pub use self::provider::WebProvider;
pub use self::state::{AppState, AskOptions, HostConfig, ShutdownHandle, random_token};

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::HeaderValue;
use axum::http::header::{REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::middleware::from_fn_with_state;
use axum::routing::{any, get};
use tokio::net::TcpListener;
use tower_http::set_header::SetResponseHeaderLayer;

/// The application's router: the `/api` routes (behind the token, except
/// health), the page, and the security layers around all of it.
pub fn app(state: AppState) -> Router {
    let api = api::router()
        .merge(events::router())
        .merge(inbox::router())
        .merge(devices::router())
        .merge(people::router())
        .merge(push::service::router())
        .method_not_allowed_fallback(api::method_not_allowed)
        .route_layer(from_fn_with_state(state.clone(), security::require_token))
        .merge(devices::public_router())
        .route("/api/health", get(api::health))
        .route("/api", any(api::not_found))
        .route("/api/{*rest}", any(api::not_found));
    let page = pages::router(state.config().dist.as_deref())
        .layer(from_fn_with_state(state.clone(), security::token_landing));
    Router::new()
        .merge(api)
        .merge(
            mcp::router(&state)
                .route_layer(from_fn_with_state(state.clone(), security::require_token)),
        )
        .merge(devices_page::router())
        .merge(page)
        .layer(DefaultBodyLimit::max(extract::BODY_LIMIT))
        .layer(from_fn_with_state(
            state.clone(),
            security::check_host_and_origin,
        ))
        .layer(SetResponseHeaderLayer::overriding(
            REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .with_state(state)
}

/// Serves [`app`] on `listener` with the default [`accept::Limits`] until
/// [`ShutdownHandle::shutdown`] is called; see [`serve_with`].
pub async fn serve(listener: TcpListener, state: AppState) -> std::io::Result<()> {
    serve_with(listener, state, accept::Limits::default()).await
}

/// Starts the host's background tasks ([`spawn_background_tasks`]: the
/// detach grace's timer, closing MCP sessions at shutdown), then serves
/// [`app`] on `listener` through the host's accept loop ([`accept`]:
/// timeouts, the connection cap) until [`ShutdownHandle::shutdown`] is called.
/// Then connections that are not serving a request close at once, and the
/// others (the resolved asks' responses) get at most `limits.drain_timeout`
/// ([`DRAIN_TIMEOUT`] by default). Event streams end on shutdown by
/// themselves, so they never hold it up.
pub async fn serve_with(
    listener: TcpListener,
    state: AppState,
    limits: accept::Limits,
) -> std::io::Result<()> {
    serve_tls(listener, state, limits, None).await
}

/// [`serve_with`], speaking TLS with `tls` when given (`--tls-cert`; see
/// [`accept::tls_config`]).
pub async fn serve_tls(
    listener: TcpListener,
    state: AppState,
    limits: accept::Limits,
    tls: Option<accept::TlsConfig>,
) -> std::io::Result<()> {
    spawn_background_tasks(&state);
    if state.config().demo {
        demo::spawn(state.clone());
    }
    accept::run_tls(listener, state.clone(), app(state.clone()), limits, tls).await?;
    // What shutdown resolved (every waiting ask `disposed`) is kept before exit.
    if let Err(error) = state.record().flush().kept().await {
        tracing::error!(error = %crate::logged::logged(&error), "the store could not keep the last writes");
    }
    Ok(())
}

/// Starts the host's background tasks: the detach grace's timer, pruning the
/// record, closing MCP sessions at shutdown and sending pushes. Only
/// [`serve_tls`] calls it; building the router starts nothing. It lives here,
/// above the state and the rooms, so the state imports none of them back.
fn spawn_background_tasks(state: &AppState) {
    pending::spawn_grace_timer(state.pending().clone(), state.shutdown_token());
    store::spawn_pruning(
        state.record().clone(),
        state.config().keep_days,
        state.shutdown_token(),
    );
    mcp::lifecycle::spawn(state);
    push::service::spawn(&push::service::PushRoom::from_ref(state));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain test has no tokio runtime: anything `app` spawned (a timer, a
    /// shutdown task) would panic here. Lifecycle belongs to [`serve_with`].
    #[test]
    fn building_the_router_starts_nothing() {
        let mut config = HostConfig::new(random_token(), 7411);
        config.demo = true;
        let state = AppState::new(config);
        let router = app(state.clone());
        drop(router);
        assert!(!state.is_shutting_down());
        assert_eq!(state.pending().pending_count(), 0);
    }
}
