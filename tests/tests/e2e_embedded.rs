//! The one binary in a real browser: `ask-user serve` started from an empty
//! folder serves the page built into it; the page works under its
//! Content-Security-Policy (any violation fails the test), an agent's question
//! is answered in it, and a second navigation fetches no wasm.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build and a host binary that
//! carries it. Run without that, it fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Every request of the page now open: (name, transferSize).
const TRANSFERS: &str = r#"
const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
return entries.filter((e) => !e.name.includes('/api/')).map((e) => [e.name, e.transferSize]);
"#;

async fn transfers(e2e: &E2e) -> Vec<(String, f64)> {
    let list = e2e.script(TRANSFERS).await;
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap_or_default().to_owned(),
                e[1].as_f64().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_page_built_into_the_binary_answers_an_agent_under_its_csp_and_a_second_load_fetches_no_wasm()
 {
    let empty = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-e2e-embedded-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let e2e = E2e::start_embedded("embedded", &empty, &[]).await;
    let page = e2e.open("default").await;
    assert!(page.message_shown && !page.question_shown, "{page:#?}");
    let first = transfers(&e2e).await;
    let wasm = first
        .iter()
        .find(|(name, _)| name.ends_with(".wasm"))
        .unwrap_or_else(|| panic!("the page loads its wasm: {first:?}"));
    assert!(wasm.1 > 0.0, "the first load fetches the wasm: {first:?}");

    let agent = e2e.ask(
        "default",
        &json!({"questions": [{"id": "db", "question": "Which database?",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}),
    );
    e2e.wait_for("the agent's question", |s| {
        s.question.as_deref() == Some("Which database?")
    })
    .await;
    e2e.click(Role::Radio, "SQLite").await;
    e2e.click(Role::Button, "Submit").await;
    let (status, body): (StatusCode, Value) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [{"id": "db", "selected": ["SQLite"]}]})
    );
    e2e.wait_for("the message box to return", |s| {
        s.message_shown && !s.question_shown
    })
    .await;

    // A second navigation: the wasm comes from the cache, index.html is revalidated.
    e2e.open("default").await;
    let second = transfers(&e2e).await;
    let fetched: Vec<&(String, f64)> = second
        .iter()
        .filter(|(name, size)| name.ends_with(".wasm") && *size > 0.0)
        .collect();
    assert!(
        fetched.is_empty(),
        "the second load fetched the wasm again: {second:?}"
    );
    let total: f64 = second.iter().map(|(_, size)| size).sum();
    assert!(
        total < 10_000.0,
        "the second load transferred {total} bytes: {second:?}"
    );
    e2e.finish().await;
    std::fs::remove_dir_all(&empty).ok();
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn agent_markdown_renders_under_the_csp_without_an_exception_and_its_html_stays_text() {
    let empty = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-e2e-markdown-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let e2e = E2e::start_embedded("embedded-markdown", &empty, &[]).await;
    e2e.open("default").await;
    let detail = "## Migrate sessions\n\n1. Add a `sessions` table.\n2. **Switch reads**, then *drop* ~~Redis~~.\n\n\
                  > Rollback: flip the flag.\n\n| Step | Risk |\n|---|---|\n| dual-write | low |\n\n\
                  - [x] reviewed\n\n[the docs](https://example.invalid/docs) ![a chart](https://example.invalid/c.png)\n\n\
                  <img src=x onerror=\"alert(1)\"> <b style=\"color:red\">bold?</b>\n\n<script>alert('never runs')</script>";
    let agent = e2e.ask(
        "default",
        &json!({"questions": [{"id": "plan", "question": "Shall I go ahead with this plan?",
            "detail": detail, "intent": {"kind": "plan-review", "approve": "Approve"},
            "options": [{"label": "Approve"}, {"label": "Revise the plan"}]}]}),
    );
    e2e.wait_for("the plan review", |s| s.question_shown).await;
    let rendered = e2e
        .script(
            r#"const plan = document.querySelector('[data-auq=plan]') || document.querySelector('[data-auq=detail]');
               return plan ? {
                 text: plan.textContent,
                 heading: !!plan.querySelector('h4'),
                 table: !!plan.querySelector('table td'),
                 link: plan.querySelector('a') && plan.querySelector('a').getAttribute('href'),
                 unsafe: plan.querySelectorAll('script, img, [style], [onerror]').length,
               } : null;"#,
        )
        .await;
    assert!(rendered.is_object(), "the plan is on the page: {rendered}");
    assert_eq!(rendered["heading"], true, "{rendered}");
    assert_eq!(rendered["table"], true, "{rendered}");
    assert_eq!(
        rendered["link"], "https://example.invalid/docs",
        "{rendered}"
    );
    assert_eq!(
        rendered["unsafe"], 0,
        "no element from the agent's HTML: {rendered}"
    );
    let text = rendered["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("<script>alert('never runs')</script>"),
        "raw HTML shows as text: {text}"
    );

    e2e.click(Role::Button, "Approve").await;
    let (status, body): (StatusCode, Value) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["answers"][0]["selected"], json!(["Approve"]), "{body}");
    // Any CSP violation while rendering the Markdown is a page error here.
    e2e.finish().await;
    std::fs::remove_dir_all(&empty).ok();
}
