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

use crate::format::document;
use crate::format::error::{InputError, SourceFile};
use crate::format::measured::check_measured_entries;
use crate::format::sweep::{self, Case, MachineOf};
use crate::format::LoadedScenario;

/// Loads a scenario from text under `limits`; `path` is used in errors and
/// for the default name. `machine_of` gives the machine of a sweep case's
/// document, to turn a CPU count into CPUs.
pub fn load(
    path: &str,
    text: &str,
    limits: &Limits,
    machine_of: MachineOf,
) -> Result<LoadedScenario, InputError> {
    if text.len() as u64 > limits.scenario_bytes {
        return Err(too_large(path, text.len() as u64, limits));
    }
    let source = Arc::new(SourceFile::new(path, text));
    let (base, variants, has_sweep) = document::load_source(&source, limits)?;
    let expanded = if has_sweep {
        sweep::expand(&source, limits, &base, &variants, machine_of)?
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
    let loaded = LoadedScenario {
        source,
        base,
        variants,
        sweep,
        cases,
        limits: *limits,
    };
    check_measured_entries(&loaded)?;
    Ok(loaded)
}

/// Reads a scenario file under `limits`: the path as errors show it, and
/// the text. A file larger than `limits.scenario_bytes` is never read; an
/// unreadable file is an error with line 0.
pub fn read_file(path: &Path, limits: &Limits) -> Result<(String, String), InputError> {
    let shown = path.display().to_string();
    // Measured before reading, so a huge file is never read.
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_file() && meta.len() > limits.scenario_bytes {
            return Err(too_large(&shown, meta.len(), limits));
        }
    }
    let bytes = std::fs::read(path)
        .map_err(|e| InputError::whole_file(&shown, format!("cannot read `{shown}`: {e}")))?;
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

fn too_large(path: &str, bytes: u64, limits: &Limits) -> InputError {
    InputError::whole_file(
        path,
        format!(
            "`{path}` is {bytes} bytes, more than the limit of {} bytes for a scenario file",
            limits.scenario_bytes
        ),
    )
    .with_valid(format!(
        "a smaller file, or raise the limit with `--set-limit scenario_bytes={bytes}`"
    ))
}
