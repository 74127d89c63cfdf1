//! Atomics summed for the probe (`EngineOptions::summed_atomics`): for a
//! probe that takes them so (`Probe::summed_atomics`, the statistics), a
//! completed atomic adds its report's counts to its Linux CPU's sums
//! instead of building an `AccessEvent` and calling `on_access`; the sums
//! go to the probe (`Probe::on_atomics`) where its contract says they must:
//! before that CPU's next load is reported, before a spin-wait's summed
//! polls, before a warm-up iteration of it ends, when it makes an atomic
//! on another field or address, and at the end of the run. A contended
//! counter's CPU thus reports once per run instead of once per atomic.
//!
//! The sums are kept per Linux CPU, not per thread: threads sharing a CPU
//! share the probe's view of it (its last load, whether it measures), so
//! one thread's load or warm-up end must see the other's atomics first.

use crate::coherence::AccessReport;
use crate::cpu::LinuxCpu;
use crate::probe::{AtomicSums, Probe};

/// Per Linux CPU, its atomics not yet reported (all on one field and
/// address); empty unless the run sums them.
#[derive(Default)]
pub(in crate::engine) struct SummedAtomics {
    /// The switch is on and the probe takes summed atomics.
    pub(in crate::engine) on: bool,
    /// Indexed by `LinuxCpu::slot`; a `count` of 0 holds nothing.
    pending: Vec<AtomicSums>,
}

impl SummedAtomics {
    /// Sums for the CPUs of a machine of `cpu_count` CPUs, when `on`.
    pub(in crate::engine) fn new(on: bool, cpu_count: usize) -> SummedAtomics {
        SummedAtomics {
            on,
            pending: if on {
                vec![AtomicSums::default(); cpu_count]
            } else {
                Vec::new()
            },
        }
    }

    /// Adds CPU `cpu`'s atomic on field `field_id` at `address`, with its
    /// report and the cycles the CPU waited for it; a CPU's sums on another
    /// field or address are reported first. Only with `on`.
    #[inline]
    pub(in crate::engine) fn add(
        &mut self,
        cpu: LinuxCpu,
        field_id: u32,
        address: u64,
        report: &AccessReport,
        stall_cycles: u64,
        probe: &mut dyn Probe,
    ) {
        let sums = &mut self.pending[cpu.slot()];
        if (sums.field_id, sums.address) != (field_id, address) {
            if sums.count > 0 {
                report_sums(cpu, sums, probe);
            }
            sums.field_id = field_id;
            sums.address = address;
        }
        sums.add(report, stall_cycles);
    }

    /// Reports CPU `cpu`'s sums, if it has any: before anything of that
    /// CPU that must see its atomics made (see `Probe::summed_atomics`).
    #[inline]
    pub(in crate::engine) fn report(&mut self, cpu: LinuxCpu, probe: &mut dyn Probe) {
        if let Some(sums) = self.pending.get_mut(cpu.slot()) {
            if sums.count > 0 {
                report_sums(cpu, sums, probe);
            }
        }
    }

    /// Reports every CPU's sums (the end of the run).
    pub(in crate::engine) fn report_all(&mut self, probe: &mut dyn Probe) {
        for (slot, sums) in self.pending.iter_mut().enumerate() {
            if sums.count > 0 {
                report_sums(LinuxCpu::new(slot as u32), sums, probe);
            }
        }
    }
}

/// Hands `sums` to the probe and empties them (keeping their field and
/// address, most likely the CPU's next atomic's too).
#[cold]
#[inline(never)]
fn report_sums(cpu: LinuxCpu, sums: &mut AtomicSums, probe: &mut dyn Probe) {
    probe.on_atomics(cpu, sums);
    *sums = AtomicSums {
        field_id: sums.field_id,
        address: sums.address,
        ..AtomicSums::default()
    };
}
