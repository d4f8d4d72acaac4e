//! The page's Content-Security-Policy: only the host's own files and the
//! inline `<script>`/`<style>` elements of the HTML file being served (by
//! their SHA-256, e.g. Trunk's loader), WebAssembly compilation
//! (`'wasm-unsafe-eval'`), requests to this origin only, and no framing.
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
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The policy for the HTML document `html`: [`BASE_POLICY`] plus the hash of
/// each of its inline scripts and style elements.
pub fn policy_for_html(html: &[u8]) -> String {
    let scripts = hashes(html, "script");
    let styles = hashes(html, "style");
    format!(
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'{scripts}; \
         style-src 'self'{styles}; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// ` 'sha256-…'` for each inline `<tag>` element (one without `src`).
fn hashes(html: &[u8], tag: &str) -> String {
    inline_contents(html, tag)
        .into_iter()
        .map(|content| format!(" 'sha256-{}'", STANDARD.encode(Sha256::digest(content))))
        .collect()
}

/// The text of each `<tag …>text</tag>` without a `src` attribute, with line
/// breaks normalised as the HTML parser does before the browser hashes it.
fn inline_contents(html: &[u8], tag: &str) -> Vec<Vec<u8>> {
    let lower = html.to_ascii_lowercase();
    let open = format!("<{tag}");
    let close = format!("</{tag}");
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = find(&lower[at..], open.as_bytes()).map(|i| at + i) {
        let after_name = start + open.len();
        // `<scripts>` or `<style-x>` are other elements.
        if !lower
            .get(after_name)
            .is_some_and(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
        {
            at = after_name;
            continue;
        }
        let Some(tag_end) = find(&lower[after_name..], b">").map(|i| after_name + i) else {
            break;
        };
        let attributes = &lower[after_name..tag_end];
        let Some(end) = find(&lower[tag_end..], close.as_bytes()).map(|i| tag_end + i) else {
            break;
        };
        if !has_attribute(attributes, b"src") {
            found.push(normalise_newlines(&html[tag_end + 1..end]));
        }
        at = end + close.len();
    }
    found
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
            inline_contents(html.as_bytes(), "script"),
            vec![b"b()".to_vec()]
        );
        let policy = policy_for_html(html.as_bytes());
        assert!(policy.contains(&sha("p{color:red}")));
        assert!(!policy.contains(&sha("x")));
    }

    #[test]
    fn line_breaks_are_hashed_as_the_browser_sees_them() {
        assert_eq!(
            inline_contents(b"<script>a\r\nb\rc</script>", "script"),
            vec![b"a\nb\nc".to_vec()]
        );
    }

    #[test]
    fn a_document_without_inline_elements_gets_the_base_policy() {
        assert_eq!(policy_for_html(b"<p>hello</p>"), BASE_POLICY);
    }
}
