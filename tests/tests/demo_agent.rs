//! The demo agent (`serve --demo`): a message from the person starts a turn
//! that replies, asks three questions through the seam, and summarises the
//! answers or acknowledges the cancel — all on the session's event stream.

use ask_user_core::wire::{
    AskerKind, MessageCreated, Outcome, QuestionRequested, Role, SessionEvent,
};
use ask_user_host::server::demo::{CANCELLED_REPLY, REPLY, SUMMARY_HEADING, questions};
use ask_user_tests::http_host::{EventStream, TestHost};
use reqwest::StatusCode;
use serde_json::json;

async fn message(events: &mut EventStream) -> MessageCreated {
    match events.next().await.session_event() {
        SessionEvent::MessageCreated(message) => message,
        other => panic!("expected message/created, got {other:?}"),
    }
}

/// Posts `text` as the person and follows the stream to the demo's question.
async fn start_turn(host: &TestHost, events: &mut EventStream, text: &str) -> QuestionRequested {
    let (status, body) = host
        .post(
            "/api/sessions/default/messages",
            json!({ "text": text }).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mine = message(events).await;
    assert_eq!((mine.role, mine.text.as_str()), (Role::User, text));
    let reply = message(events).await;
    assert_eq!((reply.role, reply.text.as_str()), (Role::Agent, REPLY));
    let asked = events.requested().await;
    assert_eq!(asked.session, "default");
    let asker = asked.asked_by.as_ref().expect("the demo names itself");
    assert_eq!(
        (asker.kind, asker.name.as_str()),
        (AskerKind::Demo, "ask-user demo")
    );
    asked
}

#[tokio::test]
async fn the_demo_agent_replies_asks_three_questions_and_summarises_the_answers() {
    let host = TestHost::start_with(|config| config.demo = true).await;
    let mut events = host.events("default").await;
    events.replay().await;

    let asked = start_turn(&host, &mut events, "Can you tidy up the parser?").await;
    assert_eq!(asked.request, questions());
    let [single, multi, free] = &asked.request.questions[..] else {
        panic!("three questions");
    };
    assert!(
        !single.is_multi_select()
            && single
                .options()
                .iter()
                .any(|o| o.label.ends_with(" (Recommended)"))
    );
    assert!(multi.is_multi_select() && multi.options().iter().all(|o| o.description.is_some()));
    assert!(!free.has_options());

    let answer = json!({"answers": [
        {"id": "approach", "selected": [], "custom": "Pair with me"},
        {"id": "focus", "selected": ["Tests", "Accessibility"]},
        {"id": "notes", "custom": "The CI is slow on Fridays."}
    ]});
    let (status, body) = host.answer("default", &asked.id, &answer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let resolved = events.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (asked.id.as_str(), Outcome::Answered)
    );

    let summary = message(&mut events).await;
    assert_eq!(summary.role, Role::Agent);
    assert_eq!(
        summary.text,
        format!(
            "{SUMMARY_HEADING}\n\
             - **Approach:** \u{201c}Pair with me\u{201d}\n\
             - **Focus:** Tests, Accessibility\n\
             - **Notes:** \u{201c}The CI is slow on Fridays.\u{201d}"
        )
    );
    assert!(host.pending_ids("default").await.is_empty());

    // The agent keeps listening: the next message starts another turn.
    let again = start_turn(&host, &mut events, "And the lexer?").await;
    assert_ne!(again.id, asked.id);
}

#[tokio::test]
async fn the_demo_agent_says_so_when_the_person_cancels() {
    let host = TestHost::start_with(|config| config.demo = true).await;
    let mut events = host.events("default").await;
    events.replay().await;

    let asked = start_turn(&host, &mut events, "Hello").await;
    let (status, body) = host.cancel("default", &asked.id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let resolved = events.resolved().await;
    assert_eq!(resolved.outcome, Outcome::Cancelled);

    let said = message(&mut events).await;
    assert_eq!(
        (said.role, said.text.as_str()),
        (Role::Agent, CANCELLED_REPLY)
    );
}

#[tokio::test]
async fn messages_sent_while_the_demo_agent_waits_for_answers_start_no_rounds_of_their_own() {
    let host = TestHost::start_with(|config| config.demo = true).await;
    let mut events = host.events("default").await;
    events.replay().await;

    let asked = start_turn(&host, &mut events, "First").await;
    for text in ["Second", "Third", "Fourth"] {
        let (status, body) = host
            .post(
                "/api/sessions/default/messages",
                json!({ "text": text }).to_string(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mine = message(&mut events).await;
        assert_eq!((mine.role, mine.text.as_str()), (Role::User, text));
    }
    let answer = json!({"answers": [
        {"id": "approach", "selected": ["Plan first"]},
        {"id": "focus", "selected": ["Docs"]},
        {"id": "notes"}
    ]});
    let (status, body) = host.answer("default", &asked.id, &answer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    events.resolved().await;
    let summary = message(&mut events).await;
    assert!(
        summary.text.starts_with(SUMMARY_HEADING),
        "{}",
        summary.text
    );

    // The three messages sent meanwhile were skipped: the next event after the
    // summary is the person's next message, which starts the next round.
    let again = start_turn(&host, &mut events, "Fifth").await;
    assert_eq!(host.pending_ids("default").await, vec![again.id]);
}
