//! Figures measured on real machines set beside the simulated ones.
//!
//! A scenario's `[[measured]]` entries (see [`MeasuredDef`], checked when it
//! loads by [`crate::format::measured::check_measured_entries`]) each name a
//! measured figure, where it comes from, the variant whose run stands for
//! the measured configuration and the metric to compute from that run. After a run, [`compare`] computes every metric and the difference
//! as [`Comparison`]s, which `results.json` carries and
//! [`crate::report::measured::table`] prints as the "measured vs simulated"
//! table of `bounce run`.

use serde::{Deserialize, Serialize};

use super::cases::{BuiltCase, CaseResult};
use super::results::{VariantFailure, VariantResult};
use crate::build::BuiltVariant;
use crate::format::schema::{MeasuredDef, MeasuredMetric};
use crate::format::LoadedScenario;
use sim_core::stats::FieldCost;
use sim_core::topology::LatencySpec;

/// One row of the table: a measured figure and what the simulation gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub label: String,
    pub variant: String,
    /// The metric's name as the scenario writes it (`throughput-change`, ...).
    pub metric: String,
    /// For `throughput-change`: the variant the change is against.
    pub relative_to: Option<String>,
    /// For `cycles-per-iteration`: the thread group whose iterations count.
    pub threads: Option<String>,
    /// For `field-cycles-share`: the fields whose accesses count.
    pub fields: Vec<String>,
    pub unit: String,
    pub measured: f64,
    /// None when a run it needs has no result.
    pub simulated: Option<f64>,
    /// `simulated - measured`, in the unit.
    pub difference: Option<f64>,
    pub tolerance: Option<f64>,
    /// Whether `|difference| <= tolerance`; None without a tolerance or a result.
    pub within_tolerance: Option<bool>,
    pub source: String,
    /// With a `[sweep]`: the case the figure was measured as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

/// The simulated figure of one entry, or None when a run it needs failed.
fn simulate(
    m: &MeasuredDef,
    base_name: &str,
    built: &[BuiltVariant],
    results: &[Result<VariantResult, VariantFailure>],
) -> Option<f64> {
    let find = |name: &str| {
        built
            .iter()
            .zip(results)
            .find(|(b, _)| b.name == name)
            .and_then(|(b, r)| r.as_ref().ok().map(|r| (b, r)))
    };
    let (b, r) = find(m.variant.get_ref())?;
    match *m.metric.get_ref() {
        MeasuredMetric::ThroughputChange => {
            let against = m
                .relative_to
                .as_ref()
                .map_or(base_name, |r| r.get_ref().as_str());
            let (_, base) = find(against)?;
            let base_tput = base.throughput_total();
            (base_tput > 0.0).then(|| (r.throughput_total() / base_tput - 1.0) * 100.0)
        }
        MeasuredMetric::OneWayLatency => {
            let cycles = group_cycles(m, b, r)?;
            let clock_mhz = b.config.topology.spec.clock_mhz as f64;
            (clock_mhz > 0.0).then(|| cycles / 2.0 / clock_mhz * 1000.0)
        }
        MeasuredMetric::CyclesPerIteration => {
            let own = group_cycles(m, b, r)?;
            match &m.relative_to {
                None => Some(own),
                Some(against) => {
                    let (b0, r0) = find(against.get_ref())?;
                    Some(own - group_cycles(m, b0, r0)?)
                }
            }
        }
        MeasuredMetric::FieldCyclesShare => {
            let latency = &b.config.topology.spec.latency;
            let in_fields: u64 = r
                .fields
                .iter()
                .filter(|f| m.fields.iter().any(|w| w.get_ref() == &f.name))
                .map(|f| {
                    // What the CPU waited for: the L1 hit of each load and
                    // atomic, the wait for the line beyond it, the locked
                    // operation, which on an atomic's L1 hit holds that
                    // access (`LatencySpec::locked_op_after_hit_cycles`); a
                    // store costs the CPU only when the store buffer makes
                    // it wait, which is in the stall cycles.
                    f.traffic.stall_cycles
                        + (f.traffic.loads + f.traffic.atomics) * latency.l1_hit_cycles
                        + locked_op_cycles(latency, f.traffic.atomics, f.traffic.atomic_hits)
                })
                .sum();
            let total: u64 = r.per_cpu.iter().map(|c| c.iteration_cycles_total).sum();
            (total > 0).then(|| in_fields as f64 / total as f64 * 100.0)
        }
        MeasuredMetric::FieldLatencyPerIteration => {
            let latency = &b.config.topology.spec.latency;
            let counted: Vec<usize> = r
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| m.fields.iter().any(|w| w.get_ref() == &f.name))
                .map(|(id, _)| id)
                .collect();
            let group = match &m.threads {
                None => None,
                Some(g) => Some(&b.groups.iter().find(|(name, _)| name == g.get_ref())?.1),
            };
            let (in_fields, iterations) = r
                .per_cpu
                .iter()
                .filter(|c| group.is_none_or(|cpus| cpus.contains(&c.cpu)))
                .fold((0u64, 0u64), |(cycles, n), c| {
                    let own: u64 = counted
                        .iter()
                        .filter_map(|&id| c.field_costs.get(id))
                        .map(|cost| access_latency_cycles(latency, cost))
                        .sum();
                    (cycles + own, n + c.iterations)
                });
            (iterations > 0).then(|| in_fields as f64 / iterations as f64)
        }
    }
}

/// The locked operations of `atomics` atomics, `atomic_hits` of them L1
/// hits: on a hit it holds the L1 access
/// (`LatencySpec::locked_op_after_hit_cycles`), after a miss it follows the
/// line's arrival (`locked_op_cycles`).
fn locked_op_cycles(latency: &LatencySpec, atomics: u64, atomic_hits: u64) -> u64 {
    atomic_hits * latency.locked_op_after_hit_cycles()
        + (atomics - atomic_hits) * latency.locked_op_cycles
}

/// The latencies of the accesses `cost` counts: each from its issue to
/// its data (the L1 access of those reported summed added here), plus
/// their locked operations.
fn access_latency_cycles(latency: &LatencySpec, cost: &FieldCost) -> u64 {
    cost.latency_cycles
        + cost.summed_accesses * latency.l1_hit_cycles
        + locked_op_cycles(latency, cost.atomics, cost.atomic_hits)
}

/// Mean cycles of an iteration of `m.threads`' CPUs (every CPU's without).
fn group_cycles(m: &MeasuredDef, b: &BuiltVariant, r: &VariantResult) -> Option<f64> {
    match &m.threads {
        None => Some(r.iteration_cycles.mean()),
        Some(group) => {
            let cpus = &b.groups.iter().find(|(g, _)| g == group.get_ref())?.1;
            let (cycles, iterations) = r
                .per_cpu
                .iter()
                .filter(|c| cpus.contains(&c.cpu))
                .fold((0u64, 0u64), |(c, n), s| {
                    (c + s.iteration_cycles_total, n + s.iterations)
                });
            (iterations > 0).then(|| cycles as f64 / iterations as f64)
        }
    }
}

/// Every `[[measured]]` entry of the scenario beside its simulated figure,
/// in file order. `built` and `results` are one case's, in the same order.
pub fn compare(
    loaded: &LoadedScenario,
    built: &[BuiltVariant],
    results: &[Result<VariantResult, VariantFailure>],
) -> Vec<Comparison> {
    compare_case(loaded, "", built, results)
}

/// [`compare`] for the case `case_id` of a sweep: its entries (those whose
/// `case` is that id); without a sweep (`case_id` empty), every entry.
pub fn compare_case(
    loaded: &LoadedScenario,
    case_id: &str,
    built: &[BuiltVariant],
    results: &[Result<VariantResult, VariantFailure>],
) -> Vec<Comparison> {
    loaded
        .base
        .doc
        .measured
        .iter()
        .filter(|m| m.case.as_ref().map_or("", |c| c.get_ref().as_str()) == case_id)
        .map(|m| {
            let metric = *m.metric.get_ref();
            let measured = *m.value.get_ref();
            let simulated = simulate(m, &loaded.base.name, built, results);
            let difference = simulated.map(|s| s - measured);
            let tolerance = m.tolerance.as_ref().map(|t| *t.get_ref());
            Comparison {
                label: m.label.get_ref().clone(),
                variant: m.variant.get_ref().clone(),
                metric: metric.name().to_string(),
                relative_to: match metric {
                    MeasuredMetric::ThroughputChange => Some(
                        m.relative_to
                            .as_ref()
                            .map_or(loaded.base.name.clone(), |r| r.get_ref().clone()),
                    ),
                    _ => m.relative_to.as_ref().map(|r| r.get_ref().clone()),
                },
                threads: m.threads.as_ref().map(|t| t.get_ref().clone()),
                fields: m.fields.iter().map(|f| f.get_ref().clone()).collect(),
                unit: metric.unit().to_string(),
                measured,
                simulated,
                difference,
                tolerance,
                within_tolerance: tolerance.zip(difference).map(|(t, d)| d.abs() <= t),
                source: m.source.get_ref().clone(),
                case: m.case.as_ref().map(|c| c.get_ref().clone()),
            }
        })
        .collect()
}

/// The comparisons of a whole run (or of the cases given: a shard's, a
/// finished case's), each case's entries in file order, cases in the order
/// given, as `bounce run` prints them and `results.json` holds them.
pub fn compare_cases(
    loaded: &LoadedScenario,
    cases: &[BuiltCase],
    results: &[CaseResult],
) -> Vec<Comparison> {
    cases
        .iter()
        .zip(results)
        .flat_map(|(built, case)| compare_case(loaded, &built.id, &built.variants, &case.results))
        .collect()
}
