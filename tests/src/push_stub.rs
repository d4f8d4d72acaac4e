//! A stub push service on 127.0.0.1 (issue 22): it takes Web Push requests
//! (RFC 8030) at `/push/NAME`, answers each with the status set for `NAME`
//! (201 by default), and keeps what arrived. A [`TestSubscription`] is a
//! browser's side: its own P-256 key and auth secret, so a test can decrypt
//! each message (RFC 8291) and check its VAPID JWT (RFC 8292).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use p256::ecdsa::signature::Verifier;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// One request the stub received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The subscription's name (`/push/NAME`).
    pub name: String,
    /// Its headers.
    pub headers: http::HeaderMap,
    /// The encrypted body.
    pub body: Vec<u8>,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    statuses: Mutex<HashMap<String, u16>>,
    arrived: Notify,
}

/// The stub push service.
pub struct PushStub {
    origin: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PushStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PushStub {
    /// Binds `127.0.0.1:0` and serves plain HTTP.
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// Binds `127.0.0.1:0` and serves HTTPS with `tls` (endpoints then name
    /// `https://localhost:PORT`).
    pub async fn start_tls(tls: Arc<rustls::ServerConfig>) -> Self {
        Self::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the stub");
        let port = listener.local_addr().unwrap().port();
        let scheme = if tls.is_some() {
            "https://localhost"
        } else {
            "http://127.0.0.1"
        };
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = serving.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { Ok::<_, std::convert::Infallible>(take(&shared, request).await) }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                let _ = http.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                    }
                });
            }
        });
        Self {
            origin: format!("{scheme}:{port}"),
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:PORT` (or `https://localhost:PORT`): the `aud` of
    /// the JWTs sent here.
    pub fn origin(&self) -> String {
        self.origin.clone()
    }

    /// The endpoint of subscription `name`.
    pub fn endpoint(&self, name: &str) -> String {
        format!("{}/push/{name}", self.origin())
    }

    /// Answers requests for `name` with `status` from now on.
    pub fn answer_with(&self, name: &str, status: u16) {
        self.shared
            .statuses
            .lock()
            .unwrap()
            .insert(name.to_owned(), status);
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until `count` requests arrived for `name`; returns them.
    pub async fn wait_for(&self, name: &str, count: usize) -> Vec<Received> {
        crate::wait::within(&format!("{count} pushes to {name}"), async {
            loop {
                let arrived = self.shared.arrived.notified();
                let got: Vec<Received> = self
                    .received()
                    .into_iter()
                    .filter(|r| r.name == name)
                    .collect();
                if got.len() >= count {
                    return got;
                }
                arrived.await;
            }
        })
        .await
    }
}

async fn take(
    shared: &Shared,
    request: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let name = request
        .uri()
        .path()
        .strip_prefix("/push/")
        .unwrap_or_default()
        .to_owned();
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let status = shared
        .statuses
        .lock()
        .unwrap()
        .get(&name)
        .copied()
        .unwrap_or(201);
    shared.received.lock().unwrap().push(Received {
        name,
        headers: parts.headers,
        body,
        at: Instant::now(),
    });
    shared.arrived.notify_waiters();
    hyper::Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// A browser's side of a subscription.
pub struct TestSubscription {
    secret: p256::SecretKey,
    auth: [u8; 16],
    /// Where the host sends.
    pub endpoint: String,
}

impl TestSubscription {
    /// A fresh key pair and auth secret for `endpoint`.
    pub fn new(endpoint: String) -> Self {
        let secret = loop {
            let bytes: [u8; 32] = rand_bytes();
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        Self {
            secret,
            auth: rand_bytes(),
            endpoint,
        }
    }

    /// As `PushSubscription.toJSON()` gives it.
    pub fn to_json(&self) -> Value {
        json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {
                "p256dh": URL_SAFE_NO_PAD.encode(self.secret.public_key().to_encoded_point(false).as_bytes()),
                "auth": URL_SAFE_NO_PAD.encode(self.auth),
            }
        })
    }

    /// Decrypts a message sent to this subscription; panics when it does not decrypt.
    pub fn decrypt(&self, received: &Received) -> Value {
        let auth = web_push_native::Auth::clone_from_slice(&self.auth);
        let plain = web_push_native::decrypt(received.body.clone(), &self.secret, &auth)
            .unwrap_or_else(|e| panic!("the message does not decrypt for this subscription: {e}"));
        serde_json::from_slice(&plain).expect("the message is JSON")
    }
}

fn rand_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    let file = std::fs::File::open("/dev/urandom").expect("/dev/urandom");
    std::io::Read::read_exact(&mut &file, &mut bytes).expect("random bytes");
    bytes
}

/// A VAPID `Authorization` header, checked: returns the JWT's claims and the
/// public key it names (`k=`), after verifying the signature with that key.
pub fn verified_vapid(header: &str) -> (Value, String) {
    let rest = header
        .strip_prefix("vapid t=")
        .unwrap_or_else(|| panic!("not a VAPID header: {header}"));
    let (token, key) = rest
        .split_once(", k=")
        .unwrap_or_else(|| panic!("no k= in {header}"));
    let (signed, signature) = token.rsplit_once('.').expect("a JWT");
    let mut parts = signed.split('.');
    let jwt_header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap()).unwrap();
    assert_eq!(jwt_header["alg"], "ES256", "{jwt_header}");
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap()).unwrap();
    let verifying =
        p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(key).unwrap())
            .expect("k= is a P-256 public key");
    let signature = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap())
        .expect("a 64-byte ES256 signature");
    verifying
        .verify(signed.as_bytes(), &signature)
        .expect("the JWT is signed by the key it names");
    (claims, key.to_owned())
}
