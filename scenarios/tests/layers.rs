//! The crate's modules are six layers, one folder each, read in this order
//! (see `src/lib.rs`):
//!
//! format → machine → build → run → report → tools
//!
//! A module imports only from its own layer and the layers before it. This
//! test reads every `.rs` file under `src/`, finds every `crate::…` and
//! `super::…` path outside comments and string literals (in `use` lines and
//! in code alike, grouped imports `crate::{a::…, b::…}` included), and fails
//! naming the file, the line and the forbidden direction of each path into a
//! later layer. A path to an item of the crate root (`crate::load_str`,
//! `crate::InputError`) is refused too: the root composes the layers (its
//! `load_*` pass the machine layer's resolution to the format layer's
//! loader), so a module names the layer an item lives in instead. Only
//! `src/lib.rs`, the root, may name every layer.

use std::fs;
use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &["format", "machine", "build", "run", "report", "tools"];

fn layer_index(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == name)
}

fn order() -> String {
    LAYERS.join(" → ")
}

/// The module path of a file under `src/`: `format/document/mod.rs` is
/// `format::document`, `lib.rs` the root (empty).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// The text with comments, string literals and char literals blanked out
/// (newlines kept, so lines still count). One loop on purpose: a small
/// scanner whose cases (comments, nested block comments, raw and plain
/// strings, chars and lifetimes) share its position in the text.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && {
            // A raw string: r"…", r#"…"#, br"…".
            let mut j = i + if c == 'b' { 2 } else { 1 };
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            chars.get(j) == Some(&'"')
        } {
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while chars[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1; // the opening quote
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &chars[i..j.min(chars.len())] {
                blank(&mut out, ch);
            }
            i = j;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1f}'), or else a lifetime.
            let end = if next == Some('\\') {
                (i + 2..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for &ch in &chars[i..=end] {
                        blank(&mut out, ch);
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokens(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// The path written from `at` on (`a::b::c`, or `a::{…}` shortened).
fn written_path(toks: &[(Token, usize)], at: usize) -> String {
    let mut text = String::new();
    let mut i = at;
    while let Some((t, _)) = toks.get(i) {
        match t {
            Token::Ident(s) => text.push_str(s),
            Token::PathSep => text.push_str("::"),
            Token::Punct('{') => {
                text.push_str("{…}");
                break;
            }
            Token::Punct('*') => {
                text.push('*');
                break;
            }
            _ => break,
        }
        i += 1;
    }
    text
}

/// Every path of `text` (the file `rel` under `src/`) that leaves its layer
/// for a later one or for the crate root, as `file:line: why`. One pass on
/// purpose: the token loop tracks the inline modules and brace depth that
/// every kind of path it checks (`use`, `crate::`, `super::`) depends on.
fn violations(rel: &Path, text: &str) -> Vec<String> {
    let shown = format!("src/{}", rel.display());
    let file_module = module_path(rel);
    let Some(own) = file_module.first() else {
        return Vec::new(); // the crate root may name every layer
    };
    let Some(own_index) = layer_index(own) else {
        return vec![format!(
            "{shown}:1: the file is in no layer folder: put it under one of src/{{{}}}/",
            LAYERS.join(",")
        )];
    };
    let toks = tokens(&strip(text));
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`) and the brace depth inside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    for i in 0..toks.len() {
        match &toks[i].0 {
            Token::Punct('{') => {
                depth += 1;
                if let (Some((Token::Ident(name), _)), Some((Token::Ident(kw), _))) = (
                    i.checked_sub(1).map(|j| &toks[j]),
                    i.checked_sub(2).map(|j| &toks[j]),
                ) {
                    if kw == "mod" {
                        inline.push((name.clone(), depth));
                    }
                }
                continue;
            }
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            Token::Ident(word) if word == "crate" || word == "super" => {}
            _ => continue,
        }
        let Token::Ident(word) = &toks[i].0 else {
            continue;
        };
        let starts_path = toks.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep)
            && !matches!(
                i.checked_sub(1).map(|j| &toks[j].0),
                Some(Token::PathSep) | Some(Token::Punct('$'))
            );
        if !starts_path {
            continue;
        }
        let line = toks[i].1;
        let written = written_path(&toks, i);
        // Where the path leads: a module path, resolved from this module.
        let mut module: Vec<String> = file_module.clone();
        module.extend(inline.iter().map(|(n, _)| n.clone()));
        let mut j = i;
        if word == "crate" {
            module.clear();
            j += 2;
        } else {
            while toks.get(j).map(|t| &t.0) == Some(&Token::Ident("super".into()))
                && toks.get(j + 1).map(|t| &t.0) == Some(&Token::PathSep)
            {
                module.pop();
                j += 2;
            }
        }
        // The first segments below the root that the path names.
        let mut targets: Vec<(String, usize)> = Vec::new();
        if let Some(first) = module.first() {
            targets.push((first.clone(), line));
        } else {
            match toks.get(j) {
                Some((Token::Ident(name), l)) => targets.push((name.clone(), *l)),
                Some((Token::Punct('{'), _)) => {
                    let mut d = 0;
                    let mut expect = true;
                    for (t, l) in &toks[j..] {
                        match t {
                            Token::Punct('{') => {
                                d += 1;
                                expect = d == 1;
                                continue;
                            }
                            Token::Punct('}') => {
                                d -= 1;
                                if d == 0 {
                                    break;
                                }
                            }
                            Token::Punct(',') if d == 1 => {
                                expect = true;
                                continue;
                            }
                            Token::Ident(name) if expect && d == 1 => {
                                targets.push((name.clone(), *l));
                            }
                            Token::Punct('*') if expect && d == 1 => {
                                targets.push(("*".into(), *l));
                            }
                            _ => {}
                        }
                        expect = false;
                    }
                }
                Some((Token::Punct('*'), l)) => targets.push(("*".into(), *l)),
                _ => {}
            }
        }
        for (target, line) in targets {
            match layer_index(&target) {
                Some(t) if t > own_index => found.push(format!(
                    "{shown}:{line}: `{written}` imports from `{target}`, a later layer: \
                     {own} → {target} is forbidden (layers: {})",
                    order()
                )),
                Some(_) => {}
                None if target == "self" => {}
                None => found.push(format!(
                    "{shown}:{line}: `{written}` names `{target}` at the crate root, which \
                     composes every layer: import it from the layer that defines it"
                )),
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn modules_import_only_from_their_own_layer_or_earlier_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "{} files under {}",
        files.len(),
        src.display()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        found.extend(violations(file.strip_prefix(&src).unwrap(), &text));
    }
    assert!(
        found.is_empty(),
        "{} import(s) against the layer order {}:\n  {}",
        found.len(),
        order(),
        found.join("\n  ")
    );
}

/// The checker itself: it finds forward paths in `use` lines, in code and in
/// groups, resolves `super::` (inline modules included), and ignores
/// comments and strings.
#[test]
fn the_checker_finds_forward_imports_and_only_those() {
    let file = Path::new("format/sweep.rs");
    let text = r#"
use crate::format::error::InputError; // crate::tools::x in a comment
use super::document::tree;
use crate::{format::schema, build::BuiltVariant};
/// [`crate::machine::build_machine`] in a doc comment
fn f() {
    let s = "crate::run::cases";
    let c = '"';
    let t = crate::machine::build_machine(source, doc);
}
pub(crate) fn g<'a>(x: &'a str) {}
mod tests {
    use super::*;
}
"#;
    let found = violations(file, text);
    assert_eq!(
        found,
        [
            "src/format/sweep.rs:4: `crate::{…}` imports from `build`, a later layer: \
             format → build is forbidden (layers: format → machine → build → run → report → tools)",
            "src/format/sweep.rs:9: `crate::machine::build_machine` imports from `machine`, \
             a later layer: format → machine is forbidden (layers: format → machine → build → \
             run → report → tools)",
        ]
    );
    assert_eq!(
        violations(
            Path::new("format/mod.rs"),
            "use super::load_str;\nuse crate::InputError;"
        ),
        [
            "src/format/mod.rs:1: `super::load_str` names `load_str` at the crate root, which \
             composes every layer: import it from the layer that defines it",
            "src/format/mod.rs:2: `crate::InputError` names `InputError` at the crate root, \
             which composes every layer: import it from the layer that defines it",
        ]
    );
    assert!(violations(Path::new("format/mod.rs"), "mod tests { use super::*; }").is_empty());
    assert!(violations(Path::new("tools/optimize.rs"), "use crate::run::cases;").is_empty());
    assert_eq!(
        violations(Path::new("lib.rs"), "use crate::tools::x;"),
        Vec::<String>::new()
    );
    assert_eq!(violations(Path::new("extra.rs"), "").len(), 1);
}
