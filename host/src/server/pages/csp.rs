//! The page's Content-Security-Policy: only the host's own files and the
//! inline `<script>`/`<style>` elements of the HTML file being served (by
//! their SHA-256, e.g. Trunk's loader), WebAssembly compilation
//! (`'wasm-unsafe-eval'`), requests to this origin only, the installable
//! app's service worker and manifest from this origin only, and no framing.
//! Nothing else: no inline event handlers, no `style` attributes, no `eval`,
//! no remote images (the Markdown renderer builds elements and text nodes and
//! turns images into links, so it needs no exception).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

/// The policy of every page response that is not an HTML file with inline
/// elements (the files it loads, the notice, errors).
pub const BASE_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The policy for the HTML document `html`: [`BASE_POLICY`] plus the hash of
/// each of its inline scripts and style elements.
pub fn policy_for_html(html: &[u8]) -> String {
    let inline = inline_elements(html);
    let hashes = |kind: Kind| -> String {
        inline
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, content)| format!(" 'sha256-{}'", STANDARD.encode(Sha256::digest(content))))
            .collect()
    };
    let (scripts, styles) = (hashes(Kind::Script), hashes(Kind::Style));
    format!(
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'{scripts}; \
         style-src 'self'{styles}; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
         worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// An element whose inline text the policy must allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Script,
    Style,
}

/// The text of each inline `<script>` (one without `src`) and `<style>`, in
/// document order, with line breaks normalised as the HTML parser does before
/// the browser hashes it. Comments are skipped, and a script's or style's text
/// is raw (a `<style>` inside a script is text, not an element).
fn inline_elements(html: &[u8]) -> Vec<(Kind, Vec<u8>)> {
    let lower = html.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(open) = lower[at..].iter().position(|&b| b == b'<').map(|i| at + i) {
        let rest = &lower[open..];
        if rest.starts_with(b"<!--") {
            match find(&lower[open + 4..], b"-->") {
                Some(end) => at = open + 4 + end + 3,
                None => break,
            }
            continue;
        }
        let kind = [(Kind::Script, &b"script"[..]), (Kind::Style, &b"style"[..])]
            .into_iter()
            .find(|(_, name)| {
                rest[1..].starts_with(name)
                    && rest
                        .get(1 + name.len())
                        .is_some_and(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
            });
        let Some((kind, name)) = kind else {
            at = open + 1;
            continue;
        };
        let Some(tag_end) = open_tag_end(&lower, open + 1 + name.len()) else {
            break;
        };
        let close = [b"</".as_slice(), name].concat();
        let Some(end) = find(&lower[tag_end + 1..], &close).map(|i| tag_end + 1 + i) else {
            break;
        };
        let attributes = &lower[open + 1 + name.len()..tag_end];
        if kind == Kind::Style || !has_attribute(attributes, b"src") {
            found.push((kind, normalise_newlines(&html[tag_end + 1..end])));
        }
        at = end + close.len();
    }
    found
}

/// The index of the `>` that ends an open tag whose attributes start at
/// `from`, skipping quoted attribute values.
fn open_tag_end(html: &[u8], from: usize) -> Option<usize> {
    let mut quote = None;
    for (i, &b) in html.iter().enumerate().skip(from) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

fn has_attribute(attributes: &[u8], name: &[u8]) -> bool {
    attributes
        .split(|b| b.is_ascii_whitespace())
        .any(|word| word == name || word.strip_prefix(name).is_some_and(|r| r.starts_with(b"=")))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn normalise_newlines(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.iter().peekable();
    while let Some(&b) = bytes.next() {
        if b == b'\r' {
            out.push(b'\n');
            if bytes.peek() == Some(&&b'\n') {
                bytes.next();
            }
        } else {
            out.push(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(text: &str) -> String {
        format!(
            "'sha256-{}'",
            STANDARD.encode(Sha256::digest(text.as_bytes()))
        )
    }

    #[test]
    fn trunks_inline_loader_is_allowed_by_its_hash_and_nothing_else_inline() {
        let loader = "\nimport init from '/app.js';\nawait init();\n";
        let html = format!(
            "<!doctype html><head><script type=\"module\">{loader}</script>\
             <link rel=\"modulepreload\" href=\"/app.js\"></head><body></body>"
        );
        let policy = policy_for_html(html.as_bytes());
        assert!(
            policy.contains(&format!(
                "script-src 'self' 'wasm-unsafe-eval' {};",
                sha(loader)
            )),
            "{policy}"
        );
        assert!(policy.contains("style-src 'self';"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe-inline"));
    }

    #[test]
    fn scripts_with_src_are_not_hashed_and_styles_are() {
        let html = "<SCRIPT src=\"/a.js\"></SCRIPT><script\ttype=module>b()</script>\
                    <style>p{color:red}</style><scripts>x</scripts>";
        assert_eq!(
            inline_elements(html.as_bytes()),
            vec![
                (Kind::Script, b"b()".to_vec()),
                (Kind::Style, b"p{color:red}".to_vec())
            ]
        );
        let policy = policy_for_html(html.as_bytes());
        assert!(policy.contains(&sha("p{color:red}")));
        assert!(!policy.contains(&sha("x")));
    }

    #[test]
    fn line_breaks_are_hashed_as_the_browser_sees_them() {
        assert_eq!(
            inline_elements(b"<script>a\r\nb\rc</script>"),
            vec![(Kind::Script, b"a\nb\nc".to_vec())]
        );
    }

    #[test]
    fn comments_are_skipped_and_a_scripts_text_is_raw() {
        let html = "<!-- a <style> element, a <script> --><script>x = '<style>';</script>\
                    <link href=\"a>b\"><style media=\"a>b\">q{}</style>";
        assert_eq!(
            inline_elements(html.as_bytes()),
            vec![
                (Kind::Script, b"x = '<style>';".to_vec()),
                (Kind::Style, b"q{}".to_vec())
            ]
        );
    }

    #[test]
    fn a_document_without_inline_elements_gets_the_base_policy() {
        assert_eq!(policy_for_html(b"<p>hello</p>"), BASE_POLICY);
    }
}
