//! Speed benchmarks (criterion): simulated memory operations and events
//! per host second, one host thread, release build, on the benchmark
//! scenarios of this folder, and a 100-case sweep on one and two host
//! threads.
//!
//!   cargo bench --bench speed                 # everything (a few minutes)
//!   cargo bench --bench speed -- contended    # one scenario
//!
//! `memory_ops/NAME` reports memory operations per second as its
//! throughput, `events/NAME` events per second (the same runs, timed
//! again). Iterations are cut from the files' so that one run takes a
//! fraction of a second; the files' own counts are for `bounce run
//! --host-stats`, which also prints the process's peak memory.
//! Instruction counts, repeatable on a loaded machine, come from
//! `benches/callgrind.sh`; the figures are kept in `benches/FIGURES.md`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scenarios::build::BuildOptions;
use scenarios::run::cases::{build_cases, run_cases, BuiltCase};
use std::path::Path;
use std::time::Duration;

/// (benchmark name, scenario file, measured iterations per CPU in the bench
/// (0: the file's), whether only the base variant runs).
const SCENARIOS: &[(&str, &str, u64, bool)] = &[
    ("hits512", "benches/hits512.toml", 20, false),
    ("contended512", "benches/contended512.toml", 100, false),
    (
        "false-sharing512",
        "benches/false-sharing512.toml",
        100,
        false,
    ),
    // The case study's base: 36 SCTP clients and their 36 servers.
    ("sctp36", "scenarios/shipped/cases/sctp-memcg.toml", 0, true),
    ("sctp36-standin", "benches/sctp36-standin.toml", 1000, false),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Loads and builds a scenario, with `iterations` per CPU when not 0.
fn build(file: &str, iterations: u64) -> Option<Vec<BuiltCase>> {
    let path = root().join(file);
    let text = std::fs::read_to_string(&path).ok()?;
    let text = if iterations == 0 {
        text
    } else {
        text.lines()
            .map(|l| {
                if l.starts_with("iterations = ") {
                    format!("iterations = {iterations}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let loaded =
        scenarios::load_str(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
    Some(build_cases(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs every variant of every case on one host thread; (memory ops, events).
fn run_once(cases: &[BuiltCase]) -> (u64, u64) {
    let mut totals = (0, 0);
    for case in cases {
        for variant in &case.variants {
            let result =
                scenarios::run::results::run_variant(variant).unwrap_or_else(|e| panic!("{e:?}"));
            totals.0 += result.outcome.memory_ops;
            totals.1 += result.outcome.events;
        }
    }
    totals
}

fn scenarios_bench(c: &mut Criterion) {
    for &(name, file, iterations, base_only) in SCENARIOS {
        let Some(mut cases) = build(file, iterations) else {
            // A file of another piece of work, not there (yet).
            eprintln!("{name}: {file} not found, skipped");
            continue;
        };
        if base_only {
            cases.iter_mut().for_each(|c| c.variants.truncate(1));
        }
        let (memory_ops, events) = run_once(&cases);
        eprintln!("{name}: {memory_ops} memory ops, {events} events per run");
        for (group_name, count) in [("memory_ops", memory_ops), ("events", events)] {
            if count == 0 {
                continue;
            }
            let mut group = c.benchmark_group(group_name);
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(4));
            group.throughput(Throughput::Elements(count));
            group.bench_function(name, |b| b.iter(|| run_once(&cases)));
            group.finish();
        }
    }
}

/// The 100-case sweep on 1 and 2 host threads: parallel efficiency is the
/// one-thread time over twice the two-thread time.
fn sweep_bench(c: &mut Criterion) {
    let cases = build("benches/sweep100.toml", 0).expect("benches/sweep100.toml");
    let mut group = c.benchmark_group("sweep100");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, _| {
            b.iter(|| pool.install(|| run_cases(&cases, u64::MAX, &|| {})))
        });
    }
    group.finish();
}

criterion_group!(benches, scenarios_bench, sweep_bench);
criterion_main!(benches);
