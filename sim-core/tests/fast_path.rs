//! The fast path against the plain event-by-event path.
//!
//! The engine lets a CPU run ahead of the event queue through operations
//! that touch only its registers and through accesses to places no other
//! CPU can reach (its own per-CPU lines). That is an optimisation and must
//! change nothing: on random programs mixing such private accesses with
//! shared, false-shared and remotely indexed per-CPU accesses, fences,
//! work, loops and procedure calls, both paths must give the same outcome,
//! the same statistics, and every CPU the same sequence of accesses (with
//! their costs and state changes), stores posted, drains and iterations.
//!
//! `BOUNCE_FAST_PATH_SEED=N` replays one seed.

use models::layout::InstanceSpec;
use sim_core::engine::{run_with, EngineOptions, RunOutcome, SimConfig, StopRule};
use sim_core::probe::AccessKind;
use sim_core::stats::Stats;
use sim_core::topology::{Lookup, Protocol};
use testkit::*;

/// A small deterministic generator (xorshift64*), as the random tester's.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One access or statement, drawn from a mix where private accesses
/// dominate, so CPUs run ahead often and meet shared traffic in between.
/// With `only_mine`, it touches nothing but `mine` (no shared access, no
/// procedure call), so that its CPU, if `mine` is private, runs ahead of
/// the queue through all of its accesses.
fn random_statement(gen: &mut Gen, depth: u32, only_mine: bool) -> String {
    let private_field = ["a", "b", "c"][gen.below(3) as usize];
    let shared_field = format!("f{}", gen.below(6));
    let pick = gen.below(if depth < 2 { 16 } else { 14 });
    let pick = match pick {
        7..=10 | 12 if only_mine => pick % 7,
        _ => pick,
    };
    match pick {
        0..=2 => format!("v = v + mine.{private_field}\n"),
        3..=4 => format!("mine.{private_field} = v + iteration()\n"),
        5 => "mine.arr[random(4)] = mine.arr[random(4)] + 1\n".to_string(),
        6 => format!("v = fetch_add(mine.{private_field}, 1)\n"),
        7 => format!("v = g.{shared_field}\n"),
        8 => format!("g.{shared_field} = v + cpu()\n"),
        9 => format!("v = fetch_add(g.{shared_field}, 1)\n"),
        10 => "v = cmpxchg(peer[random(ncpus())].x, v, cpu())\n".to_string(),
        11 => match gen.below(3) {
            0 => "fence\n".to_string(),
            1 => format!("work {}\n", gen.below(60)),
            _ if only_mine => "fence\n".to_string(),
            _ => "bump(&g.f0)\n".to_string(),
        },
        12 => "peer[cpu()].x = peer[cpu()].x + 1\n".to_string(),
        13 => "v = v + mine.a * 3 + random(5)\n".to_string(),
        14 => {
            let body: String = (0..1 + gen.below(4))
                .map(|_| random_statement(gen, depth + 1, only_mine))
                .collect();
            format!("repeat {} {{\n{body}}}\n", 1 + gen.below(5))
        }
        _ => {
            let body: String = (0..1 + gen.below(3))
                .map(|_| random_statement(gen, depth + 1, only_mine))
                .collect();
            format!("if v % 2 == 0 {{\n{body}}}\n")
        }
    }
}

fn random_script(gen: &mut Gen, only_mine: bool) -> String {
    let mut body = String::from("let v = 0\n");
    for _ in 0..4 + gen.below(16) {
        body.push_str(&random_statement(gen, 0, only_mine));
    }
    body
}

/// Ice Lake has the adjacent-line prefetcher on (its default); one small
/// machine has it on too, so a private line's miss prefetches its buddy.
fn machine(gen: &mut Gen) -> sim_core::topology::MachineSpec {
    match gen.below(5) {
        0 => icelake(),
        1 => small_machine(Protocol::Moesi, Lookup::Home),
        2 => small_machine(Protocol::Mesi, Lookup::Home),
        3 => sim_core::topology::MachineSpec {
            adjacent_line_prefetch: true,
            ..small_machine(Protocol::Mesi, Lookup::Home)
        },
        _ => small_machine(Protocol::Mesif, Lookup::Local),
    }
}

/// A random scenario: a few CPUs, each with its own script. With
/// `private_mine`, `peer` takes lines of its own, which leaves `mine` private
/// (its accesses run ahead of the queue); otherwise the two share lines.
/// With `atomic_heads`, every script starts with an atomic on a global
/// field and calls a procedure that starts with one on a local's value
/// (what `run_cpu` issues at once after an iteration end or a call); the
/// random draws, and so the rest of each program, stay the same.
fn random_config(seed: u64, private_mine: bool, atomic_heads: bool) -> SimConfig {
    let mut gen = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let spec = machine(&mut gen);
    let cpu_count = spec.sockets
        * spec.nodes_per_socket
        * spec.l3_per_node
        * spec.cores_per_l3
        * spec.threads_per_core;
    let wanted = 2 + gen.below(10) as u32;
    let mut cpus: Vec<u32> = Vec::new();
    while cpus.len() < wanted.min(cpu_count) as usize {
        // Some runs put SMT siblings together (CPU c and c + cores share a core).
        let c = gen.below(cpu_count as u64) as u32;
        if !cpus.contains(&c) {
            cpus.push(c);
        }
    }
    cpus.sort_unstable();
    let names: Vec<String> = cpus.iter().map(|c| format!("cpu{c}")).collect();
    // Some CPUs touch only `mine`: with `private_mine`, nothing they do can
    // meet another CPU, and they run ahead of the queue all the way.
    let bodies: Vec<String> = cpus
        .iter()
        .enumerate()
        .map(|(n, _)| {
            let only_mine = gen.below(3) == 0;
            let body = random_script(&mut gen, only_mine);
            if atomic_heads {
                format!("fetch_add(g.f{}, 1)\n{body}swap(v)\n", n % 6)
            } else {
                body
            }
        })
        .collect();
    let shared_fields: Vec<_> = (0..6).map(|f| field(&format!("f{f}"), "u64")).collect();
    let stop = if gen.below(3) == 0 {
        StopRule::Cycles(2_000 + gen.below(20_000))
    } else {
        StopRule::Iterations(5 + gen.below(20))
    };
    let mut setup = Setup::new(spec)
        .structs(vec![
            strukt("shared", shared_fields),
            strukt(
                "local",
                vec![
                    field("a", "u64"),
                    field("b", "u32"),
                    field("c", "u64"),
                    array("arr", "u64", 4),
                ],
            ),
            strukt("remote", vec![field("x", "u64")]),
        ])
        .instances(vec![
            global("g", "shared", 0),
            per_cpu("mine", "local"),
            InstanceSpec {
                shared_aligned: private_mine,
                ..per_cpu("peer", "remote")
            },
        ])
        .procedure("bump", vec!["p"], "fetch_add(*p, 1)")
        .procedure("swap", vec!["n"], "xchg(g.f5, n)\nwork 2")
        .stop(stop)
        .max_cycles(1 << 40)
        .seed(seed);
    for ((cpu, name), body) in cpus.iter().zip(&names).zip(&bodies) {
        setup = setup.script(name, body).thread(*cpu, name);
    }
    let mut config = setup.build();
    config.warmup_iterations = gen.below(3);
    config
}

/// What one run shows: the outcome, the statistics, and per CPU its
/// program-order log (accesses, stores posted, buffer waits, iterations)
/// and its drains, each in the order they happened to that CPU.
#[derive(Debug)]
struct Observed {
    /// With `events` at zero: the plain path processes more of them.
    outcome: RunOutcome,
    events: u64,
    per_field: Vec<sim_core::stats::Traffic>,
    per_unit: Vec<sim_core::stats::Traffic>,
    iteration_cycles: sim_core::stats::Histogram,
    longest_iteration: Vec<u64>,
    stalled_on_store_buffer_cycles: u64,
    program_order: Vec<Vec<Seen>>,
    drains: Vec<Vec<Seen>>,
}

/// The outcome and statistics of a fast-path run whose only probe is the
/// statistics, which lets the engine sum the hits on private lines instead
/// of reporting each.
fn observe_stats_only(config: &SimConfig) -> Result<Observed, String> {
    let mut stats = Stats::for_run(config);
    let outcome = run_with(config, &mut stats, EngineOptions { fast_path: true })
        .map_err(|e| e.to_string())?;
    Ok(Observed {
        events: outcome.events,
        outcome,
        per_field: stats.per_field,
        per_unit: stats.per_unit,
        iteration_cycles: stats.iteration_cycles,
        longest_iteration: stats.longest_iteration,
        stalled_on_store_buffer_cycles: stats.stalled_on_store_buffer_cycles,
        program_order: Vec::new(),
        drains: Vec::new(),
    })
}

fn observe(config: &SimConfig, fast_path: bool) -> Result<Observed, String> {
    let cpus: Vec<u32> = config.threads.iter().map(|t| t.cpu).collect();
    let mut stats = Stats::for_run(config);
    let mut recorder = Recorder::default();
    let outcome = {
        let mut both = sim_core::probe::Probes(vec![&mut stats, &mut recorder]);
        run_with(config, &mut both, EngineOptions { fast_path }).map_err(|e| e.to_string())?
    };
    let cpu_of = |s: &Seen| match s {
        Seen::Access(a) => a.cpu,
        Seen::StorePosted(c, ..) | Seen::Iteration(c, ..) | Seen::BufferWait(c, ..) => *c,
    };
    let is_drain = |s: &Seen| matches!(s, Seen::Access(a) if a.kind == AccessKind::StoreDrain);
    let stream = |cpu: u32, drains: bool| -> Vec<Seen> {
        recorder
            .log
            .iter()
            .filter(|s| cpu_of(s) == cpu && is_drain(s) == drains)
            .cloned()
            .collect()
    };
    let events = outcome.events;
    Ok(Observed {
        outcome: RunOutcome {
            events: 0,
            ..outcome
        },
        events,
        per_field: stats.per_field,
        per_unit: stats.per_unit,
        iteration_cycles: stats.iteration_cycles,
        longest_iteration: stats.longest_iteration,
        stalled_on_store_buffer_cycles: stats.stalled_on_store_buffer_cycles,
        program_order: cpus.iter().map(|&c| stream(c, false)).collect(),
        drains: cpus.iter().map(|&c| stream(c, true)).collect(),
    })
}

impl PartialEq for Observed {
    fn eq(&self, other: &Observed) -> bool {
        self.outcome == other.outcome
            && self.per_field == other.per_field
            && self.per_unit == other.per_unit
            && self.iteration_cycles == other.iteration_cycles
            && self.longest_iteration == other.longest_iteration
            && self.stalled_on_store_buffer_cycles == other.stalled_on_store_buffer_cycles
            && self.program_order == other.program_order
            && self.drains == other.drains
    }
}

/// Compares the two paths on one seed; the first difference, if any.
/// Odd seeds give `peer` lines of its own, so `mine` is truly private and
/// its accesses run ahead of the queue; even seeds share the lines.
fn compare_seed(seed: u64) -> Result<u64, String> {
    compare_config(seed, random_config(seed, seed % 2 == 1, false))
}

fn compare_config(seed: u64, config: SimConfig) -> Result<u64, String> {
    let fast = observe(&config, true);
    let plain = observe(&config, false);
    match (fast, plain) {
        (Ok(fast), Ok(plain)) => {
            if fast == plain {
                return Ok(fast.outcome.memory_ops);
            }
            let mut first = String::new();
            for (n, (f, p)) in fast
                .program_order
                .iter()
                .zip(&plain.program_order)
                .chain(fast.drains.iter().zip(&plain.drains))
                .enumerate()
            {
                if let Some(k) = (0..f.len().max(p.len())).find(|&k| f.get(k) != p.get(k)) {
                    first = format!(
                        "stream {n}, entry {k}:\n fast:  {:?}\n plain: {:?}",
                        f.get(k),
                        p.get(k)
                    );
                    break;
                }
            }
            Err(format!(
                "seed {seed}: the paths differ.\n fast outcome:  {:?}\n plain outcome: {:?}\n{first}",
                fast.outcome, plain.outcome
            ))
        }
        (Err(f), Err(p)) if f == p => Ok(0),
        (f, p) => Err(format!(
            "seed {seed}: fast {:?}, plain {:?}",
            f.map(|o| o.outcome),
            p.map(|o| o.outcome)
        )),
    }
}

/// Seeds per test run (each one run twice, with invariant checks: ~20 s in a
/// debug build on the 2-core CI machine).
const SEEDS: u64 = 240;

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "a test's seed comes from the environment; the rule binds the simulator, not its tests"
)]
fn the_fast_path_changes_nothing_on_random_programs() {
    if let Ok(seed) = std::env::var("BOUNCE_FAST_PATH_SEED") {
        let seed: u64 = seed.parse().expect("BOUNCE_FAST_PATH_SEED is a number");
        if let Err(e) = compare_seed(seed) {
            panic!("{e}");
        }
        return;
    }
    let mut ops = 0;
    let mut failures = Vec::new();
    for seed in 0..SEEDS {
        match compare_seed(seed) {
            Ok(n) => ops += n,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {SEEDS} seeds differ; the first:\n{}",
        failures.len(),
        failures[0]
    );
    // The generated programs do run: enough operations were compared.
    println!("{SEEDS} seeds, {ops} memory operations compared");
    assert!(ops > 100_000, "only {ops} memory operations compared");
}

/// Scripts and procedures that start with an atomic on a fixed-target
/// place (issued by `run_cpu` without stepping, on the fast path only):
/// the same runs, turns, store-buffer drains and stops as stepped.
#[test]
fn atomics_at_a_script_or_procedure_start_change_nothing() {
    let mut ops = 0;
    for seed in 0..SEEDS / 4 {
        match compare_config(seed, random_config(seed, seed % 2 == 1, true)) {
            Ok(n) => ops += n,
            Err(e) => panic!("with atomic heads: {e}"),
        }
    }
    assert!(ops > 20_000, "only {ops} memory operations compared");
}

/// The plain path really is different work: on a program of private
/// accesses it processes many more events (each access waits its turn).
#[test]
fn the_plain_path_goes_through_the_queue() {
    let config = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![strukt("local", vec![field("a", "u64")])])
        .instances(vec![per_cpu("mine", "local")])
        .script("s", "mine.a = mine.a + 1\nwork 3")
        .threads(0..4, "s")
        .stop(StopRule::Iterations(100))
        .build();
    let fast = observe(&config, true).unwrap();
    let plain = observe(&config, false).unwrap();
    assert_eq!(fast, plain);
    assert!(
        fast.events < 20 && plain.events > 400,
        "events: fast {}, plain {}",
        fast.events,
        plain.events
    );
}

#[test]
fn summing_private_hits_changes_nothing() {
    // The statistics probe alone lets the fast path sum the plain hits on
    // private lines; a probe that sees every access (the recorder) keeps a
    // report per hit. Same outcome (events included) and statistics.
    let mut summed_ops = 0;
    for seed in 0..SEEDS {
        let config = random_config(seed, true, false);
        let summed = observe_stats_only(&config);
        let each = observe(&config, true).map(|mut o| {
            o.outcome.events = o.events;
            o
        });
        match (summed, each) {
            (Ok(s), Ok(e)) => {
                assert_eq!(s.outcome, e.outcome, "seed {seed}");
                assert_eq!(s.per_field, e.per_field, "seed {seed}");
                assert_eq!(s.per_unit, e.per_unit, "seed {seed}");
                assert_eq!(s.iteration_cycles, e.iteration_cycles, "seed {seed}");
                assert_eq!(s.longest_iteration, e.longest_iteration, "seed {seed}");
                assert_eq!(
                    s.stalled_on_store_buffer_cycles, e.stalled_on_store_buffer_cycles,
                    "seed {seed}"
                );
                summed_ops += s.outcome.memory_ops;
            }
            (Err(s), Err(e)) => assert_eq!(s, e, "seed {seed}"),
            (s, e) => panic!(
                "seed {seed}: summed {:?}, each {:?}",
                s.map(|o| o.outcome),
                e.map(|o| o.outcome)
            ),
        }
    }
    assert!(
        summed_ops > 100_000,
        "only {summed_ops} memory operations compared"
    );
}
