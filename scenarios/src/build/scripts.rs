//! Script errors at the file's own lines and columns: a position inside a
//! script (a TOML string) mapped to the file.

use std::ops::Range;

use sim_core::script::ast::SourcePos;

use crate::format::LoadedScenario;

/// Maps a position inside a TOML string value to a byte offset in the file.
pub fn position_in_string(text: &str, span: Range<usize>, pos: SourcePos) -> Range<usize> {
    let raw = text.get(span.clone()).unwrap_or("");
    let mut start = span.start;
    // Basic strings ("...", """...""") have escapes; literal ones none.
    let escapes = raw.starts_with('"');
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
    // Walk the text as the script sees it: an escape (`\t`, `\"`, `\\`,
    // `\u00e9`) is one character of the script, `\n` a line break, and a
    // backslash ending a line of a multi-line string is nothing at all.
    let end_of_string = span.end.min(text.len());
    let mut offset = start.min(end_of_string);
    let (mut line, mut column) = (1u32, 1u32);
    while offset < end_of_string && (line, column) < (pos.line, pos.column) {
        let rest = &text[offset..end_of_string];
        let mut chars = rest.chars();
        let Some(ch) = chars.next() else { break };
        let next = chars.next();
        match (ch, next) {
            ('\\', Some(e)) if escapes => match e {
                'u' => (offset, column) = (offset + 6, column + 1),
                'U' => (offset, column) = (offset + 10, column + 1),
                'x' => (offset, column) = (offset + 4, column + 1),
                'n' => (offset, line, column) = (offset + 2, line + 1, 1),
                e if e.is_whitespace() => {
                    offset += 1;
                    offset += rest[1..]
                        .find(|c: char| !c.is_whitespace())
                        .unwrap_or(rest.len() - 1);
                }
                e => (offset, column) = (offset + 1 + e.len_utf8(), column + 1),
            },
            ('\n', _) | ('\r', Some('\n')) => {
                if line == pos.line {
                    break;
                }
                offset += if ch == '\r' { 2 } else { 1 };
                (line, column) = (line + 1, 1);
            }
            _ => (offset, column) = (offset + ch.len_utf8(), column + 1),
        }
    }
    let offset = offset.min(text.len());
    let end = text[offset..]
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
