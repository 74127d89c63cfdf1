//! Progress of a long command on stderr, never on stdout: a progress bar on
//! a terminal (redrawn on a steady tick, so the elapsed time moves while a
//! long run is still going), a plain line at a fixed interval otherwise,
//! nothing with `--quiet`. It reads the host clock, which only the display
//! uses: what it counts are finished runs, and results never depend on it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time between two plain progress lines off a terminal.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// Overrides [`LINE_INTERVAL`] (in milliseconds), so that tests can see the
/// lines of a run that takes less than a second.
const LINE_INTERVAL_VARIABLE: &str = "BOUNCE_PROGRESS_INTERVAL_MS";

/// How often the bar is redrawn on a terminal.
const BAR_TICK: Duration = Duration::from_millis(200);

pub struct Progress {
    mode: Mode,
}

enum Mode {
    Quiet,
    Bar(ProgressBar),
    Lines {
        counter: Arc<Counter>,
        stop: Sender<()>,
        printer: Option<JoinHandle<()>>,
    },
}

/// What the line printer reads: how many of how many `unit`s are done.
struct Counter {
    /// `runs`, `machines`, ...: what is counted, plural.
    unit: &'static str,
    /// None when not known in advance.
    total: Option<usize>,
    done: AtomicUsize,
    start: Instant,
}

impl Progress {
    /// Progress over `total` things of `unit` (plural: `runs`, `machines`).
    pub fn new(total: usize, unit: &'static str, quiet: bool) -> Progress {
        if total == 0 {
            return Progress { mode: Mode::Quiet };
        }
        Progress::counting(Some(total), unit, quiet)
    }

    /// Progress over things of `unit` whose number is not known in advance
    /// (an optimizer's search): a spinner with the count and the rate, no
    /// estimate.
    pub fn open_ended(unit: &'static str, quiet: bool) -> Progress {
        Progress::counting(None, unit, quiet)
    }

    fn counting(total: Option<usize>, unit: &'static str, quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(
                total.map(|t| t as u64),
                ProgressDrawTarget::stderr(),
            );
            let template = if total.is_some() {
                format!(
                    "{{spinner}} {{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit}  {{rate}}  {{left}}"
                )
            } else {
                format!("{{spinner}} {{elapsed_precise}} {{pos}} {unit} done  {{rate}}")
            };
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .with_key(
                        "rate",
                        move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ =
                                write!(w, "{}", rate(state.pos() as usize, state.elapsed(), unit));
                        },
                    )
                    .with_key(
                        "left",
                        |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(
                                w,
                                "{}",
                                left(
                                    state.pos() as usize,
                                    state.len().unwrap_or(0) as usize,
                                    state.elapsed()
                                )
                            );
                        },
                    )
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(BAR_TICK);
            Mode::Bar(bar)
        } else {
            let counter = Arc::new(Counter {
                unit,
                total,
                done: AtomicUsize::new(0),
                start: Instant::now(),
            });
            let (stop, stopped) = channel::<()>();
            let interval = std::env::var(LINE_INTERVAL_VARIABLE)
                .ok()
                .and_then(|ms| ms.parse::<u64>().ok())
                .filter(|&ms| ms > 0)
                .map_or(LINE_INTERVAL, Duration::from_millis);
            let reader = Arc::clone(&counter);
            // A line every `interval` whether or not a run ended meanwhile,
            // until `finish` (or the drop) says stop.
            let printer = std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                        eprintln!("bounce: {}", reader.line());
                    }
                })
                .ok();
            Mode::Lines {
                counter,
                stop,
                printer,
            }
        };
        Progress { mode }
    }

    /// One more run (or machine, ...) finished; callable from any thread.
    pub fn done_one(&self) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.inc(1),
            Mode::Lines { counter, .. } => {
                counter.done.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Clears the bar, or stops the lines; after lines, says how long the
    /// whole took.
    pub fn finish(mut self) {
        self.stop(true);
    }

    fn stop(&mut self, finished: bool) {
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.finish_and_clear(),
            Mode::Lines {
                counter,
                stop,
                printer,
            } => {
                let _ = stop.send(());
                if let Some(printer) = printer.take() {
                    let _ = printer.join();
                    if finished && counter.start.elapsed() >= LINE_INTERVAL {
                        eprintln!(
                            "bounce: {} {} done in {}",
                            counter.done.load(Ordering::Acquire),
                            counter.unit,
                            duration(counter.start.elapsed()),
                        );
                    }
                }
            }
        }
        self.mode = Mode::Quiet;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop(false);
    }
}

impl Counter {
    /// `3/20 runs done, 1 min 4 s, 4.2 s per run, about 2 min 11 s left`.
    fn line(&self) -> String {
        let done = self.done.load(Ordering::Acquire);
        let elapsed = self.start.elapsed();
        let count = match self.total {
            Some(total) => format!("{done}/{total}"),
            None => done.to_string(),
        };
        let mut line = format!("{count} {} done, {} elapsed", self.unit, duration(elapsed));
        let rate = rate(done, elapsed, self.unit);
        if !rate.is_empty() {
            line.push_str(&format!(", {rate}"));
        }
        if let Some(total) = self.total {
            line.push_str(&format!(", {}", left(done, total, elapsed)));
        }
        line
    }
}

/// `12.5 runs/s` when more than one finishes a second, else `4.2 s per
/// run` (never `0.0 runs/s`); empty before the first.
fn rate(done: usize, elapsed: Duration, unit: &str) -> String {
    if done == 0 {
        return String::new();
    }
    let seconds = elapsed.as_secs_f64();
    let per_second = done as f64 / seconds.max(1e-9);
    if per_second >= 1.0 {
        format!("{per_second:.1} {unit}/s")
    } else {
        let singular = unit.strip_suffix('s').unwrap_or(unit);
        format!("{:.1} s per {singular}", seconds / done as f64)
    }
}

/// `about 2 min 11 s left` from the rate so far; `estimating` before the
/// first finishes.
fn left(done: usize, total: usize, elapsed: Duration) -> String {
    if done == 0 {
        return "estimating time left".to_string();
    }
    let per_one = elapsed.as_secs_f64() / done as f64;
    let left = Duration::from_secs_f64(per_one * total.saturating_sub(done) as f64);
    format!("about {} left", duration(left))
}

/// `42 s`, `3 min 20 s`, `2 h 5 min`.
fn duration(elapsed: Duration) -> String {
    let s = elapsed.as_secs_f64().round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, s % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_never_zero_per_second() {
        assert_eq!(rate(0, Duration::from_secs(3), "runs"), "");
        assert_eq!(rate(30, Duration::from_secs(2), "runs"), "15.0 runs/s");
        assert_eq!(rate(1, Duration::from_secs(25), "runs"), "25.0 s per run");
        assert_eq!(
            rate(2, Duration::from_secs(3), "machines"),
            "1.5 s per machine"
        );
    }

    #[test]
    fn time_left_comes_from_the_rate_so_far() {
        assert_eq!(left(0, 10, Duration::from_secs(9)), "estimating time left");
        assert_eq!(left(2, 10, Duration::from_secs(30)), "about 2 min 0 s left");
        assert_eq!(left(10, 10, Duration::from_secs(30)), "about 0 s left");
        assert_eq!(duration(Duration::from_secs(7530)), "2 h 5 min");
    }
}
