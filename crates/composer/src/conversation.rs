//! The conversation around the question composer: the transcript, the normal
//! composer ("Message" + "Send"), and [`Conversation`], which puts them and the
//! question composer together in one keyed composer slot.

use crate::composer::{QuestionComposer, enter_sends};
use crate::i18n::{Lang, Texts, use_locale};
use crate::markdown::Markdown;
use crate::session::{UseQuestionStreamReturn, use_question_stream, use_question_stream_with};
use crate::slot::{ComposerSlot, use_composer_slot};
use crate::transport::{StreamStatus, Transport};
use ask_user_core::SessionId;
use ask_user_core::display::neutralised;
use ask_user_core::transcript::{RecordAnswer, RecordView, record_view};
use ask_user_core::wire::{MessageCreated, Outcome, Role, TranscriptEntry};
use leptos::either::Either;
use leptos::html;
use leptos::prelude::*;
use std::time::Duration;

/// The transcript: messages as sent and the records of resolved questions,
/// oldest first.
#[component]
pub fn Transcript(
    /// What to show (`UseQuestionStreamReturn::entries`).
    #[prop(into)]
    entries: Signal<Vec<TranscriptEntry>>,
    /// Interface language; defaults to the `Locale` context, else the browser's.
    #[prop(optional)]
    lang: Option<Lang>,
) -> impl IntoView {
    let texts = lang
        .map(Lang::texts)
        .unwrap_or_else(|| use_locale().texts());
    let list = NodeRef::<html::Ol>::new();
    // Keep the newest entry in view.
    crate::effect(move || {
        entries.track();
        if let Some(list) = list.get() {
            set_timeout(
                move || list.set_scroll_top(list.scroll_height()),
                Duration::ZERO,
            );
        }
    });
    let key = |entry: &TranscriptEntry| match entry {
        TranscriptEntry::Message(m) => format!("m:{}", m.id),
        TranscriptEntry::Record(r) => format!("r:{}", r.id),
    };
    view! {
        <ol class="auq-transcript" data-auq="transcript" aria-label=texts.transcript node_ref=list>
            <For each=move || entries.get() key=key let(entry)>
                {match entry {
                    TranscriptEntry::Message(message) => Either::Left(view! { <Message message /> }),
                    TranscriptEntry::Record(record) => {
                        Either::Right(view! { <Record record=record_view(&record) texts /> })
                    }
                }}
            </For>
        </ol>
    }
}

/// One message: the agent's as sanitised Markdown, the person's as typed;
/// both with bidi controls and zero-width characters made visible.
#[component]
fn Message(message: MessageCreated) -> impl IntoView {
    view! {
        <li
            class="auq-message"
            data-auq="message-item"
            data-id=message.id.clone()
            data-role=match message.role {
                Role::User => "user",
                Role::Agent => "agent",
            }
        >
            {match message.role {
                Role::Agent => Either::Left(view! { <Markdown text=neutralised(message.text.clone()) /> }),
                Role::User => Either::Right(neutralised(message.text.clone())),
            }}
        </li>
    }
}

/// A resolved question, read-only: each question with what the person gave,
/// or the batch's outcome; a "Reply instead" note follows as their message.
#[component]
fn Record(record: RecordView, texts: &'static Texts) -> impl IntoView {
    let answered = record.outcome == Outcome::Answered;
    let by = record.asked_by.clone().map(|name| texts.asked_by(&name));
    let items = record
        .items
        .into_iter()
        .map(|item| {
            let answer = match item.answer {
                Some(RecordAnswer::Given { labels, custom }) => {
                    let mut parts = labels;
                    parts.extend(custom);
                    parts.join(" · ")
                }
                Some(RecordAnswer::Skipped) => texts.skipped.to_owned(),
                None => String::new(),
            };
            view! {
                <dt class="auq-record__question">{item.question}</dt>
                {answered.then(|| view! { <dd class="auq-record__answer">{answer}</dd> })}
            }
        })
        .collect_view();
    let note = record.note.map(|note| {
        view! {
            <li class="auq-message" data-auq="note" data-role="user">{note}</li>
        }
    });
    view! {
        <li
            class="auq-message auq-record"
            data-auq="record"
            data-id=record.id
            data-role="agent"
            data-outcome=record.outcome.as_str()
        >
            {by.map(|by| view! { <p class="auq-record__by">{by}</p> })}
            <dl class="auq-record__items">{items}</dl>
            {(!answered).then(|| view! {
                <p class="auq-record__outcome">{texts.record_outcome(record.outcome)}</p>
            })}
        </li>
        {note}
    }
}

/// The normal composer: a "Message" box and a "Send" button. Enter sends,
/// Shift+Enter inserts a newline, and Enter during IME composition only confirms
/// the candidate (core's [`sends_message`], with the questionnaire's IME state
/// machine). Hidden while another entry holds the composer slot.
#[component]
pub fn MessageComposer(
    /// Called with the trimmed text when the person sends a message.
    on_send: Callback<String>,
    /// Disables sending (e.g. while a previous message is in flight).
    #[prop(optional, into)]
    disabled: Signal<bool>,
    /// Interface language; defaults to the `Locale` context, else the browser's.
    #[prop(optional)]
    lang: Option<Lang>,
) -> impl IntoView {
    let texts: &Texts = lang
        .map(Lang::texts)
        .unwrap_or_else(|| use_locale().texts());
    let slot = use_composer_slot();
    let (text, set_text) = signal(String::new());
    let input = NodeRef::<html::Textarea>::new();
    if let Some(slot) = slot {
        // The slot came back: take focus (after the render that un-hides us).
        let mut previous = None;
        crate::effect(move || {
            let requests = slot.focus_requests();
            if previous.is_some_and(|p| p != requests) {
                set_timeout(
                    move || {
                        if let Some(input) = input.get_untracked() {
                            let _ = input.focus();
                        }
                    },
                    Duration::ZERO,
                );
            }
            previous = Some(requests);
        });
    }
    let send = move || {
        let value = text.get_untracked().trim().to_owned();
        if value.is_empty() || disabled.get_untracked() {
            return;
        }
        on_send.run(value);
        set_text.set(String::new());
    };
    view! {
        <form
            class="auq-message-composer"
            data-auq="message-composer"
            hidden=Signal::derive(move || slot.is_some_and(|s| !s.is_free()))
            on:submit=move |ev| {
                ev.prevent_default();
                send();
            }
        >
            <textarea
                class="auq-text auq-message-composer__input"
                data-auq="message"
                aria-label=texts.message
                placeholder=texts.message
                rows="1"
                node_ref=input
                prop:value=move || text.get()
                on:input=move |ev| set_text.set(event_target_value(&ev))
                {..enter_sends(send, false)}
            ></textarea>
            <button type="submit" class="auq-btn auq-btn--primary" data-auq="send" disabled=disabled>
                {texts.send}
            </button>
        </form>
    }
}

/// A whole conversation view over one session: transcript, and a composer slot
/// holding the question composer (entry `"question"`) and the normal composer.
#[component]
pub fn Conversation(
    /// The stream to show (from `use_question_stream` or `use_question_stream_with`).
    stream: UseQuestionStreamReturn,
    /// Interface language; defaults to the `Locale` context, else the browser's.
    #[prop(optional)]
    lang: Option<Lang>,
) -> impl IntoView {
    let lang = lang.unwrap_or_else(|| use_locale().0);
    let texts = lang.texts();
    let (error, set_error) = signal(None::<String>);
    let (sending, set_sending) = signal(false);
    let on_send = Callback::new(move |text: String| {
        set_error.set(None);
        set_sending.set(true);
        let post = stream.post_message(&text);
        leptos::task::spawn_local(async move {
            let result = post.await;
            set_sending.set(false);
            if let Err(e) = result {
                set_error.set(Some(format!("{} {e}", texts.send_failed)));
            }
        });
    });
    // "Reconnecting…" only after the stream was up once, not on first load.
    let was_open = RwSignal::new(false);
    crate::effect(move || {
        if stream.status.get() == StreamStatus::Open {
            was_open.set(true);
        }
    });
    let connection = Signal::derive(move || {
        match stream.status.get() {
            StreamStatus::Connecting if was_open.get() => Some(texts.reconnecting),
            StreamStatus::Failed => Some(texts.disconnected),
            _ => None,
        }
        .map(str::to_owned)
    });
    view! {
        <div class="auq-conversation" data-auq="conversation" lang=lang.tag()>
            <Transcript entries=stream.entries lang />
            {line("auq-connection", "status", "connection", connection)}
            {line("auq-error", "alert", "message-error", error.into())}
            <ComposerSlot>
                <QuestionComposer session=stream.session lang />
                <MessageComposer on_send disabled=sending lang />
            </ComposerSlot>
        </div>
    }
}

/// A `<p>` that shows `text` while there is one (the connection's state, a
/// message that could not be sent): one concrete function for both.
fn line(
    class: &'static str,
    role: &'static str,
    hook: &'static str,
    text: Signal<Option<String>>,
) -> impl IntoView {
    move || {
        text.get()
            .map(|text| view! { <p class=class role=role data-auq=hook>{text}</p> })
    }
}

/// Options for [`conversation_view`]: where the host is and which session.
#[derive(Debug, Clone, Default)]
pub struct MountOptions {
    /// The host's origin (empty for the page's own).
    pub base_url: String,
    /// The session (`default` by default).
    pub session: SessionId,
    /// A Bearer token for cross-origin embedding.
    pub token: Option<String>,
}

/// The view a page or an embed mounts: [`Conversation`] over the host's HTTP API.
pub fn conversation_view(options: MountOptions) -> impl IntoView {
    let stream = use_question_stream(options.base_url, options.session, options.token);
    view! { <Conversation stream /> }
}

/// [`Conversation`] over any transport (tests, fixtures).
pub fn conversation_view_with(transport: Transport) -> impl IntoView {
    let stream = use_question_stream_with(transport);
    view! { <Conversation stream /> }
}
