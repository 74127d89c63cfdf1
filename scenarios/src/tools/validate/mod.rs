//! `bounce validate`: the presets against measured core-to-core latency
//! matrices.
//!
//! For each shipped matrix (`models::calibration::MEASURED`), the preset it
//! stands for is adjusted to the measured SKU (core counts and clock), every
//! measured pair runs the ping-pong of `scenarios/shipped/ping-pong.toml` with the
//! line homed where the measured run had it (`models::calibration::Home`),
//! and the report compares, per class of pairs, the measured and simulated
//! median one-way latency, and per machine the median absolute error over
//! all pairs. A machine whose preset does not exist yet is listed as such,
//! not validated.

pub mod classify;
pub mod cpumap;
pub mod matrix;
pub mod pingpong;

use crate::format::error::closest;
use classify::{Class, Classifier};
use matrix::Matrix;
use models::calibration::{self, MeasuredMachine, MEASURED};
use pingpong::PingPong;
use rayon::prelude::*;
use sim_core::cpu::LinuxCpu;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A class's simulated median must be within this many percent of its
/// measured median.
pub const BOUND_PCT: f64 = 10.0;

/// Where the shipped matrices are, relative to the repository root.
pub const DEFAULT_DATA_DIR: &str = "data/c2c";

#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    /// Only the measured machines this preset stands for.
    pub machine: Option<String>,
    /// A directory of matrices instead of the shipped copies.
    pub data_dir: Option<PathBuf>,
    /// Bounds; `data_file_bytes` bounds each matrix file read.
    pub limits: sim_core::limits::Limits,
}

/// Measured against simulated, over the pairs of one class.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassRow {
    pub class: Class,
    pub label: String,
    pub pairs: usize,
    pub measured_median_ns: f64,
    pub simulated_median_ns: f64,
    /// (simulated median - measured median) / measured median, in percent.
    pub error_pct: f64,
    /// Median over the pairs of |simulated - measured| / measured, in percent.
    pub median_abs_error_pct: f64,
    /// Why this class is known to miss its bound, when the calibration
    /// entry says so (`models::calibration::KnownMiss`).
    pub known_miss: Option<&'static str>,
}

impl ClassRow {
    pub fn within_bound(&self) -> bool {
        self.error_pct.abs() <= BOUND_PCT
    }
}

/// What became of one measured machine.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Validated {
        /// Classes with measured pairs, nearest first.
        classes: Vec<ClassRow>,
        /// Measured pairs, all classes.
        pairs: usize,
        /// Median over all pairs of |simulated - measured| / measured, in
        /// percent.
        median_abs_error_pct: f64,
        /// Simulations run (one per distinct pair relation).
        simulations: usize,
    },
    /// The preset (or its mode) is not there yet: not validated.
    PresetMissing(String),
    /// The preset does not fit the measured machine, or a run failed.
    Failed(String),
}

/// One measured machine in the report.
#[derive(Clone, Debug)]
pub struct MachineReport {
    pub machine: &'static MeasuredMachine,
    /// How the preset was adjusted to the measured SKU (empty when it was
    /// not resolved).
    pub adjustment: String,
    /// The line's home on the adjusted machine, once resolved.
    pub home: Option<calibration::LineHome>,
    pub outcome: Outcome,
    /// What the measurements themselves suggest is wrong with the input
    /// (a user's matrix whose nearest pairs are not its fastest), in words.
    pub warnings: Vec<String>,
}

impl MachineReport {
    pub fn is_validated(&self) -> bool {
        matches!(self.outcome, Outcome::Validated { .. })
    }
    /// Classes outside the bound, known misses included.
    pub fn out_of_bounds(&self) -> Vec<&ClassRow> {
        match &self.outcome {
            Outcome::Validated { classes, .. } => {
                classes.iter().filter(|c| !c.within_bound()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Known misses of the calibration entry that are not misses: the class
    /// is within its bound, or has no pairs on this machine. Empty unless
    /// validated.
    pub fn stale_known_misses(&self) -> Vec<&'static str> {
        let Outcome::Validated { classes, .. } = &self.outcome else {
            return Vec::new();
        };
        self.machine
            .known_misses
            .iter()
            .filter(|k| {
                !classes
                    .iter()
                    .any(|c| c.class.key() == k.class && !c.within_bound())
            })
            .map(|k| k.class)
            .collect()
    }
}

/// The validation table.
#[derive(Clone, Debug, Default)]
pub struct ValidationReport {
    /// Where the matrices were read.
    pub data_dir: PathBuf,
    pub machines: Vec<MachineReport>,
}

fn fmt_ns(ns: f64) -> String {
    format!("{ns:.1}")
}

fn fmt_pct(pct: f64) -> String {
    format!("{} %", crate::report::text::signed_percent(pct))
}

/// The columns of `validation.csv`.
pub const VALIDATION_COLUMNS: &[&str] = &[
    "file",
    "measured_sku",
    "preset",
    "adjustment",
    "class",
    "pairs",
    "measured_median_ns",
    "simulated_median_ns",
    "error_pct",
    "median_abs_error_pct",
    "within_bound",
    "status",
    "note",
    "role",
];

impl ValidationReport {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "bounce validate: presets against measured core-to-core latency \
             (CAS ping-pong, one-way ns, median per class)"
        );
        let _ = writeln!(out, "data: {}", self.data_dir.display());
        let _ = writeln!(
            out,
            "bound: each class's simulated median within ±{BOUND_PCT:.0} % of its measured median"
        );
        for r in &self.machines {
            render_machine(&mut out, r);
        }
        out.push('\n');
        let validated = self.machines.iter().filter(|r| r.is_validated()).count();
        let missing: Vec<&str> = self.skipped().iter().map(|r| r.machine.file).collect();
        let failed = self
            .machines
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
            .count();
        let outside: usize = self.machines.iter().map(|r| r.out_of_bounds().len()).sum();
        let known = self
            .machines
            .iter()
            .map(|r| {
                r.out_of_bounds()
                    .iter()
                    .filter(|c| c.known_miss.is_some())
                    .count()
            })
            .sum::<usize>();
        let _ = writeln!(
            out,
            "summary: {validated} machine(s) validated, {} not validated (preset not available yet), \
             {failed} failed; {outside} class(es) outside ±{BOUND_PCT:.0} %{}",
            missing.len(),
            if known > 0 { format!(" ({known} known miss(es))") } else { String::new() }
        );
        if !missing.is_empty() {
            let _ = writeln!(out, "not validated: {}", missing.join(", "));
        }
        out
    }

    pub fn to_csv(&self) -> String {
        let mut records: Vec<Vec<String>> =
            vec![VALIDATION_COLUMNS.iter().map(|c| c.to_string()).collect()];
        for r in &self.machines {
            let m = r.machine;
            let head = [m.file, m.sku, m.preset, &r.adjustment].map(str::to_string);
            let row = |rest: Vec<String>| {
                let mut row = head.to_vec();
                row.extend(rest);
                row
            };
            match &r.outcome {
                Outcome::Validated {
                    classes,
                    pairs,
                    median_abs_error_pct,
                    ..
                } => {
                    for c in classes {
                        records.push(row(vec![
                            c.label.clone(),
                            c.pairs.to_string(),
                            format!("{:.3}", c.measured_median_ns),
                            format!("{:.3}", c.simulated_median_ns),
                            format!("{:.2}", c.error_pct),
                            format!("{:.2}", c.median_abs_error_pct),
                            if c.within_bound() { "yes" } else { "no" }.to_string(),
                            "validated".to_string(),
                            match (c.within_bound(), c.known_miss) {
                                (false, Some(why)) => format!("known miss: {why}"),
                                _ => String::new(),
                            },
                            m.role(c.class.key()).key().to_string(),
                        ]));
                    }
                    let mut all = vec![String::new(); 10];
                    all[0] = "all pairs".to_string();
                    all[1] = pairs.to_string();
                    all[5] = format!("{median_abs_error_pct:.2}");
                    all[7] = "validated".to_string();
                    records.push(row(all));
                }
                Outcome::PresetMissing(why) => {
                    let mut rest = vec![String::new(); 10];
                    rest[7] = "preset not available yet".to_string();
                    rest[8] = why.to_string();
                    records.push(row(rest));
                }
                Outcome::Failed(why) => {
                    let mut rest = vec![String::new(); 10];
                    rest[7] = "failed".to_string();
                    rest[8] = why.to_string();
                    records.push(row(rest));
                }
            }
        }
        crate::report::output::csv_records(&records)
    }

    /// The rows of `validation.csv` as JSON: `{"rows": [...]}`, one object
    /// per CSV row with the CSV's columns as keys, numbers as numbers
    /// (unrounded), empty cells as null, `within_bound` a boolean.
    pub fn to_json(&self) -> String {
        use serde_json::{json, Value};
        let num = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
        let mut rows = Vec::new();
        for r in &self.machines {
            let m = r.machine;
            let head = json!({
                "file": m.file,
                "measured_sku": m.sku,
                "preset": m.preset,
                "adjustment": r.adjustment,
            });
            let row = |fields: Value| {
                let mut o = head.clone();
                if let (Value::Object(o), Value::Object(f)) = (&mut o, fields) {
                    o.extend(f);
                }
                o
            };
            match &r.outcome {
                Outcome::Validated {
                    classes,
                    pairs,
                    median_abs_error_pct,
                    ..
                } => {
                    for c in classes {
                        rows.push(row(json!({
                            "class": c.label,
                            "pairs": c.pairs,
                            "measured_median_ns": num(c.measured_median_ns),
                            "simulated_median_ns": num(c.simulated_median_ns),
                            "error_pct": num(c.error_pct),
                            "median_abs_error_pct": num(c.median_abs_error_pct),
                            "within_bound": c.within_bound(),
                            "status": "validated",
                            "note": match (c.within_bound(), c.known_miss) {
                                (false, Some(why)) => Value::from(format!("known miss: {why}")),
                                _ => Value::Null,
                            },
                            "role": m.role(c.class.key()).key(),
                        })));
                    }
                    rows.push(row(json!({
                        "class": "all pairs",
                        "pairs": pairs,
                        "measured_median_ns": null,
                        "simulated_median_ns": null,
                        "error_pct": null,
                        "median_abs_error_pct": num(*median_abs_error_pct),
                        "within_bound": null,
                        "status": "validated",
                        "note": null,
                        "role": null,
                    })));
                }
                Outcome::PresetMissing(why) | Outcome::Failed(why) => {
                    let status = if matches!(r.outcome, Outcome::Failed(_)) {
                        "failed"
                    } else {
                        "preset not available yet"
                    };
                    rows.push(row(json!({
                        "class": null,
                        "pairs": null,
                        "measured_median_ns": null,
                        "simulated_median_ns": null,
                        "error_pct": null,
                        "median_abs_error_pct": null,
                        "within_bound": null,
                        "status": status,
                        "note": why,
                        "role": null,
                    })));
                }
            }
        }
        let mut text = serde_json::to_string_pretty(&json!({ "rows": rows })).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Whether `bounce validate` succeeds: no machine failed and every
    /// class is within its bound, or (unless `strict`) outside it only
    /// where the calibration documents a known miss.
    pub fn passes(&self, strict: bool) -> bool {
        if strict {
            return self.all_within_bounds();
        }
        self.unexpected_misses().is_empty()
            && !self
                .machines
                .iter()
                .any(|r| matches!(r.outcome, Outcome::Failed(_)))
    }

    /// Every class of every validated machine within its bound, and no
    /// machine failed. Machines whose preset is not available yet do not
    /// count (see [`ValidationReport::skipped`]).
    pub fn all_within_bounds(&self) -> bool {
        self.machines.iter().all(|r| match &r.outcome {
            Outcome::Validated { classes, .. } => classes.iter().all(ClassRow::within_bound),
            Outcome::PresetMissing(_) => true,
            Outcome::Failed(_) => false,
        })
    }

    /// Classes outside their bound that no calibration entry expects, as
    /// (file, class label, error %).
    pub fn unexpected_misses(&self) -> Vec<(&'static str, &str, f64)> {
        self.machines
            .iter()
            .flat_map(|r| {
                r.out_of_bounds()
                    .into_iter()
                    .filter(|c| c.known_miss.is_none())
                    .map(move |c| (r.machine.file, c.label.as_str(), c.error_pct))
            })
            .collect()
    }

    /// Machines not validated because their preset is not available yet.
    pub fn skipped(&self) -> Vec<&MachineReport> {
        self.machines
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::PresetMissing(_)))
            .collect()
    }
}

/// One machine's block of [`ValidationReport::render`]: its source and
/// coverage, how its preset was adjusted, then its classes.
fn render_machine(out: &mut String, r: &MachineReport) {
    let m = r.machine;
    out.push('\n');
    let _ = writeln!(out, "== {}: {}", m.file, m.sku);
    let _ = writeln!(out, "   source:   {}", m.source);
    let _ = writeln!(
        out,
        "   measured: {} of {} CPUs ({})",
        m.cpus_measured,
        m.cpus_total(),
        m.coverage
    );
    match &r.outcome {
        Outcome::PresetMissing(why) => {
            let _ = writeln!(
                out,
                "   preset {}: not available yet, not validated ({why})",
                m.preset
            );
            return;
        }
        Outcome::Failed(why) => {
            if !r.adjustment.is_empty() {
                let _ = writeln!(out, "   preset:   {}", r.adjustment);
            }
            let _ = writeln!(out, "   FAILED: {why}");
            return;
        }
        Outcome::Validated { .. } => {}
    }
    let _ = writeln!(out, "   preset:   {}", r.adjustment);
    let _ = writeln!(
        out,
        "   clock:    {} MHz, {}: {}; the clock during the run is not recorded \
         (calibration.md §0.3)",
        m.clock_mhz,
        m.clock_basis.describe(),
        m.clock_source
    );
    let _ = writeln!(
        out,
        "   home:     line homed on {}: {}",
        match r.home {
            Some(calibration::LineHome::Node(node)) => {
                format!("node {node} ({})", m.home.describe())
            }
            _ => m.home.describe(),
        },
        m.home_evidence
    );
    for warning in &r.warnings {
        let _ = writeln!(out, "   warning:  {warning}");
    }
    render_classes(out, r);
}

/// The class table of a validated machine, its known misses, and its
/// median error.
fn render_classes(out: &mut String, r: &MachineReport) {
    let m = r.machine;
    let Outcome::Validated {
        classes,
        pairs,
        median_abs_error_pct,
        simulations,
    } = &r.outcome
    else {
        return;
    };
    let _ = writeln!(out, "   role:     {}", m.role_source);
    out.push('\n');
    let _ = writeln!(
        out,
        "   {:<26} {:>6}  {:>9}  {:>9}  {:>8}  {:>12}  {:<11}  {}",
        "class",
        "pairs",
        "measured",
        "simulated",
        "error",
        "median |err|",
        "role",
        format_args!("within ±{BOUND_PCT:.0} %")
    );
    for c in classes {
        let _ = writeln!(
            out,
            "   {:<26} {:>6}  {:>9}  {:>9}  {:>8}  {:>12}  {:<11}  {}",
            c.label,
            c.pairs,
            fmt_ns(c.measured_median_ns),
            fmt_ns(c.simulated_median_ns),
            fmt_pct(c.error_pct),
            format!("{:.1} %", c.median_abs_error_pct),
            m.role(c.class.key()).key(),
            match (c.within_bound(), c.known_miss) {
                (true, _) => "yes",
                (false, None) => "NO",
                (false, Some(_)) => "NO (known, below)",
            }
        );
    }
    for c in classes {
        if let (false, Some(why)) = (c.within_bound(), c.known_miss) {
            let _ = writeln!(out, "   known miss, {}: {why}", c.label);
        }
    }
    let stale = r.stale_known_misses();
    if !stale.is_empty() {
        let _ = writeln!(
            out,
            "   known miss(es) that did not miss (within the bound, or no pairs): {}",
            stale.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "   median absolute error over all {pairs} pairs: {median_abs_error_pct:.1} % \
         ({simulations} distinct pair relation(s) simulated)"
    );
}

/// The machines `--machine` keeps: those standing for the preset (a name,
/// or a full reference with modes). An unknown name is an error naming the
/// valid ones.
pub fn select(machine: Option<&str>) -> Result<Vec<&'static MeasuredMachine>, String> {
    let Some(wanted) = machine else {
        return Ok(MEASURED.iter().collect());
    };
    let chosen: Vec<&'static MeasuredMachine> = MEASURED
        .iter()
        .filter(|m| m.preset == wanted || m.preset_name() == wanted)
        .collect();
    if !chosen.is_empty() {
        return Ok(chosen);
    }
    let valid = calibration::preset_names();
    let base = wanted.split(':').next().unwrap_or(wanted);
    let hint = closest(base, &valid)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    if models::presets::find(base).is_some() {
        Err(format!(
            "no measured matrix stands for preset `{wanted}`{hint}; \
             presets with measured matrices: {}",
            valid.join(", ")
        ))
    } else {
        Err(format!(
            "unknown machine `{wanted}`{hint}; \
             presets with measured matrices: {}",
            valid.join(", ")
        ))
    }
}

/// The directory of matrices: the one given, or `data/c2c` under the
/// current directory, or under a directory above the executable (so both
/// `cargo run` and `target/release/bounce` find it from a clone).
pub fn find_data_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(dir) = given {
        if dir.is_dir() {
            return Ok(dir.to_path_buf());
        }
        return Err(format!(
            "cannot read the measured matrices: `--data {}` is not a directory",
            dir.display()
        ));
    }
    let cwd = std::env::current_dir().ok();
    if let Some(cwd) = &cwd {
        let dir = cwd.join(DEFAULT_DATA_DIR);
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    let exe = std::env::current_exe().ok();
    if let Some(exe) = &exe {
        for above in exe.ancestors().skip(1) {
            let dir = above.join(DEFAULT_DATA_DIR);
            if dir.is_dir() {
                return Ok(dir);
            }
        }
    }
    Err(format!(
        "cannot find the measured matrices: no `{DEFAULT_DATA_DIR}` in the current directory{} \
         or in a directory above the executable{}; pass `--data DIR` with a directory of the \
         matrix files (as shipped in `{DEFAULT_DATA_DIR}` of the repository)",
        cwd.map(|c| format!(" (`{}`)", c.display()))
            .unwrap_or_default(),
        exe.map(|e| format!(" (`{}`)", e.display()))
            .unwrap_or_default(),
    ))
}

/// Reads a machine's matrix and checks it has the CPUs its entry says.
pub fn read_matrix(dir: &Path, m: &MeasuredMachine, limit_bytes: u64) -> Result<Matrix, String> {
    let path = dir.join(m.file);
    let matrix = matrix::read(&path, limit_bytes)?;
    if matrix.cpus() != m.cpus_measured {
        return Err(format!(
            "`{}`: {} rows, but the measured machine ({}) has {} measured CPUs; \
             is it the right file?",
            path.display(),
            matrix.cpus(),
            m.sku,
            m.cpus_measured
        ));
    }
    Ok(matrix)
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Median over pairs of |simulated - measured| / measured, in percent.
fn median_abs_error_pct(measured: &[f64], simulated: &[f64]) -> f64 {
    let mut errors: Vec<f64> = measured
        .iter()
        .zip(simulated)
        .map(|(m, s)| (s - m).abs() / m * 100.0)
        .collect();
    median(&mut errors)
}

/// Measured and simulated values of one class's pairs, as a row.
fn row(
    m: &MeasuredMachine,
    class: Class,
    label: String,
    measured: &[f64],
    simulated: &[f64],
) -> ClassRow {
    let measured_median_ns = median(&mut measured.to_vec());
    let simulated_median_ns = median(&mut simulated.to_vec());
    ClassRow {
        class,
        label,
        pairs: measured.len(),
        measured_median_ns,
        simulated_median_ns,
        error_pct: (simulated_median_ns - measured_median_ns) / measured_median_ns * 100.0,
        median_abs_error_pct: median_abs_error_pct(measured, simulated),
        known_miss: m
            .known_misses
            .iter()
            .find(|k| k.class == class.key())
            .map(|k| k.reason),
    }
}

/// How the adjusted preset differs from the preset, in words.
fn describe_adjustment(m: &MeasuredMachine, adjusted: &calibration::Adjusted) -> String {
    if adjusted.changes.is_empty() {
        format!("{}, as is (the measured SKU is the preset's)", m.preset)
    } else {
        format!(
            "{} adjusted to the measured SKU: {}",
            m.preset,
            adjusted
                .changes
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Validates one machine against its matrix.
pub fn validate_machine(m: &'static MeasuredMachine, matrix: &Matrix) -> MachineReport {
    let report = |adjustment: String, outcome: Outcome| MachineReport {
        machine: m,
        adjustment,
        home: None,
        outcome,
        warnings: Vec::new(),
    };
    let preset = match models::presets::resolve(m.preset) {
        Ok(p) => p,
        Err(e) => return report(String::new(), Outcome::PresetMissing(e)),
    };
    let adjusted = match calibration::adjust(&preset, m) {
        Ok(a) => a,
        Err(e) => {
            return report(
                String::new(),
                Outcome::Failed(format!(
                    "preset `{}` does not fit the measured machine: {e}",
                    m.preset
                )),
            )
        }
    };
    let adjustment = describe_adjustment(m, &adjusted);
    validate_spec(m, adjusted.spec, adjustment, matrix)
}

/// Validates the machine `spec` (the preset adjusted to `m`, or a user's
/// machine) against `m`'s matrix; `adjustment` says what `spec` is.
fn validate_spec(
    m: &'static MeasuredMachine,
    spec: sim_core::topology::MachineSpec,
    adjustment: String,
    matrix: &Matrix,
) -> MachineReport {
    let report = |adjustment: String, outcome: Outcome| MachineReport {
        machine: m,
        adjustment,
        home: None,
        outcome,
        warnings: Vec::new(),
    };
    let home = match m.home.on(&spec) {
        Ok(h) => h,
        Err(e) => return report(adjustment, Outcome::Failed(e)),
    };
    let pp = match PingPong::new(spec, home) {
        Ok(pp) => pp,
        Err(e) => return report(adjustment, Outcome::Failed(e)),
    };
    if matrix.cpus() > pp.topology().cpu_count() {
        return report(
            adjustment,
            Outcome::Failed(format!(
                "the matrix has {} CPUs, the adjusted preset {}",
                matrix.cpus(),
                pp.topology().cpu_count()
            )),
        );
    }
    let classifier = Classifier::new(pp.topology(), m.vendor, m.ccx_per_ccd, m.ccd_name, home);
    let measured = matrix.pairs();
    // The matrix's CPU numbers are Linux numbers of the measured machine.
    let pairs: Vec<(LinuxCpu, LinuxCpu)> = measured
        .iter()
        .map(|&(a, b, _)| (LinuxCpu::new(a), LinuxCpu::new(b)))
        .collect();
    let cycles = match pp.round_trips(&pairs) {
        Ok(c) => c,
        Err(e) => {
            return report(
                adjustment,
                Outcome::Failed(format!("the ping-pong has no result: {e}")),
            )
        }
    };
    let simulated: Vec<f64> = cycles.iter().map(|&c| pp.one_way_ns(c)).collect();
    let mut by_class: BTreeMap<Class, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (&(a, b), (&(_, _, ns), &sim)) in pairs.iter().zip(measured.iter().zip(&simulated)) {
        let entry = by_class.entry(classifier.class(a, b)).or_default();
        entry.0.push(ns);
        entry.1.push(sim);
    }
    let classes = by_class
        .into_iter()
        .map(|(class, (meas, sim))| row(m, class, classifier.label(class), &meas, &sim))
        .collect();
    let all_measured: Vec<f64> = measured.iter().map(|p| p.2).collect();
    MachineReport {
        home: Some(home),
        ..report(
            adjustment,
            Outcome::Validated {
                classes,
                pairs: measured.len(),
                median_abs_error_pct: median_abs_error_pct(&all_measured, &simulated),
                simulations: pp.distinct_keys(&pairs),
            },
        )
    }
}

/// Where a user's matrix had its line homed (`--home-node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserHome {
    /// A NUMA node, numbered as Linux numbers them (`numactl --hardware`).
    Node(u32),
    /// The node of each pair's first CPU (the page followed the threads).
    FirstCpu,
}

/// How a user's matrix numbers the SMT siblings of a core
/// (`--sibling-numbering`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SiblingNumbering {
    /// The model's (and Linux's on the servers of `data/c2c`): the
    /// first thread of every core, then the second of every core, so CPU
    /// `i`'s sibling is `i + cores`.
    #[default]
    Apart,
    /// A core's threads next to each other (CPUs 0 and 1 are one core), as
    /// Windows numbers them and some firmware has Linux do.
    Adjacent,
}

impl SiblingNumbering {
    /// The option's value that names it.
    pub fn key(self) -> &'static str {
        match self {
            SiblingNumbering::Apart => "apart",
            SiblingNumbering::Adjacent => "adjacent",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            SiblingNumbering::Apart => {
                "a core's SMT siblings one core count apart, as Linux numbers them"
            }
            SiblingNumbering::Adjacent => {
                "a core's SMT siblings numbered next to each other (--sibling-numbering adjacent)"
            }
        }
    }

    /// The model's CPU of each of a matrix's `matrix_cpus` CPUs, on a
    /// machine of `cpus` CPUs with `threads_per_core` threads per core (the
    /// matrix's CPUs must fit).
    fn model_cpus(self, matrix_cpus: u32, cpus: u32, threads_per_core: u32) -> Vec<u32> {
        let threads = threads_per_core.max(1);
        let cores = cpus / threads;
        (0..matrix_cpus)
            .map(|cpu| match self {
                SiblingNumbering::Apart => cpu,
                SiblingNumbering::Adjacent => (cpu % threads) * cores + cpu / threads,
            })
            .collect()
    }
}

/// How a user's matrix numbers its CPUs: by a rule for SMT siblings
/// (`--sibling-numbering`), or CPU by CPU from the measured machine's
/// `lscpu -p` (`--cpu-map`). Either gives each of the matrix's CPUs its
/// CPU in the model's numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuNumbering {
    Siblings(SiblingNumbering),
    Map(cpumap::CpuMap),
}

impl Default for CpuNumbering {
    fn default() -> Self {
        CpuNumbering::Siblings(SiblingNumbering::Apart)
    }
}

impl CpuNumbering {
    fn describe(&self) -> String {
        match self {
            CpuNumbering::Siblings(s) => s.describe().to_string(),
            CpuNumbering::Map(map) => format!(
                "each CPU on the socket and core the CPU map `{}` gives it (--cpu-map)",
                map.file()
            ),
        }
    }

    /// The model's CPU of each of the matrix's `matrix_cpus` CPUs on
    /// `spec`'s machine; an error says why the numbering does not fit it.
    fn model_cpus(
        &self,
        matrix_cpus: u32,
        spec: &sim_core::topology::MachineSpec,
    ) -> Result<Vec<u32>, String> {
        let cores_per_socket = spec.nodes_per_socket * spec.l3_per_node * spec.cores_per_l3;
        let cpus = spec.sockets * cores_per_socket * spec.threads_per_core;
        match self {
            CpuNumbering::Siblings(s) => Ok(s.model_cpus(matrix_cpus, cpus, spec.threads_per_core)),
            CpuNumbering::Map(map) => map
                .to_model(
                    matrix_cpus,
                    cpumap::MachineCounts {
                        sockets: spec.sockets,
                        cores_per_socket,
                        threads_per_core: spec.threads_per_core,
                    },
                )
                .map_err(|e| e.to_string()),
        }
    }
}

/// What a user says about their own matrix: where its line was homed and
/// which classes are known to miss their bound, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserMatrixFacts {
    /// `None`: node 0, assumed.
    pub home: Option<UserHome>,
    /// How the matrix numbers its CPUs.
    pub numbering: CpuNumbering,
    /// Class keys ([`Class::key`]) and why each misses.
    pub known_misses: Vec<(String, String)>,
    /// The classes the machine file was fitted on (`--fitted`; `none`:
    /// none, the file was set without this matrix); `None`: not stated,
    /// each class's role is unknown.
    pub fitted: Option<Vec<String>>,
}

/// `--home-node`'s value: a node number, or `first-cpu`.
pub fn parse_home_node(text: &str) -> Result<UserHome, String> {
    if text == "first-cpu" {
        return Ok(UserHome::FirstCpu);
    }
    text.parse().map(UserHome::Node).map_err(|_| {
        format!(
            "--home-node {text}: expected the NUMA node the measured line was homed on, as \
             Linux numbers them (0, 1, ...), or `first-cpu` (the node of each pair's first CPU)"
        )
    })
}

/// `--known-miss`'s value: `CLASS`, or `CLASS=WHY` (the class as given:
/// [`validate_user`] resolves it against the machine's classes).
pub fn parse_known_miss(text: &str) -> (String, String) {
    let (class, why) = match text.split_once('=') {
        Some((class, why)) => (class.trim(), why.trim()),
        None => (text.trim(), ""),
    };
    let why = if why.is_empty() {
        "stated with --known-miss".to_string()
    } else {
        why.to_string()
    };
    (class.to_string(), why)
}

/// The class a user names on `classifier`'s machine: its key
/// ([`Class::key`]) or its label as the table prints it (any case). An
/// unknown one is an error listing the machine's classes.
fn user_class(
    option: &str,
    given: &str,
    classifier: &Classifier,
    vendor: calibration::Vendor,
) -> Result<Class, String> {
    // The classes a user's machine (one L3 domain per die) can have.
    let classes: Vec<Class> = Class::ALL
        .into_iter()
        .filter(|c| match c {
            Class::CrossCcxSameCcd => false,
            Class::CrossL3SameSocket => vendor == calibration::Vendor::Intel,
            Class::CrossCcdHomeSocket | Class::CrossCcdOtherSocket => {
                vendor == calibration::Vendor::Amd
            }
            _ => true,
        })
        .collect();
    if let Some(c) = classes.iter().find(|c| {
        c.key().eq_ignore_ascii_case(given) || classifier.label(**c).eq_ignore_ascii_case(given)
    }) {
        return Ok(*c);
    }
    let labels: Vec<String> = classes.iter().map(|c| classifier.label(*c)).collect();
    let mut names: Vec<&str> = classes.iter().map(|c| c.key()).collect();
    names.extend(labels.iter().map(String::as_str));
    let hint = closest(given, &names)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    Err(format!(
        "{option} {given}: this machine has no class `{given}`{hint}; its classes: {}",
        classes
            .iter()
            .zip(&labels)
            .map(|(c, l)| format!("{} ({l})", c.key()))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Validates a user's machine (from a machine file) against a user's
/// measured matrix (`bounce validate --machine FILE --matrix CSV`, the
/// format of data/c2c/README.md). The line is homed where `facts` says,
/// else on node 0, as the benchmark's main thread usually puts it; classes
/// are named for the machine's coherence protocol (MESIF: Intel's, else
/// AMD's, with one L3 domain per die); the known misses are `facts`'. An
/// error (a home node the machine does not have) is bad input.
pub fn validate_user(
    machine_file: &Path,
    spec: sim_core::topology::MachineSpec,
    matrix_file: &Path,
    matrix: &Matrix,
    facts: &UserMatrixFacts,
) -> Result<ValidationReport, String> {
    // The report borrows the shipped table's `'static` entries; a user's
    // machine gets one such entry for the life of the process (one per
    // command), so it is leaked once rather than the report made generic.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let vendor = if spec.protocol == sim_core::topology::Protocol::Mesif {
        calibration::Vendor::Intel
    } else {
        calibration::Vendor::Amd
    };
    let (home, home_evidence) = user_home(facts, &spec, machine_file)?;
    // The classes as the table names them on this machine.
    let topology = sim_core::topology::Topology::new(spec.clone()).map_err(|e| e.message)?;
    let cpus = topology.cpu_count();
    if matrix.cpus() > cpus {
        return Err(format!(
            "the matrix `{}` has {} CPUs (rows), the machine of `{}` {cpus}: sockets ({}) x \
             nodes_per_socket ({}) x l3_per_node ({}) x cores_per_l3 ({}) x threads_per_core \
             ({}); give the machine the measured CPU's counts",
            matrix_file.display(),
            matrix.cpus(),
            machine_file.display(),
            spec.sockets,
            spec.nodes_per_socket,
            spec.l3_per_node,
            spec.cores_per_l3,
            spec.threads_per_core,
        ));
    }
    let line_home = home.on(&spec)?;
    let classifier = Classifier::new(&topology, vendor, 1, "die", line_home);
    let numbering = &facts.numbering;
    let cpus_measured = matrix.cpus();
    let model_cpu = numbering.model_cpus(matrix.cpus(), &spec)?;
    let mut warnings = numbering_warnings(&classifier, matrix, numbering, &model_cpu, &spec);
    let matrix = &matrix.renumbered(cpus, |cpu| model_cpu[cpu as usize]);
    warnings.extend(home_warning(&topology, vendor, line_home, matrix));
    let mut known_misses: Vec<calibration::KnownMiss> = Vec::new();
    for (given, why) in &facts.known_misses {
        let class = user_class("--known-miss", given, &classifier, vendor)?.key();
        if known_misses.iter().any(|k| k.class == class) {
            return Err(format!("--known-miss names `{class}` twice"));
        }
        known_misses.push(calibration::KnownMiss {
            class,
            reason: leak(why.clone()),
        });
    }
    // The classes the user says the machine file was fitted on: their
    // rows check the fit, the others are predictions.
    let (fitted_classes, role_source) = user_fitted(facts, &classifier, vendor)?;
    let cores_per_socket = spec.nodes_per_socket * spec.l3_per_node * spec.cores_per_l3;
    let entry: &'static MeasuredMachine = Box::leak(Box::new(MeasuredMachine {
        file: leak(matrix_file.display().to_string()),
        sku: leak(spec.name.clone()),
        source: leak(format!(
            "the user's matrix `{}`, the machine of `{}`",
            matrix_file.display(),
            machine_file.display()
        )),
        vendor,
        preset: leak(machine_file.display().to_string()),
        sockets: spec.sockets,
        cores_per_socket,
        threads_per_core: spec.threads_per_core,
        cores_per_l3: Some(spec.cores_per_l3),
        ccx_per_ccd: 1,
        ccd_name: "die",
        cpus_measured,
        coverage: leak(format!("the CPUs of the matrix, {}", numbering.describe())),
        clock_mhz: spec.clock_mhz,
        clock_basis: calibration::ClockBasis::AsGiven,
        clock_source: "the machine file's clock_mhz",
        home,
        home_evidence: leak(home_evidence),
        known_misses: Box::leak(known_misses.into_boxed_slice()),
        fitted_classes,
        role_source,
    }));
    let adjustment = format!("`{}` as the machine file gives it", machine_file.display());
    let mut report = validate_spec(entry, spec, adjustment, matrix);
    report.warnings = warnings;
    Ok(ValidationReport {
        data_dir: matrix_file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        machines: vec![report],
    })
}

/// The measured median of each class of `matrix` (in the model's
/// numbering) on `classifier`'s machine.
fn measured_class_medians(classifier: &Classifier, matrix: &Matrix) -> BTreeMap<Class, f64> {
    let mut by_class: BTreeMap<Class, Vec<f64>> = BTreeMap::new();
    for (a, b, ns) in matrix.pairs() {
        by_class
            .entry(classifier.class(LinuxCpu::new(a), LinuxCpu::new(b)))
            .or_default()
            .push(ns);
    }
    by_class
        .into_iter()
        .map(|(class, mut ns)| (class, median(&mut ns)))
        .collect()
}

/// The first class, nearest first, whose measured median is above that of
/// a farther class, of the two that hold on every machine: SMT siblings
/// (one core's L1) are faster than any other pair, and pairs of one L3
/// faster than pairs across sockets. `(nearer, farther)`, each with its
/// median.
fn inverted_classes(medians: &BTreeMap<Class, f64>) -> Option<((Class, f64), (Class, f64))> {
    let pairs_that_must_hold: [(Class, &[Class]); 2] = [
        (Class::SmtSiblings, &Class::ALL[1..]),
        (Class::SameL3, &[Class::CrossSocket]),
    ];
    for (near, farther) in pairs_that_must_hold {
        let Some(&near_ns) = medians.get(&near) else {
            continue;
        };
        if let Some((&far, &far_ns)) = medians
            .iter()
            .filter(|(c, _)| farther.contains(c))
            .min_by(|a, b| a.1.total_cmp(b.1))
            .filter(|(_, &far_ns)| far_ns < near_ns)
        {
            return Some(((near, near_ns), (far, far_ns)));
        }
    }
    None
}

/// Warnings about a user's matrix whose nearest pairs are not its fastest
/// once `numbering` put it in the model's numbering (`model_cpu`, the
/// model's CPU of each of the matrix's): the machine file's topology, or
/// the matrix's CPU numbering, does not fit the matrix. When the other
/// sibling numbering puts them in order, it is named.
fn numbering_warnings(
    classifier: &Classifier,
    given: &Matrix,
    numbering: &CpuNumbering,
    model_cpu: &[u32],
    spec: &sim_core::topology::MachineSpec,
) -> Vec<String> {
    let cpus = classifier.cpu_count();
    let medians = measured_class_medians(
        classifier,
        &given.renumbered(cpus, |cpu| model_cpu[cpu as usize]),
    );
    let Some(((near, near_ns), (far, far_ns))) = inverted_classes(&medians) else {
        return Vec::new();
    };
    let mut warning = format!(
        "pairs classed `{}` measure slower ({near_ns:.1} ns median) than pairs classed `{}` \
         ({far_ns:.1} ns) under this machine's topology and {}",
        classifier.label(near),
        classifier.label(far),
        numbering.describe()
    );
    let other = match numbering {
        CpuNumbering::Siblings(SiblingNumbering::Apart) => Some(SiblingNumbering::Adjacent),
        CpuNumbering::Siblings(SiblingNumbering::Adjacent) => Some(SiblingNumbering::Apart),
        CpuNumbering::Map(_) => None,
    };
    let other_medians = other.map(|other| {
        let renamed = other.model_cpus(given.cpus(), cpus, spec.threads_per_core);
        (
            other,
            measured_class_medians(
                classifier,
                &given.renumbered(cpus, |cpu| renamed[cpu as usize]),
            ),
        )
    });
    match other_medians {
        Some((other, other_medians))
            if spec.threads_per_core > 1 && inverted_classes(&other_medians).is_none() =>
        {
            let listed: Vec<String> = other_medians
                .iter()
                .map(|(c, ns)| format!("{} {ns:.1} ns", classifier.label(*c)))
                .collect();
            let _ = write!(
                warning,
                "; with `--sibling-numbering {}` they are in order ({}): the matrix was likely \
                 measured with that numbering",
                other.key(),
                listed.join(", ")
            );
        }
        _ => warning.push_str(
            "; check the machine file's counts (cores_per_l3, l3_per_node, nodes_per_socket, \
             threads_per_core) and the matrix's CPU numbering (`--cpu-map`, the measured \
             machine's `lscpu -p=CPU,CORE,SOCKET`, says where each CPU is)",
        ),
    }
    vec![warning]
}

/// A warning when a user's matrix (in the model's numbering) measures the
/// home socket's pairs of two dies slower than another socket's under the
/// line home `home`: a transfer between two dies goes through the line's
/// home, so the socket that holds it has the faster pairs, and a matrix
/// that says otherwise had its line homed elsewhere (the benchmark's main
/// thread first-touched it there). Names the node under which the two
/// classes are in order, if one is. `None` on a machine whose dies resolve
/// their own transfers (Intel) or of one socket, or when in order.
fn home_warning(
    topology: &sim_core::topology::Topology,
    vendor: calibration::Vendor,
    home: calibration::LineHome,
    matrix: &Matrix,
) -> Option<String> {
    let calibration::LineHome::Node(home_node) = home else {
        return None;
    };
    // The two classes' medians with the line homed on `node`.
    let split = |node: u32| {
        let classifier = Classifier::new(
            topology,
            vendor,
            1,
            "die",
            calibration::LineHome::Node(node),
        );
        let medians = measured_class_medians(&classifier, matrix);
        let home_ns = *medians.get(&Class::CrossCcdHomeSocket)?;
        let other_ns = *medians.get(&Class::CrossCcdOtherSocket)?;
        Some((classifier, home_ns, other_ns))
    };
    let (classifier, home_ns, other_ns) = split(home_node)?;
    // A transfer through a home on the other socket costs about twice one
    // through a home on its own (the shipped Rome and Genoa matrices: 132
    // against 267 ns, 103 against 200 ns); a matrix homed on each pair's
    // first CPU has the two classes alike, within noise. A quarter apart
    // tells the one from the other.
    const HOME_SPLIT_RATIO: f64 = 1.25;
    if home_ns <= other_ns * HOME_SPLIT_RATIO {
        return None;
    }
    let mut warning = format!(
        "pairs classed `{}` measure slower ({home_ns:.1} ns median) than pairs classed `{}` \
         ({other_ns:.1} ns) with the line homed on node {home_node}; a transfer between two \
         dies goes through the line's home, so the home socket's pairs are the faster ones",
        classifier.label(Class::CrossCcdHomeSocket),
        classifier.label(Class::CrossCcdOtherSocket),
    );
    let nodes = topology.spec.sockets * topology.spec.nodes_per_socket;
    let in_order = (0..nodes)
        .filter(|&node| topology.socket_of_node(node) != topology.socket_of_node(home_node))
        .find_map(|node| {
            let (_, home_ns, other_ns) = split(node)?;
            (home_ns * HOME_SPLIT_RATIO < other_ns).then_some((node, home_ns, other_ns))
        });
    match in_order {
        Some((node, home_ns, other_ns)) => {
            let _ = write!(
                warning,
                "; with `--home-node {node}` they are in order ({home_ns:.1} ns on the home \
                 socket, {other_ns:.1} ns on the other): the run likely homed its line on node \
                 {node}"
            );
        }
        None => warning.push_str(
            "; check where the run homed its line (`--home-node`, or `--home-node first-cpu` \
             when each pair's first CPU allocated it)",
        ),
    }
    Some(warning)
}

/// Where a user's matrix had its line homed (`--home-node`), and what
/// says so; a node the machine lacks is an error.
fn user_home(
    facts: &UserMatrixFacts,
    spec: &sim_core::topology::MachineSpec,
    machine_file: &Path,
) -> Result<(calibration::Home, String), String> {
    let nodes = spec.sockets * spec.nodes_per_socket;
    match facts.home {
        None => Ok((
            calibration::Home::Node {
                socket: 0,
                node_in_socket: 0,
            },
            "assumed for a user's matrix (the benchmark's main thread usually first touches \
             the line on node 0; say where it was with --home-node)"
                .to_string(),
        )),
        Some(UserHome::Node(node)) if node >= nodes => Err(format!(
            "--home-node {node}: the machine of `{}` has {nodes} NUMA node(s), 0-{}",
            machine_file.display(),
            nodes - 1
        )),
        Some(UserHome::Node(node)) => Ok((
            calibration::Home::Node {
                socket: node / spec.nodes_per_socket,
                node_in_socket: node % spec.nodes_per_socket,
            },
            format!("as stated with --home-node {node}"),
        )),
        Some(UserHome::FirstCpu) => Ok((
            calibration::Home::FirstCpu,
            "as stated with --home-node first-cpu".to_string(),
        )),
    }
}

/// The classes the user says the machine file was fitted on
/// (`--fitted`), each named once, and what says so.
#[allow(clippy::type_complexity)]
fn user_fitted(
    facts: &UserMatrixFacts,
    classifier: &Classifier,
    vendor: calibration::Vendor,
) -> Result<(Option<&'static [&'static str]>, &'static str), String> {
    Ok(match &facts.fitted {
        None => (
            None,
            "your own matrix: bounce cannot know whether the machine file was fitted on it \
             (`--fitted CLASS` says)",
        ),
        Some(given) => {
            let mut fitted: Vec<&'static str> = Vec::new();
            for class in given.iter().filter(|c| !c.eq_ignore_ascii_case("none")) {
                let class = user_class("--fitted", class, classifier, vendor)?.key();
                if fitted.contains(&class) {
                    return Err(format!("--fitted names `{class}` twice"));
                }
                fitted.push(class);
            }
            if fitted.is_empty() {
                (
                    Some(&[][..]),
                    "as stated with --fitted none: the machine file was set without this matrix",
                )
            } else {
                (
                    Some(&*Box::leak(fitted.into_boxed_slice())),
                    "as stated with --fitted: the machine file was fitted on these classes' medians",
                )
            }
        }
    })
}

/// Runs the validation; an error is bad input (unknown machine, unreadable
/// data) and says what would be valid.
pub fn validate(options: &ValidateOptions) -> Result<ValidationReport, String> {
    validate_observed(options, &|_| {}, &|| {})
}

/// [`validate`], telling `machines` how many measured machines will be
/// simulated once their matrices are read, and calling `machine_done` (from
/// any thread) as each one's simulations finish: what a progress display
/// counts.
pub fn validate_observed(
    options: &ValidateOptions,
    machines: &(dyn Fn(usize) + Sync),
    machine_done: &(dyn Fn() + Sync),
) -> Result<ValidationReport, String> {
    let selected = select(options.machine.as_deref())?;
    let data_dir = find_data_dir(options.data_dir.as_deref())?;
    // Read (and check) every matrix first: a bad file is bad input, whatever
    // becomes of the others. The first error in input order is reported.
    let read: Vec<Result<Matrix, String>> = selected
        .par_iter()
        .map(|m| read_matrix(&data_dir, m, options.limits.data_file_bytes))
        .collect();
    let matrices = read.into_iter().collect::<Result<Vec<Matrix>, String>>()?;
    machines(selected.len());
    let reports = selected
        .par_iter()
        .zip(matrices.par_iter())
        .map(|(m, matrix)| {
            let report = validate_machine(m, matrix);
            machine_done();
            report
        })
        .collect();
    Ok(ValidationReport {
        data_dir,
        machines: reports,
    })
}
