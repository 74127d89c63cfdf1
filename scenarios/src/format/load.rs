//! Loading a scenario from its text: the base and the variants
//! ([`crate::format::document`]), then the cases of its `[sweep]`
//! ([`crate::format::sweep`], which needs each case's machine, found through
//! the [`MachineOf`] it is given), then the `[[measured]]` checks
//! ([`crate::format::measured`]).
//!
//! The crate's [`load_str`](crate::load_str) and
//! [`load_file`](crate::load_file) call these with the machine layer's
//! [`build_machine`](crate::machine::build_machine).

// `InputError` is returned by value by design (it is the public error type);
// errors are rare and never on a hot path.
#![allow(clippy::result_large_err)]

use std::path::Path;
use std::sync::Arc;

use sim_core::limits::Limits;
use toml::de::DeTable;

use crate::format::document;
use crate::format::document::import::ImportScope;
use crate::format::error::{InputError, SourceFile};
use crate::format::measured::check_measured_entries;
use crate::format::read::{read_bounded, ReadError};
use crate::format::sweep::{self, Case, MachineOf};
use crate::format::LoadedScenario;

/// Loads a scenario from text under `limits`; `path` is used in errors and
/// for the default name; `scope` says where its imports may be read from. `machine_of` gives the machine of a sweep case's
/// document, to turn a CPU count into CPUs.
pub fn load(
    path: &str,
    text: &str,
    limits: &Limits,
    scope: ImportScope,
    machine_of: MachineOf,
) -> Result<LoadedScenario, InputError> {
    if text.len() as u64 > limits.scenario_bytes {
        return Err(too_large(path, Some(text.len() as u64), limits));
    }
    // The text is parsed once for its machine files, its imports and its
    // document, and again only where a machine file was written in. A
    // syntax error is reported by the document's reading (the machine
    // files and the imports find none).
    let given = SourceFile::new(path, text);
    let parsed_given = DeTable::parse(text);
    // Machines kept in files of their own are written in first, on the
    // lines that name them.
    let expanded_text = match &parsed_given {
        Ok(root) => {
            crate::format::machine_file::expand(&given, root.get_ref(), limits, scope, machine_of)?
        }
        Err(_) => None,
    };
    let written_in = expanded_text.is_some();
    let source = Arc::new(match expanded_text {
        Some((text, inlined)) => SourceFile {
            inlined,
            ..SourceFile::new(path, text)
        },
        None => given,
    });
    let parsed = if written_in {
        DeTable::parse(&source.text)
    } else {
        parsed_given
    };
    // Each listing is read and parsed once, for the base, the variants and
    // the sweep's cases alike.
    let imports = match &parsed {
        Ok(root) => document::import::read_imports(&source, root.get_ref(), limits, scope)?,
        Err(_) => Vec::new(),
    };
    let (base, variants, has_sweep) = document::load_source(&source, limits, &imports, parsed)?;
    let expanded = if has_sweep {
        sweep::expand(&source, limits, &base, &variants, machine_of, &imports)?
    } else {
        None
    };
    let (sweep, cases) = match expanded {
        Some((sweep, cases)) => (Some(sweep), cases),
        None => {
            let case = Case {
                index: 0,
                id: String::new(),
                seed: base.doc.seed,
                values: Vec::new(),
                variants: std::iter::once(&base).chain(&variants).cloned().collect(),
            };
            (None, vec![case])
        }
    };
    // The documents held: the base and the variants, and each case's.
    let documents = 1
        + variants.len() as u64
        + if sweep.is_some() {
            cases.iter().map(|c| c.variants.len() as u64).sum()
        } else {
            0
        };
    let documents_bytes = document::documents_bytes(&source, &imports, documents);
    let loaded = LoadedScenario {
        source,
        base,
        variants,
        sweep,
        cases,
        limits: *limits,
        documents_bytes,
    };
    check_measured_entries(&loaded)?;
    Ok(loaded)
}

/// Reads a scenario file under `limits`: the path as errors show it, and
/// the text. At most `limits.scenario_bytes + 1` bytes are read, whatever
/// the path names (a device, a pipe, a link to either); an unreadable file
/// is an error with line 0.
pub fn read_file(path: &Path, limits: &Limits) -> Result<(String, String), InputError> {
    let shown = path.display().to_string();
    let bytes = read_bounded(path, limits.scenario_bytes).map_err(|e| match e {
        ReadError::TooLarge { .. } => {
            // The size, where the file has one, for the message only.
            let size = std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file() && m.len() > limits.scenario_bytes)
                .map(|m| m.len());
            too_large(&shown, size, limits)
        }
        ReadError::Io(e) => InputError::whole_file(&shown, format!("cannot read `{shown}`: {e}")),
    })?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((shown, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let source = SourceFile::new(shown, String::from_utf8_lossy(e.as_bytes()));
            Err(InputError::at(
                &source,
                at..at + 1,
                "",
                "the file is not valid UTF-8",
            ))
        }
    }
}

/// The error for a scenario larger than its limit: `bytes` when the size
/// is known (text given whole), else only that it is larger.
fn too_large(path: &str, bytes: Option<u64>, limits: &Limits) -> InputError {
    let limit = limits.scenario_bytes;
    let (size, raise) = match bytes {
        Some(b) => (format!("is {b} bytes, more"), b),
        None => ("is larger".to_string(), limit.saturating_mul(2)),
    };
    InputError::whole_file(
        path,
        format!("`{path}` {size} than the limit of {limit} bytes for a scenario file"),
    )
    .with_valid(format!(
        "a smaller file, or raise the limit with `--set-limit scenario_bytes={raise}`"
    ))
}
