//! The fifth layer: output. Nothing here runs a simulation: it reads built
//! cases, their results and the probes' records.
//!
//! It imports from every layer before it ([`crate::format`],
//! [`crate::machine`], [`crate::build`], [`crate::run`]).
//!
//! - [`text`]: the text report (each variant beside the base, attribution
//!   per field and per line, fairness; a sweep's table);
//! - [`compare`]: what a comparison of two runs compares (the measured
//!   thread group's cycles, or the throughput), for the reports and charts;
//! - [`measured`]: the "measured vs simulated" table;
//! - [`output`]: the results files (`results.csv`, `results.json`,
//!   `fields.csv`), shard manifests and their merge;
//! - [`resume`]: the finished cases of a run with `--out`, kept as they
//!   finish so that `--resume` runs only the others;
//! - [`trace`]: the step trace of `bounce trace`;
//! - [`timeline`]: the messages of the first coherence transactions, for the
//!   timeline chart.

pub mod compare;
pub mod measured;
pub mod output;
pub mod resume;
pub mod text;
pub mod timeline;
pub mod trace;
