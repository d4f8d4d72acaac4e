//! Sanitised Markdown: text in, a small tree of allow-listed elements and text
//! out. Pure Rust, so the rules are tested natively; the composer builds the
//! tree with `createElement`/`createTextNode` (never `innerHTML`).
//!
//! The subset agents write, after CommonMark and GitHub's tables:
//!
//! | Markdown | Becomes |
//! |---|---|
//! | `#`, `##`, `###`, deeper (and `===`/`---` underlines) | `h3`, `h4`, `h5`, `h6` (a card's headings start below the page's) |
//! | paragraphs; a line break is `"\n"` text, two trailing spaces or `\` a `br` | `p` |
//! | `-`, `*`, `+` and `1.`/`1)` lists; `- [x]`/`- [ ]` task items | `ul`/`ol` (`start` when not 1) › `li`; `☑ `/`☐ ` text |
//! | `>` quotes | `blockquote` |
//! | `---`, `***`, `___` | `hr` |
//! | fenced (with `data-lang`, the info string's first word) and indented code | `pre` › `code`, text verbatim |
//! | tables (`\| a \| b \|` over `\|---\|---\|`) | `table` › `thead`/`tbody` › `tr` › `th`/`td` |
//! | `*em*`, `**strong**`, `~~del~~`, `` `code` `` | `em`, `strong`, `del`, `code` |
//! | `[text](url)`, `<url>` for `http:`, `https:`, `mailto:` | `a` with `href`, `rel` and `target`; any other target leaves the text |
//! | `![alt](url)` | a link whose text is the alt text (nothing is loaded); the alt text alone for another target |
//! | raw HTML | literal text, always |
//! | `&amp; &lt; &gt; &quot; &apos; &nbsp; &#NN; &#xHH;` | the character (any other `&name;` stays as written) |
//!
//! Nothing else: no reference links, footnotes or HTML. Work is linear in the
//! input (containers nest at most [`MAX_NESTING`] deep, inline elements at most
//! [`MAX_INLINE_NESTING`]; deeper markers stay text), and no input panics:
//! `crates/core/tests/markdown_props.rs` holds both.

mod block;
mod inline;

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

/// How deep block containers (quotes, list items) nest; a deeper `>` or list
/// marker is text.
pub const MAX_NESTING: usize = 16;

/// How deep inline elements (emphasis, links) nest; deeper delimiters are text.
pub const MAX_INLINE_NESTING: usize = 16;

/// Parses Markdown into allow-listed nodes.
///
/// ```
/// use ask_user_core::markdown::{MdNode, parse};
/// let text = |t: &str| MdNode::Text(t.to_owned());
/// let el = |tag, children| MdNode::Element { tag, attrs: vec![], children };
/// assert_eq!(
///     parse("# Plan\n\nShip **now** <b>"),
///     vec![
///         el("h3", vec![text("Plan")]),
///         el("p", vec![text("Ship "), el("strong", vec![text("now")]), text(" <b>")]),
///     ]
/// );
/// ```
pub fn parse(markdown: &str) -> Vec<MdNode> {
    parse_counting_work(markdown).0
}

/// [`parse`], also returning how many steps it took (lines visited per
/// nesting level, bytes scanned, delimiters visited): the measure the property
/// tests bound on pathological input, where a clock would be flaky.
#[doc(hidden)]
pub fn parse_counting_work(markdown: &str) -> (Vec<MdNode>, u64) {
    let mut work = 0;
    let nodes = block::parse_document(markdown, &mut work);
    (nodes, work)
}

/// Whether `url` is a link target that survives (see [`safe_url`]).
pub fn is_safe_url(url: &str) -> bool {
    safe_url(url).is_some()
}

/// The link target to emit for `url`: only `http://`, `https://` and
/// `mailto:` targets survive; anything else (`javascript:`, `data:`, a
/// relative path, …) renders as plain text.
///
/// The scheme is checked on what a browser parses (the WHATWG URL parser
/// first strips leading and trailing C0 controls and spaces, and removes
/// every ASCII tab and newline), and that same string is what is emitted:
/// a target is never checked in one form and followed in another. Other
/// leading characters (U+2028, a no-break space) are not stripped by a
/// browser, so with them the target is relative and refused.
pub fn safe_url(url: &str) -> Option<String> {
    let url: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let bytes = url.as_bytes();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| {
            bytes.len() >= scheme.len()
                && bytes[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())
        })
        .then_some(url)
}

/// Appends `text` to `nodes`, merging it into a trailing text node.
fn push_text(nodes: &mut Vec<MdNode>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(MdNode::Text(last)) = nodes.last_mut() {
        last.push_str(text);
    } else {
        nodes.push(MdNode::Text(text.to_owned()));
    }
}

/// Appends `children` to `nodes`, merging adjacent text.
fn splice(nodes: &mut Vec<MdNode>, children: Vec<MdNode>) {
    for child in children {
        match child {
            MdNode::Text(text) => push_text(nodes, &text),
            other => nodes.push(other),
        }
    }
}

fn element(tag: &'static str, children: Vec<MdNode>) -> MdNode {
    MdNode::Element {
        tag,
        attrs: Vec::new(),
        children,
    }
}
