//! IME composition: Enter that confirms a candidate never acts.
//!
//! Three signals count as composing, each tested on a request that is complete,
//! so a plain Enter would post: `isComposing`, `keyCode == 229`, and the keydown
//! right after `compositionend` (reset by the next tick and by blur).

mod questionnaire_support;

use ask_user_core::questionnaire::*;
use questionnaire_support::*;

/// A free-text request with non-empty text: a plain Enter would submit it.
fn ready_to_submit() -> Questionnaire {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [requested("q1", 1, one_free_text("why")), typed("日本語")],
    );
    assert!(active(&state).can_submit());
    state
}

fn enter_with(is_composing: bool, key_code: u32) -> Action {
    Action::Key(KeyInput {
        is_composing,
        key_code,
        ..KeyInput::in_text_box(Key::Enter)
    })
}

#[test]
fn enter_with_is_composing_only_confirms_the_candidate() {
    let mut state = ready_to_submit();
    let fx = apply(&mut state, enter_with(true, 13));
    assert!(fx.is_empty(), "no post and no preventDefault: {fx:?}");
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn enter_with_key_code_229_only_confirms_the_candidate() {
    let mut state = ready_to_submit();
    let fx = apply(&mut state, enter_with(false, 229));
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn the_keydown_right_after_composition_end_counts_as_composing() {
    let mut state = ready_to_submit();
    run(
        &mut state,
        [Action::CompositionStart, Action::CompositionEnd],
    );
    // Safari: the confirming Enter arrives after compositionend with neither flag.
    let fx = apply(&mut state, enter_with(false, 13));
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn only_one_keydown_after_composition_end_is_consumed() {
    let mut state = ready_to_submit();
    run(
        &mut state,
        [Action::CompositionStart, Action::CompositionEnd],
    );
    apply(&mut state, enter_with(false, 13));
    let fx = apply(&mut state, enter_with(false, 13));
    assert_eq!(posted_answers(&fx).len(), 1);
}

#[test]
fn any_key_consumes_the_flag_after_composition_end() {
    let mut state = ready_to_submit();
    apply(&mut state, Action::CompositionEnd);
    apply(&mut state, key_in_text_box(Key::Other));
    assert!(!state.ime().just_ended);
    assert_eq!(
        posted_answers(&apply(&mut state, enter_with(false, 13))).len(),
        1
    );
}

#[test]
fn composition_end_asks_for_a_tick() {
    let mut state = ready_to_submit();
    let fx = apply(&mut state, Action::CompositionEnd);
    assert_eq!(fx, vec![Effect::ScheduleTick]);
    assert!(state.ime().just_ended);
}

#[test]
fn the_next_tick_ends_the_after_composition_window() {
    let mut state = ready_to_submit();
    run(
        &mut state,
        [
            Action::CompositionStart,
            Action::CompositionEnd,
            Action::Tick,
        ],
    );
    let fx = apply(&mut state, enter_with(false, 13));
    assert_eq!(posted_answers(&fx).len(), 1);
}

#[test]
fn blur_ends_the_after_composition_window() {
    let mut state = ready_to_submit();
    run(
        &mut state,
        [
            Action::CompositionStart,
            Action::CompositionEnd,
            Action::Blur,
        ],
    );
    let fx = apply(&mut state, enter_with(false, 13));
    assert_eq!(posted_answers(&fx).len(), 1);
}

#[test]
fn enter_between_composition_start_and_end_does_nothing() {
    let mut state = ready_to_submit();
    apply(&mut state, Action::CompositionStart);
    assert!(state.ime().composing);
    assert!(apply(&mut state, enter_with(false, 13)).is_empty());
    assert_eq!(active(&state).status, Status::Editing);
}

#[test]
fn blur_during_composition_clears_the_composing_flag() {
    let mut state = ready_to_submit();
    run(&mut state, [Action::CompositionStart, Action::Blur]);
    assert_eq!(state.ime(), Ime::default());
    assert_eq!(
        posted_answers(&apply(&mut state, enter_with(false, 13))).len(),
        1
    );
}

#[test]
fn a_composing_digit_never_chooses_an_option() {
    let mut state = with_three();
    let fx = apply(
        &mut state,
        Action::Key(KeyInput {
            is_composing: true,
            key_code: 229,
            ..KeyInput::plain(Key::Digit(1))
        }),
    );
    assert!(fx.is_empty());
    assert!(active(&state).drafts.items[0].selected.is_empty());
}
