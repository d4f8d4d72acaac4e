//! HTTP negotiation for the page's files: which stored encoding to send for an
//! `Accept-Encoding`, and whether an `If-None-Match` names the current ETag.

/// A stored representation of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `Content-Encoding: br`.
    Brotli,
    /// `Content-Encoding: gzip`.
    Gzip,
    /// The file as built.
    Identity,
}

impl Encoding {
    /// The `Content-Encoding` value, `None` for identity.
    pub fn header(self) -> Option<&'static str> {
        match self {
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
            Encoding::Identity => None,
        }
    }

    /// What the ETag of this representation ends with (each encoding is its
    /// own representation, so its strong ETag differs).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Encoding::Brotli => "-br",
            Encoding::Gzip => "-gz",
            Encoding::Identity => "",
        }
    }
}

/// The best stored encoding for `accept_encoding` (RFC 9110 §12.5.3): the
/// highest q-value among those stored, brotli before gzip before identity on a
/// tie; identity, when not named, below any listed coding. Without the header,
/// identity. Identity is the answer when nothing
/// acceptable is stored (a client that refuses identity still gets the file).
pub fn choose(accept_encoding: Option<&str>, brotli: bool, gzip: bool) -> Encoding {
    let Some(header) = accept_encoding else {
        return Encoding::Identity;
    };
    let mut q_brotli = None;
    let mut q_gzip = None;
    let mut q_identity = None;
    let mut q_any = None;
    for entry in header.split(',') {
        let mut parts = entry.split(';');
        let coding = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|param| {
                let (name, value) = param.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("q")
                    .then(|| value.trim().parse::<f32>().ok())
                    .flatten()
            })
            .next()
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        let slot = match coding.as_str() {
            "br" => &mut q_brotli,
            "gzip" | "x-gzip" => &mut q_gzip,
            "identity" => &mut q_identity,
            "*" => &mut q_any,
            _ => continue,
        };
        *slot = Some(q);
    }
    let brotli_q = if brotli { q_brotli.or(q_any) } else { None };
    let gzip_q = if gzip { q_gzip.or(q_any) } else { None };
    // Identity is acceptable unless refused by name or by `*;q=0`; when not
    // named, it ranks below every coding the client lists.
    let identity_q = match (q_identity, q_any) {
        (Some(q), _) => q,
        (None, Some(0.0)) => 0.0,
        (None, _) => f32::MIN_POSITIVE,
    };
    let mut best = (Encoding::Identity, identity_q);
    for (encoding, q) in [(Encoding::Gzip, gzip_q), (Encoding::Brotli, brotli_q)] {
        if let Some(q) = q
            && q > 0.0
            && q >= best.1
        {
            best = (encoding, q);
        }
    }
    best.0
}

/// Whether an `If-None-Match` value matches `etag` (a quoted strong ETag) by
/// the weak comparison GET uses: `*`, or any listed tag equal with `W/` ignored.
pub fn none_match(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_get_brotli_and_older_clients_gzip_when_both_are_stored() {
        let chromium = Some("gzip, deflate, br, zstd");
        assert_eq!(choose(chromium, true, true), Encoding::Brotli);
        assert_eq!(choose(Some("gzip, deflate"), true, true), Encoding::Gzip);
        assert_eq!(choose(chromium, false, true), Encoding::Gzip);
        assert_eq!(choose(chromium, false, false), Encoding::Identity);
    }

    #[test]
    fn no_header_or_unknown_codings_mean_the_file_as_built() {
        assert_eq!(choose(None, true, true), Encoding::Identity);
        assert_eq!(choose(Some(""), true, true), Encoding::Identity);
        assert_eq!(
            choose(Some("zstd, deflate"), true, true),
            Encoding::Identity
        );
    }

    #[test]
    fn q_values_rank_codings_and_zero_refuses_one() {
        assert_eq!(choose(Some("br;q=0, gzip"), true, true), Encoding::Gzip);
        assert_eq!(
            choose(Some("br;q=0.5, gzip;q=0.8"), true, true),
            Encoding::Gzip
        );
        assert_eq!(
            choose(Some("BR; Q=1, GZIP;q=0.9"), true, true),
            Encoding::Brotli
        );
        assert_eq!(choose(Some("*"), true, true), Encoding::Brotli);
        assert_eq!(choose(Some("*;q=0, gzip"), true, true), Encoding::Gzip);
        assert_eq!(
            choose(Some("gzip;q=0, br;q=0"), true, true),
            Encoding::Identity
        );
        assert_eq!(choose(Some("x-gzip"), false, true), Encoding::Gzip);
    }

    #[test]
    fn identity_preferred_over_a_lower_rated_coding() {
        assert_eq!(
            choose(Some("identity, gzip;q=0.5"), true, true),
            Encoding::Identity
        );
        assert_eq!(
            choose(Some("identity;q=0, gzip;q=0.5"), true, true),
            Encoding::Gzip
        );
    }

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists_and_star() {
        let etag = "\"abc-br\"";
        assert!(none_match("\"abc-br\"", etag));
        assert!(none_match("W/\"abc-br\"", etag));
        assert!(none_match("\"x\", \"abc-br\"", etag));
        assert!(none_match("*", etag));
        assert!(!none_match("\"abc\"", etag));
        assert!(!none_match("\"abc-gz\"", etag));
        assert!(!none_match("", etag));
    }
}
