//! # ask-user-core
//!
//! The provider-neutral vocabulary of ask-user: what a question batch, an answer
//! batch and a failure are, every rule that checks them, the wire frames the host
//! and the browser exchange, the questionnaire state machine a composer renders,
//! and the `ask_user_question` tool (schema, description, result text).
//!
//! Pure Rust + serde. It compiles for native and `wasm32-unknown-unknown` and must
//! never depend on leptos, axum, tokio, web-sys or wasm-bindgen (`tests/tests/tidy.rs`
//! checks it): the host and the browser both build on it, so the rules live here
//! once.
//!
//! ## A full ask through a toy provider
//!
//! A tool call hands its arguments to [`UserInteraction::ask`]; core validates
//! them, asks the registered provider, and validates and normalises its answer.
//! [`tool::render_result`] turns the outcome into the tool result text.
//!
//! ```
//! use std::sync::Arc;
//! use ask_user_core::tool::render_result;
//! use ask_user_core::{
//!     AbortSignal, Answer, AnswerBatch, AskContext, AskRequest, ErrorCode, ProviderFuture,
//!     UserInteraction, UserInteractionProvider,
//! };
//!
//! /// Picks the recommended option of every question and skips free-text ones.
//! struct PicksRecommended;
//!
//! impl UserInteractionProvider for PicksRecommended {
//!     fn ask(&self, request: AskRequest, _context: AskContext) -> ProviderFuture<'_> {
//!         let answers = request
//!             .questions
//!             .iter()
//!             .map(|q| Answer {
//!                 id: q.id.clone(),
//!                 selected: q
//!                     .options()
//!                     .iter()
//!                     .filter(|o| ask_user_core::is_recommended(&o.label))
//!                     .map(|o| o.label.clone())
//!                     .collect(),
//!                 // Padding is trimmed by core; a blank answer counts as a skip.
//!                 custom: (!q.has_options()).then(|| "  ".to_owned()),
//!             })
//!             .collect();
//!         Box::pin(async move { Ok(AnswerBatch::new(answers)) })
//!     }
//! }
//!
//! let service = UserInteraction::new();
//! let registration = service.register_provider(Arc::new(PicksRecommended))?;
//!
//! let request = AskRequest::from_json(r#"{"questions": [
//!     {"id": "db", "question": "Which database?",
//!      "options": [{"label": "SQLite"}, {"label": "Postgres (Recommended)"}]},
//!     {"id": "notes", "question": "Anything else?"}
//! ]}"#)?;
//! let result = futures::executor::block_on(service.ask(request.clone(), AbortSignal::never()));
//! assert_eq!(
//!     render_result(&result),
//!     r#"{"answers":[{"id":"db","selected":["Postgres (Recommended)"]},{"id":"notes","selected":[]}]}"#
//! );
//!
//! // Once the registration is gone there is no silent fallback.
//! registration.dispose();
//! let result = futures::executor::block_on(service.ask(request, AbortSignal::never()));
//! assert_eq!(result.as_ref().unwrap_err().code, ErrorCode::NoProvider);
//! assert_eq!(
//!     render_result(&result),
//!     "Error: no user-interaction provider is registered (NO_PROVIDER)"
//! );
//! # Ok::<(), ask_user_core::UserInteractionError>(())
//! ```

pub mod answer;
pub mod attention;
pub mod display;
pub mod error;
pub mod keys;
pub mod limits;
pub mod markdown;
pub mod questionnaire;
pub mod recommend;
pub mod request;
pub mod seam;
pub mod session;
mod shape;
mod small_sort;
pub mod tool;
pub mod transcript;
pub mod wire;

pub use answer::{Answer, AnswerBatch};
pub use error::{ErrorCode, UserInteractionError};
pub use recommend::{Recommendation, is_recommended, recommendation};
pub use request::{
    AskRequest, Audience, EscalateAfter, Intent, IntentKind, Member, Question, QuestionOption,
};
pub use seam::{
    AbortController, AbortSignal, AskContext, PresentedAs, ProviderFuture, Registration,
    UserInteraction, UserInteractionProvider,
};
pub use session::{DEFAULT_SESSION, SessionId};
