//! Blocks: the document is split into lines, and each container (a quote, a
//! list item) is parsed again from its own lines with its markers stripped, so
//! a line is visited once per nesting level (at most [`MAX_NESTING`]).

use super::{MAX_NESTING, MdNode, element, inline, push_text, splice};
use std::borrow::Cow;

/// Parses a whole document.
pub(super) fn parse_document(markdown: &str, work: &mut u64) -> Vec<MdNode> {
    let owned: Vec<Cow<'_, str>> = markdown.lines().map(expand_tabs).collect();
    let lines: Vec<&str> = owned.iter().map(|line| line.as_ref()).collect();
    blocks(&lines, 0, work).0
}

/// Tabs in a line's leading markers and indentation become spaces (to the next
/// multiple of four), so indentation is counted in one unit.
fn expand_tabs(line: &str) -> Cow<'_, str> {
    let prefix = line
        .bytes()
        .position(|b| {
            !matches!(
                b,
                b' ' | b'\t' | b'>' | b'-' | b'*' | b'+' | b'.' | b')' | b'0'..=b'9'
            )
        })
        .unwrap_or(line.len());
    if !line.as_bytes()[..prefix].contains(&b'\t') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line[..prefix].chars() {
        if c == '\t' {
            out.push(' ');
            while !out.len().is_multiple_of(4) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out.push_str(&line[prefix..]);
    Cow::Owned(out)
}

fn is_blank(line: &str) -> bool {
    line.bytes().all(|b| b == b' ' || b == b'\t')
}

fn indent(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// `line` less up to `n` leading spaces.
fn strip_indent(line: &str, n: usize) -> &str {
    let cut = indent(line).min(n);
    &line[cut..]
}

/// The line without its up-to-three spaces of indentation, when it has at
/// most three (a block marker may not be indented more).
fn marker_start(line: &str) -> Option<&str> {
    let n = indent(line);
    (n <= 3).then(|| &line[n..])
}

/// `#`..`######` headings: the level and the text, closing `#`s removed.
fn atx(line: &str) -> Option<(usize, &str)> {
    let rest = marker_start(line)?;
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let content = after.trim_matches([' ', '\t']);
    let unclosed = content.trim_end_matches('#');
    let content = if unclosed.is_empty() {
        unclosed
    } else if unclosed.ends_with([' ', '\t']) {
        unclosed.trim_end_matches([' ', '\t'])
    } else {
        content
    };
    Some((level, content))
}

/// A code fence opening: its character, length, indentation and info string.
fn fence(line: &str) -> Option<(u8, usize, usize, &str)> {
    let rest = marker_start(line)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    let info = rest[len..].trim_matches([' ', '\t']);
    if len < 3 || (ch == b'`' && info.contains('`')) {
        return None;
    }
    Some((ch, len, indent(line), info))
}

fn closes_fence(line: &str, ch: u8, len: usize) -> bool {
    marker_start(line).is_some_and(|rest| {
        let run = rest.bytes().take_while(|&b| b == ch).count();
        run >= len && is_blank(&rest[run..])
    })
}

/// `---`, `***`, `___` (three or more, spaces allowed between).
fn thematic_break(line: &str) -> bool {
    let Some(rest) = marker_start(line) else {
        return false;
    };
    let Some(&ch) = rest.as_bytes().first() else {
        return false;
    };
    matches!(ch, b'-' | b'*' | b'_')
        && rest.bytes().all(|b| b == ch || b == b' ' || b == b'\t')
        && rest.bytes().filter(|&b| b == ch).count() >= 3
}

/// A setext underline: `===` (level 1) or `---` (level 2).
fn setext(line: &str) -> Option<usize> {
    let rest = marker_start(line)?.trim_end_matches([' ', '\t']);
    let ch = *rest.as_bytes().first()?;
    let level = match ch {
        b'=' => 1,
        b'-' => 2,
        _ => return None,
    };
    rest.bytes().all(|b| b == ch).then_some(level)
}

/// A `>` line's content: after the `>` and one optional space.
fn quoted(line: &str) -> Option<&str> {
    let rest = marker_start(line)?.strip_prefix('>')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// A list item's marker.
#[derive(Debug, Clone, Copy)]
struct Marker<'a> {
    /// `-`, `*` or `+` for a bullet list; `.` or `)` for an ordered one.
    kind: u8,
    /// An ordered item's number, as written.
    number: Option<&'a str>,
    /// The column where the item's content starts.
    width: usize,
    /// The first line's content.
    content: &'a str,
    /// Nothing follows the marker on its line.
    empty: bool,
}

fn list_marker(line: &str) -> Option<Marker<'_>> {
    let lead = indent(line);
    let rest = marker_start(line)?;
    let bytes = rest.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let (kind, number, marker_len) = match bytes.first()? {
        b'-' | b'*' | b'+' => (bytes[0], None, 1),
        b'0'..=b'9' if digits <= 9 && matches!(bytes.get(digits), Some(b'.' | b')')) => {
            (bytes[digits], Some(&rest[..digits]), digits + 1)
        }
        _ => return None,
    };
    let after = &rest[marker_len..];
    if is_blank(after) {
        return Some(Marker {
            kind,
            number,
            width: lead + marker_len + 1,
            content: "",
            empty: true,
        });
    }
    let spaces = indent(after);
    if spaces == 0 {
        return None;
    }
    // Five or more spaces: the content is indented code, one space is the gap.
    let gap = if spaces >= 5 { 1 } else { spaces };
    Some(Marker {
        kind,
        number,
        width: lead + marker_len + gap,
        content: &after[gap..],
        empty: false,
    })
}

/// Whether `line` starts a block that ends a paragraph (so it cannot be a
/// paragraph's next line, nor a lazy continuation inside a container).
fn interrupts_paragraph(line: &str, depth: usize) -> bool {
    if marker_start(line).is_none() {
        return false;
    }
    atx(line).is_some()
        || fence(line).is_some()
        || thematic_break(line)
        || (depth < MAX_NESTING && quoted(line).is_some())
        || (depth < MAX_NESTING
            && list_marker(line).is_some_and(|m| {
                !m.empty && m.number.is_none_or(|n| n.trim_start_matches('0') == "1")
            }))
}

/// Whether `line` starts a block of its own: then it cannot be a lazy line of
/// a paragraph inside a container (any list marker counts here, unlike for
/// [`interrupts_paragraph`]).
fn starts_block(line: &str, depth: usize) -> bool {
    interrupts_paragraph(line, depth) || (depth < MAX_NESTING && list_marker(line).is_some())
}

/// Tracks whether the lines given so far end in an open paragraph, which a
/// lazy line (one without the container's marker) continues.
#[derive(Default)]
struct LazyState {
    open_fence: Option<(u8, usize)>,
    paragraph: bool,
}

impl LazyState {
    fn push(&mut self, line: &str) {
        let mut inner = line;
        for _ in 0..MAX_NESTING {
            match (quoted(inner), list_marker(inner)) {
                (Some(rest), _) => inner = rest,
                (None, Some(marker)) if !marker.empty && !thematic_break(inner) => {
                    inner = marker.content
                }
                _ => break,
            }
        }
        if let Some((ch, len)) = self.open_fence {
            if closes_fence(inner, ch, len) {
                self.open_fence = None;
            }
            self.paragraph = false;
        } else if let Some((ch, len, _, _)) = fence(inner) {
            self.open_fence = Some((ch, len));
            self.paragraph = false;
        } else {
            self.paragraph = !is_blank(inner)
                && (self.paragraph || indent(inner) < 4)
                && atx(inner).is_none()
                && !thematic_break(inner);
        }
    }

    fn continues(&self, line: &str, depth: usize) -> bool {
        self.paragraph && !is_blank(line) && !starts_block(line, depth)
    }
}

/// Parses `lines` into blocks; also says whether a blank line separated two
/// of them (what makes a list item loose).
fn blocks(lines: &[&str], depth: usize, work: &mut u64) -> (Vec<MdNode>, bool) {
    let mut out = Vec::new();
    let mut loose = false;
    let mut after_blank = false;
    let mut i = 0;
    while i < lines.len() {
        *work += 1;
        let line = lines[i];
        if is_blank(line) {
            after_blank = true;
            i += 1;
            continue;
        }
        loose |= after_blank && !out.is_empty();
        after_blank = false;
        i = if indent(line) >= 4 {
            indented_code(lines, i, &mut out, work)
        } else if let Some(open) = fence(line) {
            fenced_code(lines, i, open, &mut out, work)
        } else if let Some((level, content)) = atx(line) {
            out.push(heading(level, content, work));
            i + 1
        } else if thematic_break(line) {
            out.push(element("hr", Vec::new()));
            i + 1
        } else if depth < MAX_NESTING && quoted(line).is_some() {
            blockquote(lines, i, depth, &mut out, work)
        } else if let Some(marker) = list_marker(line).filter(|_| depth < MAX_NESTING) {
            list(lines, i, marker, depth, &mut out, work)
        } else if let Some(columns) = table_head(lines, i) {
            table(lines, i, columns, depth, &mut out, work)
        } else {
            paragraph(lines, i, depth, &mut out, work)
        };
    }
    (out, loose)
}

fn heading(level: usize, content: &str, work: &mut u64) -> MdNode {
    let tag = match level {
        1 => "h3",
        2 => "h4",
        3 => "h5",
        _ => "h6",
    };
    element(tag, inline::parse(content, work))
}

fn code_block(attrs: Vec<(&'static str, String)>, text: String) -> MdNode {
    let mut code = Vec::new();
    push_text(&mut code, &text);
    MdNode::Element {
        tag: "pre",
        attrs,
        children: vec![element("code", code)],
    }
}

fn indented_code(lines: &[&str], start: usize, out: &mut Vec<MdNode>, work: &mut u64) -> usize {
    let mut end = start;
    let mut last = start;
    while end < lines.len() && (is_blank(lines[end]) || indent(lines[end]) >= 4) {
        *work += 1;
        if !is_blank(lines[end]) {
            last = end;
        }
        end += 1;
    }
    let mut text = String::new();
    for line in &lines[start..=last] {
        text.push_str(strip_indent(line, 4));
        text.push('\n');
    }
    out.push(code_block(Vec::new(), text));
    last + 1
}

fn fenced_code(
    lines: &[&str],
    start: usize,
    (ch, len, fence_indent, info): (u8, usize, usize, &str),
    out: &mut Vec<MdNode>,
    work: &mut u64,
) -> usize {
    let mut text = String::new();
    let mut i = start + 1;
    while i < lines.len() {
        *work += 1;
        if closes_fence(lines[i], ch, len) {
            i += 1;
            break;
        }
        text.push_str(strip_indent(lines[i], fence_indent));
        text.push('\n');
        i += 1;
    }
    let attrs = match info.split_whitespace().next() {
        Some(lang) => vec![("data-lang", lang.to_owned())],
        None => Vec::new(),
    };
    out.push(code_block(attrs, text));
    i
}

fn blockquote(
    lines: &[&str],
    start: usize,
    depth: usize,
    out: &mut Vec<MdNode>,
    work: &mut u64,
) -> usize {
    let mut inner = Vec::new();
    let mut lazy = LazyState::default();
    let mut i = start;
    while i < lines.len() {
        *work += 1;
        let line = match quoted(lines[i]) {
            Some(rest) => rest,
            None if lazy.continues(lines[i], depth) => lines[i],
            None => break,
        };
        lazy.push(line);
        inner.push(line);
        i += 1;
    }
    out.push(element("blockquote", blocks(&inner, depth + 1, work).0));
    i
}

fn same_list(a: &Marker<'_>, b: &Marker<'_>) -> bool {
    a.kind == b.kind && a.number.is_some() == b.number.is_some()
}

fn list(
    lines: &[&str],
    start: usize,
    first: Marker<'_>,
    depth: usize,
    out: &mut Vec<MdNode>,
    work: &mut u64,
) -> usize {
    let mut items = Vec::new();
    let mut loose = false;
    let mut i = start;
    let mut marker = first;
    loop {
        let mut content = vec![marker.content];
        let mut lazy = LazyState::default();
        lazy.push(marker.content);
        i += 1;
        while i < lines.len() {
            *work += 1;
            let line = lines[i];
            if is_blank(line) {
                // An item that starts empty holds at most one blank line.
                if marker.empty && content.len() == 1 {
                    break;
                }
                content.push("");
                lazy = LazyState::default();
            } else if indent(line) >= marker.width {
                let inner = &line[marker.width..];
                lazy.push(inner);
                content.push(inner);
            } else if lazy.continues(line, depth) {
                lazy.push(line);
                content.push(line);
            } else {
                break;
            }
            i += 1;
        }
        // Trailing blank lines belong to whatever follows the item.
        let trailing = content[1..]
            .iter()
            .rev()
            .take_while(|l| is_blank(l))
            .count();
        content.truncate(content.len() - trailing);
        i -= trailing;
        items.push(list_item(&content, depth, &mut loose, work));
        let mut next = i;
        while next < lines.len() && is_blank(lines[next]) {
            *work += 1;
            next += 1;
        }
        match lines.get(next).and_then(|l| list_marker(l)) {
            Some(marker_next)
                if same_list(&first, &marker_next) && !thematic_break(lines[next]) =>
            {
                loose |= next > i;
                i = next;
                marker = marker_next;
            }
            _ => break,
        }
    }
    let items = items
        .into_iter()
        .map(|children| {
            if loose {
                return element("li", children);
            }
            // A tight list shows its paragraphs without `p`.
            let mut flat = Vec::new();
            for child in children {
                match child {
                    MdNode::Element {
                        tag: "p", children, ..
                    } => splice(&mut flat, children),
                    other => flat.push(other),
                }
            }
            element("li", flat)
        })
        .collect();
    let (tag, attrs) = match first.number {
        None => ("ul", Vec::new()),
        Some(number) => {
            let number = number.trim_start_matches('0');
            let attrs = match number {
                "1" => Vec::new(),
                "" => vec![("start", "0".to_owned())],
                n => vec![("start", n.to_owned())],
            };
            ("ol", attrs)
        }
    };
    out.push(MdNode::Element {
        tag,
        attrs,
        children: items,
    });
    i
}

/// One item's blocks, with a task marker (`[ ]`, `[x]`) turned into ☐/☑.
fn list_item(content: &[&str], depth: usize, loose: &mut bool, work: &mut u64) -> Vec<MdNode> {
    let first = content.first().copied().unwrap_or("");
    let task = match first.as_bytes() {
        [b'[', mark @ (b' ' | b'x' | b'X'), b']', rest @ ..]
            if rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t' =>
        {
            Some(*mark != b' ')
        }
        _ => None,
    };
    let mut lines = content.to_vec();
    if task.is_some() {
        lines[0] = first[3..].trim_start_matches([' ', '\t']);
    }
    let (mut children, item_loose) = blocks(&lines, depth + 1, work);
    *loose |= item_loose;
    if let Some(done) = task {
        let mark = if done { "☑ " } else { "☐ " };
        match children.first_mut() {
            Some(MdNode::Element {
                tag: "p",
                children: text,
                ..
            }) => {
                let rest = std::mem::take(text);
                push_text(text, mark);
                splice(text, rest);
            }
            _ => children.insert(0, element("p", vec![MdNode::Text(mark.to_owned())])),
        }
    }
    children
}

/// Splits a table row into its cells' text (`\|` is a literal `|`).
fn cells(line: &str) -> Vec<String> {
    let row = line.trim_matches([' ', '\t']);
    let row = row.strip_prefix('|').unwrap_or(row);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell)),
            c => cell.push(c),
        }
    }
    // A closing `|` ends the last cell rather than starting an empty one.
    if !cell.trim().is_empty() || !row.ends_with('|') || row.ends_with("\\|") {
        cells.push(cell);
    }
    cells.iter().map(|c| c.trim().to_owned()).collect()
}

fn has_pipe(line: &str) -> bool {
    line.contains('|')
}

/// A table starts at `lines[i]` when it has a `|` and the next line is a
/// delimiter row (`|---|:---:|`) with as many cells. Returns the column count.
fn table_head(lines: &[&str], i: usize) -> Option<usize> {
    let (head, delimiter) = (lines[i], *lines.get(i + 1)?);
    if !has_pipe(head) || !has_pipe(delimiter) || marker_start(delimiter).is_none() {
        return None;
    }
    let columns = cells(delimiter);
    let delimiter_ok = !columns.is_empty()
        && columns.iter().all(|c| {
            let dashes = c.trim_start_matches(':').trim_end_matches(':');
            !dashes.is_empty() && dashes.bytes().all(|b| b == b'-')
        });
    (delimiter_ok && cells(head).len() == columns.len()).then_some(columns.len())
}

fn table(
    lines: &[&str],
    start: usize,
    columns: usize,
    depth: usize,
    out: &mut Vec<MdNode>,
    work: &mut u64,
) -> usize {
    let row = |line: &str, tag: &'static str, work: &mut u64| {
        let mut cells = cells(line);
        *work += line.len() as u64;
        // Short rows are padded; cells past the header are kept (no text is lost).
        while cells.len() < columns {
            cells.push(String::new());
        }
        let cells = cells
            .iter()
            .map(|cell| element(tag, inline::parse(cell, work)))
            .collect();
        element("tr", cells)
    };
    let head = element("thead", vec![row(lines[start], "th", work)]);
    let mut body = Vec::new();
    let mut i = start + 2;
    while i < lines.len()
        && !is_blank(lines[i])
        && has_pipe(lines[i])
        && !interrupts_paragraph(lines[i], depth)
    {
        body.push(row(lines[i], "td", work));
        i += 1;
    }
    let mut children = vec![head];
    if !body.is_empty() {
        children.push(element("tbody", body));
    }
    out.push(element("table", children));
    i
}

fn paragraph(
    lines: &[&str],
    start: usize,
    depth: usize,
    out: &mut Vec<MdNode>,
    work: &mut u64,
) -> usize {
    let mut end = start + 1;
    let mut level = None;
    while end < lines.len() {
        *work += 1;
        let line = lines[end];
        if is_blank(line) {
            break;
        }
        if let Some(l) = setext(line) {
            level = Some(l);
            break;
        }
        if interrupts_paragraph(line, depth) || table_head(lines, end).is_some() {
            break;
        }
        end += 1;
    }
    let mut text = String::new();
    for (n, line) in lines[start..end].iter().enumerate() {
        if n > 0 {
            text.push('\n');
        }
        text.push_str(line.trim_start_matches([' ', '\t']));
    }
    let text = text.trim_end_matches([' ', '\t']);
    match level {
        Some(level) => {
            out.push(heading(level, text, work));
            end + 1
        }
        None => {
            out.push(element("p", inline::parse(text, work)));
            end
        }
    }
}
