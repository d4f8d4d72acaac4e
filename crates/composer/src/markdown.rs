//! Sanitised Markdown in the DOM, for a plan-review `detail`, a question's
//! `detail` or an agent's message.
//!
//! Core parses (`ask_user_core::markdown`: the text becomes a small tree of
//! allow-listed elements and text, with every rule tested natively); this
//! module builds that tree with `createElement`/`createTextNode`. Nothing is
//! ever assigned to `innerHTML`: raw HTML in the Markdown is shown as literal
//! text, links keep only `http`, `https` and `mailto` targets, and images
//! become links (no remote loads), so the page's Content-Security-Policy needs
//! no exception.
//!
//! Three ways in, from the most to the least managed:
//! - [`Markdown`], a component: `<Markdown text=detail />` renders a
//!   `<div class="auq-markdown">` and re-renders when the text changes;
//! - [`render_markdown`] replaces an element's content with the rendered text;
//! - [`parse`] and [`render_into`] for a tree built once and put in several places.

use leptos::html;
use leptos::prelude::*;

pub use ask_user_core::markdown::{MdNode, is_safe_url, parse};

/// Builds the nodes under `parent` with DOM calls only (no `innerHTML`).
pub fn render_into(parent: &web_sys::Element, nodes: &[MdNode]) {
    let Some(document) = parent.owner_document() else {
        return;
    };
    for node in nodes {
        match node {
            MdNode::Text(text) => {
                let _ = parent.append_with_str_1(text);
            }
            MdNode::Element {
                tag,
                attrs,
                children,
            } => {
                let Ok(element) = document.create_element(tag) else {
                    continue;
                };
                for (name, value) in attrs {
                    let _ = element.set_attribute(name, value);
                }
                render_into(&element, children);
                let _ = parent.append_child(&element);
            }
        }
    }
}

/// Replaces the content of `parent` with `markdown`, rendered.
pub fn render_markdown(parent: &web_sys::Element, markdown: &str) {
    parent.set_text_content(None);
    render_into(parent, &parse(markdown));
}

/// `text` as sanitised Markdown in a `<div class="auq-markdown">` (styled by
/// the composer's stylesheet), rendered again whenever `text` changes.
/// Attributes spread onto it land on the `<div>`:
/// `<Markdown text=detail class="auq-detail" attr:data-auq="detail" />`.
#[component]
pub fn Markdown(
    /// The Markdown source.
    #[prop(into)]
    text: Signal<String>,
    /// More classes for the `<div>`, after `auq-markdown`.
    #[prop(optional)]
    class: &'static str,
) -> impl IntoView {
    let container = NodeRef::<html::Div>::new();
    crate::effect(move || {
        if let Some(element) = container.get() {
            text.with(|text| render_markdown(&element, text));
        }
    });
    let class = if class.is_empty() {
        "auq-markdown".to_owned()
    } else {
        format!("auq-markdown {class}")
    };
    view! { <div class=class node_ref=container></div> }
}
