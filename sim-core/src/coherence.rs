//! The coherence protocol: a directory entry at each line's home, a state
//! per private (per-core) cache, and the cost of every transaction computed
//! from the three parties (requester, owner or sharers, home) and their
//! distances in the topology.
//!
//! Model decisions (see ARCHITECTURE.md, "Coherence model"):
//! - Private caches are per core and shared by its SMT threads. They are
//!   unbounded for now; the `Holder` list per line leaves room for capacity.
//! - Transactions on one line are ordered at its home. A request that
//!   arrives while the line is busy (a transaction in flight, or an atomic
//!   holding it) waits in the line's queue; when the line frees, the home
//!   serves one waiter and applies its state changes then, so contention,
//!   queueing and the collapse of a shared atomic come from this rule alone.
//!   Which waiter wins is the engine's seeded choice: real homes resolve
//!   conflicts by retries, which is not first come, first served. A core
//!   that already holds the line and queued only behind a pending snoop
//!   yields to the other cores' requests.
//! - A transaction keeps the line busy for its whole cost, except a read of
//!   a clean line resolved inside the requester's L3 domain, which holds the
//!   domain's tags for one forward leg (see `busy_cycles` in `transaction`).
//! - A locked read-modify-write keeps the line for its execution
//!   (`locked_until`), delaying both the next request and SMT siblings.
//! - Costs: a transfer inside one L3 domain is resolved by the domain's tags
//!   (`l3_transfer_cycles`). Otherwise the request goes to the directory
//!   (`Lookup::Home`: the line's home node; `Lookup::Local`: the requester's
//!   own node's snoop filter), which forwards to each target (the supplier
//!   of data and every sharer to invalidate), and each target answers the
//!   requester directly: cost = leg(requester, directory) + max over targets
//!   of [leg(directory, target) + leg(target, requester)]. Data that no
//!   cache supplies comes from memory at the home: leg + DRAM + leg.

use crate::error::SimError;
use crate::memory::MemoryLayout;
use crate::time::Cycle;
use crate::topology::{CorePlace, Lookup, PairClass, Protocol, Topology};
use std::fmt;

/// `planted!(Bug)`: whether that deliberately broken transition is switched
/// on. Only unit tests of this crate can switch one on (see [`planted`]); in
/// every other build the macro is the literal `false`, and each planted
/// bug's code is behind `#[cfg(test)]`, so the simulator compiled for users
/// contains none of it.
#[cfg(test)]
macro_rules! planted {
    ($bug:ident) => {
        crate::coherence::planted::active(crate::coherence::planted::Bug::$bug)
    };
}
#[cfg(not(test))]
#[allow(unused_macros)]
macro_rules! planted {
    ($bug:ident) => {
        false
    };
}

/// The state of a line in one private cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LineState {
    Invalid,
    Shared,
    Exclusive,
    Modified,
    /// MOESI: dirty, shared with others, this cache answers reads.
    Owned,
    /// MESIF: clean, shared, this cache answers reads.
    Forward,
}

impl LineState {
    pub fn letter(self) -> char {
        match self {
            LineState::Invalid => 'I',
            LineState::Shared => 'S',
            LineState::Exclusive => 'E',
            LineState::Modified => 'M',
            LineState::Owned => 'O',
            LineState::Forward => 'F',
        }
    }
    /// The state answers reads from other caches.
    fn supplies_data(self) -> bool {
        matches!(
            self,
            LineState::Modified | LineState::Exclusive | LineState::Owned | LineState::Forward
        )
    }
    fn is_writable(self) -> bool {
        matches!(self, LineState::Modified | LineState::Exclusive)
    }
}

impl fmt::Display for LineState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// What an access needs from the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// A readable copy (a load).
    Read,
    /// An exclusive, writable copy (a store draining, or an atomic).
    Write,
}

const NO_THREAD: u8 = u8::MAX;

/// One private cache holding a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Holder {
    core: u32,
    state: LineState,
    /// When the data arrives in this cache (the end of the transaction that
    /// brought it).
    ready_at: Cycle,
    /// The line's write count when this copy was last filled or written; the
    /// data-value invariant requires it to equal the line's.
    version: u64,
    /// SMT thread of the core that last wrote the line, or NO_THREAD.
    last_writer_thread: u8,
}

/// A set of cores, as a bitmap.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
struct CoreSet {
    words: Vec<u64>,
}

impl CoreSet {
    fn with_capacity(cores: u32) -> CoreSet {
        CoreSet {
            words: vec![0; cores.div_ceil(64) as usize],
        }
    }
    fn insert(&mut self, core: u32) {
        self.words[(core / 64) as usize] |= 1 << (core % 64);
    }
    fn remove(&mut self, core: u32) {
        self.words[(core / 64) as usize] &= !(1 << (core % 64));
    }
    fn contains(&self, core: u32) -> bool {
        self.words[(core / 64) as usize] & (1 << (core % 64)) != 0
    }
    #[cfg(test)]
    fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u32 * 64 + b)
        })
    }
}

/// One coherence unit: a cache line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Unit {
    home_node: u32,
    /// The home orders no new request on this line before this cycle.
    busy_until: Cycle,
    /// An atomic holds the line until this cycle.
    locked_until: Cycle,
    /// Number of writes to the line so far (its coherence-order position).
    version: u64,
    /// Directory: the core whose cache answers for the line, if any.
    dir_owner: Option<u32>,
    /// Directory: every core holding a valid copy.
    dir_sharers: CoreSet,
    /// Private caches holding the line, sorted by core.
    holders: Vec<Holder>,
    /// Requests that arrived while the line was busy, in arrival order.
    waiting: Vec<Waiter>,
}

/// A request waiting at a line's home for the line to be free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Waiter {
    pub cpu: u32,
    /// The CPU's core (whose cache the request fills).
    pub core: u32,
    pub need: Need,
    pub hold_cycles: u64,
    pub issued: Cycle,
    /// The engine's own tag (which access this is).
    pub tag: u32,
}

/// Set in a waiter's tag when the request is an adjacent-line prefetch
/// ([`Coherence::prefetch`]): a read nobody waits for. The engine's tags
/// (and the checker's) leave this bit clear for every other request.
pub const PREFETCH_TAG: u32 = 1 << 31;

/// What became of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requested {
    /// Served at once.
    Done(AccessReport),
    /// Queued at the home; when `first_waiter`, nobody is yet due to wake
    /// the line at `free_at`.
    Queued { free_at: Cycle, first_waiter: bool },
}

/// How the data reached the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The requester's own core had it.
    Hit,
    /// The requester's own core had it, last written by its SMT sibling.
    SmtSibling,
    /// Another core of the requester's L3 domain, resolved by its tags.
    SameL3,
    /// Through the directory at `node`, from or invalidating other caches.
    Directory { node: u32 },
    /// From memory at the home node (no cache could supply it).
    Memory { node: u32 },
}

/// A state change in a cache other than the requester's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateChange {
    pub core: u32,
    pub before: LineState,
    pub after: LineState,
}

/// A line on which plain hits are possible: [`Coherence::private_line`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrivateLine {
    /// The core's copy among the line's holders.
    holder: u32,
    /// The holder's data arrival and the line's atomic hold, the later one:
    /// a hit at `now` completes at `max(now, floor) + L1`.
    pub floor: Cycle,
    /// The copy is Modified or Exclusive: writes hit too, not only reads.
    pub writable: bool,
}

/// What one access did, for the engine and its probes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessReport {
    pub unit: usize,
    pub need: Need,
    /// When the request was made.
    pub issued: Cycle,
    /// When the home ordered it (after any queueing behind other requests).
    pub started: Cycle,
    /// When the data (or permission) arrived at the requester.
    pub done: Cycle,
    pub route: Route,
    /// The cache that supplied the data, and its relation to the requester.
    pub supplier: Option<(u32, LineState, PairClass)>,
    pub requester_before: LineState,
    pub requester_after: LineState,
    /// Other caches whose state changed, in core order.
    pub others: Vec<StateChange>,
    /// Copies invalidated in other caches.
    pub invalidations: u32,
    /// The data came from a Modified (or Owned) copy in another core.
    pub hitm: bool,
    /// Some leg of the transaction crossed sockets.
    pub cross_socket: bool,
}

impl AccessReport {
    pub fn is_hit(&self) -> bool {
        matches!(self.route, Route::Hit | Route::SmtSibling)
    }
    /// Cycles between the request and the data.
    pub fn latency_cycles(&self) -> u64 {
        self.done - self.issued
    }
}

/// Every line's directory entry and cached copies.
///
/// `Eq` and `Hash` cover every field, so the exhaustive checker
/// ([`crate::checker`]) can tell two protocol states apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Coherence {
    units: Vec<Unit>,
    protocol: Protocol,
    lookup: Lookup,
    /// Check the invariants after every transaction.
    pub check_invariants: bool,
    /// Whether the commonest contended shape may skip the general walk
    /// (`EngineOptions::special_transactions`; on by default).
    pub special_transactions: bool,
    /// How often it did (counted with the `shortcut-counts` feature only).
    pub special_transactions_taken: u64,
    unit_bytes: u32,
    /// A report's `others` handed back by the engine ([`Coherence::recycle`]),
    /// reused by the next transaction instead of a new allocation.
    spare_changes: SpareChanges,
}

/// Spare capacity, not protocol state: equal and hashed alike whatever it
/// holds, so the checker's states compare as before.
#[derive(Debug, Default)]
struct SpareChanges(Vec<StateChange>);

impl Clone for SpareChanges {
    fn clone(&self) -> Self {
        SpareChanges::default()
    }
}

impl PartialEq for SpareChanges {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for SpareChanges {}

impl std::hash::Hash for SpareChanges {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}

impl Coherence {
    pub fn new(topology: &Topology, memory: &MemoryLayout) -> Coherence {
        let units = memory
            .unit_homes
            .iter()
            .map(|&home_node| Unit {
                home_node,
                busy_until: Cycle::ZERO,
                locked_until: Cycle::ZERO,
                version: 0,
                dir_owner: None,
                dir_sharers: CoreSet::with_capacity(topology.core_count()),
                holders: Vec::new(),
                waiting: Vec::new(),
            })
            .collect();
        Coherence {
            units,
            protocol: topology.spec.protocol,
            lookup: topology.spec.lookup,
            check_invariants: cfg!(debug_assertions),
            special_transactions: true,
            special_transactions_taken: 0,
            unit_bytes: memory.unit_bytes,
            spare_changes: SpareChanges::default(),
        }
    }

    /// Takes back a finished report's storage, for the next transaction.
    pub fn recycle(&mut self, report: AccessReport) {
        if report.others.capacity() > self.spare_changes.0.capacity() {
            self.spare_changes.0 = report.others;
        }
    }

    /// Host bytes one line's state takes on a machine of `cores` cores,
    /// with two caches holding it (for the estimate made before a run).
    pub fn line_state_bytes(cores: u32) -> u64 {
        (std::mem::size_of::<Unit>()
            + (cores as usize).div_ceil(64) * 8
            + 2 * std::mem::size_of::<Holder>()) as u64
    }

    pub fn unit_count(&self) -> usize {
        self.units.len()
    }

    pub fn home_of(&self, unit: usize) -> u32 {
        self.units[unit].home_node
    }

    /// The state of `unit` in `core`'s cache.
    pub fn state(&self, core: u32, unit: usize) -> LineState {
        let u = &self.units[unit];
        match u.holders.binary_search_by_key(&core, |h| h.core) {
            Ok(i) => u.holders[i].state,
            Err(_) => LineState::Invalid,
        }
    }

    /// The fast path: `Some(done)` when `cpu` can complete the access from
    /// its own core's cache without a transaction, changing nothing else.
    /// `hold_cycles` is the execution time of an atomic (0 for loads and
    /// stores); the line stays locked for it.
    #[inline]
    pub fn try_hit(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
        hold_cycles: u64,
    ) -> Option<AccessReport> {
        let queued = !self.units[unit].waiting.is_empty();
        #[cfg(test)]
        let queued = queued && !planted!(HitBypassesQueue);
        if queued {
            // A request is queued for the line: its snoop arrives before this
            // core may use the line again, so this access queues too. (Checked
            // here, inline at the caller, since on a contended line it is the
            // usual answer.)
            return None;
        }
        self.try_hit_unqueued(topology, now, cpu, unit, need, hold_cycles)
    }

    /// [`Coherence::try_hit`] once nothing is queued for the line.
    fn try_hit_unqueued(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
        hold_cycles: u64,
    ) -> Option<AccessReport> {
        let core = topology.core_of(cpu);
        let thread = topology.thread_of(cpu) as u8;
        let l = &topology.spec.latency;
        let u = &mut self.units[unit];
        let index = u.holders.binary_search_by_key(&core, |h| h.core).ok()?;
        let holder = &mut u.holders[index];
        if need == Need::Write && !holder.state.is_writable() {
            return None;
        }
        let before = holder.state;
        let start = now.max(holder.ready_at).max(u.locked_until);
        let sibling_wrote =
            holder.last_writer_thread != NO_THREAD && holder.last_writer_thread != thread;
        let access_cycles = if sibling_wrote {
            l.l1_hit_cycles + l.smt_transfer_cycles
        } else {
            l.l1_hit_cycles
        };
        let done = start + access_cycles;
        if need == Need::Write {
            holder.state = LineState::Modified;
            holder.last_writer_thread = thread;
            u.version += 1;
            holder.version = u.version;
            #[cfg(test)]
            if planted!(WriteHitKeepsVersion) {
                u.version -= 1;
                holder.version = u.version;
            }
        } else if sibling_wrote {
            holder.last_writer_thread = NO_THREAD;
        }
        if hold_cycles > 0 {
            u.locked_until = done + hold_cycles;
            u.busy_until = u.busy_until.max(u.locked_until);
        }
        Some(AccessReport {
            unit,
            need,
            issued: now,
            started: start,
            done,
            route: if sibling_wrote {
                Route::SmtSibling
            } else {
                Route::Hit
            },
            supplier: None,
            requester_before: before,
            requester_after: holder.state,
            others: Vec::new(),
            invalidations: 0,
            hitm: false,
            cross_socket: false,
        })
    }

    /// The plain hit of `try_hit` (the core holds the line as `need` wants,
    /// nothing is queued for it, no atomic hold, not last written by the SMT
    /// sibling), with the same state changes and timing, returning only when
    /// the data is there. The engine's run-ahead path for a CPU's private
    /// lines sums such hits instead of reporting each; every other case is
    /// `Ok(None)`, changes nothing, and goes through `try_hit`. With the
    /// invariants on, the line is checked after the hit, as `request` does.
    #[inline]
    pub fn plain_hit(
        &mut self,
        now: Cycle,
        core: u32,
        thread: u8,
        unit: usize,
        need: Need,
        l1_hit_cycles: u64,
    ) -> Result<Option<Cycle>, SimError> {
        let Some(done) = self.plain_hit_unchecked(now, core, thread, unit, need, l1_hit_cycles)
        else {
            return Ok(None);
        };
        if self.check_invariants {
            self.check_unit(unit, done)?;
        }
        Ok(Some(done))
    }

    #[inline]
    fn plain_hit_unchecked(
        &mut self,
        now: Cycle,
        core: u32,
        thread: u8,
        unit: usize,
        need: Need,
        l1_hit_cycles: u64,
    ) -> Option<Cycle> {
        let u = &mut self.units[unit];
        if !u.waiting.is_empty() {
            return None;
        }
        let holder = match u.holders.as_mut_slice() {
            // A private line has one holder: no search.
            [only] if only.core == core => only,
            holders => {
                let index = holders.binary_search_by_key(&core, |h| h.core).ok()?;
                &mut holders[index]
            }
        };
        if holder.last_writer_thread != NO_THREAD && holder.last_writer_thread != thread {
            return None;
        }
        if need == Need::Write {
            if !holder.state.is_writable() {
                return None;
            }
            holder.state = LineState::Modified;
            holder.last_writer_thread = thread;
            u.version += 1;
            holder.version = u.version;
        }
        Some(now.max(holder.ready_at).max(u.locked_until) + l1_hit_cycles)
    }

    /// What `plain_hit` would allow on `unit` for `core`'s `thread` right
    /// now, without changing anything: `None` where it returns `Ok(None)`
    /// for reads and writes alike. Plain hits change neither the holder's
    /// `ready_at` nor the line's `locked_until`, nor what this answers, so
    /// the engine's fused run-ahead loop asks once per line and run, and
    /// gives every later hit `max(now, floor) + L1`, as `plain_hit` does.
    #[inline]
    pub fn private_line(&self, core: u32, thread: u8, unit: usize) -> Option<PrivateLine> {
        let u = &self.units[unit];
        if !u.waiting.is_empty() {
            return None;
        }
        let index = match u.holders.as_slice() {
            [only] if only.core == core => 0,
            holders => holders.binary_search_by_key(&core, |h| h.core).ok()?,
        };
        let holder = &u.holders[index];
        if holder.last_writer_thread != NO_THREAD && holder.last_writer_thread != thread {
            return None;
        }
        Some(PrivateLine {
            holder: index as u32,
            floor: holder.ready_at.max(u.locked_until),
            writable: holder.state.is_writable(),
        })
    }

    /// The state changes of `writes` plain write hits by `thread` on a line
    /// that [`Coherence::private_line`] found writable (at `holder`), made
    /// at once: the copy Modified and last written by `thread`, and the
    /// line's write count (and the copy's) `writes` higher.
    #[inline]
    pub fn apply_private_writes(
        &mut self,
        unit: usize,
        line: PrivateLine,
        thread: u8,
        writes: u64,
    ) {
        let u = &mut self.units[unit];
        let holder = &mut u.holders[line.holder as usize];
        holder.state = LineState::Modified;
        holder.last_writer_thread = thread;
        u.version += writes;
        holder.version = u.version;
    }

    /// Performs an access: a hit when possible; otherwise a transaction at
    /// once if the line is free at its home, or a place in the line's queue.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
        hold_cycles: u64,
        tag: u32,
    ) -> Result<Requested, SimError> {
        if let Some(report) = self.try_hit(topology, now, cpu, unit, need, hold_cycles) {
            if self.check_invariants {
                self.check_unit(unit, report.done)?;
            }
            return Ok(Requested::Done(report));
        }
        self.request_after_miss(topology, now, cpu, unit, need, hold_cycles, tag)
    }

    /// [`Coherence::request`] for a caller that has just tried
    /// [`Coherence::try_hit`] at `now` and missed (a failed try changes
    /// nothing, so trying again would miss again).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn request_after_miss(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
        hold_cycles: u64,
        tag: u32,
    ) -> Result<Requested, SimError> {
        let u = &mut self.units[unit];
        if u.busy_until > now || !u.waiting.is_empty() {
            u.waiting.push(Waiter {
                cpu,
                core: topology.core_of(cpu),
                need,
                hold_cycles,
                issued: now,
                tag,
            });
            return Ok(Requested::Queued {
                free_at: u.busy_until.max(now),
                first_waiter: u.waiting.len() == 1,
            });
        }
        self.transaction_at_once(topology, now, cpu, unit, need, hold_cycles)
    }

    /// The transaction of a request that found its line free. Out of line, so
    /// that queueing (the usual answer on a contended line) stays cheap.
    #[inline(never)]
    fn transaction_at_once(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
        hold_cycles: u64,
    ) -> Result<Requested, SimError> {
        let report = self.transaction(topology, now, now, cpu, unit, need, hold_cycles);
        if self.check_invariants {
            self.check_unit(unit, report.started)?;
        }
        Ok(Requested::Done(report))
    }

    /// The adjacent-line prefetcher's read of `unit` for `cpu`'s core (the
    /// buddy of a line it missed on), tagged `tag | PREFETCH_TAG`: `None`
    /// when it is dropped, because the core already holds the line in any
    /// valid state or already has a request of its own waiting for it;
    /// otherwise a plain read, at once if the line is free or in the line's
    /// queue, ordered at the home like any other request. Nobody waits for
    /// it: the engine lets the CPU go on.
    pub fn prefetch(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: u32,
        unit: usize,
        tag: u32,
    ) -> Result<Option<Requested>, SimError> {
        let core = topology.core_of(cpu);
        let u = &self.units[unit];
        let held = u.holders.iter().any(|h| h.core == core);
        if held || u.waiting.iter().any(|w| w.core == core) {
            return Ok(None);
        }
        let requested =
            self.request_after_miss(topology, now, cpu, unit, Need::Read, 0, tag | PREFETCH_TAG)?;
        #[cfg(test)]
        if let Requested::Done(report) = &requested {
            self.plant_prefetch_bug(unit, report);
            if self.check_invariants {
                self.check_unit(unit, report.started)?;
            }
        }
        Ok(Some(requested))
    }

    /// The planted `PrefetchKeepsOwnerModified`: the owner a prefetch read
    /// downgraded stays Modified beside the new Shared copy.
    #[cfg(test)]
    fn plant_prefetch_bug(&mut self, unit: usize, report: &AccessReport) {
        if !planted!(PrefetchKeepsOwnerModified) {
            return;
        }
        let u = &mut self.units[unit];
        for change in &report.others {
            if change.before == LineState::Modified {
                if let Ok(i) = u.holders.binary_search_by_key(&change.core, |h| h.core) {
                    u.holders[i].state = LineState::Modified;
                    u.dir_owner = Some(change.core);
                }
            }
        }
    }

    /// The line is due to be free at `now`: serves one waiting request,
    /// chosen by `pick(number_waiting)`. Returns `None` when the line is
    /// still busy (retry at [`Coherence::busy_until`]) or nobody waits.
    ///
    /// The pick stands for the home's conflict resolution: under contention
    /// requests are retried, and which one wins is not first come, first
    /// served, so the engine passes a seeded random choice.
    pub fn serve_next(
        &mut self,
        topology: &Topology,
        now: Cycle,
        unit: usize,
        pick: &mut dyn FnMut(usize) -> usize,
    ) -> Result<Option<(Waiter, AccessReport)>, SimError> {
        let u = &mut self.units[unit];
        let busy = u.busy_until > now;
        #[cfg(test)]
        let busy = busy && !planted!(ServeWhileBusy);
        if u.waiting.is_empty() || busy {
            return Ok(None);
        }
        // A waiter whose core already holds the line only queued behind a
        // pending snoop; the snoops (requests from other cores) go first.
        let holds = |w: &Waiter| u.holders.iter().any(|h| h.core == w.core);
        let n = u.waiting.len();
        let drawn = pick(n).min(n - 1);
        // From the drawn waiter, the first (cyclically) that is not a
        // holder's re-access; only holders waiting means the drawn one.
        let chosen = (drawn..n).chain(0..drawn).find(|&k| !holds(&u.waiting[k]));
        #[cfg(test)]
        if chosen.is_none() && planted!(HoldersNeverServed) {
            return Ok(None);
        }
        // Only a core that holds the line can complete as a hit: the drawn
        // waiter when every waiter holds it.
        let holder = chosen.is_none();
        let waiter = u.waiting.swap_remove(chosen.unwrap_or(drawn));
        #[cfg(test)]
        if waiter.need == Need::Read && planted!(ServeDropsRead) {
            return Ok(None);
        }
        let hit = if holder {
            self.try_hit_for_waiter(topology, now, &waiter, unit)
        } else {
            None
        };
        let report = match hit {
            Some(r) => r,
            None => self.transaction(
                topology,
                waiter.issued,
                now,
                waiter.cpu,
                unit,
                waiter.need,
                waiter.hold_cycles,
            ),
        };
        #[cfg(test)]
        if waiter.tag & PREFETCH_TAG != 0 {
            self.plant_prefetch_bug(unit, &report);
        }
        if self.check_invariants {
            self.check_unit(unit, report.started)?;
        }
        Ok(Some((waiter, report)))
    }

    /// A queued request whose core has meanwhile obtained what it needs
    /// (its SMT sibling's transaction brought the line) completes as a hit.
    fn try_hit_for_waiter(
        &mut self,
        topology: &Topology,
        now: Cycle,
        waiter: &Waiter,
        unit: usize,
    ) -> Option<AccessReport> {
        let saved = std::mem::take(&mut self.units[unit].waiting);
        let hit = self.try_hit(
            topology,
            now,
            waiter.cpu,
            unit,
            waiter.need,
            waiter.hold_cycles,
        );
        self.units[unit].waiting = saved;
        hit.map(|mut r| {
            r.issued = waiter.issued;
            r
        })
    }

    /// Requests queued on a line.
    pub fn waiting_count(&self, unit: usize) -> usize {
        self.units[unit].waiting.len()
    }

    /// When the line's current transaction or lock hold ends.
    pub fn busy_until(&self, unit: usize) -> Cycle {
        self.units[unit].busy_until
    }

    /// A transaction at the home: the line's new states and what it cost.
    /// The commonest contended shape, a write by a core without a copy of a
    /// line that one other cache holds (an atomic or a store taking the line
    /// from its last writer), takes [`Coherence::write_taking_the_only_copy`];
    /// every other shape the general walk over the holders. Both give the
    /// same states and report (a test compares them).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn transaction(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: u32,
        unit_index: usize,
        need: Need,
        hold_cycles: u64,
    ) -> AccessReport {
        if need == Need::Write {
            if let [only] = self.units[unit_index].holders.as_slice() {
                let taking = self.special_transactions && only.core != topology.core_of(cpu);
                // A planted bug's code is in the general walk only.
                #[cfg(test)]
                let taking = taking && !planted::any_active();
                if taking {
                    #[cfg(feature = "shortcut-counts")]
                    {
                        self.special_transactions_taken += 1;
                    }
                    return self.write_taking_the_only_copy(
                        topology,
                        issued,
                        now,
                        cpu,
                        unit_index,
                        hold_cycles,
                    );
                }
            }
        }
        self.transaction_general(topology, issued, now, cpu, unit_index, need, hold_cycles)
    }

    /// [`Coherence::transaction_general`] for a write by a core holding no
    /// copy of a line that exactly one other cache holds: that copy is the
    /// only target (the supplier of the data when its state answers for the
    /// line, else memory supplies it) and is invalidated; the writer's copy
    /// takes its place in the holder list and the directory.
    #[inline]
    fn write_taking_the_only_copy(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: u32,
        unit_index: usize,
        hold_cycles: u64,
    ) -> AccessReport {
        let core = topology.core_of(cpu);
        let thread = topology.thread_of(cpu) as u8;
        let l = &topology.spec.latency;
        let lookup = self.lookup;
        let mut others = std::mem::take(&mut self.spare_changes.0);
        others.clear();
        let u = &mut self.units[unit_index];
        let home = u.home_node;
        let previous = u.holders[0];
        let requester = topology.place_of_core(core);
        let target = topology.place_of_core(previous.core);
        let directory_node = match lookup {
            Lookup::Home => home,
            Lookup::Local => requester.node,
        };
        let target_cross_socket = target.socket != requester.socket;
        // leg(requester, directory) + leg(directory, target) + leg(target,
        // requester), as `TargetReach` gives for one target.
        let directory_path = || {
            topology.hop_place_to_node(requester, directory_node)
                + topology.hop_place_to_node(target, directory_node)
                + topology.hop_between_places(target, requester)
        };
        let data_from_cache = previous.state.supplies_data();
        let route;
        let cost;
        let cross_socket;
        if data_from_cache && target.l3 == requester.l3 {
            route = Route::SameL3;
            cost = l.l3_transfer_cycles;
            cross_socket = false;
        } else if !data_from_cache {
            let memory_path = topology.hop_place_to_node(requester, home) * 2 + l.dram_cycles;
            cross_socket = topology.socket_of_node(home) != requester.socket || target_cross_socket;
            route = Route::Memory { node: home };
            cost = memory_path.max(directory_path());
        } else {
            cross_socket =
                topology.socket_of_node(directory_node) != requester.socket || target_cross_socket;
            route = Route::Directory {
                node: directory_node,
            };
            cost = directory_path();
        }
        let start = now;
        let done = start + cost;
        let (supplier, hitm) = if data_from_cache {
            (
                // The class of the requesting CPU and the supplier's thread 0
                // (`pair_class(cpu, previous.core)` in the general walk): two
                // different cores, so their places decide it.
                Some((
                    previous.core,
                    previous.state,
                    Topology::class_of_places(requester, target),
                )),
                matches!(previous.state, LineState::Modified | LineState::Owned),
            )
        } else {
            (None, false)
        };
        others.push(StateChange {
            core: previous.core,
            before: previous.state,
            after: LineState::Invalid,
        });
        u.version += 1;
        u.holders[0] = Holder {
            core,
            state: LineState::Modified,
            ready_at: done,
            version: u.version,
            last_writer_thread: thread,
        };
        u.dir_sharers.remove(previous.core);
        u.dir_sharers.insert(core);
        u.dir_owner = Some(core);
        // A write holds the line for its whole cost, and an atomic on.
        u.busy_until = done;
        if hold_cycles > 0 {
            u.locked_until = done + hold_cycles;
            u.busy_until = u.locked_until;
        }
        AccessReport {
            unit: unit_index,
            need: Need::Write,
            issued,
            started: start,
            done,
            route,
            supplier,
            requester_before: LineState::Invalid,
            requester_after: LineState::Modified,
            others,
            invalidations: 1,
            hitm,
            cross_socket,
        }
    }

    /// Any transaction, by a walk over the line's holders.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn transaction_general(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: u32,
        unit_index: usize,
        need: Need,
        hold_cycles: u64,
    ) -> AccessReport {
        let core = topology.core_of(cpu);
        let thread = topology.thread_of(cpu) as u8;
        let l = &topology.spec.latency;
        let protocol = self.protocol;
        let lookup = self.lookup;
        let mut others = std::mem::take(&mut self.spare_changes.0);
        others.clear();
        let u = &mut self.units[unit_index];
        let start = now;
        let home = u.home_node;
        let requester = topology.place_of_core(core);
        let directory_node = match lookup {
            Lookup::Home => home,
            Lookup::Local => requester.node,
        };
        #[cfg(test)]
        let previous_owner = u.dir_owner;
        #[cfg(test)]
        let previous_holders = if planted::any_active() {
            u.holders.clone()
        } else {
            Vec::new()
        };

        // One pass over the holders finds the requester's copy and the
        // supplier (the first other cache in a supplying state). A write's
        // targets are every other copy (to invalidate): they are reached in
        // the same pass, their invalidations listed (in core order) and
        // their directory bits dropped, since every one of them goes.
        let mut requester_before = LineState::Invalid;
        let mut supplier: Option<(u32, LineState)> = None;
        let mut other_copies = false;
        let mut writable_other = false;
        let mut reach = TargetReach::new(requester);
        if need == Need::Write {
            // One allocation at most, not one per doubling.
            others.reserve(u.holders.len());
        }
        for h in &u.holders {
            if h.core == core {
                requester_before = h.state;
                continue;
            }
            other_copies = true;
            writable_other |= h.state.is_writable();
            if supplier.is_none() && h.state.supplies_data() {
                supplier = Some((h.core, h.state));
            }
            if need == Need::Write {
                reach.add(topology, directory_node, h.core);
                others.push(StateChange {
                    core: h.core,
                    before: h.state,
                    after: LineState::Invalid,
                });
                u.dir_sharers.remove(h.core);
            }
        }
        #[cfg(test)]
        let supplier = match supplier {
            Some((_, LineState::Owned)) if planted!(OwnedNotSupplier) => None,
            other => other,
        };
        let have_data = requester_before != LineState::Invalid;
        let needs_data = !have_data;
        let data_from_cache = needs_data && supplier.is_some();
        if need == Need::Read && data_from_cache {
            // A read's only target is the supplier of the data.
            if let Some((supplier_core, _)) = supplier {
                reach.add(topology, directory_node, supplier_core);
            }
        }
        let no_targets = !reach.any;
        let requester_socket = requester.socket;
        // A read of a clean line: other caches hold it, none of them
        // writable (no M or E copy that must answer before the line can
        // change hands), so no ownership moves and nobody must acknowledge.
        let clean_read = need == Need::Read && other_copies && !writable_other;
        let mut cross_socket = false;
        let route;
        let cost;
        if (data_from_cache || !needs_data) && reach.all_in_l3 && !no_targets {
            route = Route::SameL3;
            cost = l.l3_transfer_cycles;
        } else if needs_data && !data_from_cache {
            // Memory at the home supplies the data; invalidations (if any)
            // proceed in parallel through the directory.
            let memory_path = topology.hop_place_to_node(requester, home) * 2 + l.dram_cycles;
            cross_socket |= topology.socket_of_node(home) != requester_socket;
            let invalidate_path = if no_targets {
                0
            } else {
                reach.directory_path(topology, directory_node)
            };
            cross_socket |= reach.cross_socket;
            route = Route::Memory { node: home };
            cost = memory_path.max(invalidate_path);
        } else {
            cross_socket |= topology.socket_of_node(directory_node) != requester_socket;
            cross_socket |= reach.cross_socket;
            route = Route::Directory {
                node: directory_node,
            };
            cost = if no_targets {
                // Permission only (an upgrade with no other copy): ask and be answered.
                topology.hop_place_to_node(requester, directory_node) * 2
            } else {
                reach.directory_path(topology, directory_node)
            };
        }
        let done = start + cost;
        // How long the line keeps the home from ordering the next request.
        // A transfer of ownership (any write, any read of an M or E copy)
        // holds it until the data and every acknowledgement have arrived,
        // and so does a read resolved through the directory (a new sharer
        // recorded at the home, as any other change of the line's entry). A
        // clean read resolved inside the requester's L3 domain holds the
        // domain's tags only while they forward the request: the supplier's
        // data leg overlaps with the next request, so N cores re-reading a
        // released line of their own L3 cost N forward legs plus one
        // transfer, not N transfers (a shared line is served by the L3 or
        // the forwarding copy, pipelined). The three legs of an L3 transfer
        // (request to the tags, forward to the supplier, data back) are
        // taken as equal, as the Intel presets derive their mesh hop from
        // the same figure. ASSUMED: no calibration source measures the
        // tags' occupancy; the forward leg is the part of the path that
        // needs their decision.
        let busy_cycles = if clean_read && route == Route::SameL3 {
            l.l3_transfer_cycles / 3
        } else {
            cost
        };

        // Apply the new states.
        let mut hitm = false;
        let supplier_report = if data_from_cache {
            supplier.map(|(c, s)| {
                hitm = matches!(s, LineState::Modified | LineState::Owned);
                let sibling_cpu = c; // thread 0 of the supplier's core, for the class
                (c, s, topology.pair_class(cpu, sibling_cpu))
            })
        } else {
            None
        };
        let invalidations;
        let requester_after;
        match need {
            Need::Write => {
                // Every other copy was listed above; the requester's own copy
                // (if any) is replaced below.
                invalidations = others.len() as u32;
                u.holders.clear();
                #[cfg(test)]
                for h in planted::spared_on_write(&previous_holders, core, have_data) {
                    let at = u.holders.partition_point(|k| k.core < h.core);
                    u.holders.insert(at, h);
                }
                u.version += 1;
                requester_after = LineState::Modified;
            }
            Need::Read => {
                invalidations = 0;
                let mut new_state = LineState::Shared;
                if !other_copies {
                    new_state = LineState::Exclusive;
                } else {
                    let mut owned = requester_before == LineState::Owned;
                    for h in u.holders.iter_mut().filter(|h| h.core != core) {
                        let before = h.state;
                        let after = match (protocol, before) {
                            (Protocol::Moesi, LineState::Modified) => LineState::Owned,
                            (Protocol::Moesi, LineState::Owned) => LineState::Owned,
                            (_, LineState::Shared) => LineState::Shared,
                            // E, M (MESI, MESIF) and F give up answering
                            // for the line: M writes back and both share.
                            _ => LineState::Shared,
                        };
                        #[cfg(test)]
                        let after = match (protocol, before) {
                            (Protocol::Moesi, LineState::Modified)
                                if planted!(MoesiModifiedToShared) =>
                            {
                                LineState::Shared
                            }
                            (_, LineState::Forward) if planted!(MesifKeepsForward) => {
                                LineState::Forward
                            }
                            _ => after,
                        };
                        owned |= after == LineState::Owned;
                        if after != before {
                            h.state = after;
                            others.push(StateChange {
                                core: h.core,
                                before,
                                after,
                            });
                        }
                    }
                    if protocol == Protocol::Mesif && !owned {
                        // The newest sharer becomes the forwarder.
                        new_state = LineState::Forward;
                    }
                }
                #[cfg(test)]
                if planted!(ExclusiveDespiteSharers)
                    && u.holders
                        .iter()
                        .all(|h| h.core == core || h.state == LineState::Shared)
                {
                    new_state = LineState::Exclusive;
                }
                requester_after = new_state;
            }
        }
        let version = u.version;
        let holder = Holder {
            core,
            state: requester_after,
            ready_at: done,
            version,
            last_writer_thread: if need == Need::Write {
                thread
            } else {
                NO_THREAD
            },
        };
        match u.holders.binary_search_by_key(&core, |h| h.core) {
            Ok(i) => u.holders[i] = holder,
            Err(i) => u.holders.insert(i, holder),
        }
        // Directory follows the caches: the holders are the old ones less
        // those a write invalidated (their bits dropped above) plus the
        // requester, and the owner is the cache that now answers for the
        // line (at most one does).
        u.dir_sharers.insert(core);
        u.dir_owner = u
            .holders
            .iter()
            .rev()
            .find(|h| h.state.supplies_data())
            .map(|h| h.core);
        #[cfg(test)]
        {
            if planted::any_active() {
                // A planted bug may leave copies the update above does not
                // know of: the directory is rebuilt from the caches.
                u.dir_sharers.clear();
                for h in &u.holders {
                    u.dir_sharers.insert(h.core);
                }
            }
            if planted!(DirectoryKeepsOwner) && u.dir_owner.is_none() {
                u.dir_owner = previous_owner;
            }
            if planted!(DirectoryMissesRequester) && requester_before == LineState::Invalid {
                let kept: Vec<u32> = u.dir_sharers.iter().filter(|&c| c != core).collect();
                u.dir_sharers.clear();
                kept.into_iter().for_each(|c| u.dir_sharers.insert(c));
            }
        }
        u.busy_until = start + busy_cycles;
        if hold_cycles > 0 {
            u.locked_until = done + hold_cycles;
            u.busy_until = u.locked_until;
        }
        AccessReport {
            unit: unit_index,
            need,
            issued,
            started: start,
            done,
            route,
            supplier: supplier_report,
            requester_before,
            requester_after,
            others,
            invalidations,
            hitm,
            cross_socket,
        }
    }

    /// Checks single-writer-multiple-reader, the data-value invariant and
    /// directory-cache agreement on one line.
    pub fn check_unit(&self, unit: usize, cycle: Cycle) -> Result<(), SimError> {
        let u = &self.units[unit];
        let fail = |message: String| {
            Err(SimError::ProtocolViolation {
                cycle,
                unit,
                address: unit as u64 * self.unit_bytes as u64,
                message,
                states: self.describe_unit(unit),
            })
        };
        let writable = u.holders.iter().filter(|h| h.state.is_writable()).count();
        if writable > 0 && u.holders.len() > 1 {
            return fail(format!(
                "single writer violated: a writable copy coexists with {} other copies",
                u.holders.len() - 1
            ));
        }
        let suppliers = u.holders.iter().filter(|h| h.state.supplies_data()).count();
        if suppliers > 1 {
            return fail(format!(
                "{suppliers} caches answer for the line; at most one may"
            ));
        }
        for h in &u.holders {
            let allowed = match h.state {
                LineState::Invalid => false,
                LineState::Owned => self.protocol == Protocol::Moesi,
                LineState::Forward => self.protocol == Protocol::Mesif,
                _ => true,
            };
            if !allowed {
                return fail(format!(
                    "core {} holds the line in state {} which {} does not have",
                    h.core,
                    h.state,
                    self.protocol.name()
                ));
            }
            if h.version != u.version {
                return fail(format!(
                    "data value: core {} holds write #{} but the last write is #{}",
                    h.core, h.version, u.version
                ));
            }
        }
        let cached: Vec<u32> = u.holders.iter().map(|h| h.core).collect();
        let directory: Vec<u32> = u.dir_sharers.iter().collect();
        if cached != directory {
            return fail(format!(
                "directory lists sharers {directory:?} but caches {cached:?} hold the line"
            ));
        }
        let owner = u
            .holders
            .iter()
            .find(|h| h.state.supplies_data())
            .map(|h| h.core);
        if owner != u.dir_owner {
            return fail(format!(
                "directory names owner {:?} but the answering cache is {:?}",
                u.dir_owner, owner
            ));
        }
        Ok(())
    }

    /// The line's states, as `core 3: M, core 9: S; directory owner 3, sharers [3, 9]`.
    pub fn describe_unit(&self, unit: usize) -> String {
        let u = &self.units[unit];
        let caches: Vec<String> = u
            .holders
            .iter()
            .map(|h| format!("core {}: {}", h.core, h.state))
            .collect();
        let caches = if caches.is_empty() {
            "no cached copy".to_string()
        } else {
            caches.join(", ")
        };
        format!(
            "{caches}; directory owner {:?}, sharers {:?}; home node {}; write #{}",
            u.dir_owner,
            u.dir_sharers.iter().collect::<Vec<_>>(),
            u.home_node,
            u.version
        )
    }

    #[cfg(test)]
    pub(crate) fn corrupt_version_for_test(&mut self, unit: usize) {
        if let Some(h) = self.units[unit].holders.first_mut() {
            h.version = h.version.wrapping_add(7);
        }
    }
}

/// Support for the exhaustive checker ([`crate::checker`]): read access to
/// the protocol state, and the abstraction of time that keeps the checker's
/// state space finite. None of it is used by the engine.
impl Coherence {
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The line's write count: its position in coherence order.
    pub fn version(&self, unit: usize) -> u64 {
        self.units[unit].version
    }

    /// The caches holding the line and their states, by core.
    pub fn holders(&self, unit: usize) -> impl ExactSizeIterator<Item = (u32, LineState)> + '_ {
        self.units[unit].holders.iter().map(|h| (h.core, h.state))
    }

    /// Requests waiting for the line, in queue order.
    pub fn waiters(&self, unit: usize) -> &[Waiter] {
        &self.units[unit].waiting
    }

    /// Forgets time after a step taken at `now`: a line still busy (a
    /// transaction in flight or a lock held) stays busy until `now + 1`,
    /// every other time (the lock's end too) becomes `now`; waiters are put in (cpu, tag) order
    /// (the home's choice among them does not depend on their order, and the
    /// checker tries every choice); write counts are counted from the line's
    /// current one. With one thread per core, which thread wrote a line last
    /// cannot matter and is forgotten too. What is left is the state that
    /// decides what the protocol can do next.
    pub(crate) fn abstract_time(&mut self, now: Cycle, one_thread_per_core: bool) {
        for u in &mut self.units {
            u.busy_until = if u.busy_until > now { now + 1 } else { now };
            // The lock only delays hits (times); the line stays busy for it.
            u.locked_until = now;
            let base = u.version;
            u.version = 0;
            for h in &mut u.holders {
                h.ready_at = now;
                h.version = h.version.wrapping_sub(base);
                if one_thread_per_core {
                    h.last_writer_thread = NO_THREAD;
                }
            }
            for w in &mut u.waiting {
                w.issued = now;
            }
            u.waiting.sort_unstable_by_key(|w| (w.cpu, w.tag));
        }
    }

    /// Becomes a copy of `other` (a state of the same configuration),
    /// reusing this one's allocations.
    pub(crate) fn copy_from(&mut self, other: &Coherence) {
        self.units.truncate(other.units.len());
        for (u, o) in self.units.iter_mut().zip(&other.units) {
            u.home_node = o.home_node;
            u.busy_until = o.busy_until;
            u.locked_until = o.locked_until;
            u.version = o.version;
            u.dir_owner = o.dir_owner;
            u.dir_sharers.words.clone_from(&o.dir_sharers.words);
            u.holders.clone_from(&o.holders);
            u.waiting.clone_from(&o.waiting);
        }
        let have = self.units.len();
        self.units.extend(other.units[have..].iter().cloned());
        self.protocol = other.protocol;
        self.lookup = other.lookup;
        self.check_invariants = other.check_invariants;
        self.special_transactions = other.special_transactions;
        self.unit_bytes = other.unit_bytes;
    }

    /// Lets the line's transaction (or lock) end, at `now`.
    pub(crate) fn end_busy(&mut self, unit: usize, now: Cycle) {
        let u = &mut self.units[unit];
        u.busy_until = now;
        u.locked_until = now;
    }

    /// Appends an exact encoding of every field that changes (the ones fixed
    /// at construction are left out), under a renaming of cores, CPUs,
    /// waiter tags and lines: equal encodings, states equal up to that
    /// renaming. The checker takes the least encoding over the renamings
    /// that map the configuration onto itself (symmetry reduction).
    pub(crate) fn encode(&self, renaming: &Renaming<'_>, out: &mut Vec<u8>) {
        let core = |c: u32| renaming.cores[c as usize];
        let key = |w: &Waiter| (renaming.cpus[w.cpu as usize], (renaming.tags)(w.tag));
        for &unit in renaming.units {
            let u = &self.units[unit];
            put_varint(out, u.busy_until.0);
            put_varint(out, u.locked_until.0);
            put_varint(out, u.version);
            put_varint(out, u.dir_owner.map_or(0, |c| core(c) as u64 + 1));
            // Sharers and holders in the new core order.
            for &old in renaming.core_at {
                out.push(u.dir_sharers.contains(old) as u8);
            }
            put_varint(out, u.holders.len() as u64);
            for &old in renaming.core_at {
                if let Ok(i) = u.holders.binary_search_by_key(&old, |h| h.core) {
                    let h = &u.holders[i];
                    put_varint(out, core(h.core) as u64);
                    out.push(h.state as u8);
                    put_varint(out, h.ready_at.0);
                    put_varint(out, h.version);
                    out.push(h.last_writer_thread);
                }
            }
            // Waiters in (new CPU, new tag) order, picked one key at a time
            // (there are few) rather than sorted.
            put_varint(out, u.waiting.len() as u64);
            let mut last: Option<(u32, u32)> = None;
            let mut emitted = 0;
            while emitted < u.waiting.len() {
                let mut least: Option<(u32, u32)> = None;
                for w in &u.waiting {
                    let k = key(w);
                    if last.is_none_or(|l| k > l) && least.is_none_or(|m| k < m) {
                        least = Some(k);
                    }
                }
                for w in &u.waiting {
                    if Some(key(w)) != least {
                        continue;
                    }
                    let (cpu, tag) = key(w);
                    put_varint(out, cpu as u64);
                    put_varint(out, core(w.core) as u64);
                    out.push(w.need as u8);
                    put_varint(out, w.hold_cycles);
                    put_varint(out, w.issued.0);
                    put_varint(out, tag as u64);
                    emitted += 1;
                }
                last = least;
            }
        }
    }
}

/// A renaming for [`Coherence::encode`]: `cores[c]` and `cpus[c]` are the
/// new numbers of core and CPU `c`, `core_at[n]` the old core numbered `n`,
/// `tags` renames the engine's tags, and `units` lists the old unit numbers
/// in their new order. Every core is renamed (a permutation).
pub(crate) struct Renaming<'a> {
    pub cores: &'a [u32],
    pub core_at: &'a [u32],
    pub cpus: &'a [u32],
    pub tags: &'a dyn Fn(u32) -> u32,
    pub units: &'a [usize],
}

/// LEB128: seven bits a byte, low first, high bit set on all but the last.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Deliberately broken transitions, compiled only into this crate's unit
/// tests: the exhaustive checker must catch every one (see the tests of
/// [`crate::checker`]). One bug at a time is switched on, per test thread.
#[cfg(test)]
pub(crate) mod planted {
    use super::{Holder, LineState};
    use std::cell::Cell;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Bug {
        /// A write miss that finds several other copies leaves the last one valid.
        WriteSparesOneSharer,
        /// An upgrade (the writer already has the data) leaves the other
        /// Shared copies valid.
        UpgradeKeepsSharers,
        /// MOESI: a read of a Modified line leaves it Shared instead of
        /// Owned, without a writeback: the dirty data has no owner.
        MoesiModifiedToShared,
        /// MESIF: the old forwarder stays F when a new reader becomes F.
        MesifKeepsForward,
        /// A read is granted Exclusive while other Shared copies exist.
        ExclusiveDespiteSharers,
        /// MOESI: an Owned copy is not asked for the data; memory answers.
        OwnedNotSupplier,
        /// A write hit does not advance the line's write count.
        WriteHitKeepsVersion,
        /// The directory does not add a requester that had no copy.
        DirectoryMissesRequester,
        /// The directory keeps the old owner when no cache answers any more.
        DirectoryKeepsOwner,
        /// The home serves a waiter while the line's transaction is in flight.
        ServeWhileBusy,
        /// A core hits in its cache while another core's request waits.
        HitBypassesQueue,
        /// When only holders' re-accesses wait, the home serves none of them.
        HoldersNeverServed,
        /// The home takes a waiting read off the queue and never answers it.
        ServeDropsRead,
        /// An adjacent-line prefetch read of a Modified line grants the
        /// prefetcher a Shared copy but leaves the owner Modified.
        PrefetchKeepsOwnerModified,
    }

    impl Bug {
        pub(crate) const ALL: [Bug; 14] = [
            Bug::WriteSparesOneSharer,
            Bug::UpgradeKeepsSharers,
            Bug::MoesiModifiedToShared,
            Bug::MesifKeepsForward,
            Bug::ExclusiveDespiteSharers,
            Bug::OwnedNotSupplier,
            Bug::WriteHitKeepsVersion,
            Bug::DirectoryMissesRequester,
            Bug::DirectoryKeepsOwner,
            Bug::ServeWhileBusy,
            Bug::HitBypassesQueue,
            Bug::HoldersNeverServed,
            Bug::ServeDropsRead,
            Bug::PrefetchKeepsOwnerModified,
        ];
    }

    thread_local! {
        static ACTIVE: Cell<Option<Bug>> = const { Cell::new(None) };
    }

    pub(crate) fn active(bug: Bug) -> bool {
        ACTIVE.with(|a| a.get() == Some(bug))
    }

    /// Some planted bug is switched on in this thread.
    pub(crate) fn any_active() -> bool {
        ACTIVE.with(|a| a.get().is_some())
    }

    /// Runs `f` with `bug` switched on in this thread.
    pub(crate) fn with<R>(bug: Bug, f: impl FnOnce() -> R) -> R {
        struct Off;
        impl Drop for Off {
            fn drop(&mut self) {
                ACTIVE.with(|a| a.set(None));
            }
        }
        ACTIVE.with(|a| a.set(Some(bug)));
        let _off = Off;
        f()
    }

    /// The other copies a broken write leaves valid.
    pub(super) fn spared_on_write(holders: &[Holder], core: u32, have_data: bool) -> Vec<Holder> {
        let others: Vec<Holder> = holders.iter().filter(|h| h.core != core).copied().collect();
        if active(Bug::WriteSparesOneSharer) && !have_data && others.len() >= 2 {
            others.last().copied().into_iter().collect()
        } else if active(Bug::UpgradeKeepsSharers) && have_data {
            others
                .into_iter()
                .filter(|h| h.state == LineState::Shared)
                .collect()
        } else {
            Vec::new()
        }
    }
}

/// What a transaction's targets (the supplier of data and the copies to
/// invalidate) mean for its cost, gathered as they are met (their order
/// does not matter).
struct TargetReach {
    requester: CorePlace,
    /// There is at least one target.
    any: bool,
    /// Every target shares the requester's L3 domain (true without targets).
    all_in_l3: bool,
    /// Some target is on another socket than the requester.
    cross_socket: bool,
    /// max over targets of [leg(directory, target) + leg(target, requester)].
    slowest: u64,
}

impl TargetReach {
    #[inline]
    fn new(requester: CorePlace) -> TargetReach {
        TargetReach {
            requester,
            any: false,
            all_in_l3: true,
            cross_socket: false,
            slowest: 0,
        }
    }

    #[inline]
    fn add(&mut self, topology: &Topology, directory_node: u32, target_core: u32) {
        let target = topology.place_of_core(target_core);
        self.any = true;
        self.all_in_l3 &= target.l3 == self.requester.l3;
        self.cross_socket |= target.socket != self.requester.socket;
        self.slowest = self.slowest.max(
            topology.hop_place_to_node(target, directory_node)
                + topology.hop_between_places(target, self.requester),
        );
    }

    /// leg(requester, directory) + max over targets of [leg(directory,
    /// target) + leg(target, requester)] (the first leg alone without targets).
    #[inline]
    fn directory_path(&self, topology: &Topology, directory_node: u32) -> u64 {
        topology.hop_place_to_node(self.requester, directory_node) + self.slowest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{LatencySpec, MachineSpec};

    fn topology() -> Topology {
        Topology::new(MachineSpec {
            name: "test".into(),
            clock_mhz: 2000,
            sockets: 2,
            nodes_per_socket: 2,
            l3_per_node: 2,
            cores_per_l3: 2,
            threads_per_core: 1,
            line_size_bytes: 64,
            protocol: Protocol::Mesi,
            lookup: Lookup::Home,
            adjacent_line_prefetch: false,
            store_buffer_entries: 8,
            latency: LatencySpec {
                l1_hit_cycles: 4,
                locked_op_cycles: 20,
                smt_transfer_cycles: 7,
                l3_transfer_cycles: 60,
                hop_in_node_cycles: 30,
                hop_between_nodes_cycles: 50,
                hop_between_sockets_cycles: 110,
                dram_cycles: 150,
            },
        })
        .unwrap()
    }

    fn coherence(topology: &Topology, homes: &[u32]) -> Coherence {
        let memory = MemoryLayout {
            structs: Vec::new(),
            instances: Vec::new(),
            total_bytes: 64 * homes.len() as u64,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: homes.to_vec(),
        };
        let mut c = Coherence::new(topology, &memory);
        c.check_invariants = true;
        c
    }

    /// A read by `cpu` once the line is free; returns when it is done.
    fn read(c: &mut Coherence, t: &Topology, at: Cycle, cpu: u32, unit: usize) -> Cycle {
        let at = at.max(c.busy_until(unit));
        match c.request(t, at, cpu, unit, Need::Read, 0, 0).unwrap() {
            Requested::Done(r) => r.done,
            Requested::Queued { .. } => panic!("line busy"),
        }
    }

    /// The special transaction shapes (`write_taking_the_only_copy`) give
    /// the same states and reports as the general walk: random requests on
    /// three lines by CPUs of a two-socket SMT machine, under every protocol
    /// and directory lookup, run twice, once with the general walk only.
    #[test]
    fn special_transaction_shapes_match_the_general_walk() {
        let mut taken_specially = 0;
        for protocol in [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi] {
            for lookup in [Lookup::Home, Lookup::Local] {
                let mut spec = topology().spec;
                spec.threads_per_core = 2;
                spec.protocol = protocol;
                spec.lookup = lookup;
                let t = Topology::new(spec).unwrap();
                let mut fast = coherence(&t, &[0, 1, 3]);
                let mut general = fast.clone();
                general.special_transactions = false;
                // A small linear congruential generator: the test needs
                // variety, not quality.
                let mut state: u64 = 0x2545_f491_4f6c_dd1d ^ protocol as u64 ^ (lookup as u64) << 8;
                let mut next = |below: u64| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    (state >> 33) % below
                };
                let mut at = Cycle::ZERO;
                for _ in 0..3000 {
                    let cpu = next(t.cpu_count() as u64) as u32;
                    let unit = next(3) as usize;
                    let need = if next(2) == 0 {
                        Need::Read
                    } else {
                        Need::Write
                    };
                    let hold = if need == Need::Write && next(2) == 0 {
                        20
                    } else {
                        0
                    };
                    at = at.max(fast.busy_until(unit)) + next(5);
                    let before = fast.units[unit].holders.clone();
                    let special = need == Need::Write
                        && before.len() == 1
                        && before[0].core != t.core_of(cpu);
                    taken_specially += special as u32;
                    let a = fast.request(&t, at, cpu, unit, need, hold, 0).unwrap();
                    let b = general.request(&t, at, cpu, unit, need, hold, 0).unwrap();
                    assert_eq!(
                        a, b,
                        "{protocol:?} {lookup:?} cpu {cpu} line {unit} {need:?}"
                    );
                    // The same states; only the switch and its count differ.
                    let same_switch = Coherence {
                        special_transactions: true,
                        special_transactions_taken: fast.special_transactions_taken,
                        ..general.clone()
                    };
                    assert_eq!(fast, same_switch, "{protocol:?} {lookup:?} after cpu {cpu}");
                }
            }
        }
        // The special shape is common under random writes, not an accident.
        assert!(taken_specially > 2000, "{taken_specially}");
    }

    #[test]
    fn a_corrupted_copy_fails_the_data_value_invariant() {
        let t = topology();
        let mut c = coherence(&t, &[0, 1]);
        let done = read(&mut c, &t, Cycle::ZERO, 0, 1);
        read(&mut c, &t, done, 4, 1);
        assert_eq!(c.check_unit(1, Cycle(500)), Ok(()));
        c.corrupt_version_for_test(1);
        let err = c.check_unit(1, Cycle(1234)).unwrap_err();
        let SimError::ProtocolViolation {
            cycle,
            unit,
            address,
            message,
            states,
        } = &err
        else {
            panic!("expected a protocol violation, got {err:?}");
        };
        assert_eq!((*cycle, *unit, *address), (Cycle(1234), 1, 0x40));
        assert_eq!(
            message,
            "data value: core 0 holds write #7 but the last write is #0"
        );
        assert_eq!(
            states,
            "core 0: S, core 4: S; directory owner None, sharers [0, 4]; home node 1; write #0"
        );
        assert_eq!(
            err.to_string(),
            "protocol violation at cycle 1234 on line 1 (address 0x40): \
             data value: core 0 holds write #7 but the last write is #0\n  \
             states: core 0: S, core 4: S; directory owner None, sharers [0, 4]; \
             home node 1; write #0"
        );
        // The other line is untouched.
        assert_eq!(c.check_unit(0, Cycle(1234)), Ok(()));
    }

    #[test]
    fn the_next_transaction_on_a_corrupted_line_stops_with_the_violation() {
        let t = topology();
        let mut c = coherence(&t, &[2]);
        let done = read(&mut c, &t, Cycle::ZERO, 8, 0);
        c.corrupt_version_for_test(0);
        let at = done.max(c.busy_until(0));
        let err = c.request(&t, at, 12, 0, Need::Read, 0, 0).unwrap_err();
        match err {
            SimError::ProtocolViolation {
                cycle,
                unit,
                message,
                states,
                ..
            } => {
                assert_eq!((cycle, unit), (at, 0));
                assert!(message.starts_with("data value: core 8 holds write #7"));
                assert!(states.starts_with("core 8: S, core 12: S;"), "{states}");
            }
            other => panic!("expected a protocol violation, got {other:?}"),
        }
        // Without the checks, the same corruption goes unnoticed.
        let mut c = coherence(&t, &[2]);
        c.check_invariants = false;
        let done = read(&mut c, &t, Cycle::ZERO, 8, 0);
        c.corrupt_version_for_test(0);
        read(&mut c, &t, done, 12, 0);
        assert!(c.check_unit(0, done).is_err());
    }
}
