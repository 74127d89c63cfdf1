//! `bounce validate` as a library: the shipped matrices against the presets
//! (the bound is the test), reading matrices, classifying pairs, and the
//! memoized ping-pong against direct simulation.

use models::calibration::{self, LineHome, Vendor, MEASURED};
use scenarios::build::{build_all, BuildOptions};
use scenarios::run::results::run_all;
use scenarios::tools::validate::classify::{Class, Classifier};
use scenarios::tools::validate::matrix::{parse, MatrixError};
use scenarios::tools::validate::pingpong::{self, PingPong};
use scenarios::tools::validate::{self, Outcome, ValidateOptions};
use sim_core::cpu::LinuxCpu;
use sim_core::topology::{Lookup, MachineSpec, Protocol, Topology};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// The default bound on each matrix file read.
const DATA_FILE_BYTES: u64 = 256 << 20;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/c2c"))
}

fn options(machine: Option<&str>) -> ValidateOptions {
    ValidateOptions {
        machine: machine.map(str::to_string),
        data_dir: Some(data_dir()),
        ..Default::default()
    }
}

/// Written to the real stderr, past the test harness's capture, so that a
/// passing run still says what it did not validate.
fn tell(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

// ---------------------------------------------------------------------------
// The shipped matrices

#[test]
fn every_shipped_matrix_stays_within_its_bound_or_says_why_it_was_skipped() {
    let start = Instant::now();
    let report = validate::validate(&options(None)).unwrap_or_else(|e| panic!("{e}"));
    let table = report.render();
    let skipped: Vec<String> = report
        .skipped()
        .iter()
        .map(|r| format!("{} (preset `{}`)", r.machine.file, r.machine.preset))
        .collect();
    if !skipped.is_empty() {
        tell(&format!(
            "validate: SKIPPED {} matrix(es), their preset is not available yet: {}",
            skipped.len(),
            skipped.join(", ")
        ));
    }
    tell(&format!(
        "validate: {} machine(s) validated in {:.1} s",
        report.machines.iter().filter(|r| r.is_validated()).count(),
        start.elapsed().as_secs_f64()
    ));
    assert_eq!(report.machines.len(), MEASURED.len(), "{table}");
    for file in ["icelake-sp-8375c-2s.csv", "icelake-sp-8360y-2s.csv"] {
        let r = report
            .machines
            .iter()
            .find(|r| r.machine.file == file)
            .unwrap();
        assert!(r.is_validated(), "{file} was not validated:\n{table}");
    }
    // A class outside its bound fails the test, unless its calibration
    // entry documents why no preset can meet it; those are said aloud.
    let known: Vec<String> = report
        .machines
        .iter()
        .flat_map(|r| {
            r.out_of_bounds().into_iter().filter_map(move |c| {
                c.known_miss.map(|why| {
                    format!(
                        "{} {}: {:+.1} % ({why})",
                        r.machine.file, c.label, c.error_pct
                    )
                })
            })
        })
        .collect();
    if !known.is_empty() {
        tell(&format!(
            "validate: KNOWN MISSES outside ±{} %:\n  {}",
            validate::BOUND_PCT,
            known.join("\n  ")
        ));
    }
    let outside: Vec<String> = report
        .unexpected_misses()
        .iter()
        .map(|(file, label, error)| format!("{file} {label}: {error:+.1} %"))
        .collect();
    assert!(
        outside.is_empty(),
        "classes outside ±{} %:\n{}\n\n{table}",
        validate::BOUND_PCT,
        outside.join("\n")
    );
    // A documented miss that is no longer one must be removed.
    for r in &report.machines {
        assert!(
            r.stale_known_misses().is_empty(),
            "{}: known misses {:?} are within the bound now (or name no class); \
             remove them from models::calibration\n\n{table}",
            r.machine.file,
            r.stale_known_misses()
        );
    }
}

#[test]
fn every_known_miss_names_a_class() {
    let keys: Vec<&str> = Class::ALL.iter().map(|c| c.key()).collect();
    for m in MEASURED {
        for k in m.known_misses {
            assert!(
                keys.contains(&k.class),
                "{}: `{}` is not one of {keys:?}",
                m.file,
                k.class
            );
            assert!(!k.reason.is_empty());
        }
    }
}

#[test]
fn icelake_classes_and_adjustment_are_reported() {
    let report = validate::validate(&options(Some("icelake-sp-2s"))).unwrap();
    assert_eq!(report.machines.len(), 2);
    let r = &report.machines[0];
    assert_eq!(r.machine.file, "icelake-sp-8375c-2s.csv");
    assert_eq!(
        r.adjustment,
        "icelake-sp-2s adjusted to the measured SKU: cores per L3 domain 40 -> 32, clock MHz 3400 -> 3500"
    );
    let Outcome::Validated {
        classes,
        pairs,
        simulations,
        ..
    } = &r.outcome
    else {
        panic!("not validated: {:?}", r.outcome);
    };
    assert_eq!(*pairs, 128 * 127 / 2);
    let summary: Vec<(Class, &str, usize)> = classes
        .iter()
        .map(|c| (c.class, c.label.as_str(), c.pairs))
        .collect();
    // 64 SMT pairs; same socket: 64 CPUs per socket, C(64, 2) less the 32
    // SMT pairs, on each socket; cross-socket: 64 x 64.
    assert_eq!(
        summary,
        vec![
            (Class::SmtSiblings, "SMT siblings", 64),
            (
                Class::SameL3,
                "same socket (one L3)",
                2 * (64 * 63 / 2 - 32)
            ),
            (Class::CrossSocket, "cross-socket", 64 * 64),
        ]
    );
    // SMT and same L3 on each socket, and cross-socket both ways round.
    assert_eq!(*simulations, 6);
    let text = report.render();
    for needle in [
        "== icelake-sp-8375c-2s.csv: 2 x Xeon Platinum 8375C (Ice Lake-SP, AWS c6i.metal)",
        "   measured: 128 of 144 CPUs (Linux CPUs 0-127 of 0-143:",
        "   home:     line homed on node 0 (node 0 of socket 0): it does not matter on Intel",
        "   clock:    3500 MHz, documented max boost: dmidecode \"Max Speed: 3500 MHz\"",
        "   class                       pairs   measured  simulated     error  median |err|  role         within ±10 %",
        "summary: 2 machine(s) validated, 0 not validated (preset not available yet), 0 failed; 0 class(es) outside ±10 %",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
    let csv = report.to_csv();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "file,measured_sku,preset,adjustment,class,pairs,measured_median_ns,\
             simulated_median_ns,error_pct,median_abs_error_pct,within_bound,status,note,role"
        )
    );
    let first = lines.next().unwrap();
    assert!(
        first.starts_with(
            "icelake-sp-8375c-2s.csv,\"2 x Xeon Platinum 8375C (Ice Lake-SP, AWS c6i.metal)\",\
             icelake-sp-2s,\"icelake-sp-2s adjusted to the measured SKU: cores per L3 domain 40 -> 32, \
             clock MHz 3400 -> 3500\",SMT siblings,64,"
        ),
        "{first}"
    );
    assert!(first.ends_with(",yes,validated,,calibration"), "{first}");
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    assert!(csv.contains(",all pairs,8128,,,,"), "{csv}");
}

/// A calibration entry like the 8375C's, changed by `change`.
fn entry_like_8375c(
    change: impl FnOnce(&mut calibration::MeasuredMachine),
) -> &'static calibration::MeasuredMachine {
    let mut m = MEASURED
        .iter()
        .find(|m| m.file == "icelake-sp-8375c-2s.csv")
        .unwrap()
        .clone();
    change(&mut m);
    Box::leak(Box::new(m))
}

#[test]
fn a_machine_whose_preset_is_missing_is_listed_not_validated() {
    let m = entry_like_8375c(|m| m.preset = "icelake-sp-9s");
    let matrix = validate::read_matrix(&data_dir(), m, DATA_FILE_BYTES).unwrap();
    let report = validate::ValidationReport {
        data_dir: data_dir(),
        machines: vec![validate::validate_machine(m, &matrix)],
    };
    let Outcome::PresetMissing(why) = &report.machines[0].outcome else {
        panic!("{:?}", report.machines[0].outcome);
    };
    assert!(why.contains("icelake-sp-9s"), "{why}");
    assert!(report.all_within_bounds());
    assert_eq!(report.skipped().len(), 1);
    let text = report.render();
    assert!(
        text.contains(&format!(
            "   preset icelake-sp-9s: not available yet, not validated ({why})\n"
        )),
        "{text}"
    );
    assert!(text.contains("summary: 0 machine(s) validated, 1 not validated (preset not available yet), 0 failed; 0 class(es) outside ±10 %\nnot validated: icelake-sp-8375c-2s.csv\n"), "{text}");
    assert!(report
        .to_csv()
        .contains(",,,,,,,,preset not available yet,"));
}

#[test]
fn a_preset_that_does_not_fit_its_machine_fails_the_validation() {
    let m = entry_like_8375c(|m| m.threads_per_core = 1);
    let matrix = validate::read_matrix(&data_dir(), m, DATA_FILE_BYTES).unwrap();
    let report = validate::ValidationReport {
        data_dir: data_dir(),
        machines: vec![validate::validate_machine(m, &matrix)],
    };
    assert_eq!(
        report.machines[0].outcome,
        Outcome::Failed(
            "preset `icelake-sp-2s` does not fit the measured machine: preset `icelake-sp-2s` has \
             2 thread(s) per core, the measured machine 1 (SMT off)"
                .into()
        )
    );
    assert!(!report.all_within_bounds());
    assert!(report
        .render()
        .contains("   FAILED: preset `icelake-sp-2s` does not fit"));
}

#[test]
fn a_known_miss_is_shown_as_one_and_a_stale_one_is_found() {
    // Pretend the 8375C's cross-socket class were a documented miss: it is
    // within its bound, so the entry is stale.
    let m = entry_like_8375c(|m| {
        m.known_misses = &[calibration::KnownMiss {
            class: "cross-socket",
            reason: "a test",
        }]
    });
    let matrix = validate::read_matrix(&data_dir(), m, DATA_FILE_BYTES).unwrap();
    let r = validate::validate_machine(m, &matrix);
    assert_eq!(r.stale_known_misses(), ["cross-socket"]);
    // At a clock that makes every class miss, it is a known miss, and only
    // the others are unexpected.
    let m = entry_like_8375c(|m| {
        m.clock_mhz = 2000;
        m.known_misses = &[calibration::KnownMiss {
            class: "cross-socket",
            reason: "a test",
        }]
    });
    let report = validate::ValidationReport {
        data_dir: data_dir(),
        machines: vec![validate::validate_machine(m, &matrix)],
    };
    assert!(report.machines[0].stale_known_misses().is_empty());
    let unexpected: Vec<&str> = report.unexpected_misses().iter().map(|u| u.1).collect();
    assert_eq!(unexpected, ["SMT siblings", "same socket (one L3)"]);
    let text = report.render();
    assert!(
        text.contains("  NO (known, below)\n   known miss, cross-socket: a test\n"),
        "{text}"
    );
    assert!(
        text.contains("3 class(es) outside ±10 % (1 known miss(es))"),
        "{text}"
    );
    assert!(report
        .to_csv()
        .contains(",no,validated,known miss: a test,calibration\n"));
}

// ---------------------------------------------------------------------------
// Options

#[test]
fn an_unknown_machine_names_the_valid_ones_and_the_nearest() {
    let e = validate::validate(&options(Some("icelake-sp2s"))).unwrap_err();
    assert_eq!(
        e,
        "unknown machine `icelake-sp2s` (did you mean `icelake-sp-2s`?); presets with measured \
         matrices: icelake-sp-2s, cascadelake-sp-2s, epyc-naples-2s, epyc-milan-2s, \
         epyc-genoa-2s, bergamo-1s, bergamo-2s"
    );
    let e = validate::validate(&options(Some("pentium"))).unwrap_err();
    assert!(
        e.starts_with("unknown machine `pentium`; presets with"),
        "{e}"
    );
}

#[test]
fn a_machine_can_be_chosen_by_its_full_reference() {
    let chosen = validate::select(Some("epyc-genoa-2s:smt-off")).unwrap();
    assert_eq!(chosen.len(), 1);
    assert_eq!(chosen[0].file, "epyc-genoa-9654-2s-smtoff.csv");
    let chosen = validate::select(Some("epyc-milan-2s")).unwrap();
    assert_eq!(
        chosen.iter().map(|m| m.file).collect::<Vec<_>>(),
        ["epyc-milan-7763-2s.csv", "epyc-milan-7r13-2s.csv"]
    );
}

#[test]
fn a_missing_data_directory_says_to_pass_another() {
    let e = validate::validate(&ValidateOptions {
        machine: None,
        data_dir: Some(PathBuf::from("/nonexistent")),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e,
        "cannot read the measured matrices: `--data /nonexistent` is not a directory"
    );
}

/// A directory under the temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("bounce-validate-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_malformed_matrix_in_a_data_directory_is_an_error_at_its_line_and_column() {
    let dir = TempDir::new("malformed");
    let path = dir.0.join("icelake-sp-8375c-2s.csv");
    let good = std::fs::read_to_string(data_dir().join("icelake-sp-8375c-2s.csv")).unwrap();
    // Line 3 is CPU 2's row, `a,b,,...`: spoil its second cell.
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    let mut cells: Vec<&str> = lines[2].split(',').collect();
    let column = cells[0].chars().count() + 2;
    cells[1] = "oops";
    lines[2] = cells.join(",");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let e = validate::validate(&ValidateOptions {
        machine: Some("icelake-sp-2s".into()),
        data_dir: Some(dir.0.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}:3:{column}: `oops` is not a latency (row 2, column 1); expected a number of \
             nanoseconds, or an empty cell for a pair not measured",
            path.display()
        )
    );

    // The other Ice Lake file is missing from the directory.
    std::fs::write(&path, &good).unwrap();
    let e = validate::validate(&ValidateOptions {
        machine: Some("icelake-sp-2s".into()),
        data_dir: Some(dir.0.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        e.starts_with(&format!(
            "cannot read the matrix `{}`: ",
            dir.0.join("icelake-sp-8360y-2s.csv").display()
        )),
        "{e}"
    );

    // A matrix of the wrong size for its machine.
    std::fs::write(dir.0.join("icelake-sp-8360y-2s.csv"), ",,\n1,,\n2,3,\n").unwrap();
    let e = validate::validate(&ValidateOptions {
        machine: Some("icelake-sp-2s".into()),
        data_dir: Some(dir.0.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        e,
        format!(
            "`{}`: 3 rows, but the measured machine (2 x Xeon Platinum 8360Y (Ice Lake-SP)) has \
             128 measured CPUs; is it the right file?",
            dir.0.join("icelake-sp-8360y-2s.csv").display()
        )
    );
}

// ---------------------------------------------------------------------------
// Reading matrices

#[track_caller]
fn parse_err(text: &str) -> MatrixError {
    parse("m.csv", text).unwrap_err()
}

#[test]
fn empty_cells_are_pairs_not_measured() {
    let m = parse("m.csv", ",,,\n12.5,,,\n,30,,\n40.25,,41,\n").unwrap();
    assert_eq!(m.cpus(), 4);
    assert_eq!(
        m.pairs(),
        vec![(0, 1, 12.5), (1, 2, 30.0), (0, 3, 40.25), (2, 3, 41.0)]
    );
    assert_eq!(m.get(2, 0), None);
    assert_eq!(m.get(3, 1), None);
    assert_eq!(m.get(1, 3), None);
    // Short rows are empty cells too.
    let m = parse("m.csv", "\n5\n6,7\n").unwrap();
    assert_eq!(m.pairs(), vec![(0, 1, 5.0), (0, 2, 6.0), (1, 2, 7.0)]);
}

#[test]
fn malformed_cells_are_errors_naming_file_line_and_column() {
    assert_eq!(
        parse_err(",,\n1.5,,\n2,x7,\n").to_string(),
        "m.csv:3:3: `x7` is not a latency (row 2, column 1); expected a number of nanoseconds, \
         or an empty cell for a pair not measured"
    );
    assert_eq!(
        parse_err(",,\n1.5,,\n2, -3 ,\n").to_string(),
        "m.csv:3:3: `-3` is not a latency (row 2, column 1); it must be a positive number of \
         nanoseconds"
    );
    assert_eq!(
        parse_err(",,\n1.5,,\n2,inf,\n").to_string(),
        "m.csv:3:3: `inf` is not a latency (row 2, column 1); it must be a positive number of \
         nanoseconds"
    );
    assert_eq!(
        parse_err(",,\n1.5,9,\n2,3,\n").to_string(),
        "m.csv:2:5: `9` is on or above the diagonal (row 1, column 1); the matrix is \
         lower-triangular: row i holds CPUs j < i, the rest is empty"
    );
    assert_eq!(
        parse_err(",,\n1.5,,\n2,3,,\n").to_string(),
        "m.csv:3:6: row 2 has more than 3 cells, but the matrix has 3 rows (one per CPU, so as \
         many columns)"
    );
    assert_eq!(
        parse_err("\n\n").to_string(),
        "m.csv:1:1: the file holds no rows; expected a lower-triangular CSV matrix, one row per CPU"
    );
}

#[test]
fn every_shipped_matrix_parses_with_every_pair_measured() {
    for m in MEASURED {
        let matrix = validate::read_matrix(&data_dir(), m, DATA_FILE_BYTES)
            .unwrap_or_else(|e| panic!("{e}"));
        let n = m.cpus_measured as usize;
        assert_eq!(matrix.pairs().len(), n * (n - 1) / 2, "{}", m.file);
    }
}

// ---------------------------------------------------------------------------
// Classes

fn machine(
    sockets: u32,
    nodes_per_socket: u32,
    l3_per_node: u32,
    cores_per_l3: u32,
    lookup: Lookup,
) -> MachineSpec {
    MachineSpec {
        sockets,
        nodes_per_socket,
        l3_per_node,
        cores_per_l3,
        threads_per_core: 2,
        store_buffer_entries: 16,
        ..MachineSpec::made_up(
            "test",
            if lookup == Lookup::Home {
                Protocol::Moesi
            } else {
                Protocol::Mesif
            },
            lookup,
        )
    }
}

#[test]
fn intel_pairs_are_smt_same_socket_or_cross_socket() {
    // 2 sockets x 4 cores, SMT: CPUs 0-3 socket 0, 4-7 socket 1, 8-15 siblings.
    let t = Topology::new(machine(2, 1, 1, 4, Lookup::Local)).unwrap();
    let c = Classifier::new(&t, Vendor::Intel, 1, "die", LineHome::Node(0));
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(8)),
        Class::SmtSiblings
    );
    assert_eq!(
        c.class(LinuxCpu::new(13), LinuxCpu::new(5)),
        Class::SmtSiblings
    );
    assert_eq!(c.class(LinuxCpu::new(0), LinuxCpu::new(3)), Class::SameL3);
    assert_eq!(c.class(LinuxCpu::new(8), LinuxCpu::new(1)), Class::SameL3);
    assert_eq!(c.class(LinuxCpu::new(5), LinuxCpu::new(6)), Class::SameL3);
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(4)),
        Class::CrossSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(12), LinuxCpu::new(3)),
        Class::CrossSocket
    );
    assert_eq!(c.label(Class::SameL3), "same socket (one L3)");
    // With two nodes a socket (SNC2), other L3 domains of the socket are
    // not split by home: the snoop filter is local.
    let t = Topology::new(machine(2, 2, 1, 2, Lookup::Local)).unwrap();
    let c = Classifier::new(&t, Vendor::Intel, 1, "die", LineHome::Node(0));
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(2)),
        Class::CrossL3SameSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(4), LinuxCpu::new(6)),
        Class::CrossL3SameSocket
    );
    assert_eq!(c.label(Class::SameL3), "same L3 domain");
}

#[test]
fn bergamo_like_pairs_split_ccx_ccd_and_the_home_socket() {
    // 2 sockets x 1 node x 4 CCXs of 2 cores, 2 CCXs a CCD, SMT:
    // cores 0-7 socket 0 (CCX 0-1 = CCD 0, CCX 2-3 = CCD 1), 8-15 socket 1.
    let t = Topology::new(machine(2, 1, 4, 2, Lookup::Home)).unwrap();
    let c = Classifier::new(&t, Vendor::Amd, 2, "CCD", LineHome::Node(0));
    assert_eq!(
        c.class(LinuxCpu::new(1), LinuxCpu::new(17)),
        Class::SmtSiblings
    );
    assert_eq!(c.class(LinuxCpu::new(0), LinuxCpu::new(1)), Class::SameL3);
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(2)),
        Class::CrossCcxSameCcd
    );
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(4)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(18), LinuxCpu::new(7)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(8), LinuxCpu::new(10)),
        Class::CrossCcxSameCcd
    );
    assert_eq!(
        c.class(LinuxCpu::new(8), LinuxCpu::new(12)),
        Class::CrossCcdOtherSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(24), LinuxCpu::new(15)),
        Class::CrossCcdOtherSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(8)),
        Class::CrossSocket
    );
    assert_eq!(
        c.label(Class::CrossCcdOtherSocket),
        "cross-CCD, other socket"
    );
    // Homed on socket 1, the split turns round.
    let c = Classifier::new(&t, Vendor::Amd, 2, "CCD", LineHome::Node(1));
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(4)),
        Class::CrossCcdOtherSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(8), LinuxCpu::new(12)),
        Class::CrossCcdHomeSocket
    );
    // Homed with each pair's first CPU: every same-socket pair is on its
    // home socket.
    let c = Classifier::new(&t, Vendor::Amd, 2, "CCD", LineHome::FirstCpu);
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(4)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(8), LinuxCpu::new(12)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(12), LinuxCpu::new(8)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(8)),
        Class::CrossSocket
    );
    // One CCX a CCD (Milan, Genoa): no cross-CCX class.
    let c = Classifier::new(&t, Vendor::Amd, 1, "CCD", LineHome::Node(0));
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(2)),
        Class::CrossCcdHomeSocket
    );
}

#[test]
fn naples_like_dies_are_nodes_of_two_ccxs() {
    // 2 sockets x 2 dies (nodes) x 2 CCXs x 2 cores: cores 0-3 die 0,
    // 4-7 die 1 (socket 0), 8-15 socket 1.
    let t = Topology::new(machine(2, 2, 2, 2, Lookup::Home)).unwrap();
    let c = Classifier::new(&t, Vendor::Amd, 2, "die", LineHome::Node(0));
    assert_eq!(c.class(LinuxCpu::new(0), LinuxCpu::new(1)), Class::SameL3);
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(3)),
        Class::CrossCcxSameCcd
    );
    assert_eq!(
        c.class(LinuxCpu::new(4), LinuxCpu::new(6)),
        Class::CrossCcxSameCcd
    );
    assert_eq!(
        c.class(LinuxCpu::new(0), LinuxCpu::new(4)),
        Class::CrossCcdHomeSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(8), LinuxCpu::new(12)),
        Class::CrossCcdOtherSocket
    );
    assert_eq!(
        c.class(LinuxCpu::new(3), LinuxCpu::new(12)),
        Class::CrossSocket
    );
    assert_eq!(c.label(Class::CrossCcxSameCcd), "cross-CCX, same die");
    assert_eq!(c.label(Class::CrossCcdHomeSocket), "cross-die, home socket");
}

// ---------------------------------------------------------------------------
// The ping-pong

#[test]
fn the_ping_pong_is_the_shipped_scenario() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/shipped/ping-pong.toml"
    ));
    let loaded = scenarios::load_file(&path).unwrap();
    let doc = &loaded.base.doc;
    assert_eq!(doc.scripts["bounce"].get_ref().as_str(), pingpong::SCRIPT);
    assert_eq!(doc.run.warmup_iterations, pingpong::WARMUP_ITERATIONS);
    assert_eq!(doc.seed, pingpong::SEED);
    assert_eq!(
        doc.run.length(),
        scenarios::format::schema::RunLength::Iterations(pingpong::ITERATIONS)
    );
    // Same machine, same pairs: the same cycles per round trip.
    let built = build_all(&loaded, BuildOptions::default()).unwrap();
    let results = run_all(&built);
    let pp = PingPong::new(
        models::presets::resolve("icelake-sp-2s").unwrap(),
        LineHome::Node(0),
    )
    .unwrap();
    for (r, b) in results.iter().zip(&built) {
        let r = r.as_ref().unwrap();
        let cpus: Vec<LinuxCpu> = b.config.threads.iter().map(|t| t.cpu).collect();
        let cycles = pp.round_trip_cycles(cpus[0], cpus[1]).unwrap();
        assert!(
            (cycles - r.iteration_cycles.mean()).abs() < 0.01,
            "variant {}: {cycles} cycles here, {} in the scenario",
            r.name,
            r.iteration_cycles.mean()
        );
    }
}

#[track_caller]
fn assert_memo_equals_direct(pp: &PingPong, pairs: &[(u32, u32)]) {
    let pairs: &[(LinuxCpu, LinuxCpu)] = &pairs
        .iter()
        .map(|&(a, b)| (LinuxCpu::new(a), LinuxCpu::new(b)))
        .collect::<Vec<_>>();
    let memo = pp.round_trips(pairs).unwrap();
    assert!(pp.distinct_keys(pairs) < pairs.len());
    for (&(a, b), &m) in pairs.iter().zip(&memo) {
        let direct = pp.round_trip_cycles(a, b).unwrap();
        assert_eq!(
            m,
            direct,
            "pair ({a}, {b}), key {:?}: memoized {m} cycles, direct {direct}",
            pp.key(a, b)
        );
    }
}

#[test]
fn memoized_pairs_equal_direct_simulation_on_the_8375c() {
    let m = MEASURED
        .iter()
        .find(|m| m.file == "icelake-sp-8375c-2s.csv")
        .unwrap();
    let preset = models::presets::resolve(m.preset).unwrap();
    let adjusted = calibration::adjust(&preset, m).unwrap();
    let home = m.home.on(&adjusted.spec).unwrap();
    let pp = PingPong::new(adjusted.spec, home).unwrap();
    let matrix = validate::read_matrix(&data_dir(), m, DATA_FILE_BYTES).unwrap();
    // Every 331st measured pair (a prime stride through rows and columns),
    // and one of each key's kind named by hand.
    let mut pairs: Vec<(u32, u32)> = matrix
        .pairs()
        .iter()
        .step_by(331)
        .map(|&(a, b, _)| (a, b))
        .collect();
    pairs.extend([(0, 64), (40, 104), (3, 17), (35, 60), (5, 40), (40, 70)]);
    assert_memo_equals_direct(&pp, &pairs);
}

#[test]
fn memoized_pairs_equal_direct_simulation_on_a_directory_machine() {
    // The home-node effect lives here: lookup at the home, 2 nodes a socket.
    let pp = PingPong::new(machine(2, 2, 2, 2, Lookup::Home), LineHome::Node(1)).unwrap();
    let n = pp.topology().cpu_count();
    let pairs: Vec<(u32, u32)> = (1..n)
        .flat_map(|i| (0..i).map(move |j| (j, i)))
        .step_by(7)
        .collect();
    assert_memo_equals_direct(&pp, &pairs);
}

#[test]
fn memoized_pairs_equal_direct_simulation_when_the_home_follows_the_pair() {
    let pp = PingPong::new(machine(2, 2, 2, 2, Lookup::Home), LineHome::FirstCpu).unwrap();
    assert_eq!(pp.home_of(LinuxCpu::new(0)), 0);
    assert_eq!(pp.home_of(LinuxCpu::new(13)), 3);
    assert_eq!(pp.home_of(LinuxCpu::new(29)), 3);
    let n = pp.topology().cpu_count();
    let pairs: Vec<(u32, u32)> = (1..n)
        .flat_map(|i| (0..i).map(move |j| (j, i)))
        .step_by(11)
        .collect();
    assert_memo_equals_direct(&pp, &pairs);
}

#[test]
fn the_cpu_that_moves_first_may_have_the_higher_number() {
    // Keys and results follow the order given, not the CPU numbers.
    let pp = PingPong::new(machine(2, 2, 2, 2, Lookup::Home), LineHome::Node(0)).unwrap();
    let pairs = [(9, 2), (2, 9), (13, 6), (6, 13), (30, 1), (1, 30)];
    assert_memo_equals_direct(&pp, &pairs);
    assert_ne!(
        pp.key(LinuxCpu::new(9), LinuxCpu::new(2)),
        pp.key(LinuxCpu::new(2), LinuxCpu::new(9))
    );
}

#[test]
fn the_home_socket_pays_less_on_a_directory_machine() {
    // The non-home-socket penalty comes from the topology and the lookup at
    // the home, not from the classes: homed on socket 1, socket 0's
    // cross-L3 pairs go to socket 1 and back.
    let pp = PingPong::new(machine(2, 1, 2, 2, Lookup::Home), LineHome::Node(1)).unwrap();
    let on_home_socket = pp
        .round_trip_cycles(LinuxCpu::new(4), LinuxCpu::new(6))
        .unwrap();
    let on_other_socket = pp
        .round_trip_cycles(LinuxCpu::new(0), LinuxCpu::new(2))
        .unwrap();
    assert!(
        on_other_socket > 1.5 * on_home_socket,
        "{on_other_socket} vs {on_home_socket}"
    );
    // With a snoop filter in the requester's socket, no penalty.
    let pp = PingPong::new(machine(2, 1, 2, 2, Lookup::Local), LineHome::Node(1)).unwrap();
    assert_eq!(
        pp.round_trip_cycles(LinuxCpu::new(4), LinuxCpu::new(6))
            .unwrap(),
        pp.round_trip_cycles(LinuxCpu::new(0), LinuxCpu::new(2))
            .unwrap()
    );
}
