//! A workload no case study was built on, held to what its source measured:
//! `scenarios/shipped/folly-contended-atomics.toml`, the atomics rows of
//! folly's small_locks_benchmark (facebook/folly,
//! folly/synchronization/test/SmallLocksBenchmark.cpp, the E5-2680 v4
//! results) on `machines/xeon-e5-2680v4-2s.toml` as heldc2c described it.
//!
//! One parameter is fitted (the benchmark's unlocked burn, on
//! atomics_fetch_add(1thread)); every other row is a prediction. The rows
//! that meet their 25 % stay met, the misses stay misses of the size and
//! direction the header states, and the header's account of the cmpxchg
//! loops (a failed cmpxchg's retry hits the line it brought, before the
//! next requester's snoop can reach the core) is checked in the run's own
//! figures, so that a change of the model that moves them fails here and is
//! explained there.

mod common;

use common::{assert_exit, bounce, root};
use std::sync::OnceLock;

const SCENARIO: &str = "scenarios/shipped/folly-contended-atomics.toml";

/// The run's JSON (`bounce run --format json`), run once for every test.
fn run() -> &'static serde_json::Value {
    static RUN: OnceLock<serde_json::Value> = OnceLock::new();
    RUN.get_or_init(|| {
        let path = root().join(SCENARIO);
        let o = bounce(&["run", path.to_str().unwrap(), "--format", "json"]);
        assert_exit(&o, 0);
        serde_json::from_slice(&o.stdout).unwrap()
    })
}

/// The `[[measured]]` row of that label: (measured, simulated, within its
/// tolerance).
fn measured(label: &str) -> (f64, f64, Option<bool>) {
    let row = run()["measured"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no measured row `{label}`"));
    (
        row["measured"].as_f64().unwrap(),
        row["simulated"].as_f64().unwrap(),
        row["within_tolerance"].as_bool(),
    )
}

/// A variant's record field.
fn num(variant: &str, key: &str) -> f64 {
    run()["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == variant)
        .unwrap_or_else(|| panic!("no record of `{variant}`"))[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no `{key}` in `{variant}`"))
}

fn label(kind: &str, n: u32) -> String {
    format!("{kind}({n}thread), cycles per op")
}

#[test]
fn the_fit_holds_and_the_met_rows_stay_met() {
    let (value, fitted, _) = measured("atomics_fetch_add(1thread), cycles per op (fitted)");
    assert!(
        (fitted - value).abs() <= 0.01 * value,
        "the fitted row moved to {fitted} cycles against {value}: refit burn_cycles (header)"
    );
    for (kind, n) in [
        ("atomics_fetch_add", 4),
        ("atomics_fetch_add", 8),
        ("atomic_fetch_xor", 1),
        ("atomic_fetch_xor", 2),
        ("atomic_fetch_xor", 4),
        ("atomic_cas", 1),
        ("atomic_cas", 2),
        ("atomic_cas", 4),
        // At 32 the owner's socket serves its own waiters and the other
        // socket sends one request at a time (the socket agents' rule):
        // met since that rule, +31 to +89 % before it.
        ("atomics_fetch_add", 32),
        ("atomic_fetch_xor", 32),
        ("atomic_cas", 32),
    ] {
        let (value, sim, met) = measured(&label(kind, n));
        assert_eq!(met, Some(true), "{kind}({n}thread): {sim} against {value}");
    }
}

/// Each stated miss, in the direction and about the size the header's table
/// gives (simulated over measured).
#[test]
fn the_misses_are_the_ones_the_header_states() {
    for (kind, n, low, high) in [
        // SMT-sibling pairs in the model: the lines never move.
        ("atomics_fetch_add", 2, 0.55, 0.70),
        // A steady convoy: each miss waits little.
        ("atomics_fetch_add", 16, 0.40, 0.60),
        // The loops: a convoy at 8 and 16 (fast); the machine's two rows
        // of one code differ by 1.6 and 2.1 times there.
        ("atomic_fetch_xor", 8, 0.60, 0.80),
        ("atomic_fetch_xor", 16, 0.60, 0.75),
        ("atomic_cas", 8, 0.35, 0.55),
        ("atomic_cas", 16, 0.28, 0.40),
    ] {
        let (value, sim, met) = measured(&label(kind, n));
        assert_eq!(
            met,
            Some(false),
            "{kind}({n}thread) now meets its figure ({sim} against {value}): update the header"
        );
        let ratio = sim / value;
        assert!(
            (low..=high).contains(&ratio),
            "{kind}({n}thread): simulated / measured {ratio:.2}, the header says {low}-{high}"
        );
    }
}

/// The header's account of the cmpxchg loops in the run's figures: a failed
/// cmpxchg's retry hits the line the failure brought (the holder hits until
/// the next request's snoop could reach it), so the loop needs about two
/// misses an op and costs what the what-if in which every retry hits costs.
/// Before that rule it needed 10.8 misses an op at 32 threads a line.
#[test]
fn the_loops_retries_hit_the_line_the_failure_brought() {
    let loop_misses = num("cas-32", "misses_per_iteration");
    assert!(
        (1.7..=2.1).contains(&loop_misses),
        "cas-32: {loop_misses} misses an op"
    );
    // The fetch_adds: one a line, five lines.
    let five = num("fetch_add-32", "misses_per_iteration");
    assert!(
        (4.8..=5.0).contains(&five),
        "fetch_add-32: {five} misses an op"
    );
    for n in [8, 16, 32] {
        let what_if = format!("cas-{n}-retry-hits");
        let misses = num(&what_if, "misses_per_iteration");
        assert!(
            (1.4..=2.0).contains(&misses),
            "{what_if}: {misses} misses an op"
        );
        let faithful = num(&format!("cas-{n}"), "cycles_per_iteration_mean");
        let ratio = faithful / num(&what_if, "cycles_per_iteration_mean");
        assert!(
            (0.85..=1.15).contains(&ratio),
            "cas-{n} against {what_if}: {ratio:.2}"
        );
    }
}

/// Why the rows at 32 are met: the line mostly stays on a socket. With the
/// machine's own pair medians (45.2 ns on a socket, 127.5 across) its
/// 59.5 ns a transfer allows at most ~17 % of handovers to cross; the
/// model's socket agents give about a quarter (its one-socket legs are
/// 14 % fast, header), where every waiter competing gave 53 %.
#[test]
fn at_32_most_handovers_stay_on_the_owners_socket() {
    let misses = num("fetch_add-32", "misses_per_iteration");
    let crossing = num("fetch_add-32", "cross_socket_misses_per_iteration") / misses;
    assert!(
        (0.15..=0.30).contains(&crossing),
        "fetch_add-32: {crossing:.3} of the misses cross sockets"
    );
    // 56 threads x 5 lines an op: cycles a transfer, against the machine's
    // 196 (59.5 ns at 3.3 GHz).
    let per_transfer = num("fetch_add-32", "cycles_per_iteration_mean") * 5.0 / (56.0 * misses);
    assert!(
        (160.0..=215.0).contains(&per_transfer),
        "fetch_add-32: {per_transfer:.0} cycles a transfer"
    );
}

/// The pairs at N = 2 are SMT siblings in the model, which share one L1:
/// no line moves, which is why the fetch_add row misses and the loops' rows
/// are met only by that (the header says so).
#[test]
fn the_pairs_are_smt_siblings_and_move_no_line() {
    for v in ["fetch_add-2", "cas-2"] {
        let misses = num(v, "misses_per_iteration");
        assert_eq!(misses, 0.0, "{v}: {misses} misses an op");
    }
}

/// The header's table quotes this run's figures.
#[test]
fn the_header_quotes_the_run() {
    let text = std::fs::read_to_string(root().join(SCENARIO)).unwrap();
    let header: String = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for v in [
        "fetch_add-2",
        "fetch_add-16",
        "fetch_add-32",
        "cas-8",
        "cas-16",
        "cas-32",
        "cas-8-retry-hits",
        "cas-16-retry-hits",
        "cas-32-retry-hits",
    ] {
        let ns = num(v, "ns_per_iteration_mean").round() as i64;
        assert!(
            header.contains(&format!(" {ns} ")) || header.contains(&format!(" {ns}\n")),
            "{v}: {ns} ns an op is not in the header's table"
        );
    }
}

/// The book's chapter 8 sets this run beside folly's figures in a table
/// typed into its prose (`| threads a line | fetch_add, 5 lines | ...`,
/// measured / simulated ns an op): each cell quotes this run and the
/// `[[measured]]` row it stands for, and the count of predictions met that
/// follows the table is this run's.
#[test]
fn the_books_table_quotes_the_run() {
    let chapter = std::fs::read_to_string(root().join("book/src/ch08-locks.md")).unwrap();
    let rows: Vec<Vec<String>> = chapter
        .lines()
        .skip_while(|l| !l.starts_with("| threads a line | fetch_add, 5 lines |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace(',', "").replace(" (fitted)", ""))
                .collect()
        })
        .collect();
    assert_eq!(
        rows.len(),
        6,
        "the chapter's table has a row per N: {rows:?}"
    );
    let ghz = 3.3;
    let mut wrong = Vec::new();
    for row in &rows {
        let n: u32 = row[0].parse().unwrap();
        for (cell, kind, variant) in [
            (&row[1], "atomics_fetch_add", format!("fetch_add-{n}")),
            (&row[2], "atomic_fetch_xor", format!("cas-{n}")),
            (&row[3], "atomic_cas", format!("cas-{n}")),
        ] {
            let (measured_ns, simulated_ns) = cell.split_once(" / ").unwrap();
            let label = if n == 1 && kind == "atomics_fetch_add" {
                format!("{} (fitted)", label(kind, n))
            } else {
                label(kind, n)
            };
            let (value, _, _) = measured(&label);
            let sim = num(&variant, "ns_per_iteration_mean").round();
            if (measured_ns.parse::<f64>().unwrap() - value / ghz).abs() > 1.0
                || simulated_ns.parse::<f64>().unwrap() != sim
            {
                wrong.push(format!(
                    "{kind}({n}thread): the book says {cell}, the run {:.0} / {sim}",
                    value / ghz
                ));
            }
        }
        if !row[4].is_empty() {
            let sim = num(&format!("cas-{n}-retry-hits"), "ns_per_iteration_mean").round();
            if row[4].parse::<f64>().unwrap() != sim {
                wrong.push(format!(
                    "cas-{n}-retry-hits: the book says {}, the run {sim}",
                    row[4]
                ));
            }
        }
    }
    let predictions: Vec<Option<bool>> = run()["measured"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["label"].as_str().unwrap().contains("(fitted)"))
        .map(|r| r["within_tolerance"].as_bool())
        .collect();
    let met = predictions.iter().filter(|m| **m == Some(true)).count();
    let words = [
        "",
        "One",
        "Two",
        "Three",
        "Four",
        "Five",
        "Six",
        "Seven",
        "Eight",
        "Nine",
        "Ten",
        "Eleven",
        "Twelve",
        "Thirteen",
        "Fourteen",
        "Fifteen",
        "Sixteen",
        "Seventeen",
    ];
    let claim = format!(
        "{} of the seventeen predictions are within 25 %",
        words[met]
    );
    let prose = chapter.split_whitespace().collect::<Vec<_>>().join(" ");
    if predictions.len() != 17 || !prose.contains(&claim) {
        wrong.push(format!(
            "{met} of {} predictions are met: the chapter should say \"{claim}\"",
            predictions.len()
        ));
    }
    assert!(
        wrong.is_empty(),
        "book/src/ch08-locks.md's folly table no longer quotes this run:\n  {}",
        wrong.join("\n  ")
    );
}
