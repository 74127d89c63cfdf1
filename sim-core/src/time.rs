//! Simulated time: an integer count of core cycles at the machine's clock.
//!
//! Two types keep instants and durations apart: a [`Cycle`] is a point in
//! simulated time (a CPU's clock, an arrival, when a line is ready), a
//! [`Cycles`] is a length of time (a latency, a wait, a stall, a budget).
//! The arithmetic says what it means: `Cycle + Cycles -> Cycle`,
//! `Cycle - Cycle -> Cycles`, `Cycles + Cycles -> Cycles`; there is no
//! `Cycle + u64` and no `Cycle + Cycle`. Both are `repr(transparent)` over
//! `u64`, so they cost nothing beside a plain integer.
//!
//! All arithmetic saturates: a clock that would pass `u64::MAX` stays there
//! (no run gets near it; the cycle budget stops a run long before).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// A point in simulated time, in core cycles since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Cycle(u64);

/// A length of simulated time, in core cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Cycles(u64);

impl Cycle {
    pub const ZERO: Cycle = Cycle(0);
    pub const MAX: Cycle = Cycle(u64::MAX);

    /// The instant `cycle` core cycles after the start of the run.
    #[inline]
    pub const fn new(cycle: u64) -> Cycle {
        Cycle(cycle)
    }

    /// Core cycles since the start of the run.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The time from the start of the run to this instant.
    #[inline]
    pub const fn since_start(self) -> Cycles {
        Cycles(self.0)
    }
}

impl Cycles {
    pub const ZERO: Cycles = Cycles(0);
    pub const MAX: Cycles = Cycles(u64::MAX);

    /// A duration of `cycles` core cycles.
    #[inline]
    pub const fn new(cycles: u64) -> Cycles {
        Cycles(cycles)
    }

    /// The duration in core cycles.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl Add<Cycles> for Cycle {
    type Output = Cycle;
    #[inline]
    fn add(self, duration: Cycles) -> Cycle {
        Cycle(self.0.saturating_add(duration.0))
    }
}

impl AddAssign<Cycles> for Cycle {
    #[inline]
    fn add_assign(&mut self, duration: Cycles) {
        self.0 = self.0.saturating_add(duration.0);
    }
}

/// The time from `earlier` to `self`, zero if `earlier` is later.
impl Sub for Cycle {
    type Output = Cycles;
    #[inline]
    fn sub(self, earlier: Cycle) -> Cycles {
        Cycles(self.0.saturating_sub(earlier.0))
    }
}

impl Add for Cycles {
    type Output = Cycles;
    #[inline]
    fn add(self, other: Cycles) -> Cycles {
        Cycles(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Cycles {
    #[inline]
    fn add_assign(&mut self, other: Cycles) {
        self.0 = self.0.saturating_add(other.0);
    }
}

/// The difference of two durations, zero if `other` is longer.
impl Sub for Cycles {
    type Output = Cycles;
    #[inline]
    fn sub(self, other: Cycles) -> Cycles {
        Cycles(self.0.saturating_sub(other.0))
    }
}

/// `times` repetitions of a duration.
impl Mul<u64> for Cycles {
    type Output = Cycles;
    #[inline]
    fn mul(self, times: u64) -> Cycles {
        Cycles(self.0.saturating_mul(times))
    }
}

/// How many times `period` fits in a duration (rounded down).
impl Div for Cycles {
    type Output = u64;
    #[inline]
    fn div(self, period: Cycles) -> u64 {
        self.0 / period.0
    }
}

impl Sum for Cycles {
    fn sum<I: Iterator<Item = Cycles>>(iter: I) -> Cycles {
        iter.fold(Cycles::ZERO, Add::add)
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_durations_combine_as_time_does() {
        let start = Cycle(100);
        let later = start + Cycles::new(30);
        assert_eq!(later, Cycle(130));
        assert_eq!(later - start, Cycles::new(30));
        assert_eq!(
            start - later,
            Cycles::ZERO,
            "an earlier minus a later instant saturates"
        );
        assert_eq!(Cycles::new(4) * 3 + Cycles::new(1), Cycles::new(13));
        assert_eq!(Cycle::MAX + Cycles::new(1), Cycle::MAX);
    }
}
