//! The fourth layer: running. Every variant of every case in parallel across
//! runs (rayon, never two threads inside one simulation), results collected
//! in case order then variant order whatever the number of host threads, the
//! result records, and the figures of `[[measured]]` computed from them.
//!
//! It imports from [`crate::format`], [`crate::machine`] and
//! [`crate::build`].
//!
//! - [`budget`]: the host threads and the memory the runs of one process
//!   share;
//! - [`results`]: running one built variant into a [`results::VariantResult`];
//! - [`cases`]: building and running a scenario's cases;
//! - [`estimate`]: each case's simulated events, estimated from a short
//!   prefix of its runs (`bounce check`);
//! - [`measured`]: each `[[measured]]` figure beside the simulated one
//!   ([`measured::Comparison`]).

pub mod budget;
pub mod cases;
pub mod estimate;
pub mod measured;
pub mod results;
