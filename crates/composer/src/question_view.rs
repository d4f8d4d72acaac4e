//! A read-only rendering of one question (text and option labels), e.g. for a
//! transcript entry; the interactive flow is [`crate::QuestionComposer`].

use ask_user_core::Question;
use ask_user_core::recommend::recommendation;
use leptos::prelude::*;

/// Renders one question and its options, read-only.
#[component]
pub fn QuestionView(
    /// The question to render.
    #[prop(into)]
    question: Signal<Question>,
) -> impl IntoView {
    view! {
        <div class="auq-question-view">
            <p class="auq-question__text">{move || question.get().question}</p>
            <ul class="auq-options auq-options--static">
                {move || {
                    question
                        .get()
                        .options
                        .unwrap_or_default()
                        .into_iter()
                        .map(|o| {
                            let r = recommendation(&o.label);
                            let display = r.display.to_owned();
                            let recommended = r.recommended;
                            view! {
                                <li class="auq-option" data-recommended=recommended.to_string()>{display}</li>
                            }
                        })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}
