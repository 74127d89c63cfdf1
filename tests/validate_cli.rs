//! `bounce validate` as a user runs it: the table, the CSV, and the exit
//! codes (0 every class within its bound, 1 a class outside, 2 bad input).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{assert_exit, root, stderr, stdout};

fn bounce_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run bounce")
}

fn bounce(args: &[&str]) -> Output {
    bounce_in(root(), args)
}

/// A path under the temp dir no other test process uses; removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(tag: &str) -> TempPath {
        TempPath(
            std::env::temp_dir().join(format!("bounce-validate-cli-{}-{tag}", std::process::id())),
        )
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn validate_icelake_prints_the_table_and_succeeds() {
    let o = bounce(&["validate", "--quiet", "--machine", "icelake-sp-2s"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in [
        "bounce validate: presets against measured core-to-core latency",
        "== icelake-sp-8375c-2s.csv: 2 x Xeon Platinum 8375C (Ice Lake-SP, AWS c6i.metal)",
        "== icelake-sp-8360y-2s.csv: 2 x Xeon Platinum 8360Y (Ice Lake-SP)",
        "   preset:   icelake-sp-2s adjusted to the measured SKU: cores per L3 domain 40 -> 32, clock MHz 3400 -> 3500",
        "   class                       pairs   measured  simulated     error  median |err|  role         within ±10 %",
        "   SMT siblings                   64        8.0 ",
        "   cross-socket                 4096      107.8 ",
        // The 8375C is what the preset was fitted on; the 8360Y is held out.
        "   role:     icelake-sp-2s targets smt, same-socket, same-socket-non-home and \
         cross-socket all cite [S1] 8375C (models/src/presets/intel.rs)",
        "   role:     held out: no preset target cites this matrix;",
        "median absolute error over all 8128 pairs:",
        "summary: 2 machine(s) validated, 0 not validated (preset not available yet), 0 failed; 0 class(es) outside ±10 %",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
    assert!(!out.contains("epyc"), "{out}");
    assert_eq!(stderr(&o), "");
}

#[test]
fn validate_finds_the_shipped_matrices_from_elsewhere_through_the_executable() {
    let dir = TempPath::new("cwd");
    std::fs::create_dir_all(&dir.0).unwrap();
    let o = bounce_in(&dir.0, &["validate", "--machine", "icelake-sp-2s"]);
    // The first `data/c2c` above the executable: the clone's own, or, when
    // CARGO_TARGET_DIR puts the build elsewhere, one above that if any.
    let exe = Path::new(env!("CARGO_BIN_EXE_bounce"));
    let Some(data) = exe
        .ancestors()
        .skip(1)
        .map(|above| above.join("data/c2c"))
        .find(|dir| dir.is_dir())
    else {
        // None: the error says where it looked and how to name the folder.
        assert_exit(&o, 2);
        assert!(stderr(&o).contains("pass `--data DIR`"), "{}", stderr(&o));
        return;
    };
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains(&format!("data: {}\n", data.display())),
        "{out}"
    );
}

#[test]
fn validate_writes_the_csv() {
    let csv = TempPath::new("table.csv");
    let o = bounce(&[
        "validate",
        "--machine",
        "icelake-sp-2s",
        "--csv",
        csv.0.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let text = std::fs::read_to_string(&csv.0).expect("the CSV was written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "file,measured_sku,preset,adjustment,class,pairs,measured_median_ns,\
             simulated_median_ns,error_pct,median_abs_error_pct,within_bound,status,note,role"
        )
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(rows[0].starts_with("icelake-sp-8375c-2s.csv,"), "{text}");
    assert!(rows[0].contains(",SMT siblings,64,"), "{text}");
    assert!(rows[3].contains(",all pairs,8128,"), "{text}");
    assert!(rows[4].starts_with("icelake-sp-8360y-2s.csv,"), "{text}");
    assert!(rows.iter().all(|r| r.contains(",validated,")), "{text}");
    // Each class's role last: fitted on (8375C) or held out (8360Y).
    assert!(rows[0].ends_with(",calibration"), "{text}");
    assert!(rows[3].ends_with(",validated,,"), "{text}");
    assert!(rows[4].ends_with(",prediction"), "{text}");
}

#[test]
fn validate_with_a_missing_data_directory_is_bad_input() {
    let o = bounce(&["validate", "--data", "/nonexistent"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: cannot read the measured matrices: `--data /nonexistent` is not a directory\n"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn validate_an_unknown_machine_suggests_the_nearest() {
    let o = bounce(&["validate", "--machine", "icelake-sp2s"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: unknown machine `icelake-sp2s` (did you mean `icelake-sp-2s`?); presets with \
         measured matrices: icelake-sp-2s, cascadelake-sp-2s, epyc-naples-2s, epyc-milan-2s, \
         epyc-genoa-2s, bergamo-1s, bergamo-2s\n"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn validate_out_writes_the_table_and_the_charts() {
    let dir = TempPath::new("out");
    let o = bounce(&[
        "validate",
        "--machine",
        "icelake-sp-2s",
        "--out",
        dir.0.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let csv = std::fs::read_to_string(dir.0.join("validation.csv")).expect("validation.csv");
    assert!(csv.starts_with("file,measured_sku,preset,"), "{csv}");
    assert_eq!(csv.lines().count(), 9, "{csv}");
    let scatter =
        std::fs::read_to_string(dir.0.join("validation-scatter.svg")).expect("the scatter");
    for text in [
        "simulated against measured core-to-core latency",
        "measured one-way latency, median per class (ns)",
        "simulated one-way latency, median per class (ns)",
        "icelake-sp-8375c-2s",
        "icelake-sp-8360y-2s",
        "±10 % band",
        "prediction (held out from the fit)",
        "calibration (the preset was fitted on it)",
    ] {
        assert!(scatter.contains(text), "scatter lacks {text}");
    }
    let bars = std::fs::read_to_string(dir.0.join("validation-classes.svg")).expect("the bars");
    // A panel per machine, a bar per class with its figures.
    for text in [
        "icelake-sp-8375c-2s",
        "icelake-sp-8360y-2s",
        "cross-socket",
        " ns",
    ] {
        assert!(bars.contains(text), "bars lack {text}");
    }
    // Nothing else, and no temporary file left.
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "validation-classes.svg",
            "validation-scatter.svg",
            "validation.csv"
        ]
    );
    // The same bytes again.
    let again = TempPath::new("out-again");
    let o = bounce(&[
        "validate",
        "--machine",
        "icelake-sp-2s",
        "--out",
        again.0.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    for name in &names {
        assert_eq!(
            std::fs::read(dir.0.join(name)).unwrap(),
            std::fs::read(again.0.join(name)).unwrap(),
            "{name} differs between runs"
        );
    }
}

#[test]
fn validate_shows_progress_counting_machines_off_a_terminal() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(["validate", "--machine", "icelake-sp-2s"])
        .current_dir(common::root())
        // An interval far below the command's length (about 10 ms in a
        // release build), so that lines come whatever the host's speed.
        .env("BOUNCE_PROGRESS_INTERVAL_MS", "1")
        .output()
        .expect("run bounce");
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.starts_with("bounce: "), "{err}");
    assert!(err.lines().all(|l| l.contains("/2 machines done")), "{err}");
    let quiet = bounce(&["validate", "--quiet", "--machine", "icelake-sp-2s"]);
    assert_eq!(o.stdout, quiet.stdout);
    assert_eq!(stderr(&quiet), "");
}

/// `--machine FILE --matrix CSV`: a user's machine file (here the Ice Lake
/// preset edited to the measured 36-core 8360Y) against a user's matrix.
#[test]
fn validate_a_users_machine_file_against_a_users_matrix() {
    let dir = common::TempDir::new("user-matrix");
    let shown = bounce(&["presets", "show", "icelake-sp-2s", "--toml"]);
    assert_exit(&shown, 0);
    let machine: String = stdout(&shown)
        .lines()
        .map(|l| match l {
            "cores_per_l3 = 40" => "cores_per_l3 = 36".to_string(),
            "clock_mhz = 3400" => "clock_mhz = 3500".to_string(),
            "name = \"icelake-sp-2s\"" => "name = \"my-8360y\"".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let machine_file = dir.0.join("my-8360y.toml");
    std::fs::write(&machine_file, machine).unwrap();
    let matrix = dir.0.join("mine.csv");
    std::fs::copy(
        common::root().join("data/c2c/icelake-sp-8360y-2s.csv"),
        &matrix,
    )
    .unwrap();
    let o = bounce(&[
        "validate",
        "--quiet",
        "--machine",
        machine_file.to_str().unwrap(),
        "--matrix",
        matrix.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 5, "{csv}");
    for (row, class) in
        rows[1..4]
            .iter()
            .zip(["SMT siblings", "same socket (one L3)", "cross-socket"])
    {
        assert!(row.contains(",my-8360y,"), "{row}");
        assert!(row.contains(&format!(",{class},")), "{row}");
        assert!(row.contains(",yes,validated,"), "{row}");
    }
    // The matrix says 128 CPUs; the machine file must hold them.
    let small = dir.0.join("small.toml");
    std::fs::write(
        &small,
        std::fs::read_to_string(&machine_file)
            .unwrap()
            .replace("cores_per_l3 = 36", "cores_per_l3 = 20"),
    )
    .unwrap();
    let o = bounce(&[
        "validate",
        "--quiet",
        "--machine",
        small.to_str().unwrap(),
        "--matrix",
        matrix.to_str().unwrap(),
    ]);
    // Bad input (the machine file's counts), not a failed validation:
    // the message names the keys that make the machine's CPUs.
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: the matrix `{}` has 128 CPUs (rows), the machine of `{}` 80: sockets (2) x \
             nodes_per_socket (1) x l3_per_node (1) x cores_per_l3 (20) x threads_per_core (2); \
             give the machine the measured CPU's counts\n",
            matrix.display(),
            small.display()
        )
    );
    assert_eq!(stdout(&o), "");
    // A preset name is not a machine file.
    let o = bounce(&[
        "validate",
        "--machine",
        "icelake-sp-2s",
        "--matrix",
        matrix.to_str().unwrap(),
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: --matrix takes the machine as a file, and `icelake-sp-2s` is a preset: `bounce \
         presets show icelake-sp-2s --toml > icelake-sp-2s.toml`, edit it to the measured \
         machine, then `--machine icelake-sp-2s.toml`\n"
    );
    let o = bounce(&["validate", "--matrix", matrix.to_str().unwrap()]);
    assert_exit(&o, 2);
}

/// `--matrix` with `--home-node` (where the measured line was homed) and
/// `--known-miss CLASS[=WHY]` and `--fitted CLASS`: the EPYC 7763 matrix
/// against the Milan preset as a machine file. Homed on each pair's first CPU, as the shipped
/// entry has it, only cross-socket misses; stated as a known miss it passes,
/// and `--strict` fails on it.
/// One test on purpose: the cases are runs of one command on one machine
/// file and matrix, each checked against the one before it.
#[test]
fn a_users_matrix_takes_its_home_node_known_misses_and_fitted_classes() {
    let dir = common::TempDir::new("user-matrix-facts");
    let shown = bounce(&["presets", "show", "epyc-milan-2s", "--toml"]);
    assert_exit(&shown, 0);
    // The 7763's clock, as the shipped entry has it.
    let machine = stdout(&shown).replace("\nclock_mhz = 3700\n", "\nclock_mhz = 3500\n");
    let machine_file = dir.join("milan.toml");
    std::fs::write(&machine_file, machine).unwrap();
    let matrix = dir.join("7763.csv");
    std::fs::copy(
        common::root().join("data/c2c/epyc-milan-7763-2s.csv"),
        &matrix,
    )
    .unwrap();
    let validate = |more: &[&str]| {
        let mut args = vec![
            "validate",
            "--quiet",
            "--machine",
            &machine_file,
            "--matrix",
            &matrix,
        ];
        args.extend_from_slice(more);
        bounce(&args)
    };
    // Class and status of each row, from the JSON (labels hold commas).
    let statuses = |o: &std::process::Output| -> Vec<String> {
        let json: serde_json::Value = serde_json::from_str(&stdout(o)).unwrap();
        json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{}: {}: {}",
                    r["class"].as_str().unwrap(),
                    r["status"].as_str().unwrap(),
                    r["within_bound"]
                )
            })
            .collect()
    };
    // Assumed on node 0: both cross-die classes are told apart, and the
    // other socket's misses.
    let o = validate(&["--format", "json"]);
    assert_exit(&o, 1);
    assert_eq!(
        statuses(&o),
        [
            "SMT siblings: validated: true",
            "same CCX (L3): validated: true",
            "cross-die, home socket: validated: true",
            "cross-die, other socket: validated: false",
            "cross-socket: validated: false",
            "all pairs: validated: null"
        ]
    );
    let facts = [
        "--home-node",
        "first-cpu",
        "--known-miss",
        "cross-socket=xGMI width not recorded",
    ];
    let o = validate(&facts);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("   home:     line homed on the node of each pair's first CPU: as stated with --home-node first-cpu\n"),
        "{text}"
    );
    assert!(
        text.contains("NO (known, below)\n   known miss, cross-socket: xGMI width not recorded\n"),
        "{text}"
    );
    assert!(text.contains("(1 known miss(es))"), "{text}");
    assert_eq!(stderr(&o), "");
    let o = validate(&[&facts[..], &["--format", "json"]].concat());
    assert_exit(&o, 0);
    assert_eq!(
        statuses(&o),
        [
            "SMT siblings: validated: true",
            "same CCX (L3): validated: true",
            "cross-die, home socket: validated: true",
            "cross-socket: validated: false",
            "all pairs: validated: null"
        ]
    );
    let o = validate(&[&facts[..], &["--strict"]].concat());
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        "error: --strict: some classes are outside their bound, as documented known misses (see the table)\n"
    );
    // A known miss that does not miss is said to; a class may be named as
    // the table prints it.
    let o = validate(&[
        "--home-node",
        "first-cpu",
        "--known-miss",
        "Cross-Socket",
        "--known-miss",
        "SMT siblings",
    ]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains(
            "   known miss, cross-socket: stated with --known-miss\n   known miss(es) that did not miss (within the bound, or no pairs): smt\n"
        ),
        "{}",
        stdout(&o)
    );
    // A node number: Linux's, over both sockets.
    let o = validate(&["--home-node", "1"]);
    assert!(
        stdout(&o).contains("   home:     line homed on node 1 (node 0 of socket 1): as stated with --home-node 1\n"),
        "{}",
        stdout(&o)
    );
    // Bad values name the option and what would be valid.
    for (args, message) in [
        (
            &["--home-node", "2"][..],
            format!(
                "error: --home-node 2: the machine of `{machine_file}` has 2 NUMA node(s), 0-1\n"
            ),
        ),
        (
            &["--home-node", "near"][..],
            "error: --home-node near: expected the NUMA node the measured line was homed on, as \
             Linux numbers them (0, 1, ...), or `first-cpu` (the node of each pair's first CPU)\n"
                .to_string(),
        ),
        (
            &["--known-miss", "cross-sockets=slow"][..],
            "error: --known-miss cross-sockets: this machine has no class `cross-sockets` (did \
             you mean `cross-socket`?); its classes: smt (SMT siblings), same-l3 (same CCX \
             (L3)), cross-ccd-home-socket (cross-die, home socket), cross-ccd-other-socket \
             (cross-die, other socket), cross-socket (cross-socket)\n"
                .to_string(),
        ),
        (
            &["--known-miss", "smt", "--known-miss", "SMT siblings=again"][..],
            "error: --known-miss names `smt` twice\n".to_string(),
        ),
    ] {
        let o = validate(args);
        assert_exit(&o, 2);
        assert_eq!(stderr(&o), message);
        assert_eq!(stdout(&o), "");
    }
    // `--fitted`: the classes the machine file was fitted on check the
    // fit, the others are predictions; `none`, all are; unstated, unknown.
    let roles = |more: &[&str]| -> Vec<String> {
        let o = validate(&[more, &["--format", "json", "--home-node", "first-cpu"]].concat());
        let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["role"].is_null())
            .map(|r| format!("{}: {}", r["class"].as_str().unwrap(), r["role"]))
            .collect()
    };
    assert_eq!(
        roles(&["--fitted", "smt", "--fitted", "same CCX (L3)"]),
        [
            "SMT siblings: \"calibration\"",
            "same CCX (L3): \"calibration\"",
            "cross-die, home socket: \"prediction\"",
            "cross-socket: \"prediction\""
        ]
    );
    assert!(roles(&["--fitted", "none"])
        .iter()
        .all(|r| r.ends_with("\"prediction\"")));
    assert!(roles(&[]).iter().all(|r| r.ends_with("\"unknown\"")));
    let o = validate(&["--fitted", "cross-socket"]);
    assert!(
        stdout(&o).contains(
            "   role:     as stated with --fitted: the machine file was fitted on these classes' medians\n"
        ),
        "{}",
        stdout(&o)
    );
    for (args, message) in [
        (
            &["--fitted", "l3"][..],
            "error: --fitted l3: this machine has no class `l3`; its classes: smt (SMT \
             siblings), same-l3 (same CCX (L3)), cross-ccd-home-socket (cross-die, home socket), \
             cross-ccd-other-socket (cross-die, other socket), cross-socket (cross-socket)\n",
        ),
        (
            &["--fitted", "smt", "--fitted", "SMT siblings"][..],
            "error: --fitted names `smt` twice\n",
        ),
    ] {
        let o = validate(args);
        assert_exit(&o, 2);
        assert_eq!(stderr(&o), message);
        assert_eq!(stdout(&o), "");
    }
    // The options are about a user's matrix.
    let o = bounce(&["validate", "--known-miss", "smt"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("the following required arguments were not provided"),
        "{}",
        stderr(&o)
    );
}

/// The shipped example of a machine no preset covers
/// (`scenarios/shipped/machines/ryzen9-7900x.toml`, a Ryzen 9 7900X
/// described from public figures) against the matrix its three transfer
/// legs were fitted on (`data/c2c/ryzen9-7900x-1s.csv`, whose SMT siblings
/// are numbered next to each other): every class within its bound, each a
/// calibration row. The same file with 8 cores per CCD at the 7950X's
/// boost clock then predicts the 7950X's one-CCD and two-CCD classes
/// (data/c2c/ryzen9-7950x-1s.csv) within the bound too; its SMT
/// class is not asserted: that matrix's timer resolves 5.3 ns steps.
#[test]
fn the_shipped_ryzen_machine_file_validates_on_its_matrix_and_predicts_the_7950x() {
    let machine = "scenarios/shipped/machines/ryzen9-7900x.toml";
    let o = bounce(&[
        "validate",
        "--machine",
        machine,
        "--matrix",
        "data/c2c/ryzen9-7900x-1s.csv",
        "--sibling-numbering",
        "adjacent",
        "--fitted",
        "smt",
        "--fitted",
        "same-l3",
        "--fitted",
        "cross-ccd-home-socket",
        "--format",
        "csv",
    ]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 5, "{csv}");
    for (row, class) in rows[1..4].iter().zip([
        "SMT siblings",
        "same CCX (L3)",
        "\"cross-die, home socket\"",
    ]) {
        assert!(row.contains(&format!(",{class},")), "{row}");
        assert!(row.ends_with(",yes,validated,,calibration"), "{row}");
    }
    assert_eq!(stderr(&o), "");

    let dir = common::TempDir::new("ryzen-7950x");
    let edited = std::fs::read_to_string(root().join(machine))
        .unwrap()
        .replace("\ncores_per_l3 = 6\n", "\ncores_per_l3 = 8\n")
        .replace("\nclock_mhz = 5600\n", "\nclock_mhz = 5700\n");
    let file = dir.join("7950x.toml");
    std::fs::write(&file, edited).unwrap();
    let o = bounce(&[
        "validate",
        "--machine",
        &file,
        "--matrix",
        "data/c2c/ryzen9-7950x-1s.csv",
        "--sibling-numbering",
        "adjacent",
        "--fitted",
        "none",
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let within: Vec<(String, String, bool)> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["class"] != "all pairs")
        .map(|r| {
            (
                r["class"].as_str().unwrap().to_string(),
                r["role"].as_str().unwrap().to_string(),
                r["within_bound"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        within[1..],
        [
            ("same CCX (L3)".to_string(), "prediction".to_string(), true),
            (
                "cross-die, home socket".to_string(),
                "prediction".to_string(),
                true
            ),
        ],
        "{}",
        stdout(&o)
    );
}

/// A matrix whose SMT siblings are numbered next to each other, read with
/// the model's numbering (a core's threads one core count apart), puts its
/// fastest pairs in the wrong classes: the table says so and names the
/// option that reads it right, which then orders the classes.
#[test]
fn a_matrix_numbered_with_adjacent_siblings_is_recognised_and_read_with_the_option() {
    let validate = |more: &[&str]| {
        let mut args = vec![
            "validate",
            "--machine",
            "scenarios/shipped/machines/ryzen9-7900x.toml",
            "--matrix",
            "data/c2c/ryzen9-7900x-1s.csv",
        ];
        args.extend_from_slice(more);
        bounce(&args)
    };
    let o = validate(&[]);
    assert_exit(&o, 1);
    let text = stdout(&o);
    assert!(
        text.contains(
            "   measured: 24 of 24 CPUs (the CPUs of the matrix, a core's SMT siblings one core \
             count apart, as Linux numbers them)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "   warning:  pairs classed `SMT siblings` measure slower (79.0 ns median) than \
             pairs classed `same CCX (L3)` (48.3 ns) under this machine's topology and a core's \
             SMT siblings one core count apart, as Linux numbers them; with \
             `--sibling-numbering adjacent` they are in order (SMT siblings 7.6 ns, same CCX \
             (L3) 17.2 ns, cross-die, home socket 78.9 ns): the matrix was likely measured \
             with that numbering\n"
        ),
        "{text}"
    );
    // The records have no place for it: it goes to stderr.
    let o = validate(&["--format", "csv"]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).starts_with("warning: pairs classed `SMT siblings` measure slower"),
        "{}",
        stderr(&o)
    );
    let o = validate(&["--sibling-numbering", "adjacent"]);
    assert_exit(&o, 0);
    assert!(!stdout(&o).contains("warning"), "{}", stdout(&o));
    // The option is for a user's matrix only; a bad value lists the valid.
    let o = bounce(&["validate", "--sibling-numbering", "adjacent"]);
    assert_exit(&o, 2);
    let o = validate(&["--sibling-numbering", "next"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("[possible values: apart, adjacent]"),
        "{}",
        stderr(&o)
    );
}
