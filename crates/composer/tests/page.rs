//! Browser tests of what the page adds around the conversation: the tab's
//! attention signals (title, favicon badge, notifications, sound), the
//! session list and the one inbox stream shared by every tab. A binary of its
//! own: they read and write the document's title, icon, address and
//! `window.Notification`, which the composer's other tests never touch.
#![cfg(target_arch = "wasm32")]

mod support;

use ask_user_composer::{
    InboxTransport, MemoryTransport, PageHost, Transport, page, page_view_with,
};
use ask_user_core::SessionId;
use leptos::mount::mount_to;
use std::rc::Rc;
use support::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const DB: &str = r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}"#;
const NAME: &str = r#"{"questions":[{"id":"name","question":"What should we call it?"}]}"#;

fn favicon() -> String {
    document()
        .query_selector("link[rel~=icon]")
        .unwrap()
        .and_then(|l| l.get_attribute("href"))
        .unwrap_or_default()
}

/// The favicon's SVG, decoded from its data URL.
fn favicon_svg() -> String {
    let href = favicon();
    let body = href
        .strip_prefix("data:image/svg+xml,")
        .unwrap_or_else(|| panic!("the favicon is a drawn SVG, not {href:?}"));
    js_sys::decode_uri_component(body).unwrap().into()
}

#[wasm_bindgen_test]
async fn the_title_and_favicon_badge_count_waiting_questions_and_return_to_normal() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let root = container();
    let transport = Transport::new(host.clone());
    let handle = mount_to(root.clone(), move || page_view_with(transport));
    settle().await;
    assert_eq!(document().title(), "ask-user");
    assert!(
        !favicon_svg().contains("<circle"),
        "no badge while nothing waits"
    );

    host.emit(requested("q1", 1, DB));
    settle().await;
    assert_eq!(document().title(), "(1) Which database? · ask-user");
    assert!(favicon_svg().contains(">1</text>"), "{}", favicon_svg());

    host.emit(requested("q2", 2, NAME));
    settle().await;
    assert_eq!(
        document().title(),
        "(2) Which database? · ask-user",
        "the oldest question names the tab"
    );
    assert!(favicon_svg().contains(">2</text>"), "{}", favicon_svg());

    host.emit(resolved("q1", ANSWERED));
    settle().await;
    assert_eq!(document().title(), "(1) What should we call it? · ask-user");

    host.emit(resolved("q2", CANCELLED));
    settle().await;
    assert_eq!(document().title(), "ask-user");
    assert!(!favicon_svg().contains("<circle"), "{}", favicon_svg());
    drop(handle);
    root.remove();
}

fn sessions(entries: &[(&str, u32, Option<&str>)]) -> ask_user_core::wire::SessionList {
    let sessions: Vec<serde_json::Value> = entries
        .iter()
        .map(|(id, pending, question)| {
            serde_json::json!({"id": id, "pending": pending, "last_activity_ms": 1,
                "asked_by": {"kind": "mcp", "name": "Claude Code"}, "first_question": question})
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "sessions": sessions })).unwrap()
}

/// A page over memory hosts: one per session, and the inbox (`lock` names
/// the Web Lock and channel, so tests never share one).
fn page_over(
    hosts: &[(&str, MemoryTransport)],
    inbox: &MemoryTransport,
    lock: &str,
) -> (web_sys::HtmlElement, Box<dyn std::any::Any>) {
    let root = container();
    let hosts: Vec<(String, MemoryTransport)> = hosts
        .iter()
        .map(|(s, h)| (s.to_string(), h.clone()))
        .collect();
    let inbox: Rc<dyn InboxTransport> = Rc::new(inbox.clone());
    let lock = lock.to_owned();
    let handle = mount_to(root.clone(), move || {
        let hosts = hosts.clone();
        page(PageHost {
            session: SessionId::default(),
            transport_for: Rc::new(move |session: &SessionId| {
                let host = hosts
                    .iter()
                    .find(|(s, _)| s == session.as_str())
                    .map(|(_, h)| h.clone())
                    .unwrap_or_default();
                Transport::new(host)
            }),
            inbox: Some((Rc::clone(&inbox), lock.clone())),
        })
    });
    (root, Box::new(handle))
}

/// Waits (boundedly) until `inbox` has `streams` open inbox streams: the Web
/// Lock that picks the streaming tab is granted asynchronously, later on a
/// busy machine than a few zero-delay timeouts.
async fn inbox_streams_become(inbox: &MemoryTransport, streams: usize, what: &str) {
    for _ in 0..500 {
        if inbox.inbox_streams() == streams {
            return;
        }
        settle().await;
    }
    panic!(
        "{what}: {} inbox streams open, expected {streams}",
        inbox.inbox_streams()
    );
}

/// Replaces `window.Notification` with a recorder: `window.__notes` lists
/// `[title, body, tag]` of each one created.
fn stub_notifications(permission: &str) {
    let script = format!(
        "window.__notes = [];
         window.Notification = class {{
           constructor(title, options) {{ window.__notes.push([title, options.body, options.tag]); this.onclick = null; window.__lastNote = this; }}
           close() {{}}
           static get permission() {{ return '{permission}'; }}
           static requestPermission() {{ return Promise.resolve('{permission}'); }}
         }};"
    );
    js_sys::eval(&script).unwrap();
}

/// Takes `?session=` out of the address again, so the next test starts on
/// the default session.
fn forget_the_session_in_the_address() {
    let _ = window().history().unwrap().replace_state_with_url(
        &wasm_bindgen::JsValue::NULL,
        "",
        Some(&window().location().pathname().unwrap()),
    );
}

fn notes() -> Vec<Vec<String>> {
    let notes = js_sys::eval("JSON.stringify(window.__notes || [])").unwrap();
    serde_json::from_str(&notes.as_string().unwrap()).unwrap()
}

#[wasm_bindgen_test]
async fn the_signals_count_every_session_of_the_inbox_and_the_list_shows_each_sessions_count() {
    clear_session_storage();
    let (default, other, inbox) = (
        MemoryTransport::new(),
        MemoryTransport::new(),
        MemoryTransport::new(),
    );
    let (root, handle) = page_over(
        &[("default", default.clone()), ("other", other.clone())],
        &inbox,
        "auq-test-count",
    );
    inbox_streams_become(&inbox, 1, "the page opens the inbox stream").await;
    assert_eq!(document().title(), "ask-user");
    inbox.emit_inbox(sessions(&[
        ("other", 2, Some("Deploy now?")),
        ("default", 0, None),
    ]));
    settle().await;
    assert_eq!(
        document().title(),
        "(2) Deploy now? · ask-user",
        "a question in another session names the tab"
    );
    let badge = root
        .query_selector("[data-auq=inbox-session][data-session=other] [data-auq=inbox-badge]")
        .unwrap()
        .expect("the other session shows its count");
    assert!(badge.text_content().unwrap().contains('2'));

    default.emit(requested("q1", 1, DB));
    inbox.emit_inbox(sessions(&[
        ("other", 2, Some("Deploy now?")),
        ("default", 1, Some("Which database?")),
    ]));
    settle().await;
    assert_eq!(
        document().title(),
        "(3) Which database? · ask-user",
        "the shown session's question names the tab; the count is every session's"
    );
    assert!(favicon_svg().contains(">3</text>"));
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn switching_sessions_shows_the_other_conversation_and_keeps_the_drafts_of_the_first() {
    clear_session_storage();
    let (default, other, inbox) = (
        MemoryTransport::new(),
        MemoryTransport::new(),
        MemoryTransport::new(),
    );
    default.set_replay(vec![requested("q1", 1, NAME)]);
    other.set_replay(vec![requested("q2", 2, DB)]);
    inbox.set_sessions(sessions(&[
        ("default", 1, Some("What should we call it?")),
        ("other", 1, Some("Which database?")),
    ]));
    let (root, handle) = page_over(
        &[("default", default.clone()), ("other", other.clone())],
        &inbox,
        "auq-test-switch",
    );
    settle().await;
    let text: web_sys::HtmlElement = root
        .query_selector("[data-auq=text]")
        .unwrap()
        .unwrap()
        .dyn_into()
        .unwrap();
    type_into(&text, "Falcon");
    settle().await;

    let switch_to = |session: &str| {
        let button: web_sys::HtmlElement = root
            .query_selector(&format!("[data-auq=inbox-session][data-session={session}]"))
            .unwrap()
            .unwrap_or_else(|| panic!("a button for {session}: {}", root.inner_html()))
            .dyn_into()
            .unwrap();
        button.click();
    };
    switch_to("other");
    settle().await;
    assert_eq!(
        root.query_selector(".auq-question")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap(),
        "Which database?"
    );
    assert!(
        window()
            .location()
            .search()
            .unwrap()
            .contains("session=other"),
        "the address names the shown session"
    );
    assert_eq!(
        default.open_streams(),
        0,
        "the first session's stream closed"
    );

    switch_to("default");
    settle().await;
    let text: web_sys::HtmlTextAreaElement = root
        .query_selector("[data-auq=text]")
        .unwrap()
        .unwrap()
        .dyn_into()
        .unwrap();
    assert_eq!(text.value(), "Falcon", "the draft came back");
    forget_the_session_in_the_address();
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn one_tab_holds_the_inbox_stream_the_others_hear_it_on_the_channel_and_take_over_when_it_closes()
 {
    let inbox = MemoryTransport::new();
    let (first_root, first) = page_over(&[], &inbox, "auq-test-handover");
    settle().await;
    let (second_root, second) = page_over(&[], &inbox, "auq-test-handover");
    inbox_streams_become(&inbox, 1, "the first tab opens the inbox stream").await;
    settle().await;
    assert_eq!(inbox.inbox_streams(), 1, "one stream for both tabs");
    inbox.emit_inbox(sessions(&[("elsewhere", 1, Some("Ship?"))]));
    settle().await;
    for root in [&first_root, &second_root] {
        assert!(
            root.query_selector("[data-auq=inbox-session][data-session=elsewhere]")
                .unwrap()
                .is_some(),
            "every tab hears the list: {}",
            root.inner_html()
        );
    }
    drop(first);
    first_root.remove();
    settle().await;
    inbox_streams_become(&inbox, 1, "the second tab took the stream over").await;
    inbox.emit_inbox(sessions(&[("elsewhere", 2, Some("Ship?"))]));
    settle().await;
    assert_eq!(
        second_root
            .query_selector("[data-session=elsewhere]")
            .unwrap()
            .unwrap()
            .get_attribute("data-pending")
            .as_deref(),
        Some("2")
    );
    drop(second);
    second_root.remove();
    settle().await;
    assert_eq!(inbox.inbox_streams(), 0);
}

#[wasm_bindgen_test]
async fn a_notification_names_who_asks_and_the_question_only_while_hidden_and_only_for_new_batches()
{
    stub_notifications("granted");
    let inbox = MemoryTransport::new();
    inbox.set_sessions(sessions(&[("a", 1, Some("Old?"))]));
    let (root, handle) = page_over(&[], &inbox, "auq-test-notify");
    inbox_streams_become(&inbox, 1, "the page opens the inbox stream").await;
    assert!(notes().is_empty(), "nothing for what already waited");

    inbox.emit_inbox(sessions(&[("a", 2, Some("Old?"))]));
    settle().await;
    assert!(notes().is_empty(), "nothing while the page is visible");

    set_hidden(true);
    inbox.emit_inbox(sessions(&[
        ("a", 2, Some("Old?")),
        ("b", 1, Some("Which database?")),
    ]));
    settle().await;
    assert_eq!(
        notes(),
        vec![vec![
            "Claude Code asks".to_owned(),
            "Which database?".to_owned(),
            "ask-user:b".to_owned()
        ]]
    );
    inbox.emit_inbox(sessions(&[("a", 2, Some("Old?")), ("b", 0, None)]));
    settle().await;
    assert_eq!(notes().len(), 1, "nothing for a resolved batch");

    // A click shows that session.
    js_sys::eval("window.__lastNote.onclick()").unwrap();
    settle().await;
    assert_eq!(
        root.query_selector("[data-auq=session]")
            .unwrap()
            .unwrap()
            .text_content()
            .as_deref(),
        Some("b")
    );
    set_hidden(false);
    forget_the_session_in_the_address();
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn notify_me_asks_only_when_clicked_and_a_refusal_says_how_to_change_it() {
    stub_notifications("default");
    js_sys::eval(
        "window.__asked = 0; window.Notification.requestPermission = () => { window.__asked += 1; \
         window.Notification = Object.assign(window.Notification, {}); \
         Object.defineProperty(window.Notification, 'permission', { get: () => 'denied' }); \
         return Promise.resolve('denied'); };",
    )
    .unwrap();
    let inbox = MemoryTransport::new();
    let (root, handle) = page_over(&[], &inbox, "auq-test-ask");
    settle().await;
    let asked = || js_sys::eval("window.__asked").unwrap().as_f64().unwrap();
    assert_eq!(asked(), 0.0, "never asked on load");
    let button: web_sys::HtmlElement = root
        .query_selector("[data-auq=notify]")
        .unwrap()
        .expect("a Notify me control")
        .dyn_into()
        .unwrap();
    assert_eq!(button.text_content().unwrap(), "Notify me");
    button.click();
    settle().await;
    assert_eq!(asked(), 1.0);
    let state = root
        .query_selector("[data-auq=notify-state]")
        .unwrap()
        .expect("the refusal is shown");
    assert!(
        state.text_content().unwrap().contains("site settings"),
        "{}",
        root.inner_html()
    );
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn the_arrival_sound_is_off_by_default_and_its_toggle_is_remembered() {
    window().local_storage().unwrap().unwrap().clear().unwrap();
    let inbox = MemoryTransport::new();
    let (root, handle) = page_over(&[], &inbox, "auq-test-sound");
    settle().await;
    let sound: web_sys::HtmlElement = root
        .query_selector("[data-auq=sound]")
        .unwrap()
        .unwrap()
        .dyn_into()
        .unwrap();
    assert_eq!(
        sound.get_attribute("aria-pressed").as_deref(),
        Some("false")
    );
    sound.click();
    settle().await;
    assert_eq!(sound.get_attribute("aria-pressed").as_deref(), Some("true"));
    assert_eq!(
        window()
            .local_storage()
            .unwrap()
            .unwrap()
            .get_item("ask-user.sound")
            .unwrap()
            .as_deref(),
        Some("on")
    );
    drop(handle);
    root.remove();
    let (root, handle) = page_over(&[], &inbox, "auq-test-sound");
    settle().await;
    assert_eq!(
        root.query_selector("[data-auq=sound]")
            .unwrap()
            .unwrap()
            .get_attribute("aria-pressed")
            .as_deref(),
        Some("true"),
        "remembered"
    );
    window().local_storage().unwrap().unwrap().clear().unwrap();
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn a_person_typing_keeps_the_focus_while_batches_arrive_here_and_in_other_sessions() {
    clear_session_storage();
    let (default, other, inbox) = (
        MemoryTransport::new(),
        MemoryTransport::new(),
        MemoryTransport::new(),
    );
    default.set_replay(vec![requested("q1", 1, NAME)]);
    inbox.set_sessions(sessions(&[("default", 1, Some("What should we call it?"))]));
    let (root, handle) = page_over(
        &[("default", default.clone()), ("other", other.clone())],
        &inbox,
        "auq-test-focus",
    );
    inbox_streams_become(&inbox, 1, "the page opens the inbox stream").await;
    let text: web_sys::HtmlElement = root
        .query_selector("[data-auq=text]")
        .unwrap()
        .unwrap()
        .dyn_into()
        .unwrap();
    text.focus().unwrap();
    type_into(&text, "Fal");
    settle().await;
    let focused = || {
        document()
            .active_element()
            .map(|e| e.get_attribute("data-auq"))
    };
    assert_eq!(
        focused(),
        Some(Some("text".to_owned())),
        "typing in the text box"
    );

    // Another session's batch (title, badge, list) and one more batch here.
    inbox.emit_inbox(sessions(&[
        ("other", 1, Some("Deploy now?")),
        ("default", 2, Some("What should we call it?")),
    ]));
    default.emit(requested("q2", 2, DB));
    settle().await;
    assert_eq!(
        focused(),
        Some(Some("text".to_owned())),
        "the focus stays where the person types"
    );
    assert!(
        document().title().starts_with("(3)"),
        "{}",
        document().title()
    );
    drop(handle);
    root.remove();
}

const SPOOF: &str = r#"{"questions":[{"id":"run","header":"Sh\u202eell","question":"Run \u202etxt.exe?","options":[{"label":"Yes\u200b"},{"label":"No"}]}]}"#;

#[wasm_bindgen_test]
async fn the_page_title_and_transcript_show_bidi_and_zero_width_characters_as_markers_and_the_answer_keeps_the_label()
 {
    clear_session_storage();
    let host = MemoryTransport::new();
    host.set_transcript(
        serde_json::from_value(serde_json::json!({"entries": [
            {"kind": "message", "id": "m1", "role": "agent", "text": "Read \u{2066}this\u{2069}", "at_ms": 1},
            {"kind": "record", "id": "r1", "created_at_ms": 2, "resolved_at_ms": 3, "outcome": "answered",
             "asked_by": {"kind": "mcp", "name": "Bot\u{feff}"},
             "request": {"questions": [{"id": "q", "question": "Old\u{202d}?", "options": [{"label": "A\u{200c}"}]}]},
             "answer": {"answers": [{"id": "q", "selected": ["A\u{200c}"]}]}}
        ]}))
        .unwrap(),
    );
    let root = container();
    let transport = Transport::new(host.clone());
    let handle = mount_to(root.clone(), move || page_view_with(transport));
    settle().await;
    host.emit(requested("q1", 1, SPOOF));
    settle().await;
    let text = root.text_content().unwrap_or_default();
    for shown in [
        "Run ⟨U+202E⟩txt.exe?",
        "Sh⟨U+202E⟩ell",
        "Yes⟨U+200B⟩",
        "Read ⟨U+2066⟩this⟨U+2069⟩",
        "Old⟨U+202D⟩?",
        "A⟨U+200C⟩",
        "Bot⟨U+FEFF⟩",
    ] {
        assert!(text.contains(shown), "{shown:?} in {text:?}");
    }
    assert!(
        !text.contains([
            '\u{202E}', '\u{200B}', '\u{2066}', '\u{202D}', '\u{200C}', '\u{FEFF}'
        ]),
        "{text:?}"
    );
    assert_eq!(document().title(), "(1) Run ⟨U+202E⟩txt.exe? · ask-user");

    // Choosing the option posts its label exactly as the agent sent it.
    let option: web_sys::HtmlElement = root
        .query_selector("[data-auq=option]")
        .unwrap()
        .expect("an option")
        .dyn_into()
        .unwrap();
    option.click();
    settle().await;
    let submit: web_sys::HtmlElement = root
        .query_selector("[data-auq=submit]")
        .unwrap()
        .expect("Submit")
        .dyn_into()
        .unwrap();
    submit.click();
    settle().await;
    let posted = host.posts();
    let Some(ask_user_composer::RecordedPost::Answer { batch, .. }) = posted.first() else {
        panic!("an answer was posted: {posted:?}");
    };
    assert_eq!(batch.answers[0].selected, ["Yes\u{200b}"]);
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn an_empty_page_says_how_to_connect_an_agent_or_with_the_demo_what_starts_it() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let root = container();
    let transport = Transport::new(host.clone());
    let handle = mount_to(root.clone(), move || page_view_with(transport));
    settle().await;
    let empty = root
        .query_selector("[data-auq=empty]")
        .unwrap()
        .expect("an empty state");
    assert_eq!(
        empty.get_attribute("data-empty").as_deref(),
        Some("no-questions")
    );
    let text = empty.text_content().unwrap_or_default();
    assert!(text.contains("No questions yet"), "{text}");
    assert!(
        text.contains("claude mcp add ask-user -- ask-user mcp"),
        "{text}"
    );
    let docs = empty
        .query_selector("a[data-auq=docs]")
        .unwrap()
        .expect("a link to the docs");
    assert!(
        docs.get_attribute("href")
            .is_some_and(|h| h.starts_with("http")),
        "{:?}",
        docs.get_attribute("href")
    );

    host.emit(requested("q1", 1, DB));
    settle().await;
    assert!(
        root.query_selector("[data-auq=empty]").unwrap().is_none(),
        "gone while a question waits"
    );
    host.emit(resolved("q1", CANCELLED));
    drop(handle);
    root.remove();

    // With the demo agent listening, the empty page says what starts it.
    let demo = MemoryTransport::new();
    demo.set_transcript(ask_user_core::wire::Transcript {
        entries: Vec::new(),
        demo_agent: true,
    });
    let root = container();
    let transport = Transport::new(demo.clone());
    let handle = mount_to(root.clone(), move || page_view_with(transport));
    settle().await;
    let empty = root
        .query_selector("[data-auq=empty]")
        .unwrap()
        .expect("an empty state");
    assert_eq!(empty.get_attribute("data-empty").as_deref(), Some("demo"));
    assert_eq!(
        empty.text_content().unwrap_or_default(),
        "Send any message: the demo agent will ask you three questions."
    );
    drop(handle);
    root.remove();
}

#[wasm_bindgen_test]
async fn a_notification_names_the_new_batch_and_how_many_wait_not_the_oldest_question() {
    stub_notifications("granted");
    let list = |pending: u32, newest: &str| -> ask_user_core::wire::SessionList {
        serde_json::from_value(
            serde_json::json!({"sessions": [{"id": "a", "pending": pending,
            "last_activity_ms": 1, "asked_by": {"kind": "mcp", "name": "Claude Code"},
            "first_question": "Seen already?", "newest_question": newest}]}),
        )
        .unwrap()
    };
    let inbox = MemoryTransport::new();
    inbox.set_sessions(list(1, "Seen already?"));
    let (root, handle) = page_over(&[], &inbox, "auq-test-notify-newest");
    inbox_streams_become(&inbox, 1, "the page opens the inbox stream").await;
    set_hidden(true);
    inbox.emit_inbox(list(2, "Which port?"));
    settle().await;
    assert_eq!(
        notes(),
        vec![vec![
            "Claude Code asks".to_owned(),
            "Which port?\n2 questions waiting".to_owned(),
            "ask-user:a".to_owned()
        ]]
    );
    set_hidden(false);
    drop(handle);
    root.remove();
}
