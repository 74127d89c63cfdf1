//! Text reports: the comparison table (each variant beside the base, with
//! the change in percent, as the kernel test robot prints them) and the
//! attribution per field and per line underneath, with how evenly the CPUs
//! shared the run (fairness); and a sweep's table ([`sweep_report`]). The
//! "measured vs simulated" table printed under a run is
//! [`crate::report::measured`]'s.

use crate::format::sweep::Sweep;
use crate::run::cases::CaseResult;
use crate::run::results::{VariantFailure, VariantResult};
use sim_core::stats::Traffic;
use std::fmt::Write;

/// A number in 4 significant digits with an SI suffix: `55.56M`, `174.0`, `0.250`.
pub fn si(value: f64) -> String {
    let a = value.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (value / 1e12, "T")
    } else if a >= 1e9 {
        (value / 1e9, "G")
    } else if a >= 1e6 {
        (value / 1e6, "M")
    } else if a >= 1e4 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let s = scaled.abs();
    let digits = if s >= 1000.0 {
        0
    } else if s >= 100.0 {
        1
    } else if s >= 10.0 {
        2
    } else {
        3
    };
    format!("{scaled:.digits$}{suffix}")
}

fn percent_change(base: f64, value: f64) -> String {
    if base == 0.0 {
        if value == 0.0 {
            "0.0%".into()
        } else {
            "n/a".into()
        }
    } else {
        let p = (value - base) / base * 100.0;
        if p.abs() < 0.05 {
            "0.0%".into()
        } else {
            format!("{p:+.1}%")
        }
    }
}

struct Metric {
    name: &'static str,
    value: fn(&VariantResult) -> f64,
}

const METRICS: &[Metric] = &[
    Metric {
        name: "throughput.total (iterations/s)",
        value: |r| r.throughput_total(),
    },
    Metric {
        name: "throughput.per_cpu (iterations/s)",
        value: |r| r.throughput_per_cpu(),
    },
    Metric {
        name: "cycles_per_iteration.mean",
        value: |r| r.iteration_cycles.mean(),
    },
    Metric {
        name: "cycles_per_iteration.p50",
        value: |r| r.iteration_cycles.quantile(500) as f64,
    },
    Metric {
        name: "cycles_per_iteration.p99",
        value: |r| r.iteration_cycles.quantile(990) as f64,
    },
    Metric {
        name: "ns_per_iteration.mean",
        value: |r| r.cycles_to_ns(r.iteration_cycles.mean()),
    },
    Metric {
        name: "misses_per_iteration",
        value: |r| r.per_iteration(r.total.misses),
    },
    Metric {
        name: "hitm_per_iteration",
        value: |r| r.per_iteration(r.total.hitm),
    },
    Metric {
        name: "invalidations_per_iteration",
        value: |r| r.per_iteration(r.total.invalidations),
    },
    Metric {
        name: "cross_socket_per_iteration",
        value: |r| r.per_iteration(r.total.cross_socket),
    },
    Metric {
        name: "stall_cycles_per_iteration",
        value: |r| r.per_iteration(r.total.stall_cycles),
    },
];

/// Adjacent-line prefetches: a row of the comparison table only when some
/// variant's machine prefetched.
const PREFETCH_METRIC: Metric = Metric {
    name: "prefetches_per_iteration",
    value: |r| r.per_iteration(r.total.prefetches),
};

/// How many variants share one block of the comparison table.
const VARIANTS_PER_BLOCK: usize = 3;

/// The comparison table, in blocks of up to three variants beside the base.
pub fn comparison_table(results: &[VariantResult]) -> String {
    let mut out = String::new();
    let Some(base) = results.first() else {
        return out;
    };
    let others = &results[1..];
    let blocks: Vec<&[VariantResult]> = if others.is_empty() {
        vec![&[]]
    } else {
        others.chunks(VARIANTS_PER_BLOCK).collect()
    };
    for (b, block) in blocks.iter().enumerate() {
        if b > 0 {
            out.push('\n');
        }
        let mut header = format!("{:>16}", truncate(&base.name, 16));
        let mut rule = format!("{:->16}", "");
        for v in block.iter() {
            let _ = write!(header, "  {:>9}  {:>16}", "%change", truncate(&v.name, 16));
            let _ = write!(rule, "  {:->9}  {:->16}", "", "");
        }
        let _ = writeln!(out, "{header}  metric");
        let _ = writeln!(out, "{rule}  {:-<34}", "");
        let prefetched = results.iter().any(|r| r.total.prefetches > 0);
        for m in METRICS.iter().chain(prefetched.then_some(&PREFETCH_METRIC)) {
            let base_value = (m.value)(base);
            let mut row = format!("{:>16}", si(base_value));
            for v in block.iter() {
                let value = (m.value)(v);
                let _ = write!(
                    row,
                    "  {:>9}  {:>16}",
                    percent_change(base_value, value),
                    si(value)
                );
            }
            let _ = writeln!(out, "{row}  {}", m.name);
        }
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

fn traffic_columns(t: &Traffic) -> String {
    format!(
        "{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>13}",
        t.accesses(),
        t.hits,
        t.misses,
        t.hitm,
        t.invalidations,
        t.cross_socket,
        t.stall_cycles
    )
}

const TRAFFIC_HEADER: &str =
    "  accesses       hits    misses      HITM     inval  x-socket  stall-cycles";

/// Lines of the detail shown per variant before eliding the rest.
pub const MAX_LINES_SHOWN: usize = 16;

/// The attribution per field and per line of one variant.
pub fn attribution(result: &VariantResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} CPUs, {} iterations in {} cycles ({:.3} ms simulated), {} events",
        result.name,
        result.cpus.len(),
        result.measured_iterations(),
        result.outcome.elapsed_cycles,
        result.elapsed_seconds() * 1e3,
        result.outcome.events
    );
    if let Some(d) = &result.description {
        let _ = writeln!(out, "  {d}");
    }
    let _ = writeln!(out, "\n  per field{:>22} {}", "lines", TRAFFIC_HEADER);
    let mut fields: Vec<_> = result
        .fields
        .iter()
        .filter(|f| f.traffic.accesses() > 0)
        .collect();
    fields.sort_by_key(|f| std::cmp::Reverse(f.traffic.stall_cycles));
    for f in fields {
        let lines = match f.units.as_slice() {
            [] => "-".to_string(),
            [one] => one.to_string(),
            [first, .., last] if f.units.len() == last - first + 1 && f.units.len() <= 4 => {
                format!("{first}-{last}")
            }
            many => format!("{} lines", many.len()),
        };
        let _ = writeln!(
            out,
            "  {:<22} {:>8} {}",
            truncate(&f.name, 22),
            lines,
            traffic_columns(&f.traffic)
        );
    }
    let _ = writeln!(
        out,
        "\n  per line   address  home {}  fields",
        TRAFFIC_HEADER
    );
    let mut lines: Vec<_> = result.lines.iter().collect();
    lines.sort_by(|a, b| {
        b.traffic
            .stall_cycles
            .cmp(&a.traffic.stall_cycles)
            .then(a.unit.cmp(&b.unit))
    });
    for l in lines.iter().take(MAX_LINES_SHOWN) {
        let mut names = l.fields.join(" ");
        if names.chars().count() > 60 {
            names = truncate(&names, 60);
        }
        let _ = writeln!(
            out,
            "  {:>8} {:>#9x} {:>5} {}  {}",
            l.unit,
            l.address,
            l.home_node,
            traffic_columns(&l.traffic),
            names
        );
    }
    if lines.len() > MAX_LINES_SHOWN {
        let _ = writeln!(
            out,
            "  ... {} more lines with traffic (see --json for all)",
            lines.len() - MAX_LINES_SHOWN
        );
    }
    out.push_str(&fairness(result));
    out
}

/// How evenly the CPUs shared the run: measured iterations per CPU (lock
/// acquisitions, when each iteration takes a lock once) and per node, and
/// the longest iteration (the longest wait). Empty for one CPU.
pub fn fairness(result: &VariantResult) -> String {
    let mut out = String::new();
    let cpus = &result.per_cpu;
    if cpus.len() < 2 {
        return out;
    }
    let (Some(min), Some(max), Some(longest)) = (
        cpus.iter().min_by_key(|c| (c.iterations, c.cpu)),
        cpus.iter()
            .max_by_key(|c| (c.iterations, std::cmp::Reverse(c.cpu))),
        cpus.iter()
            .max_by_key(|c| (c.longest_iteration_cycles, std::cmp::Reverse(c.cpu))),
    ) else {
        return out;
    };
    let total: u64 = cpus.iter().map(|c| c.iterations).sum();
    let mean = total as f64 / cpus.len() as f64;
    let spread = if mean > 0.0 {
        (max.iterations - min.iterations) as f64 / mean * 100.0
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "\n  fairness   iterations per CPU: min {} (CPU {}), max {} (CPU {}), mean {mean:.1}, spread {spread:.1} %",
        min.iterations, min.cpu, max.iterations, max.cpu
    );
    let mut nodes: Vec<(u32, u64, usize)> = Vec::new();
    for c in cpus {
        match nodes.iter_mut().find(|(n, _, _)| *n == c.node) {
            Some(entry) => {
                entry.1 += c.iterations;
                entry.2 += 1;
            }
            None => nodes.push((c.node, c.iterations, 1)),
        }
    }
    nodes.sort_unstable();
    let per_node: Vec<String> = nodes
        .iter()
        .map(|(n, i, k)| format!("node {n} {i} ({k} CPUs)"))
        .collect();
    let _ = writeln!(out, "             per node: {}", per_node.join(", "));
    let _ = writeln!(
        out,
        "             longest iteration: {} cycles (CPU {})",
        longest.longest_iteration_cycles, longest.cpu
    );
    out
}

/// The whole report of a run: header, comparison table, then the detail.
pub fn full_report(
    scenario_name: &str,
    results: &[Result<VariantResult, VariantFailure>],
) -> String {
    let mut out = String::new();
    let ok: Vec<VariantResult> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().cloned())
        .collect();
    if let Some(base) = ok.first() {
        let _ = writeln!(
            out,
            "bounce: {scenario_name} on {} ({} MHz), {} variant(s), base `{}`\n",
            base.machine,
            base.clock_mhz,
            results.len(),
            base.name
        );
    }
    out.push_str(&comparison_table(&ok));
    for r in results {
        out.push('\n');
        match r {
            Ok(r) => out.push_str(&attribution(r)),
            Err(f) => {
                let _ = writeln!(out, "{}: FAILED: {}", f.name, f.error);
            }
        }
    }
    out
}

/// Column labels of a sweep table: the case id without the `machine` axis
/// (and the variant, when cases run more than one), or `#N` with a legend
/// when some label would not fit a column.
fn sweep_labels(
    axes: &[String],
    runs: &[(&CaseResult, &VariantResult)],
    many_variants: bool,
) -> (Vec<String>, Option<String>) {
    let label = |case: &CaseResult, v: &VariantResult| {
        let mut parts: Vec<String> = axes
            .iter()
            .zip(&case.values)
            .filter(|(a, _)| a.as_str() != "machine")
            .map(|(a, value)| format!("{a}={value}"))
            .collect();
        if many_variants || parts.is_empty() {
            parts.push(v.name.clone());
        }
        parts.join(",")
    };
    let full: Vec<String> = runs.iter().map(|(c, v)| label(c, v)).collect();
    if full.iter().all(|l| l.chars().count() <= 16) {
        return (full, None);
    }
    // The values alone, under a line naming the axes.
    let mut names: Vec<&str> = axes
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "machine")
        .collect();
    if many_variants || names.is_empty() {
        names.push("variant");
    }
    let values: Vec<String> = runs
        .iter()
        .map(|(case, v)| {
            let mut parts: Vec<String> = axes
                .iter()
                .zip(&case.values)
                .filter(|(a, _)| a.as_str() != "machine")
                .map(|(_, value)| value.to_string())
                .collect();
            if many_variants || parts.is_empty() {
                parts.push(v.name.clone());
            }
            parts.join(",")
        })
        .collect();
    if values.iter().all(|l| l.chars().count() <= 16) {
        return (values, Some(format!("  {}\n", names.join(","))));
    }
    let mut legend = String::new();
    let short = full
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let _ = writeln!(legend, "  #{i:<4} {l}");
            format!("#{i}")
        })
        .collect();
    (short, Some(legend))
}

/// The report of a sweep: per value of the `machine` axis (or once, without
/// one), the comparison table across its cases, each run beside the first;
/// then the runs that failed. The attribution per field and per line is in
/// `fields.csv` (`bounce run --out DIR`).
pub fn sweep_report(
    scenario_name: &str,
    sweep: &Sweep,
    cases: &[CaseResult],
    total_cases: usize,
    shard: Option<(usize, usize)>,
) -> String {
    let mut out = String::new();
    let axes: Vec<String> = sweep.axes.iter().map(|a| a.name.clone()).collect();
    let axis_list = if axes.is_empty() {
        "no axes".to_string()
    } else {
        axes.join(" x ")
    };
    let _ = write!(
        out,
        "bounce: {scenario_name}: sweep of {total_cases} case(s) ({axis_list}) x {} variant(s)",
        sweep.variants.len()
    );
    if let Some((i, n)) = shard {
        let _ = write!(out, ", shard {i}/{n}: {} case(s)", cases.len());
    }
    out.push('\n');
    let machine_axis = axes.iter().position(|a| a == "machine");
    let mut by_machine: Vec<(String, Vec<(&CaseResult, &VariantResult)>)> = Vec::new();
    for case in cases {
        let key = machine_axis
            .and_then(|i| case.values.get(i))
            .map_or_else(String::new, |v| v.to_string());
        let pos = match by_machine.iter().position(|(k, _)| *k == key) {
            Some(p) => p,
            None => {
                by_machine.push((key, Vec::new()));
                by_machine.len() - 1
            }
        };
        for r in case.results.iter().flatten() {
            by_machine[pos].1.push((case, r));
        }
    }
    let many_variants = sweep.variants.len() > 1;
    for (key, runs) in &by_machine {
        let Some((_, first)) = runs.first() else {
            continue;
        };
        let machine = if key.is_empty() {
            first.machine.clone()
        } else {
            key.clone()
        };
        let _ = writeln!(
            out,
            "\nmachine {machine} ({} MHz): {} run(s), each beside the first\n",
            first.clock_mhz,
            runs.len()
        );
        let (labels, legend) = sweep_labels(&axes, runs, many_variants);
        if let Some(legend) = legend {
            let _ = writeln!(out, "columns:");
            out.push_str(&legend);
            out.push('\n');
        }
        let relabelled: Vec<VariantResult> = runs
            .iter()
            .zip(labels)
            .map(|((_, r), label)| VariantResult {
                name: label,
                ..(*r).clone()
            })
            .collect();
        out.push_str(&comparison_table(&relabelled));
    }
    let mut failed = false;
    for case in cases {
        for f in case.failures() {
            if !failed {
                out.push('\n');
                failed = true;
            }
            let _ = writeln!(
                out,
                "case `{}`, variant `{}`: FAILED: {}",
                case.id, f.name, f.error
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_keeps_four_significant_digits() {
        assert_eq!(si(55_555_555.0), "55.56M");
        assert_eq!(si(174.4), "174.4");
        assert_eq!(si(0.25), "0.250");
        assert_eq!(si(12_345.0), "12.35k");
        assert_eq!(si(1234.0), "1234");
    }

    #[test]
    fn percent_change_reads_like_lkp() {
        assert_eq!(percent_change(15722.0, 4792.0), "-69.5%");
        assert_eq!(percent_change(100.0, 100.0), "0.0%");
        assert_eq!(percent_change(0.0, 3.0), "n/a");
    }
}
