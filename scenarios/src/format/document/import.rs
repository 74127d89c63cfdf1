//! `pahole = { file, struct }` and `btf = { file, struct }`: a struct whose
//! layout comes from a pahole listing or from BTF (the kernel's
//! `/sys/kernel/btf/vmlinux`, or a `vmlinux`'s `.BTF` section). The loader
//! reads the file (relative to the scenario file) before anything else
//! looks at the tree, and writes the struct it gives into the tree as
//! `fields` (written-out members with `fields` of their own, bitfields with
//! `bits`), spanned at the `pahole` or `btf` entry. The base, every variant
//! and every sweep case then start from those fields, so a patch changes an
//! imported member exactly as a declared one:
//! `"structs.mem_cgroup.fields.memory.fields.usage.align" = 64`.
//!
//! Offsets are left to the C rules where they give the imported ones: a
//! patch of an `align`, an `offset` or the order then lays the struct out
//! again as a compiler would.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use models::layout::{drop_redundant_offsets, FieldSpec, FieldType, StructSpec};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::library::respan;
use super::tree::type_phrase;
use crate::format::error::{closest, InputError, SourceFile};

/// Largest pahole listing read.
const MAX_PAHOLE_BYTES: u64 = 4 << 20;

/// A struct of the file read from its listing or BTF: the TOML of its
/// `fields` (and `align`, `union`), to be parsed into the tree in place of
/// the `pahole` or `btf` entry.
pub(crate) struct Import {
    pub struct_name: String,
    /// The entry's key (`pahole` or `btf`).
    pub source_key: &'static str,
    /// The entry's value, where the fields are spanned.
    pub span: Range<usize>,
    pub toml: String,
}

const REFERENCE_KEYS: &[&str] = &["file", "struct"];

/// The kinds of import, by their key, with an example of the entry.
const SOURCES: &[(&str, &str)] = &[
    (
        "pahole",
        "pahole = { file = \"NAME.pahole\", struct = \"NAME\" }",
    ),
    (
        "btf",
        "btf = { file = \"/sys/kernel/btf/vmlinux\", struct = \"NAME\" }",
    ),
];

/// Reads every `structs.NAME.pahole` and `structs.NAME.btf` of the file.
/// A file that is not valid TOML gives none: the loader reports its syntax
/// error next.
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
        let given: Vec<&(&str, &str)> = SOURCES
            .iter()
            .filter(|(k, _)| table.contains_key(*k))
            .collect();
        let name = name.get_ref().to_string();
        if let [first, second, ..] = given.as_slice() {
            let entry = table.get(second.0).expect("present");
            return Err(InputError::at(
                source,
                entry.span(),
                &format!("structs.{name}.{}", second.0),
                format!(
                    "`structs.{name}` has both `{}` and `{}`; one gives the layout",
                    first.0, second.0
                ),
            )
            .with_valid(format!("either `{}` or `{}`", first.1, second.1)));
        }
        let Some(&&(source_key, example)) = given.first() else {
            continue;
        };
        let entry = table.get(source_key).expect("present");
        let key = format!("structs.{name}.{source_key}");
        for other in ["fields", "union"] {
            if table.contains_key(other) {
                return Err(InputError::at(
                    source,
                    entry.span(),
                    &key,
                    format!("`structs.{name}` has both `{source_key}` and `{other}`; the {} gives the layout", if source_key == "btf" { "BTF" } else { "listing" }),
                )
                .with_valid(format!("either `{example}` or `fields = [...]`")));
            }
        }
        let DeValue::Table(reference) = entry.get_ref() else {
            return Err(InputError::at(
                source,
                entry.span(),
                &key,
                format!(
                    "expected a table for `{key}`, found {}",
                    type_phrase(entry.get_ref())
                ),
            )
            .with_valid(example));
        };
        if let Some((k, _)) = reference
            .iter()
            .find(|(k, _)| !REFERENCE_KEYS.contains(&k.get_ref().as_ref()))
        {
            let given = k.get_ref().to_string();
            return Err(InputError::at(
                source,
                k.span(),
                &format!("{key}.{given}"),
                format!("unknown key `{given}` in `{key}`"),
            )
            .with_choices(&given, REFERENCE_KEYS));
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
                entry.span(),
                &format!("{key}.file"),
                format!("missing key `file` in `{key}`"),
            )
            .with_valid(if source_key == "btf" {
                "the BTF's path, relative to the scenario file (/sys/kernel/btf/vmlinux for the running kernel's, or a vmlinux)"
            } else {
                "the listing's path, relative to the scenario file"
            }));
        };
        let wanted = text_of("struct")?;
        let spec = if source_key == "btf" {
            read_btf(source, &name, &key, &file, wanted.as_ref())?
        } else {
            read_listing(source, &name, &key, &file, wanted.as_ref())?
        };
        imports.push(Import {
            toml: struct_toml(&spec),
            struct_name: name,
            source_key,
            span: entry.span(),
        });
    }
    Ok(imports)
}

/// Reads the BTF `file` and imports its struct (`wanted`, or the
/// scenario's name for it); errors name the file and the byte at fault.
fn read_btf(
    source: &SourceFile,
    name: &str,
    key: &str,
    file: &Spanned<String>,
    wanted: Option<&Spanned<String>>,
) -> Result<StructSpec, InputError> {
    let dir = std::path::Path::new(&source.path)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = dir.join(file.get_ref());
    let shown = path.display().to_string();
    let btf = super::btf_file::read(&path).map_err(|why| {
        InputError::at(
            source,
            file.span(),
            &format!("{key}.file"),
            format!("cannot read the BTF `{shown}`: {why}"),
        )
    })?;
    let wanted_name = wanted.map_or(name, |s| s.get_ref().as_str());
    models::btf::import(&btf.bytes, wanted_name, name).map_err(|e| {
        if e.offset.is_none() {
            let span = wanted.map_or_else(|| file.span(), |s| s.span());
            let names = models::btf::struct_names(&btf.bytes);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let error = InputError::at(
                source,
                span,
                &format!("{key}.struct"),
                format!("in `{shown}`: {}", e.message),
            )
            .with_valid(format!(
                "one of its {} structs and unions with members (`pahole {shown}` lists them)",
                names.len()
            ));
            match closest(wanted_name, &names) {
                Some(near) => error.with_suggestion(near),
                None => error,
            }
        } else {
            InputError::at(
                source,
                file.span(),
                &format!("{key}.file"),
                format!("in the BTF `{shown}`, {}", btf.describe(&e)),
            )
        }
    })
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

/// The spec's `fields` (and `align`, `union`) as TOML. Offsets are dropped
/// where the C rules give them anyway (for every member an import checked;
/// a bitfield's unit or a member no alignment puts in place keeps its
/// own), so that patches move members as a compiler would.
pub(crate) fn struct_toml(spec: &StructSpec) -> String {
    let chosen = drop_redundant_offsets(spec).unwrap_or_else(|_| spec.clone());
    let mut out = String::new();
    if chosen.is_union {
        out.push_str("union = true\n");
    }
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

/// Puts every import into `root`: the struct's `pahole` or `btf` entry is replaced
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
                &format!("structs.{}.{}", import.struct_name, import.source_key),
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
        table.remove(import.source_key);
        for (k, v) in parsed.into_inner() {
            table.insert(
                Spanned::new(import.span.clone(), Cow::Owned(k.into_inner().into_owned())),
                respan(v, &import.span),
            );
        }
    }
    Ok(())
}
