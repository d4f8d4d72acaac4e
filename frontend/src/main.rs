//! ask-user-web: the conversation page. It mounts the question composer in the
//! page's composer slot.

use ask_user_composer::QuestionView;
use ask_user_core::AskRequest;
use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    let request = AskRequest::from_json(
        r#"{"questions":[{"id":"welcome","question":"Which way should the agent go?",
            "options":[{"label":"Keep going (Recommended)"},{"label":"Stop here"}]}]}"#,
    )
    .expect("the welcome request is valid");
    let question = request.questions[0].clone();
    mount_to_body(
        move || view! { <main class="auq-page"><QuestionView question=question.clone() /></main> },
    );
}
