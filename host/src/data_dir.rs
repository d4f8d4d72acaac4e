//! The host's data directory: where it keeps what outlives a run (the
//! database, the token file, the background host's log and lock).
//!
//! One place decides where it is (`--data-dir`, `ASK_USER_DATA_DIR`, else
//! `$XDG_DATA_HOME/ask-user`, else `~/.local/share/ask-user`) and how it is
//! made: the directory private to its user (0700), every file in it 0600.
//! Everything that reads or writes there (`serve`, `mcp`, `ask`, `history`)
//! goes through this module.
//!
//! It trusts nothing it finds there: the directory and every file in it must
//! be owned by the user running ask-user (root included) and be what they
//! seem, never a symbolic link (which would make the host write, chmod or
//! read something elsewhere: another user's file, a token planted for it).

use clap::Args;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The folder's name under `$XDG_DATA_HOME` (or `~/.local/share`).
pub const DATA_DIR_NAME: &str = "ask-user";

/// `--data-dir`, shared by every subcommand that uses the data directory.
#[derive(Debug, Clone, Default, Args)]
pub struct DataDirArg {
    /// Where the host keeps its database, token file and log (created 0700,
    /// files 0600). Default: $XDG_DATA_HOME/ask-user, else ~/.local/share/ask-user.
    // Global: `ask-user people list --data-dir DIR` takes it after its action too.
    #[arg(long, env = "ASK_USER_DATA_DIR", value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
}

impl DataDirArg {
    /// The directory: the flag (or `ASK_USER_DATA_DIR`), else [`default_data_dir`].
    /// Nothing is created.
    pub fn resolve(&self) -> Result<PathBuf, String> {
        match &self.data_dir {
            Some(dir) => Ok(dir.clone()),
            None => default_data_dir(),
        }
    }
}

/// `$XDG_DATA_HOME/ask-user` when `XDG_DATA_HOME` is an absolute path (the XDG
/// rule: a relative one is ignored), else `$HOME/.local/share/ask-user`.
pub fn default_data_dir() -> Result<PathBuf, String> {
    data_dir_from(
        std::env::var_os("XDG_DATA_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

fn data_dir_from(xdg_data_home: Option<PathBuf>, home: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(xdg) = xdg_data_home.filter(|p| p.is_absolute()) {
        return Ok(xdg.join(DATA_DIR_NAME));
    }
    match home.filter(|p| p.is_absolute()) {
        Some(home) => Ok(home.join(".local").join("share").join(DATA_DIR_NAME)),
        None => Err(
            "no data directory: neither XDG_DATA_HOME nor HOME is set to an absolute path; \
             pass --data-dir DIR"
                .to_owned(),
        ),
    }
}

/// Creates `dir` (and missing parents) private to this user (0700), or checks
/// an existing one: a directory others may enter is tightened to 0700 with a
/// warning, since it holds the token and the record of every answer. Fails
/// when `dir` exists and is not a directory, is a symbolic link, or is owned
/// by another user (who could read or replace everything in it).
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(refused(
                "a symbolic link; give the directory itself (a link in its place could \
                 point anywhere)"
                    .to_owned(),
            ));
        }
        Ok(metadata) if !metadata.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a directory", dir.display()),
            ));
        }
        Ok(metadata) => {
            owned_by_this_user(&metadata).map_err(refused)?;
            tighten(dir, &metadata)?;
            return Ok(());
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    // The mode given to mkdir is reduced by the umask; make sure it is 0700.
    #[cfg(unix)]
    set_mode(dir, 0o700)?;
    Ok(())
}

#[cfg(unix)]
fn tighten(dir: &Path, metadata: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            "{}: other users could enter it (mode {mode:o}); made it private (700)",
            crate::logged::logged(dir.display())
        );
        set_mode(dir, 0o700)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_dir: &Path, _metadata: &std::fs::Metadata) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A lock file in the data directory (created when missing, never truncated,
/// with [`open_private`]'s checks), opened for reading and writing.
pub fn open_lock_file(path: &Path) -> io::Result<File> {
    open_private(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` when
/// another process holds it. Off Unix no lock is taken (`Ok(true)`).
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    #[cfg(unix)]
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(true)
    }
}

/// Opens `path` with `options`, creating it 0600 (only this user may read
/// it) when it does not exist. An existing file keeps its mode. Never through
/// a symbolic link, and only a regular file this user owns: anything else
/// fails, saying why.
pub fn open_private(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let file = options.open(path).map_err(|e| {
        // O_NOFOLLOW on a link fails with ELOOP.
        #[cfg(unix)]
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return refused(NOT_FOLLOWED.to_owned());
        }
        e
    })?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(refused("not a regular file".to_owned()));
    }
    owned_by_this_user(&metadata).map_err(refused)?;
    Ok(file)
}

/// `path`'s metadata, without following a link; `None` when it does not
/// exist. Fails, saying why, when it is a symbolic link or another user's.
pub fn private_metadata(path: &Path) -> io::Result<Option<std::fs::Metadata>> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if metadata.file_type().is_symlink() {
        return Err(refused(NOT_FOLLOWED.to_owned()));
    }
    owned_by_this_user(&metadata).map_err(refused)?;
    Ok(Some(metadata))
}

const NOT_FOLLOWED: &str = "a symbolic link; links in the data directory are never followed";

fn refused(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}

/// Whether this process's user owns what `metadata` describes; says whose it
/// is otherwise. Root too must own it: a directory of another user's is
/// theirs to read and replace.
#[cfg(unix)]
fn owned_by_this_user(metadata: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() == me {
        Ok(())
    } else {
        Err(format!(
            "owned by user {}, not by this user ({me}); ask-user keeps its token and \
             record only where no one else can read or replace them",
            metadata.uid()
        ))
    }
}

#[cfg(not(unix))]
fn owned_by_this_user(_metadata: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

/// Creates `path` new (failing if it exists), 0600.
pub fn create_private_new(path: &Path) -> io::Result<File> {
    open_private(path, OpenOptions::new().write(true).create_new(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_data_home_wins_when_absolute_and_home_is_the_fallback() {
        let xdg = data_dir_from(Some("/x/data".into()), Some("/home/p".into())).unwrap();
        assert_eq!(xdg, PathBuf::from("/x/data/ask-user"));
        let relative = data_dir_from(Some("data".into()), Some("/home/p".into())).unwrap();
        assert_eq!(relative, PathBuf::from("/home/p/.local/share/ask-user"));
        let home = data_dir_from(None, Some("/home/p".into())).unwrap();
        assert_eq!(home, PathBuf::from("/home/p/.local/share/ask-user"));
        let none = data_dir_from(None, None).unwrap_err();
        assert!(none.contains("--data-dir"), "{none}");
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_is_created_0700_and_a_loose_one_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("auq-data-dir-{}", rand::random::<u64>()));
        let dir = base.join("nested").join("ask-user");
        ensure_private_dir(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);

        let file = dir.join("token");
        drop(create_private_new(&file).unwrap());
        assert_eq!(mode(&file), 0o600);
        assert_eq!(
            create_private_new(&file).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let not_a_dir = ensure_private_dir(&file).unwrap_err();
        assert!(not_a_dir.to_string().contains("not a directory"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_the_data_directory_is_never_followed_nor_its_target_touched() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let base = std::env::temp_dir().join(format!("auq-links-{}", rand::random::<u64>()));
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o755)).unwrap();
        let victim = elsewhere.join("victim");
        std::fs::write(&victim, "someone's file\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();

        // The directory itself a link: refused, its target left as it was.
        let linked_dir = base.join("ask-user-link");
        symlink(&elsewhere, &linked_dir).unwrap();
        let refused = ensure_private_dir(&linked_dir).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        assert_eq!(mode(&elsewhere), 0o755, "not chmodded through the link");

        // A file in it a link (to an existing file, or dangling): refused.
        let dir = base.join("ask-user");
        ensure_private_dir(&dir).unwrap();
        let link = dir.join("serve.log");
        symlink(&victim, &link).unwrap();
        let refused =
            open_private(&link, OpenOptions::new().append(true).create(true)).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        let dangling = dir.join("open.html");
        symlink(elsewhere.join("new"), &dangling).unwrap();
        let refused =
            open_private(&dangling, OpenOptions::new().write(true).create(true)).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        assert!(
            !elsewhere.join("new").exists(),
            "nothing created through the link"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "someone's file\n"
        );
        assert_eq!(mode(&victim), 0o644);
        let refused = private_metadata(&link).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Another user's directory or file: as root, one given away to `nobody`;
    /// as anyone else, one of root's.
    #[cfg(unix)]
    #[test]
    fn a_directory_or_file_of_another_user_is_refused_saying_whose_it_is() {
        let me = rustix::process::geteuid().as_raw();
        let base = std::env::temp_dir().join(format!("auq-owner-{}", rand::random::<u64>()));
        let (theirs, their_file) = if me == 0 {
            let dir = base.join("theirs");
            std::fs::create_dir_all(&dir).unwrap();
            let file = base.join("token");
            std::fs::write(&file, "x").unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
            (dir, file)
        } else {
            (PathBuf::from("/"), PathBuf::from("/etc/hostname"))
        };
        let refused = ensure_private_dir(&theirs).unwrap_err();
        assert!(
            refused.to_string().contains("owned by user")
                && refused.to_string().contains("not by this user"),
            "{refused}"
        );
        let refused = open_private(&their_file, OpenOptions::new().read(true)).unwrap_err();
        assert!(refused.to_string().contains("owned by user"), "{refused}");
        let _ = std::fs::remove_dir_all(&base);
    }
}
