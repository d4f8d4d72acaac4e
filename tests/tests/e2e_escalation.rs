//! Issue 24's escalation on the page: a question whose `escalate_after` is
//! due says so on its card ("escalated to leads"), on time, without a
//! reload, and not before.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use ask_user_tests::wait::PATIENCE;
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};

const ASKED_LINE: &str = "return document.querySelector('[data-auq=asked-by]')?.textContent ?? ''";

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_card_says_the_question_escalated_once_its_time_is_due() {
    let e2e = E2e::start("escalation", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask(
        "default",
        &json!({"questions": [{"id": "go", "question": "Deploy now?",
                               "options": [{"label": "Yes"}, {"label": "No"}]}],
                "audience": {"role": "oncall"},
                "escalate_after": {"seconds": 3, "role": "leads"}}),
    );
    let asked_at = Instant::now();
    e2e.wait_for("the question", |s| {
        s.question.as_deref() == Some("Deploy now?")
    })
    .await;
    let before = e2e.script(ASKED_LINE).await;
    assert!(
        asked_at.elapsed() >= Duration::from_secs(3)
            || !before.as_str().unwrap().contains("escalated"),
        "not escalated before its time: {before}"
    );
    let deadline = Instant::now() + PATIENCE;
    loop {
        let line = e2e.script(ASKED_LINE).await;
        if line
            .as_str()
            .unwrap_or_default()
            .contains("escalated to leads")
        {
            break;
        }
        if Instant::now() >= deadline {
            e2e.fail(
                "waiting for the escalation note",
                &format!("the card says {line}"),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    e2e.click(Role::Radio, "Yes").await;
    e2e.click(Role::Button, "Submit").await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    e2e.finish().await;
}
