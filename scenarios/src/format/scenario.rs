//! [`LoadedScenario`]: what loading a scenario file gives the later layers
//! (its base and variants from [`crate::format::document`], its cases from
//! [`crate::format::sweep`]).

use std::ops::Range;
use std::sync::Arc;

use sim_core::limits::Limits;

use crate::format::document::Variant;
use crate::format::error::{InputError, SourceFile};
use crate::format::sweep::{Case, Sweep};

/// A loaded scenario: the base document and one document per variant.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    /// The file the documents' spans point into.
    pub source: Arc<SourceFile>,
    pub base: Variant,
    /// In file order; excludes the base.
    pub variants: Vec<Variant>,
    /// The `[sweep]`, if the file has one.
    pub sweep: Option<Sweep>,
    /// What a run runs: every case of the sweep, in case order, each with
    /// the documents of the variants it runs. Without a sweep, one case with
    /// an empty id whose documents are the base and the variants.
    pub cases: Vec<Case>,
    /// The bounds it was loaded under, which its build and runs keep.
    pub limits: Limits,
    /// Host memory its documents are estimated to take (every case's and
    /// the file's own: the file and what its imports expand to, per
    /// document). `limits.host_memory_bytes` is for the whole process, so
    /// runs get what the documents leave ([`LoadedScenario::run_budget_bytes`]).
    pub documents_bytes: u64,
}

impl LoadedScenario {
    /// The base followed by the variants.
    pub fn all(&self) -> impl Iterator<Item = &Variant> {
        std::iter::once(&self.base).chain(&self.variants)
    }

    /// Host memory the runs of this scenario may take together, at any one
    /// time: the limit less what the documents take.
    pub fn run_budget_bytes(&self) -> u64 {
        self.limits
            .host_memory_bytes
            .saturating_sub(self.documents_bytes)
    }

    /// An error at a span of the source (for checks done by later stages).
    pub fn error_at(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> InputError {
        InputError::at(&self.source, span, key, message)
    }
}
