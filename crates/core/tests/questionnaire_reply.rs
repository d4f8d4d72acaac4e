//! "Reply instead": a message in place of finishing the batch.

mod questionnaire_support;

use ask_user_core::questionnaire::*;
use questionnaire_support::*;
use serde_json::json;

fn replying(text: &str) -> Vec<Action> {
    vec![
        Action::ReplyInstead,
        Action::ReplyEdited {
            text: text.to_owned(),
        },
    ]
}

#[test]
fn reply_instead_opens_a_reply_box_and_moves_focus_there() {
    let mut state = with_three();
    assert_eq!(shown(&state).reply, None);
    let fx = act(&mut state, Action::ReplyInstead);
    assert_eq!(fx.focus, Some(FocusTarget::ReplyBox));
    assert_eq!(
        shown(&state).reply,
        Some(ReplyView {
            text: String::new(),
            can_send: false
        })
    );
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::PersistDrafts { drafts, .. } if drafts.reply.is_some())),
        "an open reply is a draft like the rest: {:?}",
        &*fx
    );
}

#[test]
fn a_blank_reply_posts_nothing() {
    let mut state = with_three();
    run(&mut state, replying("  \n "));
    assert!(!shown(&state).reply.unwrap().can_send);
    let fx = act(&mut state, Action::SendReply);
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(shown(&state).phase, Phase::Editing);
}

#[test]
fn send_reply_posts_the_items_answered_so_far_the_rest_skipped_and_the_trimmed_note() {
    let mut state = with_three();
    act(&mut state, Action::OptionChosen { index: 1 }); // db: SQLite, moves on
    run(
        &mut state,
        replying("  Let us talk about the features first.  "),
    );
    assert!(shown(&state).reply.as_ref().unwrap().can_send);
    let fx = act(&mut state, Action::SendReply);
    let posted = posted_answers(&fx);
    assert_eq!(posted.len(), 1, "{:?}", &*fx);
    assert_eq!(posted[0].0, "q1");
    assert_eq!(
        json(&posted[0].1),
        json!({"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "features", "selected": []},
            {"id": "notes", "selected": []}
        ], "note": "Let us talk about the features first."})
    );
    assert_eq!(shown(&state).phase, Phase::Sending);
    assert!(!shown(&state).can_edit, "nothing changes while it is sent");
}

#[test]
fn an_over_long_reply_is_refused_with_a_reason_naming_the_note_and_keeps_the_text() {
    let mut state = with_three();
    let long = "x".repeat(ask_user_core::limits::MAX_NOTE_CHARS + 1);
    run(&mut state, replying(&long));
    let fx = act(&mut state, Action::SendReply);
    assert!(posted_answers(&fx).is_empty());
    assert_eq!(shown(&state).phase, Phase::Failed);
    let line = shown(&state).status_line.unwrap();
    assert!(
        line.message.as_deref().unwrap_or_default().contains("note"),
        "{line:?}"
    );
    assert_eq!(shown(&state).reply.unwrap().text, long);
}

#[test]
fn closing_the_reply_box_drops_its_text_and_returns_to_the_questions_with_drafts_kept() {
    let mut state = with_three();
    act(&mut state, Action::OptionChosen { index: 1 });
    run(&mut state, replying("never mind"));
    let fx = act(&mut state, Action::ReplyClosed);
    assert_eq!(shown(&state).reply, None);
    assert!(fx.focus.is_some(), "focus goes back to the item");
    assert_eq!(active(&state).drafts.items[0].selected, ["SQLite"]);
    let fx = act(&mut state, Action::SendReply);
    assert!(
        posted_answers(&fx).is_empty(),
        "a closed reply sends nothing"
    );
}

#[test]
fn an_open_reply_survives_a_reload_through_the_drafts() {
    let mut state = with_three();
    let fx = run(&mut state, replying("half written"));
    let saved = fx
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::PersistDrafts { drafts, .. } => Some(drafts.clone()),
            _ => None,
        })
        .expect("drafts persisted");
    let mut reloaded = with_three();
    act(
        &mut reloaded,
        Action::DraftsRestored {
            question_id: "q1".into(),
            drafts: saved,
        },
    );
    assert_eq!(shown(&reloaded).reply.unwrap().text, "half written");
}
