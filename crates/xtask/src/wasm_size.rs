//! What makes the page's wasm heavy: `cargo bloat` for wasm, std-only. Reads a
//! module that still has its `name` section (`cargo xtask bench` optimises
//! wasm-bindgen's output as Trunk does, `wasm-opt -Oz`, but with `-g` to keep
//! the names), sums the size of each function body by the crate its symbol
//! names, and lists the largest crates and functions.

use std::collections::HashMap;
use std::path::Path;

/// One function body and the symbol it was compiled from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Bytes of its body in the code section.
    pub size: usize,
    /// The (mangled) name from the `name` section, if any.
    pub name: String,
}

/// The sections of a module that matter for its size.
#[derive(Debug, Default)]
pub struct Module {
    /// Function bodies in order.
    pub functions: Vec<Function>,
    /// Bytes of the code section.
    pub code: usize,
    /// Bytes of the data section (strings, tables).
    pub data: usize,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn u32(&mut self) -> Result<u32, String> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = *self.bytes.get(self.at).ok_or("truncated LEB128")?;
            self.at += 1;
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("LEB128 too long".to_owned())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len());
        let slice = &self.bytes[self.at..end.ok_or("truncated section")?];
        self.at += len;
        Ok(slice)
    }

    fn name(&mut self) -> Result<&'a str, String> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).map_err(|_| "a name is not UTF-8".to_owned())
    }
}

/// Parses the sections of a wasm module.
pub fn parse(bytes: &[u8]) -> Result<Module, String> {
    if bytes.get(..4) != Some(b"\0asm") {
        return Err("not a wasm module".to_owned());
    }
    let mut reader = Reader { bytes, at: 8 };
    let mut module = Module::default();
    let mut imported_functions = 0u32;
    let mut names: HashMap<u32, String> = HashMap::new();
    while reader.at < bytes.len() {
        let id = *bytes.get(reader.at).ok_or("truncated")?;
        reader.at += 1;
        let len = reader.u32()? as usize;
        let body = reader.take(len)?;
        let mut section = Reader { bytes: body, at: 0 };
        match id {
            2 => imported_functions = count_function_imports(&mut section)?,
            10 => {
                module.code = len;
                for _ in 0..section.u32()? {
                    let size = section.u32()? as usize;
                    section.take(size)?;
                    module.functions.push(Function {
                        size,
                        name: String::new(),
                    });
                }
            }
            11 => module.data = len,
            0 if section.name()? == "name" => {
                while section.at < body.len() {
                    let kind = *body.get(section.at).ok_or("truncated")?;
                    section.at += 1;
                    let len = section.u32()? as usize;
                    let mut sub = Reader {
                        bytes: section.take(len)?,
                        at: 0,
                    };
                    if kind == 1 {
                        for _ in 0..sub.u32()? {
                            let index = sub.u32()?;
                            names.insert(index, sub.name()?.to_owned());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (i, function) in module.functions.iter_mut().enumerate() {
        let index = imported_functions + i as u32;
        function.name = names.remove(&index).unwrap_or_default();
    }
    Ok(module)
}

fn count_function_imports(section: &mut Reader<'_>) -> Result<u32, String> {
    let mut functions = 0;
    for _ in 0..section.u32()? {
        section.name()?;
        section.name()?;
        let kind = *section.bytes.get(section.at).ok_or("truncated import")?;
        section.at += 1;
        match kind {
            0 => {
                section.u32()?;
                functions += 1;
            }
            1 => {
                section.take(1)?;
                limits(section)?;
            }
            2 => limits(section)?,
            3 => {
                section.take(2)?;
            }
            4 => {
                section.take(1)?;
                section.u32()?;
            }
            other => return Err(format!("unknown import kind {other}")),
        }
    }
    Ok(functions)
}

fn limits(section: &mut Reader<'_>) -> Result<(), String> {
    let flags = section.u32()?;
    section.u32()?;
    if flags & 1 != 0 {
        section.u32()?;
    }
    Ok(())
}

/// A symbol as a path without its hash: legacy mangling (`_ZN4core3fmt5write17h…E`)
/// and names wasm-bindgen already demangled (`core::fmt::write::h…`) both
/// become `core::fmt::write`.
pub fn demangle(symbol: &str) -> String {
    let Some(mut rest) = symbol.strip_prefix("_ZN") else {
        return match symbol.rsplit_once("::h") {
            Some((path, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                path.to_owned()
            }
            _ => symbol.to_owned(),
        };
    };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&n| n > 0) {
        let Ok(len) = rest[..digits].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(digits..digits + len) else {
            break;
        };
        rest = &rest[digits + len..];
        // The trailing `h0123…` hash is not part of the path.
        if !(rest == "E" && part.len() == 17 && part.starts_with('h')) {
            parts.push(unescape(part));
        }
    }
    parts.join("::")
}

fn unescape(part: &str) -> String {
    let mut out = part.replace("..", "::");
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$SP$", "@"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u7e$", "~"),
    ] {
        out = out.replace(from, to);
    }
    out.strip_prefix('_').map(str::to_owned).unwrap_or(out)
}

/// The crate a symbol's code belongs to: the path's first segment, for
/// `<Type as Trait>` the type's crate, or the trait's when the type is generic
/// or a primitive; for v0 symbols (`_R…`) the first crate name in them.
pub fn crate_of(symbol: &str) -> String {
    if symbol.starts_with("_R") {
        return v0_crate(symbol).unwrap_or_else(|| "(other)".to_owned());
    }
    let path = demangle(symbol);
    let path = path.trim_start_matches(['<', '&', '*', ' ']);
    let path = path
        .strip_prefix("mut ")
        .or_else(|| path.strip_prefix("dyn "))
        .unwrap_or(path);
    let first_crate = |text: &str| -> Option<String> {
        let end = text.find("::")?;
        // v0 names keep a crate disambiguator: `dlmalloc[e24a27700634d609]`.
        let head = text[..end].split('[').next().unwrap_or_default();
        (!head.is_empty() && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| head.to_owned())
    };
    if let Some(name) = first_crate(path) {
        return name;
    }
    // `T as tachys::view::Render>` and the like: the trait's crate.
    path.split_once(" as ")
        .and_then(|(_, tr)| first_crate(tr.trim_start_matches(['<', '&', '*', ' '])))
        .unwrap_or_else(|| "(other)".to_owned())
}

fn v0_crate(symbol: &str) -> Option<String> {
    // `C` `s<base62>_` `<len><name>`: the first crate root in the symbol.
    let bytes = symbol.as_bytes();
    let mut i = 2;
    while i + 2 < bytes.len() {
        if bytes[i] == b'C' && bytes[i + 1] == b's' {
            let mut j = i + 2;
            while j < bytes.len() && bytes[j].is_ascii_alphanumeric() {
                j += 1;
            }
            if bytes.get(j) == Some(&b'_') {
                let digits_end = (j + 1..bytes.len())
                    .find(|&k| !bytes[k].is_ascii_digit())
                    .unwrap_or(bytes.len());
                if let Ok(len) = symbol[j + 1..digits_end].parse::<usize>()
                    && let Some(name) = symbol.get(digits_end..digits_end + len)
                {
                    return Some(name.to_owned());
                }
            }
        }
        i += 1;
    }
    None
}

/// The report: the largest crates and functions of the module at `path`.
pub fn report(path: &Path, crates: usize, functions: usize) -> Result<Vec<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let module = parse(&bytes)?;
    let total: usize = module.functions.iter().map(|f| f.size).sum();
    if total == 0 {
        return Err(format!("{}: no code", path.display()));
    }
    let mut by_crate: HashMap<String, usize> = HashMap::new();
    for function in &module.functions {
        *by_crate.entry(crate_of(&function.name)).or_default() += function.size;
    }
    let mut by_crate: Vec<(String, usize)> = by_crate.into_iter().collect();
    by_crate.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kib = |n: usize| n as f64 / 1024.0;
    let share = |n: usize| 100.0 * n as f64 / total as f64;
    let mut lines = vec![format!(
        "{}: code {:.1} KiB in {} functions, data {:.1} KiB (strings, tables)",
        path.file_name().unwrap_or_default().to_string_lossy(),
        kib(module.code),
        module.functions.len(),
        kib(module.data)
    )];
    lines.push("largest crates (share of code):".to_owned());
    for (name, size) in by_crate.iter().take(crates) {
        lines.push(format!(
            "  {:5.1}% {:7.1} KiB  {name}",
            share(*size),
            kib(*size)
        ));
    }
    let mut largest: Vec<&Function> = module.functions.iter().collect();
    largest.sort_by_key(|f| std::cmp::Reverse(f.size));
    lines.push("largest functions:".to_owned());
    for function in largest.into_iter().take(functions) {
        let mut name = demangle(&function.name);
        if name.chars().count() > 100 {
            name = name.chars().take(100).collect::<String>() + "…";
        }
        lines.push(format!(
            "  {:5.1}% {:7.1} KiB  {name}",
            share(function.size),
            kib(function.size)
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_symbols_demangle_to_paths_without_their_hash() {
        assert_eq!(
            demangle("_ZN14pulldown_cmark9firstpass9FirstPass11parse_block17hd76c08ca9acd6084E"),
            "pulldown_cmark::firstpass::FirstPass::parse_block"
        );
        assert_eq!(
            demangle(
                "_ZN98_$LT$$RF$mut$u20$serde_json..de..Deserializer$LT$R$GT$$u20$as$u20$serde_core..de..Deserializer$GT$15deserialize_seq17h82bf4fe54c445613E"
            ),
            "<&mut serde_json::de::Deserializer<R> as serde_core::de::Deserializer>::deserialize_seq"
        );
        assert_eq!(demangle("__wbindgen_malloc"), "__wbindgen_malloc");
    }

    #[test]
    fn code_is_charged_to_the_type_crate_or_else_the_trait_crate() {
        assert_eq!(
            crate_of("_ZN14pulldown_cmark5parse3foo17hd76c08ca9acd6084E"),
            "pulldown_cmark"
        );
        assert_eq!(
            crate_of(
                "_ZN98_$LT$$RF$mut$u20$serde_json..de..Deserializer$LT$R$GT$$u20$as$u20$serde_core..de..Deserializer$GT$15deserialize_seq17h82bf4fe54c445613E"
            ),
            "serde_json"
        );
        assert_eq!(
            crate_of(
                "_ZN53_$LT$T$u20$as$u20$tachys..view..any_view..IntoAny$GT$8into_any17he2c2a79a429625d5E"
            ),
            "tachys"
        );
        assert_eq!(
            crate_of(
                "_RNvMs0_NtCsjqx8TIyZbP9_8dlmalloc8dlmallocINtB5_8DlmallocNtNtB7_3sys6SystemE6mallocCsebHcaeoSrxy_3std"
            ),
            "dlmalloc"
        );
        assert_eq!(crate_of("__wbindgen_malloc"), "(other)");
        // As wasm-bindgen leaves them (demangled, hash kept).
        assert_eq!(
            crate_of(
                "<T as tachys::view::any_view::IntoAny>::into_any::rebuild::h656d1564295d75b6"
            ),
            "tachys"
        );
        assert_eq!(
            crate_of(
                "<dlmalloc[e24a27700634d609]::dlmalloc::Dlmalloc<dlmalloc[e24a27700634d609]::sys::System>>::malloc"
            ),
            "dlmalloc"
        );
        assert_eq!(
            demangle("pulldown_cmark::firstpass::FirstPass::parse_line::h88ee0eaddd7b151f"),
            "pulldown_cmark::firstpass::FirstPass::parse_line"
        );
    }

    #[test]
    fn a_module_is_read_section_by_section_with_names_after_imports() {
        // (import "m" "f" (func)) + two bodies named by the name section.
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        let section = |wasm: &mut Vec<u8>, id: u8, body: &[u8]| {
            wasm.push(id);
            wasm.push(body.len() as u8);
            wasm.extend_from_slice(body);
        };
        section(&mut wasm, 2, b"\x01\x01m\x01f\x00\x00");
        section(&mut wasm, 10, b"\x02\x02\x00\x0b\x03\x00\x01\x0b");
        section(&mut wasm, 11, b"\x00");
        let mut names = b"\x04name".to_vec();
        let sub = b"\x02\x01\x01a\x02\x02bb";
        names.push(1);
        names.push(sub.len() as u8);
        names.extend_from_slice(sub);
        section(&mut wasm, 0, &names);
        let module = parse(&wasm).unwrap();
        assert_eq!(
            module.functions,
            vec![
                Function {
                    size: 2,
                    name: "a".to_owned()
                },
                Function {
                    size: 3,
                    name: "bb".to_owned()
                },
            ]
        );
        assert_eq!(module.data, 1);
        assert!(parse(b"not wasm").is_err());
    }
}
