//! The coherence protocol: a directory entry at each line's home, a state
//! per private (per-core) cache, and the cost of every transaction computed
//! from the three parties (requester, owner or sharers, home) and their
//! distances in the topology.
//!
//! Model decisions (see ARCHITECTURE.md, "Coherence model"):
//! - Private caches are per core and shared by its SMT threads. They are
//!   bounded by the machine's `private_caches` (an L1D and an L2, set
//!   associative, LRU: `capacity`), or unbounded where it gives none.
//! - Transactions on one line are ordered at its home. A request that
//!   arrives while the line is busy (a transaction in flight, or an atomic
//!   holding it) waits in the line's queue; when the line frees, the home
//!   serves one waiter and applies its state changes then, so contention,
//!   queueing and the collapse of a shared atomic come from this rule alone.
//!   Which waiter wins is the engine's seeded choice: real homes resolve
//!   conflicts by retries, which is not first come, first served. A core
//!   that already holds the line and queued only behind a pending snoop
//!   yields to the other cores' requests. While requests are queued, a
//!   core holding the line still hits on it when the access ends before
//!   the snoop of the next one served could reach it (`hits::try_hit`);
//!   that transaction then ends no earlier than such hits.
//! - A transaction keeps the line busy for its whole cost, except a read of
//!   a line already resolved to a cache that answers for it (a clean line
//!   with a forwarding or owning copy, or kept by the requester's L3): the
//!   home takes the next request `home_occupancy_cycles` later, so reads of
//!   a shared line are pipelined while writes and atomics stay one at a
//!   time (see `busy_cycles` in `transaction`).
//! - A locked read-modify-write keeps the line for its execution
//!   (`locked_until`), delaying both the next request and SMT siblings.
//! - Costs: a read of a clean line that the requester's L3 keeps (another
//!   core of the domain holds it, none anywhere holds it writable, and the
//!   machine's L3 keeps shared lines) is an L3 hit (`l3_hit_cycles`); a
//!   write of such a line held only Shared takes its data there too, once
//!   the copies are invalidated (a transfer's cost inside the domain, the
//!   directory's path beyond it). A
//!   transfer inside one L3 domain is resolved by the domain's tags
//!   (`l3_transfer_cycles`). Otherwise the request goes to the directory
//!   (`Lookup::Home`: the line's home node; `Lookup::Local`: the requester's
//!   own node's snoop filter), which forwards to each target (the supplier
//!   of data and every sharer to invalidate), and each target answers the
//!   requester directly: cost = leg(requester, directory) + max over targets
//!   of [leg(directory, target) + leg(target, requester)]. Data that no
//!   cache supplies comes from memory at the home: leg + DRAM + leg. With a
//!   `broadcast-shared` directory a write to a line with Shared or Owned
//!   copies sends its invalidation to every L3 domain of the machine.
//! - Clean copies (optional machine keys; absent, the rules above): a
//!   read a core answers from a clean copy (E, F, S) costs
//!   `clean_snoop_saving_cycles` less than from a dirty one;
//!   `CleanSharedLineAnswer` says who answers a line held only Shared or
//!   Forward in another domain (the Forward copy else memory; that
//!   domain's L3 without a core snoop, `l3_transfer - l3_hit` less; or,
//!   for a line held in one domain only, a core of that domain).
//! - Intel across sockets (`Lookup::Local`, a target on another socket):
//!   the requester's socket's snoop filter resolves only the copies of its
//!   own socket, so the request goes on over UPI to the home agent of the
//!   line's home node (directory-based home snoop, with the HitME cache
//!   since Skylake-SP), which snoops the other socket; the snooped cache
//!   answers the requester directly. Reported as [`Route::HomeAgent`]. Its
//!   cost is the directory path's, leg(requester, snoop filter) + 2 socket
//!   legs, which the presets fit to the measured cross-socket latency; the
//!   trace and timeline split it into the steps: to the snoop filter (a
//!   leg inside the node), on to the home agent (the socket leg less one
//!   leg inside the node, when the home is on another socket: a socket leg
//!   includes the mesh hop to the agent at its far end), the home agent's
//!   snoop inside its socket (one leg inside the node), and the answer back
//!   (a socket leg). When the home is on the requester's own socket its
//!   agent is reached in the first leg and snoops across the link. (With
//!   three or more sockets and the home on a third one, the model still
//!   charges the requester-target pair's legs, not the detour.)
//!
//! The files: this one holds the states, the per-line entries and the
//! reports; `hits` the accesses a cache answers itself; `transaction` the
//! requests at a line's home, their state changes and costs, and the
//! prefetch; `invariants` the checks made after each transaction;
//! `abstract_state` what the exhaustive checker reads and encodes (none of
//! it used by the engine); `planted`, only in this crate's unit tests and
//! with the `planted-bugs` feature, the deliberately broken transitions the
//! checker must catch.

use crate::cpu::{CpuIndex, LinuxCpu};
use crate::error::SimError;
use crate::memory::MemoryLayout;
use crate::time::{Cycle, Cycles};
use crate::topology::{
    CleanSharedLineAnswer, CorePlace, DirectoryLegs, DirectoryPrecision, L3SharedLines, Lookup,
    PairClass, PrivateCacheSpec, Protocol, Topology,
};
use std::fmt;

mod abstract_state;
mod capacity;
mod hits;
mod invariants;
#[cfg(any(test, feature = "planted-bugs"))]
pub mod planted;
mod transaction;
mod waiting;

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
    /// SMT thread of the core that last wrote the line, if one did since
    /// the copy was filled (reads forget it once a sibling's write is seen).
    last_writer_thread: Option<u8>,
    /// The copy is in the core's L1D, not only its L2 (`capacity`; always
    /// with unbounded caches).
    in_l1: bool,
    /// The cycle of the copy's last access, its recency for the caches'
    /// LRU replacement (`capacity`).
    last_use: Cycle,
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
    /// `remove(from)` then `insert(to)`, on the words borrowed once (two
    /// calls reload the list's pointer and length after the first store).
    fn move_bit(&mut self, from: u32, to: u32) {
        let words = self.words.as_mut_slice();
        words[(from / 64) as usize] &= !(1 << (from % 64));
        words[(to / 64) as usize] |= 1 << (to % 64);
    }
    fn contains(&self, core: u32) -> bool {
        self.words[(core / 64) as usize] & (1 << (core % 64)) != 0
    }
    #[cfg(any(test, feature = "planted-bugs"))]
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
    /// Requests that arrived while the line was busy, in arrival order
    /// (until `swap_remove` takes one out: the last moves to its place).
    /// Changed only through `push_waiter` and `remove_waiter`, which keep
    /// its index in step.
    waiting: Vec<Waiter>,
    /// Where the queue's index by L3 domain and core is, once it has one
    /// (`waiting::DomainIndex`; in the padding after the `u32`s, so a line
    /// takes no more memory).
    domain_index: waiting::IndexSlot,
    /// The latest end (with an atomic's hold) of a holder's hit taken while
    /// requests were queued for the line: the next transaction hands the
    /// line over no earlier, since that hit's data leaves with it.
    queued_hits_done: Cycle,
}

/// A request waiting at a line's home for the line to be free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Waiter {
    pub cpu: LinuxCpu,
    /// The CPU's core (whose cache the request fills).
    pub core: u32,
    pub need: Need,
    pub hold_cycles: Cycles,
    pub issued: Cycle,
    /// Which CPU's which access this is, for the engine to finish.
    pub tag: RequestTag,
}

/// What kind of access a queued request is, for the engine to finish it
/// when the home serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A CPU's own load or atomic: the CPU waits for it.
    Demand,
    /// The CPU's store buffer writing its oldest store.
    Drain,
    /// An adjacent-line prefetch ([`Coherence::prefetch`]): a read nobody
    /// waits for.
    Prefetch,
}

/// The engine's name of a queued request: the CPU (its index among the
/// engine's CPUs, not its Linux number) and the kind of access.
///
/// Kept packed in 4 bytes (the CPU index shifted by one, the drain in bit
/// 0, the prefetch in bit 31) because a waiter is copied and compared on
/// every queued miss and the checker hashes it in every state; only this
/// type reads the bits. Its order (waiters are sorted by it) and its
/// `code` (the checker's encoding) are those of the packed number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct RequestTag(u32);

impl RequestTag {
    const DRAIN_BIT: u32 = 1;
    const PREFETCH_BIT: u32 = 1 << 31;

    /// The request of `kind` made by engine CPU `cpu` (below `limits`'
    /// CPU count, so the index fits beside the two kind bits).
    #[inline]
    pub const fn new(cpu: CpuIndex, kind: RequestKind) -> RequestTag {
        let cpu_bits = (cpu.get() as u32) << 1;
        RequestTag(match kind {
            RequestKind::Demand => cpu_bits,
            RequestKind::Drain => cpu_bits | Self::DRAIN_BIT,
            RequestKind::Prefetch => cpu_bits | Self::PREFETCH_BIT,
        })
    }

    /// The CPU that made the request.
    #[inline]
    pub const fn cpu(self) -> CpuIndex {
        CpuIndex::new(((self.0 & !Self::PREFETCH_BIT) >> 1) as usize)
    }

    #[inline]
    pub const fn kind(self) -> RequestKind {
        if self.0 & Self::PREFETCH_BIT != 0 {
            RequestKind::Prefetch
        } else if self.0 & Self::DRAIN_BIT != 0 {
            RequestKind::Drain
        } else {
            RequestKind::Demand
        }
    }

    /// The same kind of request made by `cpu` (the checker's renaming of
    /// caches).
    #[inline]
    pub const fn with_cpu(self, cpu: CpuIndex) -> RequestTag {
        RequestTag::new(cpu, self.kind())
    }

    /// A number that names the tag exactly, for the checker's encoding of
    /// a state (which it hashes and compares): equal tags, equal codes.
    #[inline]
    pub(crate) const fn code(self) -> u32 {
        self.0
    }
}

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
    /// The requester's own L3 domain `l3`, which keeps the clean line one
    /// of its other cores holds ([`L3SharedLines`]): an L3 hit.
    L3 { l3: u32 },
    /// Through the directory at `node`, from or invalidating other caches.
    Directory { node: u32 },
    /// Intel (`Lookup::Local`) across sockets: the requester's socket's
    /// snoop filter (at node `snoop_filter`) cannot resolve the line, so
    /// the request crosses the socket link to the home agent of the line's
    /// home node `home` (directory bits in memory and the HitME cache since
    /// Skylake-SP, source \[S19\]), which snoops the caches on other sockets; the
    /// snooped cache sends its data (or acknowledgement) straight back. The
    /// cost is the same total as the directory path (the presets' measured
    /// cross-socket latencies), split into these steps as the module's
    /// documentation says.
    HomeAgent { snoop_filter: u32, home: u32 },
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
    /// A hit taken while requests were queued for the line: the core
    /// still held it because the home had not yet served the next request
    /// and that request's snoop could not yet reach the core
    /// (`hits::try_hit`). False for every other access, queued or not.
    pub hit_while_requests_wait: bool,
}

impl AccessReport {
    pub fn is_hit(&self) -> bool {
        matches!(self.route, Route::Hit | Route::SmtSibling)
    }
    /// Cycles between the request and the data.
    pub fn latency_cycles(&self) -> u64 {
        (self.done - self.issued).get()
    }
    /// The data came from a Modified or Owned copy in a core on another
    /// NUMA node (`perf c2c`'s remote HITM; the rest are local).
    #[inline]
    pub fn hitm_from_other_node(&self) -> bool {
        self.hitm
            && self.supplier.is_some_and(|(_, _, class)| {
                matches!(class, PairClass::SameSocket | PairClass::CrossSocket)
            })
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
    /// Whether the L3 answers reads of clean lines its cores hold.
    l3_shared_lines: L3SharedLines,
    /// Whether a write to a shared line invalidates its copies or broadcasts.
    directory: DirectoryPrecision,
    /// Check the invariants after every transaction.
    pub check_invariants: bool,
    /// Whether the commonest contended shape may skip the general walk
    /// (`EngineOptions::special_transactions`; on by default).
    pub special_transactions: bool,
    /// How often it did (counted with the `shortcut-counts` feature only).
    pub special_transactions_taken: u64,
    /// Whether the report of a CPU's own atomic served from the queue may
    /// leave its `others` empty (its `invalidations` still counted): set
    /// by the engine when it sums atomics for the probe
    /// (`EngineOptions::summed_atomics`), whose sums read the count and
    /// never the list, so that the contended handover does not build a
    /// list nobody reads.
    pub atomic_changes_unlisted: bool,
    /// Whether a core holding the line keeps hitting on it while requests
    /// are queued, until the snoop of the next one served could reach it
    /// ([`Coherence::try_hit`]). On in the engine; the exhaustive checker
    /// turns it off: there such a hit is the same transition as a hit
    /// taken before the request queued (see the book's checker chapter).
    pub hits_until_snoop: bool,
    unit_bytes: u32,
    /// A report's `others` handed back by the engine ([`Coherence::recycle`]),
    /// reused by the next transaction instead of a new allocation.
    spare_changes: SpareChanges,
    /// The report of the last waiter served by
    /// [`Coherence::serve_next_in_place`], where the engine reads it.
    served: ServedReport,
    /// The queues' indexes by L3 domain and core (`waiting`), of the lines
    /// whose queue reached `waiting::INDEXED_FROM_WAITERS` on a machine
    /// where the socket agents draw; left out of equality and hash.
    domain_indexes: waiting::DomainIndexes,
    /// The private caches' capacity (`capacity`); `None`: unbounded.
    caches: Option<Box<capacity::Caches>>,
    /// Some core's caches have once had a full set (`capacity`): only
    /// then do the engine's private hits ask whether theirs have.
    any_pressured: bool,
    /// Cycles of an access that finds its line in the core's L2 but not
    /// its L1D.
    l2_hit_cycles: u64,
}

/// Scratch, not protocol state, like [`SpareChanges`]: equal and hashed
/// alike whatever it holds, and a clone starts empty.
#[derive(Debug)]
struct ServedReport(AccessReport);

impl Default for ServedReport {
    fn default() -> Self {
        ServedReport(AccessReport {
            unit: 0,
            need: Need::Read,
            issued: Cycle::ZERO,
            started: Cycle::ZERO,
            done: Cycle::ZERO,
            route: Route::Hit,
            supplier: None,
            requester_before: LineState::Invalid,
            requester_after: LineState::Invalid,
            others: Vec::new(),
            invalidations: 0,
            hitm: false,
            cross_socket: false,
            hit_while_requests_wait: false,
        })
    }
}

impl Clone for ServedReport {
    fn clone(&self) -> Self {
        ServedReport::default()
    }
}

impl PartialEq for ServedReport {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for ServedReport {}

impl std::hash::Hash for ServedReport {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
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
                domain_index: waiting::IndexSlot::default(),
                queued_hits_done: Cycle::ZERO,
            })
            .collect();
        Coherence {
            units,
            protocol: topology.spec.protocol,
            lookup: topology.spec.lookup,
            l3_shared_lines: topology.spec.l3_shared_lines,
            directory: topology.spec.directory,
            check_invariants: cfg!(debug_assertions),
            special_transactions: true,
            special_transactions_taken: 0,
            atomic_changes_unlisted: false,
            hits_until_snoop: true,
            unit_bytes: memory.unit_bytes,
            spare_changes: SpareChanges::default(),
            served: ServedReport::default(),
            domain_indexes: waiting::DomainIndexes::default(),
            caches: capacity::Caches::new(topology),
            any_pressured: false,
            l2_hit_cycles: topology.spec.private_caches.l2_hit_cycles,
        }
    }

    /// The report of the waiter [`Coherence::serve_next_in_place`] served
    /// last.
    #[inline(always)]
    pub fn served(&self) -> &AccessReport {
        &self.served.0
    }

    /// [`Coherence::served`] taken out (for a caller that must own it; it
    /// hands it back with [`Coherence::recycle`]).
    pub fn take_served(&mut self) -> AccessReport {
        std::mem::take(&mut self.served).0
    }

    /// Takes back a finished report's storage, for the next transaction.
    pub fn recycle(&mut self, report: AccessReport) {
        if report.others.capacity() > self.spare_changes.0.capacity() {
            self.spare_changes.0 = report.others;
        }
    }

    /// Core `core` powered down in deep idle at `now`
    /// (`MachineSpec::deep_idle_writeback_cycles`): its copy of every line
    /// is written back and dropped, the directory following (a Modified or
    /// Owned copy's data goes to memory; the core is idle, so the write
    /// costs nobody a cycle). The next reader finds no cache holding the
    /// line: memory supplies it, and a read gets it Exclusive. A line the
    /// home is still busy with (a transaction under way, an atomic's hold,
    /// requests waiting) or whose copy is still arriving keeps the copy.
    /// Returns how many copies were dropped.
    pub fn write_back_core(&mut self, core: u32, now: Cycle) -> u64 {
        let mut dropped = 0;
        for unit in 0..self.units.len() {
            dropped += self.drop_copy(core, unit, now) as u64;
        }
        dropped
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

    /// When `core`'s copy of `unit` arrives (the end of the fetch that
    /// brought it), if the core holds one.
    pub fn copy_ready_at(&self, core: u32, unit: usize) -> Option<Cycle> {
        let u = &self.units[unit];
        let i = u.holders.binary_search_by_key(&core, |h| h.core).ok()?;
        Some(u.holders[i].ready_at)
    }

    /// Requests queued on a line.
    pub fn waiting_count(&self, unit: usize) -> usize {
        self.units[unit].waiting.len()
    }

    /// When the line's current transaction or lock hold ends.
    pub fn busy_until(&self, unit: usize) -> Cycle {
        self.units[unit].busy_until
    }

    /// When the line must next be looked at to serve a waiting request
    /// ([`Coherence::busy_until`]), or `None` when nobody waits: one
    /// lookup of the line for the engine's next free.
    #[inline]
    pub fn busy_until_if_waiting(&self, unit: usize) -> Option<Cycle> {
        let u = &self.units[unit];
        (!u.waiting.is_empty()).then_some(u.busy_until)
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
    pub tags: &'a dyn Fn(RequestTag) -> RequestTag,
    pub units: &'a [usize],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::MachineSpec;

    const TAG: RequestTag = RequestTag::new(CpuIndex::new(0), RequestKind::Demand);

    fn topology() -> Topology {
        Topology::new(MachineSpec {
            sockets: 2,
            nodes_per_socket: 2,
            l3_per_node: 2,
            cores_per_l3: 2,
            ..MachineSpec::made_up("test", Protocol::Mesi, Lookup::Home)
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
    fn read(c: &mut Coherence, t: &Topology, at: Cycle, cpu: LinuxCpu, unit: usize) -> Cycle {
        let at = at.max(c.busy_until(unit));
        match c
            .request(t, at, cpu, unit, Need::Read, Cycles::ZERO, TAG)
            .unwrap()
        {
            Requested::Done(r) => r.done,
            Requested::Queued { .. } => panic!("line busy"),
        }
    }

    /// The special transaction shapes (`write_taking_the_only_copy`) give
    /// the same states and reports as the general walk: random requests on
    /// three lines by CPUs of a two-socket SMT machine, under every protocol
    /// and directory lookup, run twice, once with the general walk only.
    /// (A test's setup, loop and comparison, read top to bottom.)
    #[test]
    fn special_transaction_shapes_match_the_general_walk() {
        let mut taken_specially = 0;
        for protocol in [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi] {
            for (lookup, directory, l3_shared_lines) in [
                (
                    Lookup::Home,
                    DirectoryPrecision::Exact,
                    L3SharedLines::NotKept,
                ),
                (
                    Lookup::Local,
                    DirectoryPrecision::Exact,
                    L3SharedLines::NotKept,
                ),
                (
                    Lookup::Home,
                    DirectoryPrecision::BroadcastShared,
                    L3SharedLines::VictimWithSharing,
                ),
                (
                    Lookup::Local,
                    DirectoryPrecision::BroadcastShared,
                    L3SharedLines::Inclusive,
                ),
            ] {
                let mut spec = topology().spec;
                spec.threads_per_core = 2;
                spec.protocol = protocol;
                spec.lookup = lookup;
                spec.directory = directory;
                spec.l3_shared_lines = l3_shared_lines;
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
                    let cpu = LinuxCpu::new(next(t.cpu_count() as u64) as u32);
                    let unit = next(3) as usize;
                    let need = if next(2) == 0 {
                        Need::Read
                    } else {
                        Need::Write
                    };
                    let hold = Cycles::new(if need == Need::Write && next(2) == 0 {
                        20
                    } else {
                        0
                    });
                    at = at.max(fast.busy_until(unit)) + Cycles::new(next(5));
                    let before = fast.units[unit].holders.clone();
                    let special = need == Need::Write
                        && before.len() == 1
                        && before[0].core != t.core_of(cpu)
                        && !(directory == DirectoryPrecision::BroadcastShared
                            && matches!(before[0].state, LineState::Shared | LineState::Owned));
                    taken_specially += special as u32;
                    let a = fast.request(&t, at, cpu, unit, need, hold, TAG).unwrap();
                    let b = general.request(&t, at, cpu, unit, need, hold, TAG).unwrap();
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
        assert!(taken_specially > 4000, "{taken_specially}");
    }

    /// With `atomic_changes_unlisted`, a CPU's own atomic served from the
    /// queue by the special shape leaves its report's `others` empty and
    /// everything else as with the list (the report's other fields, the
    /// line's states); a store's drain keeps its list.
    #[test]
    fn unlisted_changes_leave_only_the_list_out() {
        let t = topology();
        let writer = LinuxCpu::new(0);
        let waiter = LinuxCpu::new(4);
        for kind in [RequestKind::Demand, RequestKind::Drain] {
            let tag = RequestTag::new(CpuIndex::new(4), kind);
            let served = |unlisted: bool| {
                let mut c = coherence(&t, &[0]);
                c.atomic_changes_unlisted = unlisted;
                // CPU 0 writes the line, holding it 20 cycles; CPU 4's
                // write queues behind and is served when the line frees.
                let hold = Cycles::new(20);
                c.request(&t, Cycle::ZERO, writer, 0, Need::Write, hold, TAG)
                    .unwrap();
                let queued = c.request(&t, Cycle::new(1), waiter, 0, Need::Write, hold, tag);
                let Ok(Requested::Queued { free_at, .. }) = queued else {
                    panic!("{queued:?}")
                };
                let (_, report) = c.serve_next(&t, free_at, 0, &mut |_| 0).unwrap().unwrap();
                (c, report)
            };
            let (listed, listed_report) = served(false);
            let (unlisted, unlisted_report) = served(true);
            assert_eq!(listed_report.others.len(), 1);
            assert_eq!(listed_report.invalidations, 1);
            let expected_others = match kind {
                RequestKind::Demand => Vec::new(),
                _ => listed_report.others.clone(),
            };
            assert_eq!(
                unlisted_report,
                AccessReport {
                    others: expected_others,
                    ..listed_report
                },
                "{kind:?}"
            );
            assert_eq!(unlisted.units, listed.units, "{kind:?}");
        }
    }

    /// A waiter served in place (`serve_next_in_place`, the special shape
    /// writing its report into `served` field by field) gets the general
    /// walk's report and states, under every protocol: a write queued
    /// behind another's, then a read, then a write again, each served in
    /// turn, listed and unlisted (the unlisted one's `served` left with no
    /// stale list from the listed report before it).
    #[test]
    fn a_report_served_in_place_is_the_general_walks() {
        let t = topology();
        let mut served_in_place = 0;
        for protocol in [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi] {
            for unlisted in [false, true] {
                let mut spec = t.spec.clone();
                spec.protocol = protocol;
                let t = Topology::new(spec).unwrap();
                let mut fast = coherence(&t, &[0]);
                fast.atomic_changes_unlisted = unlisted;
                let mut general = fast.clone();
                general.special_transactions = false;
                let hold = Cycles::new(20);
                let mut at = Cycle::ZERO;
                for (k, (cpu, need)) in [
                    (0, Need::Write),
                    (4, Need::Write),
                    (1, Need::Read),
                    (5, Need::Write),
                    (0, Need::Write),
                ]
                .into_iter()
                .enumerate()
                {
                    let cpu = LinuxCpu::new(cpu);
                    let kind = if k % 2 == 0 {
                        RequestKind::Drain
                    } else {
                        RequestKind::Demand
                    };
                    let tag = RequestTag::new(CpuIndex::new(cpu.get() as usize), kind);
                    let mut served = Vec::new();
                    for c in [&mut fast, &mut general] {
                        let queued = c.request(&t, at, cpu, 0, need, hold, tag).unwrap();
                        let report = match queued {
                            Requested::Done(report) => report,
                            Requested::Queued { free_at, .. } => {
                                let waiter = c.serve_next_in_place(&t, free_at, 0, &mut |_| 0);
                                assert_eq!(waiter.unwrap().map(|w| w.cpu), Some(cpu));
                                served_in_place += 1;
                                c.served().clone()
                            }
                        };
                        served.push(report);
                    }
                    let (a, b) = (&served[0], &served[1]);
                    // Unlisted, the special shape's list is empty (the
                    // general walk lists always).
                    let listed = !(unlisted && need == Need::Write && kind == RequestKind::Demand);
                    let others = if listed || !a.others.is_empty() {
                        b.others.clone()
                    } else {
                        Vec::new()
                    };
                    let b_as_fast = AccessReport {
                        others,
                        ..b.clone()
                    };
                    assert_eq!(
                        a, &b_as_fast,
                        "{protocol:?} unlisted {unlisted} request {k}"
                    );
                    assert_eq!(fast.units, general.units, "{protocol:?} request {k}");
                    at = b.done + Cycles::new(1);
                }
            }
        }
        // Every request after the first queued behind its predecessor's hold.
        assert_eq!(served_in_place, 3 * 2 * 4 * 2, "{served_in_place}");
    }

    #[test]
    fn a_corrupted_copy_fails_the_data_value_invariant() {
        let t = topology();
        let mut c = coherence(&t, &[0, 1]);
        let done = read(&mut c, &t, Cycle::ZERO, LinuxCpu::new(0), 1);
        read(&mut c, &t, done, LinuxCpu::new(4), 1);
        assert_eq!(c.check_unit(1, Cycle::new(500)), Ok(()));
        c.corrupt_version_for_test(1);
        let err = c.check_unit(1, Cycle::new(1234)).unwrap_err();
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
        assert_eq!((*cycle, *unit, *address), (Cycle::new(1234), 1, 0x40));
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
        assert_eq!(c.check_unit(0, Cycle::new(1234)), Ok(()));
    }

    #[test]
    fn the_next_transaction_on_a_corrupted_line_stops_with_the_violation() {
        let t = topology();
        let mut c = coherence(&t, &[2]);
        let done = read(&mut c, &t, Cycle::ZERO, LinuxCpu::new(8), 0);
        c.corrupt_version_for_test(0);
        let at = done.max(c.busy_until(0));
        let err = c
            .request(&t, at, LinuxCpu::new(12), 0, Need::Read, Cycles::ZERO, TAG)
            .unwrap_err();
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
        let done = read(&mut c, &t, Cycle::ZERO, LinuxCpu::new(8), 0);
        c.corrupt_version_for_test(0);
        read(&mut c, &t, done, LinuxCpu::new(12), 0);
        assert!(c.check_unit(0, done).is_err());
    }
}
