//! Accessibility: axe-core (the npm package `cargo xtask test` installs)
//! audits the page the real host serves against WCAG 2.2 A and AA: empty, with
//! a question, with the plan-review panel, and in dark mode. Any violation
//! fails the test, naming the rule and the elements.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::axe::{assert_accessible, axe_source};
use ask_user_tests::e2e::E2e;
use serde_json::json;

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST, Chromium and the npm package axe-core)"]
async fn axe_finds_no_wcag_a_or_aa_violation_on_the_empty_page_a_question_the_plan_panel_and_in_dark_mode()
 {
    let axe = axe_source();
    let e2e = E2e::start("a11y", &[]).await;

    e2e.open("default").await;
    assert_accessible(&e2e, &axe, "the empty page").await;

    let batch = json!({"questions": [
        {"id": "db", "header": "Database", "question": "Which database?",
         "detail": "It stores **sessions**.",
         "options": [{"label": "Postgres (Recommended)", "description": "Proven"}, {"label": "SQLite"}]},
        {"id": "name", "question": "What should we call it?"}
    ]});
    let _agent = e2e.ask("default", &batch);
    e2e.wait_for("the question", |s| s.question_shown).await;
    assert_accessible(&e2e, &axe, "a question").await;

    e2e.cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    )
    .await;
    assert_accessible(&e2e, &axe, "a question in dark mode").await;
    e2e.cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
    )
    .await;

    let plan = json!({"questions": [{"id": "plan", "question": "Approve the plan?",
        "detail": "# Steps\n\n1. Add **tests**\n2. Ship `v2`\n\n> carefully",
        "intent": {"kind": "plan-review", "approve": "Go ahead (Recommended)"},
        "options": [{"label": "Go ahead (Recommended)"}, {"label": "Not yet"}]}]});
    // A second session: the last audit also covers the inbox with two
    // sessions, each with its pending badge.
    let _reviewer = e2e.ask("plans", &plan);
    e2e.open("plans").await;
    e2e.wait_for("the plan panel", |s| s.question_shown).await;
    assert_accessible(&e2e, &axe, "the plan-review panel").await;

    e2e.finish().await;
}
