//! The host's own accept loop (hyper's HTTP/1 server under [`crate::serve`]),
//! so that no local process can starve it.
//!
//! - A connection that sends nothing for [`IDLE_TIMEOUT`] is closed, and a
//!   request head must arrive within [`HEADER_READ_TIMEOUT`] (this also ends a
//!   keep-alive connection idle that long between requests).
//! - At most [`Limits::max_connections`] connections are open. At the cap a new
//!   connection replaces the oldest one that has not presented the token yet,
//!   so an attacker without the token, however many sockets it holds, cannot
//!   lock out the page and the agents; only when every open connection has
//!   presented the token is a new one refused.
//! - Shutdown closes at once every connection that is not serving a complete
//!   request (idle, half-sent head or body), and gives the others (pending
//!   asks getting their `ASK_ABORTED`, streams ending) at most
//!   [`Limits::drain_timeout`].
//!
//! HTTP/1 only: agents' clients speak HTTP/1 to `http://` URLs, and with
//! `--tls-cert` the host offers only `http/1.1` in ALPN, so browsers speak it
//! too. TLS (1.3, rustls on ring) is handshaken after the first byte arrives,
//! within the header-read timeout, so a silent or slow TLS client holds a
//! connection no longer than a plain one.
//!
//! A half-closed connection (the client shut its sending side after its
//! request) counts as gone, like a closed one (its question is detached and
//! kept for the agent to ask again): TCP cannot tell a client that half-closed
//! from one that exited, and an answer written to a client that exited would
//! be lost.

use crate::server::security;
use crate::server::state::AppState;
use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long shutdown waits for connections still serving a request (the
/// resolved asks' responses) after every pending ask was resolved.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a request head may take to arrive, from its first byte (or, on a
/// keep-alive connection, from the end of the previous response).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a new connection may stay silent before it is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most a request head (request line and headers) may hold. Room for a
/// 60,000-character path to reach the routes' own clear refusal; a larger head
/// gets 431.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Descriptors kept out of the connection cap for everything else the host
/// opens (page files, the runtime, its pipes).
pub const RESERVED_DESCRIPTORS: u64 = 128;

/// The default cap never exceeds this, however high the descriptor limit: at
/// [`MAX_HEAD_BYTES`] per head being read, this many connections hold at most
/// 64 MiB of heads (measured: a head trickling in a byte at a time costs
/// about 30 KiB of resident memory), and it is far more than a person's tabs
/// and agents need at once.
pub const MAX_DEFAULT_CONNECTIONS: usize = 1024;

/// The listen backlog: how many connections the kernel completes and holds
/// for the accept loop (capped by `net.core.somaxconn`, 4096 by default). At
/// the 128 that tokio (like std) uses, a burst of a few hundred connects, or
/// a queue behind a host out of descriptors, overflows it; the kernel then
/// drops SYNs and handshake ACKs, and a page or agent's connect waits for
/// retransmits (1 s, 3 s, 7 s...) before the host even sees it.
pub const LISTEN_BACKLOG: u32 = 1024;

/// How often the accept loop reports the same trouble (the cap reached,
/// descriptors exhausted): once per interval, with a count.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// The accept loop's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// At most this many connections are open at once (`--max-connections`).
    pub max_connections: usize,
    /// See [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// How long shutdown waits for connections still serving a request.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    /// The timeouts above, [`DRAIN_TIMEOUT`], and a connection cap sized
    /// to the process's current descriptor limit.
    fn default() -> Self {
        Self {
            max_connections: connections_for_descriptors(descriptor_limit()),
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            drain_timeout: DRAIN_TIMEOUT,
        }
    }
}

/// The process's soft descriptor limit (`RLIMIT_NOFILE`); 1024 when it cannot
/// be read (or there is none: not Unix).
pub fn descriptor_limit() -> u64 {
    #[cfg(unix)]
    return rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _hard)| soft);
    #[cfg(not(unix))]
    1024
}

/// Raises the soft descriptor limit to the hard one and returns the new soft
/// limit (what `ask-user serve` does at start).
pub fn raise_descriptor_limit() -> std::io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

/// The default connection cap for a descriptor limit: the limit less
/// [`RESERVED_DESCRIPTORS`] (less half of it when it is small), at most
/// [`MAX_DEFAULT_CONNECTIONS`].
pub fn connections_for_descriptors(limit: u64) -> usize {
    let reserved = RESERVED_DESCRIPTORS.min(limit / 2);
    let usable = limit.saturating_sub(reserved).max(1);
    usize::try_from(usable).map_or(MAX_DEFAULT_CONNECTIONS, |n| n.min(MAX_DEFAULT_CONNECTIONS))
}

/// A listener on `addr` with [`LISTEN_BACKLOG`] (what `ask-user serve` binds;
/// `tokio::net::TcpListener::bind` does the same with a backlog of 128).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As tokio does: a restarted host rebinds its port at once (not on
    // Windows, where this would let another process take the port).
    #[cfg(not(windows))]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// What `--tls-cert`/`--tls-key` configure: rustls's server configuration.
#[cfg(feature = "tls")]
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// Built without the `tls` feature: no TLS configuration can exist.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub enum TlsConfig {}

/// Why a binary without the `tls` feature refuses `--tls-cert`.
pub const NO_TLS: &str = "this ask-user was built without direct TLS (--tls-cert): keep the \
    host on loopback behind a TLS front (`tailscale serve --bg 7411`, then --remote \
    https://NAME; see docs/security.md), or build it with `cargo build -p ask-user-host \
    --features tls`";

/// Without the `tls` feature: refuses, saying why ([`NO_TLS`]).
#[cfg(not(feature = "tls"))]
pub fn tls_config(_cert: &Path, _key: &Path) -> Result<TlsConfig, String> {
    Err(NO_TLS.to_owned())
}

/// The TLS configuration of `--tls-cert`/`--tls-key`: the PEM certificate
/// chain and private key, TLS 1.3 only, ALPN `http/1.1`. Fails naming the
/// file and what is wrong with it.
#[cfg(feature = "tls")]
pub fn tls_config(cert: &Path, key: &Path) -> Result<TlsConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {}: no PEM certificate in it",
            cert.display()
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    // ring over aws-lc-rs: the one binary has a size budget, and ring is the
    // smaller (rustls 0.23.48 deprecates it only for lacking post-quantum key
    // exchange; the tailscale front, the documented way in, has its own TLS).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "--tls-cert {} and --tls-key {}: {e}",
                cert.display(),
                key.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `router` on `listener` with `limits` until `state`'s shutdown fires,
/// then drains (see the module docs).
pub async fn run(
    listener: TcpListener,
    state: AppState,
    router: Router,
    limits: Limits,
) -> std::io::Result<()> {
    run_tls(listener, state, router, limits, None).await
}

/// [`run`], speaking TLS with `tls` when given (`--tls-cert`).
pub async fn run_tls(
    listener: TcpListener,
    state: AppState,
    router: Router,
    limits: Limits,
    tls: Option<TlsConfig>,
) -> std::io::Result<()> {
    // Without the `tls` feature no `TlsConfig` exists: `tls` is always None.
    #[cfg(not(feature = "tls"))]
    let _ = tls;
    let shutdown = state.shutdown_token();
    let registry = Arc::new(Registry::new(limits.max_connections));
    let tasks = TaskTracker::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    let shared = Arc::new(Shared {
        state,
        router,
        http,
        registry: registry.clone(),
        idle_timeout: limits.idle_timeout,
        header_read_timeout: limits.header_read_timeout,
        #[cfg(feature = "tls")]
        tls: tls.map(tokio_rustls::TlsAcceptor::from),
    });
    let exhausted = Report::default();
    loop {
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => match registry.admit(peer) {
                Some(connection) => {
                    tasks.spawn(serve_connection(stream, connection, shared.clone()));
                }
                None => drop(stream),
            },
            Err(error) => on_accept_error(&error, &registry, &exhausted).await,
        }
    }
    drop(listener);
    tasks.close();
    if tokio::time::timeout(limits.drain_timeout, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            open = tasks.len(),
            "connections still serving after the drain timeout; exiting anyway"
        );
    }
    Ok(())
}

/// Out of descriptors: close the oldest connection without the token to make
/// room (or wait a moment when there is none); any other error: the next
/// accept usually works (e.g. a client that reset before it was accepted).
async fn on_accept_error(error: &std::io::Error, registry: &Registry, exhausted: &Report) {
    let out_of_descriptors =
        matches!(error.raw_os_error(), Some(code) if code == EMFILE || code == ENFILE);
    if out_of_descriptors {
        let evicted = registry.evict_oldest_unauthenticated();
        if let Some(count) = exhausted.due() {
            tracing::warn!(
                times = count,
                error = %crate::logged::logged(error),
                "out of file descriptors while accepting; closing connections that never presented the token (raise the limit or lower --max-connections)"
            );
        }
        if evicted {
            return;
        }
    } else {
        tracing::debug!(error = %crate::logged::logged(error), "accept failed");
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

// errno values for "too many open files" (per process, per system); the same on
// Linux and the BSDs/macOS.
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// What every connection task shares.
struct Shared {
    state: AppState,
    router: Router,
    http: http1::Builder,
    registry: Arc<Registry>,
    idle_timeout: Duration,
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    header_read_timeout: Duration,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

async fn serve_connection(stream: TcpStream, slot: Slot, shared: Arc<Shared>) {
    let shutdown = shared.state.shutdown_token();
    let connection = slot.connection.clone();
    // Nothing is handed to hyper until the client sends something (peek, not
    // readable(): readiness may be spurious, a byte is not).
    let mut first = [0u8; 1];
    let first_byte = tokio::select! {
        biased;
        () = connection.evicted.cancelled() => return,
        () = shutdown.cancelled() => return,
        peeked = tokio::time::timeout(shared.idle_timeout, stream.peek(&mut first)) => peeked,
    };
    if !matches!(first_byte, Ok(Ok(1..))) {
        return;
    }
    #[cfg(feature = "tls")]
    if let Some(acceptor) = &shared.tls {
        let handshake = tokio::select! {
            biased;
            () = connection.evicted.cancelled() => return,
            () = shutdown.cancelled() => return,
            done = tokio::time::timeout(shared.header_read_timeout, acceptor.accept(stream)) => done,
        };
        match handshake {
            Ok(Ok(tls)) => drive(TokioIo::new(tls), &connection, &shared).await,
            Ok(Err(error)) => {
                tracing::debug!(error = %crate::logged::logged(&error), "TLS handshake failed");
            }
            Err(_) => tracing::debug!("TLS handshake timed out"),
        }
        drop(slot);
        return;
    }
    drive(TokioIo::new(stream), &connection, &shared).await;
    drop(slot);
}

/// Serves HTTP/1 on `io` until the client is done, the connection is
/// evicted, or shutdown closes it (see the module docs).
async fn drive<I>(io: I, connection: &Arc<Connection>, shared: &Arc<Shared>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let shutdown = shared.state.shutdown_token();
    let service = {
        let (connection, shared) = (connection.clone(), shared.clone());
        hyper::service::service_fn(move |request| exchange(request, &connection, &shared))
    };
    let http = shared.http.serve_connection(io, service);
    tokio::pin!(http);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = http.as_mut() => break,
            () = connection.evicted.cancelled() => break,
            () = shutdown.cancelled(), if !draining => {
                http.as_mut().graceful_shutdown();
                // Idle, or a head or body still arriving: nothing of this
                // connection's is waiting on the host, so it closes now.
                if connection.serving.load(Ordering::Acquire) == 0 {
                    break;
                }
                draining = true;
            }
        }
    }
}

/// One request on a connection: marks the connection when it presents the
/// token, gives the routes the peer address, and counts the exchange as
/// serving from the end of its request body to the end of its response.
fn exchange(
    request: hyper::Request<Incoming>,
    connection: &Arc<Connection>,
    shared: &Shared,
) -> impl Future<Output = Result<axum::response::Response, Infallible>> + Send + use<> {
    if !connection.authenticated.load(Ordering::Relaxed)
        && security::presents_credentials(
            &shared.state,
            request.method(),
            request.uri(),
            request.headers(),
        )
    {
        shared.registry.authenticated(connection);
    }
    let tracker = Arc::new(Exchange {
        connection: connection.clone(),
        counted: AtomicBool::new(false),
    });
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(ConnectInfo(connection.peer));
    if body.is_end_stream() {
        tracker.request_complete();
    }
    let body = Body::new(RequestBody {
        inner: body,
        tracker: tracker.clone(),
    });
    let response = shared
        .router
        .clone()
        .oneshot(axum::extract::Request::from_parts(parts, body));
    async move {
        let response = response.await?;
        Ok(response.map(|inner| Body::new(ResponseBody { inner, tracker })))
    }
}

/// One request/response exchange, for the connection's `serving` count.
struct Exchange {
    connection: Arc<Connection>,
    counted: AtomicBool,
}

impl Exchange {
    fn request_complete(&self) {
        if !self.counted.swap(true, Ordering::AcqRel) {
            self.connection.serving.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if *self.counted.get_mut() {
            self.connection.serving.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The request body, noting when it has been received in full.
struct RequestBody {
    inner: Incoming,
    tracker: Arc<Exchange>,
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let complete = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            _ => false,
        };
        if complete {
            this.tracker.request_complete();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The response body, holding the exchange until hyper is done with it.
struct ResponseBody {
    inner: Body,
    #[allow(dead_code)] // held for its Drop
    tracker: Arc<Exchange>,
}

impl HttpBody for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An open connection, as the registry and its task see it.
struct Connection {
    id: u64,
    peer: SocketAddr,
    /// Presented the token (or the cookie) at least once: never evicted.
    authenticated: AtomicBool,
    /// Fires when the connection must close to make room.
    evicted: CancellationToken,
    /// Exchanges whose request arrived in full and whose response is not done.
    serving: AtomicUsize,
    /// Still counted against the cap (until evicted or closed).
    counted: AtomicBool,
}

/// A connection's place under the cap; gives it back when dropped.
struct Slot {
    connection: Arc<Connection>,
    registry: Arc<Registry>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.registry.release(&self.connection);
    }
}

/// The open connections: how many, and which have not presented the token
/// (oldest first), so the oldest of those can make room at the cap.
struct Registry {
    max: usize,
    table: Mutex<Table>,
    full: Report,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    open: usize,
    unauthenticated: BTreeMap<u64, Arc<Connection>>,
}

impl Registry {
    fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            table: Mutex::new(Table::default()),
            full: Report::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection from `peer`: at the cap, the oldest
    /// connection without the token is closed to make room; `None` (refused)
    /// when every open connection has presented the token.
    fn admit(self: &Arc<Self>, peer: SocketAddr) -> Option<Slot> {
        let mut table = self.lock();
        let at_cap = table.open >= self.max;
        let made_room = at_cap && Self::evict_oldest(&mut table);
        let slot = (!at_cap || made_room).then(|| {
            let id = table.next_id;
            table.next_id += 1;
            table.open += 1;
            let connection = Arc::new(Connection {
                id,
                peer,
                authenticated: AtomicBool::new(false),
                evicted: CancellationToken::new(),
                serving: AtomicUsize::new(0),
                counted: AtomicBool::new(true),
            });
            table.unauthenticated.insert(id, connection.clone());
            Slot {
                connection,
                registry: self.clone(),
            }
        });
        drop(table);
        if at_cap && let Some(times) = self.full.due() {
            tracing::warn!(
                max_connections = self.max,
                times,
                "connection limit reached; {}",
                if made_room {
                    "closing the oldest connections that never presented the token"
                } else {
                    "every open connection presented the token, so new ones are refused"
                }
            );
        }
        slot
    }

    fn evict_oldest(table: &mut Table) -> bool {
        let Some((_, victim)) = table.unauthenticated.pop_first() else {
            return false;
        };
        victim.evicted.cancel();
        if victim.counted.swap(false, Ordering::AcqRel) {
            table.open -= 1;
        }
        true
    }

    /// Closes the oldest connection without the token; false when there is none.
    fn evict_oldest_unauthenticated(&self) -> bool {
        Self::evict_oldest(&mut self.lock())
    }

    fn authenticated(&self, connection: &Connection) {
        if !connection.authenticated.swap(true, Ordering::AcqRel) {
            self.lock().unauthenticated.remove(&connection.id);
        }
    }

    fn release(&self, connection: &Connection) {
        let mut table = self.lock();
        table.unauthenticated.remove(&connection.id);
        if connection.counted.swap(false, Ordering::AcqRel) {
            table.open -= 1;
        }
    }
}

/// Says when a repeated condition is due to be reported again (at most once
/// per [`REPORT_INTERVAL`]) and how often it happened since.
#[derive(Default)]
struct Report {
    count: AtomicU64,
    last: Mutex<Option<Instant>>,
}

impl Report {
    fn due(&self) -> Option<u64> {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < REPORT_INTERVAL) {
            return None;
        }
        *last = Some(now);
        Some(self.count.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_descriptors_for_the_rest_and_stays_bounded() {
        assert_eq!(connections_for_descriptors(1024), 896);
        assert_eq!(connections_for_descriptors(20_000), MAX_DEFAULT_CONNECTIONS);
        assert_eq!(connections_for_descriptors(100), 50);
        assert_eq!(connections_for_descriptors(0), 1);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_burst_of_connects_beyond_tokios_backlog_of_128_waits_in_the_listen_queue_whole() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        // Nothing accepts while they connect: past a full queue the kernel
        // drops the SYN and the connect hangs on retransmits (hence the guard).
        let burst = futures_util::future::join_all((0..200).map(|_| TcpStream::connect(addr)));
        let clients = tokio::time::timeout(Duration::from_secs(10), burst)
            .await
            .expect("every connect completes without waiting for a retransmit");
        assert!(clients.iter().all(Result::is_ok));
        for _ in 0..clients.len() {
            tokio::time::timeout(Duration::from_secs(10), listener.accept())
                .await
                .expect("every connection reached the accept queue")
                .unwrap();
        }
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_connection_without_the_token_makes_room() {
        let registry = Arc::new(Registry::new(3));
        let first = registry.admit(peer()).unwrap();
        let second = registry.admit(peer()).unwrap();
        let third = registry.admit(peer()).unwrap();
        registry.authenticated(&first.connection);
        let fourth = registry.admit(peer()).expect("room is made");
        assert!(!first.connection.evicted.is_cancelled(), "it has the token");
        assert!(
            second.connection.evicted.is_cancelled(),
            "the oldest without"
        );
        assert!(!third.connection.evicted.is_cancelled());
        // The evicted connection's task ends later; it is not counted twice.
        drop(second);
        assert_eq!(registry.lock().open, 3);
        registry.authenticated(&third.connection);
        registry.authenticated(&fourth.connection);
        assert!(
            registry.admit(peer()).is_none(),
            "all open connections presented the token"
        );
        drop(first);
        assert!(
            registry.admit(peer()).is_some(),
            "a closed one frees its slot"
        );
    }
}
