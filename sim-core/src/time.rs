//! Simulated time: an integer count of core cycles at the machine's clock.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in core cycles since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycle(pub u64);

impl Cycle {
    pub const ZERO: Cycle = Cycle(0);
    pub const MAX: Cycle = Cycle(u64::MAX);

    pub fn get(self) -> u64 {
        self.0
    }
}

impl Add<u64> for Cycle {
    type Output = Cycle;
    fn add(self, cycles: u64) -> Cycle {
        Cycle(self.0.saturating_add(cycles))
    }
}

impl AddAssign<u64> for Cycle {
    fn add_assign(&mut self, cycles: u64) {
        self.0 = self.0.saturating_add(cycles);
    }
}

impl Sub for Cycle {
    type Output = u64;
    fn sub(self, earlier: Cycle) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
