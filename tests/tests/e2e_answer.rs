//! The full loop in a real browser, one agent request each: the agent asks over
//! HTTP, a person answers (or cancels) in headless Chromium on the page the real
//! host serves from the Trunk release build, and the agent's call returns.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn four_questions() -> Value {
    json!({"questions": [
        {"id": "db", "question": "Which database should the service use?", "header": "Database",
         "options": [
            {"label": "Postgres (Recommended)", "description": "Runs everywhere we deploy."},
            {"label": "SQLite", "description": "One file, no server."}]},
        {"id": "features", "question": "Which features ship first?", "header": "Scope",
         "multi_select": true,
         "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search"}]},
        {"id": "deadline", "question": "When is the deadline?", "header": "Deadline",
         "options": [{"label": "This week"}, {"label": "This month"}]},
        {"id": "name", "question": "What should the project be called?", "header": "Name",
         "options": [{"label": "Falcon"}, {"label": "Heron"}]}
    ]})
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn an_answer_given_in_the_page_returns_the_exact_batch_and_the_message_box_returns_after_the_resolved_frame()
 {
    let e2e = E2e::start("answer-batch", &[]).await;
    e2e.intercept_resolved_frames().await;
    let page = e2e.open("default").await;
    assert!(page.message_shown && !page.question_shown, "{page:#?}");

    let agent = e2e.ask("default", &four_questions());
    let page = e2e
        .wait_for("the agent's question to appear", |s| {
            s.question_shown
                && s.question.as_deref() == Some("Which database should the service use?")
        })
        .await;
    let id = page
        .question_id
        .clone()
        .expect("the request's id is on the page");
    assert_eq!(e2e.pending_ids("default").await, vec![id.clone()]);
    assert!(
        !page.message_shown,
        "the Message box is hidden while questions are pending"
    );
    assert_eq!(page.progress.as_deref(), Some("1 of 4"));

    // A single-select choice records and moves on at once.
    e2e.click(Role::Radio, "SQLite").await;
    e2e.wait_for("the multi-select item", |s| s.item == Some(1))
        .await;
    e2e.click(Role::Checkbox, "Search").await;
    e2e.click(Role::Checkbox, "Auth").await;
    e2e.wait_for("both features to be checked", |s| {
        s.checked("Auth") && s.checked("Search") && !s.checked("Billing")
    })
    .await;
    e2e.click(Role::Button, "Next").await;
    e2e.wait_for("the deadline item", |s| s.item == Some(2))
        .await;
    e2e.click(Role::Button, "Skip").await;
    e2e.wait_for("the name item", |s| s.item == Some(3)).await;
    let other = e2e.type_into("Other", "Project Falcon").await;
    let page = e2e
        .wait_for("the typed answer", |s| {
            s.answer_box.as_deref() == Some("Project Falcon")
        })
        .await;
    assert!(!page.message_shown && page.question_shown, "{page:#?}");

    // Hold the host's question/resolved frame back in the page: until it
    // arrives, the question composer must keep the slot.
    e2e.hold_resolved().await;
    e2e.press_enter(&other).await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "features", "selected": ["Auth", "Search"]},
            {"id": "deadline", "selected": []},
            {"id": "name", "selected": [], "custom": "Project Falcon"}
        ]})
    );
    e2e.wait_for_held_resolved(1).await;
    let page = e2e
        .wait_for("the page to see its POST accepted", |s| {
            s.status.as_deref() == Some("sent")
        })
        .await;
    assert!(
        page.question_shown && !page.message_shown,
        "before the resolved frame, the question composer keeps the slot: {page:#?}"
    );
    assert_eq!(page.question_id.as_deref(), Some(id.as_str()));

    e2e.release_resolved().await;
    let page = e2e
        .wait_for("the Message box to come back", |s| {
            s.message_shown && !s.question_shown
        })
        .await;
    assert_eq!(page.notice, None, "answered here, nothing to explain");
    e2e.wait_for("focus to return to the Message box", |s| {
        s.focus.as_deref() == Some("message")
    })
    .await;
    assert!(e2e.pending_ids("default").await.is_empty());
    e2e.finish().await;
}

/// Dispatches what an IME sends while composing `東京` after "Tokyo " in the
/// box: compositionstart, the composed input, a keydown Enter with
/// `isComposing` (keyCode 229), compositionend and, in the same task, the
/// keydown Enter that confirms the candidate. Returns whether each keydown was
/// left alone (`dispatchEvent` is false when the page called preventDefault).
const COMPOSE_AND_CONFIRM_JS: &str = r#"
const box = arguments[0];
box.focus();
const enter = (isComposing, keyCode) => {
  const event = new KeyboardEvent('keydown', {
    key: 'Enter', code: 'Enter', isComposing, bubbles: true, cancelable: true,
  });
  Object.defineProperty(event, 'keyCode', { get: () => keyCode });
  Object.defineProperty(event, 'which', { get: () => keyCode });
  return box.dispatchEvent(event);
};
box.dispatchEvent(new CompositionEvent('compositionstart', { bubbles: true, data: '' }));
box.value = 'Tokyo 東京';
box.dispatchEvent(new InputEvent('input', {
  bubbles: true, isComposing: true, inputType: 'insertCompositionText', data: '東京',
}));
const whileComposing = enter(true, 229);
box.dispatchEvent(new CompositionEvent('compositionend', { bubbles: true, data: '東京' }));
const rightAfterEnd = enter(false, 13);
return [whileComposing, rightAfterEnd];
"#;

/// A keydown Enter with keyCode 229 only (some IMEs send no isComposing).
const KEYCODE_229_JS: &str = r#"
const box = arguments[0];
const event = new KeyboardEvent('keydown', {
  key: 'Enter', code: 'Enter', isComposing: false, bubbles: true, cancelable: true,
});
Object.defineProperty(event, 'keyCode', { get: () => 229 });
Object.defineProperty(event, 'which', { get: () => 229 });
return [box.dispatchEvent(event)];
"#;

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn enter_during_an_ime_composition_in_the_other_box_does_not_submit_and_a_real_enter_does() {
    let e2e = E2e::start("ime", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask(
        "default",
        &json!({"questions": [
            {"id": "city", "question": "Which city should the office be in?", "header": "Office",
             "options": [{"label": "Berlin"}, {"label": "Lisbon"}]}
        ]}),
    );
    let page = e2e
        .wait_for("the agent's question to appear", |s| s.question_shown)
        .await;
    let id = page.question_id.expect("the request's id is on the page");
    let other = e2e.type_into("Other", "Tokyo ").await;
    e2e.wait_for("the typed text", |s| {
        s.answer_box.as_deref() == Some("Tokyo ")
    })
    .await;

    for (case, script) in [
        (
            "composition with isComposing, then compositionend + Enter",
            COMPOSE_AND_CONFIRM_JS,
        ),
        ("keydown Enter with keyCode 229", KEYCODE_229_JS),
    ] {
        let untouched = e2e.script_on(&other, script).await;
        // The state machine decides synchronously; the next command sees the
        // page after every microtask of that dispatch ran.
        let page = e2e.snapshot().await;
        assert_eq!(
            page.status.as_deref(),
            Some("editing"),
            "{case}: the composer must not submit: {page:#?}"
        );
        assert!(
            untouched
                .as_array()
                .is_some_and(|keys| keys.iter().all(|k| k == true)),
            "{case}: the IME's Enter must keep its default action: {untouched}"
        );
        assert_eq!(page.answer_box.as_deref(), Some("Tokyo 東京"), "{case}");
        assert!(
            page.question_shown && !page.message_shown,
            "{case}: {page:#?}"
        );
        assert_eq!(
            e2e.pending_ids("default").await,
            vec![id.clone()],
            "{case}: the item is still pending"
        );
        assert!(!agent.is_finished(), "{case}: no answer reached the agent");
    }

    e2e.press_enter(&other).await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [{"id": "city", "selected": [], "custom": "Tokyo 東京"}]})
    );
    e2e.wait_for("the Message box to come back", |s| {
        s.message_shown && !s.question_shown
    })
    .await;
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn cancel_questions_in_the_page_fails_the_agents_call_with_ask_cancelled() {
    let e2e = E2e::start("cancel", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("default", &four_questions());
    e2e.wait_for("the agent's question to appear", |s| s.question_shown)
        .await;
    e2e.click(Role::Radio, "SQLite").await;
    e2e.wait_for("the second item", |s| s.item == Some(1)).await;

    e2e.click(Role::Button, "Cancel questions").await;
    let (status, body) = e2e.reply("the agent's failure", agent).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "ASK_CANCELLED", "{body}");
    assert_eq!(body["error"]["name"], "UserInteractionError", "{body}");

    let page = e2e
        .wait_for("the Message box to come back", |s| {
            s.message_shown && !s.question_shown
        })
        .await;
    assert_eq!(page.notice, None, "cancelled here, nothing to explain");
    assert!(e2e.pending_ids("default").await.is_empty());
    e2e.finish().await;
}

/// The empty page's text, after its screenshot is saved to `shot`.
async fn empty_state(e2e: &E2e, shot: &str) -> (String, String) {
    e2e.open("default").await;
    let empty = e2e
        .client()
        .wait()
        .for_element(fantoccini::Locator::Css("[data-auq=empty]"))
        .await
        .expect("the empty page says what to do");
    let kind = empty.attr("data-empty").await.unwrap().unwrap_or_default();
    let text = empty.text().await.unwrap();
    let png = e2e.client().screenshot().await.unwrap();
    std::fs::write(shot, png).unwrap();
    (kind, text)
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_empty_page_says_how_to_connect_an_agent_or_with_the_demo_what_starts_it() {
    let e2e = E2e::start("empty-page", &[]).await;
    let (kind, text) = empty_state(&e2e, "/tmp/ask-user-e2e-empty.png").await;
    assert_eq!(kind, "no-questions");
    assert!(text.contains("No questions yet"), "{text}");
    assert!(
        text.contains("claude mcp add ask-user -- ask-user mcp"),
        "{text}"
    );
    e2e.finish().await;

    let e2e = E2e::start("empty-page-demo", &["--demo"]).await;
    let (kind, text) = empty_state(&e2e, "/tmp/ask-user-e2e-empty-demo.png").await;
    assert_eq!(kind, "demo");
    assert!(
        text.contains("the demo agent will ask you three questions"),
        "{text}"
    );
    e2e.finish().await;
}
