//! The questionnaire state machine, rule by rule.

mod questionnaire_support;

use ask_user_core::AskRequest;
use ask_user_core::questionnaire::*;
use ask_user_core::wire::{MessageCreated, Outcome, QuestionRef, Role, SessionEvent};
use questionnaire_support::*;
use serde_json::json;

// ── the session layer ────────────────────────────────────────────────────────

#[test]
fn an_empty_questionnaire_leaves_the_normal_composer_in_the_slot() {
    let state = Questionnaire::new();
    assert!(!state.slot_taken());
    assert!(state.active().is_none());
    assert_eq!(state.waiting_count(), 0);
}

#[test]
fn a_requested_frame_takes_over_the_slot_and_focuses_the_first_option_that_is_not_recommended() {
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q1", 1_000, three_items()));
    assert!(state.slot_taken());
    assert_eq!(active(&state).id, "q1");
    assert_eq!(active(&state).current_index(), 0);
    // Option 0 is "Postgres (Recommended)".
    assert_eq!(fx.focus, Some(FocusTarget::Option(1)));
}

#[test]
fn a_new_request_is_announced_and_its_saved_drafts_are_asked_for() {
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q1", 1_000, three_items()));
    assert!(fx.contains(&Effect::LoadDrafts {
        question_id: "q1".into()
    }));
    assert!(fx.announced(&Announcement::NewQuestion {
        question_id: "q1".into(),
        question: "Which database?".into(),
        pending: 1,
    }));
}

#[test]
fn loading_saved_drafts_is_the_last_effect_so_a_restore_can_move_focus_after_it() {
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q1", 1_000, three_items()));
    assert_eq!(
        fx.last(),
        Some(&Effect::LoadDrafts {
            question_id: "q1".into()
        })
    );
}

#[test]
fn an_optionless_first_item_opens_with_focus_in_the_text_box() {
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q1", 1, one_free_text("why")));
    assert_eq!(fx.focus, Some(FocusTarget::TextBox));
    assert_eq!(item(&state).text_box.role, TextBoxRole::YourAnswer);
}

#[test]
fn an_item_with_options_names_its_text_box_other() {
    let state = with_three();
    assert_eq!(item(&state).text_box.role, TextBoxRole::Other);
}

#[test]
fn requests_are_shown_oldest_first_by_created_at_then_arrival() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("late", 3_000, one_single()),
            requested("early", 1_000, one_single()),
            requested("tie-first", 2_000, one_single()),
            requested("tie-second", 2_000, one_single()),
        ],
    );
    let order: Vec<&str> = state.pending().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, ["early", "tie-first", "tie-second", "late"]);
    assert_eq!(active(&state).id, "early");
    assert_eq!(state.waiting_count(), 3);
}

#[test]
fn the_request_the_page_was_opened_on_is_shown_first_whether_it_is_pending_or_arrives_later() {
    // Opened on a request still to arrive: the replay puts it first.
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            Action::ShowFirst {
                question_id: "tapped".to_owned(),
            },
            requested("older", 1_000, one_single()),
            requested("tapped", 2_000, one_single()),
            requested("newer", 3_000, one_single()),
            // Even one asked earlier but replayed late waits behind it.
            requested("oldest", 500, one_single()),
        ],
    );
    let order: Vec<&str> = state.pending().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, ["tapped", "oldest", "older", "newer"]);

    // Already pending behind another: it moves to the front and takes focus.
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("older", 1_000, one_single()),
            requested("tapped", 2_000, one_single()),
        ],
    );
    let fx = act(
        &mut state,
        Action::ShowFirst {
            question_id: "tapped".to_owned(),
        },
    );
    assert_eq!(active(&state).id, "tapped");
    assert!(fx.focus.is_some(), "focus moves to the tapped request");
    // Once it is answered, the others follow in their order.
    act(&mut state, resolved("tapped", Outcome::Answered));
    assert_eq!(active(&state).id, "older");
    act(&mut state, requested("later", 500, one_single()));
    assert_eq!(active(&state).id, "later", "oldest first again");
}

#[test]
fn a_page_opened_on_a_request_shows_none_until_it_arrives_so_no_other_flashes_up_under_a_finger() {
    let mut state = Questionnaire::new();
    act(
        &mut state,
        Action::ShowFirst {
            question_id: "tapped".to_owned(),
        },
    );
    // An older request arrives first in the replay: it is kept, not shown,
    // and the person's keys and choices cannot reach it.
    act(&mut state, requested("older", 1_000, one_single()));
    assert!(state.slot_taken());
    assert!(state.active().is_none());
    assert_eq!(view(&state).active, None);
    act(&mut state, Action::OptionChosen { index: 0 });
    let fx = act(&mut state, requested("tapped", 2_000, one_single()));
    assert_eq!(active(&state).id, "tapped");
    assert!(fx.focus.is_some(), "focus goes to the opened request");
    act(&mut state, resolved("tapped", Outcome::Answered));
    assert_eq!(active(&state).id, "older");
    assert!(
        active(&state).drafts.items[0].selected.is_empty(),
        "the choice made while nothing was shown reached no request"
    );

    // The opened request was answered meanwhile: the replay's end shows the rest.
    let mut state = Questionnaire::new();
    act(
        &mut state,
        Action::ShowFirst {
            question_id: "tapped".to_owned(),
        },
    );
    act(&mut state, requested("older", 1_000, one_single()));
    assert!(state.active().is_none());
    let fx = act(&mut state, synced(&["older"]));
    assert_eq!(active(&state).id, "older");
    assert!(fx.focus.is_some(), "focus goes to the request now shown");
}

#[test]
fn a_newer_request_waits_without_moving_focus() {
    let mut state = with_three();
    let fx = act(&mut state, requested("q2", 2_000, one_single()));
    assert_eq!(active(&state).id, "q1");
    assert_eq!(state.waiting_count(), 1);
    assert_eq!(fx.focus, None);
}

#[test]
fn a_replayed_request_neither_duplicates_nor_loses_drafts() {
    let mut state = with_three();
    run(
        &mut state,
        [Action::OptionChosen { index: 1 }, typed("half-typed")],
    );
    let before = state.clone();
    let fx = act(&mut state, requested("q1", 1_000, three_items()));
    assert!(fx.is_empty());
    assert_eq!(state, before);
    assert_eq!(state.pending().len(), 1);
    assert_eq!(active(&state).drafts.items[0].selected, ["SQLite"]);
}

#[test]
fn a_resolved_frame_removes_the_request_at_once_and_clears_its_drafts() {
    let mut state = with_three();
    apply(&mut state, requested("q2", 2_000, one_single()));
    let fx = act(&mut state, resolved("q1", Outcome::Answered));
    assert_eq!(active(&state).id, "q2");
    assert!(fx.contains(&Effect::ClearDrafts {
        question_id: "q1".into()
    }));
    // "Yes (Recommended)" is listed first; focus opens on "No".
    assert_eq!(fx.focus, Some(FocusTarget::Option(1)));
}

#[test]
fn resolving_the_last_request_returns_the_slot_and_focus_to_the_message_box() {
    let mut state = with_three();
    let fx = act(&mut state, resolved("q1", Outcome::Cancelled));
    assert!(!state.slot_taken());
    assert_eq!(fx.focus, Some(FocusTarget::MessageBox));
}

#[test]
fn resolving_a_waiting_request_does_not_move_focus() {
    let mut state = with_three();
    apply(&mut state, requested("q2", 2_000, one_single()));
    let fx = act(&mut state, resolved("q2", Outcome::Aborted));
    assert_eq!(active(&state).id, "q1");
    assert_eq!(fx.focus, None);
}

#[test]
fn a_request_resolved_in_another_tab_leaves_a_notice_saying_so() {
    let mut state = with_three();
    let fx = act(&mut state, resolved("q1", Outcome::Answered));
    let expected = Notice::ResolvedElsewhere {
        question_id: "q1".into(),
        outcome: Some(Outcome::Answered),
    };
    assert_eq!(state.notice(), Some(&expected));
    assert!(fx.announced(&Announcement::ResolvedElsewhere {
        outcome: Some(Outcome::Answered)
    }));
    apply(&mut state, Action::DismissNotice);
    assert_eq!(state.notice(), None);
}

#[test]
fn a_request_resolved_by_this_tab_leaves_no_notice() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
            Action::Submit,
            Action::SubmitSucceeded {
                question_id: "q1".into(),
            },
            resolved("q1", Outcome::Answered),
        ],
    );
    assert!(!state.slot_taken());
    assert_eq!(state.notice(), None);
}

#[test]
fn a_sync_that_drops_an_answer_the_host_accepted_leaves_no_notice() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 0 },
            Action::Submit,
            Action::SubmitSucceeded {
                question_id: "q1".into(),
            },
            // The resolved frame was missed while disconnected.
            synced(&[]),
        ],
    );
    assert!(!state.slot_taken());
    assert_eq!(state.notice(), None);
}

#[test]
fn a_sync_that_drops_a_request_being_edited_says_it_was_resolved_elsewhere() {
    let mut state = with_three();
    apply(&mut state, synced(&[]));
    assert_eq!(
        state.notice(),
        Some(&Notice::ResolvedElsewhere {
            question_id: "q1".into(),
            outcome: None
        })
    );
}

#[test]
fn session_synced_drops_requests_it_does_not_list() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("a", 1, one_single()),
            requested("b", 2, one_single()),
            requested("c", 3, one_single()),
        ],
    );
    let fx = act(&mut state, synced(&["b"]));
    let ids: Vec<&str> = state.pending().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["b"]);
    assert!(fx.contains(&Effect::ClearDrafts {
        question_id: "a".into()
    }));
    assert!(fx.contains(&Effect::ClearDrafts {
        question_id: "c".into()
    }));
}

#[test]
fn session_synced_listing_everything_changes_nothing() {
    let mut state = with_three();
    apply(&mut state, typed("x"));
    let before = state.clone();
    assert!(apply(&mut state, synced(&["q1"])).is_empty());
    assert_eq!(state, before);
}

#[test]
fn a_message_frame_does_not_touch_the_questionnaire() {
    let mut state = with_three();
    let before = state.clone();
    let fx = act(
        &mut state,
        Action::FrameReceived(SessionEvent::MessageCreated(MessageCreated {
            id: "m1".into(),
            role: Role::Agent,
            text: "hi".into(),
            at_ms: 0,
            by: None,
        })),
    );
    assert!(fx.is_empty());
    assert_eq!(state, before);
}

fn detached(id: &str) -> Action {
    Action::FrameReceived(SessionEvent::QuestionDetached(QuestionRef {
        id: id.into(),
    }))
}

fn attached(id: &str) -> Action {
    Action::FrameReceived(SessionEvent::QuestionAttached(QuestionRef {
        id: id.into(),
    }))
}

#[test]
fn a_detached_frame_marks_the_request_and_changes_nothing_else() {
    let mut state = with_three();
    run(
        &mut state,
        [Action::OptionChosen { index: 1 }, typed("half")],
    );
    assert!(!shown(&state).detached);
    let before = state.clone();
    let fx = act(&mut state, detached("q1"));
    assert!(
        fx.is_empty() && fx.focus.is_none() && fx.announced.is_none(),
        "no effect, no focus move, no announcement"
    );
    assert!(shown(&state).detached);
    assert_eq!(active(&state).drafts, before.active().unwrap().drafts);
    assert_eq!(
        active(&state).option_focus,
        before.active().unwrap().option_focus
    );
    assert!(active(&state).is_editable(), "still answerable");
}

#[test]
fn an_attached_frame_clears_the_mark() {
    let mut state = with_three();
    apply(&mut state, detached("q1"));
    let fx = act(&mut state, attached("q1"));
    assert!(fx.is_empty() && fx.focus.is_none() && fx.announced.is_none());
    assert!(!shown(&state).detached);
}

#[test]
fn a_replay_clears_the_mark_unless_it_repeats_the_detached_frame() {
    let mut state = with_three();
    apply(&mut state, detached("q1"));
    // Reconnected after the agent came back: the replay has no detached frame.
    apply(&mut state, requested("q1", 1_000, three_items()));
    assert!(!shown(&state).detached);
    // Reconnected while it is still detached: the replay says so again.
    run(
        &mut state,
        [requested("q1", 1_000, three_items()), detached("q1")],
    );
    assert!(shown(&state).detached);
}

#[test]
fn detached_and_attached_frames_for_unknown_ids_change_nothing() {
    let mut state = with_three();
    let before = state.clone();
    assert!(apply(&mut state, detached("q9")).is_empty());
    assert!(apply(&mut state, attached("q9")).is_empty());
    assert_eq!(state, before);
}

#[test]
fn an_invalid_request_frame_is_not_shown_and_says_so() {
    let mut state = Questionnaire::new();
    let invalid = AskRequest {
        questions: vec![],
        audience: None,
        escalate_after: None,
    };
    let fx = act(&mut state, requested("bad", 1, invalid));
    assert!(fx.is_empty(), "nothing to post or store: {fx:?}");
    assert!(!state.slot_taken());
    let Some(Notice::CannotShow {
        question_id,
        why: CannotShow::Invalid { message },
    }) = state.notice()
    else {
        panic!("no notice: {:?}", state.notice());
    };
    assert_eq!(question_id, "bad");
    assert!(message.contains("question"), "{message}");
    assert!(matches!(
        fx.announced,
        Some(Announcement::CannotShow(CannotShow::Invalid { .. }))
    ));
}

#[test]
fn progress_reads_current_of_total() {
    let mut state = with_three();
    assert_eq!(shown(&state).progress.unwrap().to_string(), "1 of 3");
    apply(&mut state, Action::Next);
    assert_eq!(
        shown(&state).progress,
        Some(Progress {
            current: 2,
            total: 3
        })
    );
}

// ── choosing and typing ──────────────────────────────────────────────────────

#[test]
fn choosing_a_single_select_option_records_it_and_advances_at_once() {
    let mut state = with_three();
    let fx = act(&mut state, Action::OptionChosen { index: 1 });
    let request = active(&state);
    assert_eq!(request.drafts.items[0].selected, ["SQLite"]);
    assert_eq!(request.current_index(), 1);
    assert_eq!(fx.focus, Some(FocusTarget::Option(0)));
    assert!(posted_answers(&fx).is_empty());
}

#[test]
fn choosing_on_the_last_item_does_not_submit() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_single()));
    let fx = act(&mut state, Action::OptionChosen { index: 1 });
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(active(&state).status, Status::Editing);
    assert_eq!(active(&state).current_index(), 0);
    assert!(active(&state).can_submit());
}

#[test]
fn choosing_an_option_index_out_of_range_changes_nothing() {
    let mut state = with_three();
    let before = state.clone();
    assert!(apply(&mut state, Action::OptionChosen { index: 3 }).is_empty());
    assert_eq!(state, before);
}

#[test]
fn other_text_overrides_the_single_select_choice_like_core_does() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::OptionChosen { index: 0 },
            Action::Back,
            typed("CockroachDB"),
        ],
    );
    assert!(item(&state).options.iter().all(|o| !o.selected));
    let batch = active(&state).answer_batch().expect("valid");
    assert_eq!(
        json(&batch)["answers"][0],
        json!({"id": "db", "selected": [], "custom": "CockroachDB"})
    );
}

#[test]
fn choosing_an_option_after_typing_other_makes_the_option_the_answer() {
    let mut state = with_three();
    run(
        &mut state,
        [typed("Oracle"), Action::OptionChosen { index: 2 }],
    );
    let draft = &active(&state).drafts.items[0];
    assert_eq!(draft.selected, ["MySQL"]);
    assert_eq!(draft.text, "");
}

#[test]
fn multi_select_toggles_add_and_remove_labels_in_option_order() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::Next,
            Action::OptionToggled { index: 2 },
            Action::OptionToggled { index: 0 },
            Action::OptionToggled { index: 1 },
            Action::OptionToggled { index: 1 },
        ],
    );
    let request = active(&state);
    assert_eq!(request.drafts.items[1].selected, ["Auth", "Billing"]);
    assert_eq!(request.current_index(), 1, "toggling never advances");
    let selected: Vec<bool> = item(&state).options.iter().map(|o| o.selected).collect();
    assert_eq!(selected, [true, false, true]);
}

#[test]
fn multi_select_other_text_supplements_the_selection() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::Next,
            Action::OptionToggled { index: 1 },
            typed("  Export  "),
        ],
    );
    let batch = active(&state).answer_batch().expect("valid");
    assert_eq!(
        json(&batch)["answers"][1],
        json!({"id": "features", "selected": ["Search"], "custom": "Export"})
    );
}

#[test]
fn free_text_is_the_answer_as_soon_as_it_is_non_empty() {
    let mut state = with_three();
    apply(&mut state, Action::GoTo { index: 2 });
    assert_eq!(active(&state).item_state(2), ItemState::Unanswered);
    apply(&mut state, typed("s"));
    assert_eq!(active(&state).item_state(2), ItemState::Answered);
}

#[test]
fn whitespace_only_text_is_not_an_answer() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_free_text("why")));
    apply(&mut state, typed("   \n "));
    assert_eq!(active(&state).item_state(0), ItemState::Unanswered);
    assert!(!active(&state).can_submit());
}

#[test]
fn every_draft_change_is_persisted_under_the_request_id() {
    let mut state = with_three();
    let fx = act(&mut state, Action::OptionChosen { index: 1 });
    let persisted = fx.iter().find_map(|e| match e {
        Effect::PersistDrafts {
            question_id,
            drafts,
        } => Some((question_id.clone(), drafts.clone())),
        _ => None,
    });
    let (id, drafts) = persisted.expect("drafts persisted");
    assert_eq!(id, "q1");
    assert_eq!(drafts, active(&state).drafts);
}

#[test]
fn a_change_that_changes_nothing_is_not_persisted() {
    let mut state = with_three();
    let fx = act(&mut state, Action::OptionFocused { index: 2 });
    assert!(!fx.iter().any(|e| matches!(e, Effect::PersistDrafts { .. })));
    assert_eq!(active(&state).option_focus, Some(2));
}

// ── recommendation ───────────────────────────────────────────────────────────

#[test]
fn the_recommended_option_shows_a_badge_and_its_label_without_the_suffix() {
    let state = with_three();
    let options = item(&state).options;
    assert!(options[0].recommended);
    assert_eq!(options[0].display, "Postgres");
    assert_eq!(options[0].label, "Postgres (Recommended)");
    assert_eq!(options[0].description.as_deref(), Some("Solid"));
    assert!(!options[1].recommended);
    assert_eq!(options[1].display, "SQLite");
}

#[test]
fn the_recommended_option_is_never_preselected() {
    let state = with_three();
    assert!(item(&state).options.iter().all(|o| !o.selected));
    assert_eq!(active(&state).item_state(0), ItemState::Unanswered);
}

#[test]
fn the_recommended_option_is_not_focused_first_when_it_is_not_first() {
    let request = AskRequest::from_json(
        r#"{"questions": [{"id": "x", "question": "?",
            "options": [{"label": "A"}, {"label": "B (Recommended)"}]}]}"#,
    )
    .unwrap();
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q", 1, request));
    assert_eq!(fx.focus, Some(FocusTarget::Option(0)));
    assert_eq!(active(&state).option_focus, Some(0));
}

#[test]
fn the_recommended_option_is_not_focused_first_even_when_it_is_listed_first() {
    let request = AskRequest::from_json(
        r#"{"questions": [{"id": "x", "question": "?",
            "options": [{"label": "A (Recommended)"}, {"label": "B"}]}]}"#,
    )
    .unwrap();
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("q", 1, request));
    assert_eq!(fx.focus, Some(FocusTarget::Option(1)));
    assert_eq!(active(&state).option_focus, Some(1));
    assert!(item(&state).options.iter().all(|o| !o.selected));
}

#[test]
fn enter_alone_never_chooses_the_recommended_option() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_single()));
    let fx = run(&mut state, [key(Key::Enter), key(Key::Enter)]);
    assert!(posted_answers(&fx).is_empty());
    assert!(active(&state).drafts.items[0].selected.is_empty());
    assert!(fx.announced(&Announcement::Incomplete { unanswered: 1 }));
}

// ── Enter ────────────────────────────────────────────────────────────────────

#[test]
fn enter_submits_when_every_item_is_answered_or_skipped() {
    let mut state = with_three();
    let fx = run(
        &mut state,
        [
            Action::OptionChosen { index: 1 },
            Action::Skip,
            typed("ship it"),
            enter(),
        ],
    );
    let posted = posted_answers(&fx);
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].0, "q1");
    assert_eq!(
        json(&posted[0].1),
        json!({"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "features", "selected": []},
            {"id": "notes", "selected": [], "custom": "ship it"}
        ]})
    );
    posted[0].1.validate(&three_items()).expect("valid batch");
    assert_eq!(active(&state).status, Status::Sending(SendKind::Answer));
}

#[test]
fn enter_before_everything_is_answered_moves_to_the_next_unanswered_item() {
    let mut state = with_three();
    // Answer item 3 first, go back to item 1, answer nothing there.
    run(
        &mut state,
        [
            Action::GoTo { index: 2 },
            typed("later"),
            Action::GoTo { index: 0 },
        ],
    );
    let fx = act(&mut state, enter());
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(active(&state).current_index(), 1);
    assert!(fx.contains(&Effect::PreventDefault));
    assert!(fx.announced(&Announcement::Incomplete { unanswered: 2 }));
}

#[test]
fn enter_wraps_around_to_an_earlier_unanswered_item() {
    let mut state = with_three();
    run(&mut state, [Action::Next, Action::Skip, typed("done")]);
    assert_eq!(active(&state).current_index(), 2);
    apply(&mut state, enter());
    assert_eq!(active(&state).current_index(), 0);
}

#[test]
fn enter_never_submits_a_partial_batch() {
    let mut state = with_three();
    let fx = run(
        &mut state,
        [
            Action::OptionChosen { index: 0 },
            enter(),
            enter(),
            enter(),
            enter(),
        ],
    );
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn shift_enter_does_nothing_so_the_text_box_gets_a_newline() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_free_text("why")));
    apply(&mut state, typed("line one"));
    let fx = act(
        &mut state,
        Action::Key(KeyInput {
            shift: true,
            ..KeyInput::in_text_box(Key::Enter)
        }),
    );
    assert!(fx.is_empty(), "no preventDefault, no post: {fx:?}");
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn submit_is_enabled_only_when_every_item_is_answered_or_skipped() {
    let mut state = with_three();
    assert!(!active(&state).can_submit());
    run(
        &mut state,
        [Action::OptionChosen { index: 0 }, Action::Skip],
    );
    assert!(!active(&state).can_submit());
    apply(&mut state, Action::Skip);
    assert!(active(&state).can_submit());
}

#[test]
fn the_submit_button_on_an_incomplete_request_moves_on_instead_of_posting() {
    let mut state = with_three();
    let fx = act(&mut state, Action::Submit);
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(active(&state).current_index(), 1);
}

// ── number keys, arrows, space ───────────────────────────────────────────────

#[test]
fn a_number_key_chooses_the_nth_option_when_focus_is_not_in_a_text_box() {
    let mut state = with_three();
    let fx = act(&mut state, key(Key::Digit(2)));
    assert!(fx.contains(&Effect::PreventDefault));
    assert_eq!(active(&state).drafts.items[0].selected, ["SQLite"]);
    assert_eq!(active(&state).current_index(), 1);
}

#[test]
fn a_number_key_toggles_on_a_multi_select_item() {
    let mut state = with_three();
    run(
        &mut state,
        [Action::Next, key(Key::Digit(3)), key(Key::Digit(1))],
    );
    assert_eq!(active(&state).drafts.items[1].selected, ["Auth", "Billing"]);
    apply(&mut state, key(Key::Digit(3)));
    assert_eq!(active(&state).drafts.items[1].selected, ["Auth"]);
}

#[test]
fn a_number_key_typed_in_the_text_box_does_nothing() {
    let mut state = with_three();
    let before = state.clone();
    let fx = act(&mut state, key_in_text_box(Key::Digit(1)));
    assert!(fx.is_empty());
    assert_eq!(state, before);
}

#[test]
fn a_number_key_beyond_the_options_does_nothing() {
    let mut state = with_three();
    let before = state.clone();
    assert!(apply(&mut state, key(Key::Digit(4))).is_empty());
    assert_eq!(state, before);
}

#[test]
fn dom_keys_map_to_questionnaire_keys() {
    assert_eq!(Key::from_dom("Enter"), Key::Enter);
    assert_eq!(Key::from_dom("7"), Key::Digit(7));
    assert_eq!(Key::from_dom("0"), Key::Other);
    assert_eq!(Key::from_dom(" "), Key::Space);
    assert_eq!(Key::from_dom("ArrowDown"), Key::ArrowDown);
    assert_eq!(Key::from_dom("ArrowUp"), Key::ArrowUp);
    assert_eq!(Key::from_dom("a"), Key::Other);
}

#[test]
fn arrow_keys_move_option_focus_and_wrap() {
    let mut state = with_three();
    assert_eq!(active(&state).option_focus, Some(1));
    let fx = act(&mut state, key(Key::ArrowDown));
    assert_eq!(fx.focus, Some(FocusTarget::Option(2)));
    assert!(fx.contains(&Effect::PreventDefault));
    let fx = act(&mut state, key(Key::ArrowDown));
    assert_eq!(fx.focus, Some(FocusTarget::Option(0)));
    let fx = act(&mut state, key(Key::ArrowUp));
    assert_eq!(fx.focus, Some(FocusTarget::Option(2)));
    assert!(item(&state).options[2].focused);
    assert!(
        active(&state).drafts.items[0].selected.is_empty(),
        "arrows only move"
    );
}

#[test]
fn arrow_keys_in_the_text_box_move_the_caret_not_the_options() {
    let mut state = with_three();
    let fx = act(&mut state, key_in_text_box(Key::ArrowDown));
    assert!(fx.is_empty());
    assert_eq!(active(&state).option_focus, Some(1));
}

#[test]
fn space_toggles_the_focused_multi_select_option() {
    let mut state = with_three();
    run(&mut state, [Action::Next, key(Key::ArrowDown)]);
    let fx = act(&mut state, key(Key::Space));
    assert!(fx.contains(&Effect::PreventDefault));
    assert_eq!(active(&state).drafts.items[1].selected, ["Search"]);
    apply(&mut state, key(Key::Space));
    assert!(active(&state).drafts.items[1].selected.is_empty());
}

#[test]
fn space_in_the_text_box_types_a_space() {
    let mut state = with_three();
    apply(&mut state, Action::Next);
    let fx = act(&mut state, key_in_text_box(Key::Space));
    assert!(fx.is_empty());
    assert!(active(&state).drafts.items[1].selected.is_empty());
}

// ── skip ─────────────────────────────────────────────────────────────────────

#[test]
fn skip_answers_the_current_item_with_an_empty_selection_and_moves_on() {
    let mut state = with_three();
    let fx = act(&mut state, Action::Skip);
    let request = active(&state);
    assert_eq!(request.item_state(0), ItemState::Skipped);
    assert_eq!(request.current_index(), 1);
    assert_eq!(fx.focus, Some(FocusTarget::Option(0)));
}

#[test]
fn skip_on_the_last_item_stays_there() {
    let mut state = with_three();
    apply(&mut state, Action::GoTo { index: 2 });
    apply(&mut state, Action::Skip);
    assert_eq!(active(&state).current_index(), 2);
    assert_eq!(active(&state).item_state(2), ItemState::Skipped);
}

#[test]
fn skip_keeps_every_other_items_drafts_and_answers() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::OptionChosen { index: 2 },
            Action::GoTo { index: 2 },
            typed("keep me"),
            Action::GoTo { index: 1 },
            Action::Skip,
        ],
    );
    let drafts = &active(&state).drafts;
    assert_eq!(drafts.items[0].selected, ["MySQL"]);
    assert_eq!(drafts.items[2].text, "keep me");
    assert!(drafts.items[1].skipped);
}

#[test]
fn skip_clears_what_the_current_item_had() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::Next,
            Action::OptionToggled { index: 0 },
            Action::Skip,
        ],
    );
    let batch = active(&state).answer_batch().unwrap();
    assert_eq!(
        json(&batch)["answers"][1],
        json!({"id": "features", "selected": []})
    );
}

#[test]
fn a_skipped_item_can_be_revisited_and_answered() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::Skip,
            Action::Back,
            Action::OptionChosen { index: 0 },
        ],
    );
    let request = active(&state);
    assert_eq!(request.item_state(0), ItemState::Answered);
    assert!(!request.drafts.items[0].skipped);
    assert_eq!(request.drafts.items[0].selected, ["Postgres (Recommended)"]);
}

#[test]
fn a_batch_of_only_skips_can_be_submitted() {
    let mut state = with_three();
    let fx = run(
        &mut state,
        [Action::Skip, Action::Skip, Action::Skip, Action::Submit],
    );
    let posted = posted_answers(&fx);
    assert_eq!(
        json(&posted[0].1),
        json!({"answers": [
            {"id": "db", "selected": []},
            {"id": "features", "selected": []},
            {"id": "notes", "selected": []}
        ]})
    );
}

// ── navigation ───────────────────────────────────────────────────────────────

#[test]
fn back_returns_to_an_earlier_item_whose_answer_can_be_changed() {
    let mut state = with_three();
    run(
        &mut state,
        [Action::OptionChosen { index: 0 }, Action::Back],
    );
    assert_eq!(active(&state).current_index(), 0);
    assert!(item(&state).options[0].selected);
    apply(&mut state, Action::OptionChosen { index: 1 });
    assert_eq!(active(&state).drafts.items[0].selected, ["SQLite"]);
}

#[test]
fn back_on_the_first_item_and_next_on_the_last_stay_put() {
    let mut state = with_three();
    assert!(!active(&state).can_go_back());
    assert!(apply(&mut state, Action::Back).is_empty());
    apply(&mut state, Action::GoTo { index: 2 });
    assert!(!active(&state).can_go_next());
    assert!(apply(&mut state, Action::Next).is_empty());
    assert_eq!(active(&state).current_index(), 2);
}

#[test]
fn go_to_an_item_out_of_range_changes_nothing() {
    let mut state = with_three();
    let before = state.clone();
    assert!(apply(&mut state, Action::GoTo { index: 9 }).is_empty());
    assert_eq!(state, before);
}

#[test]
fn moving_to_an_optionless_item_focuses_its_text_box() {
    let mut state = with_three();
    let fx = act(&mut state, Action::GoTo { index: 2 });
    assert_eq!(fx.focus, Some(FocusTarget::TextBox));
    assert_eq!(active(&state).option_focus, None);
}

// ── close, submit results ────────────────────────────────────────────────────

#[test]
fn close_posts_a_cancel_for_the_whole_request() {
    let mut state = with_three();
    apply(&mut state, Action::OptionChosen { index: 0 });
    let fx = act(&mut state, Action::Close);
    assert_eq!(posted_cancels(&fx), ["q1"]);
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(active(&state).status, Status::Sending(SendKind::Cancel));
    assert_eq!(status_key(&state), Some(StatusKey::SendingCancel));
}

#[test]
fn the_request_stays_in_the_slot_after_a_successful_post_until_resolved() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 0 },
            Action::Submit,
        ],
    );
    assert_eq!(status_key(&state), Some(StatusKey::SendingAnswer));
    apply(
        &mut state,
        Action::SubmitSucceeded {
            question_id: "q1".into(),
        },
    );
    assert!(state.slot_taken());
    assert_eq!(active(&state).status, Status::Sent(SendKind::Answer));
    assert_eq!(status_key(&state), Some(StatusKey::SendingAnswer));
    let fx = act(&mut state, resolved("q1", Outcome::Answered));
    assert!(!state.slot_taken());
    assert_eq!(fx.focus, Some(FocusTarget::MessageBox));
}

#[test]
fn while_sending_edits_and_a_second_submit_are_ignored() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 0 },
            Action::Submit,
        ],
    );
    let before = state.clone();
    let fx = run(
        &mut state,
        [
            Action::Submit,
            enter(),
            Action::OptionChosen { index: 1 },
            Action::Skip,
            Action::Close,
        ],
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(state, before);
    assert!(!active(&state).can_submit());
}

#[test]
fn a_failed_post_shows_a_readable_error_and_keeps_everything_typed() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::OptionChosen { index: 1 },
            Action::Skip,
            typed("my notes"),
            Action::Submit,
        ],
    );
    let drafts = active(&state).drafts.clone();
    let fx = act(
        &mut state,
        Action::SubmitFailed {
            question_id: "q1".into(),
            status: Some(500),
            code: Some("INTERNAL".into()),
            message: "the host is unwell".into(),
        },
    );
    let request = active(&state);
    assert_eq!(request.drafts, drafts);
    assert_eq!(status_key(&state), Some(StatusKey::AnswerFailed));
    assert_eq!(request.failure().unwrap().message, "the host is unwell");
    assert_eq!(request.failure().unwrap().status, Some(500));
    assert!(request.can_submit(), "the person can retry");
    assert!(fx.announced(&Announcement::SendFailed {
        message: "the host is unwell".into()
    }));
    let retry = apply(&mut state, Action::Submit);
    assert_eq!(posted_answers(&retry).len(), 1);
}

#[test]
fn a_network_failure_without_a_message_still_reads_well() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 0 },
            Action::Submit,
        ],
    );
    apply(
        &mut state,
        Action::SubmitFailed {
            question_id: "q1".into(),
            status: None,
            code: None,
            message: String::new(),
        },
    );
    let message = &active(&state).failure().unwrap().message;
    assert!(message.contains("network"), "{message}");
}

#[test]
fn a_409_not_pending_removes_the_request_and_says_someone_else_resolved_it() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 0 },
            Action::Submit,
        ],
    );
    let fx = act(
        &mut state,
        Action::SubmitFailed {
            question_id: "q1".into(),
            status: Some(409),
            code: Some("NOT_PENDING".into()),
            message: "question q1 is not pending".into(),
        },
    );
    assert!(!state.slot_taken());
    assert_eq!(
        state.notice(),
        Some(&Notice::ResolvedElsewhere {
            question_id: "q1".into(),
            outcome: None
        })
    );
    assert!(fx.announced(&Announcement::ResolvedElsewhere { outcome: None }));
    assert!(fx.contains(&Effect::ClearDrafts {
        question_id: "q1".into()
    }));
}

#[test]
fn a_failed_cancel_keeps_the_request_and_can_be_retried() {
    let mut state = with_three();
    run(&mut state, [typed("x"), Action::Close]);
    apply(
        &mut state,
        Action::SubmitFailed {
            question_id: "q1".into(),
            status: Some(503),
            code: None,
            message: String::new(),
        },
    );
    assert_eq!(status_key(&state), Some(StatusKey::CancelFailed));
    assert_eq!(
        active(&state).failure().unwrap().message,
        "the host answered HTTP 503"
    );
    assert_eq!(active(&state).drafts.items[0].text, "x");
    assert_eq!(posted_cancels(&apply(&mut state, Action::Close)), ["q1"]);
}

#[test]
fn a_post_result_for_an_unknown_or_idle_request_is_ignored() {
    let mut state = with_three();
    let before = state.clone();
    let fx = run(
        &mut state,
        [
            Action::SubmitSucceeded {
                question_id: "nope".into(),
            },
            Action::SubmitFailed {
                question_id: "q1".into(),
                status: Some(409),
                code: Some("NOT_PENDING".into()),
                message: "late".into(),
            },
        ],
    );
    assert!(fx.is_empty());
    assert_eq!(state, before);
}

#[test]
fn an_over_long_answer_is_refused_before_sending_and_kept() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_free_text("why")));
    let long = "x".repeat(ask_user_core::limits::MAX_CUSTOM_CHARS + 1);
    apply(&mut state, typed(&long));
    let fx = act(&mut state, Action::Submit);
    assert!(posted_answers(&fx).is_empty());
    let failure = active(&state).failure().expect("failed").clone();
    assert_eq!(failure.code.as_deref(), Some("BAD_ANSWER"));
    assert!(failure.message.contains("8000"), "{}", failure.message);
    assert_eq!(active(&state).drafts.items[0].text, long);
}

// ── collapse ─────────────────────────────────────────────────────────────────

#[test]
fn collapsing_and_expanding_never_cancel_and_keep_drafts() {
    let mut state = with_three();
    apply(&mut state, Action::OptionChosen { index: 1 });
    let drafts = active(&state).drafts.clone();
    let fx = act(&mut state, Action::Collapse);
    assert!(fx.is_empty());
    assert!(active(&state).collapsed);
    assert!(state.slot_taken());
    let fx = act(&mut state, Action::Expand);
    assert!(posted_cancels(&fx).is_empty());
    assert!(!active(&state).collapsed);
    assert_eq!(active(&state).drafts, drafts);
}

#[test]
fn keys_do_nothing_while_collapsed() {
    let mut state = with_three();
    apply(&mut state, Action::Collapse);
    let before = state.clone();
    assert!(run(&mut state, [key(Key::Digit(1)), key(Key::Enter)]).is_empty());
    assert_eq!(state, before);
}

// ── drafts across reloads ────────────────────────────────────────────────────

#[test]
fn drafts_round_trip_through_json() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::OptionChosen { index: 1 },
            Action::Skip,
            typed("notes"),
        ],
    );
    let drafts = active(&state).drafts.clone();
    let text = serde_json::to_string(&drafts).unwrap();
    let back: Drafts = serde_json::from_str(&text).unwrap();
    assert_eq!(back, drafts);
}

#[test]
fn restored_drafts_bring_back_what_was_typed_before_a_reload() {
    let mut typed_before = with_three();
    run(
        &mut typed_before,
        [
            Action::OptionChosen { index: 1 },
            Action::Skip,
            typed("notes"),
        ],
    );
    let saved = active(&typed_before).drafts.clone();

    let mut reloaded = with_three();
    let fx = act(
        &mut reloaded,
        Action::DraftsRestored {
            question_id: "q1".into(),
            drafts: saved.clone(),
        },
    );
    assert_eq!(active(&reloaded).drafts, saved);
    assert_eq!(active(&reloaded).current_index(), 2);
    assert_eq!(fx.focus, Some(FocusTarget::TextBox));
}

#[test]
fn restored_drafts_drop_labels_and_ids_the_request_does_not_have() {
    let mut state = with_three();
    let saved: Drafts = serde_json::from_value(json!({
        "items": [
            {"id": "db", "selected": ["Gone", "SQLite", "MySQL"]},
            {"id": "features", "selected": ["Billing", "Auth", "Auth"]},
            {"id": "stranger", "text": "ignored"}
        ],
        "current": 99
    }))
    .unwrap();
    apply(
        &mut state,
        Action::DraftsRestored {
            question_id: "q1".into(),
            drafts: saved,
        },
    );
    let request = active(&state);
    assert_eq!(request.drafts.items[0].selected, ["SQLite"]);
    assert_eq!(request.drafts.items[1].selected, ["Auth", "Billing"]);
    assert_eq!(request.drafts.items[2].text, "");
    assert_eq!(request.current_index(), 2);
    request.answer_batch().expect("restored drafts stay valid");
}

#[test]
fn a_restore_never_overwrites_what_was_typed_since() {
    let mut state = with_three();
    apply(&mut state, typed("fresh"));
    let saved = Drafts {
        items: vec![ItemDraft {
            id: "db".into(),
            selected: vec!["SQLite".into()],
            ..ItemDraft::default()
        }],
        current: 0,
        reply: None,
    };
    apply(
        &mut state,
        Action::DraftsRestored {
            question_id: "q1".into(),
            drafts: saved,
        },
    );
    assert_eq!(active(&state).drafts.items[0].text, "fresh");
    assert!(active(&state).drafts.items[0].selected.is_empty());
}

#[test]
fn a_restore_for_an_unknown_request_is_ignored() {
    let mut state = with_three();
    let before = state.clone();
    let fx = act(
        &mut state,
        Action::DraftsRestored {
            question_id: "other".into(),
            drafts: Drafts::default(),
        },
    );
    assert!(fx.is_empty());
    assert_eq!(state, before);
}

// ── plan review ──────────────────────────────────────────────────────────────

#[test]
fn a_single_plan_review_question_with_detail_and_approve_uses_the_review_panel() {
    let mut state = Questionnaire::new();
    let fx = act(&mut state, requested("p", 1, plan_review()));
    let request = active(&state);
    assert_eq!(
        request.mode,
        Mode::PlanReview {
            approve: 0,
            decline: Some(1)
        }
    );
    let panel = plan(&state);
    assert_eq!(panel.plan, "# Plan\n1. Do it");
    assert_eq!(panel.approve, "Approve");
    assert_eq!(panel.decline.as_deref(), Some("Revise"));
    assert_eq!(
        fx.focus,
        Some(FocusTarget::Slot),
        "never the approve button"
    );
}

#[test]
fn a_request_that_does_not_fit_plan_review_falls_back_to_the_generic_flow() {
    let base = plan_review();
    let mut two = base.clone();
    let mut second = base.questions[0].clone();
    second.id = "other".into();
    second.intent = None;
    two.questions.push(second);
    let mut multi = base.clone();
    multi.questions[0].multi_select = Some(true);
    let mut no_detail = base.clone();
    no_detail.questions[0].detail = Some("  ".into());
    let mut bad_approve = base.clone();
    bad_approve.questions[0].intent.as_mut().unwrap().approve = "Ship".into();
    let mut plain = base.clone();
    plain.questions[0].intent = None;
    for request in [two, multi, no_detail, bad_approve, plain] {
        assert_eq!(plan_review_mode(&request), Mode::Generic, "{request:?}");
    }
    assert!(matches!(plan_review_mode(&base), Mode::PlanReview { .. }));
}

#[test]
fn approving_a_plan_posts_the_approve_label() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p", 1, plan_review()));
    let fx = act(&mut state, Action::Approve);
    let posted = posted_answers(&fx);
    assert_eq!(
        json(&posted[0].1),
        json!({"answers": [{"id": "plan", "selected": ["Approve (Recommended)"]}]})
    );
}

#[test]
fn declining_a_plan_posts_the_other_option() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p", 1, plan_review()));
    let fx = act(&mut state, Action::Decline);
    assert_eq!(
        json(&posted_answers(&fx)[0].1),
        json!({"answers": [{"id": "plan", "selected": ["Revise"]}]})
    );
}

#[test]
fn chat_about_it_cancels_so_the_normal_composer_returns() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p", 1, plan_review()));
    let fx = act(&mut state, Action::ChatAboutIt);
    assert_eq!(posted_cancels(&fx), ["p"]);
    let fx = act(&mut state, resolved("p", Outcome::Cancelled));
    assert!(!state.slot_taken());
    assert_eq!(fx.focus, Some(FocusTarget::MessageBox));
}

#[test]
fn enter_and_number_keys_never_approve_a_plan() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p", 1, plan_review()));
    let fx = run(
        &mut state,
        [key(Key::Enter), key(Key::Digit(1)), key(Key::Space)],
    );
    assert!(posted_answers(&fx).is_empty());
    assert!(active(&state).drafts.items[0].selected.is_empty());
}

#[test]
fn approve_and_decline_do_nothing_outside_plan_review() {
    let mut state = with_three();
    let before = state.clone();
    assert!(run(&mut state, [Action::Approve, Action::Decline]).is_empty());
    assert_eq!(state, before);
}
