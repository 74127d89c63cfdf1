//! The exhaustive protocol checker: every reachable state of a small
//! configuration (a few caches, lines and values), breadth first, with the
//! invariants checked in every state.
//!
//! It runs the simulator's own transition code: every step calls
//! [`Coherence::request`], [`Coherence::try_hit`] or [`Coherence::serve_next`]
//! on a clone of the state it starts from. There is no second model of the
//! protocol here; what the checker adds is what the protocol does not keep:
//! the CPUs (store buffers, a blocked load or atomic) and the data, as
//! values, so that the data-value invariant is checked on values that moved
//! the way the protocol says they moved, not on the protocol's own counters.
//!
//! Steps, in every order:
//! - a cache's load, store and atomic on each line (one CPU per cache). A
//!   store posts to the store buffer (bounded depth), or, with the buffer
//!   empty, writes at once into a line the cache owns, as the engine does;
//!   an atomic (an exchange) needs the buffer empty; a load answered by the
//!   buffer changes nothing and is not a step. A request that finds the
//!   line busy waits in the line's queue and blocks the CPU;
//! - a store-buffer drain: the oldest store's write request, one at a time;
//! - with [`CheckConfig::prefetch`], a cache's adjacent-line prefetch read
//!   of any line it holds no copy of and has no request waiting for
//!   ([`Coherence::prefetch`]), whatever its CPU is doing: the engine
//!   issues one on a demand miss, which this covers and more. Nobody waits
//!   for it; its fill must bring the last value written like any other;
//! - with [`CheckConfig::ownership_prefetch`], a cache's request for
//!   ownership of any line it does not hold writable and has no request
//!   waiting for ([`Coherence::prefetch_for`] with [`Need::Write`]), with
//!   no store attached, whatever its CPU is doing: the engine's store
//!   buffer issues one ahead of a buffered store's drain
//!   (`store_rfo_ahead_entries`) and its run ahead one for a waiting
//!   locked instruction's line (`lock_rfo_ahead`), which this covers and
//!   more. Nobody waits for it; its fill must bring the last value written.
//!   The coherence model counts the ownership it grants as a position in
//!   the line's write order (its write count moves by one, as for a
//!   write), so the data-value invariant expects exactly that of it. A
//!   later demand or drain of the same cache queues beside it (the engine
//!   merges the two into one request; that request alone at the home is a
//!   state the exploration reaches anyway, the home serving waiters in any
//!   order);
//! - with [`CheckConfig::evictions`], a cache's eviction of any line it
//!   holds whose home is not busy with it ([`Coherence::drop_copy`], as
//!   the private caches' capacity and deep idle make it): a Modified or
//!   Owned copy's data written back to memory, a clean copy dropped, the
//!   directory forgetting the cache. Whether the line leaves is up to
//!   the checker, at any time, not to a set's LRU order, which covers
//!   every eviction the capacity model makes;
//! - a line's transaction (or an atomic's hold) ending;
//! - the home serving a waiting request: every waiter the arbitration could
//!   pick, each a separate step.
//!
//! Every write is tried with every value. A buffered store's value (and a
//! queued atomic's) is chosen when the write takes its place in coherence
//! order: nothing can observe it before then (a load the buffer answers
//! changes no state), so this reaches the same states as choosing it at the
//! store, with fewer of them in between.
//!
//! Time is abstract: every step is taken at the same cycle, after which a
//! line is either busy (a transaction in flight) or free, and the other
//! times are forgotten (`Coherence::abstract_time`). A line's transaction
//! ends whenever the checker says so, independently of the other lines, so
//! it explores a superset of the orders the engine's latencies allow.
//!
//! States are told apart by an exact encoding, taken up to the symmetries
//! of the configuration: renumbering the caches, reordering the lines (all
//! homed alike) and renaming one line's values change nothing the protocol
//! or an invariant can see, so each state is stored once, under the least
//! encoding over those renamings.
//!
//! Invariants, in every state:
//! - single writer, multiple readers: a writable copy (M, E) is the only copy;
//! - one owner: at most one cache answers for a line; only states the
//!   protocol has;
//! - data value: a fill (load, atomic, or the data a write merges into)
//!   brings the last value written in coherence order, every valid copy
//!   holds it, and each write advances the line's write count by one.
//!   Values come from where the protocol says: the supplying cache, memory,
//!   or the requester's own copy; memory is written back where the protocol
//!   puts writebacks (MESI and MESIF when a read downgrades M to S; MOESI
//!   never on a snoop, its O copy keeps the dirty data);
//! - directory-cache agreement ([`Coherence::check_unit`]);
//! - home order: one transaction at a time per line (the home serves no
//!   waiter while the line is busy), and no access completes on a line
//!   while other requests wait for it (they go first);
//! - no deadlock: a state with work pending (a busy line, a waiter, a
//!   buffered store, a blocked CPU) always has a step that completes some
//!   of it, and every such step lowers a well-founded measure of the
//!   pending work, so from every state all of it can be completed: no
//!   waiter waits forever.
//!
//! A violation comes with the shortest path to it (breadth first), in
//! words, and the per-CPU scripts that replay it in the simulator.

use crate::coherence::{
    AccessReport, Coherence, LineState, Need, Renaming, RequestKind, RequestTag, Requested, Route,
};
use crate::cpu::{CpuIndex, LinuxCpu};
use crate::memory::MemoryLayout;
use crate::time::{Cycle, Cycles};
use crate::topology::{
    CleanSharedLineAnswer, DirectoryPrecision, L3SharedLines, LatencySpec, Lookup, MachineSpec,
    Protocol, Topology,
};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::fmt;
use std::num::NonZeroU32;

/// Largest configurations accepted (the state space grows exponentially).
pub const MAX_CACHES: u32 = 6;
pub const MAX_LINES: u32 = 4;
pub const MAX_VALUES: u32 = 4;
pub const MAX_BUFFER_DEPTH: u32 = 4;
/// Default budget on distinct states.
pub const DEFAULT_MAX_STATES: u64 = 50_000_000;

/// Every step is taken at this cycle (time is abstract).
const NOW: Cycle = Cycle::ZERO;
/// An atomic's hold, in cycles (any nonzero value: only busy or not matters).
const ATOMIC_HOLD: u64 = 20;
/// Cycles between replayed accesses: longer than any transaction of
/// [`CheckConfig::machine`], so each finds its line free.
pub const REPLAY_STEP_CYCLES: u64 = 1000;

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    pub protocol: Protocol,
    pub caches: u32,
    pub lines: u32,
    pub values: u32,
    /// Store-buffer entries per CPU.
    pub buffer_depth: u32,
    /// Stop, without a verdict, after this many distinct states.
    pub max_states: u64,
    /// Stop, without a verdict, when the states kept would take more host
    /// memory than this, estimated as they are made ([`CheckReport::bytes`]).
    pub max_bytes: u64,
    /// Caches may also issue adjacent-line prefetch reads (a step of their
    /// own, on any line, not only the buddy of a miss).
    pub prefetch: bool,
    /// Caches may also evict any line they hold (a step of their own):
    /// the private caches' capacity and deep idle's write-back.
    pub evictions: bool,
    /// Which lines caches may also request for ownership with no store
    /// attached (a step of their own): the store buffer's RFO prefetch and
    /// the run ahead's request for a locked instruction's line.
    pub ownership_prefetch: OwnershipPrefetch,
    /// Caches (cores) per L3 domain: caches `0..k` share the first domain,
    /// and so on. Above 1, reads inside a domain take the L3's routes (a
    /// transfer resolved by its tags, or an L3 hit) and the rest go through
    /// the directory.
    pub cores_per_l3: u32,
    /// Whether each L3 keeps the clean lines its cores read (and answers
    /// reads of them itself).
    pub l3_shared_lines: L3SharedLines,
    /// Who answers a read of a clean shared line in another L3 domain.
    pub clean_shared_line_answer: CleanSharedLineAnswer,
    /// How precisely the directory tracks a shared line's sharers.
    pub directory: DirectoryPrecision,
}

impl CheckConfig {
    /// 3 caches, 2 lines, 2 values, store buffers of 2.
    pub fn new(protocol: Protocol) -> CheckConfig {
        CheckConfig {
            protocol,
            caches: 3,
            lines: 2,
            values: 2,
            buffer_depth: 2,
            max_states: DEFAULT_MAX_STATES,
            max_bytes: crate::limits::Limits::default().host_memory_bytes,
            prefetch: false,
            evictions: false,
            ownership_prefetch: OwnershipPrefetch::Off,
            // Two caches share an L3 that keeps shared lines, the third has
            // one of its own, and the directory broadcasts writes to shared
            // lines: every route of the model is taken (the L3 hit, a
            // transfer inside an L3, the directory, memory, a broadcast).
            cores_per_l3: 2,
            l3_shared_lines: match protocol {
                Protocol::Moesi => L3SharedLines::VictimWithSharing,
                Protocol::Mesi | Protocol::Mesif => L3SharedLines::Inclusive,
            },
            clean_shared_line_answer: CleanSharedLineAnswer::MemoryOrForwarder,
            directory: DirectoryPrecision::BroadcastShared,
        }
    }

    /// Names the first setting out of range.
    pub fn check_in_range(&self) -> Result<(), String> {
        for (name, value, high) in [
            ("caches", self.caches, MAX_CACHES),
            ("lines", self.lines, MAX_LINES),
            ("values", self.values, MAX_VALUES),
            ("store-buffer depth", self.buffer_depth, MAX_BUFFER_DEPTH),
            ("cores per L3", self.cores_per_l3, MAX_CACHES),
        ] {
            if !(1..=high).contains(&value) {
                return Err(format!(
                    "{name} {value} is out of range 1..={high} \
                     (the state space grows exponentially with it)"
                ));
            }
        }
        if !(1..=u32::MAX as u64 - 1).contains(&self.max_states) {
            return Err(format!(
                "max states {} is out of range 1..={}",
                self.max_states,
                u32::MAX - 1
            ));
        }
        Ok(())
    }

    /// The machine the checker runs the protocol on: one socket, one node,
    /// each cache a core (one thread), `cores_per_l3` of them to an L3
    /// domain, so transfers between domains go through the directory at the
    /// lines' home. (The last domain may have cores beyond the caches
    /// checked; they stay idle.) Only the protocol decides states; the
    /// latencies only decide times, which the checker forgets.
    pub fn machine(&self) -> MachineSpec {
        let cores_per_l3 = self.cores_per_l3.max(1);
        MachineSpec {
            l3_per_node: self.caches.div_ceil(cores_per_l3).max(1),
            cores_per_l3,
            store_buffer_entries: self.buffer_depth,
            l3_shared_lines: self.l3_shared_lines,
            clean_shared_line_answer: self.clean_shared_line_answer,
            directory: self.directory,
            latency: LatencySpec {
                locked_op_cycles: ATOMIC_HOLD,
                ..LatencySpec::MADE_UP
            },
            ..MachineSpec::made_up(
                format!("check-{}-{}", self.protocol.name(), self.caches),
                self.protocol,
                Lookup::Home,
            )
        }
    }
}

/// Which lines a cache may request for ownership ahead of any store
/// ([`CheckConfig::ownership_prefetch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnershipPrefetch {
    /// None.
    Off,
    /// The lines of its buffered stores not yet draining, at any step: the
    /// store buffer's RFO prefetch (`store_rfo_ahead_entries`), with no
    /// bound on how many or how far ahead.
    BufferedStores,
    /// Any line, at any step: also the run ahead's request for a waiting
    /// locked instruction's line (`lock_rfo_ahead`), and more.
    AnyLine,
}

impl OwnershipPrefetch {
    /// The name `check-protocol --ownership-prefetch` takes.
    pub fn name(self) -> &'static str {
        match self {
            OwnershipPrefetch::Off => "off",
            OwnershipPrefetch::BufferedStores => "buffered-stores",
            OwnershipPrefetch::AnyLine => "any-line",
        }
    }
}

/// The invariant a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invariant {
    SingleWriter,
    OneOwner,
    DataValue,
    Directory,
    HomeOrder,
    Deadlock,
}

impl Invariant {
    pub fn name(self) -> &'static str {
        match self {
            Invariant::SingleWriter => "single writer, multiple readers",
            Invariant::OneOwner => "one owner, legal states",
            Invariant::DataValue => "data value",
            Invariant::Directory => "directory-cache agreement",
            Invariant::HomeOrder => "home order",
            Invariant::Deadlock => "deadlock freedom",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of the exploration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Load {
        cache: u8,
        line: u8,
    },
    /// A store; `value` is written if it completes at once (an empty buffer
    /// and a line the cache owns), else it is chosen when the store drains.
    Store {
        cache: u8,
        line: u8,
        value: u8,
    },
    /// The oldest buffered store asks for its line, to write `value`.
    Drain {
        cache: u8,
        value: u8,
    },
    /// An exchange: reads the line and writes `value` (chosen when it is
    /// served, if it waits).
    Atomic {
        cache: u8,
        line: u8,
        value: u8,
    },
    /// The cache's adjacent-line prefetcher reads the line; nobody waits.
    Prefetch {
        cache: u8,
        line: u8,
    },
    /// The cache requests the line for ownership ahead of any store (an
    /// RFO prefetch); nobody waits.
    OwnershipPrefetch {
        cache: u8,
        line: u8,
    },
    /// The cache evicts its copy of the line (written back if dirty).
    Evict {
        cache: u8,
        line: u8,
    },
    /// The line's transaction in flight (or an atomic's hold) ends; no
    /// request waits for it.
    Complete {
        line: u8,
    },
    /// The line's transaction in flight ends, if one is, and the home serves
    /// `cache`'s waiting request (its drain, its load or atomic, or its
    /// prefetch); a write writes `value`.
    Serve {
        line: u8,
        cache: u8,
        drain: bool,
        prefetch: bool,
        value: u8,
    },
    /// The home is asked to serve while the line is busy (it must not).
    ServeBusy {
        line: u8,
    },
}

impl Action {
    /// Steps that complete pending work (the others start new work).
    fn completes_work(self) -> bool {
        matches!(
            self,
            Action::Drain { .. } | Action::Complete { .. } | Action::Serve { .. }
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Action::Load { cache, line } => write!(f, "cache {cache} loads line {line}"),
            Action::Store { cache, line, .. } => write!(f, "cache {cache} stores to line {line}"),
            Action::Drain { cache, value } => {
                write!(f, "cache {cache} drains its oldest store, writing {value}")
            }
            Action::Atomic { cache, line, .. } => {
                write!(f, "cache {cache} exchanges on line {line} (atomic)")
            }
            Action::Prefetch { cache, line } => {
                write!(
                    f,
                    "cache {cache}'s adjacent-line prefetcher reads line {line}"
                )
            }
            Action::OwnershipPrefetch { cache, line } => {
                write!(
                    f,
                    "cache {cache} requests line {line} for ownership ahead of a store (RFO prefetch)"
                )
            }
            Action::Evict { cache, line } => {
                write!(f, "cache {cache} evicts line {line}")
            }
            Action::Complete { line } => write!(f, "line {line}'s transaction ends"),
            Action::Serve {
                line,
                cache,
                drain,
                prefetch,
                value,
            } => {
                write!(
                    f,
                    "line {line}'s transaction ends and its home serves cache {cache}'s waiting "
                )?;
                if drain {
                    write!(f, "store, writing {value}")
                } else if prefetch {
                    f.write_str("prefetch")
                } else {
                    f.write_str("request")
                }
            }
            Action::ServeBusy { line } => write!(
                f,
                "the home of line {line} is asked to serve a waiter while the line is busy"
            ),
        }
    }
}

/// What a step did, for replaying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The access completed (a hit, or a transaction started at once).
    Completed,
    /// The request waits at the line's home.
    Waits,
    /// The store went into the store buffer.
    Posted,
    /// A line's transaction ended, and nothing was served.
    Freed,
    /// The home served a waiting request.
    Served,
    /// The step broke the invariant (the last step of a path).
    Breaks,
    /// Nothing changed.
    Nothing,
}

/// One step of a path: what was done and what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub action: Action,
    pub outcome: String,
    pub effect: Effect,
}

/// An invariant broken, and the shortest way there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: Invariant,
    pub message: String,
    /// From the initial state (every line uncached, every value 0); for a
    /// broken state invariant the last step is the one that broke it; for a
    /// deadlock the path leads to the stuck state.
    pub path: Vec<Step>,
    /// The protocol state of every line at the end, one line each.
    pub states: Vec<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "violation of {}: {}", self.invariant, self.message)?;
        writeln!(f, "shortest path ({} steps):", self.path.len())?;
        for (n, step) in self.path.iter().enumerate() {
            writeln!(f, "  {:>3}. {}: {}", n + 1, step.action, step.outcome)?;
        }
        writeln!(f, "state at the end:")?;
        for s in &self.states {
            writeln!(f, "  {s}")?;
        }
        Ok(())
    }
}

impl Violation {
    /// Scripts that replay the path in the simulator, one per cache that
    /// acts in it (cache `c` is CPU `c` of [`CheckConfig::machine`]), on the
    /// `v` field of element `line` of an array `lines` of one-line structs.
    ///
    /// The replay is serialised: each access is issued where it takes
    /// effect in the path (at its step if it completed there, at the step
    /// that served it if it waited), [`REPLAY_STEP_CYCLES`] apart, with
    /// `work` waiting until then, so each transaction finds the line free
    /// and the protocol goes through the path's states in the path's
    /// order, whatever the latencies and the arbitration. A CPU's accesses
    /// are in that order too, which x86-TSO allows (a buffered store takes
    /// effect after later loads). What depends on requests waiting
    /// together (the order at the home) is not replayed; requests still
    /// waiting at the end of the path are issued last. (One walk over the
    /// path, one arm per step kind: every arm reads and changes the posted
    /// stores and the waiting requests, so they stay together.)
    pub fn replay_scripts(&self) -> Vec<(u32, String)> {
        let mut scripts: Vec<(u32, String)> = Vec::new();
        // Lines of each cache's posted stores, oldest first.
        let mut posted: Vec<(u8, Vec<u8>)> = Vec::new();
        // Requests waiting at a home: (cache, line, drain, step number).
        let mut waiting: Vec<(u8, u8, bool, usize)> = Vec::new();
        let mut at = 0u64;
        let mut emit = |cache: u8, comment: String, statement: String| {
            at += REPLAY_STEP_CYCLES;
            let cpu = cache as u32;
            let script = match scripts.iter().position(|s| s.0 == cpu) {
                Some(i) => &mut scripts[i].1,
                None => {
                    scripts.push((cpu, "let v = 0\n".to_string()));
                    &mut scripts.last_mut().expect("just pushed").1
                }
            };
            script.push_str(&format!(
                "# {comment}\nwork max(0, {at} - now())\n{statement}\n"
            ));
        };
        let load = |line: u8| format!("v = lines[{line}].v");
        let store = |line: u8, value: u8| format!("lines[{line}].v = {value}");
        let xchg = |line: u8, value: u8| format!("v = xchg(lines[{line}].v, {value})");
        let at_step = |n: usize| format!("step {n}: {}", self.path[n - 1].action);
        for (n, step) in self.path.iter().enumerate() {
            let number = n + 1;
            let action = step.action;
            let effect = step.effect;
            let takes_effect = matches!(effect, Effect::Completed | Effect::Breaks);
            match action {
                Action::Load { cache, line } if takes_effect => {
                    emit(cache, at_step(number), load(line))
                }
                Action::Atomic { cache, line, value } if takes_effect => {
                    emit(cache, at_step(number), xchg(line, value))
                }
                Action::Load { cache, line } | Action::Atomic { cache, line, .. } => {
                    waiting.push((cache, line, false, number))
                }
                Action::Store { cache, line, value } => {
                    if effect == Effect::Posted {
                        match posted.iter_mut().find(|p| p.0 == cache) {
                            Some(p) => p.1.push(line),
                            None => posted.push((cache, vec![line])),
                        }
                    } else {
                        emit(cache, at_step(number), store(line, value));
                    }
                }
                Action::Drain { cache, value } => {
                    let queue = posted.iter_mut().find(|p| p.0 == cache);
                    let line = queue.as_ref().and_then(|p| p.1.first().copied());
                    let line = line.unwrap_or(0);
                    if takes_effect {
                        if let Some(p) = queue {
                            p.1.remove(0);
                        }
                        emit(cache, at_step(number), store(line, value));
                    } else {
                        waiting.push((cache, line, true, number));
                    }
                }
                Action::Serve {
                    line,
                    cache,
                    drain,
                    prefetch: false,
                    value,
                } if matches!(effect, Effect::Served | Effect::Breaks) => {
                    let Some(i) = waiting
                        .iter()
                        .position(|w| (w.0, w.1, w.2) == (cache, line, drain))
                    else {
                        continue;
                    };
                    let (_, _, _, issued) = waiting.remove(i);
                    let statement = if drain {
                        if let Some(p) = posted.iter_mut().find(|p| p.0 == cache) {
                            p.1.remove(0);
                        }
                        store(line, value)
                    } else if let Action::Atomic { .. } = self.path[issued - 1].action {
                        xchg(line, value)
                    } else {
                        load(line)
                    };
                    emit(
                        cache,
                        format!("{}; served at step {number}", at_step(issued)),
                        statement,
                    );
                }
                // A prefetch follows a miss in the engine; it is not
                // replayed as a statement of its own.
                Action::Serve { .. }
                | Action::Complete { .. }
                | Action::ServeBusy { .. }
                | Action::Prefetch { .. }
                | Action::OwnershipPrefetch { .. }
                | Action::Evict { .. } => {}
            }
        }
        // Requests the path leaves waiting.
        for (cache, line, drain, issued) in waiting {
            let statement = match self.path[issued - 1].action {
                Action::Atomic { value, .. } => xchg(line, value),
                Action::Drain { value, .. } => store(line, value),
                _ if drain => store(line, 0),
                _ => load(line),
            };
            emit(
                cache,
                format!("{}; still waiting", at_step(issued)),
                statement,
            );
        }
        scripts.sort_by_key(|s| s.0);
        scripts
    }
}

/// What an exploration found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub config: CheckConfig,
    /// Distinct states reached (up to symmetry).
    pub states: u64,
    /// Steps taken: every enabled step from every state, including those
    /// reaching a state already seen.
    pub transitions: u64,
    /// Largest number of steps from the initial state to a state (BFS level).
    pub depth: u32,
    /// States with no work pending.
    pub quiescent_states: u64,
    /// Every state was explored (no violation stopped it, and the budget
    /// was not hit).
    pub complete: bool,
    pub violation: Option<Violation>,
    /// Host memory the exploration's states took when it stopped, as
    /// estimated: the encodings of the states seen and their table, the
    /// path to each, and the states of the frontiers.
    pub bytes: u64,
    /// Why it stopped without a verdict, when it did.
    pub stopped_by: Option<CheckBudget>,
    /// The accesses the exploration's steps made, by the route the model
    /// gave them (every step counted, including those reaching a state
    /// already seen): which parts of the transition code were exercised.
    pub routes: RouteCounts,
}

/// Accesses by route, over all the steps of an exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteCounts {
    /// Answered by the requester's own cache.
    pub hits: u64,
    /// Served by the requester's L3, which keeps the clean line.
    pub l3_hits: u64,
    /// Resolved inside the requester's L3 domain by its tags.
    pub same_l3: u64,
    /// Through the directory (or a home agent).
    pub directory: u64,
    /// Data from memory.
    pub memory: u64,
    /// Writes to a Shared or Owned line that the directory broadcast to
    /// every L3 domain (`broadcast-shared` directories).
    pub broadcasts: u64,
}

impl fmt::Display for RouteCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} hits, {} L3 hits, {} same-L3 transfers, {} through the directory, \
             {} from memory, {} broadcast invalidations",
            self.hits, self.l3_hits, self.same_l3, self.directory, self.memory, self.broadcasts
        )
    }
}

/// The bound an exploration hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckBudget {
    /// [`CheckConfig::max_states`].
    States,
    /// [`CheckConfig::max_bytes`].
    Memory,
}

/// Host memory of the exploration so far (see [`CheckReport::bytes`]).
/// The frontiers' states are the large part: each a whole `State`, its
/// per-line coherence entries on the heap besides.
fn exploration_bytes(
    seen: &Seen,
    parents: &Vec<(MaybeState, Action)>,
    frontier_states: usize,
    state_bytes: u64,
) -> u64 {
    (seen.arena.capacity()
        + seen.ends.capacity() * std::mem::size_of::<u64>()
        + seen.slots.len() * std::mem::size_of::<MaybeState>()
        + parents.capacity() * std::mem::size_of::<(MaybeState, Action)>()) as u64
        + frontier_states as u64 * state_bytes
}

/// Explores every reachable state of `config` and checks the invariants.
pub fn check(config: &CheckConfig) -> Result<CheckReport, String> {
    config.check_in_range()?;
    let explorer = Explorer::new(config)?;
    Ok(explorer.run())
}

/// What a CPU is blocked on: its load or atomic, queued at the line's home.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Blocked {
    Load(u8),
    Atomic(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CpuState {
    /// Lines of the buffered stores, oldest first: the first `buffered`.
    buffer: [u8; MAX_BUFFER_DEPTH as usize],
    buffered: u8,
    /// The oldest store's write request waits at the home.
    draining: bool,
    blocked: Option<Blocked>,
}

impl CpuState {
    fn buffer(&self) -> &[u8] {
        &self.buffer[..self.buffered as usize]
    }
    fn push(&mut self, line: u8) {
        self.buffer[self.buffered as usize] = line;
        self.buffered += 1;
    }
    fn pop(&mut self) {
        self.buffer.copy_within(1.., 0);
        self.buffered -= 1;
    }
}

/// The data of one line, as the checker sees it move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LineData {
    /// The last value written, in coherence order.
    latest: u8,
    /// What memory holds.
    memory: u8,
    /// What each cache's copy holds (None: no copy).
    copies: [Option<u8>; MAX_CACHES as usize],
}

/// A state: fixed-size arrays, of which the configuration uses the first
/// `caches` CPUs and `lines` lines, so that a clone copies them in place.
#[derive(Clone, Debug)]
struct State {
    coherence: Coherence,
    cpus: [CpuState; MAX_CACHES as usize],
    data: [LineData; MAX_LINES as usize],
}

impl State {
    /// Becomes a copy of `other`, reusing this state's allocations.
    fn copy_from(&mut self, other: &State) {
        self.coherence.copy_from(&other.coherence);
        self.cpus = other.cpus;
        self.data = other.data;
    }
}

/// A broken invariant, before its path is known.
struct Found {
    invariant: Invariant,
    message: String,
}

fn found(invariant: Invariant, message: String) -> Found {
    Found { invariant, message }
}

/// Tags of queued requests, as the engine makes them: the cache plays the
/// engine CPU's part.
fn request_tag(cache: usize, drain: bool, prefetch: bool) -> RequestTag {
    let kind = match (drain, prefetch) {
        (_, true) => RequestKind::Prefetch,
        (true, false) => RequestKind::Drain,
        (false, false) => RequestKind::Demand,
    };
    RequestTag::new(CpuIndex::new(cache), kind)
}

/// One renaming of caches and lines under which the configuration is the same.
struct Symmetry {
    /// New number of each cache.
    caches: Vec<u32>,
    /// Old cache at each new number.
    cache_at: Vec<u32>,
    /// Old line at each new position.
    line_at: Vec<usize>,
    /// New number of each line.
    lines: Vec<u8>,
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..n {
            let mut q = p.clone();
            q.insert(i, n - 1);
            all.push(q);
        }
    }
    all.sort();
    all
}

fn invert(p: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; p.len()];
    for (i, &x) in p.iter().enumerate() {
        inv[x] = i;
    }
    inv
}

/// The states seen: their encodings end to end in one arena, found through
/// an open-addressing table of state numbers.
struct Seen {
    arena: Vec<u8>,
    /// End of each state's encoding in the arena.
    ends: Vec<u64>,
    /// The open-addressing table: each slot a state's number or free.
    slots: Vec<MaybeState>,
}

/// A state's number, or none: a free slot of the seen table, the initial
/// state's parent. Four bytes (the number plus one, so that none is the
/// zero a `NonZeroU32` leaves free), since the table and the parent links
/// hold one per state and the slot count doubles with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MaybeState(Option<NonZeroU32>);

impl MaybeState {
    const NONE: MaybeState = MaybeState(None);

    /// State `id` (below `CheckConfig::max_states`, at most `u32::MAX - 1`).
    #[inline]
    fn state(id: u32) -> MaybeState {
        MaybeState(NonZeroU32::new(id.wrapping_add(1)))
    }

    #[inline]
    fn get(self) -> Option<u32> {
        self.0.map(|n| n.get() - 1)
    }
}

// What `exploration_bytes` counts: a slot and a parent link as plain u32s.
const _: () = assert!(std::mem::size_of::<MaybeState>() == 4);

/// The byte a state's encoding writes for a cache without a copy of a
/// line (the values' names are 0..MAX_VALUES).
const NO_COPY: u8 = u8::MAX;

fn hash_bytes(bytes: &[u8]) -> u64 {
    // FxHash over 8-byte words, then a final mix.
    let mut h: u64 = bytes.len() as u64;
    let mut i = 0;
    while i < bytes.len() {
        let mut word = 0u64;
        let end = (i + 8).min(bytes.len());
        let mut k = end;
        while k > i {
            k -= 1;
            word = word << 8 | bytes[k] as u64;
        }
        h = (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
        i = end;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

impl Seen {
    fn new() -> Seen {
        Seen {
            arena: Vec::new(),
            ends: Vec::new(),
            slots: vec![MaybeState::NONE; 1 << 16],
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, id: u32) -> &[u8] {
        let start = if id == 0 {
            0
        } else {
            self.ends[id as usize - 1]
        };
        &self.arena[start as usize..self.ends[id as usize] as usize]
    }

    /// Adds `key` unless present; returns its new number, or None.
    fn insert(&mut self, key: &[u8]) -> Option<u32> {
        if (self.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = hash_bytes(key) as usize & mask;
        loop {
            let Some(id) = self.slots[i].get() else {
                let new = self.len() as u32;
                self.arena.extend_from_slice(key);
                self.ends.push(self.arena.len() as u64);
                self.slots[i] = MaybeState::state(new);
                return Some(new);
            };
            if self.key(id) == key {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let mut slots = vec![MaybeState::NONE; size];
        for id in 0..self.len() as u32 {
            let mut i = hash_bytes(self.key(id)) as usize & (size - 1);
            while slots[i] != MaybeState::NONE {
                i = (i + 1) & (size - 1);
            }
            slots[i] = MaybeState::state(id);
        }
        self.slots = slots;
    }
}

struct Explorer<'c> {
    config: &'c CheckConfig,
    topology: Topology,
    initial: State,
    symmetries: Vec<Symmetry>,
    /// Per cache, its L3 domain.
    cache_l3: Vec<u32>,
    /// The accesses made so far, by route.
    routes: Cell<RouteCounts>,
}

/// The result of one step (taken into a state given to it): what happened,
/// or nothing (the step is not enabled, or is another step's duplicate).
type StepResult = Result<Option<(String, Effect)>, Found>;

/// A step being taken: the state it starts from, the state it makes, and
/// whether its outcome is wanted in words.
struct Stepping<'s> {
    before: &'s State,
    next: &'s mut State,
    describe: bool,
}

impl Stepping<'_> {
    /// The outcome in words where it is wanted (a path being reported),
    /// else nothing: `text` is not even made.
    fn say(&self, text: impl FnOnce() -> String) -> String {
        if self.describe {
            text()
        } else {
            String::new()
        }
    }
}

/// A step that took place, before the checks every step ends with: what
/// happened in words, its effect, and the line whose write count it moves
/// by one, if any: the line it wrote, or the line an ownership prefetch
/// took (the model counts that as a position in the line's write order).
struct Taken {
    outcome: String,
    effect: Effect,
    written: Option<usize>,
}

impl Taken {
    fn completed(outcome: String, written: Option<usize>) -> Taken {
        Taken {
            outcome,
            effect: Effect::Completed,
            written,
        }
    }

    fn waits(outcome: String) -> Taken {
        Taken {
            outcome,
            effect: Effect::Waits,
            written: None,
        }
    }
}

/// One rule's step: taken, not taken (not enabled, or another step's
/// duplicate), or a violation found.
type TakenResult = Result<Option<Taken>, Found>;

impl<'c> Explorer<'c> {
    fn new(config: &'c CheckConfig) -> Result<Explorer<'c>, String> {
        let topology = Topology::new(config.machine()).map_err(|e| e.to_string())?;
        let memory = MemoryLayout {
            structs: Vec::new(),
            instances: Vec::new(),
            total_bytes: 64 * config.lines as u64,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: vec![0; config.lines as usize],
        };
        let mut coherence = Coherence::new(&topology, &memory);
        // The checker checks every line after every step itself.
        coherence.check_invariants = false;
        // A hit while requests are queued is, in abstract time, a hit taken
        // before they queued (the book's checker chapter says why).
        coherence.hits_until_snoop = false;
        let caches = config.caches as usize;
        let initial = State {
            coherence,
            cpus: [CpuState {
                buffer: [0; MAX_BUFFER_DEPTH as usize],
                buffered: 0,
                draining: false,
                blocked: None,
            }; MAX_CACHES as usize],
            data: [LineData {
                latest: 0,
                memory: 0,
                copies: [None; MAX_CACHES as usize],
            }; MAX_LINES as usize],
        };
        // Renumbering caches is a symmetry only when it keeps caches that
        // share an L3 domain together (and apart those that do not).
        let cache_l3: Vec<u32> = (0..caches as u32)
            .map(|c| topology.l3_of(LinuxCpu::new(c)))
            .collect();
        let keeps_domains = |perm: &[usize]| {
            (0..caches).all(|a| {
                (0..caches).all(|b| {
                    (cache_l3[a] == cache_l3[b]) == (cache_l3[perm[a]] == cache_l3[perm[b]])
                })
            })
        };
        let mut symmetries = Vec::new();
        for cache_perm in permutations(caches) {
            if !keeps_domains(&cache_perm) {
                continue;
            }
            let cache_at = invert(&cache_perm);
            for line_at in permutations(config.lines as usize) {
                symmetries.push(Symmetry {
                    caches: cache_perm.iter().map(|&c| c as u32).collect(),
                    cache_at: cache_at.iter().map(|&c| c as u32).collect(),
                    lines: invert(&line_at).iter().map(|&l| l as u8).collect(),
                    line_at,
                });
            }
        }
        Ok(Explorer {
            config,
            topology,
            initial,
            symmetries,
            cache_l3,
            routes: Cell::new(RouteCounts::default()),
        })
    }

    /// The exploration, with the routes its steps took.
    fn run(&self) -> CheckReport {
        let mut report = self.search();
        report.routes = self.routes.get();
        report
    }

    /// Counts an access by its route.
    fn count_route(&self, report: &AccessReport) {
        let mut routes = self.routes.get();
        match report.route {
            Route::Hit | Route::SmtSibling => routes.hits += 1,
            Route::L3 { .. } => routes.l3_hits += 1,
            Route::SameL3 => routes.same_l3 += 1,
            Route::Directory { .. } | Route::HomeAgent { .. } => routes.directory += 1,
            Route::Memory { .. } => routes.memory += 1,
        }
        let shared = |s: LineState| matches!(s, LineState::Shared | LineState::Owned);
        if self.config.directory == DirectoryPrecision::BroadcastShared
            && report.need == Need::Write
            && report.others.iter().any(|o| shared(o.before))
        {
            routes.broadcasts += 1;
        }
        self.routes.set(routes);
    }

    /// The breadth-first search over states, with its symmetry reduction,
    /// the limits and the report. (Long because the search's bookkeeping,
    /// parents, seen set and frontier, is shared by every part of it.)
    fn search(&self) -> CheckReport {
        let mut report = CheckReport {
            config: self.config.clone(),
            states: 0,
            transitions: 0,
            depth: 0,
            quiescent_states: 0,
            complete: false,
            violation: None,
            bytes: 0,
            stopped_by: None,
            routes: RouteCounts::default(),
        };
        let state_bytes = self.frontier_state_bytes();
        let mut seen = Seen::new();
        // The parent and the step that first reached each state, by number.
        let mut parents: Vec<(MaybeState, Action)> = Vec::new();
        let mut key = Vec::new();
        let mut scratch = Vec::new();
        self.canonical_key(&self.initial, &mut key, &mut scratch);
        seen.insert(&key);
        // The initial state has no parent (the action is never read).
        parents.push((MaybeState::NONE, Action::Complete { line: 0 }));
        if let Err(f) = self.check_state(&self.initial) {
            report.states = 1;
            report.violation = Some(self.violation(&parents, 0, None, f));
            return report;
        }
        let mut frontier: Vec<(u32, State)> = vec![(0, self.initial.clone())];
        // Each step is taken into this state, reusing its allocations; only
        // new states are copied out.
        let mut next = self.initial.clone();
        let mut actions = Vec::new();
        // Membership only (never iterated), so an ordered set costs nothing in
        // determinism and little in time.
        let mut probed: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut unit_key = Vec::new();
        while !frontier.is_empty() {
            let mut next_frontier = Vec::new();
            let frontier_len = frontier.len();
            for (id, state) in frontier {
                self.actions(&state, &mut actions);
                let pending = self.measure(&state);
                if pending == (0, 0) {
                    report.quiescent_states += 1;
                }
                let mut completions = 0;
                for &action in &actions {
                    if let Action::ServeBusy { line } = action {
                        if self.serve_busy_asked(&state, line, &mut probed, &mut unit_key) {
                            continue;
                        }
                    }
                    match self.step(&state, action, false, &mut next) {
                        Ok(Some(_)) => {}
                        Ok(None) => continue,
                        Err(f) => {
                            report.states = seen.len() as u64;
                            report.violation = Some(self.violation(&parents, id, Some(action), f));
                            return report;
                        }
                    };
                    report.transitions += 1;
                    if action.completes_work() {
                        completions += 1;
                        let after = self.measure(&next);
                        if after >= pending {
                            let f = livelock(pending, after);
                            report.states = seen.len() as u64;
                            report.violation = Some(self.violation(&parents, id, Some(action), f));
                            return report;
                        }
                    }
                    self.canonical_key(&next, &mut key, &mut scratch);
                    let Some(new_id) = seen.insert(&key) else {
                        continue;
                    };
                    parents.push((MaybeState::state(id), action));
                    if let Err(f) = self.check_state(&next) {
                        report.states = seen.len() as u64;
                        report.violation = Some(self.violation(&parents, new_id, None, f));
                        return report;
                    }
                    if seen.len() as u64 >= self.config.max_states {
                        report.states = seen.len() as u64;
                        report.stopped_by = Some(CheckBudget::States);
                        report.bytes = exploration_bytes(
                            &seen,
                            &parents,
                            frontier_len + next_frontier.len(),
                            state_bytes,
                        );
                        return report;
                    }
                    next_frontier.push((new_id, next.clone()));
                    // Checked every 4096 states: cheap, and never far behind.
                    if seen.len() & 4095 == 0 {
                        let bytes = exploration_bytes(
                            &seen,
                            &parents,
                            frontier_len + next_frontier.len(),
                            state_bytes,
                        );
                        if bytes > self.config.max_bytes {
                            report.states = seen.len() as u64;
                            report.stopped_by = Some(CheckBudget::Memory);
                            report.bytes = bytes;
                            return report;
                        }
                    }
                }
                if pending != (0, 0) && completions == 0 {
                    let f = found(
                        Invariant::Deadlock,
                        format!(
                            "deadlock: work is pending ({}) and no step can complete any of it",
                            self.describe_pending(&state)
                        ),
                    );
                    report.states = seen.len() as u64;
                    report.violation = Some(self.violation(&parents, id, None, f));
                    return report;
                }
            }
            if !next_frontier.is_empty() {
                report.depth += 1;
            }
            frontier = next_frontier;
        }
        report.states = seen.len() as u64;
        report.complete = true;
        report.bytes = exploration_bytes(&seen, &parents, 0, state_bytes);
        report
    }

    /// What a state in a frontier takes in memory: the struct, and on the
    /// heap each line's entry with its holders and waiters (a small vector
    /// each, with the allocator's overhead).
    fn frontier_state_bytes(&self) -> u64 {
        let lines = self.config.lines as u64;
        std::mem::size_of::<(u32, State)>() as u64
            + lines
                * (Coherence::line_state_bytes(self.config.caches)
                    + self.config.caches as u64 * 16
                    + 4 * 16)
    }

    /// Whether the home was already asked to serve a waiter of busy `line`
    /// in a state where that line is as in `state` (then the step is
    /// skipped): what it does depends on that line's state alone, so it is
    /// asked once per distinct one, each remembered in `probed`.
    fn serve_busy_asked(
        &self,
        state: &State,
        line: u8,
        probed: &mut BTreeSet<Vec<u8>>,
        unit_key: &mut Vec<u8>,
    ) -> bool {
        unit_key.clear();
        state.coherence.encode(
            &Renaming {
                cores: &self.symmetries[0].caches,
                core_at: &self.symmetries[0].cache_at,
                cpus: &self.symmetries[0].caches,
                tags: &|t| t,
                units: &[line as usize],
            },
            unit_key,
        );
        !probed.insert(unit_key.clone())
    }

    /// The steps to try from `state`. A load that would hit, or that the
    /// store buffer answers, changes nothing and is left out; a write's
    /// value is tried only where it is written now (elsewhere value 0
    /// stands for the request, and the value is chosen when it is served).
    fn actions(&self, state: &State, out: &mut Vec<Action>) {
        out.clear();
        let caches = self.config.caches as usize;
        let lines = self.config.lines as usize;
        let values = self.config.values as u8;
        let coherence = &state.coherence;
        // Whether a request for the line waits, and whether a cache's
        // request would hit.
        let mut waited = [false; MAX_LINES as usize];
        let mut busy = [false; MAX_LINES as usize];
        for l in 0..lines {
            waited[l] = !coherence.waiters(l).is_empty();
            busy[l] = coherence.busy_until(l) > NOW;
        }
        let writable = |c: usize, l: usize| {
            matches!(
                coherence.state(c as u32, l),
                LineState::Modified | LineState::Exclusive
            )
        };
        for (c, cpu) in state.cpus[..caches].iter().enumerate() {
            let cache = c as u8;
            let buffer = cpu.buffer();
            if cpu.blocked.is_none() {
                for l in 0..lines {
                    let line = l as u8;
                    let reads = !waited[l] && coherence.state(c as u32, l) != LineState::Invalid;
                    if !buffer.contains(&line) && !reads {
                        out.push(Action::Load { cache, line });
                    }
                    let hits = !waited[l] && writable(c, l);
                    if buffer.len() < self.config.buffer_depth as usize {
                        let stores = if hits && buffer.is_empty() { values } else { 1 };
                        for value in 0..stores {
                            out.push(Action::Store { cache, line, value });
                        }
                    }
                    if buffer.is_empty() {
                        let queues = !hits && (busy[l] || waited[l]);
                        for value in 0..if queues { 1 } else { values } {
                            out.push(Action::Atomic { cache, line, value });
                        }
                    }
                }
            }
            if self.config.prefetch {
                for l in 0..lines {
                    let own_waiter = coherence.waiters(l).iter().any(|w| w.core == c as u32);
                    if coherence.state(c as u32, l) == LineState::Invalid && !own_waiter {
                        out.push(Action::Prefetch {
                            cache,
                            line: l as u8,
                        });
                    }
                }
            }
            if self.config.ownership_prefetch != OwnershipPrefetch::Off {
                for l in 0..lines {
                    let own_waiter = coherence.waiters(l).iter().any(|w| w.core == c as u32);
                    // A draining store's line has its request waiting.
                    let eligible = match self.config.ownership_prefetch {
                        OwnershipPrefetch::AnyLine => true,
                        _ => buffer.contains(&(l as u8)),
                    };
                    if eligible && !writable(c, l) && !own_waiter {
                        out.push(Action::OwnershipPrefetch {
                            cache,
                            line: l as u8,
                        });
                    }
                }
            }
            if self.config.evictions {
                for l in 0..lines {
                    if coherence.may_drop(c as u32, l, NOW) {
                        out.push(Action::Evict {
                            cache,
                            line: l as u8,
                        });
                    }
                }
            }
            if let (Some(&line), false) = (buffer.first(), cpu.draining) {
                let l = line as usize;
                let hits = !waited[l] && writable(c, l);
                let queues = !hits && (busy[l] || waited[l]);
                for value in 0..if queues { 1 } else { values } {
                    out.push(Action::Drain { cache, value });
                }
            }
        }
        for l in 0..lines {
            let line = l as u8;
            if busy[l] && !waited[l] {
                out.push(Action::Complete { line });
            } else if waited[l] {
                if busy[l] {
                    out.push(Action::ServeBusy { line });
                }
                // The line's transaction ends and the home serves a waiter
                // at once, as the engine's line-free event does: with
                // requests waiting, a line is never free between steps.
                for w in coherence.waiters(l) {
                    let prefetch = w.tag.kind() == RequestKind::Prefetch;
                    let cache = w.tag.cpu().get() as u8;
                    let drain = w.tag.kind() == RequestKind::Drain;
                    let writes = drain
                        || (!prefetch
                            && state.cpus[cache as usize].blocked == Some(Blocked::Atomic(line)));
                    for value in 0..if writes { values } else { 1 } {
                        out.push(Action::Serve {
                            line,
                            cache,
                            drain,
                            prefetch,
                            value,
                        });
                    }
                }
            }
        }
    }

    /// Takes one step; `describe` asks for the outcome in words (for a
    /// path being reported; otherwise it is left empty). The protocol's
    /// table: one rule per action kind, each a method of its own; every
    /// step that takes place ends with the same checks.
    fn step(&self, state: &State, action: Action, describe: bool, next: &mut State) -> StepResult {
        next.copy_from(state);
        let mut s = Stepping {
            before: state,
            next,
            describe,
        };
        let taken = match action {
            Action::Load { cache, line } => self.step_load(&mut s, cache, line)?,
            Action::Store { cache, line, value } => self.step_store(&mut s, cache, line, value)?,
            Action::Drain { cache, value } => self.step_drain(&mut s, cache, value)?,
            Action::Atomic { cache, line, value } => {
                self.step_atomic(&mut s, cache, line, value)?
            }
            Action::Prefetch { cache, line } => {
                self.step_prefetch(&mut s, cache, line, Need::Read)?
            }
            Action::OwnershipPrefetch { cache, line } => {
                self.step_prefetch(&mut s, cache, line, Need::Write)?
            }
            Action::Evict { cache, line } => self.step_evict(&mut s, cache, line)?,
            Action::Complete { line } => {
                s.next.coherence.end_busy(line as usize, NOW);
                Some(Taken {
                    outcome: s.say(|| "the line is free".to_string()),
                    effect: Effect::Freed,
                    written: None,
                })
            }
            Action::Serve {
                line,
                cache,
                drain,
                prefetch,
                value,
            } => {
                let tag = request_tag(cache as usize, drain, prefetch);
                self.step_serve(&mut s, line, tag, value)?
            }
            Action::ServeBusy { line } => self.step_serve_busy(&mut s, line)?,
        };
        let Some(Taken {
            outcome,
            effect,
            written,
        }) = taken
        else {
            return Ok(None);
        };
        self.check_versions(state, s.next, written)?;
        s.next.coherence.abstract_time(NOW, true);
        Ok(Some((outcome, effect)))
    }

    /// A load: a hit reads its own copy (and is never offered: it changes
    /// nothing); a miss is served at once or waits at the line's home.
    fn step_load(&self, s: &mut Stepping, cache: u8, line: u8) -> TakenResult {
        let (c, l) = (cache as usize, line as usize);
        let had_waiters = !s.before.coherence.waiters(l).is_empty();
        Ok(Some(
            match self.request(s.next, c, l, Need::Read, 0, false)? {
                Requested::Done(report) => {
                    check_no_bypass(had_waiters, l)?;
                    let value = self.apply(s.before, s.next, l, c, &report, None)?;
                    Taken::completed(
                        s.say(|| describe_report(&report, &format!("reads {value}: "))),
                        None,
                    )
                }
                Requested::Queued { .. } => {
                    s.next.cpus[c].blocked = Some(Blocked::Load(line));
                    Taken::waits(s.say(|| describe_queued(s.before, l)))
                }
            },
        ))
    }

    /// A store: written at once where the buffer is empty and the line
    /// writable, else posted to the store buffer (value 0 standing for
    /// it: the value is chosen when it drains).
    fn step_store(&self, s: &mut Stepping, cache: u8, line: u8, value: u8) -> TakenResult {
        let (c, l) = (cache as usize, line as usize);
        let had_waiters = !s.before.coherence.waiters(l).is_empty();
        let hit = if s.next.cpus[c].buffered == 0 {
            s.next.coherence.try_hit(
                &self.topology,
                NOW,
                LinuxCpu::new(c as u32),
                l,
                Need::Write,
                Cycles::ZERO,
            )
        } else {
            None
        };
        Ok(match hit {
            Some(report) => {
                check_no_bypass(had_waiters, l)?;
                self.apply(s.before, s.next, l, c, &report, Some(value))?;
                Some(Taken::completed(
                    s.say(|| {
                        describe_report(
                            &report,
                            &format!("the buffer is empty, writes {value} at once: "),
                        )
                    }),
                    Some(l),
                ))
            }
            None if value == 0 => {
                s.next.cpus[c].push(line);
                Some(Taken {
                    outcome: s.say(|| {
                        "posted to its store buffer (the value it writes is chosen when it \
                         drains)"
                            .to_string()
                    }),
                    effect: Effect::Posted,
                    written: None,
                })
            }
            None => None,
        })
    }

    /// The oldest buffered store drains: written at once, or waits at the
    /// line's home (value 0 standing for the request).
    fn step_drain(&self, s: &mut Stepping, cache: u8, value: u8) -> TakenResult {
        let c = cache as usize;
        let line = s.next.cpus[c].buffer()[0];
        let l = line as usize;
        let had_waiters = !s.before.coherence.waiters(l).is_empty();
        Ok(match self.request(s.next, c, l, Need::Write, 0, true)? {
            Requested::Done(report) => {
                check_no_bypass(had_waiters, l)?;
                self.apply(s.before, s.next, l, c, &report, Some(value))?;
                s.next.cpus[c].pop();
                Some(Taken::completed(
                    s.say(|| describe_report(&report, &format!("line {line}: "))),
                    Some(l),
                ))
            }
            Requested::Queued { .. } if value == 0 => {
                s.next.cpus[c].draining = true;
                Some(Taken::waits(s.say(|| {
                    format!("line {line}: {}", describe_queued(s.before, l))
                })))
            }
            Requested::Queued { .. } => None,
        })
    }

    /// An exchange: done at once, or waits at the line's home (value 0
    /// standing for the request).
    fn step_atomic(&self, s: &mut Stepping, cache: u8, line: u8, value: u8) -> TakenResult {
        let (c, l) = (cache as usize, line as usize);
        let had_waiters = !s.before.coherence.waiters(l).is_empty();
        Ok(
            match self.request(s.next, c, l, Need::Write, ATOMIC_HOLD, false)? {
                Requested::Done(report) => {
                    check_no_bypass(had_waiters, l)?;
                    let old = self.apply(s.before, s.next, l, c, &report, Some(value))?;
                    Some(Taken::completed(
                        s.say(|| {
                            describe_report(&report, &format!("reads {old}, writes {value}: "))
                        }),
                        Some(l),
                    ))
                }
                Requested::Queued { .. } if value == 0 => {
                    s.next.cpus[c].blocked = Some(Blocked::Atomic(line));
                    Some(Taken::waits(s.say(|| describe_queued(s.before, l))))
                }
                Requested::Queued { .. } => None,
            },
        )
    }

    /// A prefetch asking for `need`: the adjacent-line prefetcher's read,
    /// or a request for ownership with no store attached. Dropped where the
    /// cache holds the line well enough or waits for it already, else
    /// served or queued like any other request.
    fn step_prefetch(&self, s: &mut Stepping, cache: u8, line: u8, need: Need) -> TakenResult {
        let (c, l) = (cache as usize, line as usize);
        let had_waiters = !s.before.coherence.waiters(l).is_empty();
        let prefetched = s
            .next
            .coherence
            .prefetch_for(
                &self.topology,
                NOW,
                LinuxCpu::new(c as u32),
                l,
                need,
                request_tag(c, false, true),
            )
            .map_err(|e| found(Invariant::OneOwner, e.to_string()))?;
        Ok(match prefetched {
            None => None,
            Some(Requested::Done(report)) => {
                check_no_bypass(had_waiters, l)?;
                let value = self.apply(s.before, s.next, l, c, &report, None)?;
                Some(Taken::completed(
                    s.say(|| describe_report(&report, &format!("reads {value}: "))),
                    (need == Need::Write).then_some(l),
                ))
            }
            Some(Requested::Queued { .. }) => {
                Some(Taken::waits(s.say(|| describe_queued(s.before, l))))
            }
        })
    }

    /// An eviction: the cache's copy leaves as [`Coherence::drop_copy`]
    /// makes it; a Modified or Owned copy's value goes to memory.
    fn step_evict(&self, s: &mut Stepping, cache: u8, line: u8) -> TakenResult {
        let (c, l) = (cache as usize, line as usize);
        let held = s.before.coherence.state(c as u32, l);
        if !s.next.coherence.drop_copy(c as u32, l, NOW) {
            return Ok(None);
        }
        let data = &mut s.next.data[l];
        let dirty = matches!(held, LineState::Modified | LineState::Owned);
        if dirty {
            if let Some(v) = data.copies[c] {
                data.memory = v;
            }
        }
        data.copies[c] = None;
        s.next
            .coherence
            .check_unit(l, NOW)
            .map_err(|e| found(Invariant::Directory, e.to_string()))?;
        Ok(Some(Taken {
            outcome: s.say(|| {
                if dirty {
                    format!("its {held} copy is written back to memory and dropped")
                } else {
                    format!("its {held} copy is dropped")
                }
            }),
            effect: Effect::Nothing,
            written: None,
        }))
    }

    /// The line's transaction ends and the home serves the waiter `tag`
    /// (its load, exchange, drain or prefetch; `value` the one written).
    /// Not taken where the home would pass over it for another waiter:
    /// that one's own step covers it.
    fn step_serve(&self, s: &mut Stepping, line: u8, tag: RequestTag, value: u8) -> TakenResult {
        let l = line as usize;
        let Some(index) = s
            .before
            .coherence
            .waiters(l)
            .iter()
            .position(|w| w.tag == tag)
        else {
            return Ok(None);
        };
        s.next.coherence.end_busy(l, NOW);
        let served = s
            .next
            .coherence
            .serve_next(&self.topology, NOW, l, &mut |_| index)
            .map_err(|e| found(Invariant::OneOwner, e.to_string()))?;
        let Some((waiter, report)) = served else {
            // The home serves nobody: the line ends free with its
            // waiters (and, if the home never serves them, stuck).
            if s.before.coherence.busy_until(l) > NOW && index == 0 {
                return Ok(Some(Taken {
                    outcome: s.say(|| {
                        "the line is free, but the home serves nobody: the requests stay \
                         waiting"
                            .to_string()
                    }),
                    effect: Effect::Freed,
                    written: None,
                }));
            }
            return Ok(None);
        };
        if waiter.tag != tag {
            return Ok(None);
        }
        let c = tag.cpu().get();
        let cpu = &s.before.cpus[c];
        let served = |outcome: String, written: Option<usize>| {
            Ok(Some(Taken {
                outcome,
                effect: Effect::Served,
                written,
            }))
        };
        match tag.kind() {
            RequestKind::Prefetch => {
                let read = self.apply(s.before, s.next, l, c, &report, None)?;
                let owns = waiter.need == Need::Write;
                let outcome = s.say(|| {
                    let what = if owns {
                        "prefetch for ownership"
                    } else {
                        "prefetch"
                    };
                    describe_report(&report, &format!("its {what} reads {read}: "))
                });
                served(outcome, owns.then_some(l))
            }
            RequestKind::Drain => {
                if !cpu.draining || cpu.buffer().first() != Some(&line) {
                    return Err(unasked(l, c));
                }
                self.apply(s.before, s.next, l, c, &report, Some(value))?;
                let cpu = &mut s.next.cpus[c];
                cpu.pop();
                cpu.draining = false;
                served(s.say(|| describe_report(&report, "")), Some(l))
            }
            RequestKind::Demand => match cpu.blocked {
                Some(Blocked::Load(b)) if b == line => {
                    let read = self.apply(s.before, s.next, l, c, &report, None)?;
                    s.next.cpus[c].blocked = None;
                    let outcome =
                        s.say(|| describe_report(&report, &format!("its load reads {read}: ")));
                    served(outcome, None)
                }
                Some(Blocked::Atomic(b)) if b == line => {
                    let old = self.apply(s.before, s.next, l, c, &report, Some(value))?;
                    s.next.cpus[c].blocked = None;
                    let outcome = s.say(|| {
                        describe_report(
                            &report,
                            &format!("its exchange reads {old}, writes {value}: "),
                        )
                    });
                    served(outcome, Some(l))
                }
                _ => Err(unasked(l, c)),
            },
        }
    }

    /// The home asked to serve a waiter while the line's transaction is
    /// still in flight: it must serve nobody (never taken as a step).
    fn step_serve_busy(&self, s: &mut Stepping, line: u8) -> TakenResult {
        let served = s
            .next
            .coherence
            .serve_next(&self.topology, NOW, line as usize, &mut |_| 0)
            .map_err(|e| found(Invariant::OneOwner, e.to_string()))?;
        if let Some((waiter, _)) = served {
            return Err(found(
                Invariant::HomeOrder,
                format!(
                    "the home of line {line} served cache {}'s request while the \
                     line's transaction was still in flight: two transactions at once",
                    waiter.core
                ),
            ));
        }
        Ok(None)
    }

    fn request(
        &self,
        next: &mut State,
        c: usize,
        l: usize,
        need: Need,
        hold_cycles: u64,
        drain: bool,
    ) -> Result<Requested, Found> {
        next.coherence
            .request(
                &self.topology,
                NOW,
                LinuxCpu::new(c as u32),
                l,
                need,
                Cycles::new(hold_cycles),
                request_tag(c, drain, false),
            )
            .map_err(|e| found(Invariant::OneOwner, e.to_string()))
    }

    /// Moves the data as `report` says, checks what the access got, writes
    /// `write` if given; returns the value the access read (before its write).
    fn apply(
        &self,
        before: &State,
        next: &mut State,
        l: usize,
        c: usize,
        report: &AccessReport,
        write: Option<u8>,
    ) -> Result<u8, Found> {
        self.count_route(report);
        let old = &before.data[l];
        let (value, source) = if report.is_hit() {
            (old.copies[c], "its own copy".to_string())
        } else if let Route::L3 { l3 } = report.route {
            // The L3 keeps the line its cores read: it has the data of a
            // copy in one of them (every valid copy holds the same value,
            // which the invariant below checks).
            let kept = (0..self.config.caches as usize)
                .find(|&k| k != c && self.cache_l3[k] == l3 && old.copies[k].is_some());
            (
                kept.and_then(|k| old.copies[k]),
                format!("its L3 (domain {l3})"),
            )
        } else if let Some((s, s_state, _)) = report.supplier {
            (old.copies[s as usize], format!("cache {s} (in {s_state})"))
        } else if matches!(report.route, Route::Memory { .. }) {
            (Some(old.memory), "memory".to_string())
        } else {
            (old.copies[c], "its own copy".to_string())
        };
        let Some(value) = value else {
            return Err(found(
                Invariant::DataValue,
                format!(
                    "cache {c} completed an access to line {l} with the data of {source}, \
                     which has none"
                ),
            ));
        };
        if value != old.latest {
            return Err(found(
                Invariant::DataValue,
                format!(
                    "cache {c} got value {value} of line {l} from {source}, but the last \
                     value written is {}",
                    old.latest
                ),
            ));
        }
        let protocol = self.config.protocol;
        let data = &mut next.data[l];
        for change in &report.others {
            // MESI and MESIF write a Modified line back when a read
            // downgrades it; MOESI keeps the dirty data in the O copy.
            if change.before == LineState::Modified
                && change.after == LineState::Shared
                && protocol != Protocol::Moesi
            {
                if let Some(v) = old.copies[change.core as usize] {
                    data.memory = v;
                }
            }
        }
        for (k, copy) in data.copies.iter_mut().enumerate() {
            if next.coherence.state(k as u32, l) == LineState::Invalid {
                *copy = None;
            }
        }
        if next.coherence.state(c as u32, l) == LineState::Invalid {
            return Err(found(
                Invariant::DataValue,
                format!("cache {c}'s access to line {l} completed without leaving it a copy"),
            ));
        }
        data.copies[c] = Some(write.unwrap_or(value));
        if let Some(w) = write {
            data.latest = w;
        }
        Ok(value)
    }

    /// Each write advances its line's write count by exactly one, and
    /// nothing else moves it but a fill for ownership with no write (an
    /// ownership prefetch), which the model counts as one too.
    fn check_versions(
        &self,
        before: &State,
        next: &State,
        written: Option<usize>,
    ) -> Result<(), Found> {
        for l in 0..self.config.lines as usize {
            let expected = (written == Some(l)) as u64;
            let delta = next
                .coherence
                .version(l)
                .wrapping_sub(before.coherence.version(l));
            if delta != expected {
                return Err(found(
                    Invariant::DataValue,
                    format!(
                        "line {l}'s write count moved by {} where {expected} write(s) took \
                         place: the coherence order lost track",
                        delta as i64
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The invariants every state must satisfy.
    fn check_state(&self, state: &State) -> Result<(), Found> {
        for l in 0..self.config.lines as usize {
            let holders = state.coherence.holders(l);
            let copies = holders.len();
            let mut writer = None;
            for (core, s) in state.coherence.holders(l) {
                if matches!(s, LineState::Modified | LineState::Exclusive) {
                    writer = Some((core, s));
                }
            }
            if let Some((core, s)) = writer {
                if copies > 1 {
                    return Err(found(
                        Invariant::SingleWriter,
                        format!(
                            "line {l}: cache {core} holds a writable copy ({s}) while {} other \
                             cache(s) hold copies",
                            copies - 1
                        ),
                    ));
                }
            }
            let data = &state.data[l];
            for (core, s) in state.coherence.holders(l) {
                match data.copies[core as usize] {
                    Some(v) if v == data.latest => {}
                    Some(v) => {
                        return Err(found(
                            Invariant::DataValue,
                            format!(
                                "line {l}: cache {core} holds value {v} (in {s}) but the last \
                                 value written is {}",
                                data.latest
                            ),
                        ))
                    }
                    None => {
                        return Err(found(
                            Invariant::DataValue,
                            format!("line {l}: cache {core} is in {s} but was never sent the data"),
                        ))
                    }
                }
            }
            if let Err(e) = state.coherence.check_unit(l, NOW) {
                let message = match &e {
                    crate::SimError::ProtocolViolation { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                let invariant = if message.starts_with("single writer") {
                    Invariant::SingleWriter
                } else if message.starts_with("data value") {
                    Invariant::DataValue
                } else if message.starts_with("directory") {
                    Invariant::Directory
                } else {
                    Invariant::OneOwner
                };
                return Err(found(invariant, format!("line {l}: {message}")));
            }
        }
        Ok(())
    }

    /// Pending work, as a pair: (three times the buffered stores, less
    /// twice the drains waiting, plus the waiters and the blocked CPUs;
    /// the busy lines). Every step that completes work must lower it
    /// (lexicographically), so no sequence of them runs forever.
    fn measure(&self, state: &State) -> (u64, u64) {
        let mut primary = 0u64;
        for cpu in &state.cpus[..self.config.caches as usize] {
            primary += 3 * cpu.buffered as u64;
            primary -= 2 * cpu.draining as u64;
            primary += cpu.blocked.is_some() as u64;
        }
        let mut busy = 0;
        for l in 0..self.config.lines as usize {
            primary += state.coherence.waiting_count(l) as u64;
            busy += (state.coherence.busy_until(l) > NOW) as u64;
        }
        (primary, busy)
    }

    fn describe_pending(&self, state: &State) -> String {
        let mut parts = Vec::new();
        for (c, cpu) in state.cpus[..self.config.caches as usize].iter().enumerate() {
            match cpu.blocked {
                Some(Blocked::Load(l)) => parts.push(format!("cache {c} waits to load line {l}")),
                Some(Blocked::Atomic(l)) => {
                    parts.push(format!("cache {c} waits for an atomic on line {l}"))
                }
                None => {}
            }
            if cpu.buffered > 0 {
                parts.push(format!(
                    "cache {c} has {} buffered store(s){}",
                    cpu.buffered,
                    if cpu.draining {
                        ", the oldest waiting at its home"
                    } else {
                        ""
                    }
                ));
            }
        }
        for l in 0..self.config.lines as usize {
            let n = state.coherence.waiting_count(l);
            if n > 0 {
                parts.push(format!("{n} request(s) wait for line {l}"));
            }
            if state.coherence.busy_until(l) > NOW {
                parts.push(format!("line {l} is busy"));
            }
        }
        parts.join("; ")
    }

    /// The least encoding of `state` over the symmetries, in `key`.
    ///
    /// Only the renamings that put the caches, and the lines, in the order
    /// of a signature that no renaming changes are tried: for two states
    /// one renaming apart those candidates correspond one to one, so the
    /// least encoding among them is the same for both.
    fn canonical_key(&self, state: &State, key: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        // Plain loops and no sorting library: this runs for every step, and
        // must stay quick in unoptimised (test) builds too.
        let caches = self.config.caches as usize;
        let lines = self.config.lines as usize;
        let coherence = &state.coherence;
        let mut line_sig = [0u64; MAX_LINES as usize];
        // Per cache and line: its state and which of its requests wait.
        let mut feature = [[0u8; MAX_LINES as usize]; MAX_CACHES as usize];
        for l in 0..lines {
            // How many caches hold the line in each state, whoever they are.
            let mut x = 0u64;
            for (core, st) in coherence.holders(l) {
                x += 1 << (3 * st as u32);
                feature[core as usize][l] = (st as u8) << 2;
            }
            let waiters = coherence.waiters(l);
            for w in waiters {
                feature[w.core as usize][l] |= 1 << (w.tag.kind() == RequestKind::Drain) as u8;
            }
            let d = &state.data[l];
            x = x << 1 | (coherence.busy_until(l) > NOW) as u64;
            x = x << 4 | waiters.len() as u64;
            x = x << 1 | (d.memory != d.latest) as u64;
            line_sig[l] = x;
        }
        let mut cache_sig = [0u64; MAX_CACHES as usize];
        for c in 0..caches {
            let cpu = &state.cpus[c];
            // The cache's features over the lines, as a multiset (sorted).
            let f = &mut feature[c];
            for i in 1..lines {
                let mut j = i;
                while j > 0 && f[j - 1] > f[j] {
                    f.swap(j - 1, j);
                    j -= 1;
                }
            }
            let mut x = cpu.buffered as u64;
            x = x << 1 | cpu.draining as u64;
            x = x << 2
                | match cpu.blocked {
                    None => 0,
                    Some(Blocked::Load(_)) => 1,
                    Some(Blocked::Atomic(_)) => 2,
                };
            for &v in &f[..lines] {
                x = x << 5 | v as u64;
            }
            cache_sig[c] = x;
        }
        let mut first = true;
        'symmetries: for symmetry in &self.symmetries {
            // Sorted by signature inside each L3 domain (the renamings
            // keep domains together, so some renaming sorts each).
            for i in 1..caches {
                if self.cache_l3[i - 1] != self.cache_l3[i] {
                    continue;
                }
                let (a, b) = (symmetry.cache_at[i - 1], symmetry.cache_at[i]);
                if cache_sig[a as usize] > cache_sig[b as usize] {
                    continue 'symmetries;
                }
            }
            for i in 1..lines {
                if line_sig[symmetry.line_at[i - 1]] > line_sig[symmetry.line_at[i]] {
                    continue 'symmetries;
                }
            }
            scratch.clear();
            self.encode(state, symmetry, scratch);
            if first || scratch < key {
                std::mem::swap(key, scratch);
                first = false;
            }
        }
    }

    /// The exact encoding of a state under a renaming of caches, lines and
    /// (per line) values.
    fn encode(&self, state: &State, symmetry: &Symmetry, out: &mut Vec<u8>) {
        let tags = |tag: RequestTag| {
            tag.with_cpu(CpuIndex::new(symmetry.caches[tag.cpu().get()] as usize))
        };
        state.coherence.encode(
            &Renaming {
                cores: &symmetry.caches,
                core_at: &symmetry.cache_at,
                cpus: &symmetry.caches,
                tags: &tags,
                units: &symmetry.line_at,
            },
            out,
        );
        for &c in &symmetry.cache_at {
            let cpu = &state.cpus[c as usize];
            out.push(cpu.buffered);
            for &l in cpu.buffer() {
                out.push(symmetry.lines[l as usize]);
            }
            out.push(cpu.draining as u8);
            match cpu.blocked {
                None => out.push(0),
                Some(Blocked::Load(l)) => out.extend([1, symmetry.lines[l as usize]]),
                Some(Blocked::Atomic(l)) => out.extend([2, symmetry.lines[l as usize]]),
            }
        }
        for &l in &symmetry.line_at {
            // Values renamed in order of appearance, the latest first.
            let d = &state.data[l];
            let mut names: [Option<u8>; MAX_VALUES as usize] = [None; MAX_VALUES as usize];
            let mut next_name = 0u8;
            let mut name = |v: u8| {
                *names[v as usize].get_or_insert_with(|| {
                    next_name += 1;
                    next_name - 1
                })
            };
            name(d.latest);
            out.push(name(d.memory));
            for &c in &symmetry.cache_at {
                out.push(d.copies[c as usize].map_or(NO_COPY, &mut name));
            }
        }
    }

    /// Rebuilds the path to state `id` (and the step `last` from it, if
    /// given) by replaying it, with each step's outcome in words.
    fn violation(
        &self,
        parents: &[(MaybeState, Action)],
        id: u32,
        last: Option<Action>,
        f: Found,
    ) -> Violation {
        let mut actions = Vec::new();
        let mut at = id;
        while let (Some(parent), action) = (parents[at as usize].0.get(), parents[at as usize].1) {
            actions.push(action);
            at = parent;
        }
        actions.reverse();
        let mut state = self.initial.clone();
        let mut next = self.initial.clone();
        let mut path = Vec::new();
        for &action in &actions {
            match self.step(&state, action, true, &mut next) {
                Ok(Some((outcome, effect))) => {
                    path.push(Step {
                        action,
                        outcome,
                        effect,
                    });
                    std::mem::swap(&mut state, &mut next);
                }
                _ => unreachable!("a recorded path replays"),
            }
        }
        let describe = |s: &State| -> Vec<String> {
            (0..self.config.lines as usize)
                .map(|l| {
                    let d = &s.data[l];
                    format!(
                        "line {l}: {}; last value written {}, memory holds {}",
                        s.coherence.describe_unit(l),
                        d.latest,
                        d.memory
                    )
                })
                .collect()
        };
        let mut states = describe(&state);
        if let Some(action) = last {
            let (outcome, effect) = match self.step(&state, action, true, &mut next) {
                Ok(Some((outcome, effect))) => {
                    states = describe(&next);
                    (outcome, effect)
                }
                Ok(None) => ("no change".to_string(), Effect::Nothing),
                Err(_) => {
                    let outcome = match action {
                        Action::Store { value, .. }
                        | Action::Atomic { value, .. }
                        | Action::Drain { value, .. } => {
                            format!("writing {value}: this step breaks the invariant")
                        }
                        _ => "this step breaks the invariant".to_string(),
                    };
                    (outcome, Effect::Breaks)
                }
            };
            path.push(Step {
                action,
                outcome,
                effect,
            });
        }
        Violation {
            invariant: f.invariant,
            message: f.message,
            path,
            states,
        }
    }
}

/// A step that completes work left as much pending (`pending` before,
/// `after` after, by `Explorer::measure`): steps like it could go on for ever.
fn livelock(pending: (u64, u64), after: (u64, u64)) -> Found {
    found(
        Invariant::Deadlock,
        format!(
            "no progress: the step took the pending work from {pending:?} to {after:?}, so \
             steps like it could go on forever (livelock)"
        ),
    )
}

/// An access completed on a line where others wait: they should have gone first.
fn check_no_bypass(had_waiters: bool, l: usize) -> Result<(), Found> {
    if had_waiters {
        return Err(found(
            Invariant::HomeOrder,
            format!(
                "an access completed on line {l} while other requests were waiting for it \
                 at the home: it went before them"
            ),
        ));
    }
    Ok(())
}

fn unasked(l: usize, c: usize) -> Found {
    found(
        Invariant::HomeOrder,
        format!("the home of line {l} answered a request cache {c} has not made"),
    )
}

fn describe_queued(state: &State, l: usize) -> String {
    let n = state.coherence.waiting_count(l);
    if n == 0 {
        "the line is busy: waits at the home".to_string()
    } else {
        format!("waits at the home behind {n} other request(s)")
    }
}

fn describe_report(report: &AccessReport, prefix: &str) -> String {
    if report.is_hit() {
        return format!(
            "{prefix}hit ({} -> {})",
            report.requester_before, report.requester_after
        );
    }
    let source = match (report.supplier, report.route) {
        (Some((s, state, _)), _) => format!("data from cache {s} ({state})"),
        (None, Route::Memory { .. }) => "data from memory".to_string(),
        _ => "no data needed".to_string(),
    };
    let mut text = format!(
        "{prefix}{} -> {}, {source}",
        report.requester_before, report.requester_after
    );
    for change in &report.others {
        text.push_str(&format!(
            "; cache {} {} -> {}",
            change.core, change.before, change.after
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::planted::{self, Bug};

    #[test]
    fn an_exploration_stops_at_its_memory_bound_and_says_how_far_it_got() {
        let config = CheckConfig {
            max_bytes: 2 << 20,
            ..CheckConfig::new(Protocol::Moesi)
        };
        let report = check(&config).unwrap();
        assert!(!report.complete);
        assert_eq!(report.stopped_by, Some(CheckBudget::Memory));
        assert!(report.bytes > config.max_bytes);
        assert!(report.states > 1000, "{}", report.states);
        // The same exploration with room to spare completes, and reports
        // what it took.
        let plain = check(&CheckConfig {
            lines: 1,
            ..CheckConfig::new(Protocol::Mesi)
        })
        .unwrap();
        assert!(plain.complete && plain.stopped_by.is_none());
        assert!(plain.bytes > 0 && plain.bytes < plain.config.max_bytes);
    }

    /// 3 caches x 2 lines x 2 values, each cache its own L3 domain (every
    /// transfer through the directory, whose renamings of caches are all
    /// symmetries); store buffers of 2 in optimised builds, of 1 in debug
    /// builds (the same exploration, some eight times slower unoptimised,
    /// and seven times as many states at depth 2). The shared-L3 machine
    /// is checked by `the_shared_l3_machine_takes_every_route_and_holds`.
    fn standard(protocol: Protocol) -> CheckConfig {
        CheckConfig {
            buffer_depth: if cfg!(debug_assertions) { 1 } else { 2 },
            cores_per_l3: 1,
            l3_shared_lines: L3SharedLines::NotKept,
            clean_shared_line_answer: CleanSharedLineAnswer::MemoryOrForwarder,
            directory: DirectoryPrecision::Exact,
            ..CheckConfig::new(protocol)
        }
    }

    /// The default machine: caches 0 and 1 share an L3 that keeps shared
    /// lines, cache 2 has its own, the directory broadcasts writes to
    /// shared lines. Every route is taken and every invariant holds. 3
    /// caches x 2 lines x 2 values, store buffers of 1 in optimised builds
    /// (MESI 144 199, MESIF 346 149, MOESI 1 353 593 states); 1 line in
    /// debug builds (1 072, 1 638 and 3 276 states). Floors: those less
    /// about a tenth.
    #[test]
    fn the_shared_l3_machine_takes_every_route_and_holds() {
        for (protocol, floors) in [
            (Protocol::Mesi, (960, 130_000)),
            (Protocol::Mesif, (1_470, 310_000)),
            (Protocol::Moesi, (2_940, 1_200_000)),
        ] {
            let (lines, floor) = if cfg!(debug_assertions) {
                (1, floors.0)
            } else {
                (2, floors.1)
            };
            let config = CheckConfig {
                lines,
                buffer_depth: 1,
                ..CheckConfig::new(protocol)
            };
            assert_eq!(config.cores_per_l3, 2);
            assert_eq!(config.directory, DirectoryPrecision::BroadcastShared);
            assert!(config.l3_shared_lines.supplies());
            let label = format!("{} on the shared-L3 machine", protocol.name());
            let report = explores_without_violation(&config, &label, floor);
            let r = report.routes;
            println!("{label}: {r}");
            for (route, count) in [
                ("L3 hits", r.l3_hits),
                ("same-L3 transfers", r.same_l3),
                ("directory", r.directory),
                ("memory", r.memory),
                ("broadcasts", r.broadcasts),
                ("hits", r.hits),
            ] {
                assert!(count > 0, "{label}: no {route}: {r}");
            }
            // The same exploration with one cache per L3 takes neither L3
            // route.
            let apart = check(&CheckConfig {
                cores_per_l3: 1,
                ..config.clone()
            })
            .unwrap();
            assert_eq!((apart.routes.l3_hits, apart.routes.same_l3), (0, 0));
            assert!(apart.violation.is_none() && apart.complete);
        }
    }

    /// Who answers a clean shared line (`CleanSharedLineAnswer`): the
    /// shared-L3 machine under each answer holds every invariant, and the
    /// answers that let a cache answer a line only Shared copies hold take
    /// fewer reads to memory where some line is held only Shared (MESI and
    /// MOESI; MESIF's Forward copy already answers).
    #[test]
    fn every_clean_shared_answer_holds_on_the_shared_l3_machine() {
        for protocol in [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi] {
            let base = CheckConfig {
                lines: 1,
                buffer_depth: 1,
                ..CheckConfig::new(protocol)
            };
            let label = format!("{} memory-or-forwarder", protocol.name());
            let default = explores_without_violation(&base, &label, 900);
            for answer in [
                CleanSharedLineAnswer::HoldingL3,
                CleanSharedLineAnswer::HoldingDie,
            ] {
                let config = CheckConfig {
                    clean_shared_line_answer: answer,
                    ..base.clone()
                };
                let label = format!("{} {}", protocol.name(), answer.name());
                let report = explores_without_violation(&config, &label, 900);
                assert_eq!(report.states, default.states, "{label}");
                if protocol == Protocol::Mesif {
                    assert!(report.routes.memory <= default.routes.memory, "{label}");
                } else {
                    assert!(
                        report.routes.memory < default.routes.memory,
                        "{label}: {} against {}",
                        report.routes.memory,
                        default.routes.memory
                    );
                }
            }
        }
    }

    /// `floors`: states at store buffers of 1 (debug builds) and of 2: the
    /// counts found when this was written, less about a tenth, so that an
    /// exploration that quietly stops covering states fails.
    fn holds(protocol: Protocol, floors: (u64, u64)) {
        let floor = if cfg!(debug_assertions) {
            floors.0
        } else {
            floors.1
        };
        let report = explores_without_violation(&standard(protocol), protocol.name(), floor);
        assert!(report.depth >= 20, "depth {}", report.depth);
    }

    /// Checks `config` whole: no invariant broken, the exploration complete
    /// and at least `floor` states (so one that quietly stops covering
    /// states fails). Prints the counts under `label`.
    fn explores_without_violation(config: &CheckConfig, label: &str, floor: u64) -> CheckReport {
        let report = check(config).unwrap();
        if let Some(v) = &report.violation {
            panic!("{label}: {v}");
        }
        println!(
            "{label}: {} states, {} transitions, depth {}, {} quiescent",
            report.states, report.transitions, report.depth, report.quiescent_states
        );
        assert!(report.complete, "{label}: incomplete");
        assert!(report.states >= floor, "{label}: {} states", report.states);
        report
    }

    #[test]
    fn mesi_holds_in_every_reachable_state() {
        // 49 337 and 384 999 states.
        holds(Protocol::Mesi, (45_000, 350_000));
    }

    #[test]
    fn mesif_holds_in_every_reachable_state() {
        // 116 057 and 888 168 states.
        holds(Protocol::Mesif, (105_000, 800_000));
    }

    #[test]
    fn moesi_holds_in_every_reachable_state() {
        // 454 485 and 3 344 943 states.
        holds(Protocol::Moesi, (410_000, 3_000_000));
    }

    /// With adjacent-line prefetch reads as steps of their own: 2 caches x 2
    /// lines x 2 values, store buffers of 1 (a prefetch can be issued at
    /// any time, so the state space grows a hundredfold: 3 caches take
    /// minutes, see the ignored test below). `floor`: the states found when
    /// this was written, less about a tenth.
    fn holds_with_prefetch(protocol: Protocol, caches: u32, floor: u64) {
        // One cache per L3 domain, so that the two caches' transfers go
        // through the directory (the default machine's two would share an L3).
        let plain = CheckConfig {
            caches,
            buffer_depth: 1,
            cores_per_l3: 1,
            ..CheckConfig::new(protocol)
        };
        let config = CheckConfig {
            prefetch: true,
            ..plain.clone()
        };
        let label = format!("{} with prefetch, {caches} caches", protocol.name());
        let report = explores_without_violation(&config, &label, floor);
        // Prefetches add states: the same exploration without them is smaller.
        let without = check(&plain).unwrap();
        assert!(
            report.states > without.states,
            "{} vs {}",
            report.states,
            without.states
        );
    }

    #[test]
    fn mesi_with_prefetch_holds_in_every_reachable_state() {
        // 67 476 states.
        holds_with_prefetch(Protocol::Mesi, 2, 60_000);
    }

    #[test]
    fn mesif_with_prefetch_holds_in_every_reachable_state() {
        // 97 114 states.
        holds_with_prefetch(Protocol::Mesif, 2, 87_000);
    }

    #[test]
    fn moesi_with_prefetch_holds_in_every_reachable_state() {
        // 206 705 states.
        holds_with_prefetch(Protocol::Moesi, 2, 185_000);
    }

    /// With evictions as steps of their own (any cache, any line it holds
    /// whose home is not busy with it, at any time), on the default
    /// machine (a shared L3 that keeps lines, a broadcast directory): 3
    /// caches, store buffers of 1, 2 lines (1 in debug builds). Every
    /// invariant holds; evictions add states, and reads that find the
    /// written-back value in memory.
    fn holds_with_evictions(protocol: Protocol) {
        let plain = CheckConfig {
            buffer_depth: 1,
            lines: if cfg!(debug_assertions) { 1 } else { 2 },
            ..CheckConfig::new(protocol)
        };
        let config = CheckConfig {
            evictions: true,
            ..plain.clone()
        };
        let label = format!("{} with evictions", protocol.name());
        let report = explores_without_violation(&config, &label, 1);
        let without = check(&plain).unwrap();
        assert!(report.states > without.states, "{label}");
        assert!(report.routes.memory > without.routes.memory, "{label}");
    }

    #[test]
    fn mesi_with_evictions_holds_in_every_reachable_state() {
        holds_with_evictions(Protocol::Mesi);
    }

    #[test]
    fn mesif_with_evictions_holds_in_every_reachable_state() {
        holds_with_evictions(Protocol::Mesif);
    }

    #[test]
    fn moesi_with_evictions_holds_in_every_reachable_state() {
        holds_with_evictions(Protocol::Moesi);
    }

    /// With requests for ownership with no store attached as steps of their
    /// own (`ownership`: of the lines of a cache's buffered stores, or of
    /// any line), evictions too: every invariant holds, and the requests
    /// add states and fills for ownership that bring the last value
    /// written. Two configurations small enough for a debug build (any
    /// line at any step grows the default 3 x 2 system past the default
    /// memory bound): 2 caches x 2 lines with an L3 each, store buffers of
    /// 1; 3 caches x 1 line on the default machine, store buffers of 2.
    /// `floors`: the states found when this was written, less about a
    /// tenth.
    fn holds_with_ownership_prefetch(
        protocol: Protocol,
        ownership: OwnershipPrefetch,
        floors: [u64; 2],
    ) {
        let configs = [
            CheckConfig {
                caches: 2,
                lines: 2,
                buffer_depth: 1,
                cores_per_l3: 1,
                evictions: true,
                ..CheckConfig::new(protocol)
            },
            CheckConfig {
                caches: 3,
                lines: 1,
                buffer_depth: 2,
                evictions: true,
                ..CheckConfig::new(protocol)
            },
        ];
        for (plain, floor) in configs.into_iter().zip(floors) {
            let config = CheckConfig {
                ownership_prefetch: ownership,
                ..plain.clone()
            };
            let label = format!(
                "{} with ownership prefetches ({}), {} caches x {} lines",
                protocol.name(),
                ownership.name(),
                plain.caches,
                plain.lines
            );
            let report = explores_without_violation(&config, &label, floor);
            let without = check(&plain).unwrap();
            assert!(
                report.states > without.states,
                "{label}: {} vs {}",
                report.states,
                without.states
            );
        }
    }

    #[test]
    fn mesi_with_ownership_prefetch_holds_in_every_reachable_state() {
        // 72 866 and 28 438 states; 54 937 and 24 274.
        holds_with_ownership_prefetch(Protocol::Mesi, OwnershipPrefetch::AnyLine, [65_000, 25_000]);
        holds_with_ownership_prefetch(
            Protocol::Mesi,
            OwnershipPrefetch::BufferedStores,
            [49_000, 21_000],
        );
    }

    #[test]
    fn mesif_with_ownership_prefetch_holds_in_every_reachable_state() {
        // 104 933 and 41 878 states; 83 126 and 36 889.
        holds_with_ownership_prefetch(
            Protocol::Mesif,
            OwnershipPrefetch::AnyLine,
            [94_000, 37_000],
        );
        holds_with_ownership_prefetch(
            Protocol::Mesif,
            OwnershipPrefetch::BufferedStores,
            [74_000, 33_000],
        );
    }

    #[test]
    fn moesi_with_ownership_prefetch_holds_in_every_reachable_state() {
        // 232 260 and 77 664 states; 173 222 and 65 235.
        holds_with_ownership_prefetch(
            Protocol::Moesi,
            OwnershipPrefetch::AnyLine,
            [209_000, 69_000],
        );
        holds_with_ownership_prefetch(
            Protocol::Moesi,
            OwnershipPrefetch::BufferedStores,
            [155_000, 58_000],
        );
    }

    /// Three caches: `cargo test -p sim-core --lib three_caches_with_prefetch
    /// -- --ignored` (MESI: 4 604 640 states, about 5 minutes).
    #[test]
    #[ignore]
    fn three_caches_with_prefetch_hold_in_every_reachable_state() {
        for protocol in [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi] {
            holds_with_prefetch(protocol, 3, 1);
        }
    }

    /// Each planted bug, the protocol it is planted in, and the invariant
    /// that must catch it.
    const PLANTED: [(Bug, Protocol, Invariant); 15] = [
        (
            Bug::WriteSparesOneSharer,
            Protocol::Mesi,
            Invariant::SingleWriter,
        ),
        (
            Bug::UpgradeKeepsSharers,
            Protocol::Mesi,
            Invariant::SingleWriter,
        ),
        (
            Bug::MoesiModifiedToShared,
            Protocol::Moesi,
            Invariant::DataValue,
        ),
        (Bug::MesifKeepsForward, Protocol::Mesif, Invariant::OneOwner),
        (
            Bug::ExclusiveDespiteSharers,
            Protocol::Mesi,
            Invariant::SingleWriter,
        ),
        (Bug::OwnedNotSupplier, Protocol::Moesi, Invariant::DataValue),
        (
            Bug::WriteHitKeepsVersion,
            Protocol::Mesi,
            Invariant::DataValue,
        ),
        (
            Bug::DirectoryMissesRequester,
            Protocol::Mesi,
            Invariant::Directory,
        ),
        (
            Bug::DirectoryKeepsOwner,
            Protocol::Mesi,
            Invariant::Directory,
        ),
        (Bug::ServeWhileBusy, Protocol::Mesi, Invariant::HomeOrder),
        (Bug::HitBypassesQueue, Protocol::Mesi, Invariant::HomeOrder),
        (Bug::HoldersNeverServed, Protocol::Mesi, Invariant::Deadlock),
        (Bug::ServeDropsRead, Protocol::Mesi, Invariant::Deadlock),
        (
            Bug::PrefetchKeepsOwnerModified,
            Protocol::Mesi,
            Invariant::SingleWriter,
        ),
        (
            Bug::OwnershipPrefetchTakesDirtyDataClean,
            Protocol::Mesi,
            Invariant::DataValue,
        ),
    ];

    /// Runs a violation's replay scripts in the engine, with the invariants
    /// checked after every transaction.
    fn replay(config: &CheckConfig, violation: &Violation) -> Result<(), crate::SimError> {
        use crate::engine::{
            run, SimConfig, StopRule, ThreadSpec, DEFAULT_MAX_EVENTS, DEFAULT_MAX_OPERATIONS,
            DEFAULT_MAX_STEPS_WITHOUT_TIME,
        };
        use crate::memory::{FieldDef, InstanceDef, InstanceKind, StructDef};
        use crate::probe::NoProbe;
        use crate::script::compile::{compile, ScriptSource};
        use crate::script::parse::parse_block;
        let lines = config.lines as u64;
        let memory = MemoryLayout {
            structs: vec![StructDef {
                name: "line".into(),
                size_bytes: 64,
                align_bytes: 64,
                fields: vec![FieldDef::simple("v", 0, 8, 1)],
            }],
            instances: vec![InstanceDef {
                name: "lines".into(),
                struct_index: 0,
                kind: InstanceKind::Global,
                element_addresses: (0..lines).map(|l| l * 64).collect(),
                element_homes: vec![0; lines as usize],
            }],
            total_bytes: 64 * lines,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: vec![0; lines as usize],
        };
        let scripts = violation.replay_scripts();
        let sources: Vec<ScriptSource> = scripts
            .iter()
            .map(|(cpu, text)| ScriptSource {
                name: format!("cache{cpu}"),
                body: parse_block(text).unwrap_or_else(|e| panic!("{e}\n{text}")),
            })
            .collect();
        let program = compile(&memory, &[], &[], &sources).expect("replay compiles");
        let sim = SimConfig {
            topology: Topology::new(config.machine()).unwrap(),
            memory,
            program,
            threads: scripts
                .iter()
                .enumerate()
                .map(|(i, (cpu, _))| ThreadSpec {
                    cpu: LinuxCpu::new(*cpu),
                    script: i as u32,
                    tid: 0,
                    group_size: 1,
                })
                .collect(),
            stop: StopRule::Iterations(1),
            warmup_iterations: 0,
            max_cycles: 10_000_000,
            max_events: DEFAULT_MAX_EVENTS,
            max_steps_without_time: DEFAULT_MAX_STEPS_WITHOUT_TIME,
            max_operations: DEFAULT_MAX_OPERATIONS,
            seed: 1,
            start_spread_cycles: 0,
            check_invariants: true,
            scheduler: Default::default(),
        };
        run(&sim, &mut NoProbe).map(|_| ())
    }

    #[test]
    fn a_violation_replays_in_the_simulator() {
        // The bugs the simulator's own checks see: each path, replayed by
        // the engine with the bug planted, stops with a protocol violation;
        // without the bug the same scripts run clean.
        for (bug, protocol) in [
            (Bug::WriteSparesOneSharer, Protocol::Mesi),
            (Bug::UpgradeKeepsSharers, Protocol::Mesi),
            (Bug::MesifKeepsForward, Protocol::Mesif),
            (Bug::ExclusiveDespiteSharers, Protocol::Mesi),
            (Bug::DirectoryMissesRequester, Protocol::Mesi),
            (Bug::DirectoryKeepsOwner, Protocol::Mesi),
        ] {
            let config = CheckConfig::new(protocol);
            let violation = planted::with(bug, || check(&config).unwrap().violation)
                .unwrap_or_else(|| panic!("{bug:?} not caught"));
            let replayed = planted::with(bug, || replay(&config, &violation));
            match replayed {
                Err(crate::SimError::ProtocolViolation { .. }) => {}
                other => panic!(
                    "{bug:?}: the replay gave {other:?}\n{violation}\n{:?}",
                    violation.replay_scripts()
                ),
            }
            assert_eq!(
                replay(&config, &violation),
                Ok(()),
                "{bug:?} without the bug"
            );
            println!("{bug:?}: {:?}", violation.replay_scripts());
        }
    }

    #[test]
    fn every_planted_bug_is_caught_by_its_invariant() {
        assert_eq!(PLANTED.len(), Bug::ALL.len());
        let mut failures = Vec::new();
        for (bug, protocol, invariant) in PLANTED {
            let owns = bug == Bug::OwnershipPrefetchTakesDirtyDataClean;
            let config = CheckConfig {
                // The prefetch bugs need their prefetches to be explored;
                // a clean copy's data is lost only when it is evicted.
                prefetch: bug == Bug::PrefetchKeepsOwnerModified,
                ownership_prefetch: if owns {
                    OwnershipPrefetch::BufferedStores
                } else {
                    OwnershipPrefetch::Off
                },
                evictions: owns,
                ..CheckConfig::new(protocol)
            };
            let report = planted::with(bug, || check(&config).unwrap());
            match &report.violation {
                Some(v) => {
                    println!(
                        "{bug:?} ({}): {} states\n{v}",
                        protocol.name(),
                        report.states
                    );
                    if v.invariant != invariant {
                        failures.push(format!(
                            "{bug:?}: caught by {} instead of {invariant}: {}",
                            v.invariant, v.message
                        ));
                    }
                }
                None => failures.push(format!("{bug:?}: not caught")),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
