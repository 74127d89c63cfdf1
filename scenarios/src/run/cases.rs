//! Building and running the cases of a scenario (see
//! [`LoadedScenario::cases`]): every run of every case in parallel across
//! runs (rayon), the results collected in case order, then variant order,
//! whatever the number of host threads.

#![allow(clippy::result_large_err)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::budget::MemoryBudget;
use super::results::{run_variant, VariantFailure, VariantResult};
use crate::build::{
    build_all, build_config, counts_field_costs_per_cpu, measured_threads, BuildOptions,
    BuiltVariant,
};
use crate::format::document::{baselines, Variant};
use crate::format::error::InputError;
use crate::format::sweep::{AxisValue, Case};
use crate::format::LoadedScenario;

/// A case ready to run.
#[derive(Clone, Debug)]
pub struct BuiltCase {
    pub index: usize,
    pub id: String,
    pub seed: u64,
    pub values: Vec<AxisValue>,
    /// One per variant the case runs, in the sweep's variant order.
    pub variants: Vec<BuiltVariant>,
}

/// The results of one case, one per variant, in the case's variant order.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub index: usize,
    pub id: String,
    pub seed: u64,
    pub values: Vec<AxisValue>,
    pub results: Vec<Result<VariantResult, VariantFailure>>,
}

impl CaseResult {
    pub fn failures(&self) -> impl Iterator<Item = &VariantFailure> {
        self.results.iter().filter_map(|r| r.as_ref().err())
    }
}

/// Builds one case. An error names the case (when the scenario has a sweep)
/// and the variant.
pub fn build_case(
    loaded: &LoadedScenario,
    case: &Case,
    options: BuildOptions,
) -> Result<BuiltCase, InputError> {
    let documents: Vec<&Variant> = case.variants.iter().collect();
    let baselines = baselines(&documents);
    let variants = case
        .variants
        .iter()
        .zip(baselines)
        .map(|(v, baseline)| {
            let mut built = build_config(loaded, &v.doc, options).map_err(|mut e| {
                if !case.id.is_empty() {
                    e.message = format!(
                        "in sweep case `{}`, variant `{}`: {}",
                        case.id, v.name, e.message
                    );
                } else if v.name != loaded.base.name && !e.message.starts_with("in variant") {
                    e.message = format!("in variant `{}`: {}", v.name, e.message);
                }
                e
            })?;
            built.name = v.name.clone();
            built.description = v.description.clone();
            built.baseline = baseline.map(|i| case.variants[i].name.clone());
            built.measured_threads = measured_threads(&loaded.base.doc.measured, &v.name, &case.id);
            built.counts_field_costs_per_cpu =
                counts_field_costs_per_cpu(&loaded.base.doc.measured, &v.name, &case.id);
            Ok(built)
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    Ok(BuiltCase {
        index: case.index,
        id: case.id.clone(),
        seed: case.seed,
        values: case.values.clone(),
        variants,
    })
}

/// Builds every case, in case order. The first error stops the build, so a
/// scenario whose cases do not all build runs none of them. With a sweep, the
/// base and the variants as the file writes them are built first, so that an
/// error of the file's own is reported as such rather than as the first
/// case's.
pub fn build_cases(
    loaded: &LoadedScenario,
    options: BuildOptions,
) -> Result<Vec<BuiltCase>, InputError> {
    build_cases_where(loaded, options, |_| true)
}

/// Builds the cases `wanted` accepts (a shard's), as [`build_cases`] does.
pub fn build_cases_where(
    loaded: &LoadedScenario,
    options: BuildOptions,
    wanted: impl Fn(&Case) -> bool,
) -> Result<Vec<BuiltCase>, InputError> {
    if loaded.sweep.is_some() {
        build_all(loaded, options)?;
    }
    // Every case is held until the runs start: the configurations, the
    // documents and the largest run must fit the process's bound together.
    let mut built = Vec::new();
    let mut configs: u64 = 0;
    let mut largest_run: u64 = 0;
    for case in loaded.cases.iter().filter(|c| wanted(c)) {
        let case = build_case(loaded, case, options)?;
        configs = case
            .variants
            .iter()
            .fold(configs, |sum, v| sum.saturating_add(v.config_bytes));
        largest_run = case
            .variants
            .iter()
            .map(|v| v.run_bytes)
            .fold(largest_run, u64::max);
        let at = format!("case `{}` (of {})", case.id, loaded.cases.len());
        crate::build::check_held_bytes(loaded, configs, largest_run, &at)?;
        built.push(case);
    }
    Ok(built)
}

/// Host memory the runs of `cases` may take together, at any one time: what
/// the scenario's documents and the cases' configurations leave of the
/// process's bound.
pub fn run_budget_bytes(loaded: &LoadedScenario, cases: &[BuiltCase]) -> u64 {
    let configs = cases
        .iter()
        .flat_map(|c| &c.variants)
        .fold(0u64, |sum, v| sum.saturating_add(v.config_bytes));
    loaded.run_budget_bytes().saturating_sub(configs)
}

/// Whether case `index` belongs to shard `shard` of `shards`: its index is
/// `shard` modulo `shards`.
pub fn in_shard(index: usize, shard: usize, shards: usize) -> bool {
    index % shards == shard
}

/// Runs every variant of every case, in parallel across runs while their
/// estimated memory fits `budget_bytes` together (see [`MemoryBudget`];
/// [`LoadedScenario::run_budget_bytes`] is what a scenario's documents
/// leave); `case_done` is called (from any thread) each time a case's last
/// run finishes. Results come back in case order whatever the number of
/// host threads.
pub fn run_cases(
    cases: &[BuiltCase],
    budget_bytes: u64,
    case_done: &(dyn Fn() + Sync),
) -> Vec<CaseResult> {
    run_cases_reporting(cases, budget_bytes, &|_, _| case_done())
}

/// [`run_cases`], handing each case and its results to `case_done` as soon
/// as its last run finishes (from any thread, in no particular order), so
/// that a caller can keep the finished cases of a run that is interrupted.
pub fn run_cases_reporting(
    cases: &[BuiltCase],
    budget_bytes: u64,
    case_done: &(dyn Fn(&BuiltCase, &CaseResult) + Sync),
) -> Vec<CaseResult> {
    run_cases_observed(cases, budget_bytes, &|| {}, case_done)
}

/// [`run_cases_reporting`], also calling `run_done` (from any thread) each
/// time one run (a variant of a case) finishes, before its case's
/// `case_done`: what a progress display counts.
pub fn run_cases_observed(
    cases: &[BuiltCase],
    budget_bytes: u64,
    run_done: &(dyn Fn() + Sync),
    case_done: &(dyn Fn(&BuiltCase, &CaseResult) + Sync),
) -> Vec<CaseResult> {
    type Slot = Mutex<Option<Result<VariantResult, VariantFailure>>>;
    let budget = MemoryBudget::new(budget_bytes);
    let remaining: Vec<AtomicUsize> = cases
        .iter()
        .map(|c| AtomicUsize::new(c.variants.len()))
        .collect();
    let runs: Vec<(usize, &BuiltVariant)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.variants.iter().map(move |v| (i, v)))
        .collect();
    // Where each case's runs start in `runs`.
    let first_run: Vec<usize> = cases
        .iter()
        .scan(0, |next, c| {
            let first = *next;
            *next += c.variants.len();
            Some(first)
        })
        .collect();
    let slots: Vec<Slot> = runs.iter().map(|_| Mutex::new(None)).collect();
    let slot = |k: usize| {
        slots[k]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    // A finished case's results, moved out of their slots (no other run
    // writes them once the case is finished).
    let case_result = |i: usize| {
        let c = &cases[i];
        CaseResult {
            index: c.index,
            id: c.id.clone(),
            seed: c.seed,
            values: c.values.clone(),
            results: (first_run[i]..first_run[i] + c.variants.len())
                .map(|k| {
                    slot(k)
                        .take()
                        .expect("every run of a finished case has a result")
                })
                .collect(),
        }
    };
    // Shown to `case_done`, then put back for the end: not copied (a copy
    // of 512 CPUs' line results was a visible part of a short run).
    let put_back = |i: usize, result: CaseResult| {
        for (k, r) in (first_run[i]..).zip(result.results) {
            *slot(k) = Some(r);
        }
    };
    runs.par_iter().enumerate().for_each(|(k, &(i, v))| {
        let r = {
            let _memory = budget.admit(v.run_bytes);
            run_variant(v)
        };
        *slot(k) = Some(r);
        run_done();
        if remaining[i].fetch_sub(1, Ordering::AcqRel) == 1 {
            let result = case_result(i);
            case_done(&cases[i], &result);
            put_back(i, result);
        }
    });
    (0..cases.len())
        .map(|i| {
            let result = case_result(i);
            if cases[i].variants.is_empty() {
                case_done(&cases[i], &result);
            }
            result
        })
        .collect()
}
