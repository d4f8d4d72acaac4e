//! The accept loop's limits in-process, with short timeouts and a small cap:
//! silent and trickling connections are closed, and at the cap a connection
//! without the token makes room while connections with it (or with a paired
//! device's cookie) stay.

use ask_user_host::server::accept::Limits;
use ask_user_host::{AppState, HostConfig, random_token, serve_with};
use ask_user_tests::wait::within;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Host {
    addr: String,
    token: String,
}

async fn start(limits: Limits) -> Host {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = random_token();
    let state = AppState::new(HostConfig::new(token.clone(), port));
    tokio::spawn(serve_with(listener, state, limits));
    Host {
        addr: format!("127.0.0.1:{port}"),
        token,
    }
}

fn limits(max_connections: usize, idle: Duration, header: Duration) -> Limits {
    Limits {
        max_connections,
        idle_timeout: idle,
        header_read_timeout: header,
        ..Limits::default()
    }
}

/// Sends `GET path` on `socket` (keep-alive) and returns the status code.
async fn get(socket: &mut TcpStream, path: &str, token: Option<&str>) -> u16 {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    get_with(socket, path, &format!("Host: 127.0.0.1\r\n{auth}")).await
}

/// Sends `GET path` with `headers` (CRLF-ended lines) on `socket`
/// (keep-alive) and returns the status code.
async fn get_with(socket: &mut TcpStream, path: &str, headers: &str) -> u16 {
    socket
        .write_all(format!("GET {path} HTTP/1.1\r\n{headers}\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = within("a response head", socket.read(&mut byte))
            .await
            .unwrap();
        assert_eq!(read, 1, "the connection closed before a response");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let length: Option<usize> = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .map(|v| v.trim().parse().unwrap())
    });
    match length {
        Some(length) => read_exactly(socket, length).await,
        // The pending list is written in chunks.
        None => {
            assert!(
                head.contains("transfer-encoding: chunked"),
                "neither a length nor chunks: {head}"
            );
            loop {
                let size = usize::from_str_radix(read_line(socket).await.trim(), 16).unwrap();
                read_exactly(socket, size).await;
                assert_eq!(read_line(socket).await, "", "a chunk ends with CRLF");
                if size == 0 {
                    break;
                }
            }
        }
    }
    head[9..12].parse().unwrap()
}

/// Reads `length` bytes of a body from `socket`.
async fn read_exactly(socket: &mut TcpStream, length: usize) {
    let mut body = vec![0u8; length];
    within("a response body", socket.read_exact(&mut body))
        .await
        .unwrap();
}

/// Reads one CRLF-ended line from `socket`, without its CRLF.
async fn read_line(socket: &mut TcpStream) -> String {
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        let mut byte = [0u8; 1];
        let read = within("a chunk line", socket.read(&mut byte))
            .await
            .unwrap();
        assert_eq!(read, 1, "the connection closed inside a chunked body");
        line.push(byte[0]);
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).unwrap()
}

/// Waits until the host closes `socket` (reading nothing more than `allowed`).
async fn closed_by_host(socket: &mut TcpStream, what: &str) {
    let mut rest = Vec::new();
    let read = within(what, socket.read_to_end(&mut rest)).await;
    assert!(
        read.is_err() || rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
        "{what}: {}",
        String::from_utf8_lossy(&rest)
    );
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_idle_timeout() {
    let host = start(limits(
        64,
        Duration::from_millis(200),
        Duration::from_secs(30),
    ))
    .await;
    let mut silent = TcpStream::connect(&host.addr).await.unwrap();
    closed_by_host(&mut silent, "the silent connection to be closed").await;
    // A connection that speaks at once is served.
    let mut prompt = TcpStream::connect(&host.addr).await.unwrap();
    assert_eq!(get(&mut prompt, "/api/health", None).await, 200);
}

#[tokio::test]
async fn a_request_head_that_trickles_is_closed_after_the_header_read_timeout() {
    let host = start(limits(
        64,
        Duration::from_secs(30),
        Duration::from_millis(300),
    ))
    .await;
    let mut slow = TcpStream::connect(&host.addr).await.unwrap();
    let trickle = async {
        for byte in b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if slow.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    within("the trickling connection to be closed", trickle).await;
    closed_by_host(&mut slow, "the trickling connection to end").await;
}

#[tokio::test]
async fn at_the_cap_a_connection_without_the_token_makes_room_and_connections_with_it_stay() {
    let host = start(limits(3, Duration::from_secs(30), Duration::from_secs(30))).await;
    let token = Some(host.token.as_str());
    let mut agent = TcpStream::connect(&host.addr).await.unwrap();
    assert_eq!(
        get(&mut agent, "/api/sessions/s/questions", token).await,
        200
    );
    let mut oldest = TcpStream::connect(&host.addr).await.unwrap();
    let mut younger = TcpStream::connect(&host.addr).await.unwrap();
    // A health check (no token) on the younger one: served, but no token.
    assert_eq!(get(&mut younger, "/api/health", None).await, 200);

    // The fourth connection replaces the oldest one without the token.
    let mut page = TcpStream::connect(&host.addr).await.unwrap();
    closed_by_host(
        &mut oldest,
        "the oldest connection without the token to be closed",
    )
    .await;
    assert_eq!(
        get(&mut page, "/api/sessions/s/questions", token).await,
        200
    );
    assert_eq!(
        get(&mut agent, "/api/sessions/s/questions", token).await,
        200
    );

    // The fifth replaces the younger one; then all three presented the token ...
    let mut third = TcpStream::connect(&host.addr).await.unwrap();
    closed_by_host(
        &mut younger,
        "the younger connection without the token to be closed",
    )
    .await;
    assert_eq!(
        get(&mut third, "/api/sessions/s/questions", token).await,
        200
    );
    // ... so a sixth is refused, and they all keep working.
    let mut refused = TcpStream::connect(&host.addr).await.unwrap();
    closed_by_host(&mut refused, "the connection over the cap to be refused").await;
    for socket in [&mut agent, &mut page, &mut third] {
        assert_eq!(get(socket, "/api/sessions/s/questions", token).await, 200);
    }
}

/// The headers a TLS front (as `tailscale serve`) sends for a phone on the
/// `--remote` origin `https://phone.test`.
const FROM_THE_FRONT: &str = "Host: phone.test\r\nOrigin: https://phone.test\r\n\
    X-Forwarded-For: 100.64.0.7\r\nX-Forwarded-Proto: https\r\n";

/// One request on a connection of its own (closed after it): the head and
/// the body.
async fn call(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (String, String) {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(
            format!(
                "{method} {path} HTTP/1.1\r\n{headers}Content-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = Vec::new();
    within("a response", socket.read_to_end(&mut response))
        .await
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn at_the_cap_a_paired_devices_connection_through_the_front_stays_like_the_pages() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = random_token();
    let mut config = HostConfig::new(token.clone(), port);
    config.remote =
        Some(ask_user_host::server::security::RemoteOrigin::parse("https://phone.test").unwrap());
    let state = AppState::new(config);
    tokio::spawn(serve_with(
        listener,
        state,
        limits(3, Duration::from_secs(30), Duration::from_secs(30)),
    ));
    let addr = format!("127.0.0.1:{port}");

    // Pair a device: opened and approved on loopback with the token,
    // claimed and collected through the front.
    let master = format!("Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n");
    let (_, opened) = call(&addr, "POST", "/api/pairings", &master, "{}").await;
    let opened: serde_json::Value = serde_json::from_str(&opened).unwrap();
    let (id, code) = (
        opened["id"].as_str().unwrap(),
        opened["code"].as_str().unwrap(),
    );
    let claim = format!(r#"{{"code": "{code}", "name": "Pixel 8"}}"#);
    let (head, _) = call(&addr, "POST", "/api/pair/claim", FROM_THE_FRONT, &claim).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let approve = format!("/api/pairings/{id}/approve");
    let (head, _) = call(&addr, "POST", &approve, &master, "{}").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let collect = format!(r#"{{"code": "{code}"}}"#);
    let (head, _) = call(&addr, "POST", "/api/pair/collect", FROM_THE_FRONT, &collect).await;
    let cookie = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("set-cookie:")
                .then(|| l[11..].trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no cookie: {head}"));
    let cookie = cookie.split(';').next().unwrap();
    let device_headers = format!("{FROM_THE_FRONT}Cookie: {cookie}\r\n");

    // The device's connection is the oldest; two strangers fill the cap.
    let mut device = TcpStream::connect(&addr).await.unwrap();
    assert_eq!(
        get_with(&mut device, "/api/sessions/s/questions", &device_headers).await,
        200
    );
    let mut first = TcpStream::connect(&addr).await.unwrap();
    let mut second = TcpStream::connect(&addr).await.unwrap();
    // A third stranger makes room by closing the oldest stranger, not the device.
    let _third = TcpStream::connect(&addr).await.unwrap();
    closed_by_host(
        &mut first,
        "the oldest connection without credentials to be closed",
    )
    .await;
    assert_eq!(
        get_with(&mut device, "/api/sessions/s/questions", &device_headers).await,
        200,
        "the device's connection stays"
    );
    let _fourth = TcpStream::connect(&addr).await.unwrap();
    closed_by_host(&mut second, "the next stranger to be closed").await;
    assert_eq!(
        get_with(&mut device, "/api/sessions/s/questions", &device_headers).await,
        200
    );
}
