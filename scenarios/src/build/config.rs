//! From a checked scenario document to a runnable `SimConfig`
//! ([`build_config`]): the machine, the structs laid out and the instances
//! placed, the scripts parsed and compiled, the CPUs assigned.

use super::endless;
use super::scripts::{file_positions_in_message, position_in_string, ScriptSources};
use super::structs::{layout_error, struct_specs};
use crate::format::document::{baselines, library_of_procedure, Variant};
use crate::format::error::InputError;
use crate::format::schema::{self, CpuSet, RunLength, ScenarioDoc};
use crate::format::LoadedScenario;
use crate::machine::{build_machine_with_preset, instruction_costs_from};
use models::layout::{self, InstanceSpec};
use sim_core::cpu::LinuxCpu;
use sim_core::engine::{SimConfig, StopRule, ThreadSpec};
use sim_core::memory::InstanceKind;
use sim_core::script::ast::SourcePos;
use sim_core::script::compile::{compile_with_costs, CompileError, ProcedureSource, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::Topology;
use std::ops::Range;
use std::sync::Arc;

/// Options that are not part of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    /// Check the protocol invariants after every transaction.
    pub check_invariants: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            check_invariants: cfg!(debug_assertions),
        }
    }
}

/// A variant ready to run.
#[derive(Clone, Debug)]
pub struct BuiltVariant {
    pub name: String,
    pub description: Option<String>,
    /// The variant of the same case its changes are computed against
    /// (`baseline`, or the first variant run); `None` for a baseline that
    /// is compared with nothing (the base, a variant that is its own
    /// `baseline`). Set by the caller, as the name is.
    pub baseline: Option<String>,
    /// The thread group whose iterations the scenario's `[[measured]]`
    /// rows of this variant measure ([`measured_threads`]): the comparison
    /// table and chart set its figures first. Set by the caller, as the
    /// name is.
    pub measured_threads: Option<String>,
    /// Whether a `[[measured]]` row prices this variant's accesses per CPU
    /// (`field-latency-per-iteration`, [`counts_field_costs_per_cpu`]): its
    /// run then counts them per CPU and field. Set by the caller, as the
    /// name is.
    pub counts_field_costs_per_cpu: bool,
    pub config: SimConfig,
    /// CPU lists of the thread groups, for reports.
    pub groups: Vec<(String, Vec<LinuxCpu>)>,
    /// Host memory its run is estimated to take ([`run_bytes`]); runs in
    /// parallel are admitted while theirs fit the budget together.
    pub run_bytes: u64,
    /// Host memory the configuration itself takes ([`config_bytes`]), held
    /// from the build until the run.
    pub config_bytes: u64,
    /// Where its scripts' and procedures' texts are, for the errors of its
    /// run.
    pub sources: Arc<ScriptSources>,
}

/// Host memory `config` itself takes while it waits to run (every case is
/// built before the first runs): its structs' flattened fields, its
/// instances' element tables, the lines' homes, the compiled code and
/// places. A struct of many fields in many variants is what makes this
/// large (an import of 12 800 members in 51 variants: some 700 MB).
pub fn config_bytes(config: &SimConfig) -> u64 {
    // Each heap block also costs the allocator's header and rounding.
    const BLOCK: u64 = 32;
    let memory = &config.memory;
    let fields: u64 = memory
        .structs
        .iter()
        .flat_map(|s| &s.fields)
        .map(|f| std::mem::size_of_val(f) as u64 + f.name.len() as u64 + BLOCK)
        .sum();
    let instances: u64 = memory
        .instances
        .iter()
        .map(|i| i.element_addresses.len() as u64 * 12 + i.name.len() as u64 + 3 * BLOCK)
        .sum();
    let program = &config.program;
    let code: u64 = program
        .scripts
        .iter()
        .chain(&program.procedures)
        .map(|c| {
            c.ops.len() as u64
                * (std::mem::size_of::<sim_core::script::compile::Op>()
                    + std::mem::size_of::<sim_core::script::ast::SourcePos>())
                    as u64
        })
        .sum();
    let places: u64 = program
        .places
        .iter()
        .map(|p| std::mem::size_of_val(p) as u64 + p.text.len() as u64 + BLOCK)
        .sum();
    fields
        + instances
        + memory.unit_homes.len() as u64 * 4
        + code
        + places
        + program.field_names.len() as u64 * 8
        + config.threads.len() as u64 * std::mem::size_of::<ThreadSpec>() as u64
        + 64 * 1024
}

/// Host memory a run of `config` takes, estimated before it runs: the
/// simulator's state (`sim_core::engine::estimate_run_bytes`) and the
/// statistics probe's per-field and per-line counters.
pub fn run_bytes(config: &SimConfig) -> u64 {
    // `Traffic` is a dozen 64-bit counters; the probe keeps one per field
    // id and one per line, and a slot per CPU.
    const TRAFFIC_BYTES: u64 = 128;
    sim_core::engine::estimate_run_bytes(config)
        .saturating_add(
            (config.program.field_names.len() as u64 + config.memory.unit_count() as u64)
                .saturating_mul(TRAFFIC_BYTES),
        )
        .saturating_add((config.threads.len() as u64).saturating_mul(TRAFFIC_BYTES))
}

/// The thread group whose iterations the `[[measured]]` rows of case
/// `case_id` (empty without a sweep) measure in variant `variant`: the
/// `threads` every row naming the variant (as `variant` or `relative_to`)
/// gives, when there is such a row and they all give the same group
/// (`field-latency-per-iteration` rows left out: they time accesses). None
/// when a row measures every CPU (no `threads`) or rows disagree: the
/// comparison then stays over every CPU, as the rows are.
pub fn measured_threads(
    measured: &[schema::MeasuredDef],
    variant: &str,
    case_id: &str,
) -> Option<String> {
    let mut group: Option<&str> = None;
    for m in measured {
        let case = m.case.as_ref().map_or("", |c| c.get_ref().as_str());
        let names_it = m.variant.get_ref() == variant
            || m.relative_to
                .as_ref()
                .is_some_and(|r| r.get_ref() == variant);
        // A latency row prices accesses, not the group's iterations: the
        // report's figures per iteration stay over every CPU for it.
        let prices_accesses =
            *m.metric.get_ref() == schema::MeasuredMetric::FieldLatencyPerIteration;
        if case != case_id || !names_it || prices_accesses {
            continue;
        }
        let threads = m.threads.as_ref()?.get_ref().as_str();
        if group.is_some_and(|g| g != threads) {
            return None;
        }
        group = Some(threads);
    }
    group.map(str::to_string)
}

/// Whether a `[[measured]]` row of case `case_id` (empty without a sweep)
/// computes `field-latency-per-iteration` from variant `variant`'s run,
/// which then counts each CPU's accesses to each field.
pub fn counts_field_costs_per_cpu(
    measured: &[schema::MeasuredDef],
    variant: &str,
    case_id: &str,
) -> bool {
    measured.iter().any(|m| {
        m.case.as_ref().map_or("", |c| c.get_ref().as_str()) == case_id
            && m.variant.get_ref() == variant
            && *m.metric.get_ref() == schema::MeasuredMetric::FieldLatencyPerIteration
    })
}

/// Builds every variant (base first). The first error stops the build.
pub fn build_all(
    loaded: &LoadedScenario,
    options: BuildOptions,
) -> Result<Vec<BuiltVariant>, InputError> {
    let mut all = Vec::new();
    let (mut configs, mut largest_run) = (0u64, 0u64);
    let variants: Vec<&Variant> = loaded.all().collect();
    let baselines = baselines(&variants);
    for (v, baseline) in variants.iter().zip(baselines) {
        let mut built =
            build_config(loaded, &v.doc, options).map_err(|e| in_variant(e, &v.name, loaded))?;
        built.name = v.name.clone();
        built.description = v.description.clone();
        built.baseline = baseline.map(|i| variants[i].name.clone());
        built.measured_threads = measured_threads(&loaded.base.doc.measured, &v.name, "");
        built.counts_field_costs_per_cpu =
            counts_field_costs_per_cpu(&loaded.base.doc.measured, &v.name, "");
        // They are held together: checked as the process's bound says.
        configs = configs.saturating_add(built.config_bytes);
        largest_run = largest_run.max(built.run_bytes);
        let at = format!("variant `{}`", v.name);
        check_held_bytes(loaded, configs, largest_run, &at)?;
        all.push(built);
    }
    Ok(all)
}

/// Refuses to hold configurations of `configs` bytes beside the documents
/// and the largest run (`largest_run`) when together they pass the
/// process's bound; `at` says how far the build got.
pub fn check_held_bytes(
    loaded: &LoadedScenario,
    configs: u64,
    largest_run: u64,
    at: &str,
) -> Result<(), InputError> {
    let needed = loaded
        .documents_bytes
        .saturating_add(configs)
        .saturating_add(largest_run);
    if needed <= loaded.limits.host_memory_bytes {
        return Ok(());
    }
    Err(InputError::whole_file(
        &loaded.source.path,
        format!(
            "the runs' configurations would take about {} MiB by {at}, beside {} MiB of \
             documents and {} MiB for the largest run, more than the limit of {} MiB",
            configs >> 20,
            loaded.documents_bytes >> 20,
            largest_run >> 20,
            loaded.limits.host_memory_bytes >> 20
        ),
    )
    .with_valid(format!(
        "fewer variants or cases, or smaller structs; or raise the limit with \
         `--set-limit host_memory_bytes={needed}` (or more)"
    )))
}

/// Where a script or procedure body is: a procedure, or a script, by name.
enum CodePlace<'a> {
    Procedure(&'a str),
    Script(&'a str),
}

/// In a run of `run.iterations`, the first loop that nothing leaves
/// ([`endless::endless_loop`]) in a procedure or in a script a thread group
/// runs, and its position in that body.
fn endless_loops<'a>(
    doc: &ScenarioDoc,
    procedures: &'a [ProcedureSource],
    scripts: &'a [ScriptSource],
) -> Option<(CodePlace<'a>, SourcePos)> {
    if let RunLength::Cycles(_) = doc.run.length() {
        return None;
    }
    let procedures = procedures
        .iter()
        .map(|p| (CodePlace::Procedure(&p.name), &p.body));
    let scripts = scripts
        .iter()
        .filter(|s| doc.threads.iter().any(|g| *g.script.get_ref() == s.name))
        .map(|s| (CodePlace::Script(&s.name), &s.body));
    procedures
        .chain(scripts)
        .find_map(|(place, body)| endless::endless_loop(body).map(|pos| (place, pos)))
}

/// In a run of `run.iterations`, a loop that nothing leaves is an error at
/// its line, in the procedure or script it is in.
fn refuse_endless_loops(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    procedures: &[ProcedureSource],
    scripts: &[ScriptSource],
) -> Result<(), InputError> {
    let Some((place, pos)) = endless_loops(doc, procedures, scripts) else {
        return Ok(());
    };
    let message = endless::MESSAGE.to_string();
    let error = match place {
        CodePlace::Procedure(name) => library_error(loaded, doc, name, pos, &message)
            .unwrap_or_else(|| {
                let key = format!("procedures.{name}.body");
                script_error(loaded, doc.procedures[name].body.span(), key, pos, message)
            }),
        CodePlace::Script(name) => script_error(
            loaded,
            doc.scripts[name].span(),
            format!("scripts.{name}"),
            pos,
            message,
        ),
    };
    Err(error.with_valid(endless::VALID))
}

fn in_variant(mut e: InputError, name: &str, loaded: &LoadedScenario) -> InputError {
    if name != loaded.base.name && !e.message.starts_with("in variant") {
        e.message = format!("in variant `{name}`: {}", e.message);
    }
    e
}

/// Builds one document into a runnable configuration. The name and
/// description of the [`BuiltVariant`] are left empty for the caller.
pub fn build_config(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    options: BuildOptions,
) -> Result<BuiltVariant, InputError> {
    // The preset resolved once, for the machine and its instruction costs.
    let (topology, preset_params) = build_machine_with_preset(&loaded.source, doc)?;

    let structs = struct_specs(loaded, doc)?;
    let memory = layout::build_memory(&topology, &structs, &instance_specs(doc))
        .map_err(|e| layout_error(loaded, doc, e))?;

    let procedures = parse_procedures(loaded, doc)?;
    // Only scripts that some thread group runs are compiled and run.
    let mut scripts = Vec::new();
    for (name, s) in &doc.scripts {
        let body = parse_block(s.get_ref()).map_err(|e| {
            script_error(
                loaded,
                s.span(),
                format!("scripts.{name}"),
                e.pos,
                e.message,
            )
        })?;
        scripts.push(ScriptSource {
            name: name.clone(),
            body,
        });
    }
    refuse_endless_loops(loaded, doc, &procedures, &scripts)?;
    let params: Vec<(String, i64)> = doc
        .params
        .iter()
        .map(|(k, v)| (k.clone(), *v.get_ref()))
        .collect();
    let costs = instruction_costs_from(doc, preset_params.as_deref());
    let program = compile_with_costs(&memory, &params, &costs, &procedures, &scripts)
        .map_err(|e| compile_error(loaded, doc, e))?;

    let (threads, groups) = place_threads(loaded, doc, &topology)?;
    let scheduler = scheduler_params(loaded, doc, &topology, &procedures)?;

    let stop = match doc.run.length() {
        RunLength::Iterations(n) => StopRule::Iterations(n),
        RunLength::Cycles(c) => StopRule::Cycles(c),
    };
    let config = SimConfig {
        topology,
        memory,
        program,
        threads,
        stop,
        warmup_iterations: doc.run.warmup_iterations,
        max_cycles: *doc.run.max_cycles.get_ref(),
        max_events: loaded.limits.events,
        max_steps_without_time: loaded.limits.steps_without_time,
        max_operations: loaded.limits.operations,
        seed: doc.seed,
        start_spread_cycles: doc.run.start_spread_cycles,
        check_invariants: options.check_invariants,
        scheduler,
    };
    let estimate = check_run_fits(loaded, &config)?;
    Ok(BuiltVariant {
        name: String::new(),
        description: None,
        baseline: None,
        measured_threads: None,
        counts_field_costs_per_cpu: false,
        run_bytes: estimate,
        config_bytes: config_bytes(&config),
        config,
        groups,
        sources: Arc::new(ScriptSources::of(loaded, doc)),
    })
}

/// The document's `[instances]` as the layout takes them.
fn instance_specs(doc: &ScenarioDoc) -> Vec<InstanceSpec> {
    doc.instances
        .iter()
        .map(|(name, i)| InstanceSpec {
            name: name.clone(),
            struct_name: i.struct_name.get_ref().clone(),
            kind: match i.kind.get_ref() {
                schema::InstanceKind::Global => InstanceKind::Global,
                schema::InstanceKind::PerCpu => InstanceKind::PerCpu,
                schema::InstanceKind::PerNode => InstanceKind::PerNode,
            },
            node: i.node(),
            count: u32::try_from(i.count()).unwrap_or(u32::MAX),
            shared_aligned: i.shared_aligned(),
        })
        .collect()
}

/// A script error at `pos` of the script or body at `span` of the file.
fn script_error(
    loaded: &LoadedScenario,
    span: Range<usize>,
    key: String,
    pos: SourcePos,
    message: String,
) -> InputError {
    let text = &loaded.source.text;
    let message = file_positions_in_message(loaded, text, span.clone(), &message);
    loaded.error_at(position_in_string(text, span, pos), &key, message)
}

/// A script error inside a library's procedure points at the `use` entry
/// that brought it in and names the module and the position in its body;
/// `None` when procedure `name` is the file's own.
fn library_error(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    name: &str,
    pos: SourcePos,
    message: &str,
) -> Option<InputError> {
    let module = library_of_procedure(doc, name)?;
    let span = doc.procedures[name].body.span();
    let mut text = format!(
        "in procedure `{name}` of library module `{}` (line {}, column {} of its body): {message}",
        module.name, pos.line, pos.column
    );
    if !module.needs.is_empty() {
        text.push_str(&format!("; `{}` needs {}", module.name, module.needs));
    }
    Some(loaded.error_at(span, &format!("procedures.{name}.body"), text))
}

/// The document's procedures, parsed.
fn parse_procedures(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
) -> Result<Vec<ProcedureSource>, InputError> {
    let mut procedures = Vec::new();
    for (name, p) in &doc.procedures {
        let body = parse_block(p.body.get_ref()).map_err(|e| {
            library_error(loaded, doc, name, e.pos, &e.message).unwrap_or_else(|| {
                script_error(
                    loaded,
                    p.body.span(),
                    format!("procedures.{name}.body"),
                    e.pos,
                    e.message,
                )
            })
        })?;
        procedures.push(ProcedureSource {
            name: name.clone(),
            params: p.params.iter().map(|s| s.get_ref().clone()).collect(),
            body,
            cost_cycles: p.cost_cycles,
        });
    }
    Ok(procedures)
}

/// A compile error at the procedure or script it arose in.
fn compile_error(loaded: &LoadedScenario, doc: &ScenarioDoc, e: CompileError) -> InputError {
    if let Some(mut error) = e
        .origin
        .strip_prefix("procedures.")
        .and_then(|name| library_error(loaded, doc, name, e.pos, &e.message))
    {
        error.suggestions = e.suggestion.clone().into_iter().collect();
        error.valid = e.valid.clone();
        return error;
    }
    let (span, key) = if let Some(name) = e.origin.strip_prefix("procedures.") {
        let p = &doc.procedures[name];
        (p.body.span(), format!("procedures.{name}.body"))
    } else {
        let name = e.origin.strip_prefix("scripts.").unwrap_or(&e.origin);
        (doc.scripts[name].span(), format!("scripts.{name}"))
    };
    let mut error = script_error(loaded, span, key, e.pos, e.message);
    error.suggestions = e.suggestion.into_iter().collect();
    error.valid = e.valid;
    error
}

/// The threads of every `[[threads]]` group on their CPUs (thread k of a
/// group on the group's (k mod n)th CPU), sorted by CPU, and each group's
/// name and CPUs; an error names a CPU the machine lacks, a count out of
/// range, a CPU with too many threads or an unknown script.
#[allow(clippy::type_complexity)]
fn place_threads(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    topology: &Topology,
) -> Result<(Vec<ThreadSpec>, Vec<(String, Vec<LinuxCpu>)>), InputError> {
    let script_names: Vec<&String> = doc.scripts.keys().collect();
    let mut threads = Vec::new();
    let mut groups = Vec::new();
    let mut threads_on_cpu = vec![0u32; topology.cpu_count() as usize];
    for group in &doc.threads {
        let cpus: Vec<u32> = match group.cpus.get_ref() {
            CpuSet::All => (0..topology.cpu_count()).collect(),
            CpuSet::List(list) => list.clone(),
        };
        for &cpu in &cpus {
            if cpu >= topology.cpu_count() {
                return Err(loaded
                    .error_at(
                        group.cpus.span(),
                        &format!("threads.{}.cpus", group.name()),
                        format!("CPU {cpu} does not exist on {}", topology.spec.name),
                    )
                    .with_valid(format!("CPUs 0-{}", topology.cpu_count() - 1)));
            }
        }
        // `count` threads, thread k on the (k mod n)th CPU.
        let count = match &group.count {
            None => cpus.len() as u32,
            Some(count) => {
                let key = format!("threads.{}.count", group.name());
                let most = cpus.len() as u64 * sim_core::limits::THREADS_PER_CPU as u64;
                let n = *count.get_ref();
                if (n as usize) < cpus.len() || n as u64 > most {
                    return Err(loaded
                        .error_at(
                            count.span(),
                            &key,
                            format!(
                                "{n} threads for the {} CPU(s) of `threads.{}.cpus`",
                                cpus.len(),
                                group.name()
                            ),
                        )
                        .with_valid(format!(
                            "{}..={most}: at least one thread per CPU, at most {} per CPU (limits: threads per CPU)",
                            cpus.len(),
                            sim_core::limits::THREADS_PER_CPU
                        )));
                }
                n
            }
        };
        let placed: Vec<u32> = (0..count as usize).map(|k| cpus[k % cpus.len()]).collect();
        for &cpu in &placed {
            threads_on_cpu[cpu as usize] += 1;
            if threads_on_cpu[cpu as usize] > sim_core::limits::THREADS_PER_CPU {
                return Err(loaded
                    .error_at(
                        group.cpus.span(),
                        &format!("threads.{}.cpus", group.name()),
                        format!(
                            "CPU {cpu} runs more than {} threads with this group's",
                            sim_core::limits::THREADS_PER_CPU
                        ),
                    )
                    .with_valid(format!(
                        "at most {} threads per CPU over every group (limits: threads per CPU)",
                        sim_core::limits::THREADS_PER_CPU
                    )));
            }
        }
        let script = script_names
            .iter()
            .position(|n| *n == group.script.get_ref())
            .ok_or_else(|| {
                loaded.error_at(
                    group.script.span(),
                    &format!("threads.{}.script", group.name()),
                    format!("unknown script `{}`", group.script.get_ref()),
                )
            })?;
        for (tid, &cpu) in placed.iter().enumerate() {
            threads.push(ThreadSpec {
                // Checked against the machine above: a CPU it has.
                cpu: LinuxCpu::new(cpu),
                script: script as u32,
                tid: tid as u32,
                group_size: count,
            });
        }
        groups.push((
            group.name().to_string(),
            cpus.into_iter().map(LinuxCpu::new).collect(),
        ));
    }
    // By CPU, then group and tid (a stable sort): the first thread of each
    // CPU runs first, the others queue in this order.
    threads.sort_by_key(|t| t.cpu);
    Ok((threads, groups))
}

/// The run's estimated host memory, refused before the run allocates it:
/// a run must fit beside the documents, since the limit is the whole
/// process's.
fn check_run_fits(loaded: &LoadedScenario, config: &SimConfig) -> Result<u64, InputError> {
    let estimate = run_bytes(config);
    if estimate > loaded.run_budget_bytes() {
        let documents = if loaded.documents_bytes > 0 {
            format!(
                " beside the {} MiB its scenario's documents take",
                loaded.documents_bytes >> 20
            )
        } else {
            String::new()
        };
        let needed = estimate.saturating_add(loaded.documents_bytes);
        return Err(InputError::whole_file(
            &loaded.source.path,
            format!(
                "a run would take about {} MiB of host memory ({} bytes of instances in {} \
                 lines, {} running CPUs){documents}, more than the limit of {} MiB",
                estimate >> 20,
                config.memory.total_bytes,
                config.memory.unit_count(),
                config.threads.len(),
                loaded.limits.host_memory_bytes >> 20
            ),
        )
        .with_valid(format!(
            "fewer or smaller instances; or raise the limit with \
             `--set-limit host_memory_bytes={needed}`"
        )));
    }
    Ok(estimate)
}

/// The scheduler's parameters: the machine's preset's (`sched.*`, or the
/// assumed figures for a machine without a preset), `[scheduler]` on top,
/// in cycles at the machine's clock; the hooks resolved to procedures.
fn scheduler_params(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    topology: &sim_core::topology::Topology,
    procedures: &[ProcedureSource],
) -> Result<sim_core::engine::SchedulerParams, InputError> {
    let preset = match &doc.machine {
        schema::MachineRef::Preset(name) => Some(name.get_ref().as_str()),
        schema::MachineRef::Inline(m) => m.preset.as_ref().map(|p| p.get_ref().as_str()),
    };
    let preset_name = preset
        .map(|p| p.split(':').next().unwrap_or(p))
        .unwrap_or("");
    let table = models::presets::scheduler_params(preset_name);
    let figure = |key: &str| {
        table
            .iter()
            .find(|p| p.key == key)
            .and_then(|p| match p.value {
                models::presets::ParamValue::Int(v) => Some(v),
                _ => None,
            })
            .unwrap_or(0)
    };
    let section = &doc.scheduler;
    let ns = |given: &Option<schema::Spanned<u64>>, key: &str| {
        given.as_ref().map_or(figure(key), |v| *v.get_ref())
    };
    let clock_mhz = topology.spec.clock_mhz;
    let cycles = |ns: u64| ns.saturating_mul(clock_mhz) / 1000;
    let hook =
        |given: &Option<schema::Spanned<String>>, key: &str| -> Result<Option<u32>, InputError> {
            let Some(name) = given else { return Ok(None) };
            let key = format!("scheduler.{key}");
            match procedures.iter().position(|p| p.name == *name.get_ref()) {
                Some(index) if procedures[index].params.is_empty() => Ok(Some(index as u32)),
                Some(index) => Err(loaded
                    .error_at(
                        name.span(),
                        &key,
                        format!(
                        "procedure `{}` takes {} parameter(s): a switch hook is called with none",
                        name.get_ref(),
                        procedures[index].params.len()
                    ),
                    )
                    .with_valid("a procedure with `params = []`")),
                None => {
                    let names: Vec<&str> = procedures.iter().map(|p| p.name.as_str()).collect();
                    Err(loaded
                        .error_at(
                            name.span(),
                            &key,
                            format!("unknown procedure `{}`", name.get_ref()),
                        )
                        .with_choices(name.get_ref(), &names))
                }
            }
        };
    Ok(sim_core::engine::SchedulerParams {
        time_slice_cycles: cycles(ns(&section.time_slice_ns, "sched.time_slice_ns")),
        context_switch_cycles: cycles(ns(&section.context_switch_ns, "sched.context_switch_ns")),
        wakeup_latency_cycles: cycles(ns(&section.wakeup_latency_ns, "sched.wakeup_latency_ns")),
        switch_out: hook(&section.switch_out, "switch_out")?,
        switch_in: hook(&section.switch_in, "switch_in")?,
    })
}
