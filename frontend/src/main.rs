//! ask-user-web: the conversation page. It mounts the question composer in the
//! page's composer slot.

use ask_user_composer::QuestionView;
use ask_user_core::{Question, QuestionOption};
use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    let question = Question {
        id: "welcome".into(),
        question: "Which way should the agent go?".into(),
        options: Some(vec![
            QuestionOption { label: "Keep going (Recommended)".into() },
            QuestionOption { label: "Stop here".into() },
        ]),
    };
    mount_to_body(move || view! { <main class="auq-page"><QuestionView question=question.clone() /></main> });
}
