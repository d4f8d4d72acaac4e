//! Headless Chromium for the browser tests: starts `chromedriver` on a free port,
//! opens a headless session with fantoccini, and collects the page's errors
//! (console errors, uncaught exceptions, failed loads) from Chromium's log.
//!
//! Browser tests are `#[ignore]`d (see [`BROWSER_TEST`]): a plain `cargo test
//! --workspace` needs no browser and lists them as ignored; `cargo xtask test`
//! runs them with `--include-ignored` and [`E2E_DIST_ENV`] naming the Trunk
//! build. Run without that environment, they fail and say what is missing.

use crate::wait::PATIENCE;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::error::{CmdError, NewSessionError};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

/// Names the Trunk `dist/` directory the browser tests serve.
pub const E2E_DIST_ENV: &str = "ASK_USER_E2E_DIST";

/// Chromium flags for running headless as root in a container.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--window-size=1000,700",
];

/// What went wrong while driving the browser.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No chromedriver binary was found.
    #[error(
        "chromedriver not found: install chromium-driver (Debian) or set CHROMEDRIVER to its path"
    )]
    NoDriver,
    /// chromedriver could not be started.
    #[error("could not start chromedriver at {path}: {source}")]
    Spawn {
        /// The binary that was started.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// chromedriver started but never said which port it listens on.
    #[error("chromedriver did not say it was listening (\"started successfully on port N\")")]
    NotReady,
    /// chromedriver refused to open a Chromium session.
    #[error("could not open a headless Chromium session: {0}")]
    Session(#[from] NewSessionError),
    /// A WebDriver command failed.
    #[error("WebDriver command failed: {0}")]
    Command(#[from] CmdError),
    /// No service worker with that script runs (the targets seen).
    #[error("no service worker runs {0}; the targets: {1}")]
    NoServiceWorker(String, String),
    /// A file (a screenshot) could not be written.
    #[error("could not write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Marks a browser test. Browser tests are `#[ignore]`d with this reason, so a
/// plain `cargo test --workspace` lists them as ignored (never as passed), and
/// `cargo xtask test` runs them with `--include-ignored`.
pub const BROWSER_TEST: &str =
    "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)";

/// Installed in every page before its own scripts: a Content-Security-Policy
/// violation (an inline handler or style, `eval`, a foreign request) becomes a
/// console error, which [`Browser::page_errors`] reports and the tests fail on.
pub const REPORT_CSP_VIOLATIONS: &str = r#"
document.addEventListener('securitypolicyviolation', (e) => {
  console.error(`CSP violation: ${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} ` +
    `(${e.sourceFile || e.documentURI}:${e.lineNumber}) ${e.sample || ''}`);
});
"#;

/// The Trunk build to test, from [`E2E_DIST_ENV`].
///
/// # Panics
/// When the variable is unset (a browser test was run without its
/// environment: it fails and says what is missing, never passes silently), or
/// names no directory holding an `index.html`.
pub fn e2e_dist() -> PathBuf {
    let Some(dist) = std::env::var_os(E2E_DIST_ENV) else {
        panic!(
            "this browser test needs {E2E_DIST_ENV}=<trunk dist dir> (and Chromium with \
             chromedriver); run it through `cargo xtask test`, which builds the page and sets it"
        );
    };
    let dist = PathBuf::from(dist);
    assert!(
        dist.join("index.html").is_file(),
        "{E2E_DIST_ENV}={} holds no index.html; run `trunk build --release` first",
        dist.display()
    );
    dist
}

/// What [`Browser::wait_for_render`] saw.
#[derive(Debug)]
pub struct Render {
    /// The element waited for, if it appeared.
    pub element: Option<Element>,
    /// Page errors logged while waiting.
    pub errors: Vec<String>,
}

/// One headless Chromium session and the chromedriver behind it.
/// Dropping it stops chromedriver and the Chromium it started.
pub struct Browser {
    client: Client,
    driver: Child,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a headless session
    /// that logs every console message.
    pub async fn launch() -> Result<Self, BrowserError> {
        Self::launch_with_args(&[]).await
    }

    /// [`Browser::launch`] with extra Chromium flags after [`CHROMIUM_FLAGS`]
    /// (e.g. `--lang=en-US`, so the page's interface language is fixed).
    pub async fn launch_with_args(extra_args: &[&str]) -> Result<Self, BrowserError> {
        let path = chromedriver().ok_or(BrowserError::NoDriver)?;
        // Port 0: chromedriver binds a port of the kernel's choosing and prints
        // it. A port picked here and handed over could be taken in between, and
        // probing it could "connect" to the probe's own socket (TCP
        // simultaneous open when source and destination port coincide): both
        // made a session fail with "connection refused" once in a while.
        let mut command = Command::new(&path);
        command
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Own process group, so Drop can stop Chromium along with chromedriver.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut driver = command
            .spawn()
            .map_err(|source| BrowserError::Spawn { path, source })?;
        let stdout = driver
            .stdout
            .take()
            .expect("chromedriver's stdout is piped");
        let mut browser_driver = DriverGuard(Some(driver));
        let port = listening_port(stdout).ok_or(BrowserError::NotReady)?;

        let args: Vec<&str> = CHROMIUM_FLAGS.iter().chain(extra_args).copied().collect();
        let mut options = json!({ "args": args });
        if let Some(binary) = std::env::var_os("CHROME") {
            options["binary"] = Value::from(binary.to_string_lossy().into_owned());
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        capabilities.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await?;
        let browser = Browser {
            client,
            driver: browser_driver.0.take().expect("guard holds the driver"),
        };
        // Every page this session opens reports its CSP violations as errors.
        browser
            .cdp(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": REPORT_CSP_VIOLATIONS }),
            )
            .await?;
        Ok(browser)
    }

    /// Runs a Chrome DevTools Protocol command (chromedriver's `goog/cdp/execute`).
    pub async fn cdp(&self, cmd: &'static str, params: Value) -> Result<Value, BrowserError> {
        Ok(self.client.issue_cmd(Cdp { cmd, params }).await?)
    }

    /// Evaluates `expression` in the scope of the service worker whose script
    /// is `script_url`, without waiting for its result: chromedriver speaks
    /// CDP to the page only, so the worker is reached through the page's
    /// session (`Target.attachToTarget`, then `Target.sendMessageToTarget`,
    /// whose answers come back as events this client does not read). Check
    /// the expression's effects instead. Fails when no such worker runs.
    pub async fn evaluate_in_service_worker(
        &self,
        script_url: &str,
        expression: &str,
    ) -> Result<(), BrowserError> {
        let targets = self.cdp("Target.getTargets", json!({})).await?;
        let worker = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "service_worker" && t["url"] == script_url)
            .ok_or_else(|| {
                BrowserError::NoServiceWorker(script_url.to_owned(), targets.to_string())
            })?;
        let attached = self
            .cdp(
                "Target.attachToTarget",
                json!({ "targetId": worker["targetId"], "flatten": false }),
            )
            .await?;
        let message = json!({
            "id": 1,
            "method": "Runtime.evaluate",
            "params": { "expression": expression },
        });
        self.cdp(
            "Target.sendMessageToTarget",
            json!({ "sessionId": attached["sessionId"], "message": message.to_string() }),
        )
        .await?;
        Ok(())
    }

    /// The fantoccini client, for anything the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Navigates to `url` and waits for its load event.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        Ok(self.client.goto(url).await?)
    }

    /// Waits (up to [`PATIENCE`]) for an element matching a CSS selector.
    pub async fn wait_for_css(&self, selector: &str) -> Result<Element, BrowserError> {
        Ok(self
            .client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(selector))
            .await?)
    }

    /// Waits (up to [`PATIENCE`]) for an element matching `selector`, but stops
    /// as soon as the page logs an error: a page that failed to start will not
    /// render later. Returns the element (if it appeared) and every error seen.
    pub async fn wait_for_render(&self, selector: &str) -> Result<Render, BrowserError> {
        let deadline = Instant::now() + PATIENCE;
        let mut errors = Vec::new();
        loop {
            errors.extend(self.page_errors().await?);
            let element = match self.client.find(Locator::Css(selector)).await {
                Ok(element) => Some(element),
                Err(err) if err.is_no_such_element() => None,
                Err(err) => return Err(err.into()),
            };
            if element.is_some() || !errors.is_empty() || Instant::now() >= deadline {
                return Ok(Render { element, errors });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `script` until it returns a truthy value (as JavaScript judges
    /// it) and returns that value; gives up after [`PATIENCE`] with a panic
    /// naming `what` and showing the page's text.
    pub async fn wait_for_js(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let value = self
                .client
                .execute(script, vec![])
                .await
                .unwrap_or(Value::Null);
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return value;
            }
            if Instant::now() > deadline {
                let text = self.body_text().await.unwrap_or_default();
                panic!("gave up waiting for {what}; the page shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The page's visible text (`document.body.innerText`).
    pub async fn body_text(&self) -> Result<String, BrowserError> {
        let text = self
            .client
            .execute(
                "return document.body ? document.body.innerText : '';",
                vec![],
            )
            .await?;
        Ok(text.as_str().unwrap_or_default().to_owned())
    }

    /// Page errors logged since the last call: console errors, uncaught
    /// exceptions and promise rejections, and resources that failed to load.
    pub async fn page_errors(&self) -> Result<Vec<String>, BrowserError> {
        let log = self.client.issue_cmd(BrowserLog).await?;
        Ok(severe_messages(&log))
    }

    /// Saves a PNG of the viewport (for looking at a failing page).
    pub async fn screenshot(&self, path: &Path) -> Result<(), BrowserError> {
        let png = self.client.screenshot().await?;
        std::fs::write(path, png).map_err(|source| BrowserError::Write {
            path: path.to_owned(),
            source,
        })
    }

    /// Ends the session (closing Chromium) and stops chromedriver.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        stop_group(&mut self.driver);
    }
}

/// Stops chromedriver if launching fails halfway.
struct DriverGuard(Option<Child>);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            stop_group(child);
        }
    }
}

/// Kills the process group led by `child` (chromedriver and its Chromium).
fn stop_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

fn chromedriver() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMEDRIVER") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromedriver"))
        .find(|candidate| candidate.is_file())
}

/// The port chromedriver says it listens on ("ChromeDriver was started
/// successfully on port N."), read from its stdout within [`PATIENCE`]. A
/// thread keeps reading its stdout after that, so it never blocks on a full pipe.
fn listening_port(stdout: std::process::ChildStdout) -> Option<u16> {
    use std::io::BufRead;
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some(port) = started_on_port(&line) {
                let _ = port_tx.send(port);
                break;
            }
        }
        lines.for_each(drop);
    });
    port_rx.recv_timeout(PATIENCE).ok()
}

fn started_on_port(line: &str) -> Option<u16> {
    let (_, rest) = line.split_once("started successfully on port ")?;
    rest.trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// chromedriver's CDP passthrough (`goog/cdp/execute`).
#[derive(Debug)]
pub(crate) struct Cdp {
    pub(crate) cmd: &'static str,
    pub(crate) params: Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// chromedriver's log endpoint (not in the W3C spec, so fantoccini has no method):
/// returns and clears the browser's console log.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({ "type": "browser" }).to_string()),
        )
    }
}

/// The messages of `SEVERE` entries in a browser log response.
fn severe_messages(log: &Value) -> Vec<String> {
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["level"] == "SEVERE")
        .map(|entry| entry["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severe_messages_keeps_only_errors() {
        let log = json!([
            {"level": "INFO", "message": "hello", "source": "console-api"},
            {"level": "SEVERE", "message": "Uncaught RuntimeError: unreachable", "source": "javascript"},
            {"level": "WARNING", "message": "deprecated", "source": "deprecation"}
        ]);
        assert_eq!(
            severe_messages(&log),
            vec!["Uncaught RuntimeError: unreachable"]
        );
    }

    #[test]
    fn severe_messages_of_an_empty_or_odd_response_is_empty() {
        assert!(severe_messages(&json!([])).is_empty());
        assert!(severe_messages(&json!(null)).is_empty());
    }

    #[test]
    fn the_port_is_read_from_chromedrivers_started_line_and_from_no_other() {
        assert_eq!(
            started_on_port("ChromeDriver was started successfully on port 37869."),
            Some(37869)
        );
        assert_eq!(
            started_on_port("Starting ChromeDriver 156.0 on port 0"),
            None
        );
        assert_eq!(started_on_port("Only local connections are allowed."), None);
    }
}
