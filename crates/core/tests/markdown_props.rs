//! Properties of the Markdown renderer on arbitrary input: it never panics,
//! emits only allow-listed elements and attributes, loses no text, nests
//! boundedly, and does work linear in its input even on pathological text.

use ask_user_core::markdown::{
    MAX_INLINE_NESTING, MAX_NESTING, MdNode, parse, parse_counting_work,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

const ELEMENTS: &[&str] = &[
    "p",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "code",
    "hr",
    "br",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "em",
    "strong",
    "del",
    "a",
];

/// Work per input byte that no input may exceed.
const WORK_PER_BYTE: u64 = 64;

fn walk<'a>(nodes: &'a [MdNode], depth: usize, visit: &mut dyn FnMut(&'a MdNode, usize)) {
    for node in nodes {
        visit(node, depth);
        if let MdNode::Element { children, .. } = node {
            walk(children, depth + 1, visit);
        }
    }
}

fn check_allow_list(nodes: &[MdNode]) -> Result<(), String> {
    let mut problem = None;
    walk(nodes, 0, &mut |node, _| {
        let MdNode::Element {
            tag,
            attrs,
            children,
        } = node
        else {
            return;
        };
        if !ELEMENTS.contains(tag) {
            problem = Some(format!("element {tag}"));
        }
        if matches!(*tag, "hr" | "br") && !children.is_empty() {
            problem = Some(format!("{tag} with children"));
        }
        for (name, value) in attrs {
            let ok = match (*tag, *name) {
                // As a browser parses it: nothing it would strip or remove
                // (C0 controls and spaces at the ends, tabs and newlines
                // anywhere), and the scheme right at the start.
                ("a", "href") => {
                    let lower = value.to_ascii_lowercase();
                    ["http://", "https://", "mailto:"]
                        .iter()
                        .any(|s| lower.starts_with(s))
                        && !value.ends_with(|c: char| c <= ' ')
                        && !value.contains(['\t', '\n', '\r'])
                }
                ("a", "rel") => value == "noopener noreferrer nofollow",
                ("a", "target") => value == "_blank",
                ("ol", "start") => !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
                ("pre", "data-lang") => !value.is_empty() && !value.contains(char::is_whitespace),
                _ => false,
            };
            if !ok {
                problem = Some(format!("{tag} {name}={value:?}"));
            }
        }
    });
    problem.map_or(Ok(()), Err)
}

/// How often each counted character appears in the output's text and
/// attribute values.
fn letters_out(nodes: &[MdNode], counted: &dyn Fn(char) -> bool) -> BTreeMap<char, usize> {
    let mut counts = BTreeMap::new();
    let mut count = |text: &str| {
        for c in text.chars().filter(|&c| counted(c)) {
            *counts.entry(c).or_default() += 1;
        }
    };
    walk(nodes, 0, &mut |node, _| match node {
        MdNode::Text(text) => count(text),
        MdNode::Element { attrs, .. } => attrs.iter().for_each(|(_, v)| count(v)),
    });
    counts
}

fn depth_of(nodes: &[MdNode]) -> usize {
    let mut deepest = 0;
    walk(nodes, 1, &mut |_, depth| deepest = deepest.max(depth));
    deepest
}

/// Text made of Markdown's markers, a few letters and line breaks: it forms
/// every construct (and every half-construct) the renderer knows.
fn markdownish() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("*"),
        Just("**"),
        Just("_"),
        Just("~~"),
        Just("`"),
        Just("```"),
        Just("~~~"),
        Just("["),
        Just("]"),
        Just("!["),
        Just("]("),
        Just(")"),
        Just("("),
        Just("<"),
        Just(">"),
        Just("> "),
        Just("- "),
        Just("* "),
        Just("1. "),
        Just("2) "),
        Just("# "),
        Just("### "),
        Just("---"),
        Just("==="),
        Just("|"),
        Just("| a | b |\n|---|---|\n"),
        Just("- [x] "),
        Just("\\"),
        Just("&amp;"),
        Just("&#"),
        Just(";"),
        Just("https://e.x"),
        Just("javascript:"),
        Just("<b>"),
        Just("</b>"),
        Just("<https://e.x>"),
        Just("  "),
        Just("    "),
        Just("\t"),
        Just("\n"),
        Just("\n\n"),
        Just("a"),
        Just("b"),
        Just("c"),
        Just("中"),
        Just("é"),
        Just(" "),
        Just("0"),
        Just("\r\n"),
    ];
    proptest::collection::vec(pieces, 0..80).prop_map(|p| p.concat())
}

/// The same without what rightly consumes letters: link and image targets
/// (`(`), entities (`&`), task markers (`x`), and words after a code fence's
/// language (rare here; filtered in the test, and fences have their own
/// property below).
fn letter_safe() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("*"),
        Just("**"),
        Just("***"),
        Just("_"),
        Just("__"),
        Just("~"),
        Just("~~"),
        Just("`"),
        Just("``"),
        Just("["),
        Just("]"),
        Just("!["),
        Just("<"),
        Just(">"),
        Just("> "),
        Just(">"),
        Just("- "),
        Just("+ "),
        Just("* "),
        Just("1. "),
        Just("3) "),
        Just("# "),
        Just("#### "),
        Just("---"),
        Just("==="),
        Just("|"),
        Just("|---|"),
        Just(":"),
        Just("- [ ] "),
        Just("\\"),
        Just("<b>"),
        Just("</b>"),
        Just("  "),
        Just("    "),
        Just("\t"),
        Just("\n"),
        Just("\n\n"),
        Just("a"),
        Just("b"),
        Just("c"),
        Just("ab"),
        Just("中"),
        Just(" "),
        Just("7"),
    ];
    proptest::collection::vec(pieces, 0..80).prop_map(|p| p.concat())
}

fn is_letter(c: char) -> bool {
    c.is_alphabetic()
}

/// A fence's info string keeps only its first word (`data-lang`).
fn has_fence_with_several_words(text: &str) -> bool {
    text.lines().any(|line| {
        ["```", "~~~"].iter().any(|fence| {
            line.find(fence).is_some_and(|at| {
                // Only the fence's own character opens it: after "```", a '~' is
                // the info string's first letter, not part of the fence.
                let fence_char = fence.chars().next().expect("a fence has characters");
                let info = line[at..].trim_start_matches(fence_char);
                info.split_whitespace().count() > 1 || info.contains(['`', '~'])
            })
        })
    })
}

/// The property of `no_letter_of_the_text_is_lost`, for one text.
fn no_letter_lost(text: &str) -> Result<(), TestCaseError> {
    prop_assume!(!has_fence_with_several_words(text));
    let nodes = parse(text);
    let mut expected = BTreeMap::new();
    for c in text.chars().filter(|&c| is_letter(c)) {
        *expected.entry(c).or_insert(0usize) += 1;
    }
    prop_assert_eq!(
        letters_out(&nodes, &is_letter),
        expected,
        "{:?} → {:?}",
        text,
        nodes
    );
    Ok(())
}

/// Proptest once found this: a backtick fence whose info string starts with
/// '~' and has a second word (which the fence drops by design).
#[test]
fn a_backtick_fence_whose_info_starts_with_a_tilde_counts_as_several_words() {
    assert!(has_fence_with_several_words("```~  <b>\\"));
    assert!(has_fence_with_several_words("~~~rust extra"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn arbitrary_text_never_panics_and_yields_only_allow_listed_markup(text in "\\PC{0,200}") {
        let nodes = parse(&text);
        prop_assert_eq!(check_allow_list(&nodes), Ok(()));
    }

    #[test]
    fn markdown_like_text_yields_only_allow_listed_markup_within_the_nesting_bounds(text in markdownish()) {
        let (nodes, work) = parse_counting_work(&text);
        prop_assert_eq!(check_allow_list(&nodes), Ok(()), "{:?}", text);
        prop_assert!(depth_of(&nodes) <= 2 * MAX_NESTING + MAX_INLINE_NESTING + 6, "{:?}", text);
        prop_assert!(work <= WORK_PER_BYTE * (text.len() as u64 + 1), "{} steps for {:?}", work, text);
    }

    #[test]
    fn no_letter_of_the_text_is_lost(text in letter_safe()) {
        no_letter_lost(&text)?;
    }

    #[test]
    fn fenced_code_keeps_its_lines_verbatim_and_its_language_word(
        lang in "[a-z]{0,6}",
        lines in proptest::collection::vec("[ -~]{0,12}", 0..6),
        quote in any::<bool>(),
    ) {
        prop_assume!(lines.iter().all(|l| !l.trim_start().starts_with("```")));
        let prefix = if quote { "> " } else { "" };
        let mut text = format!("{prefix}```{lang}\n");
        for line in &lines {
            text.push_str(&format!("{prefix}{line}\n"));
        }
        text.push_str(&format!("{prefix}```\n"));
        let nodes = parse(&text);
        let nodes = match (quote, nodes.as_slice()) {
            (true, [MdNode::Element { tag: "blockquote", children, .. }]) => children.clone(),
            _ => nodes,
        };
        let expected_code: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let expected_attrs: Vec<(&'static str, String)> =
            if lang.is_empty() { vec![] } else { vec![("data-lang", lang.clone())] };
        let code_children = if expected_code.is_empty() { vec![] } else { vec![MdNode::Text(expected_code)] };
        prop_assert_eq!(
            nodes,
            vec![MdNode::Element {
                tag: "pre",
                attrs: expected_attrs,
                children: vec![MdNode::Element { tag: "code", attrs: vec![], children: code_children }],
            }]
        );
    }
}

/// Inputs that make naive parsers quadratic (or overflow their stack), at
/// two sizes: the work must stay under the per-byte bound and grow linearly.
fn pathological(n: usize) -> Vec<(&'static str, String)> {
    vec![
        ("stars", "*".repeat(n)),
        ("star words", "*a ".repeat(n / 3)),
        ("strong openers", "**a".repeat(n / 3)),
        ("mixed runs", "*a_b**c__d~~e".repeat(n / 13)),
        (
            "closers past openers of another kind",
            format!("{}{}", "_a ".repeat(n / 6), "a* ".repeat(n / 6)),
        ),
        ("open brackets", "[".repeat(n)),
        ("images", "![".repeat(n / 2)),
        ("unclosed link targets", "[a](b".repeat(n / 5)),
        ("link tails without space", "[](".repeat(n / 3)),
        ("nested parens", format!("[a]({}", "(".repeat(n))),
        ("closing brackets", "]".repeat(n)),
        (
            "brackets then one link",
            format!("{}[a](https://e.x)", "[".repeat(n)),
        ),
        (
            "links after brackets",
            format!("{}{}", "[".repeat(n / 2), "[a](https://e.x)".repeat(n / 32)),
        ),
        (
            "backtick runs of growing length",
            (1..)
                .take_while(|k| k * (k + 1) / 2 < n)
                .map(|k| format!("{} ", "`".repeat(k)))
                .collect(),
        ),
        ("backticks", "`a".repeat(n / 2)),
        ("angles", "<a".repeat(n / 2)),
        ("entities", "&#".repeat(n / 2)),
        ("escapes", "\\".repeat(n)),
        ("quotes", format!("{}a", "> ".repeat(n / 2))),
        (
            "quote lines",
            format!("{}a\n", ">".repeat(64)).repeat(n / 66),
        ),
        ("nested bullets", format!("{}a", "- ".repeat(n / 2))),
        (
            "indented bullets",
            (0..n / 64)
                .map(|k| format!("{}- a\n", " ".repeat(2 * (k % 30))))
                .collect(),
        ),
        ("lazy lines", format!("> - a\n{}", "b\n".repeat(n / 2))),
        ("pipes", "|".repeat(n)),
        (
            "table rows",
            format!("|a|b|\n|-|-|\n{}", "|a|b|\n".repeat(n / 6)),
        ),
        ("fences", "```\n".repeat(n / 4)),
        ("headings", "# a\n".repeat(n / 4)),
        ("blank lines", "\n".repeat(n)),
        ("underscores between words", "a_".repeat(n / 2)),
    ]
}

#[test]
fn pathological_input_takes_work_linear_in_its_length() {
    for ((name, small), (_, large)) in pathological(4_000).into_iter().zip(pathological(16_000)) {
        let (_, small_work) = parse_counting_work(&small);
        let (nodes, large_work) = parse_counting_work(&large);
        assert!(
            large_work <= WORK_PER_BYTE * (large.len() as u64 + 1),
            "{name}: {large_work} steps for {} bytes",
            large.len()
        );
        // Four times the input: about four times the work, never sixteen.
        assert!(
            large_work <= 6 * small_work.max(1),
            "{name}: {small_work} steps for {} bytes, {large_work} for {}",
            small.len(),
            large.len()
        );
        assert!(
            depth_of(&nodes) <= 2 * MAX_NESTING + MAX_INLINE_NESTING + 6,
            "{name}: nested {} deep",
            depth_of(&nodes)
        );
        assert_eq!(check_allow_list(&nodes), Ok(()), "{name}");
    }
}

#[test]
fn markers_past_the_nesting_bounds_stay_text() {
    let deep = format!("{}end", "> ".repeat(100));
    let nodes = parse(&deep);
    assert!(depth_of(&nodes) <= MAX_NESTING + 2);
    let text: String = {
        let mut out = String::new();
        walk(&nodes, 0, &mut |node, _| {
            if let MdNode::Text(t) = node {
                out.push_str(t)
            }
        });
        out
    };
    assert!(text.ends_with("> > end"), "{text}");

    let stars = format!("{}a{}", "**".repeat(40), "**".repeat(40));
    let nodes = parse(&stars);
    assert!(depth_of(&nodes) <= MAX_INLINE_NESTING + 2, "{nodes:?}");
    assert_eq!(
        letters_out(&nodes, &|c| c == '*')
            .get(&'*')
            .copied()
            .unwrap_or(0)
            % 2,
        0
    );
}
