//! Drafts in `sessionStorage`, keyed by the host's question id, so a reload
//! (same tab) brings back everything typed. Storage failures (private mode,
//! quota) only lose the reload copy, never the live drafts.

use ask_user_core::questionnaire::Drafts;

/// The sessionStorage key of a request's drafts.
pub fn draft_key(question_id: &str) -> String {
    format!("ask-user:drafts:{question_id}")
}

fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// Saves a request's drafts.
pub fn save_drafts(question_id: &str, drafts: &Drafts) {
    if let (Some(storage), Some(json)) = (session_storage(), crate::json::to_string(drafts)) {
        let _ = storage.set_item(&draft_key(question_id), &json);
    }
}

/// Reads a request's drafts; `None` when absent or unreadable.
pub fn load_drafts(question_id: &str) -> Option<Drafts> {
    let json = session_storage()?
        .get_item(&draft_key(question_id))
        .ok()??;
    crate::json::from_str(&json)
}

/// Forgets a request's drafts (it was resolved).
pub fn clear_drafts(question_id: &str) {
    if let Some(storage) = session_storage() {
        let _ = storage.remove_item(&draft_key(question_id));
    }
}
