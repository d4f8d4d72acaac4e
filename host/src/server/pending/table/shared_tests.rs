//! The table's inputs for a record several hosts share ([`Input::Attach`],
//! [`Input::Observed`]), on [`Table`] alone and simulated time: what another
//! host did shows here, the record's word decides, and nothing it already
//! has is journaled again.

use super::*;
use crate::server::pending::request_json;

const GRACE: Duration = Duration::from_secs(600);

fn now(origin: Instant, elapsed: Duration) -> Now {
    Now {
        at: origin + elapsed,
        unix_ms: 1_700_000_000_000 + elapsed.as_millis() as u64,
    }
}

fn asked(id: &str) -> (QuestionRequested, Bytes) {
    let request = AskRequest::from_json(
        r#"{"questions": [{"id": "q", "question": "Pick", "options": [{"label": "a"}, {"label": "b"}]}]}"#,
    )
    .unwrap();
    let json = request_json(&request);
    let question = QuestionRequested {
        id: id.to_owned(),
        session: "s".to_owned(),
        request,
        created_at_ms: 1_700_000_000_000,
        asked_by: None,
    };
    (question, json)
}

fn answer() -> AnswerBatch {
    AnswerBatch::from_json(r#"{"answers": [{"id": "q", "selected": ["b"]}]}"#).unwrap()
}

fn observed(id: &str, state: RecordState) -> Input {
    Input::Observed(Observed {
        session: "s".to_owned(),
        id: id.to_owned(),
        asked: Some(asked(id)),
        state,
        escalated: false,
    })
}

fn table() -> Table {
    Table::new(Limits {
        detach_grace: GRACE,
        ..Limits::default()
    })
}

/// The kinds of the events broadcast, in order.
fn broadcasts(effects: &[Output]) -> Vec<&'static str> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Output::Broadcast { event, .. } => Some(match &**event {
                SessionEvent::QuestionRequested(_) => "requested",
                SessionEvent::QuestionDetached(_) => "detached",
                SessionEvent::QuestionAttached(_) => "attached",
                SessionEvent::QuestionResolved(_) => "resolved",
                _ => "other",
            }),
            _ => None,
        })
        .collect()
}

fn journal(effects: &[Output]) -> Vec<&Write> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Output::Journal(write) => Some(write),
            _ => None,
        })
        .collect()
}

#[test]
fn a_question_another_host_asked_shows_here_then_detaches_reattaches_and_resolves_on_the_records_word()
 {
    let origin = Instant::now();
    let mut table = table();
    let out = table.apply(
        observed("q_1", RecordState::AttachedElsewhere),
        now(origin, Duration::ZERO),
    );
    assert_eq!(broadcasts(&out.effects), ["requested"]);
    assert!(out.effects.contains(&Output::InboxChanged));
    assert_eq!(table.pending_count(), 1);
    assert_eq!(
        table.poll_timeout(),
        None,
        "another host's call waits: no grace runs here"
    );
    assert_eq!(
        table.replay("s").len(),
        2,
        "requested and synced, no detached notice"
    );

    // Seen again (a reconciliation): nothing changes.
    let out = table.apply(
        observed("q_1", RecordState::AttachedElsewhere),
        now(origin, Duration::ZERO),
    );
    assert!(out.effects.is_empty(), "{:?}", out.effects);

    // Detached there 100 s ago: the grace counts from then, on every host.
    let detached = RecordState::Detached {
        since: Duration::from_secs(100),
    };
    let out = table.apply(
        observed("q_1", detached),
        now(origin, Duration::from_secs(1)),
    );
    assert_eq!(broadcasts(&out.effects), ["detached"]);
    assert_eq!(
        table.poll_timeout(),
        Some(origin + Duration::from_secs(1) + GRACE - Duration::from_secs(100))
    );

    let out = table.apply(
        observed("q_1", RecordState::AttachedElsewhere),
        now(origin, Duration::from_secs(2)),
    );
    assert_eq!(broadcasts(&out.effects), ["attached"]);
    assert_eq!(table.poll_timeout(), None);

    let resolved = RecordState::Resolved {
        outcome: Outcome::Answered,
        answer: Some(answer()),
        by: None,
        at_ms: 42,
        held: false,
    };
    let out = table.apply(
        observed("q_1", resolved),
        now(origin, Duration::from_secs(3)),
    );
    assert_eq!(broadcasts(&out.effects), ["resolved"]);
    let Some(Output::Broadcast { event, .. }) = out
        .effects
        .iter()
        .find(|e| matches!(e, Output::Broadcast { .. }))
    else {
        unreachable!()
    };
    let SessionEvent::QuestionResolved(resolved) = &**event else {
        unreachable!()
    };
    let record = resolved.record.as_ref().expect("a record");
    assert_eq!(
        (record.resolved_at_ms, record.answer.clone()),
        (42, Some(answer())),
        "the record's time and answer"
    );
    assert!(
        journal(&out.effects).is_empty(),
        "the record has it already: {:?}",
        out.effects
    );
    assert_eq!(table.pending_count(), 0);
    assert_eq!(table.held_count(), 0, "the record holds it, not every host");
    assert_eq!(
        table.transcript("s").entries.len(),
        1,
        "the transcript shows it here too"
    );
}

#[test]
fn a_call_waiting_here_gets_the_answer_another_host_wrote_and_nothing_is_journaled() {
    let origin = Instant::now();
    let mut table = table();
    let (question, json) = asked("q_2");
    let out = table.apply(
        Input::Attach {
            question,
            request_json: json,
            waiter: WaiterId(7),
            new: true,
            held: None,
        },
        now(origin, Duration::ZERO),
    );
    assert!(
        matches!(
            out.reply,
            Reply::Registered {
                found: Found::New,
                ..
            }
        ),
        "{:?}",
        out.reply
    );
    assert_eq!(broadcasts(&out.effects), ["requested"]);

    let resolved = RecordState::Resolved {
        outcome: Outcome::Answered,
        answer: Some(answer()),
        by: None,
        at_ms: 7,
        held: false,
    };
    let out = table.apply(
        observed("q_2", resolved),
        now(origin, Duration::from_secs(1)),
    );
    assert!(
        out.effects.contains(&Output::Resolve {
            waiter: WaiterId(7),
            resolution: Resolution::Answered(answer())
        }),
        "{:?}",
        out.effects
    );
    assert!(journal(&out.effects).is_empty(), "{:?}", out.effects);
}

#[test]
fn a_detach_is_journaled_for_the_record_and_attaching_takes_the_question_or_collects_what_was_held()
{
    let origin = Instant::now();
    let mut table = table();
    let (question, json) = asked("q_3");
    let out = table.apply(
        Input::Attach {
            question: question.clone(),
            request_json: json.clone(),
            waiter: WaiterId(1),
            new: true,
            held: None,
        },
        now(origin, Duration::ZERO),
    );
    let Reply::Registered { attachment, .. } = out.reply else {
        panic!("{:?}", out.reply)
    };
    let out = table.apply(
        Input::LetGo {
            session: "s".to_owned(),
            attachment,
            how: LetGo::Detach,
            unread: None,
        },
        now(origin, Duration::ZERO),
    );
    assert_eq!(
        journal(&out.effects),
        [&Write::Detached {
            id: "q_3".to_owned()
        }],
        "other hosts may take it now"
    );
    assert_eq!(broadcasts(&out.effects), ["detached"]);

    // The record handed it to this host's next ask: the same question.
    let out = table.apply(
        Input::Attach {
            question: question.clone(),
            request_json: json.clone(),
            waiter: WaiterId(2),
            new: false,
            held: None,
        },
        now(origin, Duration::from_secs(1)),
    );
    assert!(
        matches!(
            out.reply,
            Reply::Registered {
                found: Found::Reattached,
                ..
            }
        ),
        "{:?}",
        out.reply
    );
    assert_eq!(broadcasts(&out.effects), ["attached"]);
    assert_eq!(table.pending_count(), 1, "no second question");
    assert_eq!(table.poll_timeout(), None);

    // A resolution the record held (answered on another host while detached)
    // goes to the next ask at once.
    let (other, other_json) = asked("q_4");
    let out = table.apply(
        Input::Attach {
            question: other,
            request_json: other_json,
            waiter: WaiterId(3),
            new: false,
            held: Some(Resolution::Answered(answer())),
        },
        now(origin, Duration::from_secs(2)),
    );
    assert!(
        matches!(
            out.reply,
            Reply::Registered {
                found: Found::Collected,
                ..
            }
        ),
        "{:?}",
        out.reply
    );
    assert_eq!(
        out.effects,
        [Output::Resolve {
            waiter: WaiterId(3),
            resolution: Resolution::Answered(answer())
        }]
    );
}

/// A question for role `oncall` escalating to `leads` after 60 s, asked at
/// the origin's Unix time.
fn escalating(id: &str) -> (QuestionRequested, Bytes) {
    let request = AskRequest::from_json(
        r#"{"questions": [{"id": "q", "question": "Deploy?"}], "audience": {"role": "oncall"}, "escalate_after": {"seconds": 60, "role": "leads"}}"#,
    )
    .unwrap();
    let json = request_json(&request);
    let question = QuestionRequested {
        id: id.to_owned(),
        session: "s".to_owned(),
        request,
        created_at_ms: 1_700_000_000_000,
        asked_by: None,
    };
    (question, json)
}

fn escalated_requests(effects: &[Output]) -> usize {
    effects
        .iter()
        .filter(|effect| {
            matches!(effect, Output::Broadcast { event, .. }
            if matches!(&**event, SessionEvent::QuestionRequested(_)) && event.is_escalated())
        })
        .count()
}

#[test]
fn a_question_escalates_once_on_every_host_the_first_timer_is_journaled_and_the_others_follow_the_record()
 {
    let origin = Instant::now();
    // Host A's timer escalates it: journaled once, for the record to keep.
    let mut a = table();
    let observed_on = |table: &mut Table, escalated: bool, at: Duration| {
        table.apply(
            Input::Observed(Observed {
                session: "s".to_owned(),
                id: "q_e".to_owned(),
                asked: Some(escalating("q_e")),
                state: RecordState::AttachedElsewhere,
                escalated,
            }),
            now(origin, at),
        )
    };
    observed_on(&mut a, false, Duration::ZERO);
    assert_eq!(a.poll_timeout(), Some(origin + Duration::from_secs(60)));
    let out = a.apply(Input::Expire, now(origin, Duration::from_secs(60)));
    assert_eq!(escalated_requests(&out.effects), 1);
    assert_eq!(
        journal(&out.effects),
        [&Write::Escalated {
            id: "q_e".to_owned(),
            at_ms: 1_700_000_060_000
        }]
    );
    assert_eq!(a.poll_timeout(), None, "it escalates once");
    // The record says so back (its notification): nothing more.
    let out = observed_on(&mut a, true, Duration::from_secs(61));
    assert!(out.effects.is_empty(), "{:?}", out.effects);

    // Host B's clock is behind: the record's word escalates it there at
    // once, journaling nothing, and its own timer no longer fires.
    let mut b = table();
    observed_on(&mut b, false, Duration::ZERO);
    let out = observed_on(&mut b, true, Duration::from_secs(59));
    assert_eq!(escalated_requests(&out.effects), 1);
    assert!(journal(&out.effects).is_empty(), "{:?}", out.effects);
    assert_eq!(b.poll_timeout(), None);
    let out = b.apply(Input::Expire, now(origin, Duration::from_secs(60)));
    assert!(out.effects.is_empty(), "{:?}", out.effects);

    // Host C first hears of it after it escalated: shown escalated at once.
    let mut c = table();
    let out = observed_on(&mut c, true, Duration::from_secs(5));
    assert_eq!(escalated_requests(&out.effects), 1);
    assert_eq!(c.poll_timeout(), None);
    assert_eq!(c.admits("s", "q_e", &Lead), Some(true), "a lead may answer");
    assert_eq!(a.admits("s", "q_e", &Lead), Some(true));
}

/// A person holding role `leads` only.
struct Lead;

impl ask_user_core::Member for Lead {
    fn name(&self) -> &str {
        "lee"
    }
    fn has_role(&self, role: &str) -> bool {
        role == "leads"
    }
}
