//! AMD presets: EPYC Naples, Milan, Genoa and Bergamo. A CCX (the cores
//! sharing one L3) is one L3 domain; every transfer between L3 domains goes
//! through the probe filter at the line's home node (`lookup = home`),
//! which is what makes the socket that is not the home about twice as slow
//! in the measured matrices (calibration.md §0.2, [S3]).
//!
//! Common to every AMD preset:
//! - `locked_op_cycles` (the whole locked instruction on a line in the
//!   core's L1, its load included) = 20 is assumed for Zen 2-4: no figure was retrieved
//!   (calibration.md §10.1, and the uops.info Zen rows lie beyond the
//!   stored excerpts); recent x86 cores measure 17-20 cycles for a locked
//!   read-modify-write ([S55], [S56], and AMD Jaguar's ~17 [S57]), and the
//!   measured SMT one-way bounds it from above (e.g. Milan: 10.2 ns x 3.5
//!   GHz - 4 = 31.7 cycles). Zen 1 (Naples) takes 8 cycles from LLVM's
//!   Zen 1 scheduling model instead (`LOCKED_OP_ZEN1`).
//! - The DRAM access itself (`dram_cycles`) is n/r for Zen 3 and Zen 4
//!   (calibration.md §9b): assumed to be the 59.1 ns the Ice Lake preset
//!   derives for DDR4-3200 (201 cycles / 3.4 GHz; Cascade Lake gives 53 ns
//!   with DDR4-2933), at the preset's clock.
//!
//! Each preset's parameter function (`NAME() -> Vec<Param>`) is one long
//! list on purpose: a fact table, every figure beside its source and its
//! provenance, read and reviewed top to bottom against the cited sources;
//! split into pieces it would only scatter the table.

use super::sources::*;
use super::Provenance::{Assumed, Derived, Documented, Measured};
use super::{
    build_default, default_arbitration, flag, fully_connected, home_occupancy, int, name_param,
    num, set, text, Mode, Param, Preset, Target, SMT_OFF,
};
use sim_core::topology::MachineSpec;

const LOCKED_OP_NOTE: &str = locked_op_note!("assumed: no Zen figure was retrieved (calibration.md §10.1; the uops.info Zen rows lie beyond the stored excerpts). Recent x86 cores measure 17-20 cycles for a whole locked read-modify-write, and the measured SMT one-way bounds it from above (l1 hit + L <= SMT one-way)");

/// Zen 1 (Naples): the locked read-modify-write from the compiler's
/// scheduling model for the core.
const LOCKED_OP_ZEN1: &str = "LLVM X86ScheduleZnver1.td (llvm/llvm-project, the Zen 1 scheduling model, whose figures follow AMD's Software Optimization Guide for Family 17h): WriteCMPXCHGRMW, a CMPXCHG with a memory operand, latency 8 cycles, 5 macro-ops, written whole (the register form WriteCMPXCHG is 1 cycle; the model's folded-load forms, ZnWriteResPair, add the 4-cycle load, LoadLatency = 4, to the register form)";

const LOCKED_OP_ZEN1_NOTE: &str = locked_op_note!("8 cycles for a compare-and-exchange on a line in the core's own L1, its 4-cycle load included (the model does not tell LOCK from plain CMPXCHG, and the LOCK-prefixed rows of uops.info and Agner Fog's tables for Zen 1 were not retrievable here); the legs below are fitted with it, so the measured core-to-core figures still come out");

/// A core generation's line size, and how it is known.
struct LineSize {
    provenance: super::Provenance,
    source: &'static str,
}

/// Zen 1 (Naples): the kernel's view of the same die on a desktop part.
const ZEN1_LINE: LineSize = LineSize {
    provenance: Documented,
    source: "[S70] hmmftg/joefriday @fadc7f1, cpu/testinfo/r7_1800x_cpuinfo.go: /proc/cpuinfo of a Ryzen 7 1800X (family 23, model 1, the Zen 1 die of EPYC 7001): clflush size 64, cache_alignment 64",
};
/// Zen 3 (Milan): no cpuinfo of a Zen 3 part was retrieved.
const ZEN3_LINE: LineSize = LineSize {
    provenance: Assumed,
    source: "Zen 1 ([S70] Ryzen 7 1800X) and Zen 4c ([S71] EPYC 9754) both report clflush size 64 and cache_alignment 64 in /proc/cpuinfo; no Zen 3 listing with those fields was retrieved, assumed the same",
};
/// Zen 4c (Bergamo): the kernel's view of an EPYC 9754.
const ZEN4C_LINE: LineSize = LineSize {
    provenance: Documented,
    source: "[S71] ollama/ollama @2ab95dc, discover/cpu_linux_test.go (the /proc/cpuinfo of ollama issue 5554): an EPYC 9754 reports clflush size 64, cache_alignment 64",
};
/// Zen 4 (Genoa): as Zen 4c, which keeps the Zen 4 core.
const ZEN4_LINE: LineSize = LineSize {
    provenance: Documented,
    source: "[S71] ollama/ollama @2ab95dc, discover/cpu_linux_test.go (the /proc/cpuinfo of ollama issue 5554): an EPYC 9754 (Zen 4c) reports clflush size 64, cache_alignment 64; Zen 4c keeps the Zen 4 core [S40]",
};

const DRAM_NOTE_ZEN3_4: &str = "n/r for this part (calibration.md §9b); assumed: the DRAM access itself as derived for Ice Lake-SP with the same DDR4-3200 generation (201 cycles / 3.4 GHz = 59.1 ns; Cascade Lake gives 53 ns), at this clock";

/// AMD's description of its "mostly exclusive" L3, and the Zen one.
const L3_SHARING: &str = "AMD on its mostly exclusive L3 (family 15h, quoted at forum.canardpc.com/threads/49015, page 5): the L3 keeps a copy of a line it returns when several cores are likely to access it, and prefers to evict unshared lines; [S33] Zen's L3 is the same \"mostly exclusive victim cache\"; [S30] each CCX keeps shadow tags of its cores' L2s";

/// The Zen L3 latency where no figure for the part was retrieved.
const L3_HIT_ZEN4_NOTE: &str = "n/r for Zen 4 / Zen 4c (calibration.md §9b: [S45] says Genoa's L3 is as desktop Zen 4's, without a number): assumed to be Milan's derived 46 cycles";

fn amd_common(params: &mut Vec<Param>, line: LineSize) {
    let occupancy = home_occupancy(params);
    params.extend([
        // Documented: AMD's L3 keeps lines several of its cores read.
        text(
            "l3_shared_lines",
            "victim-with-sharing",
            Documented,
            L3_SHARING,
            "a line read by several cores of a CCX stays in its L3 (and the CCX's shadow tags find a copy in a sibling L2): a read of a clean or Shared line another core of the CCX holds is an L3 hit, not a transfer and not a memory read",
        ),
        // Assumed exact: no stored source shows a Zen probe filter falling back to broadcast.
        text(
            "directory",
            "exact",
            Assumed,
            "[S39] AMD patent US 2023/0195632 \"Probe filter directory management\"; [S30] per-CCX snoop directory",
            "the probe filter is taken to name every CCX holding a line; broadcast-shared is for older probe filters (HT Assist) that track shared lines only as shared",
        ),
        fully_connected(
            "[S30] Naples: each die one hop from the others; 2-socket parts: the two sockets joined by xGMI links",
            "every preset has at most 2 sockets, one link apart",
        ),
        occupancy,
        int(
            "line_size_bytes",
            64,
            "bytes",
            line.provenance,
            line.source,
            "64 bytes, the line size of every x86-64 part",
        ),
        // Documented: MOESI (AMD64 APM Vol. 2) [S34].
        text(
            "protocol",
            "moesi",
            Documented,
            "[S34] MOESI protocol, citing AMD64 APM Vol. 2",
            "a read of a Modified line leaves it Owned, shared dirty",
        ),
        // Assumed off: AMD documents no prefetcher that completes 128-byte
        // pairs (its L2 prefetchers follow strides and streams, up or down);
        // none of the sources searched says otherwise.
        flag(
            "adjacent_line_prefetch",
            false,
            Assumed,
            MODEL,
            "off: AMD documents no buddy-line (128-byte pair) prefetcher; a miss reads its own line only",
        ),
        // Assumed: 20 cycles (see the module documentation).
        int(
            "latency.locked_op_cycles",
            20,
            "cycles",
            Assumed,
            LOCKED_OP,
            LOCKED_OP_NOTE,
        ),
    ]);
}

// ---------------------------------------------------------------------------
// epyc-naples-2s: 2 x EPYC 7601

pub const EPYC_NAPLES_2S: Preset = Preset {
    name: "epyc-naples-2s",
    summary: "2 x EPYC 7601 (Naples), 4 dies (nodes) x 2 CCX x 4 cores per socket, SMT, MOESI",
    build: epyc_naples_2s_build,
    params: epyc_naples_2s,
    modes: &[SMT_OFF],
    // [S2] 2 x 7601: class medians recomputed from the matrix; the line is
    // homed on node 7 (the last die of socket 1): its cross-CCX pairs are
    // the fastest (130.6 ns). x = home-die pairs, y/z below.
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 64),
            home_node: 7,
            measured_ns: 12.0,
            source: S2_7601,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 7,
            measured_ns: 37.8,
            source: S2_7601,
        },
        Target {
            class: "cross-ccx-home-die",
            cpus: (56, 60),
            home_node: 7,
            measured_ns: 130.6,
            source: S2_7601,
        },
        Target {
            class: "cross-ccx-other-die-home-socket",
            cpus: (32, 36),
            home_node: 7,
            measured_ns: 216.5,
            source: S2_7601,
        },
        Target {
            class: "home-die-to-other-die",
            cpus: (56, 32),
            home_node: 7,
            measured_ns: 210.6,
            source: S2_7601,
        },
        Target {
            class: "two-non-home-dies-home-socket",
            cpus: (32, 40),
            home_node: 7,
            measured_ns: 255.7,
            source: S2_7601,
        },
        Target {
            class: "cross-ccx-non-home-socket",
            cpus: (0, 4),
            home_node: 7,
            measured_ns: 334.3,
            source: S2_7601,
        },
        Target {
            class: "cross-die-non-home-socket",
            cpus: (0, 8),
            home_node: 7,
            measured_ns: 374.0,
            source: S2_7601,
        },
        Target {
            class: "cross-socket-home-die",
            cpus: (0, 56),
            home_node: 7,
            measured_ns: 335.9,
            source: S2_7601,
        },
        Target {
            class: "cross-socket-other-dies",
            cpus: (0, 32),
            home_node: 7,
            measured_ns: 376.7,
            source: S2_7601,
        },
    ],
};

fn epyc_naples_2s_build() -> MachineSpec {
    build_default("epyc-naples-2s")
}

fn epyc_naples_2s() -> Vec<Param> {
    let mut params = vec![
        name_param("epyc-naples-2s"),
        // Documented: 2.2 GHz base, 3.2 GHz boost [S28].
        int(
            "clock_mhz",
            3200,
            "MHz",
            Documented,
            "[S28] EPYC 7601: 2.2 / 3.2 GHz",
            "max boost, as for every preset (calibration.md §0.3)",
        ),
        int(
            "sockets",
            2,
            "",
            Documented,
            "[S2] dual EPYC 7601 matrix; [S31] 2P configurations",
            "",
        ),
        // Documented: 4 dies, each a NUMA node, 8 in 2S [S31, S32].
        int(
            "nodes_per_socket",
            4,
            "",
            Documented,
            "[S28] 4 x 8-core dies per socket; [S31] eight NUMA domains in 2P; [S32] lscpu of 2 x EPYC 7451: 8 NUMA nodes",
            "",
        ),
        // Documented: a die is 2 CCX of 4 cores, each CCX with its own 8 MB L3 [S29, S30].
        int(
            "l3_per_node",
            2,
            "",
            Documented,
            "[S29] lstopo of a Zen 1 die: L3 8192KB per 4 cores; [S30] 2 CCX per die",
            "",
        ),
        int(
            "cores_per_l3",
            4,
            "",
            Documented,
            "[S29], [S30] 4 cores per CCX",
            "",
        ),
        int(
            "threads_per_core",
            2,
            "",
            Documented,
            "[S28] 32 cores / 64 threads per socket",
            "",
        ),
        // Measured: home-die cross-CCX 130.6 ns vs 216.5 ns on another die of that socket [S2].
        text(
            "lookup",
            "home",
            Measured,
            S2_7601,
            "cross-CCX on the home die 130.6 ns, on another die of the home socket 216.5 ns, on the other socket 334.3 ns: every transfer goes through the home die's directory ([S3]; [S30] a snoop directory per CCX)",
        ),
        // Documented: 44 entries, the Zen 1 store queue as AMD presented it
        // at Hot Chips 2016 [S65] and as Zen 2's grew from it [S66].
        int(
            "store_buffer_entries",
            44,
            "entries",
            Documented,
            "[S65] Planet3DNow!, \"Details und Analyse der Zen-Architektur nach der Hot-Chips-Konferenz\", p.5: Zen's load queue 72 and store queue 44 entries (AMD's Hot Chips 2016 slides); WikiChip, Zen microarchitecture (memory subsystem): a 44-entry store queue; [S66] AnandTech, Zen 2 microarchitecture analysis, p.10: Zen 2's store queue grew from 44 to 48 entries",
            store_buffer_note!("only its fullness matters, for stores that miss back to back"),
        ),
        amd_smt_share(),
        amd_miss_buffers(ZEN1_MISS_BUFFERS),
        amd_lock_speculation(Assumed, ZEN1_LOCK_SPECULATION),
        amd_store_rfo_ahead(),
        amd_deep_idle_writeback(3200),
        amd_reorder_window(&ZEN1_WINDOW),
        amd_dispatch_width(&ZEN1_WINDOW),
        amd_mispredict_penalty(&ZEN1_WINDOW),
        default_arbitration(),
        // Documented: 4-cycle L1 [S23, S24, S30] (calibration.md §9b).
        int(
            "latency.l1_hit_cycles",
            4,
            "cycles",
            Documented,
            "[S23], [S24], [S30] Naples L1 4 cycles (calibration.md §9b)",
            "",
        ),
        // Derived: 12.0 ns [S2] x 3.2 GHz = 38.4 = 4 + 8 + 26.
        int(
            "latency.smt_transfer_cycles",
            26,
            "cycles",
            Derived,
            S2_7601,
            "SMT one-way 12.0 ns x 3.2 GHz = 38.4 cycles = 4 (l1 hit) + 8 (locked op) + 26.4 -> 26",
        ),
        // Derived: 37.8 ns [S2] x 3.2 GHz = 121.0, minus 8 = 113.
        int(
            "latency.l3_transfer_cycles",
            113,
            "cycles",
            Derived,
            S2_7601,
            "same-CCX one-way 37.8 ns x 3.2 GHz = 120.96 cycles, minus 8 (locked op) = 112.96 -> 113",
        ),
        // Derived: cross-CCX on the home die = L + 3y: (130.6 x 3.2 - 8) / 3 = 137.
        int(
            "latency.hop_in_node_cycles",
            137,
            "cycles",
            Derived,
            S2_7601,
            "cross-CCX on the home die (16 pairs) = L + 3y (requester to its die's directory, directory to owner, owner to requester): (130.6 ns x 3.2 GHz - 8) / 3 = (417.9 - 8) / 3 = 136.6 -> 137",
        ),
        // Derived: z from three home-socket classes, mean 269.5 -> 269.
        int(
            "latency.hop_between_nodes_cycles",
            269,
            "cycles",
            Derived,
            S2_7601,
            "die-to-die leg z from the home socket's classes (x 3.2 GHz): two non-home dies = L + 3z: (255.7 x 3.2 - 8) / 3 = 270.1; home die to another die = L + y + 2z: (210.6 x 3.2 - 8 - 137) / 2 = 264.5; cross-CCX on a non-home die = L + 2z + y: (216.5 x 3.2 - 8 - 137) / 2 = 273.9; mean 269.5 -> 269",
        ),
        // Derived: x from the four classes that cross sockets, mean 462.9 -> 463.
        int(
            "latency.hop_between_sockets_cycles",
            463,
            "cycles",
            Derived,
            S2_7601,
            "socket-to-socket leg x from the classes that reach the home across sockets (x 3.2 GHz): cross-CCX on a die of the other socket = L + 2x + y: (334.3 x 3.2 - 145) / 2 = 462.4; cross-socket to the home die = L + y + 2x: (335.9 x 3.2 - 145) / 2 = 464.9; two dies of the other socket = L + 2x + z: (374.0 x 3.2 - 277) / 2 = 459.9; cross-socket to a non-home die = L + z + 2x: (376.7 x 3.2 - 277) / 2 = 464.2; mean 462.9 -> 463. The overall cross-socket median (366.9 ns) then comes out at 375.9 ns for 3/4 of the pairs, 334.7 for the rest",
        ),
        // Derived: 97 ns [S23, S24] x 3.2 GHz = 310.4 = 2 x 137 + 36.
        int(
            "latency.dram_cycles",
            36,
            "cycles",
            Derived,
            "[S23], [S24], [S30] Naples local DRAM 96-98 ns (calibration.md §9b)",
            "97 ns x 3.2 GHz = 310.4 cycles = 2 x 137 (legs to the home die) + 36.4 -> 36. Small because the legs fitted to the CAS ping-pong are long on Naples; remote DRAM is n/r, the model gives 2 x 463 + 36 = 962 cycles = 300.6 ns",
        ),
        int(
            "info.base_clock_mhz",
            2200,
            "MHz",
            Documented,
            "[S28]",
            "",
        ),
        int(
            "info.boost_clock_mhz",
            3200,
            "MHz",
            Documented,
            "[S28]",
            "",
        ),
        int("l1d_kib", 32, "KiB", Documented, "[S29] lstopo L1d 32KB", ""),
        int("l1d_ways", 8, "ways", Documented, "[S30] Zen L1d 8-way", ""),
        int(
            "l2_kib",
            512,
            "KiB",
            Documented,
            "[S29] lstopo L2 512KB; [S30] 8-way",
            "",
        ),
        int("l2_ways", 8, "ways", Documented, "[S30]", ""),
        int(
            "info.l3_kib",
            8192,
            "KiB",
            Documented,
            "[S29] lstopo L3 8192KB per CCX; [S30] 16-way, mostly exclusive victim cache [S33]",
            "",
        ),
        int("info.l3_ways", 16, "ways", Documented, "[S30]", ""),
        int(
            "l2_hit_cycles",
            12,
            "cycles",
            Measured,
            "[S23], [S24] (calibration.md §9b)",
            "",
        ),
        int(
            "latency.l3_hit_cycles",
            40,
            "cycles",
            Derived,
            "[S23], [S24], [S30] 34-47 cycles (13-19 ns) (calibration.md §9b)",
            "the middle of the measured range: (34 + 47) / 2 = 40.5 -> 40",
        ),
        num(
            "info.dram_local_ns",
            97.0,
            "ns",
            Measured,
            "[S23], [S24] 96-98 ns (calibration.md §9b)",
            "",
        ),
        int(
            "info.dram_local_cycles",
            310,
            "cycles",
            Derived,
            "[S23], [S24]",
            "97 ns x 3.2 GHz = 310.4",
        ),
        num(
            "info.dram_remote_ns",
            300.6,
            "ns",
            Derived,
            MODEL,
            "n/r (calibration.md §14); the model's 2 x 463 + 36 = 962 cycles at 3.2 GHz",
        ),
        int(
            "info.dram_remote_cycles",
            962,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 463 + 36",
        ),
    ];
    amd_common(&mut params, ZEN1_LINE);
    // Zen 1's locked read-modify-write replaces the common assumption.
    set(
        &mut params,
        int(
            "latency.locked_op_cycles",
            8,
            "cycles",
            Documented,
            LOCKED_OP_ZEN1,
            LOCKED_OP_ZEN1_NOTE,
        ),
    );
    params
}

// ---------------------------------------------------------------------------
// epyc-milan-2s: 2 x EPYC 7763

pub const EPYC_MILAN_2S: Preset = Preset {
    name: "epyc-milan-2s",
    summary: "2 x EPYC 7763 (Milan), 8 CCDs of one 8-core CCX per socket, NPS1, SMT, MOESI",
    build: epyc_milan_2s_build,
    params: epyc_milan_2s,
    modes: &[
        Mode {
            name: "nps1",
            summary: "one NUMA node per socket (default)",
            group: Some("nps"),
            default: true,
            apply: milan_nps1,
        },
        Mode {
            name: "nps2",
            summary: "two NUMA nodes of 4 CCDs per socket",
            group: Some("nps"),
            default: false,
            apply: milan_nps2,
        },
        Mode {
            name: "nps4",
            summary: "four NUMA nodes of 2 CCDs per socket",
            group: Some("nps"),
            default: false,
            apply: milan_nps4,
        },
        SMT_OFF,
    ],
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 128),
            home_node: 0,
            measured_ns: 10.2,
            source: S2_7763,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 0,
            measured_ns: 25.5,
            source: S2_7763,
        },
        Target {
            class: "cross-ccd-home-socket",
            cpus: (0, 8),
            home_node: 0,
            measured_ns: 112.7,
            source: S2_7763,
        },
        Target {
            class: "cross-ccd-non-home-socket",
            cpus: (64, 72),
            home_node: 0,
            measured_ns: 200.4,
            source: S1_7R13,
        },
        Target {
            class: "cross-socket",
            cpus: (0, 64),
            home_node: 0,
            measured_ns: 197.1,
            source: S1_7R13,
        },
    ],
};

fn epyc_milan_2s_build() -> MachineSpec {
    build_default("epyc-milan-2s")
}

fn epyc_milan_2s() -> Vec<Param> {
    let mut params = vec![
        name_param("epyc-milan-2s"),
        // Documented: 2.45 GHz base, 3.5 GHz boost [S43].
        int(
            "clock_mhz",
            3500,
            "MHz",
            Documented,
            "[S43] EPYC 7763: 2.45 / 3.5 GHz",
            "max boost, as for every preset (calibration.md §0.3)",
        ),
        int(
            "sockets",
            2,
            "",
            Documented,
            "[S2] dual EPYC 7763 matrix",
            "",
        ),
        // Documented: NPS1 default; modes nps2/nps4 [S13, S38].
        int(
            "nodes_per_socket",
            1,
            "",
            Documented,
            "[S38] Dell R6515 manual: NPS options; [S13] NPS0/1/2/4 platform options",
            "NPS1, the default; modes nps2 and nps4",
        ),
        // Documented: 8 CCDs, one 8-core CCX each [S10, S43].
        int(
            "l3_per_node",
            8,
            "",
            Documented,
            "[S10] AnandTech Milan review; [S43] 8 CCDs x 8 cores",
            "one CCX per CCD, each an L3 domain",
        ),
        int(
            "cores_per_l3",
            8,
            "",
            Documented,
            "[S10] 8 cores sharing 32 MB L3 per CCX",
            "",
        ),
        int(
            "threads_per_core",
            2,
            "",
            Documented,
            "[S43] 64 cores / 128 threads",
            "",
        ),
        // Measured: cross-CCD 107.6 ns on the home socket vs 200.4 on the other (7R13) [S1].
        text(
            "lookup",
            "home",
            Measured,
            S1_7R13,
            "cross-CCD 107.6 ns with both cores on the home socket vs 200.4 ns on the other socket, which is the cross-socket 197.1 ns: the transfer goes through the home ([S3])",
        ),
        // Documented: 64-entry store queue (AMD SOG 19h).
        int(
            "store_buffer_entries",
            64,
            "entries",
            Documented,
            SOG_19H,
            store_buffer_note!("\"The LS unit utilizes a 64-entry store queue (STQ)\""),
        ),
        amd_smt_share(),
        amd_miss_buffers(ZEN3_MISS_BUFFERS),
        amd_lock_speculation(Documented, ZEN3_LOCK_SPECULATION),
        amd_store_rfo_ahead(),
        amd_deep_idle_writeback(3500),
        amd_reorder_window(&ZEN3_WINDOW),
        amd_dispatch_width(&ZEN3_WINDOW),
        amd_mispredict_penalty(&ZEN3_WINDOW),
        default_arbitration(),
        // Documented: 4-cycle integer load-to-use (AMD SOG 19h); calibration.md n/r.
        int(
            "latency.l1_hit_cycles",
            4,
            "cycles",
            Documented,
            SOG_19H,
            "\"4- or 5-cycle integer load-to-use latency\", 4 for simple addressing; n/r in calibration.md §9b",
        ),
        // Derived: 10.2 ns [S2] x 3.5 GHz = 35.7 = 4 + 20 + 12.
        int(
            "latency.smt_transfer_cycles",
            12,
            "cycles",
            Derived,
            S2_7763,
            "SMT one-way 10.2 ns x 3.5 GHz = 35.7 cycles = 4 (l1 hit) + 20 (locked op) + 11.7 -> 12",
        ),
        // Derived: 25.5 ns [S2] x 3.5 GHz = 89.25, minus 20 = 69.
        int(
            "latency.l3_transfer_cycles",
            69,
            "cycles",
            Derived,
            S2_7763,
            "same-CCX one-way 25.5 ns x 3.5 GHz = 89.25 cycles, minus 20 = 69.25 -> 69",
        ),
        // Derived: cross-CCD on the home socket = L + 3y: (112.7 x 3.5 - 20) / 3 = 125.
        int(
            "latency.hop_in_node_cycles",
            125,
            "cycles",
            Derived,
            S2_7763,
            "cross-CCD on the home socket (the 7763 itself, fast-socket median) = L + 3y: (112.7 ns x 3.5 GHz - 20) / 3 = (394.45 - 20) / 3 = 124.8 -> 125",
        ),
        // Assumed: unused in NPS1; in NPS2/NPS4 the same IOD, so the in-node leg.
        int(
            "latency.hop_between_nodes_cycles",
            125,
            "cycles",
            Assumed,
            S2_7763,
            "unused in NPS1. No NPS2/NPS4 measurement in the sources: NPS changes how memory is interleaved and which nodes Linux reports [S38], not the IOD the transfer crosses, and the NPS1 leg is already the average over the IOD's quadrants; so a leg between quadrants is assumed to cost the NPS1 leg",
        ),
        // Derived: cross-socket = L + 2x + y: (197.1 x 3.5 - 20 - 125) / 2 = 272 (7R13 chosen over the 7763's 301.2).
        int(
            "latency.hop_between_sockets_cycles",
            272,
            "cycles",
            Derived,
            S1_7R13,
            "cross-socket = L + 2x + y (home on socket 0): (197.1 ns x 3.5 GHz - 20 - 125) / 2 = (689.85 - 145) / 2 = 272.4 -> 272. The sources disagree: 197.1 ns (2 x 7R13 [S1]) vs 301.2 ns (2 x 7763 [S2], calibration.md §12.1). Chosen: 197.1, because that run homes the line as the benchmark documents (first touch on node 0, §0.2, [S3]) and is consistent with the model: its slow-socket cross-CCD (200.4 ns) equals its cross-socket, both L + 2x + y. The 7763 run shows no slow socket at all (123.0 vs 112.7 ns), so its line was not homed on one node for all pairs and its 301 ns cannot be read with the same legs; BIOS/xGMI settings are not recorded for either",
        ),
        // Assumed: 59.1 ns DRAM access (the Ice Lake DDR4-3200 figure) x 3.5 GHz = 207.
        int(
            "latency.dram_cycles",
            207,
            "cycles",
            Assumed,
            "[S16] via the icelake-sp-2s derivation (201 cycles at 3.4 GHz)",
            DRAM_NOTE_ZEN3_4,
        ),
        int(
            "info.base_clock_mhz",
            2450,
            "MHz",
            Documented,
            "[S43]",
            "",
        ),
        int(
            "info.boost_clock_mhz",
            3500,
            "MHz",
            Documented,
            "[S43]",
            "",
        ),
        int(
            "l1d_kib",
            32,
            "KiB",
            Documented,
            "[S44] Zen 3 L1d 32 KB 8-way",
            "",
        ),
        int("l1d_ways", 8, "ways", Documented, "[S44]", ""),
        int(
            "l2_kib",
            512,
            "KiB",
            Documented,
            "[S44] Zen 3 L2 512 KB 8-way",
            "",
        ),
        int("l2_ways", 8, "ways", Documented, "[S44]", ""),
        int(
            "l2_hit_cycles",
            12,
            "cycles",
            Assumed,
            "epyc-naples-2s's measured l2_hit_cycles (12); Zen 3's L2 latency n/r in retrieved text (calibration.md, Milan row: L1/L2 cycles n/r)",
            "the private L2 of a Zen core, taken unchanged from Zen 1",
        ),
        int(
            "info.l3_kib",
            32768,
            "KiB",
            Documented,
            "[S10], [S43] 32 MB per CCX, 256 MB per socket",
            "",
        ),
        int(
            "latency.l3_hit_cycles",
            46,
            "cycles",
            Derived,
            "[S45] Chips and Cheese: Milan-X L3 50 cycles, V-Cache adds 4",
            "50 - 4 = 46 (calibration.md §6)",
        ),
        num(
            "info.dram_local_ns",
            130.6,
            "ns",
            Derived,
            MODEL,
            "n/r (calibration.md §6); the model's 2 x 125 + 207 = 457 cycles at 3.5 GHz",
        ),
        int(
            "info.dram_local_cycles",
            457,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 125 + 207",
        ),
        num(
            "info.dram_remote_ns",
            214.6,
            "ns",
            Derived,
            MODEL,
            "n/r; the model's 2 x 272 + 207 = 751 cycles at 3.5 GHz",
        ),
        int(
            "info.dram_remote_cycles",
            751,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 272 + 207",
        ),
    ];
    amd_common(&mut params, ZEN3_LINE);
    params
}

fn milan_nps1(_params: &mut Vec<Param>) {}

fn milan_nps(params: &mut Vec<Param>, nodes: u64, note: &'static str) {
    set(
        params,
        int(
            "nodes_per_socket",
            nodes,
            "",
            Documented,
            "[S38] Dell R6515 manual: NPS options vs CCDs; [S13] NPS0/1/2/4 platform options",
            note,
        ),
    );
    set(
        params,
        int(
            "l3_per_node",
            8 / nodes,
            "",
            Derived,
            "[S43] 8 CCDs per socket; [S38]",
            "8 CCDs split evenly over the socket's nodes (quadrants of the IOD)",
        ),
    );
}

fn milan_nps2(params: &mut Vec<Param>) {
    milan_nps(
        params,
        2,
        "mode nps2: each half of the IOD and its 4 memory channels a node",
    );
}

fn milan_nps4(params: &mut Vec<Param>) {
    milan_nps(
        params,
        4,
        "mode nps4: each quadrant of the IOD and its 2 memory channels a node",
    );
}

// ---------------------------------------------------------------------------
// epyc-genoa-1s, epyc-genoa-2s: EPYC 9654

pub const EPYC_GENOA_1S: Preset = Preset {
    name: "epyc-genoa-1s",
    summary: "1 x EPYC 9654 (Genoa), 12 CCDs of one 8-core CCX, NPS1, SMT, MOESI",
    build: epyc_genoa_1s_build,
    params: epyc_genoa_1s,
    modes: &[SMT_OFF],
    // No 1-socket matrix: the home socket of the 2 x 9654.
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 96),
            home_node: 0,
            measured_ns: 10.3,
            source: S2_9454,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 0,
            measured_ns: 27.1,
            source: S2_9654,
        },
        Target {
            class: "cross-ccd",
            cpus: (0, 8),
            home_node: 0,
            measured_ns: 99.3,
            source: S2_9654,
        },
    ],
};

pub const EPYC_GENOA_2S: Preset = Preset {
    name: "epyc-genoa-2s",
    summary: "2 x EPYC 9654 (Genoa), 12 CCDs of one 8-core CCX per socket, NPS1, SMT, MOESI",
    build: epyc_genoa_2s_build,
    params: epyc_genoa_2s,
    modes: &[SMT_OFF],
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 192),
            home_node: 0,
            measured_ns: 10.3,
            source: S2_9454,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 0,
            measured_ns: 27.1,
            source: S2_9654,
        },
        Target {
            class: "cross-ccd-home-socket",
            cpus: (0, 8),
            home_node: 0,
            measured_ns: 99.3,
            source: S2_9654,
        },
        // The 9654 run shows no slow socket (99.3 ns on both); the 9454
        // run (same IOD and CCDs, 6 cores per CCD) does: 200.1 ns.
        Target {
            class: "cross-ccd-non-home-socket",
            cpus: (96, 104),
            home_node: 0,
            measured_ns: 200.1,
            source: S2_9454,
        },
        Target {
            class: "cross-socket",
            cpus: (0, 96),
            home_node: 0,
            measured_ns: 191.6,
            source: S2_9654,
        },
    ],
};

fn epyc_genoa_1s_build() -> MachineSpec {
    build_default("epyc-genoa-1s")
}

fn epyc_genoa_2s_build() -> MachineSpec {
    build_default("epyc-genoa-2s")
}

fn epyc_genoa_1s() -> Vec<Param> {
    let mut params = epyc_genoa("epyc-genoa-1s");
    set(
        &mut params,
        int(
            "sockets",
            1,
            "",
            Documented,
            "[S47] SP5 socket, 96 cores per package",
            "one socket; no 1-socket matrix was found, so the 2-socket figures of the home socket calibrate it",
        ),
    );
    set(
        &mut params,
        int(
            "latency.hop_between_sockets_cycles",
            286,
            "cycles",
            Derived,
            S2_9654,
            "unused with one socket; the value of epyc-genoa-2s, so that a user who adds a socket gets the measured leg: (191.6 ns x 3.7 GHz - 20 - 116) / 2 = 286.5 -> 286",
        ),
    );
    params
}

fn epyc_genoa_2s() -> Vec<Param> {
    epyc_genoa("epyc-genoa-2s")
}

fn epyc_genoa(name: &'static str) -> Vec<Param> {
    let mut params = vec![
        name_param(name),
        // Documented: 2.40 / 3.70 GHz [S48].
        int(
            "clock_mhz",
            3700,
            "MHz",
            Documented,
            "[S48] llmperf.net, citing TechPowerUp: EPYC 9654 2.40 / 3.70 GHz",
            "max boost, as for every preset (calibration.md §0.3)",
        ),
        int(
            "sockets",
            2,
            "",
            Documented,
            "[S2] dual EPYC 9654 matrix",
            "",
        ),
        int(
            "nodes_per_socket",
            1,
            "",
            Assumed,
            "[S13] NPS platform options (NPS1 is the usual default)",
            "NPS1: the matrix's CCD-pair medians show quadrants (90 ns near, 100-103 ns far) but one node per socket",
        ),
        // Documented: 12 CCDs of 8 cores, one CCX each [S46, S47].
        int(
            "l3_per_node",
            12,
            "",
            Documented,
            "[S46] 12 CCDs x 8 cores; [S47] 12 CCDs, 32 MB L3 per CCD",
            "one CCX per CCD, each an L3 domain",
        ),
        int(
            "cores_per_l3",
            8,
            "",
            Documented,
            "[S46], [S47]",
            "",
        ),
        int(
            "threads_per_core",
            2,
            "",
            Documented,
            "[S46] 96 cores / 192 threads",
            "the measured 2 x 9654 ran with SMT off: mode smt-off",
        ),
        // Measured: cross-CCD 103.3 ns on the home socket vs 200.1 on the other (9454) [S2].
        text(
            "lookup",
            "home",
            Measured,
            S2_9454,
            "cross-CCD 103.3 ns on the home socket vs 200.1 ns on the other, which is the cross-socket 197.7 ns ([S3]). The 9654 run shows no slow socket (99.3 ns on both): its line was not homed on one node for all pairs",
        ),
        int(
            "store_buffer_entries",
            64,
            "entries",
            Documented,
            SOG_ZEN4,
            store_buffer_note!("\"The LS unit utilizes a 64-entry store queue (STQ)\""),
        ),
        amd_smt_share(),
        amd_miss_buffers(ZEN4_MISS_BUFFERS),
        amd_lock_speculation(Assumed, ZEN4_LOCK_SPECULATION),
        amd_store_rfo_ahead(),
        amd_deep_idle_writeback(3700),
        amd_reorder_window(&ZEN4_WINDOW),
        amd_dispatch_width(&ZEN4_WINDOW),
        amd_mispredict_penalty(&ZEN4_WINDOW),
        default_arbitration(),
        int(
            "latency.l1_hit_cycles",
            4,
            "cycles",
            Documented,
            SOG_ZEN4,
            "\"4- or 5-cycle integer load-to-use latency\", 4 for simple addressing; n/r in calibration.md §9b",
        ),
        // Derived: 10.3 ns (9454; the 9654 ran SMT off) x 3.7 GHz = 38.1 = 4 + 20 + 14.
        int(
            "latency.smt_transfer_cycles",
            14,
            "cycles",
            Derived,
            S2_9454,
            "the 9654 matrix is SMT off; the 9454 (same Zen 4 core and IOD): 10.3 ns x 3.7 GHz = 38.1 cycles = 4 + 20 + 14.1 -> 14",
        ),
        // Derived: 27.1 ns [S2] x 3.7 GHz = 100.3, minus 20 = 80.
        int(
            "latency.l3_transfer_cycles",
            80,
            "cycles",
            Derived,
            S2_9654,
            "same-CCX one-way 27.1 ns x 3.7 GHz = 100.27 cycles, minus 20 = 80.27 -> 80",
        ),
        // Derived: cross-CCD = L + 3y: (99.3 x 3.7 - 20) / 3 = 116.
        int(
            "latency.hop_in_node_cycles",
            116,
            "cycles",
            Derived,
            S2_9654,
            "cross-CCD on the home socket = L + 3y: (99.3 ns x 3.7 GHz - 20) / 3 = (367.41 - 20) / 3 = 115.8 -> 116",
        ),
        int(
            "latency.hop_between_nodes_cycles",
            116,
            "cycles",
            Assumed,
            S2_9654,
            "unused in NPS1 (one node per socket); set to the in-node leg, the same IOD",
        ),
        // Derived: cross-socket = L + 2x + y: (191.6 x 3.7 - 20 - 116) / 2 = 286.
        int(
            "latency.hop_between_sockets_cycles",
            286,
            "cycles",
            Derived,
            S2_9654,
            "cross-socket = L + 2x + y: (191.6 ns x 3.7 GHz - 20 - 116) / 2 = (708.92 - 136) / 2 = 286.5 -> 286. The model's slow-socket cross-CCD is the same L + 2x + y = 191.4 ns, against 200.1 ns on the 9454 (-4.4 %)",
        ),
        // Assumed: 59.1 ns x 3.7 GHz = 219.
        int(
            "latency.dram_cycles",
            219,
            "cycles",
            Assumed,
            "[S16] via the icelake-sp-2s derivation (201 cycles at 3.4 GHz)",
            DRAM_NOTE_ZEN3_4,
        ),
        int(
            "info.base_clock_mhz",
            2400,
            "MHz",
            Documented,
            "[S48]",
            "",
        ),
        int(
            "info.boost_clock_mhz",
            3700,
            "MHz",
            Documented,
            "[S48]",
            "",
        ),
        int(
            "l1d_kib",
            32,
            "KiB",
            Documented,
            "[S44] Zen 4 L1d 32 KB 8-way",
            "",
        ),
        int("l1d_ways", 8, "ways", Documented, "[S44]", ""),
        int(
            "l2_kib",
            1024,
            "KiB",
            Documented,
            "[S41] 1 MB/core; [S44] 8-way",
            "",
        ),
        int("l2_ways", 8, "ways", Documented, "[S44]", ""),
        int(
            "l2_hit_cycles",
            14,
            "cycles",
            Assumed,
            "Zen 4's L2 latency n/r in retrieved text; cascadelake-sp-2s's measured l2_hit_cycles (14, a 1 MB L2) taken for Zen 4's 1 MB L2",
            "two cycles above Naples' measured 12 for an L2 twice as large: a load that finds its line in the L2 but not the L1D costs this instead of latency.l1_hit_cycles",
        ),
        int(
            "info.l3_kib",
            32768,
            "KiB",
            Documented,
            "[S47] 32 MB per CCD; [S49] 384 MB total",
            "",
        ),
        num(
            "info.dram_local_ns",
            121.9,
            "ns",
            Derived,
            MODEL,
            "n/r (calibration.md §7); the model's 2 x 116 + 219 = 451 cycles at 3.7 GHz",
        ),
        int(
            "info.dram_local_cycles",
            451,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 116 + 219",
        ),
        num(
            "info.dram_remote_ns",
            213.8,
            "ns",
            Derived,
            MODEL,
            "n/r; the model's 2 x 286 + 219 = 791 cycles at 3.7 GHz",
        ),
        int(
            "info.dram_remote_cycles",
            791,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 286 + 219",
        ),
    ];
    // Assumed: no Zen 4 L3 figure was retrieved.
    params.push(int(
        "latency.l3_hit_cycles",
        46,
        "cycles",
        Assumed,
        "[S45] Chips and Cheese: Milan-X L3 50 cycles, V-Cache adds 4 (Milan: 46)",
        L3_HIT_ZEN4_NOTE,
    ));
    amd_common(&mut params, ZEN4_LINE);
    params
}

// ---------------------------------------------------------------------------
// bergamo-1s, bergamo-2s: EPYC 9754

pub const BERGAMO_1S: Preset = Preset {
    name: "bergamo-1s",
    summary: "1 x EPYC 9754 (Bergamo), 8 CCDs x 2 CCX x 8 cores, NPS1, SMT, MOESI",
    build: bergamo_1s_build,
    params: bergamo_1s,
    modes: &[SMT_OFF],
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 128),
            home_node: 0,
            measured_ns: 12.7,
            source: S2_9754_2S,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 0,
            measured_ns: 33.0,
            source: S2_9754_1S,
        },
        Target {
            class: "cross-ccx-same-ccd",
            cpus: (0, 8),
            home_node: 0,
            measured_ns: 106.1,
            source: S2_9754_1S,
        },
        Target {
            class: "cross-ccd",
            cpus: (0, 16),
            home_node: 0,
            measured_ns: 109.8,
            source: S2_9754_1S,
        },
    ],
};

pub const BERGAMO_2S: Preset = Preset {
    name: "bergamo-2s",
    summary: "2 x EPYC 9754 (Bergamo), 8 CCDs x 2 CCX x 8 cores per socket, NPS1, SMT, MOESI",
    build: bergamo_2s_build,
    params: bergamo_2s,
    modes: &[SMT_OFF],
    targets: &[
        Target {
            class: "smt",
            cpus: (0, 256),
            home_node: 0,
            measured_ns: 12.7,
            source: S2_9754_2S,
        },
        Target {
            class: "same-ccx",
            cpus: (0, 1),
            home_node: 0,
            measured_ns: 32.5,
            source: S2_9754_2S,
        },
        Target {
            class: "cross-ccx-same-ccd",
            cpus: (0, 8),
            home_node: 0,
            measured_ns: 106.6,
            source: S2_9754_2S,
        },
        Target {
            class: "cross-ccd-home-socket",
            cpus: (0, 16),
            home_node: 0,
            measured_ns: 109.8,
            source: S2_9754_2S,
        },
        Target {
            class: "cross-ccd-non-home-socket",
            cpus: (128, 144),
            home_node: 0,
            measured_ns: 205.6,
            source: S2_9754_2S,
        },
        Target {
            class: "cross-socket",
            cpus: (0, 128),
            home_node: 0,
            measured_ns: 203.6,
            source: S2_9754_2S,
        },
    ],
};

fn bergamo_1s_build() -> MachineSpec {
    build_default("bergamo-1s")
}

fn bergamo_2s_build() -> MachineSpec {
    build_default("bergamo-2s")
}

fn bergamo_1s() -> Vec<Param> {
    let mut params = bergamo("bergamo-1s");
    set(
        &mut params,
        int(
            "sockets",
            1,
            "",
            Documented,
            "[S2] 1 x EPYC 9754 matrix (128 CPUs, SMT off)",
            "",
        ),
    );
    set(
        &mut params,
        int(
            "latency.hop_between_sockets_cycles",
            252,
            "cycles",
            Derived,
            S2_9754_2S,
            "unused with one socket; the value of bergamo-2s, so that a user who adds a socket gets the measured leg: (203.6 ns x 3.1 GHz - 20 - 107) / 2 = 252.1 -> 252",
        ),
    );
    params
}

fn bergamo_2s() -> Vec<Param> {
    bergamo("bergamo-2s")
}

fn bergamo(name: &'static str) -> Vec<Param> {
    let mut params = vec![
        name_param(name),
        // Documented: 2.25 / 3.1 GHz [S52]; all 256 threads at a constant 3.1 GHz [S53].
        int(
            "clock_mhz",
            3100,
            "MHz",
            Documented,
            "[S52] EPYC 9754 2.25 / 3.1 GHz; [S53] ServeTheHome: all 256 threads at a constant 3.1 GHz under stress-ng",
            "max boost, which [S53] observed the part to hold even with every thread busy",
        ),
        int(
            "sockets",
            2,
            "",
            Documented,
            "[S2] dual EPYC 9754 matrix",
            "",
        ),
        int(
            "nodes_per_socket",
            1,
            "",
            Assumed,
            "[S13] NPS platform options (NPS1 is the usual default)",
            "NPS1",
        ),
        // Documented: 8 CCDs x 2 CCX, 16 CCX of 8 cores per socket [S40, S41, S42]; the matrix shows 16 groups of 8 [S2].
        int(
            "l3_per_node",
            16,
            "",
            Documented,
            "[S40] Chips and Cheese; [S41] 8 CCDs x 16 cores; [S42] 2 CCX per CCD, 16 MB L3 each; [S2] 16 groups of 8 cores per socket",
            "each CCX is an L3 domain. The model has no CCD level: cross-CCX on one CCD (106.1 ns) costs what cross-CCD does (109.8 ns), so both are L + 3y through the IOD",
        ),
        int(
            "cores_per_l3",
            8,
            "",
            Documented,
            "[S42] 8 cores per CCX",
            "",
        ),
        int(
            "threads_per_core",
            2,
            "",
            Documented,
            "[S41], [S52] 128 cores / 256 threads",
            "",
        ),
        // Measured: cross-CCD 109.8 ns on the home socket vs 205.6 on the other [S2].
        text(
            "lookup",
            "home",
            Measured,
            S2_9754_2S,
            "cross-CCD 109.8 ns on the home socket vs 205.6 ns on the other, which is the cross-socket 203.6 ns ([S3])",
        ),
        int(
            "store_buffer_entries",
            64,
            "entries",
            Documented,
            SOG_ZEN4,
            store_buffer_note!("Zen 4c keeps the Zen 4 core [S40]: 64-entry store queue"),
        ),
        amd_smt_share(),
        amd_miss_buffers(ZEN4_MISS_BUFFERS),
        amd_lock_speculation(Assumed, ZEN4_LOCK_SPECULATION),
        amd_store_rfo_ahead(),
        amd_deep_idle_writeback(3100),
        amd_reorder_window(&ZEN4_WINDOW),
        amd_dispatch_width(&ZEN4_WINDOW),
        amd_mispredict_penalty(&ZEN4_WINDOW),
        default_arbitration(),
        int(
            "latency.l1_hit_cycles",
            4,
            "cycles",
            Documented,
            SOG_ZEN4,
            "Zen 4c keeps the Zen 4 core [S40]: 4-cycle integer load-to-use",
        ),
        // Derived: 12.7 ns [S2] x 3.1 GHz = 39.4 = 4 + 20 + 15.
        int(
            "latency.smt_transfer_cycles",
            15,
            "cycles",
            Derived,
            S2_9754_2S,
            "SMT one-way 12.7 ns x 3.1 GHz = 39.37 cycles = 4 + 20 + 15.37 -> 15",
        ),
        // Derived: 33.0 ns [S2 1S] x 3.1 GHz = 102.3, minus 20 = 82.
        int(
            "latency.l3_transfer_cycles",
            82,
            "cycles",
            Derived,
            S2_9754_1S,
            "same-CCX one-way 33.0 ns (1-socket matrix; 32.5 ns on the 2-socket one) x 3.1 GHz = 102.3 cycles, minus 20 = 82.3 -> 82",
        ),
        // Derived: cross-CCD = L + 3y: (109.8 x 3.1 - 20) / 3 = 107.
        int(
            "latency.hop_in_node_cycles",
            107,
            "cycles",
            Derived,
            S2_9754_2S,
            "cross-CCD on the home socket (109.8 ns on both matrices) = L + 3y: (109.8 ns x 3.1 GHz - 20) / 3 = (340.38 - 20) / 3 = 106.8 -> 107; cross-CCX on one CCD (106.1-106.6 ns) is the same L + 3y",
        ),
        int(
            "latency.hop_between_nodes_cycles",
            107,
            "cycles",
            Assumed,
            S2_9754_2S,
            "unused in NPS1 (one node per socket); set to the in-node leg, the same IOD",
        ),
        // Derived: cross-socket = L + 2x + y: (203.6 x 3.1 - 20 - 107) / 2 = 252.
        int(
            "latency.hop_between_sockets_cycles",
            252,
            "cycles",
            Derived,
            S2_9754_2S,
            "cross-socket = L + 2x + y: (203.6 ns x 3.1 GHz - 20 - 107) / 2 = (631.16 - 127) / 2 = 252.1 -> 252. The model's slow-socket cross-CCD is the same L + 2x + y = 203.5 ns, against 205.6 ns measured (-1 %)",
        ),
        // Assumed: 59.1 ns x 3.1 GHz = 183.
        int(
            "latency.dram_cycles",
            183,
            "cycles",
            Assumed,
            "[S16] via the icelake-sp-2s derivation (201 cycles at 3.4 GHz)",
            DRAM_NOTE_ZEN3_4,
        ),
        int(
            "info.base_clock_mhz",
            2250,
            "MHz",
            Documented,
            "[S52]",
            "",
        ),
        int(
            "info.boost_clock_mhz",
            3100,
            "MHz",
            Documented,
            "[S52]",
            "",
        ),
        int(
            "l1d_kib",
            32,
            "KiB",
            Documented,
            "[S40] Zen 4 architecture; [S44] Zen 4 L1d 32 KB 8-way",
            "",
        ),
        int("l1d_ways", 8, "ways", Documented, "[S44] Zen 4 L1d 8-way", ""),
        int(
            "l2_kib",
            1024,
            "KiB",
            Documented,
            "[S42] 1 MB L2 per core",
            "",
        ),
        int("l2_ways", 8, "ways", Documented, "[S44] Zen 4 L2 8-way", ""),
        int(
            "l2_hit_cycles",
            14,
            "cycles",
            Assumed,
            "as epyc-genoa (Zen 4c has Zen 4's L2 [S40]); the latency n/r in retrieved text",
            "epyc-genoa's assumed figure, for the same 1 MB 8-way L2",
        ),
        int(
            "info.l3_kib",
            16384,
            "KiB",
            Documented,
            "[S42] 16 MB L3 per CCX; [S49] 256 MB total",
            "",
        ),
        num(
            "info.dram_local_ns",
            128.1,
            "ns",
            Derived,
            MODEL,
            "n/r (calibration.md §8); the model's 2 x 107 + 183 = 397 cycles at 3.1 GHz",
        ),
        int(
            "info.dram_local_cycles",
            397,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 107 + 183",
        ),
        num(
            "info.dram_remote_ns",
            221.6,
            "ns",
            Derived,
            MODEL,
            "n/r; the model's 2 x 252 + 183 = 687 cycles at 3.1 GHz",
        ),
        int(
            "info.dram_remote_cycles",
            687,
            "cycles",
            Derived,
            MODEL,
            "n/r; the model's 2 x 252 + 183",
        ),
    ];
    // Assumed: no Zen 4 L3 figure was retrieved.
    params.push(int(
        "latency.l3_hit_cycles",
        46,
        "cycles",
        Assumed,
        "[S45] Chips and Cheese: Milan-X L3 50 cycles, V-Cache adds 4 (Milan: 46)",
        L3_HIT_ZEN4_NOTE,
    ));
    amd_common(&mut params, ZEN4C_LINE);
    params
}

/// How many L1D miss address buffers a core has, and how the figure is known.
struct MissBuffers {
    entries: u64,
    provenance: super::Provenance,
    source: &'static str,
}

/// The vendor figures as quoted, and what was retrieved about the buffers
/// on every Zen core: that they exist and are counted.
macro_rules! sog_miss_buffers {
    () => {
        "AMD Software Optimization Guides for Family 17h (pub. 55723) and 19h (56665, 57647), load-store unit: L1D misses tracked in miss address buffers, 22 on Zen 1/Zen 2 and 24 on Zen 3/Zen 4 (the count not retrieved here); retrieved: PMCx05F \"Count of Allocated Mabs\", the in-flight L1D misses each cycle (Linux tools/perf/pmu-events/arch/x86/amdzen3/memory.json, ls_alloc_mab_count); Chips and Cheese, \"Hot Chips 2023: Characterizing Gaming Workloads on Zen 4\" (MABs are AMD's fill buffers)"
    };
}

/// L1D miss address buffers of a Zen 1 core (EPYC 7001, Naples): assumed,
/// from the guide's figure as quoted. Searched: the guides' load-store
/// sections are not in the stored pages (the stored copy of 55723 ends
/// with its front matter); Planet3DNow!'s Hot Chips analysis [S65] names
/// the MAB without a count; clamchowder/PmcReader has no MAB view for Zen 1
/// or Zen 3 (Zen1.cs, Zen3.cs) and Zen2.cs's view stops at ">= 16", naming
/// no full set; LLVM's X86ScheduleZnver1.td and Znver3.td quote the load
/// and store queues, not the MABs. For Zen 2, a measured 21 ([S69], as
/// quoted) sits beside the guide's 22.
const ZEN1_MISS_BUFFERS: MissBuffers = MissBuffers {
    entries: 22,
    provenance: Assumed,
    source: concat!(
        sog_miss_buffers!(),
        "; for Zen 2, [S69] Mahling, Weisgut, Rabl, DaMoN 2025, Table 1 as quoted (its text not retrieved): 21 fill buffers on an EPYC 7742"
    ),
};
/// Of a Zen 3 core (EPYC 7003, Milan): assumed, the guide's figure as
/// quoted, which a measurement quoted from [S69] (24 on a Zen 3 EPYC) and
/// Zen 4's retrieved 24 [S67] agree with; searched as for Zen 1.
const ZEN3_MISS_BUFFERS: MissBuffers = MissBuffers {
    entries: 24,
    provenance: Assumed,
    source: concat!(
        "[S69] Mahling, Weisgut, Rabl, DaMoN 2025, Table 1 as quoted (its text not retrieved): 24 fill buffers on an EPYC 7413 (Zen 3); ",
        sog_miss_buffers!()
    ),
};
/// Of a Zen 4 / Zen 4c core (EPYC 9004, Genoa and Bergamo): the count a
/// counter tool by Chips and Cheese's author reads as a full set.
const ZEN4_MISS_BUFFERS: MissBuffers = MissBuffers {
    entries: 24,
    provenance: Documented,
    source: "[S67] clamchowder/PmcReader (C. Lam, Chips and Cheese) @8fc52f2, AMD/Zen4.cs, MAB occupancy view: counts the cycles with at least 1, 4, 8, 16 and 24 of PMCx05F's allocated MABs and labels 24 \"Full\", the whole set of a Zen 4 core; the same count as AMD Software Optimization Guide for the Zen 4 microarchitecture (57647) as quoted (its text not retrieved); Zen 4c keeps the Zen 4 core [S40]",
};

/// The misses a core keeps in flight: its L1D miss address buffers (MABs).
fn amd_miss_buffers(buffers: MissBuffers) -> Param {
    int(
        "outstanding_misses",
        buffers.entries,
        "misses",
        buffers.provenance,
        buffers.source,
        "a load that misses the L1D holds a buffer until its line arrives; loads to a line already being fetched share it; how far the CPU goes on is the reorder window's (reorder_window_entries)",
    )
}

/// Each of two busy SMT siblings' share of a full core.
fn amd_smt_share() -> Param {
    // Measured: the average gain of SMT on multi-threaded workloads on the
    // first Zen core (looncraz, "Ryzen SMT scaling", zen.looncraz.net), the
    // one average over many workloads retrieved for a Zen core.
    int(
        "smt_share_percent",
        68,
        "percent",
        Measured,
        "looncraz, \"SMT Scaling\" (zen.looncraz.net/smt_ccx.php), Ryzen (Zen 1): average uplift of multi-threaded workloads with SMT on, 35.76 %",
        "(100 % + 35.76 %) / 2 = 68 % of a full core each while both siblings run; an average over a desktop Zen 1 suite, used for every Zen generation here (no server or later-Zen average was retrieved)",
    )
}

/// Where Zen 3's locked instructions are documented to execute
/// speculatively.
const ZEN3_LOCK_SPECULATION: &str = "AMD PPR Family 19h, PMCx025 Retired Lock Instructions, unit masks SpecLockHiSpec and SpecLockLoSpec (\"High/Low speculative cacheable lock speculation succeeded\") beside NonSpecLock, as Linux carries them in tools/perf/pmu-events/arch/x86/amdzen3/memory.json (ls_locks.spec_lock_hi_spec, spec_lock_lo_spec, non_spec_lock)";
/// Zen 1: the event as retrieved for Zen 1 (amdzen1/memory.json) lists
/// only the bus lock, so the Zen 3 behaviour is assumed.
const ZEN1_LOCK_SPECULATION: &str = "assumed as Zen 3's (AMD PPR Family 19h PMCx025 SpecLockHiSpec/SpecLockLoSpec, Linux amdzen3/memory.json); Linux's amdzen1/memory.json, as retrieved, lists only ls_locks.bus_lock of PMCx025";
/// Zen 4: its memory.json as retrieved lists no PMCx025 events.
const ZEN4_LOCK_SPECULATION: &str = "assumed as Zen 3's (AMD PPR Family 19h PMCx025 SpecLockHiSpec/SpecLockLoSpec, Linux amdzen3/memory.json); Linux's amdzen4/memory.json, as retrieved, lists no PMCx025 events";

/// Whether the core's locked instructions execute speculatively (their
/// lines requested for ownership while an older one waits).
fn amd_lock_speculation(kind: super::Provenance, source: &'static str) -> Param {
    flag("lock_rfo_ahead", true, kind, source, LOCK_RFO_AHEAD_NOTE)
}

/// The store buffer's RFO prefetch: off, for want of a source.
fn amd_store_rfo_ahead() -> Param {
    // Assumed off: no AMD text retrieved describes a request for
    // ownership made ahead of a store's commit.
    int(
        "store_rfo_ahead_entries",
        0,
        "entries",
        Assumed,
        "no retrieved AMD text describes the store queue requesting a line for ownership before its store commits: the L2 request events of Linux's amdzen pmu-events (PMCx060 l2_request_g1) name prefetches only among reads, rd_blk_l \"data cache reads (including hardware and software prefetch)\", beside rd_blk_x \"data cache stores\" and change_to_x (a request to make a held line writable); off until a source says otherwise",

        STORE_RFO_AHEAD_NOTE,
    )
}

/// Where a Zen core's deep idle state (CC6) is described.
const AMD_DEEP_IDLE: &str = "CC6 (ACPI C2 on Zen) power-gates the core together with its private L2 (AMD's design as published for Bobcat, \"The core-C6 (CC6) sleep state of the AMD Bobcat x86 microprocessor\": each core and its dedicated L2 on a gated supply), so their dirty lines are written back before (AMD patent EP2909714: a cache level is flushed to the next before it and its core are powered down). No Zen PPR text was retrieved. Entry: Linux acpi_idle picks a state whose target_residency (exit latency x latency_factor 2, drivers/acpi/processor_idle.c) the predicted idle covers; the C2 exit latency, about 400 us, is FreeBSD's observation on an EPYC 7502P (Zen 2, reviews.freebsd.org D47444), and Linux's acpi_idle lists the same on a Zen 2 Threadripper, C2 (I/O port) exit latency 400 us, target residency 800 us [S72]; 2 x 400 us = 800 us, assumed for every Zen";

/// A Zen core's deep idle: 800 µs at `clock_mhz`.
fn amd_deep_idle_writeback(clock_mhz: u64) -> Param {
    // Assumed: 2 x the ~400 us C2 exit latency seen on Zen 2 (see AMD_DEEP_IDLE).
    int(
        "deep_idle_writeback_cycles",
        800 * clock_mhz,
        "cycles",
        Assumed,
        AMD_DEEP_IDLE,
        DEEP_IDLE_NOTE,
    )
}

/// A core's reorder window, dispatch width and misprediction penalty, and
/// where each was read (LLVM's X86 scheduling models: `MicroOpBufferSize`,
/// `IssueWidth`, `MispredictPenalty`).
struct CoreWindow {
    reorder_window_entries: u64,
    dispatch_width: u64,
    mispredict_penalty_cycles: u64,
    reorder_source: &'static str,
    dispatch_source: &'static str,
    mispredict_source: &'static str,
}

/// Zen 1 (EPYC 7001, Naples).
const ZEN1_WINDOW: CoreWindow = CoreWindow {
    reorder_window_entries: 192,
    dispatch_width: 4,
    mispredict_penalty_cycles: 17,
    reorder_source: "LLVM llvm/lib/Target/X86/X86ScheduleZnver1.td: MicroOpBufferSize = 192 (\"the unit can track up to 192 macro ops in-flight ... In SMT mode it is 96 entry per thread\", after AMD's Software Optimization Guide for Family 17h)",
    dispatch_source: "LLVM X86ScheduleZnver1.td: IssueWidth = 4 (\"Zen can decode 4 instructions per cycle\")",
    mispredict_source: "LLVM X86ScheduleZnver1.td: MispredictPenalty = 17",
};

/// Zen 3 (EPYC 7003, Milan).
const ZEN3_WINDOW: CoreWindow = CoreWindow {
    reorder_window_entries: 256,
    dispatch_width: 6,
    mispredict_penalty_cycles: 13,
    reorder_source: "LLVM X86ScheduleZnver3.td: MicroOpBufferSize = 256, quoting AMD SOG Family 19h (56665) 2.10.3: the retire control unit tracks \"up to 256 macro ops in-flight in non-SMT mode or 128 per thread in SMT mode\"",
    dispatch_source: "LLVM X86ScheduleZnver3.td: IssueWidth = 6, quoting AMD SOG 19h 2.9.6: \"may dispatch up to 6 macro ops per cycle\"",
    mispredict_source: "LLVM X86ScheduleZnver3.td: MispredictPenalty = 13, quoting AMD SOG 19h 2.8: \"in the range from 11 to 18 cycles ... The common case penalty is 13 cycles\"",
};

/// Zen 4 and Zen 4c (EPYC 9004, Genoa and Bergamo).
const ZEN4_WINDOW: CoreWindow = CoreWindow {
    reorder_window_entries: 320,
    dispatch_width: 6,
    mispredict_penalty_cycles: 13,
    reorder_source: "LLVM X86ScheduleZnver4.td: MicroOpBufferSize = 320, quoting AMD SOG Zen 4 (57647) 2.10.3: \"up to 320 macro ops in-flight in non-SMT mode or 160 per thread in SMT mode\"",
    dispatch_source: "LLVM X86ScheduleZnver4.td: IssueWidth = 6, quoting AMD SOG Zen 4 2.9.8: \"may dispatch up to 6 macro ops per cycle\"",
    mispredict_source: "LLVM X86ScheduleZnver4.td: MispredictPenalty = 13, quoting AMD SOG Zen 4 2.8: \"The common case penalty is 13 cycles\"",
};

/// How far the core goes on past its oldest unfinished load.
fn amd_reorder_window(core: &CoreWindow) -> Param {
    int(
        "reorder_window_entries",
        core.reorder_window_entries,
        "entries",
        Documented,
        core.reorder_source,
        REORDER_WINDOW_NOTE,
    )
}

fn amd_dispatch_width(core: &CoreWindow) -> Param {
    int(
        "dispatch_width",
        core.dispatch_width,
        "entries per cycle",
        Documented,
        core.dispatch_source,
        DISPATCH_WIDTH_NOTE,
    )
}

fn amd_mispredict_penalty(core: &CoreWindow) -> Param {
    int(
        "mispredict_penalty_cycles",
        core.mispredict_penalty_cycles,
        "cycles",
        Documented,
        core.mispredict_source,
        MISPREDICT_NOTE,
    )
}
