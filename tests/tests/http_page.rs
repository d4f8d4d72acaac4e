//! The page's HTTP contract: encodings by `Accept-Encoding` with `Vary`,
//! caching (immutable hashed names, `index.html` revalidated by ETag with 304),
//! the Content-Security-Policy and `X-Frame-Options` on every page response,
//! and paths that cannot name a file inside the page (never a 500, never a
//! file outside it). Served from a `--dist` folder whose files carry `.br` and
//! `.gz` siblings, the same serving code as the page built into the binary.

use ask_user_tests::http_host::TestHost;
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, ETAG,
    IF_NONE_MATCH, VARY,
};
use std::path::{Path, PathBuf};

const INDEX: &str = "<!doctype html><html><head><script type=\"module\">\nimport init from '/app-0123456789abcdef.js';\nawait init();\n</script></head><body></body></html>";
const WASM: &str = "app-0123456789abcdef_bg.wasm";
/// Stand-ins for the compressed files: the host sends stored bytes as they are.
const WASM_BYTES: &[u8] = b"\0asm the module";
const WASM_BR: &[u8] = b"brotli bytes of the module";
const WASM_GZ: &[u8] = b"gzip bytes of the module";
const BROWSER: &str = "gzip, deflate, br, zstd";

/// A page folder like `dist/`, unique to one test, removed on drop.
struct Dist {
    base: PathBuf,
    dist: PathBuf,
}

impl Dist {
    fn new(test: &str) -> Self {
        let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("ask-user-page-{test}-{}", std::process::id()));
        let dist = base.join("dist");
        std::fs::create_dir_all(dist.join("embed")).unwrap();
        let write = |name: &str, bytes: &[u8]| std::fs::write(dist.join(name), bytes).unwrap();
        write("index.html", INDEX.as_bytes());
        write("index.html.br", b"brotli bytes of the index");
        write("index.html.gz", b"gzip bytes of the index");
        write(
            "app-0123456789abcdef.js",
            b"export default async function init() {}",
        );
        write(WASM, WASM_BYTES);
        write(&format!("{WASM}.br"), WASM_BR);
        write(&format!("{WASM}.gz"), WASM_GZ);
        write("embed/ask_user_embed.js", b"export function mount() {}");
        write(
            "embed/example.html",
            b"<p>example</p><style>p{margin:0}</style>",
        );
        Self { base, dist }
    }

    fn path(&self) -> &Path {
        &self.dist
    }
}

impl Drop for Dist {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.base).ok();
    }
}

async fn host_for(dist: &Dist) -> TestHost {
    let dir = dist.path().to_owned();
    TestHost::start_with(move |config| config.dist = Some(dir)).await
}

fn header(response: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> &str {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().expect("an ASCII header"))
        .unwrap_or_default()
}

#[tokio::test]
async fn files_go_out_in_the_best_stored_encoding_the_client_accepts_with_vary() {
    let dist = Dist::new("encoding");
    let host = host_for(&dist).await;
    let get = |accept: Option<&'static str>| {
        let mut request = host.client.get(host.url(&format!("/{WASM}")));
        if let Some(accept) = accept {
            request = request.header(ACCEPT_ENCODING, accept);
        }
        request.send()
    };

    let brotli = get(Some(BROWSER)).await.unwrap();
    assert_eq!(brotli.status(), StatusCode::OK);
    assert_eq!(header(&brotli, CONTENT_ENCODING), "br");
    assert_eq!(header(&brotli, CONTENT_TYPE), "application/wasm");
    assert_eq!(header(&brotli, VARY), "accept-encoding");
    assert_eq!(header(&brotli, CONTENT_LENGTH), WASM_BR.len().to_string());
    assert_eq!(&brotli.bytes().await.unwrap()[..], WASM_BR);

    let gzip = get(Some("gzip, deflate")).await.unwrap();
    assert_eq!(header(&gzip, CONTENT_ENCODING), "gzip");
    assert_eq!(header(&gzip, VARY), "accept-encoding");
    assert_eq!(&gzip.bytes().await.unwrap()[..], WASM_GZ);

    let refused = get(Some("br;q=0, gzip;q=0")).await.unwrap();
    assert_eq!(header(&refused, CONTENT_ENCODING), "");
    assert_eq!(&refused.bytes().await.unwrap()[..], WASM_BYTES);

    let plain = get(None).await.unwrap();
    assert_eq!(header(&plain, CONTENT_ENCODING), "");
    assert_eq!(header(&plain, VARY), "accept-encoding");
    assert_eq!(&plain.bytes().await.unwrap()[..], WASM_BYTES);

    // A file without stored encodings goes out as it is, with no Vary.
    let script = host
        .client
        .get(host.url("/embed/ask_user_embed.js"))
        .header(ACCEPT_ENCODING, BROWSER)
        .send()
        .await
        .unwrap();
    assert_eq!(header(&script, CONTENT_ENCODING), "");
    assert_eq!(header(&script, VARY), "");
    assert_eq!(
        header(&script, CONTENT_TYPE),
        "text/javascript; charset=utf-8"
    );
}

#[tokio::test]
async fn a_folder_file_without_stored_encodings_is_gzipped_on_the_fly_and_decodes_to_itself() {
    use std::io::Read;
    let dist = Dist::new("on-the-fly");
    let script: Vec<u8> = (0..2000)
        .flat_map(|n| format!("export const value{n} = {n};\n").into_bytes())
        .collect();
    std::fs::write(dist.path().join("big-0123456789abcdef.js"), &script).unwrap();
    let host = host_for(&dist).await;
    let get = |accept: &'static str| {
        host.client
            .get(host.url("/big-0123456789abcdef.js"))
            .header(ACCEPT_ENCODING, accept)
            .send()
    };

    // Gzip, even for a browser that takes brotli: no brotli encoder ships.
    let gzip = get(BROWSER).await.unwrap();
    assert_eq!(header(&gzip, CONTENT_ENCODING), "gzip");
    assert_eq!(header(&gzip, VARY), "accept-encoding");
    let body = gzip.bytes().await.unwrap();
    assert!(body.len() < script.len() / 4, "{} bytes", body.len());
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, script);

    // A changed file is compressed again, not served from the last version.
    std::fs::write(
        dist.path().join("big-0123456789abcdef.js"),
        b"x".repeat(4096),
    )
    .unwrap();
    let body = get("gzip").await.unwrap().bytes().await.unwrap();
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, b"x".repeat(4096));
}

#[tokio::test]
async fn hashed_names_are_immutable_and_the_index_revalidates_by_etag_with_304() {
    let dist = Dist::new("caching");
    let host = host_for(&dist).await;
    let get = |path: &str, accept: &'static str| {
        host.client
            .get(host.url(path))
            .header(ACCEPT_ENCODING, accept)
            .send()
    };

    let wasm = get(&format!("/{WASM}"), BROWSER).await.unwrap();
    assert_eq!(
        header(&wasm, CACHE_CONTROL),
        "public, max-age=31536000, immutable"
    );
    let embed = get("/embed/ask_user_embed.js", BROWSER).await.unwrap();
    assert_eq!(
        header(&embed, CACHE_CONTROL),
        "no-cache",
        "a stable name revalidates"
    );

    let index = get("/", BROWSER).await.unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(header(&index, CACHE_CONTROL), "no-cache");
    let etag = header(&index, ETAG).to_owned();
    assert!(etag.starts_with('"') && etag.ends_with("-br\""), "{etag}");
    // Each encoding is its own representation with its own ETag.
    let gzip_etag = header(&get("/", "gzip").await.unwrap(), ETAG).to_owned();
    let plain_etag = header(&get("/", "identity").await.unwrap(), ETAG).to_owned();
    assert_ne!(gzip_etag, etag);
    assert_ne!(plain_etag, etag);
    assert_eq!(
        etag.trim_end_matches("-br\""),
        plain_etag.trim_end_matches('"'),
        "the same content under one tag"
    );

    let revalidated = host
        .client
        .get(host.url("/"))
        .header(ACCEPT_ENCODING, BROWSER)
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(header(&revalidated, ETAG), etag);
    assert_eq!(header(&revalidated, CACHE_CONTROL), "no-cache");
    assert_eq!(header(&revalidated, VARY), "accept-encoding");
    assert!(revalidated.bytes().await.unwrap().is_empty());

    // A weak match counts; another representation's tag does not.
    let weak = host
        .client
        .get(host.url("/"))
        .header(ACCEPT_ENCODING, BROWSER)
        .header(IF_NONE_MATCH, format!("\"other\", W/{etag}"))
        .send()
        .await
        .unwrap();
    assert_eq!(weak.status(), StatusCode::NOT_MODIFIED);
    let stale = host
        .client
        .get(host.url("/"))
        .header(ACCEPT_ENCODING, BROWSER)
        .header(IF_NONE_MATCH, &gzip_etag)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), StatusCode::OK);

    // The content changes: so does the tag, and the old one no longer matches.
    std::fs::write(dist.path().join("index.html"), "<p>new</p>").unwrap();
    std::fs::remove_file(dist.path().join("index.html.br")).unwrap();
    std::fs::remove_file(dist.path().join("index.html.gz")).unwrap();
    let changed = host
        .client
        .get(host.url("/"))
        .header(IF_NONE_MATCH, &plain_etag)
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(header(&changed, ETAG), plain_etag);
    assert_eq!(changed.text().await.unwrap(), "<p>new</p>");
}

#[tokio::test]
async fn the_page_allows_its_own_inline_loader_by_hash_and_nothing_inline_else_and_is_never_framed()
{
    let dist = Dist::new("csp");
    let host = host_for(&dist).await;
    let index = host.client.get(host.url("/")).send().await.unwrap();
    let policy = header(&index, "content-security-policy").to_owned();
    let directives: Vec<&str> = policy.split(';').map(str::trim).collect();
    let script_src = directives
        .iter()
        .find(|d| d.starts_with("script-src "))
        .expect("a script-src");
    let words: Vec<&str> = script_src.split_whitespace().collect();
    assert_eq!(&words[..3], ["script-src", "'self'", "'wasm-unsafe-eval'"]);
    assert_eq!(
        words.len(),
        4,
        "one hash, for the one inline script: {policy}"
    );
    assert!(words[3].starts_with("'sha256-"), "{policy}");
    // Every other directive, exactly: the installable app adds its worker and
    // manifest from this origin, and nothing wider.
    let others: Vec<&str> = directives
        .iter()
        .copied()
        .filter(|d| !d.starts_with("script-src "))
        .collect();
    assert_eq!(
        others,
        [
            "default-src 'none'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "worker-src 'self'",
            "manifest-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ],
        "{policy}"
    );
    assert!(!policy.contains("unsafe-inline") && !policy.contains("'unsafe-eval'"));
    assert_eq!(header(&index, "x-frame-options"), "DENY");

    // An HTML file with an inline style element gets that element's hash only.
    let example = host
        .client
        .get(host.url("/embed/example.html"))
        .send()
        .await
        .unwrap();
    let policy = header(&example, "content-security-policy");
    assert!(policy.contains("style-src 'self' 'sha256-"), "{policy}");
    assert!(
        policy.contains("script-src 'self' 'wasm-unsafe-eval';"),
        "{policy}"
    );

    // The files it loads, the fallback, a 404 and a refused method carry them too.
    for (method, path, status) in [
        (reqwest::Method::GET, format!("/{WASM}"), StatusCode::OK),
        (reqwest::Method::GET, "/a/route".to_owned(), StatusCode::OK),
        (
            reqwest::Method::GET,
            "/missing.js".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        (
            reqwest::Method::POST,
            "/".to_owned(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
    ] {
        let response = host
            .client
            .request(method.clone(), host.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{method} {path}");
        assert_eq!(header(&response, "x-frame-options"), "DENY", "{path}");
        assert!(
            header(&response, "content-security-policy").contains("frame-ancestors 'none'"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn head_answers_with_the_headers_of_get_and_no_body() {
    let dist = Dist::new("head");
    let host = host_for(&dist).await;
    let head = host
        .client
        .head(host.url(&format!("/{WASM}")))
        .header(ACCEPT_ENCODING, BROWSER)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(&head, CONTENT_ENCODING), "br");
    assert_eq!(header(&head, CONTENT_LENGTH), WASM_BR.len().to_string());
    assert!(head.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn paths_that_cannot_name_a_file_are_not_found_or_the_app_never_a_server_error() {
    let dist = Dist::new("badpaths");
    let host = host_for(&dist).await;
    let long = "a".repeat(300);
    let cases = [
        // (method, raw path, expected status, expected body: the index or nothing)
        ("GET", format!("/{long}"), StatusCode::OK, Some(INDEX)),
        ("GET", format!("/dir/{long}/x"), StatusCode::OK, Some(INDEX)),
        ("GET", format!("/{long}.js"), StatusCode::NOT_FOUND, None),
        ("GET", format!("/embed/{long}"), StatusCode::NOT_FOUND, None),
        ("HEAD", "/%00".to_owned(), StatusCode::OK, None),
        ("GET", "/%00".to_owned(), StatusCode::OK, Some(INDEX)),
        ("GET", "/a%00.js".to_owned(), StatusCode::NOT_FOUND, None),
        ("GET", "/embed/%00".to_owned(), StatusCode::NOT_FOUND, None),
        ("GET", "/%ff%fe".to_owned(), StatusCode::OK, Some(INDEX)),
        (
            "GET",
            "/.hidden.txt".to_owned(),
            StatusCode::NOT_FOUND,
            None,
        ),
    ];
    for (method, path, status, body) in cases {
        let (got, text) = raw_request(&host, method, &path).await;
        assert_eq!(got, status, "{method} {path}");
        if let Some(body) = body {
            assert_eq!(text, body, "{method} {path}");
        }
    }
}

#[tokio::test]
async fn the_page_folder_serves_nothing_outside_itself_through_a_symbolic_link() {
    let dist = Dist::new("symlink");
    std::fs::write(dist.base.join("secret.txt"), "outside the page").unwrap();
    std::os::unix::fs::symlink(dist.base.join("secret.txt"), dist.path().join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(&dist.base, dist.path().join("up")).unwrap();
    let host = host_for(&dist).await;
    for path in ["/leak.txt", "/up/secret.txt"] {
        let (status, body) = raw_request(&host, "GET", path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(!body.contains("outside the page"), "{path}");
    }
    // A directory link that stays inside the page is fine.
    std::os::unix::fs::symlink(dist.path().join("embed"), dist.path().join("same")).unwrap();
    let (status, body) = raw_request(&host, "GET", "/same/ask_user_embed.js").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "export function mount() {}");
}

/// Sends `method path` as raw HTTP/1.1 (so the path reaches the host exactly
/// as written) and returns the status and body.
async fn raw_request(host: &TestHost, method: &str, path: &str) -> (StatusCode, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = host.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn the_installable_apps_manifest_worker_and_icons_are_served_next_to_any_page_folder_without_the_token()
 {
    let dist = Dist::new("app");
    let host = host_for(&dist).await;
    // No cookie, no Authorization: a browser fetches the manifest without credentials.
    let anonymous = reqwest::Client::new();
    for (path, content_type) in [
        ("/manifest.webmanifest", "application/manifest+json"),
        ("/sw.js", "text/javascript; charset=utf-8"),
        ("/app/icon.svg", "image/svg+xml"),
        ("/app/icon-192.png", "image/png"),
        ("/app/icon-512.png", "image/png"),
    ] {
        let response = anonymous.get(host.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&response, CONTENT_TYPE), content_type, "{path}");
        assert_eq!(header(&response, "cache-control"), "no-cache", "{path}");
        assert!(
            header(&response, "content-security-policy").starts_with("default-src 'none'"),
            "{path}"
        );
        assert!(!header(&response, ETAG).is_empty(), "{path}");
    }
    let manifest: serde_json::Value = anonymous
        .get(host.url("/manifest.webmanifest"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(manifest["display"], "standalone");
    // The page's index links the manifest: the test folder's does not, the real one does.
    let index = include_str!("../../index.html");
    assert!(index.contains(r#"<link rel="manifest" href="/manifest.webmanifest" />"#));
    assert!(index.contains(r#"navigator.serviceWorker.register("/sw.js")"#));
    // Only those names: nothing else under /app/ and no source maps.
    for path in ["/app/icon.png", "/sw.js.map", "/app/manifest.webmanifest"] {
        let response = anonymous.get(host.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
}
