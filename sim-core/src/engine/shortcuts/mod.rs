//! The engine's shortcuts: faster ways of reaching what stepping reaches,
//! each behind its switch in `EngineOptions` and compared with the
//! reference by `sim-core/tests/shortcuts.rs`. (The direct resume, the
//! special transaction shape and the turn rule they all ask, `Turn`, live
//! where they act: the event loop and `coherence`.)

pub(in crate::engine) mod hoisted;
pub(in crate::engine) mod run_ahead;
pub(in crate::engine) mod spin;
pub(in crate::engine) mod summed;
