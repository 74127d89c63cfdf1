//! How much a scenario will cost before it is submitted: the simulated
//! events of each case, estimated from a short prefix of each of its runs
//! (`bounce check`), so that a user can size a job array.
//!
//! A script's cost per iteration depends on values (loops that wait on a
//! lock, batches that refill), so counting its operations cannot tell it;
//! a prefix runs it. Each run of each case is simulated for a window of
//! [`PROBE_CYCLES`] cycles without warm-up (longer, up to
//! [`PROBE_CYCLES_MAX`], while no CPU has finished an iteration), and its
//! events per finished iteration are scaled to the run's iterations of every
//! CPU (a run of `cycles = N` scales by time instead). A window of simulated
//! time bounds the host time of the estimate whatever the CPU count: a
//! prefix of whole iterations would take 512 lock hand-offs per iteration
//! on a 512-CPU lock. The window includes the first, cold misses, so the
//! figure leans high for short runs; it is an estimate to size jobs with,
//! never a result.

use rayon::prelude::*;

use super::budget::MemoryBudget;
use sim_core::engine::{run, SimConfig, StopRule};
use sim_core::probe::Probe;

use super::cases::BuiltCase;
use super::results::failure_line;
use crate::build::ScriptSources;

/// Simulated cycles of the first window.
pub const PROBE_CYCLES: u64 = 100_000;
/// The longest window: past it, a run that finished no iteration gets no
/// estimate.
pub const PROBE_CYCLES_MAX: u64 = 102_400_000;
/// Events, or memory operations, past which the window stops growing:
/// each about a second of host time in a release build at most.
pub const PROBE_EVENTS: u64 = 2_000_000;
pub const PROBE_MEMORY_OPS: u64 = 20_000_000;

/// The estimate for one case: events of all its runs together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseEstimate {
    pub index: usize,
    pub id: String,
    /// `None` when a prefix run stopped without a result (its error is in
    /// `failure`; the full run would most likely fail the same way).
    pub events: Option<u64>,
    /// Memory operations (loads, stores, atomics) of all its runs: the
    /// other half of the host's work, since a CPU's hits on lines no other
    /// CPU touches are run ahead without events.
    pub memory_ops: Option<u64>,
    pub failure: Option<String>,
}

/// Estimates every case's events, in parallel across cases while their
/// runs' estimated memory fits `budget_bytes` together (see
/// [`MemoryBudget`]; a case's runs are made one after the other), in case
/// order.
pub fn estimate_cases(cases: &[BuiltCase], budget_bytes: u64) -> Vec<CaseEstimate> {
    let budget = MemoryBudget::new(budget_bytes);
    cases
        .par_iter()
        .map(|case| {
            let largest = case.variants.iter().map(|v| v.run_bytes).max();
            let _memory = budget.admit(largest.unwrap_or(0));
            estimate_case(case)
        })
        .collect()
}

fn estimate_case(case: &BuiltCase) -> CaseEstimate {
    let (mut events, mut memory_ops) = (0u64, 0u64);
    for variant in &case.variants {
        match estimate_run(&variant.config, &variant.sources) {
            Ok((e, m)) => {
                events = events.saturating_add(e);
                memory_ops = memory_ops.saturating_add(m);
            }
            Err(failure) => {
                return CaseEstimate {
                    index: case.index,
                    id: case.id.clone(),
                    events: None,
                    memory_ops: None,
                    failure: Some(format!("variant `{}`: {failure}", variant.name)),
                }
            }
        }
    }
    CaseEstimate {
        index: case.index,
        id: case.id.clone(),
        events: Some(events),
        memory_ops: Some(memory_ops),
        failure: None,
    }
}

/// `numerator * factor / denominator`, rounded up, saturating.
fn scale(numerator: u64, factor: u64, denominator: u64) -> u64 {
    let scaled = (numerator as u128 * factor as u128).div_ceil(denominator.max(1) as u128);
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// Observes nothing, and takes hits summed as the statistics of a real run
/// do, so the engine runs the prefix as it runs the whole (`NoProbe` asks
/// for every access, which turns the spin-wait fast-forward off and counts
/// every poll as an event).
struct Counts;
impl Probe for Counts {
    fn needs_every_access(&self) -> bool {
        false
    }
}

/// What a prefix run did: events, memory operations, iterations finished
/// by all CPUs.
#[derive(Clone, Copy)]
struct Prefix {
    events: u64,
    memory_ops: u64,
    iterations: u64,
}

fn run_prefix(whole: &SimConfig, sources: &ScriptSources, cycles: u64) -> Result<Prefix, String> {
    let mut prefix = whole.clone();
    prefix.warmup_iterations = 0;
    prefix.stop = StopRule::Cycles(cycles);
    let outcome = run(&prefix, &mut Counts).map_err(|e| failure_line(&e, sources))?;
    Ok(Prefix {
        events: outcome.events,
        memory_ops: outcome.memory_ops,
        iterations: outcome.cpus.iter().map(|c| c.measured_iterations).sum(),
    })
}

/// Whether two estimates agree within 10 %.
fn close(a: (u64, u64), b: (u64, u64)) -> bool {
    let near = |x: u64, y: u64| x.abs_diff(y) as u128 * 10 <= x.max(y) as u128;
    near(a.0, b.0) && near(a.1, b.1)
}

/// The (events, memory operations) of a whole run of `whole`.
fn estimate_run(whole: &SimConfig, sources: &ScriptSources) -> Result<(u64, u64), String> {
    let n = match whole.stop {
        StopRule::Cycles(c) => {
            let window = c.clamp(1, PROBE_CYCLES);
            let p = run_prefix(whole, sources, window)?;
            return Ok((scale(p.events, c, window), scale(p.memory_ops, c, window)));
        }
        StopRule::Iterations(n) => n,
    };
    let mut window = PROBE_CYCLES;
    // The first window with a finished iteration, and the estimate before.
    let mut earlier: Option<(Prefix, (u64, u64))> = None;
    loop {
        let p = run_prefix(whole, sources, window)?;
        let total = n
            .saturating_add(whole.warmup_iterations)
            .saturating_mul(whole.threads.len() as u64);
        if p.iterations >= total && p.iterations > 0 {
            // The whole run is shorter than the window.
            return Ok((
                scale(p.events, total, p.iterations),
                scale(p.memory_ops, total, p.iterations),
            ));
        }
        let estimate = match earlier {
            // The rate of the last doubling, past the first window's cold
            // misses and queues forming, for the iterations still to come.
            Some((e, _)) if p.iterations > e.iterations => {
                let (done, rest) = (p.iterations - e.iterations, total - p.iterations);
                let steady = |before: u64, now: u64| {
                    now.saturating_add(scale(now.saturating_sub(before), rest, done))
                };
                Some((
                    steady(e.events, p.events),
                    steady(e.memory_ops, p.memory_ops),
                ))
            }
            _ if p.iterations > 0 => Some((
                scale(p.events, total, p.iterations),
                scale(p.memory_ops, total, p.iterations),
            )),
            _ => None,
        };
        let spent = p.events >= PROBE_EVENTS
            || p.memory_ops >= PROBE_MEMORY_OPS
            || window >= PROBE_CYCLES_MAX;
        match (estimate, earlier) {
            (Some(now), Some((_, before))) if close(now, before) || spent => return Ok(now),
            (Some(now), _) if spent => return Ok(now),
            (None, _) if spent => {
                return Err(format!(
                    "no CPU finished an iteration in the first {window} cycles"
                ))
            }
            (Some(now), _) => earlier = Some((p, now)),
            (None, _) => {}
        }
        window = window.saturating_mul(2).min(PROBE_CYCLES_MAX);
    }
}
