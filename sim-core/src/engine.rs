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

use crate::coherence::{AccessReport, Coherence, LineState, Need, Requested, PREFETCH_TAG};
use crate::error::{Budget, CpuWhere, SimError, Stall, StalledCpu};
use crate::memory::{BitRange, InstanceKind, MemoryLayout};
use crate::probe::{AccessEvent, AccessKind, PrivateHits, Probe};
use crate::queue::{EventQueue, EVENT_BYTES};
use crate::script::ast::{AtomicOp, BinaryOp, SourcePos, UnaryOp};
use crate::script::compile::{Builtin, Code, Op, PlaceRef, Program};
use crate::script::fuse::{
    self, Destination, Fused, FusedAtomic, Operand, BINARY_OPS, REPEAT_HEAD_OPS,
};
use crate::time::Cycle;
use crate::topology::Topology;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;

mod fused_loop;
mod spin;

/// One CPU's assignment: which script it runs, and its place in its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    pub cpu: u32,
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
    pub seed: u64,
    pub check_invariants: bool,
}

pub const MAX_CALL_DEPTH: usize = crate::limits::CALL_DEPTH;
pub const MAX_STACK: usize = crate::limits::OPERAND_STACK;
pub const DEFAULT_MAX_EVENTS: u64 = crate::limits::DEFAULT_EVENTS;
pub const DEFAULT_MAX_STEPS_WITHOUT_TIME: u64 = crate::limits::DEFAULT_STEPS_WITHOUT_TIME;

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
        + config.topology.spec.store_buffer_entries as usize * std::mem::size_of::<BufferedStore>())
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
    pub cpus: Vec<CpuOutcome>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuOutcome {
    pub cpu: u32,
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
}

struct Cpu {
    spec: ThreadSpec,
    /// The CPU's core (whose cache it uses) and SMT thread in it.
    core: u32,
    thread: u8,
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
    store_buffer: VecDeque<BufferedStore>,
    draining: bool,
    pending: Option<PendingAccess>,
    rng: ChaCha8Rng,
    /// Steps executed since the clock last moved, and the cycle it moved to.
    still_steps: u64,
    still_at: Cycle,
    /// Accesses made (each one counted in `memory_ops` too): a spin-wait's
    /// period makes exactly one.
    accesses: u64,
    spin: spin::SpinWatch,
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
    /// For a code with superinstructions and every private target resolved,
    /// the hoisted loop (`engine::fused_loop`): the per-access checks made
    /// once per call, each private line looked at once.
    pub hoisted_private_hits: bool,
    /// An atomic on a fixed-target place where a script or procedure starts
    /// is issued by `run_cpu` at once (`script::fuse::fuse_atomics`).
    pub fused_atomics: bool,
    /// The resume of the CPU a line's home serves is taken by the event
    /// loop at once when it would be the next event, without the queue.
    pub direct_resume: bool,
    /// The commonest contended transaction shape skips the general walk
    /// over the holders (`Coherence::write_taking_the_only_copy`).
    pub special_transactions: bool,
    /// A CPU polling a line in a loop that changes nothing else sleeps
    /// until another CPU reaches the line, and wakes where stepping would
    /// have it (`engine::spin`); for a probe that takes summed hits.
    pub spin_fast_forward: bool,
}

impl EngineOptions {
    /// Every shortcut on: the default.
    pub const ALL: EngineOptions = EngineOptions {
        run_ahead: true,
        private_places: true,
        summed_private_hits: true,
        superinstructions: true,
        hoisted_private_hits: true,
        fused_atomics: true,
        direct_resume: true,
        special_transactions: true,
        spin_fast_forward: true,
    };
    /// Every shortcut off: the reference.
    pub const REFERENCE: EngineOptions = EngineOptions {
        run_ahead: false,
        private_places: false,
        summed_private_hits: false,
        superinstructions: false,
        hoisted_private_hits: false,
        fused_atomics: false,
        direct_resume: false,
        special_transactions: false,
        spin_fast_forward: false,
    };
    /// The shortcuts' names, in the order of [`EngineOptions::from_bits`].
    pub const NAMES: [&'static str; 9] = [
        "run_ahead",
        "private_places",
        "summed_private_hits",
        "superinstructions",
        "hoisted_private_hits",
        "fused_atomics",
        "direct_resume",
        "special_transactions",
        "spin_fast_forward",
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
        ]
        .iter()
        .enumerate()
        .fold(0, |bits, (k, &on)| bits | (on as u32) << k)
    }

    /// The options whose bit `k` of `bits` is set, `k` indexing
    /// [`EngineOptions::NAMES`] (for tests that go through combinations).
    pub fn from_bits(bits: u32) -> EngineOptions {
        let on = |k: u32| bits & (1 << k) != 0;
        EngineOptions {
            run_ahead: on(0),
            private_places: on(1),
            summed_private_hits: on(2),
            superinstructions: on(3),
            hoisted_private_hits: on(4),
            fused_atomics: on(5),
            direct_resume: on(6),
            special_transactions: on(7),
            spin_fast_forward: on(8),
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
pub type ShortcutEntries = [u64; 9];

/// Runs a configuration to its end.
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
        sim.private_place.iter_mut().for_each(|p| *p = false);
    }
    sim.coherence.special_transactions = options.special_transactions;
    sim.resolve_private_targets();
    sim.sum_private_hits = options.summed_private_hits && !probe.needs_every_access();
    sim.fuse_code();
    let outcome = sim.run(probe)?;
    let mut entries = sim.shortcut_entries;
    entries[7] = sim.coherence.special_transactions_taken;
    Ok((outcome, entries))
}

struct Simulation<'c> {
    config: &'c SimConfig,
    topology: &'c Topology,
    memory: &'c MemoryLayout,
    program: &'c Program,
    coherence: Coherence,
    bytes: Vec<u8>,
    cpus: Vec<Cpu>,
    /// Events in (cycle, key) order, each key naming the event's kind and
    /// its target (a CPU or a line): `event_key`.
    queue: EventQueue,
    finished_cpus: usize,
    events: u64,
    memory_ops: u64,
    stop_cycle: Option<u64>,
    measure_start: u64,
    store_buffer_entries: usize,
    /// Picks the winner among requests waiting for a line.
    arbitration: ChaCha8Rng,
    /// Seeds the order of the events of one cycle ([`event_key`]).
    tie_seed: u64,
    /// The last bound drawn for by `arbitration` and its acceptance zone
    /// (the number of waiters changes seldom; the zone costs a division).
    arbitration_zone: (u64, u64),
    /// Per place: every line it can reach belongs to the running CPU alone.
    private_place: Vec<bool>,
    /// Per CPU: every access its script (and any procedure) makes is to a
    /// private place, so nothing it does can meet another CPU and its
    /// accesses need not wait for their turn (see `run_cpu`).
    private_only: Vec<bool>,
    /// Code of every script, then every procedure, indexed by `Frame::code`.
    code_ops: Vec<&'c [Op]>,
    /// Per code, the run-ahead loop's table: `code_ops` with runs of stack
    /// operations fused into superinstructions (see `script::fuse`).
    fused_code: Vec<Vec<Fused>>,
    /// Per code and operation: an atomic on a place with one target for
    /// every CPU whose operand is pushed here (`script::fuse::fuse_atomics`),
    /// which `run_cpu` issues without stepping the push and the atomic;
    /// empty for a code without one (and without the fast path).
    atomic_heads: Vec<Vec<Option<AtomicHead>>>,
    /// Some code has an entry in `atomic_heads`.
    any_atomic_heads: bool,
    /// Run register-only operations in a tight loop ahead of `step`.
    run_local_ops: bool,
    /// The shortcuts this run may take, and how often it took each
    /// (`count_shortcut`).
    options: EngineOptions,
    shortcut_entries: ShortcutEntries,
    /// Where in the global order the engine is (for waking spinners).
    position: spin::Position,
    /// Per line: the CPUs asleep polling it (`spin`).
    watchers: Vec<Vec<u32>>,
    /// Per place: its slot among the private places with one fixed address
    /// per CPU (no run-time operand), or `NOT_PRIVATE`.
    private_slot: Vec<u32>,
    /// Private places with a fixed address: slots per CPU.
    private_slots: usize,
    /// Per CPU and slot (`cpu index * private_slots + slot`): where the
    /// place lands for that CPU, resolved once.
    private_targets: Vec<PrivateTarget>,
    /// Per CPU and slot: plain hits summed since the last report to the
    /// probe (when `sum_private_hits`).
    private_hits: Vec<PrivateHits>,
    /// Per CPU: every one of its private targets has an element (so the
    /// fused run-ahead loop need not look at each).
    private_targets_resolved: Vec<bool>,
    /// Per slot: the fused run-ahead loop's view of the running CPU's
    /// private lines during one call (left clean between calls).
    slot_lines: Vec<fused_loop::SlotLine>,
    /// Per code: one more than the highest local slot its superinstructions
    /// name (the fused run-ahead loop checks the frame's locals once).
    fused_locals: Vec<u32>,
    /// The run-ahead loop takes plain hits on private places itself and
    /// sums them for the probe (fast path on, and the probe allows it).
    sum_private_hits: bool,
    /// The run-ahead loop stops at this cycle, where `run_cpu` must look at
    /// the run's end (the stop cycle, or one past the cycle budget).
    time_limit: u64,
    /// The machine's adjacent-line prefetcher is on: a demand miss also
    /// reads the line's buddy ([`Simulation::prefetch_buddy`]).
    prefetch_buddies: bool,
    /// Prefetches waiting at their line's home: (line, CPU index, the field
    /// whose miss issued it, for attribution).
    queued_prefetches: Vec<(usize, usize, u32)>,
    /// Per place: its target when every CPU resolves it alike (a field of a
    /// global instance, no run-time operand), resolved once; the contended
    /// accesses go to such places.
    global_targets: Vec<Option<Target>>,
}

/// `Simulation::private_slot` of a place the run-ahead loop leaves to `step`.
const NOT_PRIVATE: u32 = u32::MAX;

/// Where a private place lands for one CPU.
#[derive(Clone, Copy, Debug)]
struct PrivateTarget {
    address: u64,
    /// Its coherence unit, or `usize::MAX` where the CPU has no element
    /// (left to `step`, which reports it).
    unit: usize,
    size_bytes: u32,
}

/// Which places can only ever reach lines of the running CPU: fields of a
/// per-CPU instance that no script indexes by CPU, on lines that hold no
/// other CPU's data. Accesses through them cannot interact with another
/// CPU: their plain hits are summed for the probe, and a CPU that makes no
/// other access runs them ahead of the event queue (see `run_cpu`).
///
/// With the adjacent-line prefetcher (`prefetch_buddies`), a miss on a line
/// also reads its buddy, so a line is private only if its buddy is too.
fn private_places(program: &Program, memory: &MemoryLayout, prefetch_buddies: bool) -> Vec<bool> {
    let instances = &memory.instances;
    let indexed: Vec<bool> = (0..instances.len())
        .map(|n| {
            program
                .places
                .iter()
                .any(|p| p.instance as usize == n && p.has_element)
                // A pointer can be passed to any CPU: an instance whose
                // address is taken is shared.
                || program.ops_take_address_of(n)
        })
        .collect();
    let mut shared_unit = vec![false; memory.unit_count()];
    let units_of = |n: usize| {
        let size = memory.structs[instances[n].struct_index].size_bytes as u64;
        instances[n]
            .element_addresses
            .iter()
            .flat_map(move |&a| memory.unit_of(a)..=memory.unit_of(a + size.max(1) - 1))
            .collect::<Vec<usize>>()
    };
    for (n, inst) in instances.iter().enumerate() {
        if inst.kind != InstanceKind::PerCpu || indexed[n] {
            for u in units_of(n) {
                shared_unit[u] = true;
            }
        }
    }
    if prefetch_buddies {
        let shared_line = shared_unit.clone();
        for (u, shared) in shared_unit.iter_mut().enumerate() {
            *shared |= shared_line.get(u ^ 1).copied().unwrap_or(false);
        }
    }
    let private_instance: Vec<bool> = (0..instances.len())
        .map(|n| {
            instances[n].kind == InstanceKind::PerCpu
                && !indexed[n]
                && units_of(n).iter().all(|&u| !shared_unit[u])
        })
        .collect();
    program
        .places
        .iter()
        .map(|p| !p.pointer && !p.has_element && private_instance[p.instance as usize])
        .collect()
}

/// Per place, its target when it is the same for every CPU: a field of a
/// global instance reached without pointer, element or index (what
/// `address_of` computes for it on every access).
fn global_targets(program: &Program, memory: &MemoryLayout) -> Vec<Option<Target>> {
    program
        .places
        .iter()
        .map(|place| {
            let fixed = !place.pointer
                && !place.has_element
                && !place.has_index
                && place.count > 0
                && place.kind == InstanceKind::Global;
            let base = memory.instances[place.instance as usize]
                .element_addresses
                .first()
                .copied();
            base.filter(|_| fixed).map(|base| Target {
                address: base + place.offset_bytes as u64,
                size_bytes: place.size_bytes,
                field_id: place.field_id,
            })
        })
        .collect()
}

/// A `FusedAtomic` with its place's target resolved.
#[derive(Clone, Copy, Debug)]
struct AtomicHead {
    operand: Operand,
    op: AtomicOp,
    target: Target,
}

/// What the run-ahead loop does after a superinstruction.
enum FusedStep {
    /// It could not start as its plain operations would: run the first.
    Plain,
    /// It ran whole: go on.
    Continue,
    /// It stopped where its plain operations would have (state, stack and
    /// position as they leave them), with their result.
    Stop(Result<(), SimError>),
}

/// What a superinstruction reaches besides the running CPU.
struct RunAheadContext<'a> {
    coherence: &'a mut Coherence,
    bytes: &'a mut [u8],
    /// The running CPU's private targets and sums, from its first slot.
    private_targets: &'a [PrivateTarget],
    private_hits: &'a mut [PrivateHits],
    sum_private_hits: bool,
    store_buffer_entries: usize,
    l1_hit_cycles: u64,
    time_limit: u64,
    /// For the turn: the CPU makes private accesses only (then they need
    /// not wait for their turn), and its turn against the queue.
    private_only: bool,
    turn: Turn,
}

/// A `Fused::Binary`: two operands, a binary operation, a destination.
struct FusedBinary {
    left: Operand,
    right: Operand,
    operator: BinaryOp,
    destination: Destination,
}

impl FusedBinary {
    /// Runs the fused operations exactly as the run-ahead loop runs the
    /// plain ones: each private access is the same plain hit at the same
    /// cycle with the same sums, and wherever the plain run would stop (a
    /// miss, a failed check, the time limit, a failing operation) this one
    /// stops at the same position with the same operands on the stack.
    #[inline(always)]
    fn run(&self, cpu: &mut Cpu, run: RunAheadContext<'_>, accesses: &mut u64) -> FusedStep {
        let base = cpu.frame.locals_base as usize;
        let locals = cpu.locals.len();
        let ready = |operand: Operand| match operand {
            Operand::Const(_) => true,
            Operand::Local(slot) => base + (slot as usize) < locals,
            Operand::Private(slot) => {
                run.sum_private_hits
                    && cpu.store_buffer.is_empty()
                    && run.private_targets[slot as usize].unit != usize::MAX
            }
        };
        let destination_ready = match self.destination {
            Destination::Local(slot) => base + (slot as usize) < locals,
            // Without store buffer entries every store waits (as `store` does).
            Destination::Private(slot) => {
                run.sum_private_hits
                    && run.store_buffer_entries != 0
                    && cpu.store_buffer.is_empty()
                    && run.private_targets[slot as usize].unit != usize::MAX
            }
        };
        // The plain run pushes both operands; none of these conditions can
        // change part-way, since nothing here touches the store buffer.
        if cpu.stack.len() + 2 > MAX_STACK
            || !ready(self.left)
            || !ready(self.right)
            || !destination_ready
        {
            return FusedStep::Plain;
        }
        let RunAheadContext {
            coherence,
            bytes,
            private_targets,
            private_hits,
            l1_hit_cycles: l1,
            time_limit,
            private_only,
            turn,
            ..
        } = run;
        // A private access takes its turn as the plain one does: it stops
        // before running (as on a miss).
        let must_wait = |now: Cycle| !private_only && turn.must_yield(now.0);
        // Leaves the first `done` plain operations done, their values on
        // the stack.
        let stop = |cpu: &mut Cpu, values: &[i64], done: u32, result| {
            cpu.stack.extend_from_slice(values);
            cpu.frame.pc += done;
            FusedStep::Stop(result)
        };
        let mut values = [0i64; 2];
        for (k, operand) in [self.left, self.right].into_iter().enumerate() {
            values[k] = match operand {
                Operand::Const(v) => v,
                Operand::Local(slot) => cpu.locals[base + slot as usize],
                Operand::Private(slot) => {
                    let target = private_targets[slot as usize];
                    if must_wait(cpu.now) {
                        return stop(cpu, &values[..k], k as u32, Ok(()));
                    }
                    let hits = &mut private_hits[slot as usize];
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Read,
                        l1,
                        hits,
                        accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => return stop(cpu, &values[..k], k as u32, Ok(())),
                        Err(e) => return stop(cpu, &values[..k], k as u32, Err(e)),
                    };
                    let value = read_value(bytes, target.address, target.size_bytes);
                    if done.0 >= time_limit {
                        values[k] = value;
                        return stop(cpu, &values[..=k], k as u32 + 1, Ok(()));
                    }
                    value
                }
            };
        }
        let Some(result) = binary_value(self.operator, values[0], values[1]) else {
            return stop(cpu, &values, 2, Ok(()));
        };
        match self.destination {
            Destination::Local(slot) => {
                cpu.locals[base + slot as usize] = result;
                cpu.frame.pc += BINARY_OPS;
                FusedStep::Continue
            }
            Destination::Private(slot) => {
                let target = private_targets[slot as usize];
                if must_wait(cpu.now) {
                    return stop(cpu, &[result], 3, Ok(()));
                }
                let hits = &mut private_hits[slot as usize];
                let done = match take_private_hit(
                    coherence,
                    cpu,
                    target.unit,
                    Need::Write,
                    l1,
                    hits,
                    accesses,
                ) {
                    Ok(Some(done)) => done,
                    Ok(None) => return stop(cpu, &[result], 3, Ok(())),
                    Err(e) => return stop(cpu, &[result], 3, Err(e)),
                };
                write_value(bytes, target.address, target.size_bytes, result);
                cpu.frame.pc += BINARY_OPS;
                if done.0 >= time_limit {
                    return FusedStep::Stop(Ok(()));
                }
                FusedStep::Continue
            }
        }
    }
}

/// A plain hit of the running CPU on a private place, as both run-ahead
/// loops take it: the hit ([`Coherence::plain_hit`]), its sums for the
/// statistics probe, and the CPU's clock moved to its completion. `Ok(None)`
/// where the access is no plain hit (nothing changed: the caller stops and
/// leaves it to `step`).
#[inline(always)]
fn take_private_hit(
    coherence: &mut Coherence,
    cpu: &mut Cpu,
    unit: usize,
    need: Need,
    l1_hit_cycles: u64,
    hits: &mut PrivateHits,
    accesses: &mut u64,
) -> Result<Option<Cycle>, SimError> {
    let now = cpu.now;
    let Some(done) = coherence.plain_hit(now, cpu.core, cpu.thread, unit, need, l1_hit_cycles)?
    else {
        return Ok(None);
    };
    match need {
        Need::Read => {
            hits.loads += 1;
            // Cycles beyond an L1 hit that the CPU waited for the line.
            hits.stall_cycles += (done - now).saturating_sub(l1_hit_cycles);
        }
        Need::Write => hits.stores += 1,
    }
    *accesses += 1;
    cpu.now = done;
    Ok(Some(done))
}

/// CPU `cpu`'s random stream (`random(n)`): one ChaCha stream per CPU,
/// derived from the scenario seed, so adding a CPU does not change
/// another's draws.
pub fn cpu_stream(seed: u64, cpu: u32) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(cpu as u64);
    rng
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

/// Tags of queued requests: which CPU, and whether it is its store buffer.
fn request_tag(cpu_index: usize, drain: bool) -> u32 {
    (cpu_index as u32) << 1 | drain as u32
}

/// Counts `n` accesses by `cpu`: in the run's total and in the CPU's own
/// count, which a spin-wait's period may move by its one load only
/// (`engine::spin`). Every access is counted here.
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
fn event_class(kind: EventKind) -> u64 {
    match kind {
        EventKind::Resume => 0,
        EventKind::DrainDone => 1,
        EventKind::LineFree => 2,
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
fn event_key(tie_seed: u64, kind: EventKind, cycle: u64, target: usize) -> u64 {
    // The high bits of two odd-constant products: per cycle, the targets'
    // fixed scramble XORed with a mask drawn from the cycle and the seed,
    // so each target comes first at about one cycle in as many as there
    // are targets. The tie need only be free of a systematic order, and it
    // is computed for every event.
    let z = (cycle ^ tie_seed).wrapping_mul(0x9E37_79B9_7F4A_7C15)
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
    next_cycle: u64,
    next_key: u64,
    tie_seed: u64,
    cpu: usize,
}

impl Turn {
    /// A turn that never comes (a CPU whose accesses need not wait).
    pub(super) const NEVER: Turn = Turn {
        next_cycle: u64::MAX,
        next_key: u64::MAX,
        tie_seed: 0,
        cpu: 0,
    };

    #[inline(always)]
    pub(super) fn must_yield(&self, now: u64) -> bool {
        now > self.next_cycle
            || (now == self.next_cycle
                && self.next_key < event_key(self.tie_seed, EventKind::Resume, now, self.cpu))
    }
}

/// What an event's key says: its kind and its target.
#[inline]
fn event_of_key(key: u64) -> (EventKind, usize) {
    let kind = match key >> 62 {
        0 => EventKind::Resume,
        1 => EventKind::DrainDone,
        _ => EventKind::LineFree,
    };
    (kind, (key & 0xFFFF_FFFF) as usize)
}

impl<'c> Simulation<'c> {
    fn new(config: &'c SimConfig) -> Self {
        let mut coherence = Coherence::new(&config.topology, &config.memory);
        coherence.check_invariants = config.check_invariants;
        let cpus = config
            .threads
            .iter()
            .map(|t| {
                let rng = cpu_stream(config.seed, t.cpu);
                let mut cpu = Cpu {
                    spec: t.clone(),
                    core: config.topology.core_of(t.cpu),
                    thread: config.topology.thread_of(t.cpu) as u8,
                    now: Cycle::ZERO,
                    stack: Vec::with_capacity(64),
                    locals: Vec::new(),
                    frame: Frame {
                        code: 0,
                        pc: 0,
                        locals_base: 0,
                    },
                    callers: Vec::new(),
                    iteration: 0,
                    iteration_start: Cycle::ZERO,
                    finished: false,
                    wait: Wait::None,
                    wait_since: Cycle::ZERO,
                    store_buffer: VecDeque::new(),
                    draining: false,
                    pending: None,
                    rng,
                    still_steps: 0,
                    still_at: Cycle::ZERO,
                    accesses: 0,
                    spin: spin::SpinWatch::default(),
                };
                start_iteration(&mut cpu, &config.program);
                cpu
            })
            .collect();
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
                StopRule::Cycles(c) => Some(c),
                StopRule::Iterations(_) => None,
            },
            measure_start: 0,
            store_buffer_entries: config.topology.spec.store_buffer_entries as usize,
            private_place: private_places(
                &config.program,
                &config.memory,
                config.topology.spec.adjacent_line_prefetch,
            ),
            private_only: Vec::new(),
            code_ops: config
                .program
                .scripts
                .iter()
                .chain(&config.program.procedures)
                .map(|c| c.ops.as_slice())
                .collect(),
            fused_code: Vec::new(),
            atomic_heads: Vec::new(),
            any_atomic_heads: false,
            run_local_ops: true,
            options: EngineOptions::ALL,
            shortcut_entries: [0; 9],
            position: spin::Position::START,
            watchers: Vec::new(),
            prefetch_buddies: config.topology.spec.adjacent_line_prefetch,
            queued_prefetches: Vec::new(),
            global_targets: global_targets(&config.program, &config.memory),
            arbitration: arbitration_stream(config.seed),
            tie_seed: tie_seed(config.seed),
            arbitration_zone: (0, 0),
            private_slot: Vec::new(),
            private_slots: 0,
            private_targets: Vec::new(),
            private_hits: Vec::new(),
            private_targets_resolved: Vec::new(),
            slot_lines: Vec::new(),
            fused_locals: Vec::new(),
            sum_private_hits: false,
            time_limit: match config.stop {
                StopRule::Cycles(c) => c,
                StopRule::Iterations(_) => config.max_cycles.saturating_add(1),
            },
        }
    }

    /// Gives each private place with one fixed address per CPU a slot, and
    /// resolves its address for every CPU once (per-CPU addresses never
    /// move), so that the run-ahead loop needs no operand or lookup.
    fn resolve_private_targets(&mut self) {
        let private_code = |code: &Code| {
            code.ops.iter().all(|op| match op {
                Op::Load(p) | Op::Store(p) | Op::Atomic(_, p) => self.private_place[*p as usize],
                _ => true,
            })
        };
        let procedures_private = self.program.procedures.iter().all(private_code);
        self.private_only = self
            .cpus
            .iter()
            .map(|cpu| {
                let script = &self.program.scripts[cpu.spec.script as usize];
                let calls = script.ops.iter().any(|op| matches!(op, Op::Call(_)));
                private_code(script) && (procedures_private || !calls)
            })
            .collect();
        let places = &self.program.places;
        let mut slots = 0u32;
        self.private_slot = (0..places.len())
            .map(|p| {
                let place = &places[p];
                if self.private_place[p]
                    && !place.has_index
                    && place.count > 0
                    && place.bits.is_none()
                {
                    slots += 1;
                    slots - 1
                } else {
                    NOT_PRIVATE
                }
            })
            .collect();
        self.private_slots = slots as usize;
        let mut targets = Vec::with_capacity(self.cpus.len() * slots as usize);
        let mut sums = Vec::with_capacity(targets.capacity());
        for cpu in &self.cpus {
            for (p, &slot) in self.private_slot.iter().enumerate() {
                if slot == NOT_PRIVATE {
                    continue;
                }
                let place = &places[p];
                let inst = &self.memory.instances[place.instance as usize];
                // Private places are fields of per-CPU instances.
                let target = match inst.element_addresses.get(cpu.spec.cpu as usize) {
                    Some(&base) => {
                        let address = base + place.offset_bytes as u64;
                        PrivateTarget {
                            address,
                            unit: self.memory.unit_of(address),
                            size_bytes: place.size_bytes,
                        }
                    }
                    None => PrivateTarget {
                        address: 0,
                        unit: usize::MAX,
                        size_bytes: 0,
                    },
                };
                targets.push(target);
                sums.push(PrivateHits {
                    field_id: place.field_id,
                    address: target.address,
                    ..PrivateHits::default()
                });
            }
        }
        self.private_targets_resolved = targets
            .chunks(slots.max(1) as usize)
            .map(|cpu_targets| cpu_targets.iter().all(|t| t.unit != usize::MAX))
            .collect();
        if slots == 0 {
            self.private_targets_resolved = vec![true; self.cpus.len()];
        }
        self.private_targets = targets;
        self.private_hits = sums;
        self.slot_lines = vec![fused_loop::SlotLine::default(); slots as usize];
    }

    /// Builds the run-ahead loop's fused tables. Accesses to private places
    /// are fused only where the run-ahead loop takes them itself.
    fn fuse_code(&mut self) {
        let private_slot = &self.private_slot;
        let sum_private_hits = self.sum_private_hits;
        let superinstructions = self.options.superinstructions;
        self.fused_code = self
            .code_ops
            .iter()
            .map(|ops| {
                if !superinstructions {
                    return Vec::new();
                }
                let fused = fuse::fuse(ops, |place| {
                    let slot = private_slot[place as usize];
                    (sum_private_hits && slot != NOT_PRIVATE).then_some(slot)
                });
                if fused
                    .iter()
                    .all(|f| matches!(f, Fused::Plain(_) | Fused::LoopBack { .. }))
                {
                    Vec::new()
                } else {
                    fused
                }
            })
            .collect();
        let global_targets = &self.global_targets;
        let fused_atomics = self.options.fused_atomics;
        self.atomic_heads = self
            .code_ops
            .iter()
            .map(|ops| {
                if !fused_atomics {
                    return Vec::new();
                }
                fuse::fuse_atomics(ops, |place| global_targets[place as usize].is_some())
                    .into_iter()
                    .map(|head| {
                        head.map(|FusedAtomic { operand, op, place }| AtomicHead {
                            operand,
                            op,
                            target: global_targets[place as usize]
                                .expect("fused only where the place has a fixed target"),
                        })
                    })
                    .collect()
            })
            .collect();
        self.any_atomic_heads = self.atomic_heads.iter().any(|heads| !heads.is_empty());
        self.fused_locals = self
            .fused_code
            .iter()
            .map(|fused| {
                let local = |operand: &Operand| match *operand {
                    Operand::Local(slot) => slot as u32 + 1,
                    _ => 0,
                };
                fused
                    .iter()
                    .map(|entry| match entry {
                        Fused::Plain(_) | Fused::LoopBack { .. } => 0,
                        Fused::RepeatHead { counter, .. } => *counter as u32 + 1,
                        Fused::Binary {
                            left,
                            right,
                            destination,
                            ..
                        } => local(left).max(local(right)).max(match destination {
                            Destination::Local(slot) => *slot as u32 + 1,
                            Destination::Private(_) => 0,
                        }),
                    })
                    .max()
                    .unwrap_or(0)
            })
            .collect();
    }

    /// Hands CPU `i`'s summed private hits to the probe.
    fn report_private_hits(&mut self, i: usize, probe: &mut dyn Probe) {
        let slots = self.private_slots;
        let cpu_id = self.cpus[i].spec.cpu;
        for hits in &mut self.private_hits[i * slots..(i + 1) * slots] {
            if hits.loads + hits.stores > 0 {
                count_shortcut!(self.shortcut_entries, 2);
                probe.on_private_hits(cpu_id, hits);
                (hits.loads, hits.stores, hits.stall_cycles) = (0, 0, 0);
            }
        }
    }

    fn schedule(&mut self, cycle: Cycle, kind: EventKind, target: usize) {
        let key = event_key(self.tie_seed, kind, cycle.0, target);
        self.queue.push(cycle.0, key);
    }

    /// CPU `i`'s turn against the queue as it is ([`Turn`]).
    #[inline]
    fn turn(&self, i: usize) -> Turn {
        let next = self.queue.next();
        Turn {
            next_cycle: next.cycle,
            next_key: next.key,
            tie_seed: self.tie_seed,
            cpu: i,
        }
    }

    /// Whether CPU `i`, at `now`, must give way to the earliest queued
    /// event before an access ([`Turn::must_yield`]).
    #[inline]
    fn must_yield(&self, now: u64, i: usize) -> bool {
        self.turn(i).must_yield(now)
    }

    fn run(&mut self, probe: &mut dyn Probe) -> Result<RunOutcome, SimError> {
        let result = self.run_events(probe);
        if self.sum_private_hits {
            for i in 0..self.cpus.len() {
                self.report_private_hits(i, probe);
            }
        }
        result
    }

    fn run_events(&mut self, probe: &mut dyn Probe) -> Result<RunOutcome, SimError> {
        for i in 0..self.cpus.len() {
            self.schedule(Cycle::ZERO, EventKind::Resume, i);
        }
        let max_events = self.config.max_events;
        let max_in_flight = events_in_flight_bound(self.config);
        let mut stopped = false;
        // Events processed at the current cycle: a run whose events never
        // move time would otherwise spin until the event budget.
        let (mut still_at, mut still_events) = (0, 0u64);
        // A CPU's resume that `line_free` found to be the next event: it is
        // taken here directly instead of through the queue (see there).
        let mut next_resume: Option<(u64, usize)> = None;
        loop {
            let (cycle, (kind, target)) = match next_resume.take() {
                Some((cycle, cpu)) => {
                    self.position = spin::Position {
                        event: spin::EventAt::Resume { cycle, cpu },
                        access: None,
                    };
                    (cycle, (EventKind::Resume, cpu))
                }
                None => match self.queue.pop() {
                    Some(event) => {
                        self.position = spin::Position {
                            event: spin::EventAt::Queued {
                                cycle: event.cycle,
                                key: event.key,
                            },
                            access: None,
                        };
                        (event.cycle, event_of_key(event.key))
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
                return Err(self.truncated(Budget::Events, max_events, Cycle(cycle)));
            }
            if cycle == still_at {
                still_events += 1;
                if still_events > self.config.max_steps_without_time {
                    let all: Vec<usize> = (0..self.cpus.len()).collect();
                    return Err(self.stalled(Stall::ZeroTimeEvents, Cycle(cycle), &all));
                }
            } else {
                (still_at, still_events) = (cycle, 1);
            }
            match kind {
                EventKind::Resume => self.run_cpu(target, probe)?,
                EventKind::DrainDone => self.drain_done(target, Cycle(cycle), probe)?,
                EventKind::LineFree => {
                    next_resume = self
                        .line_free(target, Cycle(cycle), probe)?
                        .map(|(at, cpu)| (at.0, cpu));
                }
            }
            let in_flight = self.queue.len() + next_resume.is_some() as usize;
            if in_flight as u64 > max_in_flight {
                return Err(self.truncated(Budget::EventsInFlight, max_in_flight, Cycle(cycle)));
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
        }
        if !stopped && self.finished_cpus < self.cpus.len() {
            // Nothing is queued, yet some CPU has not finished: it waits
            // for something that will never come.
            let waiting: Vec<usize> = (0..self.cpus.len())
                .filter(|&i| !self.cpus[i].finished)
                .collect();
            let at = waiting
                .iter()
                .map(|&i| self.cpus[i].now)
                .max()
                .unwrap_or_default();
            // Spinners with nothing left to write their lines wait for
            // ever: the scenario's doing, not the simulator's.
            let stall = if waiting.iter().any(|&i| self.cpus[i].wait == Wait::Spin) {
                Stall::SpinsForever
            } else {
                Stall::Deadlock
            };
            return Err(self.stalled(stall, at, &waiting));
        }
        let end = match self.stop_cycle {
            Some(stop) => stop,
            None => self.cpus.iter().map(|c| c.now.0).max().unwrap_or(0),
        };
        let measure_start = self.measure_start.min(end);
        Ok(RunOutcome {
            elapsed_cycles: end - measure_start,
            measure_start_cycle: measure_start,
            events: self.events,
            memory_ops: self.memory_ops,
            cpus: self
                .cpus
                .iter()
                .map(|c| CpuOutcome {
                    cpu: c.spec.cpu,
                    measured_iterations: c.iteration.saturating_sub(self.config.warmup_iterations),
                    finish_cycle: c.now.0.min(end),
                })
                .collect(),
        })
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
    fn stalled(&self, stall: Stall, cycle: Cycle, involved: &[usize]) -> SimError {
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
                    Wait::None => None,
                    Wait::Spin => self.spin_wait_description(cpu),
                    Wait::Line => cpu.pending.map(|p| line(p.address)),
                    Wait::BufferEmpty | Wait::BufferSlot => Some(format!(
                        "its store buffer ({} entries) to drain{}",
                        cpu.store_buffer.len(),
                        cpu.store_buffer
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
                Stall::Deadlock | Stall::SpinsForever => 0,
                _ => self.config.max_steps_without_time,
            },
            cycle,
            cpus,
        }
    }

    fn position(&self, cpu: &Cpu) -> (String, SourcePos) {
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
                    self.program.origins[code.origin as usize].clone(),
                    code.op_positions.get(pc).copied().unwrap_or_default(),
                )
            }
            None => (String::from("(between iterations)"), SourcePos::default()),
        }
    }

    // Error paths: kept out of the hot callers.
    #[cold]
    #[inline(never)]
    fn script_error(&self, i: usize, message: String) -> SimError {
        let cpu = &self.cpus[i];
        let (origin, pos) = self.position(cpu);
        SimError::Script {
            cpu: cpu.spec.cpu,
            cycle: cpu.now,
            origin,
            pos,
            message,
        }
    }

    /// Runs CPU `i` until it blocks, finishes, or reaches the next event.
    ///
    /// The CPU's event came first at its cycle, so it may go on at that
    /// cycle; once its clock has moved, it yields to any event at or before
    /// its new time, which was queued earlier.
    fn run_cpu(&mut self, i: usize, probe: &mut dyn Probe) -> Result<(), SimError> {
        let any_atomic_heads = self.any_atomic_heads;
        loop {
            let cpu = &self.cpus[i];
            if cpu.finished || cpu.wait != Wait::None {
                return Ok(());
            }
            // `time_limit` is the first cycle at which either the stop
            // cycle or the cycle budget acts: one comparison in the common
            // case.
            if cpu.now.0 >= self.time_limit {
                if let Some(stop) = self.stop_cycle {
                    if cpu.now.0 >= stop {
                        self.finish(i);
                        return Ok(());
                    }
                } else if cpu.now.0 > self.config.max_cycles {
                    // Past the budget: the run stops there once every
                    // earlier event has been taken, so that the other
                    // CPUs are reported where they are at this cycle, not
                    // where this CPU's running ahead left them.
                    let now = cpu.now;
                    if self.must_yield(now.0, i) {
                        self.schedule(now, EventKind::Resume, i);
                        return Ok(());
                    }
                    return Err(self.truncated(Budget::Cycles, self.config.max_cycles, now));
                }
            }
            if self.run_local_ops {
                self.run_ahead(i)?;
                if self.cpus[i].now.0 >= self.time_limit {
                    // The run's end (or its cycle budget): see above.
                    continue;
                }
            }
            // The run-ahead loop may have moved the clock.
            let cpu = &mut self.cpus[i];
            let now = cpu.now.0;
            let op = self.code_ops[cpu.frame.code as usize][cpu.frame.pc as usize];
            match op {
                Op::Call(_) | Op::EndIteration => {
                    // Every loop back-edge costs a cycle, so only calls and
                    // iteration ends can repeat without time passing: count
                    // them (the same ones on the fast and the plain path).
                    if cpu.now == cpu.still_at {
                        cpu.still_steps += 1;
                        if cpu.still_steps > self.config.max_steps_without_time {
                            return Err(self.stalled(Stall::ZeroTimeSteps, Cycle(now), &[i]));
                        }
                    } else {
                        cpu.still_at = cpu.now;
                        cpu.still_steps = 1;
                    }
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
                    let ordered = !self.private_only[i] || !cpu.store_buffer.is_empty();
                    if !ordered {
                        count_shortcut!(self.shortcut_entries, 1);
                    }
                    if ordered && self.must_yield(now, i) {
                        self.schedule(Cycle(now), EventKind::Resume, i);
                        return Ok(());
                    }
                    self.position = spin::Position {
                        access: Some((now, i)),
                        ..self.position
                    };
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
            if any_atomic_heads && matches!(op, Op::Call(_) | Op::EndIteration) {
                self.fused_atomic(i, probe)?;
            }
        }
    }

    /// Issues the atomic of an `AtomicHead` at CPU `i`'s position, when
    /// the plain run would reach and issue it from here without anything
    /// else happening first: what the push of the operand and `atomic`
    /// leave (the same access, clock, stack and position, the atomic's
    /// position while it waits), without the run-ahead call, the push and
    /// the pop between them. Otherwise (the run's end to look at, no stack
    /// room or no such local, a store buffer to drain, a turn to take)
    /// does nothing and answers false, leaving it all to the plain path.
    #[inline]
    fn fused_atomic(&mut self, i: usize, probe: &mut dyn Probe) -> Result<bool, SimError> {
        let cpu = &self.cpus[i];
        let pc = cpu.frame.pc as usize;
        let Some(&Some(head)) = self.atomic_heads[cpu.frame.code as usize].get(pc) else {
            return Ok(false);
        };
        // What the loop's top looks at first.
        if cpu.finished || cpu.wait != Wait::None {
            return Ok(false);
        }
        let now = cpu.now.0;
        // Pushing a local checks its slot (as `step` does); the store
        // buffer is drained first (`atomic`); a CPU that makes only
        // private accesses but has this one cannot exist, but its turn is
        // decided as in `run_cpu` all the same.
        let operand = match head.operand {
            Operand::Const(v) => Some(v),
            Operand::Local(slot) => cpu
                .locals
                .get(cpu.frame.locals_base as usize + slot as usize)
                .copied(),
            Operand::Private(_) => None,
        };
        let Some(operand) = operand else {
            return Ok(false);
        };
        if now >= self.time_limit
            || cpu.stack.len() >= MAX_STACK
            || !cpu.store_buffer.is_empty()
            || (!self.private_only[i] && self.must_yield(now, i))
        {
            return Ok(false);
        }
        // At the atomic, as `atomic` leaves it (its completion moves on).
        self.cpus[i].frame.pc += 1;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        self.position = spin::Position {
            access: Some((now, i)),
            ..self.position
        };
        let pending = PendingAccess {
            op: Some(head.op),
            address: head.target.address,
            size_bytes: head.target.size_bytes,
            field_id: head.target.field_id,
            bits: None,
            operand,
            expected: 0,
        };
        let hold = self.topology.spec.latency.locked_op_cycles;
        self.issue(i, pending, Need::Write, hold, probe)?;
        count_shortcut!(self.shortcut_entries, 5);
        Ok(true)
    }

    fn finish(&mut self, i: usize) {
        if !self.cpus[i].finished {
            self.cpus[i].finished = true;
            self.finished_cpus += 1;
        }
    }

    #[inline]
    fn read_value(&self, address: u64, size: u32) -> i64 {
        read_value(&self.bytes, address, size)
    }

    /// Writes a whole field, or only a bitfield's bits of its unit (read,
    /// changed and written in the same instant, so the neighbours' bits
    /// stay as they are).
    #[inline]
    fn write_field_merging_bits(
        &mut self,
        address: u64,
        size: u32,
        bits: Option<BitRange>,
        value: i64,
    ) {
        match bits {
            None => self.write_value(address, size, value),
            Some(b) => {
                let unit = self.read_value(address, size);
                self.write_value(address, size, b.insert(unit, value));
            }
        }
    }

    #[inline]
    fn write_value(&mut self, address: u64, size: u32, value: i64) {
        write_value(&mut self.bytes, address, size, value)
    }

    /// Runs CPU `i` ahead of the event queue as far as it can without
    /// `step`: the operations that touch only its registers, loop
    /// back-edges, and (when `sum_private_hits`) plain hits on its private
    /// places, summed for the probe instead of reported one by one. Stops
    /// at the first operation that needs anything else, leaving it for
    /// `step`, and wherever `step` would fail, so that `step` reports it;
    /// and at `time_limit`, where `run_cpu` looks at the run's end.
    ///
    /// `run_cpu` calls it before every operation it steps, so nothing is
    /// computed ahead that only the accesses need.
    ///
    /// A private hit takes its turn as `run_cpu` gives it (see there): the
    /// loop stops before one that `run_cpu` would make yield (its
    /// [`Turn`]). Nothing here schedules events, so the next event
    /// stays where it was when the loop began.
    #[inline]
    fn run_ahead(&mut self, i: usize) -> Result<(), SimError> {
        #[cfg(feature = "shortcut-counts")]
        let pc = self.cpus[i].frame.pc;
        // The code cannot change here: calls are left to `step`.
        let result = if self.fused_code[self.cpus[i].frame.code as usize].is_empty() {
            self.run_ahead_loop::<false>(i)
        } else {
            // Out of line, so that the contended paths' loop stays small.
            self.run_ahead_fused(i)
        };
        #[cfg(feature = "shortcut-counts")]
        if self.cpus[i].frame.pc != pc {
            self.shortcut_entries[0] += 1;
        }
        result
    }

    /// `run_ahead`'s loop; `FUSED` when the code has a fused table (a code
    /// without superinstructions keeps the plain dispatch: the contended
    /// paths run ahead one or two operations at a time, where the table's
    /// lookup would show).
    #[inline(always)]
    fn run_ahead_loop<const FUSED: bool>(&mut self, i: usize) -> Result<(), SimError> {
        let turn = self.turn(i);
        let Simulation {
            cpus,
            coherence,
            bytes,
            code_ops,
            fused_code,
            private_slot,
            private_slots,
            private_targets,
            private_hits,
            private_only,
            memory_ops,
            time_limit,
            sum_private_hits,
            store_buffer_entries,
            topology,
            shortcut_entries,
            ..
        } = self;
        let cpu = &mut cpus[i];
        let ops = code_ops[cpu.frame.code as usize];
        let fused = &fused_code[cpu.frame.code as usize];
        let mut accesses = 0;
        let result = loop {
            let pc = cpu.frame.pc as usize;
            let entry = if FUSED {
                fused.get(pc).copied()
            } else {
                ops.get(pc).map(|&op| Fused::Plain(op))
            };
            let Some(entry) = entry else {
                break Ok(());
            };
            if FUSED && !matches!(entry, Fused::Plain(_) | Fused::LoopBack { .. }) {
                count_shortcut!(shortcut_entries, 3);
            }
            // A superinstruction runs whole, or stops where its plain
            // operations would, or (when it cannot start as they would)
            // leaves its first plain operation to the match below.
            let op = match entry {
                Fused::Plain(op) => op,
                Fused::LoopBack { .. } => ops[pc],
                Fused::RepeatHead { counter, exit } => {
                    let index = cpu.frame.locals_base as usize + counter as usize;
                    // The plain head pushes two operands at most.
                    if index < cpu.locals.len() && cpu.stack.len() + 2 <= MAX_STACK {
                        let left = cpu.locals[index];
                        if left > 0 {
                            cpu.locals[index] = left - 1;
                            cpu.frame.pc += REPEAT_HEAD_OPS;
                        } else {
                            cpu.frame.pc = exit;
                        }
                        continue;
                    }
                    ops[pc]
                }
                Fused::Binary {
                    left,
                    right,
                    op: operator,
                    destination,
                } => {
                    let fused_binary = FusedBinary {
                        left,
                        right,
                        operator,
                        destination,
                    };
                    let run = RunAheadContext {
                        coherence,
                        bytes,
                        private_targets: &private_targets[i * *private_slots..],
                        private_hits: &mut private_hits[i * *private_slots..],
                        sum_private_hits: *sum_private_hits,
                        store_buffer_entries: *store_buffer_entries,
                        l1_hit_cycles: topology.spec.latency.l1_hit_cycles,
                        time_limit: *time_limit,
                        private_only: private_only[i],
                        turn,
                    };
                    match fused_binary.run(cpu, run, &mut accesses) {
                        FusedStep::Plain => ops[pc],
                        FusedStep::Continue => continue,
                        FusedStep::Stop(result) => break result,
                    }
                }
            };
            let stack = &mut cpu.stack;
            match op {
                Op::Push(v) => {
                    if stack.len() >= MAX_STACK {
                        break Ok(());
                    }
                    stack.push(v);
                }
                Op::Local(slot) => {
                    let Some(&v) = cpu
                        .locals
                        .get(cpu.frame.locals_base as usize + slot as usize)
                    else {
                        break Ok(());
                    };
                    if stack.len() >= MAX_STACK {
                        break Ok(());
                    }
                    stack.push(v);
                }
                Op::SetLocal(slot) => {
                    let index = cpu.frame.locals_base as usize + slot as usize;
                    if index >= cpu.locals.len() {
                        break Ok(());
                    }
                    let Some(v) = stack.pop() else { break Ok(()) };
                    cpu.locals[index] = v;
                }
                Op::Pop => {
                    if stack.pop().is_none() {
                        break Ok(());
                    }
                }
                Op::Binary(op) => {
                    let n = stack.len();
                    if n < 2 {
                        break Ok(());
                    }
                    let Some(r) = binary_value(op, stack[n - 2], stack[n - 1]) else {
                        break Ok(());
                    };
                    stack[n - 2] = r;
                    stack.truncate(n - 1);
                }
                Op::Jump(target) => {
                    cpu.frame.pc = target;
                    continue;
                }
                Op::JumpIfZero(target) | Op::JumpIfNonZero(target) => {
                    let Some(v) = stack.pop() else { break Ok(()) };
                    if (v == 0) == matches!(op, Op::JumpIfZero(_)) {
                        cpu.frame.pc = target;
                        continue;
                    }
                }
                Op::LoopBack(target) => {
                    cpu.now += 1;
                    cpu.frame.pc = target;
                    if cpu.now.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                Op::Load(place) if *sum_private_hits => {
                    let slot = private_slot[place as usize];
                    if slot == NOT_PRIVATE
                        || !cpu.store_buffer.is_empty()
                        || stack.len() >= MAX_STACK
                        || (!private_only[i] && turn.must_yield(cpu.now.0))
                    {
                        break Ok(());
                    }
                    // This CPU's slots start at `i * private_slots`.
                    let slot = i * *private_slots + slot as usize;
                    let target = private_targets[slot];
                    if target.unit == usize::MAX {
                        break Ok(());
                    }
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Read,
                        topology.spec.latency.l1_hit_cycles,
                        &mut private_hits[slot],
                        &mut accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    };
                    cpu.stack
                        .push(read_value(bytes, target.address, target.size_bytes));
                    cpu.frame.pc += 1;
                    if done.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                Op::Store(place) if *sum_private_hits => {
                    let slot = private_slot[place as usize];
                    // An empty store buffer writes straight into an owned line.
                    if slot == NOT_PRIVATE
                        || !cpu.store_buffer.is_empty()
                        || stack.is_empty()
                        || (!private_only[i] && turn.must_yield(cpu.now.0))
                    {
                        break Ok(());
                    }
                    let slot = i * *private_slots + slot as usize;
                    let target = private_targets[slot];
                    // Without store buffer entries every store waits (as
                    // `store` does).
                    if target.unit == usize::MAX || *store_buffer_entries == 0 {
                        break Ok(());
                    }
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Write,
                        topology.spec.latency.l1_hit_cycles,
                        &mut private_hits[slot],
                        &mut accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    };
                    let value = cpu.stack.pop().unwrap_or_default();
                    write_value(bytes, target.address, target.size_bytes, value);
                    cpu.frame.pc += 1;
                    if done.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                _ => break Ok(()),
            }
            cpu.frame.pc += 1;
        };
        count_accesses(memory_ops, cpu, accesses);
        result
    }

    /// `address_of` for an access: from `global_targets` when the place
    /// has one target for every CPU.
    #[inline]
    fn target_of(
        &self,
        i: usize,
        place_id: u32,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        match self.global_targets[place_id as usize] {
            Some(target) => Ok(target),
            None => self.address_of(i, place, above),
        }
    }

    /// Resolves a place to its address from the run-time indices on the
    /// stack, below `above` other operands, without popping them (an access
    /// that must wait is retried whole).
    #[inline]
    fn address_of(&self, i: usize, place: &PlaceRef, above: usize) -> Result<Target, SimError> {
        if !place.pointer && !place.has_element && !place.has_index && place.count > 0 {
            // The common case: the running CPU's (or node's, or the only)
            // element, no operands on the stack.
            let cpu_id = self.cpus[i].spec.cpu;
            let element = match place.kind {
                InstanceKind::Global => 0,
                InstanceKind::PerCpu => cpu_id as usize,
                InstanceKind::PerNode => self.topology.node_of(cpu_id) as usize,
            };
            let inst = &self.memory.instances[place.instance as usize];
            if let Some(&base) = inst.element_addresses.get(element) {
                return Ok(Target {
                    address: base + place.offset_bytes as u64,
                    size_bytes: place.size_bytes,
                    field_id: place.field_id,
                });
            }
        }
        self.address_of_slow(i, place, above)
    }

    #[inline(never)]
    fn address_of_slow(
        &self,
        i: usize,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        if place.pointer {
            let stack = &self.cpus[i].stack;
            let Some(&pointer) = stack
                .len()
                .checked_sub(above + 1)
                .and_then(|k| stack.get(k))
            else {
                return Err(self.script_error(i, "internal: operand stack empty".into()));
            };
            return decode_pointer(pointer, self.memory.total_bytes).ok_or_else(|| {
                self.script_error(
                    i,
                    format!("`*` of {pointer}, which is not a pointer made by `&inst.field`"),
                )
            });
        }
        let stack = &self.cpus[i].stack;
        let operands = place.has_element as usize + place.has_index as usize;
        if stack.len() < above + operands {
            return Err(self.script_error(i, "internal: operand stack empty".into()));
        }
        let top = stack.len() - above;
        let index = if place.has_index { stack[top - 1] } else { 0 };
        let cpu_id = self.cpus[i].spec.cpu;
        let element = if place.has_element {
            stack[top - operands]
        } else {
            match place.kind {
                InstanceKind::Global => 0,
                InstanceKind::PerCpu => cpu_id as i64,
                InstanceKind::PerNode => self.topology.node_of(cpu_id) as i64,
            }
        };
        let inst = &self.memory.instances[place.instance as usize];
        if element < 0 || element as usize >= inst.element_addresses.len() {
            let what = match place.kind {
                InstanceKind::Global => "element",
                InstanceKind::PerCpu => "CPU",
                InstanceKind::PerNode => "node",
            };
            return Err(self.script_error(
                i,
                format!(
                    "{what} {element} out of range for `{}`: valid 0..={}",
                    inst.name,
                    inst.element_addresses.len() - 1
                ),
            ));
        }
        if index < 0 || index >= place.count as i64 {
            return Err(self.script_error(
                i,
                format!(
                    "index {index} out of range for field `{}` of {} elements",
                    place.text, place.count
                ),
            ));
        }
        Ok(Target {
            address: inst.element_addresses[element as usize]
                + place.offset_bytes as u64
                + index as u64 * place.stride_bytes as u64,
            size_bytes: place.size_bytes,
            field_id: place.field_id,
        })
    }

    /// Removes a place's run-time operands (indices, or the pointer) from the stack.
    fn drop_indices(&mut self, i: usize, place: &PlaceRef) {
        let operands =
            place.pointer as usize + place.has_element as usize + place.has_index as usize;
        let stack = &mut self.cpus[i].stack;
        let keep = stack.len().saturating_sub(operands);
        stack.truncate(keep);
    }

    #[inline]
    fn pop(&mut self, i: usize) -> Result<i64, SimError> {
        match self.cpus[i].stack.pop() {
            Some(v) => Ok(v),
            None => Err(self.script_error(i, "internal: operand stack empty".into())),
        }
    }

    #[inline]
    fn push(&mut self, i: usize, value: i64) -> Result<(), SimError> {
        let stack = &mut self.cpus[i].stack;
        if stack.len() >= MAX_STACK {
            return Err(self.script_error(i, "operand stack overflow".into()));
        }
        stack.push(value);
        Ok(())
    }

    fn block_on(&mut self, i: usize, wait: Wait) {
        let cpu = &mut self.cpus[i];
        cpu.wait = wait;
        cpu.wait_since = cpu.now;
    }

    fn start_drain(&mut self, i: usize, at: Cycle, probe: &mut dyn Probe) -> Result<(), SimError> {
        let Some(entry) = self.cpus[i].store_buffer.front().copied() else {
            return Ok(());
        };
        let cpu_id = self.cpus[i].spec.cpu;
        self.cpus[i].draining = true;
        self.poll_line_reached(entry.unit, probe);
        let misses = self.demand_misses(cpu_id, entry.unit, Need::Write);
        let requested = self.coherence.request(
            self.topology,
            at,
            cpu_id,
            entry.unit,
            Need::Write,
            0,
            request_tag(i, true),
        )?;
        match requested {
            Requested::Done(report) => {
                self.finish_drain(i, &report, probe);
                self.coherence.recycle(report);
            }
            Requested::Queued {
                free_at,
                first_waiter,
            } => {
                if first_waiter {
                    self.schedule(free_at, EventKind::LineFree, entry.unit);
                }
            }
        }
        if misses {
            self.prefetch_buddy(i, entry.unit, at, entry.field_id, probe)?;
        }
        Ok(())
    }

    /// Whether an access by `cpu` to `unit` is a demand miss that the
    /// adjacent-line prefetcher follows: the prefetcher is on and the core's
    /// cache cannot answer it, a load on a line it holds no copy of, or a
    /// write (RFO) on a line it does not hold writable: an RFO for a Shared
    /// copy misses too, since the request for ownership leaves the core.
    #[inline]
    fn demand_misses(&self, cpu: u32, unit: usize, need: Need) -> bool {
        if !self.prefetch_buddies {
            return false;
        }
        let state = self.coherence.state(self.topology.core_of(cpu), unit);
        match need {
            Need::Read => state == LineState::Invalid,
            Need::Write => !matches!(state, LineState::Modified | LineState::Exclusive),
        }
    }

    /// The adjacent-line (L2 spatial) prefetcher: CPU `i`'s demand miss on
    /// `unit` at `at` also reads the buddy line, `unit ^ 1`, the other half
    /// of its 128-byte-aligned pair, for the same core. The CPU does not wait
    /// for it. It is dropped when the core already holds the buddy or has a
    /// request waiting for it; otherwise it is a read ordered at the buddy's
    /// home like any other (it downgrades an owner, and queues behind and
    /// ahead of others), reported to the probe as a prefetch attributed to
    /// `field_id`, the field whose miss issued it.
    fn prefetch_buddy(
        &mut self,
        i: usize,
        unit: usize,
        at: Cycle,
        field_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let buddy = unit ^ 1;
        if buddy >= self.coherence.unit_count() {
            return Ok(());
        }
        self.poll_line_reached(buddy, probe);
        let cpu_id = self.cpus[i].spec.cpu;
        match self
            .coherence
            .prefetch(self.topology, at, cpu_id, buddy, request_tag(i, false))?
        {
            None => {}
            Some(Requested::Done(report)) => {
                self.report_prefetch(i, field_id, &report, probe);
                self.coherence.recycle(report);
            }
            Some(Requested::Queued {
                free_at,
                first_waiter,
            }) => {
                self.queued_prefetches.push((buddy, i, field_id));
                if first_waiter {
                    self.schedule(free_at, EventKind::LineFree, buddy);
                }
            }
        }
        Ok(())
    }

    fn report_prefetch(
        &mut self,
        i: usize,
        field_id: u32,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) {
        let line_bytes = self.memory.unit_bytes;
        probe.on_access(&AccessEvent {
            cpu: self.cpus[i].spec.cpu,
            issued: report.issued,
            latency_cycles: report.latency_cycles(),
            kind: AccessKind::Prefetch,
            address: report.unit as u64 * line_bytes as u64,
            size_bytes: line_bytes,
            field_id,
            value: 0,
            new_value: None,
            report: Some(report),
            stall_cycles: 0,
        });
    }

    fn finish_drain(&mut self, i: usize, report: &AccessReport, probe: &mut dyn Probe) {
        let Some(entry) = self.cpus[i].store_buffer.front().copied() else {
            return;
        };
        // The store takes its place in coherence order when the home orders it.
        self.write_field_merging_bits(entry.address, entry.size_bytes, entry.bits, entry.value);
        probe.on_access(&AccessEvent {
            cpu: self.cpus[i].spec.cpu,
            issued: report.issued,
            latency_cycles: report.latency_cycles(),
            kind: AccessKind::StoreDrain,
            address: entry.address,
            size_bytes: entry.size_bytes,
            field_id: entry.field_id,
            value: entry.value,
            new_value: None,
            report: Some(report),
            stall_cycles: 0,
        });
        self.schedule(report.done, EventKind::DrainDone, i);
    }

    /// A line's transaction has ended: serve the next waiting request.
    ///
    /// Returns the served CPU's resume, when it is due before every queued
    /// event (the winner of a contended line, usually): the caller takes it
    /// as the next event without queueing it. The order is the queue's:
    /// queued at that point, the resume would have come after every event
    /// already queued at its cycle and before the line's next free.
    fn line_free(
        &mut self,
        unit: usize,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<Option<(Cycle, usize)>, SimError> {
        self.poll_line_reached(unit, probe);
        let (arbitration, zone) = (&mut self.arbitration, &mut self.arbitration_zone);
        let mut pick = |n: usize| {
            let bound = n as u64;
            if zone.0 != bound {
                *zone = (bound, acceptance_zone(bound));
            }
            uniform_below_in_zone(arbitration, bound, zone.1) as usize
        };
        // Matched in place: `?` would copy the report (about 150 bytes
        // with the waiter) out of the result first.
        let mut resume = None;
        match self
            .coherence
            .serve_next(self.topology, at, unit, &mut pick)
        {
            Err(error) => return Err(error),
            Ok(None) => {}
            Ok(Some((waiter, report))) => {
                let i = ((waiter.tag & !PREFETCH_TAG) >> 1) as usize;
                if waiter.tag & PREFETCH_TAG != 0 {
                    let queued = self
                        .queued_prefetches
                        .iter()
                        .position(|&(line, cpu, _)| line == unit && cpu == i);
                    if let Some(k) = queued {
                        let (_, _, field_id) = self.queued_prefetches.swap_remove(k);
                        self.report_prefetch(i, field_id, &report, probe);
                    }
                } else if waiter.tag & 1 == 1 {
                    self.finish_drain(i, &report, probe);
                } else if let Some(now) = self.finish_pending(i, &report, probe)? {
                    resume = Some((now, i));
                }
                self.coherence.recycle(report);
            }
        }
        let line_free_at = (self.coherence.waiting_count(unit) > 0)
            .then(|| self.coherence.busy_until(unit).max(at));
        // The resume goes first when its key is before every other event's,
        // the line's next free (about to be queued) included.
        let direct = resume.filter(|&(now, i)| {
            if !self.options.direct_resume {
                return false;
            }
            // Keys are computed only for an event at the resume's own cycle.
            let own = || event_key(self.tie_seed, EventKind::Resume, now.0, i);
            let next = self.queue.next();
            (now.0 < next.cycle || (now.0 == next.cycle && own() < next.key))
                && line_free_at.is_none_or(|free| {
                    now < free
                        || (now == free
                            && own() < event_key(self.tie_seed, EventKind::LineFree, free.0, unit))
                })
        });
        if direct.is_some() {
            count_shortcut!(self.shortcut_entries, 6);
        }
        if direct.is_none() {
            if let Some((now, i)) = resume {
                self.schedule(now, EventKind::Resume, i);
            }
        }
        if let Some(free) = line_free_at {
            self.schedule(free, EventKind::LineFree, unit);
        }
        Ok(direct)
    }

    /// Completes a queued load or atomic; returns when its CPU goes on (the
    /// caller schedules its resume).
    fn finish_pending(
        &mut self,
        i: usize,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) -> Result<Option<Cycle>, SimError> {
        let Some(p) = self.cpus[i].pending.take() else {
            return Ok(None);
        };
        self.cpus[i].wait = Wait::None;
        self.complete_access(i, &p, report, probe)?;
        Ok(Some(self.cpus[i].now))
    }

    /// The value part of a load or atomic, once the line is there.
    fn complete_access(
        &mut self,
        i: usize,
        p: &PendingAccess,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let old = self.read_value(p.address, p.size_bytes);
        let old = p.bits.map_or(old, |b| b.extract(old));
        let (kind, written) = match p.op {
            None => (AccessKind::Load, None),
            Some(op) => {
                let new = match op {
                    AtomicOp::FetchAdd => Some(old.wrapping_add(p.operand)),
                    AtomicOp::FetchSub => Some(old.wrapping_sub(p.operand)),
                    AtomicOp::FetchOr => Some(old | p.operand),
                    AtomicOp::FetchAnd => Some(old & p.operand),
                    AtomicOp::Xchg => Some(p.operand),
                    AtomicOp::CmpXchg => (old == p.expected).then_some(p.operand),
                };
                if let Some(n) = new {
                    self.write_value(p.address, p.size_bytes, n);
                }
                (
                    AccessKind::Atomic(op),
                    new.map(|_| self.read_value(p.address, p.size_bytes)),
                )
            }
        };
        let l1 = self.topology.spec.latency.l1_hit_cycles;
        let cpu = &mut self.cpus[i];
        cpu.now = cpu.now.max(report.done);
        if p.op.is_some() {
            cpu.now += self.topology.spec.latency.locked_op_cycles;
        }
        probe.on_access(&AccessEvent {
            cpu: cpu.spec.cpu,
            issued: report.issued,
            latency_cycles: report.latency_cycles(),
            kind,
            address: p.address,
            size_bytes: p.size_bytes,
            field_id: p.field_id,
            value: old,
            new_value: written,
            report: Some(report),
            // Cycles beyond an L1 hit that the CPU waited for the line.
            stall_cycles: (report.done - report.issued).saturating_sub(l1),
        });
        self.push(i, old)?;
        self.advance_pc(i);
        Ok(())
    }

    fn drain_done(&mut self, i: usize, at: Cycle, probe: &mut dyn Probe) -> Result<(), SimError> {
        let cpu = &mut self.cpus[i];
        let drained = cpu.store_buffer.pop_front();
        cpu.draining = false;
        let resume = match cpu.wait {
            Wait::BufferEmpty => cpu.store_buffer.is_empty(),
            Wait::BufferSlot => true,
            Wait::None | Wait::Line | Wait::Spin => false,
        };
        if !cpu.store_buffer.is_empty() {
            self.start_drain(i, at, probe)?;
        }
        if resume {
            let cpu = &mut self.cpus[i];
            let since = cpu.wait_since;
            cpu.wait = Wait::None;
            cpu.now = cpu.now.max(at);
            if let Some(entry) = drained {
                probe.on_store_buffer_wait(
                    cpu.spec.cpu,
                    since,
                    cpu.now,
                    entry.address,
                    entry.field_id,
                );
            }
            if !cpu.finished {
                self.run_cpu(i, probe)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn advance_pc(&mut self, i: usize) {
        self.cpus[i].frame.pc += 1;
    }

    #[inline]
    fn jump(&mut self, i: usize, target: u32) {
        self.cpus[i].frame.pc = target;
    }

    /// Executes one operation of CPU `i`.
    #[inline(always)]
    fn step(&mut self, i: usize, op: Op, probe: &mut dyn Probe) -> Result<(), SimError> {
        match op {
            Op::Push(v) => {
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::Local(slot) => {
                let cpu = &self.cpus[i];
                let base = cpu.frame.locals_base as usize;
                let v = cpu.locals[base + slot as usize];
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::SetLocal(slot) => {
                let v = self.pop(i)?;
                let cpu = &mut self.cpus[i];
                let base = cpu.frame.locals_base as usize;
                cpu.locals[base + slot as usize] = v;
                self.advance_pc(i);
            }
            Op::Pop => {
                self.pop(i)?;
                self.advance_pc(i);
            }
            Op::Unary(op) => {
                let v = self.pop(i)?;
                let r = match op {
                    UnaryOp::Neg => v.wrapping_neg(),
                    UnaryOp::Not => (v == 0) as i64,
                    UnaryOp::BitNot => !v,
                };
                self.push(i, r)?;
                self.advance_pc(i);
            }
            Op::Binary(op) => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                let r = eval_binary(op, a, b).map_err(|message| self.script_error(i, message))?;
                self.push(i, r)?;
                self.advance_pc(i);
            }
            Op::Jump(target) => self.jump(i, target),
            Op::LoopBack(target) => {
                self.cpus[i].now += 1;
                self.jump(i, target);
            }
            Op::JumpIfZero(target) => {
                if self.pop(i)? == 0 {
                    self.jump(i, target);
                } else {
                    self.advance_pc(i);
                }
            }
            Op::JumpIfNonZero(target) => {
                if self.pop(i)? != 0 {
                    self.jump(i, target);
                } else {
                    self.advance_pc(i);
                }
            }
            Op::Load(place_id) => self.load(i, place_id, probe)?,
            Op::AddressOf(place_id) => {
                let place = &self.program.places[place_id as usize];
                let target = self.address_of(i, place, 0)?;
                self.drop_indices(i, place);
                self.push(i, encode_pointer(target))?;
                self.advance_pc(i);
            }
            Op::Store(place_id) => self.store(i, place_id, probe)?,
            Op::Atomic(op, place_id) => self.atomic(i, op, place_id, probe)?,
            Op::Work => {
                let cycles = self.pop(i)?;
                if cycles < 0 {
                    return Err(
                        self.script_error(i, format!("`work {cycles}`: cycles must be >= 0"))
                    );
                }
                self.cpus[i].now += cycles as u64;
                self.advance_pc(i);
            }
            Op::Fence => {
                if self.cpus[i].store_buffer.is_empty() {
                    self.advance_pc(i);
                } else {
                    self.block_on(i, Wait::BufferEmpty);
                }
            }
            Op::Assert(index) => {
                let v = self.pop(i)?;
                if v == 0 {
                    let (origin, pos) = self.program.positions[index as usize];
                    let cpu = &self.cpus[i];
                    return Err(SimError::Script {
                        cpu: cpu.spec.cpu,
                        cycle: cpu.now,
                        origin: self.program.origins[origin as usize].clone(),
                        pos,
                        message: "assertion failed".into(),
                    });
                }
                self.advance_pc(i);
            }
            Op::Call(proc_index) => {
                if self.cpus[i].callers.len() + 1 >= MAX_CALL_DEPTH {
                    return Err(self.script_error(
                        i,
                        format!("calls nested deeper than {MAX_CALL_DEPTH} (unbounded recursion?)"),
                    ));
                }
                let code = &self.program.procedures[proc_index as usize];
                let params = code.param_count as usize;
                let locals = code.local_count as usize;
                self.advance_pc(i);
                let cpu = &mut self.cpus[i];
                let base = cpu.locals.len();
                cpu.locals.resize(base + locals, 0);
                for p in (0..params).rev() {
                    let v = cpu.stack.pop().unwrap_or(0);
                    cpu.locals[base + p] = v;
                }
                let callee = Frame {
                    code: (self.program.scripts.len() + proc_index as usize) as u32,
                    pc: 0,
                    locals_base: base as u32,
                };
                let caller = std::mem::replace(&mut cpu.frame, callee);
                cpu.callers.push(caller);
            }
            Op::Return => {
                let v = self.pop(i)?;
                let cpu = &mut self.cpus[i];
                cpu.locals.truncate(cpu.frame.locals_base as usize);
                if let Some(caller) = cpu.callers.pop() {
                    cpu.frame = caller;
                }
                self.push(i, v)?;
            }
            Op::Builtin(b) => {
                let v = self.builtin(i, b)?;
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::EndIteration => self.end_iteration(i, probe),
        }
        Ok(())
    }

    fn builtin(&mut self, i: usize, builtin: Builtin) -> Result<i64, SimError> {
        let cpu_id = self.cpus[i].spec.cpu;
        Ok(match builtin {
            Builtin::Cpu => cpu_id as i64,
            Builtin::Core => self.topology.core_of(cpu_id) as i64,
            Builtin::Node => self.topology.node_of(cpu_id) as i64,
            Builtin::Socket => self.topology.socket_of(cpu_id) as i64,
            Builtin::Tid => self.cpus[i].spec.tid as i64,
            Builtin::Nthreads => self.cpus[i].spec.group_size as i64,
            Builtin::Ncpus => self.topology.cpu_count() as i64,
            Builtin::Nnodes => self.topology.node_count() as i64,
            Builtin::Iteration => self.cpus[i].iteration as i64,
            Builtin::Now => self.cpus[i].now.0 as i64,
            Builtin::Random => {
                let n = self.pop(i)?;
                if n <= 0 {
                    return Err(
                        self.script_error(i, format!("random({n}): the bound must be >= 1"))
                    );
                }
                uniform_below(&mut self.cpus[i].rng, n as u64) as i64
            }
            Builtin::Min => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                a.min(b)
            }
            Builtin::Max => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                a.max(b)
            }
            Builtin::Abs => self.pop(i)?.wrapping_abs(),
            Builtin::Part => {
                let size = self.pop(i)?;
                let offset = self.pop(i)?;
                let pointer = self.pop(i)?;
                let Some(whole) = decode_pointer(pointer, self.memory.total_bytes) else {
                    return Err(self.script_error(
                        i,
                        format!(
                            "`part` of {pointer}, which is not a pointer made by `&inst.field`"
                        ),
                    ));
                };
                if offset < 0 || size < 1 || offset + size > whole.size_bytes as i64 {
                    return Err(self.script_error(
                        i,
                        format!(
                            "part(p, {offset}, {size}): the part must lie inside the {} bytes `p` points to",
                            whole.size_bytes
                        ),
                    ));
                }
                encode_pointer(Target {
                    address: whole.address + offset as u64,
                    size_bytes: size as u32,
                    field_id: whole.field_id,
                })
            }
        })
    }

    fn end_iteration(&mut self, i: usize, probe: &mut dyn Probe) {
        if self.sum_private_hits && self.private_slots > 0 {
            // Before `on_iteration`, which may start the measured window.
            self.report_private_hits(i, probe);
        }
        let warmup = self.config.warmup_iterations;
        let cpu = &mut self.cpus[i];
        let measured = cpu.iteration >= warmup;
        probe.on_iteration(
            cpu.spec.cpu,
            cpu.iteration,
            cpu.iteration_start,
            cpu.now,
            measured,
        );
        cpu.iteration += 1;
        if cpu.iteration == warmup {
            self.measure_start = self.measure_start.max(cpu.now.0);
        }
        if let StopRule::Iterations(n) = self.config.stop {
            if cpu.iteration >= warmup.saturating_add(n) {
                cpu.callers.clear();
                self.finish(i);
                return;
            }
        }
        cpu.iteration_start = cpu.now;
        start_iteration(cpu, self.program);
    }

    fn load(&mut self, i: usize, place_id: u32, probe: &mut dyn Probe) -> Result<(), SimError> {
        self.poll_load_starts(i, place_id);
        let place = &self.program.places[place_id as usize];
        let target = self.target_of(i, place_id, place, 0)?;
        let (address, size, field_id) = (target.address, target.size_bytes, target.field_id);
        let bits = place.bits;
        // Store-to-load forwarding: the newest buffered store to the same
        // bytes (the same bits of a bitfield's unit) answers; a partial
        // overlap waits for the buffer to drain.
        let mut forwarded = None;
        for entry in self.cpus[i].store_buffer.iter().rev() {
            let overlaps = entry.address < address + size as u64
                && address < entry.address + entry.size_bytes as u64;
            if overlaps {
                if entry.address == address && entry.size_bytes == size && entry.bits == bits {
                    // The buffer holds what the field will hold: its width.
                    forwarded = Some(sign_extend(entry.value, size));
                } else {
                    // Retried whole once the buffer has drained.
                    self.block_on(i, Wait::BufferEmpty);
                    return Ok(());
                }
                break;
            }
        }
        self.drop_indices(i, place);
        let cpu_id = self.cpus[i].spec.cpu;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        if let Some(value) = forwarded {
            let cpu = &mut self.cpus[i];
            let issued = cpu.now;
            let l1 = self.topology.spec.latency.l1_hit_cycles;
            cpu.now += l1;
            probe.on_access(&AccessEvent {
                cpu: cpu_id,
                issued,
                latency_cycles: l1,
                kind: AccessKind::LoadForwarded,
                address,
                size_bytes: size,
                field_id,
                value,
                new_value: None,
                report: None,
                stall_cycles: 0,
            });
            self.push(i, value)?;
            self.advance_pc(i);
            return Ok(());
        }
        let pending = PendingAccess {
            op: None,
            address,
            size_bytes: size,
            field_id,
            bits,
            operand: 0,
            expected: 0,
        };
        self.issue(i, pending, Need::Read, 0, probe)
    }

    /// Sends a load or atomic to the line: completes it now, or parks the
    /// CPU until the line's home serves it.
    fn issue(
        &mut self,
        i: usize,
        pending: PendingAccess,
        need: Need,
        hold: u64,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let unit = self.memory.unit_of(pending.address);
        let cpu_id = self.cpus[i].spec.cpu;
        let now = self.cpus[i].now;
        // A hit first, straight from the cache (what `request` tries first
        // too; a failed try changes nothing), without the queueing result.
        if let Some(report) = self
            .coherence
            .try_hit(self.topology, now, cpu_id, unit, need, hold)
        {
            if self.coherence.check_invariants {
                self.coherence.check_unit(unit, report.done)?;
            }
            if need == Need::Write {
                self.poll_line_reached(unit, probe);
            }
            self.complete_access(i, &pending, &report, probe)?;
            if pending.op.is_none() {
                let value = self.cpus[i].stack.last().copied().unwrap_or_default();
                let latency = report.done - report.issued;
                self.poll_load_hit(i, &pending, report.issued, value, latency);
            }
            return Ok(());
        }
        self.poll_line_reached(unit, probe);
        let misses = self.demand_misses(cpu_id, unit, need);
        match self.coherence.request_after_miss(
            self.topology,
            now,
            cpu_id,
            unit,
            need,
            hold,
            request_tag(i, false),
        ) {
            // Matched in place, as in `line_free`.
            Err(error) => return Err(error),
            Ok(Requested::Done(report)) => {
                let completed = self.complete_access(i, &pending, &report, probe);
                self.coherence.recycle(report);
                completed?;
            }
            Ok(Requested::Queued {
                free_at,
                first_waiter,
            }) => {
                if first_waiter {
                    self.schedule(free_at, EventKind::LineFree, unit);
                }
                self.cpus[i].pending = Some(pending);
                self.block_on(i, Wait::Line);
            }
        }
        if misses {
            self.prefetch_buddy(i, unit, now, pending.field_id, probe)?;
        }
        Ok(())
    }

    fn store(&mut self, i: usize, place_id: u32, probe: &mut dyn Probe) -> Result<(), SimError> {
        let place = &self.program.places[place_id as usize];
        if self.cpus[i].store_buffer.len() >= self.store_buffer_entries {
            // Full: retried whole once a drain frees an entry.
            self.block_on(i, Wait::BufferSlot);
            return Ok(());
        }
        let target = self.target_of(i, place_id, place, 1)?;
        let bits = place.bits;
        let value = self.pop(i)?;
        // A bitfield holds the low bits of what is stored.
        let value = bits.map_or(value, |b| b.truncate(value));
        self.drop_indices(i, place);
        let (address, size, field_id) = (target.address, target.size_bytes, target.field_id);
        let unit = self.memory.unit_of(address);
        let cpu_id = self.cpus[i].spec.cpu;
        let now = self.cpus[i].now;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        if self.cpus[i].store_buffer.is_empty() {
            // An empty buffer drains at once into a line the core owns.
            if let Some(report) =
                self.coherence
                    .try_hit(self.topology, now, cpu_id, unit, Need::Write, 0)
            {
                self.poll_line_reached(unit, probe);
                if self.coherence.check_invariants {
                    self.coherence.check_unit(unit, report.done)?;
                }
                self.write_field_merging_bits(address, size, bits, value);
                let cpu = &mut self.cpus[i];
                cpu.now = report.done;
                probe.on_access(&AccessEvent {
                    cpu: cpu_id,
                    issued: report.issued,
                    latency_cycles: report.latency_cycles(),
                    kind: AccessKind::Store,
                    address,
                    size_bytes: size,
                    field_id,
                    value,
                    new_value: None,
                    report: Some(&report),
                    stall_cycles: 0,
                });
                self.advance_pc(i);
                return Ok(());
            }
        }
        let cpu = &mut self.cpus[i];
        cpu.store_buffer.push_back(BufferedStore {
            address,
            size_bytes: size,
            value,
            bits,
            unit,
            field_id,
        });
        probe.on_store_posted(cpu_id, now, address, field_id, value);
        // Posting a store takes one cycle of the core.
        cpu.now += 1;
        let start_now = !cpu.draining;
        self.advance_pc(i);
        if start_now {
            self.start_drain(i, now, probe)?;
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        i: usize,
        op: AtomicOp,
        place_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        if !self.cpus[i].store_buffer.is_empty() {
            // A locked instruction drains the store buffer first.
            self.block_on(i, Wait::BufferEmpty);
            return Ok(());
        }
        let place = &self.program.places[place_id as usize];
        let (operand, expected) = if op == AtomicOp::CmpXchg {
            let new = self.pop(i)?;
            let expected = self.pop(i)?;
            (new, expected)
        } else {
            (self.pop(i)?, 0)
        };
        // A place with one target for every CPU has no operands to drop.
        let target = match self.global_targets[place_id as usize] {
            Some(target) => target,
            None => {
                let target = self.address_of(i, place, 0)?;
                self.drop_indices(i, place);
                target
            }
        };
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        let pending = PendingAccess {
            op: Some(op),
            address: target.address,
            size_bytes: target.size_bytes,
            field_id: target.field_id,
            bits: None,
            operand,
            expected,
        };
        let hold = self.topology.spec.latency.locked_op_cycles;
        self.issue(i, pending, Need::Write, hold, probe)
    }
}

fn start_iteration(cpu: &mut Cpu, program: &Program) {
    let code = &program.scripts[cpu.spec.script as usize];
    cpu.stack.clear();
    cpu.callers.clear();
    cpu.locals.clear();
    // Most scripts have no locals: skip the call.
    if code.local_count > 0 {
        cpu.locals.resize(code.local_count as usize, 0);
    }
    cpu.frame = Frame {
        code: cpu.spec.script,
        pc: 0,
        locals_base: 0,
    };
}

/// Where an access lands: the bytes and the field they belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    address: u64,
    size_bytes: u32,
    field_id: u32,
}

// A pointer is an integer that carries its target: the address in bits
// 0-39, the size (at most 8 bytes are read or written) in bits 40-43, and
// the field's identity, for attribution, in bits 44-62. Zero is never a
// pointer, since every field has a size.
const POINTER_ADDRESS_BITS: u32 = 40;
const POINTER_SIZE_BITS: u32 = 4;

fn encode_pointer(t: Target) -> i64 {
    let size = t.size_bytes.min(8) as u64;
    ((t.field_id as u64) << (POINTER_ADDRESS_BITS + POINTER_SIZE_BITS)
        | size << POINTER_ADDRESS_BITS
        | t.address) as i64
}

fn decode_pointer(pointer: i64, total_bytes: u64) -> Option<Target> {
    if pointer <= 0 {
        return None;
    }
    let v = pointer as u64;
    let address = v & ((1 << POINTER_ADDRESS_BITS) - 1);
    let size = (v >> POINTER_ADDRESS_BITS) & ((1 << POINTER_SIZE_BITS) - 1);
    let field_id = v >> (POINTER_ADDRESS_BITS + POINTER_SIZE_BITS);
    if size == 0 || address + size > total_bytes || field_id > u32::MAX as u64 {
        return None;
    }
    Some(Target {
        address,
        size_bytes: size as u32,
        field_id: field_id as u32,
    })
}

/// The value of `a op b`, or why there is none.
#[inline]
fn eval_binary(op: BinaryOp, a: i64, b: i64) -> Result<i64, String> {
    binary_value(op, a, b).ok_or_else(|| match op {
        BinaryOp::Shl | BinaryOp::Shr => format!("shift by {b} is out of range 0..=63"),
        _ => "division by zero".into(),
    })
}

/// The value of `a op b`; `None` for a division by zero or a shift out of
/// range (`eval_binary` says which). Small enough to inline into the
/// run-ahead loop, which leaves the failing cases to `step`.
#[inline(always)]
fn binary_value(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div | BinaryOp::Rem => {
            if b == 0 {
                return None;
            }
            if op == BinaryOp::Div {
                a.wrapping_div(b)
            } else {
                a.wrapping_rem(b)
            }
        }
        BinaryOp::BitAnd => a & b,
        BinaryOp::BitOr => a | b,
        BinaryOp::BitXor => a ^ b,
        BinaryOp::Shl | BinaryOp::Shr => {
            if !(0..64).contains(&b) {
                return None;
            }
            if op == BinaryOp::Shl {
                a.wrapping_shl(b as u32)
            } else {
                a.wrapping_shr(b as u32)
            }
        }
        BinaryOp::Eq => (a == b) as i64,
        BinaryOp::Ne => (a != b) as i64,
        BinaryOp::Lt => (a < b) as i64,
        BinaryOp::Le => (a <= b) as i64,
        BinaryOp::Gt => (a > b) as i64,
        BinaryOp::Ge => (a >= b) as i64,
        BinaryOp::And => (a != 0 && b != 0) as i64,
        BinaryOp::Or => (a != 0 || b != 0) as i64,
    })
}

/// The value of the field of `size` bytes at `address`.
#[inline]
fn read_value(bytes: &[u8], address: u64, size: u32) -> i64 {
    let start = address as usize;
    // The common widths as fixed-size copies (no call to memcpy).
    match size {
        8.. => i64::from_le_bytes(bytes[start..start + 8].try_into().unwrap()),
        4 => i32::from_le_bytes(bytes[start..start + 4].try_into().unwrap()) as i64,
        _ => {
            let n = size as usize;
            let mut raw = [0u8; 8];
            raw[..n].copy_from_slice(&bytes[start..start + n]);
            sign_extend(i64::from_le_bytes(raw), size)
        }
    }
}

/// Writes `value` into the field of `size` bytes at `address` (its low bytes).
#[inline]
fn write_value(bytes: &mut [u8], address: u64, size: u32, value: i64) {
    let start = address as usize;
    match size {
        8.. => bytes[start..start + 8].copy_from_slice(&value.to_le_bytes()),
        4 => bytes[start..start + 4].copy_from_slice(&(value as i32).to_le_bytes()),
        _ => {
            let n = size as usize;
            bytes[start..start + n].copy_from_slice(&value.to_le_bytes()[..n]);
        }
    }
}

/// The value a field of `size` bytes holds for `value`: its low bytes,
/// sign-extended, since fields hold signed integers.
fn sign_extend(value: i64, size: u32) -> i64 {
    match size.min(8) {
        0 => 0,
        n => {
            let shift = 64 - 8 * n;
            (value << shift) >> shift
        }
    }
}

/// A uniform draw in 0..bound without modulo bias (rejection sampling).
fn uniform_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    uniform_below_in_zone(rng, bound, acceptance_zone(bound))
}

/// The draws `uniform_below` accepts for `bound` are those below this.
fn acceptance_zone(bound: u64) -> u64 {
    u64::MAX - (u64::MAX % bound)
}

/// `uniform_below` with the bound's acceptance zone computed beforehand.
#[inline]
fn uniform_below_in_zone(rng: &mut ChaCha8Rng, bound: u64, zone: u64) -> u64 {
    loop {
        let v = rng.next_u64();
        if v < zone {
            return v % bound;
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
                    cpu: n,
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
            seed: 1,
            check_invariants: true,
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
        assert_eq!(cpus[0].cpu, 1);
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
                cycle: Cycle(0),
                cpus,
            }) => {
                assert_eq!(cpus.len(), 1);
                assert_eq!((cpus[0].cpu, cpus[0].waiting_for.as_ref()), (0, None));
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
        for bits in 0..512 {
            assert_eq!(EngineOptions::from_bits(bits).bits(), bits);
        }
        assert_eq!(EngineOptions::ALL.bits(), 0x1ff);
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
            first(cpu_stream(1, 0)),
            first(cpu_stream(1, 7)),
            first(cpu_stream(0xdead_beef, 0)),
            first(arbitration_stream(1)),
            {
                let mut rng = cpu_stream(1, 3);
                (0..12)
                    .map(|_| uniform_below(&mut rng, 10))
                    .collect::<Vec<u64>>()
            }
        );
        assert_eq!(shown, PINNED_STREAMS);
    }

    const PINNED_STREAMS: &str = "\
[67094cea8ca40db1, 149406d8fc0e8e6b, 98b82b0336070665]
[770a80dc330a4d75, be5c2ea131152c40, df30e6e740f337b3]
[ff01307f43ec8df9, 946b5cc52dc1b3db, 17ff25ec6284944]
[5f1c94c2e7d13664, ee810777abac1618, d39ab10191f2297d]
[9, 4, 3, 5, 3, 8, 5, 8, 7, 3, 5, 7]";
}
