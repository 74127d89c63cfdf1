//! The third layer: from a loaded scenario's documents to runnable
//! `SimConfig`s ([`BuiltVariant`]s): the machine ([`crate::machine`]), the
//! structs laid out and the instances placed, the scripts parsed and
//! compiled with the machine's instruction costs, and the CPUs assigned.
//! Every failure is an [`InputError`](crate::format::InputError) pointing at
//! the key in the file that caused it.
//!
//! It imports from [`crate::format`] and [`crate::machine`].
//!
//! - `config`: [`BuildOptions`], [`BuiltVariant`], [`build_config`] (one
//!   document) and [`build_all`] (the base and every variant);
//! - `structs`: [`struct_specs`], a document's structs as the layout rules
//!   take them, and layout errors at their keys;
//! - `scripts`: [`position_in_string`], script positions as file positions;
//!   [`ScriptSources`], which a [`BuiltVariant`] carries so that its run's
//!   errors can point at the file's lines (or a library module's);
//! - `endless`: loops nothing leaves (`while 1 { }`), refused in a run of
//!   `run.iterations`, which they could never end;
//! - `reach`: which instances the code that runs names
//!   ([`instances_named_by_running_code`]): the others are placed but not
//!   reported.

// `InputError` is returned by value by design (it is the public error type);
// errors are rare and never on a hot path.
#![allow(clippy::result_large_err)]

mod config;
mod endless;
mod reach;
mod scripts;
mod structs;

pub use config::{
    build_all, build_config, check_held_bytes, config_bytes, counts_field_costs_per_cpu,
    measured_threads, run_bytes, BuildOptions, BuiltVariant,
};
pub use reach::{instances_named_by_running_code, instances_no_running_code_names};
pub use scripts::{library_module_path, position_in_string, ScriptSources};
pub(crate) use structs::layout_error;
pub use structs::struct_specs;
