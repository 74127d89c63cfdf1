//! Source strings shared by the presets: the tag of
//! `shared/calibration/calibration.md` §13 (or the full name of a source
//! that file does not list) and what in it is used.

// Core-to-core matrices (one-way CAS ping-pong, class medians recomputed in
// c2c_summary_table.md, or here from data/c2c/ where that table has no class).
pub const S1_8375C: &str =
    "[S1] nviennot/core-to-core-latency @96a943a, 2 x Xeon Platinum 8375C matrix (c2c_summary_table.md)";
pub const S1_8275CL: &str =
    "[S1] nviennot/core-to-core-latency @96a943a, 2 x Xeon Platinum 8275CL matrix (c2c_summary_table.md; calibration.md §2)";
pub const S1_7R13: &str =
    "[S1] nviennot/core-to-core-latency @96a943a, 2 x EPYC 7R13 (AWS c6a.metal) matrix (c2c_summary_table.md)";
pub const S2_7601: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 2 x EPYC 7601 matrix (data/c2c/epyc-naples-7601-2s.csv; class medians recomputed, line homed on node 7)";
pub const S2_7763: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 2 x EPYC 7763 matrix (c2c_summary_table.md)";
pub const S2_9654: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 2 x EPYC 9654 (SMT off) matrix (c2c_summary_table.md)";
pub const S2_9454: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 2 x EPYC 9454 matrix (c2c_summary_table.md)";
pub const S2_9754_2S: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 2 x EPYC 9754 matrix (c2c_summary_table.md)";
pub const S2_9754_1S: &str =
    "[S2] KCORES/core-to-core-latency-plus @264ea0a, 1 x EPYC 9754 (SMT off) matrix (c2c_summary_table.md)";

// Locked instructions (calibration.md §10.1).
// Each figure is a whole instruction, the load of its memory operand
// included: uops.info measures the memory operand's latency through the
// instruction and a throughput of one per 18.00 (LOCK INC, Alder Lake) and
// 19.07 (LOCK CMPXCHG) cycles, so no two overlap and each takes its figure
// whole; LLVM's Btver2 entries, like its Znver1 ones, write a memory form's
// latency whole.
pub const LOCKED_OP: &str =
    "[S55] uops.info LOCK INC m32: 20 cycles Rocket Lake, 18 Alder Lake (latency with the memory operand, throughput 18.00 cycles per instruction); [S56] LOCK CMPXCHG m64: 19 Alder Lake-P (throughput 19.07); [S57] ~17 AMD Jaguar (LLVM Btver2, latency and throughput)";

// The adjacent-line prefetcher (not in calibration.md).
pub const INTEL_SPATIAL_PREFETCH: &str =
    "Intel 64 and IA-32 Architectures Optimization Reference Manual (248966), L2 spatial prefetcher (Sandy Bridge and later cores): every line fetched into the L2 is completed with the other line of its 128-byte-aligned pair; folly/lang/Align.h (hardware_destructive_interference_size = 128): microbenchmarks saw line pairs interfere under atomic increments on Sandy Bridge";
pub const INTEL_SPATIAL_PREFETCH_NOTE: &str = "on, as the manual describes the core (a BIOS option can turn it off; `adjacent_line_prefetch = false`): a demand miss also reads the buddy line of its 128-byte pair without waiting for it, even when another core holds the buddy Modified (folly's pairs interfering under atomics need exactly that)";

// Model conventions.
pub const MODEL: &str = "bounce model convention (ARCHITECTURE.md, coherence model)";

// AMD core documents not in calibration.md.
pub const SOG_19H: &str =
    "AMD Software Optimization Guide for Family 19h (pub. 56665) §2.6.2 and §2.12, as quoted in LLVM llvm/lib/Target/X86/X86ScheduleZnver3.td";
pub const SOG_ZEN4: &str =
    "AMD Software Optimization Guide for Zen 4 (pub. 57647) §2.6.2 and §2.12, as quoted in LLVM llvm/lib/Target/X86/X86ScheduleZnver4.td; Chips and Cheese, \"AMD's Zen 4, Part 2\" (64-entry store queue)";

/// What `reorder_window_entries` does in the model, the one rule for what
/// a script takes of it (no source gives the scripts' instruction counts),
/// and the busy-line rule of the run ahead past a value not read yet (no
/// source says which lines a core's wrong-path or not-yet-resolved loads
/// leave alone; the engine's `busy_walk` test measures the rule).
pub const REORDER_WINDOW_NOTE: &str = "the CPU goes on past its oldest load still in flight for at most this many entries, and past a branch on a value still in flight when the branch predictor (the direction the branch took last time) guesses it right. Where an operation needs a value not read yet (a load queued at its line's home), the CPU waits for it, and meanwhile runs ahead in shadow down the predicted path within the entries left, requesting the lines its loads will read (speculative reads of write-back memory: Intel SDM vol. 3A §11.3; a squashed path's lines stay cached: Kocher et al., \"Spectre Attacks\", IEEE S&P 2019, §4). Assumed, one rule for every script: one operation takes one entry, `work N` takes N x dispatch_width. Assumed, the busy-line rule (no source retrieved): that run ahead requests no line whose home is busy (a transaction in flight or requests queued there), since a copy fetched there is mostly taken back by the writers queued first (a snoop of a line a load read before it retires replays the load: Intel's MACHINE_CLEARS.MEMORY_ORDERING), while the request costs a whole transaction of the contended line; measured on four lines hammered by atomics (sim-core engine test `busy_walk`): 4 450 cycles with the rule, 6 192 without. Halved while both SMT siblings of the core run a thread (the reorder buffer is partitioned between them)";

/// What `dispatch_width` does in the model.
pub const DISPATCH_WIDTH_NOTE: &str =
    "how fast `work N` fills the reorder window: N x this many entries";

/// What `mispredict_penalty_cycles` does in the model.
/// What `deep_idle_writeback_cycles` does in the model.
pub const DEEP_IDLE_NOTE: &str = "a core whose every CPU sleeps (`sleep`, nothing else to run) for at least this long enters its deepest idle state: its private caches are written back and its copies dropped, so the next reader finds no cache holding the line and reads it from memory at the home (Exclusive when no other core holds it). The model keeps no L3 copy of a line no core holds: where the machine's L3 keeps the written-back line (Intel's inclusive L3; Zen's victim L3 of the idle core's CCX, while that L3 stays powered), a reader would be served from there instead. 0: never";

/// What `store_rfo_ahead_entries` does in the model.
pub const STORE_RFO_AHEAD_NOTE: &str = "the store buffer requests, for ownership, the lines of its first this-many entries not yet draining, when a store enters the buffer and when an entry leaves it, each request holding one of the core's miss buffers (outstanding_misses) until its line arrives; the stores are still written one at a time from the head in program order, so a line held early makes no store visible (x86-TSO kept), and a line another core takes back before its store's turn is requested again by the drain. 0: a store's line is requested when the store reaches the head";

/// What `lock_rfo_ahead` does in the model.
pub const LOCK_RFO_AHEAD_NOTE: &str = "while a locked instruction waits (for older loads, the store buffer or its own line), the core runs ahead of it within its reorder window and free miss buffers, requesting the lines its loads will read; on, it also requests the locked instructions' lines for ownership and goes on past them; off, it stops at the next locked instruction. Every access still reads its value at its turn (a hit if the line stayed, a miss if another core took it), so x86-TSO is kept";
pub const MISPREDICT_NOTE: &str = "a branch on a value still in flight whose direction the predictor (the direction it took last time) guessed wrong waits for the value, then these cycles";
