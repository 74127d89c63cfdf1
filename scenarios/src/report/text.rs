//! Text reports: the comparison table (each variant beside the base, with
//! the change in percent, as the kernel test robot prints them) and the
//! attribution per field and per line underneath, with how evenly the CPUs
//! shared the run (fairness); and a sweep's table ([`sweep_report`]). The
//! "measured vs simulated" table printed under a run is
//! [`crate::report::measured`]'s.

use crate::format::sweep::Sweep;
use crate::report::compare::{compared_figure, ComparedFigure};
use crate::run::cases::CaseResult;
use crate::run::results::{GroupIterations, VariantFailure, VariantResult};
use sim_core::cpu::LinuxCpu;
use sim_core::stats::Traffic;
use std::fmt::Write;

/// A number in 4 significant digits with an SI suffix: `55.56M`, `174.0`,
/// `0.250`; a value too small for three decimals, in scientific notation
/// (`2.100e-4`), so that no value but zero reads `0.000` (a change of
/// +100 % beside two `0.000` cells would contradict itself).
pub fn si(value: f64) -> String {
    let a = value.abs();
    if a > 0.0 && a < 0.0005 {
        return format!("{value:.3e}");
    }
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
            format!("{}%", signed_percent(p))
        }
    }
}

/// A signed percentage to one decimal, with more decimals where one would
/// round a value that is not -100 % (or +100 %) to it: `-99.99` is
/// `-99.99`, not `-100.0`, since a drop of 100 % means nothing is left; a
/// value that rounds to zero is `0.0`, unsigned.
pub fn signed_percent(p: f64) -> String {
    // A value that rounds to zero has no sign (`-0.0` would read as a
    // small drop).
    if format!("{p:.1}").parse::<f64>().is_ok_and(|t| t == 0.0) {
        return "0.0".into();
    }
    let mut text = format!("{p:+.1}");
    for decimals in 2..=6 {
        let rounded_to_100 = text.parse::<f64>().is_ok_and(|t| t.abs() == 100.0);
        if !rounded_to_100 || p.abs() == 100.0 {
            break;
        }
        text = format!("{p:+.decimals$}");
    }
    text
}

/// A number of a run, as a row of the comparison table and a column of the
/// sweep's pivot table.
pub struct Metric {
    /// The row's label in the comparison table.
    pub name: &'static str,
    /// Its column in `results.csv` (and key in `results.json`), the name
    /// `bounce run --metric` takes.
    pub key: &'static str,
    /// A short column heading for the pivot table, with the unit.
    pub heading: &'static str,
    pub value: fn(&VariantResult) -> f64,
}

pub const METRICS: &[Metric] = &[
    Metric {
        name: "throughput.total (iterations/s)",
        key: "throughput_iterations_per_second",
        heading: "iterations/s",
        value: |r| r.throughput_total(),
    },
    Metric {
        name: "throughput.per_cpu (iterations/s)",
        key: "throughput_per_cpu_iterations_per_second",
        heading: "iter/s per CPU",
        value: |r| r.throughput_per_cpu(),
    },
    Metric {
        name: "cycles_per_iteration.mean",
        key: "cycles_per_iteration_mean",
        heading: "cycles/iter",
        value: |r| r.iteration_cycles.mean(),
    },
    Metric {
        name: "cycles_per_iteration.p50",
        key: "cycles_per_iteration_p50",
        heading: "p50 cycles",
        value: |r| r.iteration_cycles.quantile(500) as f64,
    },
    Metric {
        name: "cycles_per_iteration.p99",
        key: "cycles_per_iteration_p99",
        heading: "p99 cycles",
        value: |r| r.iteration_cycles.quantile(990) as f64,
    },
    Metric {
        name: "ns_per_iteration.mean",
        key: "ns_per_iteration_mean",
        heading: "ns/iter",
        value: |r| r.cycles_to_ns(r.iteration_cycles.mean()),
    },
    Metric {
        name: "misses_per_iteration",
        key: "misses_per_iteration",
        heading: "misses/iter",
        value: |r| r.per_iteration(r.total.misses),
    },
    Metric {
        name: "hitm_per_iteration",
        key: "hitm_per_iteration",
        heading: "HITM/iter",
        value: |r| r.per_iteration(r.total.hitm),
    },
    Metric {
        name: "invalidations_per_iteration",
        key: "invalidations_per_iteration",
        heading: "inval/iter",
        value: |r| r.per_iteration(r.total.invalidations),
    },
    Metric {
        name: "cross_socket_per_iteration",
        key: "cross_socket_misses_per_iteration",
        heading: "x-socket/iter",
        value: |r| r.per_iteration(r.total.cross_socket),
    },
    Metric {
        name: "stall_cycles_per_iteration",
        key: "stall_cycles_per_iteration",
        heading: "stall cyc/iter",
        value: |r| r.per_iteration(r.total.stall_cycles),
    },
    Metric {
        name: "spin_cycles_per_iteration",
        key: "spin_cycles_per_iteration",
        heading: "spin cyc/iter",
        value: |r| r.per_iteration(r.total.spin_cycles),
    },
    Metric {
        name: "queue_wait_cycles_per_iteration",
        key: "queue_wait_cycles_per_iteration",
        heading: "queue cyc/iter",
        value: |r| r.per_iteration(r.total.queue_wait_cycles),
    },
];

/// The figures of the thread group the scenario's `[[measured]]` rows
/// measure, as `--metric` takes them (the `measured_threads_*` columns of
/// `results.csv`); NaN for a run without that group (printed `n/a`). The
/// run report prints them as its first rows.
pub const GROUP_METRICS: &[Metric] = &[
    Metric {
        name: "cycles_per_iteration.mean of the measured threads",
        key: "measured_threads_cycles_per_iteration_mean",
        heading: "cycles/iter of measured threads",
        value: |r| {
            r.measured_threads
                .as_ref()
                .map_or(f64::NAN, |g| g.cycles_per_iteration_mean())
        },
    },
    Metric {
        name: "throughput of the measured threads (iterations/s)",
        key: "measured_threads_throughput_iterations_per_second",
        heading: "iterations/s of measured threads",
        value: |r| {
            r.measured_threads
                .as_ref()
                .map_or(f64::NAN, |g| r.group_throughput(g))
        },
    },
];

/// Adjacent-line prefetches: a row of the comparison table only when some
/// variant's machine prefetched.
const PREFETCH_METRIC: Metric = Metric {
    name: "prefetches_per_iteration",
    key: "prefetches_per_iteration",
    heading: "prefetch/iter",
    value: |r| r.per_iteration(r.total.prefetches),
};

/// A figure of the measured thread group of a variant's run.
type GroupFigure = fn(&VariantResult, &GroupIterations) -> f64;

/// How many variants share one block of the comparison table.
const VARIANTS_PER_BLOCK: usize = 3;

/// The comparison table: each baseline (the first variant, and every
/// variant another names as its `baseline`) beside the variants compared
/// with it, in blocks of up to three variants. Without `baseline`s, one
/// group: every variant beside the first.
pub fn comparison_table(results: &[&VariantResult]) -> String {
    let mut out = String::new();
    for (g, (base, others)) in comparison_groups(results).into_iter().enumerate() {
        if g > 0 {
            out.push('\n');
        }
        out.push_str(&comparison_block(results, base, &others));
    }
    out
}

/// The results in groups of a baseline and the variants compared with it,
/// in the order the baselines come. A variant whose baseline did not run
/// (it failed) or that is compared with nothing and is no one's baseline
/// has a group of its own.
fn comparison_groups<'a>(
    results: &[&'a VariantResult],
) -> Vec<(&'a VariantResult, Vec<&'a VariantResult>)> {
    let baseline_of = |r: &VariantResult| -> Option<usize> {
        let b = r.baseline.as_deref()?;
        results.iter().position(|o| o.name == b && o.name != r.name)
    };
    let mut groups: Vec<(&VariantResult, Vec<&VariantResult>)> = Vec::new();
    for r in results {
        if baseline_of(r).is_none() {
            groups.push((r, Vec::new()));
        }
    }
    for r in results {
        if let Some(b) = baseline_of(r) {
            if let Some(g) = groups.iter_mut().find(|g| g.0.name == results[b].name) {
                g.1.push(r);
            } else {
                // Its baseline is compared with another: a group of its own.
                groups.push((results[b], vec![r]));
            }
        }
    }
    // In the order of the baselines' runs.
    groups.sort_by_key(|g| results.iter().position(|r| r.name == g.0.name));
    groups
}

/// One baseline beside its variants, in blocks of up to three.
fn comparison_block(
    results: &[&VariantResult],
    base: &VariantResult,
    others: &[&VariantResult],
) -> String {
    let mut out = String::new();
    let blocks: Vec<&[&VariantResult]> = if others.is_empty() {
        vec![&[]]
    } else {
        others.chunks(VARIANTS_PER_BLOCK).collect()
    };
    for (b, block) in blocks.iter().enumerate() {
        if b > 0 {
            out.push('\n');
        }
        let rows = block_rows(results, base, block);
        let change = |base: Option<f64>, value: Option<f64>| match (base, value) {
            (Some(b), Some(v)) => percent_change(b, v),
            _ => "n/a".to_string(),
        };
        let cell = |value: Option<f64>| value.map_or("n/a".to_string(), si);
        // The %change column as wide as its widest change (`+157340.0%`),
        // so that a large change does not push its row out of line.
        let change_width = rows
            .iter()
            .flat_map(|(_, b, values)| values.iter().map(|v| change(*b, *v).len()))
            .fold(9, usize::max);
        // Each value column as wide as the longest variant name, so that
        // names are shown whole (up to 40 characters), at least 16.
        let width = std::iter::once(&base.name)
            .chain(block.iter().map(|v| &v.name))
            .map(|n| n.chars().count())
            .fold(16, usize::max)
            .min(40);
        let mut header = format!("{:>width$}", truncate(&base.name, width));
        let mut rule = format!("{:->width$}", "");
        for v in block.iter() {
            let _ = write!(
                header,
                "  {:>change_width$}  {:>width$}",
                "%change",
                truncate(&v.name, width)
            );
            let _ = write!(rule, "  {:->change_width$}  {:->width$}", "", "");
        }
        let _ = writeln!(out, "{header}  metric");
        let _ = writeln!(out, "{rule}  {:-<34}", "");
        for (name, base_value, values) in rows {
            let mut row = format!("{:>width$}", cell(base_value));
            for value in values {
                let _ = write!(
                    row,
                    "  {:>change_width$}  {:>width$}",
                    change(base_value, value),
                    cell(value)
                );
            }
            let _ = writeln!(out, "{row}  {name}");
        }
    }
    out
}

/// A block's rows: each a label, the baseline's value and each variant's
/// (None: the variant does not measure the baseline's thread group).
/// First the figures of the thread group the scenario's `[[measured]]`
/// rows measure, when they name one, then the metrics over every CPU.
#[allow(clippy::type_complexity)]
fn block_rows(
    results: &[&VariantResult],
    base: &VariantResult,
    block: &[&VariantResult],
) -> Vec<(String, Option<f64>, Vec<Option<f64>>)> {
    let prefetched = results.iter().any(|r| r.total.prefetches > 0);
    // Each row: its label, the baseline's value and each variant's
    // (None: the variant does not measure the baseline's thread group).
    let mut rows: Vec<(String, Option<f64>, Vec<Option<f64>>)> = Vec::new();
    // First the figures of the thread group the scenario's `[[measured]]`
    // rows measure, when they name one: where the other CPUs idle or
    // do other work, the rows over every CPU hide what it measures.
    if let Some(group) = &base.measured_threads {
        fn of<'v>(
            v: &'v VariantResult,
            group: &str,
        ) -> Option<(&'v VariantResult, &'v GroupIterations)> {
            v.measured_threads
                .as_ref()
                .filter(|g| g.threads == group)
                .map(|g| (v, g))
        }
        let group_rows: [(&str, GroupFigure); 3] = [
            ("cycles_per_iteration.mean", |_, g| {
                g.cycles_per_iteration_mean()
            }),
            ("ns_per_iteration.mean", |v, g| {
                v.cycles_to_ns(g.cycles_per_iteration_mean())
            }),
            ("throughput (iterations/s)", |v, g| v.group_throughput(g)),
        ];
        for (name, figure) in group_rows {
            rows.push((
                format!("{name} of `{}`", group.threads),
                of(base, &group.threads).map(|(v, g)| figure(v, g)),
                block
                    .iter()
                    .map(|v| of(v, &group.threads).map(|(v, g)| figure(v, g)))
                    .collect(),
            ));
        }
    }
    // Beside the group's rows, the others say they are over every CPU.
    let over_every_cpu = base.measured_threads.is_some();
    for m in METRICS.iter().chain(prefetched.then_some(&PREFETCH_METRIC)) {
        rows.push((
            if over_every_cpu {
                every_cpu_row(m.name)
            } else {
                m.name.to_string()
            },
            Some((m.value)(base)),
            block.iter().map(|v| Some((m.value)(v))).collect(),
        ));
    }
    rows
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

/// Names of array elements that differ only in one index, in a run of
/// consecutive indices, as one name with the range: `counters[0].value`
/// to `counters[7].value` as `counters[0-7].value`, so that a line's
/// fields fit its column.
fn index_ranges(names: &[String]) -> Vec<String> {
    // `name` split at its first index: (before `[`, the index, from `]`).
    fn split(name: &str) -> Option<(&str, u64, &str)> {
        let open = name.find('[')?;
        let close = open + name[open..].find(']')?;
        let index = name[open + 1..close].parse().ok()?;
        Some((&name[..open], index, &name[close + 1..]))
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        if let Some((head, first, tail)) = split(&names[i]) {
            while j < names.len() && split(&names[j]) == Some((head, first + (j - i) as u64, tail))
            {
                j += 1;
            }
            if j - i > 1 {
                out.push(format!(
                    "{head}[{first}-{}]{tail}",
                    first + (j - i - 1) as u64
                ));
                i = j;
                continue;
            }
        }
        out.push(names[i].clone());
        i = j;
    }
    out
}

fn traffic_columns(t: &Traffic) -> String {
    format!(
        "{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>13} {:>13} {:>13}",
        t.accesses(),
        t.hits,
        t.misses,
        t.hitm,
        t.invalidations,
        t.cross_socket,
        t.stall_cycles,
        t.spin_cycles,
        t.queue_wait_cycles
    )
}

const TRAFFIC_HEADER: &str =
    "  accesses       hits    misses      HITM     inval  x-socket  stall-cycles   spin-cycles  queue-cycles";

/// `n` and the noun, plural unless `n` is 1: `1 CPU`, `8 CPUs`.
pub fn counted(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Lines of the detail shown per variant before eliding the rest.
pub const MAX_LINES_SHOWN: usize = 16;

/// The attribution per field and per line of one variant.
pub fn attribution(result: &VariantResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {}, {} iterations in {} cycles ({:.3} ms simulated), {}",
        result.name,
        counted(result.cpus.len() as u64, "CPU"),
        result.measured_iterations(),
        result.outcome.elapsed_cycles,
        result.elapsed_seconds() * 1e3,
        counted(result.outcome.events, "event")
    );
    if let Some(d) = &result.description {
        let _ = writeln!(out, "  {d}");
    }
    let _ = writeln!(out, "\n  per field{:>25} {}", "lines", TRAFFIC_HEADER);
    let mut fields: Vec<_> = result
        .fields
        .iter()
        .filter(|f| f.traffic.accesses() > 0)
        .collect();
    // Most waited on first: stalled, polling or queued.
    fields.sort_by_key(|f| std::cmp::Reverse(f.traffic.wait_cycles()));
    for f in fields {
        // Which lines the field is on, by number as the per-line table
        // lists them: `line 0`, `lines 2-3`, or how many.
        let lines = match f.units.as_slice() {
            [] => "-".to_string(),
            [one] => format!("line {one}"),
            [first, .., last] if f.units.len() == last - first + 1 && f.units.len() <= 4 => {
                format!("lines {first}-{last}")
            }
            many => format!("{} lines", many.len()),
        };
        let _ = writeln!(
            out,
            "  {:<22} {:>11} {}",
            truncate(&f.name, 22),
            lines,
            traffic_columns(&f.traffic)
        );
    }
    out.push_str(&not_reported(result));
    let _ = writeln!(
        out,
        "\n  per line   address  home {}  fields",
        TRAFFIC_HEADER
    );
    let mut lines: Vec<_> = result.lines.iter().collect();
    lines.sort_by(|a, b| {
        b.traffic
            .wait_cycles()
            .cmp(&a.traffic.wait_cycles())
            .then(a.unit.cmp(&b.unit))
    });
    for l in lines.iter().take(MAX_LINES_SHOWN) {
        let mut names = index_ranges(&l.fields).join(" ");
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
            "  ... {} more lines with traffic (every line: `--format json`, or fields.csv of `--out DIR`)",
            lines.len() - MAX_LINES_SHOWN
        );
    }
    out.push_str(&shared_lines(result));
    out.push_str(&fairness(result));
    out
}

/// The instances the attribution leaves out: those no code the variant
/// runs names, and those no CPU accessed in the measured iterations.
fn not_reported(result: &VariantResult) -> String {
    let mut out = String::new();
    if !result.unnamed_instances.is_empty() {
        let names: Vec<String> = result
            .unnamed_instances
            .iter()
            .map(|n| format!("`{n}`"))
            .collect();
        let _ = writeln!(
            out,
            "  not reported: {} (placed in memory, but no script or procedure this variant \
             runs names {})",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" }
        );
    }
    if !result.unaccessed_instances.is_empty() {
        let names: Vec<String> = result
            .unaccessed_instances
            .iter()
            .map(|n| format!("`{n}`"))
            .collect();
        let _ = writeln!(
            out,
            "  not reported: {} (code this variant runs names {}, but no CPU accessed {} in \
             the measured iterations: a branch never taken, such as a lock's slow path)",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" }
        );
    }
    out
}

/// Hot lines shown in the per-line view.
pub const MAX_SHARED_LINES_SHOWN: usize = 4;

/// The per-line view in the style of `perf c2c`'s "Shared Data Cache Line
/// Table" and its per-offset detail: for each line with HITM (most first),
/// local and remote HITM, then per offset in the line the loads, stores,
/// atomics and HITM there, and which CPUs and nodes touched it. Empty when
/// no line had HITM.
pub fn shared_lines(result: &VariantResult) -> String {
    let mut out = String::new();
    let mut hot: Vec<_> = result.lines.iter().filter(|l| l.traffic.hitm > 0).collect();
    if hot.is_empty() {
        return out;
    }
    hot.sort_by(|a, b| {
        b.traffic
            .hitm
            .cmp(&a.traffic.hitm)
            .then(a.unit.cmp(&b.unit))
    });
    let total_hitm: u64 = hot.iter().map(|l| l.traffic.hitm).sum();
    // By CPU number: a search per CPU of each line is quadratic at 512 CPUs.
    let mut node_by_cpu: Vec<Option<u32>> = Vec::new();
    for c in &result.per_cpu {
        if node_by_cpu.len() <= c.cpu.slot() {
            node_by_cpu.resize(c.cpu.slot() + 1, None);
        }
        node_by_cpu[c.cpu.slot()].get_or_insert(c.node);
    }
    let node_of = |cpu: LinuxCpu| node_by_cpu.get(cpu.slot()).copied().flatten();
    let _ = writeln!(
        out,
        "\n  shared lines (perf c2c style): {} with HITM, the {} hottest",
        hot.len(),
        hot.len().min(MAX_SHARED_LINES_SHOWN)
    );
    for l in hot.iter().take(MAX_SHARED_LINES_SHOWN) {
        let t = &l.traffic;
        let cpus = l.detail.cpu_list();
        let mut nodes: Vec<u32> = cpus.iter().filter_map(|&c| node_of(c)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let _ = writeln!(
            out,
            "\n  line {} at {:#x} (home node {}): {:.1}% of HITM; HITM local {} remote {}; loads {} stores {} atomics {}",
            l.unit,
            l.address,
            l.home_node,
            t.hitm as f64 * 100.0 / total_hitm as f64,
            t.hitm_local(),
            t.hitm_remote,
            t.loads,
            t.stores,
            t.atomics
        );
        let _ = writeln!(
            out,
            "    touched by {} CPU{} ({}) on node{} {}",
            cpus.len(),
            if cpus.len() == 1 { "" } else { "s" },
            crate::format::schema::format_cpulist(&cpus),
            if nodes.len() == 1 { "" } else { "s" },
            nodes
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let _ = writeln!(
            out,
            "    {:>6}  {:>10} {:>10} {:>10} {:>10} {:>10}  field",
            "offset", "loads", "stores", "atomics", "HITM-local", "HITM-rem"
        );
        for o in &l.detail.offsets {
            let field = l.field_at(o.offset_bytes);
            let _ = writeln!(
                out,
                "    {:>#6x}  {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                o.offset_bytes, o.loads, o.stores, o.atomics, o.hitm_local, o.hitm_remote, field
            );
        }
    }
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
    if min.iterations == max.iterations {
        // No least and most to name: `min 2000 (CPU 0), max 2000 (CPU 0)`
        // read as if one CPU were both.
        let _ = writeln!(
            out,
            "\n  fairness   iterations per CPU: {} on every CPU, spread 0.0 %",
            min.iterations
        );
    } else {
        let _ = writeln!(
            out,
            "\n  fairness   iterations per CPU: min {} (CPU {}), max {} (CPU {}), mean {mean:.1}, spread {spread:.1} %",
            min.iterations, min.cpu, max.iterations, max.cpu
        );
    }
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
        .map(|(n, i, k)| format!("node {n} {i} ({})", counted(*k as u64, "CPU")))
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
    // Borrowed, not cloned: a result holds every CPU's, field's and line's
    // figures, a visible part of a short run's cost at 512 CPUs.
    let ok: Vec<&VariantResult> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    if let Some(base) = ok.first() {
        let groups = comparison_groups(&ok);
        let baselines = if groups.len() > 1 {
            let names: Vec<String> = groups.iter().map(|g| format!("`{}`", g.0.name)).collect();
            format!(", each variant beside its baseline ({})", names.join(", "))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "bounce: {scenario_name} on {} ({} MHz), {} variant(s), base `{}`{baselines}",
            base.machine,
            base.clock_mhz,
            results.len(),
            base.name
        );
        if let Some(note) = change_note(&groups) {
            let _ = writeln!(out, "{note}");
        }
        out.push_str(&group_rows_note(&ok));
        out.push('\n');
    }
    out.push_str(&comparison_table(&ok));
    for r in results {
        out.push('\n');
        match r {
            Ok(r) => out.push_str(&attribution(r)),
            Err(f) => {
                // The error itself, with its file and line, is said once,
                // on stderr: the report only marks the run.
                let _ = writeln!(out, "{}: {NO_RESULT}", f.name);
            }
        }
    }
    if !ok.is_empty() {
        out.push('\n');
        out.push_str(TRAFFIC_KEY);
    }
    out
}

/// What each column of the per-field and per-line tables counts, said once
/// under the report: the headings are short, and `inval` or `x-socket`
/// alone do not say what they count.
pub const TRAFFIC_KEY: &str = "\
columns of the per-field and per-line tables, summed over the CPUs' measured iterations:
  accesses   loads + stores + atomics
  hits       answered by the core's own cache (or store buffer); misses: needed a coherence
             transaction (a store that waited in the store buffer counts when it drains)
  HITM       misses served from a Modified or Owned copy in another core
  inval      copies invalidated in other caches; x-socket: misses with a leg crossing sockets
  stall-cycles  cycles the CPUs waited for these accesses (queue-cycles included)
  spin-cycles   cycles spent polling a value that did not change, as a spin-wait does
  queue-cycles  cycles the requests waited at the line's home behind others for the line
";

/// What each %change column of the comparison tables is against, for a
/// reader who would take a column of changes for the step from the
/// column to its left: `None` when no table has one (a single variant).
fn change_note(groups: &[(&VariantResult, Vec<&VariantResult>)]) -> Option<String> {
    match groups {
        [(base, others)] if others.len() == 1 => Some(format!(
            "%change: the variant to its right against the base `{}`",
            base.name
        )),
        [(base, others)] if others.len() > 1 => Some(format!(
            "each %change: the variant to its right against the base `{}`, not against \
             the column to its left",
            base.name
        )),
        [_] | [] => None,
        _ => Some(
            "each %change: the variant to its right against its table's first column, \
             the baseline it names"
                .to_string(),
        ),
    }
}

/// Which rows of the comparison tables are over which CPUs, when a table
/// has both (some run carries the thread group the scenario's
/// `[[measured]]` rows measure); empty otherwise.
fn group_rows_note(runs: &[&VariantResult]) -> String {
    let mut measured: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.measured_threads.as_ref().map(|g| g.threads.as_str()))
        .collect();
    measured.sort_unstable();
    measured.dedup();
    if measured.is_empty() {
        return String::new();
    }
    let names: Vec<String> = measured.iter().map(|g| format!("\"of `{g}`\"")).collect();
    format!(
        "rows ending {} are over the thread group the scenario's [[measured]] rows measure; \
         rows marked \"{EVERY_CPU}\" over every CPU that runs a script, helper threads' \
         included (the percentiles and traffic are not kept per thread group)\n",
        names.join(" or ")
    )
}

/// The mark of a comparison row over every CPU, in a table that also has
/// rows over the measured thread group.
const EVERY_CPU: &str = "every CPU";

/// A metric's row name marked as over every CPU: inside the unit's
/// brackets where it has them (`throughput.total (iterations/s, every
/// CPU)`), in brackets of its own otherwise.
fn every_cpu_row(name: &str) -> String {
    match name.strip_suffix(')') {
        Some(open) => format!("{open}, {EVERY_CPU})"),
        None => format!("{name} ({EVERY_CPU})"),
    }
}

/// How `bounce run` prints a sweep.
#[derive(Clone, Default)]
pub struct SweepView {
    /// The metric of the pivot table (a key of [`METRICS`]); `None` for
    /// throughput when cases run several variants, and for a row of the
    /// main metrics when they run one.
    pub metric: Option<&'static Metric>,
    /// Only the pivot table, without each case's comparison table.
    pub compact: bool,
}

/// The metric whose results.csv column is `key`, or an error naming the
/// valid ones (and the closest).
pub fn metric_by_key(key: &str) -> Result<&'static Metric, String> {
    if let Some(m) = METRICS.iter().chain(GROUP_METRICS).find(|m| m.key == key) {
        return Ok(m);
    }
    // The name the comparison table prints in its `metric` column
    // (`throughput.total`, `cycles_per_iteration.mean`), which a reader of
    // the report types first: the same metric.
    if let Some(m) = METRICS.iter().find(|m| row_name(m) == key) {
        return Ok(m);
    }
    let keys: Vec<&str> = METRICS.iter().chain(GROUP_METRICS).map(|m| m.key).collect();
    let hint = crate::format::error::closest(key, &keys)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    Err(format!(
        "--metric: no metric `{key}`{hint}; metrics (results.csv columns, or the report's row \
         names such as `throughput.total`): {}",
        keys.join(", ")
    ))
}

/// A metric's name in the comparison table's `metric` column, without
/// its unit: `throughput.total` of `throughput.total (iterations/s)`.
fn row_name(m: &Metric) -> &'static str {
    m.name.split(" (").next().unwrap_or(m.name)
}

/// The metrics of a one-variant sweep's table, one column each.
const CASE_TABLE_METRICS: [usize; 7] = [0, 1, 2, 4, 7, 9, 10];

/// An axis value for a table cell: as in the case id, shortened to fit.
fn axis_cell(value: &crate::format::sweep::AxisValue) -> String {
    truncate(&value.to_string(), 24)
}

/// The rows of a text table, right-aligned in columns as wide as their
/// widest cell; the first row is the heading, underlined.
fn aligned(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let _ = write!(line, "{cell:>w$}", w = widths[c]);
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "{}", rule.join("  "));
        }
    }
    out
}

/// The pivot table of one machine's cases: a row per case (its axis values
/// but the machine), a column per variant with the metric, and beside each
/// variant after the first its change against the same case's first
/// variant. With one variant and no metric chosen, a column per main
/// metric instead (after the measured thread group's cycles per iteration,
/// when its runs carry one). Without a metric chosen, the figure the run
/// report compares ([`pivot_figure`]).
fn pivot(
    axes: &[String],
    cases: &[&CaseResult],
    variants: &[String],
    metric: Option<&Metric>,
) -> String {
    let key_axes: Vec<usize> = (0..axes.len()).filter(|&i| axes[i] != "machine").collect();
    let mut heading: Vec<String> = key_axes.iter().map(|&i| axes[i].clone()).collect();
    if heading.is_empty() {
        heading.push("case".into());
    }
    fn result<'c>(case: &'c CaseResult, variant: &str) -> Option<&'c VariantResult> {
        case.results.iter().flatten().find(|r| r.name == variant)
    }
    let per_metric = variants.len() == 1 && metric.is_none();
    let baselines = sweep_baselines(cases, variants);
    let figure = pivot_figure(cases);
    let group = match &figure {
        ComparedFigure::GroupCycles { threads, .. } => Some(threads.clone()),
        ComparedFigure::Throughput => None,
    };
    if per_metric {
        if let Some(threads) = &group {
            heading.push(format!("cycles/iter of {threads}"));
        }
        heading.extend(
            CASE_TABLE_METRICS
                .iter()
                .map(|&m| METRICS[m].heading.to_string()),
        );
    } else {
        // The order of the per-case tables and of lkp-tests' compare
        // output: each variant's %change against its baseline (the first
        // variant unless it names another) just before it; a variant
        // compared with nothing has none.
        for (j, v) in variants.iter().enumerate() {
            match baselines[j] {
                Some(0) => heading.push("%change".into()),
                Some(b) => heading.push(format!("%change vs {}", variants[b])),
                None => {}
            }
            heading.push(v.clone());
        }
    }
    // A run without the metric's figure (a group metric's, NaN) has none.
    let value = |r: &VariantResult| match metric {
        Some(m) => Some((m.value)(r)).filter(|v| !v.is_nan()),
        None => figure.value(r),
    };
    let mut rows = vec![heading];
    for case in cases {
        let mut row: Vec<String> = key_axes
            .iter()
            .filter_map(|&i| case.values.get(i).map(axis_cell))
            .collect();
        if row.is_empty() {
            row.push(if case.id.is_empty() {
                "-".into()
            } else {
                case.id.clone()
            });
        }
        if per_metric {
            let r = result(case, &variants[0]);
            if group.is_some() {
                row.push(match r {
                    None => "FAILED".into(),
                    Some(r) => figure.value(r).map_or("n/a".into(), si),
                });
            }
            for &m in &CASE_TABLE_METRICS {
                row.push(r.map_or("FAILED".into(), |r| si((METRICS[m].value)(r))));
            }
        } else {
            for (j, v) in variants.iter().enumerate() {
                let run = result(case, v);
                let cell = run.and_then(value);
                if let Some(b) = baselines[j] {
                    let base = result(case, &variants[b]).and_then(value);
                    row.push(match (base, cell) {
                        (Some(b), Some(v)) => percent_change(b, v),
                        _ => "-".into(),
                    });
                }
                row.push(match (run, cell) {
                    (None, _) => "FAILED".into(),
                    (Some(_), None) => "n/a".into(),
                    (Some(_), Some(v)) => si(v),
                });
            }
        }
        rows.push(row);
    }
    aligned(&rows)
}

/// The figure a sweep's pivot table compares without `--metric`: the one
/// the run report's comparison puts first and `comparison.svg` draws
/// ([`compared_figure`]) over every run of `cases`.
fn pivot_figure(cases: &[&CaseResult]) -> ComparedFigure {
    compared_figure(cases.iter().flat_map(|c| c.results.iter().flatten()))
}

/// Per variant of a sweep, the index of its baseline among `variants`
/// (as its runs record it; the first variant for one that never ran).
fn sweep_baselines(cases: &[&CaseResult], variants: &[String]) -> Vec<Option<usize>> {
    variants
        .iter()
        .enumerate()
        .map(|(j, v)| {
            let ran = cases
                .iter()
                .flat_map(|c| c.results.iter().flatten())
                .find(|r| r.name == *v);
            match ran {
                Some(r) => r
                    .baseline
                    .as_ref()
                    .and_then(|b| variants.iter().position(|o| o == b))
                    .filter(|&b| b != j),
                None => (j > 0).then_some(0),
            }
        })
        .collect()
}

/// A case's label in headings: its axis values but the machine.
fn case_label(axes: &[String], case: &CaseResult) -> String {
    let parts: Vec<String> = axes
        .iter()
        .zip(&case.values)
        .filter(|(a, _)| a.as_str() != "machine")
        .map(|(a, value)| format!("{a}={}", axis_cell(value)))
        .collect();
    if parts.is_empty() {
        case.id.clone()
    } else {
        parts.join(", ")
    }
}

/// The report of a sweep, as [`sweep_report_with`] prints it by default.
pub fn sweep_report(
    scenario_name: &str,
    sweep: &Sweep,
    cases: &[CaseResult],
    total_cases: usize,
    shard: Option<(usize, usize)>,
) -> String {
    sweep_report_with(
        scenario_name,
        sweep,
        cases,
        total_cases,
        shard,
        &SweepView::default(),
    )
}

/// The report of a sweep: per value of the `machine` axis (or once, without
/// one), the pivot table (a row per case, a column per variant, each
/// variant against the same case's base), then, unless `view.compact`,
/// each case's comparison table (its variants beside its base); then the
/// runs that failed. The attribution per field and per line is in
/// `fields.csv` (`bounce run --out DIR`).
pub fn sweep_report_with(
    scenario_name: &str,
    sweep: &Sweep,
    cases: &[CaseResult],
    total_cases: usize,
    shard: Option<(usize, usize)>,
    view: &SweepView,
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
    let every_run: Vec<&VariantResult> = cases
        .iter()
        .flat_map(|c| c.results.iter().flatten())
        .collect();
    out.push_str(&group_rows_note(&every_run));
    for (key, machine_cases) in &cases_by_machine(&axes, cases) {
        let Some(first) = machine_cases
            .iter()
            .flat_map(|c| c.results.iter().flatten())
            .next()
        else {
            continue;
        };
        let machine = if key.is_empty() {
            first.machine.clone()
        } else {
            key.clone()
        };
        let _ = writeln!(
            out,
            "\nmachine {machine} ({} MHz): {} case(s) x {} variant(s)\n",
            first.clock_mhz,
            machine_cases.len(),
            sweep.variants.len()
        );
        out.push_str(&pivot_heading(sweep, machine_cases, view));
        out.push_str(&pivot(&axes, machine_cases, &sweep.variants, view.metric));
        if view.compact || sweep.variants.len() < 2 {
            continue;
        }
        out.push_str(&case_comparisons(&axes, machine_cases));
    }
    // Which runs the FAILED cells are; their errors, with their files and
    // lines, are said once, on stderr.
    let mut failed = false;
    for case in cases {
        for f in case.failures() {
            if !failed {
                out.push('\n');
                failed = true;
            }
            let _ = writeln!(out, "case `{}`, variant `{}`: {NO_RESULT}", case.id, f.name);
        }
    }
    out
}

/// How a report marks a run without a result: the error is on stderr.
pub const NO_RESULT: &str = "FAILED, no result (its error is on stderr)";

/// The cases grouped by the value of the `machine` axis, in first-seen
/// order (one group, keyed by the empty string, without that axis).
fn cases_by_machine<'c>(
    axes: &[String],
    cases: &'c [CaseResult],
) -> Vec<(String, Vec<&'c CaseResult>)> {
    let machine_axis = axes.iter().position(|a| a == "machine");
    let mut by_machine: Vec<(String, Vec<&CaseResult>)> = Vec::new();
    for case in cases {
        let key = machine_axis
            .and_then(|i| case.values.get(i))
            .map_or_else(String::new, |v| v.to_string());
        match by_machine.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(case),
            None => by_machine.push((key, vec![case])),
        }
    }
    by_machine
}

/// The line above a machine's pivot table: what its figure is and what
/// each %change is against.
fn pivot_heading(sweep: &Sweep, machine_cases: &[&CaseResult], view: &SweepView) -> String {
    let mut out = String::new();
    let base_name = sweep.variants.first().cloned().unwrap_or_default();
    let figure = pivot_figure(machine_cases);
    match (sweep.variants.len(), view.metric) {
        (1, None) => {
            let group = match &figure {
                ComparedFigure::GroupCycles { threads, .. } => format!(
                    "; cycles/iter of {threads}: of the thread group the scenario's \
                         [[measured]] rows measure"
                ),
                ComparedFigure::Throughput => String::new(),
            };
            let _ = writeln!(
                out,
                "per case (per iteration: per measured iteration of all CPUs{group})"
            );
        }
        (1, Some(m)) => {
            let _ = writeln!(out, "{} per case", m.name);
        }
        (_, m) => {
            let name = m.map_or_else(|| figure.row_name(), |m| m.name.to_string());
            let own = sweep_baselines(machine_cases, &sweep.variants)
                .iter()
                .any(|b| b.is_some_and(|b| b > 0));
            let _ = writeln!(
                out,
                "{name} per case; %change: against the same case's `{base_name}`{}",
                if own {
                    " (%change vs V: against the same case's V)"
                } else {
                    ""
                }
            );
        }
    }
    out
}

/// Each case's comparison table: its variants beside its base (or each
/// beside its baseline).
fn case_comparisons(axes: &[String], machine_cases: &[&CaseResult]) -> String {
    let mut out = String::new();
    for case in machine_cases {
        let ok: Vec<&VariantResult> = case
            .results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .collect();
        if ok.is_empty() {
            continue;
        }
        let groups = comparison_groups(&ok);
        let label = case_label(axes, case);
        let _ = match change_note(&groups) {
            Some(note) => writeln!(out, "\ncase {label}: {note}\n"),
            None => writeln!(out, "\ncase {label}\n"),
        };
        out.push_str(&comparison_table(&ok));
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
        // Tiny but not zero: never `0.000`.
        assert_eq!(si(0.00021), "2.100e-4");
        assert_eq!(si(-0.00021), "-2.100e-4");
        assert_eq!(si(0.0005), "0.001");
        assert_eq!(si(0.0), "0.000");
    }

    #[test]
    fn consecutive_elements_of_an_array_read_as_one_range() {
        let names: Vec<String> = [
            "counters[0].value",
            "counters[1].value",
            "counters[2].value",
            "g.lock",
            "s[4].a",
            "s[5].b",
            "s[7].a",
            "s[8].a",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            index_ranges(&names),
            [
                "counters[0-2].value",
                "g.lock",
                "s[4].a",
                "s[5].b",
                "s[7-8].a"
            ]
        );
    }

    #[test]
    fn percent_change_reads_like_lkp() {
        assert_eq!(percent_change(15722.0, 4792.0), "-69.5%");
        // Not rounded to -100.0 %: something is left.
        assert_eq!(percent_change(10000.0, 1.0), "-99.99%");
        assert_eq!(percent_change(100.0, 0.0), "-100.0%");
        assert_eq!(percent_change(1000.0, 0.4), "-99.96%");
        assert_eq!(percent_change(100.0, 100.0), "0.0%");
        assert_eq!(percent_change(0.0, 3.0), "n/a");
        assert_eq!(signed_percent(-0.04), "0.0");
        assert_eq!(signed_percent(-99.99), "-99.99");
    }

    #[test]
    fn the_key_under_the_report_explains_every_traffic_column() {
        for heading in TRAFFIC_HEADER.split_whitespace() {
            assert!(
                TRAFFIC_KEY.contains(&format!("  {heading} "))
                    || TRAFFIC_KEY.contains(&format!(" {heading}: ")),
                "the key does not explain `{heading}`"
            );
        }
        assert!(TRAFFIC_KEY.lines().all(|l| l.chars().count() <= 100));
    }

    #[test]
    fn a_metric_is_found_by_its_column_or_by_its_row_in_the_report() {
        let by_column = metric_by_key("throughput_iterations_per_second").unwrap();
        assert_eq!(by_column.key, "throughput_iterations_per_second");
        assert_eq!(
            metric_by_key("throughput.total").unwrap().key,
            "throughput_iterations_per_second"
        );
        assert_eq!(
            metric_by_key("cycles_per_iteration.mean").unwrap().key,
            "cycles_per_iteration_mean"
        );
        assert_eq!(
            metric_by_key("cross_socket_per_iteration").unwrap().key,
            "cross_socket_misses_per_iteration"
        );
        let Err(unknown) = metric_by_key("cycles") else {
            panic!("`cycles` names no metric");
        };
        assert!(unknown.contains("no metric `cycles`"), "{unknown}");
    }
}
