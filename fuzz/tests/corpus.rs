//! Replays the saved fuzz corpus (fuzz/corpus/<target>/*) through the fuzz
//! harness (fuzz/src/lib.rs), on stable Rust: cargo-fuzz needs nightly,
//! and this keeps every input it was seeded with (the shipped scenarios,
//! mutations of them, script snippets) and every crash it ever found
//! checked by `cargo test`.
//!
//! For each input: no panic, no protocol violation, and at most
//! [`MAX_LIVE_BYTES`] allocated at once (runs are bounded by the harness's
//! budgets; the slowest input's time is reported, not asserted).

mod bounds;

use bounds::{measure, MAX_LIVE_BYTES};

use bounce_fuzz as harness;
use harness::{Finding, Outcome};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The files of fuzz/<kind>/<target>/ (kind: corpus, or crashes).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(kind)
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    files.sort();
    files
}

/// Runs every input of `target`; returns how far each got.
fn replay(
    target: &str,
    harness: fn(&[u8]) -> Result<Outcome, Finding>,
    failures: &mut Vec<String>,
) -> BTreeMap<Outcome, usize> {
    let mut outcomes = BTreeMap::new();
    let mut slowest = (Duration::ZERO, String::new());
    let mut largest = (0, String::new());
    for path in inputs("corpus", target) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).expect("read a corpus file");
        let (result, took, live) = measure(|| std::panic::catch_unwind(|| harness(&bytes)));
        match result {
            Ok(Ok(outcome)) => *outcomes.entry(outcome).or_insert(0) += 1,
            Ok(Err(Finding(f))) => failures.push(format!("{target}/{name}: {f}")),
            Err(_) => failures.push(format!("{target}/{name}: panicked (see above)")),
        }
        if live > MAX_LIVE_BYTES {
            failures.push(format!("{target}/{name}: {live} bytes live at once"));
        }
        if took > slowest.0 {
            slowest = (took, name.clone());
        }
        if live > largest.0 {
            largest = (live, name);
        }
    }
    println!(
        "{target}: {} inputs, {outcomes:?}; slowest {} ({:?}), most memory {} ({} KiB)",
        outcomes.values().sum::<usize>(),
        slowest.1,
        slowest.0,
        largest.1,
        largest.0 >> 10
    );
    outcomes
}

/// The inputs of fuzz/crashes/<target>/ still fail (a panic or a finding),
/// each waiting for its fix; one that no longer fails is named, to be
/// moved into the corpus, where it keeps the fix from coming undone.
fn known_crashes(target: &str, harness: fn(&[u8]) -> Result<Outcome, Finding>) -> Vec<String> {
    let mut fixed = Vec::new();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for path in inputs("crashes", target) {
        let bytes = std::fs::read(&path).expect("read a crash file");
        if let Ok(Ok(_)) = std::panic::catch_unwind(|| harness(&bytes)) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            fixed.push(format!(
                "fuzz/crashes/{target}/{name} no longer fails: move it into fuzz/corpus/{target}/"
            ));
        }
    }
    std::panic::set_hook(hook);
    fixed
}

#[test]
fn the_saved_corpus_replays_without_a_panic_a_hang_or_a_violation() {
    let mut failures = Vec::new();
    let scenario = replay("scenario", harness::scenario, &mut failures);
    let script = replay("script", harness::script, &mut failures);
    let pahole = replay("pahole", harness::pahole, &mut failures);
    let btf = replay("btf", harness::btf, &mut failures);
    failures.extend(known_crashes("scenario", harness::scenario));
    failures.extend(known_crashes("script", harness::script));
    failures.extend(known_crashes("pahole", harness::pahole));
    failures.extend(known_crashes("btf", harness::btf));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus keeps reaching the simulator, not only the parsers.
    assert!(
        scenario.get(&Outcome::Ran).copied().unwrap_or(0) >= 8,
        "{scenario:?}"
    );
    assert!(
        scenario.get(&Outcome::Rejected).copied().unwrap_or(0) >= 20,
        "{scenario:?}"
    );
    assert!(
        script.get(&Outcome::Ran).copied().unwrap_or(0) >= 20,
        "{script:?}"
    );
    assert!(
        script.get(&Outcome::Rejected).copied().unwrap_or(0) >= 10,
        "{script:?}"
    );
    assert!(
        pahole.get(&Outcome::Ran).copied().unwrap_or(0) >= 4,
        "{pahole:?}"
    );
    assert!(
        pahole.get(&Outcome::Rejected).copied().unwrap_or(0) >= 5,
        "{pahole:?}"
    );
    assert!(btf.get(&Outcome::Ran).copied().unwrap_or(0) >= 4, "{btf:?}");
    assert!(
        btf.get(&Outcome::Rejected).copied().unwrap_or(0) >= 5,
        "{btf:?}"
    );
}
