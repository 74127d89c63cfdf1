//! The x86-TSO store buffer: stores drain in order, one line transaction
//! at a time (into a line the core holds, one commit a cycle, the L1 write
//! behind it), and a CPU waiting for an entry or for the buffer to empty
//! resumes when a drain completes.

use super::*;
use crate::coherence::Route;

/// What a store costs the core: it retires into the store buffer and the
/// CPU goes on the next cycle, whether or not the buffer writes the line at
/// once (x86-TSO: stores post). LLVM's scheduling models give a store this
/// latency: X86ScheduleZnver1.td defines `WriteStore` on an AGU with
/// `WriteRes`'s default latency, 1 cycle (TargetSchedule.td).
pub(in crate::engine) const STORE_POST_CYCLES: Cycles = Cycles::new(1);

/// How long a buffered store to a line the core holds keeps its entry: the
/// buffer commits one store per cycle into the L1, pipelined, so the next
/// entry goes on a cycle later while this one's write is still reaching the
/// line (an L1 access). Intel publishes a limit of one store per cycle to
/// the L1 on Skylake, and random stores within the L1 measure almost
/// exactly 1 cycle each (T. Downs, "Random writes and microcode, oh my",
/// 2019); AMD's Zen 1 has one store pipe. What waits for the buffer to
/// drain waits for that write too (`Cpu::store_written_at`, as for a store
/// the empty buffer took at once).
const STORE_COMMIT_CYCLES: Cycles = Cycles::new(1);

impl Simulation<'_> {
    pub(super) fn start_drain(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let Some(entry) = self.cpus[i].outstanding.store_buffer.front().copied() else {
            return Ok(());
        };
        let cpu_id = self.cpus[i].spec.cpu;
        self.cpus[i].draining = true;
        if entry.not_before > at {
            // Older loads are still arriving: the drain starts when the last
            // of them has (`in_flight`), at the DrainDone event due then.
            self.cpus[i].drain_deferred = true;
            self.schedule(entry.not_before, EventKind::DrainDone, i);
            return Ok(());
        }
        self.poll_line_reached(entry.unit, probe);
        let misses = self.demand_misses(cpu_id, entry.unit, Need::Write);
        let requested = match self.drain_takes_over_rfo_ahead(i, at, entry.unit) {
            Some(merged) => merged,
            None => self.coherence.request(
                self.topology,
                at,
                cpu_id,
                entry.unit,
                Need::Write,
                Cycles::ZERO,
                RequestTag::new(i, RequestKind::Drain),
            )?,
        };
        match requested {
            Requested::Done(report) => {
                self.finish_drain(i, &report, probe);
                self.coherence.recycle(report);
            }
            Requested::Queued {
                free_at,
                first_waiter,
            } => {
                if first_waiter {
                    self.schedule_line_free(free_at, entry.unit);
                }
            }
        }
        if misses {
            self.prefetch_buddy(i, entry.unit, at, entry.field_id, probe)?;
        }
        Ok(())
    }

    pub(super) fn finish_drain(
        &mut self,
        i: CpuIndex,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) {
        let Some(entry) = self.cpus[i].outstanding.store_buffer.front().copied() else {
            return;
        };
        // The store takes its place in coherence order when the home orders it.
        self.write_field_merging_bits(entry.address, entry.size_bytes, entry.bits, entry.value);
        probe.on_access(&AccessEvent {
            cpu: self.cpus[i].spec.cpu,
            issued: report.issued,
            latency_cycles: report.latency_cycles(),
            kind: AccessKind::StoreDrain,
            address: entry.address,
            size_bytes: entry.size_bytes,
            field_id: entry.field_id,
            value: entry.value,
            new_value: None,
            report: Some(report),
            stall_cycles: 0,
            misses_in_flight: 0,
        });
        // A hit's entry leaves after its commit cycle (`STORE_COMMIT_CYCLES`);
        // an entry that needed a transaction (or the SMT sibling's line)
        // leaves once its line is here and written.
        let leaves_at = if report.route == Route::Hit {
            let mut work = self.cpus[i].outstanding.edit();
            work.store_written_at = work.store_written_at.max(report.done);
            report.started + STORE_COMMIT_CYCLES
        } else {
            report.done
        };
        self.schedule(leaves_at, EventKind::DrainDone, i);
    }

    pub(super) fn drain_done(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let cpu = &mut self.cpus[i];
        if cpu.drain_deferred {
            cpu.drain_deferred = false;
            return self.start_drain(i, at, probe);
        }
        let drained = cpu.outstanding.edit().store_buffer.pop_front();
        cpu.draining = false;
        let resume = match cpu.wait {
            Wait::BufferEmpty => cpu.outstanding.store_buffer.is_empty(),
            Wait::BufferSlot => true,
            Wait::None
            | Wait::Line
            | Wait::Spin
            | Wait::Queued
            | Wait::Futex
            | Wait::Asleep
            | Wait::Waking
            | Wait::Served
            | Wait::Turn => false,
        };
        if !cpu.outstanding.store_buffer.is_empty() {
            self.start_drain(i, at, probe)?;
            // An entry has moved up: one more may be within reach.
            self.request_stores_ahead(i, at, probe)?;
        }
        if resume {
            let cpu = &mut self.cpus[i];
            let since = cpu.wait_since;
            cpu.wait = Wait::None;
            cpu.now = cpu.now.max(at);
            if let Some(entry) = drained {
                probe.on_store_buffer_wait(
                    cpu.spec.cpu,
                    since,
                    cpu.now,
                    entry.address,
                    entry.field_id,
                );
            }
            if !cpu.finished {
                self.run_cpu(i, probe)?;
            }
        }
        Ok(())
    }

    /// The RFO prefetch: the buffer requests, for ownership, the lines of
    /// its first `store_rfo_ahead_entries` entries not yet draining, as far
    /// as the core's free miss buffers go, without waiting for them. Called
    /// when a store enters the buffer and when an entry leaves it. What it
    /// changes is only when a line is here: the stores are still written
    /// one at a time from the head, in program order, when each drains
    /// (`start_drain`), so no store becomes visible early and x86-TSO holds.
    /// A line requested early is an ordinary request at its home: it may
    /// wait there behind other cores, and another core may take it away
    /// again before its store's turn, when the drain requests it anew.
    #[inline(always)]
    pub(super) fn request_stores_ahead(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        // Off on every preset: the store's path pays only this test.
        if self.store_rfo_ahead_entries == 0 {
            return Ok(());
        }
        self.request_stores_ahead_cold(i, at, probe)
    }

    #[inline(never)]
    fn request_stores_ahead_cold(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let cpu = &mut self.cpus[i];
        let taken = cpu.miss_buffers_taken(at);
        // The head's own request is out once its drain has started, and
        // holds a buffer until its line is here.
        let head_requested = cpu.draining && !cpu.drain_deferred;
        let core = cpu.core;
        let head_missing = head_requested
            && cpu.outstanding.store_buffer.front().is_some_and(|head| {
                !matches!(
                    self.coherence.state(core, head.unit),
                    LineState::Modified | LineState::Exclusive
                ) || self
                    .coherence
                    .copy_ready_at(core, head.unit)
                    .is_some_and(|ready| ready > at)
            });
        let mut misses_left = self
            .outstanding_misses
            .saturating_sub(taken + usize::from(head_missing));
        let first = usize::from(head_requested);
        let end = cpu
            .outstanding
            .store_buffer
            .len()
            .min(first + self.store_rfo_ahead_entries);
        let cpu_id = cpu.spec.cpu;
        for k in first..end {
            if misses_left == 0 {
                break;
            }
            let entry = self.cpus[i].outstanding.store_buffer[k];
            if matches!(
                self.coherence.state(core, entry.unit),
                LineState::Modified | LineState::Exclusive
            ) {
                continue;
            }
            self.poll_line_reached(entry.unit, probe);
            // None: the core holds the line writable or already waits for it.
            let Some(requested) = self.coherence.prefetch_for(
                self.topology,
                at,
                cpu_id,
                entry.unit,
                Need::Write,
                RequestTag::new(i, RequestKind::Prefetch),
            )?
            else {
                continue;
            };
            misses_left -= 1;
            self.hold_requested_ahead(
                i,
                entry.unit,
                entry.field_id,
                requested,
                AccessKind::StoreRfoAhead,
                probe,
            );
        }
        Ok(())
    }

    /// A drain whose line the core already waits for at its home (a
    /// request made ahead, still queued) takes that request over as its
    /// own, as a demand access does (`merge_with_queued_prefetch`), so the
    /// drain is served when it is; its miss buffer passes to the drain.
    #[inline(always)]
    fn drain_takes_over_rfo_ahead(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        unit: usize,
    ) -> Option<Requested> {
        if self.queued_prefetches.is_empty() {
            return None;
        }
        self.merge_with_queued_prefetch_cold(
            i,
            at,
            unit,
            Need::Write,
            Cycles::ZERO,
            RequestKind::Drain,
        )
    }

    pub(super) fn block_on(&mut self, i: CpuIndex, wait: Wait) {
        let cpu = &mut self.cpus[i];
        cpu.wait = wait;
        cpu.wait_since = cpu.now;
    }
}
