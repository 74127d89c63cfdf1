//! Why a run stopped without a result.

use crate::cpu::LinuxCpu;
use crate::limits::DEFAULT_STEPS_WITHOUT_TIME;
use crate::script::ast::SourcePos;
use crate::time::Cycle;
use std::fmt;

/// Where a CPU was when a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuWhere {
    pub cpu: LinuxCpu,
    pub iterations_done: u64,
    /// `scripts.NAME` or `procedures.NAME`.
    pub origin: String,
    pub pos: SourcePos,
}

/// A CPU that could not go on when a run stopped for want of progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StalledCpu {
    pub cpu: LinuxCpu,
    /// `scripts.NAME` or `procedures.NAME`.
    pub origin: String,
    pub pos: SourcePos,
    /// What it waits for, in words: the line with its coherence states, or
    /// its store buffer; `None` when it was not waiting.
    pub waiting_for: Option<String>,
}

/// How a run failed to make progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// Unfinished CPUs wait and no event is queued that could wake them.
    Deadlock,
    /// As `Deadlock`, with CPUs spinning on lines that nothing still
    /// running will write (found at once by the spin-wait fast-forward,
    /// instead of at the cycle budget).
    SpinsForever,
    /// Every unfinished thread sleeps in `futex_wait` (or waits for a CPU
    /// whose threads all sleep) and no event is queued that could wake
    /// one: a lost wake-up.
    LostWakeup,
    /// One CPU made `limit` calls and iteration ends without its clock moving.
    ZeroTimeSteps,
    /// The run processed `limit` events at one cycle.
    ZeroTimeEvents,
}

/// Which budget a run exhausted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// `run.max_cycles`
    Cycles,
    /// The bound on processed events.
    Events,
    /// The bound on events queued at once (a simulator bug if ever hit).
    EventsInFlight,
    /// The bound on one CPU's script operations (`limits.operations`),
    /// and the CPU (its Linux number) that ran past it.
    Operations { cpu: LinuxCpu },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A bug in the protocol code: an invariant failed.
    ProtocolViolation {
        cycle: Cycle,
        unit: usize,
        address: u64,
        message: String,
        states: String,
    },
    /// A script failed at run time (an assert, a division by zero, an index
    /// out of range, recursion too deep).
    Script {
        cpu: LinuxCpu,
        cycle: Cycle,
        origin: String,
        pos: SourcePos,
        /// The calls it was inside, innermost first: each caller's origin
        /// and the position of its call.
        called_from: Vec<(String, SourcePos)>,
        message: String,
    },
    /// The run hit a budget before every CPU finished: no result.
    Truncated {
        budget: Budget,
        limit: u64,
        cycle: Cycle,
        unfinished: Vec<CpuWhere>,
    },
    /// The run stopped making progress (deadlock, or steps that take no
    /// simulated time): no result.
    NoProgress {
        stall: Stall,
        /// The bound that was hit (`limits.steps_without_time`); 0 for a deadlock.
        limit: u64,
        cycle: Cycle,
        cpus: Vec<StalledCpu>,
    },
    /// A run stopped by time (`run.cycles`) in which no CPU completed a
    /// measured iteration: every per-iteration figure would be 0/0. Found
    /// by whoever reads the outcome (the engine finishes such a run).
    NoIteration {
        /// Where the run ended.
        cycle: Cycle,
        /// Warm-up iterations per CPU, which do not count.
        warmup_iterations: u64,
    },
}

impl fmt::Display for SimError {
    // One arm per error kind, each the message a user reads (the longer
    // parts in `write_call_chain`, `budget_text` and `write_stall`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::ProtocolViolation {
                cycle,
                unit,
                address,
                message,
                states,
            } => write!(
                f,
                "protocol violation at cycle {cycle} on line {unit} (address {address:#x}): {message}\n  states: {states}"
            ),
            SimError::Script {
                cpu,
                cycle,
                origin,
                pos,
                called_from,
                message,
            } => {
                write!(
                    f,
                    "script failed on CPU {cpu} at cycle {cycle}, {origin} line {}, column {}",
                    pos.line, pos.column
                )?;
                write_call_chain(f, called_from)?;
                write!(f, ": {message}")
            }
            SimError::Truncated {
                budget,
                limit,
                cycle,
                unfinished,
            } => {
                let what = budget_text(*budget, *limit);
                write!(
                    f,
                    "run truncated at cycle {cycle}: it hit {what} before every CPU finished; \
                     no result is reported. Raise the budget if the run is meant to be this long, \
                     or look for a CPU that spins forever.\n  {} CPU(s) unfinished",
                    unfinished.len()
                )?;
                for w in unfinished.iter().take(8) {
                    write!(
                        f,
                        "\n    CPU {}: {} iteration(s) done, at {} line {}",
                        w.cpu, w.iterations_done, w.origin, w.pos.line
                    )?;
                }
                if unfinished.len() > 8 {
                    write!(f, "\n    ... and {} more", unfinished.len() - 8)?;
                }
                Ok(())
            }
            SimError::NoProgress {
                stall,
                limit,
                cycle,
                cpus,
            } => {
                write_stall(f, *stall, *limit, *cycle)?;
                write!(f, "\n  {} CPU(s) involved", cpus.len())?;
                for c in cpus.iter().take(8) {
                    write!(f, "\n    CPU {}: at {} line {}", c.cpu, c.origin, c.pos.line)?;
                    if let Some(w) = &c.waiting_for {
                        write!(f, ", waiting for {w}")?;
                    }
                }
                if cpus.len() > 8 {
                    write!(f, "\n    ... and {} more", cpus.len() - 8)?;
                }
                Ok(())
            }
            SimError::NoIteration {
                cycle,
                warmup_iterations,
            } => {
                write!(
                    f,
                    "no iteration completed: the run ended at cycle {cycle} (`run.cycles`) \
                     before any CPU finished a measured iteration"
                )?;
                if *warmup_iterations > 0 {
                    write!(f, " (after {warmup_iterations} of warm-up)")?;
                }
                write!(
                    f,
                    ", so every figure per iteration would be 0/0; no result is reported. \
                     Raise `run.cycles`"
                )?;
                if *warmup_iterations > 0 {
                    write!(f, " or lower `run.warmup_iterations`")?;
                }
                write!(f, ".")
            }
        }
    }
}

/// The calls a script error happened in, innermost first. The outermost
/// call is the user's own line: with more calls than `SHOWN`, the innermost
/// ones and the outermost are named, the ones between counted.
fn write_call_chain(
    f: &mut fmt::Formatter<'_>,
    called_from: &[(String, SourcePos)],
) -> fmt::Result {
    const SHOWN: usize = 4;
    let n = called_from.len();
    for (k, (o, p)) in called_from.iter().enumerate() {
        if n > SHOWN && k == SHOWN - 1 {
            write!(f, ", ({} more calls)", n - SHOWN)?;
        }
        if n > SHOWN && k >= SHOWN - 1 && k + 1 < n {
            continue;
        }
        write!(f, ", called from {o} line {}, column {}", p.line, p.column)?;
    }
    Ok(())
}

/// The budget a truncated run hit, in words, with its `limit`.
fn budget_text(budget: Budget, limit: u64) -> String {
    match budget {
        Budget::Cycles => format!("the cycle budget (run.max_cycles = {limit})"),
        Budget::EventsInFlight => format!(
            "the bound on events in flight ({limit}: 2 per CPU and 1 per line; \
             a bug in the simulator, please report it)"
        ),
        Budget::Events => {
            format!("the event budget ({limit} events; `--set-limit events=N` raises it)")
        }
        Budget::Operations { cpu } => format!(
            "the operation budget ({limit} script operations on one CPU; CPU {cpu} \
             ran past it; `--set-limit operations=N` raises it)"
        ),
    }
}

/// What a run that stopped making progress at `cycle` did, and what to
/// do about it (`limit`: the bound on steps or events without time).
fn write_stall(f: &mut fmt::Formatter<'_>, stall: Stall, limit: u64, cycle: Cycle) -> fmt::Result {
    match stall {
        Stall::Deadlock => write!(
            f,
            "deadlock at cycle {cycle}: every unfinished CPU waits and no event is \
             queued that could wake it; no result is reported. This is a bug in the \
             simulator; please report it with the scenario."
        ),
        Stall::SpinsForever => write!(
            f,
            "no progress at cycle {cycle}: every unfinished CPU waits, and those \
             spinning read lines that nothing still running will write (a lock \
             never released, a flag never set), so the run could only end at its \
             cycle budget; no result is reported. Give the wait a writer, or stop \
             the run by time (`run.cycles`)."
        ),
        Stall::LostWakeup => write!(
            f,
            "lost wake-up at cycle {cycle}: every unfinished thread sleeps in \
             `futex_wait` and nothing still running will call `futex_wake` on its \
             place; no result is reported. Wake each sleeper (a `futex_wake` after \
             every change a waiter waits for), or stop the run by time (`run.cycles`)."
        ),
        Stall::ZeroTimeSteps => write!(
            f,
            "no progress at cycle {cycle}: a CPU made {limit} procedure calls \
             and iteration ends without simulated time advancing; no result is reported. A script \
             whose iteration makes no memory access, no `work` and no loop takes \
             no time, so the run never reaches its end: give it some work \
             (`work 1`), or raise the bound with `--set-limit steps_without_time=N`."
        ),
        Stall::ZeroTimeEvents if limit < DEFAULT_STEPS_WITHOUT_TIME => write!(
            f,
            "no progress at cycle {cycle}: the run processed {limit} events \
             without simulated time advancing, the bound `steps_without_time` as \
             lowered from its default {DEFAULT_STEPS_WITHOUT_TIME}; no result is \
             reported. CPUs that meet at one cycle take several events there: \
             raise the bound with `--set-limit steps_without_time=N`."
        ),
        Stall::ZeroTimeEvents => write!(
            f,
            "no progress at cycle {cycle}: the run processed {limit} events \
             without simulated time advancing; no result is reported. This is a \
             bug in the simulator unless the machine is very large: raise the \
             bound with `--set-limit steps_without_time=N`."
        ),
    }
}

impl std::error::Error for SimError {}
