//! The answer batch, its validation against the request, and normalisation.

use crate::error::{
    ErrorCode, MAX_QUOTED_CHARS, UserInteractionError, quoted, shorten, shorten_quotes_in,
};
use crate::limits::{MAX_CUSTOM_CHARS, MAX_NOTE_CHARS, MAX_OPTIONS};
use crate::request::{AskRequest, Question, expect_object};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the person answered: one entry per question, in question order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerBatch {
    /// The answers.
    pub answers: Vec<Answer>,
    /// The person's own message in place of finishing the batch ("Reply
    /// instead"): plain text, trimmed, at most [`MAX_NOTE_CHARS`] characters.
    /// With a note, questions left unanswered come back skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to one question.
///
/// `selected` always holds option labels (single- and multi-select share the
/// shape). `custom` is free text: on a single-select question it overrides the
/// choice (and `selected` is empty); on a multi-select question it supplements
/// `selected`; an optionless question answers with `custom` only. A deliberately
/// skipped item is `{"id", "selected": []}` with no `custom`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The question's id.
    pub id: String,
    /// The chosen option labels.
    #[serde(default)]
    pub selected: Vec<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

impl Answer {
    /// A deliberately skipped item.
    pub fn skipped(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
        }
    }

    /// True when nothing was chosen and nothing typed.
    pub fn is_skipped(&self) -> bool {
        self.selected.is_empty() && self.custom.as_deref().is_none_or(|c| c.trim().is_empty())
    }
}

impl AnswerBatch {
    /// A batch of these answers without a note.
    pub fn new(answers: Vec<Answer>) -> Self {
        Self {
            answers,
            note: None,
        }
    }

    /// Parses an answer batch from JSON text (shape only; see [`AnswerBatch::normalize`]).
    pub fn from_json(text: &str) -> Result<Self, UserInteractionError> {
        // Straight from the text when it has the vocabulary's shape (see
        // `crate::shape`); else the careful way, whose errors name the field.
        if crate::shape::objects_where_expected(text, crate::shape::Document::AnswerBatch)
            && let Ok(batch) = serde_json::from_str::<Self>(text)
        {
            return Ok(batch);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            UserInteractionError::bad_answer(format!("answer batch is not valid JSON: {e}"))
        })?;
        Self::from_value(value)
    }

    /// Parses an answer batch from a JSON value (shape only; see
    /// [`AnswerBatch::normalize`]). Errors are `BAD_ANSWER` naming the field.
    pub fn from_value(value: Value) -> Result<Self, UserInteractionError> {
        // Objects only: serde would also read `["id", ["label"]]` as an answer.
        let root = expect_object(&value, "answer batch", ErrorCode::BadAnswer)?;
        if let Some(Value::Array(answers)) = root.get("answers") {
            for (index, answer) in answers.iter().enumerate() {
                expect_object(answer, &format!("answers[{index}]"), ErrorCode::BadAnswer)?;
            }
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = shorten(&e.path().to_string(), MAX_QUOTED_CHARS);
            let path = if path == "." { "answer batch" } else { &path };
            let inner = shorten_quotes_in(&e.inner().to_string());
            UserInteractionError::bad_answer(format!("{path}: {inner}"))
        })
    }

    /// The answer to the question with this id.
    pub fn answer(&self, id: &str) -> Option<&Answer> {
        self.answers.iter().find(|a| a.id == id)
    }

    /// Checks this batch against its request, then returns it normalised:
    /// in question order, `custom` and `note` trimmed (empty means absent), and
    /// on a single-select question a `custom` answer clears `selected`.
    ///
    /// Rules: exactly one answer per question id, no unknown or repeated ids;
    /// every selected label is one of that question's options, with no repeats;
    /// at most one on single-select; none on an optionless question; `custom`
    /// at most 8,000 characters; `note` at most 8,192. A batch with a note may
    /// leave questions out: they are answered as skipped. Normalising a
    /// normalised batch changes nothing.
    pub fn normalize(mut self, request: &AskRequest) -> Result<Self, UserInteractionError> {
        self.note = normalize_note(self.note.take())?;
        // Question index of each answer, for the order; a request holds at most
        // ten questions, so lookups scan instead of hashing.
        let mut order = Vec::with_capacity(self.answers.len());
        let mut answered = vec![false; request.questions.len()];
        for (index, answer) in self.answers.iter_mut().enumerate() {
            let Some(position) = request.questions.iter().position(|q| q.id == answer.id) else {
                return Err(UserInteractionError::bad_answer(format!(
                    "answers[{index}].id: {} is not a question of this request",
                    quoted(&answer.id)
                )));
            };
            if std::mem::replace(&mut answered[position], true) {
                return Err(UserInteractionError::bad_answer(format!(
                    "answers[{index}].id: {} is answered more than once",
                    quoted(&answer.id)
                )));
            }
            normalize_answer(index, &request.questions[position], answer)?;
            order.push(position);
        }
        if self.note.is_some() {
            // Replying instead of finishing: what was not reached is skipped.
            for (position, question) in request.questions.iter().enumerate() {
                if !answered[position] {
                    answered[position] = true;
                    self.answers.push(Answer::skipped(question.id.clone()));
                    order.push(position);
                }
            }
        }
        if let Some(missing) = request
            .questions
            .iter()
            .zip(&answered)
            .find_map(|(q, done)| (!done).then_some(q))
        {
            return Err(UserInteractionError::bad_answer(format!(
                "answers: question {} has no answer (send {{\"id\": {}, \"selected\": []}} to skip it)",
                quoted(&missing.id),
                quoted(&missing.id)
            )));
        }
        if !order.is_sorted() {
            let mut keyed: Vec<(usize, Answer)> = order.into_iter().zip(self.answers).collect();
            crate::small_sort::sort_by_key(&mut keyed, |(position, _)| *position);
            self.answers = keyed.into_iter().map(|(_, answer)| answer).collect();
        }
        Ok(self)
    }

    /// True when this batch is already what [`AnswerBatch::normalize`] returns.
    pub fn validate(&self, request: &AskRequest) -> Result<(), UserInteractionError> {
        let normalized = self.clone().normalize(request)?;
        if &normalized != self {
            return Err(UserInteractionError::bad_answer(
                "answers: the batch is valid but not normalised (question order, trimmed custom and note, single-select custom clears selected, a note skips what was left out)",
            ));
        }
        Ok(())
    }
}

fn normalize_note(note: Option<String>) -> Result<Option<String>, UserInteractionError> {
    let Some(note) = note else {
        return Ok(None);
    };
    let trimmed = note.trim();
    // At most MAX_NOTE_CHARS bytes means at most that many chars: skip the count.
    if trimmed.len() > MAX_NOTE_CHARS {
        let chars = trimmed.chars().count();
        if chars > MAX_NOTE_CHARS {
            return Err(UserInteractionError::bad_answer(format!(
                "note: at most {MAX_NOTE_CHARS} characters, got {chars}"
            )));
        }
    }
    Ok(match trimmed {
        "" => None,
        _ if trimmed.len() == note.len() => Some(note),
        _ => Some(trimmed.to_owned()),
    })
}

fn normalize_answer(
    index: usize,
    question: &Question,
    answer: &mut Answer,
) -> Result<(), UserInteractionError> {
    // Formatted only on failure.
    let at = || format!("answers[{index}] (question {})", quoted(&question.id));
    if let Some(custom) = answer.custom.take() {
        let trimmed = custom.trim();
        // At most MAX_CUSTOM_CHARS bytes means at most that many chars: skip the count.
        if trimmed.len() > MAX_CUSTOM_CHARS {
            let chars = trimmed.chars().count();
            if chars > MAX_CUSTOM_CHARS {
                return Err(UserInteractionError::bad_answer(format!(
                    "{}.custom: at most {MAX_CUSTOM_CHARS} characters, got {chars}",
                    at()
                )));
            }
        }
        if !trimmed.is_empty() {
            answer.custom = Some(if trimmed.len() == custom.len() {
                custom
            } else {
                trimmed.to_owned()
            });
        }
    }
    let options = question.options();
    if options.is_empty() && !answer.selected.is_empty() {
        return Err(UserInteractionError::bad_answer(format!(
            "{}.selected: the question has no options; answer it with `custom`",
            at()
        )));
    }
    let mut chosen = [false; MAX_OPTIONS];
    for label in &answer.selected {
        let Some(position) = options.iter().position(|o| o.label == *label) else {
            return Err(UserInteractionError::bad_answer(format!(
                "{}.selected: {} is not one of the question's options",
                at(),
                quoted(label)
            )));
        };
        // An unvalidated request may hold more options than MAX_OPTIONS; such
        // labels are checked against the earlier selection instead.
        let repeated = match chosen.get_mut(position) {
            Some(seen) => std::mem::replace(seen, true),
            None => answer.selected.iter().filter(|l| *l == label).count() > 1,
        };
        if repeated {
            return Err(UserInteractionError::bad_answer(format!(
                "{}.selected: {} is selected more than once",
                at(),
                quoted(label)
            )));
        }
    }
    if !question.is_multi_select() && answer.selected.len() > 1 {
        return Err(UserInteractionError::bad_answer(format!(
            "{}.selected: the question is single-select; got {} labels",
            at(),
            answer.selected.len()
        )));
    }
    if !question.is_multi_select() && answer.custom.is_some() {
        answer.selected.clear();
    }
    Ok(())
}
