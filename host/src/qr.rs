//! QR codes for pairing links: half blocks for a terminal (`ask-user pair`),
//! one SVG path for the page.

/// `text` as a QR code drawn with half blocks (two rows per line), dark on
/// light with its quiet zone, for a terminal.
pub fn terminal_qr(text: &str) -> String {
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<qrcode::render::unicode::Dense1x2>()
            .dark_color(qrcode::render::unicode::Dense1x2::Light)
            .light_color(qrcode::render::unicode::Dense1x2::Dark)
            .build(),
        Err(_) => String::new(),
    }
}

/// `text` as a QR code in SVG, for the page: one path of the dark modules
/// on white, with the four-module quiet zone (drawn here rather than by the
/// crate's SVG renderer, which the one binary's size budget had no room for).
pub fn svg_qr(text: &str) -> String {
    use std::fmt::Write as _;
    let Ok(code) = qrcode::QrCode::new(text.as_bytes()) else {
        return String::new();
    };
    let width = code.width();
    let mut path = String::new();
    for (i, color) in code.to_colors().iter().enumerate() {
        if *color == qrcode::Color::Dark {
            let _ = write!(path, "M{} {}h1v1h-1z", i % width + 4, i / width + 4);
        }
    }
    let size = width + 8;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" width=\"200\" \
         height=\"200\" shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" \
         fill=\"#fff\"/><path fill=\"#000\" d=\"{path}\"/></svg>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_qr_code_is_square_blocks_with_a_quiet_zone() {
        let qr = terminal_qr("https://box.tailnet.ts.net/pair#0123456789abcdef0123456789abcdef");
        let lines: Vec<&str> = qr.lines().collect();
        assert!(lines.len() > 10, "{qr}");
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width));
        assert!(qr.contains('▀') || qr.contains('▄'));
        let svg = svg_qr("https://box.tailnet.ts.net/pair#0123456789abcdef0123456789abcdef");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"), "{svg}");
        // A version 4 code (33 modules) and its quiet zone.
        assert!(svg.contains("viewBox=\"0 0 41 41\""), "{svg}");
        // The finder pattern's top-left corner is dark.
        assert!(svg.contains("M4 4h1v1h-1z"), "{svg}");
    }
}
