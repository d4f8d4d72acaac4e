//! Property: random action sequences never panic, never post an incomplete
//! batch, every posted batch passes core's answer validation, and the view
//! model agrees with the state.

mod questionnaire_support;

use ask_user_core::AskRequest;
use ask_user_core::questionnaire::*;
use ask_user_core::wire::{Outcome, QuestionRef, SessionEvent};
use proptest::prelude::*;
use questionnaire_support::*;

const IDS: [&str; 3] = ["a", "b", "c"];

fn request_pool(i: usize) -> AskRequest {
    match i {
        0 => three_items(),
        1 => one_single(),
        2 => plan_review(),
        _ => one_free_text("why"),
    }
}

fn text_pool() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("   ".to_owned()),
        Just(" answer ".to_owned()),
        Just("多行\n文本".to_owned()),
        "[a-z ]{0,12}",
    ]
}

fn key_strategy() -> impl Strategy<Value = KeyInput> {
    (
        prop_oneof![
            Just(Key::Enter),
            (0u8..=9).prop_map(|d| if d == 0 { Key::Other } else { Key::Digit(d) }),
            Just(Key::ArrowUp),
            Just(Key::ArrowDown),
            Just(Key::Space),
            Just(Key::Other),
        ],
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop_oneof![9 => Just(13u32), 1 => Just(229u32)],
        prop_oneof![
            Just(KeyTarget::TextBox),
            Just(KeyTarget::Option),
            Just(KeyTarget::Button),
            Just(KeyTarget::Other),
        ],
    )
        .prop_map(
            |(key, shift, shortcut, is_composing, key_code, target)| KeyInput {
                key,
                shift,
                shortcut,
                is_composing,
                key_code,
                target,
            },
        )
}

fn action_strategy() -> impl Strategy<Value = Action> {
    let id = (0..IDS.len()).prop_map(|i| IDS[i].to_owned());
    prop_oneof![
        3 => (0..IDS.len(), 0u64..4, 0usize..4)
            .prop_map(|(i, t, r)| requested(IDS[i], t, request_pool(r))),
        1 => (0..IDS.len(), prop_oneof![Just(Outcome::Answered), Just(Outcome::Cancelled), Just(Outcome::Timeout)])
            .prop_map(|(i, o)| resolved(IDS[i], o)),
        1 => prop::sample::subsequence(IDS.to_vec(), 0..=3).prop_map(|ids| synced(&ids)),
        1 => (0..IDS.len(), any::<bool>()).prop_map(|(i, gone)| {
            let question = QuestionRef { id: IDS[i].to_owned() };
            Action::FrameReceived(if gone {
                SessionEvent::QuestionDetached(question)
            } else {
                SessionEvent::QuestionAttached(question)
            })
        }),
        4 => (0usize..5).prop_map(|index| Action::OptionChosen { index }),
        3 => (0usize..5).prop_map(|index| Action::OptionToggled { index }),
        1 => (0usize..5).prop_map(|index| Action::OptionFocused { index }),
        3 => text_pool().prop_map(|text| Action::DraftEdited { text }),
        6 => key_strategy().prop_map(Action::Key),
        1 => Just(Action::CompositionStart),
        1 => Just(Action::CompositionEnd),
        1 => Just(Action::Tick),
        1 => Just(Action::Blur),
        2 => Just(Action::Skip),
        1 => Just(Action::Back),
        1 => Just(Action::Next),
        1 => (0usize..4).prop_map(|index| Action::GoTo { index }),
        2 => Just(Action::Submit),
        1 => Just(Action::Close),
        1 => Just(Action::Approve),
        1 => Just(Action::Decline),
        1 => Just(Action::ChatAboutIt),
        1 => id.clone().prop_map(|question_id| Action::SubmitSucceeded { question_id }),
        1 => (id.clone(), prop_oneof![Just(None), Just(Some(409u16)), Just(Some(500u16))])
            .prop_map(|(question_id, status)| Action::SubmitFailed {
                question_id,
                status,
                code: status.filter(|s| *s == 409).map(|_| "NOT_PENDING".to_owned()),
                message: String::new(),
            }),
        1 => Just(Action::Collapse),
        1 => Just(Action::Expand),
        1 => (id, 0usize..4, text_pool()).prop_map(|(question_id, current, text)| {
            Action::DraftsRestored {
                question_id,
                drafts: Drafts {
                    items: vec![ItemDraft {
                        id: "db".into(),
                        selected: vec!["SQLite".into(), "Nope".into()],
                        text,
                        skipped: false,
                    }],
                    current,
                    reply: None,
                },
            }
        }),
        1 => Just(Action::DismissNotice),
    ]
}

fn check_invariants(state: &Questionnaire) -> Result<(), TestCaseError> {
    let pending = state.pending();
    for pair in pending.windows(2) {
        prop_assert!(
            (pair[0].created_at_ms, pair[0].arrival) < (pair[1].created_at_ms, pair[1].arrival),
            "oldest first"
        );
    }
    for (i, request) in pending.iter().enumerate() {
        prop_assert!(
            pending[i + 1..].iter().all(|r| r.id != request.id),
            "unique ids"
        );
        prop_assert_eq!(request.drafts.items.len(), request.len());
        prop_assert!(request.current_index() < request.len());
        let options = request.current_question().options().len();
        prop_assert!(request.option_focus.is_none_or(|f| f < options));
    }
    // Rendering never panics either, and it agrees with the state.
    let shown = view(state);
    prop_assert_eq!(shown.slot_taken, !pending.is_empty());
    prop_assert_eq!(
        shown.active.as_ref().map(|a| a.id.as_str()),
        pending.first().map(|r| r.id.as_str())
    );
    if let Some(item) = shown.item() {
        prop_assert!(
            item.options.iter().filter(|o| o.focused).count() <= 1,
            "one tab stop"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_action_sequences_never_post_an_invalid_or_incomplete_batch(
        actions in prop::collection::vec(action_strategy(), 0..80)
    ) {
        let mut state = Questionnaire::new();
        for action in actions {
            let before = state.clone();
            let effects = apply(&mut state, action);
            for effect in &effects {
                match effect {
                    Effect::PostAnswer { question_id, batch } => {
                        let was = before.get(question_id).expect("posted for a known request");
                        prop_assert!(was.is_editable(), "one POST at a time");
                        let now = state.get(question_id).expect("stays until resolved");
                        prop_assert!(now.is_complete(), "never a partial batch");
                        prop_assert_eq!(now.status(), &Status::Sending(SendKind::Answer));
                        prop_assert!(batch.validate(&now.request).is_ok(), "{:?}", batch);
                    }
                    Effect::PostCancel { question_id } => {
                        let was = before.get(question_id).expect("cancelled a known request");
                        prop_assert!(was.is_editable(), "one POST at a time");
                    }
                    _ => {}
                }
            }
            check_invariants(&state)?;
            // Each new intent is exactly one version on from the last of its kind.
            let (was, now) = (view(&before), view(&state));
            if now.focus != was.focus {
                prop_assert_eq!(now.focus.map(|f| f.version), Some(was.focus.map_or(0, |f| f.version) + 1));
            }
            if now.announcement != was.announcement {
                let next = was.announcement.map_or(0, |a| a.version) + 1;
                prop_assert_eq!(now.announcement.map(|a| a.version), Some(next));
            }
        }
    }
}
