//! Browser tests (wasm-bindgen-test in headless Chromium): mount the composer's
//! components into a real DOM and assert on what a person would see.
//!
//! Run with `cargo xtask test`, or directly:
//! `CHROMEDRIVER=/usr/bin/chromedriver cargo test -p ask-user-composer --target wasm32-unknown-unknown`.
#![cfg(target_arch = "wasm32")]

use ask_user_composer::QuestionView;
use ask_user_core::Question;
use leptos::mount::mount_to;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use web_sys::HtmlElement;

wasm_bindgen_test_configure!(run_in_browser);

/// A question as an agent would send it (JSON, so new optional fields in core
/// do not break these tests).
fn question(value: serde_json::Value) -> Question {
    serde_json::from_value(value).expect("a valid question")
}

fn deploy_question() -> Question {
    question(serde_json::json!({
        "id": "target",
        "question": "Where should we deploy?",
        "options": [
            {"label": "Staging", "description": "Safe to break"},
            {"label": "Production"},
            {"label": "Nowhere yet"}
        ]
    }))
}

/// A fresh element attached to the document body, so tests do not see each other.
fn container() -> HtmlElement {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .expect("a document");
    let element: HtmlElement = document
        .create_element("div")
        .expect("create a div")
        .dyn_into()
        .expect("a div is an HtmlElement");
    document
        .body()
        .expect("a body")
        .append_child(&element)
        .expect("append to body");
    element
}

/// The trimmed text of every element under `root` matching `selector`, in document order.
fn texts(root: &HtmlElement, selector: &str) -> Vec<String> {
    let nodes = root.query_selector_all(selector).expect("a valid selector");
    (0..nodes.length())
        .filter_map(|i| nodes.item(i))
        .map(|node| node.text_content().unwrap_or_default().trim().to_owned())
        .collect()
}

/// Whether each rendered option begins with the expected label (an option may
/// add its description or a badge after the label).
fn options_match(root: &HtmlElement, labels: &[&str]) -> bool {
    let shown = texts(root, ".auq-option");
    shown.len() == labels.len() && shown.iter().zip(labels).all(|(s, l)| s.starts_with(l))
}

#[wasm_bindgen_test]
fn question_view_shows_the_question_and_every_option_label_in_order() {
    let root = container();
    let q = deploy_question();
    let _mounted = mount_to(
        root.clone(),
        move || view! { <QuestionView question=q.clone() /> },
    );

    assert_eq!(
        texts(&root, ".auq-question__text"),
        vec!["Where should we deploy?"]
    );
    assert!(
        options_match(&root, &["Staging", "Production", "Nowhere yet"]),
        "options shown: {:?}",
        texts(&root, ".auq-option")
    );
}

#[wasm_bindgen_test]
async fn question_view_rerenders_when_its_question_changes() {
    let root = container();
    let (current, set_current) = signal(deploy_question());
    let _mounted = mount_to(
        root.clone(),
        move || view! { <QuestionView question=current /> },
    );
    assert!(options_match(
        &root,
        &["Staging", "Production", "Nowhere yet"]
    ));

    set_current.set(question(serde_json::json!({
        "id": "db",
        "question": "Which database?",
        "options": [{"label": "SQLite"}, {"label": "Postgres"}]
    })));
    leptos::task::tick().await;

    assert_eq!(texts(&root, ".auq-question__text"), vec!["Which database?"]);
    assert!(
        options_match(&root, &["SQLite", "Postgres"]),
        "options shown: {:?}",
        texts(&root, ".auq-option")
    );
}

#[wasm_bindgen_test]
fn question_view_without_options_renders_no_option() {
    let root = container();
    let q = question(serde_json::json!({"id": "name", "question": "What should we call it?"}));
    let _mounted = mount_to(
        root.clone(),
        move || view! { <QuestionView question=q.clone() /> },
    );

    assert_eq!(
        texts(&root, ".auq-question__text"),
        vec!["What should we call it?"]
    );
    assert!(texts(&root, ".auq-option").is_empty());
}
