//! What `bounce run` prints: a sweep's table compares each case's variants
//! with the same case's base; `--metric` and `--compact` choose what the
//! table shows; `--format csv|json` prints the records in the schema of the
//! files `--out` writes.

use std::path::Path;

mod common;
use common::{assert_exit, bounce, stderr, stdout, TempDir};

/// Six cases of two variants, a few milliseconds each (shared with the
/// other sweep tests of the binary).
const SWEEP: &str = include_str!("fixtures/counter-sweep.toml");

fn sweep_file(tmp: &TempDir) -> String {
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    file
}

fn records(json: &str) -> Vec<scenarios::report::output::Record> {
    let file: scenarios::report::output::ResultsFile = serde_json::from_str(json).unwrap();
    file.records
}

#[test]
fn a_sweep_compares_each_case_with_its_own_base() {
    let tmp = TempDir::new("pivot");
    let file = sweep_file(&tmp);
    let o = bounce(&["run", &file, "-q", "--compact"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    let json = stdout(&bounce(&["run", &file, "-q", "--format", "json"]));
    let records = records(&json);
    // The table: a row per case, the axis values then each variant, the
    // padded one's %change against the base of the same case before it
    // (the per-case tables' order).
    let mut expected = String::from(
        "bounce: counter-sweep: sweep of 6 case(s) (cpus x params.step) x 2 variant(s)\n\n\
         machine icelake-sp-2s (3400 MHz): 6 case(s) x 2 variant(s)\n\n\
         throughput.total (iterations/s) per case; %change: against the same case's `base`\n",
    );
    let mut rows = vec![[
        "cpus".to_string(),
        "params.step".into(),
        "base".into(),
        "%change".into(),
        "padded".into(),
    ]];
    for pair in records.chunks(2) {
        let (base, padded) = (&pair[0], &pair[1]);
        assert_eq!(
            (base.variant.as_str(), padded.variant.as_str()),
            ("base", "padded")
        );
        assert_eq!(base.case_index, padded.case_index);
        let (b, p) = (
            base.throughput_iterations_per_second,
            padded.throughput_iterations_per_second,
        );
        let change = (p - b) / b * 100.0;
        let change = if change.abs() < 0.05 {
            "0.0%".to_string()
        } else {
            format!("{change:+.1}%")
        };
        rows.push([
            base.axes["cpus"].to_string(),
            base.axes["params.step"].to_string(),
            scenarios::report::text::si(b),
            change,
            scenarios::report::text::si(p),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap())
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        expected.push_str(&cells.join("  "));
        expected.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            expected.push_str(&rule.join("  "));
            expected.push('\n');
        }
    }
    assert_eq!(report, expected);
    // Without --compact, each case's comparison table follows, its
    // variants beside its own base.
    let full = stdout(&bounce(&["run", &file, "-q"]));
    assert!(full.starts_with(&expected), "{full}");
    let against_base = ": %change: the variant to its right against the base `base`\n";
    assert_eq!(full.matches(against_base).count(), 6);
    assert!(full.contains(&format!("\ncase cpus=44, params.step=2{against_base}")));
}

#[test]
fn metric_chooses_the_column_of_the_sweep_table() {
    let tmp = TempDir::new("metric");
    let file = sweep_file(&tmp);
    let o = bounce(&[
        "run",
        &file,
        "-q",
        "--compact",
        "--metric",
        "hitm_per_iteration",
    ]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    assert!(
        report.contains("hitm_per_iteration per case; %change: against the same case's `base`\n"),
        "{report}"
    );
    // One CPU has no HITM, in either variant.
    assert!(
        report.contains("   1            1  0.000     0.0%   0.000\n"),
        "{report}"
    );

    // The row's name in the comparison table is the same metric.
    let by_row = bounce(&[
        "run",
        &file,
        "--compact",
        "--metric",
        "cross_socket_per_iteration",
    ]);
    let by_column = bounce(&[
        "run",
        &file,
        "--compact",
        "--metric",
        "cross_socket_misses_per_iteration",
    ]);
    assert_exit(&by_row, 0);
    assert_eq!(stdout(&by_row), stdout(&by_column));
    let by_row = bounce(&["run", &file, "--compact", "--metric", "throughput.total"]);
    assert_exit(&by_row, 0);
    assert!(
        stdout(&by_row).contains("throughput.total (iterations/s) per case"),
        "{}",
        stdout(&by_row)
    );

    let o = bounce(&["run", &file, "--metric", "hitm"]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: --metric: no metric `hitm` (did you mean `hitm_per_iteration`?); \
         metrics (results.csv columns, or the report's row names such as `throughput.total`): \
         throughput_iterations_per_second, throughput_per_cpu_iterations_per_second, \
         cycles_per_iteration_mean, cycles_per_iteration_p50, cycles_per_iteration_p99, \
         ns_per_iteration_mean, misses_per_iteration, hitm_per_iteration, \
         invalidations_per_iteration, cross_socket_misses_per_iteration, \
         stall_cycles_per_iteration, spin_cycles_per_iteration, \
         queue_wait_cycles_per_iteration, measured_threads_cycles_per_iteration_mean, \
         measured_threads_throughput_iterations_per_second\n"
    );
}

#[test]
fn a_one_variant_sweep_prints_a_row_of_metrics_per_case() {
    let tmp = TempDir::new("one-variant");
    let file = tmp.join("sweep.toml");
    let at = SWEEP.find("[[variants]]").unwrap();
    let end = SWEEP.find("[sweep]").unwrap();
    std::fs::write(&file, format!("{}{}", &SWEEP[..at], &SWEEP[end..])).unwrap();
    let o = bounce(&["run", &file, "-q"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    let heading = report.lines().nth(5).unwrap();
    assert_eq!(
        heading,
        "cpus  params.step  iterations/s  iter/s per CPU  cycles/iter  p99 cycles  \
         HITM/iter  x-socket/iter  stall cyc/iter"
    );
    // Six rows, and no per-case comparison of one variant with itself.
    assert_eq!(report.lines().count(), 6 + 7, "{report}");
    assert!(!report.contains("each variant beside"));
}

#[test]
fn format_prints_what_out_writes() {
    let tmp = TempDir::new("format");
    let file = sweep_file(&tmp);
    let out = tmp.join("out");
    assert_exit(&bounce(&["run", &file, "-q", "--out", &out]), 0);
    for (format, name) in [("csv", "results.csv"), ("json", "results.json")] {
        let o = bounce(&["run", &file, "-q", "--format", format]);
        assert_exit(&o, 0);
        let written = std::fs::read_to_string(Path::new(&out).join(name)).unwrap();
        assert_eq!(stdout(&o), written, "--format {format}");
    }
    // Without a sweep too.
    let o = bounce(&["run", "scenarios/shipped/ping-pong.toml", "--format", "csv"]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    assert!(
        csv.starts_with("case_index,case_id,variant,machine,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 4, "{csv}");
}

#[test]
fn format_prints_nothing_when_a_run_fails() {
    let tmp = TempDir::new("format-failed");
    let file = tmp.join("sweep.toml");
    // Many CPUs take more than the budget; one is fine.
    let text = SWEEP.replace("iterations = 20", "iterations = 20\nmax_cycles = 3000");
    std::fs::write(&file, text).unwrap();
    let o = bounce(&["run", &file, "-q", "--format", "json"]);
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("has no result"), "{}", stderr(&o));
}

/// The per-variant detail reads as words: the per-field column names the
/// line (`line 0`), not a bare number that reads as a count, a count of one
/// is singular (`1 CPU`, `1 event`), and a variant name longer than the
/// value column widens it instead of being cut.
#[test]
fn the_detail_names_lines_counts_in_words_and_whole_variant_names() {
    let o = bounce(&["run", "scenarios/shipped/contended-counter.toml", "-q"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains(
            "\n1cpu: 1 CPU, 200 iterations in 4000 cycles (0.001 ms simulated), 1 event\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("\n  shared.value                line 0        200 "),
        "{out}"
    );
    let o = bounce(&["run", "scenarios/shipped/node-distances.toml", "-q"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("    cross-node-slit    %change  cross-socket-slit  metric\n"),
        "{out}"
    );
    assert!(!out.contains('~'), "{out}");
    assert!(
        out.contains("per node: node 0 500 (1 CPU), node 1 500 (1 CPU)\n"),
        "{out}"
    );
    // A line's fields that are consecutive elements of one array read as
    // one range, where they were cut at 60 characters (`count~`).
    let o = bounce(&["run", "scenarios/shipped/false-sharing.toml", "-q"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("  counters[0-7].value\n"), "{out}");
}

/// Three variants: the header says that each %change column is against
/// the base (kernel-test-robot style), not the column to its left; the
/// figures agree (the third's change is against the base's value).
#[test]
fn each_change_column_is_against_the_base_and_the_header_says_so() {
    let tmp = TempDir::new("three-variants");
    let file = tmp.join("three.toml");
    std::fs::write(
        &file,
        r#"schema = 1
name = "three"
machine = "icelake-sp-2s"
base_name = "w1"

[run]
iterations = 20

[params]
extra = 0

[structs.counter]
fields = [{ name = "value", type = "unsigned long" }]

[instances.ctr]
struct = "counter"
kind = "global"

[scripts]
inc = """
work 100 + 100 * extra
fetch_add(ctr.value, 1)
"""

[[threads]]
name = "one"
cpus = "0"
script = "inc"

[[variants]]
name = "w2"
set = { "params.extra" = 1 }

[[variants]]
name = "w3"
set = { "params.extra" = 2 }
"#,
    )
    .unwrap();
    let o = bounce(&["run", &file, "-q"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    let lines: Vec<&str> = report.lines().collect();
    assert!(lines[0].ends_with("3 variant(s), base `w1`"), "{report}");
    assert_eq!(
        lines[1],
        "each %change: the variant to its right against the base `w1`, not against the \
         column to its left",
        "{report}"
    );
    // cycles/iter: w1 about 100 + the atomic, w2 about 200, w3 about 300:
    // w3's change is about +200 % (against w1), not +50 % (against w2).
    let row = lines
        .iter()
        .find(|l| l.ends_with("cycles_per_iteration.mean"))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    let w1: f64 = cells[0].parse().unwrap();
    let w3: f64 = cells[4].parse().unwrap();
    let shown: f64 = cells[3].trim_end_matches('%').parse().unwrap();
    // Within the rounding of the four-digit cells.
    assert!(
        (shown - (w3 - w1) / w1 * 100.0).abs() < 0.5,
        "{row}: {shown} vs {w1} -> {w3}"
    );
}

/// The fairness line names a least and a most loaded CPU only when they
/// differ: eight CPUs of 2000 iterations each read as such, not as
/// `min 2000 (CPU 0), max 2000 (CPU 0)`. The run ends with the key to the
/// traffic tables' columns.
#[test]
fn equal_shares_are_said_once_and_the_report_ends_with_its_column_key() {
    let o = bounce(&["run", "scenarios/shipped/false-sharing.toml"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    assert!(
        report.contains("  fairness   iterations per CPU: 2000 on every CPU, spread 0.0 %\n"),
        "{report}"
    );
    assert!(!report.contains("min 2000"), "{report}");
    assert!(
        report.ends_with(scenarios::report::text::TRAFFIC_KEY),
        "{report}"
    );
}
