//! Sanitised Markdown for a plan-review `detail`.
//!
//! The text is parsed with pulldown-cmark into a small tree of allow-listed
//! elements and text, then built with `createElement`/`createTextNode`. Nothing is
//! ever assigned to `innerHTML`: raw HTML in the Markdown is shown as literal text,
//! links keep only `http`, `https` and `mailto` targets, and images become links
//! (no remote loads).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// One node of rendered Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MdNode {
    /// An allow-listed element.
    Element {
        /// The element name (always from a fixed list).
        tag: &'static str,
        /// Attributes (names from a fixed list, values checked).
        attrs: Vec<(&'static str, String)>,
        /// Children.
        children: Vec<MdNode>,
    },
    /// Text, inserted as a text node.
    Text(String),
}

struct Frame {
    /// `None` splices the children into the parent (unsupported containers).
    tag: Option<&'static str>,
    attrs: Vec<(&'static str, String)>,
    children: Vec<MdNode>,
}

impl Frame {
    fn new(tag: Option<&'static str>, attrs: Vec<(&'static str, String)>) -> Self {
        Self {
            tag,
            attrs,
            children: Vec::new(),
        }
    }
}

/// Parses Markdown into allow-listed nodes.
pub fn parse(markdown: &str) -> Vec<MdNode> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut stack = vec![Frame::new(None, Vec::new())];
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(tag) => {
                let (name, attrs) = open(&tag);
                stack.push(Frame::new(name, attrs));
            }
            Event::End(end) => {
                if stack.len() > 1 {
                    let frame = stack.pop().expect("stack holds the root");
                    close(&mut stack, frame, end);
                }
            }
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                push_text(&mut stack, &text)
            }
            Event::Code(code) => push(
                &mut stack,
                MdNode::Element {
                    tag: "code",
                    attrs: Vec::new(),
                    children: vec![MdNode::Text(code.into_string())],
                },
            ),
            Event::InlineMath(math) | Event::DisplayMath(math) => push_text(&mut stack, &math),
            Event::FootnoteReference(name) => push_text(&mut stack, &format!("[{name}]")),
            Event::SoftBreak => push_text(&mut stack, "\n"),
            Event::HardBreak => push(&mut stack, empty("br")),
            Event::Rule => push(&mut stack, empty("hr")),
            Event::TaskListMarker(done) => push_text(&mut stack, if done { "☑ " } else { "☐ " }),
        }
    }
    // Unbalanced input cannot happen with pulldown-cmark, but never lose text.
    while stack.len() > 1 {
        let frame = stack.pop().expect("checked");
        stack
            .last_mut()
            .expect("root")
            .children
            .extend(frame.children);
    }
    stack.pop().map(|root| root.children).unwrap_or_default()
}

fn empty(tag: &'static str) -> MdNode {
    MdNode::Element {
        tag,
        attrs: Vec::new(),
        children: Vec::new(),
    }
}

fn push(stack: &mut [Frame], node: MdNode) {
    stack.last_mut().expect("root").children.push(node);
}

fn push_text(stack: &mut [Frame], text: &str) {
    let children = &mut stack.last_mut().expect("root").children;
    if let Some(MdNode::Text(last)) = children.last_mut() {
        last.push_str(text);
    } else {
        children.push(MdNode::Text(text.to_owned()));
    }
}

/// Only these link targets survive; anything else (`javascript:`, `data:`, …)
/// renders as plain text.
pub fn is_safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

fn open(tag: &Tag<'_>) -> (Option<&'static str>, Vec<(&'static str, String)>) {
    let none = Vec::new();
    match tag {
        Tag::Paragraph => (Some("p"), none),
        // The plan sits inside a card, so its headings start below the page's.
        Tag::Heading { level, .. } => (
            Some(match level {
                HeadingLevel::H1 => "h3",
                HeadingLevel::H2 => "h4",
                HeadingLevel::H3 => "h5",
                _ => "h6",
            }),
            none,
        ),
        Tag::BlockQuote(_) => (Some("blockquote"), none),
        Tag::CodeBlock(kind) => {
            let attrs = match kind {
                CodeBlockKind::Fenced(lang) if !lang.is_empty() => {
                    vec![(
                        "data-lang",
                        lang.split_whitespace().next().unwrap_or("").to_owned(),
                    )]
                }
                _ => none,
            };
            (Some("pre"), attrs)
        }
        Tag::HtmlBlock => (Some("pre"), none),
        Tag::List(Some(start)) if *start != 1 => (Some("ol"), vec![("start", start.to_string())]),
        Tag::List(Some(_)) => (Some("ol"), none),
        Tag::List(None) => (Some("ul"), none),
        Tag::Item => (Some("li"), none),
        Tag::Table(_) => (Some("table"), none),
        Tag::TableHead => (Some("thead"), none),
        Tag::TableRow => (Some("tr"), none),
        Tag::TableCell => (Some("td"), none),
        Tag::Emphasis => (Some("em"), none),
        Tag::Strong => (Some("strong"), none),
        Tag::Strikethrough => (Some("del"), none),
        Tag::Superscript => (Some("sup"), none),
        Tag::Subscript => (Some("sub"), none),
        Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } if is_safe_url(dest_url) => (
            Some("a"),
            vec![
                ("href", dest_url.to_string()),
                ("rel", "noopener noreferrer nofollow".to_owned()),
                ("target", "_blank".to_owned()),
            ],
        ),
        _ => (None, none),
    }
}

fn close(stack: &mut [Frame], frame: Frame, end: TagEnd) {
    let node = match (frame.tag, end) {
        (Some("pre"), _) => MdNode::Element {
            tag: "pre",
            attrs: frame.attrs,
            children: vec![MdNode::Element {
                tag: "code",
                attrs: Vec::new(),
                children: frame.children,
            }],
        },
        (Some(tag), _) => MdNode::Element {
            tag,
            attrs: frame.attrs,
            children: frame.children,
        },
        (None, _) => {
            let parent = stack.last_mut().expect("root");
            for child in frame.children {
                match child {
                    MdNode::Text(text) => {
                        if let Some(MdNode::Text(last)) = parent.children.last_mut() {
                            last.push_str(&text);
                        } else {
                            parent.children.push(MdNode::Text(text));
                        }
                    }
                    other => parent.children.push(other),
                }
            }
            return;
        }
    };
    push(stack, node);
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn el(tag: &'static str, children: Vec<MdNode>) -> MdNode {
        MdNode::Element {
            tag,
            attrs: Vec::new(),
            children,
        }
    }

    fn text(t: &str) -> MdNode {
        MdNode::Text(t.to_owned())
    }

    #[test]
    fn headings_lists_and_emphasis_become_allow_listed_elements() {
        let nodes = parse("# Plan\n\n1. Add **tests**\n2. Ship");
        assert_eq!(
            nodes,
            vec![
                el("h3", vec![text("Plan")]),
                el(
                    "ol",
                    vec![
                        el("li", vec![text("Add "), el("strong", vec![text("tests")])]),
                        el("li", vec![text("Ship")]),
                    ]
                ),
            ]
        );
    }

    #[test]
    fn raw_html_is_shown_as_text_never_as_markup() {
        let nodes =
            parse("Hello <script>alert(1)</script> <b>bold</b>\n\n<div onclick=x>block</div>\n");
        let flat = format!("{nodes:?}");
        assert!(!flat.contains("tag: \"script\""), "{flat}");
        assert!(!flat.contains("tag: \"b\""), "{flat}");
        assert!(!flat.contains("tag: \"div\""), "{flat}");
        assert!(
            flat.contains("<script>"),
            "the raw HTML stays visible as text: {flat}"
        );
        assert!(flat.contains("<div onclick=x>block</div>"), "{flat}");
    }

    #[test]
    fn unsafe_link_targets_render_as_plain_text() {
        let nodes = parse("[click](javascript:alert(1)) and [docs](https://example.com)");
        assert_eq!(
            nodes,
            vec![el(
                "p",
                vec![
                    text("click and "),
                    MdNode::Element {
                        tag: "a",
                        attrs: vec![
                            ("href", "https://example.com".to_owned()),
                            ("rel", "noopener noreferrer nofollow".to_owned()),
                            ("target", "_blank".to_owned()),
                        ],
                        children: vec![text("docs")],
                    },
                ]
            )]
        );
    }

    #[test]
    fn code_blocks_keep_their_text_verbatim() {
        let nodes = parse("```rust\nfn main() { <b> }\n```");
        assert_eq!(
            nodes,
            vec![MdNode::Element {
                tag: "pre",
                attrs: vec![("data-lang", "rust".to_owned())],
                children: vec![el("code", vec![text("fn main() { <b> }\n")])],
            }]
        );
    }

    #[test]
    fn images_never_load_and_data_urls_are_dropped() {
        let nodes = parse("![diagram](data:image/png;base64,AAAA)");
        assert_eq!(nodes, vec![el("p", vec![text("diagram")])]);
    }
}
