//! `bounce optimize` as a user runs it: the report, the winner written as a
//! variant that the scenario then runs, and bad input as exit 2.

mod common;
use common::{assert_exit, bounce, root, TempDir};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const MIXED: &str = "tests/fixtures/optimize-mixed.toml";

#[test]
fn the_winner_written_as_a_variant_runs_as_predicted() {
    let dir = TempDir::new("variant");
    let variant = dir.0.join("winner.toml");
    let o = bounce(&[
        "optimize",
        MIXED,
        "--struct",
        "conn",
        "--fixed",
        "id,flags",
        "--top",
        "2",
        "--write-variant",
        variant.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    for expected in [
        "bounce optimize: struct conn of `mixed`",
        "limits: no size budget; fixed prefix id, flags",
        "  refcnt                       atomic-written",
        "  limit                        read-mostly",
        "distinct layout(s) simulated of",
        "file's variant `hand-split`",
        "the winner:\nstruct conn {",
        "/* --- cacheline 1 boundary (64 bytes) --- */",
    ] {
        assert!(out.contains(expected), "lacks {expected:?}:\n{out}");
    }
    let rank1 = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .expect("a rank 1 row");
    let change: f64 = rank1.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("3 ")),
        "--top 2:\n{out}"
    );
    // The scenario with the winner appended runs it, at the predicted change.
    let scenario = dir.0.join("with-winner.toml");
    let mut toml = std::fs::read_to_string(root().join(MIXED)).unwrap();
    toml.push_str(&std::fs::read_to_string(&variant).unwrap());
    std::fs::write(&scenario, toml).unwrap();
    let o = bounce(&["run", scenario.to_str().unwrap()]);
    assert_exit(&o, 0);
    let report = text(&o.stdout);
    assert!(report.contains("optimized-conn"), "{report}");
    let row = report
        .lines()
        .find(|l| l.ends_with("cycles_per_iteration.mean"))
        .unwrap();
    let pcts: Vec<&str> = row
        .split_whitespace()
        .filter(|w| w.ends_with('%'))
        .collect();
    let last: f64 = pcts.last().unwrap().trim_end_matches('%').parse().unwrap();
    assert!((last - change).abs() < 0.11, "{change} predicted, {row}");
}

#[test]
fn bad_input_is_exit_2_with_the_valid_names() {
    let o = bounce(&["optimize", MIXED, "--struct", "con"]);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("has no struct `con` (did you mean `conn`?); structs: conn"),
        "{}",
        text(&o.stderr)
    );
    let o = bounce(&["optimize", "no/such.toml", "--struct", "conn"]);
    assert_exit(&o, 2);
    let o = bounce(&["optimize", MIXED, "--struct", "conn", "--top", "0"]);
    assert_exit(&o, 2);
    // A size budget no layout fits names the budget and the smallest size
    // tried, not a failure to run.
    let o = bounce(&[
        "optimize",
        MIXED,
        "--struct",
        "conn",
        "--budget-bytes",
        "1",
        "-q",
    ]);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("--budget-bytes 1: every layout of struct `conn` tried is larger"),
        "{err}"
    );
    assert!(err.contains("valid: a budget of at least "), "{err}");
}

#[test]
fn a_struct_with_no_traffic_is_said_to_have_none_instead_of_searched() {
    let mixed = std::fs::read_to_string(root().join(MIXED)).unwrap();
    let dir = TempDir::new("idle");
    let file = dir.0.join("idle.toml");
    // A struct with an instance that no script touches.
    let text_with_idle = format!(
        "{mixed}\n[structs.idle]\nfields = [{{ name = \"a\", type = \"u64\" }}, {{ name = \"b\", type = \"u64\" }}]\n\n[instances.spare]\nstruct = \"idle\"\nkind = \"global\"\n"
    );
    std::fs::write(&file, text_with_idle).unwrap();
    let path = file.to_str().unwrap();
    let o = bounce(&["optimize", path, "--struct", "idle", "--quiet"]);
    assert_exit(&o, 2);
    assert_eq!(text(&o.stdout), "");
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: struct `idle` has no traffic in the base of `{path}`: no thread loads, \
             stores or updates any of its fields in any case, so every layout costs the same; \
             nothing to optimize (choose a struct the scripts use: `bounce layout {path} --run` \
             shows each member's traffic)\n"
        )
    );
}
