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
const KNOWN_MISSES: &[(&str, &str, &str, &str, f64, f64, &str)] = &[
    (
        "opteron",
        "load",
        "shared",
        "*",
        1.0,
        1.7,
        "the model's MOESI has no clean supplier: a line only Shared copies hold comes from \
         memory (136 cycles on the die, 220 one link away); on Magny-Cours the probe filter \
         tracks dies, a die whose cores share a line answers for it, and Table 2's loads from \
         Shared cost what loads from Modified do",
    ),
    (
        "xeon",
        "load",
        "shared",
        "one-hop",
        1.0,
        1.4,
        "the remote socket's inclusive L3 answers a clean line without snooping a core (Table \
         2: 223 against 289 from Modified, the L3 hit's 44 against the transfer's 109 on the \
         die); the model's cross-socket read costs its legs whatever the line's state",
    ),
    (
        "xeon",
        "load",
        "shared",
        "two-hops",
        1.0,
        1.4,
        "as one hop: the remote L3 answers a clean line",
    ),
    (
        "xeon",
        "load",
        "exclusive",
        "same-die",
        1.0,
        1.25,
        "Table 2 has a load from Exclusive on the die faster (92) than from Modified (109); \
         the model charges both the L3 transfer",
    ),
];

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
