//! Tests of the pending table's driver: the broadcasts it keeps, its
//! channels, its timer on tokio's clock, and the limits and JSON it carries
//! through. The rules themselves are tested on `Table` alone
//! (`table/tests.rs`).

use super::*;
use ask_user_core::wire::SessionEvent;

const GRACE: Duration = Duration::from_secs(1000);
const MAX_KEPT: usize = 6;

fn request(variant: usize) -> AskRequest {
    AskRequest::from_json(&format!(
        r#"{{"questions": [{{"id": "q", "question": "Pick {variant}", "options": [{{"label": "a"}}, {{"label": "b"}}]}}]}}"#
    ))
    .unwrap()
}

fn answer(label: &str) -> AnswerBatch {
    AnswerBatch::from_json(&format!(
        r#"{{"answers": [{{"id": "q", "selected": ["{label}"]}}]}}"#
    ))
    .unwrap()
}

fn table() -> PendingTable {
    PendingTable::with_config(PendingConfig {
        channel_capacity: 1024,
        detach_grace: GRACE,
        max_kept: MAX_KEPT,
        ..PendingConfig::default()
    })
}

#[test]
fn a_sessions_broadcast_is_forgotten_once_nothing_waits_there_and_its_last_subscriber_leaves() {
    let pending = PendingTable::new();
    let subscription = pending.subscribe("s");
    assert_eq!(pending.lock().fanouts.len(), 1);
    drop(subscription);
    pending.release("s");
    assert_eq!(pending.lock().fanouts.len(), 0);

    let subscription = pending.subscribe("s");
    let registered = pending.register("s", request(0), None).unwrap();
    drop(subscription);
    pending.release("s");
    assert_eq!(
        pending.lock().fanouts.len(),
        1,
        "a pending question keeps it"
    );
    assert!(pending.abort("s", registered.attachment.id(), Outcome::Aborted));
    assert_eq!(pending.lock().fanouts.len(), 0);
}

#[test]
fn remembered_resolutions_are_bounded() {
    let pending = PendingTable::new();
    for _ in 0..REMEMBERED_RESOLUTIONS + 10 {
        let registered = pending.register("s", request(0), None).unwrap();
        pending.cancel("s", registered.attachment.id()).unwrap();
    }
    let remembered = pending.lock().table.remembered();
    assert_eq!(remembered, (REMEMBERED_RESOLUTIONS, REMEMBERED_RESOLUTIONS));
}

#[test]
fn a_late_explicit_end_aborts_a_detached_question_but_not_one_asked_for_again() {
    let pending = table();
    let first = pending.register("s", request(0), None).unwrap();
    let id = first.attachment.id().to_owned();
    assert!(!pending.abort_detached("s", &id), "attached: kept");
    pending.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    let again = pending.register("s", request(0), None).unwrap();
    assert_eq!(again.found, Found::Reattached);
    assert!(!pending.abort_detached("s", &id), "attached again: kept");
    pending.let_go("s", again.attachment, again.waiter, LetGo::Detach);
    assert!(pending.abort_detached("s", &id));
    let refused = pending.claim("s", &id, answer("a")).unwrap_err();
    assert!(
        refused.message.ends_with(table::Ended::Aborted.reason()),
        "{refused}"
    );
}

#[test]
fn an_identical_ask_while_the_first_is_attached_is_a_new_question() {
    let pending = table();
    let first = pending.register("s", request(0), None).unwrap();
    let second = pending.register("s", request(0), None).unwrap();
    assert_eq!(second.found, Found::New);
    assert_ne!(first.attachment.id(), second.attachment.id());
}

#[test]
fn a_detached_question_counts_against_the_limit_and_a_reattach_needs_no_room() {
    let pending = table();
    let calls: Vec<Registered> = (0..MAX_KEPT)
        .map(|_| pending.register("s", request(0), None).unwrap())
        .collect();
    let mut calls = calls.into_iter();
    let first = calls.next().unwrap();
    let id = first.attachment.id().to_owned();
    pending.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    assert_eq!(
        pending.register("s", request(1), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::Total(MAX_KEPT)
        },
        "the detached question still takes its slot"
    );
    let again = pending.register("s", request(0), None).unwrap();
    assert_eq!(again.found, Found::Reattached);
    assert_eq!(again.attachment.id(), id);
}

#[tokio::test(start_paused = true)]
async fn the_grace_timer_ends_a_detached_question_when_its_grace_runs_out() {
    let pending: Arc<PendingTable> = Arc::new(PendingTable::with_config(PendingConfig {
        detach_grace: Duration::from_secs(30),
        ..PendingConfig::default()
    }));
    let shutdown = CancellationToken::new();
    let timer = spawn_grace_timer(pending.clone(), shutdown.clone());
    let mut events = pending.subscribe("s").events;
    let registered = pending.register("s", request(0), None).unwrap();
    let id = registered.attachment.id().to_owned();
    pending.let_go("s", registered.attachment, registered.waiter, LetGo::Detach);

    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(pending.pending_count(), 1, "still within the grace");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(pending.pending_count(), 0, "the grace ran out");
    let kinds: Vec<SessionEvent> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| (*e).clone())
        .collect();
    assert!(
        matches!(&kinds[..], [
        SessionEvent::QuestionRequested(_),
        SessionEvent::QuestionDetached(d),
        SessionEvent::QuestionResolved(r),
    ] if d.id == id && r.id == id && r.outcome == Outcome::Aborted),
        "{kinds:?}"
    );
    let refused = pending.claim("s", &id, answer("a")).unwrap_err();
    assert!(
        refused
            .message
            .contains("did not ask again within the grace"),
        "{refused}"
    );

    // A held answer runs out the same way.
    let registered = pending.register("s", request(0), None).unwrap();
    let id = registered.attachment.id().to_owned();
    pending.let_go("s", registered.attachment, registered.waiter, LetGo::Detach);
    pending.claim("s", &id, answer("a")).unwrap();
    assert_eq!(pending.held_count(), 1);
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(pending.held_count(), 0, "dropped after the grace");
    shutdown.cancel();
    timer.await.unwrap();
}

#[test]
fn the_per_session_cap_is_cores_questionnaire_limit_and_never_above_it() {
    use ask_user_core::limits::MAX_PENDING_PER_SESSION;
    assert_eq!(
        PendingConfig::default().max_per_session,
        MAX_PENDING_PER_SESSION
    );
    let lifted = PendingTable::with_config(PendingConfig {
        max_per_session: usize::MAX,
        ..PendingConfig::default()
    });
    assert!(
        lifted
            .pending_limits()
            .contains(&PendingLimit::PerSession(MAX_PENDING_PER_SESSION)),
        "a per-session limit above what the page holds is lowered to it"
    );
}

#[test]
fn one_question_past_the_per_session_cap_is_refused_naming_that_limit_while_other_sessions_still_ask()
 {
    let pending = PendingTable::with_config(PendingConfig {
        max_per_session: 3,
        ..PendingConfig::default()
    });
    let kept: Vec<Registered> = (0..3)
        .map(|_| pending.register("s", request(0), None).unwrap())
        .collect();
    assert_eq!(
        pending.register("s", request(1), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::PerSession(3)
        }
    );
    assert!(pending.register("other", request(1), None).is_ok());
    // A held resolution is not on the page: it leaves room in its session.
    let first = kept.into_iter().next().unwrap();
    let id = first.attachment.id().to_owned();
    pending.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    pending.cancel("s", &id).unwrap();
    assert_eq!(pending.held_count(), 1);
    assert!(pending.register("s", request(1), None).is_ok());
}

#[test]
fn requests_are_counted_in_bytes_until_their_question_and_any_held_resolution_are_gone() {
    // Parsed, and kept as JSON for the lists: twice the request's JSON.
    let one = 2 * serde_json::to_string(&request(0)).unwrap().len();
    let pending = PendingTable::with_config(PendingConfig {
        max_bytes: 2 * one + one / 2,
        detach_grace: GRACE,
        ..PendingConfig::default()
    });
    let first = pending.register("s", request(0), None).unwrap();
    let _second = pending.register("t", request(0), None).unwrap();
    assert_eq!(pending.pending_bytes(), 2 * one);
    assert_eq!(
        pending.register("u", request(0), None).unwrap_err(),
        RegisterError::TooManyPending {
            limit: PendingLimit::Bytes(2 * one + one / 2)
        }
    );
    // Detached, then answered: the held answer keeps its request's bytes.
    let id = first.attachment.id().to_owned();
    pending.let_go("s", first.attachment, first.waiter, LetGo::Detach);
    pending.claim("s", &id, answer("a")).unwrap();
    assert_eq!(pending.pending_bytes(), 2 * one);
    // Collected by the identical ask: the bytes are free again.
    let collected = pending.register("s", request(0), None).unwrap();
    assert_eq!(collected.found, Found::Collected);
    assert_eq!(pending.pending_bytes(), one);
    assert!(pending.register("u", request(0), None).is_ok());
    pending.dispose_all();
    assert_eq!(pending.pending_bytes(), 0);
}

#[test]
fn a_subscriber_that_stops_reading_pins_at_most_its_byte_budget_of_messages() {
    let pending = PendingTable::with_config(PendingConfig {
        event_buffer_bytes: 64 * 1024,
        ..PendingConfig::default()
    });
    let mut stalled = pending.subscribe("s").events;
    let text = "x".repeat(8_000);
    for _ in 0..100 {
        pending.post_message("s", Role::User, text.clone());
    }
    assert!(
        stalled.queued_bytes() <= 64 * 1024,
        "{} bytes queued",
        stalled.queued_bytes()
    );
    assert!(
        matches!(stalled.try_recv(), Err(TryRecvError::Lagged(_))),
        "told to re-sync"
    );
}

#[test]
fn a_pending_question_carries_its_requests_json_and_streams_exactly_what_serde_json_writes() {
    let pending = PendingTable::new();
    // Escapes, non-ASCII text and an asker with every field.
    let tricky = AskRequest::from_json(
        r#"{"questions": [{"id": "q", "question": "Ship \"v2\"\\now?\n\u0007 Über 🚀",
            "header": "Plan ✓", "detail": "\u2028 <b>&</b>", "multi_select": true,
            "options": [{"label": "a", "description": "ja – 是"}, {"label": "b"}]}]}"#,
    )
    .unwrap();
    let asker = AskedBy {
        kind: ask_user_core::wire::AskerKind::Http,
        name: "agent \"ü\"".to_owned(),
        version: Some("1.0".to_owned()),
    };
    let _first = pending.register("s", tricky.clone(), Some(asker)).unwrap();
    let _second = pending.register("s", request(1), None).unwrap();
    let mut stream = pending.subscribe("s");
    let events = pending.pending_events("s");
    assert_eq!(events.len(), 2);
    for (event, expected) in events.iter().zip([tricky, request(1)]) {
        let SessionEvent::QuestionRequested(q) = &**event else {
            panic!("a pending event is a question/requested");
        };
        assert_eq!(q.request, expected);
        assert_eq!(
            event.request_json().unwrap(),
            serde_json::to_vec(&expected).unwrap()
        );
        // The SSE data written around the kept JSON is core's, byte for byte.
        assert_eq!(event.data(), SessionEvent::data(event));
    }
    // The replay and the live broadcast carry the same.
    let replayed = &stream.replay[0];
    assert_eq!(replayed.data(), SessionEvent::data(replayed));
    let _third = pending.register("s", request(2), None).unwrap();
    let live = stream.events.try_recv().unwrap();
    assert!(live.request_json().is_some());
    assert_eq!(live.data(), SessionEvent::data(&live));
    assert!(pending.pending_events("t").is_empty());
}

#[test]
fn question_ids_made_later_sort_later_and_keep_80_random_bits() {
    let first = question_id();
    std::thread::sleep(Duration::from_millis(2));
    let second = question_id();
    let same_ms: Vec<String> = (0..64).map(|_| question_id()).collect();
    for id in [&first, &second] {
        assert_eq!(id.len(), 34, "{id}");
        assert!(ask_user_core::SessionId::is_valid(id), "{id}");
        let millis = u64::from_str_radix(&id[2..14], 16).expect("12 hex digits of time");
        assert!(
            millis.abs_diff(now_ms()) < 60_000,
            "{id} is not stamped with now"
        );
    }
    assert!(first < second, "{first} is not before {second}");
    // The random part differs even within one millisecond.
    let distinct: std::collections::HashSet<&str> = same_ms.iter().map(|id| &id[14..]).collect();
    assert_eq!(distinct.len(), same_ms.len());
}

#[test]
fn a_message_the_transcript_holds_already_is_neither_kept_nor_streamed_twice() {
    let pending = PendingTable::new();
    let mut page = pending.subscribe("s").events;
    let message = pending.post_message("s", Role::User, "Ship it".to_owned());
    // A shared record replays it after a reconnect.
    pending.post_message_as("s", message.clone());
    let entries = pending.transcript("s").entries;
    assert_eq!(
        entries,
        [ask_user_core::wire::TranscriptEntry::Message(
            message.clone()
        )]
    );
    assert!(page.try_recv().is_ok(), "streamed once");
    assert!(
        matches!(page.try_recv(), Err(TryRecvError::Empty)),
        "not streamed again"
    );
    // Another session's log is its own.
    pending.post_message_as("t", message.clone());
    assert_eq!(pending.transcript("t").entries.len(), 1);
}
