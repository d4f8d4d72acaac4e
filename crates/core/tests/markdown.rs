//! The Markdown subset, rule by rule: what each construct becomes, and what
//! never gets through (raw HTML, unsafe link targets, loaded images).

use ask_user_core::markdown::{MdNode, is_safe_url, parse};

fn el(tag: &'static str, children: Vec<MdNode>) -> MdNode {
    MdNode::Element {
        tag,
        attrs: Vec::new(),
        children,
    }
}

fn with(tag: &'static str, attrs: &[(&'static str, &str)], children: Vec<MdNode>) -> MdNode {
    MdNode::Element {
        tag,
        attrs: attrs.iter().map(|(n, v)| (*n, (*v).to_owned())).collect(),
        children,
    }
}

fn text(t: &str) -> MdNode {
    MdNode::Text(t.to_owned())
}

fn p(children: Vec<MdNode>) -> MdNode {
    el("p", children)
}

fn a(href: &str, children: Vec<MdNode>) -> MdNode {
    with(
        "a",
        &[
            ("href", href),
            ("rel", "noopener noreferrer nofollow"),
            ("target", "_blank"),
        ],
        children,
    )
}

fn code_block(lang: Option<&str>, code: &str) -> MdNode {
    let attrs: Vec<(&'static str, &str)> = lang.map(|l| ("data-lang", l)).into_iter().collect();
    let children = if code.is_empty() {
        vec![]
    } else {
        vec![text(code)]
    };
    with("pre", &attrs, vec![el("code", children)])
}

/// Every text node's content, in order.
fn text_content(nodes: &[MdNode]) -> String {
    let mut out = String::new();
    fn walk(nodes: &[MdNode], out: &mut String) {
        for node in nodes {
            match node {
                MdNode::Text(t) => out.push_str(t),
                MdNode::Element { children, .. } => walk(children, out),
            }
        }
    }
    walk(nodes, &mut out);
    out
}

fn tags(nodes: &[MdNode]) -> Vec<&'static str> {
    let mut out = Vec::new();
    fn walk(nodes: &[MdNode], out: &mut Vec<&'static str>) {
        for node in nodes {
            if let MdNode::Element { tag, children, .. } = node {
                out.push(*tag);
                walk(children, out);
            }
        }
    }
    walk(nodes, &mut out);
    out
}

#[test]
fn headings_lists_and_emphasis_become_allow_listed_elements() {
    assert_eq!(
        parse("# Plan\n\n1. Add **tests**\n2. Ship"),
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
fn headings_start_at_h3_and_everything_past_three_hashes_is_h6() {
    assert_eq!(
        parse("# a\n## b\n### c\n#### d\n###### e ##\n####### f\n#no"),
        vec![
            el("h3", vec![text("a")]),
            el("h4", vec![text("b")]),
            el("h5", vec![text("c")]),
            el("h6", vec![text("d")]),
            el("h6", vec![text("e")]),
            p(vec![text("####### f\n#no")]),
        ]
    );
    assert_eq!(
        parse("Title\n=====\n\nSub\n---"),
        vec![el("h3", vec![text("Title")]), el("h4", vec![text("Sub")])]
    );
}

#[test]
fn paragraph_lines_keep_their_break_and_two_spaces_or_a_backslash_make_a_br() {
    assert_eq!(
        parse("one\ntwo  \nthree\\\nfour\n\nnext"),
        vec![
            p(vec![
                text("one\ntwo"),
                el("br", vec![]),
                text("three"),
                el("br", vec![]),
                text("four"),
            ]),
            p(vec![text("next")]),
        ]
    );
}

#[test]
fn an_ordered_list_that_does_not_start_at_one_says_where_it_starts() {
    assert_eq!(
        parse("3. c\n4. d"),
        vec![with(
            "ol",
            &[("start", "3")],
            vec![el("li", vec![text("c")]), el("li", vec![text("d")])]
        )]
    );
    assert_eq!(parse("1) a")[0], el("ol", vec![el("li", vec![text("a")])]));
}

#[test]
fn bullets_nest_by_indentation_and_a_blank_line_makes_items_paragraphs() {
    assert_eq!(
        parse("- a\n  * b\n  * c\n- d"),
        vec![el(
            "ul",
            vec![
                el(
                    "li",
                    vec![
                        text("a"),
                        el(
                            "ul",
                            vec![el("li", vec![text("b")]), el("li", vec![text("c")])]
                        ),
                    ]
                ),
                el("li", vec![text("d")]),
            ]
        )]
    );
    assert_eq!(
        parse("+ a\n\n+ b\n  more"),
        vec![el(
            "ul",
            vec![
                el("li", vec![p(vec![text("a")])]),
                el("li", vec![p(vec![text("b\nmore")])]),
            ]
        )]
    );
}

#[test]
fn a_bullet_of_another_kind_starts_another_list() {
    assert_eq!(
        parse("- a\n* b"),
        vec![
            el("ul", vec![el("li", vec![text("a")])]),
            el("ul", vec![el("li", vec![text("b")])]),
        ]
    );
}

#[test]
fn task_items_show_a_checked_or_empty_box() {
    assert_eq!(
        parse("- [x] reviewed\n- [ ] shipped\n- [X]"),
        vec![el(
            "ul",
            vec![
                el("li", vec![text("☑ reviewed")]),
                el("li", vec![text("☐ shipped")]),
                el("li", vec![text("☑ ")]),
            ]
        )]
    );
    assert_eq!(
        parse("- [link](https://e.x)"),
        vec![el(
            "ul",
            vec![el("li", vec![a("https://e.x", vec![text("link")])])]
        )],
        "a link at the start of an item is no task marker"
    );
}

#[test]
fn quotes_hold_blocks_and_take_lazy_lines() {
    assert_eq!(
        parse("> Rollback: flip\nthe flag.\n>\n> - one\n\nafter"),
        vec![
            el(
                "blockquote",
                vec![
                    p(vec![text("Rollback: flip\nthe flag.")]),
                    el("ul", vec![el("li", vec![text("one")])]),
                ]
            ),
            p(vec![text("after")]),
        ]
    );
    assert_eq!(
        parse("> > deep"),
        vec![el(
            "blockquote",
            vec![el("blockquote", vec![p(vec![text("deep")])])]
        )]
    );
}

#[test]
fn three_dashes_stars_or_underscores_are_a_rule() {
    assert_eq!(
        parse("a\n\n---\n* * *\n___"),
        vec![
            p(vec![text("a")]),
            el("hr", vec![]),
            el("hr", vec![]),
            el("hr", vec![])
        ]
    );
}

#[test]
fn code_blocks_keep_their_text_verbatim() {
    assert_eq!(
        parse("```rust\nfn main() { <b> }\n```"),
        vec![code_block(Some("rust"), "fn main() { <b> }\n")]
    );
    assert_eq!(
        parse("~~~ sh  extra words\n  *not* [em](x)\n\n~~~~\nafter"),
        vec![
            code_block(Some("sh"), "  *not* [em](x)\n\n"),
            p(vec![text("after")]),
        ]
    );
    assert_eq!(
        parse("    indented\n      more\n\ntext"),
        vec![
            code_block(None, "indented\n  more\n"),
            p(vec![text("text")])
        ]
    );
    assert_eq!(
        parse("```\nnever closed\n# not a heading"),
        vec![code_block(None, "never closed\n# not a heading\n")]
    );
    assert_eq!(
        parse("- item\n\n  ```\n  code\n  ```"),
        vec![el(
            "ul",
            vec![el(
                "li",
                vec![p(vec![text("item")]), code_block(None, "code\n")]
            )]
        )]
    );
}

#[test]
fn tables_have_a_head_and_a_body_and_keep_every_cell() {
    assert_eq!(
        parse(
            "| Step | Risk |\n|---|:---:|\n| dual-write | `low` |\n| drop \\| redis |\n| a | b | extra |"
        ),
        vec![el(
            "table",
            vec![
                el(
                    "thead",
                    vec![el(
                        "tr",
                        vec![el("th", vec![text("Step")]), el("th", vec![text("Risk")])]
                    )]
                ),
                el(
                    "tbody",
                    vec![
                        el(
                            "tr",
                            vec![
                                el("td", vec![text("dual-write")]),
                                el("td", vec![el("code", vec![text("low")])]),
                            ]
                        ),
                        el(
                            "tr",
                            vec![el("td", vec![text("drop | redis")]), el("td", vec![])]
                        ),
                        el(
                            "tr",
                            vec![
                                el("td", vec![text("a")]),
                                el("td", vec![text("b")]),
                                el("td", vec![text("extra")]),
                            ]
                        ),
                    ]
                ),
            ]
        )]
    );
    assert_eq!(
        parse("a | b\n--- | ---"),
        vec![el(
            "table",
            vec![el(
                "thead",
                vec![el(
                    "tr",
                    vec![el("th", vec![text("a")]), el("th", vec![text("b")])]
                )]
            )]
        )]
    );
    assert_eq!(
        parse("a | b\n--- | --- | ---"),
        vec![p(vec![text("a | b\n--- | --- | ---")])],
        "a delimiter row of another width is no table"
    );
}

#[test]
fn emphasis_strong_strike_and_code_spans() {
    assert_eq!(
        parse("*em* _em_ **strong** __strong__ ~~del~~ ~del~ `co*d*e` ``a ` b``"),
        vec![p(vec![
            el("em", vec![text("em")]),
            text(" "),
            el("em", vec![text("em")]),
            text(" "),
            el("strong", vec![text("strong")]),
            text(" "),
            el("strong", vec![text("strong")]),
            text(" "),
            el("del", vec![text("del")]),
            text(" "),
            el("del", vec![text("del")]),
            text(" "),
            el("code", vec![text("co*d*e")]),
            text(" "),
            el("code", vec![text("a ` b")]),
        ])]
    );
    assert_eq!(
        parse("***both*** and **bold *it* bold**"),
        vec![p(vec![
            el("em", vec![el("strong", vec![text("both")])]),
            text(" and "),
            el(
                "strong",
                vec![text("bold "), el("em", vec![text("it")]), text(" bold")]
            ),
        ])]
    );
}

#[test]
fn underscores_inside_words_and_lone_delimiters_stay_text() {
    assert_eq!(
        parse("snake_case_name and 2 * 3 * 4 and a ~~~ b and **unclosed"),
        vec![p(vec![text(
            "snake_case_name and 2 * 3 * 4 and a ~~~ b and **unclosed"
        )])]
    );
}

#[test]
fn emphasis_works_next_to_chinese_punctuation() {
    assert_eq!(
        parse("这是**重要**的，**“引用”**。"),
        vec![p(vec![
            text("这是"),
            el("strong", vec![text("重要")]),
            text("的，"),
            el("strong", vec![text("“引用”")]),
            text("。"),
        ])]
    );
}

#[test]
fn unsafe_link_targets_render_as_plain_text() {
    assert_eq!(
        parse("[click](javascript:alert(1)) and [docs](https://example.com)"),
        vec![p(vec![
            text("click and "),
            a("https://example.com", vec![text("docs")]),
        ])]
    );
    assert_eq!(
        parse("[**bold** link](data:text/html,x)"),
        vec![p(vec![el("strong", vec![text("bold")]), text(" link")])],
        "an unsafe target keeps the text with its formatting"
    );
}

#[test]
fn links_take_titles_angle_destinations_and_balanced_parentheses() {
    assert_eq!(
        parse(
            r#"[a](https://e.x/a_(b) "title") [b](<https://e.x/with space>) [c](mailto:me@e.x) [](https://e.x)"#
        ),
        vec![p(vec![
            a("https://e.x/a_(b)", vec![text("a")]),
            text(" "),
            a("https://e.x/with space", vec![text("b")]),
            text(" "),
            a("mailto:me@e.x", vec![text("c")]),
            text(" "),
            a("https://e.x", vec![text("https://e.x")]),
        ])]
    );
    assert_eq!(
        parse("[not a link] [x](https://e.x) [outer [inner](https://i.x)](https://o.x)"),
        vec![p(vec![
            text("[not a link] "),
            a("https://e.x", vec![text("x")]),
            text(" [outer "),
            a("https://i.x", vec![text("inner")]),
            text("](https://o.x)"),
        ])],
        "a link holds no link"
    );
}

#[test]
fn autolinks_are_links_only_for_safe_schemes() {
    assert_eq!(
        parse("<https://e.x/a?b=1> <javascript:alert(1)> <mailto:me@e.x>"),
        vec![p(vec![
            a("https://e.x/a?b=1", vec![text("https://e.x/a?b=1")]),
            text(" <javascript:alert(1)> "),
            a("mailto:me@e.x", vec![text("mailto:me@e.x")]),
        ])]
    );
}

#[test]
fn images_never_load_and_data_urls_are_dropped() {
    assert_eq!(
        parse("![diagram](data:image/png;base64,AAAA)"),
        vec![p(vec![text("diagram")])]
    );
    assert_eq!(
        parse("![a *chart*](https://e.x/c.png)"),
        vec![p(vec![a("https://e.x/c.png", vec![text("a chart")])])],
        "a safe image becomes a link whose text is the alt text"
    );
}

#[test]
fn raw_html_is_shown_as_text_never_as_markup() {
    let nodes =
        parse("Hello <script>alert(1)</script> <b>bold</b>\n\n<div onclick=x>block</div>\n");
    assert_eq!(tags(&nodes), vec!["p", "p"]);
    assert_eq!(
        text_content(&nodes),
        "Hello <script>alert(1)</script> <b>bold</b><div onclick=x>block</div>"
    );
    let nodes = parse(r#"<img src=x onerror="alert(1)"> <a href="*x*">y</a>"#);
    assert_eq!(
        nodes,
        vec![p(vec![text(
            r#"<img src=x onerror="alert(1)"> <a href="*x*">y</a>"#
        )])],
        "HTML stays as written, emphasis markers inside a tag included"
    );
}

#[test]
fn a_few_entities_and_backslash_escapes_become_characters() {
    assert_eq!(
        parse(r"&amp; &lt;b&gt; &quot;q&quot; &#65;&#x42; &copy; &#0; \*not em\* \[x\] a\b"),
        vec![p(vec![text(
            "& <b> \"q\" AB &copy; \u{fffd} *not em* [x] a\\b"
        )])]
    );
    assert_eq!(
        parse("[q](https://e.x/?a=1&amp;b=\\_2)"),
        vec![p(vec![a("https://e.x/?a=1&b=_2", vec![text("q")])])]
    );
}

/// A browser strips only C0 controls and spaces around a URL (and tabs and
/// newlines anywhere in it); Unicode white space it keeps, which makes the
/// target relative: `\u{2028}https://x/../../../api/history` is this host's
/// `/api/history`.
#[test]
fn a_target_is_checked_as_a_browser_parses_it_and_emitted_as_checked() {
    for prefix in ["\u{2028}", "\u{a0}", "\u{3000}", "\u{feff}", "\u{200b}"] {
        let target = format!("{prefix}https://x/../../../api/history");
        assert_eq!(
            parse(&format!("[x]({target})")),
            vec![p(vec![text("x")])],
            "{target:?}"
        );
        assert_eq!(
            parse(&format!("[x](<{target}>)")),
            vec![p(vec![text("x")])],
            "{target:?}"
        );
        assert!(!is_safe_url(&target), "{target:?}");
    }
    // What a browser strips and removes is gone from the emitted target.
    assert_eq!(
        parse("[x](< \thttps://e.x/a\tb\u{1} >)"),
        vec![p(vec![a("https://e.x/ab", vec![text("x")])])]
    );
    assert_eq!(
        parse("[x](<htt\tps://e.x>)"),
        vec![p(vec![a("https://e.x", vec![text("x")])])]
    );
    assert_eq!(
        parse("[x](<java\tscript:alert(1)>)"),
        vec![p(vec![text("x")])]
    );
}

#[test]
fn only_http_https_and_mailto_targets_are_safe() {
    for safe in ["http://e.x", "HTTPS://E.X", " https://e.x", "mailto:a@e.x"] {
        assert!(is_safe_url(safe), "{safe}");
    }
    for unsafe_url in [
        "javascript:alert(1)",
        "data:text/html,x",
        "//e.x",
        "/local",
        "ftp://e.x",
        "",
        "http:/x",
    ] {
        assert!(!is_safe_url(unsafe_url), "{unsafe_url}");
    }
}

#[test]
fn windows_line_endings_and_tabs_read_like_unix_ones() {
    assert_eq!(parse("# a\r\n\r\n-\tb\r\n"), parse("# a\n\n- b\n"));
}
