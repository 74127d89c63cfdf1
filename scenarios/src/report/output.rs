//! Results files (`results.csv`, `results.json`, `fields.csv`), the manifest
//! of a shard (`shard.json`), and merging shards. The format is described in
//! `docs/results-format.md`.
//!
//! Every file is rendered from one [`ResultsFile`], so a merge of shards
//! (which reads the shards' `results.json` back) writes the same bytes as an
//! unsharded run. Files are written under temporary names and renamed into
//! place only once all of them are written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::build::BuiltVariant;
use crate::format::read::{read_bounded_text, ReadError};
use crate::format::schema::format_cpulist;
use crate::format::sweep::AxisValue;
use crate::format::LoadedScenario;
use crate::run::cases::{in_shard, BuiltCase, CaseResult};
use crate::run::measured::Comparison;
use crate::run::results::VariantResult;
use sim_core::cpu::LinuxCpu;
use sim_core::stats::Traffic;
use sim_core::topology::Topology;

/// `schema_version` of `results.json` and `shard.json`.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;
pub const RESULTS_CSV: &str = "results.csv";
pub const RESULTS_JSON: &str = "results.json";
pub const FIELDS_CSV: &str = "fields.csv";
pub const SHARD_MANIFEST: &str = "shard.json";

/// The whole of `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub tool: String,
    pub tool_version: String,
    pub scenario: ScenarioInfo,
    /// The sweep's axes in order (empty without a sweep).
    pub axes: Vec<AxisInfo>,
    /// The variants each case runs, in order.
    pub variants: Vec<String>,
    /// Each variant's baseline, the variant of the same case its changes
    /// are computed against (`baseline` in the scenario, or the first
    /// variant); a variant that is compared with nothing (the first, one
    /// that is its own `baseline`) is not listed. `None` in files written
    /// before it: every variant against the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baselines: Option<IndexMap<String, String>>,
    /// How CPU counts became CPUs, when there is a `cpus` axis and no
    /// `placement` axis.
    pub placement: Option<String>,
    /// Every case of the sweep (also those of other shards).
    pub cases: Vec<CaseInfo>,
    /// One per case and variant, in case order then variant order.
    pub records: Vec<Record>,
    /// The scenario's measured figures beside the simulated ones
    /// (`[[measured]]`; absent when it has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Comparison>,
}

impl ResultsFile {
    /// The variant `variant`'s changes are computed against ([`Self::baselines`]).
    pub fn baseline_of(&self, variant: &str) -> Option<&str> {
        match &self.baselines {
            Some(map) => map.get(variant).map(String::as_str),
            None => self
                .variants
                .first()
                .filter(|first| first.as_str() != variant)
                .map(String::as_str),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioInfo {
    pub name: String,
    /// SHA-256 of the scenario file's bytes, in hex (as `sha256sum` prints it).
    pub sha256: String,
    pub seed: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisInfo {
    pub name: String,
    pub values: Vec<Value>,
    /// For `cpus` and `placement`: the thread group they place.
    pub thread_group: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseInfo {
    pub index: usize,
    pub id: String,
    pub seed: u64,
    /// Axis name to value, in axis order.
    pub axes: IndexMap<String, Value>,
}

/// One run: one variant of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub case_index: usize,
    pub case_id: String,
    pub variant: String,
    pub axes: IndexMap<String, Value>,
    pub machine: String,
    pub clock_mhz: u64,
    pub machine_sockets: u32,
    pub machine_nodes: u32,
    pub machine_l3_domains: u32,
    /// Physical cores (a core's SMT threads share its cache).
    pub machine_cores: u32,
    pub machine_cpus: u32,
    /// Running CPUs (all thread groups).
    pub cpus: u32,
    pub cpu_list: String,
    pub sockets_used: u32,
    pub nodes_used: u32,
    pub l3_domains_used: u32,
    pub seed: u64,
    pub scenario_sha256: String,
    pub tool_version: String,
    pub measured_iterations: u64,
    pub elapsed_cycles: u64,
    pub events: u64,
    pub memory_ops: u64,
    pub throughput_iterations_per_second: f64,
    pub throughput_per_cpu_iterations_per_second: f64,
    pub cycles_per_iteration_mean: f64,
    pub cycles_per_iteration_p50: u64,
    pub cycles_per_iteration_p99: u64,
    pub ns_per_iteration_mean: f64,
    pub misses_per_iteration: f64,
    pub hitm_per_iteration: f64,
    pub invalidations_per_iteration: f64,
    pub cross_socket_misses_per_iteration: f64,
    pub stall_cycles_per_iteration: f64,
    pub store_buffer_stall_cycles: u64,
    /// Cycles CPUs spent polling (spin-waits, apart from stalls), and
    /// the part of the stall cycles requests spent queued at lines' homes,
    /// per iteration; 0 in files written before they were recorded.
    #[serde(default)]
    pub spin_cycles_per_iteration: f64,
    #[serde(default)]
    pub queue_wait_cycles_per_iteration: f64,
    /// The iterations of the thread group the scenario's `[[measured]]`
    /// rows of this variant measure (`threads`), when they name one;
    /// `comparison.svg` compares these. Absent otherwise, and in files
    /// written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_threads: Option<GroupRecord>,
    pub fields: Vec<FieldRecord>,
    pub lines: Vec<LineRecord>,
    /// SHA-256 of the record's content ([`record_hash`]): the scenario's
    /// hash, its case (index, id, seed, axis values) and every other field
    /// of the record. `bounce merge` recomputes it, so that a record edited
    /// after bounce wrote it is refused; empty in files written before it.
    #[serde(default)]
    pub content_sha256: String,
}

/// A thread group's iterations ([`Record::measured_threads`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRecord {
    /// The group's name in the scenario.
    pub threads: String,
    pub cpu_list: String,
    pub measured_iterations: u64,
    pub cycles_per_iteration_mean: f64,
    pub throughput_iterations_per_second: f64,
}

/// Traffic counts of a field or a line, over the measured window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficRecord {
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub hitm: u64,
    pub invalidations: u64,
    pub cross_socket_misses: u64,
    pub stall_cycles: u64,
    /// Adjacent-line prefetches (buddy-line reads no CPU waited for): a
    /// field's are those its misses issued, a line's those that read it.
    #[serde(default)]
    pub prefetches: u64,
    /// Those of them served from a Modified or Owned copy in another core.
    #[serde(default)]
    pub prefetch_hitm: u64,
    /// HITM served from a core on another NUMA node (the rest of `hitm`
    /// is local); 0 in files written before it was recorded.
    #[serde(default)]
    pub hitm_remote: u64,
    /// Cycles CPUs spent polling (spin-waits, apart from stalls), and the
    /// part of `stall_cycles` requests spent queued at the line's home
    /// behind others; 0 in files written before.
    #[serde(default)]
    pub spin_cycles: u64,
    #[serde(default)]
    pub queue_wait_cycles: u64,
}

impl From<&Traffic> for TrafficRecord {
    fn from(t: &Traffic) -> Self {
        TrafficRecord {
            loads: t.loads,
            stores: t.stores,
            atomics: t.atomics,
            accesses: t.accesses(),
            hits: t.hits,
            misses: t.misses,
            hitm: t.hitm,
            invalidations: t.invalidations,
            cross_socket_misses: t.cross_socket,
            stall_cycles: t.stall_cycles,
            prefetches: t.prefetches,
            prefetch_hitm: t.prefetch_hitm,
            hitm_remote: t.hitm_remote,
            spin_cycles: t.spin_cycles,
            queue_wait_cycles: t.queue_wait_cycles,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRecord {
    /// `instance.field`.
    pub field: String,
    /// The instance's struct, and the field's offset and size in it (all
    /// array elements), for drawing the struct's lines.
    #[serde(rename = "struct")]
    pub struct_name: String,
    pub offset_bytes: u32,
    pub size_bytes: u32,
    /// The whole struct's size, tail padding included (`sizeof`); 0 in
    /// files written before it was recorded.
    #[serde(default)]
    pub struct_size_bytes: u32,
    /// The lines (coherence units) the field occupies, over all its elements.
    pub lines: Vec<usize>,
    pub traffic: TrafficRecord,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineRecord {
    /// Index of the coherence unit.
    pub line: usize,
    /// Byte address of the line in simulated memory.
    pub address: u64,
    pub home_node: u32,
    /// Fields on the line, as `inst[e].field`.
    pub fields: Vec<String>,
    pub traffic: TrafficRecord,
    /// Per byte offset of the line that was accessed, ascending: what the
    /// accesses there did (`perf c2c`'s per-offset rows); empty in files
    /// written before it was recorded.
    #[serde(default)]
    pub offsets: Vec<OffsetRecord>,
    /// The CPUs that made measured accesses to the line, as a Linux
    /// cpulist (`0-3,8`), and their NUMA nodes, ascending.
    #[serde(default)]
    pub cpus: String,
    #[serde(default)]
    pub nodes: Vec<u32>,
}

/// The accesses at one byte offset of a line, over the measured window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffsetRecord {
    pub offset_bytes: u32,
    /// The field there, as `inst[e].field` (`?` where the line's fields do
    /// not cover the offset).
    pub field: String,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    /// HITM of accesses at this offset served from a core on the
    /// requester's NUMA node, and from one on another node.
    pub hitm_local: u64,
    pub hitm_remote: u64,
}

/// `shard.json`: which part of which sweep a directory holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardManifest {
    pub schema_version: u32,
    pub scenario_sha256: String,
    pub tool_version: String,
    pub shard_index: usize,
    pub shard_count: usize,
    pub case_count: usize,
    pub cases: Vec<ShardCase>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardCase {
    pub index: usize,
    pub id: String,
}

/// SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// An axis value as JSON.
pub fn axis_json(value: &AxisValue) -> Value {
    match value {
        AxisValue::Integer(n) => Value::from(*n),
        AxisValue::Float(x) => serde_json::Number::from_f64(*x)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(x.to_string())),
        AxisValue::Boolean(b) => Value::Bool(*b),
        AxisValue::String(s) | AxisValue::Other(s) => Value::String(s.clone()),
    }
}

/// The header of the results of `loaded` (everything but the records).
pub fn header(loaded: &LoadedScenario, tool_version: &str) -> ResultsFile {
    let axis_names: Vec<String> = loaded
        .sweep
        .as_ref()
        .map(|s| s.axes.iter().map(|a| a.name.clone()).collect())
        .unwrap_or_default();
    ResultsFile {
        schema_version: RESULTS_SCHEMA_VERSION,
        tool: "bounce".to_string(),
        tool_version: tool_version.to_string(),
        scenario: ScenarioInfo {
            name: loaded.base.doc.name.clone(),
            sha256: sha256_hex(loaded.source.text.as_bytes()),
            seed: loaded.base.doc.seed,
        },
        axes: loaded
            .sweep
            .as_ref()
            .map(|s| {
                s.axes
                    .iter()
                    .map(|a| AxisInfo {
                        name: a.name.clone(),
                        values: a.values.iter().map(axis_json).collect(),
                        thread_group: a.thread_group.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        variants: match &loaded.sweep {
            Some(s) => s.variants.clone(),
            None => loaded.all().map(|v| v.name.clone()).collect(),
        },
        baselines: Some(
            loaded
                .cases
                .first()
                .map(|case| {
                    let run: Vec<&crate::format::Variant> = case.variants.iter().collect();
                    crate::format::document::baselines(&run)
                        .into_iter()
                        .zip(&run)
                        .filter_map(|(b, v)| b.map(|i| (v.name.clone(), run[i].name.clone())))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        placement: loaded.sweep.as_ref().and_then(|s| s.placement.clone()),
        cases: loaded
            .cases
            .iter()
            .map(|c| CaseInfo {
                index: c.index,
                id: c.id.clone(),
                seed: c.seed,
                axes: axes_map(&axis_names, &c.values),
            })
            .collect(),
        records: Vec::new(),
        measured: Vec::new(),
    }
}

fn axes_map(names: &[String], values: &[AxisValue]) -> IndexMap<String, Value> {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| (n.clone(), axis_json(v)))
        .collect()
}

/// The records of cases that all ran (a failed run has no record: callers
/// write no files when a run failed), each with its content hash.
pub fn records(header: &ResultsFile, built: &[BuiltCase], results: &[CaseResult]) -> Vec<Record> {
    let axis_names: Vec<String> = header.axes.iter().map(|a| a.name.clone()).collect();
    let mut out = Vec::new();
    for (case, result) in built.iter().zip(results) {
        for (variant, r) in case.variants.iter().zip(&result.results) {
            if let Ok(r) = r {
                let mut record = record(header, &axis_names, case, variant, r);
                if let Some(info) = header.cases.get(case.index) {
                    record.content_sha256 = record_hash(&header.scenario.sha256, info, &record);
                }
                out.push(record);
            }
        }
    }
    out
}

/// The content hash of `record`: SHA-256, in hex, of the compact JSON of
/// the scenario's hash, the record's case as the results list it (index,
/// id, seed, axis values) and the record without its own hash. JSON numbers
/// read back as written (shortest round-trip floats), so the hash of a
/// record read from `results.json` is the one computed when it was written.
pub fn record_hash(scenario_sha256: &str, case: &CaseInfo, record: &Record) -> String {
    #[derive(Serialize)]
    struct Hashed<'a> {
        scenario_sha256: &'a str,
        case: &'a CaseInfo,
        record: &'a Record,
    }
    let mut without = record.clone();
    without.content_sha256.clear();
    let text = serde_json::to_string(&Hashed {
        scenario_sha256,
        case,
        record: &without,
    })
    .expect("records serialize");
    sha256_hex(text.as_bytes())
}

/// Checks every record of a shard against its content hash and its case.
fn verify_records(shard: &ShardInput) -> Result<(), String> {
    let results = &shard.results;
    let dir = shard.dir.display();
    for r in &results.records {
        let what = format!("case `{}`, variant `{}`", r.case_id, r.variant);
        let Some(case) = results.cases.get(r.case_index) else {
            return Err(format!(
                "`{dir}/{RESULTS_JSON}`: the record of {what} names case {} of {}",
                r.case_index,
                results.cases.len()
            ));
        };
        if r.content_sha256.is_empty() {
            return Err(format!(
                "`{dir}/{RESULTS_JSON}`: the record of {what} has no content hash (written by \
                 a bounce before {}), so it cannot be verified; run the shard again",
                env!("CARGO_PKG_VERSION")
            ));
        }
        if r.case_id != case.id
            || r.scenario_sha256 != results.scenario.sha256
            || record_hash(&results.scenario.sha256, case, r) != r.content_sha256
        {
            return Err(format!(
                "`{dir}/{RESULTS_JSON}`: the record of {what} does not match its content hash: \
                 it was changed after bounce wrote it (a value, the seed, the case or the \
                 scenario), or the file is damaged; run the shard again"
            ));
        }
    }
    Ok(())
}

fn record(
    header: &ResultsFile,
    axis_names: &[String],
    case: &BuiltCase,
    built: &BuiltVariant,
    r: &VariantResult,
) -> Record {
    let topology = &built.config.topology;
    let distinct = |f: &dyn Fn(LinuxCpu) -> u32| {
        let mut v: Vec<u32> = r.cpus.iter().map(|&c| f(c)).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u32
    };
    let mut sorted_cpus = r.cpus.clone();
    sorted_cpus.sort_unstable();
    Record {
        case_index: case.index,
        case_id: case.id.clone(),
        variant: r.name.clone(),
        axes: axes_map(axis_names, &case.values),
        machine: r.machine.clone(),
        clock_mhz: r.clock_mhz,
        machine_sockets: topology.spec.sockets,
        machine_nodes: topology.node_count(),
        machine_l3_domains: topology.l3_count(),
        machine_cores: topology.core_count(),
        machine_cpus: topology.cpu_count(),
        cpus: r.cpus.len() as u32,
        cpu_list: format_cpulist(&sorted_cpus),
        sockets_used: distinct(&|c| topology.socket_of(c)),
        nodes_used: distinct(&|c| topology.node_of(c)),
        l3_domains_used: distinct(&|c| topology.l3_of(c)),
        seed: built.config.seed,
        scenario_sha256: header.scenario.sha256.clone(),
        tool_version: header.tool_version.clone(),
        measured_iterations: r.measured_iterations(),
        elapsed_cycles: r.outcome.elapsed_cycles,
        events: r.outcome.events,
        memory_ops: r.outcome.memory_ops,
        throughput_iterations_per_second: r.throughput_total(),
        throughput_per_cpu_iterations_per_second: r.throughput_per_cpu(),
        cycles_per_iteration_mean: r.iteration_cycles.mean(),
        cycles_per_iteration_p50: r.iteration_cycles.quantile(500),
        cycles_per_iteration_p99: r.iteration_cycles.quantile(990),
        ns_per_iteration_mean: r.cycles_to_ns(r.iteration_cycles.mean()),
        misses_per_iteration: r.per_iteration(r.total.misses),
        hitm_per_iteration: r.per_iteration(r.total.hitm),
        invalidations_per_iteration: r.per_iteration(r.total.invalidations),
        cross_socket_misses_per_iteration: r.per_iteration(r.total.cross_socket),
        stall_cycles_per_iteration: r.per_iteration(r.total.stall_cycles),
        store_buffer_stall_cycles: r.store_buffer_stall_cycles,
        spin_cycles_per_iteration: r.per_iteration(r.total.spin_cycles),
        queue_wait_cycles_per_iteration: r.per_iteration(r.total.queue_wait_cycles),
        measured_threads: r.measured_threads.as_ref().map(|g| {
            let mut cpus = g.cpus.clone();
            cpus.sort_unstable();
            GroupRecord {
                threads: g.threads.clone(),
                cpu_list: format_cpulist(&cpus),
                measured_iterations: g.iterations,
                cycles_per_iteration_mean: g.cycles_per_iteration_mean(),
                throughput_iterations_per_second: r.group_throughput(g),
            }
        }),
        fields: field_records(built, r),
        lines: line_records(topology, r),
        content_sha256: String::new(),
    }
}

/// The record's fields: every field the program names, but those of
/// instances that no running code names (a library module's the variant
/// never calls), or that no CPU accessed in the run (a slow path never
/// taken), which would be rows of zeros that draw empty charts.
fn field_records(built: &BuiltVariant, r: &VariantResult) -> Vec<FieldRecord> {
    let named = crate::build::instances_named_by_running_code(&built.config);
    let accessed = crate::run::results::instances_accessed(&built.config, &r.fields);
    r.fields
        .iter()
        .zip(&built.config.program.field_names)
        .filter(|(_, &(inst, _))| {
            let i = inst as usize;
            named.get(i).copied().unwrap_or(true) && accessed.get(i).copied().unwrap_or(true)
        })
        .map(|(f, &(inst, field))| {
            let memory = &built.config.memory;
            let s = &memory.structs[memory.instances[inst as usize].struct_index];
            let def = &s.fields[field as usize];
            FieldRecord {
                field: f.name.clone(),
                struct_name: s.name.clone(),
                offset_bytes: def.offset_bytes,
                size_bytes: def.total_bytes(),
                struct_size_bytes: s.size_bytes,
                lines: f.units.clone(),
                traffic: (&f.traffic).into(),
            }
        })
        .collect()
}

/// The record's lines, each with its offsets and the CPUs and nodes that
/// touched it.
fn line_records(topology: &Topology, r: &VariantResult) -> Vec<LineRecord> {
    r.lines
        .iter()
        .map(|l| {
            let cpus = l.detail.cpu_list();
            let mut nodes: Vec<u32> = cpus.iter().map(|&c| topology.node_of(c)).collect();
            nodes.sort_unstable();
            nodes.dedup();
            LineRecord {
                line: l.unit,
                address: l.address,
                home_node: l.home_node,
                fields: l.fields.clone(),
                traffic: (&l.traffic).into(),
                offsets: l
                    .detail
                    .offsets
                    .iter()
                    .map(|o| OffsetRecord {
                        offset_bytes: o.offset_bytes,
                        field: l.field_at(o.offset_bytes),
                        loads: o.loads,
                        stores: o.stores,
                        atomics: o.atomics,
                        hitm_local: o.hitm_local,
                        hitm_remote: o.hitm_remote,
                    })
                    .collect(),
                cpus: format_cpulist(&cpus),
                nodes,
            }
        })
        .collect()
}

/// A CSV table (a heading row, then `rows`) written by the `csv` crate:
/// fields quoted only where they must be, `\n` line ends.
pub fn csv_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut records: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    records.extend(rows.iter().cloned());
    csv_records(&records)
}

/// Records written by the `csv` crate, as [`csv_table`] writes them; the
/// first is the heading.
pub fn csv_records(records: &[Vec<String>]) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .flexible(true)
        .from_writer(Vec::new());
    // Writing into memory cannot fail.
    for record in records {
        let _ = w.write_record(record);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// A JSON value as a CSV cell: strings bare, the rest as JSON.
fn value_cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Columns of `results.csv` after the axis columns.
pub const RESULTS_COLUMNS: &[&str] = &[
    "machine",
    "clock_mhz",
    "machine_sockets",
    "machine_nodes",
    "machine_l3_domains",
    "machine_cores",
    "machine_cpus",
    "cpus",
    "cpu_list",
    "sockets_used",
    "nodes_used",
    "l3_domains_used",
    "seed",
    "scenario_sha256",
    "tool_version",
    "measured_iterations",
    "elapsed_cycles",
    "events",
    "memory_ops",
    "throughput_iterations_per_second",
    "throughput_per_cpu_iterations_per_second",
    "cycles_per_iteration_mean",
    "cycles_per_iteration_p50",
    "cycles_per_iteration_p99",
    "ns_per_iteration_mean",
    "misses_per_iteration",
    "hitm_per_iteration",
    "invalidations_per_iteration",
    "cross_socket_misses_per_iteration",
    "stall_cycles_per_iteration",
    "store_buffer_stall_cycles",
    "spin_cycles_per_iteration",
    "queue_wait_cycles_per_iteration",
    "measured_threads",
    "measured_threads_cpu_list",
    "measured_threads_iterations",
    "measured_threads_cycles_per_iteration_mean",
    "measured_threads_throughput_iterations_per_second",
];

/// `results.csv`: `case_index, case_id, variant`, one `axis.NAME` column per
/// axis, then [`RESULTS_COLUMNS`].
pub fn results_csv(file: &ResultsFile) -> String {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut head: Vec<String> = vec!["case_index".into(), "case_id".into(), "variant".into()];
    head.extend(file.axes.iter().map(|a| format!("axis.{}", a.name)));
    head.extend(RESULTS_COLUMNS.iter().map(|c| c.to_string()));
    out.push(head);
    for r in &file.records {
        let mut row: Vec<String> = vec![
            r.case_index.to_string(),
            r.case_id.clone(),
            r.variant.clone(),
        ];
        row.extend(
            file.axes
                .iter()
                .map(|a| r.axes.get(&a.name).map(value_cell).unwrap_or_default()),
        );
        row.extend([
            r.machine.clone(),
            r.clock_mhz.to_string(),
            r.machine_sockets.to_string(),
            r.machine_nodes.to_string(),
            r.machine_l3_domains.to_string(),
            r.machine_cores.to_string(),
            r.machine_cpus.to_string(),
            r.cpus.to_string(),
            r.cpu_list.clone(),
            r.sockets_used.to_string(),
            r.nodes_used.to_string(),
            r.l3_domains_used.to_string(),
            r.seed.to_string(),
            r.scenario_sha256.clone(),
            r.tool_version.clone(),
            r.measured_iterations.to_string(),
            r.elapsed_cycles.to_string(),
            r.events.to_string(),
            r.memory_ops.to_string(),
            r.throughput_iterations_per_second.to_string(),
            r.throughput_per_cpu_iterations_per_second.to_string(),
            r.cycles_per_iteration_mean.to_string(),
            r.cycles_per_iteration_p50.to_string(),
            r.cycles_per_iteration_p99.to_string(),
            r.ns_per_iteration_mean.to_string(),
            r.misses_per_iteration.to_string(),
            r.hitm_per_iteration.to_string(),
            r.invalidations_per_iteration.to_string(),
            r.cross_socket_misses_per_iteration.to_string(),
            r.stall_cycles_per_iteration.to_string(),
            r.store_buffer_stall_cycles.to_string(),
            r.spin_cycles_per_iteration.to_string(),
            r.queue_wait_cycles_per_iteration.to_string(),
        ]);
        // The measured thread group's figures (`measured_threads`), empty
        // when the scenario's [[measured]] rows name none.
        match &r.measured_threads {
            Some(g) => row.extend([
                g.threads.clone(),
                g.cpu_list.clone(),
                g.measured_iterations.to_string(),
                g.cycles_per_iteration_mean.to_string(),
                g.throughput_iterations_per_second.to_string(),
            ]),
            None => row.extend(std::iter::repeat_n(String::new(), 5)),
        }
        out.push(row);
    }
    csv_records(&out)
}

/// Columns of `fields.csv`.
pub const FIELDS_COLUMNS: &[&str] = &[
    "case_index",
    "case_id",
    "variant",
    "kind",
    "field",
    "struct",
    "offset_bytes",
    "size_bytes",
    "line",
    "address",
    "home_node",
    "fields_on_line",
    "loads",
    "stores",
    "atomics",
    "accesses",
    "hits",
    "misses",
    "hitm",
    "invalidations",
    "cross_socket_misses",
    "stall_cycles",
    "prefetches",
    "prefetch_hitm",
    "hitm_remote",
    "spin_cycles",
    "queue_wait_cycles",
];

fn traffic_cells(t: &TrafficRecord) -> [String; 15] {
    [
        t.loads.to_string(),
        t.stores.to_string(),
        t.atomics.to_string(),
        t.accesses.to_string(),
        t.hits.to_string(),
        t.misses.to_string(),
        t.hitm.to_string(),
        t.invalidations.to_string(),
        t.cross_socket_misses.to_string(),
        t.stall_cycles.to_string(),
        t.prefetches.to_string(),
        t.prefetch_hitm.to_string(),
        t.hitm_remote.to_string(),
        t.spin_cycles.to_string(),
        t.queue_wait_cycles.to_string(),
    ]
}

/// `fields.csv`: per record, a row per field (`kind` = `field`, `line` the
/// lines it occupies, space-separated) then a row per line with traffic
/// (`kind` = `line`).
pub fn fields_csv(file: &ResultsFile) -> String {
    let mut out: Vec<Vec<String>> = Vec::new();
    let head: Vec<String> = FIELDS_COLUMNS.iter().map(|c| c.to_string()).collect();
    out.push(head);
    for r in &file.records {
        let ids = [
            r.case_index.to_string(),
            r.case_id.clone(),
            r.variant.clone(),
        ];
        for f in &r.fields {
            let mut row: Vec<String> = ids.to_vec();
            let lines: Vec<String> = f.lines.iter().map(|l| l.to_string()).collect();
            row.extend([
                "field".to_string(),
                f.field.clone(),
                f.struct_name.clone(),
                f.offset_bytes.to_string(),
                f.size_bytes.to_string(),
                lines.join(" "),
                String::new(),
                String::new(),
                String::new(),
            ]);
            row.extend(traffic_cells(&f.traffic));
            out.push(row);
        }
        for l in &r.lines {
            let mut row: Vec<String> = ids.to_vec();
            row.extend([
                "line".to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                l.line.to_string(),
                l.address.to_string(),
                l.home_node.to_string(),
                l.fields.join(" "),
            ]);
            row.extend(traffic_cells(&l.traffic));
            out.push(row);
        }
    }
    csv_records(&out)
}

/// `results.json`, pretty-printed, with a final newline.
pub fn results_json(file: &ResultsFile) -> String {
    let mut s = serde_json::to_string_pretty(file).expect("results serialize");
    s.push('\n');
    s
}

/// The manifest of shard `shard_index` of `shard_count`, holding `records`' cases.
pub fn manifest(file: &ResultsFile, shard_index: usize, shard_count: usize) -> ShardManifest {
    let mut cases: Vec<ShardCase> = Vec::new();
    for c in &file.cases {
        if in_shard(c.index, shard_index, shard_count) {
            cases.push(ShardCase {
                index: c.index,
                id: c.id.clone(),
            });
        }
    }
    ShardManifest {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario_sha256: file.scenario.sha256.clone(),
        tool_version: file.tool_version.clone(),
        shard_index,
        shard_count,
        case_count: file.cases.len(),
        cases,
    }
}

/// Writes `files` into `dir` (created if missing; a name may hold folders,
/// `cases/a/c2c.svg`, created too): each to a temporary name beside its
/// final one first, then all renamed into place. If any write fails, the
/// temporary files are removed and no final name is touched.
pub fn write_atomically(dir: &Path, files: &[(&str, String)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let pid = std::process::id();
    let mut temps: Vec<(PathBuf, PathBuf)> = Vec::new();
    let written = (|| {
        for (name, contents) in files {
            let path = dir.join(name);
            let folder = path.parent().unwrap_or(dir);
            std::fs::create_dir_all(folder)?;
            let base = path
                .file_name()
                .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
            let tmp = folder.join(format!(".{base}.{pid}.partial"));
            temps.push((tmp.clone(), path.clone()));
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(contents.as_bytes())?;
            f.sync_all()?;
        }
        Ok(())
    })();
    let result = written.and_then(|()| {
        for (tmp, path) in &temps {
            std::fs::rename(tmp, path)?;
        }
        Ok(())
    });
    if result.is_err() {
        for (tmp, _) in &temps {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
}

/// Writes the results files into `dir`, and the manifest when this is a shard.
/// Without a manifest, a `shard.json` left in `dir` by an earlier run is
/// removed first, so the directory is never taken for a shard it is not.
pub fn write_results(
    dir: &Path,
    file: &ResultsFile,
    shard: Option<&ShardManifest>,
) -> std::io::Result<()> {
    let mut files = vec![
        (RESULTS_CSV, results_csv(file)),
        (FIELDS_CSV, fields_csv(file)),
        (RESULTS_JSON, results_json(file)),
    ];
    match shard {
        // Last, so that a directory with a manifest holds the whole part.
        Some(m) => {
            let mut json = serde_json::to_string_pretty(m).expect("manifest serializes");
            json.push('\n');
            files.push((SHARD_MANIFEST, json));
        }
        None => {
            let stale = dir.join(SHARD_MANIFEST);
            if stale.exists() {
                std::fs::remove_file(stale)?;
            }
        }
    }
    write_atomically(dir, &files)
}

/// One shard's output, read back.
#[derive(Clone, Debug)]
pub struct ShardInput {
    pub dir: PathBuf,
    pub manifest: ShardManifest,
    pub results: ResultsFile,
}

/// Reads `dir/shard.json` and `dir/results.json`, each at most
/// `limit_bytes` (whatever the paths name: a link to an endless file is
/// refused, not read to the end).
pub fn read_shard(dir: &Path, limit_bytes: u64) -> Result<ShardInput, String> {
    let shown = dir.display();
    if !dir.exists() {
        return Err(format!(
            "`{shown}` holds no shard: there is no such directory (a shard is written by `bounce run FILE --shard I/N --out DIR`, and only when all its runs succeed)"
        ));
    }
    let read = |path: &Path| -> Result<String, std::io::Error> {
        match read_bounded_text(path, limit_bytes) {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it is not UTF-8 text",
            )),
            Err(ReadError::Io(e)) => Err(e),
            Err(e @ ReadError::TooLarge { .. }) => Err(std::io::Error::other(format!(
                "{e} (raise it with `--set-limit data_file_bytes=N`)"
            ))),
        }
    };
    let manifest_path = dir.join(SHARD_MANIFEST);
    let text = read(&manifest_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "`{shown}` holds no shard: `{SHARD_MANIFEST}` is missing (a shard is written by `bounce run FILE --shard I/N --out DIR`, and only when all its runs succeed)"
            )
        } else {
            format!("cannot read `{}`: {e}", manifest_path.display())
        }
    })?;
    let manifest: ShardManifest = serde_json::from_str(&text)
        .map_err(|e| format!("`{}` is not a shard manifest: {e}", manifest_path.display()))?;
    if manifest.schema_version != RESULTS_SCHEMA_VERSION {
        return Err(format!(
            "`{}` has schema_version {}; this bounce reads {RESULTS_SCHEMA_VERSION}",
            manifest_path.display(),
            manifest.schema_version
        ));
    }
    let results_path = dir.join(RESULTS_JSON);
    let text = read(&results_path)
        .map_err(|e| format!("cannot read `{}`: {e}", results_path.display()))?;
    let results: ResultsFile = serde_json::from_str(&text)
        .map_err(|e| format!("`{}` is not a results file: {e}", results_path.display()))?;
    if results.schema_version != RESULTS_SCHEMA_VERSION {
        return Err(format!(
            "`{}` has schema_version {}; this bounce reads {RESULTS_SCHEMA_VERSION}",
            results_path.display(),
            results.schema_version
        ));
    }
    Ok(ShardInput {
        dir: dir.to_path_buf(),
        manifest,
        results,
    })
}

fn list_ids(ids: &[&str], limit: usize) -> String {
    let mut out: Vec<String> = ids.iter().take(limit).map(|i| format!("`{i}`")).collect();
    if ids.len() > limit {
        out.push(format!("and {} more", ids.len() - limit));
    }
    out.join(", ")
}

/// Shard indices as a Slurm `--array` list: ascending, runs of consecutive
/// indices as ranges (`0-3,5,7`).
pub fn array_task_ids(indices: &[usize]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Reads every shard directory in `dirs` and merges them, as [`merge`]
/// does. A directory that holds no shard (a task that failed, was killed or
/// never ran) does not stop the others being read: the error names every
/// such directory, then the shards missing from the split and their cases,
/// so that all of them can be run again at once. Returns the merged file
/// and the number of shards joined.
pub fn merge_dirs(dirs: &[PathBuf], limit_bytes: u64) -> Result<(ResultsFile, usize), String> {
    let mut shards = Vec::with_capacity(dirs.len());
    let mut unreadable = Vec::new();
    for dir in dirs {
        match read_shard(dir, limit_bytes) {
            Ok(s) => shards.push(s),
            Err(e) => unreadable.push(e),
        }
    }
    if shards.is_empty() && !unreadable.is_empty() {
        unreadable.push(format!(
            "none of the {} director(ies) given holds a shard: run every shard again",
            dirs.len()
        ));
        return Err(unreadable.join("\n"));
    }
    let merged = merge_with(&shards, &unreadable)?;
    Ok((merged, shards.len()))
}

/// Merges shards into the results an unsharded run writes. Every shard must
/// come from the same scenario (by hash), tool version and shard count, and
/// every case must be in exactly one shard; the error names what differs, or
/// the shards and cases missing (with the shard indices to run again, as
/// Slurm array task IDs) or duplicated.
pub fn merge(shards: &[ShardInput]) -> Result<ResultsFile, String> {
    merge_with(shards, &[])
}

/// [`merge`], given also the problems of the directories that held no
/// shard; any of them fails the merge, listed before what is missing.
fn merge_with(shards: &[ShardInput], unreadable: &[String]) -> Result<ResultsFile, String> {
    let Some(first) = shards.first() else {
        return Err("no shard directories given".into());
    };
    let header = shard_header(&first.results);
    for s in shards {
        check_shard(first, &header, s)?;
    }
    let problems = coverage_problems(shards, &header, unreadable);
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }

    let mut records: Vec<Record> = shards
        .iter()
        .flat_map(|s| s.results.records.iter().cloned())
        .collect();
    let variant_pos = |v: &str| header.variants.iter().position(|x| x == v);
    records.sort_by_key(|r| (r.case_index, variant_pos(&r.variant)));
    let mut merged = header;
    merged.records = records;
    merged.measured = shards
        .iter()
        .flat_map(|s| s.results.measured.iter().cloned())
        .collect();
    Ok(merged)
}

/// A shard's results without its records: what every shard of one run
/// shares.
fn shard_header(r: &ResultsFile) -> ResultsFile {
    let mut h = r.clone();
    h.records.clear();
    // Only the shard that ran the (single) case has the comparisons.
    h.measured.clear();
    h
}

/// Shard `s` comes from the same scenario, split and version as `first`,
/// describes the same sweep (`header`), and holds exactly the runs its
/// manifest lists, each record intact.
fn check_shard(first: &ShardInput, header: &ResultsFile, s: &ShardInput) -> Result<(), String> {
    let m0 = &first.manifest;
    let m = &s.manifest;
    let dir = s.dir.display();
    if m.scenario_sha256 != m0.scenario_sha256 {
        return Err(format!(
            "the shards come from different scenario files: `{}` has sha256 {}, `{dir}` has {}",
            first.dir.display(),
            m0.scenario_sha256,
            m.scenario_sha256
        ));
    }
    if m.shard_count != m0.shard_count {
        return Err(format!(
            "the shards come from different splits: `{}` is shard {}/{}, `{dir}` is shard {}/{}",
            first.dir.display(),
            m0.shard_index,
            m0.shard_count,
            m.shard_index,
            m.shard_count
        ));
    }
    if m.tool_version != m0.tool_version {
        return Err(format!(
            "the shards come from different versions of bounce: `{}` from {}, `{dir}` from {}",
            first.dir.display(),
            m0.tool_version,
            m.tool_version
        ));
    }
    if shard_header(&s.results) != *header || m.case_count != header.cases.len() {
        return Err(format!(
            "`{dir}/{RESULTS_JSON}` describes another sweep than `{}/{RESULTS_JSON}`",
            first.dir.display()
        ));
    }
    if m.scenario_sha256 != s.results.scenario.sha256 {
        return Err(format!(
            "`{dir}`: `{SHARD_MANIFEST}` and `{RESULTS_JSON}` name different scenarios"
        ));
    }
    verify_records(s)?;
    // The records must be exactly the manifest's cases, each with every variant.
    let expected: Vec<(usize, &str)> = m
        .cases
        .iter()
        .flat_map(|c| header.variants.iter().map(move |v| (c.index, v.as_str())))
        .collect();
    let got: Vec<(usize, &str)> = s
        .results
        .records
        .iter()
        .map(|r| (r.case_index, r.variant.as_str()))
        .collect();
    if expected != got {
        return Err(format!(
            "`{dir}`: `{RESULTS_JSON}` does not hold the runs `{SHARD_MANIFEST}` lists"
        ));
    }
    Ok(())
}

/// What keeps the shards from covering every case exactly once: the
/// unreadable directories, the shards missing (with the indices to run
/// again), the cases in no shard and those in several; empty when none.
fn coverage_problems(
    shards: &[ShardInput],
    header: &ResultsFile,
    unreadable: &[String],
) -> Vec<String> {
    let shard_count = shards.first().map_or(0, |s| s.manifest.shard_count);
    let mut holders: BTreeMap<usize, Vec<&Path>> = BTreeMap::new();
    for s in shards {
        for c in &s.manifest.cases {
            holders.entry(c.index).or_default().push(&s.dir);
        }
    }
    let id_of = |i: usize| header.cases.get(i).map_or("?", |c| c.id.as_str());
    let missing: Vec<&str> = (0..header.cases.len())
        .filter(|i| !holders.contains_key(i))
        .map(id_of)
        .collect();
    let duplicated: Vec<(usize, &Vec<&Path>)> = holders
        .iter()
        .filter(|(_, d)| d.len() > 1)
        .map(|(i, d)| (*i, d))
        .collect();
    if unreadable.is_empty() && missing.is_empty() && duplicated.is_empty() {
        return Vec::new();
    }
    let mut problems: Vec<String> = unreadable.to_vec();
    let mut seen: Vec<usize> = shards.iter().map(|s| s.manifest.shard_index).collect();
    seen.sort_unstable();
    seen.dedup();
    let absent: Vec<usize> = (0..shard_count).filter(|i| !seen.contains(i)).collect();
    if !absent.is_empty() {
        let named: Vec<String> = absent
            .iter()
            .map(|i| format!("{i}/{shard_count}"))
            .collect();
        problems.push(format!(
            "{} of {} shard(s) missing: {}; run them again (as Slurm array task IDs: --array={})",
            absent.len(),
            shard_count,
            named.join(", "),
            array_task_ids(&absent)
        ));
    }
    if !missing.is_empty() {
        problems.push(format!(
            "{} case(s) are in no shard: {}",
            missing.len(),
            list_ids(&missing, 20),
        ));
    }
    for (i, dirs) in duplicated.iter().take(20) {
        let dirs: Vec<String> = dirs.iter().map(|d| format!("`{}`", d.display())).collect();
        problems.push(format!(
            "case `{}` is in more than one shard: {}",
            id_of(*i),
            dirs.join(", ")
        ));
    }
    if duplicated.len() > 20 {
        problems.push(format!(
            "and {} more cases in more than one shard",
            duplicated.len() - 20
        ));
    }
    problems
}
