//! Host resources shared by the runs of one process: how many host
//! threads run them ([`MAX_JOBS`]), and how much memory the runs in flight
//! may take together ([`MemoryBudget`]).
//!
//! `host_memory_bytes` bounds the process, not each run: the scenario's
//! documents take their share at load, and runs start in parallel only
//! while their estimates fit, together, in what is left. A run waits for
//! others to finish rather than push the process past the bound; it never
//! waits forever, since the builder refuses a run that does not fit alone.

use std::sync::{Condvar, Mutex, PoisonError};

/// The most host threads `--jobs` may ask for. Runs are independent and
/// each runs on one thread, so more threads than the host has cores only
/// add stacks and contention; 256 is beyond any host this runs on today
/// and keeps a typo (`--jobs 100000`) from spawning thousands of threads.
pub const MAX_JOBS: usize = 256;

/// Memory for runs in flight, taken with [`MemoryBudget::admit`] and given
/// back when the [`Admitted`] guard drops.
#[derive(Debug)]
pub struct MemoryBudget {
    limit_bytes: u64,
    in_use_bytes: Mutex<u64>,
    freed: Condvar,
}

/// A run's share of a [`MemoryBudget`], held while it runs.
#[derive(Debug)]
pub struct Admitted<'a> {
    budget: &'a MemoryBudget,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(limit_bytes: u64) -> MemoryBudget {
        MemoryBudget {
            limit_bytes,
            in_use_bytes: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Waits until `bytes` fit beside the runs already admitted, then holds
    /// them until the guard drops. A request larger than the whole budget
    /// is admitted once nothing else holds any (so it runs alone rather
    /// than never).
    pub fn admit(&self, bytes: u64) -> Admitted<'_> {
        let mut in_use = self
            .in_use_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *in_use > 0 && in_use.saturating_add(bytes) > self.limit_bytes {
            in_use = self
                .freed
                .wait(in_use)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *in_use = in_use.saturating_add(bytes);
        Admitted {
            budget: self,
            bytes,
        }
    }

    /// Bytes held by the runs admitted now.
    pub fn in_use_bytes(&self) -> u64 {
        *self
            .in_use_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut in_use = self
            .budget
            .in_use_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *in_use = in_use.saturating_sub(self.bytes);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_admitted_only_while_they_fit_together() {
        let budget = MemoryBudget::new(100);
        let a = budget.admit(60);
        assert_eq!(budget.in_use_bytes(), 60);
        // A second run of 60 would pass the bound: it waits on another
        // thread until the first is done, and never holds both at once.
        std::thread::scope(|s| {
            let waiting = s.spawn(|| {
                let _b = budget.admit(60);
                budget.in_use_bytes()
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(budget.in_use_bytes(), 60);
            drop(a);
            assert_eq!(waiting.join().unwrap(), 60);
        });
        assert_eq!(budget.in_use_bytes(), 0);
        // Larger than the whole budget: admitted alone.
        let big = budget.admit(500);
        assert_eq!(budget.in_use_bytes(), 500);
        drop(big);
    }
}
