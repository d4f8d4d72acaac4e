//! The view model: what the composer shows, computed by `view` from the state.
//! The composer renders from it and nothing else, so these are the rendering
//! rules (the browser tests keep what needs a DOM).

mod questionnaire_support;

use ask_user_core::AskRequest;
use ask_user_core::questionnaire::*;
use ask_user_core::wire::Outcome;
use questionnaire_support::*;

#[test]
fn an_empty_questionnaire_shows_nothing_and_asks_for_no_focus_or_announcement() {
    let shown = view(&Questionnaire::new());
    assert_eq!(shown, ViewModel::default());
    assert!(!shown.slot_taken);
    assert!(shown.active.is_none() && shown.focus.is_none() && shown.announcement.is_none());
}

#[test]
fn a_new_batch_shows_its_first_item_with_every_row_ready_to_render() {
    let state = with_three();
    let shown = view(&state);
    assert!(shown.slot_taken);
    assert_eq!(shown.waiting, 0);
    let request = shown.active.clone().unwrap();
    assert_eq!(request.id, "q1");
    assert_eq!(request.created_at_ms, 1_000);
    assert_eq!(request.phase, Phase::Editing);
    assert_eq!(request.phase.as_str(), "editing");
    assert!(request.can_edit);
    assert_eq!(request.status_line, None);
    assert!(!request.collapsed);
    assert_eq!(request.chip, Some(Chip::Header("Database".into())));
    assert_eq!(
        request.progress,
        Some(Progress {
            current: 1,
            total: 3
        })
    );

    let item = shown.item().unwrap();
    assert_eq!(item.index, 0);
    assert_eq!(item.question, "Which database?");
    assert!(!item.multi_select);
    assert_eq!(
        item.options[0],
        OptionRow {
            index: 0,
            label: "Postgres (Recommended)".into(),
            display: "Postgres".into(),
            recommended: true,
            description: Some("Solid".into()),
            selected: false,
            focused: false,
            number_key: Some(1),
        }
    );
    let focused: Vec<bool> = item.options.iter().map(|o| o.focused).collect();
    assert_eq!(
        focused,
        [false, true, false],
        "one tab stop, not the recommendation"
    );
    assert_eq!(
        item.text_box,
        TextBox {
            role: TextBoxRole::Other,
            value: String::new()
        }
    );
    assert_eq!(
        item.steps,
        [
            Step {
                state: ItemState::Unanswered,
                current: true
            },
            Step {
                state: ItemState::Unanswered,
                current: false
            },
            Step {
                state: ItemState::Unanswered,
                current: false
            },
        ]
    );
    assert!(!item.can_go_back && item.can_go_next && !item.can_submit);
    assert_eq!(shown.option(1), Some(&item.options[1]));
}

#[test]
fn a_single_item_has_no_progress_text_and_no_step_dots() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, one_free_text("why")));
    let request = shown(&state);
    assert_eq!(request.progress, None);
    assert_eq!(request.chip, None, "no header, no chip");
    let item = item(&state);
    assert!(item.steps.is_empty());
    assert!(item.options.is_empty());
    assert_eq!(item.text_box.role, TextBoxRole::YourAnswer);
}

#[test]
fn only_the_first_nine_options_have_a_number_key() {
    let options: Vec<String> = (1..=12)
        .map(|n| format!(r#"{{"label": "Option {n}"}}"#))
        .collect();
    let request = AskRequest::from_json(&format!(
        r#"{{"questions": [{{"id": "many", "question": "Which?", "options": [{}]}}]}}"#,
        options.join(",")
    ))
    .unwrap();
    let mut state = Questionnaire::new();
    apply(&mut state, requested("q1", 1, request));
    let keys: Vec<Option<u8>> = item(&state).options.iter().map(|o| o.number_key).collect();
    assert_eq!(keys[..9], (1..=9).map(Some).collect::<Vec<_>>()[..]);
    assert_eq!(keys[9..], [None, None, None]);
}

#[test]
fn typing_shows_in_the_text_box_and_the_steps_follow_the_answers() {
    let mut state = with_three();
    run(
        &mut state,
        [
            typed("CockroachDB"),
            Action::Next,
            Action::Skip,
            typed("notes"),
        ],
    );
    let item = item(&state);
    assert_eq!(item.index, 2);
    assert_eq!(item.text_box.value, "notes");
    let states: Vec<ItemState> = item.steps.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [ItemState::Answered, ItemState::Skipped, ItemState::Answered]
    );
    assert!(item.steps[2].current);
    assert!(item.can_go_back && !item.can_go_next && item.can_submit);
}

#[test]
fn a_multi_select_item_shows_checkboxes_with_their_choices() {
    let mut state = with_three();
    run(
        &mut state,
        [
            Action::Next,
            Action::OptionToggled { index: 0 },
            Action::OptionToggled { index: 2 },
        ],
    );
    let item = item(&state);
    assert!(item.multi_select);
    let selected: Vec<bool> = item.options.iter().map(|o| o.selected).collect();
    assert_eq!(selected, [true, false, true]);
}

#[test]
fn while_sending_nothing_is_editable_and_the_status_line_says_so() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
            Action::Submit,
        ],
    );
    let request = shown(&state);
    assert_eq!(request.phase, Phase::Sending);
    assert!(!request.can_edit);
    assert_eq!(
        request.status_line,
        Some(StatusLine {
            key: StatusKey::SendingAnswer,
            message: None
        })
    );
    let item = item(&state);
    assert!(!item.can_submit && !item.can_go_back && !item.can_go_next);
    apply(
        &mut state,
        Action::SubmitSucceeded {
            question_id: "q1".into(),
        },
    );
    assert_eq!(shown(&state).phase, Phase::Sent);
    assert_eq!(status_key(&state), Some(StatusKey::SendingAnswer));
}

#[test]
fn a_failed_post_shows_its_readable_message_and_can_be_retried() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
            Action::Submit,
            Action::SubmitFailed {
                question_id: "q1".into(),
                status: Some(503),
                code: None,
                message: "the host is busy".into(),
            },
        ],
    );
    let request = shown(&state);
    assert_eq!(request.phase, Phase::Failed);
    assert!(request.can_edit);
    assert_eq!(
        request.status_line,
        Some(StatusLine {
            key: StatusKey::AnswerFailed,
            message: Some("the host is busy".into())
        })
    );
    assert!(item(&state).can_submit);
}

#[test]
fn a_collapsed_request_is_still_shown_with_its_strip() {
    let mut state = with_three();
    apply(&mut state, Action::Collapse);
    let request = shown(&state);
    assert!(request.collapsed);
    assert_eq!(request.chip, Some(Chip::Header("Database".into())));
    assert!(
        view(&state).slot_taken,
        "collapsing never gives the slot back"
    );
}

#[test]
fn a_plan_review_shows_the_panel_with_its_plan_and_two_decisions() {
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p", 1, plan_review()));
    let request = shown(&state);
    assert_eq!(request.chip, Some(Chip::PlanReview));
    assert_eq!(request.progress, None);
    assert_eq!(
        request.body,
        Body::PlanReview(PlanView {
            question: "Approve the plan?".into(),
            plan: "# Plan\n1. Do it".into(),
            approve: "Approve".into(),
            decline: Some("Revise".into()),
        })
    );
    assert!(view(&state).item().is_none());
}

#[test]
fn a_plan_review_that_does_not_fit_falls_back_to_the_generic_item() {
    // Multi-select cannot be a review panel.
    let request = AskRequest::from_json(
        r#"{"questions":[{"id":"plan","question":"Which parts?","detail":"The plan","multi_select":true,
            "intent":{"kind":"plan-review","approve":"All"},"options":[{"label":"All"},{"label":"Some"}]}]}"#,
    )
    .unwrap();
    let mut state = Questionnaire::new();
    apply(&mut state, requested("p3", 1, request));
    let item = item(&state);
    assert_eq!(item.options.len(), 2);
    assert_eq!(item.detail.as_deref(), Some("The plan"));
}

#[test]
fn the_oldest_request_shows_first_with_a_count_of_the_others() {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("late", 20, one_free_text("a")),
            requested("early", 10, one_free_text("b")),
            requested("last", 30, one_free_text("c")),
        ],
    );
    let shown = view(&state);
    assert_eq!(shown.active.as_ref().unwrap().id, "early");
    assert_eq!(shown.waiting, 2);
    apply(&mut state, resolved("early", Outcome::Answered));
    let shown = view(&state);
    assert_eq!(shown.active.as_ref().unwrap().id, "late");
    assert_eq!(shown.waiting, 1);
}

#[test]
fn back_shows_an_earlier_answer_which_can_be_changed() {
    let mut state = with_three();
    run(
        &mut state,
        [Action::OptionChosen { index: 2 }, Action::Back],
    );
    let selected: Vec<bool> = item(&state).options.iter().map(|o| o.selected).collect();
    assert_eq!(
        selected,
        [false, false, true],
        "the earlier answer is shown"
    );
    run(
        &mut state,
        [Action::OptionChosen { index: 1 }, Action::Back],
    );
    let selected: Vec<bool> = item(&state).options.iter().map(|o| o.selected).collect();
    assert_eq!(selected, [false, true, false], "the changed answer is kept");
}

#[test]
fn every_focus_intent_gets_a_new_version_even_for_the_same_target() {
    let mut state = with_three();
    let first = view(&state).focus.unwrap();
    assert_eq!(first.value, FocusTarget::Option(1));
    run(&mut state, [Action::Collapse, Action::Expand]);
    let second = view(&state).focus.unwrap();
    apply(&mut state, Action::Expand);
    let third = view(&state).focus.unwrap();
    assert_eq!((second.value, third.value), (first.value, first.value));
    assert!(first.version < second.version && second.version < third.version);
}

#[test]
fn the_same_announcement_twice_gets_two_versions_so_it_is_read_twice() {
    let mut state = with_three();
    apply(&mut state, key(Key::Enter));
    let first = view(&state).announcement.unwrap();
    apply(&mut state, Action::Back);
    apply(&mut state, key(Key::Enter));
    let second = view(&state).announcement.unwrap();
    assert_eq!(first.value, Announcement::Incomplete { unanswered: 3 });
    assert_eq!(second.value, first.value);
    // One more per announcement: a shell can vary every other one (odd/even).
    assert_eq!(second.version, first.version + 1);
}

#[test]
fn an_action_that_asks_for_nothing_keeps_the_last_intents() {
    let mut state = with_three();
    let before = view(&state);
    apply(&mut state, typed("draft"));
    let after = view(&state);
    assert_eq!(
        (after.focus, after.announcement),
        (before.focus, before.announcement)
    );
}

#[test]
fn the_notice_is_in_the_view_until_dismissed() {
    let mut state = with_three();
    apply(&mut state, resolved("q1", Outcome::Timeout));
    let shown = view(&state);
    assert!(!shown.slot_taken);
    assert_eq!(
        shown.notice,
        Some(Notice::ResolvedElsewhere {
            question_id: "q1".into(),
            outcome: Some(Outcome::Timeout)
        })
    );
    apply(&mut state, Action::DismissNotice);
    assert_eq!(view(&state).notice, None);
}

#[test]
fn the_card_names_who_asked_capped_for_display_and_nobody_when_the_host_does_not_know() {
    let frame = |id: &str, asked_by: serde_json::Value| {
        let data = serde_json::json!({"id": id, "session": "default", "created_at_ms": 5,
            "request": {"questions": [{"id": "go", "question": "Go?"}]}, "asked_by": asked_by});
        Action::FrameReceived(
            ask_user_core::wire::SessionEvent::parse("question/requested", &data.to_string())
                .unwrap(),
        )
    };
    let mut state = Questionnaire::new();
    apply(
        &mut state,
        frame(
            "q1",
            serde_json::json!({"kind": "mcp", "name": "Claude Code"}),
        ),
    );
    assert_eq!(
        view(&state).active.unwrap().asked_by.as_deref(),
        Some("Claude Code")
    );

    let mut state = Questionnaire::new();
    let long = "n".repeat(128);
    apply(
        &mut state,
        frame("q2", serde_json::json!({"kind": "http", "name": long})),
    );
    let shown = view(&state).active.unwrap().asked_by.unwrap();
    assert_eq!(shown.chars().count(), MAX_SHOWN_ASKER_CHARS);

    let mut state = Questionnaire::new();
    apply(&mut state, frame("q3", serde_json::Value::Null));
    assert_eq!(view(&state).active.unwrap().asked_by, None);
}

#[test]
fn the_card_knows_when_and_to_whom_a_request_escalates_and_nothing_without_escalate_after() {
    let frame = |id: &str, extra: serde_json::Value| {
        let mut request = serde_json::json!({"questions": [{"id": "go", "question": "Go?"}]});
        if let serde_json::Value::Object(extra) = extra {
            request.as_object_mut().unwrap().extend(extra);
        }
        let data = serde_json::json!({"id": id, "session": "default", "created_at_ms": 5_000,
            "request": request});
        Action::FrameReceived(
            ask_user_core::wire::SessionEvent::parse("question/requested", &data.to_string())
                .unwrap(),
        )
    };
    let mut state = Questionnaire::new();
    apply(
        &mut state,
        frame(
            "q1",
            serde_json::json!({"audience": {"role": "oncall"},
                               "escalate_after": {"seconds": 60, "role": "leads"}}),
        ),
    );
    assert_eq!(
        view(&state).active.unwrap().escalates,
        Some((65_000, "leads".to_owned())),
        "a minute after the ask"
    );
    let mut state = Questionnaire::new();
    apply(&mut state, frame("q2", serde_json::json!({})));
    assert_eq!(view(&state).active.unwrap().escalates, None);
}
