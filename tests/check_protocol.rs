//! `bounce check-protocol` as a user runs it: what it prints and its exit
//! codes. (The exhaustive runs at 3 caches x 2 lines x 2 values, and the
//! planted bugs the checker must catch, are sim-core's unit tests.)

use std::process::{Command, Output};

fn bounce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(args)
        .output()
        .expect("run bounce")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

#[test]
fn a_small_configuration_of_each_protocol_holds() {
    let o = bounce(&[
        "check-protocol",
        "--caches",
        "2",
        "--lines",
        "1",
        "--values",
        "2",
        "--buffer",
        "1",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    for name in ["MESI", "MESIF", "MOESI"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} line in\n{out}"));
        assert!(
            line.starts_with(&format!(
                "{name}: 2 caches x 1 lines x 2 values, store buffers of 1, evictions: "
            )),
            "{line}"
        );
        for part in [
            "states, ",
            "transitions, depth ",
            "quiescent states, ",
            " s",
        ] {
            assert!(line.contains(part), "{line}");
        }
    }
    assert_eq!(
        out.matches("  no violation: every invariant holds in every reachable state")
            .count(),
        3,
        "{out}"
    );
}

#[test]
fn one_protocol_can_be_chosen() {
    let o = bounce(&[
        "check-protocol",
        "--protocol",
        "moesi",
        "--caches",
        "2",
        "--lines",
        "1",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.starts_with("MOESI: 2 caches x 1 lines x 2 values, store buffers of 1, evictions: "),
        "{out}"
    );
    // The machine and the routes its steps took: caches 0 and 1 share an L3.
    assert!(
        out.lines().nth(1).is_some_and(|l| l.starts_with(
            "  machine: 2 cache(s) per L3 domain, L3 victim-with-sharing, \
             broadcast-shared directory; steps' accesses: "
        ) && l.contains(" L3 hits, ")),
        "{out}"
    );
    assert!(!out.contains("MESI:"), "{out}");
}

/// Evictions are explored by default; `--no-evictions` leaves them out,
/// and the system without them has fewer states.
#[test]
fn evictions_are_on_by_default_and_can_be_left_out() {
    let states = |extra: &[&str]| {
        let mut args = vec![
            "check-protocol",
            "--protocol",
            "mesi",
            "--caches",
            "2",
            "--lines",
            "1",
        ];
        args.extend_from_slice(extra);
        let o = bounce(&args);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}");
        let (head, rest) = out.split_once(": ").unwrap();
        assert_eq!(head, "MESI");
        let (config, counts) = rest.split_once(": ").unwrap();
        let states: u64 = counts.split(' ').next().unwrap().parse().unwrap();
        (config.to_string(), states)
    };
    let (with, with_states) = states(&[]);
    let (without, without_states) = states(&["--no-evictions"]);
    assert!(with.ends_with(", evictions"), "{with}");
    assert!(!without.contains("evictions"), "{without}");
    assert!(
        with_states > without_states,
        "{with_states} {without_states}"
    );
}

#[test]
fn a_configuration_out_of_range_is_bad_input() {
    let o = bounce(&["check-protocol", "--caches", "7"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "error: caches 7 is out of range 1..=6 (the state space grows exponentially with it)\n"
    );
    let o = bounce(&["check-protocol", "--protocol", "msi"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The states kept are bounded by the process's memory limit, not only by
/// their count: `--protocol moesi --caches 4` passed 4.5 GB and kept
/// growing. It stops at the limit, says how far it got and why.
#[test]
fn a_memory_limit_too_small_gives_no_verdict_and_says_so() {
    let o = bounce(&[
        "check-protocol",
        "--protocol",
        "moesi",
        "--caches",
        "4",
        "--set-limit",
        "host_memory_bytes=20000000",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("MOESI: 4 caches x 2 lines x 2 values, store buffers of 1, evictions: "),
        "{out}"
    );
    let err = text(&o.stderr);
    let (states, rest) = err
        .strip_prefix("error: stopped at ")
        .and_then(|e| e.split_once(" states, depth "))
        .unwrap_or_else(|| panic!("{err}"));
    let states: u64 = states.parse().unwrap();
    assert!(out.contains(&format!(": {states} states, ")), "{out}");
    assert!(
        rest.ends_with(
            " MiB, more than the limit of 19 MiB; raise it with `--set-limit \
             host_memory_bytes=N`, or check fewer caches, lines or values\n"
        ),
        "{err}"
    );
    assert!(
        rest.contains(", without a verdict: the states kept would take about "),
        "{err}"
    );
}

#[test]
fn a_budget_too_small_gives_no_verdict() {
    let o = bounce(&[
        "check-protocol",
        "--protocol",
        "mesi",
        "--max-states",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).starts_with("MESI: 3 caches x 2 lines x 2 values"));
    assert_eq!(
        text(&o.stderr),
        "error: stopped at 100 states, depth 2, without a verdict (raise --max-states)\n"
    );
}

/// `--ownership-prefetch` adds requests for ownership with no store
/// attached (of the buffered stores' lines, or of any line): the summary
/// names them, every invariant holds, and each kind adds states, any line
/// more than the buffered stores' lines.
#[test]
fn ownership_prefetches_can_be_explored() {
    let states = |kind: &str| {
        let o = bounce(&[
            "check-protocol",
            "--protocol",
            "mesif",
            "--caches",
            "3",
            "--lines",
            "1",
            "--ownership-prefetch",
            kind,
        ]);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
        assert!(
            out.contains("  no violation: every invariant holds in every reachable state"),
            "{out}"
        );
        let (config, counts) = out.split_once(": ").unwrap().1.split_once(": ").unwrap();
        let states: u64 = counts.split(' ').next().unwrap().parse().unwrap();
        (config.to_string(), states)
    };
    let (off, off_states) = states("off");
    let (stores, stores_states) = states("buffered-stores");
    let (any, any_states) = states("any-line");
    assert!(!off.contains("ownership"), "{off}");
    assert!(
        stores.ends_with(", evictions, ownership prefetches (buffered-stores)"),
        "{stores}"
    );
    assert!(
        any.ends_with(", evictions, ownership prefetches (any-line)"),
        "{any}"
    );
    assert!(
        off_states < stores_states && stores_states < any_states,
        "{off_states} {stores_states} {any_states}"
    );
    let o = bounce(&["check-protocol", "--ownership-prefetch", "all"]);
    assert_eq!(o.status.code(), Some(2));
}
