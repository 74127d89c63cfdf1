//! Determinism, proven through the binary: every shipped scenario
//! (`scenarios/shipped/*.toml` and `scenarios/shipped/cases/*.toml`) gives the same bytes
//! (report, results files, charts, and the full step trace) when run
//! twice, with 1 and with 3 host threads, each from its own working
//! directory; and the same bytes as a release build, whose hashes are in
//! `tests/golden/determinism.txt`. This test runs in debug builds in CI,
//! so it proves debug and release agree. Regenerate the file with a
//! release build after a change that is meant to change results:
//!
//!     BOUNCE_BLESS=1 cargo test --release --test determinism_cli
//!
//! The heaviest scenarios run with fewer iterations (a copy with
//! `iterations` lowered), so the test takes seconds.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::root;

const GOLDEN: &str = "tests/golden/determinism.txt";

/// Heavy scenarios: (file, text to replace, replacement).
const CAPPED: &[(&str, &str, &str)] = &[
    (
        "scenarios/shipped/cases/sctp-memcg.toml",
        "iterations = 500\nwarmup_iterations = 100",
        "iterations = 30\nwarmup_iterations = 10",
    ),
    (
        "scenarios/shipped/contended-counter-sweep.toml",
        "iterations = 200",
        "iterations = 20",
    ),
    (
        "scenarios/shipped/hackbench.toml",
        "cycles = 20_000_000",
        "cycles = 300_000",
    ),
    (
        "scenarios/shipped/task-group-relayout.toml",
        "iterations = 300\nwarmup_iterations = 50",
        "iterations = 6\nwarmup_iterations = 2",
    ),
    (
        "scenarios/shipped/mutex-vs-spinlock-sweep.toml",
        "cycles = 60_000_000",
        "cycles = 2_000_000",
    ),
];

/// FNV-1a, 64 bits: the hash of the golden file (stable across Rust
/// versions, unlike `DefaultHasher`).
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// A fresh directory under the temp dir, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let path =
            std::env::temp_dir().join(format!("bounce-determinism-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs bounce in `cwd`; panics unless it exits 0. Returns stdout.
fn bounce(cwd: &Path, args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_bounce"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run bounce");
    assert!(
        o.status.success(),
        "bounce {args:?} in {}: {}\n{}",
        cwd.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Every file under `dir`, by relative path, sorted, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The hash of one run's report and output files, and of its trace: the
/// scenario written as `file` into `cwd` (a path relative to the working
/// directory, so that no output depends on where the test runs).
fn hashes(text: &str, file: &str, cwd: &Path, jobs: &str) -> (u64, u64) {
    std::fs::write(cwd.join(file), text).unwrap();
    // A shipped scenario may name a shipped machine file
    // (`machine = { file = "machines/NAME.toml" }`, relative to it): the
    // copy beside the scenario keeps that path.
    let machines = cwd.join("machines");
    if !machines.exists() {
        std::fs::create_dir_all(&machines).unwrap();
        for e in std::fs::read_dir(root().join("scenarios/shipped/machines")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, machines.join(p.file_name().unwrap())).unwrap();
        }
    }
    let path = file;
    let report = bounce(cwd, &["--jobs", jobs, "run", path, "--out", "out", "-q"]);
    let mut h = fnv(&report, FNV_START);
    let written = files(&cwd.join("out"));
    assert!(
        written.iter().any(|(n, _)| n == "results.json"),
        "{written:?}"
    );
    for (name, bytes) in &written {
        h = fnv(name.as_bytes(), h);
        h = fnv(bytes, h);
    }
    let trace = bounce(cwd, &["trace", path, "--limit", "100000000"]);
    assert!(!trace.is_empty());
    (h, fnv(&trace, FNV_START))
}

/// The shipped scenarios, relative to the root, sorted.
fn shipped() -> Vec<String> {
    let mut names = Vec::new();
    for dir in ["scenarios/shipped", "scenarios/shipped/cases"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                names.push(format!(
                    "{dir}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    names.sort();
    names
}

#[test]
fn every_shipped_scenario_gives_the_same_bytes_anywhere_with_any_threads_in_any_build() {
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for name in shipped() {
        // The text as run: the shipped file's, or with fewer iterations.
        let mut text = std::fs::read_to_string(root().join(&name)).unwrap();
        if let Some((_, from, to)) = CAPPED.iter().find(|(n, _, _)| *n == name) {
            assert!(text.contains(from), "{name} no longer has `{from}`");
            text = text.replace(from, to);
        }
        let file = name.replace('/', "-");
        let one = Dir::new("one-thread");
        let three = Dir::new("three-threads");
        let (run_1, trace_1) = hashes(&text, &file, &one.0, "1");
        let (run_3, trace_3) = hashes(&text, &file, &three.0, "3");
        if (run_1, trace_1) != (run_3, trace_3) {
            failures.push(format!(
                "{name}: 1 thread gives run {run_1:016x} trace {trace_1:016x}, \
                 3 threads run {run_3:016x} trace {trace_3:016x}"
            ));
        }
        lines.push(format!("{name} run {run_1:016x} trace {trace_1:016x}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let computed = lines.join("\n") + "\n";
    let golden_path = root().join(GOLDEN);
    if std::env::var_os("BOUNCE_BLESS").is_some() {
        // Only a release build writes the golden hashes.
        if cfg!(debug_assertions) {
            panic!(
                "bless with a release build: \
                 BOUNCE_BLESS=1 cargo test --release --test determinism_cli"
            );
        }
        std::fs::write(&golden_path, &computed).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&golden_path).unwrap_or_default();
    assert!(
        golden == computed,
        "the outputs differ from the release build's ({GOLDEN}); if the change is meant, \
         regenerate it: BOUNCE_BLESS=1 cargo test --release --test determinism_cli\n\
         golden:\n{golden}\ncomputed:\n{computed}"
    );
}
