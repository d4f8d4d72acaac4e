//! Smoke test of the release build: the real host serves Trunk's `dist/` and
//! headless Chromium must render the page without a single page error. A green
//! build can still be a blank page (a bad wasm-opt gives
//! `WebAssembly.Table.set(): Argument 1 is invalid`), which only a browser sees.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::browser::{Browser, e2e_dist};
use ask_user_tests::host_process::HostProcess;

/// Something the app mounted: any element in `<body>` besides what index.html holds.
const MOUNTED: &str = "body > :not(script):not(noscript):not(link)";

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn release_build_renders_on_the_real_host_without_page_errors() {
    let dist = e2e_dist();
    let host = HostProcess::start(&dist, &[]).expect("the host starts and prints its URL");
    let browser = Browser::launch().await.expect("headless Chromium starts");

    browser.goto(host.url()).await.expect("the page loads");
    let render = browser
        .wait_for_render(MOUNTED)
        .await
        .expect("the page can be inspected");
    let text = browser.body_text().await.unwrap_or_default();
    if render.element.is_none() || !render.errors.is_empty() {
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ask-user-smoke.png");
        if browser.screenshot(&shot).await.is_ok() {
            eprintln!("screenshot of the page: {}", shot.display());
        }
    }
    browser.close().await;

    assert!(
        render.errors.is_empty(),
        "the page logged errors: {:#?}",
        render.errors
    );
    assert!(
        render.element.is_some(),
        "the page never rendered (nothing was mounted into <body>)"
    );
    assert!(!text.trim().is_empty(), "the page rendered no visible text");
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_session_in_the_address_that_is_no_session_id_says_so_instead_of_a_page_that_never_connects()
 {
    let dist = e2e_dist();
    let host = HostProcess::start(&dist, &[]).expect("the host starts and prints its URL");
    let browser = Browser::launch().await.expect("headless Chromium starts");
    // The printed URL sets the cookie; then the same page names a bad session.
    browser.goto(host.url()).await.expect("the page loads");
    browser
        .wait_for_render("[data-auq=message]")
        .await
        .expect("the page renders");
    browser
        .goto(&format!("{}/?session=a.b", host.origin()))
        .await
        .expect("the page loads");
    let render = browser
        .wait_for_render("[data-auq=bad-session]")
        .await
        .expect("the page can be inspected");
    let text = browser.body_text().await.unwrap_or_default();
    let composer = browser
        .client()
        .find_all(fantoccini::Locator::Css("[data-auq=message]"))
        .await
        .map(|found| found.len())
        .unwrap_or(usize::MAX);
    browser.close().await;

    assert!(
        render.errors.is_empty(),
        "page errors: {:#?}",
        render.errors
    );
    assert!(
        render.element.is_some(),
        "no message about the session: {text}"
    );
    assert!(
        text.contains(r#"session: "a.b" is not a session id; use 1 to 64 of A-Z a-z 0-9 _ -"#),
        "core's reason is shown: {text}"
    );
    assert_eq!(
        composer, 0,
        "no conversation for a session that cannot exist"
    );
}
