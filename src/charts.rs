//! The charts of `bounce run FILE --out DIR`: the results file turned into
//! the plain data of the `plots` crate, and its SVGs named for `DIR/charts/`
//! ([`charts_with`] says which a sweep draws where).
//!
//! - `scaling-throughput.svg`, `scaling-cycles.svg` (and one of each per
//!   machine, `machines/scaling-throughput-MACHINE.svg`, when there are
//!   several): when the sweep has a `cpus` axis, a line per variant (and
//!   per value of the other axes) against the running CPU count, with
//!   socket and L3-domain boundaries when every case ran on one machine
//!   with compact placement; `sweep-throughput.svg`, `sweep-cycles.svg`:
//!   the same against the first numeric axis of a sweep without `cpus`;
//! - `measured.svg`: when the scenario has measured figures, each one's
//!   simulated value against it in units of its target (the band of one
//!   target shaded), numbered as the `measured vs simulated` table;
//! - `comparison.svg`: each variant's change against its baseline (the
//!   first variant unless the scenario names another with `baseline`), per
//!   case of a sweep, of the figure the run report compares
//!   ([`compared_figure`]);
//! - `attribution.svg`: per field, HITM and stall cycles per iteration
//!   across variants;
//! - `lines-STRUCT-VARIANT.svg`: each struct's cache-line map per variant,
//!   fields coloured by misses per iteration;
//! - `c2c.svg`: per variant its hottest lines by HITM (`perf c2c` style),
//!   per byte offset the HITM (local, remote) and the loads, stores and
//!   atomics there, per iteration, and the CPUs and nodes that touched
//!   each line.
//!
//! The last three are a case's own: for a sweep, drawn only on request
//! (`--case-charts`), into `cases/CASE/`.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use plots::{
    AttributionChart, Bar, Boundary, BoundaryKind, ComparisonChart, FieldRow, LineMapChart,
    MapField, PlotError, ScalingChart, Series, TargetRow, TargetsChart,
};
use scenarios::report::compare::{compared_figure, ComparedFigure};
use scenarios::report::output::{Record, ResultsFile};

/// A number of a record to draw.
type Metric = fn(&Record) -> f64;

/// Most fields an attribution chart shows (those with the most traffic).
const MAX_ATTRIBUTED_FIELDS: usize = 24;

/// Which charts [`charts_with`] draws beyond the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChartOptions {
    /// For a sweep, each case's own charts too (attribution, c2c, line
    /// maps), under `cases/CASE/` (`bounce run --case-charts`): one to a
    /// few dozen files per case, which a sweep of a hundred cases would
    /// bury its summary under.
    pub per_case: bool,
}

/// Where a sweep's per-case charts go, under `charts/`.
pub const CASES_DIR: &str = "cases";
/// Where a sweep's per-machine scaling charts go, under `charts/`.
pub const MACHINES_DIR: &str = "machines";

/// The summary charts of `file` ([`charts_with`] without per-case charts).
pub fn charts(file: &ResultsFile) -> Result<Vec<(String, String)>, PlotError> {
    charts_with(file, ChartOptions::default())
}

/// Every chart of `file`, as (path under `charts/`, SVG), in a fixed order.
/// A chart with nothing to draw (no fields, no records) is left out.
///
/// One case (no sweep): its measured figures, comparison, attribution, c2c
/// and line maps. A sweep: a chart per metric with the swept axis on x and
/// a line per variant (`scaling-*` against the CPUs; `sweep-*` against the
/// first numeric axis when there is no `cpus` axis), the measured figures,
/// the comparison per case (one chart per machine), and under `machines/`
/// the scaling charts of each machine with its socket boundaries; each
/// case's own charts only with `options.per_case`, under `cases/CASE/`.
pub fn charts_with(
    file: &ResultsFile,
    options: ChartOptions,
) -> Result<Vec<(String, String)>, PlotError> {
    let mut out = Vec::new();
    if file.records.is_empty() {
        return Ok(out);
    }
    let name = &file.scenario.name;
    let sweep = file.cases.len() > 1;
    let mut machines: IndexMap<&str, Vec<&Record>> = IndexMap::new();
    for r in &file.records {
        machines.entry(r.machine.as_str()).or_default().push(r);
    }
    if let Some(x) = &sweep_x_axis(file) {
        scaling_charts(file, &machines, x, &mut out)?;
    }
    // The measured figures first: what a case study is read for.
    if !file.measured.is_empty() {
        out.push(("measured.svg".into(), plots::targets(&targets(file))?));
    }
    // One variant has nothing to compare with.
    if file.variants.len() > 1 {
        if sweep {
            // A sweep: per case, its variants against its own base; one
            // chart per machine when there are several.
            for (machine, records) in &machines {
                if let Some(chart) = sweep_comparison(file, records, name) {
                    let file_name = if machines.len() > 1 {
                        format!("comparison-{}.svg", file_safe(machine))
                    } else {
                        "comparison.svg".to_string()
                    };
                    out.push((file_name, plots::grouped_comparison(&chart)?));
                }
            }
        } else {
            let case: Vec<&Record> = file.records.iter().collect();
            if let Some(chart) = comparison(file, &case, name, "") {
                out.push(("comparison.svg".into(), plots::comparison(&chart)?));
            }
        }
    }
    if sweep && !options.per_case {
        return Ok(distinct_names(out));
    }
    // Each case's own charts: at the top without a sweep, under
    // `cases/CASE/` for each case of one.
    for c in &file.cases {
        let records: Vec<&Record> = file
            .records
            .iter()
            .filter(|r| r.case_index == c.index)
            .collect();
        if records.is_empty() {
            continue;
        }
        let (dir, where_) = if sweep {
            (
                format!("{CASES_DIR}/{}/", file_safe(&c.id)),
                format!(" ({})", c.id),
            )
        } else {
            (String::new(), String::new())
        };
        case_charts(&records, name, &dir, &where_, &mut out)?;
    }
    Ok(distinct_names(out))
}

/// The swept axis on x: the running CPUs, or else the first axis whose
/// values are numbers (not the machine's); `None` without either.
fn sweep_x_axis(file: &ResultsFile) -> Option<XAxis> {
    if file.axes.iter().any(|a| a.name == "cpus") {
        Some(XAxis::Cpus)
    } else {
        file.axes
            .iter()
            .find(|a| {
                a.name != "machine" && a.values.len() > 1 && a.values.iter().all(|v| v.is_number())
            })
            .map(|a| XAxis::Axis(a.name.clone()))
    }
}

/// What a scaling chart draws: in its title, and on its value axis with
/// the unit.
#[derive(Clone, Copy)]
struct Drawn {
    title: &'static str,
    axis: &'static str,
}

/// A sweep's charts against `x`: throughput and cycles per iteration, a
/// line per variant; with several machines swept over the CPUs, each
/// machine's too (under `machines/`), with its boundaries marked.
fn scaling_charts(
    file: &ResultsFile,
    machines: &IndexMap<&str, Vec<&Record>>,
    x: &XAxis,
    out: &mut Vec<(String, String)>,
) -> Result<(), PlotError> {
    let name = &file.scenario.name;
    let stem = match x {
        XAxis::Cpus => "scaling",
        XAxis::Axis(_) => "sweep",
    };
    // Each metric: the file's name, what the title says it draws, its axis.
    let metrics: [(&str, Drawn, Metric); 2] = [
        (
            "throughput",
            Drawn {
                title: "throughput",
                axis: "throughput (iterations per simulated second)",
            },
            |r| r.throughput_iterations_per_second,
        ),
        (
            "cycles",
            Drawn {
                title: "cycles per iteration",
                axis: "cycles per iteration, mean (cycles)",
            },
            |r| r.cycles_per_iteration_mean,
        ),
    ];
    let all: Vec<&Record> = file.records.iter().collect();
    for (metric_name, drawn, metric) in metrics {
        let chart = scaling(file, &all, name, x, drawn, metric);
        out.push((format!("{stem}-{metric_name}.svg"), plots::scaling(&chart)?));
    }
    // With several machines, one chart per machine too, where its
    // socket and L3 boundaries can be marked: detail, in a folder.
    if machines.len() > 1 && *x == XAxis::Cpus {
        for (metric_name, drawn, metric) in metrics {
            for (machine, records) in machines {
                let chart = scaling(file, records, name, x, drawn, metric);
                out.push((
                    format!(
                        "{MACHINES_DIR}/{stem}-{metric_name}-{}.svg",
                        file_safe(machine)
                    ),
                    plots::scaling(&chart)?,
                ));
            }
        }
    }
    Ok(())
}

/// One case's own charts (its `records`), into `dir`, titled with
/// `where_`: attribution, the hot lines (perf c2c style) and a line map
/// per struct and variant, one colour scale per struct across the
/// variants. A chart with nothing to draw is left out.
fn case_charts(
    records: &[&Record],
    name: &str,
    dir: &str,
    where_: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), PlotError> {
    match plots::attribution(&attribution(records, name, where_)) {
        Ok(svg) => out.push((format!("{dir}attribution.svg"), svg)),
        Err(PlotError::Empty(_)) => {}
        Err(e) => return Err(e),
    }
    // The hot lines of the case (perf c2c style), when any has HITM.
    match plots::c2c_lines(&c2c(records, name, where_)) {
        Ok(svg) => out.push((format!("{dir}c2c.svg"), svg)),
        Err(PlotError::Empty(_)) => {}
        Err(e) => return Err(e),
    }
    // One colour scale per struct across the case's variants.
    let mut scale: BTreeMap<String, f64> = BTreeMap::new();
    for r in records {
        for (s, chart) in line_maps(r, where_, 0.0) {
            let top = chart.fields.iter().map(|f| f.traffic).fold(0.0, f64::max);
            let e = scale.entry(s).or_insert(0.0);
            *e = e.max(top);
        }
    }
    for r in records {
        for mut chart in line_maps(r, where_, 0.0) {
            chart.1.traffic_max = scale.get(&chart.0).copied().unwrap_or(0.0);
            let file_name = format!(
                "{dir}lines-{}-{}.svg",
                file_safe(&chart.0),
                file_safe(&r.variant)
            );
            out.push((file_name, plots::line_map(&chart.1)?));
        }
    }
    Ok(())
}

/// What a sweep's summary charts put on x.
#[derive(Clone, Debug, PartialEq, Eq)]
enum XAxis {
    /// The running CPUs (a `cpus` axis).
    Cpus,
    /// A numeric axis's value.
    Axis(String),
}

/// Two charts whose names came out the same (names that differ only in
/// characters a file name cannot have, `a=b` and `a/b`) keep both: the
/// second and later get `-2`, `-3`, ... before `.svg`, in order.
fn distinct_names(charts: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut taken = std::collections::BTreeSet::new();
    charts
        .into_iter()
        .map(|(name, svg)| {
            let mut unique = name.clone();
            let mut n = 2;
            while taken.contains(&unique) {
                let stem = name.strip_suffix(".svg").unwrap_or(&name);
                unique = format!("{stem}-{n}.svg");
                n += 1;
            }
            taken.insert(unique.clone());
            (unique, svg)
        })
        .collect()
}

/// A name (a variant's, a machine's, a case's) as part of a file name:
/// letters, digits, `-` and `_` kept, anything else `_`, and at most
/// [`FILE_PART_CHARS`] characters. A name cut to fit ends with a hash of it,
/// so that two long names never share a file ([`charts`] also keeps two
/// names that differ only in the characters replaced apart); the name
/// itself stays in the chart and the results files.
pub fn file_safe(s: &str) -> String {
    let kept: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if kept.len() <= FILE_PART_CHARS {
        return kept;
    }
    let hash = scenarios::format::sweep::fnv1a64(s.as_bytes());
    let cut: String = kept.chars().take(FILE_PART_CHARS - 17).collect();
    format!("{cut}-{hash:016x}")
}

/// Longest part of a chart's file name made from a name: two of them and
/// the chart's own words stay well within the 255 bytes a file name may
/// have on Linux and macOS.
pub const FILE_PART_CHARS: usize = 80;

fn axis_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where a machine filled compactly from CPU 0 crosses into its next
/// socket, and first stops sharing an L3: at most one line per socket,
/// each socket boundary and the first L3 domain boundary, not every L3
/// domain's (32 lines on a Bergamo).
fn machine_boundaries(first: &Record) -> Vec<Boundary> {
    let mut boundaries = Vec::new();
    let per_socket = first.machine_cores / first.machine_sockets;
    for s in 1..first.machine_sockets {
        boundaries.push(Boundary {
            x: (s * per_socket) as f64 + 0.5,
            kind: BoundaryKind::Socket,
        });
    }
    if first.machine_l3_domains > first.machine_sockets {
        let per_l3 = first.machine_cores / first.machine_l3_domains;
        if per_l3 > 0 && per_l3 < per_socket {
            boundaries.push(Boundary {
                x: per_l3 as f64 + 0.5,
                kind: BoundaryKind::L3Domain,
            });
        }
    }
    boundaries
}

fn scaling(
    file: &ResultsFile,
    records: &[&Record],
    name: &str,
    x: &XAxis,
    drawn: Drawn,
    metric: Metric,
) -> ScalingChart {
    let x_name = match x {
        XAxis::Cpus => "cpus",
        XAxis::Axis(a) => a.as_str(),
    };
    let x_of = |r: &Record| match x {
        XAxis::Cpus => r.cpus as f64,
        XAxis::Axis(a) => r.axes.get(a).and_then(|v| v.as_f64()).unwrap_or(0.0),
    };
    let mut lines: IndexMap<String, Vec<(f64, f64)>> = IndexMap::new();
    let first = records[0];
    let one_machine = records.iter().all(|r| r.machine == first.machine);
    // Axes other than `cpus` that vary among these records name the lines.
    let varying: Vec<&str> = file
        .axes
        .iter()
        .filter(|a| a.name != x_name)
        .filter(|a| {
            records
                .iter()
                .any(|r| r.axes.get(&a.name) != first.axes.get(&a.name))
        })
        .map(|a| a.name.as_str())
        .collect();
    // A line's label: its variant when the file has several, and the
    // values of the other varying axes (a name bare when one axis varies),
    // so a legend reads `icelake-sp-2s`, not `base, machine=icelake-sp-2s`,
    // and `spinlock, threads.contenders.count=8`, not `spinlock, 8`.
    let many_variants = file.variants.len() > 1;
    for r in records {
        let others: Vec<String> = r
            .axes
            .iter()
            .filter(|(k, _)| varying.contains(&k.as_str()))
            .map(|(k, v)| {
                // A machine or a placement names itself; a bare number or
                // CPU list would not say what it is.
                if varying.len() == 1 && (k.as_str() == "machine" || k.as_str() == "placement") {
                    axis_text(v)
                } else {
                    format!("{k}={}", axis_text(v))
                }
            })
            .collect();
        let mut parts = Vec::new();
        if many_variants || others.is_empty() {
            parts.push(r.variant.clone());
        }
        parts.extend(others);
        lines
            .entry(parts.join(", "))
            .or_default()
            .push((x_of(r), metric(r)));
    }
    let boundaries = if *x == XAxis::Cpus
        && one_machine
        && file.placement.as_deref() == Some("compact")
        && first.machine_sockets > 0
    {
        machine_boundaries(first)
    } else {
        Vec::new()
    };
    let machine = if one_machine {
        format!(" on {}", first.machine)
    } else {
        String::new()
    };
    // The title says what is drawn against what: a reader of the chart
    // alone (the book shows it without its file name) sees both.
    let what = drawn.title;
    let (title, x_label) = match x {
        XAxis::Cpus => (
            format!("{name}: {what} against running CPUs{machine}"),
            "running CPUs (count)".to_string(),
        ),
        XAxis::Axis(a) => (format!("{name}: {what} against {a}{machine}"), a.clone()),
    };
    ScalingChart {
        title,
        x_label,
        y_label: drawn.axis.into(),
        series: lines
            .into_iter()
            .map(|(label, points)| Series { label, points })
            .collect(),
        boundaries,
    }
}

/// `measured.svg`: each measured figure's simulated value against it, in
/// units of its target, labelled as the `measured vs simulated` table
/// numbers them.
fn targets(file: &ResultsFile) -> TargetsChart {
    use scenarios::report::measured::figure;
    TargetsChart {
        title: format!("{}: simulated against measured", file.scenario.name),
        rows: file
            .measured
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let label = match &c.case {
                    Some(case) => format!("[{}] {} ({case})", i + 1, c.label),
                    None => format!("[{}] {}", i + 1, c.label),
                };
                // The unit the `[[measured]]` row's metric gives: a
                // percentage's sign on each figure, a word (cycles, ns)
                // once after the two figures it applies to.
                let (per_figure, after) = match c.unit.as_str() {
                    "%" => ("%", ""),
                    "% of cycles" => ("%", " of cycles"),
                    "cycles" => ("", " cycles"),
                    "ns" => ("", " ns"),
                    _ => ("", ""),
                };
                let simulated = c
                    .simulated
                    .map_or("n/a".to_string(), |v| format!("{}{per_figure}", figure(v)));
                let target = c.tolerance.map_or(" (no target)".to_string(), |t| {
                    format!(" (target ±{})", figure(t))
                });
                TargetRow {
                    label,
                    error_in_targets: match (c.difference, c.tolerance) {
                        (Some(d), Some(t)) if t > 0.0 => Some(d / t),
                        _ => None,
                    },
                    figures: format!(
                        "{simulated} vs {}{per_figure}{after}{target}",
                        figure(c.measured)
                    ),
                }
            })
            .collect(),
    }
}

/// Each variant's change against its baseline (the first variant unless
/// the scenario names another, `baseline`): one bar per variant that has a
/// baseline, labelled with it when the baselines differ. The change is of
/// the figure the run report compares ([`compared_figure`]: the cycles per
/// iteration of the thread group the scenario's `[[measured]]` rows
/// measure when every bar's two runs have the same one, else the
/// throughput over every CPU).
fn comparison(
    file: &ResultsFile,
    case: &[&Record],
    name: &str,
    where_: &str,
) -> Option<ComparisonChart> {
    let pairs: Vec<(&Record, &Record)> = case
        .iter()
        .filter_map(|r| {
            let b = file.baseline_of(&r.variant)?;
            Some((*r, *case.iter().find(|o| o.variant == b)?))
        })
        .collect();
    let figure = compared_figure(pairs.iter().flat_map(|(r, base)| [*r, *base]));
    let compared: Vec<(&Record, &Record, f64)> = pairs
        .into_iter()
        .filter_map(|(r, base)| Some((r, base, figure.change(base, r)?)))
        .collect();
    let first = compared.first()?.1;
    let one_baseline = compared.iter().all(|(_, b, _)| b.variant == first.variant);
    // `throughput change against ...`, `cycles per iteration of ... (CPU 8,
    // as measured): change against ...`.
    let what = match figure {
        ComparedFigure::Throughput => figure.describe(),
        ComparedFigure::GroupCycles { .. } => format!("{}:", figure.describe()),
    };
    let (title, value_label) = if one_baseline {
        (
            format!("{name}: change against {}{where_}", first.variant),
            format!("{what} change against `{}` (%)", first.variant),
        )
    } else {
        (
            format!("{name}: change against each variant's baseline{where_}"),
            format!("{what} change against the variant's baseline (%)"),
        )
    };
    Some(ComparisonChart {
        title,
        value_label,
        category_label: "variant".into(),
        bars: compared
            .iter()
            .map(|(r, base, change)| Bar {
                label: if one_baseline {
                    r.variant.clone()
                } else {
                    format!("{} vs {}", r.variant, base.variant)
                },
                value: *change,
            })
            .collect(),
    })
}

/// A case's label in a chart: its axis values but the machine's (the
/// chart names the machine), or its id.
fn case_label(file: &ResultsFile, r: &Record) -> String {
    let parts: Vec<String> = r
        .axes
        .iter()
        .filter(|(k, _)| k.as_str() != "machine")
        .map(|(k, v)| format!("{k}={}", axis_text(v)))
        .collect();
    if parts.is_empty() || file.axes.is_empty() {
        r.case_id.clone()
    } else {
        parts.join(", ")
    }
}

/// A sweep's comparison on one machine: per case, each variant's change
/// against the same case's run of its baseline (the first variant unless
/// the scenario names another), of the figure the run report compares
/// ([`compared_figure`]: the measured thread group's cycles per iteration
/// when every run carries one group, else the throughput).
fn sweep_comparison(
    file: &ResultsFile,
    records: &[&Record],
    name: &str,
) -> Option<plots::GroupedComparisonChart> {
    let compared: Vec<(&String, &str)> = file
        .variants
        .iter()
        .filter_map(|v| Some((v, file.baseline_of(v)?)))
        .collect();
    let first_baseline = compared.first()?.1;
    let one_baseline = compared.iter().all(|(_, b)| *b == first_baseline);
    let mut categories = Vec::new();
    let mut series: Vec<(String, Vec<f64>)> = compared
        .iter()
        .map(|(v, b)| {
            let label = if one_baseline {
                v.to_string()
            } else {
                format!("{v} vs {b}")
            };
            (label, Vec::new())
        })
        .collect();
    let mut cases: Vec<usize> = records.iter().map(|r| r.case_index).collect();
    cases.dedup();
    let of_case = |case: usize, v: &str| {
        records
            .iter()
            .find(|r| r.case_index == case && r.variant == v)
            .copied()
    };
    // The figure the run report compares, over every run of the chart.
    let figure = compared_figure(cases.iter().flat_map(|&case| {
        compared
            .iter()
            .flat_map(move |(v, b)| [of_case(case, v), of_case(case, b)])
            .flatten()
    }));
    for case in cases {
        let values: Option<Vec<f64>> = compared
            .iter()
            .map(|(v, b)| figure.change(of_case(case, b)?, of_case(case, v)?))
            .collect();
        let Some(values) = values else {
            continue;
        };
        let Some(label_record) = records.iter().find(|r| r.case_index == case) else {
            continue;
        };
        categories.push(case_label(file, label_record));
        for ((_, list), v) in series.iter_mut().zip(values) {
            list.push(v);
        }
    }
    if categories.is_empty() {
        return None;
    }
    let first = records.first()?;
    let machines: Vec<&str> = records.iter().map(|r| r.machine.as_str()).collect();
    let machine = if machines.iter().all(|m| *m == first.machine) {
        format!(" on {}", first.machine)
    } else {
        String::new()
    };
    let what = figure.describe();
    // With one variant compared the chart has no legend, so the title
    // names it: `mutex` throughput against `spinlock`.
    let whose = match compared.as_slice() {
        [(v, _)] => format!("`{v}` "),
        _ => String::new(),
    };
    let (title, value_label) = if one_baseline {
        (
            format!("{name}: {whose}{what} against `{first_baseline}`, per case{machine}"),
            format!("{what} change against the same case's `{first_baseline}` (%)"),
        )
    } else {
        (
            format!("{name}: {what} against each variant's baseline, per case{machine}"),
            format!("{what} change against the same case's baseline (%)"),
        )
    };
    Some(plots::GroupedComparisonChart {
        title,
        value_label,
        category_label: "case".into(),
        categories,
        series,
    })
}

fn per_iteration(count: u64, r: &Record) -> f64 {
    if r.measured_iterations == 0 {
        0.0
    } else {
        count as f64 / r.measured_iterations as f64
    }
}

fn attribution(case: &[&Record], name: &str, where_: &str) -> AttributionChart {
    let k = case.len();
    let mut rows: IndexMap<String, FieldRow> = IndexMap::new();
    for (j, r) in case.iter().enumerate() {
        for f in &r.fields {
            let row = rows.entry(f.field.clone()).or_insert_with(|| FieldRow {
                field: f.field.clone(),
                hitm: vec![0.0; k],
                stall_cycles: vec![0.0; k],
            });
            row.hitm[j] += per_iteration(f.traffic.hitm, r);
            // Waiting, whether stalled on an access (queued at the home
            // included) or polling in a spin-wait: a spinlock's waiters
            // spend most of their time in the second.
            row.stall_cycles[j] += per_iteration(f.traffic.stall_cycles + f.traffic.spin_cycles, r);
        }
    }
    let mut rows: Vec<(usize, FieldRow)> = rows
        .into_values()
        .filter(|r| r.hitm.iter().chain(&r.stall_cycles).any(|v| *v > 0.0))
        .enumerate()
        .collect();
    if rows.len() > MAX_ATTRIBUTED_FIELDS {
        let weight = |r: &FieldRow| r.stall_cycles.iter().sum::<f64>();
        rows.sort_by(|a, b| weight(&b.1).total_cmp(&weight(&a.1)).then(a.0.cmp(&b.0)));
        rows.truncate(MAX_ATTRIBUTED_FIELDS);
        rows.sort_by_key(|r| r.0);
    }
    AttributionChart {
        title: format!("{name}: per-field attribution{where_}"),
        variants: case.iter().map(|r| r.variant.clone()).collect(),
        rows: rows.into_iter().map(|r| r.1).collect(),
        hitm_label: "HITM per iteration (count)".into(),
        stall_label: "cycles waited per iteration, stalled or spinning (cycles)".into(),
    }
}

/// Hot lines per variant in a `c2c` chart (as many as the report's
/// shared-lines section shows).
const C2C_LINES_PER_VARIANT: usize = scenarios::report::text::MAX_SHARED_LINES_SHOWN;

/// The number of CPUs in a Linux cpulist (`0-3,8` is 5).
fn cpulist_len(list: &str) -> u64 {
    list.split(',')
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum()
}

/// Per variant of a case its hottest lines by HITM, each with its accesses
/// per offset and the CPUs and nodes that touched it, per iteration.
fn c2c(case: &[&Record], name: &str, where_: &str) -> plots::C2cChart {
    let mut lines = Vec::new();
    for r in case {
        let mut hot: Vec<_> = r
            .lines
            .iter()
            .filter(|l| l.traffic.hitm > 0 && !l.offsets.is_empty())
            .collect();
        hot.sort_by(|a, b| {
            b.traffic
                .hitm
                .cmp(&a.traffic.hitm)
                .then(a.line.cmp(&b.line))
        });
        let total_hitm: u64 = hot.iter().map(|l| l.traffic.hitm).sum();
        for l in hot.into_iter().take(C2C_LINES_PER_VARIANT) {
            let cpus = cpulist_len(&l.cpus);
            let nodes: Vec<String> = l.nodes.iter().map(|n| n.to_string()).collect();
            lines.push(plots::C2cLine {
                heading: format!(
                    "{}: line {} at {:#x} (home node {}), {:.1} % of the variant's HITM; \
                     HITM local {}, remote {} per iteration",
                    r.variant,
                    l.line,
                    l.address,
                    l.home_node,
                    l.traffic.hitm as f64 * 100.0 / total_hitm as f64,
                    plots::short_number(per_iteration(l.traffic.hitm - l.traffic.hitm_remote, r)),
                    plots::short_number(per_iteration(l.traffic.hitm_remote, r)),
                ),
                touched_by: format!(
                    "touched by {cpus} CPU{} ({}) on node{} {}",
                    if cpus == 1 { "" } else { "s" },
                    l.cpus,
                    if nodes.len() == 1 { "" } else { "s" },
                    nodes.join(",")
                ),
                offsets: l
                    .offsets
                    .iter()
                    .map(|o| plots::C2cOffset {
                        label: format!("{:#x} {}", o.offset_bytes, o.field),
                        hitm_local: per_iteration(o.hitm_local, r),
                        hitm_remote: per_iteration(o.hitm_remote, r),
                        loads: per_iteration(o.loads, r),
                        stores: per_iteration(o.stores, r),
                        atomics: per_iteration(o.atomics, r),
                    })
                    .collect(),
            });
        }
    }
    plots::C2cChart {
        title: format!("{name}: shared lines, perf c2c style{where_}"),
        unit: "per iteration".into(),
        lines,
    }
}

/// One map per struct of the record: (struct name, chart), coloured by
/// misses per iteration (HITM included; a store or atomic that hits is no
/// traffic between caches), on a scale up to `traffic_max` (0: the map's own
/// largest).
fn line_maps(r: &Record, where_: &str, traffic_max: f64) -> Vec<(String, LineMapChart)> {
    // struct -> field name -> (offset, size, traffic), over its instances.
    let mut structs: BTreeMap<&str, IndexMap<&str, (u32, u32, f64)>> = BTreeMap::new();
    // struct -> sizeof (0 when the results file predates it).
    let mut sizes: BTreeMap<&str, u32> = BTreeMap::new();
    for f in &r.fields {
        let field = f.field.split_once('.').map_or(f.field.as_str(), |(_, b)| b);
        let t = &f.traffic;
        let traffic = per_iteration(t.misses, r);
        let size = sizes.entry(f.struct_name.as_str()).or_default();
        *size = (*size).max(f.struct_size_bytes);
        let e = structs
            .entry(f.struct_name.as_str())
            .or_default()
            .entry(field)
            .or_insert((f.offset_bytes, f.size_bytes, 0.0));
        e.2 += traffic;
    }
    // struct -> the instances of it.
    let mut instances: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in &r.fields {
        if let Some((inst, _)) = f.field.split_once('.') {
            let list = instances.entry(f.struct_name.as_str()).or_default();
            if !list.contains(&inst) {
                list.push(inst);
            }
        }
    }
    structs
        .into_iter()
        .map(|(s, fields)| {
            let only = instances
                .get(s)
                .filter(|list| list.len() == 1)
                .map(|l| l[0]);
            let sizeof = sizes.get(s).copied().unwrap_or(0);
            let map = StructMap {
                r,
                name: s,
                sizeof,
                only_instance: only,
                where_,
                traffic_max,
            };
            (s.to_string(), map.chart(fields))
        })
        .collect()
}

/// One struct's line map in a record, before its fields are drawn.
struct StructMap<'a> {
    r: &'a Record,
    name: &'a str,
    /// `sizeof` (0 when the results file predates it).
    sizeof: u32,
    /// The struct's one instance, when it has only one.
    only_instance: Option<&'a str>,
    where_: &'a str,
    traffic_max: f64,
}

impl StructMap<'_> {
    /// The map of the struct's `fields` (name -> offset, size, traffic),
    /// per element and with the elements sharing a line drawn in it when
    /// its one instance is such an array.
    fn chart(&self, fields: IndexMap<&str, (u32, u32, f64)>) -> LineMapChart {
        let (r, s, where_, traffic_max) = (self.r, self.name, self.where_, self.traffic_max);
        let mut fields: Vec<MapField> = fields
            .into_iter()
            .map(|(name, (offset, size, traffic))| MapField {
                name: name.to_string(),
                offset,
                size,
                traffic,
            })
            .collect();
        fields.sort_by_key(|f| f.offset);
        // sizeof, tail padding included; a file without it ends the
        // map with the last field.
        let fields_end = fields.iter().map(|f| f.offset + f.size).max().unwrap_or(0);
        let size = self.sizeof.max(fields_end);
        let mut title = format!("struct {s}, variant {}{where_}", r.variant);
        let mut label = "misses per measured iteration of all CPUs (count; HITM included, \
                             hits not), summed over the struct's instances; one scale for \
                             every variant"
            .to_string();
        // An array instance whose elements share a line: the line is
        // drawn with each element that shares it.
        if let Some((inst, sharing, elements)) =
            self.only_instance.and_then(|i| sharing_elements(r, i))
        {
            // An array's fields per element, so that maps of one struct
            // compare whether or not its elements share lines.
            if elements > 1 {
                for f in &mut fields {
                    f.traffic /= elements as f64;
                }
                label = format!(
                    "misses per measured iteration of all CPUs (count; HITM included, \
                         hits not), per element: the field's misses in all {elements} \
                         elements of `{inst}`, divided evenly; one scale for every variant"
                );
            }
            if sharing > 1 && size > 0 && size * sharing <= 64 {
                let per_element = fields.clone();
                fields = (0..sharing)
                    .flat_map(|e| {
                        per_element.iter().map(move |f| MapField {
                            name: format!("[{e}].{}", f.name),
                            offset: e * size + f.offset,
                            size: f.size,
                            traffic: f.traffic,
                        })
                    })
                    .collect();
                title = format!(
                    "struct {s}, variant {}{where_}: {inst}[0] to {inst}[{}] share a line",
                    r.variant,
                    sharing - 1
                );
                return LineMapChart {
                    title,
                    size: size * sharing,
                    line_bytes: 64,
                    fields,
                    traffic_label: label,
                    traffic_max,
                    subtitle: format!(
                        "{sharing} elements of struct {s} ({size} bytes, sizeof) \
                                 in one {}-byte line",
                        64
                    ),
                };
            }
        }
        LineMapChart {
            title,
            size,
            line_bytes: 64,
            fields,
            traffic_label: label,
            traffic_max,
            subtitle: String::new(),
        }
    }
}

/// For an array instance `inst`: (its name, how many of its elements the
/// line holding element 0 holds, how many elements have traffic), from the
/// line records' field names (`inst[3].value`); `None` when no line names
/// an element of it.
fn sharing_elements<'a>(r: &Record, inst: &'a str) -> Option<(&'a str, u32, u32)> {
    let element = |name: &str| -> Option<u32> {
        let rest = name.strip_prefix(inst)?.strip_prefix('[')?;
        rest.split_once(']')?.0.parse().ok()
    };
    let first = r
        .lines
        .iter()
        .filter(|l| l.fields.iter().any(|f| element(f) == Some(0)))
        .min_by_key(|l| l.line)?;
    let mut on_line: Vec<u32> = first.fields.iter().filter_map(|f| element(f)).collect();
    on_line.sort_unstable();
    on_line.dedup();
    let mut all: Vec<u32> = r
        .lines
        .iter()
        .flat_map(|l| l.fields.iter().filter_map(|f| element(f)))
        .collect();
    all.sort_unstable();
    all.dedup();
    Some((inst, on_line.len() as u32, all.len().max(1) as u32))
}

/// The charts of `bounce validate --out DIR`, as (file name, SVG):
/// `validation-scatter.svg` (measured against simulated medians per class,
/// every machine, with y = x and the bound as a band) and
/// `validation-classes.svg` (the same as bars, each class named). Machines
/// not validated have no points; with none validated there is no chart.
pub fn validation_charts(
    report: &scenarios::tools::validate::ValidationReport,
) -> Result<Vec<(String, String)>, PlotError> {
    use models::calibration::Role;
    use scenarios::tools::validate::{Outcome, BOUND_PCT};
    let mut points = Vec::new();
    for r in &report.machines {
        if let Outcome::Validated { classes, .. } = &r.outcome {
            let machine = r.machine.file.trim_end_matches(".csv");
            for c in classes {
                points.push(plots::ValidationPoint {
                    machine: machine.to_string(),
                    class: c.label.clone(),
                    measured: c.measured_median_ns,
                    simulated: c.simulated_median_ns,
                    known_miss: c.known_miss.is_some(),
                    role: match r.machine.role(c.class.key()) {
                        Role::Calibration => plots::PointRole::Calibration,
                        Role::Prediction => plots::PointRole::Prediction,
                        Role::Unknown => plots::PointRole::Unknown,
                    },
                });
            }
        }
    }
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let chart = plots::ValidationChart {
        title: "bounce validate: simulated against measured core-to-core latency".into(),
        x_label: "measured one-way latency, median per class (ns)".into(),
        y_label: "simulated one-way latency, median per class (ns)".into(),
        band_pct: BOUND_PCT,
        points,
    };
    let scatter = plots::validation_scatter(&chart)?;
    let bars = plots::validation_bars(&plots::ValidationChart {
        title: "bounce validate: simulated against measured one-way latency, per class".into(),
        x_label: "simulated median against measured, per class (%)".into(),
        ..chart
    })?;
    Ok(vec![
        ("validation-scatter.svg".into(), scatter),
        ("validation-classes.svg".into(), bars),
    ])
}

/// The timeline of `bounce trace --svg`: lanes for the cores that take part
/// (named by the CPUs the scenario runs there) and for the directories.
// xtask includes this file for the book's charts and draws no timeline.
#[allow(dead_code)]
pub fn timeline_chart(
    title: &str,
    probe: &scenarios::report::timeline::TimelineProbe<'_>,
    config: &sim_core::engine::SimConfig,
) -> Result<String, PlotError> {
    use scenarios::report::timeline::{Endpoint, MessageKind as Kind};
    let transactions = probe.transactions();
    let mut endpoints: Vec<Endpoint> = transactions
        .iter()
        .flat_map(|t| t.messages.iter().flat_map(|m| [m.from, m.to]))
        .collect();
    endpoints.sort();
    endpoints.dedup();
    let topology = &config.topology;
    let lane_name = |e: &Endpoint| match *e {
        Endpoint::Core(core) => {
            let cpus: Vec<String> = config
                .threads
                .iter()
                .map(|t| t.cpu)
                .filter(|&c| topology.core_of(c) == core)
                .map(|c| c.to_string())
                .collect();
            match cpus.len() {
                0 => format!("core {core}"),
                1 => format!("CPU {} (core {core})", cpus[0]),
                _ => format!("CPUs {} (core {core})", cpus.join(",")),
            }
        }
        Endpoint::Node(node) => format!("{} node {node}", probe.directory_name()),
        Endpoint::HomeAgent(node) => format!("home agent node {node}"),
        Endpoint::Memory(node) => format!("memory node {node}"),
        Endpoint::L3(l3) => format!("L3 {l3}"),
    };
    let lanes: Vec<String> = endpoints.iter().map(lane_name).collect();
    let lane = |e: &Endpoint| endpoints.binary_search(e).unwrap_or(0);
    let chart = plots::TimelineChart {
        title: title.to_string(),
        subtitle: format!(
            "the first {} of {} coherence transactions (hits send no message{}); \
             cycles of simulated time, {} MHz; time goes down",
            transactions.len(),
            probe.seen,
            if probe.prefetches_left_out > 0 {
                "; adjacent-line prefetches left out"
            } else {
                ""
            },
            topology.spec.clock_mhz
        ),
        lanes,
        transactions: transactions
            .iter()
            .map(|t| plots::Transaction {
                caption: t.caption.clone(),
                load: t.load.then(|| plots::LoadSpan {
                    lane: lane(&Endpoint::Core(topology.core_of(t.cpu))),
                    issued_cycle: t.issued_cycle,
                    done_cycle: t.done_cycle,
                }),
                messages: t
                    .messages
                    .iter()
                    .map(|m| plots::Message {
                        from: lane(&m.from),
                        to: lane(&m.to),
                        send_cycle: m.send_cycle,
                        arrive_cycle: m.arrive_cycle,
                        kind: match m.kind {
                            Kind::Request => plots::MessageKind::Request,
                            Kind::Forward => plots::MessageKind::Forward,
                            Kind::Invalidate => plots::MessageKind::Invalidate,
                            Kind::Ack => plots::MessageKind::Ack,
                            Kind::Data => plots::MessageKind::Data,
                        },
                        label: m.label.clone(),
                    })
                    .collect(),
            })
            .collect(),
    };
    plots::timeline(&chart)
}
