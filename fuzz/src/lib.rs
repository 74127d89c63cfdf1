//! The fuzz harness, shared by the cargo-fuzz targets (`fuzz/targets/`) and
//! this crate's stable tests that replay the corpus and generate scenarios
//! (`tests/corpus.rs`, `tests/generated.rs`).
//!
//! Each function takes arbitrary bytes and goes as far as they allow:
//! parse, compile or build, then run briefly with the invariants checked.
//! An error is a fine answer; a panic, a hang, an unbounded allocation or a
//! protocol violation is a bug.

use models::layout::{build_memory, FieldSpec, InstanceSpec, StructSpec};
use scenarios::build::{build_all, BuildOptions};
use sim_core::cpu::LinuxCpu;
use sim_core::engine::{run, SimConfig, StopRule, ThreadSpec};
use sim_core::memory::InstanceKind;
use sim_core::probe::NoProbe;
use sim_core::script::compile::{compile, ProcedureSource, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::{Lookup, MachineSpec, Protocol, Topology};
use sim_core::SimError;

/// Inputs longer than this are not tried: a fuzzer is kept to inputs a
/// person could write. (The loader refuses scenario files over 1 MiB and
/// scripts over 64 KiB; `sim_core::limits`.)
pub const MAX_INPUT_BYTES: usize = 64 * 1024;
/// Budgets of the runs the harness makes, whatever the input asks for.
/// (A run of iterations that take no time stops at the bound on steps
/// without time, kept low here so such inputs are quick.)
pub const RUN_MAX_CYCLES: u64 = 200_000;
pub const RUN_MAX_EVENTS: u64 = 20_000;
pub const RUN_MAX_STEPS_WITHOUT_TIME: u64 = 20_000;
/// Script operations per CPU: with the budgets above, this bounds a run's
/// host work by a count, so no input can hang the harness and no test needs
/// a clock to say so.
pub const RUN_MAX_OPERATIONS: u64 = 2_000_000;

/// How far an input went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Longer than [`MAX_INPUT_BYTES`].
    TooLarge,
    NotUtf8,
    /// Refused by the parser (TOML, schema or script syntax).
    Rejected,
    /// Parsed, refused when compiled or built.
    NotBuilt,
    /// Built and run: every run finished or stopped at a budget or a
    /// script failure.
    Ran,
}

impl Outcome {
    /// An import's outcome: run when at least one of its structs went
    /// through ([`lay_out_imported`]), otherwise refused when built.
    fn of_imported(imported: usize) -> Outcome {
        if imported > 0 {
            Outcome::Ran
        } else {
            Outcome::NotBuilt
        }
    }
}

/// A bug the harness found without a panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding(pub String);

/// A scenario file: `scenarios::load_str`, `scenarios::build::build_all`,
/// then every variant run with small budgets and the invariants checked.
pub fn scenario(data: &[u8]) -> Result<Outcome, Finding> {
    if data.len() > MAX_INPUT_BYTES {
        return Ok(Outcome::TooLarge);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(Outcome::NotUtf8);
    };
    let loaded = match scenarios::load_str("fuzz.toml", text) {
        Ok(l) => l,
        Err(e) => {
            // Rendering points into the text: it must not panic either.
            let _ = e.to_string();
            return Ok(Outcome::Rejected);
        }
    };
    let options = BuildOptions {
        check_invariants: true,
    };
    let built = match build_all(&loaded, options) {
        Ok(b) => b,
        Err(e) => {
            let _ = e.to_string();
            return Ok(Outcome::NotBuilt);
        }
    };
    for variant in built {
        run_briefly(variant.config)?;
    }
    Ok(Outcome::Ran)
}

/// A pahole listing: `models::pahole::parse`, then every struct it lists
/// imported (checked against the C layout rules), laid out, flattened into
/// the simulator's fields and shown as `bounce layout` shows it.
pub fn pahole(data: &[u8]) -> Result<Outcome, Finding> {
    if data.len() > MAX_INPUT_BYTES {
        return Ok(Outcome::TooLarge);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(Outcome::NotUtf8);
    };
    let listed = match models::pahole::parse(text) {
        Ok(l) => l,
        Err(e) => {
            let _ = e.to_string();
            return Ok(Outcome::Rejected);
        }
    };
    let mut imported = 0;
    for s in &listed {
        let spec = match models::pahole::import(text, &s.name, "fuzz") {
            Ok(spec) => spec,
            Err(e) => {
                let _ = e.to_string();
                continue;
            }
        };
        lay_out_imported(&spec, "listing")?;
        imported += 1;
    }
    Ok(Outcome::of_imported(imported))
}

/// An imported struct laid out (an error here is a finding: the importer
/// accepted it), flattened to its own size, and shown as `bounce layout`
/// shows it; `what` names the import in the finding.
fn lay_out_imported(spec: &StructSpec, what: &str) -> Result<(), Finding> {
    let laid = match models::layout::layout_structs(std::slice::from_ref(spec)) {
        Ok(l) => l,
        Err(e) => return Err(Finding(format!("an imported {what} does not lay out: {e}"))),
    };
    if let Ok(def) = models::layout::flatten(&laid[0]) {
        if def.size_bytes != laid[0].size_bytes {
            return Err(Finding("flattening changed the size".into()));
        }
    }
    let _ = scenarios::tools::layout_view::render_struct(&laid[0], 64, None);
    Ok(())
}

/// Most structs of one BTF input the harness imports (a kernel has
/// thousands; the fuzzer's inputs a few).
pub const BTF_MAX_STRUCTS: usize = 64;

/// BTF: `models::btf::parse`, then each of its structs (the first
/// [`BTF_MAX_STRUCTS`]) imported with alignment inferred (the importer
/// checks the C layout rules give BTF's size), laid out, flattened and
/// shown as `bounce layout` shows it.
pub fn btf(data: &[u8]) -> Result<Outcome, Finding> {
    if data.len() > MAX_INPUT_BYTES {
        return Ok(Outcome::TooLarge);
    }
    let btf = match models::btf::parse(data) {
        Ok(b) => b,
        Err(e) => {
            let _ = e.to_string();
            return Ok(Outcome::Rejected);
        }
    };
    let mut importer = models::btf::Importer::new(&btf);
    let mut imported = 0;
    for (id, _) in btf.structs().into_iter().take(BTF_MAX_STRUCTS) {
        let spec = match importer.struct_spec(id) {
            Ok(spec) => spec,
            Err(e) => {
                let _ = e.to_string();
                continue;
            }
        };
        lay_out_imported(&spec, "BTF struct")?;
        imported += 1;
    }
    Ok(Outcome::of_imported(imported))
}

/// A script: parsed, compiled against `small_layout` (with a parameter
/// `N` and a procedure `bump(p)`), and run by two CPUs with small budgets.
pub fn script(data: &[u8]) -> Result<Outcome, Finding> {
    if data.len() > MAX_INPUT_BYTES {
        return Ok(Outcome::TooLarge);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(Outcome::NotUtf8);
    };
    let body = match parse_block(text) {
        Ok(b) => b,
        Err(e) => {
            let _ = e.to_string();
            return Ok(Outcome::Rejected);
        }
    };
    let topology = Topology::new(small_machine()).expect("a valid machine");
    let memory = build_memory(&topology, &small_structs(), &small_instances()).expect("a layout");
    let procedure = ProcedureSource {
        name: "bump".into(),
        params: vec!["p".into()],
        body: parse_block("fetch_add(*p, 1)\nreturn *p").expect("the procedure parses"),
        cost_cycles: 0,
    };
    let program = match compile(
        &memory,
        &[("N".to_string(), 4)],
        &[procedure],
        &[ScriptSource {
            name: "fuzz".into(),
            body,
        }],
    ) {
        Ok(p) => p,
        Err(e) => {
            let _ = e.to_string();
            return Ok(Outcome::NotBuilt);
        }
    };
    let config = SimConfig {
        topology,
        memory,
        program,
        threads: [0, 5]
            .iter()
            .enumerate()
            .map(|(tid, &cpu)| ThreadSpec {
                cpu: LinuxCpu::new(cpu),
                script: 0,
                tid: tid as u32,
                group_size: 2,
            })
            .collect(),
        stop: StopRule::Iterations(3),
        warmup_iterations: 1,
        max_cycles: RUN_MAX_CYCLES,
        max_events: RUN_MAX_EVENTS,
        max_steps_without_time: sim_core::engine::DEFAULT_MAX_STEPS_WITHOUT_TIME,
        max_operations: RUN_MAX_OPERATIONS,
        seed: 1,
        start_spread_cycles: 0,
        check_invariants: true,
        scheduler: Default::default(),
    };
    run_briefly(config)?;
    Ok(Outcome::Ran)
}

/// Runs with the budgets clamped; a protocol violation is a finding.
fn run_briefly(mut config: SimConfig) -> Result<(), Finding> {
    config.max_cycles = config.max_cycles.min(RUN_MAX_CYCLES);
    config.max_events = config.max_events.min(RUN_MAX_EVENTS);
    config.max_steps_without_time = config
        .max_steps_without_time
        .min(RUN_MAX_STEPS_WITHOUT_TIME);
    config.max_operations = config.max_operations.min(RUN_MAX_OPERATIONS);
    if let StopRule::Cycles(c) = config.stop {
        config.stop = StopRule::Cycles(c.min(RUN_MAX_CYCLES));
    }
    config.check_invariants = true;
    match run(&config, &mut NoProbe) {
        Err(e @ SimError::ProtocolViolation { .. }) => Err(Finding(e.to_string())),
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
        Ok(_) => Ok(()),
    }
}

/// 1 socket, 2 nodes of one L3 domain, 2 cores each, 2 threads: CPUs 0-3
/// are the cores' first threads, 4-7 their siblings; MESIF.
pub fn small_machine() -> MachineSpec {
    MachineSpec {
        nodes_per_socket: 2,
        cores_per_l3: 2,
        threads_per_core: 2,
        adjacent_line_prefetch: true,
        store_buffer_entries: 4,
        ..MachineSpec::made_up("fuzz", Protocol::Mesif, Lookup::Local)
    }
}

/// `struct s { u64 a; u32 b; u8 c; u64 arr[4]; u32 lock; }`.
pub fn small_structs() -> Vec<StructSpec> {
    let field = |name: &str, ty: &str, count: u32| FieldSpec {
        count,
        ..FieldSpec::named(name, ty)
    };
    vec![StructSpec {
        name: "s".into(),
        align: None,
        is_union: false,
        fields: vec![
            field("a", "u64", 1),
            field("b", "u32", 1),
            field("c", "u8", 1),
            field("arr", "u64", 4),
            field("lock", "u32", 1),
        ],
    }]
}

/// `g` (one global `s`), `many` (four), `pc` (per CPU), `pn` (per node).
pub fn small_instances() -> Vec<InstanceSpec> {
    let instance = |name: &str, kind: InstanceKind, count: u32| InstanceSpec {
        name: name.into(),
        struct_name: "s".into(),
        kind,
        node: 0,
        count,
        shared_aligned: false,
    };
    vec![
        instance("g", InstanceKind::Global, 1),
        instance("many", InstanceKind::Global, 4),
        instance("pc", InstanceKind::PerCpu, 1),
        instance("pn", InstanceKind::PerNode, 1),
    ]
}
