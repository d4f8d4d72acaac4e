//! The page on a phone (issue 21): at 360 and 390 px (mobile emulation,
//! touch) a question fills the screen one at a time, every target is at
//! least 44 px, nothing scrolls sideways, the Other box and Submit stay in
//! view with the on-screen keyboard open (the viewport shrunk as Chrome's
//! `interactive-widget=resizes-content` does), text boxes are 16 px (iOS
//! zooms into smaller ones), several waiting sessions are listed first, one
//! row each, and axe-core finds no WCAG 2.2 A/AA violation in that layout.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build.

use ask_user_tests::axe::{assert_accessible, axe_source};
use ask_user_tests::e2e::E2e;
use ask_user_tests::wait::PATIENCE;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the test leaves its screenshots to look at (the target directory).
fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshots folder can be made");
    dir
}

/// The page's viewport as a phone's: `width` × `height` CSS px, touch.
async fn phone_metrics(e2e: &E2e, width: u32, height: u32) {
    e2e.cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": 2, "mobile": true}),
    )
    .await;
    e2e.cdp(
        "Emulation.setTouchEmulationEnabled",
        json!({"enabled": true}),
    )
    .await;
}

/// Evaluates `script` until it returns a truthy value, or fails naming `what`.
async fn wait_js(e2e: &E2e, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let value = e2e.script(script).await;
        if !matches!(value, Value::Null | Value::Bool(false)) {
            return value;
        }
        if Instant::now() > deadline {
            e2e.fail(&format!("waiting for {what}"), "it never came")
                .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the layout looks like now: sideways overflow, the visible targets
/// smaller than 44 px, how many questions are visible, and the rectangles
/// of the card, the Other box and Submit against the viewport.
const LAYOUT: &str = r#"
const root = document.documentElement;
const shown = (e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
};
const rect = (e) => {
  if (!e) return null;
  const r = e.getBoundingClientRect();
  return { top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left), right: Math.round(r.right) };
};
const small = [...document.querySelectorAll('button, [role=radio], [role=checkbox], textarea, input, a[href]')]
  .filter((e) => shown(e) && !e.closest('.auq-markdown'))
  .map((e) => { const r = e.getBoundingClientRect(); return { what: e.dataset.auq || e.className || e.tagName, width: r.width, height: r.height }; })
  .filter((t) => t.width < 44 || t.height < 44);
const other = document.querySelector('[data-role=other] textarea, [data-role=other] input');
// Seen, not covered (by the sticky footer, say): the element at its centre is it.
const uncovered = (e) => {
  if (!e) return false;
  const r = e.getBoundingClientRect();
  const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return at !== null && (at === e || e.contains(at));
};
return {
  sideways: root.scrollWidth - root.clientWidth,
  small,
  questions: [...document.querySelectorAll('.auq-question')].filter(shown).length,
  viewport: { width: root.clientWidth, height: innerHeight },
  card: rect(document.querySelector('.auq-composer')),
  other: rect(other),
  other_font_px: other ? parseFloat(getComputedStyle(other).fontSize) : null,
  submit: rect(document.querySelector('[data-auq=submit]')),
  other_uncovered: uncovered(other),
  submit_uncovered: uncovered(document.querySelector('[data-auq=submit]')),
};
"#;

fn within_viewport(layout: &Value, what: &str) -> bool {
    let r = &layout[what];
    let (height, width) = (
        layout["viewport"]["height"].as_f64().unwrap(),
        layout["viewport"]["width"].as_f64().unwrap(),
    );
    r["top"].as_f64().is_some_and(|top| top >= 0.0)
        && r["bottom"].as_f64().is_some_and(|b| b <= height)
        && r["left"].as_f64().is_some_and(|l| l >= 0.0)
        && r["right"].as_f64().is_some_and(|r| r <= width)
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST, Chromium and the npm package axe-core)"]
async fn at_360_and_390_px_a_question_fills_the_screen_with_44_px_targets_no_sideways_scroll_and_its_other_box_and_submit_above_the_keyboard()
 {
    let axe = axe_source();
    let e2e = E2e::start("phone-layout", &[]).await;
    for (width, height) in [(360, 740), (390, 844)] {
        phone_metrics(&e2e, width, height).await;
        let session = format!("w{width}");
        e2e.open(&session).await;
        let batch = json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which database should the sessions service use in production?",
             "detail": "It stores **sessions** and their transcripts.",
             "options": [
                {"label": "Postgres with logical replication (Recommended)", "description": "Proven, and what the other services run"},
                {"label": "SQLite", "description": "One file, no server"},
                {"label": "Keep the in-memory store"}]},
            {"id": "name", "question": "What should we call it?"},
            {"id": "ship", "question": "Ship it today?", "options": [{"label": "Yes"}, {"label": "No"}]}
        ]});
        let _agent = e2e.ask(&session, &batch);
        e2e.wait_for("the question", |s| s.question_shown).await;
        let layout = e2e.script(LAYOUT).await;
        let context = format!("at {width} px: {layout:#}");
        assert_eq!(layout["sideways"], json!(0), "no sideways scroll {context}");
        assert_eq!(layout["small"], json!([]), "every target ≥ 44 px {context}");
        assert_eq!(
            layout["questions"],
            json!(1),
            "one question per screen {context}"
        );
        assert!(
            within_viewport(&layout, "card"),
            "the card on screen {context}"
        );
        assert!(
            within_viewport(&layout, "submit"),
            "Submit on screen {context}"
        );
        assert_eq!(
            layout["submit_uncovered"],
            json!(true),
            "Submit not covered {context}"
        );
        assert!(
            layout["other_font_px"]
                .as_f64()
                .is_some_and(|px| px >= 16.0),
            "the Other box's text is 16 px, or iOS zooms in on focus {context}"
        );
        e2e.screenshot(&screenshots().join(format!("phone-question-{width}.png")))
            .await;
        assert_accessible(&e2e, &axe, &format!("a question at {width} px")).await;

        // The on-screen keyboard: Chrome (resizes-content) shrinks the
        // layout by its height and scrolls the focused box into view.
        e2e.script("document.querySelector('[data-role=other] textarea, [data-role=other] input').focus(); return true")
            .await;
        let keyboard = height * 2 / 5;
        e2e.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height - keyboard, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await;
        let shrunk = height - keyboard;
        wait_js(
            &e2e,
            "the layout to follow the keyboard",
            &format!("return innerHeight === {shrunk}"),
        )
        .await;
        e2e.script("document.activeElement.scrollIntoView({block: 'nearest'}); return true")
            .await;
        let layout = e2e.script(LAYOUT).await;
        let context = format!("at {width} px with the keyboard open: {layout:#}");
        assert!(
            within_viewport(&layout, "other"),
            "the Other box above the keyboard {context}"
        );
        assert!(
            within_viewport(&layout, "submit"),
            "Submit above the keyboard {context}"
        );
        assert_eq!(
            layout["other_uncovered"],
            json!(true),
            "the Other box not covered {context}"
        );
        assert_eq!(
            layout["submit_uncovered"],
            json!(true),
            "Submit not covered {context}"
        );
        assert_eq!(layout["sideways"], json!(0), "no sideways scroll {context}");
        e2e.screenshot(&screenshots().join(format!("phone-keyboard-{width}.png")))
            .await;
    }
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST, Chromium and the npm package axe-core)"]
async fn on_a_phone_several_waiting_sessions_are_listed_first_one_full_width_row_each() {
    let axe = axe_source();
    let e2e = E2e::start("phone-inbox", &[]).await;
    phone_metrics(&e2e, 360, 740).await;
    let ask = |question: &str| {
        json!({"questions": [{"id": "q", "question": question,
            "options": [{"label": "Yes"}, {"label": "No"}]}]})
    };
    let _first = e2e.ask("deploy-bot", &ask("Deploy the release branch?"));
    let _second = e2e.ask("migrations", &ask("Run the schema migration now?"));
    e2e.open("deploy-bot").await;
    e2e.wait_for("the question", |s| s.question_shown).await;
    wait_js(
        &e2e,
        "the inbox to say that several sessions wait",
        "return document.querySelector('[data-auq=inbox]').dataset.waiting === 'several'",
    )
    .await;
    let rows = e2e
        .script(
            r#"
            const list = document.querySelector('.auq-inbox__list').getBoundingClientRect();
            const card = document.querySelector('.auq-composer').getBoundingClientRect();
            const rows = [...document.querySelectorAll('[data-auq=inbox-session]')].map((e) => {
              const r = e.getBoundingClientRect();
              return { left: r.left, top: r.top, width: r.width, height: r.height, bottom: r.bottom };
            });
            return { list_width: list.width, list_bottom: list.bottom, card_top: card.top, rows,
                     sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth };
            "#,
        )
        .await;
    let context = format!("{rows:#}");
    let list = rows["rows"].as_array().unwrap();
    assert!(list.len() >= 2, "both sessions listed {context}");
    for pair in list.windows(2) {
        assert!(
            pair[1]["top"].as_f64() >= pair[0]["bottom"].as_f64(),
            "one row under the other {context}"
        );
    }
    let list_width = rows["list_width"].as_f64().unwrap();
    for row in list {
        assert!(
            row["height"].as_f64().unwrap() >= 44.0,
            "rows ≥ 44 px {context}"
        );
        assert!(
            row["width"].as_f64().unwrap() >= list_width - 1.0,
            "full-width rows {context}"
        );
    }
    assert!(
        rows["list_bottom"].as_f64() <= rows["card_top"].as_f64(),
        "the list first, above the question {context}"
    );
    assert_eq!(rows["sideways"], json!(0), "no sideways scroll {context}");
    e2e.screenshot(&screenshots().join("phone-inbox-360.png"))
        .await;
    assert_accessible(&e2e, &axe, "the inbox listed first at 360 px").await;
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST, Chromium and the npm package axe-core)"]
async fn the_pairing_dialog_and_the_pair_page_are_axe_clean_on_a_phone_with_44_px_buttons() {
    let axe = axe_source();
    let e2e = E2e::start("phone-pairing", &["--remote", "https://phone.test"]).await;
    phone_metrics(&e2e, 360, 740).await;
    e2e.open("default").await;
    e2e.client()
        .goto(&e2e.url("/devices#pair"))
        .await
        .expect("the devices page opens");
    wait_js(
        &e2e,
        "the pairing dialog with its QR code",
        "const d = document.getElementById('pairing'); const qr = document.getElementById('qr');
         return d.open && qr.complete && qr.naturalWidth > 0",
    )
    .await;
    let layout = e2e
        .script(
            "const root = document.documentElement;
             return { sideways: root.scrollWidth - root.clientWidth,
                      small: [...document.querySelectorAll('#pairing button')]
                        .filter((b) => b.getBoundingClientRect().height > 0)
                        .filter((b) => b.getBoundingClientRect().height < 44 || b.getBoundingClientRect().width < 44)
                        .map((b) => b.id) };",
        )
        .await;
    assert_eq!(
        layout,
        json!({"sideways": 0, "small": []}),
        "the dialog at 360 px"
    );
    e2e.screenshot(&screenshots().join("phone-pairing-dialog-360.png"))
        .await;
    assert_accessible(&e2e, &axe, "the pairing dialog at 360 px").await;

    e2e.client()
        .goto(&e2e.url("/pair#0123456789abcdef0123456789abcdef"))
        .await
        .expect("the pair page opens");
    wait_js(
        &e2e,
        "the pair page's form",
        "return !document.getElementById('claim').hidden",
    )
    .await;
    assert_accessible(&e2e, &axe, "the pair page at 360 px").await;
    e2e.finish().await;
}
