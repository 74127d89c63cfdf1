//! scenarios: the TOML scenario format and its checks with precise errors,
//! variants as patches on a base, sweeps as cases of more patches, the
//! machines documents describe, building runnable configurations, running
//! them (in parallel across runs), the result records, results files and
//! text reports, and the tools built on them.
//!
//! It never draws and never simulates by itself: simulation is `sim-core`'s,
//! machines and layout rules are `models`'.
//!
//! # Layers
//!
//! The modules are six layers, each a folder, read in this order; a module
//! imports only from its own layer and the layers before it
//! (`tests/layers.rs` enforces it):
//!
//! 1. [`format`](mod@format): schema, errors, loading a file into its base, variants and
//!    sweep cases ([`LoadedScenario`]), and every check made while loading;
//! 2. [`machine`]: a document's machine, preset or inline, as a `sim_core`
//!    topology, and its instruction costs;
//! 3. [`build`]: a document as a runnable `SimConfig`;
//! 4. [`run`]: running the cases, the result records, the `[[measured]]`
//!    figures computed from them;
//! 5. [`report`]: text reports, results files, shards and their merge, the
//!    step trace and the message timeline;
//! 6. [`tools`]: `bounce optimize`, `validate`, `layout` and `presets`.
//!
//! Loading needs one thing from a later layer: a sweep's CPU counts become
//! CPUs once the case's machine is known. [`format::load`] takes the machine
//! resolution as a [`format::MachineOf`]; the crate root composes the two in
//! [`load_str`], [`load_str_with`], [`load_file`] and [`load_file_with`],
//! which pass [`machine::build_machine`].

// `InputError` is returned by value by design (it is the public error type);
// errors are rare and never on a hot path.
#![allow(clippy::result_large_err)]

// The layers, in order (each one its own block, so that rustfmt does not
// sort them by name).
pub mod format;

pub mod machine;

pub mod build;

pub mod run;

pub mod report;

pub mod tools;

use std::path::Path;

pub use format::{
    ImportScope, InputError, Limits, LoadedScenario, ScenarioDoc, SourceFile, Variant,
};

/// Loads a scenario from text under the default [`Limits`]; `path` is
/// used in errors and for the default name.
pub fn load_str(path: &str, text: &str) -> Result<LoadedScenario, InputError> {
    load_str_with(path, text, &Limits::default())
}

/// Loads a scenario from text under `limits`.
pub fn load_str_with(
    path: &str,
    text: &str,
    limits: &Limits,
) -> Result<LoadedScenario, InputError> {
    load_str_in(path, text, limits, ImportScope::default())
}

/// Loads a scenario from text under `limits`, its imports read from
/// `scope`.
pub fn load_str_in(
    path: &str,
    text: &str,
    limits: &Limits,
    scope: ImportScope,
) -> Result<LoadedScenario, InputError> {
    format::load(path, text, limits, scope, machine::build_machine)
}

/// The machine of a machine file (one `[machine]` table, as `bounce presets
/// show NAME --toml` prints it), checked as a scenario's machine is; errors
/// name the file's own line and key.
pub fn machine_from_file(
    path: &Path,
    limits: &Limits,
) -> Result<sim_core::topology::Topology, InputError> {
    format::machine_file::machine_from_file(path, limits, machine::build_machine)
}

/// The note a scenario's machine brings when it starts from a preset, sets
/// another `clock_mhz` and inherits latency legs in the preset's cycles
/// ([`machine::clock_note`]); `None` otherwise (or when the machine does
/// not build: its error is said elsewhere).
pub fn machine_clock_note(loaded: &LoadedScenario) -> Option<machine::ClockNote> {
    let doc = &loaded.base.doc;
    // Only a machine table that sets its own clock can bring the note:
    // look before building the machine, a whole topology (a third of a
    // million instructions at 512 CPUs, once per run).
    let format::schema::MachineRef::Inline(own) = &doc.machine else {
        return None;
    };
    own.clock_mhz.as_ref()?;
    let topology = machine::build_machine(&loaded.source, doc).ok()?;
    machine::clock_note(&loaded.source, doc, &topology.spec)
}

/// [`machine_from_file`], with how its legs were given.
pub fn machine_file_view(
    path: &Path,
    limits: &Limits,
) -> Result<machine::MachineFileView, InputError> {
    let checked =
        format::machine_file::machine_from_file_checked(path, limits, machine::build_machine)?;
    let spec = &checked.topology.spec;
    let legs = machine::leg_origins(&checked.doc, spec);
    let clock_note = machine::clock_note(&checked.source, &checked.doc, spec).map(|mut note| {
        // The file's own line, not the checking scenario's.
        if note.file == checked.source.path && note.line > checked.prefix_lines {
            note.line -= checked.prefix_lines;
        }
        note
    });
    // A span of the checking scenario as the machine file's own line.
    let line_of = |span: std::ops::Range<usize>| {
        let place = format::error::Place::at(&checked.source, span);
        place.line.saturating_sub(checked.prefix_lines)
    };
    let keys = machine::key_origins(&checked.doc, spec, &line_of);
    Ok(machine::MachineFileView {
        keys,
        legs,
        clock_note,
        topology: checked.topology,
    })
}

/// Loads a scenario file under the default [`Limits`]. An unreadable file
/// is an error with line 0.
pub fn load_file(path: &Path) -> Result<LoadedScenario, InputError> {
    load_file_with(path, &Limits::default())
}

/// Loads a scenario file under `limits`.
pub fn load_file_with(path: &Path, limits: &Limits) -> Result<LoadedScenario, InputError> {
    load_file_in(path, limits, ImportScope::default())
}

/// Loads a scenario file under `limits`, its imports read from `scope`
/// (the scenario's own directory tree unless the user said otherwise).
pub fn load_file_in(
    path: &Path,
    limits: &Limits,
    scope: ImportScope,
) -> Result<LoadedScenario, InputError> {
    let (shown, text) = format::read_file(path, limits)?;
    load_str_in(&shown, &text, limits, scope)
}
