//! Test support shared by the integration tests of sim-core and models:
//! small machines, struct and instance specs, building a `SimConfig` from
//! script texts, and a probe that records everything the engine reports.
//! A dev-dependency only, never a dependency of a library or the binary.

use models::layout::{build_memory, FieldSpec, InstanceSpec, StructSpec};
use sim_core::coherence::AccessReport;
use sim_core::engine::{
    run, RunOutcome, SimConfig, StopRule, ThreadSpec, DEFAULT_MAX_EVENTS, DEFAULT_MAX_OPERATIONS,
    DEFAULT_MAX_STEPS_WITHOUT_TIME,
};
use sim_core::memory::InstanceKind;
use sim_core::probe::{AccessEvent, AccessKind, AtomicSums, LinuxCpu, PrivateHits, Probe};
use sim_core::script::compile::{compile, CompileError, ProcedureSource, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::{Lookup, MachineSpec, Protocol, Topology};
use sim_core::{Cycle, SimError};

/// A small deterministic generator (xorshift64*) for the random tests'
/// programs: no crate, and a seed means the same program everywhere.
pub struct Gen(pub u64);

impl Gen {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// A 2-socket machine with 2 nodes per socket, 2 L3 domains per node, 2
/// cores per L3 domain and 2 SMT threads: 16 cores, 32 CPUs. CPU c < 16 is
/// thread 0 of core c; CPU c + 16 is its sibling. Cores 0-3 are node 0
/// (L3 domains {0,1} and {2,3}), 4-7 node 1, 8-11 node 2, 12-15 node 3;
/// nodes 0-1 are socket 0. Its latencies are `LatencySpec::MADE_UP`, whose
/// legs all differ, so a formula that takes a wrong leg misses the figure.
pub fn small_machine(protocol: Protocol, lookup: Lookup) -> MachineSpec {
    MachineSpec {
        sockets: 2,
        nodes_per_socket: 2,
        l3_per_node: 2,
        cores_per_l3: 2,
        threads_per_core: 2,
        ..MachineSpec::made_up(
            format!("test-{}-{}", protocol.name(), lookup.name()),
            protocol,
            lookup,
        )
    }
}

pub fn icelake() -> MachineSpec {
    (models::presets::find("icelake-sp-2s").unwrap().build)()
}

/// A field of a named C type.
pub fn field(name: &str, ty: &str) -> FieldSpec {
    FieldSpec::named(name, ty)
}

/// An array field of a named C type.
pub fn array(name: &str, ty: &str, count: u32) -> FieldSpec {
    FieldSpec {
        count,
        ..field(name, ty)
    }
}

pub fn strukt(name: &str, fields: Vec<FieldSpec>) -> StructSpec {
    StructSpec {
        name: name.into(),
        align: None,
        is_union: false,
        fields,
    }
}

/// A single global instance homed on `node`.
pub fn global(name: &str, struct_name: &str, node: u32) -> InstanceSpec {
    InstanceSpec {
        name: name.into(),
        struct_name: struct_name.into(),
        kind: InstanceKind::Global,
        node,
        count: 1,
        shared_aligned: false,
    }
}

pub fn per_cpu(name: &str, struct_name: &str) -> InstanceSpec {
    InstanceSpec {
        name: name.into(),
        struct_name: struct_name.into(),
        kind: InstanceKind::PerCpu,
        node: 0,
        count: 1,
        shared_aligned: false,
    }
}

/// Everything a run needs, with defaults for the rest.
pub struct Setup<'a> {
    pub machine: MachineSpec,
    pub structs: Vec<StructSpec>,
    pub instances: Vec<InstanceSpec>,
    /// (name, parameters, body)
    pub procedures: Vec<(&'a str, Vec<&'a str>, &'a str)>,
    /// (name, body)
    pub scripts: Vec<(&'a str, &'a str)>,
    /// (cpu, script name); tid and group size count the CPUs of one script.
    pub threads: Vec<(u32, &'a str)>,
    pub stop: StopRule,
    pub max_cycles: u64,
    pub seed: u64,
    pub start_spread_cycles: u64,
    /// The scheduler's parameters; the hooks are named procedures.
    pub scheduler: sim_core::engine::SchedulerParams,
    pub switch_out: Option<&'a str>,
    pub switch_in: Option<&'a str>,
}

impl<'a> Setup<'a> {
    pub fn new(machine: MachineSpec) -> Self {
        Setup {
            machine,
            structs: Vec::new(),
            instances: Vec::new(),
            procedures: Vec::new(),
            scripts: Vec::new(),
            threads: Vec::new(),
            stop: StopRule::Iterations(1),
            max_cycles: 10_000_000,
            seed: 1,
            start_spread_cycles: 0,
            scheduler: Default::default(),
            switch_out: None,
            switch_in: None,
        }
    }
    /// The scheduler's slice, switch cost and wake-up latency, in cycles.
    pub fn scheduler(mut self, slice: u64, switch: u64, wakeup: u64) -> Self {
        self.scheduler.time_slice_cycles = slice;
        self.scheduler.context_switch_cycles = switch;
        self.scheduler.wakeup_latency_cycles = wakeup;
        self
    }
    /// Procedures run at each context switch by the outgoing and the
    /// incoming thread.
    pub fn switch_hooks(mut self, out: Option<&'a str>, r#in: Option<&'a str>) -> Self {
        self.switch_out = out;
        self.switch_in = r#in;
        self
    }
    pub fn structs(mut self, structs: Vec<StructSpec>) -> Self {
        self.structs = structs;
        self
    }
    pub fn instances(mut self, instances: Vec<InstanceSpec>) -> Self {
        self.instances = instances;
        self
    }
    pub fn procedure(mut self, name: &'a str, params: Vec<&'a str>, body: &'a str) -> Self {
        self.procedures.push((name, params, body));
        self
    }
    pub fn script(mut self, name: &'a str, body: &'a str) -> Self {
        self.scripts.push((name, body));
        self
    }
    pub fn thread(mut self, cpu: u32, script: &'a str) -> Self {
        self.threads.push((cpu, script));
        self
    }
    pub fn threads(mut self, cpus: impl IntoIterator<Item = u32>, script: &'a str) -> Self {
        for cpu in cpus {
            self.threads.push((cpu, script));
        }
        self
    }
    pub fn stop(mut self, stop: StopRule) -> Self {
        self.stop = stop;
        self
    }
    pub fn max_cycles(mut self, max_cycles: u64) -> Self {
        self.max_cycles = max_cycles;
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// CPUs start at seeded offsets below this many cycles (0, the
    /// default here, starts them together).
    pub fn start_spread(mut self, cycles: u64) -> Self {
        self.start_spread_cycles = cycles;
        self
    }

    /// Lays out memory, parses and compiles the scripts, assigns the CPUs.
    /// Parse and layout errors panic (the tests write valid input); compile
    /// errors are returned, for the tests that check them.
    pub fn try_build(&self) -> Result<SimConfig, CompileError> {
        let topology = Topology::new(self.machine.clone()).expect("valid machine");
        let memory = build_memory(&topology, &self.structs, &self.instances).expect("valid layout");
        let procedures: Vec<ProcedureSource> = self
            .procedures
            .iter()
            .map(|(name, params, body)| ProcedureSource {
                name: name.to_string(),
                params: params.iter().map(|p| p.to_string()).collect(),
                body: parse_block(body)
                    .unwrap_or_else(|e| panic!("procedure {name} does not parse: {e}")),
                cost_cycles: 0,
            })
            .collect();
        let scripts: Vec<ScriptSource> = self
            .scripts
            .iter()
            .map(|(name, body)| ScriptSource {
                name: name.to_string(),
                body: parse_block(body)
                    .unwrap_or_else(|e| panic!("script {name} does not parse: {e}")),
            })
            .collect();
        let program = compile(&memory, &[], &procedures, &scripts)?;
        let proc_index = |name: &str| {
            self.procedures
                .iter()
                .position(|(n, _, _)| *n == name)
                .unwrap_or_else(|| panic!("no procedure {name}")) as u32
        };
        let threads = self
            .threads
            .iter()
            .enumerate()
            .map(|(k, &(cpu, script))| {
                let index = self
                    .scripts
                    .iter()
                    .position(|(n, _)| *n == script)
                    .unwrap_or_else(|| panic!("no script {script}"));
                let group: Vec<u32> = self
                    .threads
                    .iter()
                    .filter(|(_, s)| *s == script)
                    .map(|(c, _)| *c)
                    .collect();
                // Threads of the script before this one (several may share
                // a CPU).
                let tid = self.threads[..k]
                    .iter()
                    .filter(|(_, s)| *s == script)
                    .count();
                ThreadSpec {
                    cpu: LinuxCpu::new(cpu),
                    script: index as u32,
                    tid: tid as u32,
                    group_size: group.len() as u32,
                }
            })
            .collect();
        Ok(SimConfig {
            topology,
            memory,
            program,
            threads,
            stop: self.stop,
            warmup_iterations: 0,
            max_cycles: self.max_cycles,
            max_events: DEFAULT_MAX_EVENTS,
            max_steps_without_time: DEFAULT_MAX_STEPS_WITHOUT_TIME,
            max_operations: DEFAULT_MAX_OPERATIONS,
            seed: self.seed,
            start_spread_cycles: self.start_spread_cycles,
            check_invariants: true,
            scheduler: sim_core::engine::SchedulerParams {
                switch_out: self.switch_out.map(&proc_index),
                switch_in: self.switch_in.map(proc_index),
                ..self.scheduler.clone()
            },
        })
    }

    pub fn build(&self) -> SimConfig {
        self.try_build()
            .unwrap_or_else(|e| panic!("scripts do not compile: {e}"))
    }

    /// Builds and runs; the run must succeed.
    pub fn run(&self) -> (RunOutcome, Recorder) {
        let config = self.build();
        run_config(&config)
    }

    /// Builds and runs; the run must fail.
    pub fn run_err(&self) -> SimError {
        let config = self.build();
        let mut recorder = Recorder::default();
        match run(&config, &mut recorder) {
            Ok(outcome) => panic!("the run was expected to fail, but finished: {outcome:?}"),
            Err(e) => e,
        }
    }
}

pub fn run_config(config: &SimConfig) -> (RunOutcome, Recorder) {
    let mut recorder = Recorder::default();
    match run(config, &mut recorder) {
        Ok(outcome) => (outcome, recorder),
        Err(e) => panic!("the run failed: {e}"),
    }
}

/// The address of `instance[element].field`.
pub fn address(config: &SimConfig, instance: &str, element: usize, field: &str) -> u64 {
    let memory = &config.memory;
    let i = memory.instance_index(instance).expect("instance");
    let def = memory.struct_of(i);
    let f = &def.fields[def.field_index(field).expect("field")];
    memory.instances[i].element_addresses[element] + f.offset_bytes as u64
}

/// One `AccessEvent`, owned (the CPU as a plain number, as the tests write
/// it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub cpu: u32,
    pub kind: AccessKind,
    pub address: u64,
    pub size_bytes: u32,
    pub field_id: u32,
    pub value: i64,
    pub new_value: Option<i64>,
    pub report: Option<AccessReport>,
    pub stall_cycles: u64,
    pub misses_in_flight: u32,
}

/// Everything a probe sees, in the order it sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    Access(Access),
    /// (cpu, cycle, address, value)
    StorePosted(u32, u64, u64, i64),
    /// (cpu, index, start, end)
    Iteration(u32, u64, u64, u64),
    /// (cpu, from, until, address)
    BufferWait(u32, u64, u64, u64),
    /// A wait for loads in flight: (cpu, from, until, address)
    LoadWait(u32, u64, u64, u64),
    /// Plain hits on one private place, summed (only for a recorder that
    /// `accepts_summed_hits`).
    PrivateHits(u32, PrivateHits),
    /// A CPU's atomics on one field, summed (only for a recorder that
    /// `accepts_summed_atomics`).
    Atomics(u32, AtomicSums),
    /// A CPU's measured iterations, each one's cycles, batched (only for
    /// a recorder that `accepts_batched_iterations`).
    Iterations(u32, Vec<u64>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorder {
    pub log: Vec<Seen>,
    /// Lets the engine report the plain hits on private places summed
    /// (`Probe::needs_every_access` false); otherwise every access is its
    /// own entry.
    pub accepts_summed_hits: bool,
    /// With `accepts_summed_hits`: lets the engine keep the measured
    /// iterations' summed hits until the end of the run
    /// (`Probe::measured_hits_at_end`).
    pub accepts_hits_at_end: bool,
    /// Lets the engine report each CPU's atomics summed per field
    /// (`Probe::summed_atomics`); otherwise each is its own entry.
    pub accepts_summed_atomics: bool,
    /// Lets the engine report each CPU's measured iterations in batches
    /// (`Probe::batched_iterations`); otherwise each is its own entry.
    pub accepts_batched_iterations: bool,
}

impl Recorder {
    pub fn accesses(&self) -> impl Iterator<Item = &Access> {
        self.log.iter().filter_map(|s| match s {
            Seen::Access(a) => Some(a),
            _ => None,
        })
    }
    /// Accesses of one CPU, in the order the probe saw them.
    pub fn of_cpu(&self, cpu: u32) -> Vec<&Access> {
        self.accesses().filter(|a| a.cpu == cpu).collect()
    }
    /// Values a CPU loaded from `address` (forwarded or not), in program order.
    pub fn loads(&self, cpu: u32, address: u64) -> Vec<i64> {
        self.accesses()
            .filter(|a| {
                a.cpu == cpu
                    && a.address == address
                    && matches!(a.kind, AccessKind::Load | AccessKind::LoadForwarded)
            })
            .map(|a| a.value)
            .collect()
    }
    /// Values a CPU stored (posted to its buffer or written at once), in program order.
    pub fn stored(&self, cpu: u32) -> Vec<i64> {
        self.log
            .iter()
            .filter_map(|s| match s {
                Seen::StorePosted(c, _, _, v) if *c == cpu => Some(*v),
                Seen::Access(a) if a.cpu == cpu && a.kind == AccessKind::Store => Some(a.value),
                _ => None,
            })
            .collect()
    }
}

impl Probe for Recorder {
    fn needs_every_access(&self) -> bool {
        !self.accepts_summed_hits
    }
    fn measured_hits_at_end(&self) -> bool {
        self.accepts_hits_at_end
    }
    fn summed_atomics(&self) -> bool {
        self.accepts_summed_atomics
    }
    fn on_private_hits(&mut self, cpu: LinuxCpu, hits: &PrivateHits) {
        self.log.push(Seen::PrivateHits(cpu.get(), *hits));
    }
    fn on_atomics(&mut self, cpu: LinuxCpu, sums: &AtomicSums) {
        self.log.push(Seen::Atomics(cpu.get(), *sums));
    }
    fn batched_iterations(&self) -> bool {
        self.accepts_batched_iterations
    }
    fn on_iterations(&mut self, cpu: LinuxCpu, cycles: &[u64]) {
        self.log.push(Seen::Iterations(cpu.get(), cycles.to_vec()));
    }
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        self.log.push(Seen::Access(Access {
            cpu: e.cpu.get(),
            kind: e.kind,
            address: e.address,
            size_bytes: e.size_bytes,
            field_id: e.field_id,
            value: e.value,
            new_value: e.new_value,
            report: e.report.cloned(),
            stall_cycles: e.stall_cycles,
            misses_in_flight: e.misses_in_flight,
        }));
    }
    fn on_store_posted(
        &mut self,
        cpu: LinuxCpu,
        cycle: Cycle,
        address: u64,
        _field: u32,
        value: i64,
    ) {
        self.log
            .push(Seen::StorePosted(cpu.get(), cycle.get(), address, value));
    }
    fn on_iteration(
        &mut self,
        cpu: LinuxCpu,
        index: u64,
        start: Cycle,
        end: Cycle,
        _measured: bool,
    ) {
        self.log
            .push(Seen::Iteration(cpu.get(), index, start.get(), end.get()));
    }
    fn on_store_buffer_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        _field: u32,
    ) {
        self.log.push(Seen::BufferWait(
            cpu.get(),
            from.get(),
            until.get(),
            address,
        ));
    }
    fn on_load_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        _field: Option<u32>,
    ) {
        self.log
            .push(Seen::LoadWait(cpu.get(), from.get(), until.get(), address));
    }
}
