//! Shared helpers for ask-user's cross-crate tests: the host's HTTP contract and
//! the browser end-to-end tests. Nothing outside `tests/` may depend on this crate.

pub mod axe;
pub mod browser;
pub mod e2e;
pub mod host_process;
pub mod http_host;
pub mod mcp;
pub mod node;
pub mod postgres;
pub mod push_stub;
pub mod round_robin;
pub mod tls_front;
pub mod wait;

/// A loopback port that was free a moment ago (bind to port 0, read it, release it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("the OS hands out a free loopback port")
}
