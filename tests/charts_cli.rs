//! Charts through the binary: `run --out DIR` writes `DIR/charts/*.svg`, the
//! same bytes on every run and with any number of host threads.

use std::path::Path;
use std::process::Output;

mod common;
use common::{assert_exit, bounce, TempDir};

/// Fails with both streams unless the run succeeded.
#[track_caller]
fn assert_ok(o: &Output) {
    assert_exit(o, 0);
}

const SWEEP: &str = r#"schema = 1
name = "chart-sweep"
machine = "icelake-sp-2s"
seed = 5

[run]
iterations = 20

[structs.counter]
fields = [
  { name = "value", type = "unsigned long" },
  { name = "flag", type = "int" },
  { name = "other", type = "unsigned long" },
]

[instances.ctr]
struct = "counter"
kind = "global"

[scripts]
inc = """
fetch_add(ctr.value, 1)
ctr.other = ctr.other + 1
"""

[[threads]]
name = "workers"
cpus = "0"
script = "inc"

[[variants]]
name = "padded"
set = { "structs.counter.fields.other.align" = 64 }

[sweep]
cpus = [1, 2, 44]
"#;

/// The charts directory's files, by path under it (`cases/cpus_1/c2c.svg`).
fn charts(dir: &str) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, folder: &Path, files: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(folder).expect("charts directory") {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let name = path.strip_prefix(root).unwrap().to_string_lossy();
                files.push((name.replace('\\', "/"), std::fs::read(&path).unwrap()));
            }
        }
    }
    let root = Path::new(dir).join("charts");
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    files
}

/// One test on purpose: the same sweep run three times (two with
/// `--jobs 2`, one with `--jobs 1`), the charts compared, then the first
/// run's charts checked for what each shows.
#[test]
fn run_writes_the_same_charts_whatever_the_jobs() {
    let tmp = TempDir::new("jobs");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let (a, b, c) = (tmp.join("a"), tmp.join("b"), tmp.join("c"));
    let case_charts = "--case-charts";
    assert_ok(&bounce(&[
        "--jobs",
        "2",
        "run",
        &file,
        "--out",
        &a,
        "-q",
        case_charts,
    ]));
    assert_ok(&bounce(&[
        "--jobs",
        "2",
        "run",
        &file,
        "--out",
        &b,
        "-q",
        case_charts,
    ]));
    assert_ok(&bounce(&[
        "--jobs",
        "1",
        "run",
        &file,
        "--out",
        &c,
        "-q",
        case_charts,
    ]));
    let first = charts(&a);
    let names: Vec<&str> = first.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "cases/cpus_1/attribution.svg",
            // One CPU shares no line: no c2c chart for cpus=1.
            "cases/cpus_1/lines-counter-base.svg",
            "cases/cpus_1/lines-counter-padded.svg",
            "cases/cpus_2/attribution.svg",
            "cases/cpus_2/c2c.svg",
            "cases/cpus_2/lines-counter-base.svg",
            "cases/cpus_2/lines-counter-padded.svg",
            "cases/cpus_44/attribution.svg",
            "cases/cpus_44/c2c.svg",
            "cases/cpus_44/lines-counter-base.svg",
            "cases/cpus_44/lines-counter-padded.svg",
            "comparison.svg",
            "scaling-cycles.svg",
            "scaling-throughput.svg",
        ]
    );
    assert!(first == charts(&b), "two runs wrote different charts");
    assert!(first == charts(&c), "the charts depend on --jobs");
    let text = |name: &str| {
        String::from_utf8(first.iter().find(|f| f.0 == name).unwrap().1.clone()).unwrap()
    };
    let scaling = text("scaling-throughput.svg");
    for s in [
        // The title says what is drawn against what.
        "chart-sweep: throughput against running CPUs on icelake-sp-2s",
        // 1 to 44 CPUs: a doubling sweep, on a log2 axis.
        "running CPUs (count), log2 scale",
        "throughput (iterations per simulated second)",
        "socket boundary",
        "padded",
    ] {
        assert!(scaling.contains(s), "scaling lacks {s}");
    }
    // The legend names the variants alone: one machine, no other axis.
    assert!(!scaling.contains("base, "), "{scaling}");
    assert!(text("scaling-cycles.svg")
        .contains("chart-sweep: cycles per iteration against running CPUs on icelake-sp-2s"));
    // Each case's variant against the same case's base, a group per case.
    let comparison = text("comparison.svg");
    for s in [
        // One variant compared, so no legend: the title names it.
        "chart-sweep: `padded` throughput against `base`, per case on icelake-sp-2s",
        "throughput change against the same case",
        "cpus=1",
        "cpus=2",
        "cpus=44",
    ] {
        assert!(comparison.contains(s), "comparison lacks {s}");
    }
    // The base is not a bar of its own: the background and three groups
    // of one bar.
    assert_eq!(comparison.matches("<rect").count(), 1 + 3, "{comparison}");
    let attribution = text("cases/cpus_44/attribution.svg");
    assert!(attribution.contains("per-field attribution (cpus=44)"));
    assert!(attribution.contains("HITM per iteration (count)"));
    assert!(attribution.contains("cycles waited per iteration, stalled or spinning (cycles)"));
    assert!(attribution.contains("ctr.value"));
    let lines = text("cases/cpus_44/lines-counter-padded.svg");
    assert!(lines.contains("struct counter, variant padded"));
    assert!(
        lines.contains("line 1"),
        "the padded field is on the second line"
    );

    // A later run removes charts it no longer makes.
    std::fs::write(Path::new(&a).join("charts/stale.svg"), "x").unwrap();
    assert_ok(&bounce(&["run", &file, "--out", &a, "-q", case_charts]));
    assert!(charts(&a) == first);
    // Without --case-charts, the sweep's summary alone: the cases' own
    // charts go, and their folders.
    let o = bounce(&["run", &file, "--out", &a]);
    assert_ok(&o);
    let names: Vec<String> = charts(&a).into_iter().map(|f| f.0).collect();
    assert_eq!(
        names,
        [
            "comparison.svg",
            "scaling-cycles.svg",
            "scaling-throughput.svg"
        ]
    );
    assert!(!Path::new(&a).join("charts/cases").exists());
    // ... and it says where the rest is.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(
            "/charts`: 3 for the sweep; each case's own (attribution, c2c, line maps; 3 \
             cases) with --case-charts"
        ),
        "{stderr}"
    );
}

#[test]
fn a_one_variant_sweep_draws_no_comparison() {
    let tmp = TempDir::new("one-variant");
    let file = tmp.join("sweep.toml");
    let at = SWEEP.find("[[variants]]").unwrap();
    let end = SWEEP.find("[sweep]").unwrap();
    std::fs::write(&file, format!("{}{}", &SWEEP[..at], &SWEEP[end..])).unwrap();
    let out = tmp.join("out");
    assert_ok(&bounce(&["run", &file, "--out", &out, "-q"]));
    let names: Vec<String> = charts(&out).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["scaling-cycles.svg", "scaling-throughput.svg"]);
}

#[test]
fn merged_shards_write_the_charts_of_an_unsharded_run() {
    let tmp = TempDir::new("merge");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let (full, s0, s1, merged) = (
        tmp.join("full"),
        tmp.join("s0"),
        tmp.join("s1"),
        tmp.join("m"),
    );
    assert_ok(&bounce(&[
        "run",
        &file,
        "--out",
        &full,
        "-q",
        "--case-charts",
    ]));
    assert_ok(&bounce(&[
        "run", &file, "--shard", "0/2", "--out", &s0, "-q",
    ]));
    assert_ok(&bounce(&[
        "run", &file, "--shard", "1/2", "--out", &s1, "-q",
    ]));
    assert_ok(&bounce(&["merge", &merged, &s1, &s0, "--case-charts"]));
    assert!(
        charts(&full) == charts(&merged),
        "the merge drew other charts"
    );
}

#[test]
fn trace_svg_draws_the_first_transactions_and_says_how_many_are_left_out() {
    let dir = TempDir::new("timeline");
    let svg = dir.join("timeline.svg");
    let o = bounce(&[
        "trace",
        "scenarios/shipped/false-sharing.toml",
        "--limit",
        "3",
        "--svg",
        &svg,
        "--svg-steps",
        "6",
    ]);
    assert_ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("timeline: the first 6 of ")
            && last.contains(&format!("coherence transaction(s) drawn to {svg}; "))
            && last.ends_with("more not drawn (--svg-steps 6; at most 200)"),
        "{last}"
    );
    let text = std::fs::read_to_string(&svg).expect("the SVG");
    // The first transaction is the first access the trace prints: which CPU
    // goes first at cycle 0 is the seed's draw.
    let first = out
        .lines()
        .nth(1)
        .and_then(|l| l.split("] CPU ").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .expect("the trace's first access");
    let lane = format!("CPU {first} (core {first})");
    let caption = format!("CPU {first} load counters[{first}].value (line 0)");
    for expected in [
        "false-sharing: coherence messages, variant packed on icelake-sp-2s",
        "the first 6 of ",
        &lane,
        "snoop filter node 0",
        &caption,
        "GetS",
        "Data (DRAM)",
        "Fwd-GetS",
        "cycle sent → arrived",
    ] {
        assert!(text.contains(expected), "timeline lacks {expected}");
    }
    // Six transactions, six captions: the counters' line 0 and, on Ice
    // Lake, the adjacent-line prefetches of its buddy, line 1. (Six, so
    // that a forwarded read is among them: the CPUs start at seeded
    // offsets, and the first two misses both go to memory or stay in L3.)
    assert_eq!(
        text.matches("(line 0): ").count() + text.matches("(line 1): ").count(),
        6
    );
    // The same run, the same bytes.
    let again = dir.join("again.svg");
    let o = bounce(&[
        "trace",
        "scenarios/shipped/false-sharing.toml",
        "--limit",
        "3",
        "--svg",
        &again,
        "--svg-steps",
        "6",
    ]);
    assert_ok(&o);
    assert_eq!(text, std::fs::read_to_string(&again).unwrap());
    for bad in [
        vec![
            "trace",
            "scenarios/shipped/false-sharing.toml",
            "--svg",
            &svg,
            "--svg-steps",
            "0",
        ],
        vec![
            "trace",
            "scenarios/shipped/false-sharing.toml",
            "--svg",
            &svg,
            "--svg-steps",
            "201",
        ],
        vec![
            "trace",
            "scenarios/shipped/false-sharing.toml",
            "--svg-steps",
            "5",
        ],
    ] {
        assert_eq!(bounce(&bad).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn trace_svg_can_leave_out_the_adjacent_line_prefetches() {
    let dir = TempDir::new("timeline-no-prefetch");
    let svg = dir.join("timeline.svg");
    let o = bounce(&[
        "trace",
        "book/scenarios/mesi-three-cpus.toml",
        "--variant",
        "mesif",
        "--limit",
        "1",
        "--svg",
        &svg,
        "--svg-no-prefetch",
    ]);
    assert_ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "timeline: the first 4 of 4 coherence transaction(s) drawn to {svg} \
             (3 adjacent-line prefetch(es) left out)"
        )
    );
    let text = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(!text.contains("prefetch (adjacent line)"));
    assert!(text.contains("adjacent-line prefetches left out"));
    // The cross-socket read goes through the home agent; DRAM data comes
    // from memory; the legend names only the kinds drawn.
    for expected in [
        "snoop filter node 1",
        "home agent node 0",
        "memory node 0",
        "GetS (snoop filter miss)",
        "Read (DRAM)",
    ] {
        assert!(text.contains(expected), "timeline lacks {expected}");
    }
    // Without the flag the prefetches are drawn; the flag needs --svg.
    assert_eq!(
        bounce(&[
            "trace",
            "book/scenarios/mesi-three-cpus.toml",
            "--svg-no-prefetch"
        ])
        .status
        .code(),
        Some(2)
    );
}

/// On an AMD preset a line read by a core of another CCX is Shared in both;
/// a third core, in the first reader's CCX, gets it from that CCX's L3,
/// which keeps lines several cores read: the trace says so, and the
/// timeline draws the L3 answering.
const L3_SUPPLIES: &str = r#"schema = 1
name = "l3-supplies"
machine = "epyc-milan-2s"
seed = 1
[run]
iterations = 1
[structs.word]
fields = [{ name = "value", type = "unsigned long" }]
[instances.w]
struct = "word"
kind = "global"
node = 0
[scripts]
first = "let x = w.value"
second = """
work 3000
let x = w.value
"""
third = """
work 6000
let x = w.value
"""
[[threads]]
name = "first"
cpus = "0"
script = "first"
[[threads]]
name = "second"
cpus = "8"
script = "second"
[[threads]]
name = "third"
cpus = "1"
script = "third"
"#;

#[test]
fn the_trace_and_timeline_show_the_l3_answering() {
    let dir = TempDir::new("l3-supplies");
    let scenario = dir.join("l3.toml");
    std::fs::write(&scenario, L3_SUPPLIES).unwrap();
    let svg = dir.join("timeline.svg");
    let o = bounce(&["trace", &scenario, "--svg", &svg]);
    assert_ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    // The access by CPU 1 and, on the next line, how it was served.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("] CPU 1   load w.value"))
        .unwrap_or_else(|| panic!("no load by CPU 1:\n{out}"));
    assert_eq!(
        lines[at + 1].trim(),
        "miss I->S; served by its L3 (domain 0), which keeps the shared line; 46 cycles in all",
        "{out}"
    );
    let text = std::fs::read_to_string(&svg).expect("the SVG");
    for expected in ["L3 0", "Data (L3 hit)"] {
        assert!(text.contains(expected), "timeline lacks {expected}");
    }
}

#[test]
fn measured_figures_are_drawn_against_their_targets() {
    let tmp = TempDir::new("measured-chart");
    let out = tmp.join("out");
    assert_ok(&bounce(&[
        "run",
        "tests/fixtures/ping-pong-measured-sweep.toml",
        "--out",
        &out,
        "-q",
    ]));
    let files = charts(&out);
    let (_, svg) = files
        .iter()
        .find(|(n, _)| n == "measured.svg")
        .expect("measured.svg is drawn");
    let svg = String::from_utf8_lossy(svg);
    // Each figure numbered and named as the table names it, with its case.
    assert!(svg.contains("pp-sweep: simulated against measured"));
    assert!(svg.contains("[1] same socket (threads.pair.cpus=&quot;0,1&quot;)"));
    assert!(svg.contains("[2] cross socket (threads.pair.cpus=&quot;0,40&quot;)"));
    // The one with a target has its target beside its figures; the other
    // says it has none, and the key says why it has no bar.
    assert!(svg.contains("vs 51.3 ns (target ±5.00)"), "{svg}");
    assert!(svg.contains("vs 107.8 ns (no target)"), "{svg}");
    assert!(svg.contains("no bar: the figure has no target"));
}

/// Two measurements in one file: a fast call (the base, and `fast-2`) and a
/// slow one (`slow`, the baseline of `slow-preempt`); sched/preempt brings
/// its per-CPU `preempt_count`, which only `slow-preempt`'s code names.
const BASELINES: &str = r#"schema = 1
name = "baselines"
machine = "icelake-sp-2s"
base_name = "fast"
use = ["sched/preempt"]

[run]
iterations = 20

[params]
slow = 0

[structs.counter]
fields = [{ name = "value", type = "unsigned long" }]

[instances.ctr]
struct = "counter"
kind = "global"

[scripts]
inc = """
work 1 + 2000 * slow
fetch_add(ctr.value, 1)
"""

[[threads]]
name = "workers"
cpus = "0-3"
script = "inc"

[[variants]]
name = "fast-2"
set = { "run.iterations" = 30 }

[[variants]]
name = "slow"
baseline = "slow"
set = { "params.slow" = 1 }

[[variants]]
name = "slow-preempt"
baseline = "slow"
[variants.set]
"params.slow" = 1
"scripts.inc" = """
work 1 + 2000 * slow
preempt_disable()
fetch_add(ctr.value, 1)
preempt_enable()
"""
"#;

#[test]
fn variants_are_compared_with_their_own_baseline_only() {
    let tmp = TempDir::new("baselines");
    let file = tmp.join("baselines.toml");
    std::fs::write(&file, BASELINES).unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "--quiet"]);
    assert_ok(&o);
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        report
            .lines()
            .next()
            .unwrap()
            .contains("base `fast`, each variant beside its baseline (`fast`, `slow`)"),
        "{report}"
    );
    assert_eq!(
        report.lines().nth(1),
        Some(
            "each %change: the variant to its right against its table's first column, \
             the baseline it names"
        ),
        "{report}"
    );
    // The text report: `slow` heads its own table, beside `slow-preempt`.
    let heads: Vec<&str> = report
        .lines()
        .filter(|l| l.ends_with("  metric"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(heads, ["fast", "slow"], "{report}");
    let slow_table = report
        .lines()
        .find(|l| l.trim_start().starts_with("slow ") && l.ends_with("  metric"))
        .unwrap();
    assert_eq!(
        slow_table.split_whitespace().collect::<Vec<_>>(),
        ["slow", "%change", "slow-preempt", "metric"]
    );
    // The chart: each bar against its own baseline, never slow against fast.
    let svg = std::fs::read_to_string(Path::new(&out).join("charts/comparison.svg")).unwrap();
    assert!(svg.contains("fast-2 vs fast"), "{svg}");
    assert!(svg.contains("slow-preempt vs slow"), "{svg}");
    assert!(
        !svg.contains("slow vs fast") && !svg.contains(">slow<"),
        "{svg}"
    );
    // The results say which baseline each variant has.
    let json = std::fs::read_to_string(Path::new(&out).join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["baselines"],
        serde_json::json!({"fast-2": "fast", "slow-preempt": "slow"})
    );
}

#[test]
fn instances_no_running_code_names_are_not_charted_or_reported() {
    let tmp = TempDir::new("unnamed");
    let file = tmp.join("unnamed.toml");
    std::fs::write(&file, BASELINES.replace("baseline = \"slow\"\n", "")).unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "--quiet"]);
    assert_ok(&o);
    let names: Vec<String> = charts(&out).into_iter().map(|(n, _)| n).collect();
    // Only `slow-preempt` runs code that names `preempt_count`.
    assert!(
        names.contains(&"lines-preempt_count_pcpu-slow-preempt.svg".to_string()),
        "{names:?}"
    );
    for v in ["fast", "fast-2", "slow"] {
        assert!(
            !names.contains(&format!("lines-preempt_count_pcpu-{v}.svg")),
            "{names:?}"
        );
    }
    let fields = std::fs::read_to_string(Path::new(&out).join("fields.csv")).unwrap();
    let preempt_rows: Vec<&str> = fields
        .lines()
        .filter(|l| l.contains("preempt_count.count"))
        .collect();
    assert!(!preempt_rows.is_empty());
    assert!(
        preempt_rows.iter().all(|l| l.contains(",slow-preempt,")),
        "{preempt_rows:?}"
    );
    // The report says once per variant what it left out and why.
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    let notes: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("not reported: `preempt_count`"))
        .collect();
    assert_eq!(notes.len(), 3, "{report}");
    assert!(notes[0].contains("no script or procedure this variant runs names it"));
}

/// One CPU measured (`caller`, as a `[[measured]]` row says) while seven
/// others spin through cheap iterations of their own: over every CPU the
/// variants would look alike.
const MEASURED_GROUP: &str = r#"schema = 1
name = "measured-group"
machine = "icelake-sp-2s"
seed = 1
base_name = "short"

[run]
iterations = 50

[params]
calls = 1

[structs.counter]
fields = [{ name = "value", type = "u64" }]

[instances.c]
struct = "counter"
kind = "global"

[scripts]
caller = """
let i = 0
while i < calls {
  fetch_add(c.value, 1)
  work 40
  i = i + 1
}
"""
idle = "work 10"

[[threads]]
name = "caller"
cpus = "0"
script = "caller"

[[threads]]
name = "others"
cpus = "1-7"
script = "idle"

[[variants]]
name = "long"
[variants.set]
"params.calls" = 4

[[measured]]
label = "a call"
variant = "short"
metric = "cycles-per-iteration"
threads = "caller"
value = 50
source = "assumed for the test"
tolerance = 10

[[measured]]
label = "four calls"
variant = "long"
metric = "cycles-per-iteration"
threads = "caller"
value = 200
source = "assumed for the test"
tolerance = 40
"#;

#[test]
fn the_comparison_is_over_the_thread_group_the_measured_rows_measure() {
    let tmp = TempDir::new("measured-group");
    let file = tmp.join("measured-group.toml");
    std::fs::write(&file, MEASURED_GROUP).unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "--quiet"]);
    assert_ok(&o);
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        report.contains(
            "rows ending \"of `caller`\" are over the thread group the scenario's \
             [[measured]] rows measure; rows marked \"every CPU\" over every CPU that runs \
             a script"
        ),
        "{report}"
    );
    // A row with a unit carries the mark inside the unit's brackets.
    assert!(
        report
            .lines()
            .any(|l| l.ends_with("throughput.total (iterations/s, every CPU)")),
        "{report}"
    );
    // The caller's four calls take about four times one call's cycles.
    let row = report
        .lines()
        .find(|l| l.ends_with("cycles_per_iteration.mean of `caller`"))
        .unwrap_or_else(|| panic!("{report}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let (short, change, long) = (
        cells[0].parse::<f64>().unwrap(),
        cells[1],
        cells[2].parse::<f64>().unwrap(),
    );
    assert!(long > 3.0 * short, "{row}");
    assert!(change.starts_with('+'), "{row}");
    // The chart's bar is that change, and says of what.
    let svg = std::fs::read_to_string(Path::new(&out).join("charts/comparison.svg")).unwrap();
    assert!(
        svg.contains(
            "cycles per iteration of `caller` (CPU 0, as measured): change against `short` (%)"
        ),
        "{svg}"
    );
    assert!(svg.contains(change), "{change} not in {svg}");
    let json = std::fs::read_to_string(Path::new(&out).join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["records"][0]["measured_threads"]["threads"], "caller");
    assert_eq!(v["records"][0]["measured_threads"]["cpu_list"], "0");
}

#[test]
fn measured_chart_figures_say_their_unit() {
    let tmp = TempDir::new("measured-unit");
    let file = tmp.join("measured-unit.toml");
    std::fs::write(&file, MEASURED_GROUP).unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "--quiet"]);
    assert_ok(&o);
    let svg = std::fs::read_to_string(Path::new(&out).join("charts/measured.svg")).unwrap();
    // `cycles-per-iteration` rows are in cycles, said after both figures.
    assert!(svg.contains(" vs 50.0 cycles (target"), "{svg}");
    assert!(svg.contains(" vs 200.0 cycles (target ±40.0)"), "{svg}");
}

/// An instance that code the variant runs names but no CPU accesses in the
/// run (a branch never taken: a lock's slow path when it is not
/// contended) has no rows in the results files, no line map, and a line
/// in the report saying why.
#[test]
fn instances_no_cpu_accessed_are_not_charted_and_the_report_says_why() {
    let tmp = TempDir::new("unaccessed");
    let file = tmp.join("unaccessed.toml");
    std::fs::write(
        &file,
        r#"schema = 1
name = "unaccessed"
machine = "icelake-sp-2s"
[run]
iterations = 20
[structs.counter]
fields = [{ name = "value", type = "u64" }]
[structs.spare]
fields = [{ name = "slot", type = "u64" }]
[instances.ctr]
struct = "counter"
kind = "global"
[instances.fallback]
struct = "spare"
kind = "global"
[scripts]
inc = """
let old = fetch_add(ctr.value, 1)
if old < 0 {
  fallback.slot = 1
}
"""
[[threads]]
name = "w"
cpus = "0-1"
script = "inc"
"#,
    )
    .unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "--quiet"]);
    assert_ok(&o);
    let names: Vec<String> = charts(&out).into_iter().map(|(n, _)| n).collect();
    assert!(
        names.contains(&"lines-counter-base.svg".to_string()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"lines-spare-base.svg".to_string()),
        "{names:?}"
    );
    let fields = std::fs::read_to_string(Path::new(&out).join("fields.csv")).unwrap();
    assert!(!fields.contains("fallback.slot"), "{fields}");
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        report.contains(
            "not reported: `fallback` (code this variant runs names it, but no CPU accessed it \
             in the measured iterations: a branch never taken, such as a lock's slow path)"
        ),
        "{report}"
    );
}

/// A sweep without a `cpus` axis draws its metrics against its first
/// numeric axis, a line per variant (and per value of the other axes,
/// named), and each case's own charts only on request.
#[test]
fn a_sweep_without_cpus_draws_its_metrics_against_its_numeric_axis() {
    let tmp = TempDir::new("numeric-axis");
    let file = tmp.join("sweep.toml");
    let sweep = SWEEP.replace(
        "[sweep]\ncpus = [1, 2, 44]\n",
        "[sweep]\n\"run.iterations\" = [10, 20, 40]\n\"threads.workers.cpus\" = [\"0-1\", \"0-3\"]\n",
    );
    std::fs::write(&file, sweep).unwrap();
    let out = tmp.join("out");
    assert_ok(&bounce(&["run", &file, "--out", &out, "-q"]));
    let files = charts(&out);
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        ["comparison.svg", "sweep-cycles.svg", "sweep-throughput.svg"]
    );
    let svg = String::from_utf8(files[2].1.clone()).unwrap();
    for s in [
        "chart-sweep: throughput against run.iterations on icelake-sp-2s",
        "padded, threads.workers.cpus=0-3",
    ] {
        assert!(svg.contains(s), "sweep-throughput.svg lacks {s}: {svg}");
    }
}

/// A sweep's pivot table and grouped comparison compare what the run
/// report compares: the cycles per iteration of the thread group the
/// `[[measured]]` rows measure, when every run has it.
#[test]
fn a_sweep_compares_the_measured_thread_group_as_the_run_report_does() {
    let tmp = TempDir::new("measured-group-sweep");
    let file = tmp.join("sweep.toml");
    let at = MEASURED_GROUP.find("[[measured]]").unwrap();
    let rows = &MEASURED_GROUP[at..];
    let per_case =
        |case: &str| rows.replace("[[measured]]", &format!("[[measured]]\ncase = \"{case}\""));
    std::fs::write(
        &file,
        format!(
            "{}[sweep]\n\"threads.others.cpus\" = [\"1-7\", \"1-3\"]\n\n{}\n{}",
            &MEASURED_GROUP[..at],
            per_case("threads.others.cpus=1-7"),
            per_case("threads.others.cpus=1-3")
        ),
    )
    .unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "-q", "--compact"]);
    assert_ok(&o);
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        report.contains(
            "cycles_per_iteration.mean of `caller` per case; %change: against the same case's `short`"
        ),
        "{report}"
    );
    // The caller's four calls take about four times one call's cycles, in
    // both cases: over every CPU the idle others would hide it.
    let table: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("1-"))
        .collect();
    assert_eq!(table.len(), 2, "{report}");
    for row in &table {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let (short, long) = (
            cells[1].parse::<f64>().unwrap(),
            cells[3].parse::<f64>().unwrap(),
        );
        assert!(long > 3.0 * short, "{row}");
    }
    let svg = std::fs::read_to_string(Path::new(&out).join("charts/comparison.svg")).unwrap();
    assert!(
        svg.contains(
            "cycles per iteration of `caller` (CPU 0, as measured) change against the same \
             case&apos;s `short` (%)"
        ),
        "{svg}"
    );
    // results.csv carries the group's figures.
    let csv = std::fs::read_to_string(Path::new(&out).join("results.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = head
        .iter()
        .position(|c| *c == "measured_threads_cycles_per_iteration_mean")
        .expect("measured_threads column");
    let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(head[column - 3], "measured_threads");
    assert_eq!(first[column - 3], "caller");
    assert!(first[column].parse::<f64>().unwrap() > 0.0, "{csv}");
}
