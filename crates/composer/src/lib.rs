//! # ask-user-composer
//!
//! The question composer: a Leptos 0.8 component library that takes over a
//! conversation's composer slot while questions are pending. It never enables
//! Leptos's `csr` feature itself (the app does) and takes its transport from the
//! caller, so other web UIs can embed it.
//!
//! It must never depend on the host (`tests/tests/tidy.rs` checks it) or hold
//! questionnaire rules of its own: the rules live in `ask-user-core`; this crate
//! renders core's view model and performs core's effects.
//!
//! - [`use_question_stream`] opens the host's event stream (closing it while the
//!   tab is hidden) and returns a [`QuestionSession`]: core's questionnaire state
//!   machine behind one view-model signal, with its POST, sessionStorage and timer
//!   effects performed.
//! - [`QuestionComposer`] renders the view model and turns DOM events into
//!   state-machine actions; [`ComposerSlot`] and [`MessageComposer`] give it a
//!   slot to take over; [`Conversation`] is all of it with a transcript.
//! - [`QuestionTransport`] is what a host must provide; [`HttpTransport`] is the
//!   ask-user host's HTTP API, [`MemoryTransport`] a host in memory.
//!
//! Styles live in `style/composer.css` (also [`STYLESHEET`]), every class under
//! the `auq-` prefix.

pub mod attention;
pub mod composer;
pub mod conversation;
pub mod i18n;
pub mod inbox;
pub mod json;
pub mod markdown;
pub mod notify;
pub mod notify_device;
pub mod page;
pub mod pair_link;
pub mod presence;
pub mod question_view;
pub mod session;
pub mod slot;
pub mod storage;
pub mod transport;

pub use composer::QuestionComposer;
pub use conversation::{
    Conversation, MessageComposer, MountOptions, Transcript, conversation_view,
    conversation_view_with,
};
pub use i18n::{Lang, Locale, Texts};
pub use inbox::{INBOX_LOCK, Inbox, InboxTransport, use_inbox};
pub use markdown::Markdown;
pub use page::{PageHost, page, page_view, page_view_with};
pub use question_view::QuestionView;
pub use session::{
    QuestionSession, UseQuestionStreamReturn, use_question_stream, use_question_stream_with,
};
pub use slot::{ComposerSlot, ComposerSlotContext, QUESTION_ENTRY, use_composer_slot};
pub use transport::{
    EventSink, EventStream, HttpTransport, LocalFuture, MemoryTransport, PostError,
    QuestionTransport, RecordedPost, StreamStatus, Transport,
};

/// `Effect::new` over a boxed closure: Leptos compiles an effect's async loop
/// once per closure type (about 1.5 KiB of wasm each), so every effect of the
/// composer, the page and the embed goes through this one. What an effect
/// keeps from one run to the next (`Effect::new`'s previous value) lives in
/// its closure.
pub fn effect(run: impl FnMut() + 'static) {
    let mut run: Box<dyn FnMut()> = Box::new(run);
    leptos::prelude::Effect::new(move |_| run());
}

/// The composer's stylesheet (every rule under `.auq-…`), for pages that do not
/// link `style/composer.css` themselves.
pub const STYLESHEET: &str = include_str!("../style/composer.css");
