//! `pahole = { file, struct }`: a struct whose layout comes from a pahole
//! listing. The loader reads the listing (relative to the scenario file)
//! before anything else looks at the tree, and writes the struct it gives
//! into the tree as `fields` (written-out members with `fields` of their
//! own, bitfields with `bits`), spanned at the `pahole` entry. The base,
//! every variant and every sweep case then start from those fields, so a
//! patch changes an imported member exactly as a declared one:
//! `"structs.mem_cgroup.fields.memory.fields.usage.align" = 64`.
//!
//! Offsets are left to the C rules, which the import has checked give the
//! listed ones: a patch of an `align`, an `offset` or the order then lays
//! the struct out again as a compiler would.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use models::layout::{layout_structs, FieldSpec, FieldType, StructSpec};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::library::respan;
use super::tree::type_phrase;
use crate::format::error::{InputError, SourceFile};

/// Largest pahole listing read.
const MAX_PAHOLE_BYTES: u64 = 4 << 20;

/// A struct of the file read from its listing: the TOML of its `fields`
/// (and `align`), to be parsed into the tree in place of `pahole`.
pub(crate) struct Import {
    pub struct_name: String,
    /// The `pahole` entry's value, where the fields are spanned.
    pub span: Range<usize>,
    pub toml: String,
}

const PAHOLE_KEYS: &[&str] = &["file", "struct"];

/// Reads every `structs.NAME.pahole` of the file. A file that is not valid
/// TOML gives none: the loader reports its syntax error next.
pub(crate) fn read_imports(source: &SourceFile) -> Result<Vec<Import>, InputError> {
    let Ok(parsed) = DeTable::parse(&source.text) else {
        return Ok(Vec::new());
    };
    let root = parsed.into_inner();
    let Some(DeValue::Table(structs)) = root.get("structs").map(|v| v.get_ref()) else {
        return Ok(Vec::new());
    };
    let mut imports = Vec::new();
    for (name, value) in structs {
        let DeValue::Table(table) = value.get_ref() else {
            continue;
        };
        let Some(pahole) = table.get("pahole") else {
            continue;
        };
        let name = name.get_ref().to_string();
        let key = format!("structs.{name}.pahole");
        for other in ["fields", "union"] {
            if table.contains_key(other) {
                return Err(InputError::at(
                    source,
                    pahole.span(),
                    &key,
                    format!("`structs.{name}` has both `pahole` and `{other}`; the listing gives the layout"),
                )
                .with_valid("either `pahole = { file = \"...\", struct = \"...\" }` or `fields = [...]`"));
            }
        }
        let DeValue::Table(reference) = pahole.get_ref() else {
            return Err(InputError::at(
                source,
                pahole.span(),
                &key,
                format!(
                    "expected a table for `{key}`, found {}",
                    type_phrase(pahole.get_ref())
                ),
            )
            .with_valid("pahole = { file = \"NAME.pahole\", struct = \"NAME\" }"));
        };
        if let Some((k, _)) = reference
            .iter()
            .find(|(k, _)| !PAHOLE_KEYS.contains(&k.get_ref().as_ref()))
        {
            let given = k.get_ref().to_string();
            return Err(InputError::at(
                source,
                k.span(),
                &format!("{key}.{given}"),
                format!("unknown key `{given}` in `{key}`"),
            )
            .with_choices(&given, PAHOLE_KEYS));
        }
        let text_of = |k: &str| -> Result<Option<Spanned<String>>, InputError> {
            match reference.get(k) {
                None => Ok(None),
                Some(v) => match v.get_ref() {
                    DeValue::String(s) if !s.trim().is_empty() => {
                        Ok(Some(Spanned::new(v.span(), s.to_string())))
                    }
                    other => Err(InputError::at(
                        source,
                        v.span(),
                        &format!("{key}.{k}"),
                        format!(
                            "expected a non-empty string for `{key}.{k}`, found {}",
                            type_phrase(other)
                        ),
                    )),
                },
            }
        };
        let Some(file) = text_of("file")? else {
            return Err(InputError::at(
                source,
                pahole.span(),
                &format!("{key}.file"),
                format!("missing key `file` in `{key}`"),
            )
            .with_valid("the listing's path, relative to the scenario file"));
        };
        let wanted = text_of("struct")?;
        let spec = read_listing(source, &name, &key, &file, wanted.as_ref())?;
        imports.push(Import {
            toml: struct_toml(&spec),
            struct_name: name,
            span: pahole.span(),
        });
    }
    Ok(imports)
}

/// Reads the listing `file` and imports its struct (`wanted`, or the
/// scenario's name for it); errors in the listing point at its own line.
fn read_listing(
    source: &SourceFile,
    name: &str,
    key: &str,
    file: &Spanned<String>,
    wanted: Option<&Spanned<String>>,
) -> Result<StructSpec, InputError> {
    use std::io::Read;
    let dir = std::path::Path::new(&source.path)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = dir.join(file.get_ref());
    let shown = path.display().to_string();
    let cannot = |why: String| {
        InputError::at(
            source,
            file.span(),
            &format!("{key}.file"),
            format!("cannot read the pahole listing `{shown}`: {why}"),
        )
    };
    // Only a regular file, and not an endless one.
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(cannot("not a regular file".into())),
        Err(e) => return Err(cannot(e.to_string())),
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_PAHOLE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_PAHOLE_BYTES {
        return Err(cannot(format!(
            "larger than {} MiB",
            MAX_PAHOLE_BYTES >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| cannot("not UTF-8 text".into()))?;
    let wanted_name = wanted.map_or(name, |s| s.get_ref().as_str());
    models::pahole::import(&text, wanted_name, name).map_err(|e| {
        if e.line == 0 {
            let span = wanted.map_or_else(|| file.span(), |s| s.span());
            let names = models::pahole::struct_names(&text);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let error = InputError::at(
                source,
                span,
                &format!("{key}.struct"),
                format!("in `{shown}`: {}", e.message),
            );
            if names.is_empty() {
                error
            } else {
                error.with_choices(wanted_name, &names)
            }
        } else {
            let listing = SourceFile::new(shown.clone(), text.clone());
            let start: usize = text
                .split_inclusive('\n')
                .take(e.line - 1)
                .map(str::len)
                .sum();
            let line_text = text[start..].lines().next().unwrap_or("");
            let indent = line_text.len() - line_text.trim_start().len();
            let span = start + indent..start + line_text.trim_end().len().max(indent + 1);
            InputError::at(&listing, span, key, e.message)
        }
    })
}

/// The spec's `fields` (and `align`) as TOML. Offsets are dropped when the C
/// rules give the same layout without them (they do for every member the
/// import checked; a bitfield's unit is the one case they may not), so
/// that patches move members as a compiler would.
fn struct_toml(spec: &StructSpec) -> String {
    let mut free = spec.clone();
    clear_offsets(&mut free);
    let same = matches!(
        (layout_structs(std::slice::from_ref(spec)), layout_structs(std::slice::from_ref(&free))),
        (Ok(a), Ok(b)) if a == b
    );
    let chosen = if same { &free } else { spec };
    let mut out = String::new();
    if let Some(a) = chosen.align {
        let _ = writeln!(out, "align = {a}");
    }
    out.push_str("fields = [\n");
    for line in fields_toml(&chosen.fields) {
        let _ = writeln!(out, "  {line},");
    }
    out.push_str("]\n");
    out
}

fn clear_offsets(spec: &mut StructSpec) {
    for f in &mut spec.fields {
        f.offset = None;
        if let FieldType::Inline(inner) = &mut f.ty {
            clear_offsets(inner);
        }
    }
}

/// One inline table per field.
fn fields_toml(fields: &[FieldSpec]) -> Vec<String> {
    let mut anonymous = 0;
    fields
        .iter()
        .map(|f| {
            let name = if f.name.is_empty() {
                // A TOML field needs a name; scripts never see it.
                anonymous += 1;
                format!("anonymous_{anonymous}")
            } else {
                f.name.clone()
            };
            let mut parts = vec![format!("name = {}", quoted(&name))];
            match &f.ty {
                FieldType::Named(t) => parts.push(format!("type = {}", quoted(t))),
                FieldType::Bytes(n) => {
                    parts.push(format!("size = {n}"));
                    if let Some(label) = &f.type_label {
                        parts.push(format!("label = {}", quoted(label)));
                    }
                }
                FieldType::Inline(inner) => {
                    let kind = if inner.is_union { "union" } else { "struct" };
                    let label = if inner.name.is_empty() {
                        kind.to_string()
                    } else {
                        format!("{kind} {}", inner.name)
                    };
                    parts.push(format!("label = {}", quoted(&label)));
                    if inner.is_union {
                        parts.push("union = true".into());
                    }
                }
            }
            if f.count > 1 {
                parts.push(format!("count = {}", f.count));
            }
            // A written-out member's `align` is its struct's own alignment.
            let align = match &f.ty {
                FieldType::Inline(inner) => f.align.max(inner.align),
                _ => f.align,
            };
            if let Some(a) = align {
                parts.push(format!("align = {a}"));
            }
            if let Some(o) = f.offset {
                parts.push(format!("offset = {o}"));
            }
            if f.anonymous {
                parts.push("anonymous = true".into());
            }
            if let Some(b) = f.bit_field {
                parts.push(format!("bits = {}", b.bits));
                parts.push(format!("bit_offset = {}", b.bit_offset));
            }
            if let FieldType::Inline(inner) = &f.ty {
                parts.push(format!(
                    "fields = [{}]",
                    fields_toml(&inner.fields).join(", ")
                ));
            }
            format!("{{ {} }}", parts.join(", "))
        })
        .collect()
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Puts every import into `root`: the struct's `pahole` entry is replaced
/// by the fields read, all spanned at that entry.
pub(crate) fn apply<'i>(
    source: &SourceFile,
    root: &mut DeTable<'i>,
    imports: &'i [Import],
) -> Result<(), InputError> {
    for import in imports {
        let parsed = DeTable::parse(&import.toml).map_err(|e| {
            InputError::at(
                source,
                import.span.clone(),
                &format!("structs.{}.pahole", import.struct_name),
                format!("internal error: the imported layout is not valid TOML: {e}"),
            )
        })?;
        let Some(DeValue::Table(structs)) = root.get_mut("structs").map(|v| v.get_mut()) else {
            continue;
        };
        let Some(DeValue::Table(table)) = structs
            .get_mut(import.struct_name.as_str())
            .map(|v| v.get_mut())
        else {
            continue;
        };
        table.remove("pahole");
        for (k, v) in parsed.into_inner() {
            table.insert(
                Spanned::new(import.span.clone(), Cow::Owned(k.into_inner().into_owned())),
                respan(v, &import.span),
            );
        }
    }
    Ok(())
}
