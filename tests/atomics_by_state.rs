//! Atomics by line state and place, checked as a user would check machines
//! no preset covers: the Ivy Bridge-EP and Bulldozer-family machine files
//! (`scenarios/shipped/machines/xeon-e5-4650v2-2s.toml`, `fx-8300-1s.toml`)
//! against what was measured on such machines.
//!
//! Each file's legs are fitted on one matrix of the CAS ping-pong (the
//! latency of a CAS on a line Modified in another core, by place); the rest
//! is held out:
//! - the other Ivy Bridge-EP matrix (E5-2620 v2: 6 cores a socket, another
//!   clock), predicted by the E5-4650 v2 file's legs;
//! - the findings Schweizer, Besta and Hoefler state in their PACT'15
//!   abstract for these machines, on the paper's own method
//!   (`scenarios/shipped/atomics-by-state*.toml`): atomics of every kind
//!   have comparable latency, and independent atomics get no
//!   instruction-level parallelism; and those Goncharenko and Paznikov
//!   state (CEUR-WS Vol-2590, paper 18, abstract): a read is the cheapest
//!   operation and an unsuccessful CAS costs about what FAA and SWP do.
//!
//! The bands are the project's ±10 % of `bounce validate` for latencies,
//! and for "comparable" the same ±10 %; "no parallelism" is read as two
//! independent atomics costing at least 1.9 times one.

mod common;

use common::{assert_exit, bounce, root, stdout};
use std::collections::BTreeMap;

const IVY: &str = "scenarios/shipped/machines/xeon-e5-4650v2-2s.toml";
const FX: &str = "scenarios/shipped/machines/fx-8300-1s.toml";

/// Each variant's latency per operation, in cycles: the run's measured
/// window over its 48 operations (the timer's alone; see the scenario).
fn latencies(scenario: &str) -> BTreeMap<String, f64> {
    let o = bounce(&["run", scenario, "--format", "json"]);
    assert_exit(&o, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut out = BTreeMap::new();
    for r in json["records"].as_array().unwrap() {
        let iterations = r["measured_iterations"].as_f64().unwrap();
        let cpus = r["cpus"].as_f64().unwrap();
        // Every CPU counts its iterations; the timer ran iterations / cpus.
        let operations = iterations / cpus;
        assert_eq!(operations, 48.0, "{r}");
        let cycles = r["elapsed_cycles"].as_f64().unwrap();
        out.insert(
            r["variant"].as_str().unwrap().to_string(),
            cycles / operations,
        );
    }
    out
}

fn within(value: f64, reference: f64, band: f64) -> bool {
    (value - reference).abs() <= band * reference
}

/// The paper's method on the Ivy Bridge-EP file: the fitted M-state rows
/// come back, every atomic costs the same as the CAS at its place, a failed
/// CAS as a successful one, a read less, two independent CASes twice one
/// (and less only where the machine runs ahead of a waiting lock, which the
/// file says Ivy Bridge does not), and the place orders the cost.
#[test]
fn ivy_bridge_atomics_by_state_and_place_keep_the_stated_findings() {
    let l = latencies("scenarios/shipped/atomics-by-state.toml");
    let cas = l["cas-M-same-socket"];
    // The fitted rows (data/c2c/xeon-e5-4650v2-2s.csv at 2.4 GHz).
    assert!(within(cas, 49.59 * 2.4, 0.10), "{l:?}");
    assert!(within(l["cas-M-cross-socket"], 165.06 * 2.4, 0.10), "{l:?}");
    for op in [
        "cas-fail-M-same-socket",
        "faa-M-same-socket",
        "swp-M-same-socket",
    ] {
        assert!(within(l[op], cas, 0.10), "{op}: {l:?}");
    }
    assert!(l["read-M-same-socket"] <= cas, "{l:?}");
    assert!(l["read-M-cross-socket"] <= l["cas-M-cross-socket"], "{l:?}");
    assert!(l["cas-pair-M-same-socket"] >= 1.9 * cas, "{l:?}");
    assert!(l["cas-pair-M-same-socket-run-ahead"] < 1.9 * cas, "{l:?}");
    assert!(
        l["cas-M-local"] < cas && cas < l["cas-M-cross-socket"],
        "{l:?}"
    );
    // An inclusive L3 answers a CAS on a clean line its cores hold, and
    // a Shared line's copies are invalidated in parallel: no state costs
    // more than a transfer at its place.
    for state in [
        "cas-E-same-socket",
        "cas-S1-same-socket",
        "cas-S3-same-socket",
    ] {
        assert!(within(l[state], cas, 0.10), "{state}: {l:?}");
    }
}

/// The same on the Bulldozer-family file (MOESI, one L3 that keeps shared
/// lines): the fitted rows, comparable atomics, no overlap of independent
/// CASes (the file's `lock_rfo_ahead = false`, from the paper), the read
/// cheapest, and a CAS on a line held only Shared in the die taken from
/// that die's L3 (not from memory) at no more than a transfer's cost.
#[test]
fn bulldozer_atomics_by_state_and_place_keep_the_stated_findings() {
    let l = latencies("scenarios/shipped/atomics-by-state-bulldozer.toml");
    let cas = l["cas-M-same-die"];
    assert!(within(cas, 287.02 * 3.3, 0.10), "{l:?}");
    assert!(within(l["cas-M-module"], 42.25 * 3.3, 0.10), "{l:?}");
    for op in ["cas-fail-M-same-die", "faa-M-same-die", "swp-M-same-die"] {
        assert!(within(l[op], cas, 0.10), "{op}: {l:?}");
    }
    assert!(l["read-M-same-die"] <= cas, "{l:?}");
    assert!(l["cas-pair-M-same-die"] >= 1.9 * cas, "{l:?}");
    assert!(l["cas-M-local"] < l["cas-M-module"] && l["cas-M-module"] < cas);
    for state in [
        "cas-E-same-die",
        "cas-S1-same-die",
        "cas-S3-same-die",
        "cas-O-same-die",
    ] {
        assert!(l[state] <= cas * 1.10, "{state}: {l:?}");
    }
}

/// The trace of a CAS on a line three other cores of the die hold Shared:
/// served by the die's L3, which keeps the line (the line-state rule this
/// check found missing: it went to memory).
#[test]
fn a_cas_on_a_shared_line_is_served_by_the_l3_that_keeps_it() {
    let o = bounce(&[
        "trace",
        "scenarios/shipped/atomics-by-state-bulldozer.toml",
        "--variant",
        "cas-S3-same-die",
        "--limit",
        "100000",
    ]);
    assert_exit(&o, 0);
    let trace = stdout(&o);
    let cas: Vec<&str> = trace
        .split("\n[cycle")
        .filter(|entry| entry.contains("CPU 0   cmpxchg"))
        .collect();
    assert_eq!(cas.len(), 48, "{trace}");
    for entry in cas {
        assert!(
            entry.contains("served by its L3 (domain 0), which keeps the shared line"),
            "{entry}"
        );
        assert!(entry.contains("S->I"), "{entry}");
    }
}

/// The class medians of the E5-2620 v2 matrix, whose numbering interleaves
/// the sockets (CPU i is core i mod 12, on socket (i mod 12) mod 2), classed
/// here by that rule; `bounce validate` reads the matrix through its CPU map
/// (tests/held_out_c2c.rs), which says the same.
fn e5_2620v2_medians() -> [f64; 3] {
    let text = std::fs::read_to_string(root().join("data/c2c/xeon-e5-2620v2-2s.csv")).unwrap();
    let mut classes: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (i, row) in text.lines().enumerate() {
        for (j, cell) in row.split(',').enumerate() {
            if cell.is_empty() {
                continue;
            }
            let ns: f64 = cell.parse().unwrap();
            let (core_i, core_j) = (i % 12, j % 12);
            let class = if core_i == core_j {
                0
            } else if core_i % 2 == core_j % 2 {
                1
            } else {
                2
            };
            classes[class].push(ns);
        }
    }
    classes.map(|mut v| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        assert!(n > 0);
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    })
}

/// The model's one-way ping-pong per relation, as `bounce presets show
/// FILE.toml` prints it (ns).
fn model_pairs(file: &str) -> BTreeMap<String, f64> {
    let o = bounce(&["presets", "show", file]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let start = text
        .find("one-way CAS ping-pong latency the model gives")
        .expect("the model's pairs");
    let mut out = BTreeMap::new();
    for line in text[start..].lines().skip(1) {
        let Some(ns) = line.trim_end().strip_suffix(" ns") else {
            break;
        };
        let value: f64 = ns.rsplit(' ').next().unwrap().parse().unwrap();
        let relation = line.trim_start().split("  ").next().unwrap().to_string();
        out.insert(relation, value);
    }
    out
}

/// The Ivy Bridge-EP file validates on the matrix it was fitted on, and
/// with the E5-2620 v2's six cores and 2.1 GHz it predicts that machine's
/// SMT and one-socket classes within the bound. Its two-socket class it
/// does not: the 4-socket part's cross-socket transfer (165 ns) is slower
/// than the 2-socket part's (139 ns), which legs fitted on the first
/// cannot give; asserted as the known miss it is (over by 10 to 30 %),
/// so that a change which explains it shows here.
#[test]
fn the_ivy_bridge_file_validates_and_predicts_the_six_core_part() {
    validates_every_fitted_class(
        IVY,
        "data/c2c/xeon-e5-4650v2-2s.csv",
        &["smt", "same-l3", "cross-socket"],
    );

    let dir = common::TempDir::new("ivy-2620v2");
    let edited = std::fs::read_to_string(root().join(IVY))
        .unwrap()
        .replace("\ncores_per_l3 = 10\n", "\ncores_per_l3 = 6\n")
        .replace("\nclock_mhz = 2400\n", "\nclock_mhz = 2100\n");
    let file = dir.join("e5-2620v2.toml");
    std::fs::write(&file, edited).unwrap();
    let model = model_pairs(&file);
    let [smt, same, cross] = e5_2620v2_medians();
    let (model_smt, model_same, model_cross) = (
        model["SMT siblings"],
        model["two cores of one L3"],
        model["two sockets"],
    );
    assert!(within(model_smt, smt, 0.10), "{model_smt} vs {smt}");
    assert!(within(model_same, same, 0.10), "{model_same} vs {same}");
    let over = model_cross / cross - 1.0;
    assert!((0.10..0.30).contains(&over), "{model_cross} vs {cross}");
}

/// The Bulldozer-family file validates on its matrix (both classes fitted).
#[test]
fn the_bulldozer_file_validates_on_its_matrix() {
    validates_every_fitted_class(FX, "data/c2c/fx-8300-1s.csv", &["smt", "same-l3"]);
}

/// `bounce validate` of `machine` on `matrix` (a core's threads numbered
/// next to each other) with `fitted` classes: each of them is within its
/// band, and they are the only calibration rows.
fn validates_every_fitted_class(machine: &str, matrix: &str, fitted: &[&str]) {
    let mut args = vec![
        "validate",
        "--machine",
        machine,
        "--matrix",
        matrix,
        "--sibling-numbering",
        "adjacent",
        "--format",
        "csv",
    ];
    for class in fitted {
        args.extend(["--fitted", class]);
    }
    let o = bounce(&args);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let rows: Vec<&str> = csv.lines().filter(|r| r.contains(",calibration")).collect();
    assert_eq!(rows.len(), fitted.len(), "{csv}");
    for row in rows {
        assert!(row.ends_with(",yes,validated,,calibration"), "{row}");
    }
}
