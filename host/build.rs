//! Embeds the built page in the `ask-user` binary when `ASK_USER_PAGE_DIST`
//! names it (an absolute path; `cargo xtask run|test|dist|bench` set it to the
//! workspace's `dist/`, the Trunk build with the JavaScript embed in `embed/`).
//!
//! Each file is copied into `OUT_DIR`, hashed for its ETag, and compressed
//! once here with brotli (quality 11) and gzip (level 9) when that makes it
//! smaller, so serving it never compresses anything. Without the variable the
//! binary carries no page and `/` says how to build one.
//!
//! Cargo re-runs this script exactly when the variable or a file under the
//! directory changes (`rerun-if-env-changed`, `rerun-if-changed` on the
//! directory, which cargo scans recursively).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

const PAGE_ENV: &str = "ASK_USER_PAGE_DIST";
/// File types worth compressing (the rest are sent as they are).
const COMPRESSIBLE: &[&str] = &[
    "html", "js", "mjs", "css", "wasm", "json", "svg", "txt", "ts", "map",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={PAGE_ENV}");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let generated = out_dir.join("embedded_page.rs");
    let code = match std::env::var_os(PAGE_ENV).filter(|v| !v.is_empty()) {
        None => "/// Built without `ASK_USER_PAGE_DIST`: no page inside.\n\
                 pub(crate) static EMBEDDED_PAGE: Option<&[EmbeddedFile]> = None;\n"
            .to_owned(),
        Some(dir) => embed(Path::new(&dir), &out_dir.join("page")),
    };
    std::fs::write(&generated, code).expect("write the generated module");
}

struct Prepared {
    path: String,
    etag: String,
    gzip: bool,
    brotli: bool,
}

/// Copies and compresses every file under `dist` into `out`; returns the
/// module that `include_bytes!`s them.
fn embed(dist: &Path, out: &Path) -> String {
    if !dist.is_absolute() {
        fail(&format!(
            "{PAGE_ENV}={} must be an absolute path",
            dist.display()
        ));
    }
    if !dist.join("index.html").is_file() {
        fail(&format!(
            "{PAGE_ENV}={} holds no index.html: build the page first (`cargo xtask dist`)",
            dist.display()
        ));
    }
    println!("cargo:rerun-if-changed={}", dist.display());
    let root = dist
        .canonicalize()
        .unwrap_or_else(|e| fail(&format!("{}: {e}", dist.display())));
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    if out.exists() {
        std::fs::remove_dir_all(out).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    }
    // Brotli at quality 11 is the slow part: one thread per file.
    let prepared: Vec<Prepared> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|(relative, source)| scope.spawn(|| prepare(relative, source, out)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a compression thread"))
            .collect()
    });

    let mut code = String::from(
        "/// The page built into this binary (`ASK_USER_PAGE_DIST` at build time).\n\
         pub(crate) static EMBEDDED_PAGE: Option<&[EmbeddedFile]> = Some(&[\n",
    );
    for file in &prepared {
        let include = |suffix: &str| {
            format!(
                "include_bytes!(concat!(env!(\"OUT_DIR\"), {:?}))",
                format!("/page/{}{suffix}", file.path)
            )
        };
        let variant = |present: bool, suffix: &str| {
            if present {
                format!("Some({})", include(suffix))
            } else {
                "None".to_owned()
            }
        };
        writeln!(
            code,
            "    EmbeddedFile {{ path: {:?}, etag: {:?}, identity: {}, gzip: {}, brotli: {} }},",
            file.path,
            file.etag,
            include(""),
            variant(file.gzip, ".gz"),
            variant(file.brotli, ".br"),
        )
        .expect("writing to a String");
    }
    code.push_str("]);\n");
    code
}

/// Every regular file under `dir` (dot files skipped; symbolic links only when
/// they stay inside `root`), as (path relative to `root` with `/`, absolute path).
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            println!(
                "cargo:warning=skipping {}: not UTF-8",
                entry.path().display()
            );
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let Ok(resolved) = entry.path().canonicalize() else {
            continue;
        };
        if !resolved.starts_with(root) {
            println!(
                "cargo:warning=skipping {}: it points outside {}",
                entry.path().display(),
                root.display()
            );
            continue;
        }
        if resolved.is_dir() {
            collect(root, &entry.path(), files);
        } else if resolved.is_file() {
            let relative = entry
                .path()
                .strip_prefix(root)
                .expect("entries lie under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            files.push((relative, resolved));
        }
    }
}

fn prepare(relative: &str, source: &Path, out: &Path) -> Prepared {
    let bytes =
        std::fs::read(source).unwrap_or_else(|e| fail(&format!("{}: {e}", source.display())));
    let target = out.join(relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", parent.display())));
    }
    write(&target, &bytes);
    let digest = Sha256::digest(&bytes);
    let etag = URL_SAFE_NO_PAD.encode(&digest[..16]);
    let compressible = Path::new(relative)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| COMPRESSIBLE.contains(&e));
    let mut prepared = Prepared {
        path: relative.to_owned(),
        etag,
        gzip: false,
        brotli: false,
    };
    if compressible {
        let gzip = gzip(&bytes);
        if gzip.len() < bytes.len() {
            write(&with_suffix(&target, ".gz"), &gzip);
            prepared.gzip = true;
        }
        let brotli = brotli(&bytes);
        if brotli.len() < bytes.len() {
            write(&with_suffix(&target, ".br"), &brotli);
            prepared.brotli = true;
        }
    }
    prepared
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

fn brotli(bytes: &[u8]) -> Vec<u8> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        size_hint: bytes.len(),
        ..Default::default()
    };
    let mut out = Vec::new();
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).expect("brotli into memory");
    out
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
}

fn fail(message: &str) -> ! {
    panic!("embedding the page: {message}");
}
