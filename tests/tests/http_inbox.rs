//! Issue 13's HTTP contract: who asked (MCP clientInfo, `ask-user ask`,
//! `X-Ask-User-Agent`), the session list and the inbox stream, transcripts
//! and their cap, and a `note` that reaches the agent.

use ask_user_core::limits::MAX_TRANSCRIPT_ENTRIES;
use ask_user_core::wire::{
    AskedBy, AskerKind, INBOX_CHANGED, InboxEvent, Outcome, SessionList, Transcript,
    TranscriptEntry,
};
use ask_user_host::client::ask::{AskArgs, AskOutcome};
use ask_user_host::server::inbox::MAX_INBOX_STREAMS;
use ask_user_tests::http_host::{EventStream, TestHost, assert_error, send};
use ask_user_tests::mcp::RawSession;
use ask_user_tests::wait::within;
use reqwest::StatusCode;
use reqwest::header::ORIGIN;
use serde_json::{Value, json};

fn question(text: &str) -> Value {
    json!({"questions": [
        {"id": "db", "question": text, "options": [{"label": "SQLite"}, {"label": "Postgres"}]},
        {"id": "name", "question": "Its name?"}
    ]})
}

/// Posts an ask with `X-Ask-User-Agent: agent` (none when `None`).
fn ask_as(
    host: &TestHost,
    session: &str,
    agent: Option<&str>,
    request: &Value,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let mut builder = host
        .authed(
            reqwest::Method::POST,
            &format!("/api/sessions/{session}/ask"),
        )
        .body(request.to_string());
    if let Some(agent) = agent {
        builder = builder.header("x-ask-user-agent", agent);
    }
    tokio::spawn(send(builder))
}

async fn sessions(host: &TestHost) -> SessionList {
    let (status, body) = host.get("/api/sessions").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_value(body).expect("a session list")
}

async fn transcript(host: &TestHost, session: &str) -> Transcript {
    let (status, body) = host
        .get(&format!("/api/sessions/{session}/transcript"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_value(body).expect("a transcript")
}

async fn inbox(host: &TestHost) -> EventStream {
    let response = within(
        "the inbox stream to open",
        host.authed(reqwest::Method::GET, "/api/events").send(),
    )
    .await
    .expect("inbox request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    EventStream::new(response)
}

async fn next_list(stream: &mut EventStream) -> SessionList {
    let frame = stream.next().await;
    assert_eq!(frame.event, INBOX_CHANGED);
    match InboxEvent::parse(&frame.event, &frame.data) {
        Some(InboxEvent::Changed(list)) => list,
        None => panic!("not an inbox frame: {frame:?}"),
    }
}

/// Waits for the one pending question of `session` and returns its id.
async fn pending_id(host: &TestHost, session: &str) -> String {
    let mut events = host.events(session).await;
    let (ids, _) = events.replay().await;
    match ids.into_iter().next() {
        Some(id) => id,
        None => events.requested().await.id,
    }
}

// --- who asked ---------------------------------------------------------------

#[tokio::test]
async fn an_agent_header_names_the_asker_in_the_frame_the_pending_list_the_sessions_and_the_record()
{
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    let call = ask_as(&host, "s", Some("review-bot/2.1"), &question("Which?"));
    let requested = events.requested().await;
    let bot = AskedBy {
        kind: AskerKind::Http,
        name: "review-bot".into(),
        version: Some("2.1".into()),
    };
    assert_eq!(requested.asked_by.as_ref(), Some(&bot));

    let (_, list) = host.get("/api/sessions/s/questions").await;
    assert_eq!(
        list["pending"][0]["asked_by"],
        json!({"kind": "http", "name": "review-bot", "version": "2.1"})
    );
    assert_eq!(
        sessions(&host).await.sessions[0].asked_by.as_ref(),
        Some(&bot)
    );

    host.cancel("s", &requested.id).await;
    let resolved = events.resolved().await;
    let record = resolved
        .record
        .expect("question/resolved carries its record");
    assert_eq!(record.asked_by.as_ref(), Some(&bot));
    assert_eq!(call.await.unwrap().0, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_ask_without_the_header_or_with_one_naming_nobody_has_no_asker() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    for agent in [None, Some("  /1.0")] {
        let call = ask_as(&host, "s", agent, &question("Which?"));
        let requested = events.requested().await;
        assert_eq!(requested.asked_by, None, "{agent:?}");
        let (_, list) = host.get("/api/sessions/s/questions").await;
        assert!(list["pending"][0].get("asked_by").is_none(), "{list}");
        host.cancel("s", &requested.id).await;
        events.resolved().await;
        call.await.unwrap();
    }
}

#[tokio::test]
async fn an_agent_header_is_cleaned_and_capped_as_display_text() {
    let host = TestHost::start().await;
    let mut events = host.events("s").await;
    events.replay().await;
    // A tab is the one control character a header may hold; UTF-8 is read as text.
    let long = format!(" 名字\tbot{}/1", "x".repeat(300));
    let _call = ask_as(&host, "s", Some(&long), &question("Which?"));
    let asked_by = events.requested().await.asked_by.expect("an asker");
    assert_eq!(asked_by.name.chars().count(), 128);
    assert!(asked_by.name.starts_with("名字botxxx"), "{}", asked_by.name);
    assert_eq!(asked_by.version.as_deref(), Some("1"));
}

#[tokio::test]
async fn ask_user_ask_names_itself_as_the_cli_asker() {
    let host = TestHost::start().await;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ask-user-inbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("request.json");
    std::fs::write(&file, question("From the shell?").to_string()).unwrap();
    let args = AskArgs {
        url: host.base.clone(),
        token: Some(host.token().to_owned()),
        session: "cli".into(),
        timeout_ms: None,
        file: Some(file),
        // The token is given; no token file is read.
        data_dir: ask_user_host::data_dir::DataDirArg {
            data_dir: Some(dir.clone()),
        },
    };
    let mut events = host.events("cli").await;
    events.replay().await;
    let call = tokio::spawn(async move { ask_user_host::client::ask::ask(&args).await });
    let requested = events.requested().await;
    assert_eq!(
        requested.asked_by,
        Some(AskedBy {
            kind: AskerKind::Cli,
            name: "ask-user ask".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        })
    );
    host.answer(
        "cli",
        &requested.id,
        &json!({"answers": [], "note": "not from here"}),
    )
    .await;
    match within("ask-user ask to return", call).await.unwrap() {
        AskOutcome::Answered(batch) => assert_eq!(batch.note.as_deref(), Some("not from here")),
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[tokio::test]
async fn an_mcp_clients_client_info_names_the_asker() {
    let host = TestHost::start().await;
    let mcp = RawSession::open(&host, "?session=m").await;
    let mut events = host.events("m").await;
    events.replay().await;
    let call = mcp.call(2, &question("Over MCP?")).await;
    let requested = events.requested().await;
    assert_eq!(
        requested.asked_by,
        Some(AskedBy {
            kind: AskerKind::Mcp,
            name: "typescript-sdk-style".into(),
            version: Some("0".into()),
        })
    );
    let (status, body) = host
        .answer(
            "m",
            &requested.id,
            &json!({"answers": [{"id": "db", "selected": ["SQLite"]}], "note": " Also: use WAL. "}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = RawSession::result(call).await;
    let text = result["content"][0]["text"]
        .as_str()
        .expect("a text result");
    let batch: Value = serde_json::from_str(text).expect("the answer batch");
    assert_eq!(
        batch,
        json!({"answers": [{"id": "db", "selected": ["SQLite"]}, {"id": "name", "selected": []}],
               "note": "Also: use WAL."}),
        "the note reaches the MCP agent, the unreached question skipped"
    );
}

// --- a note reaches the agent --------------------------------------------------

#[tokio::test]
async fn a_note_answer_returns_to_the_http_agent_with_unanswered_items_skipped() {
    let host = TestHost::start().await;
    let call = host.ask("n", "", &question("Which?"));
    let id = pending_id(&host, "n").await;
    let (status, body) = host
        .answer(
            "n",
            &id,
            &json!({"answers": [{"id": "name", "selected": [], "custom": "Orbit"}],
                    "note": "Let's talk first."}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, batch) = call.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        batch,
        json!({"answers": [{"id": "db", "selected": []}, {"id": "name", "selected": [], "custom": "Orbit"}],
               "note": "Let's talk first."})
    );
}

#[tokio::test]
async fn a_note_over_the_limit_is_refused_naming_note_and_the_question_stays() {
    let host = TestHost::start().await;
    let _call = host.ask("n", "", &question("Which?"));
    let id = pending_id(&host, "n").await;
    let response = host
        .answer("n", &id, &json!({"answers": [], "note": "x".repeat(8193)}))
        .await;
    assert_error(
        &response,
        StatusCode::UNPROCESSABLE_ENTITY,
        "BAD_ANSWER",
        "note:",
    );
    assert_eq!(host.pending_ids("n").await, [id]);
}

// --- transcripts -------------------------------------------------------------------

#[tokio::test]
async fn the_transcript_holds_messages_and_records_in_time_order_and_the_frame_carries_the_record()
{
    let host = TestHost::start().await;
    let mut events = host.events("t").await;
    events.replay().await;
    let (status, _) = host
        .post(
            "/api/sessions/t/messages",
            json!({"text": "hello"}).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    events.next().await; // message/created

    let answered = ask_as(&host, "t", Some("bot"), &question("First?"));
    let first = events.requested().await;
    host.answer(
        "t",
        &first.id,
        &json!({"answers": [], "note": "  my own words  "}),
    )
    .await;
    let resolved = events.resolved().await;
    answered.await.unwrap();
    let cancelled = host.ask("t", "", &question("Second?"));
    let second = events.requested().await;
    host.cancel("t", &second.id).await;
    events.resolved().await;
    cancelled.await.unwrap();

    let entries = transcript(&host, "t").await.entries;
    assert_eq!(entries.len(), 3, "{entries:?}");
    let TranscriptEntry::Message(message) = &entries[0] else {
        panic!("a message first: {entries:?}");
    };
    assert_eq!(message.text, "hello");
    assert!(message.at_ms > 0, "a message has its time");
    let TranscriptEntry::Record(record) = &entries[1] else {
        panic!("then the answered record: {entries:?}");
    };
    assert_eq!(
        Some(record),
        resolved.record.as_ref(),
        "the frame's record is the kept one"
    );
    assert_eq!(record.id, first.id);
    assert_eq!(record.outcome, Outcome::Answered);
    assert_eq!(record.request, first.request);
    assert_eq!(record.created_at_ms, first.created_at_ms);
    assert!(record.resolved_at_ms >= record.created_at_ms);
    let answer = record
        .answer
        .as_ref()
        .expect("an answered record has the answer");
    assert_eq!(answer.note.as_deref(), Some("my own words"));
    assert_eq!(answer.answers.len(), 2, "both questions, skipped");
    let TranscriptEntry::Record(record) = &entries[2] else {
        panic!("then the cancelled record: {entries:?}");
    };
    assert_eq!(
        (record.id.as_str(), record.outcome),
        (second.id.as_str(), Outcome::Cancelled)
    );
    assert_eq!(record.answer, None, "only an answered record has an answer");
    assert!(
        entries.windows(2).all(|w| w[0].at_ms() <= w[1].at_ms()),
        "oldest first"
    );
    assert_eq!(transcript(&host, "other").await, Transcript::default());
}

#[tokio::test]
async fn the_transcript_keeps_only_the_most_recent_entries() {
    let host = TestHost::start().await;
    let total = MAX_TRANSCRIPT_ENTRIES + 7;
    for n in 0..total {
        let (status, _) = host
            .post(
                "/api/sessions/cap/messages",
                json!({"text": format!("m{n}")}).to_string(),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let entries = transcript(&host, "cap").await.entries;
    assert_eq!(entries.len(), MAX_TRANSCRIPT_ENTRIES);
    let texts: Vec<String> = entries
        .iter()
        .map(|entry| match entry {
            TranscriptEntry::Message(m) => m.text.clone(),
            TranscriptEntry::Record(r) => panic!("no record was made: {r:?}"),
        })
        .collect();
    assert_eq!(texts.first().map(String::as_str), Some("m7"));
    assert_eq!(texts.last().cloned(), Some(format!("m{}", total - 1)));
}

// --- the session list and the inbox stream --------------------------------------------

#[tokio::test]
async fn the_session_list_puts_waiting_sessions_first_then_the_most_recent() {
    let host = TestHost::start().await;
    for (session, text) in [("quiet", "q1"), ("chatty", "c1")] {
        let (status, _) = host
            .post(
                &format!("/api/sessions/{session}/messages"),
                json!({"text": text}).to_string(),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        // Distinct milliseconds, so "most recent" is well defined.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let _older = ask_as(
        &host,
        "waiting-a",
        Some("bot-a/1"),
        &question("Older question?"),
    );
    pending_id(&host, "waiting-a").await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let _newer = ask_as(
        &host,
        "waiting-b",
        Some("bot-b"),
        &question(&"长".repeat(300)),
    );
    pending_id(&host, "waiting-b").await;

    let list = sessions(&host).await;
    let order: Vec<(&str, u32)> = list
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.pending))
        .collect();
    assert_eq!(
        order,
        [
            ("waiting-b", 1),
            ("waiting-a", 1),
            ("chatty", 0),
            ("quiet", 0)
        ]
    );
    let newer = &list.sessions[0];
    assert_eq!(
        newer.asked_by.as_ref().map(|a| a.name.as_str()),
        Some("bot-b")
    );
    assert_eq!(
        newer.first_question.as_deref().map(|q| q.chars().count()),
        Some(200),
        "the first question is cut for notifications"
    );
    assert_eq!(
        list.sessions[1].first_question.as_deref(),
        Some("Older question?")
    );
    assert_eq!(list.sessions[2].first_question, None);
    assert!(list.sessions[2].last_activity_ms >= list.sessions[3].last_activity_ms);
}

#[tokio::test]
async fn the_inbox_stream_sends_the_list_on_open_and_again_when_a_question_arrives_or_ends() {
    let host = TestHost::start().await;
    let mut stream = inbox(&host).await;
    assert_eq!(next_list(&mut stream).await, SessionList::default());

    let call = ask_as(&host, "one", Some("bot/1"), &question("Which?"));
    let list = next_list(&mut stream).await;
    assert_eq!(list.sessions.len(), 1, "{list:?}");
    assert_eq!(
        (list.sessions[0].id.as_str(), list.sessions[0].pending),
        ("one", 1)
    );
    assert_eq!(list.sessions[0].first_question.as_deref(), Some("Which?"));
    assert_eq!(list.sessions[0].newest_question.as_deref(), Some("Which?"));

    // A second batch: the oldest still names the session, the newest is what arrived.
    let second = ask_as(&host, "one", Some("bot/1"), &question("Which port?"));
    let list = next_list(&mut stream).await;
    assert_eq!(list.sessions[0].pending, 2);
    assert_eq!(list.sessions[0].first_question.as_deref(), Some("Which?"));
    assert_eq!(
        list.sessions[0].newest_question.as_deref(),
        Some("Which port?")
    );

    for id in host.pending_ids("one").await {
        host.cancel("one", &id).await;
    }
    let list = loop {
        let list = next_list(&mut stream).await;
        if list.sessions[0].pending == 0 {
            break list;
        }
    };
    assert_eq!(
        (list.sessions[0].id.as_str(), list.sessions[0].pending),
        ("one", 0)
    );
    assert_eq!(list.sessions[0].newest_question, None);
    call.await.unwrap();
    second.await.unwrap();
}

#[tokio::test]
async fn sessions_transcripts_and_the_inbox_need_the_token_and_refuse_a_foreign_origin() {
    let host = TestHost::start().await;
    for path in ["/api/sessions", "/api/events", "/api/sessions/s/transcript"] {
        let response = send(host.client.get(host.url(path))).await;
        assert_error(&response, StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "token");
        let response = send(
            host.authed(reqwest::Method::GET, path)
                .header(ORIGIN, "http://evil.example"),
        )
        .await;
        assert_eq!(response.0, StatusCode::FORBIDDEN, "{path}: {}", response.1);
        assert_eq!(response.1["error"]["code"], "FORBIDDEN");
    }
    let response = host.get("/api/sessions/not%20a%20session/transcript").await;
    assert_eq!(response.0, StatusCode::BAD_REQUEST, "{}", response.1);
}

#[tokio::test]
async fn past_the_cap_of_open_inbox_streams_the_next_is_refused_and_a_closed_one_frees_its_place() {
    let host = TestHost::start().await;
    let mut open = Vec::new();
    for _ in 0..MAX_INBOX_STREAMS {
        let mut stream = inbox(&host).await;
        next_list(&mut stream).await;
        open.push(stream);
    }
    let refused = host.get("/api/events").await;
    assert_error(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "TOO_MANY_STREAMS",
        "inbox streams",
    );
    drop(open.pop());
    // The server notices the closed stream on its next write (a keep-alive
    // at worst); wait for the place to come free.
    let reopened = within("a freed inbox place", async {
        loop {
            let response = host
                .authed(reqwest::Method::GET, "/api/events")
                .send()
                .await
                .unwrap();
            if response.status() == StatusCode::OK {
                return response;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    assert_eq!(reopened.status(), StatusCode::OK);
}
