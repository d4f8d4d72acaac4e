//! Browser tests of the question composer (wasm-bindgen-test, headless Chromium):
//! a conversation is mounted over a fake host, driven with real DOM events, and
//! checked on the DOM and on the POSTs the fake host recorded.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver cargo test -p ask-user-composer --target wasm32-unknown-unknown`
#![cfg(target_arch = "wasm32")]

mod support;

use ask_user_composer::{Lang, MemoryTransport, PostError, RecordedPost};
use ask_user_core::{Answer, AnswerBatch};
use support::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> Answer {
    Answer {
        id: id.into(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom: custom.map(str::to_owned),
    }
}

fn answers(posts: &[RecordedPost]) -> Vec<(String, AnswerBatch)> {
    posts
        .iter()
        .filter_map(|p| match p {
            RecordedPost::Answer { id, batch } => Some((id.clone(), batch.clone())),
            _ => None,
        })
        .collect()
}

async fn page_with_batch(id: &str) -> Page {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested(id, 1, BATCH));
    settle().await;
    page
}

#[wasm_bindgen_test]
async fn a_requested_frame_takes_over_the_slot_and_only_the_resolved_frame_gives_it_back() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    assert!(
        page.message_box_shown(),
        "the normal composer shows while nothing is pending"
    );
    assert!(!page.composer_shown());

    host.emit(requested("t1", 1, r#"{"questions":[{"id":"go","question":"Go on?","options":[{"label":"Yes"},{"label":"No"}]}]}"#));
    settle().await;
    assert!(
        page.composer_shown(),
        "the question composer takes over the slot"
    );
    assert!(
        !page.message_box_shown(),
        "the normal composer is hidden meanwhile"
    );
    assert_eq!(
        page.q("[data-auq=slot]")
            .get_attribute("data-owner")
            .as_deref(),
        Some("question")
    );
    assert!(
        page.composer()
            .contains(active().as_ref().map(|e| e.unchecked_ref())),
        "focus moved into the slot"
    );

    click(&page.options()[0]);
    settle().await;
    click(&page.button("Submit"));
    settle().await;
    assert_eq!(
        answers(&host.posts()),
        vec![(
            "t1".to_owned(),
            AnswerBatch {
                answers: vec![answer("go", &["Yes"], None)],
                note: None,
            }
        )]
    );
    assert!(
        page.composer_shown(),
        "after the POST the slot stays until the host resolves it"
    );
    assert_eq!(
        page.composer().get_attribute("data-status").as_deref(),
        Some("sent")
    );
    assert_eq!(page.text("[data-auq=status]"), "Sending…");
    assert!(!page.message_box_shown());

    host.emit(resolved("t1", ANSWERED));
    settle().await;
    assert!(
        !page.composer_shown(),
        "the resolved frame removes the item"
    );
    assert!(
        page.message_box_shown(),
        "and only then the normal composer comes back"
    );
    assert_eq!(
        active().map(|e| e.get_attribute("data-auq")),
        Some(Some("message".to_owned())),
        "focus goes back to the message box"
    );
    assert!(
        page.try_q("[data-auq=notice]").is_none(),
        "our own answer is not 'resolved elsewhere'"
    );
}

#[wasm_bindgen_test]
async fn the_whole_batch_by_click_number_keys_and_enter_posts_the_exact_answers() {
    let page = page_with_batch("b1").await;
    assert_eq!(page.question(), "Which database?");
    assert_eq!(page.text("[data-auq=progress]"), "1 of 3");
    assert_eq!(page.text("[data-auq=chip]"), "Database");
    assert_eq!(page.text("[data-auq=detail]"), "It stores sessions.");

    // Single-select: a click records the choice and advances at once.
    click(&page.options()[1]);
    settle().await;
    assert_eq!(page.question(), "Which checks?");
    assert_eq!(page.text("[data-auq=progress]"), "2 of 3");
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("0"),
        "an item with options opens with focus on its first option"
    );

    // Multi-select: number keys toggle, Space toggles the focused option.
    assert!(press("1"), "a handled number key is default-prevented");
    assert!(press("3"));
    settle().await;
    assert_eq!(page.checked(), vec![0, 2]);
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("2"),
        "focus follows the option a number key chose"
    );
    assert!(press("ArrowUp"));
    settle().await;
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("1")
    );
    assert!(press(" "));
    settle().await;
    assert_eq!(page.checked(), vec![0, 1, 2]);
    assert!(press(" "));
    settle().await;
    assert_eq!(
        page.checked(),
        vec![0, 2],
        "Space toggles a checkbox off again"
    );
    assert_eq!(
        page.question(),
        "Which checks?",
        "multi-select never advances by itself"
    );

    // Enter with an item still open moves there instead of submitting.
    press("Enter");
    settle().await;
    assert_eq!(page.question(), "What should we call it?");
    assert!(
        host_posts(&page).is_empty(),
        "a partial batch is never posted"
    );
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-auq"))
            .as_deref(),
        Some("text")
    );
    assert_eq!(accessible_name(&page.text_box()), "Your answer");

    type_into(&page.text_box(), "Orbit ");
    settle().await;
    let focused = active().unwrap();
    assert!(
        keydown_with(&focused, "Enter", KeyOpts::default()),
        "Enter submits and is prevented"
    );
    settle().await;
    assert_eq!(
        answers(&host_posts(&page)),
        vec![(
            "b1".to_owned(),
            AnswerBatch {
                answers: vec![
                    answer("db", &["SQLite"], None),
                    answer("checks", &["Unit tests", "Load test"], None),
                    answer("name", &[], Some("Orbit")),
                ],
                note: None,
            }
        )]
    );
}

fn host_posts(page: &Page) -> Vec<RecordedPost> {
    page.host.posts()
}

#[wasm_bindgen_test]
async fn enter_during_ime_composition_never_submits_in_any_of_the_three_forms() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested(
        "ime",
        1,
        r#"{"questions":[{"id":"name","question":"Name?"}]}"#,
    ));
    settle().await;
    let text = page.text_box();
    type_into(&text, "ni hao");
    settle().await;

    // 1. isComposing on the keydown itself.
    let prevented = keydown_with(
        &text,
        "Enter",
        KeyOpts {
            is_composing: true,
            ..KeyOpts::default()
        },
    );
    assert!(!prevented, "the IME's Enter is left to the IME");
    // 2. keyCode 229 (IME processing) without isComposing.
    keydown_with(
        &text,
        "Enter",
        KeyOpts {
            key_code: 229,
            ..KeyOpts::default()
        },
    );
    // 3. The keydown right after compositionend (Safari order).
    composition(&text, "compositionstart");
    type_into(&text, "你好");
    composition(&text, "compositionend");
    keydown_with(&text, "Enter", KeyOpts::default());
    // Shift+Enter inserts a newline, never submits.
    settle().await;
    assert!(!keydown_with(
        &text,
        "Enter",
        KeyOpts {
            shift: true,
            ..KeyOpts::default()
        }
    ));
    settle().await;
    assert!(
        host.posts().is_empty(),
        "nothing was submitted while composing: {:?}",
        host.posts()
    );
    assert_eq!(
        page.composer().get_attribute("data-status").as_deref(),
        Some("editing")
    );

    // After the tick that follows compositionend, Enter submits again.
    assert!(keydown_with(&text, "Enter", KeyOpts::default()));
    settle().await;
    assert_eq!(
        answers(&host.posts()),
        vec![(
            "ime".to_owned(),
            AnswerBatch {
                answers: vec![answer("name", &[], Some("你好"))],
                note: None,
            }
        )]
    );
}

#[wasm_bindgen_test]
async fn skip_answers_only_the_current_item_and_keeps_every_other_draft() {
    let page = page_with_batch("s1").await;
    type_into(&page.text_box(), "MariaDB");
    settle().await;
    click(&page.button("Next"));
    settle().await;
    click(&page.options()[0]);
    settle().await;
    assert_eq!(page.checked(), vec![0]);

    click(&page.button("Skip"));
    settle().await;
    assert_eq!(
        page.question(),
        "What should we call it?",
        "Skip moves to the next item"
    );
    type_into(&page.text_box(), "Orbit");
    settle().await;
    click(&page.button("Skip"));
    settle().await;
    assert_eq!(
        page.question(),
        "What should we call it?",
        "on the last item Skip stays"
    );
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        ""
    );

    click(&page.button("Back"));
    settle().await;
    assert_eq!(page.question(), "Which checks?");
    assert!(
        page.checked().is_empty(),
        "the skipped item's choice is cleared"
    );
    click(&page.button("Back"));
    settle().await;
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "MariaDB",
        "the first item's draft survived the skips"
    );
    click(&page.button("Submit"));
    settle().await;
    assert_eq!(
        answers(&page.host.posts()),
        vec![(
            "s1".to_owned(),
            AnswerBatch {
                answers: vec![
                    answer("db", &[], Some("MariaDB")),
                    Answer::skipped("checks"),
                    Answer::skipped("name"),
                ],
                note: None,
            }
        )]
    );
}

#[wasm_bindgen_test]
async fn the_recommended_option_has_a_badge_but_is_never_preselected_focused_first_or_chosen_by_enter()
 {
    let page = page_with_batch("rec1").await;
    let first = &page.options()[0];
    assert_eq!(
        first.get_attribute("data-recommended").as_deref(),
        Some("true")
    );
    assert_eq!(
        page.text(".auq-option__label"),
        "Postgres",
        "the suffix is not shown"
    );
    assert_eq!(page.text("[data-auq=badge]"), "Recommended");
    assert!(page.checked().is_empty(), "nothing is pre-selected");

    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("1"),
        "the item opens focused on the first option that is not the recommended one"
    );
    // Arrow onto the recommended option, then Enter.
    press("ArrowUp");
    settle().await;
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("0")
    );
    press("Enter");
    settle().await;
    assert_eq!(
        page.question(),
        "Which checks?",
        "Enter moved on to the next open item"
    );
    click(&page.button("Back"));
    settle().await;
    assert!(
        page.checked().is_empty(),
        "Enter alone never chose the recommended option"
    );
}

#[wasm_bindgen_test]
async fn options_have_radio_or_checkbox_roles_named_by_their_label_and_buttons_are_named_exactly() {
    let page = page_with_batch("a11y").await;
    let options = page.options();
    assert!(
        options
            .iter()
            .all(|o| o.get_attribute("role").as_deref() == Some("radio"))
    );
    assert_eq!(
        accessible_name(&options[0]),
        "Postgres Recommended",
        "label first, badge after"
    );
    assert_eq!(accessible_name(&options[1]), "SQLite");
    assert_eq!(
        accessible_name(&page.q("[role=radiogroup]")),
        "Which database?"
    );
    assert_eq!(accessible_name(&page.text_box()), "Other");
    assert_eq!(page.text_box().tag_name(), "TEXTAREA");
    for name in ["Skip", "Submit", "Cancel questions", "Back", "Next"] {
        page.button(name);
    }
    assert_eq!(
        (
            options[0].tab_index(),
            options[1].tab_index(),
            options[2].tab_index()
        ),
        (-1, 0, -1),
        "one tab stop: the first option that is not the recommended one"
    );

    click(&page.button("Next"));
    settle().await;
    let options = page.options();
    assert!(
        options
            .iter()
            .all(|o| o.get_attribute("role").as_deref() == Some("checkbox"))
    );
    assert_eq!(accessible_name(&page.q("[role=group]")), "Which checks?");
    assert_eq!(
        options[2].get_attribute("aria-checked").as_deref(),
        Some("false")
    );
}

#[wasm_bindgen_test]
async fn cancel_questions_posts_a_cancel_for_the_whole_request() {
    let page = page_with_batch("c1").await;
    type_into(&page.text_box(), "something");
    settle().await;
    click(&page.button("Cancel questions"));
    settle().await;
    assert_eq!(
        page.host.posts(),
        vec![RecordedPost::Cancel { id: "c1".into() }]
    );
    assert_eq!(page.text("[data-auq=status]"), "Cancelling…");
    assert!(
        page.composer_shown(),
        "the slot waits for the resolved frame"
    );
    page.host.emit(resolved("c1", CANCELLED));
    settle().await;
    assert!(page.message_box_shown());
}

#[wasm_bindgen_test]
async fn a_failed_post_shows_a_readable_error_and_keeps_everything_typed() {
    let page = page_with_batch("f1").await;
    page.host.reply_next(Err(PostError {
        status: Some(422),
        code: Some("BAD_ANSWER".into()),
        message: "answers[0].selected: \"Oracle\" is not one of the question's options".into(),
    }));
    type_into(&page.text_box(), "MariaDB");
    settle().await;
    click(&page.button("Next"));
    settle().await;
    click(&page.button("Skip"));
    settle().await;
    click(&page.button("Skip"));
    settle().await;
    click(&page.button("Submit"));
    settle().await;
    assert_eq!(answers(&page.host.posts()).len(), 1);
    let error = page.q("[data-auq=error]");
    assert_eq!(error.get_attribute("role").as_deref(), Some("alert"));
    assert!(
        page.text("[data-auq=error]")
            .contains("is not one of the question's options"),
        "{}",
        page.text("[data-auq=error]")
    );
    assert_eq!(
        page.composer().get_attribute("data-status").as_deref(),
        Some("failed")
    );
    click(&page.button("Back"));
    click(&page.button("Back"));
    settle().await;
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "MariaDB"
    );

    // Retrying works.
    click(&page.button("Submit"));
    settle().await;
    assert_eq!(answers(&page.host.posts()).len(), 2);
    assert!(page.try_q("[data-auq=error]").is_none());
}

#[wasm_bindgen_test]
async fn a_409_not_pending_removes_the_request_and_says_so() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested(
        "n1",
        1,
        r#"{"questions":[{"id":"go","question":"Go on?","options":[{"label":"Yes"}]}]}"#,
    ));
    settle().await;
    host.reply_next(Err(PostError {
        status: Some(409),
        code: Some("NOT_PENDING".into()),
        message: "question n1 is not pending".into(),
    }));
    click(&page.options()[0]);
    click(&page.button("Submit"));
    settle().await;
    assert!(!page.composer_shown(), "the request is gone");
    assert!(page.message_box_shown());
    assert_eq!(
        page.text("[data-auq=notice] span"),
        "This request was already resolved elsewhere."
    );
    click(&page.button("Dismiss"));
    settle().await;
    assert!(page.try_q("[data-auq=notice]").is_none());
}

#[wasm_bindgen_test]
async fn a_resolved_frame_from_another_tab_removes_the_item_at_once_and_says_so() {
    let page = page_with_batch("o1").await;
    page.host.emit(resolved("o1", ANSWERED));
    settle().await;
    assert!(!page.composer_shown());
    assert_eq!(
        page.text("[data-auq=notice] span"),
        "This request was answered elsewhere."
    );
    assert!(page.host.posts().is_empty());
}

#[wasm_bindgen_test]
async fn replays_never_duplicate_and_session_synced_drops_what_was_resolved_meanwhile() {
    let page = page_with_batch("r1").await;
    page.host.emit(requested(
        "r2",
        2,
        r#"{"questions":[{"id":"x","question":"Second?"}]}"#,
    ));
    settle().await;
    assert_eq!(page.text("[data-auq=waiting]"), "1 more request waiting");
    type_into(&page.text_box(), "draft");
    settle().await;

    // A reopen replays both: nothing doubles and the draft stays.
    page.host.emit(requested("r1", 1, BATCH));
    page.host.emit(requested(
        "r2",
        2,
        r#"{"questions":[{"id":"x","question":"Second?"}]}"#,
    ));
    settle().await;
    assert_eq!(page.text("[data-auq=waiting]"), "1 more request waiting");
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "draft"
    );

    // r1 was resolved while disconnected: the sync drops it, r2 shows.
    page.host.emit(synced(&["r2"]));
    settle().await;
    assert_eq!(page.question(), "Second?");
    assert!(page.try_q("[data-auq=waiting]").is_none());
}

#[wasm_bindgen_test]
async fn drafts_survive_a_reload_through_session_storage() {
    clear_session_storage();
    let host = MemoryTransport::new();
    host.set_replay(vec![requested("d1", 1, BATCH)]);
    {
        let page = mount(&host);
        settle().await;
        click(&page.options()[2]);
        settle().await;
        press("2");
        settle().await;
        click(&page.button("Next"));
        settle().await;
        type_into(&page.text_box(), "Orbit");
        settle().await;
    } // unmount = the tab goes away

    let reloaded = mount(&host);
    settle().await;
    assert_eq!(
        reloaded.question(),
        "What should we call it?",
        "the same item is shown"
    );
    assert_eq!(
        reloaded
            .text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "Orbit"
    );
    click(&reloaded.button("Back"));
    settle().await;
    assert_eq!(reloaded.checked(), vec![1]);
    click(&reloaded.button("Submit"));
    settle().await;
    assert_eq!(
        answers(&host.posts()),
        vec![(
            "d1".to_owned(),
            AnswerBatch {
                answers: vec![
                    answer("db", &["DynamoDB"], None),
                    answer("checks", &["Browser tests"], None),
                    answer("name", &[], Some("Orbit")),
                ],
                note: None,
            }
        )]
    );
    host.emit(resolved("d1", ANSWERED));
    settle().await;
    assert!(
        window()
            .session_storage()
            .unwrap()
            .unwrap()
            .get_item("ask-user:drafts:d1")
            .unwrap()
            .is_none(),
        "a resolved request's drafts are removed"
    );
}

#[wasm_bindgen_test]
async fn a_hidden_tab_closes_its_stream_and_reopens_it_when_visible_without_losing_drafts() {
    clear_session_storage();
    let host = MemoryTransport::new();
    host.set_replay(vec![requested("v1", 1, BATCH)]);
    let page = mount(&host);
    settle().await;
    assert_eq!((host.opens(), host.open_streams()), (1, 1));
    type_into(&page.text_box(), "typed before hiding");
    settle().await;

    set_hidden(true);
    settle().await;
    assert_eq!(host.open_streams(), 0, "a hidden tab holds no connection");

    set_hidden(false);
    settle().await;
    assert_eq!(
        (host.opens(), host.open_streams()),
        (2, 1),
        "visible again: one new stream"
    );
    assert_eq!(page.all("[data-auq=question-composer]").len(), 1);
    assert!(
        page.try_q("[data-auq=waiting]").is_none(),
        "the replay did not duplicate the request"
    );
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "typed before hiding"
    );
}

#[wasm_bindgen_test]
async fn collapsing_folds_the_card_to_its_strip_and_expanding_restores_every_draft() {
    let page = page_with_batch("col1").await;
    type_into(&page.text_box(), "kept");
    settle().await;
    let toggle = page.q("[data-auq=collapse]");
    assert_eq!(accessible_name(&toggle), "Collapse questions");
    assert_eq!(
        toggle.get_attribute("aria-expanded").as_deref(),
        Some("true")
    );
    click(&toggle);
    settle().await;
    assert!(page.options().is_empty(), "collapsed to the header strip");
    assert!(page.composer_shown(), "collapsing is not a cancel");
    assert_eq!(page.text("[data-auq=chip]"), "Database");
    assert!(page.host.posts().is_empty());
    let toggle = page.q("[data-auq=collapse]");
    assert_eq!(accessible_name(&toggle), "Expand questions");
    click(&toggle);
    settle().await;
    assert_eq!(
        page.text_box()
            .dyn_into::<web_sys::HtmlTextAreaElement>()
            .unwrap()
            .value(),
        "kept"
    );
}

const PLAN: &str = r##"{"questions":[{"id":"plan","question":"Approve the plan?",
  "detail":"# Steps\n\n1. Add **tests**\n2. Ship\n\n<script>window.pwned = 1</script><img src=x onerror=\"window.pwned=2\">\n\n[bad](javascript:alert(1))",
  "intent":{"kind":"plan-review","approve":"Go ahead (Recommended)"},
  "options":[{"label":"Go ahead (Recommended)"},{"label":"Not yet"}]}]}"##;

#[wasm_bindgen_test]
async fn plan_review_renders_sanitised_markdown_and_approve_posts_the_approve_label() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested("p1", 1, PLAN));
    settle().await;
    assert_eq!(page.text("[data-auq=chip]"), "Plan review");
    let plan = page.q("[data-auq=plan]");
    assert_eq!(page.text("[data-auq=plan] h3"), "Steps");
    assert_eq!(page.all("[data-auq=plan] ol li").len(), 2);
    assert_eq!(page.text("[data-auq=plan] strong"), "tests");
    assert!(
        plan.query_selector("script, img, [onerror]")
            .unwrap()
            .is_none(),
        "raw HTML is never injected"
    );
    assert!(
        plan.text_content().unwrap().contains("<script>"),
        "it is shown as text"
    );
    assert!(
        plan.query_selector("a").unwrap().is_none(),
        "javascript: links are dropped"
    );
    assert!(
        js_sys::Reflect::get(&window(), &"pwned".into())
            .unwrap()
            .is_undefined()
    );
    assert!(page.options().is_empty(), "a review panel, not the quiz");
    assert!(
        page.button("Go ahead")
            .class_list()
            .contains("auq-btn--primary"),
        "approve is the primary action"
    );
    page.button("Not yet");

    click(&page.button("Go ahead"));
    settle().await;
    assert_eq!(
        answers(&host.posts()),
        vec![(
            "p1".to_owned(),
            AnswerBatch {
                answers: vec![answer("plan", &["Go ahead (Recommended)"], None)],
                note: None,
            }
        )]
    );
}

#[wasm_bindgen_test]
async fn chat_about_it_cancels_the_plan_review_so_the_message_box_returns() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested("p2", 1, PLAN));
    settle().await;
    click(&page.button("Chat about it"));
    settle().await;
    assert_eq!(host.posts(), vec![RecordedPost::Cancel { id: "p2".into() }]);
    host.emit(resolved("p2", CANCELLED));
    settle().await;
    assert!(page.message_box_shown());
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-auq"))
            .as_deref(),
        Some("message")
    );
}

#[wasm_bindgen_test]
async fn the_live_region_announces_a_newly_arrived_question() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    let live = page.q("[data-auq=live]");
    assert_eq!(live.get_attribute("aria-live").as_deref(), Some("polite"));
    assert!(
        live.closest("[hidden]").unwrap().is_none(),
        "the live region is never inside hidden content"
    );
    host.emit(requested("l1", 1, BATCH));
    settle().await;
    assert_eq!(
        page.text("[data-auq=live]"),
        "New question: Which database?"
    );

    // The same message twice still changes the region, so it is read again.
    press("Enter");
    settle().await;
    let first = live.text_content().unwrap();
    assert_eq!(first.trim(), "3 questions still need an answer or Skip.");
    press("Enter");
    settle().await;
    let second = live.text_content().unwrap();
    assert_eq!(
        second.trim_end_matches('\u{a0}'),
        first.trim_end_matches('\u{a0}')
    );
    assert_ne!(second, first, "the region's content changed");
}

#[wasm_bindgen_test]
async fn the_message_box_sends_on_enter_but_not_during_composition_or_with_shift() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    let input = page.q("[data-auq=message]");
    assert_eq!(accessible_name(&input), "Message");
    type_into(&input, "hello");
    keydown_with(
        &input,
        "Enter",
        KeyOpts {
            is_composing: true,
            ..KeyOpts::default()
        },
    );
    keydown_with(
        &input,
        "Enter",
        KeyOpts {
            key_code: 229,
            ..KeyOpts::default()
        },
    );
    keydown_with(
        &input,
        "Enter",
        KeyOpts {
            shift: true,
            ..KeyOpts::default()
        },
    );
    settle().await;
    assert!(host.posts().is_empty());
    assert!(keydown_with(&input, "Enter", KeyOpts::default()));
    settle().await;
    assert_eq!(
        host.posts(),
        vec![RecordedPost::Message {
            text: "hello".into()
        }]
    );
    type_into(&input, "again");
    click(&page.button("Send"));
    settle().await;
    assert_eq!(host.posts().len(), 2);

    host.emit(ask_user_core::wire::SessionEvent::MessageCreated(
        ask_user_core::wire::MessageCreated {
            id: "m1".into(),
            role: ask_user_core::wire::Role::Agent,
            text: "Hi <b>there</b>".into(),
            at_ms: 0,
            by: None,
        },
    ));
    settle().await;
    assert_eq!(
        page.text("[data-auq=message-item][data-role=agent]"),
        "Hi <b>there</b>",
        "shown as sent"
    );
}

#[wasm_bindgen_test]
async fn the_interface_speaks_chinese_when_asked_and_keeps_the_agents_text() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount_in(&host, Lang::Zh);
    settle().await;
    host.emit(requested("zh1", 1, BATCH));
    settle().await;
    for name in ["跳过", "提交", "取消提问", "上一题", "下一题"] {
        page.button(name);
    }
    assert_eq!(page.text("[data-auq=progress]"), "第 1 题，共 3 题");
    assert_eq!(page.text("[data-auq=badge]"), "推荐");
    assert_eq!(
        page.question(),
        "Which database?",
        "the agent's text is shown as sent"
    );
}

#[wasm_bindgen_test]
async fn enter_on_a_footer_button_is_left_to_the_button_and_never_submits_the_batch() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested(
        "btn1",
        1,
        r#"{"questions":[{"id":"go","question":"Go on?","options":[{"label":"Yes"},{"label":"No"}]}]}"#,
    ));
    settle().await;
    click(&page.options()[0]);
    settle().await;
    let cancel = page.button("Cancel questions");
    cancel.focus().unwrap();
    let prevented = keydown_with(&cancel, "Enter", KeyOpts::default());
    settle().await;
    assert!(
        !prevented,
        "the browser's own activation of the focused button stays"
    );
    assert!(
        host.posts().is_empty(),
        "a complete batch is not submitted by Enter on another button: {:?}",
        host.posts()
    );
}

#[wasm_bindgen_test]
async fn a_request_beyond_what_the_page_holds_is_announced_and_shown_as_a_notice() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    let limit = ask_user_core::limits::MAX_PENDING_PER_SESSION;
    for i in 0..=limit {
        host.emit(requested(
            &format!("r{i}"),
            i as u64,
            r#"{"questions":[{"id":"x","question":"Held?"}]}"#,
        ));
    }
    settle().await;
    let says = format!("this page holds at most {limit} waiting requests");
    assert!(
        page.text("[data-auq=notice] span").contains(&says),
        "{}",
        page.text("[data-auq=notice] span")
    );
    assert!(page.text("[data-auq=live]").contains(&says));
    assert_eq!(
        page.text("[data-auq=waiting]"),
        format!("{} more requests waiting", limit - 1),
        "what it holds is still shown"
    );
}

#[wasm_bindgen_test]
async fn an_event_stream_that_cannot_be_created_says_disconnected_instead_of_connecting_forever() {
    let root = container();
    let handle = leptos::mount::mount_to(root.clone(), || {
        ask_user_composer::conversation_view(ask_user_composer::MountOptions {
            base_url: "http://[".into(),
            session: ask_user_core::SessionId::default(),
            token: None,
        })
    });
    settle().await;
    let connection = root
        .query_selector("[data-auq=connection]")
        .unwrap()
        .expect("a connection line");
    assert_eq!(
        connection.text_content().unwrap_or_default(),
        "Disconnected from the host. Reload the page to reconnect."
    );
    drop(handle);
    root.remove();
}

/// A `message/created` frame, from JSON (so new fields of the frame do not
/// break the test).
fn message(id: &str, role: &str, text: &str) -> ask_user_core::wire::SessionEvent {
    let json = serde_json::json!({"id": id, "role": role, "text": text}).to_string();
    ask_user_core::wire::SessionEvent::parse(ask_user_core::wire::MESSAGE_CREATED, &json)
        .expect("a valid message frame")
}

#[wasm_bindgen_test]
async fn agent_messages_render_as_sanitised_markdown_and_a_script_in_one_never_runs() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(message(
        "m1",
        "agent",
        "## Plan\n\nUse **Postgres** and `sqlx`.\n\n<script>window.auqMessagePwned = 1</script>\
         <img src=x onerror=\"window.auqMessagePwned = 2\">",
    ));
    host.emit(message("m2", "user", "**not bold** <b>as typed</b>"));
    settle().await;
    let agent = page.q("[data-auq=message-item][data-id=m1]");
    let find = |selector: &str| agent.query_selector(selector).unwrap();
    assert_eq!(
        find("h4").and_then(|h| h.text_content()).as_deref(),
        Some("Plan"),
        "## becomes a heading: {}",
        agent.inner_html()
    );
    assert_eq!(
        find("strong").and_then(|s| s.text_content()).as_deref(),
        Some("Postgres")
    );
    assert_eq!(
        find("code").and_then(|s| s.text_content()).as_deref(),
        Some("sqlx")
    );
    assert!(
        find("script, img, [onerror]").is_none(),
        "raw HTML is never injected: {}",
        agent.inner_html()
    );
    assert!(agent.text_content().unwrap().contains("<script>"));
    assert!(
        js_sys::Reflect::get(&window(), &"auqMessagePwned".into())
            .unwrap()
            .is_undefined(),
        "the script did not run"
    );
    let person = page.q("[data-auq=message-item][data-id=m2]");
    assert!(
        person.query_selector("*").unwrap().is_none(),
        "a person's message is plain text: {}",
        person.inner_html()
    );
    assert_eq!(
        person.text_content().unwrap(),
        "**not bold** <b>as typed</b>"
    );
}

#[wasm_bindgen_test]
async fn a_questions_detail_renders_as_markdown_in_the_ordinary_flow() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let page = mount(&host);
    settle().await;
    host.emit(requested(
        "d1",
        1,
        r###"{"questions":[{"id":"go","question":"Ship it?","detail":"## Plan\n\n- **bold** step\n- <script>window.auqDetailPwned=1</script>","options":[{"label":"Yes"},{"label":"No"}]}]}"###,
    ));
    settle().await;
    assert_eq!(page.text("[data-auq=detail] h4"), "Plan");
    assert_eq!(page.all("[data-auq=detail] li").len(), 2);
    assert_eq!(page.text("[data-auq=detail] strong"), "bold");
    assert!(page.try_q("[data-auq=detail] script").is_none());
    assert!(
        js_sys::Reflect::get(&window(), &"auqDetailPwned".into())
            .unwrap()
            .is_undefined()
    );
}

#[wasm_bindgen_test]
async fn reply_instead_sends_the_answers_so_far_and_the_message_and_enter_in_it_never_submits_the_batch()
 {
    let page = page_with_batch("r1").await;
    click(&page.options()[1]); // SQLite, moves to item 2
    settle().await;
    click(&page.button("Reply instead"));
    settle().await;
    let reply = page.q("[data-auq=reply]");
    assert_eq!(
        active().map(|e| e.get_attribute("data-auq")),
        Some(Some("reply".to_owned())),
        "focus moves into the reply box"
    );
    assert_eq!(accessible_name(&reply), "Your reply");
    type_into(&reply, "Let us talk first.");
    settle().await;
    // The batch's keys (Enter submits, digits choose) never see the reply's.
    let bubbled = std::rc::Rc::new(std::cell::Cell::new(0));
    let count_bubbled = {
        let bubbled = bubbled.clone();
        wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || bubbled.set(bubbled.get() + 1))
    };
    let panel = page.q("[data-auq=reply-box]").parent_element().unwrap();
    panel
        .add_event_listener_with_callback("keydown", count_bubbled.as_ref().unchecked_ref())
        .unwrap();
    assert!(
        !keydown_with(
            &reply,
            "Enter",
            KeyOpts {
                shift: true,
                ..KeyOpts::default()
            }
        ),
        "Shift+Enter is a newline"
    );
    assert!(
        !keydown_with(
            &reply,
            "Enter",
            KeyOpts {
                is_composing: true,
                ..KeyOpts::default()
            }
        ),
        "Enter while composing confirms the candidate"
    );
    settle().await;
    assert!(host_posts(&page).is_empty(), "{:?}", host_posts(&page));
    assert!(keydown_with(&reply, "Enter", KeyOpts::default()));
    settle().await;
    assert_eq!(bubbled.get(), 0, "a keydown left the reply box");
    panel
        .remove_event_listener_with_callback("keydown", count_bubbled.as_ref().unchecked_ref())
        .unwrap();
    let posted: Vec<serde_json::Value> = answers(&page.host.posts())
        .iter()
        .map(|(id, batch)| serde_json::json!({"id": id, "batch": batch}))
        .collect();
    assert_eq!(
        posted,
        vec![serde_json::json!({"id": "r1", "batch": {"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "checks", "selected": []},
            {"id": "name", "selected": []}
        ], "note": "Let us talk first."}})]
    );
}

/// Lets pending microtasks run (renders, effects) but no timer: what the
/// browser finishes before it takes the next key from the queue.
async fn before_the_next_task() {
    for _ in 0..8 {
        wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(
            &wasm_bindgen::JsValue::NULL,
        ))
        .await
        .unwrap();
    }
}

fn caret(element: &web_sys::HtmlElement) -> (u32, u32) {
    let area: &web_sys::HtmlTextAreaElement = element.dyn_ref().expect("a textarea");
    (
        area.selection_start().unwrap().unwrap(),
        area.selection_end().unwrap().unwrap(),
    )
}

#[wasm_bindgen_test]
async fn focus_reaches_the_next_question_before_the_browser_takes_the_next_key() {
    let page = page_with_batch("k1").await;
    click(&page.options()[1]);
    before_the_next_task().await;
    assert_eq!(page.question(), "Which checks?");
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-option-index"))
            .as_deref(),
        Some("0"),
        "a key typed right after the click lands on the new question's first option"
    );
    press("1");
    press("Enter");
    before_the_next_task().await;
    assert_eq!(page.question(), "What should we call it?");
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-auq"))
            .as_deref(),
        Some("text"),
        "a key typed right after Enter lands in the free-text box, not on the option it left"
    );
}

#[wasm_bindgen_test]
async fn a_restored_draft_puts_the_caret_at_its_end_and_a_caret_the_person_moved_is_kept() {
    clear_session_storage();
    let host = MemoryTransport::new();
    host.set_replay(vec![requested("c1", 1, BATCH)]);
    {
        let page = mount(&host);
        settle().await;
        click(&page.options()[0]);
        settle().await;
        press("1");
        click(&page.button("Next"));
        settle().await;
        type_into(&page.text_box(), "Orbit");
        settle().await;
    } // a reload

    let page = mount(&host);
    settle().await;
    assert_eq!(page.question(), "What should we call it?");
    page.text_box().focus().unwrap();
    assert_eq!(
        caret(&page.text_box()),
        (5, 5),
        "after a reload the caret follows the restored draft"
    );

    // Back and Next render the box anew: the caret is at the draft's end.
    let back = page.button("Back");
    back.focus().unwrap();
    click(&back);
    settle().await;
    click(&page.button("Next"));
    settle().await;
    assert_eq!(
        active()
            .and_then(|e| e.get_attribute("data-auq"))
            .as_deref(),
        Some("text")
    );
    assert_eq!(
        caret(&page.text_box()),
        (5, 5),
        "at the end, not before the draft"
    );

    // The person puts the caret after "Or" and leaves: it comes back there.
    let area: web_sys::HtmlTextAreaElement = page.text_box().dyn_into().unwrap();
    area.set_selection_range(2, 2).unwrap();
    let back = page.button("Back");
    back.focus().unwrap();
    click(&back);
    settle().await;
    click(&page.button("Next"));
    settle().await;
    assert_eq!(
        caret(&page.text_box()),
        (2, 2),
        "the person's own caret is kept"
    );
}
