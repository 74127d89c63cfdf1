//! Progress of a run on stderr, never on stdout: a progress bar on a
//! terminal, a plain line at most every few seconds otherwise, nothing with
//! `--quiet`. It reads the host clock, which only the display uses.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Least time between two plain progress lines.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

pub struct Progress {
    mode: Mode,
}

enum Mode {
    Quiet,
    Bar(ProgressBar),
    Lines {
        total: usize,
        done: AtomicUsize,
        start: Instant,
        /// When the last line was printed (or the start), and whether any was.
        last: Mutex<(Instant, bool)>,
    },
}

impl Progress {
    /// Progress over `total` cases.
    pub fn new(total: usize, quiet: bool) -> Progress {
        let mode = if quiet || total == 0 {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} cases  {rate}  {eta} left",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key(
                    "rate",
                    |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.1} cases/s", state.per_sec());
                    },
                )
                .progress_chars("=> "),
            );
            Mode::Bar(bar)
        } else {
            let now = Instant::now();
            Mode::Lines {
                total,
                done: AtomicUsize::new(0),
                start: now,
                last: Mutex::new((now, false)),
            }
        };
        Progress { mode }
    }

    /// One more case finished (callable from any thread).
    pub fn case_done(&self) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.inc(1),
            Mode::Lines {
                total,
                done,
                start,
                last,
            } => {
                let done = done.fetch_add(1, Ordering::AcqRel) + 1;
                let now = Instant::now();
                let Ok(mut last) = last.lock() else {
                    return;
                };
                if now.duration_since(last.0) < LINE_INTERVAL || done == *total {
                    return;
                }
                *last = (now, true);
                let elapsed = now.duration_since(*start).as_secs_f64();
                let rate = done as f64 / elapsed.max(1e-9);
                let left = (*total - done) as f64 / rate.max(1e-9);
                eprintln!(
                    "bounce: {done}/{total} cases done, {rate:.2} cases/s, about {} left",
                    duration(left)
                );
            }
        }
    }

    /// Clears the bar; after plain lines, says how long the whole took.
    pub fn finish(&self) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.finish_and_clear(),
            Mode::Lines {
                total, start, last, ..
            } => {
                if last.lock().map(|l| l.1).unwrap_or(false) {
                    eprintln!(
                        "bounce: {total}/{total} cases done in {}",
                        duration(start.elapsed().as_secs_f64())
                    );
                }
            }
        }
    }
}

/// `42 s`, `3 min 20 s`, `2 h 5 min`.
fn duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, s % 3600 / 60)
    }
}
