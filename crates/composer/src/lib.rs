//! # ask-user-composer
//!
//! The question composer: a Leptos 0.8 component library that takes over a
//! conversation's composer slot while questions are pending. It never enables
//! Leptos's `csr` feature itself (the app does) and takes its transport from the
//! caller, so other web UIs can embed it.

use ask_user_core::Question;
use leptos::prelude::*;

/// Renders one question and its options.
#[component]
pub fn QuestionView(
    /// The question to render.
    #[prop(into)]
    question: Signal<Question>,
) -> impl IntoView {
    view! {
        <div class="auq-question">
            <p class="auq-question__text">{move || question.get().question}</p>
            <ul class="auq-options">
                {move || {
                    question
                        .get()
                        .options
                        .unwrap_or_default()
                        .into_iter()
                        .map(|o| view! { <li class="auq-option">{o.label}</li> })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}
