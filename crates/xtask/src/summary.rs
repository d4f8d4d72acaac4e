//! Turning each runner's output into the few lines the final summary shows.

use std::path::Path;

/// How many error lines a failed step repeats in the summary.
const MAX_ERROR_LINES: usize = 12;

/// `cargo fmt --check`: the files whose formatting differs.
pub fn fmt(lines: &[String], passed: bool) -> Vec<String> {
    if passed {
        return vec!["formatted".to_owned()];
    }
    let mut files: Vec<String> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("Diff in "))
        .map(|rest| {
            let file = rest.split(':').next().unwrap_or(rest);
            format!("needs `cargo fmt --all`: {file}")
        })
        .collect();
    files.dedup();
    files
}

/// clippy: clean, or its first diagnostics.
pub fn clippy(lines: &[String], passed: bool) -> Vec<String> {
    if passed {
        return vec!["no warnings".to_owned()];
    }
    errors(lines, passed)
}

/// Any runner: nothing when it passed, else its first error lines.
pub fn errors(lines: &[String], passed: bool) -> Vec<String> {
    if passed {
        return Vec::new();
    }
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| {
            line.starts_with("error") || line.starts_with("warning:") || line.contains(" ERROR ")
        })
        .take(MAX_ERROR_LINES)
        .map(str::to_owned)
        .collect()
}

/// Counts from one `test result:` line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed.
    pub failed: u32,
    /// Tests marked `#[ignore]`.
    pub ignored: u32,
}

/// Parses `test result: ok. 3 passed; 0 failed; 1 ignored; ...`.
pub fn parse_result(line: &str) -> Option<Counts> {
    let rest = line.trim().strip_prefix("test result:")?;
    let mut counts = Counts::default();
    for part in rest.split([';', '.']) {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u32>() else { continue };
        match what {
            "passed" => counts.passed = n,
            "failed" => counts.failed = n,
            "ignored" => counts.ignored = n,
            _ => {}
        }
    }
    Some(counts)
}

/// `cargo test` (native or through wasm-bindgen-test-runner): totals, one line per
/// test binary that has tests, the names of failed tests, and where browser tests ran.
pub fn cargo_test(lines: &[String], passed: bool) -> Vec<String> {
    let mut current = String::from("tests");
    let mut total = Counts::default();
    let mut binaries = 0;
    let mut per_binary = Vec::new();
    let mut notes = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Running ") {
            if let Some(label) = binary_label(rest) {
                current = label;
            }
            if trimmed.contains("headless") {
                notes.push(trimmed.to_owned());
            }
        } else if let Some(krate) = trimmed.strip_prefix("Doc-tests ") {
            current = format!("doc-tests [{krate}]");
        } else if let Some(counts) = parse_result(trimmed) {
            binaries += 1;
            total.passed += counts.passed;
            total.failed += counts.failed;
            total.ignored += counts.ignored;
            if counts != Counts::default() {
                let mark = if counts.failed > 0 { "FAILED" } else { "ok" };
                per_binary.push(format!(
                    "{mark:<6} {:>4} passed {:>3} failed {:>3} ignored  {current}",
                    counts.passed, counts.failed, counts.ignored
                ));
            }
        } else if let Some(name) = failed_test(trimmed) {
            notes.push(format!("failed: {name} ({current})"));
        } else if trimmed.starts_with("error: ") && !passed {
            notes.push(trimmed.to_owned());
        }
    }
    let mut summary = vec![format!(
        "{} passed, {} failed, {} ignored in {binaries} test binaries",
        total.passed, total.failed, total.ignored
    )];
    if binaries == 0 && !passed {
        summary[0] = "no test ran (build failed?)".to_owned();
    }
    summary.extend(per_binary);
    summary.extend(notes);
    summary
}

/// `test a::b ... FAILED` (libtest) or `test a::b ... FAIL` (wasm-bindgen-test) -> `a::b`.
fn failed_test(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("test ")?;
    rest.strip_suffix(" ... FAILED")
        .or_else(|| rest.strip_suffix(" ... FAIL"))
}

/// `unittests src/lib.rs (target/debug/deps/ask_user_core-0123abcd)` ->
/// `unittests src/lib.rs [ask_user_core]`.
fn binary_label(running: &str) -> Option<String> {
    let (what, path) = running.rsplit_once(" (")?;
    let path = path.strip_suffix(')')?;
    let stem = Path::new(path).file_stem()?.to_str()?;
    let name = stem.rsplit_once('-').map_or(stem, |(name, _hash)| name);
    Some(format!("{what} [{name}]"))
}

/// criterion: each benchmark's name and time line.
pub fn criterion(lines: &[String], passed: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut previous: Option<&str> = None;
    for line in lines {
        // Criterion's comparison with the previous run is not a figure of this run.
        if line.trim_start().starts_with("change:") {
            previous = None;
            continue;
        }
        if line.contains("time:") && line.contains('[') {
            if line.starts_with(char::is_whitespace) {
                if let Some(name) = previous {
                    out.push(format!("{name}  {}", line.trim()));
                }
            } else {
                out.push(line.trim().to_owned());
            }
        }
        previous = Some(line.trim()).filter(|l| !l.is_empty());
    }
    if out.is_empty() && passed {
        out.push("no criterion benchmark ran".to_owned());
    }
    if !passed {
        out.extend(errors(lines, passed));
    }
    out
}

/// A program run through `cargo run` (a load bench): the lines it printed
/// itself, without cargo's progress lines; its errors when it failed.
pub fn program_output(lines: &[String], passed: bool) -> Vec<String> {
    if !passed {
        return errors(lines, passed);
    }
    const CARGO_STATUS: &[&str] = &[
        "Compiling ",
        "Finished ",
        "Running ",
        "Blocking ",
        "Downloaded ",
        "Downloading ",
        "Updating ",
        "Locking ",
        "Adding ",
        "Checking ",
    ];
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty() && !CARGO_STATUS.iter().any(|s| line.starts_with(s)))
        .map(str::to_owned)
        .collect()
}

/// `cargo xtask dist`: where the binary is and its size; what was skipped as
/// up to date; errors when it failed.
pub fn dist(lines: &[String], passed: bool) -> Vec<String> {
    if !passed {
        return errors(lines, passed);
    }
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| line.starts_with("the one binary:") || line.contains("is up to date"))
        .map(|line| line.trim_start_matches("==> ").to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn parse_result_reads_native_and_wasm_bindgen_result_lines() {
        assert_eq!(
            parse_result(
                "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s"
            ),
            Some(Counts {
                passed: 3,
                failed: 0,
                ignored: 1
            })
        );
        assert_eq!(
            parse_result("test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 filtered out"),
            Some(Counts {
                passed: 1,
                failed: 2,
                ignored: 0
            })
        );
        assert_eq!(parse_result("running 3 tests"), None);
    }

    #[test]
    fn cargo_test_summary_totals_binaries_and_names_failures() {
        let output = lines(
            "     Running unittests src/lib.rs (target/debug/deps/ask_user_core-0123abcd)\n\
             test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\
             \x20    Running tests/smoke.rs (target/debug/deps/smoke-99aa)\n\
             test page_renders ... FAILED\n\
             test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n\
             \x20  Doc-tests ask_user_core\n\
             test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        );
        let summary = cargo_test(&output, false);
        assert_eq!(
            summary[0],
            "4 passed, 1 failed, 0 ignored in 3 test binaries"
        );
        assert!(summary[1].ends_with("unittests src/lib.rs [ask_user_core]"));
        assert!(summary[2].starts_with("FAILED"));
        assert!(summary[2].ends_with("tests/smoke.rs [smoke]"));
        assert_eq!(summary[3], "failed: page_renders (tests/smoke.rs [smoke])");
        assert_eq!(summary.len(), 4, "empty doc-test binaries are not listed");
    }

    #[test]
    fn failed_test_reads_libtest_and_wasm_bindgen_test_lines() {
        assert_eq!(failed_test("test a::b ... FAILED"), Some("a::b"));
        assert_eq!(failed_test("test mounts ... FAIL"), Some("mounts"));
        assert_eq!(failed_test("test mounts ... ok"), None);
    }

    #[test]
    fn program_output_keeps_the_programs_lines_and_drops_cargos() {
        let output = lines(
            "   Compiling ask-user-host v0.1.0\n    Finished `release-native` profile\n     Running `target/release-native/examples/load`\nround trips: 11720/s",
        );
        assert_eq!(program_output(&output, true), vec!["round trips: 11720/s"]);
    }

    #[test]
    fn fmt_summary_lists_each_unformatted_file_once() {
        let output = lines(
            "Diff in /repo/crates/core/src/lib.rs:3:\n-a\n+b\nDiff in /repo/crates/core/src/lib.rs:9:",
        );
        assert_eq!(
            fmt(&output, false),
            vec!["needs `cargo fmt --all`: /repo/crates/core/src/lib.rs"]
        );
    }

    #[test]
    fn criterion_summary_joins_wrapped_names_with_their_times() {
        let output = lines(
            "questionnaire/apply_10000_actions\n                        time:   [1.0 ms 1.1 ms 1.2 ms]\nshort   time:   [2 ns 3 ns 4 ns]\n                        change: time:   [-5.0% -4.0% -3.0%] (p = 0.00 < 0.05)",
        );
        assert_eq!(
            criterion(&output, true),
            vec![
                "questionnaire/apply_10000_actions  time:   [1.0 ms 1.1 ms 1.2 ms]",
                "short   time:   [2 ns 3 ns 4 ns]"
            ]
        );
    }
}
