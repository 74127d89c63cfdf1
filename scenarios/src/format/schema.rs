//! The typed form of a scenario document.
//!
//! These are serde structs deserialized from the TOML tree (see
//! [`crate::format::document`]), all `deny_unknown_fields`. Every value whose meaning a
//! later stage checks (C type names, preset names, script text, numbers with
//! constraints) is kept as a [`Spanned`] so errors can point at it; the
//! positions are byte ranges into [`LoadedScenario::source`](crate::format::LoadedScenario::source).
//!
//! `PartialEq` on [`Spanned`] compares values only, so a variant's document
//! compares equal to the base in every part its patches did not change.
//!
//! After [`crate::load_str`] returns, the rules documented on each field hold
//! (they are checked when loading, not by serde alone: see
//! [`crate::format::document`], [`crate::format::sweep`] and
//! [`crate::format::measured`]).

use indexmap::IndexMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
pub use toml::Spanned;

use crate::format::error::de_custom;

/// The only supported value of the `schema` key.
pub const SCHEMA_VERSION: i64 = 1;
/// Default for `seed`.
pub const DEFAULT_SEED: u64 = 1;
/// Default for `base_name`.
pub const DEFAULT_BASE_NAME: &str = "base";
/// Default for `run.max_cycles`.
pub const DEFAULT_MAX_CYCLES: u64 = 10_000_000_000;
/// Largest CPU number a cpulist may name.
pub const MAX_CPU: u32 = 65_535;

/// One scenario document: the base, or the base with a variant's patches applied.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioDoc {
    /// Always [`SCHEMA_VERSION`].
    pub schema: Spanned<i64>,
    /// The scenario name; the loader fills in the file stem when it is absent or empty.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Name of the base variant: a [name](crate::format::document#names), distinct from every variant name.
    #[serde(default = "default_base_name")]
    pub base_name: Spanned<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub machine: MachineRef,
    /// Library modules (`models::library`) whose structs, instances and
    /// procedures the scenario gets as if written in it (see
    /// [`crate::format::document#libraries`]): each a known module, listed once.
    #[serde(default, rename = "use")]
    pub uses: Vec<Spanned<String>>,
    pub run: RunSection,
    /// Parameter values, by identifier.
    #[serde(default)]
    pub params: IndexMap<String, Spanned<i64>>,
    /// Struct layouts, by identifier.
    #[serde(default)]
    pub structs: IndexMap<String, StructDef>,
    /// Instances of structs, by identifier.
    #[serde(default)]
    pub instances: IndexMap<String, InstanceDef>,
    /// Procedures callable from scripts, by identifier.
    #[serde(default)]
    pub procedures: IndexMap<String, ProcedureDef>,
    /// Script texts, by name.
    #[serde(default)]
    pub scripts: IndexMap<String, Spanned<String>>,
    /// Non-empty; names unique. Groups may share CPUs: a CPU runs its
    /// threads in turn (`[scheduler]`).
    pub threads: Vec<ThreadGroup>,
    /// `[scheduler]`: the run queues' parameters, over the machine's
    /// (`sched.*` of its preset), and the context switch's hooks.
    #[serde(default)]
    pub scheduler: SchedulerSection,
    /// `[[measured]]`: figures measured on real machines, each printed beside
    /// the simulated figure of a variant (see [`crate::run::measured`]). Variant,
    /// thread group and field names are checked once all variants are known
    /// ([`crate::format::measured`]).
    #[serde(default)]
    pub measured: Vec<MeasuredDef>,
}

/// One `[[measured]]` entry: a figure someone measured, the variant that
/// models the measured configuration, and the metric to compute from its run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredDef {
    /// What was measured, as the table shows it (e.g. `consume_stock`).
    pub label: Spanned<String>,
    /// The variant (or the base) whose run stands for the measured configuration.
    pub variant: Spanned<String>,
    pub metric: Spanned<MeasuredMetric>,
    /// The measured figure, in the metric's unit.
    pub value: Spanned<f64>,
    /// Where the figure comes from: a file and line, or a citation.
    pub source: Spanned<String>,
    /// `throughput-change`: the variant the change is measured against
    /// (default: the base). `cycles-per-iteration`: when given, the figure is
    /// the difference from this variant's cycles per iteration.
    pub relative_to: Option<Spanned<String>>,
    /// `cycles-per-iteration`, `one-way-latency`,
    /// `field-latency-per-iteration`: only the iterations (and accesses) of
    /// this thread group (default: every CPU's).
    pub threads: Option<Spanned<String>>,
    /// `field-cycles-share`, `field-latency-per-iteration`: the fields
    /// (`instance.field`) whose accesses count.
    #[serde(default)]
    pub fields: Vec<Spanned<String>>,
    /// The largest difference, in the metric's unit, that counts as a match;
    /// without it the table shows the difference and no verdict.
    pub tolerance: Option<Spanned<f64>>,
    /// With a `[sweep]`: the case (its id, as `bounce check FILE --format
    /// csv` lists them) whose run the figure was measured as; required there
    /// and refused without a sweep.
    pub case: Option<Spanned<String>>,
}

/// What a `[[measured]]` figure is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeasuredMetric {
    /// Throughput (iterations per second, all CPUs) change in percent against
    /// `relative_to`.
    ThroughputChange,
    /// Mean cycles per measured iteration (or its difference from
    /// `relative_to`'s).
    CyclesPerIteration,
    /// Percent of the running CPUs' measured cycles spent in accesses to
    /// `fields` (the L1 hit, the wait for the line, the locked operation).
    FieldCyclesShare,
    /// The latencies of `threads`' accesses to `fields` (every running
    /// CPU's without) added up, per measured iteration: each access from
    /// its issue to its data (a store from its drain's start to its write,
    /// as `bounce trace` prints "N cycles in all"), plus an atomic's locked
    /// operation. With one access an iteration: that operation's latency,
    /// as a micro-benchmark (ccbench) times it.
    FieldLatencyPerIteration,
    /// One-way latency in ns of a ping-pong: half the mean cycles of an
    /// iteration (one round trip: the line goes to the other CPU and
    /// back), at the machine's clock; of `threads` when given.
    OneWayLatency,
}

impl MeasuredMetric {
    /// Every metric, in the order of [`MeasuredMetric::NAMES`].
    pub const ALL: &'static [MeasuredMetric] = &[
        MeasuredMetric::ThroughputChange,
        MeasuredMetric::CyclesPerIteration,
        MeasuredMetric::FieldCyclesShare,
        MeasuredMetric::FieldLatencyPerIteration,
        MeasuredMetric::OneWayLatency,
    ];

    /// Whether the metric counts the accesses to `fields` (which it then
    /// needs).
    pub fn uses_fields(self) -> bool {
        matches!(
            self,
            MeasuredMetric::FieldCyclesShare | MeasuredMetric::FieldLatencyPerIteration
        )
    }

    /// Whether `threads` may narrow the metric to one thread group.
    pub fn uses_threads(self) -> bool {
        matches!(
            self,
            MeasuredMetric::CyclesPerIteration
                | MeasuredMetric::OneWayLatency
                | MeasuredMetric::FieldLatencyPerIteration
        )
    }

    /// Whether `relative_to` may give a variant to subtract or compare with.
    pub fn uses_relative_to(self) -> bool {
        matches!(
            self,
            MeasuredMetric::ThroughputChange | MeasuredMetric::CyclesPerIteration
        )
    }

    pub const NAMES: &'static [&'static str] = &[
        "throughput-change",
        "cycles-per-iteration",
        "field-cycles-share",
        "field-latency-per-iteration",
        "one-way-latency",
    ];

    pub fn name(self) -> &'static str {
        match self {
            MeasuredMetric::ThroughputChange => "throughput-change",
            MeasuredMetric::CyclesPerIteration => "cycles-per-iteration",
            MeasuredMetric::FieldCyclesShare => "field-cycles-share",
            MeasuredMetric::FieldLatencyPerIteration => "field-latency-per-iteration",
            MeasuredMetric::OneWayLatency => "one-way-latency",
        }
    }

    /// The unit the figure and the difference are in.
    pub fn unit(self) -> &'static str {
        match self {
            MeasuredMetric::ThroughputChange => "%",
            MeasuredMetric::CyclesPerIteration => "cycles",
            MeasuredMetric::FieldCyclesShare => "% of cycles",
            MeasuredMetric::FieldLatencyPerIteration => "cycles",
            MeasuredMetric::OneWayLatency => "ns",
        }
    }
}

fn default_base_name() -> Spanned<String> {
    Spanned::new(0..0, DEFAULT_BASE_NAME.to_string())
}

fn default_seed() -> u64 {
    DEFAULT_SEED
}

fn default_max_cycles() -> Spanned<u64> {
    Spanned::new(0..0, DEFAULT_MAX_CYCLES)
}

/// `machine = "preset"` or a `[machine]` table.
// A handful of these exist per load; boxing the table would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MachineRef {
    /// A preset name, resolved by a later stage.
    Preset(Spanned<String>),
    Inline(InlineMachine),
}

impl MachineRef {
    /// The preset this machine starts from, if any.
    pub fn preset(&self) -> Option<&Spanned<String>> {
        match self {
            MachineRef::Preset(p) => Some(p),
            MachineRef::Inline(m) => m.preset.as_ref(),
        }
    }
}

impl<'de> Deserialize<'de> for MachineRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[allow(clippy::large_enum_variant)]
        enum Raw {
            Preset(String),
            Inline(InlineMachine),
        }
        struct RawVisitor;
        impl<'de> Visitor<'de> for RawVisitor {
            type Value = Raw;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a preset name or a table")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
                Ok(Raw::Preset(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Raw, A::Error> {
                InlineMachine::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(Raw::Inline)
            }
        }
        impl<'de> Deserialize<'de> for Raw {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(RawVisitor)
            }
        }
        let raw = Spanned::<Raw>::deserialize(deserializer)?;
        let span = raw.span();
        Ok(match raw.into_inner() {
            Raw::Preset(name) => MachineRef::Preset(Spanned::new(span, name)),
            Raw::Inline(m) => MachineRef::Inline(m),
        })
    }
}

/// A `[machine]` table. Every key is optional here; a later stage checks that
/// the machine is complete when no preset is given. Counts are at least 1 and
/// `line_size_bytes` is a power of two.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineMachine {
    pub preset: Option<Spanned<String>>,
    pub name: Option<String>,
    pub clock_mhz: Option<Spanned<u64>>,
    pub sockets: Option<Spanned<u32>>,
    pub nodes_per_socket: Option<Spanned<u32>>,
    /// L3 domains (Intel die / AMD CCX) per NUMA node.
    pub l3_per_node: Option<Spanned<u32>>,
    pub cores_per_l3: Option<Spanned<u32>>,
    pub threads_per_core: Option<Spanned<u32>>,
    pub line_size_bytes: Option<Spanned<u32>>,
    pub protocol: Option<Spanned<Protocol>>,
    pub lookup: Option<Spanned<Lookup>>,
    pub adjacent_line_prefetch: Option<bool>,
    pub store_buffer_entries: Option<Spanned<u32>>,
    /// Links between each pair of sockets, a square matrix (`[[0, 1], [1,
    /// 0]]`); without it every pair is one link apart.
    pub socket_hops: Option<Spanned<Vec<Vec<u32>>>>,
    /// Distances between NUMA nodes as `numactl --hardware` prints them
    /// (ACPI SLIT: 10 on the diagonal, `[[10, 11, 21, 21], ...]`), one row
    /// per node of the machine; the legs between nodes, inside a socket and
    /// across sockets, follow them (`sim_core::topology::NodeDistances`).
    pub node_distances: Option<Spanned<Vec<Vec<u32>>>>,
    /// Round-trip cycles per SLIT distance unit (default: the local memory
    /// latency over 10).
    pub distance_unit_cycles: Option<Spanned<u64>>,
    /// Whether the L3 answers reads of clean lines its cores hold.
    pub l3_shared_lines: Option<Spanned<L3SharedLines>>,
    /// Whether the directory tracks a shared line's sharers exactly.
    pub directory: Option<Spanned<DirectoryPrecision>>,
    /// Who answers a read of a clean shared line held in another L3 domain
    /// (default: the preset's, or the forwarding copy else memory).
    pub clean_shared_line_answer: Option<Spanned<CleanSharedLineAnswer>>,
    /// Each SMT sibling's share of a full core while both run, in percent
    /// (default: the preset's, or 100 for a machine given whole).
    pub smt_share_percent: Option<Spanned<u32>>,
    /// Percent of a contended line's handovers in which the home serves a
    /// waiter nearest the owner (default: the preset's, or 0, uniform).
    pub arbitration_near_owner_percent: Option<Spanned<u32>>,
    /// Misses a core keeps in flight at once (default: the preset's, or 1
    /// for a machine given whole).
    pub outstanding_misses: Option<Spanned<u32>>,
    /// The core's reorder window in entries (default: the preset's, or 0,
    /// no window, for a machine given whole).
    pub reorder_window_entries: Option<Spanned<u32>>,
    /// Window entries dispatched per cycle (default: the preset's, or 1).
    pub dispatch_width: Option<Spanned<u32>>,
    /// Cycles of a mispredicted branch (default: the preset's, or 0).
    pub mispredict_penalty_cycles: Option<Spanned<u32>>,
    /// Whether locked instructions execute speculatively, their lines
    /// requested ahead (default: the preset's, or false).
    pub lock_rfo_ahead: Option<bool>,
    /// How many store-buffer entries past the head have their lines
    /// requested for ownership ahead of their drain, 0 none (default: the
    /// preset's, or 0).
    pub store_rfo_ahead_entries: Option<Spanned<u32>>,
    /// Cycles a core's CPUs must all be idle (a `sleep` this long with
    /// nothing else to run) before its private caches are written back
    /// and dropped, its deepest idle state; 0 is never (default: the
    /// preset's, or 0).
    pub deep_idle_writeback_cycles: Option<Spanned<u64>>,
    /// Each core's private caches (`sim_core::topology::PrivateCacheSpec`):
    /// the L1D's and the L2's size in KiB and ways, and the cycles of a
    /// hit in the L2 of a line not in the L1D. Default: the preset's (its
    /// sourced sizes, `bounce presets show`); for a machine given whole,
    /// unbounded caches (every size 0), as before the keys existed.
    pub l1d_kib: Option<Spanned<u32>>,
    pub l1d_ways: Option<Spanned<u32>>,
    pub l2_kib: Option<Spanned<u32>>,
    pub l2_ways: Option<Spanned<u32>>,
    pub l2_hit_cycles: Option<Spanned<u64>>,
    #[serde(default)]
    pub latency: LatencyOverrides,
    /// `[machine.cost]`: cycles of instruction classes (`irq_save = 30`)
    /// that library procedures charge with `cost(NAME)`; they override the
    /// preset's, or add classes of the scenario's own.
    #[serde(default)]
    pub cost: IndexMap<String, Spanned<u64>>,
}

/// `[machine.latency]`: all optional. Each leg is given in core cycles
/// at `clock_mhz` (`<leg>_cycles`) or in nanoseconds (`<leg>_ns`, which
/// the machine converts to cycles at its clock,
/// `crate::machine::resolve`), not both.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyOverrides {
    pub l1_hit_cycles: Option<Spanned<u64>>,
    pub locked_op_cycles: Option<Spanned<u64>>,
    pub smt_transfer_cycles: Option<Spanned<u64>>,
    pub l3_transfer_cycles: Option<Spanned<u64>>,
    pub hop_in_node_cycles: Option<Spanned<u64>>,
    pub hop_between_nodes_cycles: Option<Spanned<u64>>,
    pub hop_between_sockets_cycles: Option<Spanned<u64>>,
    pub hop_extra_socket_link_cycles: Option<Spanned<u64>>,
    pub clean_snoop_saving_cycles: Option<Spanned<u64>>,
    pub dram_cycles: Option<Spanned<u64>>,
    pub l3_hit_cycles: Option<Spanned<u64>>,
    pub home_occupancy_cycles: Option<Spanned<u64>>,
    pub l1_hit_ns: Option<Spanned<f64>>,
    pub locked_op_ns: Option<Spanned<f64>>,
    pub smt_transfer_ns: Option<Spanned<f64>>,
    pub l3_transfer_ns: Option<Spanned<f64>>,
    pub hop_in_node_ns: Option<Spanned<f64>>,
    pub hop_between_nodes_ns: Option<Spanned<f64>>,
    pub hop_between_sockets_ns: Option<Spanned<f64>>,
    pub hop_extra_socket_link_ns: Option<Spanned<f64>>,
    pub clean_snoop_saving_ns: Option<Spanned<f64>>,
    pub dram_ns: Option<Spanned<f64>>,
    pub l3_hit_ns: Option<Spanned<f64>>,
    pub home_occupancy_ns: Option<Spanned<f64>>,
}

impl LatencyOverrides {
    /// Each leg's name (without its unit) with the file's value in
    /// cycles and in nanoseconds, in the order `presets show` lists them.
    #[allow(clippy::type_complexity)]
    pub fn legs(&self) -> [(&'static str, &Option<Spanned<u64>>, &Option<Spanned<f64>>); 12] {
        [
            ("l1_hit", &self.l1_hit_cycles, &self.l1_hit_ns),
            ("locked_op", &self.locked_op_cycles, &self.locked_op_ns),
            (
                "smt_transfer",
                &self.smt_transfer_cycles,
                &self.smt_transfer_ns,
            ),
            (
                "l3_transfer",
                &self.l3_transfer_cycles,
                &self.l3_transfer_ns,
            ),
            ("l3_hit", &self.l3_hit_cycles, &self.l3_hit_ns),
            (
                "hop_in_node",
                &self.hop_in_node_cycles,
                &self.hop_in_node_ns,
            ),
            (
                "hop_between_nodes",
                &self.hop_between_nodes_cycles,
                &self.hop_between_nodes_ns,
            ),
            (
                "hop_between_sockets",
                &self.hop_between_sockets_cycles,
                &self.hop_between_sockets_ns,
            ),
            (
                "hop_extra_socket_link",
                &self.hop_extra_socket_link_cycles,
                &self.hop_extra_socket_link_ns,
            ),
            (
                "clean_snoop_saving",
                &self.clean_snoop_saving_cycles,
                &self.clean_snoop_saving_ns,
            ),
            ("dram", &self.dram_cycles, &self.dram_ns),
            (
                "home_occupancy",
                &self.home_occupancy_cycles,
                &self.home_occupancy_ns,
            ),
        ]
    }
}

/// `l3_shared_lines`: whether the L3 keeps lines its cores read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum L3SharedLines {
    NotKept,
    Inclusive,
    VictimWithSharing,
}

/// `clean_shared_line_answer`: who answers a read of a clean shared line
/// in another L3 domain (`sim_core::topology::CleanSharedLineAnswer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CleanSharedLineAnswer {
    MemoryOrForwarder,
    HoldingL3,
    HoldingDie,
}

/// `directory`: exact sharers, or a broadcast for shared lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirectoryPrecision {
    Exact,
    BroadcastShared,
}

/// Coherence protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Mesi,
    Mesif,
    Moesi,
}

/// Where a miss looks for a line first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lookup {
    Local,
    Home,
}

/// `[run]`. After loading exactly one of `iterations` and `cycles` is set
/// (see [`RunSection::length`]), it is at least 1, and `cycles <= max_cycles`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Iterations per CPU.
    pub iterations: Option<Spanned<u64>>,
    /// Simulated cycles.
    pub cycles: Option<Spanned<u64>>,
    #[serde(default)]
    pub warmup_iterations: u64,
    /// CPUs start at distinct, seeded offsets below this many cycles, so
    /// that identical CPUs do not run in lock-step; 0 starts them together.
    #[serde(default = "default_start_spread_cycles")]
    pub start_spread_cycles: u64,
    /// Bound on simulated cycles; at least 1.
    #[serde(default = "default_max_cycles")]
    pub max_cycles: Spanned<u64>,
}

fn default_start_spread_cycles() -> u64 {
    sim_core::engine::DEFAULT_START_SPREAD_CYCLES
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunLength {
    /// Iterations per CPU.
    Iterations(u64),
    /// Simulated cycles.
    Cycles(u64),
}

impl RunSection {
    /// The run length. (On a section that did not go through the loader and has
    /// neither key, this is `Iterations(0)`.)
    pub fn length(&self) -> RunLength {
        match (&self.iterations, &self.cycles) {
            (Some(i), _) => RunLength::Iterations(*i.get_ref()),
            (None, Some(c)) => RunLength::Cycles(*c.get_ref()),
            (None, None) => RunLength::Iterations(0),
        }
    }
}

/// `[structs.NAME]`: a C-like struct (or union) layout.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructDef {
    /// Struct-level alignment in bytes; a power of two.
    pub align: Option<Spanned<u64>>,
    /// A union: every field at offset 0, the size of the largest.
    #[serde(default)]
    pub union: bool,
    /// The layout comes from a pahole listing instead of `fields`.
    pub pahole: Option<PaholeRef>,
    /// The layout comes from BTF instead of `fields`.
    pub btf: Option<BtfRef>,
    /// Non-empty unless `pahole` or `btf` is given (then empty); field names are
    /// unique identifiers.
    #[serde(default)]
    pub fields: Vec<FieldDef>,
}

/// `pahole = { file = "memcg_stock.pahole", struct = "memcg_stock_pcp" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaholeRef {
    /// The listing (`pahole -C NAME vmlinux > FILE`), relative to the scenario file.
    pub file: Spanned<String>,
    /// The struct of the listing (default: the scenario's name for it).
    #[serde(rename = "struct")]
    pub struct_name: Option<Spanned<String>>,
}

/// `btf = { file = "/sys/kernel/btf/vmlinux", struct = "page_counter" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BtfRef {
    /// Raw BTF (`/sys/kernel/btf/vmlinux`) or an ELF file with a `.BTF`
    /// section (a `vmlinux`), relative to the scenario file.
    pub file: Spanned<String>,
    /// The struct or union of the BTF (default: the scenario's name for it).
    #[serde(rename = "struct")]
    pub struct_name: Option<Spanned<String>>,
}

/// One field of a struct: exactly one of `type` and `size` is set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDef {
    pub name: Spanned<String>,
    /// A C type name, or another struct or union of `[structs]`
    /// (`struct NAME`, `union NAME`, or `NAME`), resolved by a later stage.
    #[serde(rename = "type")]
    pub ty: Option<Spanned<String>>,
    /// Size in bytes (at least 1) of an opaque field.
    pub size: Option<Spanned<u64>>,
    /// Alignment override in bytes; a power of two.
    pub align: Option<Spanned<u64>>,
    /// Explicit byte offset within the struct.
    pub offset: Option<Spanned<u64>>,
    /// Array length; at least 1.
    pub count: Option<Spanned<u64>>,
    /// A struct or union member whose fields scripts name without it (C11
    /// anonymous members: `union { ... };`).
    pub anonymous: Option<Spanned<bool>>,
    /// A struct (or, with `union = true`, a union) written out in place, as
    /// a pahole import gives one (`css`, `memory`): its members, reached by
    /// dotted paths (`css.parent`) and patched as
    /// `structs.NAME.fields.css.fields.parent.align`. Instead of `type` and
    /// `size`.
    pub fields: Option<Vec<FieldDef>>,
    /// With `fields`: the members all start at 0.
    pub union: Option<Spanned<bool>>,
    /// A bitfield of this many bits, inside the storage unit `type` gives
    /// (which it shares with the bitfields next to it).
    pub bits: Option<Spanned<u64>>,
    /// A bitfield's first bit inside its storage unit (default 0).
    pub bit_offset: Option<Spanned<u64>>,
    /// What views call the type of an opaque (`size`) or written-out
    /// (`fields`) member, such as pahole's `struct percpu_ref`.
    pub label: Option<String>,
}

/// What a field is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldShape<'a> {
    /// A C type name.
    Type(&'a Spanned<String>),
    /// Opaque bytes.
    Size(&'a Spanned<u64>),
}

impl FieldDef {
    /// The field's type or size. (On a field that did not go through the
    /// loader and has neither, this is `None`.)
    pub fn shape(&self) -> Option<FieldShape<'_>> {
        match (&self.ty, &self.size) {
            (Some(t), _) => Some(FieldShape::Type(t)),
            (None, Some(s)) => Some(FieldShape::Size(s)),
            (None, None) => None,
        }
    }

    /// Number of elements (1 when `count` is absent).
    pub fn count(&self) -> u64 {
        self.count.as_ref().map_or(1, |c| *c.get_ref())
    }
}

/// `[instances.NAME]`: where a struct lives in memory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceDef {
    /// Names a key of `[structs]`.
    #[serde(rename = "struct")]
    pub struct_name: Spanned<String>,
    pub kind: Spanned<InstanceKind>,
    /// NUMA node of a global instance; only allowed for `kind = "global"`.
    pub node: Option<Spanned<u32>>,
    /// Number of copies of a global instance (at least 1); only allowed for `kind = "global"`.
    pub count: Option<Spanned<u64>>,
    /// Only allowed for `kind = "per-cpu"`.
    pub shared_aligned: Option<Spanned<bool>>,
}

impl InstanceDef {
    /// NUMA node of a global instance (default 0).
    pub fn node(&self) -> u32 {
        self.node.as_ref().map_or(0, |n| *n.get_ref())
    }

    /// Number of copies of a global instance (default 1).
    pub fn count(&self) -> u64 {
        self.count.as_ref().map_or(1, |c| *c.get_ref())
    }

    /// Whether a per-cpu instance is cache-line aligned (default false).
    pub fn shared_aligned(&self) -> bool {
        self.shared_aligned.as_ref().is_some_and(|s| *s.get_ref())
    }
}

/// Where instances are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceKind {
    /// One object (or `count` objects) on one NUMA node.
    Global,
    /// One object per CPU.
    PerCpu,
    /// One object per NUMA node.
    PerNode,
}

/// `[procedures.NAME]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcedureDef {
    /// Parameter names: unique identifiers.
    #[serde(default)]
    pub params: Vec<Spanned<String>>,
    /// Script text, parsed by a later stage.
    pub body: Spanned<String>,
    /// Cycles of the procedure's own code around its memory accesses,
    /// charged as `work` on every call (0: none).
    #[serde(default)]
    pub cost_cycles: u64,
}

/// One `[[threads]]` entry: a group of CPUs running the same script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadGroup {
    /// Defaults to the script name (see [`ThreadGroup::name`]).
    pub name: Option<Spanned<String>>,
    pub cpus: Spanned<CpuSet>,
    /// Names a key of `[scripts]`.
    pub script: Spanned<String>,
    /// Threads of the group (default: one per CPU of `cpus`): thread k runs
    /// on the (k mod n)th of the n CPUs, so more threads than CPUs share
    /// them in turn. At least the number of CPUs; at most
    /// `limits::THREADS_PER_CPU` per CPU.
    pub count: Option<Spanned<u32>>,
}

/// `[scheduler]`: each key overrides the machine's figure (nanoseconds,
/// converted to cycles at its clock); the hooks name procedures without
/// parameters.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSection {
    /// The slice a thread runs before one waiting for its CPU may preempt it.
    pub time_slice_ns: Option<Spanned<u64>>,
    /// From a thread leaving its CPU to the next running there.
    pub context_switch_ns: Option<Spanned<u64>>,
    /// From a wake-up to the woken thread arriving at its CPU.
    pub wakeup_latency_ns: Option<Spanned<u64>>,
    /// Procedure run by the outgoing thread at every context switch.
    pub switch_out: Option<Spanned<String>>,
    /// Procedure run by the incoming thread at every context switch.
    pub switch_in: Option<Spanned<String>>,
}

impl ThreadGroup {
    /// The group's name: `name`, or else the script name.
    pub fn name(&self) -> &str {
        match &self.name {
            Some(n) => n.get_ref(),
            None => self.script.get_ref(),
        }
    }
}

/// A parsed Linux cpulist.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CpuSet {
    /// `"all"`: every CPU of the machine.
    All,
    /// Sorted, without duplicates, non-empty.
    List(Vec<u32>),
}

impl CpuSet {
    /// Parses a cpulist: `all`, or comma-separated `N` or `N-M` (M >= N) items,
    /// with optional spaces around items. A CPU may not be listed twice.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let trimmed = text.trim();
        if trimmed == "all" {
            return Ok(CpuSet::All);
        }
        if trimmed.is_empty() {
            return Err("the cpulist is empty".to_string());
        }
        let mut cpus = Vec::new();
        for item in trimmed.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(
                    "the cpulist has an empty item (two commas, or a comma at an end)".into(),
                );
            }
            let (lo, hi) = match item.split_once('-') {
                Some((lo, hi)) => (parse_cpu(lo.trim(), item)?, parse_cpu(hi.trim(), item)?),
                None => {
                    let n = parse_cpu(item, item)?;
                    (n, n)
                }
            };
            if hi < lo {
                return Err(format!("the range `{item}` ends before it starts"));
            }
            cpus.extend(lo..=hi);
            if cpus.len() > MAX_CPU as usize + 1 {
                // More entries than distinct CPUs: something is listed twice.
                // (Also bounds the memory a hostile list can take.)
                return Err("some CPUs are listed more than once".to_string());
            }
        }
        cpus.sort_unstable();
        if let Some(w) = cpus.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("CPU {} is listed more than once", w[0]));
        }
        Ok(CpuSet::List(cpus))
    }

    /// Whether the set contains `cpu` (`All` contains every CPU).
    pub fn contains(&self, cpu: u32) -> bool {
        match self {
            CpuSet::All => true,
            CpuSet::List(l) => l.binary_search(&cpu).is_ok(),
        }
    }
}

fn parse_cpu(text: &str, item: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{item}` is not a CPU number or a range N-M"));
    }
    match text.parse::<u32>() {
        Ok(n) if n <= MAX_CPU => Ok(n),
        _ => Err(format!("CPU `{text}` is larger than the maximum {MAX_CPU}")),
    }
}

impl fmt::Display for CpuSet {
    /// Canonical cpulist form, e.g. `0-3,8,10-11`, or `all`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuSet::All => f.write_str("all"),
            CpuSet::List(cpus) => f.write_str(&format_cpulist(cpus)),
        }
    }
}

/// Formats sorted CPU numbers as a cpulist (`0-3,8`).
pub fn format_cpulist<C: Copy + Into<u32>>(cpus: &[C]) -> String {
    let cpus: Vec<u32> = cpus.iter().map(|&c| c.into()).collect();
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

/// What a valid cpulist looks like (for error messages).
pub const CPULIST_HELP: &str = "a Linux cpulist such as \"0-15,40-55\" or \"3\", or \"all\"";

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CpuSetVisitor;
        impl Visitor<'_> for CpuSetVisitor {
            type Value = CpuSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a cpulist string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CpuSet, E> {
                CpuSet::parse(v).map_err(|why| {
                    de_custom(
                        &format!("invalid cpulist {v:?} for `{{key}}`: {why}"),
                        CPULIST_HELP,
                    )
                })
            }
        }
        deserializer.deserialize_str(CpuSetVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(CpuSet::parse("all"), Ok(CpuSet::All));
        assert_eq!(CpuSet::parse("3"), Ok(CpuSet::List(vec![3])));
        assert_eq!(
            CpuSet::parse("8-9, 0-2"),
            Ok(CpuSet::List(vec![0, 1, 2, 8, 9]))
        );
        assert!(CpuSet::parse("").is_err());
        assert!(CpuSet::parse("1,").is_err());
        assert!(CpuSet::parse("3-1").is_err());
        assert!(CpuSet::parse("1-").is_err());
        assert!(CpuSet::parse("-1").is_err());
        assert!(CpuSet::parse("0-3,2").is_err());
        assert!(CpuSet::parse("99999999999").is_err());
        assert!(CpuSet::parse("0-4000000000").is_err());
        assert!(CpuSet::parse(&vec!["0-65535"; 1000].join(",")).is_err());
        assert!(CpuSet::parse("0-65535").is_ok());
        assert_eq!(format_cpulist(&[0u32, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(CpuSet::parse("0-3,8").unwrap().to_string(), "0-3,8");
    }
}
