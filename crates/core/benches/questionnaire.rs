//! The questionnaire state machine applying 10,000 actions: requests arriving,
//! a person choosing, typing, skipping, navigating and submitting, and the host
//! resolving — the work a composer does on every event; and the same with the
//! view model rebuilt after each action, as the composer renders it.
//!
//! `cargo bench -p ask-user-core --bench questionnaire`
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use ask_user_core::AskRequest;
use ask_user_core::questionnaire::{Action, Effect, Key, KeyInput, Questionnaire, apply, view};
use ask_user_core::wire::{Outcome, QuestionRequested, QuestionResolved, SessionEvent};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const ACTIONS: usize = 10_000;

fn request() -> AskRequest {
    AskRequest::from_json(
        r#"{"questions": [
            {"id": "db", "question": "Which database?", "header": "Database",
             "options": [{"label": "Postgres (Recommended)", "description": "Solid"},
                         {"label": "SQLite"}, {"label": "MySQL"}]},
            {"id": "features", "question": "Which features?", "multi_select": true,
             "options": [{"label": "Auth"}, {"label": "Search"}, {"label": "Billing"}]},
            {"id": "notes", "question": "Anything else?"}
        ]}"#,
    )
    .expect("valid request")
}

fn key(key: Key, in_text_box: bool) -> Action {
    Action::Key(if in_text_box {
        KeyInput::in_text_box(key)
    } else {
        KeyInput::plain(key)
    })
}

/// A deterministic script of exactly `ACTIONS` actions, two requests pending at
/// a time.
fn script() -> Vec<Action> {
    let request = request();
    let mut actions = Vec::with_capacity(ACTIONS + 32);
    let mut n: u64 = 0;
    let requested = |id: u64| {
        Action::FrameReceived(SessionEvent::QuestionRequested(QuestionRequested {
            id: format!("q{id}"),
            session: "default".into(),
            request: request.clone(),
            created_at_ms: id,
            asked_by: None,
        }))
    };
    actions.push(requested(n));
    while actions.len() < ACTIONS {
        actions.push(requested(n + 1));
        actions.extend([
            key(Key::ArrowDown, false),
            key(Key::Enter, false),
            key(Key::Digit(2), false),
            key(Key::Space, false),
            Action::OptionToggled { index: 2 },
            Action::Back,
            key(Key::Digit(2), false),
            Action::Next,
            Action::Skip,
            Action::CompositionStart,
            Action::DraftEdited {
                text: "ship it on Friday".into(),
            },
            Action::CompositionEnd,
            key(Key::Enter, true),
            Action::Tick,
            key(Key::Enter, true),
            Action::SubmitSucceeded {
                question_id: format!("q{n}"),
            },
            Action::FrameReceived(SessionEvent::QuestionResolved(QuestionResolved {
                id: format!("q{n}"),
                outcome: Outcome::Answered,
                record: None,
            })),
        ]);
        n += 1;
    }
    actions.truncate(ACTIONS);
    actions
}

fn bench(c: &mut Criterion) {
    let actions = script();
    // The script must do real work: every round posts one complete batch.
    let mut state = Questionnaire::new();
    let posts = actions
        .iter()
        .flat_map(|a| apply(&mut state, a.clone()))
        .filter(|e| matches!(e, Effect::PostAnswer { .. }))
        .count();
    assert!(posts >= ACTIONS / 20, "the script posts {posts} batches");
    assert!(state.pending().len() <= 2);
    let mut group = c.benchmark_group("questionnaire");
    group.throughput(Throughput::Elements(ACTIONS as u64));
    group.bench_function("apply_10000_actions", |b| {
        b.iter_batched(
            || actions.clone(),
            |actions| {
                let mut state = Questionnaire::new();
                let mut effects = 0usize;
                for action in actions {
                    effects += apply(&mut state, action).len();
                }
                black_box((state, effects))
            },
            BatchSize::LargeInput,
        )
    });
    // What the composer does per event: apply, then rebuild the view model it renders.
    group.bench_function("apply_and_view_10000_actions", |b| {
        b.iter_batched(
            || actions.clone(),
            |actions| {
                let mut state = Questionnaire::new();
                let mut effects = 0usize;
                for action in actions {
                    effects += apply(&mut state, action).len();
                    black_box(view(&state));
                }
                black_box((state, effects))
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
