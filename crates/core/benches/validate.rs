//! Validate + normalise of a 10-question batch: the work core does on every
//! ask (request check before the provider, answer check after it).
//!
//! `cargo bench -p ask-user-core --profile release-native --bench validate`
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use ask_user_core::{AnswerBatch, AskRequest};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

/// Ten questions: single-select with a recommendation, multi-select, free text,
/// and a plan review, with descriptions and headers.
fn request() -> AskRequest {
    let mut questions = Vec::new();
    for i in 0..10 {
        let q = match i % 4 {
            0 => json!({
                "id": format!("db-{i}"), "header": "Database",
                "question": "Which database should the service use?",
                "options": [
                    {"label": "Postgres (Recommended)", "description": "Mature, already in the stack"},
                    {"label": "SQLite", "description": "Zero setup, single file"},
                    {"label": "MySQL"},
                    {"label": "DynamoDB", "description": "Managed, key-value"}
                ]
            }),
            1 => json!({
                "id": format!("features-{i}"), "header": "Scope",
                "question": "Which features ship in the first release?",
                "multi_select": true,
                "options": [
                    {"label": "Auth"}, {"label": "Billing (推荐)"}, {"label": "Search"},
                    {"label": "Audit log"}, {"label": "Export"}
                ]
            }),
            2 => json!({
                "id": format!("notes-{i}"),
                "question": "Anything the reviewer should know about the deployment window?"
            }),
            _ => json!({
                "id": format!("plan-{i}"), "header": "Plan",
                "question": "Approve this migration plan?",
                "detail": "1. Add the column\n2. Backfill in batches of 10k\n3. Switch reads\n4. Drop the old column",
                "options": [{"label": "Approve (Recommended)"}, {"label": "Revise"}],
                "intent": {"kind": "plan-review", "approve": "Approve (Recommended)"}
            }),
        };
        questions.push(q);
    }
    AskRequest::from_value(json!({ "questions": questions })).unwrap()
}

/// A batch as a UI sends it: reversed order, padded custom text, a
/// single-select answer overridden by custom, and a skip.
fn answers(request: &AskRequest) -> AnswerBatch {
    let answers: Vec<Value> = request
        .questions
        .iter()
        .rev()
        .enumerate()
        .map(|(n, q)| {
            let id = &q.id;
            match (q.has_options(), q.is_multi_select(), n % 3) {
                (false, _, 0) => json!({"id": id, "selected": []}),
                (false, _, _) => json!({"id": id, "selected": [], "custom": "  Fridays only, after 18:00  "}),
                (true, true, _) => json!({"id": id, "selected": ["Search", "Auth"], "custom": " SSO "}),
                (true, false, 1) => json!({"id": id, "selected": [q.options()[1].label], "custom": "Something else"}),
                (true, false, _) => json!({"id": id, "selected": [q.options()[0].label]}),
            }
        })
        .collect();
    serde_json::from_value(json!({ "answers": answers })).unwrap()
}

fn bench(c: &mut Criterion) {
    let request = request();
    let batch = answers(&request);
    assert!(batch.clone().normalize(&request).is_ok());
    c.bench_function("validate + normalise, 10 questions", |b| {
        // The batch is cloned outside the timing: normalise takes it by value.
        b.iter_batched(
            || batch.clone(),
            |batch| {
                black_box(&request).validate().unwrap();
                black_box(batch).normalize(&request).unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    let text = serde_json::to_string(&request).unwrap();
    c.bench_function("parse + validate request JSON, 10 questions", |b| {
        b.iter(|| AskRequest::from_json(black_box(&text)).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
