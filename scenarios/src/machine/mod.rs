//! The second layer: the machine a document describes, a preset
//! (`models::presets`) or an inline `[machine]` table, resolved into a
//! `sim_core` [`Topology`](sim_core::topology::Topology)
//! ([`build_machine`]), and the instruction costs scripts read with
//! `cost(NAME)` ([`instruction_costs`]).
//!
//! It imports only from [`crate::format`], and needs of a scenario only the
//! file (for its errors) and the document: the format layer's sweep
//! expansion calls [`build_machine`] through a
//! [`MachineOf`](crate::format::MachineOf) to turn CPU counts into CPUs.

// `InputError` is returned by value by design (it is the public error type);
// errors are rare and never on a hot path.
#![allow(clippy::result_large_err)]

mod costs;
mod resolve;

pub use costs::instruction_costs;
pub(crate) use costs::instruction_costs_from;
pub use resolve::build_machine;
pub(crate) use resolve::build_machine_with_preset;
pub use resolve::{
    clock_note, cycles_to_ns, key_origins, leg_origins, ns_to_cycles, ClockNote, KeyGiven,
    KeyOrigin, LegGiven, LegOrigin, MachineFileView,
};
