//! Running built variants (in parallel across variants, never inside one)
//! and the result records they produce.

use std::sync::Arc;

use crate::build::{
    instances_named_by_running_code, instances_no_running_code_names, BuiltVariant, ScriptSources,
};
use crate::format::error::{Place, Report};
use rayon::prelude::*;
use sim_core::cpu::LinuxCpu;
use sim_core::engine::{run, RunOutcome, SimConfig};
use sim_core::script::ast::SourcePos;
use sim_core::stats::{FieldCost, Histogram, LineDetail, Stats, Traffic};
use sim_core::SimError;

/// Traffic of one field of one instance, over all its elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldResult {
    /// `instance.field`.
    pub name: String,
    /// Coherence units the field occupies, over all elements.
    pub units: Vec<usize>,
    pub traffic: Traffic,
}

/// Traffic of one line (coherence unit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineResult {
    pub unit: usize,
    pub address: u64,
    pub home_node: u32,
    /// Fields on the line, as `inst[e].field`.
    pub fields: Vec<String>,
    /// Each field's byte ranges (absolute addresses, end exclusive), in
    /// the order of `fields`.
    pub field_ranges: Vec<Vec<(u64, u64)>>,
    pub traffic: Traffic,
    /// Accesses per offset in the line and the CPUs that made them.
    pub detail: LineDetail,
}

impl LineResult {
    /// The name of the field at `offset_bytes` of the line
    /// (`inst[e].field`), or `?` when the line's fields do not say.
    pub fn field_at(&self, offset_bytes: u32) -> String {
        let address = self.address + offset_bytes as u64;
        self.fields
            .iter()
            .zip(&self.field_ranges)
            .find(|(_, ranges)| {
                ranges
                    .iter()
                    .any(|&(from, to)| from <= address && address < to)
            })
            .map_or_else(|| "?".to_string(), |(name, _)| name.clone())
    }
}

/// What one CPU did, for fairness: how many iterations (lock acquisitions,
/// in a lock scenario) it completed and how long its longest one took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuShare {
    pub cpu: LinuxCpu,
    pub node: u32,
    pub iterations: u64,
    pub longest_iteration_cycles: u64,
    /// Cycles of its measured iterations added up.
    pub iteration_cycles_total: u64,
    /// What it spent in accesses to each field, by field id (as
    /// [`VariantResult::fields`]); empty unless a `[[measured]]` row needs
    /// it ([`BuiltVariant::counts_field_costs_per_cpu`]).
    pub field_costs: Vec<FieldCost>,
}

/// The iterations of the thread group the scenario's `[[measured]]` rows
/// measure ([`BuiltVariant::measured_threads`]): the comparison's figures
/// over the population the scenario compares with a machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupIterations {
    /// The thread group's name.
    pub threads: String,
    /// Its CPUs.
    pub cpus: Vec<LinuxCpu>,
    pub iterations: u64,
    /// Cycles of its measured iterations added up.
    pub iteration_cycles_total: u64,
}

impl GroupIterations {
    /// Mean cycles of one of its iterations (0 without one).
    pub fn cycles_per_iteration_mean(&self) -> f64 {
        if self.iterations == 0 {
            0.0
        } else {
            self.iteration_cycles_total as f64 / self.iterations as f64
        }
    }
}

/// Everything measured for one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantResult {
    pub name: String,
    pub description: Option<String>,
    /// The variant of the same case its changes are computed against
    /// ([`BuiltVariant::baseline`]).
    pub baseline: Option<String>,
    pub machine: String,
    pub clock_mhz: u64,
    pub cpus: Vec<LinuxCpu>,
    pub outcome: RunOutcome,
    pub iteration_cycles: Histogram,
    pub total: Traffic,
    pub store_buffer_stall_cycles: u64,
    pub fields: Vec<FieldResult>,
    pub lines: Vec<LineResult>,
    /// One per CPU that ran a script, in CPU order.
    pub per_cpu: Vec<CpuShare>,
    /// Instances that no code of the run names (a library module's that
    /// the variant never calls, [`instances_no_running_code_names`]): in
    /// `fields` with no traffic, left out of the results files and charts,
    /// and named once in the text report.
    pub unnamed_instances: Vec<String>,
    /// Instances that running code names but that no CPU accessed in the
    /// measured window (a lock's slow-path queue nodes when the lock was
    /// never contended; the counts start after the warm-up): left out of the results files and charts as the unnamed
    /// ones are, and named once in the text report with the reason.
    pub unaccessed_instances: Vec<String>,
    /// The thread group the scenario's `[[measured]]` rows measure, when
    /// they name one ([`GroupIterations`]).
    pub measured_threads: Option<GroupIterations>,
}

impl VariantResult {
    /// Iterations per simulated second of the measured thread group.
    pub fn group_throughput(&self, group: &GroupIterations) -> f64 {
        let s = self.elapsed_seconds();
        if s == 0.0 {
            0.0
        } else {
            group.iterations as f64 / s
        }
    }
    pub fn measured_iterations(&self) -> u64 {
        self.outcome
            .cpus
            .iter()
            .map(|c| c.measured_iterations)
            .sum()
    }
    pub fn elapsed_seconds(&self) -> f64 {
        self.outcome.elapsed_cycles as f64 / (self.clock_mhz as f64 * 1e6)
    }
    /// Iterations per simulated second, all CPUs.
    pub fn throughput_total(&self) -> f64 {
        let s = self.elapsed_seconds();
        if s == 0.0 {
            0.0
        } else {
            self.measured_iterations() as f64 / s
        }
    }
    pub fn throughput_per_cpu(&self) -> f64 {
        if self.cpus.is_empty() {
            0.0
        } else {
            self.throughput_total() / self.cpus.len() as f64
        }
    }
    pub fn per_iteration(&self, count: u64) -> f64 {
        let n = self.measured_iterations();
        if n == 0 {
            0.0
        } else {
            count as f64 / n as f64
        }
    }
    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        cycles * 1000.0 / self.clock_mhz as f64
    }
}

/// A variant that stopped without a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantFailure {
    pub name: String,
    pub error: SimError,
    /// Where the variant's scripts are, for [`VariantFailure::report`].
    pub sources: Arc<ScriptSources>,
}

impl VariantFailure {
    /// The failure as a report that points at the scenario file's lines
    /// (see [`failure_report`]); `run` names the run (`variant `x``, `case
    /// `c`, variant `x``).
    pub fn report(&self, run: &str) -> Report {
        failure_report(run, &self.error, &self.sources)
    }
}

/// A run's error as a report: the title `RUN has no result: ...`, then
/// the places in the scenario file (or a library module) it names, each
/// line quoted: for a script's run-time error, where it failed and the
/// calls it was inside, outermost last (the user's own line); for a run
/// that was truncated or made no progress, where its CPUs were. An error
/// that names no place, or a place `sources` does not know, is the title
/// alone, with the error's own text.
pub fn failure_report(run: &str, error: &SimError, sources: &ScriptSources) -> Report {
    let plain = || Report {
        title: format!("{run} has no result: {error}"),
        places: Vec::new(),
        notes: Vec::new(),
    };
    match error {
        SimError::Script {
            cpu,
            cycle,
            origin,
            pos,
            called_from,
            message,
        } => {
            let Some(at) = sources.place(origin, *pos) else {
                return plain();
            };
            // The calls, innermost first, a run of calls from one place
            // (a recursion) as one place.
            let mut calls: Vec<(Place, usize)> = Vec::new();
            for ((o, p), n) in runs_of(called_from) {
                let Some(place) = sources.place(o, *p) else {
                    return plain();
                };
                calls.push((place, n));
            }
            // The innermost places and the outermost (the user's line),
            // the ones between counted.
            const SHOWN: usize = 4;
            let mut notes = Vec::new();
            if calls.len() > SHOWN {
                let between: usize = calls[SHOWN - 1..calls.len() - 1]
                    .iter()
                    .map(|(_, n)| n)
                    .sum();
                notes.push(format!(
                    "{between} more calls between the last two places shown"
                ));
                calls.drain(SHOWN - 1..calls.len() - 1);
            }
            let mut places = vec![(at, None)];
            places.extend(calls.into_iter().map(|(place, n)| {
                let label = if n == 1 {
                    "called from here".to_string()
                } else {
                    format!("called from here, {n} calls in a row")
                };
                (place, Some(label))
            }));
            if let Some(module) = sources.library_module(origin) {
                notes.push(format!(
                    "`{}` is a procedure of library module `{}`",
                    origin.trim_start_matches("procedures."),
                    module.name
                ));
            }
            Report {
                title: format!(
                    "{run} has no result: script failed on CPU {cpu} at cycle {cycle}: {message}"
                ),
                places,
                notes,
            }
        }
        SimError::Truncated { unfinished, .. } => {
            let cpus: Vec<(LinuxCpu, &str, SourcePos, String)> = unfinished
                .iter()
                .map(|w| {
                    (
                        w.cpu,
                        w.origin.as_str(),
                        w.pos,
                        format!("{} iteration(s) done", w.iterations_done),
                    )
                })
                .collect();
            cpu_places(run, error, &cpus, "unfinished", sources).unwrap_or_else(plain)
        }
        SimError::NoProgress { cpus, .. } => {
            let cpus: Vec<(LinuxCpu, &str, SourcePos, String)> = cpus
                .iter()
                .map(|c| {
                    (
                        c.cpu,
                        c.origin.as_str(),
                        c.pos,
                        c.waiting_for
                            .as_ref()
                            .map_or(String::new(), |w| format!("waiting for {w}")),
                    )
                })
                .collect();
            cpu_places(run, error, &cpus, "involved", sources).unwrap_or_else(plain)
        }
        SimError::ProtocolViolation { .. } | SimError::NoIteration { .. } => plain(),
    }
}

/// Runs of equal calls (a recursion), each once with its count, in order.
fn runs_of(calls: &[(String, SourcePos)]) -> Vec<(&(String, SourcePos), usize)> {
    let mut runs: Vec<(&(String, SourcePos), usize)> = Vec::new();
    for call in calls {
        match runs.last_mut() {
            Some((last, n)) if *last == call => *n += 1,
            _ => runs.push((call, 1)),
        }
    }
    runs
}

/// A run's error on one line, its script positions written as the file's
/// (`FILE:LINE:COLUMN`) where `sources` knows them: what `bounce check`
/// prints when its estimate's short run fails.
pub fn failure_line(error: &SimError, sources: &ScriptSources) -> String {
    let SimError::Script {
        cpu,
        cycle,
        origin,
        pos,
        called_from,
        message,
    } = error
    else {
        return error.to_string();
    };
    let Some(at) = sources.place(origin, *pos) else {
        return error.to_string();
    };
    let calls: Option<Vec<String>> = runs_of(called_from)
        .into_iter()
        .map(|((o, p), n)| {
            let place = sources.place(o, *p)?.location();
            Some(if n == 1 {
                place
            } else {
                format!("{place} ({n} calls in a row)")
            })
        })
        .collect();
    let places: Option<Vec<String>> =
        calls.map(|calls| std::iter::once(at.location()).chain(calls).collect());
    let Some(mut places) = places else {
        return error.to_string();
    };
    // As the error's own text: the innermost calls and the outermost.
    const SHOWN: usize = 4;
    let mut more = String::new();
    if places.len() > SHOWN + 1 {
        more = format!(", ({} more calls)", places.len() - 1 - SHOWN);
        places.drain(SHOWN..places.len() - 1);
    }
    let mut text = format!(
        "script failed on CPU {cpu} at cycle {cycle}, at {}",
        places[0]
    );
    for (k, place) in places.iter().enumerate().skip(1) {
        if k + 1 == places.len() {
            text.push_str(&more);
        }
        text.push_str(&format!(", called from {place}"));
    }
    format!("{text}: {message}")
}

/// The report of an error that lists CPUs and where each was: the error's
/// text up to its list as the title, then each place (of the first 8
/// CPUs) with the CPUs there and what they did. `None` when a place is not
/// known.
fn cpu_places(
    run: &str,
    error: &SimError,
    cpus: &[(LinuxCpu, &str, SourcePos, String)],
    what: &str,
    sources: &ScriptSources,
) -> Option<Report> {
    const SHOWN: usize = 8;
    let text = error.to_string();
    let head = text.split("\n  ").next().unwrap_or(&text);
    // Each place, with its CPUs grouped by what they did.
    type Doing<'a> = Vec<(&'a str, Vec<LinuxCpu>)>;
    let mut places: Vec<(Place, Doing)> = Vec::new();
    for (cpu, origin, pos, doing) in cpus.iter().take(SHOWN) {
        let place = sources.place(origin, *pos)?;
        let k = match places.iter().position(|(p, _)| *p == place) {
            Some(k) => k,
            None => {
                places.push((place, Vec::new()));
                places.len() - 1
            }
        };
        match places[k].1.iter_mut().find(|(d, _)| d == doing) {
            Some((_, list)) => list.push(*cpu),
            None => places[k].1.push((doing.as_str(), vec![*cpu])),
        }
    }
    let label = |doing: &Doing| -> String {
        let parts: Vec<String> = doing
            .iter()
            .map(|(d, list)| {
                let numbers: Vec<String> = list.iter().map(LinuxCpu::to_string).collect();
                let who = format!(
                    "CPU{} {}",
                    if list.len() > 1 { "s" } else { "" },
                    numbers.join(", ")
                );
                if d.is_empty() {
                    who
                } else {
                    format!("{who}: {d}")
                }
            })
            .collect();
        parts.join("; ")
    };
    let mut notes = vec![format!("{} CPU(s) {what}", cpus.len())];
    if cpus.len() > SHOWN {
        notes[0].push_str(&format!("; the first {SHOWN} shown"));
    }
    Some(Report {
        title: format!("{run} has no result: {head}"),
        places: places
            .into_iter()
            .map(|(p, doing)| {
                let label = label(&doing);
                (p, Some(label))
            })
            .collect(),
        notes,
    })
}

/// Runs one built variant with the statistics probe.
pub fn run_variant(built: &BuiltVariant) -> Result<VariantResult, VariantFailure> {
    let config: &SimConfig = &built.config;
    // The CPUs that run threads, each once (several threads may share one).
    let mut cpus: Vec<LinuxCpu> = config.threads.iter().map(|t| t.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut stats = Stats::for_run(config);
    if built.counts_field_costs_per_cpu {
        stats.count_field_costs_per_cpu();
    }
    let outcome = run(config, &mut stats).map_err(|error| VariantFailure {
        name: built.name.clone(),
        error,
        sources: built.sources.clone(),
    })?;
    // A run stopped by time may end before any measured iteration: it has
    // no figure per iteration to give.
    if outcome.cpus.iter().all(|c| c.measured_iterations == 0) {
        return Err(VariantFailure {
            name: built.name.clone(),
            error: SimError::NoIteration {
                cycle: sim_core::time::Cycle::new(match config.stop {
                    sim_core::engine::StopRule::Cycles(c) => c,
                    sim_core::engine::StopRule::Iterations(_) => outcome.elapsed_cycles,
                }),
                warmup_iterations: config.warmup_iterations,
            },
            sources: built.sources.clone(),
        });
    }
    let fields = field_results(config, &stats);
    let lines = line_results(config, &mut stats);
    let per_cpu = cpu_shares(config, &cpus, &outcome, &stats);
    let measured_threads = built.measured_threads.as_ref().and_then(|name| {
        let cpus = built.groups.iter().find(|(g, _)| g == name)?.1.clone();
        let (iterations, iteration_cycles_total) = per_cpu
            .iter()
            .filter(|c| cpus.contains(&c.cpu))
            .fold((0, 0), |(n, c), s| {
                (n + s.iterations, c + s.iteration_cycles_total)
            });
        Some(GroupIterations {
            threads: name.clone(),
            cpus,
            iterations,
            iteration_cycles_total,
        })
    });
    Ok(VariantResult {
        name: built.name.clone(),
        description: built.description.clone(),
        baseline: built.baseline.clone(),
        machine: config.topology.spec.name.clone(),
        clock_mhz: config.topology.spec.clock_mhz,
        cpus,
        total: stats.total(),
        iteration_cycles: stats.iteration_cycles.clone(),
        store_buffer_stall_cycles: stats.stalled_on_store_buffer_cycles,
        outcome,
        lines,
        per_cpu,
        unaccessed_instances: unaccessed_instances(config, &fields),
        unnamed_instances: instances_no_running_code_names(config),
        fields,
        measured_threads,
    })
}

/// Each field the program names, with the lines it lies on and its
/// traffic.
fn field_results(config: &SimConfig, stats: &Stats) -> Vec<FieldResult> {
    let memory = &config.memory;
    config
        .program
        .field_names
        .iter()
        .enumerate()
        .map(|(id, &(inst, field))| {
            let instance = &memory.instances[inst as usize];
            let def = &memory.structs[instance.struct_index].fields[field as usize];
            let mut units: Vec<usize> = Vec::new();
            let spans = field_spans(def);
            for &base in &instance.element_addresses {
                for &(from, to) in &spans {
                    let start = base + from as u64;
                    let end = base + to.max(from + 1) as u64;
                    for u in memory.unit_of(start)..=memory.unit_of(end - 1) {
                        units.push(u);
                    }
                }
            }
            units.sort_unstable();
            units.dedup();
            FieldResult {
                name: format!("{}.{}", instance.name, def.name),
                units,
                traffic: stats.per_field[id].clone(),
            }
        })
        .collect()
}

/// Each line with traffic, with the fields on it and its detail (moved
/// out of `stats`).
fn line_results(config: &SimConfig, stats: &mut Stats) -> Vec<LineResult> {
    let memory = &config.memory;
    let mut on_units = FieldsOnUnits::new(memory);
    // Each line's detail moved out of the statistics (dropped below): not
    // copied (two allocations per line, a visible part of a short run over
    // 512 CPUs' lines).
    let mut details = std::mem::take(&mut stats.per_unit_detail);
    stats
        .per_unit
        .iter()
        .enumerate()
        .filter(|(_, t)| t.accesses() > 0 || t.misses > 0)
        .map(|(unit, t)| {
            let (fields, field_ranges) = on_units.named_ranges(unit);
            LineResult {
                unit,
                address: unit as u64 * memory.unit_bytes as u64,
                home_node: memory.unit_homes[unit],
                fields,
                field_ranges,
                traffic: t.clone(),
                detail: details
                    .get_mut(unit)
                    .map(std::mem::take)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Each running CPU's share of the run: its node, measured iterations,
/// longest iteration and cycles in iterations.
fn cpu_shares(
    config: &SimConfig,
    cpus: &[LinuxCpu],
    outcome: &RunOutcome,
    stats: &Stats,
) -> Vec<CpuShare> {
    // Per CPU: its threads' iterations together (`Stats` keeps one slot per
    // CPU, in the order of `Stats::for_run`).
    // Indexed by CPU number rather than searched per CPU: a search is
    // quadratic in the CPUs, a visible part of a short 512-CPU run.
    let slots = Stats::cpu_slots(config);
    let cpu_limit = config.topology.cpu_count() as usize;
    let mut slot_of_cpu: Vec<Option<usize>> = vec![None; cpu_limit];
    for (slot, &cpu) in slots.iter().enumerate() {
        if let Some(s) = slot_of_cpu.get_mut(cpu.slot()) {
            s.get_or_insert(slot);
        }
    }
    let mut iterations_of_cpu = vec![0u64; cpu_limit];
    for c in &outcome.cpus {
        if let Some(n) = iterations_of_cpu.get_mut(c.cpu.slot()) {
            *n += c.measured_iterations;
        }
    }
    cpus.iter()
        .map(|&cpu| {
            let slot = slot_of_cpu.get(cpu.slot()).copied().flatten();
            CpuShare {
                cpu,
                node: config.topology.node_of(cpu),
                iterations: iterations_of_cpu.get(cpu.slot()).copied().unwrap_or(0),
                longest_iteration_cycles: slot
                    .and_then(|slot| stats.longest_iteration.get(slot))
                    .copied()
                    .unwrap_or(0),
                iteration_cycles_total: slot
                    .and_then(|slot| stats.iteration_cycles_per_cpu.get(slot))
                    .copied()
                    .unwrap_or(0),
                field_costs: match slot {
                    Some(slot) if !stats.field_costs_per_cpu.is_empty() => {
                        (0..config.program.field_names.len())
                            .map(|id| stats.field_cost(slot, id).copied().unwrap_or_default())
                            .collect()
                    }
                    _ => Vec::new(),
                },
            }
        })
        .collect()
}

/// The instances that running code names but that had no traffic in the
/// measured window.
fn unaccessed_instances(config: &SimConfig, fields: &[FieldResult]) -> Vec<String> {
    let named = instances_named_by_running_code(config);
    let accessed = instances_accessed(config, fields);
    config
        .memory
        .instances
        .iter()
        .enumerate()
        .filter(|&(i, _)| {
            named.get(i).copied().unwrap_or(true) && !accessed.get(i).copied().unwrap_or(true)
        })
        .map(|(_, inst)| inst.name.clone())
        .collect()
}

/// Per instance of `config`'s memory, in its order: whether any field of it
/// had traffic in the measured window (an access, a miss or a prefetch), by `fields`
/// (one per `config.program.field_names` entry, as [`run_variant`] gives
/// them). An instance with no field entry counts as accessed (nothing says
/// otherwise).
pub fn instances_accessed(config: &SimConfig, fields: &[FieldResult]) -> Vec<bool> {
    let count = config.memory.instances.len();
    let mut listed = vec![false; count];
    let mut accessed = vec![false; count];
    for (f, &(inst, _)) in fields.iter().zip(&config.program.field_names) {
        let i = inst as usize;
        if i < count {
            listed[i] = true;
            let t = &f.traffic;
            accessed[i] |= t.accesses() > 0 || t.misses > 0 || t.prefetches > 0;
        }
    }
    listed
        .iter()
        .zip(&accessed)
        .map(|(&l, &a)| !l || a)
        .collect()
}

/// The byte ranges (relative to the struct) a field covers: one for a
/// scalar or a packed array, one per element for a member of an array of
/// structs (whose elements have other members between them).
fn field_spans(f: &sim_core::memory::FieldDef) -> Vec<(u32, u32)> {
    if f.stride_bytes == f.size_bytes || f.count <= 1 {
        vec![(f.offset_bytes, f.offset_bytes + f.total_bytes())]
    } else {
        f.element_ranges().collect()
    }
}

/// Names of the fields that overlap a unit.
pub fn fields_on_unit(memory: &sim_core::memory::MemoryLayout, unit: usize) -> Vec<String> {
    FieldsOnUnits::new(memory).named_ranges(unit).0
}

/// A field's byte range in its struct: (from, to, the field's index).
type FieldSpan = (u32, u32, usize);

/// Which fields overlap a unit, found by binary searches rather than a
/// scan of every field of every element per unit (a struct of 40 000
/// fields made the report quadratic).
struct FieldsOnUnits<'a> {
    memory: &'a sim_core::memory::MemoryLayout,
    /// Per struct: every field's byte ranges, sorted by `from`, and the
    /// longest range's length.
    spans: Vec<(Vec<FieldSpan>, u32)>,
    /// Per instance: whether its elements lie in address order (they do
    /// as `models` places them), so that a binary search finds the first.
    sorted: Vec<bool>,
    /// One buffer for every element's overlapping spans, of every unit.
    found: Vec<(usize, u64, u64)>,
}

impl<'a> FieldsOnUnits<'a> {
    fn new(memory: &'a sim_core::memory::MemoryLayout) -> Self {
        let spans = memory
            .structs
            .iter()
            .map(|def| {
                let mut spans: Vec<FieldSpan> = def
                    .fields
                    .iter()
                    .enumerate()
                    .flat_map(|(i, f)| field_spans(f).into_iter().map(move |(a, b)| (a, b, i)))
                    .collect();
                spans.sort_unstable();
                let longest = spans.iter().map(|&(a, b, _)| b - a).max().unwrap_or(0);
                (spans, longest)
            })
            .collect();
        let sorted = memory
            .instances
            .iter()
            .map(|i| i.element_addresses.is_sorted())
            .collect();
        FieldsOnUnits {
            memory,
            spans,
            sorted,
            found: Vec::new(),
        }
    }

    /// The names of the fields overlapping a unit (in instance order, then
    /// element order, then field order), and each one's byte ranges
    /// (absolute addresses, end exclusive).
    fn named_ranges(&mut self, unit: usize) -> (Vec<String>, Vec<Vec<(u64, u64)>>) {
        let memory = self.memory;
        let start = unit as u64 * memory.unit_bytes as u64;
        let end = start + memory.unit_bytes as u64;
        let (mut names, mut ranges_of) = (Vec::new(), Vec::new());
        let found = &mut self.found;
        for (inst, &sorted) in memory.instances.iter().zip(&self.sorted) {
            let def = &memory.structs[inst.struct_index];
            let (spans, longest) = &self.spans[inst.struct_index];
            let size = def.size_bytes as u64;
            let many = inst.element_addresses.len() > 1;
            let addresses = &inst.element_addresses;
            // The first element that may overlap.
            let first = if sorted {
                addresses.partition_point(|&base| base + size <= start)
            } else {
                0
            };
            for (e, &base) in addresses.iter().enumerate().skip(first) {
                if sorted && base >= end {
                    break;
                }
                if base >= end || base + size <= start {
                    continue;
                }
                // Ranges relative to the element that overlap [start, end).
                let (from, to) = (start.saturating_sub(base), end - base);
                let upto = spans.partition_point(|&(a, _, _)| (a as u64) < to);
                found.clear();
                found.extend(
                    spans[..upto]
                        .iter()
                        .rev()
                        .take_while(|&&(a, _, _)| a as u64 + *longest as u64 >= from)
                        .filter(|&&(_, b, _)| base + b as u64 > start)
                        .map(|&(a, b, i)| (i, base + a as u64, base + b.max(a + 1) as u64)),
                );
                found.sort_unstable();
                let mut k = 0;
                while k < found.len() {
                    let i = found[k].0;
                    let ranges: Vec<(u64, u64)> = found[k..]
                        .iter()
                        .take_while(|f| f.0 == i)
                        .map(|&(_, a, b)| (a, b))
                        .collect();
                    k += ranges.len();
                    let f = &def.fields[i];
                    // `instance[e].field` or `instance.field`, built in
                    // place (a `format!` per name, then a `write!` of the
                    // index, was a visible part of a short run over 512
                    // CPUs' lines).
                    let mut name = String::with_capacity(inst.name.len() + f.name.len() + 24);
                    name.push_str(&inst.name);
                    if many {
                        name.push('[');
                        push_decimal(&mut name, e);
                        name.push(']');
                    }
                    name.push('.');
                    name.push_str(&f.name);
                    names.push(name);
                    ranges_of.push(ranges);
                }
            }
        }
        (names, ranges_of)
    }
}

/// Appends `n` in decimal, as `write!(s, "{n}")` does.
fn push_decimal(s: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut n = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    s.extend(digits[k..].iter().map(|&d| d as char));
}

/// Runs every variant, in parallel across variants; results come back in
/// input order whatever the number of host threads.
pub fn run_all(built: &[BuiltVariant]) -> Vec<Result<VariantResult, VariantFailure>> {
    built.par_iter().map(run_variant).collect()
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    #[test]
    fn push_decimal_writes_what_format_writes() {
        for n in [0, 1, 9, 10, 99, 100, 511, 65_536, 1_000_000_007, usize::MAX] {
            let mut s = String::from("x[");
            push_decimal(&mut s, n);
            assert_eq!(s, format!("x[{n}"));
        }
    }
}
