//! Every bound bounce puts on its input and on its runs, in one place.
//!
//! Two kinds:
//! - [`Limits`]: bounds a user may raise, each on the command line with
//!   `--set-limit NAME=VALUE` (`bounce limits` lists them with their values and
//!   reasons). They are checked where the input is read (the scenario
//!   loader and builder) or where the run happens (the engine), and every
//!   error that reports one names it and that flag.
//! - [`FIXED`]: bounds of the interpreter's own structures and of the
//!   pointer encoding, which a value on the command line could not raise
//!   safely; raising one is a change to this file.
//!
//! The simulated-cycle budget of a run is part of its scenario
//! (`run.max_cycles`, default 10^10), because it says how long that
//! scenario is meant to run; [`Limits::max_cycles`] bounds what a scenario
//! may ask for.
//!
//! A limit may have a ceiling of its own ([`LimitInfo::ceiling`]): the
//! largest value `--set-limit` accepts, where a larger one would break an
//! invariant of the program rather than only cost more.

/// Declares [`Limits`], its defaults, and the table [`LIMITS`] that
/// describes each (name, default, unit, why), from one list.
macro_rules! limits {
    ($( $(#[doc = $doc:literal])* $name:ident : $default:expr, $unit:literal, $ceiling:expr; )*) => {
        /// The bounds a user may raise (see the module documentation).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Limits {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $( $name: $default, )* }
            }
        }

        /// Each limit: its name (as `--set-limit` takes it), default, unit and
        /// why it exists, in declaration order.
        pub const LIMITS: &[LimitInfo] = &[
            $( LimitInfo {
                name: stringify!($name),
                default: $default,
                unit: $unit,
                ceiling: $ceiling,
                why: concat!($($doc, "\n"),*),
            }, )*
        ];

        impl Limits {
            fn slot(&mut self, name: &str) -> Option<&mut u64> {
                match name {
                    $( stringify!($name) => Some(&mut self.$name), )*
                    _ => None,
                }
            }

            /// The current value of the limit called `name`.
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $( stringify!($name) => Some(self.$name), )*
                    _ => None,
                }
            }
        }
    };
}

/// Default of [`Limits::events`], for runs built without a `Limits`.
pub const DEFAULT_EVENTS: u64 = 2_000_000_000;
/// Default of [`Limits::steps_without_time`].
pub const DEFAULT_STEPS_WITHOUT_TIME: u64 = 1_000_000;
/// Default of [`Limits::operations`]: at the measured 6*10^7 script
/// operations per host second (`bounce limits`), some 500 s of host time
/// per running CPU, the same as the default cycle budget's.
pub const DEFAULT_OPERATIONS: u64 = 30_000_000_000;

/// A limit as `bounce limits` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitInfo {
    pub name: &'static str,
    pub default: u64,
    pub unit: &'static str,
    /// The largest value `--set-limit` accepts (`u64::MAX`: any).
    pub ceiling: u64,
    pub why: &'static str,
}

/// No ceiling beyond the 64-bit range.
const ANY: u64 = u64::MAX;

/// Default of [`Limits::max_cycles`].
pub const DEFAULT_MAX_CYCLES_LIMIT: u64 = 1_000_000_000_000;
/// Ceiling of [`Limits::max_cycles`]: a run's end (`max_cycles + 1`) and
/// every clock value before it stay far below 2^64, where the simulated
/// clock saturates; at the top a saturated clock could never pass the
/// budget and the run would never end.
pub const MAX_CYCLES_CEILING: u64 = 1 << 62;

limits! {
    /// Bytes of a scenario file, checked before it is read. The shipped
    /// scenarios are under 2 KB; parsing costs about three bytes of memory
    /// per byte of text, more for many small keys.
    scenario_bytes: 1 << 20, "bytes", ANY;
    /// Bytes of one pahole listing a scenario imports (`pahole = { file }`),
    /// checked while it is read. `pahole -C` of one struct is a few KB; a
    /// whole vmlinux listing is tens of MB and should be cut to the structs
    /// the scenario uses. Each listing is read and parsed once per load,
    /// however many structs import from it.
    pahole_bytes: 4 << 20, "bytes", ANY;
    /// Bytes of each other file bounce reads: a shard's `shard.json` and
    /// `results.json` (`bounce merge`), a measured latency matrix
    /// (`bounce validate --data`); checked while it is read, so a link to an
    /// endless file is refused.
    data_file_bytes: 256 << 20, "bytes", ANY;
    /// Bytes of one script or procedure body, checked before it is parsed
    /// (the syntax tree takes some 40 bytes per byte of text).
    script_bytes: 64 << 10, "bytes", ANY;
    /// Entries of `[params]`.
    params: 10_000, "parameters", ANY;
    /// Runs of one scenario: variants (with the base), times the cases of
    /// its sweep. Each is a whole document in memory before anything runs.
    runs: 10_000, "runs", ANY;
    /// Host memory the process may take, estimated before it takes it: the
    /// documents of every run (each up to sixteen times the file's size,
    /// what its pahole imports expand to included), and beside them the
    /// runs in flight, together (runs in parallel start only while their
    /// estimates fit), or the states `check-protocol` keeps.
    host_memory_bytes: 2 << 30, "bytes", ANY;
    /// Iterations per CPU (`run.iterations`). Far beyond any run that
    /// ends in reasonable time, and low enough that the warm-up plus the
    /// measured iterations can never overflow a 64-bit count.
    iterations: 1_000_000_000_000, "iterations", 1 << 62;
    /// Warm-up iterations per CPU (`run.warmup_iterations`), bounded for
    /// the same reasons as `iterations`.
    warmup_iterations: 1_000_000_000_000, "iterations", 1 << 62;
    /// The largest simulated-cycle budget a scenario may set
    /// (`run.max_cycles`, default 10^10) and so the longest `run.cycles`.
    /// A CPU running a loop of script operations alone simulates about
    /// 2*10^7 cycles per host second (measured; `bounce limits` says more),
    /// so the default budget is some 500 s of host time per running CPU at
    /// worst, and this limit 100 times that. It cannot be raised past 2^62:
    /// the run's end must stay below the top of the 64-bit clock, which
    /// saturates there.
    max_cycles: DEFAULT_MAX_CYCLES_LIMIT, "cycles", MAX_CYCLES_CEILING;
    /// Events one run may process (store-buffer drains, lines freed, CPUs
    /// resumed). A run that hits it is truncated: no result.
    events: DEFAULT_EVENTS, "events", ANY;
    /// Steps one CPU may take, or events the whole run may process, at one
    /// simulated cycle. The steps counted are procedure calls and iteration
    /// ends, the only operations that can repeat without time passing
    /// (every loop back-edge costs a cycle). A script whose iteration takes
    /// no time never reaches the end of a `cycles` run and no budget of
    /// cycles or events stops it; this does. A real iteration makes a few
    /// calls at most.
    steps_without_time: DEFAULT_STEPS_WITHOUT_TIME, "steps", ANY;
    /// Script operations one CPU may run. Operations that touch only
    /// registers take no simulated time, so no budget of cycles or events
    /// bounds how many run (a body of arithmetic up to `script_bytes` long
    /// per loop turn, call or iteration); this does, and with it the host
    /// time of any run. Counted as an upper bound: the length of each
    /// script or procedure entered and of each loop body gone round again.
    /// (The polls of a spin-wait the engine fast-forwards cost no host time
    /// and are not charged.)
    operations: DEFAULT_OPERATIONS, "operations", ANY;
}

/// Why a `--set-limit NAME=VALUE` was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError(pub String);

impl std::fmt::Display for LimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Limits {
    /// Applies one `NAME=VALUE` (underscores allowed in the value, as in
    /// `1_000_000`). An unknown name is refused with the nearest known one.
    pub fn set(&mut self, assignment: &str) -> Result<(), LimitError> {
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(LimitError(format!(
                "`{assignment}` is not NAME=VALUE (for example `events=4000000000`)"
            )));
        };
        let name = name.trim();
        let digits: String = value.trim().chars().filter(|&c| c != '_').collect();
        let Ok(number) = digits.parse::<u64>() else {
            return Err(LimitError(format!(
                "the value of limit `{name}` must be a whole number of at least 1, found `{}`",
                value.trim()
            )));
        };
        if number == 0 {
            return Err(LimitError(format!(
                "the value of limit `{name}` must be at least 1, found 0"
            )));
        }
        match self.slot(name) {
            Some(slot) => {
                let ceiling = LIMITS
                    .iter()
                    .find(|l| l.name == name)
                    .map_or(u64::MAX, |l| l.ceiling);
                if number > ceiling {
                    return Err(LimitError(format!(
                        "the value of limit `{name}` must be at most {ceiling}, found {number}"
                    )));
                }
                *slot = number;
                Ok(())
            }
            None => {
                let names: Vec<&str> = LIMITS.iter().map(|l| l.name).collect();
                let nearest = names
                    .iter()
                    .map(|n| (strsim::levenshtein(n, name), *n))
                    .min()
                    .filter(|(d, _)| *d <= name.len().max(3) / 2)
                    .map(|(_, n)| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                Err(LimitError(format!(
                    "unknown limit `{name}`{nearest}; valid: {}",
                    names.join(", ")
                )))
            }
        }
    }
}

/// A bound that is part of the program, not of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedLimit {
    pub name: &'static str,
    pub value: u64,
    pub unit: &'static str,
    pub why: &'static str,
}

/// CPUs of a machine: per-CPU instances, hop tables and CPU lists grow with it.
pub const MACHINE_CPUS: u64 = 4096;
/// Threads one CPU runs (`[[threads]] count`): each is a CPU's worth of
/// registers, stack and store buffer, and a run queue this long already
/// waits 64 time slices for its last thread.
pub const THREADS_PER_CPU: u32 = 64;
/// Sockets of a machine.
pub const MACHINE_SOCKETS: u32 = 64;
/// NUMA nodes of a machine (sockets x nodes per socket): per-node
/// instances and the node distance table grow with it.
pub const MACHINE_NODES: u64 = 1024;
/// Nesting of blocks and expressions in a script: the parser, the compiler
/// and every walk of the tree recurse, and must not exhaust the host stack.
pub const SCRIPT_NESTING: usize = 64;
/// Operations one script or procedure compiles to.
pub const SCRIPT_OPS: usize = 1 << 20;
/// Local variables of one script or procedure (slots of a fixed frame).
pub const SCRIPT_LOCALS: usize = 256;
/// Procedure calls nested at run time (recursion is allowed, but bounded).
pub const CALL_DEPTH: usize = 256;
/// Values on a CPU's operand stack at run time.
pub const OPERAND_STACK: usize = 4096;
/// Bytes of one struct.
pub const STRUCT_BYTES: u64 = 1 << 20;
/// Elements of one instance (`count`).
pub const INSTANCE_ELEMENTS: u32 = 1 << 16;
/// Bytes of simulated memory (every instance): each run holds its data,
/// and a pointer carries its address in 40 bits.
pub const SIMULATED_MEMORY_BYTES: u64 = 256 << 20;
/// Events in flight in one run, per CPU (a resume and a store-buffer
/// drain) and per line (its home freeing it); more is a simulator bug.
pub const EVENTS_IN_FLIGHT_PER_CPU: u64 = 2;
pub const EVENTS_IN_FLIGHT_PER_LINE: u64 = 1;

/// The fixed bounds (see the module documentation).
pub const FIXED: &[FixedLimit] = &[
    FixedLimit {
        name: "machine CPUs",
        value: MACHINE_CPUS,
        unit: "CPUs",
        why: "per-CPU instances, hop tables and CPU lists grow with it",
    },
    FixedLimit {
        name: "threads per CPU",
        value: THREADS_PER_CPU as u64,
        unit: "threads",
        why: "each thread holds a CPU's registers, stack and store buffer; the run queue waits a slice per thread",
    },
    FixedLimit {
        name: "machine sockets",
        value: MACHINE_SOCKETS as u64,
        unit: "sockets",
        why: "the socket distance table grows with it",
    },
    FixedLimit {
        name: "machine nodes",
        value: MACHINE_NODES,
        unit: "nodes",
        why: "per-node instances and the node distance table grow with it",
    },
    FixedLimit {
        name: "script nesting",
        value: SCRIPT_NESTING as u64,
        unit: "levels",
        why: "parsing and compiling recurse; deeper input could exhaust the stack",
    },
    FixedLimit {
        name: "script operations",
        value: SCRIPT_OPS as u64,
        unit: "operations",
        why: "per script or procedure; unreachable within script_bytes, kept as a backstop",
    },
    FixedLimit {
        name: "script locals",
        value: SCRIPT_LOCALS as u64,
        unit: "locals",
        why: "per script or procedure: the slots of one frame",
    },
    FixedLimit {
        name: "call depth",
        value: CALL_DEPTH as u64,
        unit: "calls",
        why: "nested calls at run time; deeper is a script failure (unbounded recursion)",
    },
    FixedLimit {
        name: "operand stack",
        value: OPERAND_STACK as u64,
        unit: "values",
        why: "per CPU at run time",
    },
    FixedLimit {
        name: "struct size",
        value: STRUCT_BYTES,
        unit: "bytes",
        why: "per struct, holes and padding included",
    },
    FixedLimit {
        name: "instance elements",
        value: INSTANCE_ELEMENTS as u64,
        unit: "elements",
        why: "per instance (`count`)",
    },
    FixedLimit {
        name: "simulated memory",
        value: SIMULATED_MEMORY_BYTES,
        unit: "bytes",
        why: "all instances: every run holds the data, and pointers carry 40-bit addresses",
    },
    FixedLimit {
        name: "events in flight",
        value: EVENTS_IN_FLIGHT_PER_CPU,
        unit: "per CPU, plus 1 per line",
        why: "a resume and a store-buffer drain per CPU, a line's release per line; more is a bug",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_takes_a_known_name_and_refuses_others() {
        let mut l = Limits::default();
        l.set("events=4_000").unwrap();
        assert_eq!(l.events, 4000);
        assert_eq!(l.get("events"), Some(4000));
        assert_eq!(
            l.set("evnts=5").unwrap_err().to_string(),
            format!(
                "unknown limit `evnts` (did you mean `events`?); valid: {}",
                LIMITS.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
            )
        );
        assert!(l.set("events").is_err());
        assert!(l.set("events=0").is_err());
        assert!(l.set("events=-1").is_err());
        assert_eq!(l.events, 4000);
        assert_eq!(
            l.set("max_cycles=18446744073709551615")
                .unwrap_err()
                .to_string(),
            "the value of limit `max_cycles` must be at most 4611686018427387904, \
             found 18446744073709551615"
        );
        l.set("max_cycles=4611686018427387904").unwrap();
        assert_eq!(l.max_cycles, MAX_CYCLES_CEILING);
    }
}
