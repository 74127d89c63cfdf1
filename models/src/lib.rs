//! models: what the simulator is told about the world.
//!
//! - `presets`: machines with sourced numbers (every constant says where it
//!   comes from and whether it is measured, documented, derived or assumed);
//! - `layout`: C struct layout rules and the placement of instances
//!   (global, per-node, per-CPU areas) in memory;
//! - `pahole`: reading pahole's text listings into struct specs, checked
//!   against the layout rules;
//! - `btf`: reading the kernel's BTF (bytes a caller hands over) into
//!   struct specs, alignment inferred, checked against the layout rules;
//! - `calibration`: the measured core-to-core matrices shipped in `data/c2c`
//!   (which machine, the preset it stands for, how that preset is adjusted);
//! - `library`: locking schemes, counters and the memcg charge path as
//!   script-language modules a scenario selects with `use`.
//!
//! This crate reads no files and draws nothing: it turns descriptions into
//! the resolved types of `sim-core`.

pub mod btf;
pub mod calibration;
pub mod layout;
pub mod library;
pub mod pahole;
pub mod presets;
