//! The JavaScript embed (crates/embed, served at `/embed/`) on the real host in
//! headless Chromium: the example page shows an agent's question in its own
//! composer area and answers it; `handle.unmount()` removes the DOM and closes
//! the event stream. Plus the host side of the embed's token: the event stream
//! (and only it) takes `?token=`, because `EventSource` cannot send headers.
//!
//! The two browser tests are ignored by a plain `cargo test`; `cargo xtask test`
//! runs them with `ASK_USER_E2E_DIST` naming the build (after building
//! `dist/embed/` with `cargo xtask build-embed`). Run without that, they fail
//! and say what is missing. The HTTP test always runs.

use ask_user_tests::browser::{Browser, e2e_dist};
use ask_user_tests::host_process::HostProcess;
use ask_user_tests::http_host::{TestHost, send};
use ask_user_tests::wait::within;
use fantoccini::Locator;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tokio::task::JoinHandle;

/// The example page's question area, once `mount()` rendered into it.
const EXAMPLE_MOUNT: &str = "#questions > [data-auq=embed]";
/// A question card that is showing.
const SHOWN: &str = "[data-auq=question-composer]:not([hidden])";

fn embed_dist() -> PathBuf {
    let dist = e2e_dist();
    assert!(
        dist.join("embed/ask_user_embed.js").is_file() && dist.join("embed/example.html").is_file(),
        "{} has no embed/ask_user_embed.js or embed/example.html; run `cargo xtask build-embed` after the Trunk build",
        dist.display()
    );
    dist
}

/// The agent's blocking ask over HTTP, as a task ending with (status, body).
fn ask(host: &HostProcess, session: &str, request: Value) -> JoinHandle<(StatusCode, Value)> {
    let builder = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/ask", host.origin()))
        .bearer_auth(host.token().expect("the host's URL carries its token"))
        .body(request.to_string());
    tokio::spawn(send(builder))
}

fn database_question() -> Value {
    json!({"questions": [{
        "id": "db",
        "header": "Database",
        "question": "Which database should the new service use?",
        "options": [
            {"label": "Postgres (Recommended)", "description": "Boring, proven, already in our stack."},
            {"label": "SQLite", "description": "One file, no server."}
        ]
    }]})
}

/// Saves a screenshot into `ASK_USER_SCREENSHOTS` when it is set (for looking at it).
async fn maybe_screenshot(browser: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("ASK_USER_SCREENSHOTS") {
        let path = Path::new(&dir).join(name);
        browser.screenshot(&path).await.expect("screenshot");
        eprintln!("screenshot: {}", path.display());
    }
}

async fn run_js(browser: &Browser, script: &str) -> Value {
    browser
        .client()
        .execute(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// The example page with the token in its fragment: `mount()` gets it, so no
/// cookie is involved (POSTs carry Bearer, the stream `?token=`).
async fn open_example(host: &HostProcess, browser: &Browser) {
    let token = host.token().expect("the host's URL carries its token");
    browser
        .goto(&format!(
            "{}/embed/example.html#token={token}",
            host.origin()
        ))
        .await
        .expect("the example page loads");
    let render = browser
        .wait_for_render(EXAMPLE_MOUNT)
        .await
        .expect("the page can be inspected");
    assert!(
        render.errors.is_empty(),
        "the example page logged errors: {:#?}",
        render.errors
    );
    assert!(
        render.element.is_some(),
        "mount() never rendered into the example page's #questions"
    );
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn example_page_shows_an_agents_question_in_its_own_composer_area_and_answers_it() {
    let dist = embed_dist();
    let host = HostProcess::start(&dist, &[]).expect("the host starts and prints its URL");
    let browser = Browser::launch().await.expect("headless Chromium starts");
    open_example(&host, &browser).await;
    assert_eq!(
        run_js(
            &browser,
            "return getComputedStyle(document.getElementById('own-composer')).display === 'none';"
        )
        .await,
        json!(false),
        "the page's own message box shows while nothing is pending"
    );

    let agent = ask(&host, "default", database_question());
    let card = browser
        .wait_for_css(&format!("#composer-area #questions {SHOWN}"))
        .await
        .expect("the question appears inside the page's composer area");
    let text = card.text().await.expect("card text");
    assert!(
        text.contains("Which database should the new service use?"),
        "{text}"
    );
    assert_eq!(
        run_js(
            &browser,
            "return getComputedStyle(document.getElementById('own-composer')).display === 'none';"
        )
        .await,
        json!(true),
        "onSlotChange(true) hid the page's own message box"
    );
    assert_eq!(
        run_js(
            &browser,
            "return getComputedStyle(document.querySelector('#questions [data-auq=live]')).position;"
        )
        .await,
        json!("absolute"),
        "the inline stylesheet styles the card (auq- rules apply)"
    );
    maybe_screenshot(&browser, "embed-example.png").await;

    let options = browser
        .client()
        .find_all(Locator::Css("#questions [data-auq=option]"))
        .await
        .expect("options");
    let mut sqlite = None;
    for option in options {
        if option.attr("data-label").await.ok().flatten().as_deref() == Some("SQLite") {
            sqlite = Some(option);
        }
    }
    sqlite
        .expect("an SQLite option")
        .click()
        .await
        .expect("click");
    browser
        .wait_for_css("#questions [data-auq=submit]")
        .await
        .expect("submit button")
        .click()
        .await
        .expect("click Submit");

    let (status, body) = within("the agent's answer", agent).await.expect("ask task");
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );
    browser
        .wait_for_css("#own-composer:not([hidden])")
        .await
        .expect("onSlotChange(false) brings the page's own message box back");
    let errors = browser.page_errors().await.expect("log");
    browser.close().await;
    assert!(errors.is_empty(), "page errors: {errors:#?}");
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn unmount_removes_the_mounted_dom_and_closes_the_event_stream() {
    let dist = embed_dist();
    let host = HostProcess::start(&dist, &[]).expect("the host starts and prints its URL");
    let browser = Browser::launch().await.expect("headless Chromium starts");
    open_example(&host, &browser).await;
    let token = host.token().expect("token");

    // Record every EventSource, then mount a second composer (its own session)
    // into a fresh element through the module's public entry, after options
    // that are wrong were refused with an error naming them.
    let script = format!(
        r#"
        const done = arguments[arguments.length - 1];
        const sources = [];
        const Native = window.EventSource;
        window.EventSource = class extends Native {{
            constructor(...args) {{ super(...args); sources.push(this); }}
        }};
        const root = document.createElement('section');
        root.id = 'lifecycle';
        root.innerHTML = '<p id="kept">page content</p>';
        document.body.append(root);
        import('/embed/ask_user_embed.js').then(async (m) => {{
            await m.default();
            const throwing = {{ get token() {{ throw new Error('no'); }} }};
            const refused = [{{ session: 5 }}, {{ styles: 'yes' }}, {{ onSlotChange: 3 }}, {{ view: {{}} }}, throwing, 'x'].map((bad) => {{
                try {{ m.mount(root, bad); return 'mounted'; }} catch (e) {{ return e.message; }}
            }});
            const handle = m.mount(root, {{ session: 'lifecycle', token: '{token}' }});
            window.__lifecycle = {{ handle, root, sources }};
            done({{ refused }});
        }}).catch((e) => done(String(e)));
        "#
    );
    let mounted = browser
        .client()
        .execute_async(&script, vec![])
        .await
        .expect("mount script");
    let refused: Vec<&str> = mounted["refused"]
        .as_array()
        .unwrap_or_else(|| panic!("mount() threw: {mounted}"))
        .iter()
        .map(|m| m.as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        refused,
        [
            "mount: options.session: a string, not a number",
            "mount: options.styles: true or false, not a string",
            "mount: options.onSlotChange: a function, not a number",
            "mount: options.view: a string, not an object",
            "mount: options.token: reading it threw",
            "mount: options must be an object",
        ],
        "each refusal names the option, what it takes and what it got"
    );

    let agent = ask(
        &host,
        "lifecycle",
        json!({"questions": [{"id": "go", "question": "Ship it on Friday?", "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    let card = browser
        .wait_for_css(&format!("#lifecycle {SHOWN}"))
        .await
        .expect("the mounted composer shows its session's question");
    assert!(card.text().await.unwrap().contains("Ship it on Friday?"));

    let after = run_js(
        &browser,
        r#"
        const t = window.__lifecycle;
        const before = t.sources.filter((s) => s.url.includes('/sessions/lifecycle/')).map((s) => s.readyState);
        t.handle.unmount();
        t.handle.unmount(); // a second call does nothing
        const mine = t.sources.filter((s) => s.url.includes('/sessions/lifecycle/'));
        return {
            before,
            after: mine.map((s) => s.readyState),
            tokenInUrl: mine.every((s) => s.url.includes('token=')),
            mounted: t.handle.mounted,
            embeds: t.root.querySelectorAll('[data-auq]').length,
            children: [...t.root.children].map((c) => c.id),
            exampleStillMounted: !!document.querySelector('#questions > [data-auq=embed]'),
        };
        "#,
    )
    .await;
    browser.close().await;
    agent.abort();

    assert_eq!(
        after["before"],
        json!([1]),
        "one open stream while mounted: {after}"
    );
    assert_eq!(
        after["after"],
        json!([2]),
        "unmount closed the stream (readyState CLOSED): {after}"
    );
    assert_eq!(after["tokenInUrl"], json!(true), "{after}");
    assert_eq!(after["mounted"], json!(false), "{after}");
    assert_eq!(
        after["embeds"],
        json!(0),
        "no composer DOM is left: {after}"
    );
    assert_eq!(
        after["children"],
        json!(["kept"]),
        "only the page's own content is left: {after}"
    );
    assert_eq!(
        after["exampleStillMounted"],
        json!(true),
        "other mounts are untouched: {after}"
    );
}

#[tokio::test]
async fn the_event_stream_takes_the_token_from_its_query_and_no_other_route_does() {
    let host = TestHost::start().await;
    let client = &host.client;
    let token = host.token().to_owned();

    let response = within(
        "the event stream to open",
        client
            .get(host.url(&format!("/api/sessions/s1/events?token={token}")))
            .send(),
    )
    .await
    .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    drop(response);

    let (status, _) = send(client.get(host.url("/api/sessions/s1/events?token=wrong"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) =
        send(client.get(host.url(&format!("/api/sessions/s1/questions?token={token}")))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "only the stream takes it");
    let (status, _) = send(
        client
            .post(host.url(&format!("/api/sessions/s1/messages?token={token}")))
            .body(r#"{"text":"hi"}"#),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "POSTs need the header");
}
