//! The host's token file, `<data-dir>/token`: what lets `ask-user mcp` and
//! `ask-user ask` reach the host with no token typed, shown or put on a
//! command line.
//!
//! `ask-user serve` given no token uses the file, creating it (0600, in a
//! 0700 directory) with a fresh random 128-bit token on first start; the
//! token then stays the same across restarts, so a page left open and every
//! client keep working.

use crate::data_dir::{DataDirArg, create_private_new, ensure_private_dir, open_private};
use crate::server::guard::check_token;
use crate::server::guard::random_token;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The file's name in the data directory.
pub const TOKEN_FILE_NAME: &str = "token";

/// A person's credential starts so (secret scanners and people tell it apart).
pub const PERSON_PREFIX: &str = "aup_";

/// An agent token starts so.
pub const AGENT_PREFIX: &str = "aua_";

/// The longest token file read (a token is one short line).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// `<dir>/token`.
pub fn token_path(dir: &Path) -> PathBuf {
    dir.join(TOKEN_FILE_NAME)
}

/// The token `ask-user serve` uses when given none: the one kept in the data
/// directory (created on first start). When there is no usable data
/// directory (no `HOME`, a read-only disk, a damaged token file) the host
/// still starts, with a random token for this run, and says why.
pub fn kept_or_random(data_dir: &DataDirArg) -> String {
    match data_dir.resolve().and_then(|dir| load_or_create(&dir)) {
        Ok(token) => token,
        Err(why) => {
            let why = crate::logged::logged(why);
            tracing::warn!(
                "{why}; using a random token for this run (`ask-user mcp` and `ask-user ask` \
                 cannot find it: pass --token or the printed URL)"
            );
            random_token()
        }
    }
}

/// The token kept in `dir`, created first when there is none.
///
/// Creation is atomic: the token is written to a private file of its own and
/// then hard-linked into place, so two hosts starting at once end up with the
/// same token and no reader ever sees a half-written file.
pub fn load_or_create(dir: &Path) -> Result<String, String> {
    ensure_private_dir(dir).map_err(|e| format!("data directory {}: {e}", dir.display()))?;
    if let Some(token) = read(dir)? {
        return Ok(token);
    }
    let path = token_path(dir);
    let staged = dir.join(format!(
        ".{TOKEN_FILE_NAME}.{}.{:016x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let written = (|| -> io::Result<()> {
        let mut file = create_private_new(&staged)?;
        writeln!(file, "{}", random_token())?;
        file.sync_all()?;
        match std::fs::hard_link(&staged, &path) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
            // Ours, or another host's that won the race: either is the token.
            _ => Ok(()),
        }
    })();
    let _ = std::fs::remove_file(&staged);
    written.map_err(|e| format!("token file {}: {e}", path.display()))?;
    read(dir)?.ok_or_else(|| format!("token file {}: vanished after creation", path.display()))
}

/// The token kept in `dir`, `None` when there is no token file yet. Fails,
/// naming the file, when it cannot be read or does not hold a valid token.
pub fn read(dir: &Path) -> Result<Option<String>, String> {
    let path = token_path(dir);
    let shown = path.display();
    let file = match open_private(&path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("token file {shown}: {e}")),
    };
    #[cfg(unix)]
    if let Ok(metadata) = file.metadata() {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            // Whoever could read it may hold the token: say so, then close it.
            tracing::warn!(
                "token file {}: other users could read it (mode {mode:o}); made it private (600). \
                 Anyone who read it can reach the host: delete it to get a new token",
                crate::logged::logged(&shown)
            );
            let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
        }
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("token file {shown}: {e}"))?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "token file {shown}: longer than {MAX_TOKEN_FILE_BYTES} bytes; it should hold the token alone"
        ));
    }
    let token = text.trim();
    check_token(token).map_err(|why| format!("token file {shown}: {why}"))?;
    Ok(Some(token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("auq-{name}-{}", rand::random::<u64>()))
    }

    #[cfg(unix)]
    #[test]
    fn the_token_is_created_once_private_and_then_kept() {
        use std::os::unix::fs::PermissionsExt;
        let base = temp_dir("token");
        let dir = base.join("ask-user");
        assert_eq!(read(&dir).unwrap(), None);
        let token = load_or_create(&dir).unwrap();
        assert!(check_token(&token).is_ok(), "{token}");
        assert_eq!(token.len(), 32, "128 bits in hex");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&token_path(&dir)), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(load_or_create(&dir).unwrap(), token, "kept across starts");
        assert_eq!(read(&dir).unwrap().as_deref(), Some(token.as_str()));
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no staging file is left behind");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn hosts_starting_at_once_share_one_token() {
        let base = temp_dir("token-race");
        let dir = base.join("ask-user");
        let tokens: Vec<String> = std::thread::scope(|scope| {
            let starts: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| load_or_create(&dir).unwrap()))
                .collect();
            starts.into_iter().map(|s| s.join().unwrap()).collect()
        });
        assert!(tokens.iter().all(|t| t == &tokens[0]), "{tokens:?}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn without_a_usable_data_directory_the_host_still_gets_a_token() {
        let base = temp_dir("token-unusable");
        std::fs::write(&base, "a file, not a directory").unwrap();
        let arg = DataDirArg {
            data_dir: Some(base.join("ask-user")),
        };
        let first = kept_or_random(&arg);
        assert!(check_token(&first).is_ok(), "{first}");
        assert_ne!(kept_or_random(&arg), first, "random per run");
        std::fs::remove_file(&base).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_that_is_a_link_or_another_users_is_refused_and_a_readable_one_made_private() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let base = temp_dir("token-planted");
        let dir = base.join("ask-user");
        ensure_private_dir(&dir).unwrap();
        let planted = base.join("planted");
        std::fs::write(&planted, "planted-token-0123456789abcdef\n").unwrap();
        symlink(&planted, token_path(&dir)).unwrap();
        let refused = read(&dir).unwrap_err();
        assert!(refused.contains("symbolic link"), "{refused}");
        assert!(load_or_create(&dir).is_err(), "never the planted token");

        std::fs::remove_file(token_path(&dir)).unwrap();
        let token = load_or_create(&dir).unwrap();
        let path = token_path(&dir);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read(&dir).unwrap().as_deref(), Some(token.as_str()));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "made private again");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_bad_token_file_is_refused_naming_the_file() {
        let base = temp_dir("token-bad");
        ensure_private_dir(&base).unwrap();
        std::fs::write(token_path(&base), "short\n").unwrap();
        let error = read(&base).unwrap_err();
        assert!(
            error.starts_with("token file ") && error.contains("at least"),
            "{error}"
        );
        assert!(load_or_create(&base).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
