//! The installable app around the page: its web app manifest, its service
//! worker and its icons, built into every binary that serves the page (a
//! `--dist` folder included), at fixed names next to the page's files:
//! `/manifest.webmanifest`, `/sw.js` (at the root, so its scope is the whole
//! origin) and `/app/icon*.{svg,png}`. They revalidate with their ETags, so a
//! new binary's worker replaces the old one at the next visit.
//!
//! The PNG icons are `icon.svg` drawn by Chromium (see docs/page.md,
//! "The installable app"); the SVG is the source.

use super::files::{Asset, etag_of};
use axum::body::Bytes;
use std::sync::OnceLock;

/// The app's files: request path and contents.
const FILES: [(&str, &[u8]); 5] = [
    (
        "/manifest.webmanifest",
        include_bytes!("app/manifest.webmanifest"),
    ),
    ("/sw.js", include_bytes!("app/sw.js")),
    ("/app/icon.svg", include_bytes!("app/icon.svg")),
    ("/app/icon-192.png", include_bytes!("app/icon-192.png")),
    ("/app/icon-512.png", include_bytes!("app/icon-512.png")),
];

/// The app's file at request path `path`, if it is one.
pub fn get(path: &str) -> Option<Asset> {
    static ASSETS: OnceLock<Vec<(&'static str, Asset)>> = OnceLock::new();
    ASSETS
        .get_or_init(|| {
            FILES
                .iter()
                .map(|(path, bytes)| {
                    let identity = Bytes::from_static(bytes);
                    let gzip = compressible(path).then(|| gzip(bytes));
                    (
                        *path,
                        Asset::new(path, etag_of(bytes), identity, gzip, None),
                    )
                })
                .collect()
        })
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, asset)| asset.clone())
}

fn compressible(path: &str) -> bool {
    !path.ends_with(".png")
}

fn gzip(bytes: &[u8]) -> Bytes {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).expect("writing to a Vec");
    Bytes::from(encoder.finish().expect("writing to a Vec"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::pages::Caching;

    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (be(16), be(20))
    }

    #[test]
    fn the_manifest_names_the_app_standalone_with_icons_that_exist_in_their_stated_sizes() {
        let manifest = get("/manifest.webmanifest").expect("the manifest is served");
        assert_eq!(manifest.content_type, "application/manifest+json");
        let manifest: serde_json::Value = serde_json::from_slice(&manifest.identity).unwrap();
        assert_eq!(manifest["name"], "ask-user");
        assert_eq!(manifest["short_name"], "ask-user");
        assert_eq!(manifest["display"], "standalone");
        assert_eq!(manifest["start_url"], "/");
        assert!(
            manifest["theme_color"]
                .as_str()
                .is_some_and(|c| c.starts_with('#'))
        );
        let icons = manifest["icons"].as_array().unwrap();
        assert!(icons.iter().any(|i| i["purpose"] == "maskable"));
        for icon in icons {
            let src = icon["src"].as_str().unwrap();
            let file = get(src).unwrap_or_else(|| panic!("{src} is served"));
            assert_eq!(icon["type"], file.content_type.split(';').next().unwrap());
            match icon["sizes"].as_str().unwrap() {
                "any" => assert_eq!(file.content_type, "image/svg+xml"),
                sizes => {
                    let (w, h) = png_size(&file.identity);
                    assert_eq!(sizes, format!("{w}x{h}"), "{src}");
                }
            }
        }
    }

    #[test]
    fn the_worker_is_served_at_the_root_as_script_and_revalidates() {
        let worker = get("/sw.js").expect("the worker is served");
        assert_eq!(worker.content_type, "text/javascript; charset=utf-8");
        assert_eq!(worker.caching, Caching::Revalidate);
        assert!(worker.gzip.is_some());
        assert!(get("/sw.js.map").is_none());
        assert!(get("/app/").is_none());
    }
}
