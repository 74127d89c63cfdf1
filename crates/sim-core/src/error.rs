//! Why a run stopped without a result.

use crate::script::ast::SourcePos;
use crate::time::Cycle;
use std::fmt;

/// Where a CPU was when a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuWhere {
    pub cpu: u32,
    pub iterations_done: u64,
    /// `scripts.NAME` or `procedures.NAME`.
    pub origin: String,
    pub pos: SourcePos,
}

/// Which budget a run exhausted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// `run.max_cycles`
    Cycles,
    /// The bound on processed events.
    Events,
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
        cpu: u32,
        cycle: Cycle,
        origin: String,
        pos: SourcePos,
        message: String,
    },
    /// The run hit a budget before every CPU finished: no result.
    Truncated {
        budget: Budget,
        limit: u64,
        cycle: Cycle,
        unfinished: Vec<CpuWhere>,
    },
}

impl fmt::Display for SimError {
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
                message,
            } => write!(
                f,
                "script failed on CPU {cpu} at cycle {cycle}, {origin} line {}, column {}: {message}",
                pos.line, pos.column
            ),
            SimError::Truncated {
                budget,
                limit,
                cycle,
                unfinished,
            } => {
                let what = match budget {
                    Budget::Cycles => format!("the cycle budget (run.max_cycles = {limit})"),
                    Budget::Events => format!("the event budget ({limit} events)"),
                };
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
        }
    }
}

impl std::error::Error for SimError {}
