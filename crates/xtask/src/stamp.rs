//! Skipping a build whose inputs did not change: a stamp file records a hash
//! of every input (file contents, tool versions, compiler, build flags) and
//! of every output, and a build is skipped only when both still match.
//!
//! The inputs are a deliberate superset: whole source trees rather than the
//! exact files the build reads, so a change can only cause a rebuild too many,
//! never a stale page.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

/// Bumped when what a stamp covers changes, so old stamps stop matching.
const FORMAT: &str = "ask-user xtask stamp 1";

/// A running hash of build inputs.
pub struct Inputs {
    hasher: DefaultHasher,
    root: PathBuf,
}

impl Inputs {
    /// Starts a hash of inputs under `root` (paths are hashed relative to it).
    pub fn new(root: &Path) -> Self {
        let mut inputs = Inputs {
            hasher: DefaultHasher::new(),
            root: root.to_owned(),
        };
        inputs.text(FORMAT);
        inputs
    }

    /// Adds a string (a tool version, an environment value).
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.hasher.write_usize(text.len());
        self.hasher.write(text.as_bytes());
        self
    }

    /// Adds the file or whole tree at `relative` (missing paths count as missing).
    pub fn path(&mut self, relative: &str) -> &mut Self {
        let path = self.root.join(relative);
        let mut files = Vec::new();
        list_files(&path, &mut files);
        files.sort();
        self.text(relative);
        self.hasher.write_usize(files.len());
        for file in files {
            let name = file.strip_prefix(&self.root).unwrap_or(&file);
            self.text(&name.to_string_lossy());
            match std::fs::read(&file) {
                Ok(bytes) => {
                    self.hasher.write_usize(bytes.len());
                    self.hasher.write(&bytes);
                }
                Err(_) => self.hasher.write_u8(0),
            }
        }
        self
    }

    /// Adds every environment variable whose name starts with one of `prefixes`.
    pub fn env_vars(&mut self, prefixes: &[&str]) -> &mut Self {
        let mut vars: Vec<(String, String)> = std::env::vars()
            .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
            .collect();
        vars.sort();
        for (name, value) in vars {
            self.text(&name).text(&value);
        }
        self
    }

    /// The hash, as hex.
    pub fn finish(&self) -> String {
        format!("{:016x}", self.hasher.finish())
    }
}

/// Every regular file under `path` (or `path` itself), skipping dot entries,
/// `target` and `node_modules`.
fn list_files(path: &Path, out: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_file() {
        out.push(path.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        list_files(&entry.path(), out);
    }
}

/// A listing of the files under `dir` (except those under `skip`), each with
/// its size and content hash, one per line.
pub fn outputs(dir: &Path, skip: Option<&Path>) -> String {
    let mut files = Vec::new();
    list_files(dir, &mut files);
    files.retain(|f| skip.is_none_or(|skip| !f.starts_with(skip)));
    files.sort();
    let mut listing = String::new();
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let mut hasher = DefaultHasher::new();
        hasher.write(&bytes);
        let name = file.strip_prefix(dir).unwrap_or(&file);
        listing.push_str(&format!(
            "{:016x} {} {}\n",
            hasher.finish(),
            bytes.len(),
            name.display()
        ));
    }
    listing
}

/// A stamp file: the inputs' hash on the first line, the outputs' listing after.
pub struct Stamp {
    file: PathBuf,
}

impl Stamp {
    /// The stamp named `name` under `target/xtask/`.
    pub fn new(target_dir: &Path, name: &str) -> Self {
        Stamp {
            file: target_dir.join("xtask").join(format!("{name}.stamp")),
        }
    }

    /// Whether the last build had these inputs and its outputs are untouched.
    pub fn matches(&self, inputs: &str, outputs: &str) -> bool {
        !outputs.is_empty()
            && std::fs::read_to_string(&self.file)
                .is_ok_and(|text| text == format!("{inputs}\n{outputs}"))
    }

    /// Records a successful build.
    pub fn record(&self, inputs: &str, outputs: &str) -> Result<(), String> {
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&self.file, format!("{inputs}\n{outputs}"))
            .map_err(|e| format!("{}: {e}", self.file.display()))
    }

    /// Forgets the last build (before a build starts, so a failed one never matches).
    pub fn clear(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-stamp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        dir
    }

    #[test]
    fn the_inputs_hash_changes_with_any_file_and_not_with_skipped_ones() {
        let root = scratch("inputs");
        std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
        let hash = || Inputs::new(&root).path("src").text("tool 1").finish();
        let first = hash();
        assert_eq!(hash(), first, "stable");
        std::fs::create_dir_all(root.join("src/target")).unwrap();
        std::fs::write(root.join("src/target/x"), "build output").unwrap();
        std::fs::write(root.join("src/.swp"), "editor").unwrap();
        assert_eq!(hash(), first, "target/ and dot files are not inputs");
        std::fs::write(root.join("src/a.rs"), "fn a() { }").unwrap();
        let edited = hash();
        assert_ne!(edited, first);
        std::fs::write(root.join("src/b.rs"), "").unwrap();
        assert_ne!(hash(), edited, "a new empty file counts");
        assert_ne!(
            Inputs::new(&root).path("src").text("tool 2").finish(),
            hash()
        );
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_stamp_matches_only_the_same_inputs_with_untouched_outputs() {
        let root = scratch("stamp");
        let out = root.join("out");
        std::fs::create_dir_all(out.join("embed")).unwrap();
        std::fs::write(out.join("page.wasm"), "wasm").unwrap();
        std::fs::write(out.join("embed/e.js"), "js").unwrap();
        let stamp = Stamp::new(&root, "page");
        let listing = outputs(&out, Some(&out.join("embed")));
        assert!(listing.contains("page.wasm") && !listing.contains("e.js"));
        assert!(!stamp.matches("abc", &listing), "nothing recorded yet");
        stamp.record("abc", &listing).unwrap();
        assert!(stamp.matches("abc", &listing));
        assert!(!stamp.matches("abd", &listing), "other inputs");
        std::fs::write(out.join("page.wasm"), "wasm!").unwrap();
        assert!(!stamp.matches("abc", &outputs(&out, Some(&out.join("embed")))));
        std::fs::write(out.join("embed/e.js"), "changed").unwrap();
        std::fs::write(out.join("page.wasm"), "wasm").unwrap();
        assert!(stamp.matches("abc", &outputs(&out, Some(&out.join("embed")))));
        stamp.clear();
        assert!(!stamp.matches("abc", &listing));
        assert!(!stamp.matches("abc", ""), "no outputs never match");
        std::fs::remove_dir_all(&root).ok();
    }
}
