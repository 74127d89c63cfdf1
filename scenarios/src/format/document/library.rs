//! `use = ["locks/ticket", "memcg/stock"]`: merging library modules
//! ([`models::library`]) into a scenario's tree.
//!
//! The merge runs on the parsed tree, before any variant or sweep patch, so a
//! library entry is in every respect an entry of the file: a variant may
//! patch it (`"structs.page_counter.fields.usage.align" = 64`,
//! `"procedures.memcg_stock_lock.body" = "..."`) and a sweep may name it.
//! The scenario's own `structs`, `instances` and `procedures` entries win
//! over a library's of the same name, except a `[procedures.NAME]` that
//! gives only `cost_cycles`, which costs the library's procedure (its body
//! and parameters taken from the module); two used modules defining the same
//! name (which the scenario does not define itself) are an error naming
//! both. A module's requirements are used with it.
//!
//! Every value taken from a module is re-spanned to the `use` entry that
//! brought it in, so that an error about it points there; the build stage
//! recognises a library procedure by that span (see
//! [`library_of_procedure`]) to report script errors inside it by module,
//! procedure and position in its body.

use std::borrow::Cow;
use std::ops::Range;

use models::library::{self, Module};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::tree::type_phrase;
use crate::format::error::{InputError, SourceFile};
use crate::format::schema::ScenarioDoc;

/// The tables a module may fill.
pub(crate) const SECTIONS: &[&str] = &["structs", "instances", "procedures"];

const USE_HELP: &str =
    "an array of library module names, such as [\"locks/ticket\", \"memcg/stock\"]";

/// Merges the modules the root's `use` names into the root. Without `use`,
/// does nothing.
pub(crate) fn merge(source: &SourceFile, root: &mut DeTable<'_>) -> Result<(), InputError> {
    let Some(value) = root.get("use") else {
        return Ok(());
    };
    let entries = use_entries(source, value)?;

    // Each module once, with the span of the entry that first brought it in.
    let mut modules: Vec<(&'static Module, Range<usize>)> = Vec::new();
    for (name, span) in &entries {
        for m in library::closure(&[name.as_str()]) {
            if !modules.iter().any(|(o, _)| o.name == m.name) {
                modules.push((m, span.clone()));
            }
        }
    }

    merge_modules(source, root, &modules)
}

/// Merges `modules`, each with the span of its `use` entry, into the root.
fn merge_modules(
    source: &SourceFile,
    root: &mut DeTable<'_>,
    modules: &[(&Module, Range<usize>)],
) -> Result<(), InputError> {
    // The scenario's own names, which win; but not a procedure the scenario
    // only gives a cost, which the module's entry completes (below).
    let own = |section: &str, name: &str| -> bool {
        root.get(section)
            .and_then(|v| v.get_ref().as_table())
            .and_then(|t| t.get(name))
            .is_some_and(|entry| !(section == "procedures" && gives_only_a_cost(entry.get_ref())))
    };
    let mut taken: Vec<(&'static str, String, &str)> = Vec::new();
    let mut additions: Vec<(&'static str, String, Spanned<DeValue<'static>>)> = Vec::new();
    for (module, span) in modules {
        let table = parse_module(source, module, span)?;
        for (section, entries) in table {
            let section_name = section.get_ref().as_ref();
            let Some(section) = SECTIONS.iter().find(|s| **s == section_name) else {
                return Err(internal(
                    source,
                    span,
                    format!(
                        "library module `{}` has a top-level key `{section_name}`",
                        module.name
                    ),
                ));
            };
            let DeValue::Table(entries) = entries.into_inner() else {
                return Err(internal(
                    source,
                    span,
                    format!(
                        "`{section}` of library module `{}` is not a table",
                        module.name
                    ),
                ));
            };
            for (key, value) in entries {
                let name = key.into_inner().into_owned();
                if own(section, &name) {
                    continue;
                }
                if let Some((_, _, first)) =
                    taken.iter().find(|(s, n, _)| s == section && *n == name)
                {
                    let key = format!("{section}.{name}");
                    return Err(InputError::at(
                        source,
                        span.clone(),
                        "use",
                        format!(
                            "library modules `{first}` and `{}` both define `{key}`",
                            module.name
                        ),
                    )
                    .with_valid(format!(
                        "use only one of them, or define `{key}` in the scenario, which then wins over both"
                    )));
                }
                taken.push((section, name.clone(), module.name));
                additions.push((section, name, respan(value, span)));
            }
        }
    }

    for (section, name, value) in additions {
        let span = value.span();
        let slot = root
            .entry(Spanned::new(span.clone(), Cow::Borrowed(section)))
            .or_insert_with(|| Spanned::new(span.clone(), DeValue::Table(DeTable::new())));
        // A section the scenario wrote as something other than a table is
        // left for deserialization to report.
        if let DeValue::Table(table) = slot.get_mut() {
            match table.get_mut(name.as_str()).map(Spanned::get_mut) {
                // The scenario's `[procedures.NAME]` with a cost alone: the
                // module's body and parameters join it, the cost stays the
                // scenario's.
                Some(DeValue::Table(own)) => {
                    if let DeValue::Table(entry) = value.into_inner() {
                        for (key, item) in entry {
                            if !own.contains_key(key.get_ref().as_ref()) {
                                own.insert(key, item);
                            }
                        }
                    }
                }
                _ => {
                    table.insert(Spanned::new(span, Cow::Owned(name)), value);
                }
            }
        }
    }
    Ok(())
}

/// Whether a scenario's `[procedures.NAME]` gives `cost_cycles` and nothing
/// else: the cost of a library procedure's own instructions, set without
/// writing its body again.
fn gives_only_a_cost(entry: &DeValue<'_>) -> bool {
    match entry {
        DeValue::Table(t) => !t.is_empty() && t.keys().all(|k| k.get_ref() == "cost_cycles"),
        _ => false,
    }
}

/// The `use` entries: strings naming known modules, each once.
fn use_entries(
    source: &SourceFile,
    value: &Spanned<DeValue<'_>>,
) -> Result<Vec<(String, Range<usize>)>, InputError> {
    let DeValue::Array(items) = value.get_ref() else {
        return Err(InputError::at(
            source,
            value.span(),
            "use",
            format!(
                "expected an array of library module names for `use`, found {}",
                type_phrase(value.get_ref())
            ),
        )
        .with_valid(USE_HELP));
    };
    let names = library::names();
    let mut entries: Vec<(String, Range<usize>)> = Vec::new();
    for item in items.iter() {
        let Some(name) = item.get_ref().as_str() else {
            return Err(InputError::at(
                source,
                item.span(),
                "use",
                format!(
                    "expected a library module name in `use`, found {}",
                    type_phrase(item.get_ref())
                ),
            )
            .with_valid(USE_HELP));
        };
        if library::find(name).is_none() {
            return Err(InputError::at(
                source,
                item.span(),
                "use",
                format!("unknown library module `{name}` in `use`"),
            )
            .with_choices(name, &names));
        }
        if let Some((_, first)) = entries.iter().find(|(n, _)| n == name) {
            let (line, _) = source.line_col(first.start);
            return Err(InputError::at(
                source,
                item.span(),
                "use",
                format!("`use` lists `{name}` twice (first on line {line})"),
            ));
        }
        entries.push((name.to_string(), item.span()));
    }
    Ok(entries)
}

fn parse_module(
    source: &SourceFile,
    module: &Module,
    span: &Range<usize>,
) -> Result<DeTable<'static>, InputError> {
    DeTable::parse(module.text)
        .map(Spanned::into_inner)
        .map_err(|e| {
            internal(
                source,
                span,
                format!("library module `{}` is not valid TOML: {e}", module.name),
            )
        })
}

/// A fault inside a shipped module: a bug, reported at the `use` entry.
fn internal(source: &SourceFile, span: &Range<usize>, message: String) -> InputError {
    InputError::at(
        source,
        span.clone(),
        "use",
        format!("internal error: {message}"),
    )
}

/// `value` with every span (of values and keys, all the way down) replaced by `span`.
pub(super) fn respan<'i>(value: Spanned<DeValue<'i>>, span: &Range<usize>) -> Spanned<DeValue<'i>> {
    let inner = match value.into_inner() {
        DeValue::Array(mut items) => {
            for item in items.iter_mut() {
                let taken = std::mem::replace(item, Spanned::new(0..0, DeValue::Boolean(false)));
                *item = respan(taken, span);
            }
            DeValue::Array(items)
        }
        DeValue::Table(table) => DeValue::Table(
            table
                .into_iter()
                .map(|(k, v)| (Spanned::new(span.clone(), k.into_inner()), respan(v, span)))
                .collect(),
        ),
        other => other,
    };
    Spanned::new(span.clone(), inner)
}

/// The library module a procedure of `doc` comes from, when it is a
/// library's entry as merged (not the scenario's own, nor replaced by a
/// patch): its body is spanned at one of the `use` entries.
pub fn library_of_procedure(doc: &ScenarioDoc, name: &str) -> Option<&'static Module> {
    ProcedureLibraries::of(doc).module(doc, name)
}

/// [`library_of_procedure`] for any procedure of one document: the used
/// modules' `[procedures.NAME]` headers read once, each name with the
/// first module (in `use` closure order) that has it. (Reading every
/// module's text again for each procedure was a visible part of building
/// a case that uses a large module.)
pub struct ProcedureLibraries {
    headers: Vec<(&'static str, &'static Module)>,
}

impl ProcedureLibraries {
    pub fn of(doc: &ScenarioDoc) -> ProcedureLibraries {
        let used: Vec<&str> = doc.uses.iter().map(|u| u.get_ref().as_str()).collect();
        let mut headers = Vec::new();
        for m in library::closure(&used) {
            for line in m.text.lines() {
                let name = line
                    .trim()
                    .strip_prefix("[procedures.")
                    .and_then(|rest| rest.strip_suffix(']'));
                if let Some(name) = name {
                    headers.push((name, m));
                }
            }
        }
        ProcedureLibraries { headers }
    }

    /// The library module procedure `name` of `doc` comes from (see
    /// [`library_of_procedure`]).
    pub fn module(&self, doc: &ScenarioDoc, name: &str) -> Option<&'static Module> {
        let body = doc.procedures.get(name)?.body.span();
        if !doc.uses.iter().any(|u| u.span() == body) {
            return None;
        }
        self.headers
            .iter()
            .find(|(header, _)| *header == name)
            .map(|&(_, m)| m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(name: &'static str, text: &'static str) -> Module {
        Module {
            name,
            summary: "",
            requires: &[],
            needs: "",
            text,
        }
    }

    const A: &str =
        "[procedures.shared]\nbody = \"work 1\"\n[procedures.only_a]\nbody = \"work 2\"\n";
    const B: &str = "[procedures.shared]\nbody = \"work 3\"\n";

    fn merged(file: &str) -> Result<DeTable<'_>, String> {
        let source = SourceFile::new("t.toml", file);
        let mut root = DeTable::parse(file).unwrap().into_inner();
        let a = module("x/a", A);
        let b = module("y/b", B);
        let at = |s: &str| {
            let i = file.find(s).unwrap();
            i..i + s.len()
        };
        merge_modules(
            &source,
            &mut root,
            &[(&a, at("\"x/a\"")), (&b, at("\"y/b\""))],
        )
        .map(|_| root)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn two_modules_defining_one_name_are_an_error_naming_both() {
        let error = merged("use = [\"x/a\", \"y/b\"]\n").unwrap_err();
        assert_eq!(
            error,
            "error: library modules `x/a` and `y/b` both define `procedures.shared` (in `use`)\n \
             --> t.toml:1:15\n  |\n1 | use = [\"x/a\", \"y/b\"]\n  |               ^^^^^\n  |\n  \
             = valid: use only one of them, or define `procedures.shared` in the scenario, which then wins over both"
        );
    }

    #[test]
    fn the_scenario_resolves_a_clash_by_defining_the_name() {
        let file = "use = [\"x/a\", \"y/b\"]\n[procedures.shared]\nbody = \"work 9\"\n";
        let root = merged(file).unwrap();
        let procedures = root["procedures"].get_ref().as_table().unwrap();
        let names: Vec<&str> = procedures.keys().map(|k| k.get_ref().as_ref()).collect();
        assert_eq!(names, ["shared", "only_a"]);
        let body = procedures["shared"].get_ref().as_table().unwrap()["body"].get_ref();
        assert_eq!(body.as_str(), Some("work 9"));
        // The library's entry is spanned at its `use` entry.
        assert_eq!(procedures["only_a"].span(), 7..12);
    }
}
