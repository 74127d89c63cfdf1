//! `[[measured]]` metric `field-latency-per-iteration`: the latencies of a
//! thread group's accesses to named fields, per iteration. With one access
//! an iteration it is that access's latency, which `bounce trace` prints as
//! "N cycles in all" (plus the locked operation of an atomic): the figure
//! of a micro-benchmark such as ccbench. Checked on a small scenario and on
//! the ccbench scenarios' Table 2 rows.

mod common;
use common::{assert_exit, bounce, root, stdout, TempDir};

/// One CPU touches a fresh line homed on the other socket each iteration:
/// a load, a store (drained before the fence) or a fetch_add, whose locked
/// operation the machine gives as 20 cycles.
const SMALL: &str = r#"schema = 1
name = "one-access"
base_name = "load"
[machine]
preset = "icelake-sp-2s"
[machine.latency]
locked_op_cycles = 20
[run]
iterations = 6
[params]
op = 1
[structs.cl]
fields = [{ name = "v", type = "long", align = 64 }]
[instances.lines]
struct = "cl"
kind = "global"
count = 32
node = 1
[scripts]
one = """
let i = (iteration() % 16) * 2
if op == 1 { let x = lines[i].v }
if op == 2 { lines[i].v = 1 }
if op == 3 { let r = fetch_add(lines[i].v, 1) }
fence
"""
[[threads]]
name = "one"
cpus = "0"
script = "one"
[[variants]]
name = "store"
set = { "params.op" = 2 }
[[variants]]
name = "fetch-add"
set = { "params.op" = 3 }
"#;

/// A `[[measured]]` row of metric `field-latency-per-iteration` on `lines.v`.
fn latency_row(label: &str, variant: &str, threads: Option<&str>) -> String {
    format!(
        "[[measured]]\nlabel = \"{label}\"\nvariant = \"{variant}\"\n\
         metric = \"field-latency-per-iteration\"\n{}fields = [\"lines.v\"]\n\
         value = 100.0\nsource = \"none\"\n",
        threads.map_or(String::new(), |t| format!("threads = \"{t}\"\n"))
    )
}

/// The simulated column of the "measured vs simulated" table, by label.
fn simulated_of(table: &str, label: &str) -> f64 {
    let line = table
        .lines()
        .find(|l| l.contains(&format!("] {label} ")))
        .unwrap_or_else(|| panic!("no row `{label}` in:\n{table}"));
    // measured, simulated, difference: the three numbers before the target.
    let cells: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    cells[4].parse().unwrap_or_else(|_| panic!("{line}"))
}

/// The "N cycles in all" of each access of CPU `cpu` to `lines[..]` in
/// the trace (a store's drain, not its posting; no prefetch).
fn traced(scenario: &str, variant: &str, cpu: &str) -> Vec<u64> {
    let o = bounce(&["trace", scenario, "--variant", variant, "--limit", "100000"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let who = format!("] CPU {cpu} ");
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.contains(&who)
                && l.contains(" lines[")
                && !l.contains("posted")
                && !l.contains("prefetch")
        })
        .filter_map(|(k, _)| {
            lines
                .get(k + 1)?
                .trim()
                .strip_suffix(" cycles in all")?
                .rsplit(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[test]
fn the_latency_per_iteration_is_the_traced_cost_of_the_one_access() {
    let dir = TempDir::new("measured-latency");
    let scenario = dir.join("small.toml");
    let text = format!(
        "{SMALL}{}{}{}",
        latency_row("load", "load", Some("one")),
        latency_row("store", "store", None),
        latency_row("fetch_add", "fetch-add", Some("one")),
    );
    std::fs::write(&scenario, text).unwrap();
    let o = bounce(&["run", &scenario, "--out", &dir.join("out")]);
    assert_exit(&o, 0);
    let table = stdout(&o);
    assert!(table.contains("latency of lines.v by one"), "{table}");
    for (label, variant, locked_op) in [
        ("load", "load", 0),
        ("store", "store", 0),
        ("fetch_add", "fetch-add", 20),
    ] {
        let each = traced(&scenario, variant, "0");
        assert_eq!(
            each.len(),
            6,
            "{variant}: one access an iteration: {each:?}"
        );
        let mean = each.iter().sum::<u64>() as f64 / each.len() as f64;
        assert!(
            mean > 100.0,
            "{variant}: a miss to the other socket: {mean}"
        );
        assert_eq!(
            simulated_of(&table, label),
            mean + locked_op as f64,
            "{variant}: traced {each:?}\n{table}"
        );
    }
}

/// Each ccbench scenario prints Table 2 beside the model, one row per row
/// of data/sync/sosp13-table2.csv, and meets every target: the 15 % target
/// here is tests/sosp13_machines.rs's held-out band (its fitted rows are
/// within 5 %), whose KNOWN_MISSES is empty since the machine files say
/// who answers a clean copy. If a change to the coherence rules moves a row
/// out of its band, these counts follow it.
#[test]
fn the_ccbench_scenarios_set_table_2_beside_the_model() {
    let csv = std::fs::read_to_string(root().join("data/sync/sosp13-table2.csv")).unwrap();
    for (machine, file, met) in [
        (
            "opteron",
            "scenarios/shipped/ccbench-opteron.toml",
            "44 of 44 target(s) met",
        ),
        (
            "xeon",
            "scenarios/shipped/ccbench-xeon.toml",
            "27 of 27 target(s) met",
        ),
    ] {
        let dir = TempDir::new("measured-latency-ccbench");
        let o = bounce(&["run", file, "--out", &dir.join("out")]);
        assert_exit(&o, 0);
        let text = stdout(&o);
        let table = &text[text.find("measured vs simulated").expect("a table")..];
        let rows = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{machine},")))
            .count();
        assert_eq!(
            table.matches(" latency of lines.v by requester ").count(),
            rows,
            "{table}"
        );
        for (k, line) in csv
            .lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with(&format!("{machine},")))
        {
            let use_ = if line.ends_with(",fitted") {
                "fitted"
            } else {
                "held out"
            };
            assert!(
                table.contains(&format!("; {use_} (data/sync/sosp13-table2.csv:{})", k + 1)),
                "row {} of the csv: {line}\n{table}",
                k + 1
            );
        }
        assert!(table.trim_end().ends_with(met), "{table}");
    }
}

/// A row of the table is the trace's figure: a load, a store and an atomic
/// (plus the machine's 11-cycle locked operation) on the Xeon.
#[test]
fn a_ccbench_row_is_the_traced_latency_of_the_operation() {
    let file = "scenarios/shipped/ccbench-xeon.toml";
    let dir = TempDir::new("measured-latency-xeon");
    let o = bounce(&["run", file, "--out", &dir.join("out")]);
    assert_exit(&o, 0);
    let table = stdout(&o);
    for (label, variant, cpu, locked_op) in [
        (
            "load from Modified, two hops (fitted)",
            "load-modified-two-hops",
            "41",
            0,
        ),
        (
            "store on Shared, one hop (held out)",
            "store-shared-one-hop",
            "11",
            0,
        ),
        (
            "atomic on Shared, two hops (held out)",
            "fai-shared-two-hops",
            "41",
            11,
        ),
        (
            "load, in no cache, two hops (held out)",
            "load-invalid-two-hops",
            "41",
            0,
        ),
    ] {
        let each = traced(file, variant, cpu);
        assert_eq!(each.len(), 3, "{variant}: {each:?}");
        assert!(each.windows(2).all(|w| w[0] == w[1]), "{variant}: {each:?}");
        assert_eq!(
            simulated_of(&table, label),
            (each[0] + locked_op) as f64,
            "{variant}\n{table}"
        );
    }
}
