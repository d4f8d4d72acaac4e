//! A phone pairs and answers, in real browsers: the host runs with
//! `--remote https://phone.test:PORT` behind the harness's TLS front (as
//! `tailscale serve`); the desktop page (loopback, the token's cookie) pairs
//! the device from `/devices`; a second Chromium in mobile emulation
//! (390×844, touch, a Pixel's user agent), resolving phone.test to 127.0.0.1
//! and trusting the certificate by its SPKI hash (a real secure context),
//! opens the link, names itself, is approved on the desktop, collects its
//! cookie, and answers the agent's question.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build.

use ask_user_tests::browser::{Browser, e2e_dist};
use ask_user_tests::host_process::HostProcess;
use ask_user_tests::tls_front::{TestCert, TlsFront};
use ask_user_tests::wait::PATIENCE;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const PIXEL_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";

/// Where the test leaves its screenshots to look at: the target directory,
/// not the work tree (copy them to docs/screenshots to update the docs).
fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshots folder can be made");
    dir
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_phone_pairs_through_the_tls_front_is_approved_on_the_desktop_and_answers() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let host =
        HostProcess::start(&e2e_dist(), &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());

    // The desktop: the token's page, then "Pair a device".
    let desktop = Browser::launch_with_args(&["--lang=en-US"])
        .await
        .expect("Chromium starts");
    desktop.goto(host.url()).await.unwrap();
    // The page's header links to the devices page (on loopback only),
    // which opens its pairing dialog at once.
    desktop
        .wait_for_css("[data-auq=pair-device]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let modal = desktop.wait_for_js("the pairing dialog",
        "const d = document.getElementById('pairing'); return d.open && d.matches(':modal') && location.hash === ''",
    )
    .await;
    assert_eq!(modal, json!(true));
    let link = desktop
        .wait_for_js(
            "the pairing link",
            "return document.getElementById('link').textContent",
        )
        .await;
    let link = link.as_str().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("{}/pair#", front.origin())),
        "{link}"
    );
    let qr_loaded = desktop.wait_for_js("the QR code",
        "const img = document.getElementById('qr'); return img.complete && img.naturalWidth > 0",
    )
    .await;
    assert_eq!(qr_loaded, json!(true));
    desktop
        .screenshot(&screenshots().join("pair-desktop-dialog.png"))
        .await
        .unwrap();

    // The phone.
    let phone = phone_browser(&cert, "en-US", (390, 844)).await;
    phone.goto(&link).await.unwrap();
    let secure = phone
        .client()
        .execute("return window.isSecureContext && location.protocol", vec![])
        .await
        .unwrap();
    assert_eq!(secure, json!("https:"), "a real secure context");
    let name = phone
        .wait_for_js(
            "the prefilled name",
            "return document.getElementById('name').value",
        )
        .await;
    assert_eq!(name, json!("Pixel 8"), "named from its user agent");
    let hash = phone
        .client()
        .execute("return location.hash", vec![])
        .await
        .unwrap();
    assert_eq!(hash, json!(""), "the code leaves the address bar at once");
    phone
        .screenshot(&screenshots().join("pair-phone-name.png"))
        .await
        .unwrap();
    phone
        .wait_for_css("#claim-button")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    phone
        .wait_for_js(
            "the waiting notice",
            "return document.getElementById('status').textContent.includes('Waiting for approval')",
        )
        .await;

    // The desktop asks, names the device, and allows it.
    let question = desktop.wait_for_js("the approval question",
        "const q = document.getElementById('approval'); return !q.hidden && document.getElementById('question').textContent",
    )
    .await;
    assert_eq!(
        question,
        json!("Allow Pixel 8 (Chrome, Android) to answer questions?")
    );
    desktop
        .screenshot(&screenshots().join("pair-desktop-approve.png"))
        .await
        .unwrap();
    desktop
        .wait_for_css("#allow")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    // The phone collects its cookie and lands on the page.
    phone
        .wait_for_js(
            "the phone's page after pairing",
            "return location.pathname === '/' && document.querySelector('[data-auq]') !== null",
        )
        .await;
    let pair_links = phone
        .client()
        .execute(
            "return document.querySelectorAll('[data-auq=pair-device]').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(pair_links, json!(0), "a device's page may not pair another");
    let cookies = phone
        .cdp("Network.getCookies", json!({"urls": [front.origin()]}))
        .await
        .unwrap();
    let cookie = cookies["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "__Host-ask_user_device")
        .unwrap_or_else(|| panic!("no device cookie: {cookies}"))
        .clone();
    assert_eq!(cookie["secure"], json!(true), "{cookie}");
    assert_eq!(cookie["httpOnly"], json!(true), "{cookie}");
    assert_eq!(cookie["sameSite"], json!("Strict"), "{cookie}");
    assert_eq!(cookie["path"], json!("/"), "{cookie}");

    // An agent asks on loopback; the phone answers.
    let client = reqwest::Client::new();
    let ask = client
        .post(format!("{}/api/sessions/default/ask", host.origin()))
        .bearer_auth(host.token().unwrap())
        .json(
            &json!({"questions": [{"id": "ship", "question": "Ship it to production?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        )
        .send();
    let agent = tokio::spawn(ask);
    phone
        .wait_for_js(
            "the question on the phone",
            "return document.body.innerText.includes('Ship it to production?')",
        )
        .await;
    phone
        .screenshot(&screenshots().join("phone-question.png"))
        .await
        .unwrap();
    let overflow = phone
        .client()
        .execute(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
            vec![],
        )
        .await
        .unwrap();
    eprintln!("horizontal overflow at 390 px: {overflow}");
    phone.wait_for_js("the Yes option",
        "const yes = [...document.querySelectorAll('[role=radio]')].find(e => e.textContent.includes('Yes')); if (yes) yes.click(); return !!yes",
    )
    .await;
    let deadline = Instant::now() + PATIENCE;
    while !agent.is_finished() {
        let _ = phone
            .client()
            .execute(
                "const b = [...document.querySelectorAll('button')].find(e => e.textContent.trim() === 'Submit' && !e.disabled); if (b) b.click(); return !!b",
                vec![],
            )
            .await;
        assert!(Instant::now() < deadline, "the agent's call never returned");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let response = agent.await.unwrap().expect("the agent's call returns");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let batch: Value = response.json().await.unwrap();
    assert_eq!(
        batch,
        json!({"answers": [{"id": "ship", "selected": ["Yes"]}]})
    );

    // The record names the phone.
    let transcript: Value = client
        .get(format!("{}/api/sessions/default/transcript", host.origin()))
        .bearer_auth(host.token().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let last = transcript["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["by"]["kind"], json!("device"), "{last}");
    assert_eq!(last["by"]["device"]["name"], json!("Pixel 8"), "{last}");

    // The desktop lists the device.
    desktop
        .goto(&format!("{}/devices", host.origin()))
        .await
        .unwrap();
    desktop.wait_for_js("the device list",
        "const t = document.getElementById('devices').textContent; return t.includes('Pixel 8 (Chrome, Android)') && t.includes('last answer')",
    )
    .await;
    desktop
        .screenshot(&screenshots().join("devices-list.png"))
        .await
        .unwrap();
    let errors = desktop.page_errors().await.unwrap();
    assert!(errors.is_empty(), "desktop: {errors:?}");
    let errors = phone.page_errors().await.unwrap();
    assert!(errors.is_empty(), "phone: {errors:?}");
    phone.close().await;
    desktop.close().await;
}

/// Opens `https://phone.test:PORT/pair#<code>` in a phone-sized Chromium
/// with `lang`, asks to pair, and returns the refusal the page shows.
async fn refusal_shown(
    front: &TlsFront,
    cert: &TestCert,
    lang: &str,
    code: &str,
    shot: Option<&str>,
) -> String {
    let phone = phone_browser(cert, lang, (360, 740)).await;
    phone
        .goto(&format!("{}/pair#{code}", front.origin()))
        .await
        .unwrap();
    phone
        .wait_for_css("#claim-button")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let shown = phone.wait_for_js("the refusal",
        "const s = document.getElementById('status'); return s.className === 'error' && s.textContent",
    )
    .await;
    if let Some(shot) = shot {
        phone.screenshot(&screenshots().join(shot)).await.unwrap();
    }
    phone.close().await;
    shown.as_str().unwrap().to_owned()
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn a_used_or_unknown_pairing_link_says_so_in_the_browsers_language() {
    let cert = TestCert::new();
    let mut front = TlsFront::bind(&cert).await;
    let host =
        HostProcess::start(&e2e_dist(), &["--remote", &front.origin()]).expect("the host starts");
    front.forward_to_origin(host.origin());
    let unknown = "0123456789abcdef0123456789abcdef";
    let english = refusal_shown(&front, &cert, "en-US", unknown, Some("pair-refused.png")).await;
    assert!(
        english.starts_with("This pairing link is not valid: it was used, it expired"),
        "{english}"
    );
    // No screenshot: this machine has no CJK font (the text is checked).
    let chinese = refusal_shown(&front, &cert, "zh-CN", unknown, None).await;
    assert!(chinese.starts_with("此配对链接无效"), "{chinese}");
}

/// A phone-sized Chromium (`width` × `height`, touch, a Pixel's user agent)
/// that trusts `cert` for `phone.test`, in `lang` (`navigator.language`
/// follows the emulated Accept-Language).
async fn phone_browser(cert: &TestCert, lang: &str, (width, height): (u32, u32)) -> Browser {
    let mut args: Vec<String> = cert.chromium_args();
    args.push(format!("--lang={lang}"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let phone = Browser::launch_with_args(&args)
        .await
        .expect("Chromium starts");
    for (command, params) in [
        (
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 2, "mobile": true}),
        ),
        (
            "Emulation.setTouchEmulationEnabled",
            json!({"enabled": true}),
        ),
        (
            "Emulation.setUserAgentOverride",
            json!({"userAgent": PIXEL_UA, "acceptLanguage": lang}),
        ),
    ] {
        phone.cdp(command, params).await.unwrap();
    }
    phone
}
