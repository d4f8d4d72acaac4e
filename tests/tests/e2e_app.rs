//! The installable app, in real Chromium: through the TLS front of issue 21
//! (`https://phone.test:PORT`, a real secure context) the page registers its
//! service worker, which takes control and caches the page's hashed files;
//! Chromium's installability check (`Page.getInstallabilityErrors`) finds
//! nothing missing; no Content-Security-Policy violation; and with the host
//! gone the app says plainly that it cannot reach it. On loopback, the app
//! badge counts the open questions of every session.
//!
//! Browser tests: plain `cargo test` lists them as ignored; `cargo xtask test`
//! runs them with `ASK_USER_E2E_DIST` naming the build.

use ask_user_host::server::push::PushMessage;
use ask_user_tests::browser::{Browser, e2e_dist};
use ask_user_tests::host_process::HostProcess;
use ask_user_tests::tls_front::{self, PHONE_HOST, TestCert, TlsFront};
use ask_user_tests::wait::PATIENCE;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Runs an async `script` (its last argument is the callback) and returns what it passed.
async fn run_async(browser: &Browser, script: &str) -> Value {
    browser
        .client()
        .execute_async(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("{script}: {e}"))
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshots folder can be made");
    dir
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn through_the_tls_front_the_app_is_installable_its_worker_caches_the_page_and_says_when_the_host_is_gone()
 {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let mut host =
        HostProcess::start(&e2e_dist(), &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());

    let mut args = cert.chromium_args();
    args.push("--lang=en-US".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let browser = Browser::launch_with_args(&args)
        .await
        .expect("Chromium starts");
    let origin = front.origin();
    browser.goto(&format!("{origin}/")).await.unwrap();

    // The worker takes control of the page and has cached its hashed files.
    browser.wait_for_js("the service worker to control the page",
        "return navigator.serviceWorker.controller && navigator.serviceWorker.controller.scriptURL",
    )
    .await;
    let cached = run_async(
        &browser,
        "const done = arguments[arguments.length - 1];
         caches.open('ask-user-page-v1').then(c => c.keys())
           .then(keys => done(keys.map(k => new URL(k.url).pathname).sort()));",
    )
    .await;
    let cached: Vec<&str> = cached
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let index = std::fs::read_to_string(e2e_dist().join("index.html")).unwrap();
    for suffix in ["_bg.wasm", ".js", ".css"] {
        let file = cached
            .iter()
            .find(|f| f.ends_with(suffix))
            .unwrap_or_else(|| panic!("no cached {suffix} file in {cached:?}"));
        assert!(index.contains(*file), "{file} is one of the page's files");
    }
    assert!(
        !cached.iter().any(|f| *f == "/" || f.starts_with("/api")),
        "only the hashed files are cached: {cached:?}"
    );

    // Chromium's own installability check: the manifest, its icons, the worker.
    let deadline = Instant::now() + PATIENCE;
    let errors = loop {
        let result = browser
            .cdp("Page.getInstallabilityErrors", json!({}))
            .await
            .unwrap();
        let errors = result["installabilityErrors"].as_array().unwrap().clone();
        if errors.is_empty() || Instant::now() > deadline {
            break errors;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(errors.is_empty(), "installability errors: {errors:?}");
    let manifest = browser.cdp("Page.getAppManifest", json!({})).await.unwrap();
    assert_eq!(
        manifest["url"],
        json!(format!("{origin}/manifest.webmanifest")),
        "{manifest}"
    );
    assert_eq!(manifest["errors"], json!([]), "{manifest}");
    let theme = browser
        .client()
        .execute(
            "return [...document.querySelectorAll('meta[name=theme-color]')].map(m => m.media + ' ' + m.content)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        theme,
        json!([
            "(prefers-color-scheme: light) #eef0f3",
            "(prefers-color-scheme: dark) #131519"
        ])
    );

    // The document's policy through the front: the worker and the manifest
    // from this origin, nothing wider; and the browser saw no violation.
    let reply = tls_front::https(
        &cert,
        front.port(),
        tls_front::request(
            "GET",
            &format!("{PHONE_HOST}:{}", front.port()),
            "/",
            &[],
            "",
        ),
    )
    .await;
    let policy = reply.headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("; worker-src 'self'; manifest-src 'self'; "),
        "{policy}"
    );
    assert!(policy.starts_with("default-src 'none'; "), "{policy}");
    let errors = browser.page_errors().await.unwrap();
    let violations: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("CSP violation"))
        .collect();
    assert!(violations.is_empty(), "{violations:?}");

    // The host stops: the app, opened again, says so instead of a browser error page.
    host.terminate_and_wait();
    browser.goto(&format!("{origin}/")).await.unwrap();
    let notice = browser
        .wait_for_js(
            "the worker's notice",
            "const p = document.querySelector('[data-auq=unreachable]'); return p && p.textContent",
        )
        .await;
    let notice = notice.as_str().unwrap();
    assert!(
        notice.starts_with(&format!(
            "Nothing answers at {PHONE_HOST}:{}: the host may have stopped",
            front.port()
        )),
        "{notice}"
    );
    let styled = browser
        .client()
        .execute(
            "return getComputedStyle(document.querySelector('main')).maxWidth",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        styled,
        json!("560px"),
        "the notice's style is allowed by its hash"
    );
    let errors = browser.page_errors().await.unwrap();
    let violations: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("CSP violation"))
        .collect();
    assert!(violations.is_empty(), "{violations:?}");
    browser
        .screenshot(&screenshots().join("app-host-unreachable.png"))
        .await
        .unwrap();
    browser.close().await;
}

/// Records what the page passes to `navigator.setAppBadge` (headless Chromium
/// has no installed app to badge).
const RECORD_BADGE: &str = r#"
navigator.setAppBadge = (n) => { window.__badges = (window.__badges || []).concat([n]); return Promise.resolve(); };
navigator.clearAppBadge = () => { window.__badges = (window.__badges || []).concat([0]); return Promise.resolve(); };
"#;

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_app_badge_counts_the_open_questions_of_every_session() {
    let host = HostProcess::start(&e2e_dist(), &[]).expect("the host starts");
    let browser = Browser::launch_with_args(&["--lang=en-US"])
        .await
        .expect("Chromium starts");
    browser
        .cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": RECORD_BADGE }),
        )
        .await
        .unwrap();
    browser.goto(host.url()).await.unwrap();
    browser.wait_for_css("[data-auq=session]").await.unwrap();
    // The host's own page may ask for pushes too (opt-in: off until pressed).
    let toggle = browser
        .wait_for_css("[data-auq=notify-device]")
        .await
        .expect("the desktop page offers \"Notify this device\"");
    assert_eq!(
        toggle.attr("aria-pressed").await.unwrap().as_deref(),
        Some("false")
    );

    let client = reqwest::Client::new();
    let mut asks = Vec::new();
    for (n, session) in ["build", "deploy"].into_iter().enumerate() {
        let ask = client
            .post(format!("{}/api/sessions/{session}/ask", host.origin()))
            .bearer_auth(host.token().unwrap())
            .json(
                &json!({"questions": [{"id": "go", "question": format!("Go on with {session}?"),
                "options": [{"label": "Yes"}, {"label": "No"}]}]}),
            )
            .send();
        asks.push(tokio::spawn(ask));
        let want = n + 1;
        browser
            .wait_for_js(
                &format!("the badge at {want}"),
                &format!("return (window.__badges || []).at(-1) === {want}"),
            )
            .await;
    }
    let badges = browser
        .client()
        .execute("return window.__badges", vec![])
        .await
        .unwrap();
    assert_eq!(
        badges.as_array().unwrap().last(),
        Some(&json!(2)),
        "{badges}"
    );
    for ask in asks {
        ask.abort();
    }
    browser.close().await;
}

/// Delivers `message` to the page's service worker as a push (CDP), trying
/// the first registration ids a fresh profile hands out.
async fn deliver_push(browser: &Browser, origin: &str, message: &Value) {
    browser
        .cdp("ServiceWorker.enable", json!({}))
        .await
        .unwrap();
    // The registration's id is not known here (a fresh profile numbers its
    // registrations from 0, but not always from its first): offer the
    // message to each of the first ids. Only one registration exists, so at
    // most one shows it; an id without one is refused or ignored.
    let mut taken = 0;
    let mut last = String::new();
    for id in 0..16 {
        match browser
            .cdp(
                "ServiceWorker.deliverPushMessage",
                json!({"origin": origin, "registrationId": id.to_string(), "data": message.to_string()}),
            )
            .await
        {
            Ok(_) => taken += 1,
            Err(e) => last = e.to_string(),
        }
    }
    assert!(
        taken > 0,
        "no service worker registration took the push: {last}"
    );
}

/// Delivers `message` (an ask) until the worker shows its notification: a
/// push that reaches a worker still starting can be dropped by Chromium.
async fn push_until_shown(browser: &Browser, origin: &str, message: &PushMessage) -> Value {
    let message: Value = serde_json::from_str(&message.to_json()).unwrap();
    for _ in 0..5 {
        deliver_push(browser, origin, &message).await;
        if let Some(shown) = notifications_within(browser, Duration::from_secs(4)).await {
            return shown;
        }
    }
    panic!("the worker showed no notification for {message}");
}

/// The worker's notifications once there are some, within `patience`.
async fn notifications_within(browser: &Browser, patience: Duration) -> Option<Value> {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        let shown = notifications_until(browser, "notifications", |_| true).await;
        if !shown.as_array().unwrap().is_empty() {
            return Some(shown);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_push_shows_a_notification_for_the_question_and_its_follow_up_closes_it() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let host =
        HostProcess::start(&e2e_dist(), &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());
    let mut args = cert.chromium_args();
    args.push("--lang=en-US".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let browser = Browser::launch_with_args(&args)
        .await
        .expect("Chromium starts");
    let origin = front.origin();
    browser
        .cdp(
            "Browser.grantPermissions",
            json!({"origin": origin, "permissions": ["notifications"]}),
        )
        .await
        .unwrap();
    browser.goto(&format!("{origin}/")).await.unwrap();
    browser
        .wait_for_js(
            "the service worker to control the page",
            "return navigator.serviceWorker.controller !== null",
        )
        .await;

    let tag = "ask-user:deploy:q_1";
    deliver_push(
        &browser,
        &origin,
        &json!({"kind": "ask", "tag": tag, "session": "deploy", "question": "q_1",
                "who": "claude-code", "text": "Ship it to production?", "count": 1,
                "url": "/?session=deploy&q=q_1", "item": "ship",
                "choices": ["Yes (Recommended)", "No"]}),
    )
    .await;
    let shown = notifications_until(&browser, "the notification", |n| !n.is_empty()).await;
    assert_eq!(
        shown,
        json!([{"title": "claude-code asks", "body": "Ship it to production?",
                "tag": tag, "url": "/?session=deploy&q=q_1",
                // The options as buttons, the recommended one with its badge word.
                "actions": ["Yes (Recommended)", "No"]}])
    );

    deliver_push(&browser, &origin, &json!({"kind": "close", "tag": tag})).await;
    notifications_until(&browser, "the notification to close", |n| n.is_empty()).await;
    browser.close().await;
}

/// The service worker's notifications (title, body, tag, url), once `done` says so.
async fn notifications_until(
    browser: &Browser,
    what: &str,
    done: impl Fn(&Vec<Value>) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let shown = run_async(
            browser,
            "const done = arguments[arguments.length - 1];
             navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns =>
               done(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url,
                                  actions: (n.actions || []).map(a => a.title)}))));",
        )
        .await;
        if done(shown.as_array().unwrap()) {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what}: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A browser that trusts `cert`, holds the paired device's `cookie` (a
/// `name=value` pair) and may show notifications on `origin`, on `path` there
/// once the service worker controls the page.
async fn app_browser(cert: &TestCert, origin: &str, cookie: &str, path: &str) -> Browser {
    let mut args = cert.chromium_args();
    args.push("--lang=en-US".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let browser = Browser::launch_with_args(&args)
        .await
        .expect("Chromium starts");
    browser
        .cdp(
            "Browser.grantPermissions",
            json!({"origin": origin, "permissions": ["notifications"]}),
        )
        .await
        .unwrap();
    // The device's credential, as collecting it left it.
    let (name, value) = cookie.split_once('=').unwrap();
    browser
        .cdp(
            "Network.setCookie",
            json!({"name": name, "value": value, "url": origin, "secure": true, "httpOnly": true}),
        )
        .await
        .unwrap();
    browser.goto(&format!("{origin}{path}")).await.unwrap();
    browser
        .wait_for_js(
            "the service worker to control the page",
            "return navigator.serviceWorker.controller !== null",
        )
        .await;
    browser
}

/// The agent's blocking ask of `request` in `session` on `host`: the task
/// ends with its status and JSON body.
fn agent_asks(
    host: &HostProcess,
    session: &str,
    request: Value,
) -> tokio::task::JoinHandle<(reqwest::StatusCode, Value)> {
    let ask = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/ask", host.origin()))
        .bearer_auth(host.token().unwrap())
        .json(&request)
        .send();
    tokio::spawn(async move {
        let response = ask.await.expect("the host answers the agent");
        let status = response.status();
        (status, response.json().await.unwrap_or_default())
    })
}

/// A GET on `host` with its token.
async fn get_json(host: &HostProcess, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{}{path}", host.origin()))
        .bearer_auth(host.token().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The id of the `nth` question pending in `session` (oldest first), once
/// there is one.
async fn pending_id(host: &HostProcess, session: &str, nth: usize) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = get_json(host, &format!("/api/sessions/{session}/questions")).await;
        if let Some(id) = list["pending"][nth]["id"].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "nothing pending in {session}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the worker's notification as the person would: the worker's own
/// `notificationclick` handler runs for it, with `action` ("" for the body).
async fn click_notification(browser: &Browser, origin: &str, action: &str) {
    let script = format!(
        "self.registration.getNotifications().then(shown => shown.forEach(notification =>
           self.dispatchEvent(new NotificationEvent('notificationclick', {{notification, action: {action}}}))))",
        action = json!(action)
    );
    browser
        .evaluate_in_service_worker(&format!("{origin}/sw.js"), &script)
        .await
        .unwrap();
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_tap_on_the_notification_opens_the_app_on_its_question_whatever_was_open() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let host =
        HostProcess::start(&e2e_dist(), &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());
    let origin = front.origin();
    let (_, cookie) = tls_front::pair_phone_with(
        host.origin(),
        host.token().unwrap(),
        &cert,
        &front,
        "Pixel 8",
    )
    .await;
    // The app was left on another session.
    let browser = app_browser(&cert, &origin, &cookie, "/?session=elsewhere").await;
    browser.wait_for_js("the other session",
        "const s = document.querySelector('[data-auq=session]'); return s && s.textContent === 'elsewhere'",
    )
    .await;

    // Another question waits in that session before the one pushed.
    let _first = agent_asks(
        &host,
        "deploy",
        json!({"questions": [{"id": "branch", "question": "Which branch?"}]}),
    );
    pending_id(&host, "deploy", 0).await;
    let _agent = agent_asks(
        &host,
        "deploy",
        json!({"questions": [{"id": "notes", "question": "What goes in the release notes?"}]}),
    );
    let id = pending_id(&host, "deploy", 1).await;
    let message = PushMessage::ask("deploy", &id, "claude-code", "Release notes", 1);
    let shown = push_until_shown(&browser, &origin, &message).await;
    assert_eq!(shown[0]["actions"], json!(["Open"]), "{shown}");

    click_notification(&browser, &origin, "").await;
    let opened = browser.wait_for_js("the app on the question",
        "const q = document.querySelector('[data-auq=question-composer]');
         return q && q.dataset.questionId !== '' &&
           [location.pathname + location.search, document.querySelector('[data-auq=session]').textContent, q.dataset.questionId]",
    )
    .await;
    assert_eq!(
        opened,
        json!([format!("/?session=deploy&q={id}"), "deploy", id]),
        "the window shows the pushed question's session and the question"
    );
    let text = browser.body_text().await.unwrap();
    assert!(
        text.contains("What goes in the release notes?") && !text.contains("Which branch?"),
        "the pushed question, not the one before it:\n{text}"
    );
    notifications_until(&browser, "the notification to close", |n| n.is_empty()).await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn an_option_button_on_the_notification_answers_and_the_agent_learns_the_device_answered() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    // A data directory, so the answer's record (who answered) is kept.
    let data = DataDir::new("notification-answers");
    let host = HostProcess::start(
        &e2e_dist(),
        &[
            "--remote",
            &front.origin(),
            "--data-dir",
            data.0.to_str().unwrap(),
        ],
    )
    .expect("the host starts");
    front.forward_to_origin(host.origin());
    let origin = front.origin();
    let (device, cookie) = tls_front::pair_phone_with(
        host.origin(),
        host.token().unwrap(),
        &cert,
        &front,
        "Pixel 8",
    )
    .await;
    let browser = app_browser(&cert, &origin, &cookie, "/").await;

    let labels = ["Yes (Recommended)".to_owned(), "No".to_owned()];
    let agent = agent_asks(
        &host,
        "deploy",
        json!({"questions": [{"id": "ship", "question": "Ship it to production?",
            "options": [{"label": labels[0]}, {"label": labels[1]}]}]}),
    );
    let id = pending_id(&host, "deploy", 0).await;
    let message = PushMessage::ask_with_choices(
        "deploy",
        &id,
        "claude-code",
        "Ship it to production?",
        1,
        Some(("ship", &labels)),
    );
    let shown = push_until_shown(&browser, &origin, &message).await;
    assert_eq!(shown[0]["actions"], json!(labels), "{shown}");

    // The second button: not the recommended one, which nothing pre-chooses.
    click_notification(&browser, &origin, "answer:1").await;
    let (status, answered) = tokio::time::timeout(PATIENCE, agent)
        .await
        .expect("the agent's call returns")
        .unwrap();
    assert_eq!(status, reqwest::StatusCode::OK, "{answered}");
    assert_eq!(
        answered,
        json!({"answers": [{"id": "ship", "selected": ["No"]}]})
    );
    let history = get_json(&host, "/api/history").await;
    assert_eq!(
        history["records"][0]["by"],
        json!({"kind": "device", "device": {"id": device, "name": "Pixel 8"}}),
        "{history}"
    );
    notifications_until(&browser, "the notification to close", |n| n.is_empty()).await;
    browser.close().await;
}

/// A data directory of the test's own, removed when dropped.
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("e2e-app-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
