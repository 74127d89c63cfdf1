//! What every test of the `bounce` binary needs: running it from the
//! workspace root, reading its output, and checking its exit code
//! (0 success, 1 a run failed, 2 invalid input or usage).

// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// The workspace root, where `scenarios/shipped/` is.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `bounce` with `args` from the workspace root.
pub fn bounce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bounce"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run bounce")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// Fails with both streams when the exit code is not `code`.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "\n--- stdout:\n{}\n--- stderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// A directory under the temp dir that no other test, or test process,
/// uses; removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "bounce-test-{}-{}-{tag}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// The path of `name` inside the directory, as a command-line argument.
    pub fn join(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("UTF-8 path").to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scenario file under the temp dir with a name no other test (or test
/// process) uses, holding `text`; removed on drop.
pub struct TempScenario(pub std::path::PathBuf);

impl TempScenario {
    pub fn new(tag: &str, text: &str) -> TempScenario {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "bounce-test-{}-{}-{tag}.toml",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text).expect("write temp scenario");
        TempScenario(path)
    }

    /// Its path, as a command-line argument.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempScenario {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One class of a `bounce validate --matrix` table: its medians in ns and
/// the simulated one's error in percent.
#[derive(Debug, Clone, Copy)]
pub struct ClassRow {
    pub measured_ns: f64,
    pub simulated_ns: f64,
    pub error_percent: f64,
}

/// `bounce validate` of the machine file `machine` on `matrix` with
/// `extra` arguments and `--fitted none`: each class (as the table names
/// it) with its row; every row must be a prediction. The held-out tests'
/// one reader of validate's JSON.
pub fn validate_predictions(
    machine: &str,
    matrix: &str,
    extra: &[&str],
) -> BTreeMap<String, ClassRow> {
    let mut args = vec![
        "validate",
        "--machine",
        machine,
        "--matrix",
        matrix,
        "--fitted",
        "none",
        "--format",
        "json",
        "--quiet",
    ];
    args.extend(extra);
    let o = bounce(&args);
    // A miss not stated as known makes the run exit 1; the rows are
    // printed either way.
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{o:?}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut out = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        let Some(error_percent) = row["error_pct"].as_f64() else {
            continue;
        };
        assert_eq!(row["role"], "prediction", "{row}");
        let number = |column: &str| row[column].as_f64().unwrap();
        out.insert(
            row["class"].as_str().unwrap().to_string(),
            ClassRow {
                measured_ns: number("measured_median_ns"),
                simulated_ns: number("simulated_median_ns"),
                error_percent,
            },
        );
    }
    out
}

/// Fails, with every class, unless `class`'s error is in `low..=high`
/// percent.
#[track_caller]
pub fn assert_class_within(rows: &BTreeMap<String, ClassRow>, class: &str, low: f64, high: f64) {
    let e = rows[class].error_percent;
    assert!(
        (low..=high).contains(&e),
        "{class}: {e:+.1} % not in {low}..{high}: {rows:?}"
    );
}
