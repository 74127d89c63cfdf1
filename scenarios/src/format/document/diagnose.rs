//! Turning toml/serde errors into [`InputError`]s in plain words.

use std::ops::Range;

use toml::de::DeTable;

use super::tree::{join_path, locate, type_phrase};
use crate::format::error::{parse_custom, InputError, SourceFile};
use crate::format::schema::CPULIST_HELP;

/// Maps a deserialization error on the tree `root` (whose own span is
/// `root_span`) to an [`InputError`]. One chain on purpose: a short case
/// per kind of serde message, tried in order, each reading the key and
/// value the error was located at.
pub(crate) fn from_de_error(
    source: &SourceFile,
    root: &DeTable<'_>,
    root_span: &Range<usize>,
    err: &toml::de::Error,
) -> InputError {
    let span = err.span().unwrap_or_else(|| root_span.clone());
    let located = locate(root, root_span, &span);
    let key = join_path(&located.path);
    let message = err.message();
    let at = |msg: String| InputError::at(source, span.clone(), &key, msg);

    if let Some((template, valid)) = parse_custom(message) {
        return at(template.replace("{key}", &key)).with_valid(valid);
    }

    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (given, expected) = split_given(rest);
        let parent = join_path(
            located
                .path
                .get(..located.path.len().saturating_sub(1))
                .unwrap_or(&[]),
        );
        let mut valid = backticked(expected);
        if parent.is_empty() {
            valid.push("variants".to_string());
            valid.push("sweep".to_string());
        }
        let msg = if parent.is_empty() {
            format!("unknown top-level key `{given}`")
        } else {
            format!("unknown key `{given}` in `{parent}`")
        };
        return with_list(at(msg), &given, &valid);
    }

    if let Some(rest) = message.strip_prefix("missing field ") {
        let (given, _) = split_given(rest);
        let full = if key.is_empty() {
            given.clone()
        } else {
            format!("{key}.{given}")
        };
        let msg = if key.is_empty() {
            format!("missing top-level key `{given}`")
        } else {
            format!("missing key `{given}` in `{key}`")
        };
        return InputError::at(source, span.clone(), &full, msg);
    }

    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let (given, expected) = split_given(rest);
        let valid = backticked(expected);
        return with_list(
            at(format!("unknown value `{given}` for `{key}`")),
            &given,
            &valid,
        );
    }

    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (unexpected, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
        if unexpected.ends_with("128") {
            // An integer too large for i64/u64.
            let (expected, _) = match machine_key_range(&located.path) {
                Some(range) => (
                    format!("an integer from {} to {}", range.start(), range.end()),
                    None,
                ),
                None => expected_phrase(expected, true),
            };
            return at(format!("the number for `{key}` is out of range")).with_valid(expected);
        }
        let found = match located.value {
            Some(v) if !located.on_key => type_phrase(v).to_string(),
            _ => unexpected_phrase(unexpected),
        };
        let (expected, valid) = expected_phrase(expected, false);
        let err = at(format!("expected {expected} for `{key}`, found {found}"));
        return match valid {
            Some(v) => err.with_valid(v),
            None => err,
        };
    }

    if let Some(rest) = message.strip_prefix("invalid value: ") {
        let (unexpected, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
        let found = unexpected
            .split_once(' ')
            .map_or(unexpected, |(_, v)| v)
            .trim_matches('`');
        let (expected, valid) = match machine_key_range(&located.path) {
            Some(range) => (
                format!("an integer from {} to {}", range.start(), range.end()),
                None,
            ),
            None => expected_phrase(expected, true),
        };
        let err = at(format!(
            "invalid value for `{key}`: expected {expected}, found {found}"
        ));
        return match valid {
            Some(v) => err.with_valid(v),
            None => err,
        };
    }

    if message == "wanted string or table" {
        let found = located.value.map_or("something else", type_phrase);
        let err = at(format!("expected a string for `{key}`, found {found}"));
        return match enum_choices(&located.path) {
            Some(v) => err.with_valid(v),
            None => err,
        };
    }

    if message.ends_with("number overflowed") {
        return at(format!("the number for `{key}` is out of range"));
    }

    // Anything else: pass the message through; `Display` adds the key.
    at(message.to_string())
}

/// Maps a TOML syntax error to an [`InputError`].
pub(crate) fn from_syntax_error(source: &SourceFile, err: &toml::de::Error) -> InputError {
    let span = err.span().unwrap_or(0..0);
    let mut message = err
        .message()
        .trim_end_matches(", expected nothing")
        .to_string();
    if message == "duplicate key" {
        let text = source.text.get(span.clone()).unwrap_or("");
        if !text.is_empty() && !text.contains('\n') {
            message = format!("duplicate key `{text}`");
        }
    }
    if message == "recursion limit" {
        if let Some(error) = too_deep(source) {
            return error;
        }
    }
    // No key: the document could not be parsed far enough to know it.
    InputError::at(source, span, "", format!("invalid TOML: {message}"))
}

/// How many parts a dotted key may have before the TOML parser stops with
/// "recursion limit" (the `toml` crate's own bound, whose error carries no
/// position): 80.
const TOML_KEY_PARTS: usize = 80;

/// The dotted key that made the parser stop at its bound: the first
/// `[table]` header or `key = value` line whose key has that many parts,
/// at its place in the file. (Arrays and inline tables nested too deep get
/// a positioned error from the parser itself.)
fn too_deep(source: &SourceFile) -> Option<InputError> {
    let text = source.text.as_str();
    let mut offset = 0;
    // Inside a multi-line string, lines are no keys.
    let mut in_multiline: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        for quote in ["\"\"\"", "'''"] {
            if line.matches(quote).count() % 2 == 1 {
                in_multiline = match in_multiline {
                    Some(q) if q == quote => None,
                    None => Some(quote),
                    other => other,
                };
            }
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // The key: a header's inside, or what comes before `=`.
        let indent = line.len() - trimmed.len();
        let end = trimmed.find(['=', '\n', '#']).unwrap_or(trimmed.len());
        let key = &trimmed[..end];
        let mut parts = 1;
        let mut quoted: Option<char> = None;
        for c in key.chars() {
            match (quoted, c) {
                (None, '"' | '\'') => quoted = Some(c),
                (Some(q), c) if c == q => quoted = None,
                (None, '.') => parts += 1,
                _ => {}
            }
        }
        if parts < TOML_KEY_PARTS {
            continue;
        }
        let shown = key.trim().trim_matches(['[', ']']).trim();
        let shown = match shown.char_indices().nth(40) {
            Some((cut, _)) => format!("{}...", &shown[..cut]),
            None => shown.to_string(),
        };
        return Some(
            InputError::at(
                source,
                start + indent..start + indent + key.trim_end().len(),
                "",
                format!(
                    "invalid TOML: the key `{shown}` has {parts} dotted parts, more than the \
                     parser takes ({})",
                    TOML_KEY_PARTS - 1
                ),
            )
            .with_valid(format!("keys of at most {} parts", TOML_KEY_PARTS - 1)),
        );
    }
    None
}

/// Splits "`given`, expected ..." into the given name and the rest.
fn split_given(rest: &str) -> (String, &str) {
    let rest = rest.strip_prefix('`').unwrap_or(rest);
    match rest.split_once('`') {
        Some((given, tail)) => (given.to_string(), tail),
        None => (rest.to_string(), ""),
    }
}

/// The backticked names in serde's "expected one of `a`, `b`" text.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn with_list(err: InputError, given: &str, valid: &[String]) -> InputError {
    let refs: Vec<&str> = valid.iter().map(String::as_str).collect();
    err.with_choices(given, &refs)
}

/// Plain words for serde's "expected ..." text; `value` selects the phrasing
/// for out-of-range values. Also returns a `valid` text where useful.
fn expected_phrase(expected: &str, value: bool) -> (String, Option<String>) {
    let phrase = match expected {
        "u8" if value => "an integer from 0 to 255",
        "u16" if value => "an integer from 0 to 65535",
        "u32" if value => "an integer from 0 to 4294967295",
        "u64" | "usize" if value => "a non-negative integer",
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "an integer"
        }
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a string" | "a borrowed string" | "a character" => "a string",
        "a sequence" => "an array",
        "a map" => "a table",
        "a cpulist string" => return ("a string".to_string(), Some(CPULIST_HELP.to_string())),
        e if e.starts_with("struct ") => "a table",
        e => e,
    };
    (phrase.to_string(), None)
}

/// Plain words for serde's description of an unexpected value's type.
fn unexpected_phrase(unexpected: &str) -> String {
    let kind = unexpected.split([' ', '`']).next().unwrap_or("");
    match kind {
        "string" | "char" => "a string",
        "integer" => "an integer",
        "floating" => "a float",
        "boolean" => "a boolean",
        "map" => "a table",
        "sequence" => "an array",
        _ => return unexpected.to_string(),
    }
    .to_string()
}

/// The range a machine table's scalar key takes (`machine.smt_share_percent`,
/// also inside a variant), where the machine's own check gives it one: a
/// value the integer type refuses (a negative count) then names the range
/// that check would, not the type's.
fn machine_key_range(path: &[String]) -> Option<std::ops::RangeInclusive<u64>> {
    match path {
        [.., parent, key] if parent == "machine" => sim_core::topology::scalar_key_range(key),
        [.., machine, latency, key] if machine == "machine" && latency == "latency" => {
            sim_core::topology::scalar_key_range(&format!("latency.{key}"))
        }
        // An entry of a matrix: `machine.socket_hops.0.1`.
        [.., machine, matrix, _, _]
            if machine == "machine"
                && matches!(matrix.as_str(), "socket_hops" | "node_distances") =>
        {
            sim_core::topology::scalar_key_range(matrix)
        }
        _ => None,
    }
}

/// Valid strings for the enum-typed keys, for "wanted string or table".
fn enum_choices(path: &[String]) -> Option<&'static str> {
    let last = path.last()?;
    let parent = path.first()?;
    match (parent.as_str(), last.as_str()) {
        ("machine", "protocol") => Some("mesi, mesif, moesi"),
        ("machine", "lookup") => Some("local, home"),
        ("instances", "kind") => Some("global, per-cpu, per-node"),
        _ => None,
    }
}
