//! The workspace's invariants, checked by reading its manifests and sources
//! (rust-analyzer's "tidy" tests): what each crate may depend on, that the
//! pinned tool versions agree, the browser-test convention, and that the
//! host's modules import each other in no circle. Each failure
//! names the file to fix. ARCHITECTURE.md lists which boundary each one holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every package `package` depends on for its build on any target (normal and
/// build dependencies, transitively; not dev-dependencies), by name.
fn dependencies(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal,build",
            "--target",
            "all",
        ])
        .args(["--prefix", "none", "--format", "{p}", "--depth", "0"])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != package)
        .map(str::to_owned)
        .collect()
}

fn assert_never_depends(package: &str, forbidden: &[&str], why: &str) {
    let found: Vec<&str> = dependencies(package)
        .iter()
        .filter_map(|d| forbidden.iter().find(|f| **f == d.as_str()).copied())
        .collect();
    assert!(
        found.is_empty(),
        "{package} depends on {found:?} (see `cargo tree -p {package} -i {}`): {why}",
        found.first().unwrap_or(&"")
    );
}

#[test]
fn core_depends_on_no_ui_framework_server_runtime_or_browser_binding() {
    assert_never_depends(
        "ask-user-core",
        &[
            "leptos",
            "axum",
            "tokio",
            "web-sys",
            "wasm-bindgen",
            "js-sys",
        ],
        "core is pure Rust + serde, shared by the host and the browser",
    );
}

#[test]
fn the_browser_crates_never_depend_on_the_host() {
    for package in ["ask-user-composer", "ask-user-embed", "ask-user-web"] {
        assert_never_depends(
            package,
            &["ask-user-host", "axum", "hyper", "rmcp"],
            "the browser side talks to the host over HTTP only",
        );
    }
}

#[test]
fn the_pending_tables_rules_import_nothing_from_tokio() {
    // The rules are a state machine driven by inputs on any clock; the
    // driver in host/src/server/pending.rs is the only place that touches tokio.
    for file in [
        "host/src/server/pending/table.rs",
        "host/src/server/pending/table/tests.rs",
    ] {
        let code = code_only(&read(file));
        let lines: Vec<usize> = code
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains("tokio"))
            .map(|(n, _)| n + 1)
            .collect();
        assert!(
            lines.is_empty(),
            "{file} uses tokio on lines {lines:?}: keep runtime types in the driver (host/src/server/pending.rs)"
        );
    }
}

/// The quoted value of `key = "..."` in a TOML or Rust source line.
/// Second versions accepted, each for its reason: ring 0.17 (rustls's
/// smallest crypto backend, for `--tls-cert`) still uses getrandom 0.2
/// (a few KB beside rand's 0.4) and, on Windows only, windows-sys 0.52.
/// aws-lc-rs, the other backend, would cost far more than both.
/// web-push-native 0.5 (Web Push's encryption, issue 22) builds on p256 0.13
/// and ece-native, RustCrypto's previous generation (digest 0.10, sha2 0.10,
/// hmac and hkdf 0.12, rand_core 0.6 and their helpers), while the host is on
/// sha2 0.11: those go once web-push-native moves to p256 0.14. Their weight
/// is in docs/performance.md ("The one binary", issue 22).
const ACCEPTED_SECOND_VERSIONS: [&str; 14] = [
    // tokio-postgres (the shared store, issue 24): postgres-protocol's base64
    // and fallible-iterator (rusqlite's is 0.3), and whoami's wasi (never on
    // Linux). A few KB of the binary (docs/performance.md).
    "base64 v0.22.",
    "fallible-iterator v0.2.",
    "wasi v0.14.",
    "getrandom v0.2.",
    "windows-sys v0.52.",
    "block-buffer v0.10.",
    "const-oid v0.9.",
    "cpufeatures v0.2.",
    "crypto-common v0.1.",
    "digest v0.10.",
    "hkdf v0.12.",
    "hmac v0.12.",
    "rand_core v0.6.",
    "sha2 v0.10.",
];

#[test]
fn the_one_binary_ships_one_version_of_each_crate() {
    // Second versions of crates were 0.8 MB of issue 20's binary (reqwest
    // 0.12 beside rmcp's 0.13). Proc macros and build scripts do not ship.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .args(["tree", "-p", "ask-user-host", "--duplicates"])
        .args(["-e", "normal,no-proc-macro", "--target", "all"])
        .args(["--prefix", "none", "--format", "{p}", "--depth", "0"])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree --duplicates: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all: BTreeSet<&str> = std::str::from_utf8(&output.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    // An accepted old version takes itself and one other version of its
    // crate out of the count; a third version would still be reported.
    let accepted: Vec<&str> = all
        .iter()
        .copied()
        .filter(|line| ACCEPTED_SECOND_VERSIONS.iter().any(|a| line.starts_with(a)))
        .collect();
    let name = |line: &str| line.split(' ').next().unwrap_or_default().to_owned();
    let duplicates: BTreeSet<&str> = all
        .iter()
        .copied()
        .filter(|line| {
            let versions = all.iter().filter(|l| name(l) == name(line)).count();
            !(versions == 2 && accepted.iter().any(|a| name(a) == name(line)))
        })
        .collect();
    assert!(
        duplicates.is_empty(),
        "the host ships several versions of a crate (align host/Cargo.toml or the workspace's \
         Cargo.toml with the crate that pulls the other; `cargo tree -p ask-user-host -i NAME@VERSION`): {duplicates:#?}"
    );
}

fn quoted_after(text: &str, key: &str, file: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| line.starts_with(key))
        .and_then(|line| line.split('"').nth(1))
        .unwrap_or_else(|| panic!("{file} has no `{key} ... \"...\"` line"))
        .to_owned()
}

#[test]
fn pinned_tool_versions_agree_between_cargo_trunk_and_xtask() {
    let cargo = read("Cargo.toml");
    let trunk = read("Trunk.toml");
    let xtask = read("crates/xtask/src/tools.rs");
    let lock = read("Cargo.lock");

    let cargo_pin = quoted_after(&cargo, "wasm-bindgen =", "Cargo.toml");
    let trunk_pin = quoted_after(&trunk, "wasm_bindgen =", "Trunk.toml");
    let xtask_pin = quoted_after(
        &xtask,
        "pub const WASM_BINDGEN",
        "crates/xtask/src/tools.rs",
    );
    let locked = lock
        .split("\n\n")
        .find(|entry| entry.contains("\nname = \"wasm-bindgen\"\n"))
        .map(|entry| quoted_after(entry, "version =", "Cargo.lock"))
        .expect("Cargo.lock resolves wasm-bindgen");
    assert_eq!(
        (cargo_pin.as_str(), trunk_pin.as_str(), xtask_pin.as_str()),
        (
            format!("={locked}").as_str(),
            locked.as_str(),
            locked.as_str()
        ),
        "wasm-bindgen: Cargo.toml `=X`, Trunk.toml [tools] and xtask's WASM_BINDGEN must all be \
         the version Cargo.lock resolves (the CLI must match the crate exactly)"
    );

    let trunk_opt = quoted_after(&trunk, "wasm_opt =", "Trunk.toml");
    let xtask_opt = quoted_after(&xtask, "pub const WASM_OPT", "crates/xtask/src/tools.rs");
    let npm = quoted_after(
        &xtask,
        "pub const BINARYEN_NPM",
        "crates/xtask/src/tools.rs",
    );
    assert_eq!(
        trunk_opt,
        format!("version_{xtask_opt}"),
        "wasm-opt: Trunk.toml [tools] must name xtask's WASM_OPT"
    );
    assert_eq!(
        npm.split('.').next(),
        Some(xtask_opt.as_str()),
        "wasm-opt: xtask's binaryen npm package must be the WASM_OPT release"
    );
}

/// Source with comments, string and char literals blanked (same length, same
/// lines), so braces and names inside them are not mistaken for code.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to.min(bytes.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        let end = if rest.starts_with("//") {
            i + rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            i + rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 2 + hashes + usize::from(rest.starts_with('b'));
            i + open
                + rest[open..]
                    .find(&close)
                    .map_or(rest.len(), |e| e + close.len())
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            i + j + 1
        } else if let Some(len) = char_literal_len(rest) {
            i + len
        } else {
            i += 1;
            continue;
        };
        blank(&mut out, i, end);
        i = end;
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 boundaries in ASCII code")
}

/// `r"`, `r#"`, `br##"`…: how many `#`.
fn raw_string_start(rest: &str) -> Option<usize> {
    let after = rest.strip_prefix("br").or_else(|| rest.strip_prefix('r'))?;
    let hashes = after.bytes().take_while(|b| *b == b'#').count();
    after[hashes..].starts_with('"').then_some(hashes)
}

/// `'x'`, `'\n'`, `'\u{a0}'`, but not a lifetime `'a`.
fn char_literal_len(rest: &str) -> Option<usize> {
    let body = rest.strip_prefix('\'')?;
    let len = if body.starts_with('\\') {
        body.find('\'')?
    } else {
        body.chars().next()?.len_utf8()
    };
    (body[len..].starts_with('\'')).then_some(len + 2)
}

/// Every `fn` in `code`: its name, where its attributes begin, and its body.
fn functions(code: &str) -> Vec<(String, usize, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(at) = code[search..].find("fn ").map(|p| p + search) {
        search = at + 3;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = code[at..].find(['{', ';']).map(|p| p + at) else {
            break;
        };
        if code.as_bytes()[open] == b';' {
            continue;
        }
        let mut depth = 0;
        let close = code[open..]
            .char_indices()
            .find_map(|(i, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(open + i + 1)
            })
            .unwrap_or(code.len());
        // Attributes: back from `fn` over `pub`, `async`, attributes and blank lines.
        let item_start = code[..at].rfind(['}', ';']).map_or(0, |p| p + 1);
        found.push((name, item_start, open..close));
        search = open + 1;
    }
    found
}

/// Names of the test functions in `source` that start a browser (directly or
/// through a helper in the same file) and lack the browser-test ignore line.
fn unmarked_browser_tests(source: &str) -> Vec<String> {
    const STARTS_A_BROWSER: [&str; 3] = ["E2e::start", "e2e_dist(", "Browser::launch"];
    let code = code_only(source);
    let fns = functions(&code);
    let mut starts: BTreeMap<&str, bool> = fns
        .iter()
        .map(|(name, _, body)| {
            let body = &code[body.clone()];
            (
                name.as_str(),
                STARTS_A_BROWSER.iter().any(|s| body.contains(s)),
            )
        })
        .collect();
    // Through helpers, to a fixed point.
    loop {
        let mut changed = false;
        for (name, _, body) in &fns {
            if starts[name.as_str()] {
                continue;
            }
            let body = &code[body.clone()];
            let calls_one = fns
                .iter()
                .any(|(other, _, _)| starts[other.as_str()] && body.contains(&format!("{other}(")));
            if calls_one {
                starts.insert(name, true);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    fns.iter()
        .filter(|(name, attrs, body)| {
            let header = &source[*attrs..body.start];
            let is_test = header.contains("#[test]") || header.contains("#[tokio::test");
            is_test && starts[name.as_str()] && !header.contains("#[ignore = \"browser test:")
        })
        .map(|(name, _, _)| name.clone())
        .collect()
}

#[test]
fn every_test_that_starts_a_browser_is_ignored_as_a_browser_test() {
    let dir = root().join("tests/tests");
    let mut unmarked = Vec::new();
    let mut browser_files = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/tests") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a test file");
        browser_files += usize::from(source.contains("#[ignore = \"browser test:"));
        for name in unmarked_browser_tests(&source) {
            unmarked.push(format!("{}: {name}", path.display()));
        }
    }
    assert!(browser_files > 0, "the scan found no browser test at all");
    assert!(
        unmarked.is_empty(),
        "these tests start a browser (E2e::start, e2e_dist(), Browser::launch) but lack \
         `#[ignore = \"browser test: ...\"]`, so plain `cargo test` would fail without Chromium: \
         {unmarked:#?}"
    );
}

#[test]
fn the_browser_test_scan_sees_helpers_and_ignores_strings_and_comments() {
    let source = r##"
        async fn helper() -> PathBuf { e2e_dist() }

        #[tokio::test]
        async fn unmarked_through_a_helper() { let _ = helper().await; }

        #[tokio::test]
        #[ignore = "browser test: needs Chromium"]
        async fn marked() { E2e::start("x", &[]).await; }

        #[tokio::test]
        async fn only_mentions_it() {
            // E2e::start is not called here
            let _ = "Browser::launch() { }";
            let _ = r#"e2e_dist()"#;
            let _ = '{';
        }

        #[test]
        fn unmarked_direct() { let _b = Browser::launch(); }
    "##;
    assert_eq!(
        unmarked_browser_tests(source),
        ["unmarked_through_a_helper", "unmarked_direct"]
    );
}

/// The Markdown a newcomer reads: the README, ARCHITECTURE.md and every page in `docs/`.
fn documentation_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let docs = root().join("docs");
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `text` with fenced code blocks and inline code spans blanked out (every
/// character but a newline becomes a space), so line numbers stay those of
/// the file and nothing quoted as code is taken for a link or a heading.
fn prose_only(text: &str) -> String {
    let mut prose = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let blank = |prose: &mut String| {
            prose.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        };
        match &fence {
            Some(open) => {
                if marker.len() >= open.len() && marker.starts_with(&open[..1]) {
                    fence = None;
                }
                blank(&mut prose);
            }
            None if marker.len() >= 3
                && marker.chars().all(|c| c == marker.as_bytes()[0] as char) =>
            {
                fence = Some(marker);
                blank(&mut prose);
            }
            None => prose.push_str(line),
        }
    }
    // Inline code: a run of N backticks up to the next run of exactly N (it may cross lines).
    let bytes = prose.as_bytes();
    let mut out = prose.clone().into_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let run = bytes[at..].iter().take_while(|&&b| b == b'`').count();
        let mut end = None;
        let mut look = at + run;
        while look < bytes.len() {
            if bytes[look] == b'`' {
                let close = bytes[look..].iter().take_while(|&&b| b == b'`').count();
                if close == run {
                    end = Some(look + close);
                    break;
                }
                look += close;
            } else {
                look += 1;
            }
        }
        match end {
            Some(end) => {
                for byte in &mut out[at..end] {
                    if *byte != b'\n' {
                        *byte = b' ';
                    }
                }
                at = end;
            }
            None => at += run,
        }
    }
    // A span is blanked byte by byte from backtick to backtick, so a character
    // it held is never cut: the bytes stay UTF-8.
    String::from_utf8_lossy(&out).into_owned()
}

/// Every inline link and image target in `text` (`[text](target)`,
/// `![alt](target)`) outside code, with its line number.
fn markdown_links(text: &str) -> Vec<(usize, String)> {
    let prose = prose_only(text);
    let mut links = Vec::new();
    let mut search = 0;
    while let Some(at) = prose[search..].find("](").map(|p| p + search) {
        let start = at + 2;
        let Some(len) = prose[start..].find([')', ' ', '\n']) else {
            break;
        };
        let target = &prose[start..start + len];
        if !target.is_empty() {
            let line = prose[..at].matches('\n').count() + 1;
            links.push((line, target.to_owned()));
        }
        search = start + len;
    }
    links
}

/// The anchors GitHub gives the headings of `text`: lowercased, punctuation
/// dropped (letters, digits, `-`, `_` and spaces stay), spaces turned into
/// `-`, and `-1`, `-2`, … after a repeated one.
fn heading_anchors(text: &str) -> BTreeSet<String> {
    let prose = prose_only(text);
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    // Headings are read from the text, not the blanked prose, so code in a
    // heading keeps its words; the prose only says which lines are in a fence.
    for (line, blanked) in text.lines().zip(prose.lines()) {
        let hashes = blanked.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// The relative links of `files` that name no file, or no heading of the
/// Markdown file they name: `file:line: target: why`.
fn broken_links(files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (line, target) in markdown_links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("a file's folder").join(path)
            };
            let why = if !linked.exists() {
                Some("no such file".to_owned())
            } else if let Some(anchor) = anchor {
                match std::fs::read_to_string(&linked) {
                    Ok(linked_text) if linked.extension().is_some_and(|e| e == "md") => {
                        let anchors = heading_anchors(&linked_text);
                        (!anchors.contains(anchor))
                            .then(|| format!("no heading with this anchor; there are {anchors:?}"))
                    }
                    _ => Some("an anchor into a file that is not Markdown".to_owned()),
                }
            } else {
                None
            };
            if let Some(why) = why {
                broken.push(format!("{}:{line}: {target}: {why}", file.display()));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_readme_and_docs_names_a_file_and_heading_that_exist() {
    let files = documentation_files();
    assert!(
        files.iter().any(|f| f.ends_with("docs/http-api.md")),
        "the scan found no docs/ pages: {files:?}"
    );
    let broken = broken_links(&files);
    assert!(
        broken.is_empty(),
        "these links lead nowhere (fix the link, or the heading it names): {broken:#?}"
    );
}

#[test]
fn the_link_check_finds_missing_files_and_anchors_and_skips_code() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tidy-links");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs")).expect("a scratch folder");
    let readme = dir.join("README.md");
    let page = dir.join("docs/page.md");
    std::fs::write(
        &page,
        "# A page\n\n## MCP over stdio: `ask-user mcp`\n\n## Twice\n\n## Twice\n\n```sh\n# not a heading\n```\n",
    )
    .expect("a page");
    std::fs::write(
        &readme,
        "# Top\n\n\
         [ok](docs/page.md) [ok](docs/page.md#mcp-over-stdio-ask-user-mcp) [ok](#top)\n\
         [ok](docs/page.md#twice-1) ![ok](docs/page.md \"title\")\n\
         [gone](docs/missing.md)\n\
         [no anchor](docs/page.md#not-a-heading)\n\
         [no self anchor](#nowhere)\n\
         `[code](docs/missing.md)` [web](https://example.invalid/x)\n\n\
         ```md\n[fenced](docs/missing.md)\n```\n",
    )
    .expect("a readme");
    let broken = broken_links(&[readme.clone(), page]);
    let lines: Vec<String> = broken
        .iter()
        .map(|b| b.split(": ").next().unwrap_or_default().to_owned())
        .collect();
    let shown = readme.display();
    assert_eq!(
        lines,
        [
            format!("{shown}:5"),
            format!("{shown}:6"),
            format!("{shown}:7"),
        ],
        "{broken:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The host's modules a client program (`host/src/client/`) may name: the
/// client room itself and what both sides share (the data directory and its
/// token file and lock, log escaping, QR codes, the devices API's bodies, and
/// the store's read side, which `ask-user history` opens directly).
const SHARED_WITH_CLIENTS: &[&str] = &[
    "client",
    "data_dir",
    "token_file",
    "host_lock",
    "logged",
    "qr",
    "server::devices",
    "server::store",
];

/// Every `crate::<module>` a source names, with its line, skipping comments
/// and strings.
fn crate_modules_named(source: &str) -> Vec<(usize, String)> {
    let code = code_only(source);
    let mut found = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name = |text: &str| -> String {
                text.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            };
            let mut module = name(after);
            // The server room is named by its module: `server::store`.
            if module == "server" && after[module.len()..].starts_with("::") {
                module = format!("server::{}", name(&after[module.len() + 2..]));
            }
            // `$crate::` in a macro is the same crate.
            if !module.is_empty() {
                found.push((index + 1, module));
            }
            rest = after;
        }
    }
    found
}

fn rust_files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files_under(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn the_client_programs_reach_no_server_internals() {
    let mut files = Vec::new();
    rust_files_under(&root().join("host/src/client"), &mut files);
    assert!(
        files.len() >= 5,
        "host/src/client/ holds the client programs: {files:?}"
    );
    let mut offences = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file");
        for (line, module) in crate_modules_named(&source) {
            if !SHARED_WITH_CLIENTS.contains(&module.as_str()) {
                offences.push(format!("{}:{line}: crate::{module}", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the client programs name server internals (move what both sides need into core or a \
         shared module, or add it to SHARED_WITH_CLIENTS with the reason):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_client_room_scan_sees_paths_in_code_and_not_in_comments() {
    let source = "use crate::pending::X; // crate::mcp::tool\nfn f() { crate::client::ask(); \
                  let s = \"crate::state\"; $crate::client::say(); crate::server::store::X; }\n";
    let named: Vec<String> = crate_modules_named(source)
        .into_iter()
        .map(|(_, module)| module)
        .collect();
    assert_eq!(named, ["pending", "client", "client", "server::store"]);
}

/// Where the page, the embed and the host spell what crosses the wire (test
/// modules left out: they check the spelling).
const WIRE_WORD_ROOTS: [&str; 4] = [
    "host/src",
    "crates/composer/src",
    "frontend/src",
    "crates/embed/src",
];

/// The lines of `source` outside its test module and comments where
/// `"word"` is written out, as (line number, word).
fn wire_words_spelled(source: &str, words: &[&str]) -> Vec<(usize, String)> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or_default();
        for word in words {
            if line.contains(&format!("\"{word}\"")) {
                found.push((index + 1, (*word).to_owned()));
            }
        }
    }
    found
}

#[test]
fn wire_words_are_spelled_only_in_core() {
    use ask_user_core::wire::{self, Outcome};
    let mut words: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
    words.extend([
        wire::QUESTION_REQUESTED,
        wire::QUESTION_RESOLVED,
        wire::SESSION_SYNCED,
        wire::MESSAGE_CREATED,
        wire::QUESTION_DETACHED,
        wire::QUESTION_ATTACHED,
        wire::INBOX_CHANGED,
    ]);
    let mut files = Vec::new();
    for dir in WIRE_WORD_ROOTS {
        rust_files_under(&root().join(dir), &mut files);
    }
    // The same word as English, not as the wire's.
    let prose = [
        ("crates/composer/src/composer.rs", "answered"),
        ("crates/composer/src/i18n.rs", "answered"),
        ("host/src/client/history.rs", "answered"),
    ];
    let mut offences = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file");
        let relative = file.strip_prefix(root()).unwrap_or(file);
        for (line, word) in wire_words_spelled(&source, &words) {
            if !prose.contains(&(relative.to_str().unwrap_or_default(), word.as_str())) {
                offences.push(format!("{}:{line}: \"{word}\"", relative.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "wire words spelled outside core (use ask_user_core::wire's constants, Outcome::as_str \
         or Outcome::from_wire):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_wire_word_scan_sees_code_and_skips_comments_and_tests() {
    let source = "let a = \"answered\"; // \"cancelled\"\n/// \"timeout\"\nlet b = \"aborted\";\n\
                  #[cfg(test)]\nmod tests { \"disposed\" }\n";
    let words = ["answered", "cancelled", "timeout", "aborted", "disposed"];
    assert_eq!(
        wire_words_spelled(source, &words),
        [(1, "answered".to_owned()), (3, "aborted".to_owned())]
    );
}

/// The paths `text` (what follows `prefix::`) names, as far as the graph
/// needs them (two segments from the crate's root): `server::state::X` is
/// `[server, state]`, `server::{api, mcp::Y}` is `[server, api]` and
/// `[server, mcp]`.
fn expand_path(prefix: Vec<String>, text: &str, found: &mut Vec<Vec<String>>) {
    if prefix.len() >= 2 {
        found.push(prefix);
        return;
    }
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        let mut items = Vec::new();
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        for item in items {
            let item = item.trim();
            if item.starts_with("self") && !item.starts_with("self::") {
                found.push(prefix.clone());
            } else if !item.is_empty() {
                expand_path(prefix.clone(), item, found);
            }
        }
        return;
    }
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        found.push(prefix);
        return;
    }
    let mut longer = prefix;
    longer.push(name.clone());
    match text[name.len()..].strip_prefix("::") {
        Some(rest) => expand_path(longer, rest, found),
        None => found.push(longer),
    }
}

/// The host's module graph: for each module (`cli`, `server::state`,
/// `client::mcp`, `server` for `server/mod.rs`, `crate` for `lib.rs`), the
/// modules its code names, each with where it first does. Built from
/// `files` (path under `host/src`, source): every `crate::…`, `super::…` and
/// `self::…` path, and a parent's paths into the children it declares
/// (`api::router()` in `server/mod.rs`); comments, strings, test modules
/// (after `#[cfg(test)]`) and test files (`tests.rs`, `*_tests.rs`) left out.
/// A path that names no module file (`crate::AppState`) names its parent's
/// root, so a re-export is no way around the layering.
fn module_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, String>> {
    const ROOMS: [&str; 2] = ["server", "client"];
    let is_module = |segments: &[&str]| {
        let stem = segments.join("/");
        files
            .iter()
            .any(|(path, _)| *path == format!("{stem}.rs") || *path == format!("{stem}/mod.rs"))
    };
    // The graph's node for an absolute path: a room's child, a top module, or the root.
    let node_of = |segments: &[&str]| -> String {
        match segments {
            [room, child, ..] if ROOMS.contains(room) && is_module(&[room, child]) => {
                format!("{room}::{child}")
            }
            [top, ..] if is_module(&[top]) => (*top).to_owned(),
            _ => "crate".to_owned(),
        }
    };
    let ident = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (path, source) in files {
        let file = path.rsplit('/').next().unwrap_or(path);
        if file == "tests.rs" || file.ends_with("_tests.rs") || file == "main.rs" {
            continue;
        }
        // The file's module path: `server/mcp/tool.rs` is server::mcp::tool.
        let stem = path.trim_end_matches(".rs");
        let mut own: Vec<&str> = stem.split('/').collect();
        if matches!(own.last(), Some(&"mod") | Some(&"lib")) {
            own.pop();
        }
        let me = node_of(&own);
        let before_tests = source.split("#[cfg(test)]").next().unwrap_or_default();
        let code = code_only(before_tests);
        let children: Vec<String> = code
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                let rest = line
                    .strip_prefix("pub mod ")
                    .or(line.strip_prefix("mod "))?;
                let name = ident(rest);
                rest[name.len()..].starts_with(';').then_some(name)
            })
            .collect();
        for (index, line) in code.lines().enumerate() {
            let bytes = line.as_bytes();
            let mut at = 0;
            while at < line.len() {
                let starts_word = at == 0
                    || !(bytes[at - 1].is_ascii_alphanumeric()
                        || bytes[at - 1] == b'_'
                        || bytes[at - 1] == b':');
                let word = ident(&line[at..]);
                if word.is_empty() || !starts_word {
                    at += word.len().max(1);
                    continue;
                }
                let after = &line[at + word.len()..];
                let mut base: Vec<&str> = match word.as_str() {
                    "crate" => Vec::new(),
                    "self" | "super" => own.clone(),
                    _ if children.contains(&word) => {
                        let mut child = own.clone();
                        child.push(&line[at..at + word.len()]);
                        child
                    }
                    _ => {
                        at += word.len();
                        continue;
                    }
                };
                let mut rest = after;
                if word == "super" {
                    base.pop();
                    while let Some(more) = rest.strip_prefix("::super") {
                        base.pop();
                        rest = more;
                    }
                }
                let Some(rest) = rest.strip_prefix("::") else {
                    at += word.len();
                    continue;
                };
                // Up to two more segments, or each first segment of a `{…}` group.
                let base: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
                let mut targets: Vec<Vec<String>> = Vec::new();
                expand_path(base, rest, &mut targets);
                for segments in targets {
                    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
                    let target = node_of(&segments);
                    if target != me {
                        graph
                            .entry(me.clone())
                            .or_default()
                            .entry(target)
                            .or_insert_with(|| format!("host/src/{path}:{}", index + 1));
                    }
                }
                at += word.len();
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan's).
fn circles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct Search<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(search: &mut Search<'a>, node: &'a str) {
        let next = search.index.len();
        search.index.insert(node, next);
        search.low.insert(node, next);
        search.stack.push(node);
        for target in search.graph.get(node).into_iter().flat_map(|t| t.keys()) {
            let target = target.as_str();
            if !search.index.contains_key(target) {
                visit(search, target);
                let low = search.low[node].min(search.low[target]);
                search.low.insert(node, low);
            } else if search.stack.contains(&target) {
                let low = search.low[node].min(search.index[target]);
                search.low.insert(node, low);
            }
        }
        if search.low[node] == search.index[node] {
            let mut component = Vec::new();
            while let Some(member) = search.stack.pop() {
                component.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                search.found.push(component);
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            visit(&mut search, node);
        }
    }
    search.found
}

fn host_sources() -> Vec<(String, String)> {
    let src = root().join("host/src");
    let mut files = Vec::new();
    rust_files_under(&src, &mut files);
    files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).expect("under host/src");
            let source = std::fs::read_to_string(file).expect("a source file");
            (relative.to_string_lossy().replace('\\', "/"), source)
        })
        .collect()
}

#[test]
fn the_hosts_modules_import_each_other_in_no_circle() {
    let graph = module_graph(&host_sources());
    assert!(
        graph.contains_key("server::state") && graph.contains_key("client::mcp"),
        "the scan finds the host's modules: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    let found: Vec<String> = circles(&graph)
        .iter()
        .map(|circle| {
            let edges: Vec<String> = circle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|(to, _)| circle.contains(to))
                        .map(move |(to, at)| format!("  {from} -> {to} ({at})"))
                })
                .collect();
            format!("{}:\n{}", circle.join(", "), edges.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules of host/src import each other in a circle (move what both need into a lower \
         module, or hand it over through axum's FromRef; see ARCHITECTURE.md, \"Layers\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_module_graph_sees_crate_super_self_and_child_paths_and_skips_tests_and_comments() {
    let file = |path: &str, source: &str| (path.to_owned(), source.to_owned());
    let files = [
        file(
            "lib.rs",
            "pub mod server;\npub mod logged;\npub use server::app;\n",
        ),
        file(
            "logged.rs",
            "// crate::server::state\nlet s = \"crate::server::api\";\n",
        ),
        file(
            "server/mod.rs",
            "pub mod api;\npub mod state;\npub mod mcp;\nfn app() { api::router(); }\n",
        ),
        file(
            "server/api.rs",
            "use crate::server::{state::AppState, mcp};\nuse super::state::X;\n\
             #[cfg(test)]\nmod tests { use crate::logged::Y; }\n",
        ),
        file(
            "server/state.rs",
            "use crate::AppState;\nfn f() { crate::logged::say(); }\n",
        ),
        file("server/mcp/mod.rs", "pub mod tool;\n"),
        file(
            "server/mcp/tool.rs",
            "use super::super::api::Z;\nuse self::inner::W;\n",
        ),
        file("server/mcp/tests.rs", "use crate::server::state::S;\n"),
    ];
    let graph = module_graph(&files);
    let named = |from: &str| -> Vec<&str> {
        graph
            .get(from)
            .map(|targets| targets.keys().map(String::as_str).collect())
            .unwrap_or_default()
    };
    assert_eq!(named("crate"), ["server"], "lib.rs names its child server");
    assert_eq!(
        named("logged"),
        Vec::<&str>::new(),
        "comments and strings are no paths"
    );
    assert_eq!(
        named("server"),
        ["server::api"],
        "a parent's path into a child"
    );
    assert_eq!(
        named("server::api"),
        ["server::mcp", "server::state"],
        "grouped and super paths; the test module left out"
    );
    assert_eq!(
        named("server::state"),
        ["crate", "logged"],
        "a path to no module names the root"
    );
    assert_eq!(
        named("server::mcp"),
        ["server::api"],
        "super::super from a nested file, and no test file"
    );
    assert_eq!(
        graph["server::api"]["server::state"], "host/src/server/api.rs:1",
        "the first place an edge is written"
    );
    let circle = circles(&graph);
    assert_eq!(
        circle,
        [[
            "crate",
            "server",
            "server::api",
            "server::mcp",
            "server::state"
        ]]
    );
}
