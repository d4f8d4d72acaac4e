//! The full loop in a real browser: the real host (`ask-user serve`, a child
//! process) serving the Trunk release build, headless Chromium driven through
//! the page's roles and accessible names, and the agent's side of an ask.
//!
//! Every wait polls with a bound ([`PATIENCE`]) and fails with a screenshot, the
//! page's state and the host's log; nothing here sleeps to let time pass.
//! Like the smoke test, the browser tests built on this are `#[ignore]`d;
//! `cargo xtask test` runs them with [`E2E_DIST_ENV`](crate::browser::E2E_DIST_ENV)
//! naming the build, and without it they fail and say what is missing.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, Locator};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::browser::{Browser, Cdp, e2e_dist};
use crate::host_process::HostProcess;
use crate::wait::PATIENCE;

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

/// Chromium's interface language is pinned so the accessible names are the
/// English ones whatever the machine's locale.
const BROWSER_ARGS: &[&str] = &["--lang=en-US"];

/// One pending item's option as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OptionState {
    /// `data-label`: the agent's label, as sent.
    pub label: String,
    /// `radio` or `checkbox`.
    pub role: String,
    /// `aria-checked`.
    pub checked: bool,
}

/// One transcript entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Message {
    /// `user` or `agent`.
    pub role: String,
    /// The text as rendered (`textContent`).
    pub text: String,
}

/// What the page shows at one moment (read in one script, so it is consistent).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Snapshot {
    /// `document.visibilityState`.
    pub visibility: String,
    /// The question composer is rendered and visible.
    pub question_shown: bool,
    /// The host's id of the request on screen (`data-question-id`).
    pub question_id: Option<String>,
    /// The index of the item on screen.
    pub item: Option<u64>,
    /// `editing`, `sending`, `sent`, `failed` (or `idle`).
    pub status: Option<String>,
    /// The text of the question on screen.
    pub question: Option<String>,
    /// The progress text ("2 of 3").
    pub progress: Option<String>,
    /// The options of the item on screen.
    pub options: Vec<OptionState>,
    /// The value of the free-text box ("Other" / "Your answer") on screen.
    pub answer_box: Option<String>,
    /// The normal composer (the "Message" box) is visible.
    pub message_shown: bool,
    /// The "resolved elsewhere" notice, if shown.
    pub notice: Option<String>,
    /// The "the agent stopped waiting" line of the request on screen, if shown.
    pub detached: Option<String>,
    /// A send/cancel error, if shown.
    pub error: Option<String>,
    /// The transcript, oldest first.
    pub transcript: Vec<Message>,
    /// The focused element: its `data-auq` hook, else its tag name.
    pub focus: Option<String>,
    /// No "Reconnecting…" line: the event stream is not (re)connecting.
    pub stream_settled: bool,
}

impl Snapshot {
    /// True when the option labelled `label` is checked.
    pub fn checked(&self, label: &str) -> bool {
        self.options.iter().any(|o| o.label == label && o.checked)
    }
}

/// Reads a [`Snapshot`]; hooks are the composer's `data-auq` attributes.
const SNAPSHOT_JS: &str = r#"
const q = document.querySelector('[data-auq=question-composer]');
const m = document.querySelector('[data-auq=message-composer]');
const shown = (el) => !!el && el.checkVisibility();
const text = (el) => (el ? el.textContent : null);
const inQ = (sel) => (q ? q.querySelector(sel) : null);
const box = inQ('[data-auq=text]');
const active = document.activeElement;
const item = q ? q.getAttribute('data-item') : null;
return {
  visibility: document.visibilityState,
  question_shown: shown(q),
  question_id: (q && q.getAttribute('data-question-id')) || null,
  item: item ? Number(item) : null,
  status: q ? q.getAttribute('data-status') : null,
  question: text(inQ('.auq-question')),
  progress: text(inQ('[data-auq=progress]')),
  options: q ? [...q.querySelectorAll('[data-auq=option]')].map((o) => ({
    label: o.getAttribute('data-label'),
    role: o.getAttribute('role'),
    checked: o.getAttribute('aria-checked') === 'true',
  })) : [],
  answer_box: box ? box.value : null,
  message_shown: shown(m),
  notice: text(document.querySelector('[data-auq=notice]')),
  detached: shown(inQ('[data-auq=detached]')) ? text(inQ('[data-auq=detached]')) : null,
  error: text(document.querySelector('[data-auq=error]')),
  transcript: [...document.querySelectorAll('[data-auq=message-item]')].map((li) => ({
    role: li.getAttribute('data-role'),
    text: li.textContent,
  })),
  focus: active && active !== document.body
    ? (active.getAttribute('data-auq') || active.tagName.toLowerCase())
    : null,
  stream_settled: !document.querySelector('[data-auq=connection]'),
};
"#;

/// Installed before the page's own scripts: wraps `EventSource` so a test can
/// hold `question/resolved` frames back (and release them) to see what the page
/// does between its POST's answer and the host's frame.
const HOLD_RESOLVED_JS: &str = r#"
(() => {
  const Native = window.EventSource;
  const state = { hold: false, held: [], seen: 0 };
  state.release = () => {
    state.hold = false;
    while (state.held.length) state.held.shift()();
  };
  window.__auqResolved = state;
  window.EventSource = class extends Native {
    addEventListener(type, listener, options) {
      if (type !== 'question/resolved') return super.addEventListener(type, listener, options);
      const source = this;
      const wrapped = (event) => {
        state.seen += 1;
        const deliver = () => listener.call(source, event);
        if (state.hold) state.held.push(deliver); else deliver();
      };
      return super.addEventListener(type, wrapped, options);
    }
  };
})();
"#;

/// An ARIA role a control is looked up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `button`.
    Button,
    /// `radio` (a single-select option).
    Radio,
    /// `checkbox` (a multi-select option).
    Checkbox,
    /// `textbox` (the "Other" / "Your answer" / "Message" boxes).
    Textbox,
}

impl Role {
    fn css(self) -> &'static str {
        match self {
            Role::Button => "button, [role=button]",
            Role::Radio => "[role=radio]",
            Role::Checkbox => "[role=checkbox]",
            Role::Textbox => "textarea, input, [role=textbox]",
        }
    }

    fn aria(self) -> &'static str {
        match self {
            Role::Button => "button",
            Role::Radio => "radio",
            Role::Checkbox => "checkbox",
            Role::Textbox => "textbox",
        }
    }

    /// Buttons and boxes are named exactly; an option's name begins with its
    /// displayed label (a "Recommended" badge may follow).
    fn name_matches(self, computed: &str, name: &str) -> bool {
        let computed = computed.trim();
        match self {
            Role::Radio | Role::Checkbox => {
                computed == name
                    || computed
                        .strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with(' '))
            }
            Role::Button | Role::Textbox => computed == name,
        }
    }
}

/// The real host serving the release build, one headless Chromium, and an
/// HTTP client for the agent's side.
pub struct E2e {
    /// The `ask-user serve` process.
    pub host: HostProcess,
    browser: Browser,
    http: reqwest::Client,
    errors: Mutex<Vec<String>>,
    name: String,
}

impl E2e {
    /// Starts `ask-user serve --addr 127.0.0.1:0 --dist <build> <extra_args>`
    /// and a headless Chromium. `name` names failure screenshots.
    ///
    /// # Panics
    /// If the browser tests' environment is missing (see [`e2e_dist`]), or the
    /// host or the browser cannot be started.
    pub async fn start(name: &str, extra_args: &[&str]) -> Self {
        let dist = e2e_dist();
        let host =
            HostProcess::start(&dist, extra_args).expect("the host starts and prints its URL");
        Self::with_host(name, host).await
    }

    /// Starts `ask-user serve --addr 127.0.0.1:0 <extra_args>` in the empty
    /// folder `cwd`, without `--dist`: the page is the one built into the
    /// binary (`ASK_USER_PAGE_DIST` at build time, as `cargo xtask test` builds it).
    ///
    /// # Panics
    /// As [`E2e::start`].
    pub async fn start_embedded(name: &str, cwd: &std::path::Path, extra_args: &[&str]) -> Self {
        e2e_dist();
        let host =
            HostProcess::start_in(cwd, extra_args).expect("the host starts and prints its URL");
        Self::with_host(name, host).await
    }

    async fn with_host(name: &str, host: HostProcess) -> Self {
        assert!(
            host.token().is_some(),
            "the host's URL carries its token: {}",
            host.url()
        );
        let browser = Browser::launch_with_args(BROWSER_ARGS)
            .await
            .expect("headless Chromium starts");
        Self {
            host,
            browser,
            http: reqwest::Client::new(),
            errors: Mutex::new(Vec::new()),
            name: name.to_owned(),
        }
    }

    /// The fantoccini client.
    pub fn client(&self) -> &Client {
        self.browser.client()
    }

    /// Runs a Chrome DevTools Protocol command (e.g. `Emulation.setEmulatedMedia`).
    pub async fn cdp(&self, cmd: &'static str, params: Value) -> Value {
        self.browser
            .cdp(cmd, params)
            .await
            .unwrap_or_else(|err| panic!("CDP {cmd} failed: {err}"))
    }

    /// The host's session token.
    pub fn token(&self) -> &str {
        self.host.token().unwrap_or_default()
    }

    /// The absolute URL of a path on the host.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.host.origin())
    }

    // ── the agent's side ──────────────────────────────────────────────────────

    /// The agent's blocking `POST /api/sessions/{session}/ask`, in the
    /// background; the task ends with the host's (status, JSON body).
    pub fn ask(&self, session: &str, request: &Value) -> JoinHandle<(StatusCode, Value)> {
        let call = self
            .http
            .post(self.url(&format!("/api/sessions/{session}/ask")))
            .bearer_auth(self.token())
            .header("content-type", "application/json")
            .body(request.to_string());
        tokio::spawn(async move {
            let response = call.send().await.expect("the ask reaches the host");
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        })
    }

    /// Waits (up to [`PATIENCE`]) for what the agent's call returned.
    pub async fn reply<T>(&self, what: &str, call: JoinHandle<T>) -> T {
        match tokio::time::timeout(PATIENCE, call).await {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => panic!("{what}: the agent's task failed: {err}"),
            Err(_) => self.fail(what, "the agent's call did not return").await,
        }
    }

    /// The ids pending in `session` (`GET …/questions`).
    pub async fn pending_ids(&self, session: &str) -> Vec<String> {
        let response = self
            .http
            .get(self.url(&format!("/api/sessions/{session}/questions")))
            .bearer_auth(self.token())
            .send()
            .await
            .expect("the host answers");
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("JSON");
        body["pending"]
            .as_array()
            .expect("pending is a list")
            .iter()
            .map(|q| q["id"].as_str().expect("id").to_owned())
            .collect()
    }

    // ── the page ──────────────────────────────────────────────────────────────

    /// Opens the page for `session` in the current window, the way a person
    /// does: the host's `/?token=…` URL (which sets the cookie and redirects to
    /// `/`), then `/?session=NAME` for another session. Waits until the page
    /// runs and its event stream is up.
    pub async fn open(&self, session: &str) -> Snapshot {
        self.goto(self.host.url()).await;
        if session != ask_user_core::DEFAULT_SESSION {
            self.goto(&self.url(&format!("/?session={session}"))).await;
        }
        self.wait_until_ready().await
    }

    /// Reloads the current window and waits until the page runs again.
    pub async fn reload(&self) -> Snapshot {
        self.client().refresh().await.expect("the page reloads");
        self.wait_until_ready().await
    }

    async fn goto(&self, url: &str) {
        self.client()
            .goto(url)
            .await
            .unwrap_or_else(|err| panic!("could not open {url}: {err}"));
    }

    async fn wait_until_ready(&self) -> Snapshot {
        self.wait_for("the page to mount and its event stream to open", |s| {
            (s.message_shown || s.question_shown) && s.stream_settled
        })
        .await
    }

    /// Makes `question/resolved` frames in this window's future pages
    /// controllable ([`E2e::hold_resolved`], [`E2e::release_resolved`]).
    /// Call before [`E2e::open`].
    pub async fn intercept_resolved_frames(&self) {
        self.client()
            .issue_cmd(Cdp {
                cmd: "Page.addScriptToEvaluateOnNewDocument",
                params: json!({ "source": HOLD_RESOLVED_JS }),
            })
            .await
            .expect("chromedriver runs the CDP command");
    }

    /// Runs `source` at the start of every page this window loads from now on,
    /// before the page's own scripts (e.g. to instrument a browser API).
    pub async fn run_before_each_page(&self, source: &str) {
        self.client()
            .issue_cmd(Cdp {
                cmd: "Page.addScriptToEvaluateOnNewDocument",
                params: json!({ "source": source }),
            })
            .await
            .expect("chromedriver runs the CDP command");
    }

    /// From now on, `question/resolved` frames wait in the page until released.
    pub async fn hold_resolved(&self) {
        self.script("window.__auqResolved.hold = true; return null;")
            .await;
    }

    /// How many `question/resolved` frames the page received and holds back.
    pub async fn held_resolved(&self) -> u64 {
        self.script("return window.__auqResolved.held.length;")
            .await
            .as_u64()
            .unwrap_or_default()
    }

    /// Waits (up to [`PATIENCE`]) until the page holds `count` resolved frames.
    pub async fn wait_for_held_resolved(&self, count: u64) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let held = self.held_resolved().await;
            if held == count {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(
                    "waiting for the question/resolved frame",
                    &format!("the page holds {held} resolved frames, not {count}"),
                )
                .await;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Delivers every held `question/resolved` frame and stops holding.
    pub async fn release_resolved(&self) {
        self.script("window.__auqResolved.release(); return null;")
            .await;
    }

    /// Runs `script` in the page (it may `return` a JSON value).
    pub async fn script(&self, script: &str) -> Value {
        self.client()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|err| panic!("script failed: {err}\n{script}"))
    }

    /// Runs `script` with `element` as `arguments[0]`.
    pub async fn script_on(&self, element: &Element, script: &str) -> Value {
        let arg = serde_json::to_value(element).expect("an element serialises");
        self.client()
            .execute(script, vec![arg])
            .await
            .unwrap_or_else(|err| panic!("script failed: {err}\n{script}"))
    }

    /// What the page shows now.
    pub async fn snapshot(&self) -> Snapshot {
        let value = self.script(SNAPSHOT_JS).await;
        serde_json::from_value(value.clone())
            .unwrap_or_else(|err| panic!("unexpected snapshot {value}: {err}"))
    }

    /// Polls the page (up to [`PATIENCE`]) until `ready` holds; fails with a
    /// screenshot and the last snapshot otherwise.
    pub async fn wait_for(&self, what: &str, ready: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let snapshot = self.snapshot().await;
            if ready(&snapshot) {
                return snapshot;
            }
            if Instant::now() >= deadline {
                self.fail(
                    &format!("waiting for {what}"),
                    &format!("the page still shows {snapshot:#?}"),
                )
                .await;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (up to [`PATIENCE`]) for the visible control with `role` whose
    /// accessible name (Chromium's computed label) is `name`; checks that
    /// Chromium computes that role for it.
    pub async fn control(&self, role: Role, name: &str) -> Element {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.find_control(role, name).await {
                Ok(Some(element)) => {
                    let computed = self
                        .client()
                        .issue_cmd(ElementQuery::new(&element, "computedrole"))
                        .await
                        .expect("chromedriver computes the role");
                    assert_eq!(
                        computed.as_str(),
                        Some(role.aria()),
                        "the control named {name:?} has role {computed}"
                    );
                    return element;
                }
                // Stale elements: the page re-rendered while we looked.
                Ok(None) | Err(_) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
                Ok(None) | Err(_) => {
                    let names = self.names_of(role).await;
                    self.fail(
                        &format!("waiting for the {} named {name:?}", role.aria()),
                        &format!("visible {}s are named {names:?}", role.aria()),
                    )
                    .await
                }
            }
        }
    }

    async fn find_control(&self, role: Role, name: &str) -> Result<Option<Element>, CmdError> {
        for element in self.client().find_all(Locator::Css(role.css())).await? {
            if !element.is_displayed().await? {
                continue;
            }
            let label = self.computed_label(&element).await?;
            if role.name_matches(&label, name) {
                return Ok(Some(element));
            }
        }
        Ok(None)
    }

    async fn computed_label(&self, element: &Element) -> Result<String, CmdError> {
        let label = self
            .client()
            .issue_cmd(ElementQuery::new(element, "computedlabel"))
            .await?;
        Ok(label.as_str().unwrap_or_default().to_owned())
    }

    async fn names_of(&self, role: Role) -> Vec<String> {
        let mut names = Vec::new();
        if let Ok(elements) = self.client().find_all(Locator::Css(role.css())).await {
            for element in elements {
                if element.is_displayed().await.unwrap_or(false)
                    && let Ok(label) = self.computed_label(&element).await
                {
                    names.push(label);
                }
            }
        }
        names
    }

    /// Clicks the control with `role` named `name` (a real pointer click).
    pub async fn click(&self, role: Role, name: &str) {
        let element = self.control(role, name).await;
        element
            .click()
            .await
            .unwrap_or_else(|err| panic!("could not click the {} {name:?}: {err}", role.aria()));
    }

    /// Clicks the control and types `text` at once, as a quick person does: one
    /// WebDriver action chain (a real mouse click, then real keys into whatever
    /// has focus), with no round trip in between for the page to catch up.
    pub async fn click_then_type(&self, role: Role, name: &str, text: &str) {
        use fantoccini::actions::{
            InputSource, KeyAction, KeyActions, MOUSE_BUTTON_LEFT, MouseActions, PointerAction,
        };
        let element = self.control(role, name).await;
        let mut mouse = MouseActions::new("mouse".to_owned())
            .then(PointerAction::MoveToElement {
                element,
                duration: None,
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        // The keys wait out the mouse's three ticks, then go in one by one.
        let mut keys = KeyActions::new("keyboard".to_owned());
        for _ in 0..3 {
            keys = keys.pause(Duration::ZERO);
        }
        for key in text.chars() {
            keys = keys
                .then(KeyAction::Down { value: key })
                .then(KeyAction::Up { value: key });
            mouse = mouse.pause(Duration::ZERO).pause(Duration::ZERO);
        }
        self.client()
            .perform_actions(fantoccini::actions::Actions::from(mouse).and(keys))
            .await
            .unwrap_or_else(|err| panic!("could not click {name:?} and type: {err}"));
    }

    /// Types `text` into the textbox named `name` (real key events).
    pub async fn type_into(&self, name: &str, text: &str) -> Element {
        let element = self.control(Role::Textbox, name).await;
        element
            .send_keys(text)
            .await
            .unwrap_or_else(|err| panic!("could not type into {name:?}: {err}"));
        element
    }

    /// Presses a real Enter in `element`.
    pub async fn press_enter(&self, element: &Element) {
        element
            .send_keys("\u{E007}")
            .await
            .expect("Enter reaches the element");
    }

    // ── windows ───────────────────────────────────────────────────────────────

    /// Opens a second browser window (its own page, same cookies) and makes it
    /// the current one; returns (the first window, the new one).
    pub async fn new_window(&self) -> (fantoccini::wd::WindowHandle, fantoccini::wd::WindowHandle) {
        let first = self.client().window().await.expect("the current window");
        let second = self
            .client()
            .new_window(false)
            .await
            .expect("a new window opens")
            .handle;
        self.switch_to(&second).await;
        (first, second)
    }

    /// Makes `window` the current one for the following commands.
    pub async fn switch_to(&self, window: &fantoccini::wd::WindowHandle) {
        self.client()
            .switch_to_window(window.clone())
            .await
            .expect("the window exists");
    }

    // ── ending ────────────────────────────────────────────────────────────────

    /// Page errors (console errors, uncaught exceptions, failed loads) so far.
    pub async fn page_errors(&self) -> Vec<String> {
        if let Ok(new) = self.browser.page_errors().await {
            self.errors.lock().expect("errors lock").extend(new);
        }
        self.errors.lock().expect("errors lock").clone()
    }

    /// Checks that the page logged no error, then closes the browser.
    pub async fn finish(self) {
        let errors = self.page_errors().await;
        if !errors.is_empty() {
            self.fail(
                "the end of the test",
                &format!("the page logged errors: {errors:#?}"),
            )
            .await;
        }
        self.browser.close().await;
    }

    /// Saves a PNG of the page as it is now (for looking at).
    ///
    /// # Panics
    /// If the browser cannot take it.
    pub async fn screenshot(&self, path: &std::path::Path) {
        self.browser
            .screenshot(path)
            .await
            .unwrap_or_else(|err| panic!("no screenshot {}: {err}", path.display()));
    }

    /// Fails the test with a screenshot of the page and the host's log.
    pub async fn fail(&self, what: &str, detail: &str) -> ! {
        let shot = screenshot_path(&self.name);
        let saved = match self.browser.screenshot(&shot).await {
            Ok(()) => format!("screenshot: {}", shot.display()),
            Err(err) => format!("no screenshot ({err})"),
        };
        let errors = self.browser.page_errors().await.unwrap_or_default();
        panic!(
            "{what}: {detail}\n{saved}\npage errors: {errors:#?}\nhost log:\n{}",
            self.host.stderr()
        );
    }
}

fn screenshot_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ask-user-e2e-{name}.png"))
}

/// W3C `GET /session/{id}/element/{id}/{what}` for `computedlabel` and
/// `computedrole` (fantoccini has no method for them).
#[derive(Debug)]
struct ElementQuery {
    element: String,
    what: &'static str,
}

impl ElementQuery {
    fn new(element: &Element, what: &'static str) -> Self {
        Self {
            element: element.element_id().to_string(),
            what,
        }
    }
}

impl WebDriverCompatibleCommand for ElementQuery {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/element/{}/{}",
            session_id.unwrap_or_default(),
            self.element,
            self.what
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::GET, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_match_by_their_label_with_or_without_a_badge_and_buttons_exactly() {
        assert!(Role::Radio.name_matches("SQLite", "SQLite"));
        assert!(Role::Radio.name_matches("Postgres Recommended", "Postgres"));
        assert!(!Role::Radio.name_matches("Postgresql", "Postgres"));
        assert!(Role::Button.name_matches("Skip", "Skip"));
        assert!(!Role::Button.name_matches("Skip all", "Skip"));
    }
}
