//! The question composer: renders the session's active request (one item at a
//! time, or the plan-review panel) and turns DOM events into state-machine
//! actions. No questionnaire rule lives here: every decision is core's `apply`.

use crate::i18n::{Lang, Texts, use_locale};
use crate::markdown;
use crate::session::QuestionSession;
use crate::slot::{QUESTION_ENTRY, use_composer_slot};
use ask_user_core::questionnaire::{
    Action, Announcement, Effect as Fx, FocusTarget, ItemState, KeyInput, Notice, PendingRequest,
    Questionnaire, Status, StatusKey, TextBoxRole,
};
use leptos::html;
use leptos::prelude::*;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wasm_bindgen::JsCast;

/// Reads the active request, tracking the state.
fn with_active<R>(
    state: RwSignal<Questionnaire>,
    f: impl FnOnce(&PendingRequest) -> R,
) -> Option<R> {
    state.with(|s| s.active().map(f))
}

/// What decides which body is rendered; anything else updates in place, so the
/// text box keeps its caret (and an IME its composition) while typing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    id: String,
    item: usize,
    plan_review: bool,
    collapsed: bool,
}

fn next_uid() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
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
    let state = session.state();
    let slot = use_composer_slot();
    let root = NodeRef::<html::Section>::new();
    let live = RwSignal::new(String::new());
    let uid = next_uid();

    if let Some(slot) = slot {
        Effect::new(move |_| slot.set_claim(QUESTION_ENTRY, state.with(Questionnaire::slot_taken)));
    }

    session.set_ui_handler(Some(Rc::new(move |effect: &Fx| match effect {
        Fx::Focus(target) => {
            let target = *target;
            // After the render that the same state change triggered.
            set_timeout(
                move || match target {
                    FocusTarget::MessageBox => {
                        if let Some(slot) = slot {
                            slot.focus_default();
                        }
                    }
                    target => focus_in(root, target),
                },
                Duration::ZERO,
            );
        }
        Fx::Announce(what) => {
            let mut text = announce(texts, what);
            // The same words twice would not change the region, so nothing would
            // be read: vary it invisibly.
            if live.with_untracked(|current| *current == text) {
                text.push('\u{a0}');
            }
            live.set(text);
        }
        _ => {}
    })));
    on_cleanup(move || session.set_ui_handler(None));

    let shown = Memo::new(move |_| {
        with_active(state, |r| Shown {
            id: r.id.clone(),
            item: r.current_index(),
            plan_review: r.is_plan_review(),
            collapsed: r.collapsed,
        })
    });

    let on_keydown = move |ev: web_sys::KeyboardEvent| {
        let target = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok());
        let tag = target.map(|t| t.tag_name()).unwrap_or_default();
        let key = ev.key();
        // Buttons and links keep their own Enter/Space activation (Skip, Cancel,
        // a link in the plan, …).
        if matches!(tag.as_str(), "BUTTON" | "A") && matches!(key.as_str(), "Enter" | " ") {
            return;
        }
        let key = if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            "Unidentified".to_owned()
        } else {
            key
        };
        let input = KeyInput::from_dom(
            &key,
            ev.shift_key(),
            ev.is_composing(),
            ev.key_code(),
            tag == "TEXTAREA" || tag == "INPUT",
        );
        if session
            .dispatch(Action::Key(input))
            .contains(&Fx::PreventDefault)
        {
            ev.prevent_default();
        }
    };

    let body = move || {
        let shown = shown.get()?;
        if shown.collapsed {
            return None;
        }
        Some(if shown.plan_review {
            view! { <PlanReview session texts uid /> }.into_any()
        } else {
            view! { <Item session texts uid item=shown.item /> }.into_any()
        })
    };

    let notice = move || {
        let text = state.with(|s| {
            s.notice().map(|notice| match notice {
                Notice::ResolvedElsewhere { outcome, .. } => texts.resolved(*outcome),
            })
        })?;
        Some(view! {
            <div class="auq-notice" data-auq="notice" lang=lang.tag()>
                <span>{text}</span>
                <button
                    type="button"
                    class="auq-btn auq-btn--quiet"
                    data-auq="dismiss"
                    on:click=move |_| drop(session.dispatch(Action::DismissNotice))
                >
                    {texts.dismiss}
                </button>
            </div>
        })
    };

    // The agent stopped waiting: say so calmly; the request stays answerable.
    let detached = move || {
        with_active(state, PendingRequest::is_detached)
            .unwrap_or(false)
            .then(|| {
                view! {
                    <p class="auq-detached" data-auq="detached" role="status">
                        {texts.detached}
                    </p>
                }
            })
    };

    view! {
        <div class="auq-live auq-visually-hidden" role="status" aria-live="polite" data-auq="live">
            {move || live.get()}
        </div>
        {notice}
        <section
            class="auq-composer"
            data-auq="question-composer"
            lang=lang.tag()
            aria-label=texts.region
            tabindex="-1"
            node_ref=root
            hidden=move || !state.with(Questionnaire::slot_taken)
            data-question-id=move || shown.get().map(|s| s.id).unwrap_or_default()
            data-item=move || shown.get().map(|s| s.item.to_string()).unwrap_or_default()
            data-status=move || with_active(state, |r| status_name(r.status())).unwrap_or("idle")
            data-collapsed=move || shown.get().is_some_and(|s| s.collapsed).to_string()
            aria-busy=move || with_active(state, |r| !r.is_editable()).unwrap_or(false).to_string()
            on:keydown=on_keydown
        >
            <Strip session texts />
            {detached}
            {body}
        </section>
    }
}

fn status_name(status: &Status) -> &'static str {
    match status {
        Status::Editing => "editing",
        Status::Sending(_) => "sending",
        Status::Sent(_) => "sent",
        Status::Failed { .. } => "failed",
    }
}

fn announce(texts: &Texts, announcement: &Announcement) -> String {
    match announcement {
        Announcement::NewQuestion { question, .. } => format!("{}: {question}", texts.new_question),
        Announcement::Incomplete { unanswered } => texts.incomplete(*unanswered),
        Announcement::SendFailed { message } => format!("{} {message}", texts.send_failed),
        Announcement::ResolvedElsewhere { outcome } => texts.resolved(*outcome).to_owned(),
    }
}

/// Moves focus to a control of the rendered request.
fn focus_in(root: NodeRef<html::Section>, target: FocusTarget) {
    let Some(root) = root.get_untracked() else {
        return;
    };
    let selector = match target {
        FocusTarget::Option(index) => format!("[data-auq=option][data-option-index=\"{index}\"]"),
        FocusTarget::TextBox => "[data-auq=text]".to_owned(),
        FocusTarget::Slot => "[data-auq=plan-review]".to_owned(),
        FocusTarget::MessageBox => return,
    };
    let element = root
        .query_selector(&selector)
        .ok()
        .flatten()
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    match element {
        Some(element) => drop(element.focus()),
        None => drop(root.focus()),
    }
}

/// The header strip: chip, progress, waiting count, collapse toggle. Stays
/// visible when collapsed.
#[component]
fn Strip(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let state = session.state();
    let collapsed = move || with_active(state, |r| r.collapsed).unwrap_or(false);
    let chip = move || {
        with_active(state, |r| {
            if r.is_plan_review() {
                Some(texts.plan_review.to_owned())
            } else {
                r.current_question().header.clone()
            }
        })
        .flatten()
    };
    let progress = move || {
        with_active(state, |r| {
            let p = r.progress();
            (p.total > 1 && !r.is_plan_review()).then(|| texts.progress(p.current, p.total))
        })
        .flatten()
    };
    let waiting = move || {
        let count = state.with(Questionnaire::waiting_count);
        (count > 0).then(|| texts.waiting(count))
    };
    view! {
        <header class="auq-strip">
            {move || chip().map(|chip| view! { <span class="auq-chip" data-auq="chip">{chip}</span> })}
            {move || progress().map(|p| view! { <span class="auq-progress" data-auq="progress">{p}</span> })}
            {move || waiting().map(|w| view! { <span class="auq-waiting" data-auq="waiting">{w}</span> })}
            <button
                type="button"
                class="auq-btn auq-btn--icon auq-strip__toggle"
                data-auq="collapse"
                aria-expanded=move || (!collapsed()).to_string()
                aria-label=move || if collapsed() { texts.expand } else { texts.collapse }
                title=move || if collapsed() { texts.expand } else { texts.collapse }
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

/// One item of the generic flow.
#[component]
fn Item(session: QuestionSession, texts: &'static Texts, uid: usize, item: usize) -> impl IntoView {
    let state = session.state();
    let Some(question) = state.with_untracked(|s| {
        s.active()
            .and_then(|r| r.request.questions.get(item).cloned())
    }) else {
        return ().into_any();
    };
    let multi = question.is_multi_select();
    let has_options = question.has_options();
    let question_id = format!("auq-{uid}-q");
    let editable = move || with_active(state, PendingRequest::is_editable).unwrap_or(false);

    let options = question
        .options()
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let r = ask_user_core::recommend::recommendation(&option.label);
            let label_id = format!("auq-{uid}-o{index}");
            let badge_id = format!("auq-{uid}-o{index}-badge");
            let desc_id = format!("auq-{uid}-o{index}-desc");
            let labelledby = if r.recommended {
                format!("{label_id} {badge_id}")
            } else {
                label_id.clone()
            };
            let selected = move || {
                with_active(state, |r| r.options_view().get(index).is_some_and(|o| o.selected)).unwrap_or(false)
            };
            let focused = move || {
                with_active(state, |r| r.options_view().get(index).is_some_and(|o| o.focused)).unwrap_or(false)
            };
            let description = option.description.clone();
            view! {
                <div
                    class="auq-option"
                    role=if multi { "checkbox" } else { "radio" }
                    data-auq="option"
                    data-option-index=index
                    data-label=option.label.clone()
                    data-recommended=r.recommended.to_string()
                    aria-checked=move || selected().to_string()
                    aria-disabled=move || (!editable()).to_string()
                    aria-labelledby=labelledby
                    aria-describedby=description.as_ref().map(|_| desc_id.clone())
                    tabindex=move || if focused() { "0" } else { "-1" }
                    on:click=move |_| drop(session.dispatch(Action::OptionChosen { index }))
                    on:focus=move |_| drop(session.dispatch(Action::OptionFocused { index }))
                >
                    <span class="auq-option__control" aria-hidden="true"></span>
                    <span class="auq-option__text">
                        <span class="auq-option__head">
                            <span class="auq-option__label" id=label_id>
                                {r.display.to_owned()}
                            </span>
                            {r.recommended.then(|| view! {
                                <span class="auq-badge" id=badge_id.clone() data-auq="badge">{texts.recommended}</span>
                            })}
                        </span>
                        {description.clone().map(|d| view! {
                            <span class="auq-option__desc" id=desc_id.clone()>{d}</span>
                        })}
                    </span>
                    {(index < 9).then(|| view! {
                        <kbd class="auq-option__key" aria-hidden="true">{index + 1}</kbd>
                    })}
                </div>
            }
        })
        .collect_view();

    // Roving focus: when the state moves option focus (a number key, an arrow)
    // while DOM focus is on an option, DOM focus follows.
    let options_ref = NodeRef::<html::Div>::new();
    Effect::new(move |_| {
        let Some(index) = with_active(state, |r| r.option_focus).flatten() else {
            return;
        };
        let Some(list) = options_ref.get() else {
            return;
        };
        let focused = document().active_element();
        let on_option = focused.as_ref().is_some_and(|e| {
            list.contains(Some(e)) && e.get_attribute("data-auq").as_deref() == Some("option")
        });
        let selector = format!("[data-option-index=\"{index}\"]");
        if on_option
            && let Some(target) = list.query_selector(&selector).ok().flatten()
            && focused.as_ref() != Some(&target)
            && let Ok(target) = target.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = target.focus();
        }
    });
    let text_ref = NodeRef::<html::Textarea>::new();
    // Keep the box in step with the state (restore, skip) without touching it
    // while the person types: the same value is never written back.
    Effect::new(move |_| {
        let text = with_active(state, |r| r.text().to_owned()).unwrap_or_default();
        if let Some(el) = text_ref.get()
            && el.value() != text
        {
            el.set_value(&text);
        }
    });
    let text_id = format!("auq-{uid}-text");
    let role = if has_options {
        TextBoxRole::Other
    } else {
        TextBoxRole::YourAnswer
    };
    let (text_label, placeholder) = match role {
        TextBoxRole::Other => (texts.other, texts.other_placeholder),
        TextBoxRole::YourAnswer => (texts.your_answer, texts.answer_placeholder),
    };

    view! {
        <div class="auq-item" data-auq="item" data-multi=multi.to_string()>
            <h2 class="auq-question" id=question_id.clone()>{question.question.clone()}</h2>
            {question.detail.clone().map(|d| view! { <p class="auq-detail" data-auq="detail">{d}</p> })}
            {has_options.then(|| view! {
                <div class="auq-hint" aria-hidden="true">
                    {if multi { texts.choose_any } else { texts.choose_one }}
                </div>
                <div
                    class="auq-options"
                    role=if multi { "group" } else { "radiogroup" }
                    aria-labelledby=question_id.clone()
                    node_ref=options_ref
                >
                    {options}
                </div>
            })}
            <div class="auq-field" data-role=if has_options { "other" } else { "answer" }>
                <label class="auq-field__label" for=text_id.clone()>{text_label}</label>
                <textarea
                    class="auq-text"
                    id=text_id
                    data-auq="text"
                    rows=if has_options { "1" } else { "3" }
                    placeholder=placeholder
                    disabled=move || !editable()
                    node_ref=text_ref
                    on:input=move |ev| {
                        session.dispatch(Action::DraftEdited { text: event_target_value(&ev) });
                    }
                    on:compositionstart=move |_| drop(session.dispatch(Action::CompositionStart))
                    on:compositionend=move |_| drop(session.dispatch(Action::CompositionEnd))
                    on:blur=move |_| drop(session.dispatch(Action::Blur))
                ></textarea>
            </div>
            <StatusLine session texts />
            <Footer session texts />
        </div>
    }
    .into_any()
}

/// Sending / failed line.
#[component]
fn StatusLine(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let state = session.state();
    move || {
        let (key, message) = with_active(state, |r| {
            (r.status_key(), r.failure().map(|f| f.message.clone()))
        })?;
        Some(match key? {
            StatusKey::SendingAnswer => view! {
                <p class="auq-status" data-auq="status"><span class="auq-spinner" aria-hidden="true"></span>{texts.sending}</p>
            }
            .into_any(),
            StatusKey::SendingCancel => view! {
                <p class="auq-status" data-auq="status"><span class="auq-spinner" aria-hidden="true"></span>{texts.cancelling}</p>
            }
            .into_any(),
            key @ (StatusKey::AnswerFailed | StatusKey::CancelFailed) => {
                let prefix = if key == StatusKey::AnswerFailed { texts.answer_failed } else { texts.cancel_failed };
                view! {
                    <p class="auq-error" role="alert" data-auq="error">
                        <strong>{prefix}</strong>" "{message.unwrap_or_default()}
                    </p>
                }
                .into_any()
            }
        })
    }
}

/// The generic flow's footer: steps, Cancel, Back, Skip, Next, Submit.
#[component]
fn Footer(session: QuestionSession, texts: &'static Texts) -> impl IntoView {
    let state = session.state();
    let active = move |f: fn(&PendingRequest) -> bool| with_active(state, f).unwrap_or(false);
    let dispatch = move |action: Action| drop(session.dispatch(action));
    let steps = move || {
        let states = with_active(state, |r| {
            let current = r.current_index();
            (0..r.len())
                .map(|i| (i, r.item_state(i), i == current))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
        (states.len() > 1).then(|| {
            states
                .into_iter()
                .map(|(index, item_state, current)| {
                    let (name, state_text) = match item_state {
                        ItemState::Answered => ("answered", texts.answered),
                        ItemState::Skipped => ("skipped", texts.skipped),
                        ItemState::Unanswered => ("open", texts.unanswered),
                    };
                    view! {
                        <button
                            type="button"
                            class="auq-step"
                            data-auq="step"
                            data-state=name
                            aria-current=current.then_some("step")
                            aria-label=format!("{}: {state_text}", texts.step(index + 1))
                            title=format!("{}: {state_text}", texts.step(index + 1))
                            on:click=move |_| dispatch(Action::GoTo { index })
                        ></button>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <footer class="auq-footer">
            <button
                type="button"
                class="auq-btn auq-btn--quiet auq-btn--danger"
                data-auq="cancel"
                disabled=move || !active(PendingRequest::is_editable)
                on:click=move |_| dispatch(Action::Close)
            >
                {texts.cancel}
            </button>
            <nav class="auq-steps" aria-label=texts.steps>{steps}</nav>
            <div class="auq-footer__actions">
                <button
                    type="button"
                    class="auq-btn"
                    data-auq="back"
                    disabled=move || !active(PendingRequest::can_go_back)
                    on:click=move |_| dispatch(Action::Back)
                >
                    {texts.back}
                </button>
                <button
                    type="button"
                    class="auq-btn"
                    data-auq="skip"
                    disabled=move || !active(PendingRequest::is_editable)
                    on:click=move |_| dispatch(Action::Skip)
                >
                    {texts.skip}
                </button>
                <button
                    type="button"
                    class="auq-btn"
                    data-auq="next"
                    disabled=move || !active(PendingRequest::can_go_next)
                    on:click=move |_| dispatch(Action::Next)
                >
                    {texts.next}
                </button>
                // aria-disabled, not disabled: a click on an incomplete batch moves
                // to the first open item and says what is missing.
                <button
                    type="button"
                    class="auq-btn auq-btn--primary"
                    data-auq="submit"
                    aria-disabled=move || (!active(PendingRequest::can_submit)).to_string()
                    disabled=move || !active(PendingRequest::is_editable)
                    on:click=move |_| dispatch(Action::Submit)
                >
                    {texts.submit}
                </button>
            </div>
        </footer>
    }
}

/// The plan-review panel: the plan as sanitised Markdown, approve (primary),
/// decline, and "Chat about it" (cancels so the normal composer returns).
#[component]
fn PlanReview(session: QuestionSession, texts: &'static Texts, uid: usize) -> impl IntoView {
    let state = session.state();
    let Some((question, plan, approve, decline)) = state.with_untracked(|s| {
        s.active().map(|r| {
            (
                r.current_question().question.clone(),
                r.plan().unwrap_or_default().to_owned(),
                r.approve_label().unwrap_or_default().to_owned(),
                r.decline_label().map(str::to_owned),
            )
        })
    }) else {
        return ().into_any();
    };
    let editable = move || with_active(state, PendingRequest::is_editable).unwrap_or(false);
    let dispatch = move |action: Action| drop(session.dispatch(action));
    let plan_ref = NodeRef::<html::Div>::new();
    plan_ref.on_load(move |el| {
        el.set_text_content(None);
        markdown::render_into(&el, &markdown::parse(&plan));
    });
    let heading = format!("auq-{uid}-plan");
    let labelledby = heading.clone();
    view! {
        <div class="auq-plan" data-auq="plan-review" tabindex="-1" aria-labelledby=labelledby>
            <h2 class="auq-question" id=heading>{question}</h2>
            <div class="auq-plan__body auq-markdown" data-auq="plan" node_ref=plan_ref></div>
            <StatusLine session texts />
            <footer class="auq-footer auq-footer--plan">
                <button
                    type="button"
                    class="auq-btn auq-btn--quiet"
                    data-auq="chat"
                    disabled=move || !editable()
                    on:click=move |_| dispatch(Action::ChatAboutIt)
                >
                    {texts.chat_about_it}
                </button>
                <div class="auq-footer__actions">
                    {decline.map(|label| view! {
                        <button
                            type="button"
                            class="auq-btn"
                            data-auq="decline"
                            disabled=move || !editable()
                            on:click=move |_| dispatch(Action::Decline)
                        >
                            {label}
                        </button>
                    })}
                    <button
                        type="button"
                        class="auq-btn auq-btn--primary"
                        data-auq="approve"
                        disabled=move || !editable()
                        on:click=move |_| dispatch(Action::Approve)
                    >
                        {approve}
                    </button>
                </div>
            </footer>
        </div>
    }
    .into_any()
}
