//! The default session of `ask-user mcp`: named after the working directory,
//! so agents in three projects show up as three sessions in the page.

use ask_user_core::SessionId;
use ask_user_core::session::MAX_SESSION_CHARS;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Hex digits of the path's hash added when the name had to change.
const HASH_CHARS: usize = 8;

/// The session for working directory `dir`: its folder name when that is a
/// session id as it stands; otherwise the name made valid (characters other
/// than `A-Z a-z 0-9 _ -` become `-`, cut to fit) plus a short hash of the
/// whole path, so two folders whose names clean up alike stay apart.
pub fn for_dir(dir: &Path) -> SessionId {
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Ok(session) = SessionId::parse(&name) {
        return session;
    }
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii() && ask_user_core::wire::is_id_byte(c as u8) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let kept: String = cleaned
        .trim_matches('-')
        .chars()
        .take(MAX_SESSION_CHARS - HASH_CHARS - 1)
        .collect();
    let digest = Sha256::digest(dir.as_os_str().as_encoded_bytes());
    let hash: String = digest
        .iter()
        .take(HASH_CHARS / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    let session = if kept.is_empty() {
        hash
    } else {
        format!("{}-{hash}", kept.trim_end_matches('-'))
    };
    SessionId::parse(&session).expect("only A-Z a-z 0-9 _ - and at most 64 characters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_name_that_is_a_session_id_is_the_session() {
        assert_eq!(for_dir(Path::new("/home/p/ask-user")).as_str(), "ask-user");
        assert_eq!(for_dir(Path::new("/w/my_app-2")).as_str(), "my_app-2");
    }

    #[test]
    fn other_names_are_made_valid_with_a_hash_of_the_path() {
        let spaced = for_dir(Path::new("/home/p/My Project"));
        assert!(spaced.as_str().starts_with("My-Project-"), "{spaced}");
        assert_eq!(spaced.as_str().len(), "My-Project-".len() + HASH_CHARS);
        // The same name elsewhere is another session; the same path the same one.
        let elsewhere = for_dir(Path::new("/tmp/My Project"));
        assert_ne!(spaced, elsewhere);
        assert_eq!(spaced, for_dir(Path::new("/home/p/My Project")));
        let unicode = for_dir(Path::new("/home/p/日本"));
        assert_eq!(unicode.as_str().len(), HASH_CHARS, "{unicode}");
        let root = for_dir(Path::new("/"));
        assert_eq!(root.as_str().len(), HASH_CHARS, "{root}");
        let long = for_dir(Path::new(&format!("/w/{}.d", "x".repeat(100))));
        assert_eq!(long.as_str().len(), MAX_SESSION_CHARS, "{long}");
    }
}
