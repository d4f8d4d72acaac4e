//! Issue 13's page on the real host, in headless Chromium: a conversation that
//! remembers (records survive a reload), "Reply instead" reaching a real agent
//! call, and the inbox (another session's question shows in the list and the
//! tab's title).
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn two_questions() -> Value {
    json!({"questions": [
        {"id": "db", "question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "name", "question": "What should we call it?"}
    ]})
}

/// The transcript's records as `[question…, answer…]` text, read from the page.
async fn records(e2e: &E2e) -> Vec<String> {
    let found = e2e
        .script(
            "return [...document.querySelectorAll('[data-auq=record]')].map(r => r.textContent);",
        )
        .await;
    serde_json::from_value(found).unwrap_or_default()
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn an_answered_batch_stays_in_the_transcript_as_a_record_and_a_reload_shows_it_again() {
    let e2e = E2e::start("conversation-records", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("default", &two_questions());
    e2e.wait_for("the question", |s| s.question_shown).await;
    e2e.click(Role::Radio, "SQLite").await;
    e2e.wait_for("the second item", |s| s.item == Some(1)).await;
    e2e.click(Role::Button, "Skip").await;
    e2e.click(Role::Button, "Submit").await;
    let (status, _) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK);
    e2e.wait_for("the message box to return", |s| s.message_shown)
        .await;

    let wait_for_record = async || {
        for _ in 0..100 {
            let found = records(&e2e).await;
            if !found.is_empty() {
                return found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        e2e.fail("waiting for the record", "no record in the transcript")
            .await
    };
    let live = wait_for_record().await;
    assert_eq!(live.len(), 1, "{live:?}");
    for part in [
        "Which database?",
        "SQLite",
        "What should we call it?",
        "Skipped",
    ] {
        assert!(live[0].contains(part), "{part:?} in {live:?}");
    }
    assert!(!live[0].contains("(Recommended)"));

    e2e.reload().await;
    let reloaded = wait_for_record().await;
    assert_eq!(reloaded, live, "a reload shows the same record");
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn reply_instead_returns_the_items_answered_so_far_and_the_note_to_the_agents_call() {
    let e2e = E2e::start("conversation-reply", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("default", &two_questions());
    e2e.wait_for("the question", |s| s.question_shown).await;
    e2e.click(Role::Radio, "SQLite").await;
    e2e.wait_for("the second item", |s| s.item == Some(1)).await;
    e2e.click(Role::Button, "Reply instead").await;
    let reply = e2e
        .type_into("Your reply", "Can we talk about names first?")
        .await;
    e2e.press_enter(&reply).await;
    let (status, body) = e2e.reply("the agent's answer", agent).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "name", "selected": []}
        ], "note": "Can we talk about names first?"})
    );
    // The transcript shows the note as the person's message.
    let mut note = Value::Null;
    for _ in 0..100 {
        note = e2e
            .script(
                "const n = document.querySelector('[data-auq=note]'); return n && n.textContent;",
            )
            .await;
        if note.is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(note, json!("Can we talk about names first?"));
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_question_in_another_session_shows_in_the_inbox_and_the_title_and_a_click_opens_it() {
    let e2e = E2e::start("conversation-inbox", &[]).await;
    e2e.open("default").await;
    let agent = e2e.ask("elsewhere", &two_questions());
    let mut title = Value::Null;
    for _ in 0..100 {
        title = e2e.script("return document.title;").await;
        if title.as_str().is_some_and(|t| t.starts_with("(1)")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(title, json!("(1) Which database? · ask-user"));
    let session = e2e
        .script("const b = document.querySelector('[data-auq=inbox-session][data-session=elsewhere]'); return b && b.getAttribute('data-pending');")
        .await;
    assert_eq!(
        session,
        json!("1"),
        "the list shows the other session's count"
    );
    e2e.script("document.querySelector('[data-auq=inbox-session][data-session=elsewhere]').click(); return null;")
        .await;
    let page = e2e
        .wait_for("the other session's question", |s| s.question_shown)
        .await;
    assert_eq!(page.question.as_deref(), Some("Which database?"));
    let search = e2e.script("return location.search;").await;
    assert_eq!(search, json!("?session=elsewhere"));
    e2e.click(Role::Button, "Cancel questions").await;
    let (status, _) = e2e.reply("the agent's call", agent).await;
    assert_ne!(status, StatusCode::OK);
    e2e.finish().await;
}
