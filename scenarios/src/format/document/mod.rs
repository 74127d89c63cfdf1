//! Reading a scenario file into its base document and its variants
//! ([`Variant`]); the cases of its `[sweep]` are [`crate::format::sweep`]'s,
//! and [`crate::format::load`] puts the two together.
//!
//! The file is parsed once into a spanned TOML tree. `variants` and `sweep`
//! are removed from the root, the rest is deserialized into the base
//! [`ScenarioDoc`] and checked (`checks`: what serde cannot express), and for
//! each `[[variants]]` entry the tree is cloned, the entry's `set` patches
//! are applied in file order (`patch`), and the result is deserialized and
//! checked again. All spans come from the same file, so an error in a
//! patched value points at the variant's line and an error in an untouched
//! value at the base's line; serde's and toml's errors are put in those
//! words by `diagnose`.
//!
//! # Patch paths
//!
//! A `set` key is a dotted path (`"structs.counter.fields.value.align"`;
//! TOML dotted keys such as `params.batch = 64` work too). Tables are walked
//! by key. In an array of tables a segment selects the element whose `name`
//! (for thread groups without a `name`: whose `script`) equals it, or else the
//! element at that numeric index. The last segment is replaced, or inserted
//! into its table (deserialization then checks it). Setting an array of named
//! tables to an array of strings that is a permutation of its element names
//! reorders the elements. An inline table value (`{ ... }`) replaces the
//! whole table.
//!
//! # Libraries
//!
//! `use = ["locks/ticket", "memcg/stock"]` merges library modules into the
//! tree before anything else reads it (see `library`): the base, every
//! variant and every sweep case start from the merged tree, so their patches
//! may change a library's entries like the file's own. `use` itself cannot
//! be patched.
//!
//! # Names
//!
//! Parameter, struct, field, instance and procedure names and procedure
//! parameters are identifiers (`[A-Za-z_][A-Za-z0-9_]*`), since scripts refer
//! to them. Script, thread group and variant names and `base_name` may also
//! contain `-` and start with a digit (`[A-Za-z0-9_-]+`).

// `InputError` is returned by value by design (it is the public error type);
// errors are rare and never on a hot path.
#![allow(clippy::result_large_err)]

pub mod btf_file;
mod checks;
mod diagnose;
pub mod import;
mod library;
pub(super) mod patch;
pub(super) mod tree;

pub use library::{library_of_procedure, ProcedureLibraries};

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use sim_core::limits::Limits;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::format::error::{InputError, SourceFile};
use crate::format::schema::ScenarioDoc;

/// One runnable document.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The variant's name (`base_name` for the base).
    pub name: String,
    /// The variant's description (`None` for the base; the scenario's own
    /// description is `doc.description`).
    pub description: Option<String>,
    /// `baseline`: the name of the variant (or the base) it is compared
    /// with, as written (checked to exist); `None` when not written (then
    /// the first variant run, [`baselines`]). Its own name: a baseline of
    /// others, compared with none.
    pub baseline: Option<String>,
    pub doc: ScenarioDoc,
}

/// For the variants `run` (in the order they run), the index in `run` of
/// each one's baseline: the variant its changes are computed against.
/// A variant with a `baseline` gets that one, one without it the first
/// variant run; the first variant without a `baseline`, and a variant
/// whose `baseline` is itself, have none (`None`). A `baseline` that is
/// not among `run` (a sweep's `variants` list may leave it out) gives none
/// either: loading refuses that ([`crate::format::sweep`]).
pub fn baselines(run: &[&Variant]) -> Vec<Option<usize>> {
    run.iter()
        .enumerate()
        .map(|(j, v)| match &v.baseline {
            Some(name) if *name == v.name => None,
            Some(name) => run.iter().position(|o| o.name == *name),
            None if j == 0 => None,
            None => Some(0),
        })
        .collect()
}

/// Bytes of memory one run's document takes, at most, per byte of the
/// file. Measured with `bounce check` (peak resident memory over the
/// documents made): a 1.2 KB scenario swept over 10 000 cases, 3 bytes per
/// byte; a 118 KB file of 9 000 `[params]` entries in 41 variants, 17 (each
/// variant clones the spanned tree and holds every parameter again, a
/// hundred and more bytes per 13-byte line).
pub(crate) const DOCUMENT_BYTES_PER_FILE_BYTE: u64 = 16;

/// The same for the fields an import writes into every document, which
/// are denser in tables than a file a person writes: measured with `bounce
/// check` on a listing of 10 structs of 12 800 members each in 51 documents
/// (peak resident memory over the TOML the imports gave), 19 bytes per
/// byte, rounded up.
pub(crate) const DOCUMENT_BYTES_PER_IMPORTED_BYTE: u64 = 20;

/// Host memory `documents` documents of the scenario in `source` take, at
/// most: each holds the file and what its imports expand to.
pub(crate) fn documents_bytes(
    source: &SourceFile,
    imports: &[import::Import],
    documents: u64,
) -> u64 {
    documents.saturating_mul(document_bytes(source, imports))
}

/// Host memory one document of the scenario in `source` takes, at most.
pub(crate) fn document_bytes(source: &SourceFile, imports: &[import::Import]) -> u64 {
    (source.text.len() as u64)
        .saturating_mul(DOCUMENT_BYTES_PER_FILE_BYTE)
        .saturating_add(
            import::imported_bytes(imports).saturating_mul(DOCUMENT_BYTES_PER_IMPORTED_BYTE),
        )
}

/// Refuses to make `documents` documents of the scenario in `source` when
/// they are more than `limits.runs`, or would take more than
/// `limits.host_memory_bytes`; `what` says where they come from. Each
/// document holds the file and what its imports expand to (`imports`: the
/// fields read from pahole listings, as TOML), so both count.
pub(crate) fn check_document_budget(
    source: &SourceFile,
    imports: &[import::Import],
    span: Range<usize>,
    key: &str,
    documents: u64,
    what: &str,
    limits: &Limits,
) -> Result<(), InputError> {
    if documents > limits.runs {
        return Err(InputError::at(
            source,
            span,
            key,
            format!(
                "{what}: {documents} runs, more than the limit of {}",
                limits.runs
            ),
        )
        .with_valid(format!(
            "at most {} runs; raise the limit with `--set-limit runs={documents}`",
            limits.runs
        )));
    }
    let imported = import::imported_bytes(imports);
    let estimate = documents_bytes(source, imports, documents);
    if estimate > limits.host_memory_bytes {
        let with_imports = if imported > 0 {
            format!(" (and {imported} bytes of fields imported from pahole listings)")
        } else {
            String::new()
        };
        return Err(InputError::at(
            source,
            span,
            key,
            format!(
                "{what}: {documents} runs of a {}-byte file{with_imports} would take about {} \
                 MiB to hold, more than the limit of {} MiB",
                source.text.len(),
                estimate >> 20,
                limits.host_memory_bytes >> 20
            ),
        )
        .with_valid(format!(
            "fewer runs or a smaller file; or raise the limit with \
             `--set-limit host_memory_bytes={estimate}`"
        )));
    }
    Ok(())
}

/// The file's tree as every document (base, variant, sweep case) starts
/// from: parsed, with `variants` and `sweep` taken out and the library
/// modules of `use` merged in.
pub(super) struct Prepared<'i> {
    pub root_span: Range<usize>,
    pub root: DeTable<'i>,
    pub variants: Option<Spanned<DeValue<'i>>>,
    pub sweep: Option<Spanned<DeValue<'i>>>,
}

pub(super) fn prepare<'a>(
    source: &'a SourceFile,
    imports: &'a [import::Import],
) -> Result<Prepared<'a>, InputError> {
    prepare_parsed(source, imports, DeTable::parse(&source.text))
}

/// [`prepare`] with `source`'s text already parsed (once, for the imports
/// and the document alike: `crate::format::load`).
pub(super) fn prepare_parsed<'a>(
    source: &'a SourceFile,
    imports: &'a [import::Import],
    parsed: Result<Spanned<DeTable<'a>>, toml::de::Error>,
) -> Result<Prepared<'a>, InputError> {
    let parsed = parsed.map_err(|e| diagnose::from_syntax_error(source, &e))?;
    let root_span = parsed.span();
    let mut root = parsed.into_inner();
    let variants = root.remove("variants");
    let sweep = root.remove("sweep");
    library::merge(source, &mut root)?;
    import::apply(source, &mut root, imports)?;
    Ok(Prepared {
        root_span,
        root,
        variants,
        sweep,
    })
}

/// The base, the variants, and whether the file has a `[sweep]` (read by
/// [`crate::format::sweep`] once the base and the variants are known), from
/// `source` and its text as parsed.
pub(super) fn load_source<'a>(
    source: &'a SourceFile,
    limits: &Limits,
    imports: &'a [import::Import],
    parsed: Result<Spanned<DeTable<'a>>, toml::de::Error>,
) -> Result<(Variant, Vec<Variant>, bool), InputError> {
    let Prepared {
        root_span,
        root,
        variants: variants_value,
        sweep,
    } = prepare_parsed(source, imports, parsed)?;

    let stem = default_name(&source.path);
    let base_doc = doc_from_tree(source, &root, &root_span, &stem, limits)?;
    let specs = match variants_value {
        Some(v) => patch::parse_variants(source, v)?,
        None => Vec::new(),
    };
    if !specs.is_empty() {
        check_document_budget(
            source,
            imports,
            specs[0].name.span(),
            "variants",
            specs.len() as u64 + 1,
            &format!("the base and {} variant(s)", specs.len()),
            limits,
        )?;
    }
    let base_name = base_doc.base_name.clone();
    check_variant_names(source, &base_name, &specs)?;

    let mut variants = Vec::with_capacity(specs.len());
    for spec in specs {
        let name = spec.name.get_ref().clone();
        let in_variant = |mut e: InputError| {
            e.message = format!("in variant `{name}`: {}", e.message);
            e
        };
        let mut patched = DeValue::Table(root.clone());
        for entry in &spec.sets {
            patch::apply(source, &mut patched, entry).map_err(in_variant)?;
        }
        let DeValue::Table(patched) = patched else {
            return Err(in_variant(InputError::at(
                source,
                0..0,
                "",
                "internal error: root is not a table",
            )));
        };
        let doc = doc_from_tree(source, &patched, &root_span, &stem, limits).map_err(in_variant)?;
        variants.push(Variant {
            name,
            description: spec.description,
            baseline: spec.baseline.map(Spanned::into_inner),
            doc,
        });
    }
    let base = Variant {
        name: base_name.into_inner(),
        description: None,
        baseline: None,
        doc: base_doc,
    };
    Ok((base, variants, sweep.is_some()))
}

/// No variant is named as the base, and each `baseline` names the base
/// or a variant (itself included).
fn check_variant_names(
    source: &SourceFile,
    base_name: &Spanned<String>,
    specs: &[patch::VariantSpec<'_>],
) -> Result<(), InputError> {
    if let Some(spec) = specs
        .iter()
        .find(|s| s.name.get_ref() == base_name.get_ref())
    {
        let how = if base_name.span().is_empty() {
            "the default `base_name`".to_string()
        } else {
            let (line, _) = source.line_col(base_name.span().start);
            format!("`base_name` on line {line}")
        };
        let key = format!("variants.{}.name", tree::join_path(&[spec.name.get_ref()]));
        return Err(InputError::at(
            source,
            spec.name.span(),
            &key,
            format!(
                "`{key}` is `{}`, which is the base's name ({how})",
                spec.name.get_ref()
            ),
        )
        .with_valid("a variant name different from `base_name` and from the other variants"));
    }

    // Each `baseline` names the base or a variant (itself included).
    let mut names: Vec<&str> = vec![base_name.get_ref().as_str()];
    names.extend(specs.iter().map(|s| s.name.get_ref().as_str()));
    for spec in specs {
        if let Some(b) = &spec.baseline {
            if !names.contains(&b.get_ref().as_str()) {
                let key = format!(
                    "variants.{}.baseline",
                    tree::join_path(&[spec.name.get_ref()])
                );
                return Err(InputError::at(
                    source,
                    b.span(),
                    &key,
                    format!(
                        "`{key}` is `{}`, which is neither the base (`base_name`) nor a variant",
                        b.get_ref()
                    ),
                )
                .with_choices(b.get_ref(), &names));
            }
        }
    }
    Ok(())
}

/// Deserializes one document from its tree and checks it
/// ([`checks::check_document`]).
pub(super) fn doc_from_tree(
    source: &SourceFile,
    root: &DeTable<'_>,
    root_span: &Range<usize>,
    default_name: &str,
    limits: &Limits,
) -> Result<ScenarioDoc, InputError> {
    let de = toml::de::Deserializer::from(Spanned::new(root_span.clone(), root.clone()));
    let mut doc = ScenarioDoc::deserialize(de)
        .map_err(|e| diagnose::from_de_error(source, root, root_span, &e))?;
    if doc.name.is_empty() {
        doc.name = default_name.to_string();
    }
    checks::check_document(source, root, &doc, limits)?;
    Ok(doc)
}

/// The file stem of `path`, or `scenario` if it has none.
pub(super) fn default_name(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "scenario".to_string())
}

/// Which characters a name may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// `[A-Za-z_][A-Za-z0-9_]*`
    Identifier,
    /// `[A-Za-z0-9_-]+`
    Name,
}

impl NameRule {
    fn accepts(self, name: &str) -> bool {
        let mut bytes = name.bytes();
        match self {
            NameRule::Identifier => {
                bytes
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                    && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }
            NameRule::Name => {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            }
        }
    }

    fn describe(self) -> &'static str {
        match self {
            NameRule::Identifier => {
                "an identifier: letters, digits and `_`, not starting with a digit"
            }
            NameRule::Name => "letters, digits, `_` and `-`",
        }
    }
}

/// Checks that `name` (written at `span`) follows `rule`; `what` is e.g.
/// "parameter name", `key` the path of the name.
pub(crate) fn check_name(
    source: &SourceFile,
    name: &Spanned<String>,
    key: &str,
    what: &str,
    rule: NameRule,
) -> Result<(), InputError> {
    if rule.accepts(name.get_ref()) {
        return Ok(());
    }
    let message = if name.get_ref().is_empty() {
        format!("empty {what} at `{key}`")
    } else {
        format!("invalid {what} `{}` at `{key}`", name.get_ref())
    };
    Err(InputError::at(source, name.span(), key, message).with_valid(rule.describe()))
}
