//! A host in memory: records POSTs, answers them from a queue, replays frames
//! on every stream open and emits frames on demand.

use super::{EventSink, EventStream, LocalFuture, PostError, QuestionTransport, StreamStatus};
use ask_user_core::AnswerBatch;
use ask_user_core::wire::{SessionEvent, SessionList, Transcript};
use std::rc::Rc;

/// A POST a [`MemoryTransport`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedPost {
    /// `POST …/questions/{id}/answer`.
    Answer {
        /// The question id.
        id: String,
        /// The batch.
        batch: AnswerBatch,
    },
    /// `POST …/questions/{id}/cancel`.
    Cancel {
        /// The question id.
        id: String,
    },
    /// `POST …/messages`.
    Message {
        /// The text.
        text: String,
    },
}

type PostHook = Rc<dyn Fn(&MemoryTransport, &RecordedPost)>;

#[derive(Default)]
struct MemoryInner {
    sinks: Vec<(u64, EventSink)>,
    next_sink: u64,
    opens: usize,
    posts: Vec<RecordedPost>,
    replies: std::collections::VecDeque<Result<(), PostError>>,
    replay: Vec<SessionEvent>,
    transcript: Transcript,
    on_post: Option<PostHook>,
    sessions: SessionList,
    inbox_sinks: Vec<(u64, InboxSink)>,
}

type InboxSink = Rc<dyn Fn(SessionList)>;

/// An in-memory host for tests, fixtures and demos: it records every POST,
/// answers them from a queue (success by default), replays a list of frames on
/// every stream open (like the host does), and lets the caller emit frames.
#[derive(Clone, Default)]
pub struct MemoryTransport {
    inner: Rc<std::cell::RefCell<MemoryInner>>,
}

impl MemoryTransport {
    /// A host with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers a frame to every open stream now.
    pub fn emit(&self, event: SessionEvent) {
        let sinks: Vec<EventSink> = self
            .inner
            .borrow()
            .sinks
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for sink in sinks {
            sink.event(event.clone());
        }
    }

    /// Frames every stream open delivers first (the host's replay).
    pub fn set_replay(&self, events: Vec<SessionEvent>) {
        self.inner.borrow_mut().replay = events;
    }

    /// What `GET /api/sessions` answers from now on.
    pub fn set_sessions(&self, sessions: SessionList) {
        self.inner.borrow_mut().sessions = sessions;
    }

    /// Delivers an `inbox/changed` list to every open inbox stream now.
    pub fn emit_inbox(&self, sessions: SessionList) {
        self.inner.borrow_mut().sessions = sessions.clone();
        let sinks: Vec<InboxSink> = self
            .inner
            .borrow()
            .inbox_sinks
            .iter()
            .map(|(_, s)| Rc::clone(s))
            .collect();
        for sink in sinks {
            sink(sessions.clone());
        }
    }

    /// How many inbox streams are open now.
    pub fn inbox_streams(&self) -> usize {
        self.inner.borrow().inbox_sinks.len()
    }

    /// What `GET …/transcript` answers from now on.
    pub fn set_transcript(&self, transcript: Transcript) {
        self.inner.borrow_mut().transcript = transcript;
    }

    /// The reply to the next POST (later POSTs succeed unless queued too).
    pub fn reply_next(&self, reply: Result<(), PostError>) {
        self.inner.borrow_mut().replies.push_back(reply);
    }

    /// Runs after every POST is recorded (e.g. to emit `question/resolved`).
    pub fn on_post(&self, f: impl Fn(&MemoryTransport, &RecordedPost) + 'static) {
        self.inner.borrow_mut().on_post = Some(Rc::new(f));
    }

    /// Every POST so far, in order.
    pub fn posts(&self) -> Vec<RecordedPost> {
        self.inner.borrow().posts.clone()
    }

    /// How many streams were opened so far.
    pub fn opens(&self) -> usize {
        self.inner.borrow().opens
    }

    /// How many streams are open now.
    pub fn open_streams(&self) -> usize {
        self.inner.borrow().sinks.len()
    }

    fn record(&self, post: RecordedPost) -> LocalFuture<Result<(), PostError>> {
        let (reply, hook) = {
            let mut inner = self.inner.borrow_mut();
            inner.posts.push(post.clone());
            (
                inner.replies.pop_front().unwrap_or(Ok(())),
                inner.on_post.clone(),
            )
        };
        if let Some(hook) = hook {
            hook(self, &post);
        }
        Box::pin(async move { reply })
    }
}

impl QuestionTransport for MemoryTransport {
    fn post_answer(&self, id: &str, batch: &AnswerBatch) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Answer {
            id: id.to_owned(),
            batch: batch.clone(),
        })
    }

    fn post_cancel(&self, id: &str) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Cancel { id: id.to_owned() })
    }

    fn post_message(&self, text: &str) -> LocalFuture<Result<(), PostError>> {
        self.record(RecordedPost::Message {
            text: text.to_owned(),
        })
    }

    fn load_transcript(&self) -> LocalFuture<Result<Transcript, PostError>> {
        let transcript = self.inner.borrow().transcript.clone();
        Box::pin(async move { Ok(transcript) })
    }

    fn open_events(&self, sink: EventSink) -> EventStream {
        let key = {
            let mut inner = self.inner.borrow_mut();
            inner.opens += 1;
            inner.next_sink += 1;
            let key = inner.next_sink;
            inner.sinks.push((key, sink.clone()));
            key
        };
        // Like a real stream, the replay arrives after the open returns.
        let inner = Rc::clone(&self.inner);
        wasm_bindgen_futures::spawn_local(async move {
            let replay = {
                let inner = inner.borrow();
                if !inner.sinks.iter().any(|(k, _)| *k == key) {
                    return;
                }
                inner.replay.clone()
            };
            sink.status(StreamStatus::Open);
            for event in replay {
                sink.event(event);
            }
        });
        let inner = Rc::clone(&self.inner);
        EventStream::new(move || {
            inner.borrow_mut().sinks.retain(|(k, _)| *k != key);
        })
    }
}

impl crate::inbox::InboxTransport for MemoryTransport {
    fn load_sessions(&self) -> LocalFuture<Result<SessionList, PostError>> {
        let sessions = self.inner.borrow().sessions.clone();
        Box::pin(async move { Ok(sessions) })
    }

    fn open_inbox(&self, on_list: Rc<dyn Fn(SessionList)>) -> EventStream {
        let key = {
            let mut inner = self.inner.borrow_mut();
            inner.next_sink += 1;
            let key = inner.next_sink;
            inner.inbox_sinks.push((key, on_list));
            key
        };
        let inner = Rc::clone(&self.inner);
        EventStream::new(move || {
            inner.borrow_mut().inbox_sinks.retain(|(k, _)| *k != key);
        })
    }
}
