//! The machine: a tree of sockets, NUMA nodes, L3 domains, cores and SMT
//! threads (the CPUs), numbered as Linux numbers them, and the latencies of
//! moving a cache line across each level of that tree.
//!
//! The tree is regular (every socket has the same number of nodes, and so
//! on), which describes every preset: an Intel mesh die is one L3 domain per
//! node; an AMD CCX is one L3 domain; an SNC or NPS domain is one node.
//!
//! Linux numbering: physical cores are numbered socket by socket, node by
//! node, L3 domain by L3 domain; CPU `c` is thread 0 of core `c`, and CPU
//! `c + k * physical_cores` is its k-th SMT sibling (as lscpu shows on the
//! reference machines, calibration.md §0.1).

use crate::cpu::LinuxCpu;
use crate::time::Cycles;
use std::fmt;

/// Which cache-coherence protocol the private caches follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// Modified, Exclusive, Shared, Invalid.
    Mesi,
    /// MESI plus Forward: one clean sharer answers reads (Intel).
    Mesif,
    /// MESI plus Owned: a dirty line is shared without writing it back (AMD).
    Moesi,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mesi => "mesi",
            Protocol::Mesif => "mesif",
            Protocol::Moesi => "moesi",
        }
    }
}

/// Where a miss that cannot be answered inside the requester's L3 domain
/// looks the line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lookup {
    /// The snoop filter of the requester's own node tracks every line cached
    /// on it, whatever the line's home (Intel CHA snoop filter): a transfer
    /// between two cores of one socket never leaves the socket.
    Local,
    /// The directory (probe filter) at the line's home node is consulted for
    /// every transfer between L3 domains (AMD): a transfer between two cores
    /// of the socket that is not the home crosses to the home and back.
    Home,
}

impl Lookup {
    pub fn name(self) -> &'static str {
        match self {
            Lookup::Local => "local",
            Lookup::Home => "home",
        }
    }
}

/// Whether a core's L3 domain keeps the lines its cores read, so that a
/// clean or shared line held by one core of the domain is served to another
/// by the L3 itself, at its hit latency, instead of by a transfer from the
/// holding core (or, with only Shared copies under MOESI, from memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum L3SharedLines {
    /// The L3 does not keep them (a non-inclusive L3 filled by L2 victims
    /// only, as Intel's since Skylake-SP): another core's clean copy is
    /// fetched from that core.
    NotKept,
    /// The L3 holds every line its cores hold (an inclusive L3).
    Inclusive,
    /// A victim L3 that still holds a line read by several of its cores
    /// (AMD's CCX L3, with the cores' L2 tags shadowed in it).
    VictimWithSharing,
}

impl L3SharedLines {
    pub fn name(self) -> &'static str {
        match self {
            L3SharedLines::NotKept => "not-kept",
            L3SharedLines::Inclusive => "inclusive",
            L3SharedLines::VictimWithSharing => "victim-with-sharing",
        }
    }
    /// The L3 answers reads of a clean line one of its cores holds.
    pub fn supplies(self) -> bool {
        self != L3SharedLines::NotKept
    }
}

/// Who answers a read of a clean shared line, one whose copies are all
/// Shared or Forward (no cache holds it Modified, Owned or Exclusive), in
/// an L3 domain other than the requester's. (A copy in the requester's own
/// domain is answered by its L3 when that keeps lines, [`L3SharedLines`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CleanSharedLineAnswer {
    /// The forwarding copy (MESIF's Forward) answers at the cost of any
    /// cache-to-cache transfer; without one, memory at the home supplies
    /// the line. The rule before the key existed, and the default.
    MemoryOrForwarder,
    /// The L3 of the domain holding the answering copy (the Forward copy's,
    /// else the nearest domain with a Shared copy) answers from its own
    /// copy, without snooping a core: an inclusive L3 whose core-valid
    /// bits show a line clean needs no core's answer. The transfer costs
    /// `l3_transfer_cycles - l3_hit_cycles` less than one a core answers
    /// (the part of an in-domain transfer that the L3 hit does not
    /// take). Needs an L3 that keeps lines.
    HoldingL3,
    /// A line whose copies are all in one L3 domain (die) is answered by a
    /// core of that domain (the Forward copy, else a Shared one), as a
    /// Modified copy would be: a directory that tracks dies, not cores,
    /// sees one die holding the line, as it sees an owner, and sends the
    /// read there. Copies in several domains: the Forward copy, else
    /// memory, as `MemoryOrForwarder`.
    HoldingDie,
}

impl CleanSharedLineAnswer {
    pub fn name(self) -> &'static str {
        match self {
            CleanSharedLineAnswer::MemoryOrForwarder => "memory-or-forwarder",
            CleanSharedLineAnswer::HoldingL3 => "holding-l3",
            CleanSharedLineAnswer::HoldingDie => "holding-die",
        }
    }
}

/// How precisely the directory (probe filter) knows a shared line's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DirectoryPrecision {
    /// Every sharer is tracked: a write invalidates exactly the copies.
    Exact,
    /// Lines with several sharers (Shared or Owned) are tracked only as
    /// shared: a write to one broadcasts its invalidation to every L3
    /// domain of the machine, and waits for the farthest answer.
    BroadcastShared,
}

impl DirectoryPrecision {
    pub fn name(self) -> &'static str {
        match self {
            DirectoryPrecision::Exact => "exact",
            DirectoryPrecision::BroadcastShared => "broadcast-shared",
        }
    }
}

/// Upper bound on one entry of [`MachineSpec::socket_hops`]: no glueless
/// machine routes a coherence message through more sockets.
pub const MAX_SOCKET_HOPS: u32 = 8;

/// A node's distance to itself in ACPI's System Locality Information Table
/// (SLIT), as `numactl --hardware` prints it: the unit the other distances
/// are relative to (ACPI 6.5, §5.2.17: "the distance from a locality to
/// itself is normalized to 10"; 0-9 are reserved, 255 means unreachable).
pub const SLIT_LOCAL_DISTANCE: u32 = 10;
/// The largest distance between two reachable nodes (255 is unreachable).
pub const SLIT_MAX_DISTANCE: u32 = 254;

/// Distances between the machine's NUMA nodes, in the form Linux shows
/// them (`numactl --hardware`, `/sys/devices/system/node/nodeN/distance`,
/// from the firmware's SLIT): the legs between nodes inside a socket (SNC
/// and NPS modes) and between sockets follow them instead of the tree's
/// `hop_between_nodes_cycles` and socket legs.
///
/// The rule (ACPI 6.5 §5.2.17: a distance is the relative memory latency,
/// 10 for a node's own memory, so 21 is 2.1 times the local latency):
/// memory on node `b` seen from node `a` takes `d(a, b) / 10` times the
/// local memory latency `2 x hop_in_node_cycles + dram_cycles` (a leg to
/// the memory controller, the DRAM, a leg back), so one leg between the
/// nodes is `hop_in_node_cycles + (d(a, b) - 10) x unit / 2` cycles, where
/// `unit`, the round-trip cycles per distance unit, is the local latency
/// divided by 10 unless the machine gives `distance_unit_cycles`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeDistances {
    /// `slit[a][b]`, one row per node in Linux's order (socket by socket);
    /// empty: the tree's legs.
    pub slit: Vec<Vec<u32>>,
    /// Round-trip cycles per distance unit; `None`: the local memory
    /// latency over 10 (the rule above).
    pub distance_unit_cycles: Option<u64>,
}

/// Latencies of the machine, in core cycles at its clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LatencySpec {
    /// Load or store that hits the core's own cache.
    pub l1_hit_cycles: u64,
    /// A locked read-modify-write on a line in the core's own L1, the whole
    /// instruction, the load of its memory operand included (the figures
    /// the presets cite are whole-instruction latencies: see
    /// [`LatencySpec::locked_op_after_hit_cycles`]). After a line arrives
    /// from elsewhere the CPU and the line are held this long.
    pub locked_op_cycles: u64,
    /// Extra cost when a thread touches a line last written by its SMT sibling.
    pub smt_transfer_cycles: u64,
    /// A line moved between two cores of one L3 domain (resolved by the
    /// domain's own tags, without the directory).
    pub l3_transfer_cycles: u64,
    /// One leg of a transaction between a core and its own node's agent, or
    /// two cores of one node in different L3 domains.
    pub hop_in_node_cycles: u64,
    /// One leg between two nodes of one socket.
    pub hop_between_nodes_cycles: u64,
    /// One leg between two sockets one link apart; a leg between sockets
    /// `h` links apart ([`MachineSpec::socket_hops`]) costs this plus
    /// `h - 1` times [`LatencySpec::hop_extra_socket_link_cycles`].
    pub hop_between_sockets_cycles: u64,
    /// What each further link adds to a leg between sockets more than one
    /// link apart: the message crosses the socket in between (its router)
    /// and one more link, but leaves its own socket and enters the far one
    /// only once, which `hop_between_sockets_cycles` already holds. `None`:
    /// the whole one-link leg again (a leg across `h` links costs `h` legs).
    pub hop_extra_socket_link_cycles: Option<u64>,
    /// What a core's answer to a read saves when the copy it is snooped
    /// for is clean (Exclusive, Forward or Shared: the snoop response
    /// carries no dirty data to write back) against a dirty one (Modified
    /// or Owned): the read's transfer costs this much less. Writes are not
    /// affected (the copy is invalidated either way). `None`: clean and
    /// dirty answers cost the same, the rule before the key existed.
    pub clean_snoop_saving_cycles: Option<u64>,
    /// The DRAM access itself, at the home node, excluding the legs to it.
    pub dram_cycles: u64,
    /// A read answered by the requester's own L3 (a clean line that L3
    /// keeps, [`L3SharedLines`]), request to data.
    pub l3_hit_cycles: u64,
    /// How long a read of a line already resolved to a cache that can
    /// answer for it (a forwarding or owning copy, or an L3 that keeps it)
    /// occupies the line at its home before the next request is ordered:
    /// such reads are pipelined, one this far apart, each still taking its
    /// own transfer latency. Writes, atomics and reads that move ownership
    /// hold the line for their whole transaction.
    pub home_occupancy_cycles: u64,
}

impl LatencySpec {
    /// What a locked read-modify-write that hits adds after its L1 access
    /// (the line the core's own, Modified or Exclusive): the rest of
    /// `locked_op_cycles`, whose figure already holds the load of the
    /// memory operand. LLVM's scheduling models define a folded-load form as
    /// the register form plus the load (X86ScheduleZnver1.td,
    /// `ZnWriteResPair`: `Latency = !add(Lat, LoadLat)`, `LoadLat = 4`) and
    /// write the memory-operand CMPXCHG's `WriteCMPXCHGRMW` whole (8 cycles
    /// beside the register form's 1); uops.info's `LOCK INC m32` /
    /// `LOCK CMPXCHG m64` figures are whole instructions too (throughput 18-19
    /// cycles per instruction, none overlapping). Charging the L1 access and
    /// then all of `locked_op_cycles` would count that load twice.
    ///
    /// After a transfer (a miss, or a line last written by the SMT sibling)
    /// the whole `locked_op_cycles` follows the line's arrival: the
    /// transfer legs are fitted to the measured core-to-core figures as what
    /// they leave after it (models' presets, `one_way_cycles`).
    pub fn locked_op_after_hit_cycles(&self) -> u64 {
        self.locked_op_cycles.saturating_sub(self.l1_hit_cycles)
    }
}

impl LatencySpec {
    /// Round latencies of no real machine (each of a plausible order, none
    /// measured or sourced): [`MachineSpec::made_up`]'s, for the tests'
    /// small machines and the exhaustive checker's, where a latency only
    /// orders events and no figure is compared with a measurement. The
    /// legs' figures all differ, so a test of a formula that takes a wrong
    /// leg gets a wrong figure.
    pub const MADE_UP: LatencySpec = LatencySpec {
        l1_hit_cycles: 4,
        locked_op_cycles: 20,
        smt_transfer_cycles: 7,
        l3_transfer_cycles: 60,
        hop_in_node_cycles: 30,
        hop_between_nodes_cycles: 50,
        hop_between_sockets_cycles: 110,
        hop_extra_socket_link_cycles: None,
        clean_snoop_saving_cycles: None,
        dram_cycles: 150,
        l3_hit_cycles: 40,
        home_occupancy_cycles: 20,
    };
}

/// A machine as a user or a preset describes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MachineSpec {
    pub name: String,
    /// Core clock; converts cycles to nanoseconds in reports only.
    pub clock_mhz: u64,
    pub sockets: u32,
    pub nodes_per_socket: u32,
    pub l3_per_node: u32,
    pub cores_per_l3: u32,
    pub threads_per_core: u32,
    pub line_size_bytes: u32,
    pub protocol: Protocol,
    pub lookup: Lookup,
    /// Intel's adjacent-line (L2 spatial) prefetcher: a core's demand miss
    /// on line L also issues a prefetch read of its buddy line L ^ 1, the
    /// other half of the 128-byte-aligned pair. Lines stay the coherence
    /// unit; the prefetch is a read of its own, which the CPU does not wait
    /// for (the engine issues it; see `engine`).
    pub adjacent_line_prefetch: bool,
    pub store_buffer_entries: u32,
    /// Links between each pair of sockets, `socket_hops[a][b]` (0 on the
    /// diagonal, symmetric): the hop matrix of the machine's socket links,
    /// as `numactl --hardware` shows them in its node distances. Empty:
    /// every pair of sockets is one link apart (fully connected).
    pub socket_hops: Vec<Vec<u32>>,
    /// Distances between NUMA nodes (SLIT), when the machine gives them.
    pub node_distances: NodeDistances,
    /// Whether the L3 answers reads of clean lines its cores hold.
    pub l3_shared_lines: L3SharedLines,
    /// Whether the directory tracks a shared line's sharers exactly.
    pub directory: DirectoryPrecision,
    /// Who answers a read of a clean shared line held in another L3 domain.
    pub clean_shared_line_answer: CleanSharedLineAnswer,
    /// Each SMT sibling's share of a full core, in percent, while both
    /// siblings of the core run a thread: `work N` (and the instruction
    /// costs it charges) takes `N * 100 / share` cycles. 100 lets siblings
    /// share the caches only.
    pub smt_share_percent: u32,
    /// How a line's home picks the next of the requests waiting for it: in
    /// this percent of handovers, one of the waiters nearest the line's
    /// current owner (same core, then L3 domain, node, socket); otherwise,
    /// and when no core owns the line, a uniform draw. 0 is uniform.
    pub arbitration_near_owner_percent: u32,
    /// Misses a core keeps in flight at once (its L1D fill buffers, or miss
    /// address buffers): a load that misses holds one until its line
    /// arrives, and the CPU goes on until an operation needs the value.
    /// Loads to a line already arriving share its buffer. 1 is one miss at
    /// a time.
    pub outstanding_misses: u32,
    /// The core's reorder window, in entries (its reorder buffer): the CPU
    /// goes on past the oldest load still in flight for at most this many
    /// entries, and past a branch on a value still in flight when its
    /// predictor guesses the direction right. One script operation takes
    /// one entry, `work N` takes `N * dispatch_width`. 0 is no window: a
    /// branch waits for its value, and so does arithmetic, as before the
    /// key existed. Halved while both SMT siblings of the core run a
    /// thread (the reorder buffer is partitioned between them). While an
    /// operation waits for a value not read yet, the CPU runs ahead in
    /// shadow within the entries left (`engine::speculate`).
    pub reorder_window_entries: u32,
    /// Entries the core dispatches into its reorder window per cycle (what
    /// `work N` fills it with).
    pub dispatch_width: u32,
    /// Cycles a mispredicted branch costs once its value has arrived.
    pub mispredict_penalty_cycles: u32,
    /// Whether a locked instruction executes speculatively: while one
    /// waits, the core also requests, for ownership, the lines of the
    /// locked instructions after it in its reorder window (and of the
    /// waiting one itself), instead of stopping there
    /// (`engine::speculate`). Off: the core's run ahead of a waiting
    /// locked instruction stops at the next one.
    pub lock_rfo_ahead: bool,
    /// How many store-buffer entries past the head the buffer requests
    /// its lines for ownership ahead of their drain (an RFO prefetch),
    /// each holding a miss buffer (`outstanding_misses`) until its line
    /// arrives; 0: none, a store's line is requested when the store
    /// reaches the head. A line held early makes no store visible: the
    /// stores still drain one at a time in program order (x86-TSO), and a
    /// line taken away before its store's turn is requested again then
    /// (`engine::store_buffer`).
    pub store_rfo_ahead_entries: u32,
    /// A core whose every CPU is idle for at least this many cycles has
    /// entered its deepest idle state (the idle governor picks a state
    /// whose target residency the idle period covers), which powers off
    /// the core's private caches: their lines are written back and
    /// dropped, so that the next reader finds no cache holding them
    /// (`engine::sched`, at a `sleep` at least this long on a CPU left with
    /// nothing to run). 0: never.
    pub deep_idle_writeback_cycles: u64,
    /// Each core's private L1D and L2: sizes, ways and the L2's hit
    /// latency ([`PrivateCacheSpec`]); all zero is unbounded caches.
    pub private_caches: PrivateCacheSpec,
    pub latency: LatencySpec,
}

impl MachineSpec {
    /// A made-up machine of `protocol` and `lookup`, no preset's: one
    /// socket, node, L3 domain and core, one thread, 64-byte lines at
    /// 2 GHz, an 8-entry store buffer, [`LatencySpec::MADE_UP`], and every
    /// key with an off state in it (no prefetch, no L3 keeping shared
    /// lines, an exact directory, one miss at a time, no reorder window,
    /// no SMT slow-down, unbounded private caches, uniform arbitration,
    /// no RFO ahead, no deep idle): the machine before those keys existed.
    /// The exhaustive checker's machine and the tests' small machines are
    /// this one with what they change named
    /// (`MachineSpec { sockets: 2, ..MachineSpec::made_up(..) }`), so a
    /// new key needs its off state written once, here.
    pub fn made_up(name: impl Into<String>, protocol: Protocol, lookup: Lookup) -> MachineSpec {
        MachineSpec {
            name: name.into(),
            clock_mhz: 2000,
            sockets: 1,
            nodes_per_socket: 1,
            l3_per_node: 1,
            cores_per_l3: 1,
            threads_per_core: 1,
            line_size_bytes: 64,
            protocol,
            lookup,
            adjacent_line_prefetch: false,
            store_buffer_entries: 8,
            socket_hops: Vec::new(),
            node_distances: NodeDistances::default(),
            l3_shared_lines: L3SharedLines::NotKept,
            clean_shared_line_answer: CleanSharedLineAnswer::MemoryOrForwarder,
            directory: DirectoryPrecision::Exact,
            smt_share_percent: 100,
            outstanding_misses: 1,
            reorder_window_entries: 0,
            dispatch_width: 1,
            mispredict_penalty_cycles: 0,
            lock_rfo_ahead: false,
            store_rfo_ahead_entries: 0,
            deep_idle_writeback_cycles: 0,
            private_caches: PrivateCacheSpec::UNBOUNDED,
            arbitration_near_owner_percent: 0,
            latency: LatencySpec::MADE_UP,
        }
    }
}

/// The capacity of each core's private caches: a set-associative L1D and
/// L2 with LRU replacement (`coherence::capacity`). A size of 0 is an
/// unbounded cache (every line a core ever fetched stays until coherence
/// or deep idle takes it), the machine's behaviour before the keys
/// existed; the L1D and the L2 are bounded or unbounded together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PrivateCacheSpec {
    pub l1d_kib: u32,
    pub l1d_ways: u32,
    pub l2_kib: u32,
    pub l2_ways: u32,
    /// A load, store or atomic whose line is in the core's L2 but not its
    /// L1D: its latency in place of `latency.l1_hit_cycles`.
    pub l2_hit_cycles: u64,
}

impl PrivateCacheSpec {
    /// Unbounded private caches (the exhaustive checker's, and a machine
    /// given whole without the keys).
    pub const UNBOUNDED: PrivateCacheSpec = PrivateCacheSpec {
        l1d_kib: 0,
        l1d_ways: 0,
        l2_kib: 0,
        l2_ways: 0,
        l2_hit_cycles: 0,
    };

    pub fn is_bounded(&self) -> bool {
        self.l2_kib > 0
    }

    /// Sets of a cache of `kib` KiB and `ways` ways with lines of
    /// `line_bytes`.
    pub fn sets(kib: u32, ways: u32, line_bytes: u32) -> u64 {
        (u64::from(kib) * 1024) / (u64::from(ways.max(1)) * u64::from(line_bytes.max(1)))
    }
}

/// Upper bounds on a machine, so that a typo cannot ask for a machine that
/// exhausts memory.
/// (Their values and reasons are in `crate::limits`.)
pub const MAX_CPUS: u64 = crate::limits::MACHINE_CPUS;
pub const MAX_SOCKETS: u32 = crate::limits::MACHINE_SOCKETS;
pub const MAX_NODES: u64 = crate::limits::MACHINE_NODES;

/// A machine description that cannot be built, naming the key at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub key: &'static str,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for SpecError {}

/// How two CPUs are related in the tree, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PairClass {
    SameCpu,
    SmtSibling,
    SameL3,
    SameNode,
    SameSocket,
    CrossSocket,
}

impl PairClass {
    pub fn describe(self) -> &'static str {
        match self {
            PairClass::SameCpu => "same CPU",
            PairClass::SmtSibling => "SMT siblings",
            PairClass::SameL3 => "same L3 domain",
            PairClass::SameNode => "same node, other L3 domain",
            PairClass::SameSocket => "same socket, other node",
            PairClass::CrossSocket => "cross socket",
        }
    }
}

/// The built machine: where each CPU sits.
#[derive(Clone, Debug)]
pub struct Topology {
    pub spec: MachineSpec,
    physical_cores: u32,
    cpus: u32,
    /// Per CPU: its core and SMT thread, looked up on every access.
    cpu_core: Vec<u32>,
    cpu_thread: Vec<u8>,
    /// Per core: its L3 domain, node and socket, so that the hop functions
    /// on every transaction are table lookups instead of divisions.
    core_place: Vec<CorePlace>,
    /// Per node: its socket.
    node_socket: Vec<u32>,
    /// Per pair of sockets (`a * sockets + b`): one leg between them, the
    /// links of `socket_hops` times `hop_between_sockets_cycles`.
    socket_leg_cycles: Vec<u64>,
    /// Per pair of nodes (`a * nodes + b`), when the machine gives node
    /// distances: one leg between them ([`NodeDistances`]); empty otherwise.
    node_leg_cycles: Vec<u64>,
    /// Per (requester's L3 domain, target's L3 domain, directory node), as
    /// `(a * l3_count + b) * nodes + node`: [`Topology::directory_legs`]
    /// (a place is its L3 domain's); empty on a machine with more than
    /// `DIRECTORY_PATHS_TABLED` of them, which computes each.
    directory_paths: Vec<DirectoryLegs>,
    /// The machine's L3 domains and nodes, as the table's strides (read on
    /// every look, instead of multiplying the shape out each time).
    l3s: usize,
    nodes: usize,
}

/// The most entries `Topology::directory_paths` tables (1.5 MB).
const DIRECTORY_PATHS_TABLED: u64 = 1 << 16;

/// A transaction's way between a requesting core and one other cache (the
/// target) through the directory at one node, as
/// [`Topology::directory_legs`] answers it: the legs and what they cross.
/// Tabled per (L3 domain, L3 domain, node), because the contended handover
/// asks for all of it on every transfer of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectoryLegs {
    /// leg(requester, directory) + leg(directory, target) + leg(target,
    /// requester).
    pub path: Cycles,
    /// leg(target, requester) alone ([`Topology::hop_between_places`]): 0
    /// inside one L3 domain.
    pub back: Cycles,
    /// How the two cores are related ([`Topology::class_of_places`]).
    pub class: PairClass,
    /// The target is on another socket than the requester.
    pub target_cross_socket: bool,
    /// The directory's node is on another socket than the requester.
    pub directory_cross_socket: bool,
}

/// Where a core sits: its L3 domain, node and socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorePlace {
    pub l3: u32,
    pub node: u32,
    pub socket: u32,
}

impl Topology {
    /// The machine `spec` describes: checked (`check_counts`,
    /// `check_ranges`), then its lookup tables built.
    pub fn new(spec: MachineSpec) -> Result<Topology, SpecError> {
        let cpus = check_counts(&spec)?;
        check_ranges(&spec)?;
        let mut spec = spec;
        // A matrix of ones says what the empty one says: one form per machine.
        if spec
            .socket_hops
            .iter()
            .enumerate()
            .all(|(a, row)| row.iter().enumerate().all(|(b, &h)| h == (a != b) as u32))
        {
            spec.socket_hops.clear();
        }
        let physical_cores = (cpus / spec.threads_per_core as u64) as u32;
        let cpus = cpus as u32;
        let mut topology = Topology {
            spec,
            physical_cores,
            cpus,
            cpu_core: (0..cpus).map(|c| c % physical_cores).collect(),
            cpu_thread: (0..cpus).map(|c| (c / physical_cores) as u8).collect(),
            core_place: Vec::new(),
            node_socket: Vec::new(),
            socket_leg_cycles: Vec::new(),
            node_leg_cycles: Vec::new(),
            directory_paths: Vec::new(),
            l3s: 0,
            nodes: 0,
        };
        topology.nodes = topology.node_count() as usize;
        topology.l3s = topology.l3_count() as usize;
        let sockets = topology.spec.sockets;
        topology.socket_leg_cycles = (0..sockets * sockets)
            .map(|pair| {
                topology
                    .leg_across_socket_links(topology.socket_hops(pair / sockets, pair % sockets))
            })
            .collect();
        topology.node_socket = (0..topology.node_count())
            .map(|node| node / topology.spec.nodes_per_socket)
            .collect();
        topology.core_place = (0..physical_cores)
            .map(|core| topology.place_by_division(core))
            .collect();
        if !topology.spec.node_distances.slit.is_empty() {
            let nodes = topology.node_count();
            topology.node_leg_cycles = (0..nodes * nodes)
                .map(|pair| topology.slit_leg_cycles(pair / nodes, pair % nodes))
                .collect();
        }
        topology.directory_paths = topology.directory_paths_table();
        Ok(topology)
    }

    /// Every [`DirectoryLegs`] by (requester's L3 domain, target's L3
    /// domain, directory node), or none where the machine has more than
    /// `DIRECTORY_PATHS_TABLED` of them (`directory_legs` computes each).
    fn directory_paths_table(&self) -> Vec<DirectoryLegs> {
        let (l3s, nodes) = (self.l3_count() as u64, self.node_count() as u64);
        if l3s * l3s * nodes > DIRECTORY_PATHS_TABLED {
            return Vec::new();
        }
        // Every core's place is its L3 domain's (`place_by_division`).
        let place_of_l3 = |l3: u64| self.place_by_division(l3 as u32 * self.spec.cores_per_l3);
        // `directory_legs_computed`'s legs, each computed once: an L3
        // domain's to every node, then per pair of domains the leg
        // between them (a machine's set-up, not only its transactions:
        // 2048 paths on bergamo-2s).
        let places: Vec<CorePlace> = (0..l3s).map(place_of_l3).collect();
        let to_node: Vec<Cycles> = places
            .iter()
            .flat_map(|&place| (0..nodes).map(move |node| (place, node)))
            .map(|(place, node)| self.hop_place_to_node(place, node as u32))
            .collect();
        let node_sockets: Vec<u32> = (0..nodes as u32)
            .map(|node| self.socket_of_node(node))
            .collect();
        let mut paths = Vec::with_capacity((l3s * l3s * nodes) as usize);
        for a in 0..l3s {
            let requester_place = places[a as usize];
            let requester = &to_node[(a * nodes) as usize..][..nodes as usize];
            for b in 0..l3s {
                let target_place = places[b as usize];
                let target = &to_node[(b * nodes) as usize..][..nodes as usize];
                let back = self.hop_between_places(target_place, requester_place);
                let class = Topology::class_of_places(requester_place, target_place);
                let target_cross_socket = target_place.socket != requester_place.socket;
                let legs = requester.iter().zip(target).zip(&node_sockets);
                for ((&to_requester, &to_target), &node_socket) in legs {
                    paths.push(DirectoryLegs {
                        path: to_requester + to_target + back,
                        back,
                        class,
                        target_cross_socket,
                        directory_cross_socket: node_socket != requester_place.socket,
                    });
                }
            }
        }
        paths
    }

    /// A transaction's way through the directory at `directory_node` to
    /// one other cache ([`DirectoryLegs`]: the sum of leg(requester,
    /// directory), leg(directory, target) and leg(target, requester), the
    /// last alone, the cores' relation and the sockets crossed). Tabled per
    /// L3 domains and node where the machine is small enough (every
    /// contended handover asks).
    #[inline]
    pub fn directory_legs(
        &self,
        requester: CorePlace,
        target: CorePlace,
        directory_node: u32,
    ) -> DirectoryLegs {
        debug_assert!(
            requester.l3 < self.l3_count()
                && target.l3 < self.l3_count()
                && directory_node < self.node_count()
        );
        let index = (requester.l3 as usize * self.l3s + target.l3 as usize) * self.nodes
            + directory_node as usize;
        match self.directory_paths.get(index) {
            Some(&legs) => legs,
            None => self.directory_legs_computed(requester, target, directory_node),
        }
    }

    /// [`Topology::directory_legs`] from the legs.
    fn directory_legs_computed(
        &self,
        requester: CorePlace,
        target: CorePlace,
        directory_node: u32,
    ) -> DirectoryLegs {
        let back = self.hop_between_places(target, requester);
        DirectoryLegs {
            path: self.hop_place_to_node(requester, directory_node)
                + self.hop_place_to_node(target, directory_node)
                + back,
            back,
            class: Topology::class_of_places(requester, target),
            target_cross_socket: target.socket != requester.socket,
            directory_cross_socket: self.socket_of_node(directory_node) != requester.socket,
        }
    }

    /// The round-trip cycles one SLIT distance unit stands for
    /// ([`NodeDistances`]): the machine's own, or its local memory latency
    /// over 10.
    pub fn distance_unit_cycles(&self) -> u64 {
        let l = &self.spec.latency;
        self.spec
            .node_distances
            .distance_unit_cycles
            .unwrap_or((2 * l.hop_in_node_cycles + l.dram_cycles) / SLIT_LOCAL_DISTANCE as u64)
    }

    /// One leg between nodes `a` and `b` by the SLIT rule ([`NodeDistances`]).
    fn slit_leg_cycles(&self, a: u32, b: u32) -> u64 {
        let distance = self.spec.node_distances.slit[a as usize][b as usize];
        let beyond_local = distance.saturating_sub(SLIT_LOCAL_DISTANCE) as u64;
        self.spec.latency.hop_in_node_cycles + beyond_local * self.distance_unit_cycles() / 2
    }

    /// One leg between two different nodes: from the node distances when
    /// the machine gives them, else a leg between nodes of one socket or
    /// the sockets' leg.
    #[inline]
    pub fn node_leg_cycles(&self, a: u32, b: u32) -> u64 {
        if !self.node_leg_cycles.is_empty() {
            if let Some(&cycles) = self
                .node_leg_cycles
                .get((a * self.node_count() + b) as usize)
            {
                return cycles;
            }
        }
        let (socket_a, socket_b) = (self.socket_of_node(a), self.socket_of_node(b));
        if socket_a == socket_b {
            self.spec.latency.hop_between_nodes_cycles
        } else {
            self.socket_leg_cycles(socket_a, socket_b)
        }
    }

    /// Links between sockets `a` and `b` (0 for one socket).
    pub fn socket_hops(&self, a: u32, b: u32) -> u32 {
        if a == b {
            0
        } else {
            self.spec
                .socket_hops
                .get(a as usize)
                .and_then(|row| row.get(b as usize))
                .copied()
                .unwrap_or(1)
        }
    }

    /// One leg between two different sockets: their links times the cost of one.
    #[inline]
    pub fn socket_leg_cycles(&self, a: u32, b: u32) -> u64 {
        match self
            .socket_leg_cycles
            .get((a * self.spec.sockets + b) as usize)
        {
            Some(&cycles) => cycles,
            None => self.leg_across_socket_links(self.socket_hops(a, b)),
        }
    }

    /// One leg between sockets `hops` links apart: the one-link leg, then
    /// each further link's cost ([`LatencySpec::hop_extra_socket_link_cycles`],
    /// or the one-link leg again when the machine gives none).
    pub fn leg_across_socket_links(&self, hops: u32) -> u64 {
        let l = &self.spec.latency;
        match hops {
            0 => 0,
            h => {
                let further = l
                    .hop_extra_socket_link_cycles
                    .unwrap_or(l.hop_between_sockets_cycles);
                l.hop_between_sockets_cycles + u64::from(h - 1) * further
            }
        }
    }

    /// A core's place computed from the machine's shape (what `core_place`
    /// holds for every core of the machine).
    fn place_by_division(&self, core: u32) -> CorePlace {
        let cores_per_node = self.spec.l3_per_node * self.spec.cores_per_l3;
        CorePlace {
            l3: core / self.spec.cores_per_l3,
            node: core / cores_per_node,
            socket: core / (self.spec.nodes_per_socket * cores_per_node),
        }
    }

    #[inline]
    pub fn place_of_core(&self, core: u32) -> CorePlace {
        match self.core_place.get(core as usize) {
            Some(&place) => place,
            None => self.place_by_division(core),
        }
    }

    pub fn cpu_count(&self) -> u32 {
        self.cpus
    }
    /// The machine's CPUs, in Linux order.
    pub fn cpus(&self) -> impl Iterator<Item = LinuxCpu> {
        (0..self.cpus).map(LinuxCpu::new)
    }
    pub fn core_count(&self) -> u32 {
        self.physical_cores
    }
    pub fn node_count(&self) -> u32 {
        self.spec.sockets * self.spec.nodes_per_socket
    }
    pub fn l3_count(&self) -> u32 {
        self.node_count() * self.spec.l3_per_node
    }
    pub fn cores_per_node(&self) -> u32 {
        self.spec.l3_per_node * self.spec.cores_per_l3
    }
    pub fn cores_per_socket(&self) -> u32 {
        self.spec.nodes_per_socket * self.cores_per_node()
    }
    pub fn line_size_bytes(&self) -> u32 {
        self.spec.line_size_bytes
    }
    /// The alignment of separate allocations (global and per-node objects,
    /// each CPU's per-CPU area): a line, or a 128-byte line pair when the
    /// adjacent-line prefetcher is on, so that one object's buddy-line
    /// prefetches never reach another's lines. The kernel's separate objects
    /// are as far apart: per-CPU areas are whole pages apart (pcpu units),
    /// and kmalloc'd objects of 128 bytes or more come from caches of at
    /// least that alignment.
    pub fn allocation_granule_bytes(&self) -> u32 {
        if self.spec.adjacent_line_prefetch {
            self.spec.line_size_bytes * 2
        } else {
            self.spec.line_size_bytes
        }
    }

    #[inline]
    pub fn core_of(&self, cpu: LinuxCpu) -> u32 {
        match self.cpu_core.get(cpu.slot()) {
            Some(&core) => core,
            None => cpu.get() % self.physical_cores,
        }
    }
    /// Which SMT thread of its core a CPU is (0 for the first).
    #[inline]
    pub fn thread_of(&self, cpu: LinuxCpu) -> u32 {
        match self.cpu_thread.get(cpu.slot()) {
            Some(&thread) => thread as u32,
            None => cpu.get() / self.physical_cores,
        }
    }
    #[inline]
    pub fn l3_of_core(&self, core: u32) -> u32 {
        self.place_of_core(core).l3
    }
    #[inline]
    pub fn node_of_core(&self, core: u32) -> u32 {
        self.place_of_core(core).node
    }
    #[inline]
    pub fn socket_of_core(&self, core: u32) -> u32 {
        self.place_of_core(core).socket
    }
    #[inline]
    pub fn socket_of_node(&self, node: u32) -> u32 {
        match self.node_socket.get(node as usize) {
            Some(&socket) => socket,
            None => node / self.spec.nodes_per_socket,
        }
    }
    pub fn l3_of(&self, cpu: LinuxCpu) -> u32 {
        self.l3_of_core(self.core_of(cpu))
    }
    pub fn node_of(&self, cpu: LinuxCpu) -> u32 {
        self.node_of_core(self.core_of(cpu))
    }
    pub fn socket_of(&self, cpu: LinuxCpu) -> u32 {
        self.socket_of_core(self.core_of(cpu))
    }

    /// CPUs of a node, in Linux order.
    pub fn cpus_of_node(&self, node: u32) -> Vec<LinuxCpu> {
        self.cpus().filter(|&c| self.node_of(c) == node).collect()
    }

    #[inline]
    pub fn pair_class(&self, a: LinuxCpu, b: LinuxCpu) -> PairClass {
        let (core_a, core_b) = (self.core_of(a), self.core_of(b));
        let (place_a, place_b) = (self.place_of_core(core_a), self.place_of_core(core_b));
        if a == b {
            PairClass::SameCpu
        } else if core_a == core_b {
            PairClass::SmtSibling
        } else {
            Topology::class_of_places(place_a, place_b)
        }
    }

    /// [`Topology::pair_class`] of CPUs on two different cores, from the
    /// cores' places.
    #[inline]
    pub fn class_of_places(a: CorePlace, b: CorePlace) -> PairClass {
        if a.l3 == b.l3 {
            PairClass::SameL3
        } else if a.node == b.node {
            PairClass::SameNode
        } else if a.socket == b.socket {
            PairClass::SameSocket
        } else {
            PairClass::CrossSocket
        }
    }

    /// One leg between two cores in different L3 domains.
    #[inline]
    pub fn hop_core_to_core(&self, core_a: u32, core_b: u32) -> u64 {
        self.hop_between_places(self.place_of_core(core_a), self.place_of_core(core_b))
            .get()
    }

    /// [`Topology::hop_core_to_core`] for cores whose places are at hand,
    /// as a duration (the coherence model's costs are `Cycles`).
    ///
    /// Always inline, as is [`Topology::hop_place_to_node`]: a contended
    /// transaction takes three or four legs, and as calls (which the
    /// compiler chose for them inside the transaction) each cost about as
    /// much again as its few comparisons.
    #[inline(always)]
    pub fn hop_between_places(&self, a: CorePlace, b: CorePlace) -> Cycles {
        let l = &self.spec.latency;
        Cycles::new(if a.l3 == b.l3 {
            // Inside one L3 domain the leg is part of the domain's own transfer.
            0
        } else if a.node == b.node {
            l.hop_in_node_cycles
        } else if !self.node_leg_cycles.is_empty() {
            self.node_leg_cycles(a.node, b.node)
        } else if a.socket == b.socket {
            l.hop_between_nodes_cycles
        } else {
            self.socket_leg_cycles(a.socket, b.socket)
        })
    }

    /// One leg between a core and a node's agent (directory, memory controller).
    #[inline]
    pub fn hop_core_to_node(&self, core: u32, node: u32) -> u64 {
        self.hop_place_to_node(self.place_of_core(core), node).get()
    }

    /// [`Topology::hop_core_to_node`] for a core whose place is at hand, as
    /// a duration.
    #[inline(always)]
    pub fn hop_place_to_node(&self, place: CorePlace, node: u32) -> Cycles {
        let l = &self.spec.latency;
        Cycles::new(if place.node == node {
            l.hop_in_node_cycles
        } else if !self.node_leg_cycles.is_empty() {
            self.node_leg_cycles(place.node, node)
        } else {
            // The node's socket, looked up only where it decides.
            let node_socket = self.socket_of_node(node);
            if place.socket == node_socket {
                l.hop_between_nodes_cycles
            } else {
                self.socket_leg_cycles(place.socket, node_socket)
            }
        })
    }

    /// Converts cycles to nanoseconds at the machine's clock (reports only).
    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        cycles * 1000.0 / self.spec.clock_mhz as f64
    }
}

/// The machine's shape: every count at least 1, and the sockets, nodes and
/// CPUs it makes within the fixed limits. Returns the number of CPUs.
fn check_counts(spec: &MachineSpec) -> Result<u64, SpecError> {
    fn at_least_one(key: &'static str, value: u32) -> Result<(), SpecError> {
        if value == 0 {
            return Err(SpecError {
                key,
                message: "must be at least 1".into(),
            });
        }
        Ok(())
    }
    at_least_one("sockets", spec.sockets)?;
    at_least_one("nodes_per_socket", spec.nodes_per_socket)?;
    at_least_one("l3_per_node", spec.l3_per_node)?;
    at_least_one("cores_per_l3", spec.cores_per_l3)?;
    at_least_one("threads_per_core", spec.threads_per_core)?;
    if spec.sockets > MAX_SOCKETS {
        return Err(SpecError {
            key: "sockets",
            message: format!("{} is more than the limit of {MAX_SOCKETS}", spec.sockets),
        });
    }
    let nodes = spec.sockets as u64 * spec.nodes_per_socket as u64;
    if nodes > MAX_NODES {
        return Err(SpecError {
            key: if spec.sockets > spec.nodes_per_socket {
                "sockets"
            } else {
                "nodes_per_socket"
            },
            message: format!(
                "the machine would have {nodes} nodes; the limit is {MAX_NODES} \
                 (sockets x nodes_per_socket)"
            ),
        });
    }
    let cpus = spec.sockets as u64
        * spec.nodes_per_socket as u64
        * spec.l3_per_node as u64
        * spec.cores_per_l3 as u64
        * spec.threads_per_core as u64;
    if cpus > MAX_CPUS {
        // Blame the largest factor: the one most likely mistyped.
        let factors = [
            ("sockets", spec.sockets),
            ("nodes_per_socket", spec.nodes_per_socket),
            ("l3_per_node", spec.l3_per_node),
            ("cores_per_l3", spec.cores_per_l3),
            ("threads_per_core", spec.threads_per_core),
        ];
        let key = factors
            .iter()
            .fold(factors[0], |best, &f| if f.1 > best.1 { f } else { best })
            .0;
        return Err(SpecError {
            key,
            message: format!(
                "the machine would have {cpus} CPUs; the limit is {MAX_CPUS} \
                 (sockets x nodes_per_socket x l3_per_node x cores_per_l3 x threads_per_core)"
            ),
        });
    }
    Ok(cpus)
}

/// The most cycles a latency leg (`latency.*_cycles`) may have.
pub const LATENCY_LIMIT_CYCLES: u64 = 1_000_000;

/// The values a machine's numeric key can take on its own, by its name in a
/// machine table (`smt_share_percent`, `latency.dram_cycles`): one table for
/// the check of a built machine, for the input reader's check of the
/// values a file gives, and for its type errors (a negative count), so
/// that each names the same range. The rules that tie keys together (the
/// CPUs a machine's counts make, an L2 hit no faster than the L1D's, a
/// power-of-two line) are checked on the built machine. `None` for a key
/// without a bound of its own (`deep_idle_writeback_cycles`).
pub fn scalar_key_range(key: &str) -> Option<std::ops::RangeInclusive<u64>> {
    Some(match key {
        "clock_mhz" => 1..=100_000,
        "sockets" => 1..=u64::from(MAX_SOCKETS),
        "nodes_per_socket" => 1..=MAX_NODES,
        "l3_per_node" | "cores_per_l3" => 1..=MAX_CPUS,
        "threads_per_core" => 1..=8,
        "line_size_bytes" => 16..=4096,
        "store_buffer_entries" => 1..=1024,
        "store_rfo_ahead_entries" => 0..=1024,
        "smt_share_percent" => 1..=100,
        "outstanding_misses" => 1..=256,
        "reorder_window_entries" => 0..=4096,
        "dispatch_width" => 1..=64,
        "mispredict_penalty_cycles" => 0..=1000,
        "arbitration_near_owner_percent" => 0..=100,
        // 0 for both sizes: unbounded caches (`PrivateCacheSpec::UNBOUNDED`).
        "l1d_kib" | "l2_kib" => 0..=65_536,
        "l1d_ways" | "l2_ways" => 1..=64,
        "l2_hit_cycles" => 0..=1000,
        "distance_unit_cycles" => 1..=LATENCY_LIMIT_CYCLES,
        // Each entry of the matrices (0 and 10 on their diagonals).
        "socket_hops" => 0..=u64::from(MAX_SOCKET_HOPS),
        "node_distances" => u64::from(SLIT_LOCAL_DISTANCE)..=u64::from(SLIT_MAX_DISTANCE),
        "latency.l1_hit_cycles" => 1..=LATENCY_LIMIT_CYCLES,
        "latency.locked_op_cycles"
        | "latency.smt_transfer_cycles"
        | "latency.l3_transfer_cycles"
        | "latency.hop_in_node_cycles"
        | "latency.hop_between_nodes_cycles"
        | "latency.hop_between_sockets_cycles"
        | "latency.hop_extra_socket_link_cycles"
        | "latency.clean_snoop_saving_cycles"
        | "latency.dram_cycles"
        | "latency.l3_hit_cycles"
        | "latency.home_occupancy_cycles" => 0..=LATENCY_LIMIT_CYCLES,
        _ => return None,
    })
}

/// The machine's scalar keys, latencies and tables, each within the range a
/// machine can have.
fn check_ranges(spec: &MachineSpec) -> Result<(), SpecError> {
    if !spec.line_size_bytes.is_power_of_two() || !(16..=4096).contains(&spec.line_size_bytes) {
        return Err(SpecError {
            key: "line_size_bytes",
            message: format!(
                "{} must be a power of two from 16 to 4096",
                spec.line_size_bytes
            ),
        });
    }
    for (key, value) in [
        ("threads_per_core", u64::from(spec.threads_per_core)),
        ("clock_mhz", spec.clock_mhz),
        ("store_buffer_entries", u64::from(spec.store_buffer_entries)),
        (
            "store_rfo_ahead_entries",
            u64::from(spec.store_rfo_ahead_entries),
        ),
        ("smt_share_percent", u64::from(spec.smt_share_percent)),
        ("outstanding_misses", u64::from(spec.outstanding_misses)),
        (
            "reorder_window_entries",
            u64::from(spec.reorder_window_entries),
        ),
        ("dispatch_width", u64::from(spec.dispatch_width)),
        (
            "mispredict_penalty_cycles",
            u64::from(spec.mispredict_penalty_cycles),
        ),
        (
            "arbitration_near_owner_percent",
            u64::from(spec.arbitration_near_owner_percent),
        ),
    ] {
        let range = scalar_key_range(key).expect("every checked key has a range");
        if !range.contains(&value) {
            return Err(SpecError {
                key,
                message: format!(
                    "{value} is out of range {}..={}",
                    range.start(),
                    range.end()
                ),
            });
        }
    }
    let l = &spec.latency;
    if l.l1_hit_cycles == 0 {
        return Err(SpecError {
            key: "latency.l1_hit_cycles",
            message: "must be at least 1, so that every access takes time".into(),
        });
    }
    for (key, value) in [
        ("latency.l1_hit_cycles", l.l1_hit_cycles),
        ("latency.locked_op_cycles", l.locked_op_cycles),
        ("latency.smt_transfer_cycles", l.smt_transfer_cycles),
        ("latency.l3_transfer_cycles", l.l3_transfer_cycles),
        ("latency.hop_in_node_cycles", l.hop_in_node_cycles),
        (
            "latency.hop_between_nodes_cycles",
            l.hop_between_nodes_cycles,
        ),
        (
            "latency.hop_between_sockets_cycles",
            l.hop_between_sockets_cycles,
        ),
        (
            "latency.hop_extra_socket_link_cycles",
            l.hop_extra_socket_link_cycles.unwrap_or(0),
        ),
        (
            "latency.clean_snoop_saving_cycles",
            l.clean_snoop_saving_cycles.unwrap_or(0),
        ),
        ("latency.dram_cycles", l.dram_cycles),
        ("latency.l3_hit_cycles", l.l3_hit_cycles),
        ("latency.home_occupancy_cycles", l.home_occupancy_cycles),
    ] {
        let range = scalar_key_range(key).expect("every latency key has a range");
        if !range.contains(&value) {
            return Err(SpecError {
                key,
                message: format!(
                    "{value} is out of range {}..={}",
                    range.start(),
                    range.end()
                ),
            });
        }
    }
    if let Some(saving) = l.clean_snoop_saving_cycles {
        if saving > l.l3_transfer_cycles {
            return Err(SpecError {
                key: "latency.clean_snoop_saving_cycles",
                message: format!(
                    "{saving} is out of range 0..={}: a clean answer cannot save more than \
                     a whole transfer inside an L3 domain (latency.l3_transfer_cycles)",
                    l.l3_transfer_cycles
                ),
            });
        }
    }
    if spec.clean_shared_line_answer == CleanSharedLineAnswer::HoldingL3
        && !spec.l3_shared_lines.supplies()
    {
        return Err(SpecError {
            key: "clean_shared_line_answer",
            message: "\"holding-l3\" needs an L3 that keeps the lines its cores read \
                      (l3_shared_lines = \"inclusive\" or \"victim-with-sharing\"); \
                      valid here: \"memory-or-forwarder\", \"holding-die\""
                .into(),
        });
    }
    check_socket_hops(spec)?;
    check_node_distances(spec)?;
    check_private_caches(spec)?;
    Ok(())
}

/// The private caches: unbounded (every size 0), or an L1D and an L2
/// whose sets (size / (ways x line)) are a whole power of two (the set is
/// the line address's low bits), the L2 at least as large as the L1D (it
/// holds every L1D line) and its hit no faster than the L1D's.
fn check_private_caches(spec: &MachineSpec) -> Result<(), SpecError> {
    let c = &spec.private_caches;
    if c.l1d_kib == 0 && c.l2_kib == 0 {
        return Ok(());
    }
    let line = spec.line_size_bytes;
    for (kib_key, ways_key, kib, ways) in [
        ("l1d_kib", "l1d_ways", c.l1d_kib, c.l1d_ways),
        ("l2_kib", "l2_ways", c.l2_kib, c.l2_ways),
    ] {
        if !(1..=65_536).contains(&kib) {
            return Err(SpecError {
                key: kib_key,
                message: format!(
                    "{kib} is out of range 1..=65536 (KiB): the L1D and the L2 are given together, \
                     or neither (unbounded caches)"
                ),
            });
        }
        if ways == 0 {
            // Only a machine given whole leaves a cache's ways 0: say the
            // key is missing rather than that the size's 0 is out of range.
            return Err(SpecError {
                key: ways_key,
                message: format!(
                    "{ways_key} is not given: {kib_key} = {kib} needs its ways (its \
                     associativity, 1..=64) to make the cache's sets; give {ways_key}, or \
                     neither size (unbounded caches)"
                ),
            });
        }
        if !(1..=64).contains(&ways) {
            return Err(SpecError {
                key: ways_key,
                message: format!("{ways} is out of range 1..=64"),
            });
        }
        let bytes = u64::from(kib) * 1024;
        let set_bytes = u64::from(ways) * u64::from(line);
        let sets = bytes / set_bytes;
        if bytes % set_bytes != 0 || !sets.is_power_of_two() {
            return Err(SpecError {
                key: ways_key,
                message: format!(
                    "{kib} KiB in {ways} ways of {line}-byte lines is not a whole power of two \
                     of sets ({kib_key} x 1024 / ({ways_key} x line_size_bytes) must be 1, 2, 4, \
                     ...)"
                ),
            });
        }
    }
    if c.l2_kib < c.l1d_kib {
        return Err(SpecError {
            key: "l2_kib",
            message: format!(
                "{} is out of range {}..=65536: the L2 holds every line of the L1D (l1d_kib = {})",
                c.l2_kib, c.l1d_kib, c.l1d_kib
            ),
        });
    }
    let l1 = spec.latency.l1_hit_cycles;
    if c.l2_hit_cycles == 0 {
        return Err(SpecError {
            key: "l2_hit_cycles",
            message: format!(
                "l2_hit_cycles is not given: with l1d_kib and l2_kib, a load that misses the \
                 L1D and hits the L2 costs l2_hit_cycles, {l1}..=1000 (no faster than \
                 latency.l1_hit_cycles = {l1}); give it, or neither size (unbounded caches)"
            ),
        });
    }
    if !(l1..=1000).contains(&c.l2_hit_cycles) {
        return Err(SpecError {
            key: "l2_hit_cycles",
            message: format!(
                "{} is out of range {l1}..=1000: an L2 hit is no faster than an L1D hit \
                 (latency.l1_hit_cycles = {l1})",
                c.l2_hit_cycles
            ),
        });
    }
    Ok(())
}

/// The hop matrix is square over the sockets, 0 on the diagonal only,
/// symmetric, and within [`MAX_SOCKET_HOPS`].
fn check_socket_hops(spec: &MachineSpec) -> Result<(), SpecError> {
    let hops = &spec.socket_hops;
    if hops.is_empty() {
        return Ok(());
    }
    let error = |message: String| SpecError {
        key: "socket_hops",
        message,
    };
    let n = spec.sockets as usize;
    if hops.len() != n {
        return Err(error(format!(
            "has {} rows; the machine has {n} sockets, so it needs {n} rows of {n} hop counts",
            hops.len()
        )));
    }
    for (a, row) in hops.iter().enumerate() {
        if row.len() != n {
            return Err(error(format!(
                "row {a} has {} entries; it needs {n}, one per socket",
                row.len()
            )));
        }
        for (b, &h) in row.iter().enumerate() {
            if a == b && h != 0 {
                return Err(error(format!(
                    "row {a}, column {b}: a socket is 0 hops from itself, not {h}"
                )));
            }
            if a != b && !(1..=MAX_SOCKET_HOPS).contains(&h) {
                return Err(error(format!(
                    "row {a}, column {b}: {h} is out of range 1..={MAX_SOCKET_HOPS} for two different sockets"
                )));
            }
            if hops[b][a] != h {
                return Err(error(format!(
                    "row {a}, column {b} is {h} but row {b}, column {a} is {}; links are the same both ways",
                    hops[b][a]
                )));
            }
        }
    }
    Ok(())
}

/// The node distances are a square matrix over the machine's nodes, 10 on
/// the diagonal, 11..=254 off it, symmetric; a machine gives them or a
/// socket hop matrix, not both.
fn check_node_distances(spec: &MachineSpec) -> Result<(), SpecError> {
    let slit = &spec.node_distances.slit;
    if slit.is_empty() {
        if spec.node_distances.distance_unit_cycles.is_some() {
            return Err(SpecError {
                key: "distance_unit_cycles",
                message: "needs `node_distances`, the distances it converts to cycles".into(),
            });
        }
        return Ok(());
    }
    let error = |message: String| SpecError {
        key: "node_distances",
        message,
    };
    if !spec.socket_hops.is_empty() {
        return Err(error(
            "and `socket_hops` both describe the distances between sockets: give one \
             (node_distances covers every pair of nodes)"
                .into(),
        ));
    }
    let n = (spec.sockets * spec.nodes_per_socket) as usize;
    let shape = format!(
        "the machine has {n} NUMA nodes (sockets x nodes_per_socket), so it needs {n} rows of {n} distances"
    );
    if slit.len() != n {
        return Err(error(format!("has {} rows; {shape}", slit.len())));
    }
    for (a, row) in slit.iter().enumerate() {
        if row.len() != n {
            return Err(error(format!("row {a} has {} entries; {shape}", row.len())));
        }
        for (b, &d) in row.iter().enumerate() {
            if a == b && d != SLIT_LOCAL_DISTANCE {
                return Err(error(format!(
                    "row {a}, column {b}: a node's distance to itself is {SLIT_LOCAL_DISTANCE} \
                     (as numactl shows it), not {d}"
                )));
            }
            if a != b && !(SLIT_LOCAL_DISTANCE + 1..=SLIT_MAX_DISTANCE).contains(&d) {
                return Err(error(format!(
                    "row {a}, column {b}: {d} is out of range {}..={SLIT_MAX_DISTANCE} for two \
                     different nodes (10 is a node's own distance, 255 unreachable)",
                    SLIT_LOCAL_DISTANCE + 1
                )));
            }
            if slit[b][a] != d {
                return Err(error(format!(
                    "row {a}, column {b} is {d} but row {b}, column {a} is {}; the model needs \
                     the same distance both ways",
                    slit[b][a]
                )));
            }
        }
    }
    if spec.node_distances.distance_unit_cycles == Some(0) {
        return Err(SpecError {
            key: "distance_unit_cycles",
            message: "0 is out of range 1..=1000000".into(),
        });
    }
    if let Some(unit) = spec.node_distances.distance_unit_cycles {
        if unit > 1_000_000 {
            return Err(SpecError {
                key: "distance_unit_cycles",
                message: format!("{unit} is out of range 1..=1000000"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn two_socket_spec() -> MachineSpec {
        MachineSpec {
            sockets: 2,
            nodes_per_socket: 2,
            l3_per_node: 2,
            cores_per_l3: 4,
            threads_per_core: 2,
            store_buffer_entries: 16,
            latency: LatencySpec {
                smt_transfer_cycles: 5,
                hop_between_sockets_cycles: 100,
                ..LatencySpec::MADE_UP
            },
            ..MachineSpec::made_up("test", Protocol::Moesi, Lookup::Home)
        }
    }

    #[test]
    fn linux_numbering_puts_smt_siblings_one_physical_core_count_apart() {
        let t = Topology::new(two_socket_spec()).unwrap();
        assert_eq!(t.cpu_count(), 64);
        assert_eq!(t.core_count(), 32);
        assert_eq!(t.core_of(LinuxCpu::new(3)), 3);
        assert_eq!(t.core_of(LinuxCpu::new(35)), 3);
        assert_eq!(t.thread_of(LinuxCpu::new(35)), 1);
        assert_eq!(
            t.pair_class(LinuxCpu::new(3), LinuxCpu::new(35)),
            PairClass::SmtSibling
        );
        assert_eq!(
            t.pair_class(LinuxCpu::new(0), LinuxCpu::new(3)),
            PairClass::SameL3
        );
        assert_eq!(
            t.pair_class(LinuxCpu::new(0), LinuxCpu::new(4)),
            PairClass::SameNode
        );
        assert_eq!(
            t.pair_class(LinuxCpu::new(0), LinuxCpu::new(8)),
            PairClass::SameSocket
        );
        assert_eq!(
            t.pair_class(LinuxCpu::new(0), LinuxCpu::new(16)),
            PairClass::CrossSocket
        );
        assert_eq!(
            t.pair_class(LinuxCpu::new(0), LinuxCpu::new(48)),
            PairClass::CrossSocket
        );
        assert_eq!(t.node_of(LinuxCpu::new(47)), 1);
        assert_eq!(t.socket_of(LinuxCpu::new(63)), 1);
        assert_eq!(
            t.cpus_of_node(0),
            [0, 1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39].map(LinuxCpu::new)
        );
    }

    #[test]
    fn hops_follow_the_lowest_common_level() {
        let t = Topology::new(two_socket_spec()).unwrap();
        assert_eq!(t.hop_core_to_core(0, 1), 0);
        assert_eq!(t.hop_core_to_core(0, 4), 30);
        assert_eq!(t.hop_core_to_core(0, 8), 50);
        assert_eq!(t.hop_core_to_core(0, 16), 100);
        assert_eq!(t.hop_core_to_node(0, 0), 30);
        assert_eq!(t.hop_core_to_node(0, 1), 50);
        assert_eq!(t.hop_core_to_node(0, 3), 100);
    }

    /// Four sockets in a ring, 0-1-2-3-0 (so 0 and 2 are two links apart),
    /// one node each, on `two_socket_spec`'s legs.
    fn four_socket_ring_spec() -> MachineSpec {
        let mut spec = two_socket_spec();
        spec.sockets = 4;
        spec.nodes_per_socket = 1;
        spec.socket_hops = vec![
            vec![0, 1, 2, 1],
            vec![1, 0, 1, 2],
            vec![2, 1, 0, 1],
            vec![1, 2, 1, 0],
        ];
        spec
    }

    #[test]
    fn a_two_hop_socket_pair_costs_two_links() {
        let t = Topology::new(four_socket_ring_spec()).unwrap();
        // 8 cores per socket (1 node x 2 L3 domains x 4 cores): core 0 on
        // socket 0, core 8 on socket 1, core 16 on socket 2.
        assert_eq!(t.socket_of_core(8), 1);
        assert_eq!(t.socket_of_core(16), 2);
        assert_eq!(t.hop_core_to_core(0, 8), 100);
        assert_eq!(t.hop_core_to_core(0, 16), 200);
        assert_eq!(t.hop_core_to_node(0, 2), 200);
        assert_eq!(t.hop_core_to_node(0, 3), 100);
        assert_eq!(t.socket_hops(3, 1), 2);
    }

    #[test]
    fn a_further_socket_link_costs_its_own_figure_when_given() {
        // The ring of `four_socket_ring_spec`, with a
        // further link cheaper than the first (leaving and entering a
        // socket is paid once): 0 and 2 are 100 + 40 apart, not 200.
        let mut spec = four_socket_ring_spec();
        spec.latency.hop_extra_socket_link_cycles = Some(40);
        let t = Topology::new(spec).unwrap();
        assert_eq!(t.hop_core_to_core(0, 8), 100);
        assert_eq!(t.hop_core_to_core(0, 16), 140);
        assert_eq!(t.hop_core_to_node(0, 2), 140);
        assert_eq!(t.socket_leg_cycles(2, 0), 140);
        assert_eq!(t.leg_across_socket_links(3), 180);
        assert_eq!(t.leg_across_socket_links(0), 0);
        // The tabled directory legs follow it too.
        let legs = t.directory_legs(t.place_of_core(0), t.place_of_core(16), 0);
        assert_eq!(legs.back.get(), 140);
    }

    /// The tabled [`DirectoryLegs`] are the legs computed one by one, for
    /// every pair of cores and every directory node, on machines with and
    /// without node distances and with a two-link socket pair; and one
    /// figure by hand.
    #[test]
    fn tabled_directory_legs_are_the_computed_ones() {
        let mut ring = two_socket_spec();
        ring.sockets = 4;
        ring.nodes_per_socket = 1;
        ring.socket_hops = vec![
            vec![0, 1, 2, 1],
            vec![1, 0, 1, 2],
            vec![2, 1, 0, 1],
            vec![1, 2, 1, 0],
        ];
        let mut snc2 = two_socket_spec();
        snc2.node_distances.slit = snc2_distances();
        for spec in [two_socket_spec(), ring, snc2] {
            let t = Topology::new(spec).unwrap();
            assert!(!t.directory_paths.is_empty());
            for a in 0..t.core_count() {
                for b in 0..t.core_count() {
                    let (pa, pb) = (t.place_of_core(a), t.place_of_core(b));
                    for node in 0..t.node_count() {
                        assert_eq!(
                            t.directory_legs(pa, pb, node),
                            t.directory_legs_computed(pa, pb, node),
                            "cores {a} and {b}, node {node}"
                        );
                    }
                }
            }
        }
        // Core 0 (socket 0, node 0) to core 24 (socket 1, node 3) through
        // node 3's directory: 100 to node 3 (another socket), 30 inside it,
        // 100 back across the link.
        let t = Topology::new(two_socket_spec()).unwrap();
        let legs = t.directory_legs(t.place_of_core(0), t.place_of_core(24), 3);
        assert_eq!(legs.path, Cycles::new(100 + 30 + 100));
        assert_eq!(legs.back, Cycles::new(100));
        assert_eq!(legs.class, PairClass::CrossSocket);
        assert!(legs.target_cross_socket && legs.directory_cross_socket);
    }

    #[test]
    fn a_bad_hop_matrix_is_an_error_naming_the_cell() {
        let mut spec = two_socket_spec();
        spec.socket_hops = vec![vec![0, 1], vec![2, 0]];
        let e = Topology::new(spec).unwrap_err();
        assert_eq!(e.key, "socket_hops");
        assert_eq!(
            e.message,
            "row 0, column 1 is 1 but row 1, column 0 is 2; links are the same both ways"
        );
        let mut spec = two_socket_spec();
        spec.socket_hops = vec![vec![0, 1]];
        assert_eq!(
            Topology::new(spec).unwrap_err().message,
            "has 1 rows; the machine has 2 sockets, so it needs 2 rows of 2 hop counts"
        );
        let mut spec = two_socket_spec();
        spec.socket_hops = vec![vec![1, 1], vec![1, 0]];
        assert_eq!(
            Topology::new(spec).unwrap_err().message,
            "row 0, column 0: a socket is 0 hops from itself, not 1"
        );
    }

    /// An SNC2-like machine: 2 sockets of 2 nodes, SLIT 10 / 11 inside a
    /// socket and 21 between sockets (the figures `numactl --hardware`
    /// shows on a 2-socket Xeon in SNC2 mode).
    fn snc2_distances() -> Vec<Vec<u32>> {
        vec![
            vec![10, 11, 21, 21],
            vec![11, 10, 21, 21],
            vec![21, 21, 10, 11],
            vec![21, 21, 11, 10],
        ]
    }

    #[test]
    fn node_distances_set_the_legs_by_the_slit_rule() {
        let mut spec = two_socket_spec();
        spec.node_distances.slit = snc2_distances();
        let t = Topology::new(spec).unwrap();
        // Local memory latency 2 x 30 + 150 = 210 cycles; a unit is 21
        // round-trip cycles. Inside the socket: 30 + 1 x 21 / 2 = 40; across
        // sockets: 30 + 11 x 21 / 2 = 145 (integer cycles).
        assert_eq!(t.distance_unit_cycles(), 21);
        assert_eq!(t.hop_core_to_core(0, 1), 0);
        assert_eq!(t.hop_core_to_core(0, 4), 30);
        assert_eq!(t.hop_core_to_core(0, 8), 40);
        assert_eq!(t.hop_core_to_core(0, 16), 145);
        assert_eq!(t.hop_core_to_node(0, 1), 40);
        assert_eq!(t.hop_core_to_node(0, 3), 145);
        // Remote memory then costs 2.1 times local, to the cycle's rounding:
        // 2 x 145 + 150 = 440 against 2.1 x 210 = 441.
        let remote = 2 * t.hop_core_to_node(0, 3) + 150;
        assert_eq!(remote, 440);
        // The user may give the cycles per unit instead.
        let mut spec = two_socket_spec();
        spec.node_distances.slit = snc2_distances();
        spec.node_distances.distance_unit_cycles = Some(40);
        let t = Topology::new(spec).unwrap();
        assert_eq!(t.hop_core_to_core(0, 8), 30 + 20);
        assert_eq!(t.hop_core_to_core(0, 16), 30 + 11 * 20);
    }

    #[test]
    fn a_malformed_distance_matrix_is_an_error_naming_the_cell() {
        let message = |edit: &dyn Fn(&mut MachineSpec)| {
            let mut spec = two_socket_spec();
            spec.node_distances.slit = snc2_distances();
            edit(&mut spec);
            let e = Topology::new(spec).unwrap_err();
            format!("{}: {}", e.key, e.message)
        };
        assert_eq!(
            message(&|s| {
                s.node_distances.slit.pop();
            }),
            "node_distances: has 3 rows; the machine has 4 NUMA nodes (sockets x \
             nodes_per_socket), so it needs 4 rows of 4 distances"
        );
        assert_eq!(
            message(&|s| s.node_distances.slit[2].truncate(2)),
            "node_distances: row 2 has 2 entries; the machine has 4 NUMA nodes (sockets x \
             nodes_per_socket), so it needs 4 rows of 4 distances"
        );
        assert_eq!(
            message(&|s| s.node_distances.slit[1][1] = 0),
            "node_distances: row 1, column 1: a node's distance to itself is 10 (as numactl \
             shows it), not 0"
        );
        assert_eq!(
            message(&|s| s.node_distances.slit[0][2] = 31),
            "node_distances: row 0, column 2 is 31 but row 2, column 0 is 21; the model needs \
             the same distance both ways"
        );
        assert_eq!(
            message(&|s| {
                s.node_distances.slit[0][1] = 255;
                s.node_distances.slit[1][0] = 255;
            }),
            "node_distances: row 0, column 1: 255 is out of range 11..=254 for two different \
             nodes (10 is a node's own distance, 255 unreachable)"
        );
        assert_eq!(
            message(&|s| s.socket_hops = vec![vec![0, 1], vec![1, 0]]),
            "node_distances: and `socket_hops` both describe the distances between sockets: \
             give one (node_distances covers every pair of nodes)"
        );
        assert_eq!(
            message(&|s| s.node_distances.distance_unit_cycles = Some(0)),
            "distance_unit_cycles: 0 is out of range 1..=1000000"
        );
        assert_eq!(
            message(&|s| {
                s.node_distances.slit.clear();
                s.node_distances.distance_unit_cycles = Some(5);
            }),
            "distance_unit_cycles: needs `node_distances`, the distances it converts to cycles"
        );
    }

    #[test]
    fn impossible_machines_are_errors_naming_the_key() {
        let mut spec = two_socket_spec();
        spec.cores_per_l3 = 0;
        assert_eq!(Topology::new(spec).unwrap_err().key, "cores_per_l3");
        let mut spec = two_socket_spec();
        spec.line_size_bytes = 48;
        assert_eq!(Topology::new(spec).unwrap_err().key, "line_size_bytes");
        let mut spec = two_socket_spec();
        spec.sockets = 64;
        spec.cores_per_l3 = 64;
        assert!(Topology::new(spec)
            .unwrap_err()
            .message
            .contains("limit is 4096"));
    }
}
