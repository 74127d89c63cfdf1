//! Script errors at the file's own lines and columns: a position inside a
//! script (a TOML string) mapped to the file.

use std::ops::Range;

use sim_core::script::ast::SourcePos;

use crate::format::LoadedScenario;

/// Maps a position inside a TOML string value to a byte offset in the file.
pub fn position_in_string(text: &str, span: Range<usize>, pos: SourcePos) -> Range<usize> {
    let raw = text.get(span.clone()).unwrap_or("");
    let mut start = span.start;
    if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        start += 3;
        let rest = &text[start.min(text.len())..];
        if rest.starts_with("\r\n") {
            start += 2;
        } else if rest.starts_with('\n') {
            start += 1;
        }
    } else if raw.starts_with('"') || raw.starts_with('\'') {
        start += 1;
    }
    let mut offset = start;
    let mut line = 1;
    let bytes = text.as_bytes();
    while line < pos.line && offset < span.end {
        if bytes[offset] == b'\n' {
            line += 1;
        }
        offset += 1;
    }
    for (column, ch) in (1..).zip(text[offset.min(text.len())..].chars()) {
        if column >= pos.column || ch == '\n' {
            break;
        }
        offset += ch.len_utf8();
    }
    let end = text[offset.min(text.len())..]
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map(|(i, _)| offset + i)
        .unwrap_or(text.len());
    offset..end.max(offset + 1)
}

/// Rewrites `line L, column C` (positions inside a script) in a message as
/// the file's own line and column, which is what the user can find.
pub(super) fn file_positions_in_message(
    loaded: &LoadedScenario,
    text: &str,
    span: Range<usize>,
    message: &str,
) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
        let tail = &after[digits.len()..];
        let column_digits: String = tail
            .strip_prefix(", column ")
            .map(|t| t.chars().take_while(|c| c.is_ascii_digit()).collect())
            .unwrap_or_default();
        match (digits.parse::<u32>(), column_digits.parse::<u32>()) {
            (Ok(line), Ok(column)) => {
                let offset =
                    position_in_string(text, span.clone(), SourcePos { line, column }).start;
                let (file_line, file_column) = loaded.source.line_col(offset);
                out.push_str(&format!("line {file_line}, column {file_column}"));
                rest = &tail[", column ".len() + column_digits.len()..];
            }
            _ => {
                out.push_str("line ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}
