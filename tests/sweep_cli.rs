//! Sweeps through the binary: `run --out`, `--shard I/N`, `merge`, progress.

use std::path::Path;

mod common;
use common::{assert_exit, bounce, root, stderr, stdout, TempDir};

/// Six cases of two variants, a few milliseconds each (shared with the
/// other sweep tests of the binary).
const SWEEP: &str = include_str!("fixtures/counter-sweep.toml");

const FILES: [&str; 3] = ["results.csv", "results.json", "fields.csv"];

fn read(dir: &str, name: &str) -> Vec<u8> {
    std::fs::read(Path::new(dir).join(name)).unwrap_or_else(|e| panic!("{dir}/{name}: {e}"))
}

#[test]
fn merged_shards_are_byte_identical_to_an_unsharded_run() {
    let tmp = TempDir::new("merge");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let (full, s0, s1, merged) = (
        tmp.join("full"),
        tmp.join("s0"),
        tmp.join("s1"),
        tmp.join("merged"),
    );
    let o = bounce(&["run", &file, "--out", &full, "--quiet"]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
    let report = stdout(&o);
    assert!(
        report.starts_with(
            "bounce: counter-sweep: sweep of 6 case(s) (cpus x params.step) x 2 variant(s)\n"
        ),
        "{report}"
    );
    assert!(!Path::new(&full).join("shard.json").exists());

    assert_exit(
        &bounce(&["run", &file, "--shard", "0/2", "--out", &s0, "-q"]),
        0,
    );
    assert_exit(
        &bounce(&["run", &file, "--shard", "1/2", "--out", &s1, "-q"]),
        0,
    );
    let manifest = String::from_utf8(read(&s1, "shard.json")).unwrap();
    assert!(manifest.contains("\"shard_index\": 1"), "{manifest}");
    assert!(
        manifest.contains("\"id\": \"cpus=1,params.step=2\""),
        "{manifest}"
    );
    // A shard holds only its own runs.
    let part = String::from_utf8(read(&s0, "results.csv")).unwrap();
    assert_eq!(part.lines().count(), 1 + 3 * 2, "{part}");

    // The shards in any order.
    let o = bounce(&["merge", &merged, &s1, &s0]);
    assert_exit(&o, 0);
    assert!(stdout(&o)
        .starts_with("bounce: merged 2 shard(s) of `counter-sweep`: 6 case(s), 12 run(s)"));
    for name in FILES {
        assert!(
            read(&full, name) == read(&merged, name),
            "{name} differs between the unsharded run and the merge"
        );
    }
    assert!(!Path::new(&merged).join("shard.json").exists());

    // With one host thread or two, the same files.
    let one = tmp.join("one");
    assert_exit(
        &bounce(&["--jobs", "1", "run", &file, "--out", &one, "-q"]),
        0,
    );
    for name in FILES {
        assert!(
            read(&full, name) == read(&one, name),
            "{name} depends on --jobs"
        );
    }
}

#[test]
fn merge_names_the_missing_cases_and_writes_nothing() {
    let tmp = TempDir::new("missing");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let (s0, s1, out) = (tmp.join("s0"), tmp.join("s1"), tmp.join("out"));
    assert_exit(
        &bounce(&["run", &file, "--shard", "0/3", "--out", &s0, "-q"]),
        0,
    );
    assert_exit(
        &bounce(&["run", &file, "--shard", "1/3", "--out", &s1, "-q"]),
        0,
    );
    let o = bounce(&["merge", &out, &s0, &s1]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: 1 of 3 shard(s) missing: 2/3; run them again (as Slurm array task IDs: --array=2)\n\
             error: 2 case(s) are in no shard: `cpus=2,params.step=1`, `cpus=44,params.step=2`\n\
             error: nothing written to `{out}`\n"
        )
    );
    assert!(!Path::new(&out).exists());

    // The same shard twice.
    let o = bounce(&["merge", &out, &s0, &s0, &s1]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("case `cpus=1,params.step=1` is in more than one shard"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&out).exists());

    // Shards of another file.
    let other = tmp.join("other.toml");
    std::fs::write(&other, SWEEP.replace("seed = 3", "seed = 4")).unwrap();
    let s2 = tmp.join("s2");
    assert_exit(
        &bounce(&["run", &other, "--shard", "2/3", "--out", &s2, "-q"]),
        0,
    );
    let o = bounce(&["merge", &out, &s0, &s1, &s2]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).starts_with("error: the shards come from different scenario files"),
        "{}",
        stderr(&o)
    );
    // A directory that is no shard.
    let o = bounce(&["merge", &out, &tmp.join("nowhere")]);
    assert_exit(&o, 2);
    assert!(!Path::new(&out).exists());
}

#[test]
fn merge_names_every_failed_shard_and_a_rerun_replaces_it() {
    let tmp = TempDir::new("failed-shards");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let full = tmp.join("full");
    assert_exit(&bounce(&["run", &file, "--out", &full, "-q"]), 0);
    // Five shards: 0 and 3 finished, 1 failed (its directory exists, with
    // the temporary file a killed write leaves), 2 and 4 never ran.
    let dirs: Vec<String> = (0..5).map(|i| tmp.join(&format!("shard-{i}"))).collect();
    for i in [0, 3] {
        let shard = format!("{i}/5");
        assert_exit(
            &bounce(&["run", &file, "--shard", &shard, "--out", &dirs[i], "-q"]),
            0,
        );
    }
    std::fs::create_dir_all(&dirs[1]).unwrap();
    std::fs::write(Path::new(&dirs[1]).join(".results.csv.77.partial"), "case").unwrap();
    let out = tmp.join("merged");
    let mut args = vec!["merge", out.as_str()];
    args.extend(dirs.iter().map(String::as_str));
    let o = bounce(&args);
    assert_exit(&o, 2);
    let rule = "(a shard is written by `bounce run FILE --shard I/N --out DIR`, and only when all its runs succeed)";
    assert_eq!(
        stderr(&o),
        format!(
            "error: `{d1}` holds no shard: `shard.json` is missing {rule}\n\
             error: `{d2}` holds no shard: there is no such directory {rule}\n\
             error: `{d4}` holds no shard: there is no such directory {rule}\n\
             error: 3 of 5 shard(s) missing: 1/5, 2/5, 4/5; run them again (as Slurm array task IDs: --array=1-2,4)\n\
             error: 3 case(s) are in no shard: `cpus=1,params.step=2`, `cpus=2,params.step=1`, `cpus=44,params.step=1`\n\
             error: nothing written to `{out}`\n",
            d1 = dirs[1],
            d2 = dirs[2],
            d4 = dirs[4],
        )
    );
    assert!(!Path::new(&out).exists());

    // Run again into the same directories, the failed shard's included: the
    // merge is the unsharded run's, byte for byte.
    for i in [1, 2, 4] {
        let shard = format!("{i}/5");
        assert_exit(
            &bounce(&["run", &file, "--shard", &shard, "--out", &dirs[i], "-q"]),
            0,
        );
    }
    let o = bounce(&args);
    assert_exit(&o, 0);
    assert!(
        stdout(&o)
            .starts_with("bounce: merged 5 shard(s) of `counter-sweep`: 6 case(s), 12 run(s)"),
        "{}",
        stdout(&o)
    );
    for name in FILES {
        assert!(
            read(&full, name) == read(&out, name),
            "{name} differs between the unsharded run and the merge"
        );
    }

    // No directory holds a shard: nothing tells the split, so all run again.
    let o = bounce(&["merge", &out, &tmp.join("none-0"), &tmp.join("none-1")]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).ends_with(&format!(
            "error: none of the 2 director(ies) given holds a shard: run every shard again\n\
             error: nothing written to `{out}`\n"
        )),
        "{}",
        stderr(&o)
    );
}

/// One story on purpose: a full run, a run cut short, its resumptions,
/// each step checked against the files the steps before it wrote.
#[test]
fn a_resumed_run_runs_only_the_missing_cases_and_writes_the_same_bytes() {
    let tmp = TempDir::new("resume");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let full = tmp.join("full");
    assert_exit(&bounce(&["run", &file, "--out", &full, "-q"]), 0);

    // An event budget the 44-CPU cases (about 6000 events a run) cannot
    // meet: they fail, the four others are kept.
    let part = tmp.join("part");
    let o = bounce(&[
        "--set-limit",
        "events=1000",
        "run",
        &file,
        "--out",
        &part,
        "-q",
    ]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).ends_with(&format!(
            "error: nothing written to `{part}`: some runs have no result; the 4 case(s) that finished are kept there, and `--resume` runs only the others\n"
        )),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&part).join("results.csv").exists());
    let mut kept: Vec<String> = std::fs::read_dir(Path::new(&part).join(".bounce-resume"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        ["case-0.json", "case-1.json", "case-2.json", "case-3.json"]
    );

    let o = bounce(&["run", &file, "--out", &part, "--resume", "-q"]);
    assert_exit(&o, 0);
    assert_eq!(
        stderr(&o),
        format!("bounce: resuming in `{part}`: 4 case(s) already done, 2 to run\n")
    );
    // The report shows the cases run now.
    assert!(
        stdout(&o).contains("2 case(s) x 2 variant(s)")
            && stdout(&o).contains(
                "\ncase cpus=44, params.step=2: %change: the variant to its right against \
                 the base `base`\n"
            )
            && !stdout(&o).contains("\ncase cpus=2, "),
        "{}",
        stdout(&o)
    );
    for name in FILES {
        assert!(
            read(&full, name) == read(&part, name),
            "{name} differs between a resumed run and a run never stopped"
        );
    }
    assert!(!Path::new(&part).join(".bounce-resume").exists());

    // Resumed again: the results files already hold every case.
    let o = bounce(&["run", &file, "--out", &part, "--resume", "-q"]);
    assert_exit(&o, 0);
    assert_eq!(
        stderr(&o),
        format!("bounce: resuming in `{part}`: 6 case(s) already done, 0 to run\n")
    );
    for name in FILES {
        assert!(read(&full, name) == read(&part, name), "{name} changed");
    }

    // A shard resumes its own cases.
    let shard = tmp.join("shard");
    assert_exit(
        &bounce(&[
            "--set-limit",
            "events=1000",
            "run",
            &file,
            "--shard",
            "0/2",
            "--out",
            &shard,
            "-q",
        ]),
        1,
    );
    let o = bounce(&[
        "run", &file, "--shard", "0/2", "--out", &shard, "--resume", "-q",
    ]);
    assert_exit(&o, 0);
    assert_eq!(
        stderr(&o),
        format!("bounce: resuming in `{shard}`: 2 case(s) already done, 1 to run\n")
    );
    assert!(Path::new(&shard).join("shard.json").exists());

    // Once the file changes, nothing kept belongs to it: every case runs.
    std::fs::write(&file, SWEEP.replace("seed = 3", "seed = 4")).unwrap();
    assert_exit(
        &bounce(&[
            "--set-limit",
            "events=1000",
            "run",
            &tmp.join("sweep.toml"),
            "--out",
            &tmp.join("other"),
            "-q",
        ]),
        1,
    );
    let o = bounce(&["run", &file, "--out", &part, "--resume", "-q"]);
    assert_exit(&o, 0);
    assert_eq!(
        stderr(&o),
        format!("bounce: resuming in `{part}`: 0 case(s) already done, 6 to run\n")
    );

    // A run without --resume starts afresh: what an earlier run kept goes.
    let fresh = tmp.join("fresh");
    assert_exit(
        &bounce(&[
            "--set-limit",
            "events=1000",
            "run",
            &file,
            "--out",
            &fresh,
            "-q",
        ]),
        1,
    );
    assert!(Path::new(&fresh).join(".bounce-resume").exists());
    assert_exit(
        &bounce(&[
            "--set-limit",
            "events=1000",
            "run",
            &file,
            "--out",
            &fresh,
            "-q",
        ]),
        1,
    );
    assert_exit(&bounce(&["run", &file, "--out", &fresh, "-q"]), 0);
    assert!(!Path::new(&fresh).join(".bounce-resume").exists());
    // --resume needs --out.
    assert_exit(&bounce(&["run", &file, "--resume"]), 2);
}

#[test]
fn check_counts_the_runs_and_estimates_their_events() {
    let tmp = TempDir::new("check-cost");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let o = bounce(&["check", &file]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("\n  runs: 6 case(s) x 2 variant(s) = 12 run(s)\n"),
        "{out}"
    );
    assert!(
        out.contains(" memory operations per case, at most ")
            && out.contains("(case `cpus=44,params.step=")
            && out.ends_with(" (estimated from the first 100.0k simulated cycles of each run)\n"),
        "{out}"
    );
    let o = bounce(&["check", "scenarios/shipped/ping-pong.toml"]);
    assert!(
        stdout(&o).contains("\n  runs: 1 case(s) x 3 variant(s) = 3 run(s)\n  cost: about "),
        "{}",
        stdout(&o)
    );
}

/// The estimate against the runs themselves: the shipped sweep's 130 cases,
/// from 1 CPU to 192, in all and for its largest case.
#[test]
fn the_cost_estimate_is_near_what_the_runs_take() {
    let loaded =
        scenarios::load_file(&root().join("scenarios/shipped/contended-counter-sweep.toml"))
            .unwrap();
    let cases =
        scenarios::run::cases::build_cases(&loaded, scenarios::build::BuildOptions::default())
            .unwrap();
    let estimates = scenarios::run::estimate::estimate_cases(&cases, u64::MAX);
    let results = scenarios::run::cases::run_cases(&cases, u64::MAX, &|| {});
    let mut estimated = (0u64, 0u64);
    let mut actual = (0u64, 0u64);
    for (e, r) in estimates.iter().zip(&results) {
        let (events, ops) = (e.events.unwrap(), e.memory_ops.unwrap());
        let run = r.results[0].as_ref().unwrap();
        let (run_events, run_ops) = (run.outcome.events, run.outcome.memory_ops);
        // Each case within a factor of two.
        assert!(
            events <= 2 * run_events && run_events <= 2 * events,
            "case `{}`: {events} events estimated, {run_events} run",
            e.id
        );
        assert!(
            ops <= 2 * run_ops && run_ops <= 2 * ops,
            "case `{}`: {ops} memory operations estimated, {run_ops} run",
            e.id
        );
        estimated = (estimated.0 + events, estimated.1 + ops);
        actual = (actual.0 + run_events, actual.1 + run_ops);
    }
    // The sweep in all within 10 %.
    let near = |a: u64, b: u64| a.abs_diff(b) * 10 <= b;
    assert!(
        near(estimated.0, actual.0),
        "{estimated:?} against {actual:?}"
    );
    assert!(
        near(estimated.1, actual.1),
        "{estimated:?} against {actual:?}"
    );
}

#[test]
fn bad_shards_are_usage_errors() {
    for shard in ["2/2", "0/0", "1", "a/2", "-1/2", "1/2/3"] {
        let o = bounce(&[
            "run",
            "scenarios/shipped/ping-pong.toml",
            &format!("--shard={shard}"),
            "--out",
            "/nonexistent/never-written",
        ]);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains("--shard"), "{shard}: {}", stderr(&o));
        assert_eq!(stdout(&o), "");
    }
    let o = bounce(&[
        "run",
        "scenarios/shipped/ping-pong.toml",
        "--shard",
        "2/2",
        "--out",
        "x",
    ]);
    assert!(
        stderr(&o).contains("shard 2 of 2 does not exist: shards are numbered 0 to 1"),
        "{}",
        stderr(&o)
    );
    // A shard needs somewhere to write its part.
    assert_exit(
        &bounce(&["run", "scenarios/shipped/ping-pong.toml", "--shard", "0/2"]),
        2,
    );
}

#[test]
fn a_run_without_a_sweep_prints_the_same_report_and_writes_one_case() {
    let tmp = TempDir::new("plain");
    let out = tmp.join("out");
    let o = bounce(&["run", "scenarios/shipped/ping-pong.toml", "--out", &out]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
    let loaded = scenarios::load_file(&root().join("scenarios/shipped/ping-pong.toml")).unwrap();
    let built =
        scenarios::build::build_all(&loaded, scenarios::build::BuildOptions::default()).unwrap();
    let expected = scenarios::report::text::full_report(
        &loaded.base.doc.name,
        &scenarios::run::results::run_all(&built),
    );
    assert_eq!(stdout(&o), expected);
    let csv = String::from_utf8(read(&out, "results.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(
        rows[0].starts_with("case_index,case_id,variant,machine,"),
        "{csv}"
    );
    assert!(
        rows[1].starts_with("0,,smt-siblings,icelake-sp-2s,3400,"),
        "{csv}"
    );
    // The seed of a scenario without a sweep is the file's.
    let json = String::from_utf8(read(&out, "results.json")).unwrap();
    let file: scenarios::report::output::ResultsFile = serde_json::from_str(&json).unwrap();
    assert!(file
        .records
        .iter()
        .all(|r| r.seed == 1 && r.case_id.is_empty()));
    assert_eq!(
        file.variants,
        ["smt-siblings", "same-socket", "cross-socket"]
    );
}

#[test]
fn a_failed_run_writes_no_results() {
    let tmp = TempDir::new("failed");
    let file = tmp.join("sweep.toml");
    // Four CPUs take more than the budget; one is fine.
    let text = SWEEP
        .replace("iterations = 20", "iterations = 20\nmax_cycles = 3000")
        .replace("cpus = [1, 2, 44]", "cpus = [1, 44]");
    std::fs::write(&file, text).unwrap();
    let out = tmp.join("out");
    let o = bounce(&["run", &file, "--out", &out, "-q"]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(
            "error: case `cpus=44,params.step=1`, variant `base` has no result: run truncated"
        ),
        "{err}"
    );
    assert!(
        err.ends_with(&format!(
            "error: nothing written to `{out}`: some runs have no result; the 2 case(s) that finished are kept there, and `--resume` runs only the others\n"
        )),
        "{err}"
    );
    assert!(stdout(&o).contains("FAILED"), "{}", stdout(&o));
    for name in FILES {
        assert!(!Path::new(&out).join(name).exists(), "{name} written");
    }
    // No temporary file left behind either: only the finished cases, kept
    // for --resume.
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(left, [".bounce-resume"]);
}

#[test]
fn progress_never_goes_to_stdout() {
    let tmp = TempDir::new("progress");
    let file = tmp.join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let quiet = bounce(&["run", &file, "--quiet"]);
    let chatty = bounce(&["run", &file]);
    assert_exit(&quiet, 0);
    assert_exit(&chatty, 0);
    assert_eq!(stdout(&quiet), stdout(&chatty));
    assert_eq!(stderr(&quiet), "");
    // Not a terminal, and quicker than the interval between progress lines.
    assert_eq!(stderr(&chatty), "");
}

/// Off a terminal, progress is a line on stderr at a fixed interval that
/// counts runs (variants x cases), whether or not a run ended meanwhile;
/// stdout is the same bytes as with `--quiet`.
#[test]
fn progress_off_a_terminal_is_a_line_at_a_fixed_interval_counting_runs() {
    let file = "scenarios/shipped/contended-counter-sweep.toml";
    let with_lines = std::process::Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(["run", file])
        .current_dir(common::root())
        // An interval far below the run's length (tens of milliseconds even
        // in a release build), so that lines come whatever the host's speed.
        .env("BOUNCE_PROGRESS_INTERVAL_MS", "1")
        .output()
        .expect("run bounce");
    common::assert_exit(&with_lines, 0);
    let quiet = common::bounce(&["run", "--quiet", file]);
    common::assert_exit(&quiet, 0);
    assert_eq!(
        with_lines.stdout, quiet.stdout,
        "progress changed the results"
    );
    assert_eq!(common::stderr(&quiet), "");
    let err = common::stderr(&with_lines);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() >= 2, "{err}");
    for line in &lines {
        assert!(line.starts_with("bounce: "), "{line}");
        assert!(line.contains("/130 runs done"), "{line}");
        // Never a rate of nothing (`30.0 runs/s` is fine).
        assert!(!line.contains(", 0.0 runs/s"), "{line}");
    }
    // The first line can come before any run ends; later ones estimate.
    assert!(err.contains("left"), "{err}");
}

/// `--case ID` makes trace, layout --run and optimize look at one case of a
/// sweep (by id or index); without it they say they show the scenario as
/// written; a wrong id is exit 2 with the nearest and the cases.
#[test]
fn case_picks_one_case_of_a_sweep_for_trace_layout_and_optimize() {
    let file = "scenarios/shipped/contended-counter-sweep.toml";
    let o = bounce(&[
        "trace",
        file,
        "--limit",
        "1",
        "--case",
        "machine=bergamo-2s,cpus=8",
    ]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o)
            .starts_with("trace of `contended-counter-sweep` variant `base` on bergamo-2s (MOESI"),
        "{}",
        stdout(&o)
    );
    assert_eq!(stderr(&o), "");
    let unswept = bounce(&["trace", file, "--limit", "1"]);
    assert_exit(&unswept, 0);
    assert!(
        stdout(&unswept).contains("on icelake-sp-2s"),
        "{}",
        stdout(&unswept)
    );
    assert_eq!(
        stderr(&unswept),
        "note: `scenarios/shipped/contended-counter-sweep.toml` sweeps 130 case(s); this is the \
         scenario as written, without its sweep (--case ID picks one, e.g. --case \
         'machine=icelake-sp-2s,cpus=1')\n"
    );
    // By index: case 5 is icelake-sp-2s with 28 CPUs.
    let o = bounce(&["layout", file, "--run", "--case", "5"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("on 28 CPUs"), "{}", stdout(&o));
    let o = bounce(&[
        "layout",
        file,
        "--run",
        "--case",
        "machine=icelake-sp-2s,cpus=28",
    ]);
    assert!(stdout(&o).contains("on 28 CPUs"), "{}", stdout(&o));
    // optimize for one case: its base is that case's.
    let o = bounce(&[
        "optimize",
        file,
        "--struct",
        "counter",
        "--case",
        "machine=epyc-milan-2s,cpus=4",
        "--quiet",
        "--max-evaluations",
        "4",
    ]);
    assert_exit(&o, 0);
    // Wrong ids.
    let o = bounce(&["trace", file, "--case", "machine=bergamo-2s,cpus=9"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "error: --case machine=bergamo-2s,cpus=9: `scenarios/shipped/contended-counter-sweep.toml` \
             has no such case (did you mean `machine=bergamo-2s,cpus=96`?); its cases (by id, or by \
             index 0 to 129): `machine=icelake-sp-2s,cpus=1`, "
        ),
        "{err}"
    );
    assert!(err.ends_with(", ... (130 in all; `bounce check scenarios/shipped/contended-counter-sweep.toml --format csv` lists them)\n"), "{err}");
    let o = bounce(&[
        "layout",
        "scenarios/shipped/false-sharing.toml",
        "--case",
        "0",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: --case 0: `scenarios/shipped/false-sharing.toml` has no [sweep]; --case picks one of a sweep's cases\n"
    );
}

/// Inline machine tables on a sweep's `machine` axis get readable case
/// labels: the machine's `name`, or its preset and what the table sets.
#[test]
fn inline_machine_tables_get_readable_case_labels() {
    let dir = TempDir::new("inline-labels");
    let file = dir.0.join("inline.toml");
    std::fs::write(
        &file,
        r#"schema = 1
name = "inline"
machine = "icelake-sp-2s"
[run]
iterations = 10
[structs.c]
fields = [{ name = "v", type = "u64" }]
[instances.g]
struct = "c"
kind = "global"
[scripts]
s = "fetch_add(g.v, 1)"
[[threads]]
cpus = "0-1"
script = "s"
[sweep]
machine = [
  { preset = "icelake-sp-2s", sockets = 1 },
  { preset = "icelake-sp-2s", clock_mhz = 2300, protocol = "mesi" },
  { preset = "bergamo-2s", name = "my-bergamo" },
  "bergamo-2s",
  { preset = "bergamo-2s", latency = { l1_hit_cycles = 5 } },
]
"#,
    )
    .unwrap();
    let o = bounce(&["check", file.to_str().unwrap(), "--format", "csv"]);
    assert_exit(&o, 0);
    let ids: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        [
            "machine=icelake-sp-2s+sockets:1",
            "machine=icelake-sp-2s+clock_mhz:2300+protocol:mesi",
            "machine=my-bergamo",
            "machine=bergamo-2s",
            "machine=bergamo-2s+latency",
        ]
    );
}

/// `[[measured]]` in a sweep: each figure names its case; `one-way-latency`
/// is half an iteration of a ping-pong in ns.
#[test]
fn measured_figures_per_case_of_a_sweep_with_one_way_latency() {
    let file = "tests/fixtures/ping-pong-measured-sweep.toml";
    let o = bounce(&["run", "--quiet", file]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let row = |label: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row in:\n{out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("[1] same socket"),
        "[1] same socket (threads.pair.cpus=\"0,1\") base one-way latency (ns) 51.3 ns 51.2 ns -0.12 ns ok (±5.00)"
    );
    assert_eq!(
        row("[2] cross socket"),
        "[2] cross socket (threads.pair.cpus=\"0,40\") base one-way latency (ns) 107.8 ns 107.9 ns +0.14 ns"
    );
    // results.json carries each comparison with its case.
    let o = bounce(&["run", "--quiet", "--format", "json", file]);
    assert_exit(&o, 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let measured = doc["measured"]
        .as_array()
        .expect("measured in results.json");
    assert_eq!(measured.len(), 2);
    assert_eq!(measured[1]["case"], "threads.pair.cpus=\"0,40\"");
    assert_eq!(measured[1]["unit"], "ns");
}

#[test]
fn a_measured_figure_in_a_sweep_names_a_case_of_it() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/ping-pong-measured-sweep.toml"))
        .unwrap();
    let dir = TempDir::new("measured-case");
    let write = |name: &str, text: &str| {
        let path = dir.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let missing = write(
        "missing.toml",
        &text.replacen("case = 'threads.pair.cpus=\"0,1\"'\n", "", 1),
    );
    let o = bounce(&["check", &missing]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).starts_with(
            "error: `measured.0.case` is missing: in a scenario with `[sweep]`, each measured figure names the case it was measured as\n"
        ),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("= valid: case = \"ID\", one of the sweep's case ids, such as `threads.pair.cpus=\"0,1\"`"), "{}", stderr(&o));
    let wrong = write(
        "wrong.toml",
        &text.replacen("cpus=\"0,40\"'", "cpus=\"0,41\"'", 1),
    );
    let o = bounce(&["check", &wrong]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).starts_with(
            "error: `measured.1.case` is `threads.pair.cpus=\"0,41\"`, which is not a case of the sweep\n"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("= valid: threads.pair.cpus=\"0,1\", threads.pair.cpus=\"0,40\"\n"),
        "{}",
        stderr(&o)
    );
}
