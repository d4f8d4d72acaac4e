//! `?fixture=1`: a built-in host for screenshots and CSS work without running
//! `ask-user serve`. It asks a three-question batch (or, with `?fixture=plan`, a
//! plan review), and resolves whatever the page posts.

use ask_user_composer::{MemoryTransport, RecordedPost, json};
use ask_user_core::AskRequest;
use ask_user_core::wire::{
    MessageCreated, Outcome, QuestionRequested, QuestionResolved, Role, SessionEvent, SessionSynced,
};

const BATCH: &str = r#"{"questions":[
  {"id":"db","header":"Database","question":"Which database should the service use?",
   "detail":"It stores sessions and audit events; about 2 GB a year.",
   "options":[
     {"label":"Postgres (Recommended)","description":"Boring, proven, and already in our stack."},
     {"label":"SQLite","description":"One file, no server; fine for a single node."},
     {"label":"DynamoDB","description":"Managed, but ties us to one cloud."}]},
  {"id":"checks","header":"Checks","question":"Which checks should run before each deploy?","multi_select":true,
   "options":[
     {"label":"Unit tests","description":"Fast; run on every push."},
     {"label":"Browser tests","description":"Headless Chromium against a real host."},
     {"label":"Load test","description":"Ten minutes at twice the peak rate."}]},
  {"id":"name","header":"Name","question":"What should we call the service?"}
]}"#;

const PLAN: &str = r###"{"questions":[
  {"id":"plan","question":"Shall I go ahead with this plan?",
   "detail":"## Migrate sessions to Postgres\n\n1. Add a `sessions` table with a TTL index.\n2. Dual-write for one release, then **switch reads**.\n3. Drop the Redis keys.\n\n> Rollback: flip `SESSIONS_BACKEND=redis`.\n\n<script>alert('never runs')</script>",
   "intent":{"kind":"plan-review","approve":"Approve"},
   "options":[{"label":"Approve"},{"label":"Revise the plan"}]}
]}"###;

/// The fixture host for `kind` (`plan` for a plan review, anything else for the
/// three-question batch).
pub struct FixtureTransport;

impl FixtureTransport {
    /// A memory host that asks the fixture request on every open. With `item`
    /// (1-based) the batch opens on that item with the earlier ones answered,
    /// through the same sessionStorage drafts a reload restores.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(kind: &str, item: Option<usize>) -> MemoryTransport {
        if let Some(item) = item.filter(|_| kind != "plan") {
            seed_drafts(item);
        }
        let json = if kind == "plan" { PLAN } else { BATCH };
        // The composer's JSON (the browser's parser): `AskRequest::from_json`
        // would add serde_json and serde_path_to_error to the page for a
        // request known to be valid.
        let request: AskRequest = json::from_str(json).expect("the fixture request parses");
        debug_assert!(request.validate().is_ok());
        let transport = MemoryTransport::new();
        transport.set_replay(vec![
            message("m1", Role::User, "Set up the new service for me."),
            message(
                "m2",
                Role::Agent,
                "Before I start, a few decisions only you can make.",
            ),
            SessionEvent::QuestionRequested(QuestionRequested {
                id: "fixture-1".into(),
                session: "default".into(),
                request,
                created_at_ms: 1,
                asked_by: None,
            }),
            SessionEvent::SessionSynced(SessionSynced {
                pending: vec!["fixture-1".into()],
            }),
        ]);
        transport.on_post(|transport, post| match post {
            RecordedPost::Answer { id, batch } => {
                let summary = json::to_string(batch).unwrap_or_default();
                transport.set_replay(Vec::new());
                transport.emit(resolved(id, Outcome::Answered));
                transport.emit(message(
                    "m3",
                    Role::Agent,
                    &format!("Thanks! I got {summary}"),
                ));
            }
            RecordedPost::Cancel { id } => {
                transport.set_replay(Vec::new());
                transport.emit(resolved(id, Outcome::Cancelled));
                transport.emit(message(
                    "m3",
                    Role::Agent,
                    "Understood, I will not ask again.",
                ));
            }
            RecordedPost::Message { text } => {
                transport.emit(message(&format!("u-{}", text.len()), Role::User, text));
            }
        });
        transport
    }
}

/// Answers the items before `item` and opens the batch there.
fn seed_drafts(item: usize) {
    let checks = if item > 2 {
        r#""Unit tests","Browser tests""#
    } else {
        ""
    };
    let current = item.clamp(1, 3) - 1;
    let drafts = format!(
        r#"{{"items":[{{"id":"db","selected":["Postgres (Recommended)"]}},{{"id":"checks","selected":[{checks}]}},{{"id":"name","text":""}}],"current":{current}}}"#
    );
    if let Some(storage) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
        let _ = storage.set_item(&ask_user_composer::storage::draft_key("fixture-1"), &drafts);
    }
}

fn message(id: &str, role: Role, text: &str) -> SessionEvent {
    SessionEvent::MessageCreated(MessageCreated {
        id: id.into(),
        role,
        text: text.into(),
        at_ms: 0,
        by: None,
    })
}

fn resolved(id: &str, outcome: Outcome) -> SessionEvent {
    SessionEvent::QuestionResolved(QuestionResolved {
        id: id.into(),
        outcome,
        record: None,
    })
}
