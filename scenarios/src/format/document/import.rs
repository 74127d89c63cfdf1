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
use crate::format::read::{read_bounded, ReadError};
use sim_core::limits::Limits;

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

/// Where a scenario's imports (`pahole = { file }`, `btf = { file }`) may
/// be read from.
///
/// A scenario is something people share: its paths are data, not keys to
/// the machine, so by default they may not leave the scenario's own
/// directory tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImportScope {
    /// Inside the directory of the scenario file and below it, after
    /// following `..` and symbolic links (the default).
    #[default]
    ScenarioDirectory,
    /// Wherever the path leads, absolute paths included
    /// (`--allow-imports-outside`).
    Anywhere,
}

/// A listing read in one load: its canonical path, its text, and its
/// structs (or why it has none).
struct Listing {
    path: std::path::PathBuf,
    text: String,
    parsed: Result<Vec<models::pahole::ListedStruct>, models::pahole::PaholeError>,
}

/// Listings read so far in one load, each read and parsed once however
/// many structs import from it.
type Listings = Vec<Listing>;

/// Reads every `structs.NAME.pahole` and `structs.NAME.btf` of the file,
/// each file inside `scope` and at most its limit; `root` is the file's
/// text as parsed (once, for the document too: a file that is not valid
/// TOML has no root here, and the loader reports its syntax error).
pub(crate) fn read_imports(
    source: &SourceFile,
    root: &DeTable<'_>,
    limits: &Limits,
    scope: ImportScope,
) -> Result<Vec<Import>, InputError> {
    let Some(DeValue::Table(structs)) = root.get("structs").map(|v| v.get_ref()) else {
        return Ok(Vec::new());
    };
    let mut imports = Vec::new();
    let mut listings: Listings = Vec::new();
    for (name, value) in structs {
        let DeValue::Table(table) = value.get_ref() else {
            continue;
        };
        let name = name.get_ref().to_string();
        let Some((source_key, example)) = import_source(source, &name, table)? else {
            continue;
        };
        let entry = table.get(source_key).expect("present");
        let key = format!("structs.{name}.{source_key}");
        let reference = reference_table(source, &name, &key, table, entry, (source_key, example))?;
        let Some(file) = reference_text(source, &key, reference, "file")? else {
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
        let wanted = reference_text(source, &key, reference, "struct")?;
        let reference = ImportRef {
            source,
            name: &name,
            key: &key,
            file: &file,
            wanted: wanted.as_ref(),
            btf: source_key == "btf",
        };
        let spec = if reference.btf {
            reference.import_btf(scope)?
        } else {
            reference.import_listing(limits, scope, &mut listings)?
        };
        imports.push(Import {
            toml: struct_toml(&spec),
            struct_name: name,
            source_key,
            span: entry.span(),
        });
        // The base document holds every import: counted as each is made,
        // so that many structs importing a large file stop here.
        let documents_bytes = super::document_bytes(source, &imports);
        if documents_bytes > limits.host_memory_bytes {
            return Err(InputError::at(
                source,
                entry.span(),
                &key,
                format!(
                    "the structs imported so far expand to {} bytes of fields, which would take \
                     about {} MiB to hold, more than the limit of {} MiB",
                    imported_bytes(&imports),
                    documents_bytes >> 20,
                    limits.host_memory_bytes >> 20
                ),
            )
            .with_valid(format!(
                "fewer or smaller imports; or raise the limit with \
                 `--set-limit host_memory_bytes={documents_bytes}`"
            )));
        }
    }
    Ok(imports)
}

/// The kind of import `structs.NAME` asks for (its key and an example of
/// the entry), `None` when it imports nothing; two kinds are an error.
fn import_source(
    source: &SourceFile,
    name: &str,
    table: &DeTable<'_>,
) -> Result<Option<(&'static str, &'static str)>, InputError> {
    let given: Vec<&(&str, &str)> = SOURCES
        .iter()
        .filter(|(k, _)| table.contains_key(*k))
        .collect();
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
    Ok(given.first().map(|&&(k, example)| (k, example)))
}

/// The import's reference table (`entry`, at `key`), once struct `name` is
/// checked to give no layout of its own and the table to hold only
/// `file` and `struct`.
fn reference_table<'t, 'i>(
    source: &SourceFile,
    name: &str,
    key: &str,
    table: &DeTable<'i>,
    entry: &'t Spanned<DeValue<'i>>,
    (source_key, example): (&str, &str),
) -> Result<&'t DeTable<'i>, InputError> {
    for other in ["fields", "union"] {
        if table.contains_key(other) {
            return Err(InputError::at(
                source,
                entry.span(),
                key,
                format!("`structs.{name}` has both `{source_key}` and `{other}`; the {} gives the layout", if source_key == "btf" { "BTF" } else { "listing" }),
            )
            .with_valid(format!("either `{example}` or `fields = [...]`")));
        }
    }
    let DeValue::Table(reference) = entry.get_ref() else {
        return Err(InputError::at(
            source,
            entry.span(),
            key,
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
    Ok(reference)
}

/// Key `k` of the reference table at `key`: a non-empty string, or absent.
fn reference_text(
    source: &SourceFile,
    key: &str,
    reference: &DeTable<'_>,
    k: &str,
) -> Result<Option<Spanned<String>>, InputError> {
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
}

/// Bytes of the fields the imports expand to, as TOML: what each document
/// holds for them besides the file.
pub(crate) fn imported_bytes(imports: &[Import]) -> u64 {
    imports.iter().map(|i| i.toml.len() as u64).sum()
}

/// One `pahole = { file, struct }` or `btf = { file, struct }` entry, for
/// reading and for errors.
struct ImportRef<'a> {
    source: &'a SourceFile,
    /// The scenario's name for the struct.
    name: &'a str,
    /// `structs.NAME.pahole` or `structs.NAME.btf`.
    key: &'a str,
    file: &'a Spanned<String>,
    wanted: Option<&'a Spanned<String>>,
    /// A `btf` entry (else `pahole`).
    btf: bool,
}

impl ImportRef<'_> {
    /// What the file is, for messages.
    fn what(&self) -> &'static str {
        if self.btf {
            "BTF"
        } else {
            "pahole listing"
        }
    }

    /// An error at the `file` value.
    fn at_file(&self, message: String) -> InputError {
        InputError::at(
            self.source,
            self.file.span(),
            &format!("{}.file", self.key),
            message,
        )
    }

    /// The file's path, checked against `scope`: `(as shown, canonical)`.
    fn resolve(&self, scope: ImportScope) -> Result<(String, std::path::PathBuf), InputError> {
        use std::path::Path;
        // `a.toml` has the parent ``: its directory is `.`, and its
        // listings are shown as written.
        let parent = Path::new(&self.source.path)
            .parent()
            .unwrap_or(Path::new(""));
        let dir = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let given = Path::new(self.file.get_ref());
        let path = parent.join(given);
        let shown = path.display().to_string();
        let what = self.what();
        let outside = |how: &str| {
            let copy = if self.btf {
                " (copy the running kernel's `/sys/kernel/btf/vmlinux` beside it)"
            } else {
                ""
            };
            self.at_file(format!(
                "the {what} `{shown}` is outside the scenario's directory `{}` ({how}); a \
                 scenario's imports stay inside its own directory tree",
                dir.display()
            ))
            .with_valid(format!(
                "a path relative to the scenario file that stays below its directory{copy}; \
                 or `--allow-imports-outside` to read it from there, if you trust the scenario"
            ))
        };
        if scope == ImportScope::ScenarioDirectory && given.is_absolute() {
            return Err(outside("an absolute path"));
        }
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            self.at_file(format!("cannot read the {what} `{shown}`: {e}"))
                .with_valid(format!(
                    "an existing file, named relative to the scenario's directory `{}`",
                    std::fs::canonicalize(dir)
                        .unwrap_or(dir.to_path_buf())
                        .display()
                ))
        })?;
        if scope == ImportScope::ScenarioDirectory {
            let root = std::fs::canonicalize(dir).map_err(|e| {
                self.at_file(format!(
                    "cannot resolve the scenario's directory `{}`: {e}",
                    dir.display()
                ))
            })?;
            if !canonical.starts_with(&root) {
                return Err(outside("through `..` or a symbolic link"));
            }
        }
        Ok((shown, canonical))
    }

    /// Reads the BTF (its bound and the ELF handling are `btf_file`'s) and
    /// imports the struct; errors name the file and the byte at fault.
    fn import_btf(&self, scope: ImportScope) -> Result<StructSpec, InputError> {
        let (shown, canonical) = self.resolve(scope)?;
        let btf = super::btf_file::read(&canonical)
            .map_err(|why| self.at_file(format!("cannot read the BTF `{shown}`: {why}")))?;
        let wanted_name = self.wanted.map_or(self.name, |s| s.get_ref().as_str());
        models::btf::import(&btf.bytes, wanted_name, self.name).map_err(|e| {
            if e.offset.is_none() {
                let span = self.wanted.map_or_else(|| self.file.span(), |s| s.span());
                let names = models::btf::struct_names(&btf.bytes);
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let error = InputError::at(
                    self.source,
                    span,
                    &format!("{}.struct", self.key),
                    format!("in `{shown}`: {}", e.message),
                )
                .with_valid(format!(
                    "one of its {}",
                    btf_struct_choices(wanted_name, &names, &shown.to_string())
                ));
                match closest(wanted_name, &names) {
                    Some(near) => error.with_suggestion(near),
                    None => error,
                }
            } else {
                self.at_file(format!("in the BTF `{shown}`, {}", btf.describe(&e)))
            }
        })
    }

    /// Reads (once per load) and imports the listing; errors in the
    /// listing point at its own line and quote at most the token at fault.
    fn import_listing(
        &self,
        limits: &Limits,
        scope: ImportScope,
        listings: &mut Listings,
    ) -> Result<StructSpec, InputError> {
        let (shown, canonical) = self.resolve(scope)?;
        let index = match listings.iter().position(|l| l.path == canonical) {
            Some(i) => i,
            None => {
                let bytes = read_bounded(&canonical, limits.pahole_bytes).map_err(|e| match e {
                    ReadError::TooLarge { limit_bytes } => self
                        .at_file(format!(
                            "cannot read the pahole listing `{shown}`: it is larger than the \
                             limit of {limit_bytes} bytes for a listing"
                        ))
                        .with_valid(format!(
                            "a listing of the structs the scenario uses (`pahole -C NAME`); \
                             or raise the limit with `--set-limit pahole_bytes={}`",
                            limit_bytes.saturating_mul(2)
                        )),
                    ReadError::Io(e) => self
                        .at_file(format!("cannot read the pahole listing `{shown}`: {e}"))
                        .with_valid(
                            "a file holding the structs' listing as `pahole -C NAME` prints it, \
                             named relative to the scenario's directory",
                        ),
                })?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    let (line, _) = line_col_of(e.as_bytes(), e.utf8_error().valid_up_to());
                    self.at_file(format!(
                        "cannot read the pahole listing `{shown}`: it is not UTF-8 text \
                         (line {line})"
                    ))
                })?;
                let parsed = models::pahole::parse(&text);
                listings.push(Listing {
                    path: canonical,
                    text,
                    parsed,
                });
                listings.len() - 1
            }
        };
        let wanted_name = self.wanted.map_or(self.name, |s| s.get_ref().as_str());
        let listing = &listings[index];
        let result = match &listing.parsed {
            Ok(listed) => models::pahole::import_listed(listed, wanted_name, self.name),
            Err(e) => Err(e.clone()),
        };
        result.map_err(|e| {
            if e.line == 0 {
                let span = self.wanted.map_or_else(|| self.file.span(), |s| s.span());
                let names: Vec<&str> = match &listing.parsed {
                    Ok(listed) => listed.iter().map(|s| s.name.as_str()).collect(),
                    Err(_) => Vec::new(),
                };
                let error = InputError::at(
                    self.source,
                    span,
                    &format!("{}.struct", self.key),
                    format!("in `{shown}`: {}", e.message),
                );
                if names.is_empty() {
                    error
                } else {
                    error.with_choices(wanted_name, &names)
                }
            } else {
                // The listing's line is not shown: a listing is data, and
                // its errors quote no more of it than the token at fault.
                let line_text = listing.text.lines().nth(e.line - 1).unwrap_or("");
                let indent = line_text.chars().take_while(|c| c.is_whitespace()).count();
                let mut error = InputError::whole_file(&shown, e.message);
                error.line = e.line;
                error.column = indent + 1;
                error.key = self.key.to_string();
                error
            }
        })
    }
}

/// 1-based (line, column) of a byte offset in bytes that may not be UTF-8.
/// A BTF this small has its struct names listed whole in an error.
const BTF_NAMES_LISTED: usize = 12;

/// What a BTF whose structs and unions with members are `names` offers
/// instead of `wanted`, after "it has" or "one of its": every name when
/// there are few; else the names that share a word (3 characters or more,
/// `_` apart) with `wanted`, a dozen at most, and how to list them all (a
/// vmlinux has thousands), those starting with one first; else how to
/// list them.
pub fn btf_struct_choices(wanted: &str, names: &[&str], shown: &str) -> String {
    let count = names.len();
    let quoted = |names: &[&str]| -> String {
        let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        listed.join(", ")
    };
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() <= BTF_NAMES_LISTED {
        return format!(
            "{count} structs and unions with members: {}",
            quoted(&sorted)
        );
    }
    let words: Vec<String> = wanted
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_ascii_lowercase)
        .collect();
    let mut sharing: Vec<&str> = sorted
        .iter()
        .copied()
        .filter(|n| {
            let n = n.to_ascii_lowercase();
            words.iter().any(|w| n.contains(w.as_str()))
        })
        .collect();
    // The likeliest first: names that start with one of the words, then
    // the shortest (`page` before `bpf_stream_page`).
    sharing.sort_by_key(|n| {
        let n_lower = n.to_ascii_lowercase();
        let starts = words.iter().any(|w| n_lower.starts_with(w.as_str()));
        (!starts, n.len(), *n)
    });
    let all = format!("`pahole {shown}` lists them all");
    let shown_words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match sharing.len() {
        0 => format!(
            "{count} structs and unions with members, none with {} in its name ({all})",
            if shown_words.is_empty() {
                format!("`{wanted}`")
            } else {
                shown_words.join(" or ")
            }
        ),
        n if n <= BTF_NAMES_LISTED => format!(
            "{count} structs and unions with members, those with {} in their names: {} ({all})",
            shown_words.join(" or "),
            quoted(&sharing)
        ),
        n => format!(
            "{count} structs and unions with members, {n} with {} in their names, such as {} \
             ({all})",
            shown_words.join(" or "),
            quoted(&sharing[..BTF_NAMES_LISTED])
        ),
    }
}

fn line_col_of(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, column)
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

#[cfg(test)]
mod tests {
    use super::btf_struct_choices;

    /// A vmlinux has thousands of structs: the error lists those that share
    /// a word with the name asked for (those starting with it first), at
    /// most a dozen, or says how to list them all.
    #[test]
    fn a_large_btf_offers_the_names_sharing_a_word() {
        let mut names: Vec<String> = (0..500).map(|i| format!("filler_{i:03}")).collect();
        names.extend(["bpf_stream_page", "page", "page_frag", "zone_page_state"].map(String::from));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            btf_struct_choices("pages_info", &names, "vmlinux"),
            "504 structs and unions with members, none with `pages` or `info` in its name \
             (`pahole vmlinux` lists them all)"
        );
        assert_eq!(
            btf_struct_choices("page_countr", &names, "vmlinux"),
            "504 structs and unions with members, those with `page` or `countr` in their names: \
             `page`, `page_frag`, `bpf_stream_page`, `zone_page_state` (`pahole vmlinux` lists \
             them all)"
        );
        assert_eq!(
            btf_struct_choices("filler", &names, "vmlinux"),
            "504 structs and unions with members, 500 with `filler` in their names, such as \
             `filler_000`, `filler_001`, `filler_002`, `filler_003`, `filler_004`, \
             `filler_005`, `filler_006`, `filler_007`, `filler_008`, `filler_009`, \
             `filler_010`, `filler_011` (`pahole vmlinux` lists them all)"
        );
        // A few names: all of them.
        assert_eq!(
            btf_struct_choices("zzz", &["b", "a"], "f.btf"),
            "2 structs and unions with members: `a`, `b`"
        );
    }
}
