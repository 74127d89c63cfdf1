//! The event loop: CPUs running compiled scripts against the coherence
//! model, in simulated time.
//!
//! Ordering contract: events are processed in (cycle, key) order, where the
//! key is a property of the event itself (its class, then a seeded hash of
//! its cycle and target, then the target: `event_key`), never of when it
//! was queued. A CPU
//! runs ahead on its own only while its own resume at its local time would
//! come before the next queued event; otherwise, before an access, it
//! queues itself and waits its turn. So every transaction reaches the
//! coherence model in global (cycle, key) order, a CPU that ran ahead lands
//! exactly where stepping would have put it, and a run is a pure function
//! of its configuration: no wall clock, no host threads, no hash iteration.
//!
//! A CPU blocks only on its own accesses (their latency advances its clock)
//! and on its store buffer (an atomic or fence waiting for it to drain, or a
//! store finding it full). Plain stores post to the buffer and drain in
//! order, one line transaction at a time (x86-TSO); loads forward from it.
//!
//! The files: this one holds the run's configuration and outcome, the CPU
//! state, the event keys and the turn rule (`Turn`), and the event loop
//! (`run_events`, `run_cpu`); `rules` what each script operation does,
//! stated once (`execute`, over a `Machine`), and `step`'s machine;
//! `access` the loads, stores and atomics sent to the coherence model;
//! `store_buffer` the drains; `outstanding` what a CPU's memory system
//! still has under way (store buffer, loads in flight, reorder window),
//! with its one-comparison summary; `shortcuts` the faster ways of getting the
//! same result (`run_ahead`: the same rules on a machine that runs a CPU
//! ahead of the queue; `hoisted`; `spin`), each behind its switch in
//! [`EngineOptions`].

use crate::coherence::{
    AccessReport, Coherence, LineState, Need, RequestKind, RequestTag, Requested,
};
use crate::cpu::{CpuIndex, LinuxCpu};
use crate::error::{Budget, CpuWhere, SimError, Stall, StalledCpu};
use crate::memory::{BitRange, InstanceKind, MemoryLayout};
use crate::probe::{AccessEvent, AccessKind, PrivateHits, Probe};
use crate::queue::{EventQueue, EVENT_BYTES};
use crate::script::ast::{AtomicOp, BinaryOp, SourcePos, UnaryOp};
use crate::script::compile::{Builtin, Code, Op, PlaceRef, Program};
use crate::script::fuse::{
    self, Destination, Fused, FusedAtomic, Operand, BINARY_OPS, REPEAT_HEAD_OPS,
};
use crate::time::{Cycle, Cycles};
use crate::topology::Topology;
use rand::distr::{Distribution, Uniform};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;

mod access;
mod in_flight;
mod outstanding;
mod reach;
mod rules;
mod sched;
mod shortcuts;
mod speculate;
mod store_buffer;

pub use reach::{code_reached, CodeReached};
pub use sched::{SchedulerParams, SchedulingCounts};

use access::*;
use in_flight::*;
use outstanding::Outstanding;
use rules::*;
use sched::*;
use shortcuts::run_ahead::*;
use shortcuts::spin;

/// One thread: the CPU it runs on, which script it runs, and its place in
/// its group. Several threads may share a CPU (`engine::sched`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    pub cpu: LinuxCpu,
    pub script: u32,
    /// Index of this CPU in its thread group (`tid()`), and the group's size.
    pub tid: u32,
    pub group_size: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopRule {
    /// Every CPU runs this many measured iterations (after the warm-up).
    Iterations(u64),
    /// The run ends at this cycle.
    Cycles(u64),
}

/// A complete, validated description of one run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub topology: Topology,
    pub memory: MemoryLayout,
    pub program: Program,
    pub threads: Vec<ThreadSpec>,
    pub stop: StopRule,
    pub warmup_iterations: u64,
    /// Budget: an iterations run still going at this cycle is truncated.
    pub max_cycles: u64,
    /// Budget on processed events.
    pub max_events: u64,
    /// Script steps of one CPU, or events of the run, at one cycle before
    /// the run is stopped for want of progress (`limits.steps_without_time`).
    pub max_steps_without_time: u64,
    /// Budget on each CPU's script operations (`limits.operations`), the
    /// bound on host time that no budget of cycles or events gives: a body
    /// of register arithmetic takes no simulated time.
    pub max_operations: u64,
    pub seed: u64,
    /// CPUs start at distinct, seeded offsets below this many cycles
    /// ([`start_offset`]), so that identical CPUs do not run in lock-step;
    /// 0 starts them all at cycle 0.
    pub start_spread_cycles: u64,
    pub check_invariants: bool,
    /// The scheduler's parameters and switch hooks (`engine::sched`).
    pub scheduler: SchedulerParams,
}

/// The default of [`SimConfig::start_spread_cycles`] (`run.start_spread_cycles`).
/// An assumption, not a measurement: threads a benchmark starts together
/// begin their loops some hundreds of nanoseconds to microseconds apart (a
/// wake-up crosses CPUs through an IPI); 1,000 cycles (0.3-0.5 µs at the
/// presets' clocks) is at the low end, enough to break the lock-step of
/// identical CPUs while adding little to a short run.
pub const DEFAULT_START_SPREAD_CYCLES: u64 = 1_000;

pub const MAX_CALL_DEPTH: usize = crate::limits::CALL_DEPTH;
pub const MAX_STACK: usize = crate::limits::OPERAND_STACK;
pub const DEFAULT_MAX_EVENTS: u64 = crate::limits::DEFAULT_EVENTS;
pub const DEFAULT_MAX_STEPS_WITHOUT_TIME: u64 = crate::limits::DEFAULT_STEPS_WITHOUT_TIME;
pub const DEFAULT_MAX_OPERATIONS: u64 = crate::limits::DEFAULT_OPERATIONS;

/// Host memory a run of `config` takes, estimated before it starts: the
/// simulated data, every line's coherence state (two caches holding each),
/// every CPU's registers, stack, locals and store buffer, the event queue's
/// ring and the events in flight. Caches that hold many lines each add to it (caches are
/// unbounded), so it is a floor for a run that touches all its memory from
/// every core, and close for the rest.
pub fn estimate_run_bytes(config: &SimConfig) -> u64 {
    let lines = config.memory.unit_count() as u64;
    let cpus = config.threads.len() as u64;
    let per_line = Coherence::line_state_bytes(config.topology.core_count());
    let per_cpu = (std::mem::size_of::<Cpu>()
        + 64 * 8
        + crate::limits::SCRIPT_LOCALS * 8
        + config.topology.spec.store_buffer_entries as usize * std::mem::size_of::<BufferedStore>()
        + config.topology.spec.outstanding_misses as usize
            * (std::mem::size_of::<Cycle>() + std::mem::size_of::<LateValue>()))
        as u64;
    config.memory.total_bytes
        + lines * per_line
        + cpus * per_cpu
        + events_in_flight_bound(config) * EVENT_BYTES
        + crate::queue::FIXED_BYTES
}

/// The most events a run can have queued at once (see `limits`).
fn events_in_flight_bound(config: &SimConfig) -> u64 {
    crate::limits::EVENTS_IN_FLIGHT_PER_CPU * config.threads.len() as u64
        + crate::limits::EVENTS_IN_FLIGHT_PER_LINE * config.memory.unit_count() as u64
}

/// What a finished run measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// Cycles from the start to the end of the measured window.
    pub elapsed_cycles: u64,
    /// Cycle at which measurement started (the last warm-up end; 0 without warm-up).
    pub measure_start_cycle: u64,
    pub events: u64,
    /// Memory operations executed (loads, stores, atomics), all CPUs.
    pub memory_ops: u64,
    /// One per thread, in `SimConfig::threads` order.
    pub cpus: Vec<CpuOutcome>,
    /// What the scheduler did (all zero for a run of one thread per CPU
    /// without scheduling operations).
    pub scheduling: SchedulingCounts,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuOutcome {
    pub cpu: LinuxCpu,
    pub measured_iterations: u64,
    /// Cycle at which the CPU finished (or the run's end).
    pub finish_cycle: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    Resume,
    DrainDone,
    /// A line's current transaction ends: its home serves a waiting request.
    LineFree,
    /// A CPU's loads whose addresses have arrived issue (`in_flight`,
    /// `park_load`).
    IssueLoad,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    None,
    /// An atomic, a fence or an overlapping load needs an empty store buffer.
    BufferEmpty,
    /// A store needs a free entry.
    BufferSlot,
    /// A load or atomic is queued at a line's home.
    Line,
    /// Asleep in a spin-wait until another CPU reaches its line (`spin`).
    Spin,
    /// Runnable, in its CPU's run queue (`sched`).
    Queued,
    /// Asleep in `futex_wait` until a `futex_wake` on its place.
    Futex,
    /// Asleep in `sleep` until its timer fires (its resume is queued).
    Asleep,
    /// Woken: on its way to its CPU (its resume is queued).
    Waking,
    /// An operation needs a value (or a miss buffer, or room in the
    /// reorder window) held by a load still queued at its line's home: the
    /// home's serve of one of the CPU's queued loads resumes it
    /// (`in_flight`).
    Served,
    /// About to park for such a value and run ahead past it, its resume
    /// queued at the same cycle: it waits for its turn, since the run
    /// makes requests (`in_flight::await_value`).
    Turn,
}

/// A load or atomic waiting at a line's home, to finish when served.
#[derive(Clone, Copy, Debug)]
struct PendingAccess {
    op: Option<AtomicOp>,
    address: u64,
    size_bytes: u32,
    field_id: u32,
    /// A bitfield load: the bits of the unit it returns.
    bits: Option<BitRange>,
    operand: i64,
    expected: i64,
    /// A fused atomic whose value the next operation drops (`Op::Pop`):
    /// its completion leaves the CPU past that `Pop` when the run-ahead
    /// would have run it at once (`complete_access`).
    discard: bool,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Index into `Simulation::code_ops`: the scripts, then the procedures.
    code: u32,
    pc: u32,
    locals_base: u32,
}

#[derive(Clone, Copy, Debug)]
struct BufferedStore {
    address: u64,
    size_bytes: u32,
    /// For a bitfield, the field's value, merged into the unit when the
    /// store drains.
    value: i64,
    bits: Option<BitRange>,
    unit: usize,
    field_id: u32,
    /// The store may not drain before this cycle: the arrival of the last
    /// load older than it still in flight when it was posted (x86-TSO: a
    /// store leaves the core only after every older instruction has
    /// completed; `in_flight`).
    not_before: Cycle,
}

struct Cpu {
    spec: ThreadSpec,
    /// Its script's operation count and locals (`Code::ops`,
    /// `Code::local_count`), kept with it: every iteration's start reads
    /// them ([`start_iteration`]).
    script_ops: u64,
    script_locals: u16,
    /// The CPU's core (whose cache it uses) and SMT thread in it.
    core: u32,
    thread: u8,
    /// Its share of the core for `work`, in percent: the machine's
    /// `smt_share_percent` while another CPU of its core runs a thread,
    /// 100 otherwise ([`core_share`]; `sched` keeps it current).
    work_share_percent: u32,
    now: Cycle,
    stack: Vec<i64>,
    locals: Vec<i64>,
    /// The running frame, kept out of the caller stack so that fetching an
    /// operation is one index away.
    frame: Frame,
    callers: Vec<Frame>,
    iteration: u64,
    iteration_start: Cycle,
    finished: bool,
    wait: Wait,
    wait_since: Cycle,
    /// The store buffer, the stores being written, the loads arriving and
    /// not yet served, the reorder window and the speculation past them,
    /// with the summary that says at once whether any of it is there.
    outstanding: Outstanding,
    draining: bool,
    pending: Option<PendingAccess>,
    /// When each line requested ahead of a waiting locked instruction
    /// arrives (`speculate`): they hold miss buffers too, but no operation
    /// waits for them; entries in the past are free, and a request a
    /// demand access took over leaves (its miss buffer is the access's).
    ahead_in_flight: Vec<Cycle>,
    /// Window entries the CPU has taken (`step`): an operation's position.
    dispatched: u64,
    /// This CPU's reorder window in entries: the machine's, halved while
    /// its SMT sibling runs a thread too ([`core_share`]); 0 is none
    /// (branches wait).
    window_entries: u64,
    /// The branch predictor (`in_flight`): per code, per pc, the direction
    /// each conditional branch took the last time it ran (1 taken, 0 not
    /// taken or never run). Empty without a reorder window.
    predictor: Vec<Vec<u8>>,
    /// The store buffer's head waits for its `not_before`: the DrainDone
    /// event due then starts it instead of ending a drain.
    drain_deferred: bool,
    /// The next deferred load's ticket (never 0: a known value's).
    next_ticket: u32,
    /// `speculating_until` once no load is queued: the latest known
    /// arrival (while one is queued, `speculating_until` is `Cycle::MAX`).
    speculating_known: Cycle,
    rng: ThreadStream,
    /// Script operations charged to the CPU (`limits.operations`): the
    /// length of every code it entered and of every loop body it went
    /// round again. An upper bound on the operations it ran (between two
    /// charges the program counter only moves forward), counted where the
    /// clock or the frame changes rather than per operation.
    operations: u64,
    /// Steps executed since the clock last moved, and the cycle it moved to.
    still_steps: u64,
    still_at: Cycle,
    /// Accesses made (each one counted in `memory_ops` too): a spin-wait's
    /// period makes exactly one.
    accesses: u64,
    spin: spin::SpinWatch,
    /// Running a switch hook: the depth of callers below its frame, and
    /// which hook (`sched`).
    hook: Option<(u32, Hook)>,
    /// The `switch_out` hook has run for the scheduling operation about to
    /// run again.
    hook_done: bool,
}

impl Cpu {
    /// The Linux CPU the thread runs on: the one place the engine goes from
    /// its CPU index (this `Cpu`) to the number the topology maps.
    #[inline]
    fn linux_cpu(&self) -> LinuxCpu {
        self.spec.cpu
    }

    /// A call of the code `code` (a procedure's, or a scheduler hook's):
    /// `locals` fresh locals (zero) above the caller's, the top `params`
    /// values of the stack popped into the first of them (the last pushed
    /// is the last parameter), and the caller's frame kept for the return,
    /// its program counter where it goes on then.
    #[inline(always)]
    fn enter_call(&mut self, code: u32, params: usize, locals: usize) {
        let base = self.locals.len();
        self.locals.resize(base + locals, 0);
        for p in (0..params).rev() {
            let v = self.stack.pop().unwrap_or(0);
            self.locals[base + p] = v;
        }
        let callee = Frame {
            code,
            pc: 0,
            locals_base: base as u32,
        };
        let caller = std::mem::replace(&mut self.frame, callee);
        self.callers.push(caller);
    }

    /// The miss buffers the CPU's requests hold at `at`: its loads' misses
    /// and the lines requested ahead (by the run ahead or the store
    /// buffer) still arriving; those arrived by then are let go from
    /// `ahead_in_flight`.
    #[inline]
    fn miss_buffers_taken(&mut self, at: Cycle) -> usize {
        self.ahead_in_flight.retain(|&ready| ready > at);
        self.outstanding
            .in_flight
            .iter()
            .filter(|&&ready| ready > at)
            .count()
            + self.ahead_in_flight.len()
    }
}

/// How the engine goes about a run: one switch per shortcut, none of which
/// changes any result. All off is the reference, the plain event-by-event
/// path: every operation goes through `step`, every access waits for its
/// turn in global (cycle, key) order, every hit is reported on its own and
/// every transaction takes the general walk; `sim-core/tests/shortcuts.rs`
/// compares every combination against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// A CPU runs ahead of the event queue through the operations that
    /// touch only its registers (`run_ahead`).
    pub run_ahead: bool,
    /// Places no other CPU can reach (a CPU's own per-CPU lines, their
    /// buddies too when the prefetcher is on) are private: a CPU that
    /// reaches nothing else need not take turns for its accesses.
    pub private_places: bool,
    /// Plain hits on private places are taken in the run-ahead loop and,
    /// for a probe that allows it (`Probe::needs_every_access`), reported
    /// summed per place.
    pub summed_private_hits: bool,
    /// The run-ahead loop runs superinstructions from the fused table
    /// (`script::fuse`).
    pub superinstructions: bool,
    /// For a code with superinstructions and an empty store buffer, the
    /// run-ahead machine's `Hoisted` policy (`engine::shortcuts::hoisted`):
    /// each private line looked at once per call, the writes' state
    /// changes made at the end.
    pub hoisted_private_hits: bool,
    /// An atomic on a fixed-target place where a script or procedure starts
    /// is issued by `run_cpu` at once (`script::fuse::fuse_atomics`); when
    /// the next operation drops its value, its completion moves past that
    /// `Pop`, and a CPU resumed at its iteration's end with such an atomic
    /// next ends the iteration and issues it without the loop's dispatch
    /// (`end_iteration_into_atomic`).
    pub fused_atomics: bool,
    /// The resume of the CPU a line's home serves is taken by the event
    /// loop at once when it would be the next event, without the queue.
    pub direct_resume: bool,
    /// The commonest contended transaction shape skips the general walk
    /// over the holders (`Coherence::write_taking_the_only_copy`).
    pub special_transactions: bool,
    /// A CPU polling a line in a loop that changes nothing else sleeps
    /// until another CPU reaches the line, and wakes where stepping would
    /// have it (`engine::shortcuts::spin`); for a probe that takes summed hits.
    pub spin_fast_forward: bool,
    /// For a probe that allows it (`Probe::summed_atomics`), a CPU's
    /// atomics are summed per field and reported together
    /// (`engine::shortcuts::summed`).
    pub summed_atomics: bool,
    /// For a probe that allows it (`Probe::batched_iterations`), a CPU's
    /// measured iterations are reported in batches
    /// (`engine::shortcuts::summed`).
    pub batched_iterations: bool,
    /// The resume of a CPU waiting for its turn at an `AtomicHead`'s
    /// atomic, its operand pushed, issues the atomic at once
    /// (`end_iteration_into_atomic`), without `run_cpu`'s loop, the
    /// run-ahead call and `step`.
    pub resume_into_atomic: bool,
    /// Where `fused_atomic` finds everything ready but the CPU's turn, it
    /// pushes the operand and queues the CPU's resume at the atomic itself,
    /// as `run_cpu`'s next pass would after running the push ahead.
    pub yield_at_atomic: bool,
    /// Where the atomic `end_iteration_into_atomic` issued completes at
    /// once and the CPU is at its iteration's end again, it ends that
    /// iteration and issues the next atomic there too, without `run_cpu`.
    pub next_iteration_into_atomic: bool,
}

impl EngineOptions {
    /// Every shortcut on: the default.
    pub const ALL: EngineOptions = EngineOptions::from_bits((1 << EngineOptions::NAMES.len()) - 1);
    /// Every shortcut off: the reference.
    pub const REFERENCE: EngineOptions = EngineOptions::from_bits(0);
    /// The shortcuts' names, in the order of [`EngineOptions::from_bits`].
    pub const NAMES: [&'static str; 14] = [
        "run_ahead",
        "private_places",
        "summed_private_hits",
        "superinstructions",
        "hoisted_private_hits",
        "fused_atomics",
        "direct_resume",
        "special_transactions",
        "spin_fast_forward",
        "summed_atomics",
        "batched_iterations",
        "resume_into_atomic",
        "yield_at_atomic",
        "next_iteration_into_atomic",
    ];

    /// Bit `k` set for each shortcut on, `k` indexing
    /// [`EngineOptions::NAMES`]: the inverse of [`EngineOptions::from_bits`].
    pub fn bits(self) -> u32 {
        [
            self.run_ahead,
            self.private_places,
            self.summed_private_hits,
            self.superinstructions,
            self.hoisted_private_hits,
            self.fused_atomics,
            self.direct_resume,
            self.special_transactions,
            self.spin_fast_forward,
            self.summed_atomics,
            self.batched_iterations,
            self.resume_into_atomic,
            self.yield_at_atomic,
            self.next_iteration_into_atomic,
        ]
        .iter()
        .enumerate()
        .fold(0, |bits, (k, &on)| bits | (on as u32) << k)
    }

    /// The options whose bit `k` of `bits` is set, `k` indexing
    /// [`EngineOptions::NAMES`] (for tests that go through combinations).
    pub const fn from_bits(bits: u32) -> EngineOptions {
        EngineOptions {
            run_ahead: bits & 1 != 0,
            private_places: bits & 1 << 1 != 0,
            summed_private_hits: bits & 1 << 2 != 0,
            superinstructions: bits & 1 << 3 != 0,
            hoisted_private_hits: bits & 1 << 4 != 0,
            fused_atomics: bits & 1 << 5 != 0,
            direct_resume: bits & 1 << 6 != 0,
            special_transactions: bits & 1 << 7 != 0,
            spin_fast_forward: bits & 1 << 8 != 0,
            summed_atomics: bits & 1 << 9 != 0,
            batched_iterations: bits & 1 << 10 != 0,
            resume_into_atomic: bits & 1 << 11 != 0,
            yield_at_atomic: bits & 1 << 12 != 0,
            next_iteration_into_atomic: bits & 1 << 13 != 0,
        }
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions::ALL
    }
}

/// Counts an entry into shortcut `$k` (in [`EngineOptions::NAMES`] order)
/// in `$counts`, for the differential test's coverage floors; compiled in
/// only with the `shortcut-counts` feature (the tests' `testkit` turns it
/// on), so a release build does no counting.
macro_rules! count_shortcut {
    ($counts:expr, $k:expr) => {
        #[cfg(feature = "shortcut-counts")]
        {
            $counts[$k] += 1;
        }
        #[cfg(not(feature = "shortcut-counts"))]
        {
            let _ = &$counts;
        }
    };
}
pub(crate) use count_shortcut;

/// How often a run entered each shortcut, in [`EngineOptions::NAMES`]
/// order (all zero without the `shortcut-counts` feature).
pub type ShortcutEntries = [u64; 14];

/// Runs a configuration to its end.
/// Per field id (`PlaceRef::field_id`): whether the field is only ever
/// reached through private places (a per-CPU element no other CPU can
/// reach; see `shortcuts::run_ahead::private_places`). The statistics
/// leave such fields out of spin-wait attribution: nobody else can end a
/// wait on them, and their hits may reach the probe summed.
pub(crate) fn private_fields(config: &SimConfig) -> Vec<bool> {
    let places = shortcuts::run_ahead::private_places(
        &config.program,
        &config.memory,
        config.topology.spec.adjacent_line_prefetch,
    );
    let mut private = vec![true; config.program.field_names.len()];
    let mut reached = vec![false; private.len()];
    for (place, is_private) in config.program.places.iter().zip(places) {
        // A pointer's place names no field (its field id is unused); what
        // it points to is shared (its address was taken).
        if place.pointer {
            continue;
        }
        if let Some(p) = private.get_mut(place.field_id as usize) {
            *p &= is_private;
            reached[place.field_id as usize] = true;
        }
    }
    private.iter().zip(reached).map(|(&p, r)| p && r).collect()
}

pub fn run(config: &SimConfig, probe: &mut dyn Probe) -> Result<RunOutcome, SimError> {
    run_with(config, probe, EngineOptions::default())
}

/// Runs a configuration to its end with the given engine options.
pub fn run_with(
    config: &SimConfig,
    probe: &mut dyn Probe,
    options: EngineOptions,
) -> Result<RunOutcome, SimError> {
    run_counting(config, probe, options).map(|(outcome, _)| outcome)
}

/// [`run_with`], also answering how often the run entered each shortcut.
pub fn run_counting(
    config: &SimConfig,
    probe: &mut dyn Probe,
    options: EngineOptions,
) -> Result<(RunOutcome, ShortcutEntries), SimError> {
    let mut sim = Simulation::new(config);
    sim.options = options;
    sim.run_local_ops = options.run_ahead;
    if !options.private_places {
        sim.private.place.iter_mut().for_each(|p| *p = false);
    }
    sim.coherence.special_transactions = options.special_transactions;
    sim.resolve_private_targets();
    sim.private.summed = options.summed_private_hits && !probe.needs_every_access();
    sim.private.measured_at_end = sim.private.summed && probe.measured_hits_at_end();
    sim.summed = shortcuts::summed::Summed::new(
        options.summed_atomics && probe.summed_atomics(),
        options.batched_iterations && probe.batched_iterations(),
        config.topology.cpu_count() as usize,
    );
    // Summed atomics read their reports' counts only, not the changes.
    sim.coherence.atomic_changes_unlisted = sim.summed.atomics;
    sim.fuse_code();
    let outcome = sim.run(probe)?;
    let mut entries = sim.shortcut_entries;
    entries[7] = sim.coherence.special_transactions_taken;
    Ok((outcome, entries))
}

/// The engine's CPUs, one per thread, indexed by [`CpuIndex`] only (so a
/// Linux CPU number, a line or a slot of another table cannot index them).
struct Cpus(Vec<Cpu>);

impl Cpus {
    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Every CPU's index, in order.
    #[inline]
    fn indices(&self) -> impl Iterator<Item = CpuIndex> + 'static {
        (0..self.0.len()).map(CpuIndex::new)
    }

    #[inline]
    fn iter(&self) -> std::slice::Iter<'_, Cpu> {
        self.0.iter()
    }

    /// Every CPU with its index.
    #[inline]
    fn enumerate(&self) -> impl Iterator<Item = (CpuIndex, &Cpu)> {
        self.0
            .iter()
            .enumerate()
            .map(|(i, c)| (CpuIndex::new(i), c))
    }
}

impl std::ops::Index<CpuIndex> for Cpus {
    type Output = Cpu;
    #[inline(always)]
    fn index(&self, i: CpuIndex) -> &Cpu {
        &self.0[i.get()]
    }
}

impl std::ops::IndexMut<CpuIndex> for Cpus {
    #[inline(always)]
    fn index_mut(&mut self, i: CpuIndex) -> &mut Cpu {
        &mut self.0[i.get()]
    }
}

struct Simulation<'c> {
    config: &'c SimConfig,
    topology: &'c Topology,
    memory: &'c MemoryLayout,
    program: &'c Program,
    coherence: Coherence,
    bytes: Vec<u8>,
    cpus: Cpus,
    /// Events in (cycle, key) order, each key naming the event's kind and
    /// its target (a CPU or a line): `event_key`.
    queue: EventQueue,
    finished_cpus: usize,
    events: u64,
    memory_ops: u64,
    stop_cycle: Option<Cycle>,
    measure_start: Cycle,
    store_buffer_entries: usize,
    /// Misses a CPU keeps in flight (`MachineSpec::outstanding_misses`).
    outstanding_misses: usize,
    /// `MachineSpec::dispatch_width` and `mispredict_penalty_cycles`.
    dispatch_width: u64,
    mispredict_penalty_cycles: Cycles,
    /// A locked instruction that waits for earlier loads or stores asks
    /// for its line's ownership at once (`in_flight`,
    /// `MachineSpec::lock_rfo_ahead`).
    lock_rfo_ahead: bool,
    /// Store-buffer entries past the head whose lines are requested for
    /// ownership ahead of their drain (`MachineSpec::store_rfo_ahead_entries`).
    store_rfo_ahead_entries: usize,
    /// The registers a shadow run (`speculate`) saves and restores, kept
    /// between runs so that their buffers are reused.
    shadow_saved: (Vec<i64>, Vec<i64>, Vec<Frame>),
    /// Picks the winner among requests waiting for a line.
    arbitration: ChaCha8Rng,
    /// Seeds the order of the events of one cycle ([`event_key`]).
    tie_seed: u64,
    /// The last bound drawn for by `arbitration` and its acceptance zone
    /// (the number of waiters changes seldom; the zone costs a division).
    arbitration_zone: (u64, u64),
    /// The places only the running CPU can reach, and what the run-ahead
    /// loop keeps of them.
    private: PrivatePlaces,
    /// Code of every script, then every procedure, indexed by `Frame::code`.
    code_ops: Vec<&'c [Op]>,
    /// Per code and position (one past the end included): a shadow run
    /// from there can reach an access (`speculate::reaches_access`).
    reaches_access: Vec<Box<[bool]>>,
    /// Per code, the run-ahead loop's table: `code_ops` with runs of stack
    /// operations fused into superinstructions (see `script::fuse`).
    fused_code: Vec<Vec<Fused>>,
    /// Per code and operation: an atomic on a place with one target for
    /// every CPU whose operand is pushed here (`script::fuse::fuse_atomics`),
    /// which `run_cpu` issues without stepping the push and the atomic;
    /// empty for a code without one (and with `fused_atomics` off).
    atomic_heads: Vec<Vec<Option<AtomicHead>>>,
    /// Some code has an entry in `atomic_heads`.
    any_atomic_heads: bool,
    /// Run register-only operations in a tight loop ahead of `step`.
    run_local_ops: bool,
    /// Made once per run (`run_events`) from what does not change during
    /// it: a scheduler runs, or private hits are summed into slots, so
    /// that a resumed CPU's iteration end may need `run_cpu` (its switch,
    /// its private hits' report): `end_iteration_into_atomic` looks at
    /// those only then.
    resume_may_need_run_cpu: bool,
    /// Likewise: no scheduler and the run-ahead on, so that a completed
    /// fused atomic whose value is dropped may go past its `Pop` at once
    /// (`complete_access`).
    discard_past_pop: bool,
    /// The shortcuts this run may take, and how often it took each
    /// (`count_shortcut`).
    options: EngineOptions,
    shortcut_entries: ShortcutEntries,
    /// Where in the global order the engine is (for waking spinners).
    position: spin::Position,
    /// Per line: the CPUs asleep polling it (`spin`), or stepping in a
    /// shadow of that sleep.
    watchers: Vec<Vec<CpuIndex>>,
    /// CPUs stepping in a shadow of a spin-wait's sleep (`spin::Shadow`).
    spin_shadows: u32,
    /// The run-ahead loop stops at this cycle, where `run_cpu` must look at
    /// the run's end (the stop cycle, or one past the cycle budget).
    time_limit: Cycle,
    /// The machine's adjacent-line prefetcher is on: a demand miss also
    /// reads the line's buddy ([`Simulation::prefetch_buddy`]).
    prefetch_buddies: bool,
    /// Prefetches waiting at their line's home.
    queued_prefetches: Vec<QueuedPrefetch>,
    /// Per place: its target when every CPU resolves it alike (a field of a
    /// global instance, no run-time operand), resolved once; the contended
    /// accesses go to such places.
    global_targets: Vec<Option<Target>>,
    /// Which thread runs on which CPU, the run queues, the futex sleepers.
    sched: Sched,
    /// The iteration count at which a CPU has run its last iteration: the
    /// warm-up plus `StopRule::Iterations`, saturated; `u64::MAX` (never
    /// reached) for a run that stops at a cycle. Made once, since every
    /// iteration's end compares with it.
    last_iteration: u64,
    /// Per Linux CPU, its atomics and measured iterations not yet
    /// reported to the probe (`summed_atomics`, `batched_iterations`).
    summed: shortcuts::summed::Summed,
}

/// The places whose every line belongs to the running CPU alone, and what
/// the run-ahead loop keeps of them (`shortcuts::run_ahead`).
#[derive(Default)]
struct PrivatePlaces {
    /// Per place: every line it can reach belongs to the running CPU alone.
    place: Vec<bool>,
    /// Per CPU: every access its script (and any procedure) makes is to a
    /// private place, so nothing it does can meet another CPU and its
    /// accesses need not wait for their turn (see `run_cpu`).
    only: Vec<bool>,
    /// Per place: its slot among the private places with one fixed address
    /// per CPU (no run-time operand); `None` for a place the run-ahead
    /// loop leaves to `step`.
    slot: Vec<Option<u32>>,
    /// Private places with a fixed address: slots per CPU.
    slots: usize,
    /// No two slots share a byte, so the hoisted loop may hold each slot's
    /// value apart from the others while it runs
    /// (`shortcuts::hoisted::SlotLine::value`).
    disjoint: bool,
    /// Per CPU and slot (`cpu index * slots + slot`): where the place lands
    /// for that CPU, resolved once.
    targets: Vec<Option<PrivateTarget>>,
    /// Per CPU and slot: plain hits summed since the last report to the
    /// probe (when `summed`).
    hits: Vec<PrivateHits>,
    /// Per slot: the hoisted run-ahead loop's view of the running CPU's
    /// private lines during one call (left clean between calls).
    lines: Vec<shortcuts::hoisted::SlotLine>,
    /// The run-ahead loop takes plain hits on private places itself and
    /// sums them for the probe (`summed_private_hits` on, and the probe
    /// allows it).
    summed: bool,
    /// Summed hits of a CPU's measured iterations are kept until the end
    /// of the run (or until its thread leaves the CPU) rather than
    /// reported at each iteration's end (`Probe::measured_hits_at_end`).
    measured_at_end: bool,
}

/// Where a private place lands for one CPU (`None` in
/// `PrivatePlaces::targets` where the CPU has no element: left to
/// `step`, which reports it).
#[derive(Clone, Copy, Debug)]
struct PrivateTarget {
    address: u64,
    unit: usize,
    size_bytes: u32,
}

/// A `FusedAtomic` with its place's target resolved.
#[derive(Clone, Copy, Debug)]
struct AtomicHead {
    operand: Operand,
    op: AtomicOp,
    target: Target,
    /// The operation after the atomic drops its value (`Op::Pop`).
    discarded: bool,
    /// A shadow run from past the atomic, queued at its line, can fetch
    /// something (`Simulation::fetches_ahead`), tabled once per head.
    fetches_ahead_queued: bool,
}

/// CPU `cpu`'s random stream (`random(n)`): one ChaCha stream per CPU,
/// derived from the scenario seed, so adding a CPU does not change
/// another's draws.
pub fn cpu_stream(seed: u64, cpu: LinuxCpu) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(cpu.get() as u64);
    rng
}

/// The generator CPUs' start offsets are drawn from, before its stream
/// is chosen: apart from the scripts' streams (`random(n)` draws the same
/// values whatever the spread). Seeded once per run ([`start_offset_from`]).
fn start_stream_base(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0xBB67_AE85_84CA_A73B)
}

/// The cycle CPU `cpu` of a machine of `cpu_count` CPUs starts at, below
/// `spread_cycles`: a seeded uniform draw (with `rand`'s `Uniform`) of a slot
/// of `cpu_count` cycles, plus the CPU's number inside the slot. Distinct
/// for every CPU by construction, and each CPU's from its own stream, so
/// adding a CPU moves no other. With a spread below `cpu_count` the CPUs
/// start one cycle apart in CPU order.
pub fn start_offset(seed: u64, cpu: LinuxCpu, cpu_count: u32, spread_cycles: u64) -> u64 {
    start_offset_from(&start_stream_base(seed), cpu, cpu_count, spread_cycles)
}

/// [`start_offset`] from the seeded generator `base` ([`start_stream_base`]
/// of the seed): the CPUs' streams differ only in their number, so a run
/// seeds one generator and gives each CPU a copy set to its stream (a
/// fresh generator's copy is the generator seeded anew: nothing drawn yet).
fn start_offset_from(base: &ChaCha8Rng, cpu: LinuxCpu, cpu_count: u32, spread_cycles: u64) -> u64 {
    if spread_cycles == 0 {
        return 0;
    }
    let width = cpu_count.max(1) as u64;
    let slots = (spread_cycles / width).max(1);
    // One slot (a spread below twice the CPU count, as the default 1,000
    // cycles on a machine of 500 CPUs or more): the draw can only give 0,
    // and it is made on a copy of the stream, so nothing else sees it.
    // Left out, it saves each CPU a ChaCha refill of four blocks.
    if slots == 1 {
        return cpu.get() as u64;
    }
    let slot = Uniform::new(0, slots).map_or(0, |u| {
        let mut stream = base.clone();
        stream.set_stream(cpu.get() as u64);
        u.sample(&mut stream)
    });
    slot * width + cpu.get() as u64
}

/// A CPU's share of its core, the one SMT rule: its `work` share in
/// percent and its reorder window in entries, given whether another CPU of
/// its core runs a thread (`sibling_runs`). Running siblings share: the
/// machine's `smt_share_percent` each, and half the window (partitioned
/// between two running siblings: Zen 1's 96 of 192 per thread, LLVM
/// X86ScheduleZnver1.td; Zen 3's 128 of 256, AMD SOG 19h as quoted in
/// X86ScheduleZnver3.td). A CPU whose siblings have nothing to run has the
/// whole core.
///
/// A sibling runs while a thread is on its CPU (`Sched::running`), working,
/// waiting on a miss or spinning alike; it does not while its threads
/// sleep, block in `futex_wait` or have finished: Linux's idle task then
/// halts the logical CPU, and a halted Hyper-Threading sibling gives its
/// partitioned queues back to the running one (Intel, as reported by
/// ExtremeTech's "Desktop Hyper-Threading" article: HLT recombines the
/// partitioned resources for the single active thread). For Zen this is
/// assumed: no AMD text retrieved says so, and one secondary description
/// (axe.rs, "Zen mikroarhitektura") has Zen 1's retire and store queues
/// stay split even with one thread active.
/// Where the scheduler is on, `sched` applies it again at every change
/// of what a CPU of the core runs; otherwise no thread leaves its CPU but
/// by finishing, and the share is the one the placement gives.
pub(super) fn core_share(spec: &crate::topology::MachineSpec, sibling_runs: bool) -> (u32, u64) {
    let window = spec.reorder_window_entries as u64;
    if sibling_runs {
        (spec.smt_share_percent, (window / 2).max(window.min(1)))
    } else {
        (100, window)
    }
}

/// The cycles `work cycles` takes on a CPU with `share_percent` of its
/// core: `cycles * 100 / share_percent`, rounded up, saturating.
///
/// The share is the one in force when the CPU dispatches the `work`
/// ([`core_share`]), kept for the whole of it; stalls on misses are not
/// stretched (a sibling waiting on memory leaves the core's issue slots to
/// the other; the measured SMT gain is an average over both).
#[inline(always)]
pub(super) fn stretched_work(cycles: u64, share_percent: u32) -> Cycles {
    if share_percent >= 100 {
        return Cycles::new(cycles);
    }
    let stretched = (cycles as u128 * 100).div_ceil(share_percent.max(1) as u128);
    // Saturating: a real bound (a clock past `u64::MAX` stays there).
    Cycles::new(stretched.min(u64::MAX as u128) as u64)
}

/// The homes' arbitration among waiting requests: its own stream, apart
/// from every CPU's.
pub fn arbitration_stream(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX);
    rng
}

/// The seed of the ties among the events of one cycle, apart from the
/// ChaCha streams' (which take the seed whole).
fn tie_seed(seed: u64) -> u64 {
    seed ^ 0x6A09_E667_F3BC_C908
}

/// Counts `n` accesses by `cpu`: in the run's total and in the CPU's own
/// count, which a spin-wait's period may move by its one load only
/// (`engine::shortcuts::spin`). Every access is counted here.
#[inline(always)]
fn count_accesses(memory_ops: &mut u64, cpu: &mut Cpu, n: u64) {
    *memory_ops += n;
    cpu.accesses += n;
}

/// The order of the classes among the events of one cycle: the CPUs act
/// first, then stores finish draining, then lines free. A request that
/// reaches a line's home in the cycle the line frees is among the waiters
/// the home chooses from (homes resolve such races by retry, not by
/// arrival: see `coherence`), rather than losing to every earlier waiter.
/// Loads parked for their addresses issue last: an address that arrives in
/// a cycle is used in the next (an assumption, as every order of a cycle's
/// events is; it keeps such a load out of the waiters of a line freeing in
/// the cycle its address arrives).
fn event_class(kind: EventKind) -> u64 {
    match kind {
        EventKind::Resume => 0,
        EventKind::DrainDone => 1,
        EventKind::LineFree => 2,
        EventKind::IssueLoad => 3,
    }
}

/// An event's key in the queue (everything about it but its cycle): its
/// class in the top two bits, then 30 bits of a hash of the run's seed, the
/// cycle and the target (so that no CPU or line goes first at every tie,
/// as a plain CPU-number order would let low-numbered CPUs win every
/// simultaneous request to a free line), then the target (a CPU index or a
/// line). A property of the event alone, never of when it was queued: a CPU
/// that runs ahead of the queue, or is resumed without it, compares its own
/// key with the queue's and lands exactly where stepping would have put it.
#[inline]
fn event_key(tie_seed: u64, kind: EventKind, cycle: Cycle, target: usize) -> u64 {
    // The high bits of two odd-constant products: per cycle, the targets'
    // fixed scramble XORed with a mask drawn from the cycle and the seed,
    // so each target comes first at about one cycle in as many as there
    // are targets. The tie need only be free of a systematic order, and it
    // is computed for every event.
    let z = (cycle.get() ^ tie_seed).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (target as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    debug_assert!(
        target <= u32::MAX as usize,
        "targets fit in 32 bits (limits)"
    );
    event_class(kind) << 62 | (z >> 34) << 32 | target as u64
}

/// The turn rule, in one place: whether a CPU at `now` must give way,
/// before an access, to the earliest queued event (`next`): the event comes
/// before the CPU's own resume at `now` would. Made once per stretch of
/// running ahead (nothing queues events there); the CPU's own key is
/// computed only when `now` reaches the event's cycle.
#[derive(Clone, Copy, Debug)]
pub(super) struct Turn {
    next_cycle: Cycle,
    next_key: u64,
    tie_seed: u64,
    cpu: CpuIndex,
}

impl Turn {
    /// A turn that never comes (a CPU whose accesses need not wait).
    pub(super) const NEVER: Turn = Turn {
        next_cycle: Cycle::MAX,
        next_key: u64::MAX,
        tie_seed: 0,
        cpu: CpuIndex::new(0),
    };

    #[inline(always)]
    pub(super) fn must_yield(&self, now: Cycle) -> bool {
        now > self.next_cycle
            || (now == self.next_cycle
                && (self.next_cycle, self.next_key) < resume_position(self.tie_seed, now, self.cpu))
    }
}

/// CPU `i`'s turn against `queue` as it is ([`Turn`]), from the pieces
/// of the simulation it reads (for a caller that holds a CPU borrowed).
#[inline(always)]
pub(super) fn queue_turn(queue: &EventQueue, tie_seed: u64, i: CpuIndex) -> Turn {
    let next = queue.next();
    Turn {
        next_cycle: Cycle::new(next.cycle),
        next_key: next.key,
        tie_seed,
        cpu: i,
    }
}

/// Where CPU `cpu`'s resume at `cycle` stands in the (cycle, key) order:
/// the place of its accesses at that cycle, which every turn and every
/// waking spinner compares against.
#[inline]
fn resume_position(tie_seed: u64, cycle: Cycle, cpu: CpuIndex) -> (Cycle, u64) {
    (
        cycle,
        event_key(tie_seed, EventKind::Resume, cycle, cpu.get()),
    )
}

/// What an event's key says: its kind and its target.
#[inline]
fn event_of_key(key: u64) -> (EventKind, usize) {
    // Indexed by the class in the key's top two bits (`event_class`): a
    // load, where a `match` took eight instructions for every event.
    const KIND_OF_CLASS: [EventKind; 4] = [
        EventKind::Resume,
        EventKind::DrainDone,
        EventKind::LineFree,
        EventKind::IssueLoad,
    ];
    (
        KIND_OF_CLASS[(key >> 62) as usize],
        (key & 0xFFFF_FFFF) as usize,
    )
}

/// How many CPUs of the run each core has (siblings that both run a thread
/// share the core: `core_share`).
fn running_cpus_per_core(config: &SimConfig) -> Vec<u32> {
    let mut threads_on_core = vec![0u32; config.topology.core_count() as usize];
    let mut counted = vec![false; config.topology.cpu_count() as usize];
    for t in &config.threads {
        if !counted[t.cpu.slot()] {
            threads_on_core[config.topology.core_of(t.cpu) as usize] += 1;
        }
        counted[t.cpu.slot()] = true;
    }
    threads_on_core
}

/// Per code (scripts, then procedures), the predictor's sites it needs:
/// one per operation where it has a conditional branch, else none.
fn branch_sites(program: &Program) -> Vec<usize> {
    // A code without a conditional branch trains and asks no predictor:
    // its sites stay unallocated (`get` finds none), and so does the
    // whole table when no code has one.
    program
        .scripts
        .iter()
        .chain(&program.procedures)
        .map(|c| {
            let branches = c
                .ops
                .iter()
                .any(|op| matches!(op, Op::JumpIfZero(_) | Op::JumpIfNonZero(_)));
            if branches {
                c.ops.len()
            } else {
                0
            }
        })
        .collect()
}

impl<'c> Simulation<'c> {
    /// The simulation at cycle 0: every CPU at the start of its first
    /// iteration, every line in memory. (One field initialiser each: long
    /// because the state is; the shortcuts' tables are built by
    /// `run_with`, once the options are known.)
    fn new(config: &'c SimConfig) -> Self {
        let mut coherence = Coherence::new(&config.topology, &config.memory);
        coherence.check_invariants = config.check_invariants;
        let (mut sched, queued) = Sched::new(
            &config.threads,
            config.topology.cpu_count(),
            &config.program,
            &config.scheduler,
        );
        sched.find_smt_cores(&config.threads, config.topology.core_count(), |c| {
            config.topology.core_of(c)
        });
        let mut cpus = Cpus(Self::start_cpus(config));
        for i in queued {
            cpus[i].wait = Wait::Queued;
        }
        // The measured window starts once every CPU has started.
        let measure_start = cpus.iter().map(|c| c.now).max().unwrap_or(Cycle::ZERO);
        Simulation {
            config,
            topology: &config.topology,
            memory: &config.memory,
            program: &config.program,
            coherence,
            bytes: vec![0; config.memory.total_bytes as usize],
            cpus,
            queue: EventQueue::default(),
            finished_cpus: 0,
            events: 0,
            memory_ops: 0,
            stop_cycle: match config.stop {
                StopRule::Cycles(c) => Some(Cycle::new(c)),
                StopRule::Iterations(_) => None,
            },
            measure_start,
            store_buffer_entries: config.topology.spec.store_buffer_entries as usize,
            outstanding_misses: config.topology.spec.outstanding_misses.max(1) as usize,
            dispatch_width: config.topology.spec.dispatch_width.max(1) as u64,
            mispredict_penalty_cycles: Cycles::new(
                config.topology.spec.mispredict_penalty_cycles as u64,
            ),
            lock_rfo_ahead: config.topology.spec.lock_rfo_ahead,
            store_rfo_ahead_entries: config.topology.spec.store_rfo_ahead_entries as usize,
            shadow_saved: Default::default(),
            private: PrivatePlaces {
                place: private_places(
                    &config.program,
                    &config.memory,
                    config.topology.spec.adjacent_line_prefetch,
                ),
                ..PrivatePlaces::default()
            },
            code_ops: config
                .program
                .scripts
                .iter()
                .chain(&config.program.procedures)
                .map(|c| c.ops.as_slice())
                .collect(),
            reaches_access: config
                .program
                .scripts
                .iter()
                .chain(&config.program.procedures)
                .map(|c| speculate::reaches_access(&c.ops))
                .collect(),
            fused_code: Vec::new(),
            atomic_heads: Vec::new(),
            any_atomic_heads: false,
            run_local_ops: true,
            resume_may_need_run_cpu: true,
            discard_past_pop: false,
            options: EngineOptions::ALL,
            shortcut_entries: [0; 14],
            position: spin::Position::START,
            watchers: Vec::new(),
            spin_shadows: 0,
            prefetch_buddies: config.topology.spec.adjacent_line_prefetch,
            queued_prefetches: Vec::new(),
            global_targets: global_targets(&config.program, &config.memory),
            arbitration: arbitration_stream(config.seed),
            tie_seed: tie_seed(config.seed),
            arbitration_zone: (0, 0),
            time_limit: Cycle::new(match config.stop {
                StopRule::Cycles(c) => c,
                StopRule::Iterations(_) => config.max_cycles.saturating_add(1),
            }),
            sched,
            last_iteration: match config.stop {
                StopRule::Iterations(n) => config.warmup_iterations.saturating_add(n),
                StopRule::Cycles(_) => u64::MAX,
            },
            summed: Default::default(),
        }
    }

    /// Every CPU of the run at the start of its first iteration: its
    /// start cycle from the seeded spread, its own random stream, its
    /// share of its core. (One field initialiser each: long because the
    /// CPU's state is.)
    fn start_cpus(config: &SimConfig) -> Vec<Cpu> {
        let threads_on_core = running_cpus_per_core(config);
        let mut threads_on_cpu = vec![0u32; config.topology.cpu_count() as usize];
        // Seeded once: each CPU's start stream is a copy set to its number.
        let start_base = start_stream_base(config.seed);
        let branch_sites = branch_sites(&config.program);
        let predicts =
            config.topology.spec.reorder_window_entries > 0 && branch_sites.iter().any(|&n| n > 0);
        // Each CPU built in its slot (pushed into room reserved, then its
        // first iteration started in place): no copies of the large state.
        let mut cpus: Vec<Cpu> = Vec::with_capacity(config.threads.len());
        for t in &config.threads {
            // The kth thread of its CPU: its own random stream.
            let k = threads_on_cpu[t.cpu.slot()];
            threads_on_cpu[t.cpu.slot()] += 1;
            let start = Cycle::new(start_offset_from(
                &start_base,
                t.cpu,
                config.topology.cpu_count(),
                config.start_spread_cycles,
            ));
            // At the start every CPU with a thread runs one.
            let (work_share_percent, window_entries) = core_share(
                &config.topology.spec,
                threads_on_core[config.topology.core_of(t.cpu) as usize] > 1,
            );
            let script = &config.program.scripts[t.script as usize];
            cpus.push(Cpu {
                spec: t.clone(),
                script_ops: script.ops.len() as u64,
                script_locals: script.local_count,
                core: config.topology.core_of(t.cpu),
                work_share_percent,
                thread: config.topology.thread_of(t.cpu) as u8,
                now: start,
                // Allocated at the first push: a CPU whose script pushes
                // nothing but a fused atomic's operand (`AtomicHead`, the
                // contended counter's) never allocates one, nor frees it.
                stack: Vec::new(),
                locals: Vec::new(),
                frame: Frame {
                    code: 0,
                    pc: 0,
                    locals_base: 0,
                },
                callers: Vec::new(),
                iteration: 0,
                iteration_start: start,
                finished: false,
                wait: Wait::None,
                wait_since: start,
                outstanding: Outstanding::default(),
                draining: false,
                pending: None,
                ahead_in_flight: Vec::new(),
                dispatched: 0,
                window_entries,
                predictor: if predicts {
                    branch_sites.iter().map(|&n| vec![0; n]).collect()
                } else {
                    Vec::new()
                },
                drain_deferred: false,
                next_ticket: 1,
                speculating_known: Cycle::ZERO,
                rng: ThreadStream::new(config.seed, t.cpu, k),
                operations: 0,
                still_steps: 0,
                still_at: start,
                accesses: 0,
                spin: spin::SpinWatch::default(),
                hook: None,
                hook_done: false,
            });
            let cpu = cpus.last_mut().expect("just pushed");
            start_iteration(cpu);
        }
        cpus
    }

    fn schedule(&mut self, cycle: Cycle, kind: EventKind, i: CpuIndex) {
        debug_assert!(kind != EventKind::LineFree);
        self.schedule_target(cycle, kind, i.get());
    }

    /// Queues the end of line `unit`'s transaction at `cycle`.
    #[inline]
    fn schedule_line_free(&mut self, cycle: Cycle, unit: usize) {
        self.schedule_target(cycle, EventKind::LineFree, unit);
    }

    /// The event's target is a CPU's index or a line's, as its kind says
    /// (`event_key` packs both the same way).
    #[inline]
    fn schedule_target(&mut self, cycle: Cycle, kind: EventKind, target: usize) {
        let key = event_key(self.tie_seed, kind, cycle, target);
        self.queue.push(cycle.get(), key);
    }

    /// CPU `i`'s turn against the queue as it is ([`Turn`]).
    #[inline]
    fn turn(&self, i: CpuIndex) -> Turn {
        queue_turn(&self.queue, self.tie_seed, i)
    }

    /// The turn CPU `i`'s private accesses take when it runs ahead: none
    /// for a CPU that makes private accesses only (nothing it does can meet
    /// another CPU), else its turn against the queue.
    #[inline]
    fn private_turn(&self, i: CpuIndex) -> Turn {
        if self.private.only[i.get()] {
            Turn::NEVER
        } else {
            self.turn(i)
        }
    }

    /// Whether CPU `i`, at `now`, must give way to the earliest queued
    /// event before an access ([`Turn::must_yield`]).
    #[inline]
    fn must_yield(&self, now: Cycle, i: CpuIndex) -> bool {
        self.turn(i).must_yield(now)
    }

    fn run(&mut self, probe: &mut dyn Probe) -> Result<RunOutcome, SimError> {
        let result = self.run_events(probe);
        if self.private.summed {
            for i in self.cpus.indices() {
                self.report_private_hits(i, probe);
            }
        }
        self.summed.report_all(probe);
        result
    }

    /// The event loop: takes events in (cycle, key) order until every CPU
    /// has finished, the stop cycle or a budget is reached, or nothing is
    /// left to happen. (One loop over the event kinds, with the direct
    /// resume and the budget checks beside it, and nearly the whole engine
    /// inlined into it: even moving its cold start and end out, or naming
    /// the next event's fetch, changed that code's compilation and cost
    /// contended512 about 2 % more instructions per operation, measured;
    /// so it stays whole.)
    fn run_events(&mut self, probe: &mut dyn Probe) -> Result<RunOutcome, SimError> {
        for i in self.cpus.indices() {
            // Threads queued behind another on their CPU wait for it.
            if self.cpus[i].wait == Wait::None {
                self.schedule(self.cpus[i].now, EventKind::Resume, i);
            }
        }
        self.resume_may_need_run_cpu =
            self.sched.active || (self.private.summed && self.private.slots > 0);
        self.discard_past_pop = self.run_local_ops && !self.sched.active;
        let max_events = self.config.max_events;
        let max_in_flight = events_in_flight_bound(self.config);
        let mut stopped = false;
        // Events processed at the current cycle: a run whose events never
        // move time would otherwise spin until the event budget.
        let (mut still_at, mut still_events) = (Cycle::ZERO, 0u64);
        // A CPU's resume that `line_free` found to be the next event: it is
        // taken here directly instead of through the queue (see there).
        let mut next_resume: Option<(Cycle, CpuIndex)> = None;
        loop {
            let (cycle, (kind, target)) = match next_resume.take() {
                Some((cycle, cpu)) => {
                    self.position.take_direct(cycle, cpu);
                    (cycle, (EventKind::Resume, cpu.get()))
                }
                None => match self.queue.pop() {
                    Some(event) => {
                        let cycle = Cycle::new(event.cycle);
                        self.position.take_queued((cycle, event.key));
                        (cycle, event_of_key(event.key))
                    }
                    None => break,
                },
            };
            if let Some(stop) = self.stop_cycle {
                if cycle >= stop {
                    stopped = true;
                    break;
                }
            }
            self.events += 1;
            if self.events > max_events {
                return Err(self.truncated(Budget::Events, max_events, cycle));
            }
            if cycle == still_at {
                still_events += 1;
                if still_events > self.config.max_steps_without_time {
                    let all: Vec<CpuIndex> = self.cpus.indices().collect();
                    return Err(self.stalled(Stall::ZeroTimeEvents, cycle, &all));
                }
            } else {
                (still_at, still_events) = (cycle, 1);
            }
            // The target is a CPU's index for a resume or a drain, a line's
            // for a line's free.
            match kind {
                // A woken thread's resume is its arrival at its CPU.
                EventKind::Resume if self.cpus[CpuIndex::new(target)].wait == Wait::Waking => {
                    self.arrive(CpuIndex::new(target))
                }
                EventKind::Resume => {
                    let i = CpuIndex::new(target);
                    if self.cpus[i].wait == Wait::Turn {
                        self.cpus[i].wait = Wait::None;
                    }
                    // The contended counter's resume, ended where it
                    // issues its atomic again: `run_cpu` would find the CPU
                    // waiting and return, so it is not called (nor the CPU
                    // looked at again once it is known to be parked).
                    let may_run = !self.any_atomic_heads
                        || self.end_iteration_into_atomic(i, cycle, probe)?;
                    if may_run {
                        let cpu = &self.cpus[i];
                        if !cpu.finished && cpu.wait == Wait::None {
                            self.run_cpu(i, probe)?;
                        }
                    }
                }
                EventKind::DrainDone => self.drain_done(CpuIndex::new(target), cycle, probe)?,
                EventKind::LineFree => {
                    next_resume = self.line_free(target, cycle, probe)?;
                }
                EventKind::IssueLoad => {
                    let i = CpuIndex::new(target);
                    if let Some(now) = self.issue_parked_loads(i, cycle, probe)? {
                        self.schedule(now, EventKind::Resume, i);
                    }
                }
            }
            let in_flight = self.queue.len() + next_resume.is_some() as usize;
            if in_flight as u64 > max_in_flight {
                return Err(self.truncated(Budget::EventsInFlight, max_in_flight, cycle));
            }
            // Once every CPU has finished, the queue still drains their
            // store buffers, so every store takes its place.
        }
        if let Some(stop) = self.stop_cycle {
            // Sleeping spinners would have polled until the stop, so the
            // run gets there whatever else waits.
            if self.settle_sleepers(stop, probe) > 0 {
                stopped = true;
            }
            // A thread ran to the stop while the others slept (in a futex
            // wait, or queued behind it): the run reached its end.
            if self.cpus.iter().any(|c| c.finished && c.now >= stop) {
                stopped = true;
            }
        }
        if !stopped && self.finished_cpus < self.cpus.len() {
            // Nothing is queued, yet some CPU has not finished: it waits
            // for something that will never come.
            return Err(self.nothing_left_to_happen());
        }
        let end = match self.stop_cycle {
            Some(stop) => stop,
            None => self.cpus.iter().map(|c| c.now).max().unwrap_or_default(),
        };
        let measure_start = self.measure_start.min(end);
        Ok(RunOutcome {
            elapsed_cycles: (end - measure_start).get(),
            measure_start_cycle: measure_start.get(),
            events: self.events,
            memory_ops: self.memory_ops,
            cpus: self
                .cpus
                .iter()
                .map(|c| CpuOutcome {
                    cpu: c.spec.cpu,
                    measured_iterations: c.iteration.saturating_sub(self.config.warmup_iterations),
                    finish_cycle: c.now.min(end).get(),
                })
                .collect(),
            scheduling: self.sched.counts,
        })
    }

    /// The error of a run with nothing left to happen while some CPU has
    /// not finished (nothing queued; or, where spins are stepped, only
    /// the polls of CPUs in a shadow of a sleep, put back as asleep).
    #[cold]
    #[inline(never)]
    fn nothing_left_to_happen(&self) -> SimError {
        let waiting: Vec<CpuIndex> = self
            .cpus
            .indices()
            .filter(|&i| !self.cpus[i].finished)
            .collect();
        let at = waiting
            .iter()
            .map(|&i| self.cpus[i].now)
            .max()
            .unwrap_or_default();
        // Spinners with nothing left to write their lines wait for
        // ever, and so do threads asleep that nothing will wake: the
        // scenario's doing, not the simulator's.
        let stall = if waiting.iter().any(|&i| self.cpus[i].wait == Wait::Spin) {
            Stall::SpinsForever
        } else if waiting
            .iter()
            .all(|&i| matches!(self.cpus[i].wait, Wait::Futex | Wait::Queued))
        {
            Stall::LostWakeup
        } else {
            Stall::Deadlock
        };
        self.stalled(stall, at, &waiting)
    }

    /// CPU `i` ran past `limits.operations`.
    #[cold]
    #[inline(never)]
    pub(super) fn over_operations(&self, i: CpuIndex) -> SimError {
        let limit = self.config.max_operations;
        let cpu = &self.cpus[i];
        self.truncated(Budget::Operations { cpu: cpu.spec.cpu }, limit, cpu.now)
    }

    // Error paths: kept out of the hot callers.
    #[cold]
    #[inline(never)]
    fn truncated(&self, budget: Budget, limit: u64, cycle: Cycle) -> SimError {
        let unfinished = self
            .cpus
            .iter()
            .filter(|c| !c.finished)
            .map(|c| {
                let (origin, pos) = self.position(c);
                CpuWhere {
                    cpu: c.spec.cpu,
                    iterations_done: c.iteration,
                    origin,
                    pos,
                }
            })
            .collect();
        SimError::Truncated {
            budget,
            limit,
            cycle,
            unfinished,
        }
    }

    /// A run that stopped making progress, with where each CPU involved is
    /// and what it waits for.
    // Error paths: kept out of the hot callers.
    #[cold]
    #[inline(never)]
    fn stalled(&self, stall: Stall, cycle: Cycle, involved: &[CpuIndex]) -> SimError {
        let cpus = involved
            .iter()
            .map(|&i| {
                let cpu = &self.cpus[i];
                let (origin, pos) = self.position(cpu);
                let line = |address: u64| {
                    let unit = self.memory.unit_of(address);
                    format!(
                        "line {unit} (address {address:#x}, home node {}): {}",
                        self.coherence.home_of(unit),
                        self.coherence.describe_unit(unit)
                    )
                };
                let waiting_for = match cpu.wait {
                    Wait::None | Wait::Asleep | Wait::Waking | Wait::Turn => None,
                    Wait::Futex | Wait::Queued => self.sleep_description(i),
                    Wait::Spin => self.spin_wait_description(cpu),
                    Wait::Line => cpu.pending.map(|p| line(p.address)),
                    Wait::Served => cpu
                        .outstanding
                        .deferred
                        .front()
                        .map(|d| line(d.access.address)),
                    Wait::BufferEmpty | Wait::BufferSlot => Some(format!(
                        "its store buffer ({} entries) to drain{}",
                        cpu.outstanding.store_buffer.len(),
                        cpu.outstanding
                            .store_buffer
                            .front()
                            .map(|e| format!(", the oldest to {}", line(e.address)))
                            .unwrap_or_default()
                    )),
                };
                StalledCpu {
                    cpu: cpu.spec.cpu,
                    origin,
                    pos,
                    waiting_for,
                }
            })
            .collect();
        SimError::NoProgress {
            stall,
            limit: match stall {
                Stall::Deadlock | Stall::SpinsForever | Stall::LostWakeup => 0,
                _ => self.config.max_steps_without_time,
            },
            cycle,
            cpus,
        }
    }

    fn position(&self, cpu: &Cpu) -> (String, SourcePos) {
        let (origin, pos) = self.position_ref(cpu);
        (origin.to_string(), pos)
    }

    /// [`Self::position`], borrowed.
    fn position_ref(&self, cpu: &Cpu) -> (&str, SourcePos) {
        match (!cpu.finished).then_some(cpu.frame) {
            Some(f) => {
                let scripts = self.program.scripts.len();
                let code = if (f.code as usize) < scripts {
                    &self.program.scripts[f.code as usize]
                } else {
                    &self.program.procedures[f.code as usize - scripts]
                };
                let pc = (f.pc as usize).min(code.op_positions.len().saturating_sub(1));
                (
                    &self.program.origins[code.origin as usize],
                    code.op_positions.get(pc).copied().unwrap_or_default(),
                )
            }
            None => ("(between iterations)", SourcePos::default()),
        }
    }

    // Error paths: kept out of the hot callers.
    #[cold]
    #[inline(never)]
    fn script_error(&self, i: CpuIndex, message: String) -> SimError {
        let cpu = &self.cpus[i];
        let (origin, pos) = self.position(cpu);
        SimError::Script {
            cpu: cpu.spec.cpu,
            cycle: cpu.now,
            origin,
            pos,
            called_from: self.called_from(cpu),
            message,
        }
    }

    /// The calls CPU `cpu` is inside, innermost first: each caller's
    /// origin and the position of its call (a library procedure's error
    /// then names the line of the user's script that called it).
    pub(super) fn called_from(&self, cpu: &Cpu) -> Vec<(String, SourcePos)> {
        let scripts = self.program.scripts.len();
        // A switch hook is run by the scheduler, not called by the thread's
        // code: its chain starts at the hook (the frames below it are the
        // thread's, stopped wherever the switch found it).
        let first = cpu.hook.map_or(0, |(depth, _)| depth as usize);
        cpu.callers[first.min(cpu.callers.len())..]
            .iter()
            .rev()
            .map(|f| {
                let code = if (f.code as usize) < scripts {
                    &self.program.scripts[f.code as usize]
                } else {
                    &self.program.procedures[f.code as usize - scripts]
                };
                // A caller's pc is past its call.
                let pc = (f.pc as usize).saturating_sub(1);
                (
                    self.program.origins[code.origin as usize].clone(),
                    code.op_positions.get(pc).copied().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Runs CPU `i` until it blocks, finishes, or reaches the next event.
    ///
    /// The CPU's event came first at its cycle, so it may go on at that
    /// cycle; once its clock has moved, it yields to any event at or before
    /// its new time, which was queued earlier. (Long because it is the
    /// hottest loop: the run's end, running ahead, the turn and `step`
    /// inline in one place; it is compiled into `run_events`, whose cost
    /// moves with any split, see there.)
    fn run_cpu(&mut self, i: CpuIndex, probe: &mut dyn Probe) -> Result<(), SimError> {
        let any_atomic_heads = self.any_atomic_heads;
        // A CPU resumed at a code's start, where an `AtomicHead` may be:
        // its first iteration's (later ones are entered by a step, below,
        // or by `end_iteration_into_atomic`). Issued as after that step,
        // so that the first iteration takes the same path as the others
        // (its atomic, issued by `step`, would also leave the CPU before
        // the `Pop` the head drops, and its iteration's end to this loop).
        // (Its turn not there, the CPU waits at the atomic: `fused_atomic`.)
        if any_atomic_heads && self.cpus[i].frame.pc == 0 && self.fused_atomic(i, probe)? {
            return Ok(());
        }
        loop {
            let cpu = &self.cpus[i];
            if cpu.finished || cpu.wait != Wait::None {
                return Ok(());
            }
            // `time_limit` is the first cycle at which either the stop
            // cycle or the cycle budget acts: one comparison in the common
            // case.
            if cpu.now >= self.time_limit {
                if let Some(stop) = self.stop_cycle {
                    if cpu.now >= stop {
                        self.finish(i);
                        return Ok(());
                    }
                } else if cpu.now > Cycle::new(self.config.max_cycles) {
                    // Past the budget: the run stops there once every
                    // earlier event has been taken, so that the other
                    // CPUs are reported where they are at this cycle, not
                    // where this CPU's running ahead left them.
                    let now = cpu.now;
                    if self.must_yield(now, i) {
                        self.schedule(now, EventKind::Resume, i);
                        return Ok(());
                    }
                    let stop = self.stop_at_budget(now, i, probe);
                    return Err(self.truncated(Budget::Cycles, self.config.max_cycles, stop));
                }
            }
            let (code, pc) = (cpu.frame.code as usize, cpu.frame.pc);
            let mut op = self.code_ops[code][pc as usize];
            if self.run_local_ops {
                self.run_ahead(i, op)?;
                if self.cpus[i].now >= self.time_limit {
                    // The run's end (or its cycle budget): see above.
                    continue;
                }
                // The run-ahead loop moves within the code (calls are left
                // to `step`).
                let moved_to = self.cpus[i].frame.pc;
                if moved_to != pc {
                    op = self.code_ops[code][moved_to as usize];
                }
            }
            // The run-ahead loop may have moved the clock.
            let cpu = &mut self.cpus[i];
            let now = cpu.now;
            match op {
                Op::Call(_) | Op::EndIteration => {
                    // Calls and iteration ends charge the code they enter,
                    // loops their bodies (`charge_operations`): the budget
                    // is looked at where the charges are.
                    if cpu.operations > self.config.max_operations {
                        return Err(self.over_operations(i));
                    }
                    // Every loop back-edge costs a cycle, so only calls and
                    // iteration ends can repeat without time passing: count
                    // them (the same ones on the fast and the plain path).
                    if cpu.now == cpu.still_at {
                        cpu.still_steps += 1;
                        if cpu.still_steps > self.config.max_steps_without_time {
                            return Err(self.stalled(Stall::ZeroTimeSteps, now, &[i]));
                        }
                    } else {
                        cpu.still_at = cpu.now;
                        cpu.still_steps = 1;
                    }
                    // An iteration's end may preempt: it reads the run
                    // queue, so it takes its turn (`sched`).
                    if op == Op::EndIteration && self.sched.active {
                        if self.must_yield(now, i) {
                            self.schedule(now, EventKind::Resume, i);
                            return Ok(());
                        }
                        self.position.take_scheduling_turn(now, i, self.tie_seed);
                    }
                }
                // The scheduling operations read and change which thread
                // runs where: each takes its turn, as an access does.
                // Not a guard: `cpu` is borrowed in the other arms.
                #[allow(clippy::collapsible_match)]
                Op::Builtin(b) if b.schedules() => {
                    if self.must_yield(now, i) {
                        self.schedule(now, EventKind::Resume, i);
                        return Ok(());
                    }
                    self.position.take_scheduling_turn(now, i, self.tie_seed);
                }
                // An access waits for its turn, a private one too, unless
                // the CPU makes private accesses only and its store buffer
                // is empty (so none of its own events is pending). Run
                // ahead of an earlier event, a private access would leave
                // the CPU's next event at another place among the events of
                // its cycle, which changes who wins a later tie on a shared
                // line; and a store would find the buffer still draining
                // (and post instead of writing into the cache). Everything
                // else runs ahead.
                Op::Load(_) | Op::Store(_) | Op::Atomic(..) => {
                    // A load parked for its address issues at an event of
                    // its own (`in_flight`), which the CPU's accesses wait for too.
                    let ordered = !self.private.only[i.get()]
                        || !cpu.outstanding.store_buffer.is_empty()
                        || !cpu.outstanding.deferred.is_empty();
                    if !ordered {
                        count_shortcut!(self.shortcut_entries, 1);
                    }
                    if ordered && self.must_yield(now, i) {
                        self.schedule(now, EventKind::Resume, i);
                        return Ok(());
                    }
                    self.position.turn = Some((now, i));
                }
                _ => {}
            }
            self.step(i, op, probe)?;
            // An atomic of `atomic_heads` where a script or procedure
            // starts (a counter's increment) is issued here, once per
            // iteration or call; elsewhere it is stepped. Tested here
            // rather than at the loop's top, where it would cost every
            // step of every run (and with `step` called once, so that it
            // stays inline).
            if any_atomic_heads
                && matches!(op, Op::Call(_) | Op::EndIteration)
                && self.fused_atomic(i, probe)?
            {
                return Ok(());
            }
        }
    }

    fn finish(&mut self, i: CpuIndex) {
        if !self.cpus[i].finished {
            self.cpus[i].finished = true;
            self.finished_cpus += 1;
            self.finished_thread(i);
        }
    }
}

/// Where an access lands: the bytes and the field they belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    address: u64,
    size_bytes: u32,
    field_id: u32,
}

/// A prefetch waiting at its line's home (`Coherence::prefetch`,
/// `Coherence::prefetch_for`), until the home serves it or a demand access
/// of its CPU takes it over.
#[derive(Clone, Copy, Debug)]
pub(super) struct QueuedPrefetch {
    unit: usize,
    cpu: CpuIndex,
    /// The field whose access issued it, for attribution.
    field_id: u32,
    /// The run ahead's request (`speculate`), counted in its CPU's
    /// `ahead_in_flight` as arriving at this cycle; None for the
    /// adjacent-line prefetcher's.
    run_ahead_until: Option<Cycle>,
    /// The store buffer's request for ownership ahead of a store's drain
    /// (`store_buffer`, also counted in `ahead_in_flight`).
    for_store: bool,
}

impl QueuedPrefetch {
    /// Which of the core's requests it is, for the probe.
    fn kind(self) -> AccessKind {
        if self.for_store {
            AccessKind::StoreRfoAhead
        } else if self.run_ahead_until.is_some() {
            AccessKind::RunAhead
        } else {
            AccessKind::Prefetch
        }
    }
}

#[cfg(test)]
mod tests {
    //! Runs that stop making progress. A correct simulator never deadlocks,
    //! so the deadlock is made with one of the protocol bugs planted for the
    //! checker (`coherence::planted`): the home takes a waiting read off its
    //! queue and never answers it.
    use super::*;
    use crate::checker::CheckConfig;
    use crate::coherence::planted::{self, Bug};
    use crate::memory::{FieldDef, InstanceDef, StructDef};
    use crate::probe::NoProbe;
    use crate::script::compile::{compile, ScriptSource};
    use crate::script::parse::parse_block;
    use crate::topology::Protocol;

    /// Three CPUs (one per cache) of the checker's machine, each running its
    /// script from `scripts` over `lines[0..2].v`, one line each.
    fn config(scripts: &[&str], stop: StopRule) -> SimConfig {
        let machine = CheckConfig::new(Protocol::Mesi).machine();
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
                element_addresses: vec![0, 64],
                element_homes: vec![0, 0],
            }],
            total_bytes: 128,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: vec![0, 0],
        };
        let sources: Vec<ScriptSource> = scripts
            .iter()
            .enumerate()
            .map(|(n, text)| ScriptSource {
                name: format!("s{n}"),
                body: parse_block(text).unwrap(),
            })
            .collect();
        let program = compile(&memory, &[], &[], &sources).unwrap();
        SimConfig {
            topology: Topology::new(machine).unwrap(),
            memory,
            program,
            threads: (0..scripts.len() as u32)
                .map(|n| ThreadSpec {
                    cpu: LinuxCpu::new(n),
                    script: n,
                    tid: 0,
                    group_size: 1,
                })
                .collect(),
            stop,
            warmup_iterations: 0,
            max_cycles: 1_000_000,
            max_events: DEFAULT_MAX_EVENTS,
            max_steps_without_time: 1000,
            max_operations: DEFAULT_MAX_OPERATIONS,
            seed: 1,
            start_spread_cycles: 0,
            check_invariants: true,
            scheduler: SchedulerParams::default(),
        }
    }

    #[test]
    fn the_statistics_count_only_the_iterations_after_the_warmup() {
        // Two CPUs, so that the line moves and every access is a miss.
        let scripts = [
            "lines[0].v = lines[0].v + 1\nwork 7",
            "fetch_add(lines[0].v, 1)\nwork 5",
        ];
        for warmup in [0, 1, 4] {
            let mut config = config(&scripts, StopRule::Iterations(6));
            config.warmup_iterations = warmup;
            let mut stats = crate::stats::Stats::for_run(&config);
            run(&config, &mut stats).unwrap();
            // Six measured iterations each: CPU 0's load and store, CPU 1's atomic.
            let line = &stats.per_unit[0];
            assert_eq!(
                (line.loads, line.stores, line.atomics),
                (6, 6, 6),
                "warm-up of {warmup} iterations"
            );
            assert_eq!(stats.iteration_cycles.count(), 12, "warm-up {warmup}");
        }
    }

    /// Three CPUs, each running `script`, with a per-CPU instance `mine`
    /// beside the test machine's shared `lines`, and `procedures` (name,
    /// body) compiled with the scripts.
    fn config_with_private_mine(script: &str, procedures: &[(&str, &str)]) -> SimConfig {
        use crate::script::compile::ProcedureSource;
        let mut config = config(&["work 3"; 3], StopRule::Iterations(4));
        config.memory.instances.push(InstanceDef {
            name: "mine".into(),
            struct_index: 0,
            kind: InstanceKind::PerCpu,
            element_addresses: vec![128, 192, 256],
            element_homes: vec![0, 0, 0],
        });
        config.memory.total_bytes = 320;
        config.memory.unit_homes = vec![0; 5];
        let procedures: Vec<ProcedureSource> = procedures
            .iter()
            .map(|(name, body)| ProcedureSource {
                name: (*name).into(),
                params: vec![],
                body: parse_block(body).unwrap(),
                cost_cycles: 0,
            })
            .collect();
        let sources: Vec<ScriptSource> = (0..3)
            .map(|n| ScriptSource {
                name: format!("s{n}"),
                body: parse_block(script).unwrap(),
            })
            .collect();
        config.program = compile(&config.memory, &[], &procedures, &sources).unwrap();
        config
    }

    #[test]
    fn code_reached_follows_calls_from_the_scripts_only() {
        // `bump` (called) touches `mine.v`; `touch` (called by nobody)
        // writes `lines[0].v` and takes its address: neither counts.
        let config = config_with_private_mine(
            "bump()\nwork 3",
            &[
                ("bump", "mine.v = mine.v + 1"),
                ("touch", "lines[0].v = 1\nlet p = &lines[0].v"),
            ],
        );
        let reached = code_reached(&config);
        assert_eq!(reached.called_procedures, vec![true, false]);
        let names: Vec<(&str, bool, bool)> = config
            .program
            .places
            .iter()
            .enumerate()
            .map(|(p, place)| {
                (
                    config.memory.instances[place.instance as usize]
                        .name
                        .as_str(),
                    reached.accessed_places[p],
                    reached.addressed_places[p],
                )
            })
            .collect();
        assert!(names.contains(&("mine", true, false)), "{names:?}");
        assert!(
            names
                .iter()
                .all(|&(name, accessed, addressed)| name == "mine" || (!accessed && !addressed)),
            "{names:?}"
        );
    }

    #[test]
    fn a_private_place_gets_a_slot_only_where_running_code_names_it() {
        // `mine.v` is private to each CPU; only a procedure names it. A
        // procedure nobody calls (a library module's, brought in with one
        // the scenario uses) must not put the run-ahead loop on its summed
        // policy; one a script calls must.
        for (script, slots) in [("work 3", 0), ("bump()\nwork 3", 1)] {
            let config = config_with_private_mine(script, &[("bump", "mine.v = mine.v + 1")]);
            let mut sim = Simulation::new(&config);
            assert!(sim.private.place.iter().any(|&p| p), "{script:?}");
            sim.resolve_private_targets();
            assert_eq!(sim.private.slots, slots, "{script:?}");
            run(&config, &mut NoProbe).unwrap();
        }
    }

    #[test]
    fn a_procedure_nobody_calls_leaves_a_private_cpu_without_turns() {
        // Each CPU calls `bump`, which touches only its own `mine.v`; a
        // second procedure, `touch`, writes the shared `lines[0].v`. A CPU
        // that cannot reach `touch` makes private accesses only and takes
        // no turns; one whose script calls it does.
        for (script, private_only) in [("bump()\nwork 3", true), ("bump()\ntouch()", false)] {
            let config = config_with_private_mine(
                script,
                &[("bump", "mine.v = mine.v + 1"), ("touch", "lines[0].v = 1")],
            );
            let mut sim = Simulation::new(&config);
            sim.resolve_private_targets();
            assert_eq!(sim.private.only, vec![private_only; 3], "{script:?}");
            run(&config, &mut NoProbe).unwrap();
        }
    }

    #[test]
    fn a_deadlock_names_the_waiting_cpus_lines_and_states() {
        let scripts = [
            "fetch_add(lines[0].v, 1)\nwork 3",
            "let x = lines[0].v\nwork 5",
        ];
        let config = config(&scripts, StopRule::Iterations(50));
        // Without the bug the same run finishes.
        assert!(run(&config, &mut NoProbe).is_ok());
        let error = planted::with(Bug::ServeDropsRead, || run(&config, &mut NoProbe));
        let Err(SimError::NoProgress {
            stall: Stall::Deadlock,
            cpus,
            ..
        }) = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(cpus.len(), 1, "{cpus:?}");
        assert_eq!(cpus[0].cpu, LinuxCpu::new(1));
        assert_eq!(cpus[0].origin, "scripts.s1");
        assert_eq!(cpus[0].pos.line, 1);
        let shown = error.clone().unwrap_err().to_string();
        assert!(shown.starts_with("deadlock at cycle "), "{shown}");
        let waiting = cpus[0].waiting_for.as_deref().unwrap();
        assert!(
            waiting.starts_with("line 0 (address 0x0, home node 0): core 0: M;"),
            "{waiting}"
        );
        assert!(
            shown.contains("CPU 1: at scripts.s1 line 1, waiting for line 0"),
            "{shown}"
        );
    }

    #[test]
    fn steps_that_take_no_time_stop_the_run_just_past_the_bound() {
        // One step per iteration (its end): a cycles run never ends.
        let config = config(&["let x = 1"], StopRule::Cycles(100));
        match run(&config, &mut NoProbe) {
            Err(SimError::NoProgress {
                stall: Stall::ZeroTimeSteps,
                limit: 1000,
                cycle: Cycle::ZERO,
                cpus,
            }) => {
                assert_eq!(cpus.len(), 1);
                assert_eq!(
                    (cpus[0].cpu, cpus[0].waiting_for.as_ref()),
                    (LinuxCpu::new(0), None)
                );
            }
            other => panic!("{other:?}"),
        }
        // Just inside: an iterations run of 999 such steps (998 iterations
        // and the step that ends the run) finishes, at cycle 0.
        let mut inside = config.clone();
        inside.stop = StopRule::Iterations(999);
        let outcome = run(&inside, &mut NoProbe).unwrap();
        assert_eq!(outcome.cpus[0].measured_iterations, 999);
        let mut outside = config;
        outside.stop = StopRule::Iterations(1001);
        assert!(matches!(
            run(&outside, &mut NoProbe),
            Err(SimError::NoProgress { .. })
        ));
    }

    #[test]
    fn iterations_near_the_top_of_u64_do_not_overflow() {
        // The warm-up plus the measured count saturates instead of wrapping
        // (the loader bounds both far lower; the engine must not panic).
        let mut config = config(&["work 1"], StopRule::Iterations(u64::MAX));
        config.warmup_iterations = 5;
        config.max_cycles = 100;
        assert!(matches!(
            run(&config, &mut NoProbe),
            Err(SimError::Truncated { .. })
        ));
    }

    #[test]
    fn engine_options_round_trip_through_their_bits() {
        for bits in 0..1 << EngineOptions::NAMES.len() {
            assert_eq!(EngineOptions::from_bits(bits).bits(), bits);
        }
        assert_eq!(EngineOptions::ALL.bits(), 0x3fff);
        assert_eq!(EngineOptions::REFERENCE.bits(), 0);
    }

    #[test]
    fn the_seeded_random_streams_are_pinned() {
        // The first draws of the streams a run derives from its seed. A
        // change here (an upgrade of rand_chacha or rand_core, a change of
        // derivation) changes every result that draws: bump the results
        // and the golden files knowingly, never by accident.
        let first = |mut rng: ChaCha8Rng| -> Vec<u64> { (0..3).map(|_| rng.next_u64()).collect() };
        let shown = format!(
            "{:x?}\n{:x?}\n{:x?}\n{:x?}\n{:?}",
            first(cpu_stream(1, LinuxCpu::new(0))),
            first(cpu_stream(1, LinuxCpu::new(7))),
            first(cpu_stream(0xdead_beef, LinuxCpu::new(0))),
            first(arbitration_stream(1)),
            {
                let mut rng = cpu_stream(1, LinuxCpu::new(3));
                (0..12)
                    .map(|_| uniform_below(&mut rng, 10))
                    .collect::<Vec<u64>>()
            }
        );
        assert_eq!(shown, PINNED_STREAMS);
    }

    #[test]
    fn a_single_start_slot_gives_what_the_draw_gives() {
        // With one slot the offset is the CPU number, without a draw; the
        // draw it leaves out (on a copy of the stream) could give nothing
        // else.
        let base = start_stream_base(7);
        for (cpu_count, spread_cycles) in [(512u32, 1_000u64), (512, 1_023), (64, 100), (1, 1)] {
            for n in [0, 1, cpu_count / 2, cpu_count - 1] {
                let cpu = LinuxCpu::new(n);
                let mut stream = base.clone();
                stream.set_stream(n as u64);
                let drawn = Uniform::new(0u64, 1).unwrap().sample(&mut stream);
                assert_eq!(drawn, 0);
                assert_eq!(
                    start_offset_from(&base, cpu, cpu_count, spread_cycles),
                    n as u64,
                    "{cpu_count} CPUs, spread {spread_cycles}, CPU {n}"
                );
            }
        }
        // Two slots or more still draw: the offsets spread over the slots.
        let offsets: std::collections::BTreeSet<u64> = (0..64)
            .map(|n| start_offset_from(&base, LinuxCpu::new(n), 64, 1_000) / 64)
            .collect();
        assert!(offsets.len() > 1, "{offsets:?}");
    }

    const PINNED_STREAMS: &str = "\
[67094cea8ca40db1, 149406d8fc0e8e6b, 98b82b0336070665]
[770a80dc330a4d75, be5c2ea131152c40, df30e6e740f337b3]
[ff01307f43ec8df9, 946b5cc52dc1b3db, 17ff25ec6284944]
[5f1c94c2e7d13664, ee810777abac1618, d39ab10191f2297d]
[9, 4, 3, 5, 3, 8, 5, 8, 7, 3, 5, 7]";
}
