//! What the questionnaire cannot hold it reports, never drops in silence; a
//! refused POST is classified once, here; drafts are persisted exactly when
//! they change.

mod questionnaire_support;

use ask_user_core::limits::MAX_PENDING_PER_SESSION;
use ask_user_core::questionnaire::*;
use ask_user_core::wire::{Outcome, is_not_pending};
use questionnaire_support::*;

/// A questionnaire holding `n` one-question requests `r0`, `r1`, ….
fn holding(n: usize) -> Questionnaire {
    let mut state = Questionnaire::new();
    for i in 0..n {
        apply(
            &mut state,
            requested(&format!("r{i}"), i as u64, one_single()),
        );
    }
    state
}

#[test]
fn the_page_holds_exactly_what_a_host_may_let_wait_in_one_session() {
    assert_eq!(MAX_PENDING_REQUESTS, MAX_PENDING_PER_SESSION);
    let state = holding(MAX_PENDING_PER_SESSION);
    assert_eq!(state.pending().len(), MAX_PENDING_PER_SESSION);
    assert_eq!(state.notice(), None);
    assert_eq!(view(&state).waiting, MAX_PENDING_PER_SESSION - 1);
}

#[test]
fn one_request_more_than_the_limit_is_reported_not_dropped_in_silence() {
    let mut state = holding(MAX_PENDING_PER_SESSION);
    let before = state.pending().to_vec();
    let fx = act(&mut state, requested("one-too-many", 10_000, one_single()));
    assert!(fx.is_empty(), "nothing to post or store: {fx:?}");
    assert_eq!(state.pending(), before, "what is held is untouched");
    let why = CannotShow::TooManyPending {
        limit: MAX_PENDING_PER_SESSION,
    };
    assert_eq!(
        view(&state).notice,
        Some(Notice::CannotShow {
            question_id: "one-too-many".into(),
            why: why.clone()
        })
    );
    assert_eq!(fx.announced, Some(Announcement::CannotShow(why)));
    assert_eq!(fx.focus, None, "the person's place is kept");
}

#[test]
fn a_refused_request_is_shown_when_it_arrives_again_with_room() {
    let mut state = holding(MAX_PENDING_PER_SESSION);
    apply(&mut state, requested("late", 10_000, one_single()));
    apply(&mut state, resolved("r3", Outcome::Answered));
    // The next stream open replays it.
    apply(&mut state, requested("late", 10_000, one_single()));
    assert!(state.get("late").is_some());
}

#[test]
fn a_cannot_show_notice_outlives_later_arrivals_until_dismissed() {
    let mut state = holding(MAX_PENDING_PER_SESSION);
    apply(&mut state, requested("late", 10_000, one_single()));
    apply(&mut state, resolved("r0", Outcome::Answered));
    apply(&mut state, requested("next", 10_001, one_single()));
    assert!(
        matches!(state.notice(), Some(Notice::CannotShow { question_id, .. }) if question_id == "late"),
        "a later arrival does not hide that a question is missing: {:?}",
        state.notice()
    );
    apply(&mut state, Action::DismissNotice);
    assert_eq!(state.notice(), None);
}

#[test]
fn a_resolved_elsewhere_notice_is_replaced_by_the_next_arrival() {
    let mut state = with_three();
    apply(&mut state, resolved("q1", Outcome::Answered));
    assert!(state.notice().is_some());
    apply(&mut state, requested("q2", 2, one_single()));
    assert_eq!(state.notice(), None);
}

#[test]
fn not_pending_is_the_hosts_code_or_a_bare_409() {
    assert!(is_not_pending(Some(409), Some("NOT_PENDING")));
    assert!(is_not_pending(None, Some("NOT_PENDING")));
    assert!(is_not_pending(Some(409), None));
    assert!(!is_not_pending(Some(409), Some("ASK_CANCELLED")));
    assert!(!is_not_pending(Some(500), None));
    assert!(!is_not_pending(None, None));
}

#[test]
fn a_409_with_another_code_keeps_the_request_and_shows_the_refusal() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
            Action::Submit,
            Action::SubmitFailed {
                question_id: "q1".into(),
                status: Some(409),
                code: Some("SOMETHING_ELSE".into()),
                message: "a conflict of another kind".into(),
            },
        ],
    );
    assert_eq!(
        active(&state).failure().map(|f| f.message.as_str()),
        Some("a conflict of another kind")
    );
    assert_eq!(state.notice(), None);
}

fn persisted(fx: &[Effect]) -> usize {
    fx.iter()
        .filter(|e| matches!(e, Effect::PersistDrafts { .. }))
        .count()
}

#[test]
fn edits_that_change_nothing_persist_nothing_and_leave_the_request_untouched() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
        ],
    );
    // The same choice again, on the last item; Skip twice; the same text twice.
    assert_eq!(
        persisted(&apply(&mut state, Action::OptionChosen { index: 1 })),
        0
    );
    assert_eq!(persisted(&apply(&mut state, Action::Skip)), 1);
    assert_eq!(persisted(&apply(&mut state, Action::Skip)), 0);
    assert_eq!(persisted(&apply(&mut state, typed("why not"))), 1);
    assert_eq!(persisted(&apply(&mut state, typed("why not"))), 0);
    assert_eq!(
        persisted(&apply(&mut state, Action::Back)),
        0,
        "nowhere to go back to"
    );
}

#[test]
fn a_request_nobody_edited_still_takes_its_restored_drafts() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_single()));
    // Actions that change no draft do not count as the person's edits.
    run(
        &mut state,
        [
            Action::Back,
            Action::OptionFocused { index: 0 },
            Action::Collapse,
            Action::Expand,
        ],
    );
    apply(
        &mut state,
        Action::DraftsRestored {
            question_id: "q1".into(),
            drafts: Drafts {
                items: vec![ItemDraft {
                    id: "pick".into(),
                    selected: vec!["No".into()],
                    ..ItemDraft::default()
                }],
                current: 0,
                reply: None,
            },
        },
    );
    assert_eq!(active(&state).drafts.items[0].selected, ["No"]);
}
