//! Browser tests of what the page adds around the conversation: the tab's
//! attention signals (title, favicon badge). A binary of its own: they
//! read and write the document's title and icon, which the composer's other
//! tests never touch.
#![cfg(target_arch = "wasm32")]

mod support;

use ask_user_composer::{MemoryTransport, Transport, page_view_with};
use leptos::mount::mount_to;
use support::*;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

const DB: &str = r#"{"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}"#;
const NAME: &str = r#"{"questions":[{"id":"name","question":"What should we call it?"}]}"#;

fn favicon() -> String {
    document()
        .query_selector("link[rel~=icon]")
        .unwrap()
        .and_then(|l| l.get_attribute("href"))
        .unwrap_or_default()
}

/// The favicon's SVG, decoded from its data URL.
fn favicon_svg() -> String {
    let href = favicon();
    let body = href
        .strip_prefix("data:image/svg+xml,")
        .unwrap_or_else(|| panic!("the favicon is a drawn SVG, not {href:?}"));
    js_sys::decode_uri_component(body).unwrap().into()
}

#[wasm_bindgen_test]
async fn the_title_and_favicon_badge_count_waiting_questions_and_return_to_normal() {
    clear_session_storage();
    let host = MemoryTransport::new();
    let root = container();
    let transport = Transport::new(host.clone());
    let handle = mount_to(root.clone(), move || page_view_with(transport));
    settle().await;
    assert_eq!(document().title(), "ask-user");
    assert!(
        !favicon_svg().contains("<circle"),
        "no badge while nothing waits"
    );

    host.emit(requested("q1", 1, DB));
    settle().await;
    assert_eq!(document().title(), "(1) Which database? · ask-user");
    assert!(favicon_svg().contains(">1</text>"), "{}", favicon_svg());

    host.emit(requested("q2", 2, NAME));
    settle().await;
    assert_eq!(
        document().title(),
        "(2) Which database? · ask-user",
        "the oldest question names the tab"
    );
    assert!(favicon_svg().contains(">2</text>"), "{}", favicon_svg());

    host.emit(resolved("q1", ANSWERED));
    settle().await;
    assert_eq!(document().title(), "(1) What should we call it? · ask-user");

    host.emit(resolved("q2", CANCELLED));
    settle().await;
    assert_eq!(document().title(), "ask-user");
    assert!(!favicon_svg().contains("<circle"), "{}", favicon_svg());
    drop(handle);
    root.remove();
}
