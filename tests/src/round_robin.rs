//! A round-robin TCP proxy on loopback, as a load balancer in front of
//! several hosts: the n-th connection goes to backend n mod count, so a test
//! that opens one connection per request knows which host served it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy; dropping it stops accepting.
pub struct RoundRobin {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    backends: Arc<std::sync::Mutex<Vec<SocketAddr>>>,
}

impl RoundRobin {
    /// Listens on a free loopback port and forwards to `backends` in turn.
    pub async fn start(backends: Vec<SocketAddr>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("bound");
        let backends = Arc::new(std::sync::Mutex::new(backends));
        let next = Arc::new(AtomicUsize::new(0));
        let shared = backends.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let turn = next.fetch_add(1, Ordering::SeqCst);
                let backend = {
                    let backends = shared.lock().unwrap();
                    backends[turn % backends.len()]
                };
                tokio::spawn(async move {
                    // A backend that is down closes the client's connection,
                    // as a balancer without health checks would.
                    if let Ok(mut outbound) = TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self {
            addr,
            task,
            backends,
        }
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces backend `index` (a host restarted on another port).
    pub fn replace(&self, index: usize, backend: SocketAddr) {
        self.backends.lock().unwrap()[index] = backend;
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.task.abort();
    }
}
