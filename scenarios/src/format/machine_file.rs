//! `machine = { file = "rome-7742.toml" }`: a machine kept in a file of its
//! own and shared by several scenarios. The file holds one `[machine]`
//! table, as `bounce presets show NAME --toml` prints it. It may stand for
//! the scenario's `machine`, a variant's (`set = { machine = { file = ...
//! } }`, or `set = { "machine.file" = ... }`) and values of a sweep's
//! `machine` axis.
//!
//! The loader reads each such file before anything else looks at the
//! scenario, checks the machine there (so that an error names the machine
//! file's own line and key), and writes the table into the scenario's text
//! as an inline table in place of `{ file = ... }`, on the same line: the
//! other lines of the scenario keep their numbers. The scenario's
//! [`SourceFile`] keeps where each table came from ([`Inlined`]), so that
//! a later error inside one (a variant or a sweep case whose other keys do
//! not fit it) names the machine file's own line.

// `InputError` is returned by value by design (it is the public error type).
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use sim_core::limits::Limits;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::format::document::import::ImportScope;
use crate::format::error::{Inlined, InputError, SourceFile};
use crate::format::read::{read_bounded_text, ReadError};
use crate::format::sweep::MachineOf;

/// How a machine file is named.
const EXAMPLE: &str = "machine = { file = \"NAME.toml\" } (a file holding one [machine] table, as `bounce presets show NAME --toml` prints it)";

/// A scenario around a machine file's text, to check its `[machine]` table
/// with the scenario's own rules; its lines come before the file's.
const CHECK_PREFIX: &str = "schema = 1\n\
[run]\n\
iterations = 1\n\
[structs.s]\n\
fields = [{ name = \"v\", type = \"u64\" }]\n\
[instances.i]\n\
struct = \"s\"\n\
kind = \"global\"\n\
[scripts]\n\
x = \"work 1\"\n\
[[threads]]\n\
cpus = \"0\"\n\
script = \"x\"\n";

/// The scenario's text with every `{ file = ... }` of `machine` (of the
/// scenario, of a variant's `set`, and of the sweep's `machine` axis)
/// replaced by the machine it names, and where each machine was written
/// in ([`Inlined`], so that a later error inside one is shown in its
/// file); `None` when there is none. `root` is the text as parsed (the
/// loader does not call this for a text that is not valid TOML: it
/// reports that next).
pub(crate) fn expand(
    source: &SourceFile,
    root: &DeTable<'_>,
    limits: &Limits,
    scope: ImportScope,
    machine_of: MachineOf,
) -> Result<Option<(String, Vec<Inlined>)>, InputError> {
    let references = machine_references(source, root);
    if references.is_empty() {
        return Ok(None);
    }
    let mut replacements: Vec<(Range<usize>, &str, Inline)> = Vec::new();
    for reference in references {
        if let Some(table) = reference.table {
            only_file(source, &reference.key, table)?;
        }
        let inline = read_machine(
            source,
            &reference.key,
            reference.file,
            limits,
            scope,
            machine_of,
        )?;
        replacements.push((reference.replaced, reference.prefix, inline));
    }
    // In the order of the text, each shifting what follows it.
    replacements.sort_by_key(|(span, _, _)| span.start);
    let mut text = String::with_capacity(source.text.len());
    let mut inlined = Vec::new();
    let mut copied = 0;
    for (span, prefix, inline) in replacements {
        text.push_str(&source.text[copied..span.start]);
        text.push_str(prefix);
        let start = text.len();
        text.push_str(&inline.text);
        inlined.push(Inlined {
            file: inline.file,
            region: start..text.len(),
            whole: inline.whole,
            pieces: inline
                .pieces
                .into_iter()
                .map(|(at, from)| (start + at.start..start + at.end, from))
                .collect(),
        });
        copied = span.end;
    }
    text.push_str(&source.text[copied..]);
    Ok(Some((text, inlined)))
}

/// Every `{ file = ... }` of `machine` in the text as parsed: the
/// scenario's, each variant's `set` (inline or dotted), and each value of
/// the sweep's `machine` axis.
fn machine_references<'a, 'i>(
    source: &SourceFile,
    root: &'a DeTable<'i>,
) -> Vec<Reference<'a, 'i>> {
    let mut references: Vec<Reference<'a, 'i>> = Vec::new();
    if let Some(machine) = root.get("machine") {
        if is_reference(machine) {
            references.push(Reference::table("machine".to_string(), machine));
        }
    }
    if let Some(DeValue::Array(variants)) = root.get("variants").map(Spanned::get_ref) {
        for (k, variant) in variants.iter().enumerate() {
            let DeValue::Table(variant) = variant.get_ref() else {
                continue;
            };
            let Some(DeValue::Table(set)) = variant.get("set").map(Spanned::get_ref) else {
                continue;
            };
            let name = match variant.get("name").map(Spanned::get_ref) {
                Some(DeValue::String(name)) => name.to_string(),
                _ => k.to_string(),
            };
            let key = format!("variants.{name}.set.machine");
            // `"machine.file" = "NAME.toml"`, the dotted form of the same.
            if let Some((dotted, file)) = set.get_key_value("machine.file") {
                references.push(Reference {
                    key,
                    table: None,
                    file,
                    replaced: dotted.span().start..file.span().end,
                    prefix: "machine = ",
                });
                continue;
            }
            let Some(machine) = set.get("machine") else {
                continue;
            };
            // Only `{ file = ... }` written inline: a `[variants.set.machine]`
            // header is a path of keys to set, as anywhere in `set`.
            let inline = source
                .text
                .get(machine.span().start..)
                .is_some_and(|t| t.starts_with('{'));
            if inline && is_reference(machine) {
                references.push(Reference::table(key, machine));
            }
        }
    }
    if let Some(DeValue::Table(sweep)) = root.get("sweep").map(Spanned::get_ref) {
        if let Some(DeValue::Array(values)) = sweep.get("machine").map(Spanned::get_ref) {
            for (k, value) in values.iter().enumerate() {
                if is_reference(value) {
                    references.push(Reference::table(format!("sweep.machine.{k}"), value));
                }
            }
        }
    }
    references
}

/// A machine file's table written as an inline table: the text, the file,
/// where its `[machine]` is there, and the pieces of the text (offsets
/// from its start) with the spans of the file they stand for.
struct Inline {
    text: String,
    file: Arc<SourceFile>,
    whole: Range<usize>,
    pieces: Vec<(Range<usize>, Range<usize>)>,
}

/// Writes `table` (of `file`'s text) as an inline table on one line,
/// recording each key and value written with the span it came from.
fn write_table(
    file: &str,
    table: &DeTable<'_>,
    out: &mut String,
    pieces: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    if table.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (k, (key, value)) in table.iter().enumerate() {
        out.push_str(if k == 0 { " " } else { ", " });
        let start = out.len();
        let bare = !key.get_ref().is_empty()
            && key
                .get_ref()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if bare {
            out.push_str(key.get_ref());
        } else {
            out.push_str(&toml::Value::String(key.get_ref().to_string()).to_string());
        }
        pieces.push((start..out.len(), key.span()));
        out.push_str(" = ");
        write_value(file, value, out, pieces);
    }
    out.push_str(" }");
}

/// Writes one value of `file` on one line (see [`write_table`]).
fn write_value(
    file: &str,
    value: &Spanned<DeValue<'_>>,
    out: &mut String,
    pieces: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    let start = out.len();
    match value.get_ref() {
        DeValue::Table(table) => write_table(file, table, out, pieces),
        DeValue::Array(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_value(file, item, out, pieces);
            }
            out.push(']');
        }
        // Written again, escaped: a multi-line string would take lines.
        DeValue::String(s) => out.push_str(&toml::Value::String(s.to_string()).to_string()),
        // Numbers, booleans and dates as the file writes them (one line).
        _ => out.push_str(file.get(value.span()).unwrap_or_default().trim()),
    }
    pieces.push((start..out.len(), value.span()));
}

/// Whether `value` is an inline table with a `file` key: a machine file.
fn is_reference(value: &Spanned<DeValue<'_>>) -> bool {
    matches!(value.get_ref(), DeValue::Table(t) if t.contains_key("file"))
}

/// A machine file named in the scenario: where (`key`, for messages), the
/// `{ file = ... }` table if it is written as one, the `file` value, the
/// text the machine's inline table replaces and what goes before it.
struct Reference<'a, 'i> {
    key: String,
    table: Option<&'a Spanned<DeValue<'i>>>,
    file: &'a Spanned<DeValue<'i>>,
    replaced: Range<usize>,
    prefix: &'static str,
}

impl<'a, 'i> Reference<'a, 'i> {
    /// `key = { file = ... }`: the table is replaced by the machine's.
    fn table(key: String, table: &'a Spanned<DeValue<'i>>) -> Self {
        let DeValue::Table(keys) = table.get_ref() else {
            unreachable!("is_reference checked it is a table");
        };
        Reference {
            key,
            table: Some(table),
            file: keys.get("file").expect("is_reference checked `file`"),
            replaced: table.span(),
            prefix: "",
        }
    }
}

/// A `{ file = ... }` table holds `file` alone.
fn only_file(
    source: &SourceFile,
    key: &str,
    value: &Spanned<DeValue<'_>>,
) -> Result<(), InputError> {
    let DeValue::Table(table) = value.get_ref() else {
        unreachable!("is_reference checked it is a table");
    };
    if let Some((other, _)) = table.iter().find(|(k, _)| k.get_ref() != "file") {
        return Err(InputError::at(
            source,
            other.span(),
            &format!("{key}.{}", other.get_ref()),
            format!(
                "`{key}.{0}` cannot stand beside `file`: `{key} = {{ file }}` takes the whole \
                 machine from the file, so `{0}` belongs in it",
                other.get_ref()
            ),
        )
        .with_valid(EXAMPLE));
    }
    Ok(())
}

/// Reads, checks and inlines the machine file `file` (the value of
/// `KEY.file`) names.
fn read_machine(
    source: &SourceFile,
    key: &str,
    file: &Spanned<DeValue<'_>>,
    limits: &Limits,
    scope: ImportScope,
    machine_of: MachineOf,
) -> Result<Inline, InputError> {
    let at_file =
        |message: String| InputError::at(source, file.span(), &format!("{key}.file"), message);
    let DeValue::String(given) = file.get_ref() else {
        return Err(at_file(format!(
            "`{key}.file` must be a string, the machine file's path"
        ))
        .with_valid(EXAMPLE));
    };
    let (shown, path) = resolve(source, given, scope).map_err(|m| {
        let error = at_file(m.0);
        match m.1 {
            Some(valid) => error.with_valid(valid),
            None => error,
        }
    })?;
    let text = match read_bounded_text(&path, limits.scenario_bytes) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => return Err(at_file(format!("the machine file `{shown}` is not valid UTF-8"))),
        Err(ReadError::TooLarge { limit_bytes }) => {
            return Err(at_file(format!(
                "the machine file `{shown}` is larger than the limit of {limit_bytes} bytes for a scenario file"
            )))
        }
        Err(ReadError::Io(e)) => {
            return Err(at_file(format!("cannot read the machine file `{shown}`: {e}"))
                .with_valid(EXAMPLE))
        }
    };
    let machine_source = SourceFile::new(shown.clone(), text);
    machine_table(&machine_source)?;
    check_machine(&machine_source, limits, scope, machine_of)?;
    let parsed = DeTable::parse(&machine_source.text)
        .map_err(|e| at_file(format!("the machine file `{shown}` is not valid TOML: {e}")))?
        .into_inner();
    let (header, table) = parsed
        .iter()
        .find(|(k, _)| k.get_ref() == "machine")
        .and_then(|(k, v)| match v.get_ref() {
            DeValue::Table(t) => Some((k.span(), t)),
            _ => None,
        })
        .ok_or_else(|| at_file(format!("`{shown}` has no `[machine]` table")))?;
    let mut text = String::new();
    let mut pieces = Vec::new();
    write_table(&machine_source.text, table, &mut text, &mut pieces);
    Ok(Inline {
        text,
        whole: header,
        pieces,
        file: Arc::new(machine_source),
    })
}

/// The `[machine]` table of a machine file, which must hold nothing else.
fn machine_table(file: &SourceFile) -> Result<toml::Table, InputError> {
    let mut document: toml::Table = toml::from_str(&file.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        InputError::at(file, span, "", format!("invalid TOML: {}", e.message()))
    })?;
    let parsed = DeTable::parse(&file.text).ok().map(Spanned::into_inner);
    let span_of = |key: &str| {
        parsed
            .as_ref()
            .and_then(|t| {
                t.iter()
                    .find(|(k, _)| k.get_ref() == key)
                    .map(|(k, _)| k.span())
            })
            .unwrap_or(0..0)
    };
    if let Some(other) = document.keys().find(|k| *k != "machine") {
        return Err(InputError::at(
            file,
            span_of(other),
            other,
            format!("a machine file holds only a `[machine]` table, not `{other}`"),
        )
        .with_valid("[machine] and its keys (`bounce presets show NAME --toml` prints one)"));
    }
    match document.remove("machine") {
        Some(toml::Value::Table(machine)) => {
            if machine.contains_key("file") {
                return Err(InputError::at(
                    file,
                    span_of("machine"),
                    "machine.file",
                    "a machine file's `[machine]` cannot name another machine file",
                )
                .with_valid("the machine's keys"));
            }
            Ok(machine)
        }
        _ => Err(InputError::whole_file(
            &file.path,
            format!("`{}` has no `[machine]` table", file.path),
        )
        .with_valid("a [machine] table, as `bounce presets show NAME --toml` prints it")),
    }
}

/// Checks the machine of a machine file as a scenario's would be checked;
/// errors name the machine file's own lines.
fn check_machine(
    file: &SourceFile,
    limits: &Limits,
    scope: ImportScope,
    machine_of: MachineOf,
) -> Result<sim_core::topology::Topology, InputError> {
    checked_machine(file, limits, scope, machine_of).map(|checked| checked.topology)
}

/// A machine file's machine as [`machine_from_file_checked`] hands it back.
pub struct CheckedMachineFile {
    pub topology: sim_core::topology::Topology,
    /// The scenario the file's table was checked in: the file's text after
    /// [`CheckedMachineFile::prefix_lines`] lines of its own.
    pub source: Arc<SourceFile>,
    pub doc: crate::format::schema::ScenarioDoc,
    pub prefix_lines: usize,
}

/// [`check_machine`], also handing back the document checked.
fn checked_machine(
    file: &SourceFile,
    limits: &Limits,
    scope: ImportScope,
    machine_of: MachineOf,
) -> Result<CheckedMachineFile, InputError> {
    let prefix_lines = CHECK_PREFIX.matches('\n').count();
    let text = format!("{CHECK_PREFIX}{}", file.text);
    let in_file = |mut e: InputError| {
        if e.file == file.path && e.line > prefix_lines {
            e.line -= prefix_lines;
        }
        e
    };
    let loaded =
        crate::format::load::load(&file.path, &text, limits, scope, machine_of).map_err(in_file)?;
    let topology = machine_of(&loaded.source, &loaded.base.doc).map_err(in_file)?;
    Ok(CheckedMachineFile {
        topology,
        source: loaded.source.clone(),
        doc: loaded.base.doc.clone(),
        prefix_lines,
    })
}

/// The machine of a machine file (a `[machine]` table, as `bounce presets
/// show NAME --toml` prints it) given on the command line, checked as a
/// scenario's: `bounce validate --machine FILE --matrix CSV`.
pub fn machine_from_file(
    path: &Path,
    limits: &Limits,
    machine_of: MachineOf,
) -> Result<sim_core::topology::Topology, InputError> {
    let shown = path.display().to_string();
    let text = match read_bounded_text(path, limits.scenario_bytes) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => {
            return Err(InputError::whole_file(
                &shown,
                format!("the machine file `{shown}` is not valid UTF-8"),
            ))
        }
        Err(ReadError::TooLarge { limit_bytes }) => {
            return Err(InputError::whole_file(
                &shown,
                format!(
                    "the machine file `{shown}` is larger than the limit of {limit_bytes} bytes \
                     for a scenario file"
                ),
            ))
        }
        Err(ReadError::Io(e)) => return Err(InputError::whole_file(
            &shown,
            format!("cannot read the machine file `{shown}`: {e}"),
        )
        .with_valid(
            "a file holding one [machine] table, as `bounce presets show NAME --toml` prints it",
        )),
    };
    let file = SourceFile::new(shown, text);
    machine_table(&file)?;
    check_machine(&file, limits, ImportScope::ScenarioDirectory, machine_of)
}

/// [`machine_from_file`], also handing back the document the file's table
/// was checked in (to tell how each of its keys was given).
pub fn machine_from_file_checked(
    path: &Path,
    limits: &Limits,
    machine_of: MachineOf,
) -> Result<CheckedMachineFile, InputError> {
    // Read and checked as `machine_from_file` does (its errors), then
    // once more keeping the document.
    machine_from_file(path, limits, machine_of)?;
    let text = read_bounded_text(path, limits.scenario_bytes)
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let file = SourceFile::new(path.display().to_string(), text);
    checked_machine(&file, limits, ImportScope::ScenarioDirectory, machine_of)
}

/// The machine file's path, relative to the scenario's directory and
/// inside it unless `scope` says otherwise: `(as shown, path)`, or the
/// message and what would be valid.
fn resolve(
    source: &SourceFile,
    given: &str,
    scope: ImportScope,
) -> Result<(String, std::path::PathBuf), (String, Option<String>)> {
    let parent = Path::new(&source.path).parent().unwrap_or(Path::new(""));
    let dir = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let given_path = Path::new(given);
    let path = parent.join(given_path);
    let shown = path.display().to_string();
    let outside = |how: &str| {
        (
            format!(
                "the machine file `{shown}` is outside the scenario's directory `{}` ({how}); a \
                 scenario's imports stay inside its own directory tree",
                dir.display()
            ),
            Some(
                "a path relative to the scenario file that stays below its directory; or \
                 `--allow-imports-outside` to read it from there, if you trust the scenario"
                    .to_string(),
            ),
        )
    };
    if scope == ImportScope::ScenarioDirectory && given_path.is_absolute() {
        return Err(outside("an absolute path"));
    }
    let canonical = std::fs::canonicalize(&path).map_err(|e| {
        (
            format!("cannot read the machine file `{shown}`: {e}"),
            Some(format!(
                "an existing file, named relative to the scenario's directory `{}`",
                std::fs::canonicalize(dir)
                    .unwrap_or(dir.to_path_buf())
                    .display()
            )),
        )
    })?;
    if scope == ImportScope::ScenarioDirectory {
        let root = std::fs::canonicalize(dir).map_err(|e| {
            (
                format!(
                    "cannot resolve the scenario's directory `{}`: {e}",
                    dir.display()
                ),
                None,
            )
        })?;
        if !canonical.starts_with(&root) {
            return Err(outside("through `..` or a symbolic link"));
        }
    }
    Ok((shown, canonical))
}
