//! A workload no case study was built on, held to what its thread measured:
//! `scenarios/shipped/task-group-relayout.toml` (Deng Pan, "[PATCH]
//! sched/task_group: Re-layout structure to reduce false sharing",
//! linux-kernel, 25 May 2023) on the Ice Lake-SP preset as it is.
//!
//! One parameter is fitted (the work per context switch, on the base's
//! rt_se + rt_rq share of cycles); the patched share and the score change
//! are predictions. The met row must stay met, the missed one stays a miss
//! of the size and direction the scenario's header states, and the header's
//! figures must be the ones the run prints, so that a change of the model
//! that moves them fails here and is explained in the header.

mod common;

use common::{assert_exit, bounce, root};
use std::sync::OnceLock;

const SCENARIO: &str = "scenarios/shipped/task-group-relayout.toml";

/// The run's JSON (`bounce run --format json`), run once for both tests.
fn run() -> &'static serde_json::Value {
    static RUN: OnceLock<serde_json::Value> = OnceLock::new();
    RUN.get_or_init(|| {
        let path = root().join(SCENARIO);
        let o = bounce(&["run", path.to_str().unwrap(), "--format", "json"]);
        assert_exit(&o, 0);
        serde_json::from_slice(&o.stdout).unwrap()
    })
}

/// The `[[measured]]` row of that label: (simulated, within its tolerance).
fn measured(json: &serde_json::Value, label: &str) -> (f64, Option<bool>) {
    let row = json["measured"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no measured row `{label}`"));
    (
        row["simulated"].as_f64().unwrap(),
        row["within_tolerance"].as_bool(),
    )
}

fn record<'a>(json: &'a serde_json::Value, variant: &str) -> &'a serde_json::Value {
    json["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == variant)
        .unwrap_or_else(|| panic!("no record of `{variant}`"))
}

/// The header, its `#` lines joined by single spaces.
fn header() -> String {
    let text = std::fs::read_to_string(root().join(SCENARIO)).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    lines.join(" ")
}

#[test]
fn the_fit_the_met_row_and_the_stated_miss_hold() {
    let json = run();

    // The fitted row: 40000 cycles is the 5000-cycle step closest to the
    // measured 6.0 % (35000 gives 7.52 %, 45000 3.85 %).
    let (fitted, _) = measured(json, "rt_se + rt_rq share of cycles, v6.0-rc6 (fitted)");
    assert!(
        (fitted - 6.0).abs() <= 0.45,
        "the fitted share moved to {fitted:.2} %: refit work_per_switch_cycles (header)"
    );

    // Met: on a line nothing writes, rt_se and rt_rq are L1 hits.
    let (patched, met) = measured(json, "rt_se + rt_rq share of cycles, patched");
    assert_eq!(met, Some(true), "patched share {patched:.3} %");
    assert!(patched < 0.1, "patched share {patched:.3} %");

    // The stated miss: the model's gain is larger than the machine's ~5 %,
    // about +8.4 % (header), because the fit puts the switch on a saturated
    // line whose misses the patch cuts by the rt_rq loads' share.
    let (gain, met) = measured(json, "160-copy score, patched vs v6.0-rc6");
    assert_eq!(
        met,
        Some(false),
        "the score row now meets its target ({gain:.1} %): update the header"
    );
    assert!(
        (7.5..=11.0).contains(&gain),
        "score change {gain:.1} %: update the header"
    );
}

/// The header's account of the miss, in the run's own figures: the base is
/// bound by load_avg's line (most of its stall is queueing at the home),
/// and the patch removes exactly the rt_rq loads' misses from it.
#[test]
fn the_miss_is_the_saturated_line_the_header_describes() {
    let json = run();
    let base = record(json, "v6_0-rc6");
    let patched = record(json, "relayout");
    let num = |r: &serde_json::Value, key: &str| r[key].as_f64().unwrap();

    let cycles = num(base, "cycles_per_iteration_mean");
    let queued = num(base, "queue_wait_cycles_per_iteration");
    assert!(
        queued > 0.2 * cycles,
        "queued {queued} of {cycles} cycles a switch"
    );

    // 0.79 of a switch migrates (`migrate_percent`), each with one rt_rq
    // load; most miss, the rest hit right after the CPU's own add (its copy
    // answers until the next request's snoop reaches it).
    let fewer = num(base, "misses_per_iteration") - num(patched, "misses_per_iteration");
    assert!(
        (0.58..=0.72).contains(&fewer),
        "{fewer} fewer misses a switch"
    );

    // The figures the header quotes are the run's.
    let h = header();
    let (gain, _) = measured(json, "160-copy score, patched vs v6.0-rc6");
    let (fitted, _) = measured(json, "rt_se + rt_rq share of cycles, v6.0-rc6 (fitted)");
    for quoted in [
        format!("score change {:+.1} %", gain),
        format!("40000: {fitted:.2} %"),
        format!("{:.2} misses on it", num(base, "misses_per_iteration")),
    ] {
        assert!(h.contains(&quoted), "the header does not say `{quoted}`");
    }
}

/// The book's chapter 9 quotes this run in its table and its account of
/// the miss (`| ... before | 6.0 % | 5.57 % | fitted |`, "each switch puts
/// 3.4 misses on it", "19 % fewer misses, 8.4 % faster").
#[test]
fn the_books_section_quotes_the_run() {
    let json = run();
    let chapter = std::fs::read_to_string(root().join("book/src/ch09-case-studies.md")).unwrap();
    let prose = chapter.split_whitespace().collect::<Vec<_>>().join(" ");
    let num = |variant: &str, key: &str| record(json, variant)[key].as_f64().unwrap();
    let (fitted, _) = measured(json, "rt_se + rt_rq share of cycles, v6.0-rc6 (fitted)");
    let (patched, _) = measured(json, "rt_se + rt_rq share of cycles, patched");
    let (gain, _) = measured(json, "160-copy score, patched vs v6.0-rc6");
    let misses = num("v6_0-rc6", "misses_per_iteration");
    let fewer = 1.0 - num("relayout", "misses_per_iteration") / misses;
    let faster = num("relayout", "throughput_iterations_per_second")
        / num("v6_0-rc6", "throughput_iterations_per_second")
        - 1.0;
    let missing: Vec<String> = [
        format!("| 6.0 % | {fitted:.2} % | fitted |"),
        format!("| 0.1 % | {patched:.2} % | met"),
        format!("| about +5 % | {gain:+.1} % | missed"),
        format!("each switch puts {misses:.1} misses on it"),
        format!(
            "({:.0} % fewer misses, {:.1} % faster)",
            100.0 * fewer,
            100.0 * faster
        ),
    ]
    .into_iter()
    .filter(|quoted| !prose.contains(quoted.as_str()))
    .collect();
    assert!(
        missing.is_empty(),
        "book/src/ch09-case-studies.md no longer quotes this run; it should say:\n  {}",
        missing.join("\n  ")
    );
}
