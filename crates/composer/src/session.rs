//! The session object layer: one questionnaire state machine per session, fed by
//! the host's event stream, rendered through one view model, with its network,
//! storage and timer effects performed here.

use crate::storage;
use crate::transport::{
    EventSink, EventStream, HttpTransport, LocalFuture, PostError, StreamStatus, Transport,
};
use ask_user_core::SessionId;
use ask_user_core::keys::KeyInput;
use ask_user_core::questionnaire::{Action, Effect, Questionnaire, ViewModel, apply, view};
use ask_user_core::transcript;
use ask_user_core::wire::{MessageCreated, SessionEvent, TranscriptEntry};
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// Context and handle: one session's pending questions and the transport that
/// answers them. Cheap to copy.
///
/// The questionnaire's state is not reactive; after every action the session
/// recomputes core's view model and sets it in one signal, which is all the
/// components read (a `Memo` over a state signal did the same with a second
/// reactive node and 1.7 KB more gzipped wasm).
#[derive(Clone, Copy)]
pub struct QuestionSession {
    state: StoredValue<Questionnaire>,
    view: RwSignal<ViewModel>,
    transport: StoredValue<Transport, LocalStorage>,
}

impl QuestionSession {
    /// A session with nothing pending, answering through `transport`.
    pub fn new(transport: Transport) -> Self {
        Self {
            state: StoredValue::new(Questionnaire::new()),
            view: RwSignal::new(ViewModel::default()),
            transport: StoredValue::new_local(transport),
        }
    }

    /// What to render: core's view model of the session, after the last action.
    pub fn view(&self) -> ReadSignal<ViewModel> {
        self.view.read_only()
    }

    /// The view model for this crate's components (only the session sets it).
    pub(crate) fn view_model(&self) -> RwSignal<ViewModel> {
        self.view
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport.get_value()
    }

    /// Applies an action and performs its effects.
    pub fn dispatch(&self, action: Action) {
        self.run(action);
    }

    /// Forwards a keydown; true when the questionnaire handled it, so the
    /// caller prevents its default.
    pub fn keydown(&self, key: KeyInput) -> bool {
        self.run(Action::Key(key))
    }

    /// Applies an action and performs its effects; true when one of them was
    /// [`Effect::PreventDefault`].
    fn run(&self, action: Action) -> bool {
        let Some((effects, shown)) = self.state.try_update_value(|state| {
            let effects = apply(state, action);
            (effects, view(state))
        }) else {
            return false;
        };
        self.view.set(shown);
        let mut prevent_default = false;
        for effect in effects {
            prevent_default |= self.perform(effect);
        }
        prevent_default
    }

    /// Performs one effect; true for [`Effect::PreventDefault`].
    fn perform(&self, effect: Effect) -> bool {
        let session = *self;
        match effect {
            Effect::PostAnswer { question_id, batch } => {
                let post = self
                    .transport
                    .with_value(|t| t.post_answer(&question_id, &batch));
                self.settle(question_id, post);
            }
            Effect::PostCancel { question_id } => {
                let post = self.transport.with_value(|t| t.post_cancel(&question_id));
                self.settle(question_id, post);
            }
            Effect::PersistDrafts {
                question_id,
                drafts,
            } => storage::save_drafts(&question_id, &drafts),
            Effect::ClearDrafts { question_id } => storage::clear_drafts(&question_id),
            Effect::LoadDrafts { question_id } => {
                if let Some(drafts) = storage::load_drafts(&question_id) {
                    self.dispatch(Action::DraftsRestored {
                        question_id,
                        drafts,
                    });
                }
            }
            Effect::ScheduleTick => {
                set_timeout(move || session.dispatch(Action::Tick), Default::default())
            }
            Effect::PreventDefault => return true,
        }
        false
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
    /// The conversation: messages and the records of resolved questions, from
    /// `GET …/transcript` and the stream, each once, in time order.
    pub entries: ReadSignal<Vec<TranscriptEntry>>,
    /// Whether the event stream is up.
    pub status: ReadSignal<StreamStatus>,
    /// `GET …/transcript` has answered once (until then an empty conversation
    /// is not known to be empty).
    pub transcript_loaded: ReadSignal<bool>,
    /// The demo agent listens in this session (from the transcript).
    pub demo_agent: ReadSignal<bool>,
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
    session: SessionId,
    token: Option<String>,
) -> UseQuestionStreamReturn {
    use_question_stream_with(Transport::new(HttpTransport::new(base_url, session, token)))
}

/// [`use_question_stream`] over any transport (e.g. a fake in tests).
pub fn use_question_stream_with(transport: Transport) -> UseQuestionStreamReturn {
    let session = QuestionSession::new(transport.clone());
    let (messages, set_messages) = signal(Vec::<MessageCreated>::new());
    let (entries, set_entries) = signal(Vec::<TranscriptEntry>::new());
    let (status, set_status) = signal(StreamStatus::Closed);
    let (transcript_loaded, set_transcript_loaded) = signal(false);
    let (demo_agent, set_demo_agent) = signal(false);
    let add = move |entry: TranscriptEntry| {
        let _ = set_entries.try_update(|list| transcript::merge(list, entry));
    };
    // Every open loads the transcript again: what was resolved while this tab
    // was hidden (its stream closed) comes back with it.
    let load = {
        let transport = transport.clone();
        move || {
            let load = transport.load_transcript();
            leptos::task::spawn_local(async move {
                if let Ok(loaded) = load.await {
                    let _ = set_demo_agent.try_set(loaded.demo_agent);
                    loaded.entries.into_iter().for_each(add);
                    let _ = set_transcript_loaded.try_set(true);
                }
            });
        }
    };
    let sink = EventSink::new(
        move |event| match event {
            SessionEvent::MessageCreated(message) => {
                add(TranscriptEntry::Message(message.clone()));
                // Reopens replay the transcript: keep each id once.
                let _ = set_messages.try_update(|list| {
                    if !list.iter().any(|m| m.id == message.id) {
                        list.push(message);
                    }
                });
            }
            SessionEvent::QuestionResolved(resolved) => {
                if let Some(record) = resolved.record.clone() {
                    add(TranscriptEntry::Record(record));
                }
                session.dispatch(Action::FrameReceived(SessionEvent::QuestionResolved(
                    resolved,
                )));
            }
            frame => session.dispatch(Action::FrameReceived(frame)),
        },
        move |s| {
            if s == StreamStatus::Open {
                load();
            }
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
        entries,
        status,
        transcript_loaded,
        demo_agent,
    }
}
