//! A TLS front that plays `tailscale serve`: it terminates TLS for
//! `phone.test` (an rcgen certificate signed by a CA of the test's own),
//! forwards every request to the host on loopback over plain HTTP/1, keeps
//! the `Host` header, and adds `X-Forwarded-For` (the client it claims to
//! forward for) and `X-Forwarded-Proto: https`. Also an HTTPS client that
//! trusts that CA, for the HTTP-level tests of the remote origin.

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

/// The name the front serves (Chromium maps it to 127.0.0.1).
pub const PHONE_HOST: &str = "phone.test";

/// The address the front says it forwards for: a tailnet-like address, so
/// the host sees a client that is not on loopback.
pub const PHONE_CLIENT_IP: &str = "100.101.102.103";

/// A certificate for [`PHONE_HOST`], signed by a CA made for the test.
pub struct TestCert {
    /// The CA's certificate (DER), for clients to trust.
    pub ca_der: Vec<u8>,
    /// The leaf's certificate (PEM), for `--tls-cert`.
    pub cert_pem: String,
    /// The leaf's private key (PEM), for `--tls-key`.
    pub key_pem: String,
    /// Base64 of the SHA-256 of the leaf's SubjectPublicKeyInfo, for
    /// Chromium's `--ignore-certificate-errors-spki-list`.
    pub spki_sha256: String,
    server: Arc<rustls::ServerConfig>,
}

impl TestCert {
    /// A fresh CA and a leaf for `phone.test` and `localhost`.
    pub fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, PublicKeyData};
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("the CA signs itself");
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().expect("a leaf key");
        let leaf = CertificateParams::new(vec![PHONE_HOST.to_owned(), "localhost".to_owned()])
            .expect("leaf params")
            .signed_by(&leaf_key, &issuer)
            .expect("the CA signs the leaf");
        let spki_sha256 = base64::engine::general_purpose::STANDARD
            .encode(Sha256::digest(leaf_key.subject_public_key_info()));
        let cert_pem = leaf.pem();
        let key_pem = leaf_key.serialize_pem();
        #[allow(deprecated)] // ring, as the host uses (see host/src/server/accept.rs)
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .expect("the leaf and its key");
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self {
            ca_der: ca_cert.der().to_vec(),
            cert_pem,
            key_pem,
            spki_sha256,
            server: Arc::new(server),
        }
    }

    /// The CA's certificate as PEM (e.g. for `SSL_CERT_FILE`).
    pub fn ca_pem(&self) -> String {
        let base64 = base64::engine::general_purpose::STANDARD.encode(&self.ca_der);
        let lines: Vec<&str> = base64
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).expect("base64 is ASCII"))
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            lines.join("\n")
        )
    }

    /// The server side: the leaf for `phone.test` and `localhost`.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.server.clone()
    }

    /// A TLS client configuration that trusts this test's CA only.
    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.ca_der.clone().into())
            .expect("the CA is a valid trust anchor");
        #[allow(deprecated)] // ring, as the host uses (see host/src/server/accept.rs)
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Arc::new(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    }

    /// Chromium's flags to reach `phone.test` on 127.0.0.1 and trust this
    /// certificate by its SPKI hash (so the page is a real secure context).
    pub fn chromium_args(&self) -> Vec<String> {
        vec![
            format!("--host-resolver-rules=MAP {PHONE_HOST} 127.0.0.1"),
            format!("--ignore-certificate-errors-spki-list={}", self.spki_sha256),
        ]
    }
}

impl Default for TestCert {
    fn default() -> Self {
        Self::new()
    }
}

/// The front, bound before the host starts (the host's `--remote` needs its port).
pub struct TlsFront {
    listener: Option<TcpListener>,
    port: u16,
    server: Arc<rustls::ServerConfig>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TlsFront {
    /// Binds `127.0.0.1:0` for `cert`.
    pub async fn bind(cert: &TestCert) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the front");
        let port = listener.local_addr().expect("the front's address").port();
        Self {
            listener: Some(listener),
            port,
            server: cert.server.clone(),
            task: None,
        }
    }

    /// `https://phone.test:PORT`: what the host's `--remote` admits.
    pub fn origin(&self) -> String {
        format!("https://{PHONE_HOST}:{}", self.port)
    }

    /// The front's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts forwarding to the host whose plain-HTTP origin on loopback is
    /// `origin` (`http://127.0.0.1:PORT`, as `TestHost` and `HostProcess` give it).
    pub fn forward_to_origin(&mut self, origin: &str) {
        let backend = origin
            .trim_start_matches("http://")
            .parse()
            .unwrap_or_else(|e| panic!("{origin} is not http://ADDRESS:PORT: {e}"));
        self.forward_to(backend);
    }

    /// Starts forwarding to the host at `backend` (plain HTTP on loopback).
    pub fn forward_to(&mut self, backend: SocketAddr) {
        let listener = self.listener.take().expect("forward_to is called once");
        let acceptor = tokio_rustls::TlsAcceptor::from(self.server.clone());
        self.task = Some(tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service =
                        hyper::service::service_fn(move |request| forward(request, backend));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        }));
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// One request through the front: same method, path, headers (Host kept),
/// plus the forwarded headers; the response (a stream included) comes back
/// as it arrives.
async fn forward(
    mut request: hyper::Request<Incoming>,
    backend: SocketAddr,
) -> Result<hyper::Response<Incoming>, std::io::Error> {
    let headers = request.headers_mut();
    headers.insert(
        "x-forwarded-for",
        hyper::header::HeaderValue::from_static(PHONE_CLIENT_IP),
    );
    headers.insert(
        "x-forwarded-proto",
        hyper::header::HeaderValue::from_static("https"),
    );
    let stream = TcpStream::connect(backend).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)
}

/// What an HTTPS request got back.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: hyper::StatusCode,
    /// The headers.
    pub headers: hyper::HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON (panics, quoting it, when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The error code of a JSON error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A TLS connection to `127.0.0.1:port` for `phone.test`, ready for HTTP/1
/// requests one after another (keep-alive).
pub async fn https_connection(
    cert: &TestCert,
    port: u16,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the TLS port");
    let name = rustls::pki_types::ServerName::try_from(PHONE_HOST).expect("a DNS name");
    let tls = tokio_rustls::TlsConnector::from(cert.client_config())
        .connect(name, tcp)
        .await
        .expect("the TLS handshake with the test CA's certificate");
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("an HTTP/1 connection");
    tokio::spawn(connection);
    sender
}

/// Opens a TLS connection to `127.0.0.1:port` for `phone.test` and sends one
/// HTTP/1 request; the response head arrives as soon as the host sends it.
pub async fn https_open(
    cert: &TestCert,
    port: u16,
    request: hyper::Request<Full<Bytes>>,
) -> hyper::Response<Incoming> {
    https_connection(cert, port)
        .await
        .send_request(request)
        .await
        .expect("the request is answered")
}

/// Reads a whole response.
pub async fn read_reply(response: hyper::Response<Incoming>) -> Reply {
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("the whole body").to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// [`https_open`], reading the whole body.
pub async fn https(cert: &TestCert, port: u16, request: hyper::Request<Full<Bytes>>) -> Reply {
    read_reply(https_open(cert, port, request).await).await
}

/// A request for [`https`]: `method path` with `Host: host` and `headers`.
pub fn request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> hyper::Request<Full<Bytes>> {
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("a well-formed request")
}

/// A Pixel's user agent, as a phone's requests carry it.
pub const PIXEL_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";

/// A request from a phone through `front`: the Pixel's user agent, the
/// front's origin, JSON `body` (none when null), the device's `cookie` pair.
pub async fn phone_request(
    cert: &TestCert,
    front: &TlsFront,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: &serde_json::Value,
) -> Reply {
    let origin = front.origin();
    let mut headers = vec![
        ("user-agent", PIXEL_UA),
        ("content-type", "application/json"),
        ("origin", origin.as_str()),
    ];
    if let Some(cookie) = cookie {
        headers.push(("cookie", cookie));
    }
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let authority = format!("{PHONE_HOST}:{}", front.port());
    https(
        cert,
        front.port(),
        request(method, &authority, path, &headers, &body),
    )
    .await
}

/// Pairs a phone named `name` through `front` as a person would: a pairing
/// opened on loopback with `host`'s token, claimed by the phone, approved on
/// loopback, collected by the phone. Returns the device's id and its cookie
/// pair (`name=value`).
pub async fn pair_phone(
    host: &crate::http_host::TestHost,
    cert: &TestCert,
    front: &TlsFront,
    name: &str,
) -> (String, String) {
    pair_phone_with(&host.base, host.token(), cert, front, name).await
}

/// [`pair_phone`] for any host: its loopback origin (`http://127.0.0.1:PORT`)
/// and token.
pub async fn pair_phone_with(
    origin: &str,
    token: &str,
    cert: &TestCert,
    front: &TlsFront,
    name: &str,
) -> (String, String) {
    let client = reqwest::Client::new();
    let post = |path: String| {
        let request = client
            .post(format!("{origin}{path}"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body("{}");
        async move {
            let response = request.send().await.expect("the host answers");
            let status = response.status();
            let body: serde_json::Value = response.json().await.unwrap_or_default();
            (status, body)
        }
    };
    let (status, body) = post("/api/pairings".to_owned()).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let (id, code) = (body["id"].as_str().unwrap(), body["code"].as_str().unwrap());
    let claim = phone_request(
        cert,
        front,
        "POST",
        "/api/pair/claim",
        None,
        &serde_json::json!({"code": code, "name": name}),
    )
    .await;
    assert_eq!(
        claim.status,
        hyper::StatusCode::ACCEPTED,
        "{:?}",
        claim.body
    );
    let (status, _) = post(format!("/api/pairings/{id}/approve")).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let collected = phone_request(
        cert,
        front,
        "POST",
        "/api/pair/collect",
        None,
        &serde_json::json!({"code": code}),
    )
    .await;
    assert_eq!(
        collected.status,
        hyper::StatusCode::OK,
        "{:?}",
        collected.body
    );
    let set_cookie = collected.headers["set-cookie"].to_str().unwrap();
    let pair = set_cookie.split(';').next().unwrap().to_owned();
    let device = collected.json()["device"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (device, pair)
}
