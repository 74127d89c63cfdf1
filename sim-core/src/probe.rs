//! Probes observe a run without taking part in it: statistics, traces and
//! anything else a report needs are probes, so the protocol code carries no
//! bookkeeping of its own.

use crate::coherence::{AccessReport, Route};
pub use crate::cpu::LinuxCpu;
use crate::script::ast::AtomicOp;
use crate::time::Cycle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Load,
    /// A load answered by the CPU's own store buffer.
    LoadForwarded,
    /// A store written straight into a line the core owns (empty store buffer).
    Store,
    /// A store leaving the store buffer for the cache.
    StoreDrain,
    Atomic(AtomicOp),
    /// The adjacent-line prefetcher's read of the buddy line of a demand
    /// miss; the CPU does not wait for it. `address` is the buddy line's
    /// start, `field_id` the field whose miss issued it.
    Prefetch,
    /// A line requested by the core's run ahead of an operation that waits
    /// (a locked instruction, or a value not read yet: `engine::speculate`);
    /// nobody waits for it. `address` is the line's start, `field_id` the
    /// field the run's access would read or write.
    RunAhead,
    /// A store's line requested for ownership by the store buffer ahead
    /// of the store's drain (an RFO prefetch,
    /// `MachineSpec::store_rfo_ahead_entries`); nobody waits for it, and
    /// the store is written only when it drains. `address` is the line's
    /// start, `field_id` the field the store writes.
    StoreRfoAhead,
}

impl AccessKind {
    pub fn describe(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::LoadForwarded => "load (forwarded from store buffer)",
            AccessKind::Store => "store",
            AccessKind::StoreDrain => "store drains",
            AccessKind::Atomic(op) => op.name(),
            AccessKind::Prefetch => "prefetch (adjacent line)",
            AccessKind::RunAhead => "prefetch (run ahead)",
            AccessKind::StoreRfoAhead => "prefetch (store's RFO ahead of its drain)",
        }
    }

    /// A request of the core's own that no operation of the program made
    /// (the adjacent-line prefetcher's, or the run ahead's): counted apart
    /// from the program's accesses.
    pub fn is_prefetch(self) -> bool {
        matches!(
            self,
            AccessKind::Prefetch | AccessKind::RunAhead | AccessKind::StoreRfoAhead
        )
    }
}

/// One memory access, with what the protocol did for it.
#[derive(Clone, Debug)]
pub struct AccessEvent<'a> {
    pub cpu: LinuxCpu,
    /// When the access was made.
    pub issued: Cycle,
    /// Cycles from the access to its data (the store buffer's answer for a
    /// forwarded load).
    pub latency_cycles: u64,
    pub kind: AccessKind,
    pub address: u64,
    pub size_bytes: u32,
    /// Dense id of the (instance, field) accessed.
    pub field_id: u32,
    /// The value loaded, stored, or (atomics) the old value.
    pub value: i64,
    /// Atomics: the value written, when one was.
    pub new_value: Option<i64>,
    /// None for a load forwarded from the store buffer.
    pub report: Option<&'a AccessReport>,
    /// Cycles the CPU itself waited for this access (0 for drains, and for
    /// a load it did not wait for: see `Probe::on_load_wait`).
    pub stall_cycles: u64,
    /// For a load the CPU did not wait for (a miss, or a load sharing a
    /// fetch already under way): the CPU's misses then in flight, each
    /// holding one of the core's miss buffers, at least 1. 0 for an access
    /// the CPU waited for.
    pub misses_in_flight: u32,
}

/// Plain hits summed since the last report: on one of a CPU's private
/// lines (a field of its own per-CPU instance that no other CPU can
/// reach), or a fast-forwarded spin-wait's polls of one shared field
/// (`engine::shortcuts::spin`), reported when the CPU wakes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrivateHits {
    /// Dense id of the (instance, field) accessed.
    pub field_id: u32,
    /// The field's address for this CPU.
    pub address: u64,
    pub loads: u64,
    pub stores: u64,
    /// Cycles beyond an L1 hit the loads waited (for a line still arriving).
    pub stall_cycles: u64,
    /// For a fast-forwarded spin-wait's polls: the cycle its last summed
    /// load was made (`None` for hits on private places), so that the
    /// cycles spent polling are accounted as stepping would.
    pub spin_last_load: Option<u64>,
}

/// A CPU's atomics on one field, summed since they were last reported:
/// what the engine hands a probe that takes them so
/// ([`Probe::summed_atomics`]) instead of an `on_access` per atomic. Each
/// counts as one access of that field and line, with its report's costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicSums {
    /// Dense id of the (instance, field) accessed.
    pub field_id: u32,
    /// The field's address (the same for each of them).
    pub address: u64,
    /// Atomics summed here.
    pub count: u64,
    /// Those the core's own cache answered (`AccessReport::is_hit`).
    pub hits: u64,
    /// Those of them the core's own L1 answered, not after a write of the
    /// SMT sibling (`Route::Hit`).
    pub l1_hits: u64,
    /// The others: each a miss, with the counts below.
    pub misses: u64,
    /// Misses served from a Modified or Owned copy in another core.
    pub hitm: u64,
    /// Those of them served from a core on another NUMA node
    /// (`AccessReport::hitm_from_other_node`).
    pub hitm_remote: u64,
    /// Misses with a leg crossing sockets.
    pub cross_socket: u64,
    /// Cycles the misses' requests waited at the line's home before it
    /// took them (`started - issued`).
    pub queue_wait_cycles: u64,
    /// Copies invalidated in other caches, over every atomic summed.
    pub invalidations: u64,
    /// Cycles beyond an L1 hit that the CPU waited, over every atomic
    /// summed (each atomic's `AccessEvent::stall_cycles`).
    pub stall_cycles: u64,
}

impl AtomicSums {
    /// Adds one atomic with its report and the cycles its CPU waited.
    #[inline]
    pub fn add(&mut self, report: &AccessReport, stall_cycles: u64) {
        self.count += 1;
        if report.is_hit() {
            self.hits += 1;
            self.l1_hits += (report.route == Route::Hit) as u64;
        } else {
            self.misses += 1;
            self.hitm += report.hitm as u64;
            self.hitm_remote += report.hitm_from_other_node() as u64;
            self.cross_socket += report.cross_socket as u64;
            self.queue_wait_cycles += (report.started - report.issued).get();
        }
        self.invalidations += report.invalidations as u64;
        self.stall_cycles += stall_cycles;
    }
}

pub trait Probe {
    fn on_access(&mut self, _event: &AccessEvent<'_>) {}
    /// Whether the probe must see every access as its own `on_access`. One
    /// that answers false receives the plain hits on each CPU's private
    /// lines summed, through `on_private_hits`, instead (before that CPU's
    /// next `on_iteration` and at the end of the run, or, where
    /// `measured_hits_at_end` allows, a measured iteration's at the end of
    /// the run only), and the polls of a
    /// spin-wait the engine fast-forwards likewise (when the CPU wakes).
    /// That spares the engine a report per hit; a probe whose result
    /// depends on the order or the detail of single accesses (a trace)
    /// keeps the default.
    fn needs_every_access(&self) -> bool {
        true
    }
    /// With `needs_every_access` false: whether a CPU's summed plain hits
    /// on its private places during its measured iterations (those whose
    /// `on_iteration` says `measured`) may arrive at the end of the run
    /// (or when its thread leaves the CPU) rather than before each next
    /// `on_iteration`. The warm-up's hits still arrive before the end of
    /// their iteration. A probe that keeps only sums over the measured
    /// window (the statistics) answers true and spares the engine a report
    /// per place and iteration; the default keeps each iteration's hits in
    /// their iteration.
    fn measured_hits_at_end(&self) -> bool {
        false
    }
    /// Whether a CPU's atomics may arrive summed per field, through
    /// `on_atomics`, instead of each as its own `on_access`. What a CPU
    /// summed arrives before anything that could tell when they were made
    /// from the probe's view of that CPU: before the next load of the same
    /// Linux CPU is reported (`on_access` of an `AccessKind::Load`), before
    /// a spin-wait's summed polls (`on_private_hits` with
    /// `spin_last_load`), before any of its warm-up iterations ends
    /// (`on_iteration` with `measured` false), before it makes an atomic
    /// on another field or address, and at the end of the run. (Threads
    /// sharing a Linux CPU share its sums.) Everything else may come
    /// between an atomic and its report: other CPUs' reports, this CPU's
    /// stores, drains, prefetches, waits and measured iteration ends. A
    /// probe that keeps only sums, and whose per-CPU state only a load or
    /// the warm-up's end reads (the statistics), answers true and spares
    /// the engine a report per atomic; one that follows accesses one by one
    /// (a trace, a recorder) keeps the default.
    fn summed_atomics(&self) -> bool {
        false
    }
    /// A CPU's atomics summed (see `summed_atomics`).
    fn on_atomics(&mut self, _cpu: LinuxCpu, _sums: &AtomicSums) {}
    /// Whether a CPU's measured iterations (those whose `on_iteration`
    /// would say `measured`) may arrive batched, through `on_iterations`,
    /// instead of each as its own `on_iteration`. A batch arrives where
    /// summed atomics must (see `summed_atomics`: before the Linux CPU's
    /// next load, spin-wait polls or warm-up iteration end, and at the end
    /// of the run), or sooner. A probe that keeps only each iteration's
    /// length and reads its per-CPU state only at those points (the
    /// statistics) answers true and spares the engine a report per
    /// iteration; one that wants each iteration's index, start and end
    /// keeps the default.
    fn batched_iterations(&self) -> bool {
        false
    }
    /// Measured iterations of CPU `cpu` (of any of its threads), in the
    /// order they ended: each one's cycles, `end - start` of its
    /// `on_iteration` (see `batched_iterations`).
    fn on_iterations(&mut self, _cpu: LinuxCpu, _cycles: &[u64]) {}
    /// Summed plain hits of CPU `cpu` on one place (a private one, or a
    /// spin-wait's polls; see `needs_every_access`); each counts as a hit,
    /// and stores and loads each as one access, of that field and line.
    fn on_private_hits(&mut self, _cpu: LinuxCpu, _hits: &PrivateHits) {}
    /// A plain store entered the store buffer.
    fn on_store_posted(
        &mut self,
        _cpu: LinuxCpu,
        _cycle: Cycle,
        _address: u64,
        _field_id: u32,
        _value: i64,
    ) {
    }
    /// A CPU finished one iteration of its script.
    fn on_iteration(
        &mut self,
        _cpu: LinuxCpu,
        _index: u64,
        _start: Cycle,
        _end: Cycle,
        _measured: bool,
    ) {
    }
    /// A CPU waited for its store buffer (full, or an atomic or fence
    /// draining it) until the store to `address` (field `field_id`) drained.
    fn on_store_buffer_wait(
        &mut self,
        _cpu: LinuxCpu,
        _from: Cycle,
        _until: Cycle,
        _address: u64,
        _field_id: u32,
    ) {
    }
    /// A CPU waited for loads in flight, from `from` until `until`: an
    /// operation needed a value still on its way (the load of `address`,
    /// field `field_id`, the last to arrive), or an atomic, fence or
    /// iteration end waited for every miss, or every miss buffer was taken
    /// (`field_id` is `None`, and `address` 0, where no one value was
    /// waited for).
    fn on_load_wait(
        &mut self,
        _cpu: LinuxCpu,
        _from: Cycle,
        _until: Cycle,
        _address: u64,
        _field_id: Option<u32>,
    ) {
    }
    /// A branch of CPU `cpu` on a value still arriving was mispredicted
    /// (the reorder window's predictor guessed the other direction): at
    /// `at` it waited for the value until `resolved`, then paid
    /// `penalty_cycles`. `site` is the branch's place in its script or
    /// procedure. (The wait for the value is reported right after, as an
    /// `on_load_wait` from `at` to `resolved`.)
    fn on_mispredict(
        &mut self,
        _cpu: LinuxCpu,
        _at: Cycle,
        _resolved: Cycle,
        _penalty_cycles: u64,
        _site: &BranchSite<'_>,
    ) {
    }
}

/// Where a branch is: its script's or procedure's origin (as in script
/// errors: the file and the table it was read from) and its position there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchSite<'a> {
    pub origin: &'a str,
    pub line: u32,
    pub column: u32,
}

/// A probe that observes nothing.
pub struct NoProbe;
impl Probe for NoProbe {}

/// Runs several probes as one.
pub struct Probes<'a>(pub Vec<&'a mut dyn Probe>);

impl Probe for Probes<'_> {
    fn on_access(&mut self, event: &AccessEvent<'_>) {
        for p in &mut self.0 {
            p.on_access(event);
        }
    }
    fn needs_every_access(&self) -> bool {
        self.0.iter().any(|p| p.needs_every_access())
    }
    fn measured_hits_at_end(&self) -> bool {
        self.0.iter().all(|p| p.measured_hits_at_end())
    }
    fn summed_atomics(&self) -> bool {
        self.0.iter().all(|p| p.summed_atomics())
    }
    fn on_atomics(&mut self, cpu: LinuxCpu, sums: &AtomicSums) {
        for p in &mut self.0 {
            p.on_atomics(cpu, sums);
        }
    }
    fn batched_iterations(&self) -> bool {
        self.0.iter().all(|p| p.batched_iterations())
    }
    fn on_iterations(&mut self, cpu: LinuxCpu, cycles: &[u64]) {
        for p in &mut self.0 {
            p.on_iterations(cpu, cycles);
        }
    }
    fn on_private_hits(&mut self, cpu: LinuxCpu, hits: &PrivateHits) {
        for p in &mut self.0 {
            p.on_private_hits(cpu, hits);
        }
    }
    fn on_store_posted(
        &mut self,
        cpu: LinuxCpu,
        cycle: Cycle,
        address: u64,
        field_id: u32,
        value: i64,
    ) {
        for p in &mut self.0 {
            p.on_store_posted(cpu, cycle, address, field_id, value);
        }
    }
    fn on_iteration(
        &mut self,
        cpu: LinuxCpu,
        index: u64,
        start: Cycle,
        end: Cycle,
        measured: bool,
    ) {
        for p in &mut self.0 {
            p.on_iteration(cpu, index, start, end, measured);
        }
    }
    fn on_store_buffer_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        field_id: u32,
    ) {
        for p in &mut self.0 {
            p.on_store_buffer_wait(cpu, from, until, address, field_id);
        }
    }
    fn on_load_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        field_id: Option<u32>,
    ) {
        for p in &mut self.0 {
            p.on_load_wait(cpu, from, until, address, field_id);
        }
    }
    fn on_mispredict(
        &mut self,
        cpu: LinuxCpu,
        at: Cycle,
        resolved: Cycle,
        penalty_cycles: u64,
        site: &BranchSite<'_>,
    ) {
        for p in &mut self.0 {
            p.on_mispredict(cpu, at, resolved, penalty_cycles, site);
        }
    }
}
