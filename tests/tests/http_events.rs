//! The session event stream over real HTTP: replay on every open with the same
//! ids, `session/synced`, live events per session, and transcript messages.

use ask_user_core::SessionId;
use ask_user_core::wire::{MessageCreated, Outcome, Role, SessionEvent};
use ask_user_tests::http_host::TestHost;
use ask_user_tests::wait::within;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn question(id: &str) -> Value {
    json!({"questions": [{"id": id, "question": format!("{id}?")}]})
}

#[tokio::test]
async fn a_fresh_stream_of_an_empty_session_sends_only_an_empty_synced() {
    let host = TestHost::start().await;
    let mut tab = host.events("fresh").await;
    let first = tab.next().await;
    assert_eq!(first.event, "session/synced");
    assert_eq!(first.json(), json!({"pending": []}));
}

#[tokio::test]
async fn every_reopen_replays_each_pending_question_with_the_same_id_oldest_first() {
    let host = TestHost::start().await;
    let mut watcher = host.events("s1").await;
    watcher.replay().await;
    let asks: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|q| host.ask("s1", "", &question(q)))
        .collect();
    let mut live = Vec::new();
    for _ in 0..3 {
        live.push(watcher.requested().await);
    }
    let ids: Vec<String> = live.iter().map(|q| q.id.clone()).collect();

    for _ in 0..5 {
        let mut tab = host.events("s1").await;
        let mut replayed = Vec::new();
        loop {
            let frame = tab.next().await;
            match frame.session_event() {
                SessionEvent::QuestionRequested(q) => replayed.push(q),
                SessionEvent::SessionSynced(synced) => {
                    assert_eq!(
                        synced.pending, ids,
                        "synced lists the pending ids, oldest first"
                    );
                    break;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(
            replayed, live,
            "the replay is the live frames again, same ids, oldest first"
        );
    }

    for id in &ids {
        host.cancel("s1", id).await;
    }
    for ask in asks {
        within("the ask", ask).await.unwrap();
    }
}

#[tokio::test]
async fn synced_after_a_reopen_leaves_out_what_was_resolved_while_away() {
    let host = TestHost::start().await;
    let mut watcher = host.events("s1").await;
    watcher.replay().await;
    let keep = host.ask("s1", "", &question("keep"));
    let keep_id = watcher.requested().await.id;
    let gone = host.ask("s1", "", &question("gone"));
    let gone_id = watcher.requested().await.id;

    let mut tab = host.events("s1").await;
    assert_eq!(tab.replay().await.1, vec![keep_id.clone(), gone_id.clone()]);
    drop(tab);
    host.answer(
        "s1",
        &gone_id,
        &json!({"answers": [{"id": "gone", "custom": "done"}]}),
    )
    .await;
    let mut tab = host.events("s1").await;
    let (replayed, pending) = tab.replay().await;
    assert_eq!(replayed, vec![keep_id.clone()]);
    assert_eq!(pending, vec![keep_id.clone()]);

    host.cancel("s1", &keep_id).await;
    within("the asks", async {
        (keep.await.unwrap(), gone.await.unwrap())
    })
    .await;
}

#[tokio::test]
async fn streams_only_see_their_own_session() {
    let host = TestHost::start().await;
    let mut s1 = host.events("s1").await;
    let mut s2 = host.events("s2").await;
    s1.replay().await;
    s2.replay().await;
    let ask = host.ask("s2", "", &question("only-s2"));
    let asked = s2.requested().await;
    assert_eq!(asked.session, "s2");
    host.cancel("s2", &asked.id).await;
    assert_eq!(s2.resolved().await.outcome, Outcome::Cancelled);
    within("the ask", ask).await.unwrap();

    // s1 saw none of it: its next frame is its own.
    let ask = host.ask("s1", "", &question("only-s1"));
    let own = s1.requested().await;
    assert_eq!(own.session, "s1");
    host.cancel("s1", &own.id).await;
    within("the ask", ask).await.unwrap();
}

#[tokio::test]
async fn a_posted_message_reaches_every_stream_of_the_session_as_message_created() {
    let host = TestHost::start().await;
    let mut tab_a = host.events("chat").await;
    let mut tab_b = host.events("chat").await;
    tab_a.replay().await;
    tab_b.replay().await;
    let mut agent = host.state.subscribe(&SessionId::parse("chat").unwrap());

    let (status, body) = host
        .post(
            "/api/sessions/chat/messages",
            json!({"text": "Hello there"}).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let created: MessageCreated = serde_json::from_value(body).expect("the message comes back");
    assert_eq!(
        (created.role, created.text.as_str()),
        (Role::User, "Hello there")
    );
    for tab in [&mut tab_a, &mut tab_b] {
        let frame = tab.next().await;
        assert_eq!(frame.event, "message/created");
        assert_eq!(
            frame.session_event(),
            SessionEvent::MessageCreated(created.clone())
        );
    }
    let seen = within("the agent's copy", agent.events.recv())
        .await
        .unwrap();
    assert_eq!(*seen, SessionEvent::MessageCreated(created));

    // The agent side posts through the state; tabs see role "agent".
    let reply = host
        .state
        .post_message(&SessionId::parse("chat").unwrap(), Role::Agent, "Hi!")
        .await
        .unwrap();
    let frame = tab_a.next().await;
    assert_eq!(
        frame.json(),
        json!({"id": reply.id, "role": "agent", "text": "Hi!", "at_ms": reply.at_ms})
    );
}

#[tokio::test]
async fn a_bad_message_is_refused() {
    let host = TestHost::start().await;
    for body in [
        r#"{"text": "   "}"#,
        r#"{"txt": "hi"}"#,
        "hi",
        r#"{"text": 3}"#,
    ] {
        let (status, reply) = host.post("/api/sessions/chat/messages", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply["error"]["code"], "BAD_REQUEST", "{body}");
    }
}

#[tokio::test]
async fn the_stream_needs_the_token_and_a_valid_session() {
    let host = TestHost::start().await;
    let response = host
        .client
        .get(host.url("/api/sessions/s1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (status, body) = host.get("/api/sessions/no%20spaces/events").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_REQUEST"))
    );
}

#[tokio::test]
async fn a_reopened_stream_replays_which_questions_no_call_waits_on() {
    let host = TestHost::start().await;
    let mut watcher = host.events("s1").await;
    watcher.replay().await;
    let waiting = host.ask("s1", "", &question("a"));
    let a = watcher.requested().await.id;
    let gone = host.ask("s1", "", &question("b"));
    let b = watcher.requested().await.id;
    gone.abort();
    assert_eq!(watcher.detached().await, b);

    let mut tab = host.events("s1").await;
    let (replayed, pending) = tab.replay_detached().await;
    assert_eq!(replayed, vec![(a.clone(), false), (b.clone(), true)]);
    assert_eq!(pending, vec![a.clone(), b.clone()]);

    // Asked again: attached, and a later replay says so.
    let back = host.ask("s1", "", &question("b"));
    assert_eq!(watcher.attached().await, b);
    assert_eq!(tab.attached().await, b, "live to every open stream");
    let (replayed, _) = host.events("s1").await.replay_detached().await;
    assert_eq!(replayed, vec![(a.clone(), false), (b.clone(), false)]);

    for id in [&a, &b] {
        host.cancel("s1", id).await;
    }
    within("the asks", async {
        (waiting.await.unwrap(), back.await.unwrap())
    })
    .await;
}
