//! Script errors at the file's own lines and columns: a position inside a
//! script (a TOML string) mapped to the file, at build time
//! ([`position_in_string`]) and at run time ([`ScriptSources`], which a
//! built configuration carries for the errors of its run).

use std::ops::Range;
use std::sync::Arc;

use models::library::Module;
use sim_core::script::ast::SourcePos;
use toml::de::DeTable;

use crate::format::document::ProcedureLibraries;
use crate::format::error::{Place, SourceFile};
use crate::format::schema::ScenarioDoc;
use crate::format::LoadedScenario;

/// Where the text of each script and procedure of a built configuration
/// is, so that a run-time error (which names `scripts.NAME` or
/// `procedures.NAME` and a position inside its text) can point at the
/// scenario file's own line, or at the library module's for a procedure a
/// module gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptSources {
    file: Arc<SourceFile>,
    /// `scripts.NAME` or `procedures.NAME`, and where its text is.
    texts: Vec<(String, ScriptText)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ScriptText {
    /// A TOML string of the scenario file, at this byte span.
    InFile(Range<usize>),
    /// The body of a library module's procedure, as the module has it.
    Library(&'static Module),
}

/// Where a library module's text is in a clone of the repository (the
/// binary holds a copy).
pub fn library_module_path(module: &Module) -> String {
    format!("models/src/library/{}.toml", module.name)
}

impl ScriptSources {
    /// The texts of `doc`'s scripts and procedures, in `loaded`'s file.
    pub fn of(loaded: &LoadedScenario, doc: &ScenarioDoc) -> ScriptSources {
        let mut texts = Vec::new();
        let libraries = ProcedureLibraries::of(doc);
        for (name, p) in &doc.procedures {
            let text = match libraries.module(doc, name) {
                Some(module) => ScriptText::Library(module),
                None => ScriptText::InFile(p.body.span()),
            };
            texts.push((format!("procedures.{name}"), text));
        }
        for (name, s) in &doc.scripts {
            texts.push((format!("scripts.{name}"), ScriptText::InFile(s.span())));
        }
        ScriptSources {
            file: loaded.source.clone(),
            texts,
        }
    }

    /// The place of position `pos` of `origin`'s text (`None` for an origin
    /// it does not know).
    pub fn place(&self, origin: &str, pos: SourcePos) -> Option<Place> {
        let (_, text) = self.texts.iter().find(|(o, _)| o == origin)?;
        match text {
            ScriptText::InFile(span) => Some(Place::at(
                &self.file,
                position_in_string(&self.file.text, span.clone(), pos),
            )),
            ScriptText::Library(module) => {
                let name = origin.strip_prefix("procedures.")?;
                let root = DeTable::parse(module.text).ok()?.into_inner();
                let body = root
                    .get("procedures")?
                    .get_ref()
                    .as_table()?
                    .get(name)?
                    .get_ref()
                    .as_table()?
                    .get("body")?
                    .span();
                let source = SourceFile::new(library_module_path(module), module.text);
                Some(Place::at(
                    &source,
                    position_in_string(&source.text, body, pos),
                ))
            }
        }
    }

    /// The library module `origin` comes from, if a module gave it.
    pub fn library_module(&self, origin: &str) -> Option<&'static Module> {
        self.texts.iter().find_map(|(o, t)| match t {
            ScriptText::Library(m) if o == origin => Some(*m),
            _ => None,
        })
    }
}

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
