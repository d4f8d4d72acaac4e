//! Keyboard policy for both composers: modifiers, the element that has focus,
//! and the one IME state machine the question composer and the message box
//! share.

mod questionnaire_support;

use ask_user_core::keys::{Ime, Key, KeyInput, KeyTarget, sends_message};
use ask_user_core::questionnaire::*;
use questionnaire_support::*;

fn on(target: KeyTarget, key: Key) -> Action {
    Action::Key(KeyInput {
        target,
        ..KeyInput::plain(key)
    })
}

fn with_shortcut(key: Key) -> Action {
    Action::Key(KeyInput {
        shortcut: true,
        ..KeyInput::plain(key)
    })
}

/// A one-item request with an answer chosen: Enter would post it.
fn ready_to_submit() -> Questionnaire {
    let mut state = Questionnaire::new();
    run(
        &mut state,
        [
            requested("q1", 1, one_single()),
            Action::OptionChosen { index: 1 },
        ],
    );
    assert!(active(&state).can_submit());
    state
}

#[test]
fn dom_keys_and_focused_elements_map_to_the_policy_s_vocabulary() {
    assert_eq!(Key::from_dom("Enter"), Key::Enter);
    assert_eq!(Key::from_dom("Right"), Key::ArrowDown);
    assert_eq!(Key::from_dom("Spacebar"), Key::Space);
    assert_eq!(KeyTarget::from_dom("TEXTAREA", false), KeyTarget::TextBox);
    assert_eq!(KeyTarget::from_dom("input", false), KeyTarget::TextBox);
    assert_eq!(KeyTarget::from_dom("BUTTON", false), KeyTarget::Button);
    assert_eq!(KeyTarget::from_dom("A", false), KeyTarget::Button);
    assert_eq!(KeyTarget::from_dom("DIV", true), KeyTarget::Option);
    assert_eq!(KeyTarget::from_dom("SECTION", false), KeyTarget::Other);
}

#[test]
fn ctrl_alt_or_meta_make_a_shortcut_and_shift_alone_does_not() {
    assert!(!KeyInput::is_shortcut(false, false, false));
    assert!(KeyInput::is_shortcut(true, false, false));
    assert!(KeyInput::is_shortcut(false, true, false));
    assert!(KeyInput::is_shortcut(false, false, true));
}

#[test]
fn enter_and_space_on_a_button_are_left_to_the_button() {
    let mut state = ready_to_submit();
    let before = state.clone();
    let fx = run(
        &mut state,
        [
            on(KeyTarget::Button, Key::Enter),
            on(KeyTarget::Button, Key::Space),
        ],
    );
    assert!(fx.is_empty(), "no preventDefault, no post: {fx:?}");
    assert_eq!(state, before);
}

#[test]
fn a_number_key_on_a_button_still_chooses_an_option() {
    let mut state = with_three();
    let fx = act(&mut state, on(KeyTarget::Button, Key::Digit(2)));
    assert!(fx.contains(&Effect::PreventDefault));
    assert_eq!(active(&state).drafts.items[0].selected, ["SQLite"]);
}

#[test]
fn keys_with_ctrl_alt_or_meta_are_the_browser_s() {
    let mut state = ready_to_submit();
    let before = state.clone();
    let fx = run(
        &mut state,
        [
            with_shortcut(Key::Enter),
            with_shortcut(Key::Digit(1)),
            with_shortcut(Key::ArrowDown),
            with_shortcut(Key::Space),
        ],
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(state, before);
}

#[test]
fn a_number_key_on_an_option_moves_focus_to_the_option_it_chose() {
    let mut state = with_three();
    apply(&mut state, Action::Next);
    let fx = act(&mut state, on(KeyTarget::Option, Key::Digit(3)));
    assert_eq!(fx.focus, Some(FocusTarget::Option(2)));
    assert!(item(&state).options[2].focused && item(&state).options[2].selected);
}

#[test]
fn a_number_key_elsewhere_chooses_without_moving_focus() {
    let mut state = with_three();
    apply(&mut state, Action::Next);
    let fx = act(&mut state, on(KeyTarget::Button, Key::Digit(3)));
    assert_eq!(fx.focus, None);
    assert!(item(&state).options[2].selected);
}

#[test]
fn a_number_key_that_opens_the_next_item_focuses_that_item_not_the_old_option() {
    let mut state = with_three();
    let fx = act(&mut state, on(KeyTarget::Option, Key::Digit(3)));
    assert_eq!(active(&state).current_index(), 1);
    assert_eq!(fx.focus, Some(FocusTarget::Option(0)));
}

#[test]
fn the_message_box_sends_on_enter_and_ctrl_enter_but_not_with_shift() {
    let mut ime = Ime::default();
    let enter = KeyInput::in_text_box(Key::Enter);
    assert!(sends_message(&mut ime, &enter));
    assert!(sends_message(
        &mut ime,
        &KeyInput {
            shortcut: true,
            ..enter
        }
    ));
    assert!(!sends_message(
        &mut ime,
        &KeyInput {
            shift: true,
            ..enter
        }
    ));
    assert!(!sends_message(&mut ime, &KeyInput::in_text_box(Key::Other)));
}

#[test]
fn the_message_box_never_sends_during_ime_composition() {
    let mut ime = Ime::default();
    let enter = KeyInput::in_text_box(Key::Enter);
    assert!(!sends_message(
        &mut ime,
        &KeyInput {
            is_composing: true,
            ..enter
        }
    ));
    assert!(!sends_message(
        &mut ime,
        &KeyInput {
            key_code: 229,
            ..enter
        }
    ));
    ime.composition_start();
    assert!(!sends_message(&mut ime, &enter), "between start and end");
    ime.composition_end();
    assert!(
        !sends_message(&mut ime, &enter),
        "the keydown right after the end"
    );
    assert!(sends_message(&mut ime, &enter), "only that one keydown");
}

#[test]
fn the_tick_or_a_blur_closes_the_window_after_composition_end() {
    let mut ime = Ime::default();
    let enter = KeyInput::in_text_box(Key::Enter);
    ime.composition_end();
    ime.tick();
    assert!(sends_message(&mut ime, &enter));
    ime.composition_start();
    ime.blur();
    assert_eq!(ime, Ime::default());
    assert!(sends_message(&mut ime, &enter));
}

#[test]
fn the_questionnaire_and_the_message_box_share_one_ime_machine() {
    // The same sequence, fed to both, claims the same keydowns.
    let mut state = ready_to_submit();
    let mut ime = Ime::default();
    let enter = KeyInput::in_text_box(Key::Enter);
    apply(&mut state, Action::CompositionStart);
    ime.composition_start();
    apply(&mut state, Action::CompositionEnd);
    ime.composition_end();
    assert_eq!(state.ime(), ime);
    assert!(posted_answers(&apply(&mut state, Action::Key(enter))).is_empty());
    assert!(!sends_message(&mut ime, &enter));
    assert_eq!(state.ime(), ime);
}
