//! One host per data directory. `ask-user serve` (keeping a record) holds an
//! exclusive lock on `<data-dir>/host.lock` for its whole life and writes its
//! address into the file; a second `ask-user serve` on the same directory
//! finds the lock taken and refuses to start, naming that address, instead of
//! opening the same database beside it.
//!
//! The kernel releases the lock when the process ends, however it ends (a
//! kill included), so a stale file never blocks a restart. It is not
//! `serve.lock`: `ask-user mcp` holds that one only while it starts a host,
//! and the host it starts takes this one. (Where there is no `flock`, that is
//! off Unix, no lock is taken.)

use crate::data_dir::{ensure_private_dir, open_lock_file, open_private, try_lock_exclusive};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name in the data directory.
pub const HOST_LOCK_FILE_NAME: &str = "host.lock";

/// The most of the file read back (an address is one short line).
const MAX_ADDRESS_BYTES: u64 = 512;

/// The held lock; dropping it (the process ending) releases it.
#[derive(Debug)]
pub struct HostLock {
    file: File,
    path: PathBuf,
}

impl HostLock {
    /// Takes the lock on `dir`'s host lock file, or fails naming the address
    /// of the host that holds it.
    pub fn acquire(dir: &Path) -> Result<Self, String> {
        ensure_private_dir(dir).map_err(|e| format!("--data-dir {}: {e}", dir.display()))?;
        let path = dir.join(HOST_LOCK_FILE_NAME);
        let shown = path.display();
        let mut file = open_lock_file(&path).map_err(|e| format!("lock file {shown}: {e}"))?;
        if !try_lock_exclusive(&file).map_err(|e| format!("lock file {shown}: {e}"))? {
            let running = running_address(&mut file);
            return Err(format!(
                "another ask-user host already uses the data directory {} ({}); \
                 stop it first, or give this one --data-dir DIR or --ephemeral",
                dir.display(),
                match running {
                    Some(address) => format!("it serves {address}"),
                    None => "it is still starting".to_owned(),
                }
            ));
        }
        // Whatever an earlier holder wrote is not this host's address.
        file.set_len(0)
            .map_err(|e| format!("lock file {shown}: {e}"))?;
        Ok(Self { file, path })
    }

    /// Writes the address this host serves into the lock file, where a second
    /// host started on the directory reads it.
    pub fn announce(&mut self, address: &str) -> Result<(), String> {
        let written = (|| -> std::io::Result<()> {
            self.file.set_len(0)?;
            self.file.rewind()?;
            writeln!(self.file, "{address}")?;
            self.file.flush()
        })();
        written.map_err(|e| format!("lock file {}: {e}", self.path.display()))
    }
}

/// The address the holder wrote, if it has yet.
fn running_address(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.take(MAX_ADDRESS_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let address = text.trim();
    (!address.is_empty()).then(|| address.to_owned())
}

/// The address the host holding `dir`'s lock announced, if one did (the file
/// outlives its host: the caller checks that something answers there).
pub fn announced(dir: &Path) -> Option<String> {
    let mut file = open_private(
        &dir.join(HOST_LOCK_FILE_NAME),
        OpenOptions::new().read(true),
    )
    .ok()?;
    running_address(&mut file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_second_lock_on_one_directory_is_refused_naming_the_first_ones_address_until_it_is_dropped()
    {
        let dir = std::env::temp_dir().join(format!(
            "ask-user-host-lock-{}-{:x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        let mut first = HostLock::acquire(&dir).unwrap();
        let starting = HostLock::acquire(&dir).unwrap_err();
        assert!(starting.contains("still starting"), "{starting}");
        first.announce("http://127.0.0.1:4242/").unwrap();
        let refused = HostLock::acquire(&dir).unwrap_err();
        assert!(
            refused.contains("it serves http://127.0.0.1:4242/"),
            "{refused}"
        );
        assert!(refused.contains(&dir.display().to_string()), "{refused}");
        drop(first);
        let again = HostLock::acquire(&dir);
        assert!(again.is_ok(), "{again:?}");
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
