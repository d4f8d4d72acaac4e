//! The session object layer: one questionnaire state machine per session, fed by
//! the host's event stream, with its network and storage effects performed here
//! and its DOM effects (focus, announcements) handed to the mounted composer.

use crate::storage;
use crate::transport::{
    EventSink, EventStream, HttpTransport, LocalFuture, PostError, StreamStatus, Transport,
};
use ask_user_core::questionnaire::{Action, Effect, Questionnaire, apply};
use ask_user_core::wire::{MessageCreated, SessionEvent};
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

type UiHandler = Rc<dyn Fn(&Effect)>;

/// Context and handle: one session's pending questions and the transport that
/// answers them. Cheap to copy.
#[derive(Clone, Copy)]
pub struct QuestionSession {
    state: RwSignal<Questionnaire>,
    transport: StoredValue<Transport, LocalStorage>,
    ui: StoredValue<Option<UiHandler>, LocalStorage>,
}

impl QuestionSession {
    /// A session with nothing pending, answering through `transport`.
    pub fn new(transport: Transport) -> Self {
        Self {
            state: RwSignal::new(Questionnaire::new()),
            transport: StoredValue::new_local(transport),
            ui: StoredValue::new_local(None),
        }
    }

    /// The state machine's state (read it through core's view helpers).
    pub fn state(&self) -> RwSignal<Questionnaire> {
        self.state
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport.get_value()
    }

    /// Applies an action and performs its effects: POSTs, storage and ticks
    /// here; focus and announcements through the mounted composer. Returns every
    /// effect (the caller checks [`Effect::PreventDefault`]).
    pub fn dispatch(&self, action: Action) -> Vec<Effect> {
        let Some(effects) = self.state.try_update(|state| apply(state, action)) else {
            return Vec::new();
        };
        for effect in &effects {
            self.perform(effect);
        }
        effects
    }

    /// Sets the handler for DOM effects (the mounted composer calls this).
    pub(crate) fn set_ui_handler(&self, handler: Option<UiHandler>) {
        let _ = self.ui.try_set_value(handler);
    }

    fn perform(&self, effect: &Effect) {
        let session = *self;
        match effect {
            Effect::PostAnswer { question_id, batch } => {
                let post = self
                    .transport
                    .with_value(|t| t.post_answer(question_id, batch));
                self.settle(question_id.clone(), post);
            }
            Effect::PostCancel { question_id } => {
                let post = self.transport.with_value(|t| t.post_cancel(question_id));
                self.settle(question_id.clone(), post);
            }
            Effect::PersistDrafts {
                question_id,
                drafts,
            } => storage::save_drafts(question_id, drafts),
            Effect::ClearDrafts { question_id } => storage::clear_drafts(question_id),
            Effect::LoadDrafts { question_id } => {
                if let Some(drafts) = storage::load_drafts(question_id) {
                    session.dispatch(Action::DraftsRestored {
                        question_id: question_id.clone(),
                        drafts,
                    });
                }
            }
            Effect::ScheduleTick => set_timeout(
                move || drop(session.dispatch(Action::Tick)),
                Default::default(),
            ),
            Effect::Focus(_) | Effect::Announce(_) => {
                if let Some(handler) = self.ui.try_get_value().flatten() {
                    handler(effect);
                }
            }
            Effect::PreventDefault => {}
        }
    }

    fn settle(&self, question_id: String, post: LocalFuture<Result<(), PostError>>) {
        let session = *self;
        leptos::task::spawn_local(async move {
            let action = match post.await {
                Ok(()) => Action::SubmitSucceeded { question_id },
                Err(error) => Action::SubmitFailed {
                    question_id,
                    status: error.status,
                    code: error.code,
                    message: error.message,
                },
            };
            session.dispatch(action);
        });
    }
}

/// What [`use_question_stream`] returns.
#[derive(Clone, Copy)]
pub struct UseQuestionStreamReturn {
    /// The session's questions (give it to `QuestionComposer`).
    pub session: QuestionSession,
    /// The transcript, in arrival order, without duplicates.
    pub messages: ReadSignal<Vec<MessageCreated>>,
    /// Whether the event stream is up.
    pub status: ReadSignal<StreamStatus>,
}

impl UseQuestionStreamReturn {
    /// Posts a transcript message (`POST …/messages {"text"}`).
    pub fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>> {
        self.session.transport().post_message(text)
    }
}

/// Opens the host's event stream for `session` at `base_url` (empty for the
/// page's own origin) and answers through the host's HTTP API. `token` is for
/// cross-origin embedding (Bearer on POSTs, `?token=` on the stream).
///
/// A hidden tab closes its stream and reopens it when visible again (the host
/// replays what is pending), so many open tabs never exhaust the browser's
/// ~6 connections per host.
pub fn use_question_stream(
    base_url: impl Into<String>,
    session: impl Into<String>,
    token: Option<String>,
) -> UseQuestionStreamReturn {
    use_question_stream_with(Transport::new(HttpTransport::new(base_url, session, token)))
}

/// [`use_question_stream`] over any transport (e.g. a fake in tests).
pub fn use_question_stream_with(transport: Transport) -> UseQuestionStreamReturn {
    let session = QuestionSession::new(transport.clone());
    let (messages, set_messages) = signal(Vec::<MessageCreated>::new());
    let (status, set_status) = signal(StreamStatus::Closed);
    let sink = EventSink::new(
        move |event| match event {
            SessionEvent::MessageCreated(message) => {
                // Reopens replay the transcript: keep each id once.
                let _ = set_messages.try_update(|list| {
                    if !list.iter().any(|m| m.id == message.id) {
                        list.push(message);
                    }
                });
            }
            frame => drop(session.dispatch(Action::FrameReceived(frame))),
        },
        move |s| {
            let _ = set_status.try_set(s);
        },
    );
    let stream: StoredValue<Option<EventStream>, LocalStorage> = StoredValue::new_local(None);
    let open = {
        let transport = transport.clone();
        move || {
            if stream.try_with_value(Option::is_none).unwrap_or(false) {
                let opened = transport.open_events(sink.clone());
                stream.set_value(Some(opened));
            }
        }
    };
    // Dropping the handle closes the EventSource.
    let close = move || drop(stream.try_update_value(|s| s.take()));

    let document = document();
    if !document.hidden() {
        open();
    }
    let on_visibility = Closure::<dyn FnMut()>::new(move || {
        if web_sys::window().is_some_and(|w| w.document().is_some_and(|d| d.hidden())) {
            close();
        } else {
            open();
        }
    });
    let _ = document.add_event_listener_with_callback(
        "visibilitychange",
        on_visibility.as_ref().unchecked_ref(),
    );
    let listener = SendWrapper::new((document, on_visibility));
    on_cleanup(move || {
        let (document, on_visibility) = listener.take();
        let _ = document.remove_event_listener_with_callback(
            "visibilitychange",
            on_visibility.as_ref().unchecked_ref(),
        );
        close();
    });
    UseQuestionStreamReturn {
        session,
        messages,
        status,
    }
}
