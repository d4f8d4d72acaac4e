//! axe-core (the npm package `cargo xtask test` installs) on the page as it
//! is now, against WCAG 2.2 A and AA.

use crate::e2e::E2e;
use crate::node::node_modules;
use serde_json::Value;

/// The WCAG 2.0–2.2 A and AA rules of axe-core.
pub const WCAG_TAGS: &str =
    r#"["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]"#;

/// axe-core's script, injected through WebDriver (the page's
/// Content-Security-Policy admits no other script, rightly).
///
/// # Panics
/// If the npm package is not installed (the message names where it looked).
pub fn axe_source() -> String {
    let path = node_modules("axe-core").join("axe-core/axe.min.js");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("could not read {}: {err}", path.display()))
}

/// Runs axe on the page as it is now; the violations, each with its rule,
/// impact and up to five elements.
///
/// # Panics
/// If axe does not run.
pub async fn violations(e2e: &E2e, axe: &str) -> Vec<Value> {
    e2e.script(&format!("{axe}\n;return typeof window.axe;"))
        .await;
    let script = format!(
        "const done = arguments[arguments.length - 1];
         window.axe.run(document, {{ runOnly: {{ type: 'tag', values: {WCAG_TAGS} }} }})
           .then(r => done(r.violations.map(v => ({{
             id: v.id, impact: v.impact, help: v.help,
             nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' ' + (n.failureSummary || ''))
           }}))))
           .catch(e => done([{{ id: 'axe-failed', help: String(e) }}]));"
    );
    let found = e2e
        .client()
        .execute_async(&script, vec![])
        .await
        .unwrap_or_else(|err| panic!("axe did not run: {err}"));
    found.as_array().cloned().unwrap_or_default()
}

/// Fails the test (with the page's screenshot) when axe finds a violation.
pub async fn assert_accessible(e2e: &E2e, axe: &str, what: &str) {
    let found = violations(e2e, axe).await;
    if !found.is_empty() {
        e2e.fail(
            &format!("axe on {what}"),
            &format!(
                "WCAG 2.2 A/AA violations: {}",
                serde_json::to_string_pretty(&found).unwrap()
            ),
        )
        .await;
    }
}
