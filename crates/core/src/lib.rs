//! # ask-user-core
//!
//! The provider-neutral vocabulary of ask-user: what a question batch, an answer
//! batch and a failure are, every rule that checks them, the wire frames the host
//! and the browser exchange, the questionnaire state machine a composer renders,
//! and the `ask_user_question` tool (schema, description, result text).
//!
//! Pure Rust + serde. It compiles for native and `wasm32-unknown-unknown` and must
//! never depend on leptos, axum, tokio or web-sys: the host and the browser both
//! build on it, so the rules live here once.

pub mod answer;
pub mod error;
pub mod limits;
pub mod questionnaire;
pub mod recommend;
pub mod request;
pub mod seam;
pub mod tool;
pub mod wire;

pub use answer::{Answer, AnswerBatch};
pub use error::{ErrorCode, UserInteractionError};
pub use recommend::{Recommendation, is_recommended, recommendation};
pub use request::{AskRequest, Intent, IntentKind, Question, QuestionOption};
pub use seam::{
    AbortController, AbortSignal, AskContext, DEFAULT_SESSION, ProviderFuture, Registration,
    UserInteraction, UserInteractionProvider,
};
