//! The `bounce` binary as a user runs it: output, stderr and exit codes
//! (0 success, 1 a run failed, 2 invalid input or usage).

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{assert_exit, bounce, root, stderr, stdout, TempScenario};

/// A small valid scenario; tests break it in one place.
const SMALL: &str = r#"schema = 1
name = "small"
machine = "icelake-sp-2s"
[run]
iterations = 10
[structs.counter]
fields = [{ name = "value", type = "unsigned long" }]
[instances.ctr]
struct = "counter"
kind = "global"
[scripts]
inc = "ctr.value = ctr.value + 1"
[[threads]]
cpus = "0-1"
script = "inc"
"#;

const METRICS: &[&str] = &[
    "throughput.total (iterations/s)",
    "throughput.per_cpu (iterations/s)",
    "cycles_per_iteration.mean",
    "cycles_per_iteration.p50",
    "cycles_per_iteration.p99",
    "ns_per_iteration.mean",
    "misses_per_iteration",
    "hitm_per_iteration",
    "invalidations_per_iteration",
    "cross_socket_per_iteration",
    "stall_cycles_per_iteration",
];

#[test]
fn run_prints_the_comparison_table() {
    let o = bounce(&["run", "scenarios/shipped/false-sharing.toml"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.starts_with(
            "bounce: false-sharing on icelake-sp-2s (3400 MHz), 2 variant(s), base `packed`\n"
        ),
        "{out}"
    );
    assert_eq!(
        out.lines().nth(1),
        Some("%change: the variant to its right against the base `packed`")
    );
    let header = out.lines().nth(3).expect("table header");
    assert!(
        header.contains("packed") && header.contains("%change") && header.contains("padded"),
        "{header}"
    );
    assert!(header.trim_end().ends_with("metric"), "{header}");
    for m in METRICS {
        assert!(
            out.lines().any(|l| l.ends_with(&format!("  {m}"))),
            "no row for `{m}`:\n{out}"
        );
    }
    // The attribution underneath, per variant.
    assert!(
        out.contains("\npacked: 8 CPUs, 16000 iterations in "),
        "{out}"
    );
    assert!(
        out.contains("\npadded: 8 CPUs, 16000 iterations in "),
        "{out}"
    );
    assert!(out.contains("per field"), "{out}");
    assert!(out.contains("per line"), "{out}");
    assert_eq!(stderr(&o), "");
}

#[test]
fn check_accepts_every_shipped_scenario() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios/shipped"))
        .expect("read scenarios/shipped/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        let rel = format!(
            "scenarios/shipped/{}",
            file.file_name().unwrap().to_str().expect("UTF-8 name")
        );
        let o = bounce(&["check", &rel]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.starts_with(&format!("{rel}: ok: scenario `")), "{out}");
        assert_eq!(stderr(&o), "", "{rel}");
    }
}

#[test]
fn check_reports_a_wrong_key_with_its_place() {
    let file = TempScenario::new(
        "wrong-key",
        &SMALL.replace("iterations = 10", "iteratons = 10"),
    );
    let o = bounce(&["check", file.path()]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "", "nothing on stdout for invalid input");
    let err = stderr(&o);
    assert!(
        err.starts_with("error: unknown key `iteratons` in `run`\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!(" --> {}:5:1\n", file.path())),
        "no file:line:column in:\n{err}"
    );
    assert!(err.contains("did you mean `iterations`?"), "{err}");
}

/// Runs `bounce check FILE` with standard error on a terminal (a pseudo
/// terminal from util-linux's `script`), with `NO_COLOR` set or not; what
/// the terminal received.
fn check_on_a_terminal(file: &str, no_color: Option<&str>) -> String {
    let command = format!("{} check {file}", env!("CARGO_BIN_EXE_bounce"));
    let mut script = Command::new("script");
    script
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .current_dir(root())
        .env_remove("NO_COLOR");
    if let Some(value) = no_color {
        script.env("NO_COLOR", value);
    }
    let o = script.output().expect("util-linux `script` runs");
    assert_exit(&o, 2);
    stdout(&o)
}

#[test]
fn errors_are_coloured_on_a_terminal_unless_no_color_is_set() {
    let file = TempScenario::new(
        "colour",
        &SMALL.replace("iterations = 10", "iteratons = 10"),
    );
    let on_terminal = check_on_a_terminal(file.path(), None);
    assert!(on_terminal.contains("\u{1b}["), "{on_terminal:?}");
    assert!(on_terminal.contains("iteratons"), "{on_terminal:?}");
    let no_color = check_on_a_terminal(file.path(), Some("1"));
    assert!(!no_color.contains('\u{1b}'), "{no_color:?}");
    assert!(
        no_color.contains("error: unknown key `iteratons` in `run`"),
        "{no_color:?}"
    );
    // An empty NO_COLOR does not count (no-color.org).
    let empty = check_on_a_terminal(file.path(), Some(""));
    assert!(empty.contains("\u{1b}["), "{empty:?}");
    // Piped: no colours.
    let piped = bounce(&["check", file.path()]);
    assert!(!stderr(&piped).contains('\u{1b}'), "{}", stderr(&piped));
}

#[test]
fn check_reports_a_build_error() {
    let file = TempScenario::new("no-cpu", &SMALL.replace("0-1", "0-999"));
    let o = bounce(&["check", file.path()]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.starts_with("error: CPU 160 does not exist on icelake-sp-2s"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:14:8", file.path())), "{err}");
}

#[test]
fn a_missing_file_is_bad_input() {
    let missing = std::env::temp_dir().join(format!(
        "bounce-cli-{}-does-not-exist.toml",
        std::process::id()
    ));
    let missing = missing.to_str().unwrap();
    for command in ["run", "check", "trace"] {
        let o = bounce(&[command, missing]);
        assert_exit(&o, 2);
        assert_eq!(stdout(&o), "", "{command}");
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("error: cannot read `{missing}`: ")),
            "{command}: {err}"
        );
    }
}

#[test]
fn trace_prints_the_requested_number_of_entries() {
    let o = bounce(&[
        "trace",
        "scenarios/shipped/ping-pong.toml",
        "--variant",
        "cross-socket",
        "--limit",
        "5",
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or("");
    assert_eq!(
        first,
        "trace of `ping-pong` variant `cross-socket` on icelake-sp-2s (MESIF, lookup local), first 5 entries"
    );
    let entries = out.lines().filter(|l| l.starts_with("[cycle ")).count();
    assert_eq!(entries, 5, "{out}");
    // The pair is CPUs 0 and 40, on different sockets.
    assert!(out.contains("CPU 40 "), "{out}");
    assert!(out.contains("cross-socket"), "{out}");
    assert!(
        out.lines().last().is_some_and(
            |l| l.starts_with("... ") && l.ends_with(" more entries not shown (raise --limit)")
        ),
        "{out}"
    );
    assert_eq!(stderr(&o), "");
}

#[test]
fn trace_of_an_unknown_variant_suggests_the_closest() {
    let o = bounce(&[
        "trace",
        "scenarios/shipped/ping-pong.toml",
        "--variant",
        "cross-sockets",
    ]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: `scenarios/shipped/ping-pong.toml` has no variant `cross-sockets` (did you mean \
         `cross-socket`?); variants: smt-siblings, same-socket, cross-socket\n"
    );
}

#[test]
fn a_script_that_spins_forever_is_truncated() {
    let file = TempScenario::new(
        "spin",
        &SMALL
            .replace("iterations = 10", "iterations = 10\nmax_cycles = 20000")
            .replace(
                "inc = \"ctr.value = ctr.value + 1\"",
                // A condition no check before the run can decide (`while 1`
                // with no way out is refused when the scenario is built).
                "inc = \"\"\"\nwhile iteration() >= 0 {\n}\n\"\"\"",
            ),
    );
    let o = bounce(&["run", file.path()]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: variant `base` has no result: run truncated at cycle "),
        "{err}"
    );
    assert!(err.contains("truncated"), "{err}");
    assert!(err.contains("run.max_cycles = 20000"), "{err}");
    // The report marks the run and points to stderr; the error is said once.
    assert_eq!(
        stdout(&o),
        "\nbase: FAILED, no result (its error is on stderr)\n"
    );
    assert_eq!(err.matches("run truncated").count(), 1, "{err}");
    // A machine-readable format prints no records (they would read as the
    // whole run), says so, and exits 1: the error is on stderr once.
    for format in ["csv", "json"] {
        let o = bounce(&["run", file.path(), "--format", format]);
        assert_exit(&o, 1);
        assert_eq!(stdout(&o), "", "{format}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: variant `base` has no result: run truncated at cycle "),
            "{format}: {err}"
        );
        assert_eq!(err.matches("run truncated").count(), 1, "{format}: {err}");
        assert!(
            err.ends_with("\nerror: no records printed: some runs have no result\n"),
            "{format}: {err}"
        );
    }

    // `check` only validates: the same file is fine.
    assert_exit(&bounce(&["check", file.path()]), 0);
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &["--bogus"][..],
        &["run", "scenarios/shipped/false-sharing.toml", "--bogus"],
        &["frobnicate"],
        &[
            "trace",
            "scenarios/shipped/ping-pong.toml",
            "--limit",
            "many",
        ],
        &["--jobs", "0", "check", "scenarios/shipped/ping-pong.toml"],
    ] {
        let o = bounce(args);
        assert_exit(&o, 2);
        assert_eq!(stdout(&o), "", "{args:?}");
        assert!(
            stderr(&o).starts_with("error: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // No command at all: the usage, on stderr.
    let o = bounce(&[]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("Usage: bounce [OPTIONS] <COMMAND>"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn help_and_version_exit_0() {
    let o = bounce(&["--help"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("Example: bounce run scenarios/shipped/false-sharing.toml"));
    let o = bounce(&["--version"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with("bounce "), "{}", stdout(&o));
}

#[test]
fn jobs_do_not_change_the_report() {
    let one = bounce(&["--jobs", "1", "run", "scenarios/shipped/ping-pong.toml"]);
    let two = bounce(&["--jobs", "2", "run", "scenarios/shipped/ping-pong.toml"]);
    assert_exit(&one, 0);
    assert_exit(&two, 0);
    assert_eq!(stdout(&one), stdout(&two));
}

#[test]
fn a_reader_that_goes_away_ends_bounce_quietly() {
    // As `bounce presets | head -1` does: the pipe closes before the
    // output is written; bounce must not panic.
    let mut child = Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(["run", "scenarios/shipped/contended-counter.toml", "--quiet"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR")))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bounce starts");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("bounce ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
}

/// A run stopped by a bound through the CLI: exit 1, the reason on stderr,
/// and with `--out` no results file written (the directory stays empty).
fn assert_no_result_written(args: &[&str], file: &TempScenario, expected: &str) {
    let out = std::env::temp_dir().join(format!(
        "bounce-cli-{}-out-{}",
        std::process::id(),
        file.path().len() + args.len()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let out_text = out.to_str().unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["run", file.path(), "--out", out_text, "-q"]);
    let o = bounce(&all);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains(expected), "{err}");
    assert!(
        err.ends_with(&format!(
            "error: nothing written to `{out_text}`: some runs have no result\n"
        )),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_run_over_its_event_budget_is_truncated_and_writes_nothing() {
    let file = TempScenario::new("events", SMALL);
    assert_no_result_written(
        &["--set-limit", "events=5"],
        &file,
        "run truncated at cycle ",
    );
    assert_no_result_written(
        &["--set-limit", "events=5"],
        &file,
        "it hit the event budget (5 events; `--set-limit events=N` raises it)",
    );
}

#[test]
fn a_run_that_takes_no_time_stops_and_writes_nothing() {
    let file = TempScenario::new(
        "zero-time",
        &SMALL
            .replace("iterations = 10", "cycles = 1000")
            .replace("\"ctr.value = ctr.value + 1\"", "\"let x = 1\""),
    );
    assert_no_result_written(
        &["--set-limit", "steps_without_time=1000"],
        &file,
        "no progress at cycle 1: a CPU made 1000 procedure calls and iteration ends \
         without simulated time advancing",
    );
}

#[test]
fn limits_are_listed_and_set_by_name() {
    let o = bounce(&["--set-limit", "events=1_000", "limits"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("\nevents              1000 events (default 2000000000)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nscenario_bytes      1048576 bytes\n"),
        "{out}"
    );
    assert!(out.contains("\nmachine CPUs       4096 CPUs\n"), "{out}");
    let o = bounce(&[
        "--set-limit",
        "event=5",
        "check",
        "scenarios/shipped/ping-pong.toml",
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).starts_with(
            "error: --set-limit event=5: unknown limit `event` (did you mean `events`?); valid: "
        ),
        "{}",
        stderr(&o)
    );
    // Lowered below what a file needs, a limit refuses it at load (exit 2).
    let o = bounce(&[
        "--set-limit",
        "iterations=5",
        "check",
        "scenarios/shipped/ping-pong.toml",
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("raise the limit with `--set-limit iterations="),
        "{}",
        stderr(&o)
    );
}

#[test]
fn global_options_have_their_own_heading_and_jobs_states_its_default() {
    let o = bounce(&["--help"]);
    assert_exit(&o, 0);
    let help = stdout(&o);
    let (commands_part, global_part) = help
        .split_once("\nGlobal options:\n")
        .unwrap_or_else(|| panic!("no `Global options:` heading in:\n{help}"));
    for option in [
        "--jobs <N>",
        "--set-limit",
        "--allow-imports-outside",
        "--force",
    ] {
        assert!(
            global_part.contains(option),
            "{option} not under the heading:\n{help}"
        );
        assert!(
            !commands_part.contains(option),
            "{option} also above it:\n{help}"
        );
    }
    assert!(
        global_part.contains(
            "Default: the number of logical CPUs of the host, or `RAYON_NUM_THREADS` when set"
        ),
        "{help}"
    );
    // A subcommand's help lists them under the same heading.
    let run_help = stdout(&bounce(&["run", "--help"]));
    assert!(run_help.contains("\nGlobal options:\n"), "{run_help}");
}

#[test]
fn completions_are_printed_for_each_shell_clap_knows() {
    let bash = bounce(&["completions", "bash"]);
    assert_exit(&bash, 0);
    let script = stdout(&bash);
    assert!(script.contains("complete -F _bounce"), "{script}");
    for word in ["check-protocol", "--set-limit", "--svg-steps"] {
        assert!(script.contains(word), "{word} missing from the bash script");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = bounce(&["completions", shell]);
        assert_exit(&o, 0);
        assert!(stdout(&o).contains("check-protocol"), "{shell}");
    }
    let o = bounce(&["completions", "tcsh"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn man_prints_the_page_and_writes_one_per_subcommand() {
    let o = bounce(&["man"]);
    assert_exit(&o, 0);
    let page = stdout(&o);
    assert!(page.contains(".TH bounce 1"), "{page}");
    assert!(page.contains(".SH \"GLOBAL OPTIONS\""), "{page}");
    assert!(page.contains("check\\-protocol"), "{page}");
    let dir = common::TempDir::new("man");
    let o = bounce(&["man", "--dir", dir.0.to_str().unwrap()]);
    assert_exit(&o, 0);
    let run_page = std::fs::read_to_string(dir.0.join("bounce-run.1")).expect("bounce-run.1");
    assert!(run_page.contains(".TH bounce-run 1"), "{run_page}");
    assert!(run_page.contains("\\-\\-compact"), "{run_page}");
    assert!(dir.0.join("bounce.1").exists());
}

/// A scenario of one CPU on icelake-sp-2s whose scripts start at once
/// (`start_spread_cycles = 0`), with `more` before `[scripts]` and `script`
/// as its script `s`.
fn one_cpu_scenario(header: &str, more: &str, script: &str) -> String {
    format!(
        r#"schema = 1
name = "runtime-error"
machine = "icelake-sp-2s"
seed = 1
{header}
[run]
iterations = 10
start_spread_cycles = 0

[structs.counter]
fields = [
  {{ name = "value", type = "unsigned long" }},
]

[instances.c]
struct = "counter"
kind = "global"
{more}
[scripts]
s = """
{script}
"""

[[threads]]
name = "w"
cpus = "0"
script = "s"
"#
    )
}

/// A run-time error in a user's script points at the scenario file's line,
/// quoted, and at each call it was inside, as a build error does; the run
/// writes no results.
#[test]
fn a_run_time_error_names_the_scenario_files_lines_and_calls() {
    let dir = common::TempDir::new("runtime-error");
    let file = dir.join("div.toml");
    let procedures = r#"
[procedures.half]
params = ["n"]
body = """
let d = n - n
return n / d
"""

[procedures.outer]
params = ["n"]
body = "return half(n) + 1"
"#;
    std::fs::write(
        &file,
        one_cpu_scenario("", procedures, "let v = outer(tid() + 1)\nc.value = v"),
    )
    .unwrap();
    let out = dir.join("out");
    let o = bounce(&["run", &file, "--quiet", "--out", &out]);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        format!(
            "\
error: variant `base` has no result: script failed on CPU 0 at cycle 0: division by zero
  --> {file}:23:10
   |
23 | return n / d
   |          ^
   |
  ::: {file}:28:16
   |
28 | body = \"return half(n) + 1\"
   |                ---- called from here
   |
  ::: {file}:32:9
   |
32 | let v = outer(tid() + 1)
   |         ----- called from here
error: nothing written to `{out}`: some runs have no result
"
        )
    );
    // The report on stdout marks the run; the error is on stderr alone.
    assert_eq!(
        stdout(&o),
        "\nbase: FAILED, no result (its error is on stderr)\n"
    );
    // No results, and no charts, in --out.
    let written: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "{written:?}");
    // `check` builds it (its estimate's short run fails the same way, said
    // on one line).
    let o = bounce(&["check", &file]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).ends_with(&format!(
            "  cost: no estimate: variant `base`: script failed on CPU 0 at cycle 0, at \
             {file}:23:10, called from {file}:28:16, called from {file}:32:9: division by zero\n"
        )),
        "{}",
        stdout(&o)
    );
}

/// A run-time error inside a library module's procedure quotes the
/// module's own line (its file in the repository) and then the user's line
/// that called it.
#[test]
fn a_run_time_error_in_a_library_procedure_names_the_module_and_the_callers_line() {
    let dir = common::TempDir::new("runtime-error-library");
    let file = dir.join("lib.toml");
    std::fs::write(
        &file,
        one_cpu_scenario(
            "use = [\"counters/atomic\"]\n",
            "",
            "let p = 0\nif iteration() > 1000 { p = &c.value }\natomic_inc(p)",
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = bounce(&["run", &file, "--quiet", "--out", &out]);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        format!(
            "\
error: variant `base` has no result: script failed on CPU 0 at cycle 0: `*` of 0, which is not a pointer made by `&inst.field`
  --> models/src/library/counters/atomic.toml:23:9
   |
23 | body = \"fetch_add(*p, 1)\"
   |         ^^^^^^^^^
   |
  ::: {file}:24:1
   |
24 | atomic_inc(p)
   | ---------- called from here
   |
   = note: `atomic_inc` is a procedure of library module `counters/atomic`
error: nothing written to `{out}`: some runs have no result
"
        )
    );
    let written: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "{written:?}");
    // The module's text is where the report says, in a clone.
    let module =
        std::fs::read_to_string(root().join("models/src/library/counters/atomic.toml")).unwrap();
    assert_eq!(module.lines().nth(22), Some("body = \"fetch_add(*p, 1)\""));
}

/// A recursion's calls from one line are quoted once, with their count.
#[test]
fn a_run_time_error_in_a_recursion_quotes_the_recursive_call_once() {
    let dir = common::TempDir::new("runtime-error-recursion");
    let file = dir.join("rec.toml");
    let procedure = "
[procedures.down]
params = [\"n\"]
body = \"\"\"
if n == 0 { return 1 / n }
return down(n - 1)
\"\"\"
";
    std::fs::write(&file, one_cpu_scenario("", procedure, "c.value = down(8)")).unwrap();
    let o = bounce(&["run", &file, "--quiet"]);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        format!(
            "\
error: variant `base` has no result: script failed on CPU 0 at cycle 0: division by zero
  --> {file}:22:22
   |
22 | if n == 0 {{ return 1 / n }}
   |                      ^
   |
  ::: {file}:23:8
   |
23 | return down(n - 1)
   |        ---- called from here, 8 calls in a row
   |
  ::: {file}:28:11
   |
28 | c.value = down(8)
   |           ---- called from here
"
        )
    );
}

/// A change of thousands of percent keeps its row of the comparison table in
/// line: the %change column is as wide as its widest cell.
#[test]
fn a_large_change_keeps_the_comparison_table_aligned() {
    let dir = common::TempDir::new("wide-change");
    let file = dir.join("wide.toml");
    let scenario = one_cpu_scenario(
        "base_name = \"fast\"",
        "[params]\nslow = 0\n",
        "work 1 + 100000 * slow\nc.value = c.value + 1",
    ) + "\n[[variants]]\nname = \"slow\"\nset = { \"params.slow\" = 1 }\n";
    std::fs::write(&file, scenario).unwrap();
    let o = bounce(&["run", &file, "--quiet"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    assert!(
        report
            .split_whitespace()
            .any(|w| w.ends_with('%') && w.len() > 9),
        "no change wider than the table's 9 columns: {report}"
    );
    // Every row of the table ends its figures at the same column: where
    // the metric's name starts.
    let table: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.ends_with("  metric"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() > 10, "{report}");
    let metric_column = |l: &str| l.len() - l.rsplit("  ").next().unwrap().len();
    let first = metric_column(table[0]);
    for row in &table[2..] {
        assert_eq!(metric_column(row), first, "out of line: {row}\n{report}");
    }
}

/// `--out` names a directory; a file there is said to be one, before any
/// run.
#[test]
fn out_naming_a_file_says_it_is_a_file() {
    let dir = common::TempDir::new("out-file");
    let out = dir.join("results.txt");
    std::fs::write(&out, "not a directory").unwrap();
    let o = bounce(&[
        "run",
        "scenarios/shipped/false-sharing.toml",
        "--out",
        &out,
        "--quiet",
    ]);
    assert_exit(&o, 2);
    assert!(stdout(&o).is_empty());
    assert_eq!(
        stderr(&o),
        format!("error: `{out}` is a file, and --out takes a directory (created if missing)\n")
    );
}

/// An `--out` directory that cannot be made is named with the option, and
/// the run writes nothing there and prints no report.
#[test]
fn out_that_cannot_be_created_names_the_option() {
    let dir = common::TempDir::new("out-blocked");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    // A directory under a file: no system lets one be made.
    let out = format!("{file}/results");
    let o = bounce(&[
        "run",
        "scenarios/shipped/false-sharing.toml",
        "--out",
        &out,
        "--quiet",
    ]);
    assert_exit(&o, 2);
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "error: cannot create `{out}`, the --out directory: "
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A failed run into an `--out` directory that holds an earlier run's
/// results files leaves them untouched and says they are not this run's:
/// nothing there may pass for its results.
#[test]
fn a_failed_run_says_the_results_files_in_out_are_an_earlier_runs() {
    let dir = common::TempDir::new("failed-over-earlier");
    let good = dir.join("good.toml");
    std::fs::write(&good, one_cpu_scenario("", "", "c.value = c.value + 1")).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        one_cpu_scenario("", "", "c.value = 1 / (tid() - tid())"),
    )
    .unwrap();
    let out = dir.join("out");
    let o = bounce(&["run", &good, "--quiet", "--out", &out]);
    assert_exit(&o, 0);
    let before = std::fs::read(dir.0.join("out/results.json")).unwrap();
    let o = bounce(&["run", &bad, "--quiet", "--out", &out]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.ends_with(&format!(
            "error: nothing written to `{out}`: some runs have no result; the results.csv, \
             results.json, fields.csv there are an earlier run's, not this one's\n"
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.0.join("out/results.json")).unwrap(),
        before
    );
}

/// `trace` of a spin nobody can release ends as `run` does, with the
/// spin named, rather than tracing on to `run.max_cycles` (the trace's
/// probe turns off the fast-forward that finds such a spin); the entries
/// before it are still printed.
#[test]
fn trace_of_a_spin_nobody_releases_ends_with_the_spin_named() {
    let dir = common::TempDir::new("trace-spin-forever");
    let file = dir.join("spin.toml");
    std::fs::write(&file, one_cpu_scenario("", "", "while c.value != 7 {\n}")).unwrap();
    let o = bounce(&["trace", &file, "--limit", "3"]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: the run has no result: no progress at cycle "),
        "{err}"
    );
    assert!(err.contains(&format!("--> {file}:")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = stdout(&o);
    assert!(
        out.starts_with("trace of `runtime-error` variant `base`"),
        "{out}"
    );
    assert!(out.contains("more entries not shown"), "{out}");
}
