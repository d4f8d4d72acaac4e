//! The one binary: `ask-user serve` started from an empty folder (as an MCP
//! configuration starts it from a project) serves the page built into it,
//! file for file the build in `ASK_USER_E2E_DIST`, precompressed.
//!
//! Needs the binary built with the page (`ASK_USER_PAGE_DIST`), which `cargo
//! xtask test` does; run without that environment it fails and says so.

use ask_user_tests::browser::e2e_dist;
use ask_user_tests::host_process::HostProcess;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files the host must send compressed (everything Trunk and the embed build).
const COMPRESSED: &[&str] = &["html", "js", "css", "wasm"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the build is readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn brotli_decoded(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("valid brotli");
    out
}

fn gzip_decoded(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("valid gzip");
    out
}

#[tokio::test]
#[ignore = "browser test: needs the browser tests' environment, the binary built with the page (ASK_USER_E2E_DIST, ASK_USER_BIN), though no browser; `cargo xtask test` runs it"]
async fn serve_started_in_an_empty_folder_serves_every_file_of_the_build_from_inside_the_binary() {
    let dist = e2e_dist();
    let empty = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let host = HostProcess::start_in(&empty, &[]).expect("the host starts and prints its URL");
    let client = reqwest::Client::new();

    let root = client.get(host.url()).send().await.unwrap();
    assert_eq!(
        root.bytes().await.unwrap(),
        std::fs::read(dist.join("index.html")).unwrap(),
        "{} must carry the page of {}: build it with ASK_USER_PAGE_DIST set (`cargo xtask test` does); its log:\n{}",
        ask_user_tests::host_process::host_binary().display(),
        dist.display(),
        host.stderr()
    );

    let mut files = Vec::new();
    files_under(&dist, &mut files);
    assert!(files.len() >= 5, "a page and its embed: {files:?}");
    for file in &files {
        let relative = file
            .strip_prefix(&dist)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let built = std::fs::read(file).unwrap();
        let url = format!("{}/{relative}", host.origin());
        let get = |accept: &'static str| client.get(&url).header(ACCEPT_ENCODING, accept).send();

        let plain = get("identity").await.unwrap();
        assert_eq!(plain.status(), StatusCode::OK, "{relative}");
        assert_eq!(plain.bytes().await.unwrap(), built, "{relative} as built");

        let extension = file
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if COMPRESSED.contains(&extension) {
            let brotli = get("gzip, deflate, br").await.unwrap();
            assert_eq!(brotli.headers()[CONTENT_ENCODING], "br", "{relative}");
            let bytes = brotli.bytes().await.unwrap();
            assert!(bytes.len() < built.len(), "{relative} is smaller in brotli");
            assert_eq!(brotli_decoded(&bytes), built, "{relative} in brotli");

            let gzip = get("gzip").await.unwrap();
            assert_eq!(gzip.headers()[CONTENT_ENCODING], "gzip", "{relative}");
            assert_eq!(
                gzip_decoded(&gzip.bytes().await.unwrap()),
                built,
                "{relative} in gzip"
            );
        }
    }

    // The page itself: the build's index.html at /, revalidated; its wasm immutable.
    let index = client.get(host.url()).send().await.unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(index.headers()[CACHE_CONTROL], "no-cache");
    let policy = index.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("'wasm-unsafe-eval' 'sha256-"), "{policy}");
    let wasm = files
        .iter()
        .find(|f| f.parent() == Some(dist.as_path()) && f.extension().is_some_and(|e| e == "wasm"))
        .expect("the page's wasm");
    let name = wasm.file_name().unwrap().to_string_lossy();
    let response = client
        .get(format!("{}/{name}", host.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()[CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    assert!(
        !host.stderr().contains("built without its page"),
        "no notice from a binary that carries the page: {}",
        host.stderr()
    );
    drop(host);
    std::fs::remove_dir_all(&empty).ok();
}
