//! The random tester: random scripts of loads, stores and atomics over a few
//! deliberately false-shared lines, run by many CPUs on several machines,
//! with every value checked by an observer that knows nothing of the
//! protocol:
//! - an atomic reads the last value written to its location, in the order
//!   the writes took effect;
//! - a load answered by the cache reads that last value too;
//! - a load answered by the store buffer reads the CPU's own newest
//!   buffered store to that location;
//! - no CPU ever sees a location's values go backwards in its write order
//!   (coherence), which the stores' unique values make checkable;
//! - the protocol invariants are checked after every transaction.
//!
//! Each test run covers at least 1 M memory operations over many seeds.
//! `BOUNCE_RANDOM_SEED=N` replays one seed; `BOUNCE_RANDOM_LONG=1` runs
//! twenty times as many.

use sim_core::engine::StopRule;
use sim_core::probe::{AccessEvent, AccessKind, LinuxCpu, Probe};
use sim_core::topology::{Lookup, Protocol, Topology};
use sim_core::Cycle;
use std::collections::{BTreeMap, VecDeque};
use testkit::*;

const FIELDS: u32 = 12;

/// One CPU's script: a random mix of accesses to the 12 fields of `g`
/// (8 bytes each, so two and a half lines of false sharing).
fn random_script(gen: &mut Gen, cpu: u32) -> String {
    let mut body = String::from("let v = 0\n");
    let ops = 8 + gen.below(24);
    for n in 0..ops {
        let f = gen.below(FIELDS as u64);
        // Stored values are unique per CPU, op and iteration.
        let unique = format!(
            "{} + iteration() * 1000 + {n}",
            (cpu as u64 + 1) * 1_000_000_000
        );
        match gen.below(10) {
            0..=3 => body.push_str(&format!("v = g.f{f}\n")),
            4..=6 => body.push_str(&format!("g.f{f} = {unique}\n")),
            7 => body.push_str(&format!("v = fetch_add(g.f{f}, 1)\n")),
            8 => body.push_str(&format!("v = xchg(g.f{f}, {unique})\n")),
            _ => body.push_str(&format!("v = cmpxchg(g.f{f}, v, {unique})\n")),
        }
        match gen.below(12) {
            0 => body.push_str("fence\n"),
            1 => body.push_str("work random(40)\n"),
            _ => {}
        }
    }
    body
}

/// The observer: a shadow of every location, kept from the events alone.
#[derive(Default)]
struct Checker {
    /// The values written to each address, in the order they took effect.
    history: BTreeMap<u64, Vec<i64>>,
    /// Position in that order of each value (stored values are unique;
    /// fetch_add results may repeat, so the last position is kept).
    position: BTreeMap<(u64, i64), usize>,
    /// Per CPU and address, the latest position it has seen.
    seen: BTreeMap<(u32, u64), usize>,
    /// Per CPU, its buffered stores in order, until they drain.
    buffered: BTreeMap<u32, VecDeque<(u64, i64)>>,
    /// Per CPU and address, the CPU's own most recent store: what a load
    /// answered by its store buffer must return (x86-TSO forwarding).
    own_latest: BTreeMap<(u32, u64), i64>,
    operations: u64,
    /// Adjacent-line prefetches reported.
    prefetches: u64,
    errors: Vec<String>,
}

impl Checker {
    fn latest(&self, address: u64) -> i64 {
        self.history
            .get(&address)
            .and_then(|h| h.last().copied())
            .unwrap_or(0)
    }
    fn write(&mut self, address: u64, value: i64) {
        let h = self.history.entry(address).or_default();
        h.push(value);
        self.position.insert((address, value), h.len() - 1);
    }
    fn observe(&mut self, cpu: u32, address: u64, value: i64, cycle: Cycle) {
        let Some(&at) = self.position.get(&(address, value)) else {
            if value != 0 {
                self.errors.push(format!(
                    "cycle {cycle}: CPU {cpu} read {value} at {address:#x}, a value never written"
                ));
            }
            return;
        };
        let last = self.seen.entry((cpu, address)).or_insert(0);
        if at < *last {
            self.errors.push(format!(
                "cycle {cycle}: CPU {cpu} read {value} at {address:#x} (write #{at}) after seeing write #{last}: coherence order went backwards"
            ));
        }
        *last = (*last).max(at);
    }
}

impl Probe for Checker {
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        if self.errors.len() > 10 {
            return;
        }
        let cycle = e.issued;
        match e.kind {
            AccessKind::Load => {
                self.operations += 1;
                let latest = self.latest(e.address);
                if e.value != latest {
                    self.errors.push(format!(
                        "cycle {cycle}: CPU {} loaded {} at {:#x} but the last write was {latest}",
                        e.cpu.get(),
                        e.value,
                        e.address
                    ));
                }
                self.observe(e.cpu.get(), e.address, e.value, cycle);
            }
            AccessKind::LoadForwarded => {
                self.operations += 1;
                let newest = self.own_latest.get(&(e.cpu.get(), e.address)).copied();
                if newest != Some(e.value) {
                    self.errors.push(format!(
                        "cycle {cycle}: CPU {} forwarded {} at {:#x} but its own latest store there is {newest:?}",
                        e.cpu.get(), e.value, e.address
                    ));
                }
            }
            AccessKind::Store => {
                self.operations += 1;
                self.own_latest.insert((e.cpu.get(), e.address), e.value);
                self.write(e.address, e.value);
                self.observe(e.cpu.get(), e.address, e.value, cycle);
            }
            AccessKind::StoreDrain => {
                let front = self
                    .buffered
                    .get_mut(&e.cpu.get())
                    .and_then(|q| q.pop_front());
                if front != Some((e.address, e.value)) {
                    self.errors.push(format!(
                        "cycle {cycle}: CPU {} drained {} at {:#x} but its oldest buffered store is {front:?}",
                        e.cpu.get(), e.value, e.address
                    ));
                }
                self.write(e.address, e.value);
                self.observe(e.cpu.get(), e.address, e.value, cycle);
            }
            // A prefetch carries no value of the program's; the fill it
            // brings is checked by the invariants (every copy holds the
            // last write), and the loads after it by the arms here.
            AccessKind::Prefetch | AccessKind::RunAhead | AccessKind::StoreRfoAhead => {
                self.prefetches += 1
            }
            AccessKind::Atomic(_) => {
                self.operations += 1;
                let latest = self.latest(e.address);
                if e.value != latest {
                    self.errors.push(format!(
                        "cycle {cycle}: CPU {} atomic read {} at {:#x} but the last write was {latest}",
                        e.cpu.get(), e.value, e.address
                    ));
                }
                self.observe(e.cpu.get(), e.address, e.value, cycle);
                if let Some(new) = e.new_value {
                    self.write(e.address, new);
                    self.observe(e.cpu.get(), e.address, new, cycle);
                }
            }
        }
    }

    fn on_store_posted(
        &mut self,
        cpu: LinuxCpu,
        _cycle: Cycle,
        address: u64,
        _field: u32,
        value: i64,
    ) {
        let cpu = cpu.get();
        self.operations += 1;
        self.own_latest.insert((cpu, address), value);
        self.buffered
            .entry(cpu)
            .or_default()
            .push_back((address, value));
    }
}

/// The machines the tester draws from: Intel-like (MESIF, local lookup),
/// AMD-like (MOESI, home lookup), and plain MESI, small and large; the
/// adjacent-line prefetcher on in the Ice Lake preset (its default) and in
/// a small MESI and MOESI machine.
fn machine(gen: &mut Gen) -> sim_core::topology::MachineSpec {
    let with_prefetch = |spec: sim_core::topology::MachineSpec| sim_core::topology::MachineSpec {
        adjacent_line_prefetch: true,
        ..spec
    };
    match gen.below(6) {
        0 => icelake(),
        1 => small_machine(Protocol::Moesi, Lookup::Home),
        2 => small_machine(Protocol::Mesi, Lookup::Home),
        3 => with_prefetch(small_machine(Protocol::Mesi, Lookup::Home)),
        4 => with_prefetch(small_machine(Protocol::Moesi, Lookup::Home)),
        _ => small_machine(Protocol::Mesif, Lookup::Local),
    }
}

/// Runs one seed; returns the memory operations checked and the prefetches
/// seen, or the failures.
fn run_seed(seed: u64) -> Result<(u64, u64), String> {
    let mut gen = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let spec = machine(&mut gen);
    let topology = Topology::new(spec.clone()).expect("valid machine");
    let cpus_wanted = 2 + gen.below(14) as u32;
    let mut cpus: Vec<u32> = Vec::new();
    while cpus.len() < cpus_wanted.min(topology.cpu_count()) as usize {
        let c = gen.below(topology.cpu_count() as u64) as u32;
        if !cpus.contains(&c) {
            cpus.push(c);
        }
    }
    cpus.sort_unstable();
    let names: Vec<String> = cpus.iter().map(|c| format!("cpu{c}")).collect();
    let bodies: Vec<String> = cpus.iter().map(|&c| random_script(&mut gen, c)).collect();
    let fields: Vec<_> = (0..FIELDS)
        .map(|f| field(&format!("f{f}"), "u64"))
        .collect();
    let mut setup = Setup::new(spec)
        .structs(vec![strukt("shared", fields)])
        .instances(vec![global("g", "shared", 0)])
        .stop(StopRule::Iterations(20 + gen.below(40)))
        .max_cycles(1 << 40)
        .seed(seed);
    for ((cpu, name), body) in cpus.iter().zip(&names).zip(&bodies) {
        setup = setup.script(name, body).thread(*cpu, name);
    }
    let config = setup.build();
    let mut checker = Checker::default();
    if let Err(e) = sim_core::engine::run(&config, &mut checker) {
        return Err(format!("the run failed: {e}"));
    }
    if checker.errors.is_empty() {
        Ok((checker.operations, checker.prefetches))
    } else {
        Err(checker.errors.join("\n"))
    }
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "a test's seed comes from the environment; the rule binds the simulator, not its tests"
)]
fn random_programs_read_only_values_coherence_allows() {
    if let Ok(seed) = std::env::var("BOUNCE_RANDOM_SEED") {
        let seed: u64 = seed.parse().expect("BOUNCE_RANDOM_SEED is a number");
        match run_seed(seed) {
            Ok((ops, prefetches)) => {
                println!("seed {seed}: {ops} operations checked, {prefetches} prefetches")
            }
            Err(e) => panic!("seed {seed} failed:\n{e}"),
        }
        return;
    }
    let target: u64 = if std::env::var("BOUNCE_RANDOM_LONG").is_ok() {
        20_000_000
    } else {
        1_000_000
    };
    let mut total = 0;
    let mut prefetches = 0;
    let mut seed = 1;
    while total < target {
        match run_seed(seed) {
            Ok((ops, p)) => {
                total += ops;
                prefetches += p;
            }
            Err(e) => panic!(
                "seed {seed} failed:\n{e}\nreplay: BOUNCE_RANDOM_SEED={seed} cargo test -p models --test random_tester"
            ),
        }
        seed += 1;
    }
    println!(
        "{total} memory operations checked over {} seeds, beside {prefetches} adjacent-line prefetches",
        seed - 1
    );
    // Machines with the prefetcher on were drawn, and it did prefetch.
    assert!(prefetches > 1000, "only {prefetches} prefetches");
}
