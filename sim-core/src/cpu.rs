//! The two ways a CPU is named: by its Linux number and by the engine's
//! index.
//!
//! A [`LinuxCpu`] is what a user writes in a scenario's CPU list, what
//! [`crate::topology::Topology`] maps to cores, SMT threads, nodes and
//! sockets, and what traces and statistics print. A [`CpuIndex`] is the
//! engine's dense index of its CPUs, one per thread of the run in
//! `SimConfig::threads` order (`Simulation::cpus`, event targets, request
//! tags, the scheduler's run queues). Several threads may share one Linux
//! CPU (`engine::sched`), so the two differ even when every thread has a
//! CPU of its own. The public boundary (`ThreadSpec::cpu`, the probe's
//! `cpu`, `Topology`'s methods, the coherence requests, `CpuOutcome::cpu`)
//! takes a `LinuxCpu`; the engine's per-CPU code takes a `CpuIndex`.
//! Both print as their plain number (width and fill flags honoured), so
//! reports read the same as when they were integers.

use std::fmt;

/// A Linux CPU number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct LinuxCpu(u32);

/// The engine's index of one of its CPUs (one per thread of the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct CpuIndex(u32);

impl LinuxCpu {
    #[inline]
    pub const fn new(number: u32) -> LinuxCpu {
        LinuxCpu(number)
    }

    /// The number, as the topology and the probes take it.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The number as an index into a per-Linux-CPU table.
    #[inline]
    pub const fn slot(self) -> usize {
        self.0 as usize
    }
}

impl CpuIndex {
    /// The CPU at `index` of the engine's CPUs (below `limits`' CPU
    /// count, so it fits in 32 bits).
    #[inline]
    pub const fn new(index: usize) -> CpuIndex {
        CpuIndex(index as u32)
    }

    /// The index into the engine's CPUs.
    #[inline]
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

impl From<LinuxCpu> for u32 {
    #[inline]
    fn from(cpu: LinuxCpu) -> u32 {
        cpu.0
    }
}

impl fmt::Display for LinuxCpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for CpuIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
