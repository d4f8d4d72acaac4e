//! The question composer: renders the session's view model (core's `view`)
//! and turns DOM events into state-machine actions. No questionnaire rule
//! lives here: every decision is core's `apply`, every shown fact core's `view`.

use crate::i18n::{Lang, Texts, use_locale};
use crate::markdown::Markdown;
use crate::session::QuestionSession;
use crate::slot::{ComposerSlotContext, QUESTION_ENTRY, use_composer_slot};
use ask_user_core::keys::{Ime, Key, KeyInput, KeyTarget, sends_message};
use ask_user_core::questionnaire::{
    Action, Announcement, Body, CannotShow, Chip, FocusTarget, ItemState, ItemView, Notice,
    OptionRow as Row, PlanView, RequestView, StatusKey, TextBoxRole, ViewModel,
};
use leptos::either::Either;
use leptos::html;
use leptos::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wasm_bindgen::JsCast;

fn next_uid() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Reads the active request of the view model, tracking it.
fn with_active<R>(vm: RwSignal<ViewModel>, f: impl FnOnce(&RequestView) -> R) -> Option<R> {
    vm.with(|v| v.active.as_ref().map(f))
}

/// Whether the active request can be edited.
/// A reactive attribute read from the view model. Every attribute of the
/// composer is one of two concrete types, `Signal<String>` and
/// `Signal<bool>`, so Leptos's attribute code is compiled once for each
/// rather than once per closure (the page's wasm is mostly such code).
fn vm_text(vm: RwSignal<ViewModel>, read: fn(&ViewModel) -> String) -> Signal<String> {
    Signal::derive(move || vm.with(read))
}

/// As [`vm_text`], for a boolean attribute (`hidden`, `disabled`).
fn vm_flag(vm: RwSignal<ViewModel>, read: fn(&ViewModel) -> bool) -> Signal<bool> {
    Signal::derive(move || vm.with(read))
}

/// `disabled` while the view model does not let the person edit.
fn locked(vm: RwSignal<ViewModel>) -> Signal<bool> {
    vm_flag(vm, |v| !editable(v))
}

/// A `<span>` that shows `text` while there is one: the strip's chip,
/// progress, waiting count and asker.
fn optional_span(
    class: &'static str,
    hook: &'static str,
    text: Signal<Option<String>>,
) -> impl IntoView {
    move || {
        text.get()
            .map(|text| view! { <span class=class data-auq=hook>{text}</span> })
    }
}

fn editable(v: &ViewModel) -> bool {
    v.active.as_ref().is_some_and(|a| a.can_edit)
}

/// The question composer: takes over the composer slot (entry `"question"`)
/// while the session has pending questions and gives it back when the host's
/// `question/resolved` removes the last one.
#[component]
pub fn QuestionComposer(
    /// The session whose questions to show (from `use_question_stream`).
    session: QuestionSession,
    /// Interface language; defaults to the `Locale` context, else the browser's.
    #[prop(optional)]
    lang: Option<Lang>,
) -> impl IntoView {
    let lang = lang.unwrap_or_else(|| use_locale().0);
    let texts = lang.texts();
    let vm = session.view_model();
    let slot = use_composer_slot();
    let root = NodeRef::<html::Section>::new();
    let uid = next_uid();
    let carets = StoredValue::new(Carets::default());

    if let Some(slot) = slot {
        crate::effect(move || slot.set_claim(QUESTION_ENTRY, vm.with(|v| v.slot_taken)));
    }
    follow_focus(vm, root, slot);
    let live = live_region(vm, texts);

    // Which body is rendered: the request and its item (`None` for the plan
    // panel). Anything else updates in place, so the text box keeps its caret
    // (and an IME its composition) while typing.
    let screen = Memo::new(move |_| {
        vm.with(|v| {
            let active = v.active.as_ref().filter(|a| !a.collapsed)?;
            Some((active.id.clone(), v.item().map(|item| item.index)))
        })
    });
    let body = move || {
        // Rendered anew only when the screen changes; the rest is read untracked.
        screen.get()?;
        let body = vm.with_untracked(|v| v.active.as_ref().map(|a| a.body.clone()))?;
        Some(match body {
            Body::Item(item) => Either::Left(view! { <Item session texts uid item carets /> }),
            Body::PlanReview(panel) => {
                Either::Right(view! { <PlanReview session texts uid panel /> })
            }
        })
    };

    let notice = move || {
        let text = vm.with(|v| v.notice.as_ref().map(|notice| notice_text(texts, notice)))?;
        Some(view! {
            <div class="auq-notice" data-auq="notice" lang=lang.tag()>
                <span>{text}</span>
                <button
                    type="button"
                    class="auq-btn auq-btn--quiet"
                    data-auq="dismiss"
                    on:click=move |_| session.dispatch(Action::DismissNotice)
                >
                    {texts.dismiss}
                </button>
            </div>
        })
    };

    // The agent stopped waiting: say so calmly; the request stays answerable.
    let detached = move || {
        with_active(vm, |a| a.detached).unwrap_or(false).then(|| {
            view! {
                <p class="auq-detached" data-auq="detached" role="status">
                    {texts.detached}
                </p>
            }
        })
    };

    view! {
        <div class="auq-live auq-visually-hidden" role="status" aria-live="polite" data-auq="live">
            {live}
        </div>
        {notice}
        <section
            class="auq-composer"
            data-auq="question-composer"
            lang=lang.tag()
            aria-label=texts.region
            tabindex="-1"
            node_ref=root
            hidden=vm_flag(vm, |v| !v.slot_taken)
            data-question-id=vm_text(vm, |v| v.active.as_ref().map(|a| a.id.clone()).unwrap_or_default())
            data-item=vm_text(vm, |v| {
                if v.active.is_some() { v.item().map_or(0, |i| i.index).to_string() } else { String::new() }
            })
            data-status=vm_text(vm, |v| v.active.as_ref().map_or("idle", |a| a.phase.as_str()).to_owned())
            data-collapsed=vm_text(vm, |v| v.active.as_ref().is_some_and(|a| a.collapsed).to_string())
            aria-busy=vm_text(vm, |v| v.active.as_ref().is_some_and(|a| !a.can_edit).to_string())
            on:keydown=move |ev: web_sys::KeyboardEvent| {
                if session.keydown(key_input(&ev)) {
                    ev.prevent_default();
                }
            }
        >
            <Strip session texts />
            {detached}
            {body}
        </section>
    }
}

/// A keydown's raw facts, for core's keyboard policy.
pub(crate) fn key_input(ev: &web_sys::KeyboardEvent) -> KeyInput {
    let target = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok());
    let (tag, is_option) = target
        .map(|t| {
            let hook = t.get_attribute("data-auq");
            (t.tag_name(), hook.as_deref() == Some("option"))
        })
        .unwrap_or_default();
    KeyInput {
        key: Key::from_dom(&ev.key()),
        shift: ev.shift_key(),
        shortcut: KeyInput::is_shortcut(ev.ctrl_key(), ev.alt_key(), ev.meta_key()),
        is_composing: ev.is_composing(),
        key_code: ev.key_code(),
        target: KeyTarget::from_dom(&tag, is_option),
    }
}

/// A message box's keys (the normal composer's and "Reply instead"): the IME
/// composition events and a keydown that runs `send` when core's
/// [`sends_message`] says Enter sends. Spread it onto the `<textarea>`:
/// `<textarea {..enter_sends(send, false)} />`. With `keys_stay_here`, no
/// keydown reaches the elements around it (the batch's keys are not the
/// reply's).
pub(crate) fn enter_sends(
    send: impl Fn() + 'static,
    keys_stay_here: bool,
) -> impl leptos::attr::Attribute {
    let ime = StoredValue::new(Ime::default());
    view! {
        <{..}
            on:compositionstart=move |_| ime.update_value(Ime::composition_start)
            on:compositionend=move |_| {
                ime.update_value(Ime::composition_end);
                set_timeout(move || ime.update_value(Ime::tick), Duration::ZERO);
            }
            on:blur=move |_| ime.update_value(Ime::blur)
            on:keydown=move |ev: web_sys::KeyboardEvent| {
                if keys_stay_here {
                    ev.stop_propagation();
                }
                let key = key_input(&ev);
                if ime.try_update_value(|ime| sends_message(ime, &key)).unwrap_or(false) {
                    ev.prevent_default();
                    send();
                }
            }
        />
    }
}

/// Moves DOM focus once per new focus intent, after the render of the same
/// state. An intent older than the composer is not applied.
///
/// The move is a microtask, not a timeout: it runs after every render the same
/// change woke (they are tasks of the same executor run) and before the
/// browser's next task, so a key typed right after a question advances reaches
/// the control it was meant for instead of the one focus was leaving.
fn follow_focus(
    vm: RwSignal<ViewModel>,
    root: NodeRef<html::Section>,
    slot: Option<ComposerSlotContext>,
) {
    let at_mount = vm.with_untracked(|v| v.focus.map(|f| f.version));
    let mut applied = at_mount;
    crate::effect(move || {
        let focus = vm.with(|v| v.focus);
        let version = focus.map(|f| f.version);
        if let Some(focus) = focus.filter(|_| version != applied) {
            queue_microtask(move || focus_on(focus.value, root, slot));
        }
        applied = version;
    });
}

/// Where the person left the caret in each item's text box of one request, so
/// a box rendered anew (Back, then Next) gets it back; a restored draft with no
/// remembered caret (after a reload) gets it at its end.
#[derive(Default)]
struct Carets {
    request_id: String,
    by_item: Vec<(usize, Caret)>,
}

/// A text box's selection, in UTF-16 code units as the DOM counts them.
#[derive(Clone, Copy)]
struct Caret {
    start: u32,
    end: u32,
}

impl Carets {
    fn remember(&mut self, request_id: &str, item: usize, caret: Caret) {
        if self.request_id != request_id {
            *self = Self {
                request_id: request_id.to_owned(),
                by_item: Vec::new(),
            };
        }
        self.by_item.retain(|(index, _)| *index != item);
        self.by_item.push((item, caret));
    }

    /// The remembered caret of `item`, if it still fits a text of `len` units.
    fn recall(&self, request_id: &str, item: usize, len: u32) -> Option<Caret> {
        (self.request_id == request_id)
            .then(|| self.by_item.iter().find(|(index, _)| *index == item))
            .flatten()
            .map(|(_, caret)| *caret)
            .filter(|caret| caret.end <= len)
    }
}

/// Focuses a control of the rendered request (the panel itself when the
/// control is not there), or hands focus back to the normal composer.
fn focus_on(target: FocusTarget, root: NodeRef<html::Section>, slot: Option<ComposerSlotContext>) {
    let selector = match target {
        FocusTarget::Option(index) => format!("[data-auq=option][data-option-index=\"{index}\"]"),
        FocusTarget::TextBox => "[data-auq=text]".to_owned(),
        FocusTarget::ReplyBox => "[data-auq=reply]".to_owned(),
        FocusTarget::Slot => "[data-auq=plan-review]".to_owned(),
        FocusTarget::MessageBox => return slot.iter().for_each(|slot| slot.focus_default()),
    };
    let Some(root) = root.get_untracked() else {
        return;
    };
    let control = root.query_selector(&selector).ok().flatten();
    let _ = match control.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        Some(control) => control.focus(),
        None => root.focus(),
    };
}

/// The live region's text: each new announcement once. The same words twice
/// would not change the region, so nothing would be read: every other
/// announcement is varied invisibly (consecutive versions alternate).
fn live_region(vm: RwSignal<ViewModel>, texts: &'static Texts) -> impl Fn() -> String + Copy {
    let at_mount = vm.with_untracked(|v| v.announcement.as_ref().map(|a| a.version));
    move || {
        vm.with(|v| {
            let said = v
                .announcement
                .as_ref()
                .filter(|a| Some(a.version) != at_mount)?;
            let mut text = announce(texts, &said.value);
            if said.version % 2 == 1 {
                text.push('\u{a0}');
            }
            Some(text)
        })
        .unwrap_or_default()
    }
}

fn announce(texts: &Texts, announcement: &Announcement) -> String {
    match announcement {
        Announcement::NewQuestion { question, .. } => format!("{}: {question}", texts.new_question),
        Announcement::Incomplete { unanswered } => texts.incomplete(*unanswered),
        Announcement::SendFailed { message } => format!("{} {message}", texts.send_failed),
        Announcement::ResolvedElsewhere { outcome } => texts.resolved(*outcome).to_owned(),
        Announcement::CannotShow(why) => cannot_show_text(texts, why),
    }
}

fn notice_text(texts: &Texts, notice: &Notice) -> String {
    match notice {
        Notice::ResolvedElsewhere { outcome, .. } => texts.resolved(*outcome).to_owned(),
        Notice::CannotShow { why, .. } => cannot_show_text(texts, why),
    }
}

fn cannot_show_text(texts: &Texts, why: &CannotShow) -> String {
    match why {
        CannotShow::TooManyPending { limit } => texts.too_many_pending(*limit),
        CannotShow::Invalid { message } => format!("{} {message}", texts.cannot_show),
    }
}

/// The header strip: chip, progress, waiting count, collapse toggle. Stays
/// visible when collapsed.
#[component]
fn Strip(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let vm = session.view_model();
    let collapsed = move || with_active(vm, |a| a.collapsed).unwrap_or(false);
    let chip = Signal::derive(move || {
        with_active(vm, |a| a.chip.clone())
            .flatten()
            .map(|chip| match chip {
                Chip::Header(header) => header,
                Chip::PlanReview => texts.plan_review.to_owned(),
            })
    });
    let progress = Signal::derive(move || {
        let progress = with_active(vm, |a| a.progress).flatten();
        progress.map(|p| texts.progress(p.current, p.total))
    });
    let waiting =
        Signal::derive(move || vm.with(|v| (v.waiting > 0).then(|| texts.waiting(v.waiting))));
    // "asked by Claude Code · 2 min ago", its age refreshed every 30 s.
    let now = RwSignal::new(js_sys::Date::now() as u64);
    if let Ok(handle) = set_interval_with_handle(
        move || now.set(js_sys::Date::now() as u64),
        Duration::from_secs(30),
    ) {
        on_cleanup(move || handle.clear());
    }
    // "… · escalated to leads" once its `escalate_after` is due (issue 24):
    // the host sends the question again then, which runs this again.
    let asked = Signal::derive(move || {
        let (name, at, escalates) = with_active(vm, |a| {
            (a.asked_by.clone(), a.created_at_ms, a.escalates.clone())
        })?;
        let now = now.get().max(js_sys::Date::now() as u64);
        let asked = name.map(|name| {
            let age = texts.age(ask_user_core::attention::age(at, now));
            format!("{} · {age}", texts.asked_by(&name))
        });
        let escalated = escalates
            .filter(|(due, _)| now >= *due)
            .map(|(_, role)| texts.escalated_to(&role));
        match (asked, escalated) {
            (Some(asked), Some(escalated)) => Some(format!("{asked} · {escalated}")),
            (asked, escalated) => asked.or(escalated),
        }
    });
    let expanded = Signal::derive(move || (!collapsed()).to_string());
    let toggle_label = Signal::derive(move || {
        if collapsed() {
            texts.expand
        } else {
            texts.collapse
        }
        .to_owned()
    });
    view! {
        <header class="auq-strip">
            {optional_span("auq-chip", "chip", chip)}
            {optional_span("auq-progress", "progress", progress)}
            {optional_span("auq-waiting", "waiting", waiting)}
            {optional_span("auq-asked-by", "asked-by", asked)}
            <button
                type="button"
                class="auq-btn auq-btn--icon auq-strip__toggle"
                data-auq="collapse"
                aria-expanded=expanded
                aria-label=toggle_label
                title=toggle_label
                on:click=move |_| {
                    let action = if collapsed() { Action::Expand } else { Action::Collapse };
                    session.dispatch(action);
                }
            >
                <span class="auq-chevron" aria-hidden="true"></span>
            </button>
        </header>
    }
}

/// One item of the generic flow. Rendered anew for each item; its rows and
/// flags follow the view model in place.
#[component]
fn Item(
    session: QuestionSession,
    texts: &'static Texts,
    uid: usize,
    item: ItemView,
    carets: StoredValue<Carets>,
) -> impl IntoView {
    let vm = session.view_model();
    // Copy, so the effect and every listener below can hold it.
    let request_id = StoredValue::new(with_active(vm, |a| a.id.clone()).unwrap_or_default());
    let index = item.index;
    let multi = item.multi_select;
    let has_options = !item.options.is_empty();
    let question_id = format!("auq-{uid}-q");
    // The rows are this item's, fixed while it is shown (a new item or
    // request renders the body anew); each row follows selection and focus in
    // place. A plain list, not a keyed `For`: nothing here is ever reordered.
    let rows = item
        .options
        .into_iter()
        .map(|row| view! { <OptionRow session texts row multi uid /> })
        .collect_view();
    let replying = move || with_active(vm, |a| a.reply.is_some()).unwrap_or(false);

    let text_ref = NodeRef::<html::Textarea>::new();
    // Keep the box in step with the state (restore, skip) without touching it
    // while the person types: the same value is never written back. A written
    // value puts the caret where the person left it in this box, else at the
    // end, so what they type next follows their draft.
    crate::effect(move || {
        let text = vm.with(|v| {
            v.item()
                .map(|i| i.text_box.value.clone())
                .unwrap_or_default()
        });
        if let Some(el) = text_ref.get()
            && el.value() != text
        {
            el.set_value(&text);
            let len = u32::try_from(text.encode_utf16().count()).unwrap_or(u32::MAX);
            let caret = carets
                .try_with_value(|c| request_id.try_with_value(|id| c.recall(id, index, len)))
                .flatten()
                .flatten()
                .unwrap_or(Caret {
                    start: len,
                    end: len,
                });
            let _ = el.set_selection_range(caret.start, caret.end);
        }
    });
    // Also runs for the blur of a box being removed (the batch was sent), when
    // this item's values are gone: it then does nothing.
    let remember_caret = move || {
        let Some(el) = text_ref.try_get_untracked().flatten() else {
            return;
        };
        if let (Ok(Some(start)), Ok(Some(end))) = (el.selection_start(), el.selection_end()) {
            let caret = Caret { start, end };
            request_id
                .try_with_value(|id| carets.try_update_value(|c| c.remember(id, index, caret)));
        }
    };
    let text_id = format!("auq-{uid}-text");
    let (text_label, placeholder, data_role, rows_attr) = match item.text_box.role {
        TextBoxRole::Other => (texts.other, texts.other_placeholder, "other", "1"),
        TextBoxRole::YourAnswer => (texts.your_answer, texts.answer_placeholder, "answer", "3"),
    };

    view! {
        <div class="auq-item" data-auq="item" data-multi=multi.to_string()>
            <h2 class="auq-question" id=question_id.clone()>{item.question}</h2>
            {item.detail.map(|d| view! { <Markdown text=d class="auq-detail" attr:data-auq="detail" /> })}
            {has_options.then(|| view! {
                <div class="auq-hint" aria-hidden="true">
                    {if multi { texts.choose_any } else { texts.choose_one }}
                </div>
                <div
                    class="auq-options"
                    role=if multi { "group" } else { "radiogroup" }
                    aria-labelledby=question_id
                >
                    {rows}
                </div>
            })}
            <div class="auq-field" data-role=data_role>
                <label class="auq-field__label" for=text_id.clone()>{text_label}</label>
                <textarea
                    class="auq-text"
                    id=text_id
                    data-auq="text"
                    rows=rows_attr
                    placeholder=placeholder
                    disabled=locked(vm)
                    node_ref=text_ref
                    on:input=move |ev| {
                        session.dispatch(Action::DraftEdited { text: event_target_value(&ev) });
                    }
                    on:compositionstart=move |_| session.dispatch(Action::CompositionStart)
                    on:compositionend=move |_| session.dispatch(Action::CompositionEnd)
                    // Where the person moves the caret: keys, a pointer, leaving the box.
                    on:keyup=move |_| remember_caret()
                    on:pointerup=move |_| remember_caret()
                    on:blur=move |_| {
                        remember_caret();
                        session.dispatch(Action::Blur);
                    }
                ></textarea>
            </div>
            <StatusLine session texts />
            {move || replying().then(|| view! { <ReplyBox session texts uid /> })}
            <Footer session texts />
        </div>
    }
}

/// "Reply instead": a message to the agent in place of finishing the batch.
/// Its keys stay here (Enter sends the reply, never the batch), with the same
/// IME and Shift rules as the normal composer.
#[component]
fn ReplyBox(session: QuestionSession, texts: &'static Texts, uid: usize) -> impl IntoView {
    let vm = session.view_model();
    let text_id = format!("auq-{uid}-reply");
    let reply_ref = NodeRef::<html::Textarea>::new();
    // As for the item's box: follow the state without touching what is typed.
    crate::effect(move || {
        let text = with_active(vm, |a| a.reply.as_ref().map(|r| r.text.clone()))
            .flatten()
            .unwrap_or_default();
        if let Some(el) = reply_ref.get()
            && el.value() != text
        {
            el.set_value(&text);
        }
    });
    let cannot_send = vm_flag(vm, |v| {
        !v.active
            .as_ref()
            .is_some_and(|a| a.can_edit && a.reply.as_ref().is_some_and(|r| r.can_send))
    });
    view! {
        <div class="auq-field auq-reply" data-auq="reply-box">
            <label class="auq-field__label" for=text_id.clone()>{texts.your_reply}</label>
            <textarea
                class="auq-text"
                id=text_id
                data-auq="reply"
                rows="3"
                placeholder=texts.reply_placeholder
                disabled=locked(vm)
                node_ref=reply_ref
                on:input=move |ev| {
                    session.dispatch(Action::ReplyEdited { text: event_target_value(&ev) });
                }
                // The batch's keys (Enter submits, digits choose) are not the reply's.
                {..enter_sends(move || session.dispatch(Action::SendReply), true)}
            ></textarea>
            <div class="auq-reply__actions">
                <button
                    type="button"
                    class="auq-btn auq-btn--quiet"
                    data-auq="reply-close"
                    disabled=locked(vm)
                    on:click=move |_| session.dispatch(Action::ReplyClosed)
                >
                    {texts.back_to_questions}
                </button>
                <button
                    type="button"
                    class="auq-btn auq-btn--primary"
                    data-auq="send-reply"
                    disabled=cannot_send
                    on:click=move |_| session.dispatch(Action::SendReply)
                >
                    {texts.send_reply}
                </button>
            </div>
        </div>
    }
}

/// One option: a radio or checkbox with its badge, description and number key.
/// Its label is fixed; whether it is checked or the tab stop follows the view
/// model.
#[component]
fn OptionRow(
    session: QuestionSession,
    texts: &'static Texts,
    row: Row,
    multi: bool,
    uid: usize,
) -> impl IntoView {
    let vm = session.view_model();
    let index = row.index;
    let shown = move |f: fn(&Row) -> bool| vm.with(|v| v.option(index).is_some_and(f));
    let label_id = format!("auq-{uid}-o{index}");
    let badge_id = format!("auq-{uid}-o{index}-badge");
    let desc_id = format!("auq-{uid}-o{index}-desc");
    let labelledby = if row.recommended {
        format!("{label_id} {badge_id}")
    } else {
        label_id.clone()
    };
    let describedby = row.description.as_ref().map(|_| desc_id.clone());
    view! {
        <div
            class="auq-option"
            role=if multi { "checkbox" } else { "radio" }
            data-auq="option"
            data-option-index=index
            data-label=row.label
            data-recommended=row.recommended.to_string()
            aria-checked=Signal::derive(move || shown(|o| o.selected).to_string())
            aria-disabled=vm_text(vm, |v| (!editable(v)).to_string())
            aria-labelledby=labelledby
            aria-describedby=describedby
            tabindex=Signal::derive(move || if shown(|o| o.focused) { "0" } else { "-1" }.to_owned())
            on:click=move |_| session.dispatch(Action::OptionChosen { index })
            on:focus=move |_| session.dispatch(Action::OptionFocused { index })
        >
            <span class="auq-option__control" aria-hidden="true"></span>
            <span class="auq-option__text">
                <span class="auq-option__head">
                    <span class="auq-option__label" id=label_id>{row.display}</span>
                    {row.recommended.then(|| view! {
                        <span class="auq-badge" id=badge_id data-auq="badge">{texts.recommended}</span>
                    })}
                </span>
                {row.description.map(|d| view! {
                    <span class="auq-option__desc" id=desc_id>{d}</span>
                })}
            </span>
            {row.number_key.map(|n| view! {
                <kbd class="auq-option__key" aria-hidden="true">{n}</kbd>
            })}
        </div>
    }
}

/// Sending / failed line.
#[component]
fn StatusLine(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let vm = session.view_model();
    move || {
        let line = with_active(vm, |a| a.status_line.clone()).flatten()?;
        Some(match line.key {
            StatusKey::SendingAnswer | StatusKey::SendingCancel => {
                let text = if line.key == StatusKey::SendingAnswer {
                    texts.sending
                } else {
                    texts.cancelling
                };
                Either::Left(view! {
                    <p class="auq-status" data-auq="status"><span class="auq-spinner" aria-hidden="true"></span>{text}</p>
                })
            }
            StatusKey::AnswerFailed | StatusKey::CancelFailed => {
                let prefix = if line.key == StatusKey::AnswerFailed {
                    texts.answer_failed
                } else {
                    texts.cancel_failed
                };
                Either::Right(view! {
                    <p class="auq-error" role="alert" data-auq="error">
                        <strong>{prefix}</strong>" "{line.message.unwrap_or_default()}
                    </p>
                })
            }
        })
    }
}

/// The generic flow's footer: steps, Cancel, Back, Skip, Next, Submit.
#[component]
fn Footer(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let vm = session.view_model();
    let dispatch = move |action: Action| session.dispatch(action);
    let steps = move || {
        let steps = vm.with(|v| v.item().map(|i| i.steps.clone()).unwrap_or_default());
        steps
            .into_iter()
            .enumerate()
            .map(|(index, step)| {
                let (name, state_text) = match step.state {
                    ItemState::Answered => ("answered", texts.answered),
                    ItemState::Skipped => ("skipped", texts.skipped),
                    ItemState::Unanswered => ("open", texts.unanswered),
                };
                let label = format!("{}: {state_text}", texts.step(index + 1));
                view! {
                    <button
                        type="button"
                        class="auq-step"
                        data-auq="step"
                        data-state=name
                        aria-current=step.current.then_some("step")
                        aria-label=label.clone()
                        title=label
                        on:click=move |_| dispatch(Action::GoTo { index })
                    ></button>
                }
            })
            .collect_view()
    };
    let button = |hook, class, label, enabled, action| {
        view! { <ActionButton session hook class label enabled action /> }
    };
    view! {
        <footer class="auq-footer">
            <div class="auq-footer__leave">
                {button("cancel", "auq-btn auq-btn--quiet auq-btn--danger", texts.cancel.into(), editable, Action::Close)}
                {button("reply-instead", "auq-btn auq-btn--quiet", texts.reply_instead.into(), |v| editable(v) && v.active.as_ref().is_some_and(|a| a.reply.is_none()), Action::ReplyInstead)}
            </div>
            <nav class="auq-steps" aria-label=texts.steps>{steps}</nav>
            <div class="auq-footer__actions">
                {button("back", "auq-btn", texts.back.into(), |v| v.item().is_some_and(|i| i.can_go_back), Action::Back)}
                {button("skip", "auq-btn", texts.skip.into(), editable, Action::Skip)}
                {button("next", "auq-btn", texts.next.into(), |v| v.item().is_some_and(|i| i.can_go_next), Action::Next)}
                // aria-disabled, not disabled: a click on an incomplete batch moves
                // to the first open item and says what is missing.
                <button
                    type="button"
                    class="auq-btn auq-btn--primary"
                    data-auq="submit"
                    aria-disabled=vm_text(vm, |v| (!v.item().is_some_and(|i| i.can_submit)).to_string())
                    disabled=locked(vm)
                    on:click=move |_| session.dispatch(Action::Submit)
                >
                    {texts.submit}
                </button>
            </div>
        </footer>
    }
}

/// A text button that dispatches `action`, enabled while `enabled` says so.
#[component]
fn ActionButton(
    session: QuestionSession,
    /// Its `data-auq` hook.
    hook: &'static str,
    class: &'static str,
    label: String,
    enabled: fn(&ViewModel) -> bool,
    action: Action,
) -> impl IntoView {
    let vm = session.view_model();
    view! {
        <button
            type="button"
            class=class
            data-auq=hook
            disabled=Signal::derive(move || !vm.with(enabled))
            on:click=move |_| session.dispatch(action.clone())
        >
            {label}
        </button>
    }
}

/// The plan-review panel: the plan as sanitised Markdown, approve (primary),
/// decline, and "Chat about it" (cancels so the normal composer returns).
#[component]
fn PlanReview(
    session: QuestionSession,
    texts: &'static Texts,
    uid: usize,
    panel: PlanView,
) -> impl IntoView {
    let button = |hook, class, label, action| {
        view! { <ActionButton session hook class label enabled=editable action /> }
    };
    let heading = format!("auq-{uid}-plan");
    let labelledby = heading.clone();
    view! {
        <div class="auq-plan" data-auq="plan-review" tabindex="-1" aria-labelledby=labelledby>
            <h2 class="auq-question" id=heading>{panel.question}</h2>
            <Markdown text=panel.plan class="auq-plan__body" attr:data-auq="plan" />
            <StatusLine session texts />
            <footer class="auq-footer auq-footer--plan">
                {button("chat", "auq-btn auq-btn--quiet", texts.chat_about_it.into(), Action::ChatAboutIt)}
                <div class="auq-footer__actions">
                    {panel.decline.map(|label| button("decline", "auq-btn", label, Action::Decline))}
                    {button("approve", "auq-btn auq-btn--primary", panel.approve, Action::Approve)}
                </div>
            </footer>
        </div>
    }
}
