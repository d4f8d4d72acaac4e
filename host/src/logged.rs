//! Values from outside the host (client names and versions, paths, error
//! texts) as they may appear in a log line: escaped and bounded.
//!
//! A log line is read by a person in a terminal and by tools that split on
//! newlines, so a value must not end the line (forging the next one), move
//! the cursor or recolour the terminal (escape sequences), or reorder what is
//! shown (bidi controls); nor fill the log. [`logged`] escapes every control
//! and invisible formatting character as `\n`, `\u{1b}`, ... and keeps at
//! most [`MAX_LOGGED_CHARS`] characters, saying how many there were.

use std::fmt::{self, Display, Write};

/// An error and its sources, `: `-separated: many errors' own text is their
/// kind alone (tokio-postgres's "db error", hyper's "client error
/// (Connect)"), what went wrong is in their source. Push errors keep no URL
/// in it (it may hold a push service's per-device path).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The most characters of one value that reach the log.
pub const MAX_LOGGED_CHARS: usize = 200;

/// `value` escaped and cut to [`MAX_LOGGED_CHARS`] when displayed.
pub fn logged<T: Display>(value: T) -> Logged<T> {
    logged_at_most(value, MAX_LOGGED_CHARS)
}

/// `value` escaped and cut to `max` characters when displayed.
pub fn logged_at_most<T: Display>(value: T, max: usize) -> Logged<T> {
    Logged { value, max }
}

/// See [`logged`]. Formats the value once, without keeping a copy of it.
#[derive(Debug, Clone, Copy)]
pub struct Logged<T> {
    value: T,
    max: usize,
}

impl<T: Display> Display for Logged<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Escaper {
            out: f,
            left: self.max,
            chars: 0,
        };
        write!(out, "{}", self.value)?;
        let chars = out.chars;
        if chars > self.max {
            write!(f, "… ({chars} characters)")?;
        }
        Ok(())
    }
}

/// Writes what it is given escaped, up to `left` characters; counts the rest.
struct Escaper<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    left: usize,
    chars: usize,
}

impl Write for Escaper<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            self.chars += 1;
            if self.left == 0 {
                continue;
            }
            self.left -= 1;
            if needs_escape(c) {
                // `\n`, `\t`, `\u{1b}`, `\u{202e}`: visible, and one line.
                for escaped in c.escape_debug() {
                    self.out.write_char(escaped)?;
                }
            } else {
                self.out.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// Controls (C0, DEL, C1), line and paragraph separators, and the invisible
/// formatting characters Rust's `escape_debug` does not print as they are
/// (bidi overrides and isolates, zero-width characters). Quotes and
/// backslashes stay as they are: they cannot end a line.
fn needs_escape(c: char) -> bool {
    !matches!(c, '\\' | '"' | '\'') && c.escape_debug().nth(1).is_some()
}

/// The log's writer: each event is one line, whatever a value in it held
/// (a backstop for lines this crate does not format, such as its
/// dependencies'): a newline or carriage return before the event's final
/// newline is written as `\n` or `\r`. The formatter writes each event with
/// one `write_all`, which is what makes an event's end known.
///
/// `plain` (the formatter writes no colours, so no escape sequence in a line
/// is its own) also shows every other control a terminal would act on, and
/// every bidi or zero-width character, as `⟨U+XXXX⟩` (core's rule for
/// printed agent text).
#[derive(Debug, Clone, Copy)]
pub struct OneLinePerEvent<M> {
    /// Makes the underlying writer.
    pub make: M,
    /// No colours: every control is shown, not sent.
    pub plain: bool,
}

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for OneLinePerEvent<M>
{
    type Writer = OneLine<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        OneLine {
            out: self.make.make_writer(),
            plain: self.plain,
        }
    }
}

/// See [`OneLinePerEvent`].
#[derive(Debug)]
pub struct OneLine<W> {
    /// Where lines go.
    pub out: W,
    /// See [`OneLinePerEvent::plain`].
    pub plain: bool,
}

impl<W: std::io::Write> std::io::Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        use ask_user_core::display::{is_spoofing, is_terminal_control};
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (buf, &b""[..]),
        };
        let breaks = body.iter().any(|b| matches!(b, b'\n' | b'\r'));
        let text = self.plain.then(|| String::from_utf8_lossy(body));
        let hidden = |c: char| is_spoofing(c) || is_terminal_control(c);
        if !breaks && !text.as_deref().is_some_and(|t| t.contains(hidden)) {
            return self.out.write_all(buf);
        }
        let mut line = Vec::with_capacity(buf.len() + 16);
        for &byte in body {
            match byte {
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                _ => line.push(byte),
            }
        }
        if self.plain {
            let shown =
                ask_user_core::display::neutralise_for_terminal(&String::from_utf8_lossy(&line))
                    .into_owned();
            line = shown.into_bytes();
        }
        line.extend_from_slice(end);
        self.out.write_all(&line)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_written_as_one_line_whatever_it_holds() {
        use std::io::Write as _;
        let mut out = OneLine {
            out: Vec::new(),
            plain: false,
        };
        out.write_all(b"INFO a\nWARN forged\r\n").unwrap();
        out.write_all(b"INFO plain\n").unwrap();
        out.write_all(b"\x1b[2mINFO\x1b[0m coloured\n").unwrap();
        assert_eq!(
            String::from_utf8(out.out).unwrap(),
            "INFO a\\nWARN forged\\r\nINFO plain\n\x1b[2mINFO\x1b[0m coloured\n"
        );
    }

    #[test]
    fn without_colours_no_control_of_a_line_reaches_the_terminal() {
        use std::io::Write as _;
        let mut out = OneLine {
            out: Vec::new(),
            plain: true,
        };
        out.write_all(
            "WARN rmcp: \x1b]52;c;aGk=\x07 \u{9b}2J \u{202e}gpj.exe\nWARN forged\n".as_bytes(),
        )
        .unwrap();
        out.write_all(b"INFO plain\n").unwrap();
        assert_eq!(
            String::from_utf8(out.out).unwrap(),
            "WARN rmcp: ⟨U+001B⟩]52;c;aGk=⟨U+0007⟩ ⟨U+009B⟩2J ⟨U+202E⟩gpj.exe\\nWARN forged\nINFO plain\n"
        );
    }

    #[test]
    fn a_value_cannot_end_the_line_or_reach_the_terminal() {
        let forged = "claude\n2099-01-01T00:00:00Z  WARN ask_user_host: token=leaked\r\x1b[2J\u{202e}\u{200b}\u{2028}";
        let shown = logged(forged).to_string();
        assert_eq!(
            shown,
            r"claude\n2099-01-01T00:00:00Z  WARN ask_user_host: token=leaked\r\u{1b}[2J\u{202e}\u{200b}\u{2028}"
        );
        assert!(!shown.chars().any(char::is_control), "{shown}");
        // Ordinary text, quotes, backslashes and non-Latin scripts are kept.
        let plain = r#"C:\Users\p "ask" 'it' 日本語 é"#;
        assert_eq!(logged(plain).to_string(), plain);
    }

    #[test]
    fn a_long_value_is_cut_and_says_how_long_it_was() {
        let long = "x".repeat(100_000);
        let shown = logged(&long).to_string();
        assert_eq!(shown, format!("{}… (100000 characters)", "x".repeat(200)));
        assert_eq!(
            logged_at_most("abcdef", 3).to_string(),
            "abc… (6 characters)"
        );
        assert_eq!(logged_at_most("abc", 3).to_string(), "abc");
        // Escapes count as the one character they stand for.
        assert_eq!(
            logged_at_most("\n\n\n\n", 2).to_string(),
            r"\n\n… (4 characters)"
        );
    }
}
