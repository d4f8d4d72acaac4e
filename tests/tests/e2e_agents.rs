//! The full loop with real agents in a real browser: an MCP client (the
//! official Rust SDK, rmcp) calling `ask_user_question`, and the demo agent of
//! `ask-user serve --demo`, each answered in headless Chromium on the page the
//! real host serves from the Trunk release build.
//!
//! A browser test: plain `cargo test` lists it as ignored; `cargo xtask test`
//! runs it with `ASK_USER_E2E_DIST` naming the build. Run without that, it
//! fails and says what is missing.

use ask_user_core::AnswerBatch;
use ask_user_core::tool::TOOL_NAME;
use ask_user_host::server::demo;
use ask_user_tests::e2e::{E2e, Message, Role};
use ask_user_tests::wait::PATIENCE;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn an_mcp_tool_call_is_answered_in_the_page_and_the_answer_is_the_tool_result() {
    let e2e = E2e::start("mcp", &[]).await;
    e2e.open("default").await;

    let config =
        StreamableHttpClientTransportConfig::with_uri(e2e.url("/mcp")).auth_header(e2e.token());
    let client = tokio::time::timeout(
        PATIENCE,
        ().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .expect("the MCP handshake finishes")
    .expect("initialize succeeds");
    let Value::Object(arguments) = json!({"questions": [
        {"id": "db", "question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
        {"id": "why", "question": "Why?", "header": "Reason"}
    ]}) else {
        unreachable!("a JSON object");
    };
    let peer = client.peer().clone();
    let call = tokio::spawn(async move {
        peer.call_tool_once(CallToolRequestParams::new(TOOL_NAME).with_arguments(arguments))
            .await
    });

    let page = e2e
        .wait_for("the MCP call's question to appear", |s| {
            s.question.as_deref() == Some("Which database?")
        })
        .await;
    assert!(page.question_shown && !page.message_shown, "{page:#?}");
    // The recommended option is named by its label, badge after it.
    e2e.click(Role::Radio, "Postgres").await;
    e2e.wait_for("the free-text item", |s| s.item == Some(1))
        .await;
    let answer = e2e.type_into("Your answer", "it scales").await;
    e2e.wait_for("the typed answer", |s| {
        s.answer_box.as_deref() == Some("it scales")
    })
    .await;
    e2e.press_enter(&answer).await;

    let response = e2e
        .reply("the tool result", call)
        .await
        .expect("tools/call succeeds");
    let CallToolResponse::Complete(result) = response else {
        panic!("expected a complete tool result, got {response:?}");
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    let text = &result.content[0].as_text().expect("a text block").text;
    assert_eq!(
        text,
        r#"{"answers":[{"id":"db","selected":["Postgres (Recommended)"]},{"id":"why","selected":[],"custom":"it scales"}]}"#
    );
    assert_eq!(
        result.structured_content,
        Some(serde_json::from_str::<Value>(text).expect("the text is JSON"))
    );
    e2e.wait_for("the Message box to come back", |s| {
        s.message_shown && !s.question_shown
    })
    .await;
    client.cancel().await.expect("the MCP client closes");
    e2e.finish().await;
}

#[tokio::test]
#[ignore = "browser test: `cargo xtask test` runs it (needs ASK_USER_E2E_DIST and Chromium)"]
async fn the_demo_agent_replies_asks_three_questions_and_posts_a_summary_of_the_answers() {
    let e2e = E2e::start("demo", &["--demo"]).await;
    let page = e2e.open("default").await;
    assert!(page.transcript.is_empty(), "{page:#?}");
    assert!(page.message_shown && !page.question_shown);

    let said = "Please tidy up the build scripts.";
    let message = e2e.type_into("Message", said).await;
    e2e.press_enter(&message).await;
    let page = e2e
        .wait_for("the agent's reply and its questions", |s| {
            s.transcript.len() == 2 && s.question_shown
        })
        .await;
    assert_eq!(
        page.transcript,
        vec![
            Message {
                role: "user".into(),
                text: said.into()
            },
            Message {
                role: "agent".into(),
                text: demo::REPLY.into()
            },
        ]
    );
    assert_eq!(
        page.question.as_deref(),
        Some("How should I approach this?")
    );
    assert_eq!(page.progress.as_deref(), Some("1 of 3"));
    assert!(
        !page.message_shown,
        "the Message box is hidden while questions are pending"
    );

    e2e.click(Role::Radio, "Small steps").await;
    e2e.wait_for("the multi-select item", |s| s.item == Some(1))
        .await;
    e2e.click(Role::Checkbox, "Tests").await;
    e2e.click(Role::Checkbox, "Accessibility").await;
    e2e.wait_for("both choices", |s| {
        s.checked("Tests") && s.checked("Accessibility")
    })
    .await;
    e2e.click(Role::Button, "Next").await;
    e2e.wait_for("the free-text item", |s| s.item == Some(2))
        .await;
    let notes = e2e.type_into("Your answer", "Keep the diff small.").await;
    e2e.wait_for("the notes", |s| {
        s.answer_box.as_deref() == Some("Keep the diff small.")
    })
    .await;
    e2e.press_enter(&notes).await;

    let answers = AnswerBatch::from_json(
        r#"{"answers":[
            {"id":"approach","selected":["Small steps (Recommended)"]},
            {"id":"focus","selected":["Tests","Accessibility"]},
            {"id":"notes","selected":[],"custom":"Keep the diff small."}
        ]}"#,
    )
    .expect("a valid batch");
    let summary = demo::summary(&demo::questions(), &answers);
    let page = e2e
        .wait_for("the agent's summary", |s| s.transcript.len() == 3)
        .await;
    // The summary is Markdown, rendered by the page: its text without the markup.
    assert_eq!(
        page.transcript[2],
        Message {
            role: "agent".into(),
            text: rendered_text(&ask_user_core::markdown::parse(&summary))
        }
    );
    assert!(
        !page.transcript[2].text.contains("**"),
        "{:?}",
        page.transcript[2]
    );
    let page = e2e
        .wait_for("the Message box to come back", |s| {
            s.message_shown && !s.question_shown
        })
        .await;
    assert_eq!(page.transcript.len(), 3, "{page:#?}");
    e2e.finish().await;
}

/// The text a Markdown tree shows (`textContent` of what the page builds).
fn rendered_text(nodes: &[ask_user_core::markdown::MdNode]) -> String {
    use ask_user_core::markdown::MdNode;
    nodes
        .iter()
        .map(|node| match node {
            MdNode::Text(text) => text.clone(),
            MdNode::Element { children, .. } => rendered_text(children),
        })
        .collect()
}
