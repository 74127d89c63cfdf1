//! sim-core: the deterministic discrete-event engine of bounce.
//!
//! What lives here: simulated time, the machine topology, the per-line
//! directory and per-core cache states, the MESI/MESIF/MOESI protocol, the
//! x86-TSO store buffer, the script compiler and interpreter, and probes that
//! observe coherence events.
//!
//! What never lives here: files, TOML, plotting, threads or wall-clock time.
//! The crate takes a fully resolved [`engine::SimConfig`] and returns a
//! [`engine::RunOutcome`]; everything about where the input came from belongs
//! to the `scenarios` crate.
//!
//! Design rules that every module keeps:
//! - time is an integer [`Cycle`]; events are ordered by (cycle, key), the
//!   key made from the event itself, never from when it was queued, so
//!   a run is a pure function of its configuration and seed;
//! - no `HashMap` iteration and no floating point in anything that decides
//!   ordering or values;
//! - a protocol violation is a bug and stops the run with the cycle, line and
//!   states ([`SimError::ProtocolViolation`]); bad input never reaches here
//!   unvalidated, but where it could, it is an error, not a panic.

pub mod checker;
pub mod coherence;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod limits;
pub mod memory;
pub mod probe;
pub mod protocol_table;
mod queue;
pub mod script;
pub mod stats;
pub mod time;
pub mod topology;

pub use error::SimError;
pub use time::{Cycle, Cycles};
