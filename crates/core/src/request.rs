//! The request: the `ask_user_question` tool's arguments.

use serde::{Deserialize, Serialize};

/// The tool's arguments: a batch of questions asked together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The questions, in the order the person sees them.
    pub questions: Vec<Question>,
}

/// One question of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Caller-chosen id, echoed in the answer.
    pub id: String,
    /// The question itself.
    pub question: String,
    /// The options; a question without options collects free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// Displayed text and the value returned when chosen.
    pub label: String,
}
