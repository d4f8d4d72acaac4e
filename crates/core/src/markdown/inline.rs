//! Inlines: one left-to-right scan into tokens, CommonMark's delimiter
//! algorithm for emphasis and links (its `openers_bottom` keeps it linear),
//! then one pass that builds the tree from the tokens.

use super::{MAX_INLINE_NESTING, MdNode, push_text, safe_url, splice};

/// Bytes scanned for a link's `(destination "title")` or an autolink.
const MAX_DESTINATION: usize = 2048;
/// The longest backtick run that opens a code span.
const MAX_CODE_TICKS: usize = 32;
/// How deep parentheses nest in a bare link destination.
const MAX_PARENS: usize = 32;

enum Tok {
    Text(String),
    Node(MdNode),
    /// A delimiter run: `runs[i]`.
    Run(usize),
    /// A `[` or `![` that did not start a link: literal.
    Bracket {
        image: bool,
    },
    /// Where a link or image starts.
    LinkStart,
    /// Its `](destination)`.
    LinkEnd {
        image: bool,
        href: String,
    },
}

/// A run of `*`, `_` or `~`, and what it opened and closed.
struct Run {
    ch: u8,
    len: usize,
    left: usize,
    can_open: bool,
    can_close: bool,
    prev: Option<usize>,
    next: Option<usize>,
    /// Tags this run opens, innermost first.
    opens: Vec<&'static str>,
    /// Tags this run closes, innermost first.
    closes: Vec<&'static str>,
}

struct Bracket {
    tok: usize,
    image: bool,
    /// `runs.len()` when it opened: the runs inside it start here.
    runs_bottom: usize,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    toks: Vec<Tok>,
    buf: String,
    runs: Vec<Run>,
    /// The last run still in the delimiter list.
    last_run: Option<usize>,
    brackets: Vec<Bracket>,
    /// `[` brackets below this index may not start a link (a link holds no link).
    link_floor: usize,
    /// Backtick-run lengths known to have no closing run further on.
    no_code_close: [bool; MAX_CODE_TICKS + 1],
    work: &'a mut u64,
}

/// Parses one block's inline text.
pub(super) fn parse(text: &str, work: &mut u64) -> Vec<MdNode> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        toks: Vec::new(),
        buf: String::new(),
        runs: Vec::new(),
        last_run: None,
        brackets: Vec::new(),
        link_floor: 0,
        no_code_close: [false; MAX_CODE_TICKS + 1],
        work,
    };
    let mut i = 0;
    while i < parser.bytes.len() {
        *parser.work += 1;
        i = match parser.bytes[i] {
            b'\\' => parser.backslash(i),
            b'`' => parser.code_span(i),
            b'*' | b'_' | b'~' => parser.delimiter_run(i),
            b'!' if parser.bytes.get(i + 1) == Some(&b'[') => parser.open_bracket(i, true),
            b'[' => parser.open_bracket(i, false),
            b']' => parser.close_bracket(i),
            b'<' => parser.angle(i),
            b'&' => parser.entity(i),
            b'\n' => parser.line_break(i),
            _ => parser.plain(i),
        };
    }
    parser.flush();
    parser.process_emphasis(0);
    parser.build()
}

fn is_special(byte: u8) -> bool {
    matches!(
        byte,
        b'\\' | b'`' | b'*' | b'_' | b'~' | b'!' | b'[' | b']' | b'<' | b'&' | b'\n'
    )
}

fn is_space(c: Option<char>) -> bool {
    c.is_none_or(char::is_whitespace)
}

fn is_punct(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_punctuation())
}

fn link(href: String, children: Vec<MdNode>) -> MdNode {
    MdNode::Element {
        tag: "a",
        attrs: vec![
            ("href", href),
            ("rel", "noopener noreferrer nofollow".to_owned()),
            ("target", "_blank".to_owned()),
        ],
        children,
    }
}

fn text_of(nodes: &[MdNode], out: &mut String) {
    for node in nodes {
        match node {
            MdNode::Text(text) => out.push_str(text),
            MdNode::Element { children, .. } => text_of(children, out),
        }
    }
}

impl Parser<'_> {
    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let text = std::mem::take(&mut self.buf);
            self.toks.push(Tok::Text(text));
        }
    }

    fn push(&mut self, tok: Tok) {
        self.flush();
        self.toks.push(tok);
    }

    fn run_len(&self, i: usize, ch: u8) -> usize {
        self.bytes[i..].iter().take_while(|&&b| b == ch).count()
    }

    fn plain(&mut self, i: usize) -> usize {
        let mut j = i + 1;
        while j < self.bytes.len() && !is_special(self.bytes[j]) {
            j += 1;
        }
        *self.work += (j - i) as u64;
        self.buf.push_str(&self.text[i..j]);
        j
    }

    fn backslash(&mut self, i: usize) -> usize {
        match self.bytes.get(i + 1).copied() {
            Some(b'\n') => {
                self.push(Tok::Node(super::element("br", Vec::new())));
                i + 2
            }
            Some(c) if c.is_ascii_punctuation() => {
                self.buf.push(c as char);
                i + 2
            }
            _ => {
                self.buf.push('\\');
                i + 1
            }
        }
    }

    fn line_break(&mut self, i: usize) -> usize {
        let kept = self.buf.trim_end_matches(' ').len();
        let spaces = self.buf.len() - kept;
        self.buf.truncate(kept);
        if spaces >= 2 {
            self.push(Tok::Node(super::element("br", Vec::new())));
        } else {
            self.buf.push('\n');
        }
        i + 1
    }

    fn code_span(&mut self, i: usize) -> usize {
        let ticks = self.run_len(i, b'`');
        let literal = |parser: &mut Self| {
            parser.buf.push_str(&parser.text[i..i + ticks]);
            i + ticks
        };
        if ticks > MAX_CODE_TICKS || self.no_code_close[ticks] {
            return literal(self);
        }
        let mut j = i + ticks;
        while j < self.bytes.len() {
            *self.work += 1;
            if self.bytes[j] != b'`' {
                j += 1;
                continue;
            }
            let run = self.run_len(j, b'`');
            *self.work += run as u64;
            if run == ticks {
                let mut code = self.text[i + ticks..j].replace('\n', " ");
                if code.len() >= 2
                    && code.starts_with(' ')
                    && code.ends_with(' ')
                    && code.bytes().any(|b| b != b' ')
                {
                    code = code[1..code.len() - 1].to_owned();
                }
                let mut children = Vec::new();
                push_text(&mut children, &code);
                self.push(Tok::Node(super::element("code", children)));
                return j + run;
            }
            j += run;
        }
        // Nothing closes a run of this length from here on: remember it, so a
        // line of unmatched backticks costs one scan, not one per backtick run.
        self.no_code_close[ticks] = true;
        literal(self)
    }

    fn delimiter_run(&mut self, i: usize) -> usize {
        let ch = self.bytes[i];
        let len = self.run_len(i, ch);
        let before = self.text[..i].chars().next_back();
        let after = self.text[i + len..].chars().next();
        let left_flanking =
            !is_space(after) && (!is_punct(after) || is_space(before) || is_punct(before));
        let right_flanking =
            !is_space(before) && (!is_punct(before) || is_space(after) || is_punct(after));
        let (can_open, can_close) = if ch == b'_' {
            (
                left_flanking && (!right_flanking || is_punct(before)),
                right_flanking && (!left_flanking || is_punct(after)),
            )
        } else {
            (left_flanking, right_flanking)
        };
        if (!can_open && !can_close) || (ch == b'~' && len > 2) {
            self.buf.push_str(&self.text[i..i + len]);
            return i + len;
        }
        let index = self.runs.len();
        self.runs.push(Run {
            ch,
            len,
            left: len,
            can_open,
            can_close,
            prev: self.last_run,
            next: None,
            opens: Vec::new(),
            closes: Vec::new(),
        });
        if let Some(last) = self.last_run {
            self.runs[last].next = Some(index);
        }
        self.last_run = Some(index);
        self.push(Tok::Run(index));
        i + len
    }

    fn open_bracket(&mut self, i: usize, image: bool) -> usize {
        self.push(Tok::Bracket { image });
        self.brackets.push(Bracket {
            tok: self.toks.len() - 1,
            image,
            runs_bottom: self.runs.len(),
        });
        i + if image { 2 } else { 1 }
    }

    fn pop_bracket(&mut self) -> Option<Bracket> {
        let bracket = self.brackets.pop();
        self.link_floor = self.link_floor.min(self.brackets.len());
        bracket
    }

    fn close_bracket(&mut self, i: usize) -> usize {
        let Some(bracket) = self.brackets.last() else {
            self.buf.push(']');
            return i + 1;
        };
        let active = bracket.image || self.brackets.len() > self.link_floor;
        let tail = if active { self.link_tail(i + 1) } else { None };
        let Some((href, end)) = tail else {
            self.pop_bracket();
            self.buf.push(']');
            return i + 1;
        };
        let Some(bracket) = self.pop_bracket() else {
            return end;
        };
        self.process_emphasis(bracket.runs_bottom);
        self.toks[bracket.tok] = Tok::LinkStart;
        self.push(Tok::LinkEnd {
            image: bracket.image,
            href,
        });
        if !bracket.image {
            self.link_floor = self.brackets.len();
        }
        end
    }

    /// `(destination "title")` at `i`: the destination and where it ends.
    fn link_tail(&mut self, i: usize) -> Option<(String, usize)> {
        let bytes = self.bytes;
        if bytes.get(i) != Some(&b'(') {
            return None;
        }
        let limit = bytes.len().min(i + MAX_DESTINATION);
        let skip_space = |mut j: usize| {
            while j < limit && matches!(bytes[j], b' ' | b'\t' | b'\n') {
                j += 1;
            }
            j
        };
        let mut j = skip_space(i + 1);
        let start = j;
        let destination = if bytes.get(j) == Some(&b'<') {
            j += 1;
            while j < limit && !matches!(bytes[j], b'>' | b'<' | b'\n') {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            if bytes.get(j) != Some(&b'>') || j >= limit {
                return None;
            }
            j += 1;
            &self.text[start + 1..j - 1]
        } else {
            let mut depth = 0usize;
            while j < limit && bytes[j] > b' ' {
                match bytes[j] {
                    b'\\' if j + 1 < limit && bytes[j + 1].is_ascii_punctuation() => j += 1,
                    b'(' => {
                        depth += 1;
                        if depth > MAX_PARENS {
                            return None;
                        }
                    }
                    b')' if depth == 0 => break,
                    b')' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            if depth != 0 || j >= limit {
                return None;
            }
            &self.text[start..j]
        };
        let after_destination = j;
        j = skip_space(j);
        if j > after_destination && matches!(bytes.get(j), Some(b'"' | b'\'' | b'(')) {
            let close = if bytes[j] == b'(' { b')' } else { bytes[j] };
            j += 1;
            while j < limit && bytes[j] != close {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            if j >= limit {
                return None;
            }
            j = skip_space(j + 1);
        }
        *self.work += (j - i) as u64;
        if bytes.get(j) != Some(&b')') || j >= limit {
            return None;
        }
        Some((unescape(destination), j + 1))
    }

    /// `<https://…>` autolinks; other tags stay literal text, as written.
    fn angle(&mut self, i: usize) -> usize {
        let bytes = self.bytes;
        let limit = bytes.len().min(i + MAX_DESTINATION);
        let mut j = i + 1;
        while j < limit && bytes[j] > b' ' && bytes[j] != b'<' && bytes[j] != b'>' {
            j += 1;
        }
        *self.work += (j - i) as u64;
        if bytes.get(j) == Some(&b'>') {
            let url = &self.text[i + 1..j];
            if let Some(href) = safe_url(url) {
                let node = link(href, vec![MdNode::Text(url.to_owned())]);
                self.push(Tok::Node(node));
                return j + 1;
            }
        }
        if bytes
            .get(i + 1)
            .is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?'))
        {
            let mut k = i + 1;
            while k < bytes.len() && bytes[k] != b'>' && bytes[k] != b'<' {
                k += 1;
            }
            *self.work += (k - i) as u64;
            if bytes.get(k) == Some(&b'>') {
                self.buf.push_str(&self.text[i..=k]);
                return k + 1;
            }
        }
        self.buf.push('<');
        i + 1
    }

    fn entity(&mut self, i: usize) -> usize {
        match decode_entity(&self.text[i..]) {
            Some((c, len)) => {
                self.buf.push(c);
                i + len
            }
            None => {
                self.buf.push('&');
                i + 1
            }
        }
    }

    fn unlink(&mut self, index: usize) {
        let (prev, next) = (self.runs[index].prev, self.runs[index].next);
        if let Some(prev) = prev {
            self.runs[prev].next = next;
        }
        match next {
            Some(next) => self.runs[next].prev = prev,
            None => self.last_run = prev,
        }
        self.runs[index].prev = None;
        self.runs[index].next = None;
    }

    /// CommonMark's "process emphasis" over the runs from `bottom` on, which
    /// then leave the delimiter list.
    fn process_emphasis(&mut self, bottom: usize) {
        // Per closer kind: runs below this were searched in vain already.
        let mut floor = [[[bottom; 3]; 2]; 3];
        let mut current = None;
        let mut run = self.last_run;
        while let Some(index) = run.filter(|&r| r >= bottom) {
            *self.work += 1;
            current = Some(index);
            run = self.runs[index].prev;
        }
        while let Some(closer_index) = current {
            *self.work += 1;
            let closer = &self.runs[closer_index];
            if !closer.can_close {
                current = closer.next;
                continue;
            }
            let kind = match closer.ch {
                b'*' => 0,
                b'_' => 1,
                _ => 2,
            };
            let class = &mut floor[kind][usize::from(closer.can_open)][closer.len % 3];
            let mut candidate = closer.prev;
            let mut opener = None;
            while let Some(index) = candidate.filter(|&o| o >= *class) {
                *self.work += 1;
                let run = &self.runs[index];
                if run.ch == closer.ch && run.can_open && pairs(run, closer) {
                    opener = Some(index);
                    break;
                }
                candidate = run.prev;
            }
            let Some(opener_index) = opener else {
                *class = closer_index;
                let next = closer.next;
                if !closer.can_open {
                    self.unlink(closer_index);
                }
                current = next;
                continue;
            };
            let open = &self.runs[opener_index];
            let (n, tag) = match closer.ch {
                b'~' => (closer.left, "del"),
                _ if open.left >= 2 && closer.left >= 2 => (2, "strong"),
                _ => (1, "em"),
            };
            self.runs[opener_index].left -= n;
            self.runs[opener_index].opens.push(tag);
            self.runs[closer_index].left -= n;
            self.runs[closer_index].closes.push(tag);
            // The runs between them can match nothing any more.
            self.runs[opener_index].next = Some(closer_index);
            self.runs[closer_index].prev = Some(opener_index);
            if self.runs[opener_index].left == 0 {
                self.unlink(opener_index);
            }
            if self.runs[closer_index].left == 0 {
                current = self.runs[closer_index].next;
                self.unlink(closer_index);
            }
        }
        while let Some(last) = self.last_run.filter(|&r| r >= bottom) {
            *self.work += 1;
            self.unlink(last);
        }
    }

    fn build(self) -> Vec<MdNode> {
        enum Kind {
            Root,
            Element(&'static str),
            /// Past [`MAX_INLINE_NESTING`]: the delimiters stay as text.
            Literal(u8, usize),
            Link,
        }
        struct Frame {
            kind: Kind,
            children: Vec<MdNode>,
        }
        fn top(stack: &mut [Frame]) -> &mut Vec<MdNode> {
            &mut stack.last_mut().expect("the root frame stays").children
        }
        fn close(stack: &mut Vec<Frame>) -> Option<Frame> {
            if stack.len() < 2 {
                return None;
            }
            let frame = stack.pop()?;
            let parent = top(stack);
            match frame.kind {
                Kind::Element(tag) => parent.push(super::element(tag, frame.children)),
                Kind::Literal(ch, n) => {
                    splice(parent, frame.children);
                    push_text(parent, &repeat(ch, n));
                }
                Kind::Link => return Some(frame),
                Kind::Root => splice(parent, frame.children),
            }
            None
        }
        let mut stack = vec![Frame {
            kind: Kind::Root,
            children: Vec::new(),
        }];
        for tok in self.toks {
            match tok {
                Tok::Text(text) => push_text(top(&mut stack), &text),
                Tok::Node(node) => top(&mut stack).push(node),
                Tok::Bracket { image } => {
                    push_text(top(&mut stack), if image { "![" } else { "[" })
                }
                Tok::Run(index) => {
                    let run = &self.runs[index];
                    for _ in &run.closes {
                        if let Some(link) = close(&mut stack) {
                            splice(top(&mut stack), link.children);
                        }
                    }
                    push_text(top(&mut stack), &repeat(run.ch, run.left));
                    for tag in run.opens.iter().rev() {
                        let kind = if stack.len() > MAX_INLINE_NESTING {
                            let n = if *tag == "em" { 1 } else { 2 };
                            let n = if *tag == "del" { run.len } else { n };
                            push_text(top(&mut stack), &repeat(run.ch, n));
                            Kind::Literal(run.ch, n)
                        } else {
                            Kind::Element(tag)
                        };
                        stack.push(Frame {
                            kind,
                            children: Vec::new(),
                        });
                    }
                }
                Tok::LinkStart => stack.push(Frame {
                    kind: Kind::Link,
                    children: Vec::new(),
                }),
                Tok::LinkEnd { image, href } => {
                    let Some(frame) = close(&mut stack) else {
                        continue;
                    };
                    let deep = stack.len() > MAX_INLINE_NESTING;
                    let parent = top(&mut stack);
                    // What is checked is what is emitted (see `safe_url`).
                    let safe = safe_url(&href).filter(|_| !deep);
                    if image {
                        let mut alt = String::new();
                        text_of(&frame.children, &mut alt);
                        match safe {
                            None => push_text(parent, &alt),
                            Some(target) => {
                                let label = if alt.is_empty() { href } else { alt };
                                parent.push(link(target, vec![MdNode::Text(label)]));
                            }
                        }
                    } else {
                        match safe {
                            None => splice(parent, frame.children),
                            Some(target) if frame.children.is_empty() => {
                                parent.push(link(target, vec![MdNode::Text(href)]));
                            }
                            Some(target) => parent.push(link(target, frame.children)),
                        }
                    }
                }
            }
        }
        while stack.len() > 1 {
            if let Some(link) = close(&mut stack) {
                splice(top(&mut stack), link.children);
            }
        }
        stack.pop().map(|root| root.children).unwrap_or_default()
    }
}

/// Whether an opener and a closer of the same character may pair (CommonMark's
/// rule of three; `~~` pairs only with a run of its own length).
fn pairs(opener: &Run, closer: &Run) -> bool {
    if closer.ch == b'~' {
        return opener.left == closer.left;
    }
    let sum = opener.len + closer.len;
    !((opener.can_close || closer.can_open)
        && sum.is_multiple_of(3)
        && !(opener.len.is_multiple_of(3) && closer.len.is_multiple_of(3)))
}

fn repeat(ch: u8, n: usize) -> String {
    std::iter::repeat_n(ch as char, n).collect()
}

/// Backslash escapes and entities in a link destination.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation) => {
                out.push(bytes[i + 1] as char);
                i += 2;
            }
            b'&' => match decode_entity(&text[i..]) {
                Some((c, len)) => {
                    out.push(c);
                    i += len;
                }
                None => {
                    out.push('&');
                    i += 1;
                }
            },
            _ => {
                let c = text[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;`, `&#NN;` and `&#xHH;`
/// at the start of `text`: the character and the entity's length.
fn decode_entity(text: &str) -> Option<(char, usize)> {
    let end = text.as_bytes().iter().take(12).position(|&b| b == b';')?;
    let name = &text[1..end];
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        _ => {
            let number = name.strip_prefix('#')?;
            let (digits, radix) = match number.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (number, 10),
            };
            if digits.is_empty()
                || digits.len() > 7
                || !digits.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return None;
            }
            let value = u32::from_str_radix(digits, radix).ok()?;
            char::from_u32(value)
                .filter(|&c| c != '\0')
                .unwrap_or('\u{fffd}')
        }
    };
    Some((c, end + 1))
}
