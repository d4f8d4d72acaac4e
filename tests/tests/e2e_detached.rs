//! The page when the agent stops waiting: a calm notice on the question, which
//! stays answerable; it goes when the agent asks again; an answer given while
//! the agent was away reaches it when it asks again. Headless Chromium on the
//! real host serving the release build.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_tests::e2e::{E2e, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

const NOTICE: &str =
    "The agent stopped waiting. Your answer is kept and reaches it when it asks again.";

fn request() -> Value {
    json!({"questions": [{"id": "db", "question": "Which database should we use?",
        "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]}]})
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_detached_notice_comes_and_goes_and_an_answer_given_meanwhile_reaches_the_agent_asking_again()
 {
    let e2e = E2e::start("detached", &[]).await;
    e2e.open("default").await;

    let agent = e2e.ask("default", &request());
    let page = e2e
        .wait_for("the question to appear", |s| s.question_shown)
        .await;
    let id = page.question_id.clone().expect("the request's id");
    assert_eq!(page.detached, None, "a call waits on it");

    // The agent's connection drops: the question stays, with the notice.
    agent.abort();
    let page = e2e
        .wait_for("the detached notice", |s| s.detached.is_some())
        .await;
    assert_eq!(page.detached.as_deref(), Some(NOTICE));
    assert!(page.question_shown && !page.message_shown, "{page:#?}");
    assert_eq!(page.question_id.as_deref(), Some(id.as_str()));

    // A reload replays the state.
    let page = e2e.reload().await;
    let page = if page.detached.is_some() {
        page
    } else {
        e2e.wait_for("the replayed notice", |s| s.detached.is_some())
            .await
    };
    assert_eq!(page.detached.as_deref(), Some(NOTICE));

    // The agent asks again: same card, the notice goes.
    let again = e2e.ask("default", &request());
    let page = e2e
        .wait_for("the notice to go on reattach", |s| {
            s.question_shown && s.detached.is_none()
        })
        .await;
    assert_eq!(
        page.question_id.as_deref(),
        Some(id.as_str()),
        "the same card"
    );
    again.abort();
    e2e.wait_for("the notice again", |s| s.detached.is_some())
        .await;

    // The person answers while no call waits; the page lets go of it.
    e2e.click(Role::Radio, "SQLite").await;
    e2e.click(Role::Button, "Submit").await;
    e2e.wait_for("the Message box to come back", |s| {
        s.message_shown && !s.question_shown
    })
    .await;
    assert!(e2e.pending_ids("default").await.is_empty());

    // The agent asks again and gets that answer at once.
    let (status, body) = e2e
        .reply("the answer given meanwhile", e2e.ask("default", &request()))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"answers": [{"id": "db", "selected": ["SQLite"]}]})
    );
    let page = e2e.snapshot().await;
    assert!(!page.question_shown, "no second card: {page:#?}");
    e2e.finish().await;
}
