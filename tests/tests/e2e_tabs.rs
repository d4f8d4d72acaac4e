//! The full loop across browser tabs and reloads: one real agent request each,
//! headless Chromium on the page the real host serves from the release build.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use reqwest::StatusCode;
use serde_json::json;

/// A choice, then a free-text reason.
fn where_and_why() -> serde_json::Value {
    json!({"questions": [
        {"id": "env", "question": "Where should this run first?", "header": "Environment",
         "options": [{"label": "Staging"}, {"label": "Production"}]},
        {"id": "why", "question": "Why there?", "header": "Reason"}
    ]})
}

/// The answer to [`where_and_why`]: Staging, because `reason`.
fn staging_because(reason: &str) -> serde_json::Value {
    json!({"answers": [
        {"id": "env", "selected": ["Staging"]},
        {"id": "why", "selected": [], "custom": reason}
    ]})
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn answering_in_one_tab_removes_the_question_from_the_other_tab() {
    let e2e = E2e::start("two-tabs", &[]).await;
    e2e.open("default").await;
    let (first, second) = e2e.new_window().await;
    e2e.open("default").await;

    let agent = e2e.ask(
        "default",
        &json!({"questions": [
            {"id": "deploy", "question": "Deploy to production now?", "header": "Deploy",
             "options": [{"label": "Yes"}, {"label": "No"}]}
        ]}),
    );
    let in_second = e2e
        .wait_for("the question in the second tab", |s| s.question_shown)
        .await;
    e2e.switch_to(&first).await;
    let in_first = e2e
        .wait_for("the question in the first tab", |s| s.question_shown)
        .await;
    assert!(in_first.question_id.is_some());
    assert_eq!(
        in_first.question_id, in_second.question_id,
        "the same request in both"
    );
    // Both pages are visible with their streams up: the second tab must learn
    // of the answer live, not from a replay after it was hidden.
    assert_eq!(
        (in_first.visibility.as_str(), in_second.visibility.as_str()),
        ("visible", "visible")
    );

    e2e.click(Role::Radio, "Yes").await;
    e2e.wait_for("the choice", |s| s.checked("Yes")).await;
    e2e.click(Role::Button, "Submit").await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [{"id": "deploy", "selected": ["Yes"]}]})
    );
    let page = e2e
        .wait_for("the first tab's Message box to come back", |s| {
            s.message_shown && !s.question_shown
        })
        .await;
    assert_eq!(
        page.notice, None,
        "answered in this tab, nothing to explain"
    );

    e2e.switch_to(&second).await;
    let page = e2e
        .wait_for("the question to leave the second tab", |s| {
            !s.question_shown && s.message_shown
        })
        .await;
    assert!(
        page.notice
            .as_deref()
            .is_some_and(|notice| notice.contains("answered elsewhere")),
        "the second tab says why the question went away: {:?}",
        page.notice
    );
    assert_eq!(page.visibility, "visible");
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn after_a_reload_mid_answer_the_same_question_and_draft_are_back_and_answering_works() {
    let e2e = E2e::start("reload", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("default", &where_and_why());
    let page = e2e
        .wait_for("the agent's question to appear", |s| s.question_shown)
        .await;
    let id = page.question_id.expect("the request's id is on the page");
    e2e.click(Role::Radio, "Staging").await;
    e2e.wait_for("the free-text item", |s| s.item == Some(1))
        .await;
    e2e.type_into("Your answer", "Needs a dry run").await;
    e2e.wait_for("the draft", |s| {
        s.answer_box.as_deref() == Some("Needs a dry run")
    })
    .await;

    let page = e2e.reload().await;
    let page = if page.answer_box.as_deref() == Some("Needs a dry run") {
        page
    } else {
        e2e.wait_for("the question and its draft after the reload", |s| {
            s.question_shown && s.answer_box.as_deref() == Some("Needs a dry run")
        })
        .await
    };
    assert_eq!(
        page.question_id.as_deref(),
        Some(id.as_str()),
        "the same id"
    );
    assert_eq!(page.item, Some(1), "back on the item being answered");
    assert_eq!(e2e.pending_ids("default").await, vec![id.clone()]);
    assert!(!agent.is_finished());

    e2e.click(Role::Button, "Back").await;
    let page = e2e.wait_for("the first item", |s| s.item == Some(0)).await;
    assert!(
        page.checked("Staging"),
        "the earlier choice survived: {page:#?}"
    );
    e2e.click(Role::Button, "Next").await;
    e2e.wait_for("the free-text item", |s| s.item == Some(1))
        .await;
    let answer = e2e.type_into("Your answer", " first").await;
    e2e.wait_for("the longer draft", |s| {
        s.answer_box.as_deref() == Some("Needs a dry run first")
    })
    .await;
    e2e.press_enter(&answer).await;

    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, staging_because("Needs a dry run first"));
    e2e.wait_for("the Message box to come back", |s| {
        s.message_shown && !s.question_shown
    })
    .await;
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn keys_typed_right_after_a_choice_advances_the_question_all_reach_the_answer_box() {
    let e2e = E2e::start("type-ahead", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("default", &where_and_why());
    e2e.wait_for("the agent's question to appear", |s| s.question_shown)
        .await;
    // The click advances to the free-text item; the keys follow without a pause.
    e2e.click_then_type(Role::Radio, "Staging", "Needs a dry run")
        .await;
    let page = e2e
        .wait_for("the free-text item with what was typed", |s| {
            s.item == Some(1) && s.answer_box.as_deref().is_some_and(|t| t.len() >= 10)
        })
        .await;
    assert_eq!(
        page.answer_box.as_deref(),
        Some("Needs a dry run"),
        "no key was lost or typed elsewhere while the question advanced"
    );

    // Back and Next again: what the person types next follows their draft.
    e2e.click(Role::Button, "Back").await;
    e2e.wait_for("the first item", |s| s.item == Some(0)).await;
    e2e.click_then_type(Role::Button, "Next", " first").await;
    let page = e2e
        .wait_for("the longer draft", |s| {
            s.answer_box.as_deref().is_some_and(|t| t.len() > 15)
        })
        .await;
    assert_eq!(
        page.answer_box.as_deref(),
        Some("Needs a dry run first"),
        "the caret was at the end of the restored draft"
    );
    let answer = e2e.control(Role::Textbox, "Your answer").await;
    e2e.press_enter(&answer).await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, staging_because("Needs a dry run first"));
    e2e.finish().await;
}
