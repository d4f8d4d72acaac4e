//! The page's attention signals: the tab title, the favicon's count badge and
//! the app badge (`navigator.setAppBadge`, where the browser has it), written
//! from core's `attention` rules whenever the number of waiting questions or
//! the first of them changes. Nothing here moves focus.

use ask_user_core::attention::{document_title, favicon_data_url};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

/// What the signals show: how many questions wait, and the first one's text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    /// Questions (batches) waiting for the person.
    pub pending: usize,
    /// The text of the first of them, for the title.
    pub first_question: Option<String>,
}

/// Keeps the title, favicon and app badge in step with `waiting`, writing
/// them only when it changes (a favicon written on every frame flickers).
pub fn use_attention(waiting: Signal<Waiting>) {
    let mut shown = None;
    crate::effect(move || {
        let now = waiting.get();
        if shown.as_ref() != Some(&now) {
            show(&now);
        }
        shown = Some(now);
    });
}

/// Writes the signals for `waiting` once.
pub fn show(waiting: &Waiting) {
    let document = document();
    document.set_title(&document_title(
        waiting.pending,
        waiting.first_question.as_deref(),
    ));
    set_favicon(&document, waiting.pending);
    set_app_badge(waiting.pending);
}

/// Points the page's `<link rel="icon">` at the drawn icon (adding the link
/// when the page has none).
fn set_favicon(document: &web_sys::Document, pending: usize) {
    let link = document
        .query_selector("link[rel~=icon]")
        .ok()
        .flatten()
        .or_else(|| {
            let link = document.create_element("link").ok()?;
            let _ = link.set_attribute("rel", "icon");
            document.head()?.append_child(&link).ok()?;
            Some(link)
        });
    if let Some(link) = link {
        let _ = link.set_attribute("href", &favicon_data_url(pending));
    }
}

/// `navigator.setAppBadge(n)` / `clearAppBadge()` when the browser has them
/// (an installed app's icon); nothing otherwise. Looked up by name: the API is
/// not in every browser and not in web-sys's stable set.
fn set_app_badge(pending: usize) {
    let Some(navigator) = web_sys::window().map(|w| w.navigator()) else {
        return;
    };
    let name = if pending == 0 {
        "clearAppBadge"
    } else {
        "setAppBadge"
    };
    let Ok(method) = js_sys::Reflect::get(&navigator, &JsValue::from_str(name)) else {
        return;
    };
    let Some(method) = method.dyn_ref::<js_sys::Function>() else {
        return;
    };
    let result = if pending == 0 {
        method.call0(&navigator)
    } else {
        method.call1(&navigator, &JsValue::from_f64(pending as f64))
    };
    // A refused badge (no installed app, no permission) rejects its promise:
    // await it so the rejection is handled, not an uncaught error on the console.
    if let Ok(promise) = result.and_then(|r| r.dyn_into::<js_sys::Promise>()) {
        leptos::task::spawn_local(async move {
            let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
        });
    }
}
