//! Recommendations. There is no `recommended` field: an option is recommended
//! when its label ends with ` (Recommended)` (or `(推荐)`, with ASCII or
//! full-width brackets, in any case). The label, suffix included, is what comes
//! back when the option is chosen; UIs show [`Recommendation::display`] and a badge.

/// What a label says about recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommendation<'a> {
    /// Whether the label carries a recommendation suffix.
    pub recommended: bool,
    /// The label to show: without the suffix when recommended, else unchanged.
    pub display: &'a str,
}

const MARKERS: [&str; 2] = ["recommended", "推荐"];

/// Reads a label's recommendation suffix.
///
/// ```
/// use ask_user_core::recommend::recommendation;
/// let r = recommendation("Postgres (Recommended)");
/// assert!(r.recommended);
/// assert_eq!(r.display, "Postgres");
/// assert!(!recommendation("Use (legacy) mode").recommended);
/// ```
pub fn recommendation(label: &str) -> Recommendation<'_> {
    let plain = Recommendation {
        recommended: false,
        display: label,
    };
    let trimmed = label.trim_end();
    let Some(close) = trimmed
        .strip_suffix(')')
        .or_else(|| trimmed.strip_suffix('）'))
    else {
        return plain;
    };
    for marker in MARKERS {
        let Some(split) = close.len().checked_sub(marker.len()) else {
            continue;
        };
        if !close.is_char_boundary(split) || !close[split..].eq_ignore_ascii_case(marker) {
            continue;
        }
        let before = &close[..split];
        let Some(open) = before
            .strip_suffix('(')
            .or_else(|| before.strip_suffix('（'))
        else {
            continue;
        };
        let display = open.trim_end();
        if display.is_empty() {
            return plain;
        }
        return Recommendation {
            recommended: true,
            display,
        };
    }
    plain
}

/// Whether a label marks its option as recommended.
pub fn is_recommended(label: &str) -> bool {
    recommendation(label).recommended
}
