//! What a comparison of two runs compares, one rule for every place that
//! prints or draws one: the run report's table, a sweep's pivot table,
//! `comparison.svg` and a sweep's grouped `comparison.svg`.
//!
//! When the scenario's `[[measured]]` rows measure one thread group
//! (`threads = "caller"`), the runs compared carry that group's figures
//! ([`crate::run::results::GroupIterations`], a record's
//! `measured_threads`), and the comparison is over it: where the other
//! CPUs idle or do other work, figures over every CPU hide what the
//! scenario measures (the memcg drains read 0.0 % over every CPU and
//! +538.8 % over the caller). Otherwise it is the throughput over every CPU.

use crate::report::output::Record;
use crate::run::results::VariantResult;

/// The figures of one run a comparison reads: a run's result (the text
/// reports) or its record in `results.json` (the charts).
pub trait ComparedRun {
    /// Iterations per simulated second, every CPU together.
    fn throughput_iterations_per_second(&self) -> f64;
    /// The thread group the scenario's `[[measured]]` rows measure, when
    /// they name one: its name, its CPUs as a Linux cpulist, and the mean
    /// cycles of one of its iterations.
    fn measured_group(&self) -> Option<(&str, String, f64)>;
}

impl ComparedRun for VariantResult {
    fn throughput_iterations_per_second(&self) -> f64 {
        self.throughput_total()
    }
    fn measured_group(&self) -> Option<(&str, String, f64)> {
        self.measured_threads.as_ref().map(|g| {
            let mut cpus = g.cpus.clone();
            cpus.sort_unstable();
            (
                g.threads.as_str(),
                crate::format::schema::format_cpulist(&cpus),
                g.cycles_per_iteration_mean(),
            )
        })
    }
}

impl ComparedRun for Record {
    fn throughput_iterations_per_second(&self) -> f64 {
        self.throughput_iterations_per_second
    }
    fn measured_group(&self) -> Option<(&str, String, f64)> {
        self.measured_threads.as_ref().map(|g| {
            (
                g.threads.as_str(),
                g.cpu_list.clone(),
                g.cycles_per_iteration_mean,
            )
        })
    }
}

/// The figure a set of comparisons compares ([`compared_figure`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ComparedFigure {
    /// The mean cycles per iteration of the thread group `threads` (CPUs
    /// `cpu_list`): lower is better.
    GroupCycles { threads: String, cpu_list: String },
    /// Iterations per simulated second over every CPU: higher is better.
    Throughput,
}

/// The figure to compare over `runs` (every run of the comparisons, the
/// baselines included): the measured thread group's cycles per iteration
/// when every one of them carries the same group, else the throughput over
/// every CPU. One figure for a whole table or chart, so its changes read
/// alike.
pub fn compared_figure<'a, R: ComparedRun + 'a>(
    runs: impl IntoIterator<Item = &'a R>,
) -> ComparedFigure {
    let mut group: Option<(String, String)> = None;
    let mut any = false;
    for r in runs {
        any = true;
        match (r.measured_group(), &group) {
            (None, _) => return ComparedFigure::Throughput,
            (Some((threads, cpus, _)), None) => group = Some((threads.to_string(), cpus)),
            (Some((threads, _, _)), Some((g, _))) if threads != g => {
                return ComparedFigure::Throughput
            }
            _ => {}
        }
    }
    match group {
        Some((threads, cpu_list)) if any => ComparedFigure::GroupCycles { threads, cpu_list },
        _ => ComparedFigure::Throughput,
    }
}

impl ComparedFigure {
    /// The figure of `run` (`None` when it does not carry the group).
    pub fn value<R: ComparedRun>(&self, run: &R) -> Option<f64> {
        match self {
            ComparedFigure::Throughput => Some(run.throughput_iterations_per_second()),
            ComparedFigure::GroupCycles { threads, .. } => run
                .measured_group()
                .filter(|(t, _, _)| t == threads)
                .map(|(_, _, cycles)| cycles),
        }
    }

    /// `variant`'s change against `base` in percent (`None` when either has
    /// no figure, or the base's is 0).
    pub fn change<R: ComparedRun>(&self, base: &R, variant: &R) -> Option<f64> {
        let (b, v) = (self.value(base)?, self.value(variant)?);
        (b > 0.0).then(|| (v / b - 1.0) * 100.0)
    }

    /// What the figure is, for a heading or an axis: `throughput` or
    /// ``cycles per iteration of `caller` (CPU 8, as measured)``.
    pub fn describe(&self) -> String {
        match self {
            ComparedFigure::Throughput => "throughput".to_string(),
            ComparedFigure::GroupCycles { threads, cpu_list } => format!(
                "cycles per iteration of `{threads}` ({} {cpu_list}, as measured)",
                if cpu_list.contains([',', '-']) {
                    "CPUs"
                } else {
                    "CPU"
                }
            ),
        }
    }

    /// The row name the run report gives the figure (a row of its table):
    /// `throughput.total (iterations/s)` or
    /// ``cycles_per_iteration.mean of `caller` ``.
    pub fn row_name(&self) -> String {
        match self {
            ComparedFigure::Throughput => "throughput.total (iterations/s)".to_string(),
            ComparedFigure::GroupCycles { threads, .. } => {
                format!("cycles_per_iteration.mean of `{threads}`")
            }
        }
    }
}
