//! The ask/answer/cancel contract over real HTTP on loopback: who wins, what
//! the agent gets, what the streams see, and how shutdown ends it.

use ask_user_core::wire::{Outcome, QuestionRequested};
use ask_user_core::{AbortController, AskRequest, SessionId};
use ask_user_host::{ApiError, AskOptions};
use ask_user_tests::http_host::{TestHost, assert_error};
use ask_user_tests::wait::within;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn s1() -> SessionId {
    SessionId::parse("s1").unwrap()
}

fn pick_one() -> Value {
    json!({"questions": [{
        "id": "db",
        "question": "Which database?",
        "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]
    }]})
}

fn answer_postgres() -> Value {
    json!({"answers": [{"id": "db", "selected": ["Postgres (Recommended)"]}]})
}

#[tokio::test]
async fn an_answer_returns_the_normalised_batch_to_the_agent_and_resolves_every_stream() {
    let host = TestHost::start().await;
    let mut tab_a = host.events("s1").await;
    let mut tab_b = host.events("s1").await;
    tab_a.replay().await;
    tab_b.replay().await;
    let request = json!({"questions": [
        {"id": "name", "question": "Project name?"},
        {"id": "db", "question": "Which database?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}
    ]});
    let ask = host.ask("s1", "", &request);
    let asked = tab_a.requested().await;
    assert_eq!(
        tab_b.requested().await.id,
        asked.id,
        "both tabs see the same id"
    );
    assert_eq!(asked.session, "s1");
    assert_eq!(
        asked.request,
        AskRequest::from_value(request.clone()).unwrap()
    );

    // Out of order and with padding: the agent gets it normalised.
    let answer = json!({"answers": [
        {"id": "db", "selected": ["SQLite"]},
        {"id": "name", "custom": "  ask-user  "}
    ]});
    let (status, body) = host.answer("s1", &asked.id, &answer).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "answered"}))
    );

    let (status, body) = within("the ask to return", ask).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"answers": [
            {"id": "name", "selected": [], "custom": "ask-user"},
            {"id": "db", "selected": ["SQLite"]}
        ]})
    );
    for tab in [&mut tab_a, &mut tab_b] {
        let resolved = tab.resolved().await;
        assert_eq!(
            (resolved.id.as_str(), resolved.outcome),
            (asked.id.as_str(), Outcome::Answered)
        );
    }
    assert!(host.pending_ids("s1").await.is_empty());
}

#[tokio::test]
async fn an_invalid_answer_is_refused_and_the_question_stays_pending() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    let wrong_label = json!({"answers": [{"id": "db", "selected": ["MySQL"]}]});
    assert_error(
        &host.answer("s1", &id, &wrong_label).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "BAD_ANSWER",
        "MySQL",
    );

    let missing = json!({"answers": []});
    let (status, body) = host.answer("s1", &id, &missing).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("BAD_ANSWER"))
    );

    let (status, body) = host
        .post(
            &format!("/api/sessions/s1/questions/{id}/answer"),
            "{not json",
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("BAD_ANSWER"))
    );

    assert_eq!(host.pending_ids("s1").await, vec![id.clone()]);
    let (status, _) = host.answer("s1", &id, &answer_postgres()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = within("the ask", ask).await.unwrap();
    assert_eq!((status, body), (StatusCode::OK, answer_postgres()));
}

#[tokio::test]
async fn a_100_kb_field_name_or_label_is_quoted_in_the_error_to_80_characters() {
    let host = TestHost::start().await;
    let huge = "w".repeat(100_000);
    let quoted_whole = |body: &Value| {
        let text = body.to_string();
        assert!(text.len() < 2000, "a {} byte error", text.len());
        assert!(text.contains(&"w".repeat(80)), "{text}");
        assert!(!text.contains(&"w".repeat(81)), "{text}");
    };
    let mut request = pick_one();
    request["questions"][0][huge.as_str()] = json!(1);
    let (status, body) = within("the ask", host.ask("s1", "", &request))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    quoted_whole(&body);

    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    for answer in [
        json!({"answers": [{"id": "db", "selected": [huge]}]}),
        json!({"answers": [{"id": "db", "selected": [], huge.as_str(): 1}]}),
    ] {
        let (status, body) = host.answer("s1", &id, &answer).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        quoted_whole(&body);
    }
    host.answer("s1", &id, &answer_postgres()).await;
    within("the ask", ask).await.unwrap();
}

#[tokio::test]
async fn a_second_answer_is_not_pending_and_says_it_was_already_answered() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    assert_eq!(
        host.answer("s1", &id, &answer_postgres()).await.0,
        StatusCode::OK
    );
    assert_error(
        &host.answer("s1", &id, &answer_postgres()).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "already answered",
    );
    within("the ask", ask).await.unwrap();
}

#[tokio::test]
async fn unknown_and_other_session_ids_are_not_pending() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    let (status, body) = host.answer("s1", "q_unknown", &answer_postgres()).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("NOT_PENDING"))
    );
    let (status, body) = host.answer("other", &id, &answer_postgres()).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("NOT_PENDING"))
    );
    let (status, body) = host.cancel("other", &id).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("NOT_PENDING"))
    );

    assert_eq!(
        host.pending_ids("s1").await,
        vec![id.clone()],
        "still pending in its own session"
    );
    assert!(host.pending_ids("other").await.is_empty());
    host.answer("s1", &id, &answer_postgres()).await;
    within("the ask", ask).await.unwrap();
}

#[tokio::test]
async fn cancel_fails_the_ask_with_ask_cancelled_and_resolves_as_cancelled() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    let (status, body) = host.cancel("s1", &id).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "cancelled"}))
    );
    let (status, body) = within("the ask", ask).await.unwrap();
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "ASK_CANCELLED");
    assert_eq!(body["error"]["name"], "UserInteractionError");
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id, resolved.outcome),
        (id.clone(), Outcome::Cancelled)
    );

    assert_error(
        &host.cancel("s1", &id).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "cancelled",
    );
    assert_error(
        &host.answer("s1", &id, &answer_postgres()).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "cancelled",
    );
}

#[tokio::test]
async fn an_agent_that_hangs_up_detaches_its_question_and_a_repost_gets_the_answer_given_meanwhile()
{
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    // Dropping the request task closes the agent's connection.
    ask.abort();
    assert_eq!(tab.detached().await, id, "every tab hears it");
    assert_eq!(
        host.pending_ids("s1").await,
        vec![id.clone()],
        "still answerable"
    );

    let (status, body) = host.answer("s1", &id, &answer_postgres()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id, resolved.outcome),
        (id.clone(), Outcome::Answered)
    );
    assert!(host.pending_ids("s1").await.is_empty(), "the page drops it");

    // The same request again: the answer at once, and no second question.
    let again = host.ask("s1", "", &pick_one());
    let (status, body) = within("the re-posted ask", again).await.unwrap();
    assert_eq!((status, body), (StatusCode::OK, answer_postgres()));
    let next = host.ask("s1", "", &pick_one());
    let next_id = tab.requested().await.id;
    assert_ne!(
        next_id, id,
        "the answer was collected once; this is a new question"
    );
    host.cancel("s1", &next_id).await;
    within("the next ask", next).await.unwrap();
}

#[tokio::test]
async fn a_repost_while_detached_reattaches_to_the_same_question() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    first.abort();
    assert_eq!(tab.detached().await, id);

    // A different request is a different question; the same one attaches.
    let other = json!({"questions": [{"id": "why", "question": "Why?"}]});
    let different = host.ask("s1", "", &other);
    let other_id = tab.requested().await.id;
    assert_ne!(other_id, id);
    let again = host.ask("s1", "", &pick_one());
    assert_eq!(tab.attached().await, id, "same id, no second card");
    assert_eq!(
        host.pending_ids("s1").await,
        vec![id.clone(), other_id.clone()]
    );

    assert_eq!(
        host.answer("s1", &id, &answer_postgres()).await.0,
        StatusCode::OK
    );
    let (status, body) = within("the reattached ask", again).await.unwrap();
    assert_eq!((status, body), (StatusCode::OK, answer_postgres()));
    host.cancel("s1", &other_id).await;
    within("the other ask", different).await.unwrap();
}

#[tokio::test]
async fn a_cancel_while_detached_fails_the_repost_with_ask_cancelled() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    first.abort();
    tab.detached().await;
    assert_eq!(host.cancel("s1", &id).await.0, StatusCode::OK);
    assert_eq!(tab.resolved().await.outcome, Outcome::Cancelled);
    let (status, body) = within("the re-post", host.ask("s1", "", &pick_one()))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "ASK_CANCELLED");
}

#[tokio::test]
async fn with_a_one_second_grace_a_detached_question_nobody_asks_for_resolves_aborted() {
    let host = TestHost::start_with(|config| config.detach_grace = Duration::from_secs(1)).await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    ask.abort();
    assert_eq!(tab.detached().await, id);
    let detached_at = std::time::Instant::now();
    assert_eq!(host.pending_ids("s1").await, vec![id.clone()]);

    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id, resolved.outcome),
        (id.clone(), Outcome::Aborted)
    );
    let after = detached_at.elapsed();
    assert!(
        after >= Duration::from_millis(900),
        "not before the grace ran out"
    );
    // About the grace, not the 30 s the stream is given: a timer that ignored
    // the grace (or a default of 600 s) fails this. Generous for a loaded machine.
    assert!(
        after < Duration::from_secs(6),
        "resolved {after:?} after detaching, far beyond the 1 s grace"
    );
    assert!(host.pending_ids("s1").await.is_empty());
    assert_error(
        &host.answer("s1", &id, &answer_postgres()).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "did not ask again within the grace",
    );
}

#[tokio::test]
async fn with_no_grace_an_agent_that_hangs_up_aborts_its_question_which_is_not_a_cancel() {
    let host = TestHost::start_with(|config| config.detach_grace = Duration::ZERO).await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    // Dropping the request task closes the agent's connection.
    ask.abort();
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id, resolved.outcome),
        (id.clone(), Outcome::Aborted)
    );
    assert!(host.pending_ids("s1").await.is_empty());
    assert_error(
        &host.answer("s1", &id, &answer_postgres()).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "the agent stopped waiting, so it was aborted",
    );
}

#[tokio::test]
async fn an_owner_abort_through_the_seam_is_ask_aborted_while_a_cancel_is_ask_cancelled() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let request = AskRequest::from_value(pick_one()).unwrap();

    let owner = AbortController::new();
    let options = AskOptions {
        abort: owner.signal(),
        ..AskOptions::default()
    };
    let state = host.state.clone();
    let aborted = tokio::spawn({
        let request = request.clone();
        async move { state.ask(&s1(), request, options).await }
    });
    let id = tab.requested().await.id;
    owner.abort();
    let error = within("the aborted ask", aborted)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ASK_ABORTED");
    assert_eq!(tab.resolved().await.outcome, Outcome::Aborted);
    assert_eq!(host.cancel("s1", &id).await.0, StatusCode::CONFLICT);

    let state = host.state.clone();
    let cancelled =
        tokio::spawn(async move { state.ask(&s1(), request, AskOptions::default()).await });
    let id = tab.requested().await.id;
    assert_eq!(host.cancel("s1", &id).await.0, StatusCode::OK);
    let error = within("the cancelled ask", cancelled)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), "ASK_CANCELLED");
    assert_eq!(tab.resolved().await.outcome, Outcome::Cancelled);
}

#[tokio::test]
async fn an_ask_with_timeout_ms_fails_with_ask_timeout_and_resolves_as_timeout() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "?timeout_ms=50", &pick_one());
    let id = tab.requested().await.id;
    let (status, body) = within("the timed-out ask", ask).await.unwrap();
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
    assert_eq!(body["error"]["code"], "ASK_TIMEOUT");
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.clone(), resolved.outcome),
        (id.clone(), Outcome::Timeout)
    );
    assert_error(
        &host.answer("s1", &id, &answer_postgres()).await,
        StatusCode::CONFLICT,
        "NOT_PENDING",
        "timed out",
    );
}

#[tokio::test]
async fn a_bad_timeout_is_refused_before_anything_is_pending() {
    let host = TestHost::start().await;
    for query in [
        "?timeout_ms=soon",
        "?timeout_ms=0",
        "?timeout_ms=-1",
        "?timeout_ms=99999999999999",
    ] {
        let (status, body) = within("the refusal", host.ask("s1", query, &pick_one()))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{query}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("timeout_ms"),
            "{query}: {body}"
        );
    }
    assert!(host.pending_ids("s1").await.is_empty());
}

#[tokio::test]
async fn invalid_requests_are_refused_with_cores_code_before_anything_is_pending() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let cases = [
        (json!({"questions": []}), "EMPTY_QUESTIONS"),
        (
            json!({"questions": [{"id": "p", "question": "Ship?", "options": [{"label": "Yes"}],
                "intent": {"kind": "plan-review", "approve": "No"}, "detail": "plan"}]}),
            "BAD_INTENT",
        ),
        (
            json!({"questions": [{"id": "a", "question": "?", "recommended": true}]}),
            "BAD_REQUEST",
        ),
        (json!({"nope": 1}), "BAD_REQUEST"),
    ];
    for (request, code) in cases {
        let (status, body) = within("the refusal", host.ask("s1", "", &request))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}");
        assert_eq!(body["error"]["code"], code, "{request}: {body}");
    }
    let (status, body) = host.post("/api/sessions/s1/ask", "{\"questions\": [").await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_REQUEST"))
    );
    let (status, body) = host
        .post("/api/sessions/s1/ask", vec![0xff, 0xfe, 0x00])
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("BAD_REQUEST"))
    );

    assert!(host.pending_ids("s1").await.is_empty());
    // Nothing was broadcast: the next frame is the next real question.
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    host.cancel("s1", &id).await;
    within("the ask", ask).await.unwrap();
}

#[tokio::test]
async fn fifty_concurrent_valid_answers_make_exactly_one_winner_and_one_return() {
    let host = Arc::new(TestHost::start().await);
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;

    let answers: Vec<_> = (0..50)
        .map(|i| {
            let host = host.clone();
            let id = id.clone();
            // Every answer is valid; they differ so the winner is identifiable.
            let label = if i % 2 == 0 {
                "Postgres (Recommended)"
            } else {
                "SQLite"
            };
            tokio::spawn(async move {
                let answer = json!({"answers": [{"id": "db", "selected": [label]}]});
                (host.answer("s1", &id, &answer).await, label)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in answers {
        let ((status, body), label) = within("an answer", task).await.unwrap();
        match status {
            StatusCode::OK => winners.push(label),
            StatusCode::CONFLICT => assert_eq!(body["error"]["code"], "NOT_PENDING"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one answer wins");
    let (status, body) = within("the ask", ask).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"answers": [{"id": "db", "selected": [winners[0]]}]}),
        "the winner's answer"
    );
    assert_eq!(tab.resolved().await.outcome, Outcome::Answered);
    // Exactly one resolution: the next frame belongs to the next question.
    let next = host.ask("s1", "", &pick_one());
    let next_id = tab.requested().await.id;
    assert_ne!(next_id, id);
    host.cancel("s1", &next_id).await;
    within("the next ask", next).await.unwrap();
}

#[tokio::test]
async fn an_answer_sent_the_instant_the_question_arrives_is_never_lost() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    for round in 0..50 {
        let ask = host.ask("s1", "", &pick_one());
        let id = tab.requested().await.id;
        let (status, body) = host.answer("s1", &id, &answer_postgres()).await;
        assert_eq!(status, StatusCode::OK, "round {round}: {body}");
        let (status, body) = within("the ask", ask).await.unwrap();
        assert_eq!(
            (status, body),
            (StatusCode::OK, answer_postgres()),
            "round {round}"
        );
        assert_eq!(tab.resolved().await.id, id, "round {round}");
    }
}

#[tokio::test]
async fn the_pending_list_holds_each_waiting_question_oldest_first() {
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let first_id = tab.requested().await.id;
    let free_text = json!({"questions": [{"id": "why", "question": "Why?"}]});
    let second = host.ask("s1", "", &free_text);
    let second_id = tab.requested().await.id;

    let (status, body) = host.get("/api/sessions/s1/questions").await;
    assert_eq!(status, StatusCode::OK);
    let pending = body["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0]["id"], first_id.as_str());
    assert_eq!(pending[0]["request"], pick_one());
    assert!(pending[0]["created_at_ms"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(pending[1]["id"], second_id.as_str());
    assert_eq!(pending[1]["request"], free_text);

    host.cancel("s1", &first_id).await;
    host.cancel("s1", &second_id).await;
    within("the asks", async {
        (first.await.unwrap(), second.await.unwrap())
    })
    .await;
}

#[tokio::test]
async fn max_pending_refuses_the_next_ask_with_too_many_pending() {
    let host = TestHost::start_with(|config| config.max_pending = 2).await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let first_id = tab.requested().await.id;
    let second = host.ask("s2", "", &pick_one());
    while host.pending_ids("s2").await.is_empty() {
        tokio::task::yield_now().await;
    }
    let (status, body) = within("the refusal", host.ask("s1", "", &pick_one()))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"]["code"], "TOO_MANY_PENDING");
    assert_eq!(body["error"]["name"], "UserInteractionError");

    // Room again once one is resolved.
    host.cancel("s1", &first_id).await;
    within("the first ask", first).await.unwrap();
    let third = host.ask("s1", "", &pick_one());
    tab.resolved().await;
    let third_id = tab.requested().await.id;
    host.cancel("s1", &third_id).await;
    let second_id = host.pending_ids("s2").await.remove(0);
    host.cancel("s2", &second_id).await;
    within("the asks", async {
        (second.await.unwrap(), third.await.unwrap())
    })
    .await;
}

#[tokio::test]
async fn without_the_web_provider_an_ask_fails_with_no_provider() {
    let host = TestHost::start_with(|config| config.web = false).await;
    let (status, body) = within("the refusal", host.ask("s1", "", &pick_one()))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "NO_PROVIDER");
}

#[tokio::test]
async fn shutdown_resolves_pending_asks_as_aborted_and_streams_see_disposed_then_end() {
    let mut host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let first_id = tab.requested().await.id;
    let second = host.ask("s1", "?timeout_ms=600000", &pick_one());
    let second_id = tab.requested().await.id;

    host.shutdown().await;

    for ask in [first, second] {
        let (status, body) = within("the disposed ask", ask).await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"]["code"], "ASK_ABORTED");
    }
    let mut disposed = [tab.resolved().await, tab.resolved().await];
    disposed.sort_by_key(|r| r.id != first_id);
    assert_eq!(disposed[0].id, first_id);
    assert_eq!(disposed[1].id, second_id);
    assert!(disposed.iter().all(|r| r.outcome == Outcome::Disposed));
    assert_eq!(
        within("the stream's end", tab.next_frame()).await,
        None,
        "the stream ends"
    );
    // serve() returned: the port no longer answers.
    let refused = host.client.get(host.url("/api/health")).send().await;
    assert!(refused.is_err(), "the server is gone");
}

#[tokio::test]
async fn an_ask_after_shutdown_began_fails_with_ask_aborted() {
    let host = TestHost::start().await;
    host.state.shutdown_handle().shutdown();
    let request = AskRequest::from_value(pick_one()).unwrap();
    let error: ApiError = host
        .state
        .ask(&s1(), request, AskOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "ASK_ABORTED");
    assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn an_enormous_max_pending_is_accepted_as_unbounded() {
    let host = TestHost::start_with(|config| config.max_pending = usize::MAX).await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let ask = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    assert_eq!(
        host.answer("s1", &id, &answer_postgres()).await.0,
        StatusCode::OK
    );
    let (status, body) = within("the ask", ask).await.unwrap();
    assert_eq!((status, body), (StatusCode::OK, answer_postgres()));
}

#[tokio::test]
async fn shutdown_resolves_a_detached_question_and_logs_a_held_answer_as_never_delivered() {
    use ask_user_tests::host_process::HostProcess;
    let folder = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-held-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let mut host =
        HostProcess::start_in(&folder, &[]).unwrap_or_else(|e| panic!("the host starts: {e}"));
    let base = host.origin().to_owned();
    let token = host.token().expect("a token").to_owned();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let authed = |builder: reqwest::RequestBuilder| builder.bearer_auth(&token);
    let events = authed(client.get(format!("{base}/api/sessions/s/events")))
        .send()
        .await
        .unwrap();
    let mut tab = ask_user_tests::http_host::EventStream::new(events);
    tab.replay().await;

    // Two asks whose agents hang up: one stays detached, one is answered
    // meanwhile (its answer is held for an agent that never comes back).
    let free_text = json!({"questions": [{"id": "why", "question": "Why?"}]});
    let mut ids = Vec::new();
    for request in [pick_one(), free_text] {
        let post = authed(client.post(format!("{base}/api/sessions/s/ask")))
            .body(request.to_string())
            .send();
        let ask = tokio::spawn(post);
        let id = tab.requested().await.id;
        ask.abort();
        assert_eq!(tab.detached().await, id);
        ids.push(id);
    }
    let answered =
        authed(client.post(format!("{base}/api/sessions/s/questions/{}/answer", ids[1])))
            .body(json!({"answers": [{"id": "why", "custom": "because"}]}).to_string())
            .send()
            .await
            .unwrap();
    assert_eq!(answered.status(), StatusCode::OK);
    assert_eq!(tab.resolved().await.outcome, Outcome::Answered);

    let status = host.terminate_and_wait();
    assert!(status.success(), "{status}");
    let resolved = tab.resolved().await;
    assert_eq!(
        (resolved.id.as_str(), resolved.outcome),
        (ids[0].as_str(), Outcome::Disposed)
    );
    let logs = host.stderr();
    let never = logs
        .lines()
        .filter(|line| line.contains("never delivered"))
        .collect::<Vec<_>>();
    assert_eq!(never.len(), 1, "logged once: {logs}");
    assert!(
        never[0].contains(&ids[1]),
        "names the question: {}",
        never[0]
    );
    std::fs::remove_dir_all(&folder).ok();
}

#[tokio::test]
async fn a_detached_question_counts_against_max_pending_but_its_own_repost_always_fits() {
    let host = TestHost::start_with(|config| config.max_pending = 1).await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    let first = host.ask("s1", "", &pick_one());
    let id = tab.requested().await.id;
    first.abort();
    assert_eq!(tab.detached().await, id);

    let other = json!({"questions": [{"id": "why", "question": "Why?"}]});
    assert_error(
        &within("the refusal", host.ask("s1", "", &other))
            .await
            .unwrap(),
        StatusCode::TOO_MANY_REQUESTS,
        "TOO_MANY_PENDING",
        "at most 1",
    );
    let again = host.ask("s1", "", &pick_one());
    assert_eq!(tab.attached().await, id);
    assert_eq!(
        host.answer("s1", &id, &answer_postgres()).await.0,
        StatusCode::OK
    );
    let (status, body) = within("the reattached ask", again).await.unwrap();
    assert_eq!((status, body), (StatusCode::OK, answer_postgres()));
}

#[tokio::test]
async fn the_pending_list_and_the_streams_are_byte_for_byte_what_serde_json_writes_for_cores_types()
{
    use ask_user_core::wire::{AGENT_HEADER, PendingList, PendingQuestion, SessionEvent};
    // The frame's data as sent, and as serde_json writes the event it parses to.
    fn requested(frame: ask_user_tests::http_host::Frame) -> (String, String, QuestionRequested) {
        let SessionEvent::QuestionRequested(q) = frame.session_event() else {
            panic!("expected question/requested, got {}", frame.event);
        };
        (frame.data, serde_json::to_string(&q).unwrap(), q)
    }
    let host = TestHost::start().await;
    let mut tab = host.events("s1").await;
    tab.replay().await;
    // Every optional field, non-ASCII text and characters JSON must escape.
    let full = json!({"questions": [
        {"id": "plan", "question": "Ship \"v2\"\\now?\n\tÜber 🚀 \u{7}", "header": "Plan ✓",
         "detail": "<b>&</b> \u{2028} \r\n", "multi_select": false,
         "options": [{"label": "Yes (Recommended)", "description": "ja – 是"}, {"label": "No"}],
         "intent": {"kind": "plan-review", "approve": "Yes (Recommended)"}},
        {"id": "free", "question": "Anything else?"}
    ]});
    let named = host
        .authed(reqwest::Method::POST, "/api/sessions/s1/ask")
        .header(AGENT_HEADER, "agent-ü/1.0")
        .body(full.to_string())
        .send();
    let named = tokio::spawn(named);
    let (sent, serialised, first) = requested(tab.next().await);
    assert_eq!(sent, serialised, "live");
    let nameless = host.ask("s1", "", &pick_one());
    let (sent, serialised, second) = requested(tab.next().await);
    assert_eq!(sent, serialised, "live");
    assert!(first.asked_by.is_some() && second.asked_by.is_none());
    let mut late = host.events("s1").await;
    for _ in 0..2 {
        let (sent, serialised, _) = requested(late.next().await);
        assert_eq!(sent, serialised, "replayed");
    }

    let body = host
        .authed(reqwest::Method::GET, "/api/sessions/s1/questions")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let expected = PendingList {
        pending: [first, second]
            .into_iter()
            .map(|q| PendingQuestion {
                id: q.id,
                request: q.request,
                created_at_ms: q.created_at_ms,
                asked_by: q.asked_by,
            })
            .collect(),
    };
    assert_eq!(
        expected.pending[0].request,
        AskRequest::from_value(full).unwrap()
    );
    assert_eq!(body, serde_json::to_string(&expected).unwrap());
    named.abort();
    nameless.abort();
}
