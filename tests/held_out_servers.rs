//! Four more servers no preset covers, each described in a machine file
//! from its spec sheet and the legs of the nearest shipped file, then
//! checked with `bounce validate --fitted none` against its own measured
//! matrix, which nothing in the file was fitted on: every row is a
//! prediction (as tests/held_out_c2c.rs does for the first four).
//!
//! - `xeon-e5-2690-2s.toml`: Sandy Bridge-EP, 8 cores, legs of the Ivy
//!   Bridge-EP E5-4650 v2 file (in cycles inside the socket: the ring runs
//!   at the core's clock before Haswell-EP);
//! - `xeon-e5-2698v3-2s.toml`: Haswell-EP, 16 cores on two rings, legs of
//!   the Broadwell-EP E5-2680 v4 file; its matrix numbers a core's threads
//!   next to each other;
//! - `epyc-rome-7302-2s.toml`: Zen 2 with two cores a CCX, made as the
//!   7742 file is; its run homed the line on socket 1;
//! - `epyc-milan-74f3-1s.toml`: Zen 3 on one socket with three cores a
//!   CCD, the epyc-milan-2s preset with the part's counts and clock.
//!
//! Each test holds today's result: the classes within the ±10 % bound stay
//! there and each miss stays in its band (book chapter 10, "More machines,
//! none of them fitted on", says why each misses), so a change that
//! explains a miss, or makes a class miss, shows here. Also the two
//! frictions found writing them: a matrix homed on another socket than the
//! one assumed is named, and a cache size given without its ways or its
//! L2 hit says which key is missing.

mod common;

use common::{assert_class_within, assert_exit, bounce, stderr, stdout, validate_predictions};

/// Sandy Bridge-EP from the Ivy Bridge-EP legs: SMT pairs within the
/// bound; one socket 20-35 % slow and two sockets 35-50 % slow: the Ivy
/// Bridge boards both measure about 50 ns in a socket, this one 32 ns, and
/// the donor's links are a 4-socket board's.
#[test]
fn the_sandy_bridge_ep_is_predicted_from_the_ivy_bridge_ep_legs() {
    let c = validate_predictions(
        "scenarios/shipped/machines/xeon-e5-2690-2s.toml",
        "data/c2c/xeon-e5-2690-2s.csv",
        &[],
    );
    assert_eq!(c.len(), 3, "{c:?}");
    assert_class_within(&c, "SMT siblings", -10.0, 10.0);
    assert_class_within(&c, "same socket (one L3)", 20.0, 35.0);
    assert_class_within(&c, "cross-socket", 35.0, 50.0);
}

/// Haswell-EP from the Broadwell-EP legs, read with its adjacent sibling
/// numbering: every class fast, SMT and one socket by 25-40 %, two sockets
/// by 5-15 %; the matrix's cells are multiples of its timer's 5.2 ns step.
#[test]
fn the_haswell_ep_is_predicted_from_the_broadwell_ep_legs() {
    let c = validate_predictions(
        "scenarios/shipped/machines/xeon-e5-2698v3-2s.toml",
        "data/c2c/xeon-e5-2698v3-2s.csv",
        &["--sibling-numbering", "adjacent"],
    );
    assert_eq!(c.len(), 3, "{c:?}");
    assert_class_within(&c, "SMT siblings", -40.0, -25.0);
    assert_class_within(&c, "same socket (one L3)", -40.0, -25.0);
    assert_class_within(&c, "cross-socket", -15.0, -5.0);
}

/// Rome with two cores a CCX, made as the 7742 file is: SMT and one CCX
/// within the bound; the I/O die's and the sockets' classes 10-20 % fast,
/// as on the 7742 (Rome's fabric is slower than the Milan legs); and the
/// home rule holds: pairs on the socket that is not the home cost what
/// pairs across the sockets do, measured and simulated.
#[test]
fn rome_with_two_core_ccxs_is_predicted_as_the_7742_is() {
    let c = validate_predictions(
        "scenarios/shipped/machines/epyc-rome-7302-2s.toml",
        "data/c2c/epyc-rome-7302-2s.csv",
        &["--home-node", "1"],
    );
    assert_eq!(c.len(), 5, "{c:?}");
    assert_class_within(&c, "SMT siblings", -10.0, 10.0);
    assert_class_within(&c, "same CCX (L3)", -10.0, 10.0);
    assert_class_within(&c, "cross-die, home socket", -20.0, -10.0);
    assert_class_within(&c, "cross-die, other socket", -20.0, -10.0);
    assert_class_within(&c, "cross-socket", -20.0, -10.0);
    let (other, across) = (c["cross-die, other socket"], c["cross-socket"]);
    assert!(
        (other.measured_ns / across.measured_ns - 1.0).abs() < 0.02,
        "{c:?}"
    );
    assert!(
        (other.simulated_ns / across.simulated_ns - 1.0).abs() < 0.02,
        "{c:?}"
    );
}

/// Milan on one socket with three cores a CCD: SMT within the bound; one
/// CCX and two CCDs 10-20 % slow (this part's pairs are faster than the
/// 7763's the preset was fitted on).
#[test]
fn the_one_socket_milan_is_predicted_from_the_two_socket_preset() {
    let c = validate_predictions(
        "scenarios/shipped/machines/epyc-milan-74f3-1s.toml",
        "data/c2c/epyc-milan-74f3-1s.csv",
        &[],
    );
    assert_eq!(c.len(), 3, "{c:?}");
    assert_class_within(&c, "SMT siblings", -10.0, 10.0);
    assert_class_within(&c, "same CCX (L3)", 10.0, 20.0);
    assert_class_within(&c, "cross-die, home socket", 10.0, 20.0);
    // The file gives every leg the one-socket machine takes, so no leg is
    // left to move with the clock unsaid.
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/epyc-milan-74f3-1s.toml",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
}

/// A matrix whose line was homed on socket 1, read with the default home
/// (node 0), has its home socket's pairs slower than the other socket's:
/// the table says so and names `--home-node 1`; with it, nothing is said.
/// A machine whose dies resolve their own transfers (Intel) has no such
/// split, and a matrix homed on each pair's first CPU is not flagged.
#[test]
fn a_matrix_homed_on_another_socket_is_named_with_the_node_that_fits() {
    let rome = [
        "validate",
        "--machine",
        "scenarios/shipped/machines/epyc-rome-7302-2s.toml",
        "--matrix",
        "data/c2c/epyc-rome-7302-2s.csv",
        "--fitted",
        "none",
        "--quiet",
    ];
    let o = bounce(&rome);
    assert_exit(&o, 1);
    let text = stdout(&o);
    assert!(
        text.contains(
            "   warning:  pairs classed `cross-die, home socket` measure slower (230.5 ns median) \
             than pairs classed `cross-die, other socket` (134.7 ns) with the line homed on node 0"
        ),
        "{text}"
    );
    assert!(
        text.contains("with `--home-node 1` they are in order (134.7 ns on the home socket, 230.5 ns on the other)"),
        "{text}"
    );
    let o = bounce(&[&rome[..], &["--home-node", "1"]].concat());
    assert!(!stdout(&o).contains("warning:"), "{}", stdout(&o));

    let o = bounce(&[
        "validate",
        "--machine",
        "scenarios/shipped/machines/xeon-e5-2690-2s.toml",
        "--matrix",
        "data/c2c/xeon-e5-2690-2s.csv",
        "--home-node",
        "1",
        "--quiet",
    ]);
    assert!(!stdout(&o).contains("warning:"), "{}", stdout(&o));
}

/// A machine given whole with a cache's size but not its ways, or with
/// both sizes but no L2 hit, is refused naming the missing key (it used to
/// say `0 is out of range` at the size's value).
#[test]
fn a_cache_size_without_its_ways_or_l2_hit_names_the_missing_key() {
    let dir = common::TempDir::new("cache-keys");
    let whole = std::fs::read_to_string(
        common::root().join("scenarios/shipped/machines/xeon-e5-2690-2s.toml"),
    )
    .unwrap();
    for (drop, expected) in [
        (
            "\nl1d_ways = 8\n",
            "l1d_ways is not given: l1d_kib = 32 needs its ways (its associativity, 1..=64)",
        ),
        (
            "\nl2_hit_cycles = 12\n",
            "l2_hit_cycles is not given: with l1d_kib and l2_kib",
        ),
    ] {
        assert!(whole.contains(drop), "{drop}");
        let file = dir.join("machine.toml");
        std::fs::write(&file, whole.replace(drop, "\n")).unwrap();
        let o = bounce(&["presets", "show", &file]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(expected), "{err}");
        assert!(!err.contains("0 is out of range"), "{err}");
        assert!(err.contains(&format!("{file}:")), "{err}");
    }
}
