//! Text an agent controls cannot spoof: bidi controls and zero-width
//! characters are made visible wherever text is shown (the view model, the
//! tab title, notifications, the transcript), and the answer keeps the
//! labels exactly as sent.

mod questionnaire_support;

use ask_user_core::AskRequest;
use ask_user_core::attention::{arrivals, document_title};
use ask_user_core::display::{
    escape_json_for_terminal, is_spoofing, is_terminal_control, neutralise, neutralise_for_terminal,
};
use ask_user_core::questionnaire::*;
use ask_user_core::transcript::{RecordAnswer, record_view};
use ask_user_core::wire::{SessionList, TranscriptRecord};
use proptest::prelude::*;
use questionnaire_support::*;
use serde_json::json;
use std::borrow::Cow;

/// Every character the rule makes visible.
fn spoofing_chars() -> Vec<char> {
    let mut chars: Vec<char> = ('\u{202A}'..='\u{202E}').collect();
    chars.extend('\u{2066}'..='\u{2069}');
    chars.extend('\u{200B}'..='\u{200F}');
    chars.extend(['\u{2060}', '\u{FEFF}']);
    chars
}

#[test]
fn json_for_a_terminal_writes_c1_del_and_bidi_controls_as_json_escapes() {
    let json = serde_json::to_string(&json!(["\u{9b}31m\u{202e}SQLite\u{7f}", "plain"])).unwrap();
    assert_eq!(
        escape_json_for_terminal(&json),
        r#"["\u009b31m\u202eSQLite\u007f","plain"]"#
    );
    assert!(matches!(
        escape_json_for_terminal(r#"{"a": "b\n"}"#),
        Cow::Borrowed(_)
    ));
}

#[test]
fn every_bidi_control_and_zero_width_character_becomes_a_visible_marker() {
    assert_eq!(
        neutralise("Delete \u{202E}txt.exe"),
        "Delete ⟨U+202E⟩txt.exe"
    );
    assert_eq!(neutralise("Po\u{200B}stgres"), "Po⟨U+200B⟩stgres");
    assert_eq!(neutralise("\u{FEFF}"), "⟨U+FEFF⟩");
    for c in spoofing_chars() {
        assert!(is_spoofing(c), "{:04X}", c as u32);
        let shown = neutralise(&c.to_string()).into_owned();
        assert_eq!(shown, format!("⟨U+{:04X}⟩", c as u32));
    }
}

#[test]
fn text_without_them_is_borrowed_unchanged_even_other_scripts_and_emoji() {
    for text in [
        "Which database?",
        "选哪个数据库？",
        "שלום עולם",
        "😀 ok",
        "",
        "a\nb\tc",
    ] {
        assert!(matches!(neutralise(text), Cow::Borrowed(t) if t == text));
    }
    // Neighbours of the ranges are left alone.
    for c in [
        '\u{200A}', '\u{2029}', '\u{202F}', '\u{2065}', '\u{206A}', '\u{2061}',
    ] {
        assert!(!is_spoofing(c), "{:04X}", c as u32);
    }
}

#[test]
fn for_a_terminal_escape_bell_csi_and_osc_are_visible_too_but_newline_and_tab_stay() {
    assert_eq!(
        neutralise_for_terminal("\u{1b}]0;owned\u{7}red\u{1b}[31m \u{9b}2J\u{202E}"),
        "⟨U+001B⟩]0;owned⟨U+0007⟩red⟨U+001B⟩[31m ⟨U+009B⟩2J⟨U+202E⟩"
    );
    assert_eq!(neutralise_for_terminal("a\nb\tc"), "a\nb\tc");
    assert!(is_terminal_control('\u{7f}') && is_terminal_control('\r'));
    // The page's rule leaves control characters to the browser (it shows no
    // escape sequences).
    assert_eq!(neutralise("\u{1b}[31m"), "\u{1b}[31m");
}

fn spoofy() -> AskRequest {
    AskRequest::from_json(
        r#"{"questions": [{"id": "q", "header": "H\u202eX", "question": "Run \u202Etxt.exe?",
            "detail": "see \u2066here\u2069",
            "options": [
                {"label": "Yes\u200b (Recommended)", "description": "do \ufeffit"},
                {"label": "No"}]}]}"#,
    )
    .expect("valid request")
}

#[test]
fn the_view_model_shows_every_agent_text_neutralised_and_the_posted_label_as_sent() {
    let mut state = Questionnaire::new();
    act(&mut state, requested("q1", 1, spoofy()));
    let shown = view(&state);
    let request = shown.active.clone().unwrap();
    assert_eq!(request.first_question, "Run ⟨U+202E⟩txt.exe?");
    assert_eq!(request.chip, Some(Chip::Header("H⟨U+202E⟩X".into())));
    let item = shown.item().unwrap();
    assert_eq!(item.question, "Run ⟨U+202E⟩txt.exe?");
    assert_eq!(item.detail.as_deref(), Some("see ⟨U+2066⟩here⟨U+2069⟩"));
    assert_eq!(item.options[0].display, "Yes⟨U+200B⟩");
    assert_eq!(
        item.options[0].description.as_deref(),
        Some("do ⟨U+FEFF⟩it")
    );
    assert_eq!(item.options[0].label, "Yes\u{200b} (Recommended)");
    assert!(matches!(
        &shown.announcement.as_ref().unwrap().value,
        Announcement::NewQuestion { question, .. } if question == "Run ⟨U+202E⟩txt.exe?"
    ));

    let fx = run(
        &mut state,
        [Action::OptionChosen { index: 0 }, Action::Submit],
    );
    let posted = posted_answers(&fx);
    assert_eq!(
        json(&posted[0].1)["answers"][0]["selected"],
        json!(["Yes\u{200b} (Recommended)"]),
        "the answer carries the label byte for byte"
    );
}

#[test]
fn the_asker_and_a_plan_review_are_neutralised_too() {
    let mut state = Questionnaire::new();
    act(
        &mut state,
        Action::FrameReceived(ask_user_core::wire::SessionEvent::QuestionRequested(
            serde_json::from_value(json!({
                "id": "p", "session": "default", "created_at_ms": 1,
                "asked_by": {"kind": "mcp", "name": "Claude\u{202E}edoC"},
                "request": {"questions": [{"id": "plan", "question": "Go\u{200f}?",
                    "detail": "1. \u{202d}step",
                    "intent": {"kind": "plan-review", "approve": "Ok\u{2060}"},
                    "options": [{"label": "Ok\u{2060}"}, {"label": "No\u{202c}"}]}]}
            }))
            .unwrap(),
        )),
    );
    let shown = view(&state);
    let request = shown.active.clone().unwrap();
    assert_eq!(request.asked_by.as_deref(), Some("Claude⟨U+202E⟩edoC"));
    let Body::PlanReview(plan) = request.body else {
        panic!("a plan review")
    };
    assert_eq!(plan.question, "Go⟨U+200F⟩?");
    assert_eq!(plan.plan, "1. ⟨U+202D⟩step");
    assert_eq!(plan.approve, "Ok⟨U+2060⟩");
    assert_eq!(plan.decline.as_deref(), Some("No⟨U+202C⟩"));
}

#[test]
fn the_tab_title_and_a_notification_show_the_markers() {
    assert_eq!(
        document_title(1, Some("Run \u{202E}txt.exe?")),
        "(1) Run ⟨U+202E⟩txt.exe? · ask-user"
    );
    let list = |pending: u32| -> SessionList {
        serde_json::from_value(json!({"sessions": [{"id": "s", "pending": pending,
            "last_activity_ms": 1, "asked_by": {"kind": "mcp", "name": "Bot\u{200b}"},
            "first_question": "Old\u{2066}?", "newest_question": "New\u{202E}?"}]}))
        .unwrap()
    };
    let due = arrivals(Some(&list(0)), &list(1));
    assert_eq!(due[0].asked_by.as_deref(), Some("Bot⟨U+200B⟩"));
    assert_eq!(due[0].question.as_deref(), Some("New⟨U+202E⟩?"));
}

#[test]
fn a_transcript_record_shows_the_markers_in_every_text() {
    let record: TranscriptRecord = serde_json::from_value(json!({
        "id": "r", "created_at_ms": 1, "resolved_at_ms": 2, "outcome": "answered",
        "asked_by": {"kind": "mcp", "name": "A\u{202E}"},
        "request": {"questions": [{"id": "q", "question": "Q\u{2067}?",
            "options": [{"label": "L\u{200c}"}]}]},
        "answer": {"answers": [{"id": "q", "selected": ["L\u{200c}"], "custom": "c\u{200d}"}],
            "note": "n\u{2068}"}
    }))
    .unwrap();
    let shown = record_view(&record);
    assert_eq!(shown.asked_by.as_deref(), Some("A⟨U+202E⟩"));
    assert_eq!(shown.items[0].question, "Q⟨U+2067⟩?");
    assert_eq!(
        shown.items[0].answer,
        Some(RecordAnswer::Given {
            labels: vec!["L⟨U+200C⟩".into()],
            custom: Some("c⟨U+200D⟩".into()),
        })
    );
    assert_eq!(shown.note.as_deref(), Some("n⟨U+2068⟩"));
}

proptest! {
    #[test]
    fn json_escaped_for_a_terminal_holds_no_control_and_parses_to_the_same_value(
        text in "[a-z \\u{200B}-\\u{200F}\\u{202A}-\\u{202E}\\u{2066}-\\u{2069}\\u{2060}\\u{FEFF}\\u{1b}\\u{7}\\u{7f}\\n\\u{80}-\\u{9f}é语😀\"\\\\]{0,40}"
    ) {
        let value = json!({"selected": [text.clone()], "custom": text});
        for json in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let shown = escape_json_for_terminal(&json);
            prop_assert!(
                !shown.chars().any(|c| is_spoofing(c) || is_terminal_control(c)),
                "{:?}", shown
            );
            let parsed: serde_json::Value = serde_json::from_str(&shown).unwrap();
            prop_assert_eq!(&parsed, &value);
        }
    }

    #[test]
    fn the_output_never_holds_a_spoofing_character_and_loses_no_other(
        text in "[a-z \\u{200B}-\\u{200F}\\u{202A}-\\u{202E}\\u{2066}-\\u{2069}\\u{2060}\\u{FEFF}\\u{1b}\\u{7}\\n\\u{9b}é语]{0,40}"
    ) {
        let shown = neutralise(&text);
        prop_assert!(!shown.chars().any(is_spoofing));
        // Taking the markers out gives back the text without the hidden characters.
        let kept: String = text.chars().filter(|c| !is_spoofing(*c)).collect();
        prop_assert_eq!(without_markers(&shown), kept);

        let terminal = neutralise_for_terminal(&text);
        prop_assert!(!terminal.chars().any(|c| is_spoofing(c) || is_terminal_control(c)));
    }

    #[test]
    fn text_without_them_is_unchanged(text in "[^\\u{200B}-\\u{200F}\\u{202A}-\\u{202E}\\u{2066}-\\u{2069}\\u{2060}\\u{FEFF}]{0,40}") {
        prop_assert!(matches!(neutralise(&text), Cow::Borrowed(t) if t == text));
    }
}

/// `text` without its `⟨U+XXXX⟩` markers.
fn without_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("⟨U+") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('⟩').expect("a closed marker") + start;
        rest = &rest[end + '⟩'.len_utf8()..];
    }
    out.push_str(rest);
    out
}
