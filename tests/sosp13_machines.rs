//! The two multi-socket machines of T. David, R. Guerraoui, V. Trigonakis,
//! "Everything You Always Wanted to Know About Synchronization but Were
//! Afraid to Ask" (SOSP 2013), described as a user would
//! (scenarios/shipped/machines/opteron-6172-4s.toml and
//! xeon-e7-8867l-8s.toml), checked against the paper's Table 2
//! (data/sync/sosp13-table2.csv) through ccbench's measurements
//! (scenarios/shipped/ccbench-opteron.toml and ccbench-xeon.toml).
//!
//! Each row of the table is one variant of the machine's ccbench scenario;
//! its simulated latency is what `bounce trace` prints for the measured
//! CPU's operation on the line of iteration 1 (`lines[2]`), plus
//! `locked_op_cycles` for an atomic (which follows the line's arrival).
//!
//! The bands. A row the machine file was fitted on must come back within
//! 5 % (the fits round to whole cycles and share legs between rows). A
//! held-out row must be within 15 % of the paper's figure: ccbench's own
//! spread is under 3 % (Table 2's caption), and the machine's numactl
//! distances give the other die of an MCM and a die one HyperTransport link
//! away the same distance, 16, while Table 2's rows for the two differ by up
//! to 12 % (stores on Shared: 255 and 286 cycles), which no leg taken from
//! the distances can follow. The rows the model gets wrong for a reason it
//! cannot express yet are listed in `KNOWN_MISSES` with that reason and
//! a band of their own, so that they are shown as misses, and a change that
//! makes them worse still fails.

use std::collections::HashMap;

mod common;
use common::{assert_exit, bounce, root, stdout, TempDir};

/// One row of data/sync/sosp13-table2.csv.
struct Row {
    machine: String,
    op: String,
    state: String,
    distance: String,
    cycles: f64,
    fitted: bool,
}

fn table() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("data/sync/sosp13-table2.csv"))
        .expect("data/sync/sosp13-table2.csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("machine,op,state,distance,cycles,use"),
        "header"
    );
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 6, "{line}");
            assert!(f[5] == "fitted" || f[5] == "held-out", "{line}");
            Row {
                machine: f[0].to_string(),
                op: f[1].to_string(),
                state: f[2].to_string(),
                distance: f[3].to_string(),
                cycles: f[4].parse().expect("cycles"),
                fitted: f[5] == "fitted",
            }
        })
        .collect()
}

/// A machine's scenario, machine file and the measured CPU at each distance
/// (as the scenario's header says, after ccbench's run_*.sh scripts).
fn machine(
    name: &str,
) -> (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
) {
    match name {
        "opteron" => (
            "scenarios/shipped/ccbench-opteron.toml",
            "scenarios/shipped/machines/opteron-6172-4s.toml",
            &[
                ("same-die", "1"),
                ("same-mcm", "6"),
                ("one-hop", "12"),
                ("two-hops", "18"),
            ],
        ),
        "xeon" => (
            "scenarios/shipped/ccbench-xeon.toml",
            "scenarios/shipped/machines/xeon-e7-8867l-8s.toml",
            &[("same-die", "1"), ("one-hop", "11"), ("two-hops", "41")],
        ),
        other => panic!("no machine `{other}` in the table"),
    }
}

/// Rows the model misses for a named reason: (machine, op, state,
/// distance or "*", lowest and highest ratio simulated / measured, why).
/// Empty since the machine files say who answers a clean copy
/// (`clean_shared_line_answer`, `clean_snoop_saving_cycles`): the four
/// misses listed before (Opteron loads from Shared +20..+64 %, Xeon loads
/// from Shared one and two hops away +30 / +20 %, Xeon load from Exclusive
/// on the die +18 %) are within 7 % now, and the last of them is the row
/// `clean_snoop_saving_cycles` was fitted on.
const KNOWN_MISSES: &[(&str, &str, &str, &str, f64, f64, &str)] = &[];

/// `locked_op_cycles` as the machine file gives it.
fn locked_op_cycles(machine_file: &str) -> u64 {
    let text = std::fs::read_to_string(root().join(machine_file)).expect("machine file");
    text.lines()
        .find_map(|l| l.strip_prefix("locked_op_cycles = "))
        .expect("locked_op_cycles in the machine file")
        .trim()
        .parse()
        .expect("a number")
}

/// The simulated latency of the measured CPU's operation in `variant`, as
/// `bounce trace` prints it (the cost of the access to `lines[2]` that
/// took effect: a load, a store draining from the store buffer, an atomic).
/// `variant` empty: the scenario as written (its base).
fn traced_cycles(scenario: &str, variant: &str, cpu: &str) -> u64 {
    let mut args = vec!["trace", scenario, "--limit", "100000"];
    if !variant.is_empty() {
        args.extend(["--variant", variant]);
    }
    let o = bounce(&args);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let who = format!("] CPU {cpu} ");
    for (k, line) in lines.iter().enumerate() {
        if line.contains(&who) && line.contains(" lines[2].v ") && !line.contains("posted") {
            let detail = lines.get(k + 1).copied().unwrap_or_default();
            let cycles = detail
                .trim()
                .strip_suffix(" cycles in all")
                .and_then(|s| s.rsplit(' ').next())
                .and_then(|s| s.parse().ok());
            if let Some(c) = cycles {
                return c;
            }
        }
    }
    panic!("no miss of CPU {cpu} on lines[2] in the trace of {scenario} {variant}:\n{text}");
}

/// Every row's simulated latency: (row, simulated cycles), the atomics of
/// a row (cmpxchg, fetch_add, xchg) each checked to agree.
fn simulate(rows: &[Row]) -> Vec<(&Row, f64)> {
    let mut base_of: HashMap<&str, String> = HashMap::new();
    rows.iter()
        .map(|row| {
            let (scenario, machine_file, cpus) = machine(&row.machine);
            let base = base_of.entry(scenario).or_insert_with(|| {
                let text = std::fs::read_to_string(root().join(scenario)).unwrap();
                text.lines()
                    .find_map(|l| l.strip_prefix("base_name = \""))
                    .and_then(|l| l.strip_suffix('"'))
                    .expect("base_name")
                    .to_string()
            });
            let cpu = cpus
                .iter()
                .find(|(d, _)| *d == row.distance)
                .map(|(_, c)| *c)
                .expect("a distance of the machine");
            let (ops, extra): (Vec<&str>, u64) = if row.op == "atomic" {
                (vec!["cas", "fai", "swap"], locked_op_cycles(machine_file))
            } else {
                (vec![row.op.as_str()], 0)
            };
            let each: Vec<u64> = ops
                .iter()
                .map(|op| {
                    let variant = format!("{op}-{}-{}", row.state, row.distance);
                    let variant = if variant == *base { "" } else { &variant };
                    traced_cycles(scenario, variant, cpu) + extra
                })
                .collect();
            assert!(
                each.windows(2).all(|w| w[0] == w[1]),
                "{} {} {} {}: the atomics differ: {each:?}",
                row.machine,
                row.op,
                row.state,
                row.distance
            );
            (row, each[0] as f64)
        })
        .collect()
}

#[test]
fn table_2_fitted_rows_come_back_and_held_out_rows_stay_in_their_bands() {
    let rows = table();
    assert!(rows.iter().any(|r| r.machine == "opteron"));
    assert!(rows.iter().any(|r| r.machine == "xeon"));
    let mut failures = Vec::new();
    let mut report = String::new();
    for (row, simulated) in simulate(&rows) {
        let ratio = simulated / row.cycles;
        let known = KNOWN_MISSES.iter().find(|(m, op, state, d, ..)| {
            *m == row.machine
                && *op == row.op
                && *state == row.state
                && (*d == "*" || *d == row.distance)
        });
        let (low, high, why) = match (row.fitted, known) {
            (true, _) => (0.95, 1.05, "fitted"),
            (false, Some(&(.., low, high, why))) => (low, high, why),
            (false, None) => (0.85, 1.15, "held out"),
        };
        report.push_str(&format!(
            "{} {} {} {}: measured {} simulated {simulated} ({:+.1} %)\n",
            row.machine,
            row.op,
            row.state,
            row.distance,
            row.cycles,
            (ratio - 1.0) * 100.0
        ));
        if !(low..=high).contains(&ratio) {
            failures.push(format!(
                "{} {} {} {}: measured {} cycles, simulated {simulated}: ratio {ratio:.3} \
                 outside {low}..={high} ({why})",
                row.machine, row.op, row.state, row.distance, row.cycles
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nall rows:\n{report}",
        failures.join("\n")
    );
}

/// A known miss that the model comes to meet should leave the list: each
/// one is still outside the held-out band.
#[test]
fn every_known_miss_is_still_a_miss() {
    let rows = table();
    let simulated = simulate(&rows);
    for (m, op, state, d, ..) in KNOWN_MISSES {
        let hits: Vec<_> = simulated
            .iter()
            .filter(|(r, _)| {
                r.machine == *m
                    && r.op == *op
                    && r.state == *state
                    && (*d == "*" || r.distance == *d)
            })
            .collect();
        assert!(!hits.is_empty(), "{m} {op} {state} {d} names no row");
        assert!(
            hits.iter()
                .any(|(r, s)| !(0.85..=1.15).contains(&(s / r.cycles))),
            "{m} {op} {state} {d} is within 15 % now: take it off KNOWN_MISSES"
        );
    }
}

/// Without `hop_extra_socket_link_cycles` a leg across two QPI links costs
/// two one-link legs, and the Xeon's loads from a core two links away come
/// out a third too slow (Table 2: 400 cycles): the key is what lets a
/// socket-hop matrix meet the two-hop rows.
#[test]
fn without_the_further_link_figure_two_hops_are_a_third_too_slow() {
    let dir = TempDir::new("sosp13-xeon");
    std::fs::create_dir_all(dir.0.join("machines")).unwrap();
    let machine =
        std::fs::read_to_string(root().join("scenarios/shipped/machines/xeon-e7-8867l-8s.toml"))
            .unwrap();
    assert!(machine.contains("\nhop_extra_socket_link_cycles = 56\n"));
    let without = machine.replace("\nhop_extra_socket_link_cycles = 56\n", "\n");
    std::fs::write(dir.0.join("machines/xeon-e7-8867l-8s.toml"), without).unwrap();
    let scenario = dir.join("ccbench-xeon.toml");
    std::fs::copy(
        root().join("scenarios/shipped/ccbench-xeon.toml"),
        &scenario,
    )
    .unwrap();
    let with = traced_cycles(
        "scenarios/shipped/ccbench-xeon.toml",
        "load-modified-two-hops",
        "41",
    );
    let without = traced_cycles(&scenario, "load-modified-two-hops", "41");
    // 51 + 2 x (119 + 56) = 401 with it; 51 + 2 x (2 x 119) = 527 without.
    assert_eq!(with, 401);
    assert_eq!(without, 527);
    assert!((without as f64 / 400.0) > 1.15);
}

/// `presets show` on each machine file prints the links between sockets
/// (or the node distances) and the further link's figure where given.
#[test]
fn presets_show_prints_each_machine_file_with_its_distances() {
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/xeon-e7-8867l-8s.toml",
    ]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains(
            "hop_between_sockets_cycles = 119 cycles for the first link and \
                       hop_extra_socket_link_cycles = 56 for each further one"
        ),
        "{text}"
    );
    assert!(
        text.contains("hop_extra_socket_link_cycles      56"),
        "{text}"
    );
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/opteron-6172-4s.toml",
    ]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("node distances (as given, numactl's form)"),
        "{text}"
    );
}

/// The further link's figure is a leg like the others: given once, in
/// cycles or in nanoseconds, and within range, or an error naming it.
#[test]
fn a_bad_further_link_figure_is_an_error_naming_it() {
    let dir = TempDir::new("sosp13-bad-link");
    let machine =
        std::fs::read_to_string(root().join("scenarios/shipped/machines/xeon-e7-8867l-8s.toml"))
            .unwrap();
    let line = "\nhop_extra_socket_link_cycles = 56\n";
    for (name, replacement, expected) in [
        (
            "both.toml",
            "\nhop_extra_socket_link_cycles = 56\nhop_extra_socket_link_ns = 26.3\n",
            "`latency.hop_extra_socket_link_cycles` and `latency.hop_extra_socket_link_ns` \
             both give the leg `hop_extra_socket_link`",
        ),
        (
            "range.toml",
            "\nhop_extra_socket_link_cycles = 99999999\n",
            "99999999 is out of range 0..=1000000 (in \
             `machine.latency.hop_extra_socket_link_cycles`)",
        ),
    ] {
        std::fs::write(dir.0.join(name), machine.replace(line, replacement)).unwrap();
        let o = bounce(&["presets", "show", &dir.join(name)]);
        assert_exit(&o, 2);
        let err = common::stderr(&o);
        assert!(err.contains(expected), "{err}");
    }
}

/// The machine file `file` with `key`'s line (the first line starting
/// `key = `) removed.
fn without_key(file: &str, key: &str) -> String {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let prefix = format!("{key} = ");
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with(&prefix)).collect();
    assert!(kept.len() < text.lines().count(), "{file} has no `{key}`");
    kept.join("\n") + "\n"
}

/// The ccbench scenario `scenario` run beside `machine_text` (written as
/// the file the scenario names): the traced cycles of `variant` for `cpu`.
fn traced_with_machine(
    dir: &TempDir,
    scenario: &str,
    machine_file: &str,
    machine_text: &str,
    variant: &str,
    cpu: &str,
) -> u64 {
    std::fs::create_dir_all(dir.0.join("machines")).unwrap();
    let name = std::path::Path::new(machine_file).file_name().unwrap();
    std::fs::write(dir.0.join("machines").join(name), machine_text).unwrap();
    let scenario_name = std::path::Path::new(scenario).file_name().unwrap();
    std::fs::copy(root().join(scenario), dir.0.join(scenario_name)).unwrap();
    traced_cycles(&dir.join(scenario_name.to_str().unwrap()), variant, cpu)
}

/// Without the two keys the four rows they fixed are misses again: a read
/// of a clean copy costs what a dirty one does, and the Opteron's line
/// held Shared in one die comes from memory.
#[test]
fn without_the_clean_answer_keys_the_four_misses_come_back() {
    let xeon = "scenarios/shipped/machines/xeon-e7-8867l-8s.toml";
    let dir = TempDir::new("sosp13-no-clean-keys-xeon");
    let no_saving = without_key(xeon, "clean_snoop_saving_cycles");
    let scenario = "scenarios/shipped/ccbench-xeon.toml";
    assert_eq!(
        traced_with_machine(
            &dir,
            scenario,
            xeon,
            &no_saving,
            "load-exclusive-same-die",
            "1"
        ),
        109
    );
    // Without `holding-l3` the Forward copy's core answers, a clean copy:
    // 289 less the 17 cycles; without both keys, what Modified costs.
    let no_l3 = without_key(xeon, "clean_shared_line_answer");
    assert_eq!(
        traced_with_machine(&dir, scenario, xeon, &no_l3, "load-shared-one-hop", "11"),
        289 - 17
    );
    let neither = no_l3.replace("\nclean_snoop_saving_cycles = 17\n", "\n");
    assert_eq!(
        traced_with_machine(&dir, scenario, xeon, &neither, "load-shared-one-hop", "11"),
        289
    );
    let opteron = "scenarios/shipped/machines/opteron-6172-4s.toml";
    let dir = TempDir::new("sosp13-no-clean-keys-opteron");
    let no_die = without_key(opteron, "clean_shared_line_answer");
    assert_eq!(
        traced_with_machine(
            &dir,
            "scenarios/shipped/ccbench-opteron.toml",
            opteron,
            &no_die,
            "load-shared-same-die",
            "1"
        ),
        136
    );
}

/// `presets show` says which clean-copy rules a machine file sets.
#[test]
fn presets_show_prints_the_clean_answer_rules() {
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/xeon-e7-8867l-8s.toml",
    ]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.starts_with("  clean_snoop_saving_cycles ")
                && l.contains(" 17 ")
                && l.ends_with("given: clean_snoop_saving_cycles")),
        "{text}"
    );
    assert!(
        text.contains("clean_shared_line_answer = \"holding-l3\""),
        "{text}"
    );
    assert!(text.contains("= 65 cycles less"), "{text}");
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/opteron-6172-4s.toml",
    ]);
    let text = stdout(&o);
    assert!(
        text.contains("clean_shared_line_answer = \"holding-die\""),
        "{text}"
    );
    // The Opteron file sets no saving: the key is listed only as not set.
    assert!(
        text.lines()
            .filter(|l| l.contains("clean_snoop_saving_cycles"))
            .all(|l| l.trim_start().starts_with("not set:")),
        "{text}"
    );
}

/// Bad values of the two keys are errors naming the file, line and key.
#[test]
fn bad_clean_answer_keys_are_errors_naming_them() {
    let dir = TempDir::new("sosp13-bad-clean-keys");
    let xeon =
        std::fs::read_to_string(root().join("scenarios/shipped/machines/xeon-e7-8867l-8s.toml"))
            .unwrap();
    let opteron =
        std::fs::read_to_string(root().join("scenarios/shipped/machines/opteron-6172-4s.toml"))
            .unwrap();
    for (name, text, expected) in [
        (
            "saving.toml",
            xeon.replace(
                "\nclean_snoop_saving_cycles = 17\n",
                "\nclean_snoop_saving_cycles = 200\n",
            ),
            vec![
                "machine.latency.clean_snoop_saving_cycles",
                "200 is out of range 0..=109",
                "saving.toml:",
            ],
        ),
        (
            "kept.toml",
            opteron.replace(
                "\nclean_shared_line_answer = \"holding-die\"\n",
                "\nclean_shared_line_answer = \"holding-l3\"\n",
            ),
            vec![
                "machine.clean_shared_line_answer",
                "l3_shared_lines",
                "kept.toml:",
            ],
        ),
        (
            "value.toml",
            opteron.replace(
                "\nclean_shared_line_answer = \"holding-die\"\n",
                "\nclean_shared_line_answer = \"sometimes\"\n",
            ),
            vec![
                "holding-l3",
                "holding-die",
                "memory-or-forwarder",
                "value.toml:",
            ],
        ),
    ] {
        assert_ne!(
            text,
            if name == "saving.toml" {
                &xeon
            } else {
                &opteron
            }
            .clone()
        );
        std::fs::write(dir.0.join(name), text).unwrap();
        let o = bounce(&["presets", "show", &dir.join(name)]);
        assert_exit(&o, 2);
        let err = common::stderr(&o);
        for e in expected {
            assert!(err.contains(e), "{name}: no `{e}` in {err}");
        }
    }
}
