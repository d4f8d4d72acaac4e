//! Shared helpers for the browser tests: mount a conversation over a fake
//! (in-memory) host, emit frames, and drive real DOM events.
#![allow(dead_code)]

use ask_user_composer::{Conversation, Lang, MemoryTransport, Transport, use_question_stream_with};
use ask_user_core::AskRequest;
use ask_user_core::wire::{
    Outcome, QuestionRequested, QuestionResolved, SessionEvent, SessionSynced,
};
use leptos::mount::mount_to;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};

/// The three-question batch of the issue: single-select with a recommended
/// option, multi-select with descriptions, free text.
pub const BATCH: &str = r#"{"questions":[
  {"id":"db","header":"Database","question":"Which database?","detail":"It stores sessions.",
   "options":[{"label":"Postgres (Recommended)","description":"Proven"},{"label":"SQLite"},{"label":"DynamoDB"}]},
  {"id":"checks","question":"Which checks?","multi_select":true,
   "options":[{"label":"Unit tests","description":"Fast"},{"label":"Browser tests"},{"label":"Load test"}]},
  {"id":"name","question":"What should we call it?"}
]}"#;

/// A mounted conversation over a fake host; unmounts and detaches on drop.
pub struct Page {
    /// The element the conversation is mounted in.
    pub root: HtmlElement,
    /// The fake host.
    pub host: MemoryTransport,
    handle: Option<Box<dyn std::any::Any>>,
}

impl Drop for Page {
    fn drop(&mut self) {
        drop(self.handle.take());
        self.root.remove();
    }
}

/// Mounts a conversation (English) over `host`.
pub fn mount(host: &MemoryTransport) -> Page {
    mount_in(host, Lang::En)
}

/// Mounts a conversation in `lang` over `host`.
pub fn mount_in(host: &MemoryTransport, lang: Lang) -> Page {
    let root = container();
    let transport = Transport::new(host.clone());
    let handle = mount_to(root.clone(), move || {
        let stream = use_question_stream_with(transport);
        view! { <Conversation stream lang /> }
    });
    Page {
        root,
        host: host.clone(),
        handle: Some(Box::new(handle)),
    }
}

/// A fresh element attached to the body.
pub fn container() -> HtmlElement {
    let element: HtmlElement = document()
        .create_element("div")
        .unwrap()
        .dyn_into()
        .unwrap();
    document().body().unwrap().append_child(&element).unwrap();
    element
}

/// Lets pending microtasks (renders) and zero-delay timeouts (focus, IME tick) run.
pub async fn settle() {
    for _ in 0..4 {
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            window()
                .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0)
                .unwrap();
        });
        wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
    }
}

/// A `question/requested` frame.
pub fn requested(id: &str, created_at_ms: u64, json: &str) -> SessionEvent {
    SessionEvent::QuestionRequested(QuestionRequested {
        id: id.into(),
        session: "default".into(),
        request: AskRequest::from_json(json).expect("a valid test request"),
        created_at_ms,
        asked_by: None,
    })
}

/// A `question/resolved` frame.
pub fn resolved(id: &str, outcome: Outcome) -> SessionEvent {
    SessionEvent::QuestionResolved(QuestionResolved {
        id: id.into(),
        outcome,
        record: None,
    })
}

/// A `session/synced` frame.
pub fn synced(pending: &[&str]) -> SessionEvent {
    SessionEvent::SessionSynced(SessionSynced {
        pending: pending.iter().map(|s| s.to_string()).collect(),
    })
}

impl Page {
    /// The first element matching `selector`, or a panic naming it.
    pub fn q(&self, selector: &str) -> HtmlElement {
        self.try_q(selector).unwrap_or_else(|| {
            panic!(
                "no element matches {selector}; DOM: {}",
                self.root.inner_html()
            )
        })
    }

    /// The first element matching `selector`.
    pub fn try_q(&self, selector: &str) -> Option<HtmlElement> {
        self.root
            .query_selector(selector)
            .unwrap()
            .map(|e| e.dyn_into().unwrap())
    }

    /// Every element matching `selector`.
    pub fn all(&self, selector: &str) -> Vec<HtmlElement> {
        let list = self.root.query_selector_all(selector).unwrap();
        (0..list.length())
            .filter_map(|i| list.item(i))
            .map(|n| n.dyn_into().unwrap())
            .collect()
    }

    /// The text of the first match, trimmed.
    pub fn text(&self, selector: &str) -> String {
        self.q(selector)
            .text_content()
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// The button whose accessible name is exactly `name`.
    pub fn button(&self, name: &str) -> HtmlElement {
        self.all("button")
            .into_iter()
            .find(|b| accessible_name(b) == name)
            .unwrap_or_else(|| {
                let names: Vec<String> = self.all("button").iter().map(accessible_name).collect();
                panic!("no button named {name:?}; buttons: {names:?}")
            })
    }

    /// The options of the shown item.
    pub fn options(&self) -> Vec<HtmlElement> {
        self.all("[data-auq=option]")
    }

    /// Which options are checked (aria-checked="true"), by index.
    pub fn checked(&self) -> Vec<usize> {
        self.options()
            .iter()
            .enumerate()
            .filter(|(_, o)| o.get_attribute("aria-checked").as_deref() == Some("true"))
            .map(|(i, _)| i)
            .collect()
    }

    /// The question composer's section.
    pub fn composer(&self) -> HtmlElement {
        self.q("[data-auq=question-composer]")
    }

    /// True while the question composer holds the slot (visible).
    pub fn composer_shown(&self) -> bool {
        !self.composer().hidden()
    }

    /// True while the normal composer shows.
    pub fn message_box_shown(&self) -> bool {
        !self.q("[data-auq=message-composer]").hidden()
    }

    /// The shown item's question text.
    pub fn question(&self) -> String {
        self.text(".auq-question")
    }

    /// The free-text box of the shown item.
    pub fn text_box(&self) -> HtmlElement {
        self.q("[data-auq=text]")
    }
}

/// The document.
pub fn document() -> web_sys::Document {
    window().document().unwrap()
}

/// The window.
pub fn window() -> web_sys::Window {
    web_sys::window().unwrap()
}

/// The focused element, if any.
pub fn active() -> Option<Element> {
    document().active_element()
}

/// The accessible name as computed for the patterns the composer uses:
/// aria-labelledby, aria-label, a `<label for>`, else the text content.
pub fn accessible_name(element: &HtmlElement) -> String {
    if let Some(ids) = element.get_attribute("aria-labelledby") {
        return ids
            .split_whitespace()
            .filter_map(|id| document().get_element_by_id(id))
            .map(|e| e.text_content().unwrap_or_default().trim().to_owned())
            .collect::<Vec<_>>()
            .join(" ");
    }
    if let Some(label) = element.get_attribute("aria-label") {
        return label;
    }
    if !element.id().is_empty()
        && let Some(label) = document()
            .query_selector(&format!("label[for=\"{}\"]", element.id()))
            .unwrap()
    {
        return label.text_content().unwrap_or_default().trim().to_owned();
    }
    element.text_content().unwrap_or_default().trim().to_owned()
}

/// A real click.
pub fn click(element: &HtmlElement) {
    element.click();
}

/// How a synthetic keydown is composed.
#[derive(Default, Clone, Copy)]
pub struct KeyOpts {
    /// shiftKey.
    pub shift: bool,
    /// isComposing.
    pub is_composing: bool,
    /// keyCode.
    pub key_code: u32,
}

/// Dispatches a keydown (bubbling, cancelable) on `target`; returns whether it
/// was default-prevented.
pub fn keydown_with(target: &Element, key: &str, opts: KeyOpts) -> bool {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(key);
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_shift_key(opts.shift);
    init.set_is_composing(opts.is_composing);
    init.set_key_code(opts.key_code);
    let event =
        web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    assert_eq!(
        event.key_code(),
        opts.key_code,
        "the browser kept the synthetic keyCode"
    );
    assert_eq!(event.is_composing(), opts.is_composing);
    target.dispatch_event(&event).unwrap();
    event.default_prevented()
}

/// A plain keydown on the focused element.
pub fn press(key: &str) -> bool {
    let target = active().expect("something has focus");
    keydown_with(&target, key, KeyOpts::default())
}

/// Types `text` into a text box the way an `input` event reports it.
pub fn type_into(element: &HtmlElement, text: &str) {
    let area: &web_sys::HtmlTextAreaElement = element.dyn_ref().expect("a textarea");
    area.set_value(text);
    let init = web_sys::EventInit::new();
    init.set_bubbles(true);
    let event = web_sys::Event::new_with_event_init_dict("input", &init).unwrap();
    element.dispatch_event(&event).unwrap();
}

/// Dispatches `compositionstart` / `compositionend` on `element`.
pub fn composition(element: &HtmlElement, kind: &str) {
    let init = web_sys::CompositionEventInit::new();
    init.set_bubbles(true);
    init.set_data("你好");
    let event = web_sys::CompositionEvent::new_with_event_init_dict(kind, &init).unwrap();
    element.dispatch_event(&event).unwrap();
}

/// Clears sessionStorage so tests do not see each other's drafts.
pub fn clear_session_storage() {
    window()
        .session_storage()
        .unwrap()
        .unwrap()
        .clear()
        .unwrap();
}

/// Makes the page hidden (or visible again) as a background tab is, and
/// tells it so with `visibilitychange`.
pub fn set_hidden(hidden: bool) {
    let document = document();
    if hidden {
        let descriptor = js_sys::Object::new();
        js_sys::Reflect::set(&descriptor, &"configurable".into(), &true.into()).unwrap();
        js_sys::Reflect::set(&descriptor, &"value".into(), &true.into()).unwrap();
        js_sys::Object::define_property(&document, &"hidden".into(), &descriptor);
    } else {
        js_sys::Reflect::delete_property(&document, &"hidden".into()).unwrap();
    }
    let event = web_sys::Event::new("visibilitychange").unwrap();
    document.dispatch_event(&event).unwrap();
}

/// Settles the DOM after an action.
pub async fn after(f: impl FnOnce()) {
    f();
    settle().await;
}

/// Outcome shortcut.
pub const ANSWERED: Outcome = Outcome::Answered;
/// Outcome shortcut.
pub const CANCELLED: Outcome = Outcome::Cancelled;
