//! `--format csv|json` on `presets`, `check` and `validate`: the same
//! results as the text, machine-readable; and `validate`'s exit code with
//! documented known misses.

mod common;
use common::{assert_exit, bounce, stderr, stdout, TempDir};

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}:\n{}", stdout(o)))
}

#[test]
fn presets_list_as_csv_and_json() {
    let o = bounce(&["presets", "--format", "csv"]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("preset,cpus,sockets,nodes,l3_domains,cores,threads_per_core,modes,summary")
    );
    let bergamo = lines.find(|l| l.starts_with("bergamo-2s,")).unwrap();
    assert!(
        bergamo.starts_with("bergamo-2s,512,2,2,32,256,2,smt-off,"),
        "{bergamo}"
    );
    // A field with a comma is quoted.
    assert!(csv.contains(",\"snc2, smt-off\","), "{csv}");

    let o = bounce(&["presets", "--format", "json"]);
    assert_exit(&o, 0);
    let doc = json(&o);
    let presets = doc["presets"].as_array().unwrap();
    assert_eq!(presets.len(), csv.lines().count() - 1);
    let milan = presets
        .iter()
        .find(|p| p["preset"] == "epyc-milan-2s")
        .unwrap();
    assert_eq!(milan["cpus"], 256);
    assert_eq!(milan["modes"], "nps1 (default), nps2, nps4, smt-off");
}

#[test]
fn presets_show_as_csv_and_json() {
    let o = bounce(&["presets", "show", "bergamo-2s", "--format", "csv"]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    assert!(csv.starts_with("key,value,unit,provenance,used_by_model,source,note\n"));
    assert!(
        csv.contains("\nsockets,2,,documented,true,[S2] dual EPYC 9754 matrix,\n"),
        "{csv}"
    );

    let o = bounce(&["presets", "show", "epyc-milan-2s:nps4", "--format", "json"]);
    assert_exit(&o, 0);
    let doc = json(&o);
    assert_eq!(doc["preset"], "epyc-milan-2s:nps4");
    assert_eq!(doc["modes_applied"], serde_json::json!(["nps4"]));
    assert_eq!(doc["topology"]["nodes"], 8);
    assert_eq!(doc["topology"]["cpus"], 256);
    let clock = doc["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["key"] == "clock_mhz")
        .unwrap();
    assert_eq!(clock["value"], 3500);
    assert_eq!(clock["unit"], "MHz");

    // --toml is a third output: not with --format.
    let o = bounce(&[
        "presets",
        "show",
        "bergamo-2s",
        "--toml",
        "--format",
        "json",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: --toml and --format csv|json are different outputs; give one\n"
    );
    // Errors are the text's.
    let o = bounce(&["presets", "show", "bergamo-3s", "--format", "csv"]);
    assert_exit(&o, 2);
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).starts_with("error: unknown preset `bergamo-3s`"));
}

#[test]
fn check_as_csv_and_json() {
    let file = "scenarios/shipped/ping-pong.toml";
    let o = bounce(&["check", file, "--format", "csv"]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "case_index,case_id,variant,machine,machine_cpus,running_cpus,memory_lines,\
         case_events_estimate,case_memory_ops_estimate\n\
         0,,smt-siblings,icelake-sp-2s,160,2,2,14286,10219\n\
         0,,same-socket,icelake-sp-2s,160,2,2,14286,10219\n\
         0,,cross-socket,icelake-sp-2s,160,2,2,14286,10219\n"
    );
    let o = bounce(&["check", file, "--format", "json"]);
    assert_exit(&o, 0);
    let doc = json(&o);
    assert_eq!(doc["scenario"], "ping-pong");
    assert_eq!(doc["variants"][2]["variant"], "cross-socket");
    assert_eq!(doc["variants"][2]["running_cpus"], 2);
    // The text says "1 running CPU", not "1 running CPUs".
    let o = bounce(&["check", "scenarios/shipped/contended-counter.toml"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("\n  1cpu: icelake-sp-2s (160 CPUs), 1 running CPU, 2 lines of memory\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  2cpus: icelake-sp-2s (160 CPUs), 2 running CPUs, 2 lines of memory\n"),
        "{text}"
    );
    // Threads that share CPUs are counted as threads on so many CPUs (the
    // hackbench scenario puts 20 threads on 10 CPUs).
    let o = bounce(&["check", "scenarios/shipped/hackbench.toml"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("\n  base: icelake-sp-2s (160 CPUs), 20 threads on 10 CPUs, "),
        "{text}"
    );
}

#[test]
fn validate_known_misses_pass_unless_strict() {
    // The measured Milan matrices disagree cross-socket: one class of the
    // 7763 is outside its bound, a documented known miss.
    let o = bounce(&["validate", "--quiet", "--machine", "epyc-milan-2s"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("NO (known, below)"), "{}", stdout(&o));
    assert_eq!(stderr(&o), "");
    let o = bounce(&[
        "validate",
        "--quiet",
        "--machine",
        "epyc-milan-2s",
        "--strict",
    ]);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        "error: --strict: some classes are outside their bound, as documented known misses (see the table)\n"
    );
}

#[test]
fn validate_as_csv_and_json() {
    let tmp = TempDir::new("validate-format");
    let written = tmp.join("v.csv");
    let o = bounce(&[
        "validate",
        "--machine",
        "epyc-milan-2s",
        "--csv",
        &written,
        "--format",
        "csv",
    ]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    assert_eq!(csv, std::fs::read_to_string(&written).unwrap());
    let o = bounce(&["validate", "--machine", "epyc-milan-2s", "--format", "json"]);
    assert_exit(&o, 0);
    let doc = json(&o);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), csv.lines().count() - 1);
    let miss = rows
        .iter()
        .find(|r| r["file"] == "epyc-milan-7763-2s.csv" && r["class"] == "cross-socket")
        .unwrap();
    assert_eq!(miss["within_bound"], false);
    assert!(miss["note"].as_str().unwrap().starts_with("known miss: "));
    assert!(miss["error_pct"].as_f64().unwrap() < -30.0);
    // The 7763's cross-socket was held out (the preset took the 7R13's);
    // its SMT class set the preset's number.
    assert_eq!(miss["role"], "prediction");
    let smt = rows
        .iter()
        .find(|r| r["file"] == "epyc-milan-7763-2s.csv" && r["class"] == "SMT siblings")
        .unwrap();
    assert_eq!(smt["role"], "calibration");
}

#[test]
fn check_on_a_sweep_reports_its_axes_cases_machines_and_cost() {
    let file = "scenarios/shipped/contended-counter-sweep.toml";
    let o = bounce(&["check", file]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains(
            "\n  sweep: 130 case(s) over 2 axes: machine (10: icelake-sp-2s, cascadelake-sp-2s, \
             cascadelake-sp-4s, ..., bergamo-1s, bergamo-2s); cpus (13: 1, 2, 4, ..., 112, all)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  machines: icelake-sp-2s (160 CPUs) in 13 case(s), cascadelake-sp-2s (112 CPUs) in 13 case(s),"),
        "{text}"
    );
    assert!(
        text.contains("\n  runs: 130 case(s) x 1 variant(s) = 130 run(s)\n"),
        "{text}"
    );
    // CSV: a row per case and variant, each with the case's estimate.
    let o = bounce(&["check", file, "--format", "csv"]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 130, "{csv}");
    assert!(
        rows[129].starts_with("129,\"machine=bergamo-2s,cpus=all\",base,bergamo-2s,512,512,1,"),
        "{}",
        rows[129]
    );
    assert!(
        rows.iter().all(|r| !r.ends_with(",,")),
        "every case has an estimate"
    );
    // JSON: the axes, the cases with their variants and estimates.
    let o = bounce(&["check", file, "--format", "json"]);
    assert_exit(&o, 0);
    let doc = json(&o);
    assert_eq!(doc["axes"][1]["name"], "cpus");
    assert_eq!(doc["axes"][1]["values"][12], "all");
    assert_eq!(doc["runs"], 130);
    assert_eq!(doc["cases"].as_array().unwrap().len(), 130);
    assert_eq!(doc["cases"][129]["case_id"], "machine=bergamo-2s,cpus=all");
    assert_eq!(doc["cases"][129]["variants"][0]["running_cpus"], 512);
    assert!(doc["cases"][129]["events_estimate"].as_u64().unwrap() > 0);
}

/// The backticked names of the paragraph of docs/results-format.md that
/// starts `Columns of `WHAT`:`, in order.
fn documented_columns(what: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(common::root().join("docs/results-format.md")).unwrap();
    let marker = format!("Columns of `{what}`:");
    let start = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/results-format.md has no `{marker}`"))
        + marker.len();
    let paragraph = doc[start..].split("\n\n").next().unwrap();
    paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The section of docs/results-format.md under `heading`, to its next heading.
fn documented_section(heading: &str) -> String {
    let doc = std::fs::read_to_string(common::root().join("docs/results-format.md")).unwrap();
    let start = doc
        .find(&format!("\n### {heading}\n"))
        .unwrap_or_else(|| panic!("docs/results-format.md has no section {heading}"));
    let rest = &doc[start + 1..];
    let end = rest[4..].find("\n#").map_or(rest.len(), |i| i + 4);
    rest[..end].to_string()
}

fn header(o: &std::process::Output) -> Vec<String> {
    assert_exit(o, 0);
    stdout(o)
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_string)
        .collect()
}

/// The columns docs/results-format.md lists for each `--format csv` table
/// are the ones the commands print, in order; and every key of `check
/// --format json` is named in its section.
#[test]
fn the_documented_columns_are_the_printed_ones() {
    let check = bounce(&[
        "check",
        "tests/fixtures/counter-sweep.toml",
        "--format",
        "csv",
    ]);
    assert_eq!(
        header(&check),
        documented_columns("bounce check --format csv")
    );
    let o = bounce(&["presets", "--format", "csv"]);
    assert_eq!(
        header(&o),
        documented_columns("bounce presets --format csv")
    );
    let o = bounce(&["presets", "show", "icelake-sp-2s", "--format", "csv"]);
    assert_eq!(
        header(&o),
        documented_columns("bounce presets show NAME --format csv")
    );
    let o = bounce(&[
        "validate",
        "--quiet",
        "--machine",
        "icelake-sp-2s",
        "--format",
        "csv",
    ]);
    assert_eq!(header(&o), documented_columns("validation.csv"));

    let section = documented_section("`bounce check --format csv|json`");
    let o = bounce(&[
        "check",
        "tests/fixtures/counter-sweep.toml",
        "--format",
        "json",
    ]);
    let doc = json(&o);
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let mut named = keys(&doc);
    named.extend(keys(&doc["variants"][0]));
    named.extend(keys(&doc["axes"][0]));
    named.extend(keys(&doc["cases"][0]));
    for key in named {
        assert!(
            section.contains(&format!("`{key}`")),
            "`{key}` is not documented:\n{section}"
        );
    }
}
