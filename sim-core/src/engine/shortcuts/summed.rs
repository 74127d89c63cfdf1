//! Reports summed for the probe: atomics (`EngineOptions::summed_atomics`)
//! and measured iterations (`EngineOptions::batched_iterations`). For a
//! probe that takes them so (`Probe::summed_atomics`,
//! `Probe::batched_iterations`: the statistics), a completed atomic adds
//! its report's counts to its Linux CPU's sums instead of building an
//! `AccessEvent` and calling `on_access`, and a measured iteration's end
//! adds its length to the CPU's batch instead of calling `on_iteration`.
//! Both go to the probe (`Probe::on_atomics`, `Probe::on_iterations`)
//! where its contract says they must: before that CPU's next load is
//! reported, before a spin-wait's summed polls, before a warm-up iteration
//! of it ends, and at the end of the run; the sums also when the CPU makes
//! an atomic on another field or address, a batch when it is full. A
//! contended counter's CPU thus reports its atomics once per run and its
//! iterations once per batch, instead of both once per iteration.
//!
//! They are kept per Linux CPU, not per thread: threads sharing a CPU
//! share the probe's view of it (its last load, whether it measures), so
//! one thread's load or warm-up end must see the other's reports first.

use crate::coherence::AccessReport;
use crate::cpu::LinuxCpu;
use crate::probe::{AtomicSums, Probe};

/// Measured iterations a CPU's batch holds before it goes to the probe.
const BATCH_ITERATIONS: usize = 15;

/// Per Linux CPU, its reports not yet made; empty unless the run sums
/// some.
#[derive(Default)]
pub(in crate::engine) struct Summed {
    /// The atomics' switch is on and the probe takes them summed.
    pub(in crate::engine) atomics: bool,
    /// The iterations' switch is on and the probe takes them batched.
    pub(in crate::engine) iterations: bool,
    /// Indexed by `LinuxCpu::slot`.
    pending: Vec<Pending>,
}

/// One Linux CPU's reports not yet made.
#[derive(Clone, Copy, Default)]
struct Pending {
    /// Its atomics on one field and address (a `count` of 0 holds none).
    atomics: AtomicSums,
    /// Its measured iterations' cycles, the first `iterations` of them.
    iterations: usize,
    cycles: [u64; BATCH_ITERATIONS],
}

impl Summed {
    /// Sums for the CPUs of a machine of `cpu_count` CPUs: of atomics
    /// where `atomics`, of iterations where `iterations`.
    pub(in crate::engine) fn new(atomics: bool, iterations: bool, cpu_count: usize) -> Summed {
        Summed {
            atomics,
            iterations,
            pending: if atomics || iterations {
                vec![Pending::default(); cpu_count]
            } else {
                Vec::new()
            },
        }
    }

    /// Adds CPU `cpu`'s atomic on field `field_id` at `address`, with its
    /// report and the cycles the CPU waited for it; a CPU's sums on another
    /// field or address are reported first. Only with `atomics`.
    #[inline]
    pub(in crate::engine) fn add_atomic(
        &mut self,
        cpu: LinuxCpu,
        field_id: u32,
        address: u64,
        report: &AccessReport,
        stall_cycles: u64,
        probe: &mut dyn Probe,
    ) {
        let sums = &mut self.pending[cpu.slot()].atomics;
        if (sums.field_id, sums.address) != (field_id, address) {
            if sums.count > 0 {
                report_atomics(cpu, sums, probe);
            }
            sums.field_id = field_id;
            sums.address = address;
        }
        sums.add(report, stall_cycles);
    }

    /// Adds CPU `cpu`'s measured iteration of `cycles`; a full batch goes
    /// to the probe. Only with `iterations`. Always inline: it runs at
    /// every measured iteration's end.
    #[inline(always)]
    pub(in crate::engine) fn add_iteration(
        &mut self,
        cpu: LinuxCpu,
        cycles: u64,
        probe: &mut dyn Probe,
    ) {
        let pending = &mut self.pending[cpu.slot()];
        let mut held = pending.iterations;
        // `>=`, so that below `held` is known to index the batch (no
        // second comparison for the bounds).
        if held >= BATCH_ITERATIONS {
            report_iterations(cpu, pending, probe);
            held = 0;
        }
        pending.cycles[held] = cycles;
        pending.iterations = held + 1;
    }

    /// Reports what CPU `cpu` holds back, if anything: before anything of
    /// that CPU that must see it (see `Probe::summed_atomics`).
    #[inline]
    pub(in crate::engine) fn report(&mut self, cpu: LinuxCpu, probe: &mut dyn Probe) {
        if let Some(pending) = self.pending.get_mut(cpu.slot()) {
            if pending.atomics.count > 0 {
                report_atomics(cpu, &mut pending.atomics, probe);
            }
            if pending.iterations > 0 {
                report_iterations(cpu, pending, probe);
            }
        }
    }

    /// Reports what every CPU holds back (the end of the run).
    pub(in crate::engine) fn report_all(&mut self, probe: &mut dyn Probe) {
        for slot in 0..self.pending.len() {
            self.report(LinuxCpu::new(slot as u32), probe);
        }
    }
}

/// Hands `sums` to the probe and empties them (keeping their field and
/// address, most likely the CPU's next atomic's too).
#[cold]
#[inline(never)]
fn report_atomics(cpu: LinuxCpu, sums: &mut AtomicSums, probe: &mut dyn Probe) {
    probe.on_atomics(cpu, sums);
    *sums = AtomicSums {
        field_id: sums.field_id,
        address: sums.address,
        ..AtomicSums::default()
    };
}

/// Hands `pending`'s iterations to the probe and empties the batch.
#[inline(never)]
fn report_iterations(cpu: LinuxCpu, pending: &mut Pending, probe: &mut dyn Probe) {
    probe.on_iterations(cpu, &pending.cycles[..pending.iterations]);
    pending.iterations = 0;
}
