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
                "{name}: 2 caches x 1 lines x 2 values, store buffers of 1: "
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
        out.starts_with("MOESI: 2 caches x 1 lines x 2 values, store buffers of 2: "),
        "{out}"
    );
    assert!(!out.contains("MESI:"), "{out}");
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
        "error: stopped at 100 states without a verdict (raise --max-states)\n"
    );
}
