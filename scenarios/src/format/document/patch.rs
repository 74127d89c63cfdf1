//! `[[variants]]`: parsing the variant list and applying `set` patches.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::tree::{element_name, element_segment, find_element, join_path, type_phrase};
use super::{check_name, NameRule};
use crate::format::error::{InputError, SourceFile};

/// One `[[variants]]` entry, before its patches are applied.
pub(crate) struct VariantSpec<'i> {
    pub name: Spanned<String>,
    pub description: Option<String>,
    /// `baseline`: the variant (or the base) this one is compared with, as
    /// written; checked once every name is known.
    pub baseline: Option<Spanned<String>>,
    /// In file order.
    pub sets: Vec<SetEntry<'i>>,
}

/// One `set` entry: a dotted path and its new value.
pub(crate) struct SetEntry<'i> {
    /// Path segments with the byte span each was written at.
    pub segments: Vec<(String, Range<usize>)>,
    /// Where the entry's last key segment was written; entries apply in this order.
    pub order: usize,
    pub value: Spanned<DeValue<'i>>,
}

impl SetEntry<'_> {
    fn path(&self) -> String {
        let names: Vec<&str> = self.segments.iter().map(|(s, _)| s.as_str()).collect();
        join_path(&names)
    }
}

const VARIANT_KEYS: &[&str] = &["name", "description", "baseline", "set"];

/// Parses the `variants` value (removed from the root table).
pub(crate) fn parse_variants<'i>(
    source: &SourceFile,
    value: Spanned<DeValue<'i>>,
) -> Result<Vec<VariantSpec<'i>>, InputError> {
    let span = value.span();
    let elements = match value.into_inner() {
        DeValue::Array(a) => a,
        other => {
            return Err(InputError::at(
                source,
                span,
                "variants",
                format!(
                    "expected an array of tables for `variants` (write `[[variants]]`), found {}",
                    type_phrase(&other)
                ),
            ))
        }
    };
    let mut specs: Vec<VariantSpec<'i>> = Vec::new();
    for (index, element) in elements.into_iter().enumerate() {
        let spec = parse_variant(source, index, element, &specs)?;
        specs.push(spec);
    }
    Ok(specs)
}

/// Parses `[[variants]]` entry `index`, whose name must differ from the
/// entries' before it (`earlier`).
fn parse_variant<'i>(
    source: &SourceFile,
    index: usize,
    element: Spanned<DeValue<'i>>,
    earlier: &[VariantSpec<'i>],
) -> Result<VariantSpec<'i>, InputError> {
    let element_span = element.span();
    let mut table = variant_table(source, index, element)?;
    let name = variant_name(source, index, &mut table, element_span.clone())?;
    let prefix = format!("variants.{}", join_path(&[name.get_ref()]));
    check_name(
        source,
        &name,
        &format!("{prefix}.name"),
        "variant name",
        NameRule::Name,
    )?;
    if let Some(first) = earlier.iter().find(|s| s.name.get_ref() == name.get_ref()) {
        let (line, _) = source.line_col(first.name.span().start);
        return Err(InputError::at(
            source,
            name.span(),
            &prefix,
            format!("duplicate variant name: `{prefix}` is already defined on line {line}"),
        )
        .with_valid("a variant name different from `base_name` and from the other variants"));
    }
    let description = optional_variant_string(source, &mut table, &prefix, "description", "")?
        .map(Spanned::into_inner);
    let baseline = optional_variant_string(
        source,
        &mut table,
        &prefix,
        "baseline",
        " (the name of the variant it is compared with)",
    )?;
    let sets = variant_sets(source, &prefix, &mut table, element_span)?;
    Ok(VariantSpec {
        name,
        description,
        baseline,
        sets,
    })
}

/// `[[variants]]` entry `index` as a table, refused when it is not one
/// or has a key a variant does not take (named by the variant's name when
/// it has one, else by its index).
fn variant_table<'i>(
    source: &SourceFile,
    index: usize,
    element: Spanned<DeValue<'i>>,
) -> Result<DeTable<'i>, InputError> {
    let element_span = element.span();
    let table = match element.into_inner() {
        DeValue::Table(t) => t,
        other => {
            let key = format!("variants.{index}");
            return Err(InputError::at(
                source,
                element_span,
                &key,
                format!(
                    "expected a table for `{key}`, found {}",
                    type_phrase(&other)
                ),
            ));
        }
    };
    if let Some((key, _)) = table
        .iter()
        .find(|(k, _)| !VARIANT_KEYS.contains(&k.get_ref().as_ref()))
    {
        let given = key.get_ref().to_string();
        let prefix = match table.get("name").and_then(|n| n.get_ref().as_str()) {
            Some(n) => format!("variants.{}", join_path(&[n])),
            None => format!("variants.{index}"),
        };
        return Err(InputError::at(
            source,
            key.span(),
            &format!("{prefix}.{}", join_path(&[&given])),
            format!("unknown key `{given}` in `{prefix}`"),
        )
        .with_choices(&given, VARIANT_KEYS));
    }
    Ok(table)
}

/// The optional string `key` of the variant `prefix` (taken from its
/// table), with its place; `meaning` (empty, or a bracketed phrase with a
/// leading space) says in the error what the string names.
fn optional_variant_string(
    source: &SourceFile,
    table: &mut DeTable<'_>,
    prefix: &str,
    key: &str,
    meaning: &str,
) -> Result<Option<Spanned<String>>, InputError> {
    let Some(v) = table.remove(key) else {
        return Ok(None);
    };
    match v.get_ref() {
        DeValue::String(s) => Ok(Some(Spanned::new(v.span(), s.to_string()))),
        other => {
            let key = format!("{prefix}.{key}");
            Err(InputError::at(
                source,
                v.span(),
                &key,
                format!(
                    "expected a string for `{key}`{meaning}, found {}",
                    type_phrase(other)
                ),
            ))
        }
    }
}

/// The `name` of `[[variants]]` entry `index` (taken from its table),
/// which must be a string.
fn variant_name(
    source: &SourceFile,
    index: usize,
    table: &mut DeTable<'_>,
    element_span: Range<usize>,
) -> Result<Spanned<String>, InputError> {
    match table.remove("name") {
        Some(v) => match v.get_ref() {
            DeValue::String(s) => Ok(Spanned::new(v.span(), s.to_string())),
            other => {
                let key = format!("variants.{index}.name");
                Err(InputError::at(
                    source,
                    v.span(),
                    &key,
                    format!(
                        "expected a string for `{key}`, found {}",
                        type_phrase(other)
                    ),
                ))
            }
        },
        None => {
            let key = format!("variants.{index}");
            Err(InputError::at(
                source,
                element_span,
                &format!("{key}.name"),
                format!("missing key `name` in `{key}`"),
            ))
        }
    }
}

/// The variant's `set` table (taken from its table) as entries in the
/// order they apply.
fn variant_sets<'i>(
    source: &SourceFile,
    prefix: &str,
    table: &mut DeTable<'i>,
    element_span: Range<usize>,
) -> Result<Vec<SetEntry<'i>>, InputError> {
    let set = match table.remove("set") {
        Some(v) => v,
        None => {
            return Err(InputError::at(
                source,
                element_span,
                &format!("{prefix}.set"),
                format!("missing key `set` in `{prefix}`"),
            ))
        }
    };
    let set_span = set.span();
    let mut sets = Vec::new();
    match set.into_inner() {
        DeValue::Table(t) => flatten_set(
            source,
            &format!("{prefix}.set"),
            t,
            &mut Vec::new(),
            &mut sets,
        )?,
        other => {
            let key = format!("{prefix}.set");
            return Err(InputError::at(
                source,
                set_span,
                &key,
                format!(
                    "expected a table of `\"dotted.path\" = value` entries for `{key}`, found {}",
                    type_phrase(&other)
                ),
            ));
        }
    }
    sets.sort_by_key(|s| s.order);
    Ok(sets)
}

/// Collects `set` entries. Keys are split on `.`; a value that is a table but
/// not an inline `{ ... }` table came from TOML dotted keys or headers
/// (`params.batch = 1`) and is treated as a continuation of the path.
/// `within` is the key of the table being read (`variants.NAME.set`,
/// `sweep`), for messages.
pub(crate) fn flatten_set<'i>(
    source: &SourceFile,
    within: &str,
    table: DeTable<'i>,
    prefix: &mut Vec<(String, Range<usize>)>,
    out: &mut Vec<SetEntry<'i>>,
) -> Result<(), InputError> {
    for (key, value) in table {
        let segments = split_key(source, key.get_ref(), key.span());
        let depth = prefix.len();
        prefix.extend(segments);
        let path_for_errors = || {
            let names: Vec<&str> = prefix.iter().map(|(s, _)| s.as_str()).collect();
            join_path(&names)
        };
        if let Some((_, span)) = prefix.iter().find(|(s, _)| s.is_empty()) {
            return Err(InputError::at(
                source,
                span.clone(),
                within,
                format!(
                    "empty segment in the path `{}` in `{within}`",
                    path_for_errors()
                ),
            )
            .with_valid("a dotted path such as \"structs.counter.fields.value.align\""));
        }
        let is_inline = source
            .text
            .get(value.span().start..)
            .is_some_and(|t| t.starts_with('{'));
        match value.get_ref() {
            DeValue::Table(_) if !is_inline => {
                let span = value.span();
                match value.into_inner() {
                    DeValue::Table(t) if !t.is_empty() => {
                        flatten_set(source, within, t, prefix, out)?
                    }
                    _ => {
                        return Err(InputError::at(
                            source,
                            span,
                            within,
                            format!("no value given for `{}` in `{within}`", path_for_errors()),
                        ))
                    }
                }
            }
            _ => {
                out.push(SetEntry {
                    segments: prefix.clone(),
                    order: prefix.last().map_or(0, |(_, s)| s.start),
                    value,
                });
            }
        }
        prefix.truncate(depth);
    }
    Ok(())
}

/// Splits a key on `.`, giving each segment its exact span when the key was
/// written without escapes (bare, `"..."` or `'...'`), else the whole key's span.
fn split_key(source: &SourceFile, key: &str, span: Range<usize>) -> Vec<(String, Range<usize>)> {
    let raw = source.text.get(span.clone()).unwrap_or("");
    let inner_start = if raw == key {
        Some(span.start)
    } else if raw.len() == key.len() + 2
        && (raw.starts_with('"') || raw.starts_with('\''))
        && raw.get(1..raw.len() - 1) == Some(key)
    {
        Some(span.start + 1)
    } else {
        None
    };
    let mut out = Vec::new();
    let mut offset = 0;
    for segment in key.split('.') {
        let seg_span = match inner_start {
            Some(s) => s + offset..s + offset + segment.len(),
            None => span.clone(),
        };
        out.push((segment.to_string(), seg_span));
        offset += segment.len() + 1;
    }
    out
}

/// Applies one `set` entry to `root` (a `DeValue::Table`).
pub(crate) fn apply<'i>(
    source: &SourceFile,
    root: &mut DeValue<'i>,
    entry: &SetEntry<'i>,
) -> Result<(), InputError> {
    let full = entry.path();
    if let Some((first, span)) = entry.segments.first() {
        if first == "use" {
            return Err(InputError::at(
                source,
                span.clone(),
                &full,
                "`use` cannot be changed by a variant or a sweep: the library modules are merged before any patch applies",
            )
            .with_valid(
                "list every module the variants need in the file's `use`, and patch their entries (`procedures.NAME.body`, `structs.NAME.fields...`)",
            ));
        }
    }
    let n = entry.segments.len();
    let mut current = root;
    for (i, (segment, seg_span)) in entry.segments.iter().enumerate() {
        let walked: Vec<&str> = entry.segments[..i]
            .iter()
            .map(|(s, _)| s.as_str())
            .collect();
        let walked = join_path(&walked);
        let last = i + 1 == n;
        let fail = |msg: String| InputError::at(source, seg_span.clone(), &full, msg);
        current = match current {
            DeValue::Table(table) => {
                if last {
                    return set_in_table(source, table, segment, seg_span, entry, &full);
                }
                if !table.contains_key(segment.as_str()) {
                    let keys: Vec<String> = table.keys().map(|k| k.get_ref().to_string()).collect();
                    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                    let msg = if walked.is_empty() {
                        format!("cannot set `{full}`: there is no top-level key `{segment}`")
                    } else {
                        format!("cannot set `{full}`: `{walked}` has no key `{segment}`")
                    };
                    return Err(fail(msg).with_choices(segment, &keys));
                }
                match table.get_mut(segment.as_str()) {
                    Some(v) => v.get_mut(),
                    None => return Err(fail(format!("cannot set `{full}`"))),
                }
            }
            DeValue::Array(array) => {
                let Some(index) = find_element(array, segment) else {
                    let names: Vec<String> = (0..array.len())
                        .map(|i| element_segment(array, i))
                        .collect();
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    return Err(fail(format!(
                        "cannot set `{full}`: `{walked}` has no element named `{segment}`"
                    ))
                    .with_choices(segment, &names));
                };
                let Some(slot) = array.get_mut(index) else {
                    return Err(fail(format!("cannot set `{full}`")));
                };
                if last {
                    *slot = entry.value.clone();
                    return Ok(());
                }
                slot.get_mut()
            }
            other => {
                let msg = if walked == "machine" && other.is_str() {
                    format!(
                        "cannot set `{full}`: `machine` is a preset name here; write `[machine]` with `preset = ...` to override its keys"
                    )
                } else {
                    format!(
                        "cannot set `{full}`: `{walked}` is {}, not a table",
                        type_phrase(other)
                    )
                };
                return Err(fail(msg));
            }
        };
    }
    Ok(())
}

/// Sets the last segment in `table`: reorder, replace or insert.
fn set_in_table<'i>(
    source: &SourceFile,
    table: &mut DeTable<'i>,
    segment: &str,
    seg_span: &Range<usize>,
    entry: &SetEntry<'i>,
    full: &str,
) -> Result<(), InputError> {
    match table.get_mut(segment) {
        Some(existing) => {
            if let Some(order) = reorder_request(existing.get_ref(), entry.value.get_ref()) {
                return reorder(source, existing, &order, entry, full);
            }
            *existing = entry.value.clone();
        }
        None => {
            // Every name is a valid parameter, so a parameter the base does
            // not declare would be added unread: a misspelt one would leave
            // the variant equal to the base without a word.
            if entry.segments.len() == 2 && entry.segments[0].0 == "params" {
                let names: Vec<String> = table.keys().map(|k| k.get_ref().to_string()).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(InputError::at(
                    source,
                    seg_span.clone(),
                    full,
                    format!(
                        "cannot set `{full}`: `[params]` has no parameter `{segment}` (a variant changes a parameter the scenario declares; declare it in `[params]` with its base value to add one)"
                    ),
                )
                .with_choices(segment, &names));
            }
            table.insert(
                Spanned::new(seg_span.clone(), Cow::Owned(segment.to_string())),
                entry.value.clone(),
            );
        }
    }
    Ok(())
}

/// If `existing` is an array of named tables and `new` an array of strings,
/// the requested order (with each string's span).
fn reorder_request(existing: &DeValue<'_>, new: &DeValue<'_>) -> Option<Vec<Spanned<String>>> {
    let existing = existing.as_array()?;
    let new = new.as_array()?;
    if existing.is_empty() || !existing.iter().all(|e| element_name(e.get_ref()).is_some()) {
        return None;
    }
    new.iter()
        .map(|v| {
            v.get_ref()
                .as_str()
                .map(|s| Spanned::new(v.span(), s.to_string()))
        })
        .collect()
}

fn reorder<'i>(
    source: &SourceFile,
    existing: &mut Spanned<DeValue<'i>>,
    order: &[Spanned<String>],
    entry: &SetEntry<'i>,
    full: &str,
) -> Result<(), InputError> {
    let Some(elements) = existing.get_ref().as_array() else {
        return Ok(());
    };
    let names: Vec<String> = elements
        .iter()
        .map(|e| element_name(e.get_ref()).unwrap_or("").to_string())
        .collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let fail = |span: Range<usize>, msg: String| InputError::at(source, span, full, msg);

    let mut seen = BTreeSet::new();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(fail(
                entry.value.span(),
                format!("cannot reorder `{full}`: more than one element is named `{n}`"),
            ));
        }
    }
    for wanted in order {
        let w = wanted.get_ref();
        if !names.contains(w) {
            let missing: Vec<&str> = name_refs
                .iter()
                .copied()
                .filter(|n| !order.iter().any(|o| o.get_ref() == n))
                .collect();
            let mut err = fail(
                wanted.span(),
                format!("cannot reorder `{full}`: it has no element named `{w}`"),
            )
            .with_choices(w, &name_refs);
            err.suggestions = crate::format::error::closest(w, &missing)
                .or_else(|| crate::format::error::closest(w, &name_refs))
                .into_iter()
                .map(str::to_string)
                .collect();
            return Err(err);
        }
        if !seen.insert(w.as_str()) {
            return Err(fail(
                wanted.span(),
                format!("cannot reorder `{full}`: `{w}` is listed more than once"),
            )
            .with_valid(format!("a permutation of {}", name_refs.join(", "))));
        }
    }
    let missing: Vec<&str> = name_refs
        .iter()
        .copied()
        .filter(|n| !seen.contains(n))
        .collect();
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(fail(
            entry.value.span(),
            format!("cannot reorder `{full}`: the new order leaves out {list}"),
        )
        .with_valid(format!("a permutation of {}", name_refs.join(", "))));
    }
    let DeValue::Array(array) = existing.get_mut() else {
        return Ok(());
    };
    let old: Vec<Spanned<DeValue<'i>>> = array.to_vec();
    for (slot, wanted) in array.iter_mut().zip(order) {
        if let Some(pos) = names.iter().position(|n| n == wanted.get_ref()) {
            *slot = old[pos].clone();
        }
    }
    Ok(())
}
