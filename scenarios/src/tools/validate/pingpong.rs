//! The core-to-core benchmark in the model: two CPUs bounce one line with
//! compare-and-swap, as `scenarios/shipped/ping-pong.toml` does (and the measured
//! `core-to-core-latency` tool, calibration.md §0.1), with the line homed on
//! a given node, or on the node of each pair's first CPU. One iteration is a
//! round trip; one-way = half of it.
//!
//! A pair's result depends on its two CPUs only through how they relate in
//! the topology (same core, L3 domain, node, socket) and how each relates to
//! the home node: the costs are functions of those relations alone, the
//! script reads no CPU number, and the seeded arbitration stream does not
//! depend on which CPUs run. So one simulation answers every pair with the
//! same [`PairKey`], which is what makes a 512-CPU matrix cheap.

use models::calibration::LineHome;
use models::layout::{build_memory, FieldSpec, InstanceSpec, StructSpec};
use rayon::prelude::*;
use sim_core::cpu::LinuxCpu;
use sim_core::engine::{
    run, SimConfig, StopRule, ThreadSpec, DEFAULT_MAX_EVENTS, DEFAULT_MAX_OPERATIONS,
    DEFAULT_MAX_STEPS_WITHOUT_TIME,
};
use sim_core::memory::InstanceKind;
use sim_core::probe::Probe;
use sim_core::script::compile::{compile, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::{MachineSpec, Topology};
use sim_core::{Cycle, SimError};
use std::collections::BTreeMap;

/// The script of `scenarios/shipped/ping-pong.toml` (a test keeps them equal): tid 0
/// turns 0 into 1, tid 1 turns 1 into 0; a failed CAS retries.
pub const SCRIPT: &str = "\
# tid 0 turns 0 into 1, tid 1 turns 1 into 0; a failed CAS retries.
let me = tid()
while cmpxchg(flag.turn, me, 1 - me) != me {
}
";
/// Measured iterations per CPU and warm-up, as `scenarios/shipped/ping-pong.toml`.
pub const ITERATIONS: u64 = 1000;
pub const WARMUP_ITERATIONS: u64 = 20;
pub const SEED: u64 = 1;
/// `run.max_cycles` default of a scenario.
pub const MAX_CYCLES: u64 = crate::format::schema::DEFAULT_MAX_CYCLES;

/// How a CPU relates to the line's home node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HomeRelation {
    HomeNode,
    /// Another node of the home's socket.
    HomeSocket,
    OtherSocket,
}

/// Everything about a pair the ping-pong's result depends on. `first` is
/// the CPU with tid 0 (the one that moves first), `second` the other; their
/// relations to the home are to the pair's home node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairKey {
    pub same_core: bool,
    pub same_l3: bool,
    pub same_node: bool,
    pub same_socket: bool,
    pub first: HomeRelation,
    pub second: HomeRelation,
}

/// The ping-pong on one machine, ready to run for any pair.
#[derive(Clone, Debug)]
pub struct PingPong {
    topology: Topology,
    /// Per node: the configuration with the flag homed there (only for the
    /// nodes a pair can be homed on), without threads.
    bases: Vec<Option<SimConfig>>,
    home: LineHome,
}

/// Sums the measured iterations' cycles.
#[derive(Default)]
struct RoundTrips {
    cycles: u64,
    count: u64,
}

impl Probe for RoundTrips {
    fn on_iteration(
        &mut self,
        _cpu: LinuxCpu,
        _index: u64,
        start: Cycle,
        end: Cycle,
        measured: bool,
    ) {
        if measured {
            self.cycles += (end - start).get();
            self.count += 1;
        }
    }
}

impl PingPong {
    /// The machine, with the flag homed as `home` says. An error says what
    /// cannot be built.
    pub fn new(spec: MachineSpec, home: LineHome) -> Result<PingPong, String> {
        let name = spec.name.clone();
        let topology =
            Topology::new(spec).map_err(|e| format!("machine `{name}` is not valid: {e}"))?;
        let nodes = topology.node_count();
        let homes: Vec<u32> = match home {
            LineHome::Node(node) if node >= nodes => {
                return Err(format!(
                    "home node {node} does not exist on `{name}` ({nodes} node(s))"
                ));
            }
            LineHome::Node(node) => vec![node],
            LineHome::FirstCpu => (0..nodes).collect(),
        };
        let body = parse_block(SCRIPT).map_err(|e| format!("ping-pong script: {e}"))?;
        let scripts = [ScriptSource {
            name: "bounce".into(),
            body,
        }];
        let structs = [StructSpec {
            name: "flag".into(),
            align: None,
            is_union: false,
            fields: vec![FieldSpec::named("turn", "unsigned long")],
        }];
        let mut bases: Vec<Option<SimConfig>> = vec![None; nodes as usize];
        for node in homes {
            let instances = [InstanceSpec {
                name: "flag".into(),
                struct_name: "flag".into(),
                kind: InstanceKind::Global,
                node,
                count: 1,
                shared_aligned: false,
            }];
            let memory = build_memory(&topology, &structs, &instances)
                .map_err(|e| format!("ping-pong layout on `{name}`: {e}"))?;
            let program = compile(&memory, &[], &[], &scripts)
                .map_err(|e| format!("ping-pong script: {e}"))?;
            bases[node as usize] = Some(SimConfig {
                topology: topology.clone(),
                memory,
                program,
                threads: Vec::new(),
                stop: StopRule::Iterations(ITERATIONS),
                warmup_iterations: WARMUP_ITERATIONS,
                max_cycles: MAX_CYCLES,
                max_events: DEFAULT_MAX_EVENTS,
                max_steps_without_time: DEFAULT_MAX_STEPS_WITHOUT_TIME,
                max_operations: DEFAULT_MAX_OPERATIONS,
                seed: SEED,
                // The pair starts together, as the measuring tool's threads
                // wait for each other before the first round trip.
                start_spread_cycles: 0,
                check_invariants: cfg!(debug_assertions),
                scheduler: Default::default(),
            });
        }
        Ok(PingPong {
            topology,
            bases,
            home,
        })
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The node the line is homed on when `first` moves first.
    pub fn home_of(&self, first: LinuxCpu) -> u32 {
        match self.home {
            LineHome::Node(node) => node,
            LineHome::FirstCpu => self.topology.node_of(first),
        }
    }

    fn home_relation(&self, cpu: LinuxCpu, home: u32) -> HomeRelation {
        let t = &self.topology;
        if t.node_of(cpu) == home {
            HomeRelation::HomeNode
        } else if t.socket_of(cpu) == t.socket_of_node(home) {
            HomeRelation::HomeSocket
        } else {
            HomeRelation::OtherSocket
        }
    }

    /// The relation signature of a pair; `first` moves first.
    pub fn key(&self, first: LinuxCpu, second: LinuxCpu) -> PairKey {
        let t = &self.topology;
        let home = self.home_of(first);
        PairKey {
            same_core: t.core_of(first) == t.core_of(second),
            same_l3: t.l3_of(first) == t.l3_of(second),
            same_node: t.node_of(first) == t.node_of(second),
            same_socket: t.socket_of(first) == t.socket_of(second),
            first: self.home_relation(first, home),
            second: self.home_relation(second, home),
        }
    }

    /// The configuration of one pair: `first` is tid 0. The CPUs must be
    /// distinct and exist.
    pub fn config(&self, first: LinuxCpu, second: LinuxCpu) -> SimConfig {
        let mut config = self.bases[self.home_of(first) as usize]
            .clone()
            .expect("a configuration for every node a pair can be homed on");
        // In tid order, whatever the CPU numbers, so that which CPU starts
        // first at cycle 0 depends on the pair's key alone.
        config.threads = [first, second]
            .iter()
            .enumerate()
            .map(|(tid, &cpu)| ThreadSpec {
                cpu,
                script: 0,
                tid: tid as u32,
                group_size: 2,
            })
            .collect();
        config
    }

    /// Simulates one pair: the mean cycles of a round trip (an iteration).
    /// The CPUs must be distinct and exist.
    pub fn round_trip_cycles(&self, first: LinuxCpu, second: LinuxCpu) -> Result<f64, SimError> {
        let config = self.config(first, second);
        let mut probe = RoundTrips::default();
        run(&config, &mut probe)?;
        Ok(if probe.count == 0 {
            0.0
        } else {
            probe.cycles as f64 / probe.count as f64
        })
    }

    /// One-way latency in nanoseconds at the machine's clock.
    pub fn one_way_ns(&self, round_trip_cycles: f64) -> f64 {
        self.topology.cycles_to_ns(round_trip_cycles / 2.0)
    }

    /// Round-trip cycles of every pair, in input order: one simulation per
    /// distinct [`PairKey`], the simulations in parallel.
    pub fn round_trips(&self, pairs: &[(LinuxCpu, LinuxCpu)]) -> Result<Vec<f64>, SimError> {
        let mut slot_of: BTreeMap<PairKey, usize> = BTreeMap::new();
        let mut representatives: Vec<(LinuxCpu, LinuxCpu)> = Vec::new();
        let slots: Vec<usize> = pairs
            .iter()
            .map(|&(a, b)| {
                *slot_of.entry(self.key(a, b)).or_insert_with(|| {
                    representatives.push((a, b));
                    representatives.len() - 1
                })
            })
            .collect();
        let results: Vec<f64> = representatives
            .par_iter()
            .map(|&(a, b)| self.round_trip_cycles(a, b))
            .collect::<Result<_, _>>()?;
        Ok(slots.into_iter().map(|s| results[s]).collect())
    }

    /// How many simulations `round_trips` runs for these pairs.
    pub fn distinct_keys(&self, pairs: &[(LinuxCpu, LinuxCpu)]) -> usize {
        let mut keys: Vec<PairKey> = pairs.iter().map(|&(a, b)| self.key(a, b)).collect();
        keys.sort();
        keys.dedup();
        keys.len()
    }
}
