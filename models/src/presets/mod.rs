//! Machine presets, each a table of parameters with their provenance.
//!
//! A preset is a list of [`Param`]s: every `MachineSpec` field (and every
//! `LatencySpec` field) has one, with its value, unit, kind of provenance
//! (measured, documented, derived with the arithmetic, or assumed with the
//! reason), source and note; informational parameters the model does not
//! use yet (cache sizes, hit latencies, DRAM, clocks) sit beside them under
//! `info.`. The `MachineSpec` is built from the table ([`machine_spec`]),
//! and `bounce presets show` prints the same table, so what is simulated and
//! what is shown cannot drift apart.
//!
//! Sources are the tags of `shared/calibration/calibration.md` (§13 lists
//! them) and `c2c_summary_table.md`; a source that is not in those files is
//! named in full where it is used. Latencies are in core cycles at the
//! preset's clock; every preset converts nanoseconds to cycles at its SKU's
//! documented maximum boost clock (the core-to-core benchmark keeps two
//! cores busy, which then run at boost; calibration.md §0.3 notes the clock
//! during the runs is not recorded).
//!
//! Calibration rule, the same for every preset: the measured core-to-core
//! figure is the one-way latency of a compare-and-swap ping-pong (half a
//! round trip, calibration.md §0.1). With L = `locked_op_cycles` the model
//! gives (see [`one_way_cycles`]):
//! - SMT siblings: `l1_hit + smt_transfer + L`;
//! - two cores of one L3 domain: `l3_transfer + L`;
//! - otherwise `L + leg(R, D) + leg(D, O) + leg(O, R)`, R the requester, O
//!   the owner, D the directory (the line's home node for `Lookup::Home`,
//!   the requester's own node for `Lookup::Local`); a leg is
//!   `hop_in_node` inside a node, `hop_between_nodes` between nodes of one
//!   socket, `hop_between_sockets` between sockets.
//!
//! `L` is the whole locked instruction on a line in the core's L1, the
//! load of its operand included (LLVM's and uops.info's figures are whole
//! instructions): an atomic that hits costs `L` in all, one after a
//! transfer costs the transfer and then `L`, which is the case of every
//! ping-pong step above (`LatencySpec::locked_op_after_hit_cycles`).
//!
//! The legs are fitted to class medians only; the home-node effect of the
//! AMD matrices comes from the topology (the directory at the home), never
//! from a per-pair or per-class constant.

/// A `latency.locked_op_cycles` note: the preset's reason for its figure,
/// then how every preset's figure is charged
/// (`LatencySpec::locked_op_after_hit_cycles`).
macro_rules! locked_op_note {
    ($reason:literal) => {
        concat!(
            $reason,
            "; the figure is the whole instruction on a line in the core's L1, its load included: an atomic that hits costs it once, with no L1 access before it; after a transfer it follows the line's arrival (the transfer legs are fitted as what the measured core-to-core figure leaves after it)"
        )
    };
}

/// A `store_buffer_entries` note: the preset's reason for its count, then
/// what a store costs on every preset (sim-core's `STORE_POST_CYCLES`).
macro_rules! store_buffer_note {
    ($reason:literal) => {
        concat!(
            $reason,
            "; a store costs the core 1 cycle to post (x86-TSO stores post; LLVM X86ScheduleZnver1.td's WriteStore has WriteRes's default latency, 1), also when the empty buffer writes it into an owned line at once: that write reaches the line an L1 access later, and a locked instruction, fence or futex operation waits for it; a buffered store into an owned line leaves the buffer after 1 cycle (one store committed to the L1 per cycle, pipelined: Intel's published limit on Skylake, and T. Downs's 1 cycle per random store within the L1, 2019), its write reaching the line an L1 access later as well"
        )
    };
}

mod amd;
mod intel;
mod scheduler;
pub(crate) mod sources;

pub use scheduler::{scheduler_params, SCHED_KEYS, SCHED_PREFIX};

use sim_core::cpu::LinuxCpu;
use sim_core::topology::{
    CleanSharedLineAnswer, DirectoryPrecision, L3SharedLines, LatencySpec, Lookup, MachineSpec,
    PrivateCacheSpec, Protocol, Topology,
};
use std::fmt;

/// Where a parameter's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provenance {
    /// Read off a measurement (possibly of a close SKU, which the source says).
    Measured,
    /// Stated by the vendor, a datasheet, or a system's own report (lscpu).
    Documented,
    /// Computed from sourced figures; the note shows the arithmetic.
    Derived,
    /// Chosen without a retrieved figure; the note says why it is reasonable.
    Assumed,
}

impl Provenance {
    pub fn name(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Documented => "documented",
            Provenance::Derived => "derived",
            Provenance::Assumed => "assumed",
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(u64),
    /// A figure with a fraction (nanoseconds, mostly); informational only.
    Num(f64),
    Bool(bool),
    /// A name (`mesif`, `home`, the machine's name) or a range (`34-47`).
    Text(String),
    /// A square matrix (the links between sockets), row by row.
    Matrix(Vec<Vec<u32>>),
    /// An optional key the machine leaves out: the model then follows the
    /// rule its note gives (a leg across two socket links costs two
    /// one-link legs; no node distances). `bounce presets show --toml`
    /// writes it as a comment, so that the table stays without it.
    NotSet,
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Num(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Text(v) => f.write_str(v),
            ParamValue::Matrix(rows) => {
                // As TOML writes an array of arrays: `[[0, 1], [1, 0]]`.
                let rows: Vec<String> = rows
                    .iter()
                    .map(|row| {
                        let cells: Vec<String> = row.iter().map(|h| h.to_string()).collect();
                        format!("[{}]", cells.join(", "))
                    })
                    .collect();
                write!(f, "[{}]", rows.join(", "))
            }
            ParamValue::NotSet => f.write_str("not set"),
        }
    }
}

/// One parameter of a preset, with where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// A `MachineSpec` field (`clock_mhz`, `latency.dram_cycles`, ...; see
    /// [`SPEC_KEYS`]) or an informational `info.` key.
    pub key: &'static str,
    pub value: ParamValue,
    pub unit: &'static str,
    pub kind: Provenance,
    /// The source tag and what it is, e.g. `[S1] nviennot ... 8375C`.
    pub source: &'static str,
    /// The arithmetic of a derived value, the reason for an assumed one,
    /// which of two disagreeing sources was chosen and why.
    pub note: &'static str,
}

impl Param {
    /// Not a `MachineSpec` field nor an instruction cost: shown and
    /// printed, not simulated.
    pub fn is_informational(&self) -> bool {
        !SPEC_KEYS.contains(&self.key)
            && !self.key.starts_with(COST_PREFIX)
            && !self.key.starts_with(SCHED_PREFIX)
    }
}

/// Instruction costs are parameters `cost.NAME`: the cycles of an
/// instruction class that no memory access models (interrupts off and on),
/// which library procedures charge with the script builtin `cost(NAME)`.
/// One table per machine, so a procedure never carries a number of its own
/// and a preset with a sourced figure changes every procedure that uses it.
pub const COST_PREFIX: &str = "cost.";

/// The instruction classes every machine has, with the figure a preset
/// keeps unless it has a better-sourced one of its own.
pub fn default_instruction_costs() -> Vec<Param> {
    // Assumed: interrupts off and on as today's x86 kernels do them
    // (arch/x86/include/asm/irqflags.h): local_irq_save is `pushf; pop;
    // cli`, local_irq_restore a test of the saved flag and `sti`. Older
    // kernels used `popf`, measured at about 24 cycles per pushf/popf pair
    // on a 3.4 GHz Intel part (LKML 2016-08-17, "RFC: Petition Intel/AMD to
    // add POPF_IF insn").
    const NOTE: &str = "no per-core figure for pushf/cli/sti was retrieved (Agner Fog's tables and uops.info were not reachable here; cli and sti are privileged, so uops.info does not measure them): a few single-cycle instructions with cli/sti not pipelined, 4 cycles per side";
    const SOURCE: &str = "arch/x86/include/asm/irqflags.h (the instruction sequence); LKML 2016-08-17 \"RFC: Petition Intel/AMD to add POPF_IF insn\" (about 24 cycles per pushf/popf pair, Intel)";
    vec![
        int(
            "cost.irq_save",
            4,
            "cycles",
            Provenance::Assumed,
            SOURCE,
            NOTE,
        ),
        int(
            "cost.irq_restore",
            4,
            "cycles",
            Provenance::Assumed,
            SOURCE,
            NOTE,
        ),
        rdtsc_ordered_cost(),
    ]
}

/// What the kernel's `rdtsc_ordered()` adds to an interval it brackets:
/// the time-stamp difference of two reads with nothing between them.
///
/// The kernel (arch/x86/include/asm/msr.h from v5.x on, so the 6.2-rc of
/// January 2023 too) patches `rdtsc_ordered()` to RDTSCP on every core that
/// has it (ALTERNATIVE_2: plain RDTSC, `lfence; rdtsc` with
/// X86_FEATURE_LFENCE_RDTSC, RDTSCP with X86_FEATURE_RDTSCP, the last that
/// applies winning); AMD cores have it since family 0Fh (Microsoft's
/// `__rdtscp` page: "AMD NPT Family 0Fh or later", CPUID 8000_0001h EDX bit
/// 27). RDTSCP waits until every earlier instruction has executed before it
/// reads the counter and lets later ones start (Intel SDM vol. 2 RDTSCP;
/// AMD APM vol. 3, 24594, RDTSCP), so the interval holds the rest of the
/// first read after its sample and the second read up to its sample: about
/// one RDTSCP, whatever the bracketed code does.
fn rdtsc_ordered_cost() -> Param {
    int(
        "cost.rdtsc_ordered",
        30,
        "cycles",
        Provenance::Assumed,
        "arch/x86/include/asm/msr.h rdtsc_ordered() (RDTSCP where the core has it); Intel SDM vol. 2 and AMD APM vol. 3 (24594) RDTSCP (waits for the earlier instructions, not the later); J. McCalpin on Intel's forum, \"High impact of rdtsc\" (community.intel.com, Software Tuning, td-p/1092539): RDTSC and RDTSCP are microcoded, about 15-25 uops with a latency of 25-35 cycles, varying by Intel model; AMD's EDK2 TscTimerLib (BaseTscTimerLib.c, AmdCommonPkg): AMD's counter ticks at a constant rate",
        "what an empty rdtsc_ordered() bracket reports: about one RDTSCP (the first read's rest after its sample, the second's part up to its own). No per-core figure was retrieved for any AMD core (Agner Fog's tables and uops.info's Zen rows were not reachable here), so every preset takes the middle of the Intel range, 30 cycles. The figure is in counter ticks on the machine; the model counts core cycles at the preset's clock, so the two agree only while the core runs at the counter's rate (a constant rate, not the boost clock). Library `measure/tsc`: `rdtsc_bracket()` once per measured call",
    )
}

/// How the home picks among the requests waiting for a line, on every
/// preset: no preference for the owner's neighbours (no source gives one);
/// who competes at all is the machine's lookup's (see the description).
pub fn default_arbitration() -> Param {
    int(
        "arbitration_near_owner_percent",
        0,
        "percent",
        Provenance::Assumed,
        "no public document gives how an Intel CHA/Cbo or an AMD home's probe filter orders the requests queued for one line, and no public measurement of the share of a contended line's handovers that stay on a socket was found (searched: lock cohorting, CNA/qspinlock, Malthusian locks, HBO, SOSP'13). Who competes (lookup = local, more than one socket): Intel's uncore event descriptions, Xeon E5 v3/v4 Cbo UNC_C_RxR_IRQ_RETRY.ADDR_CONFLICT (requests to one address do not pass each other in the Cbo: one outstanding, later ones retried) and UNC_C_RxR_IPQ_RETRY.ADDR_CONFLICT (two sockets' requests to one address at once), Skylake-SP CHA UNC_CHA_RxC_IRQ1_REJECT.PA_MATCH (Linux tools/perf/pmu-events/arch/x86/haswellx, broadwellx, skylakex uncore-cache.json)",
        "no preference: each competing request equally likely to be served next. On a machine whose L3 domains resolve their own transfers (lookup = local) with more than one (a socket, or a die of Cascade Lake-AP), the competitors for an owned line are every waiter of the owner's domain and one request from each other domain (its earliest): each die's caching agent lets one request per address out at a time, while the owner's die serves its own cores' requests in place. So a remote socket wins a handover with probability 1 / (local waiters + domains waiting), a bound without a parameter; a TAS lock mostly stays on its socket. Elsewhere (lookup = home, one domain, a line no core owns, no other domain waiting) every waiter competes. A scenario may add a preference for the owner's neighbours (machine.arbitration_near_owner_percent) to see its effect",
    )
}

/// The machine keys no preset has a figure for, each with the rule the
/// model follows without one: who answers a clean shared line, the
/// optional legs and the node distances. Listed so that `bounce presets
/// show` prints every key a machine gets, and a user sees the default a
/// machine file also gets when it leaves the key out.
pub fn default_unsourced_rules() -> Vec<Param> {
    vec![
        text(
            "clean_shared_line_answer",
            "memory-or-forwarder",
            Provenance::Assumed,
            "no retrieved source says which cache answers a read of a line held only Shared (or Forward) in another L3 domain on this machine",
            "the Forward copy answers (MESIF) at a transfer's cost, else memory at the home supplies the line. Other rules a machine file may set, with its source: \"holding-l3\" (an inclusive L3 answers from its own copy) and \"holding-die\" (a core of the one domain holding every copy answers)",
        ),
        param(
            "latency.hop_extra_socket_link_cycles",
            ParamValue::NotSet,
            "cycles",
            Provenance::Assumed,
            "no preset has sockets more than one link apart (socket_hops), so none needs the figure",
            "not set: a leg across h socket links costs h one-link legs (h x hop_between_sockets_cycles). A machine file with sockets two links apart may give what each further link adds",
        ),
        param(
            "latency.clean_snoop_saving_cycles",
            ParamValue::NotSet,
            "cycles",
            Provenance::Assumed,
            "no retrieved source measures a clean copy's answer apart from a dirty one's on this machine",
            "not set: a core answers a read from a clean copy (E, F, S) at a dirty one's cost (M, O). A machine file may give what the clean answer saves (at most latency.l3_transfer_cycles)",
        ),
        param(
            "node_distances",
            ParamValue::NotSet,
            "",
            Provenance::Assumed,
            "the node legs are the latency legs, fitted on measured core-to-core latencies, not taken from a SLIT",
            "not set: a leg between two nodes of a socket costs hop_between_nodes_cycles and one between sockets the socket legs (the matrices above). A machine file may give the distances `numactl --hardware` prints instead",
        ),
        param(
            "distance_unit_cycles",
            ParamValue::NotSet,
            "cycles",
            Provenance::Assumed,
            "used only with node_distances, which no preset gives",
            "not set: with node_distances, the round-trip cycles per distance unit are the local memory latency (2 x hop_in_node_cycles + dram_cycles) over 10",
        ),
    ]
}

/// A parameter table's instruction costs, as (class, cycles), in table order.
pub fn instruction_costs(params: &[Param]) -> Vec<(String, i64)> {
    params
        .iter()
        .filter_map(|p| {
            let class = p.key.strip_prefix(COST_PREFIX)?;
            match p.value {
                ParamValue::Int(v) => Some((class.to_string(), v.min(i64::MAX as u64) as i64)),
                _ => None,
            }
        })
        .collect()
}

/// Every `MachineSpec` field as a parameter key, in the struct's order
/// (`latency.` for the `LatencySpec` fields).
pub const SPEC_KEYS: &[&str] = &[
    "name",
    "clock_mhz",
    "sockets",
    "nodes_per_socket",
    "l3_per_node",
    "cores_per_l3",
    "threads_per_core",
    "line_size_bytes",
    "protocol",
    "lookup",
    "adjacent_line_prefetch",
    "store_buffer_entries",
    "socket_hops",
    "node_distances",
    "distance_unit_cycles",
    "l3_shared_lines",
    "directory",
    "clean_shared_line_answer",
    "smt_share_percent",
    "arbitration_near_owner_percent",
    "outstanding_misses",
    "reorder_window_entries",
    "dispatch_width",
    "mispredict_penalty_cycles",
    "lock_rfo_ahead",
    "store_rfo_ahead_entries",
    "deep_idle_writeback_cycles",
    "l1d_kib",
    "l1d_ways",
    "l2_kib",
    "l2_ways",
    "l2_hit_cycles",
    "latency.l1_hit_cycles",
    "latency.locked_op_cycles",
    "latency.smt_transfer_cycles",
    "latency.l3_transfer_cycles",
    "latency.hop_in_node_cycles",
    "latency.hop_between_nodes_cycles",
    "latency.hop_between_sockets_cycles",
    "latency.hop_extra_socket_link_cycles",
    "latency.clean_snoop_saving_cycles",
    "latency.dram_cycles",
    "latency.l3_hit_cycles",
    "latency.home_occupancy_cycles",
];

/// A measured one-way core-to-core latency a preset is calibrated against:
/// a pair of CPUs of the class, where the benchmark homed the line, and the
/// class median.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// The pair class, e.g. `smt`, `same-ccx`, `cross-ccd-non-home-socket`.
    pub class: &'static str,
    /// Two Linux CPUs of the class on the preset's machine (default modes).
    pub cpus: (u32, u32),
    /// The node the bounced line is homed on (the benchmark's first touch).
    pub home_node: u32,
    /// The class median, one-way, in nanoseconds.
    pub measured_ns: f64,
    pub source: &'static str,
}

/// A variant of a preset (`NAME:MODE,MODE`), changing some parameters.
pub struct Mode {
    pub name: &'static str,
    pub summary: &'static str,
    /// Modes of one group exclude each other (`nps1`, `nps2`, `nps4`).
    pub group: Option<&'static str>,
    /// What the preset is without any mode of the group.
    pub default: bool,
    pub apply: fn(&mut Vec<Param>),
}

/// A named machine.
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    /// The machine with the default modes.
    pub build: fn() -> MachineSpec,
    /// The parameter table with the default modes.
    pub params: fn() -> Vec<Param>,
    pub modes: &'static [Mode],
    /// The measured one-way latencies the preset is calibrated against,
    /// per pair class, with a representative pair and the home node.
    pub targets: &'static [Target],
}

impl Preset {
    pub fn mode(&self, name: &str) -> Option<&'static Mode> {
        self.modes.iter().find(|m| m.name == name)
    }
    pub fn mode_names(&self) -> Vec<&'static str> {
        self.modes.iter().map(|m| m.name).collect()
    }
    /// The calibration target of a pair class.
    pub fn target(&self, class: &str) -> Option<&'static Target> {
        self.targets.iter().find(|t| t.class == class)
    }
}

pub const PRESETS: &[Preset] = &[
    intel::ICELAKE_SP_2S,
    intel::CASCADELAKE_SP_2S,
    intel::CASCADELAKE_SP_4S,
    intel::CASCADELAKE_AP_2S,
    amd::EPYC_NAPLES_2S,
    amd::EPYC_MILAN_2S,
    amd::EPYC_GENOA_1S,
    amd::EPYC_GENOA_2S,
    amd::BERGAMO_1S,
    amd::BERGAMO_2S,
];

pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// A preset reference resolved: the preset, its modes, the parameter table
/// with the modes applied, and the machine built from it.
pub struct Resolved {
    pub preset: &'static Preset,
    /// The modes given, in the preset's order (each given once).
    pub modes: Vec<&'static Mode>,
    pub params: Vec<Param>,
    pub spec: MachineSpec,
}

impl Resolved {
    /// The canonical reference: the name, then the modes that change the
    /// machine, in the preset's order (`epyc-milan-2s:nps4,smt-off`). It is
    /// also the machine's name.
    pub fn reference(&self) -> String {
        canonical_reference(self.preset, &self.modes)
    }
}

fn canonical_reference(preset: &Preset, modes: &[&Mode]) -> String {
    let changing: Vec<&str> = modes
        .iter()
        .filter(|m| !m.default)
        .map(|m| m.name)
        .collect();
    if changing.is_empty() {
        preset.name.to_string()
    } else {
        format!("{}:{}", preset.name, changing.join(","))
    }
}

/// Why a preset reference does not resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolveError {
    UnknownPreset {
        name: String,
    },
    UnknownMode {
        preset: &'static str,
        mode: String,
        modes: Vec<&'static str>,
    },
    ConflictingModes {
        preset: &'static str,
        first: &'static str,
        second: &'static str,
    },
    RepeatedMode {
        preset: &'static str,
        mode: &'static str,
    },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::UnknownPreset { name } => write!(
                f,
                "unknown machine preset `{name}`; presets: {}",
                names().join(", ")
            ),
            ResolveError::UnknownMode {
                preset,
                mode,
                modes,
            } => write!(
                f,
                "preset `{preset}` has no mode `{mode}`; its modes: {}",
                modes.join(", ")
            ),
            ResolveError::ConflictingModes {
                preset,
                first,
                second,
            } => write!(
                f,
                "modes `{first}` and `{second}` of preset `{preset}` exclude each other; give one"
            ),
            ResolveError::RepeatedMode { preset, mode } => write!(
                f,
                "mode `{mode}` of preset `{preset}` is given twice; give each mode once"
            ),
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves a preset reference, `NAME` or `NAME:MODE[,MODE...]`
/// (e.g. `epyc-milan-2s:nps4,smt-off`): the modes apply in the preset's
/// order whatever the order given; an unknown mode is an error listing the
/// preset's modes; two modes of one group (`nps2,nps4`), or one mode twice,
/// are an error.
pub fn resolve_preset(reference: &str) -> Result<Resolved, ResolveError> {
    let (name, modes) = match reference.split_once(':') {
        Some((n, m)) => (n, Some(m)),
        None => (reference, None),
    };
    let preset = find(name).ok_or_else(|| ResolveError::UnknownPreset {
        name: name.to_string(),
    })?;
    let mut chosen: Vec<&'static Mode> = Vec::new();
    for given in modes.into_iter().flat_map(|m| m.split(',')) {
        let given = given.trim();
        let mode = preset
            .mode(given)
            .ok_or_else(|| ResolveError::UnknownMode {
                preset: preset.name,
                mode: given.to_string(),
                modes: preset.mode_names(),
            })?;
        if chosen.iter().any(|m| m.name == mode.name) {
            return Err(ResolveError::RepeatedMode {
                preset: preset.name,
                mode: mode.name,
            });
        }
        if let Some(other) = chosen
            .iter()
            .find(|m| m.group.is_some() && m.group == mode.group)
        {
            return Err(ResolveError::ConflictingModes {
                preset: preset.name,
                first: other.name,
                second: mode.name,
            });
        }
        chosen.push(mode);
    }
    chosen.sort_by_key(|m| {
        preset
            .modes
            .iter()
            .position(|p| p.name == m.name)
            .unwrap_or(usize::MAX)
    });
    let mut params = (preset.params)();
    for mode in &chosen {
        (mode.apply)(&mut params);
    }
    // The instruction classes the preset gives no figure of its own, and
    // the scheduler's parameters.
    for cost in default_instruction_costs()
        .into_iter()
        .chain(default_unsourced_rules())
        .chain(scheduler_params(preset.name))
    {
        if !params.iter().any(|p| p.key == cost.key) {
            params.push(cost);
        }
    }
    // Machine fields in `MachineSpec` order, then the informational ones.
    // Each key looked up once (a search of `SPEC_KEYS`); stable, as
    // `sort_by_key`.
    params.sort_by_cached_key(|p| {
        SPEC_KEYS
            .iter()
            .position(|k| *k == p.key)
            .unwrap_or(SPEC_KEYS.len())
    });
    let reference = canonical_reference(preset, &chosen);
    set_text(&mut params, "name", reference);
    let spec = machine_spec(&params).unwrap_or_else(|e| panic!("preset `{}`: {e}", preset.name));
    Ok(Resolved {
        preset,
        modes: chosen,
        params,
        spec,
    })
}

/// Resolves a preset reference to its machine; the error says what would
/// be valid.
pub fn resolve(reference: &str) -> Result<MachineSpec, String> {
    resolve_preset(reference)
        .map(|r| r.spec)
        .map_err(|e| e.to_string())
}

/// Builds the machine of a parameter table. Every `MachineSpec` key must be
/// present once, with a value of the right type.
pub fn machine_spec(params: &[Param]) -> Result<MachineSpec, String> {
    let get = |key: &str| -> Result<&ParamValue, String> {
        let mut found = params.iter().filter(|p| p.key == key);
        match (found.next(), found.next()) {
            (Some(p), None) => Ok(&p.value),
            (None, _) => Err(format!("no parameter `{key}`")),
            (Some(_), Some(_)) => Err(format!("parameter `{key}` is given twice")),
        }
    };
    let int = |key: &str| -> Result<u64, String> {
        match get(key)? {
            ParamValue::Int(v) => Ok(*v),
            other => Err(format!("`{key}` = {other} is not an integer")),
        }
    };
    let int32 = |key: &str| -> Result<u32, String> {
        u32::try_from(int(key)?).map_err(|_| format!("`{key}` is out of range"))
    };
    let text = |key: &str| -> Result<String, String> {
        match get(key)? {
            ParamValue::Text(v) => Ok(v.clone()),
            other => Err(format!("`{key}` = {other} is not a name")),
        }
    };
    let protocol = match text("protocol")?.as_str() {
        "mesi" => Protocol::Mesi,
        "mesif" => Protocol::Mesif,
        "moesi" => Protocol::Moesi,
        other => return Err(format!("unknown protocol `{other}`")),
    };
    let lookup = match text("lookup")?.as_str() {
        "local" => Lookup::Local,
        "home" => Lookup::Home,
        other => return Err(format!("unknown lookup `{other}`")),
    };
    let adjacent_line_prefetch = match get("adjacent_line_prefetch")? {
        ParamValue::Bool(v) => *v,
        other => return Err(format!("`adjacent_line_prefetch` = {other} is not a flag")),
    };
    let lock_rfo_ahead = match get("lock_rfo_ahead")? {
        ParamValue::Bool(v) => *v,
        other => return Err(format!("`lock_rfo_ahead` = {other} is not a flag")),
    };
    let socket_hops = match get("socket_hops")? {
        ParamValue::Matrix(rows) => rows.clone(),
        ParamValue::Text(v) if v == FULLY_CONNECTED => Vec::new(),
        other => return Err(format!("`socket_hops` = {other} is not a hop matrix")),
    };
    let l3_shared_lines = match text("l3_shared_lines")?.as_str() {
        "not-kept" => L3SharedLines::NotKept,
        "inclusive" => L3SharedLines::Inclusive,
        "victim-with-sharing" => L3SharedLines::VictimWithSharing,
        other => return Err(format!("unknown l3_shared_lines `{other}`")),
    };
    let directory = match text("directory")?.as_str() {
        "exact" => DirectoryPrecision::Exact,
        "broadcast-shared" => DirectoryPrecision::BroadcastShared,
        other => return Err(format!("unknown directory `{other}`")),
    };
    let clean_shared_line_answer = match text("clean_shared_line_answer")?.as_str() {
        "memory-or-forwarder" => CleanSharedLineAnswer::MemoryOrForwarder,
        "holding-l3" => CleanSharedLineAnswer::HoldingL3,
        "holding-die" => CleanSharedLineAnswer::HoldingDie,
        other => return Err(format!("unknown clean_shared_line_answer `{other}`")),
    };
    // An optional figure: `None` where the table says it is not set.
    let optional = |key: &str| -> Result<Option<u64>, String> {
        match get(key)? {
            ParamValue::NotSet => Ok(None),
            ParamValue::Int(v) => Ok(Some(*v)),
            other => Err(format!("`{key}` = {other} is not an integer")),
        }
    };
    let node_distances = sim_core::topology::NodeDistances {
        slit: match get("node_distances")? {
            ParamValue::NotSet => Vec::new(),
            ParamValue::Matrix(rows) => rows.clone(),
            other => return Err(format!("`node_distances` = {other} is not a matrix")),
        },
        distance_unit_cycles: optional("distance_unit_cycles")?,
    };
    Ok(MachineSpec {
        name: text("name")?,
        clock_mhz: int("clock_mhz")?,
        sockets: int32("sockets")?,
        nodes_per_socket: int32("nodes_per_socket")?,
        l3_per_node: int32("l3_per_node")?,
        cores_per_l3: int32("cores_per_l3")?,
        threads_per_core: int32("threads_per_core")?,
        line_size_bytes: int32("line_size_bytes")?,
        protocol,
        lookup,
        adjacent_line_prefetch,
        store_buffer_entries: int32("store_buffer_entries")?,
        socket_hops,
        node_distances,
        l3_shared_lines,
        directory,
        clean_shared_line_answer,
        smt_share_percent: int32("smt_share_percent")?,
        arbitration_near_owner_percent: int32("arbitration_near_owner_percent")?,
        outstanding_misses: int32("outstanding_misses")?,
        reorder_window_entries: int32("reorder_window_entries")?,
        dispatch_width: int32("dispatch_width")?,
        mispredict_penalty_cycles: int32("mispredict_penalty_cycles")?,
        lock_rfo_ahead,
        store_rfo_ahead_entries: int32("store_rfo_ahead_entries")?,
        deep_idle_writeback_cycles: int("deep_idle_writeback_cycles")?,
        private_caches: PrivateCacheSpec {
            l1d_kib: int32("l1d_kib")?,
            l1d_ways: int32("l1d_ways")?,
            l2_kib: int32("l2_kib")?,
            l2_ways: int32("l2_ways")?,
            l2_hit_cycles: int("l2_hit_cycles")?,
        },
        latency: LatencySpec {
            l1_hit_cycles: int("latency.l1_hit_cycles")?,
            locked_op_cycles: int("latency.locked_op_cycles")?,
            smt_transfer_cycles: int("latency.smt_transfer_cycles")?,
            l3_transfer_cycles: int("latency.l3_transfer_cycles")?,
            hop_in_node_cycles: int("latency.hop_in_node_cycles")?,
            hop_between_nodes_cycles: int("latency.hop_between_nodes_cycles")?,
            hop_between_sockets_cycles: int("latency.hop_between_sockets_cycles")?,
            hop_extra_socket_link_cycles: optional("latency.hop_extra_socket_link_cycles")?,
            clean_snoop_saving_cycles: optional("latency.clean_snoop_saving_cycles")?,
            dram_cycles: int("latency.dram_cycles")?,
            l3_hit_cycles: int("latency.l3_hit_cycles")?,
            home_occupancy_cycles: int("latency.home_occupancy_cycles")?,
        },
    })
}

/// A machine's value of every key of [`SPEC_KEYS`], in that order: what
/// [`machine_spec`] builds the machine from, read back (a machine file's
/// machine, for `bounce presets show FILE.toml`). Every field is named, so
/// a field added to `MachineSpec` fails to compile here until it has a key.
pub fn spec_values(spec: &MachineSpec) -> Vec<(&'static str, ParamValue)> {
    let MachineSpec {
        name,
        clock_mhz,
        sockets,
        nodes_per_socket,
        l3_per_node,
        cores_per_l3,
        threads_per_core,
        line_size_bytes,
        protocol,
        lookup,
        adjacent_line_prefetch,
        store_buffer_entries,
        socket_hops,
        node_distances,
        l3_shared_lines,
        directory,
        clean_shared_line_answer,
        smt_share_percent,
        arbitration_near_owner_percent,
        outstanding_misses,
        reorder_window_entries,
        dispatch_width,
        mispredict_penalty_cycles,
        lock_rfo_ahead,
        store_rfo_ahead_entries,
        deep_idle_writeback_cycles,
        private_caches,
        latency,
    } = spec;
    let int = ParamValue::Int;
    let text = |v: &str| ParamValue::Text(v.to_string());
    let optional = |v: Option<u64>| v.map_or(ParamValue::NotSet, ParamValue::Int);
    vec![
        ("name", text(name)),
        ("clock_mhz", int(*clock_mhz)),
        ("sockets", int((*sockets).into())),
        ("nodes_per_socket", int((*nodes_per_socket).into())),
        ("l3_per_node", int((*l3_per_node).into())),
        ("cores_per_l3", int((*cores_per_l3).into())),
        ("threads_per_core", int((*threads_per_core).into())),
        ("line_size_bytes", int((*line_size_bytes).into())),
        ("protocol", text(protocol.name())),
        ("lookup", text(lookup.name())),
        (
            "adjacent_line_prefetch",
            ParamValue::Bool(*adjacent_line_prefetch),
        ),
        ("store_buffer_entries", int((*store_buffer_entries).into())),
        (
            "socket_hops",
            if socket_hops.is_empty() {
                text(FULLY_CONNECTED)
            } else {
                ParamValue::Matrix(socket_hops.clone())
            },
        ),
        (
            "node_distances",
            if node_distances.slit.is_empty() {
                ParamValue::NotSet
            } else {
                ParamValue::Matrix(node_distances.slit.clone())
            },
        ),
        (
            "distance_unit_cycles",
            optional(node_distances.distance_unit_cycles),
        ),
        ("l3_shared_lines", text(l3_shared_lines.name())),
        ("directory", text(directory.name())),
        (
            "clean_shared_line_answer",
            text(clean_shared_line_answer.name()),
        ),
        ("smt_share_percent", int((*smt_share_percent).into())),
        (
            "arbitration_near_owner_percent",
            int((*arbitration_near_owner_percent).into()),
        ),
        ("outstanding_misses", int((*outstanding_misses).into())),
        (
            "reorder_window_entries",
            int((*reorder_window_entries).into()),
        ),
        ("dispatch_width", int((*dispatch_width).into())),
        (
            "mispredict_penalty_cycles",
            int((*mispredict_penalty_cycles).into()),
        ),
        ("lock_rfo_ahead", ParamValue::Bool(*lock_rfo_ahead)),
        (
            "store_rfo_ahead_entries",
            int((*store_rfo_ahead_entries).into()),
        ),
        (
            "deep_idle_writeback_cycles",
            int(*deep_idle_writeback_cycles),
        ),
        ("l1d_kib", int(private_caches.l1d_kib.into())),
        ("l1d_ways", int(private_caches.l1d_ways.into())),
        ("l2_kib", int(private_caches.l2_kib.into())),
        ("l2_ways", int(private_caches.l2_ways.into())),
        ("l2_hit_cycles", int(private_caches.l2_hit_cycles)),
        ("latency.l1_hit_cycles", int(latency.l1_hit_cycles)),
        ("latency.locked_op_cycles", int(latency.locked_op_cycles)),
        (
            "latency.smt_transfer_cycles",
            int(latency.smt_transfer_cycles),
        ),
        (
            "latency.l3_transfer_cycles",
            int(latency.l3_transfer_cycles),
        ),
        (
            "latency.hop_in_node_cycles",
            int(latency.hop_in_node_cycles),
        ),
        (
            "latency.hop_between_nodes_cycles",
            int(latency.hop_between_nodes_cycles),
        ),
        (
            "latency.hop_between_sockets_cycles",
            int(latency.hop_between_sockets_cycles),
        ),
        (
            "latency.hop_extra_socket_link_cycles",
            optional(latency.hop_extra_socket_link_cycles),
        ),
        (
            "latency.clean_snoop_saving_cycles",
            optional(latency.clean_snoop_saving_cycles),
        ),
        ("latency.dram_cycles", int(latency.dram_cycles)),
        ("latency.l3_hit_cycles", int(latency.l3_hit_cycles)),
        (
            "latency.home_occupancy_cycles",
            int(latency.home_occupancy_cycles),
        ),
    ]
}

/// The value of `socket_hops` for a machine whose sockets are all one link
/// apart (every preset's, as measured: one class of cross-socket pairs).
pub const FULLY_CONNECTED: &str = "fully-connected";

/// A preset's `socket_hops`: every pair one link apart.
fn fully_connected(source: &'static str, note: &'static str) -> Param {
    text(
        "socket_hops",
        FULLY_CONNECTED,
        Provenance::Documented,
        source,
        note,
    )
}

/// A preset's home occupancy: the forward leg of an L3 transfer, a third of
/// the table's `l3_transfer_cycles` (the three legs taken as equal, as for
/// the mesh hop).
fn home_occupancy(params: &[Param]) -> Param {
    let l3_transfer_cycles = params
        .iter()
        .find_map(|p| match (p.key, &p.value) {
            ("latency.l3_transfer_cycles", ParamValue::Int(v)) => Some(*v),
            _ => None,
        })
        .unwrap_or_else(|| {
            panic!("a preset gives latency.l3_transfer_cycles before its occupancy")
        });
    int(
        "latency.home_occupancy_cycles",
        l3_transfer_cycles / 3,
        "cycles",
        Provenance::Assumed,
        "model assumption: no calibration source measures how long a home (CHA, probe filter) holds one line between two reads of it",
        "one leg of an L3 transfer (l3_transfer_cycles / 3, the three legs request, forward, data taken as equal): the home decides and forwards, then takes the next read while the data is on its way; a third of a transfer, so reads of a resolved line are served three to a transfer's time",
    )
}

/// The machine of a preset with its default modes (for `Preset::build`).
fn build_default(name: &str) -> MachineSpec {
    resolve_preset(name).unwrap_or_else(|e| panic!("{e}")).spec
}

/// The model's one-way latency of the compare-and-swap ping-pong between
/// CPUs `a` and `b` with the line homed on `home_node`, in cycles: the
/// formulas of the module documentation, averaged over the two directions
/// (the ping-pong alternates requester and owner). It is what the simulator
/// gives for a two-CPU ping-pong (`scenarios/shipped/ping-pong.toml`), without
/// running it.
pub fn one_way_cycles(t: &Topology, a: LinuxCpu, b: LinuxCpu, home_node: u32) -> f64 {
    let l = &t.spec.latency;
    let (core_a, core_b) = (t.core_of(a), t.core_of(b));
    if core_a == core_b {
        return (l.l1_hit_cycles + l.smt_transfer_cycles + l.locked_op_cycles) as f64;
    }
    if t.l3_of_core(core_a) == t.l3_of_core(core_b) {
        return (l.l3_transfer_cycles + l.locked_op_cycles) as f64;
    }
    let transfer = |requester: u32, owner: u32| -> u64 {
        let directory = match t.spec.lookup {
            Lookup::Home => home_node,
            Lookup::Local => t.node_of_core(requester),
        };
        t.hop_core_to_node(requester, directory)
            + t.hop_core_to_node(owner, directory)
            + t.hop_core_to_core(owner, requester)
    };
    l.locked_op_cycles as f64 + (transfer(core_a, core_b) + transfer(core_b, core_a)) as f64 / 2.0
}

/// [`one_way_cycles`] in nanoseconds at the machine's clock.
pub fn one_way_ns(t: &Topology, a: LinuxCpu, b: LinuxCpu, home_node: u32) -> f64 {
    t.cycles_to_ns(one_way_cycles(t, a, b, home_node))
}

// ---------------------------------------------------------------------------
// Building parameter tables

fn param(
    key: &'static str,
    value: ParamValue,
    unit: &'static str,
    kind: Provenance,
    source: &'static str,
    note: &'static str,
) -> Param {
    Param {
        key,
        value,
        unit,
        kind,
        source,
        note,
    }
}

fn int(
    key: &'static str,
    value: u64,
    unit: &'static str,
    kind: Provenance,
    source: &'static str,
    note: &'static str,
) -> Param {
    param(key, ParamValue::Int(value), unit, kind, source, note)
}

fn num(
    key: &'static str,
    value: f64,
    unit: &'static str,
    kind: Provenance,
    source: &'static str,
    note: &'static str,
) -> Param {
    param(key, ParamValue::Num(value), unit, kind, source, note)
}

fn text(
    key: &'static str,
    value: &str,
    kind: Provenance,
    source: &'static str,
    note: &'static str,
) -> Param {
    param(
        key,
        ParamValue::Text(value.to_string()),
        "",
        kind,
        source,
        note,
    )
}

fn flag(
    key: &'static str,
    value: bool,
    kind: Provenance,
    source: &'static str,
    note: &'static str,
) -> Param {
    param(key, ParamValue::Bool(value), "", kind, source, note)
}

/// Replaces the parameter of the same key (a mode's change), or adds it.
fn set(params: &mut Vec<Param>, new: Param) {
    match params.iter_mut().find(|p| p.key == new.key) {
        Some(p) => *p = new,
        None => params.push(new),
    }
}

fn set_text(params: &mut [Param], key: &str, value: String) {
    if let Some(p) = params.iter_mut().find(|p| p.key == key) {
        p.value = ParamValue::Text(value);
    }
}

/// The machine name parameter (its value becomes the canonical reference).
fn name_param(name: &'static str) -> Param {
    text(
        "name",
        name,
        Provenance::Documented,
        "bounce preset name; with modes, `NAME:MODE,...`",
        "",
    )
}

/// Mode `smt-off`, common to every preset: one thread per core.
const SMT_OFF: Mode = Mode {
    name: "smt-off",
    summary: "SMT disabled: one thread per core",
    group: None,
    default: false,
    apply: smt_off,
};

fn smt_off(params: &mut Vec<Param>) {
    set(
        params,
        int(
            "threads_per_core",
            1,
            "",
            Provenance::Documented,
            "mode `smt-off`: SMT disabled in firmware (as on the measured 2 x 9654 and 1 x 9754, c2c_summary_table.md)",
            "Linux then numbers the physical cores only; smt_transfer_cycles stays but has no pair to apply to",
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_builds_a_valid_machine_named_after_it() {
        for p in PRESETS {
            let spec = (p.build)();
            assert_eq!(spec.name, p.name);
            Topology::new(spec).unwrap();
        }
    }

    /// Every machine key read back from a preset's machine is the key
    /// the table built it from, and builds the same machine again.
    #[test]
    fn spec_values_read_back_every_key_of_every_preset() {
        for p in PRESETS {
            let r = resolve_preset(p.name).unwrap();
            let values = spec_values(&r.spec);
            let keys: Vec<&str> = values.iter().map(|(k, _)| *k).collect();
            assert_eq!(keys, SPEC_KEYS, "{}", p.name);
            let params: Vec<Param> = values
                .into_iter()
                .map(|(key, value)| param(key, value, "", Provenance::Assumed, "test", "test"))
                .collect();
            assert_eq!(machine_spec(&params).unwrap(), r.spec, "{}", p.name);
        }
    }

    #[test]
    fn icelake_has_linux_numbering_of_160_cpus() {
        let t = Topology::new(resolve("icelake-sp-2s").unwrap()).unwrap();
        assert_eq!(t.cpu_count(), 160);
        assert_eq!(t.core_of(LinuxCpu::new(80)), 0);
        assert_eq!(t.socket_of(LinuxCpu::new(40)), 1);
        assert_eq!(t.socket_of(LinuxCpu::new(120)), 1);
    }

    #[test]
    fn modes_apply_in_the_preset_order_and_name_the_machine() {
        let r = resolve_preset("epyc-milan-2s:smt-off,nps4").unwrap();
        assert_eq!(r.reference(), "epyc-milan-2s:nps4,smt-off");
        assert_eq!(r.spec.name, "epyc-milan-2s:nps4,smt-off");
        assert_eq!(r.spec.nodes_per_socket, 4);
        assert_eq!(r.spec.l3_per_node, 2);
        assert_eq!(r.spec.threads_per_core, 1);
        // The default mode changes nothing, not even the name.
        assert_eq!(
            resolve("epyc-milan-2s:nps1").unwrap(),
            resolve("epyc-milan-2s").unwrap()
        );
    }

    #[test]
    fn bad_modes_are_errors_that_list_the_modes() {
        assert_eq!(
            resolve("epyc-milan-2s:nps3").unwrap_err(),
            "preset `epyc-milan-2s` has no mode `nps3`; its modes: nps1, nps2, nps4, smt-off"
        );
        assert_eq!(
            resolve("epyc-milan-2s:nps2,nps4").unwrap_err(),
            "modes `nps2` and `nps4` of preset `epyc-milan-2s` exclude each other; give one"
        );
        assert!(resolve("epyc-milan-2s:")
            .unwrap_err()
            .contains("no mode ``"));
        assert!(resolve("zen9-2s")
            .unwrap_err()
            .starts_with("unknown machine preset `zen9-2s`; presets: icelake-sp-2s, "));
    }

    #[test]
    fn the_model_formula_matches_the_hop_functions() {
        // Ice Lake: 5 + 2 + 20; 154 + 20; 20 + 51 + 148 + 148.
        let t = Topology::new(resolve("icelake-sp-2s").unwrap()).unwrap();
        assert_eq!(
            one_way_cycles(&t, LinuxCpu::new(0), LinuxCpu::new(80), 0),
            27.0
        );
        assert_eq!(
            one_way_cycles(&t, LinuxCpu::new(0), LinuxCpu::new(1), 0),
            174.0
        );
        assert_eq!(
            one_way_cycles(&t, LinuxCpu::new(0), LinuxCpu::new(40), 0),
            367.0
        );
        assert_eq!(
            one_way_cycles(&t, LinuxCpu::new(40), LinuxCpu::new(41), 0),
            174.0
        );
    }
}
