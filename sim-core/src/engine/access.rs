//! Memory accesses: loads, stores and atomics sent to the coherence model
//! (a hit at once, a miss as a transaction at the line's home, or queued
//! until the line frees), the values they read and write, and the
//! adjacent-line prefetches their misses issue.

use super::speculate::Waiting;
use super::store_buffer::STORE_POST_CYCLES;
use super::*;
use crate::coherence::Route;

/// The value of the field of `size` bytes at `address`.
#[inline]
pub(super) fn read_value(bytes: &[u8], address: u64, size: u32) -> i64 {
    let start = address as usize;
    // The common widths as fixed-size copies (no call to memcpy).
    match size {
        8.. => i64::from_le_bytes(bytes[start..start + 8].try_into().unwrap()),
        4 => i32::from_le_bytes(bytes[start..start + 4].try_into().unwrap()) as i64,
        _ => {
            let n = size as usize;
            let mut raw = [0u8; 8];
            raw[..n].copy_from_slice(&bytes[start..start + n]);
            sign_extend(i64::from_le_bytes(raw), size)
        }
    }
}

/// Writes `value` into the field of `size` bytes at `address` (its low bytes).
#[inline]
pub(super) fn write_value(bytes: &mut [u8], address: u64, size: u32, value: i64) {
    let start = address as usize;
    match size {
        8.. => bytes[start..start + 8].copy_from_slice(&value.to_le_bytes()),
        4 => bytes[start..start + 4].copy_from_slice(&(value as i32).to_le_bytes()),
        _ => {
            let n = size as usize;
            bytes[start..start + n].copy_from_slice(&value.to_le_bytes()[..n]);
        }
    }
}

/// What an access's issue reads of its CPU: its Linux CPU, clock and core.
#[derive(Clone, Copy, Debug)]
pub(super) struct IssueAt {
    pub(super) cpu: LinuxCpu,
    pub(super) now: Cycle,
    pub(super) core: u32,
    /// `fetches_ahead` for the access queued at its line, when the caller
    /// knows it (a fused atomic's, tabled in its `AtomicHead`).
    pub(super) fetches_ahead_queued: Option<bool>,
    /// The access is a load (`PendingAccess::op` is `None`): given by the
    /// caller, for whom it is a constant (a fused atomic's issue), so that
    /// the issue's branches on it fold away there.
    pub(super) load: bool,
}

impl Simulation<'_> {
    pub(super) fn load(
        &mut self,
        i: CpuIndex,
        place_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        self.poll_load_starts(i, place_id)?;
        let place = &self.program.places[place_id as usize];
        let target = self.target_of(i, place_id, place, 0)?;
        let (address, size, field_id) = (target.address, target.size_bytes, target.field_id);
        let bits = place.bits;
        // Store-to-load forwarding: the newest buffered store to the same
        // bytes (the same bits of a bitfield's unit) answers; a partial
        // overlap waits for the buffer to drain.
        let mut forwarded = None;
        for entry in self.cpus[i].outstanding.store_buffer.iter().rev() {
            let overlaps = entry.address < address + size as u64
                && address < entry.address + entry.size_bytes as u64;
            if overlaps {
                if entry.address == address && entry.size_bytes == size && entry.bits == bits {
                    // The buffer holds what the field will hold: its width.
                    forwarded = Some(sign_extend(entry.value, size));
                } else {
                    // Retried whole once the buffer has drained.
                    self.block_on(i, Wait::BufferEmpty);
                    return Ok(());
                }
                break;
            }
        }
        if forwarded.is_none() && self.await_miss_buffer(i, self.memory.unit_of(address), probe) {
            // Every miss buffer taken: retried whole once one frees.
            return Ok(());
        }
        let place = &self.program.places[place_id as usize];
        self.drop_indices(i, place);
        let cpu_id = self.cpus[i].spec.cpu;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        if let Some(value) = forwarded {
            let cpu = &mut self.cpus[i];
            let issued = cpu.now;
            let l1 = Cycles::new(self.topology.spec.latency.l1_hit_cycles);
            cpu.now += l1;
            probe.on_access(&AccessEvent {
                cpu: cpu_id,
                issued,
                latency_cycles: l1.get(),
                kind: AccessKind::LoadForwarded,
                address,
                size_bytes: size,
                field_id,
                value,
                new_value: None,
                report: None,
                stall_cycles: 0,
                misses_in_flight: 0,
            });
            self.push(i, value)?;
            self.advance_pc(i);
            return Ok(());
        }
        let pending = PendingAccess {
            op: None,
            address,
            size_bytes: size,
            field_id,
            bits,
            operand: 0,
            expected: 0,
            discard: false,
        };
        self.issue(i, pending, Need::Read, Cycles::ZERO, probe)
    }

    /// A store: posted to the CPU's store buffer, or, into an empty buffer
    /// and a line the core holds writable, written at once. (The two ways
    /// share the place's resolution and the value, on every store's path:
    /// kept in one function.)
    pub(super) fn store(
        &mut self,
        i: CpuIndex,
        place_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let place = &self.program.places[place_id as usize];
        if self.cpus[i].outstanding.store_buffer.len() >= self.store_buffer_entries {
            // Full: retried whole once a drain frees an entry.
            self.block_on(i, Wait::BufferSlot);
            return Ok(());
        }
        if !self.cpus[i].outstanding.deferred.is_empty() {
            // A load is still queued at its home: the store's place in the
            // buffer's drain order waits for its arrival, not yet known
            // (`in_flight`).
            self.block_on(i, Wait::Served);
            return Ok(());
        }
        let target = self.target_of(i, place_id, place, 1)?;
        let bits = place.bits;
        let value = self.pop(i)?;
        // A bitfield holds the low bits of what is stored.
        let value = bits.map_or(value, |b| b.truncate(value));
        self.drop_indices(i, place);
        let (address, size, field_id) = (target.address, target.size_bytes, target.field_id);
        let unit = self.memory.unit_of(address);
        let cpu_id = self.cpus[i].spec.cpu;
        let now = self.cpus[i].now;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        // With a reorder window, the store waits in the buffer for the
        // loads before it still arriving (`in_flight`).
        let cpu = &self.cpus[i];
        let not_before = if cpu.window_entries > 0 {
            cpu.outstanding.speculating_until.max(now)
        } else {
            now
        };
        if self.cpus[i].outstanding.store_buffer.is_empty() && not_before == now {
            // An empty buffer drains at once into a line the core owns; the
            // store itself is posted as any other (the CPU goes on after
            // `STORE_POST_CYCLES`, the L1 write at `report.done` behind it).
            if let Some(report) =
                self.coherence
                    .try_hit(self.topology, now, cpu_id, unit, Need::Write, Cycles::ZERO)
            {
                self.poll_line_reached(unit, probe);
                if self.coherence.check_invariants {
                    self.coherence.check_unit(unit, report.done)?;
                }
                self.write_field_merging_bits(address, size, bits, value);
                let cpu = &mut self.cpus[i];
                cpu.now = now + STORE_POST_CYCLES;
                // The latest write, not the last store's: a store after
                // the SMT sibling's write takes longer than a later hit
                // (as the run-ahead policies keep it).
                let mut work = cpu.outstanding.edit();
                work.store_written_at = work.store_written_at.max(report.done);
                drop(work);
                probe.on_access(&AccessEvent {
                    cpu: cpu_id,
                    issued: report.issued,
                    latency_cycles: report.latency_cycles(),
                    kind: AccessKind::Store,
                    address,
                    size_bytes: size,
                    field_id,
                    value,
                    new_value: None,
                    report: Some(&report),
                    stall_cycles: 0,
                    misses_in_flight: 0,
                });
                self.advance_pc(i);
                return Ok(());
            }
        }
        let cpu = &mut self.cpus[i];
        cpu.outstanding
            .edit()
            .store_buffer
            .push_back(BufferedStore {
                address,
                size_bytes: size,
                value,
                bits,
                unit,
                field_id,
                not_before,
            });
        probe.on_store_posted(cpu_id, now, address, field_id, value);
        // Posting a store takes one cycle of the core.
        cpu.now += STORE_POST_CYCLES;
        let start_now = !cpu.draining;
        self.advance_pc(i);
        if start_now {
            self.start_drain(i, now, probe)?;
        }
        self.request_stores_ahead(i, now, probe)?;
        Ok(())
    }

    pub(super) fn atomic(
        &mut self,
        i: CpuIndex,
        op: AtomicOp,
        place_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        if !self.cpus[i].outstanding.store_buffer.is_empty() {
            // A locked instruction drains the store buffer first; its line
            // may be requested meanwhile (`in_flight`).
            let now = self.cpus[i].now;
            self.speculate_past_lock(i, now, Waiting::NotIssued, Vec::new(), 0, probe)?;
            self.block_on(i, Wait::BufferEmpty);
            return Ok(());
        }
        let place = &self.program.places[place_id as usize];
        let (operand, expected) = if op == AtomicOp::CmpXchg {
            let new = self.pop(i)?;
            let expected = self.pop(i)?;
            (new, expected)
        } else {
            (self.pop(i)?, 0)
        };
        // A place with one target for every CPU has no operands to drop.
        let target = match self.global_targets[place_id as usize] {
            Some(target) => target,
            None => {
                let target = self.address_of(i, place, 0)?;
                self.drop_indices(i, place);
                target
            }
        };
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        let pending = PendingAccess {
            op: Some(op),
            address: target.address,
            size_bytes: target.size_bytes,
            field_id: target.field_id,
            bits: None,
            operand,
            expected,
            discard: false,
        };
        let hold = Cycles::new(self.topology.spec.latency.locked_op_cycles);
        self.issue(i, pending, Need::Write, hold, probe)
    }

    /// Sends a load or atomic to the line: completes it now, or parks the
    /// CPU until the line's home serves it.
    #[inline]
    pub(super) fn issue(
        &mut self,
        i: CpuIndex,
        pending: PendingAccess,
        need: Need,
        hold: Cycles,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        self.issue_inline(i, pending, need, hold, probe)
    }

    /// [`Simulation::issue`]'s body: the CPU's number, clock and core
    /// looked up, then [`Simulation::issue_at`] (which a fused atomic's
    /// issue, `issue_head`, calls with them at hand).
    #[inline(always)]
    fn issue_inline(
        &mut self,
        i: CpuIndex,
        pending: PendingAccess,
        need: Need,
        hold: Cycles,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let cpu = &self.cpus[i];
        let at = IssueAt {
            cpu: cpu.spec.cpu,
            now: cpu.now,
            core: cpu.core,
            fetches_ahead_queued: None,
            load: pending.op.is_none(),
        };
        self.issue_at(i, at, pending, need, hold, probe)?;
        Ok(())
    }

    /// [`Simulation::issue_inline`] with what it reads of the CPU given by
    /// a caller that has it at hand (`issue_head`). Answers whether the CPU
    /// is parked at the line, waiting for the home to serve it (false
    /// where that is not known without looking at it again).
    ///
    /// Its four outcomes (a hit, a load sharing a queued load's request, a
    /// miss served at once, a miss queued at the home) stay in one body:
    /// it is inlined into the event loop, and named pieces, even inlined
    /// always, cost contended512 about 1 % more instructions per operation,
    /// measured.
    #[inline(always)]
    pub(super) fn issue_at(
        &mut self,
        i: CpuIndex,
        at: IssueAt,
        pending: PendingAccess,
        need: Need,
        hold: Cycles,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let unit = self.memory.unit_of(pending.address);
        let IssueAt {
            cpu: cpu_id,
            now,
            core,
            fetches_ahead_queued,
            load,
        } = at;
        debug_assert_eq!(load, pending.op.is_none());
        // A load to a line the core is still fetching shares that fetch
        // (`in_flight`).
        let arriving = load
            && self
                .coherence
                .copy_ready_at(core, unit)
                .is_some_and(|ready| ready > now);
        // A hit first, straight from the cache (what `request` tries first
        // too; a failed try changes nothing), without the queueing result.
        if let Some(report) = self
            .coherence
            .try_hit(self.topology, now, cpu_id, unit, need, hold)
        {
            if self.coherence.check_invariants {
                self.coherence.check_unit(unit, report.done)?;
            }
            if need == Need::Write {
                self.poll_line_reached(unit, probe);
            }
            if arriving {
                return self
                    .load_in_flight(i, &pending, &report, true, probe)
                    .map(|()| false);
            }
            if load && !self.cpus[i].outstanding.deferred.is_empty() {
                // Behind a load queued at its home (`in_flight`).
                return self.defer_hit(i, &pending, report).map(|()| false);
            }
            self.complete_access(i, &pending, &report, probe)?;
            if load {
                let value = self.cpus[i].stack.last().copied().unwrap_or_default();
                self.poll_load_hit(i, &pending, &report, value);
            }
            return Ok(false);
        }
        if load
            && self.cpus[i]
                .outstanding
                .deferred
                .iter()
                .any(|d| d.queued_for(unit))
        {
            // An older load of the CPU is queued for the line: this one
            // shares its request (`in_flight`).
            return self.queue_load(i, pending, unit, true).map(|()| false);
        }
        self.poll_line_reached(unit, probe);
        let misses = self.demand_misses(cpu_id, unit, need);
        let mut parked = false;
        let tag = RequestTag::new(i, RequestKind::Demand);
        let requested = match self.merge_with_queued_prefetch(i, now, unit, need, hold) {
            Some(merged) => Ok(merged),
            None => self.coherence.request_after_miss(
                self.topology,
                now,
                cpu_id,
                core,
                unit,
                need,
                hold,
                tag,
            ),
        };
        match requested {
            // Matched in place, as in `line_free`.
            Err(error) => return Err(error),
            Ok(Requested::Done(report)) => {
                // A load's miss does not hold the CPU (`in_flight`).
                let depth = self.cpus[i].stack.len();
                let completed = if load {
                    self.load_in_flight(i, &pending, &report, false, probe)
                } else {
                    self.complete_access(i, &pending, &report, probe)
                };
                let issued = report.issued;
                self.coherence.recycle(report);
                completed?;
                // A locked instruction's miss: what comes after it runs
                // ahead meanwhile (`speculate`).
                // (Past the `Pop` already where the completion dropped the
                // value at once, `complete_access`: the plain path pushes it,
                // and its run takes the `Pop` as its first window entry.)
                if !load {
                    let popped = u64::from(self.cpus[i].stack.len() == depth);
                    self.speculate_past_lock(
                        i,
                        issued,
                        Waiting::Issued,
                        Vec::new(),
                        popped,
                        probe,
                    )?;
                }
            }
            Ok(Requested::Queued {
                free_at,
                first_waiter,
            }) => {
                if first_waiter {
                    self.schedule_line_free(free_at, unit);
                }
                let cpu = &mut self.cpus[i];
                if load && cpu.window_entries > 0 {
                    // With a reorder window, a queued load does not hold the
                    // CPU either (`in_flight`).
                    self.queue_load(i, pending, unit, false)?;
                } else {
                    // Parked at the line (`block_on`, with the CPU at hand).
                    cpu.pending = Some(pending);
                    cpu.wait = Wait::Line;
                    cpu.wait_since = cpu.now;
                    parked = true;
                    let (window_entries, frame) = (cpu.window_entries, cpu.frame);
                    if !load
                        && window_entries != 0
                        && fetches_ahead_queued
                            .unwrap_or_else(|| self.fetches_ahead(frame, Waiting::Queued(0)))
                    {
                        // Its value predicted as the line's now.
                        let old = self.read_value(pending.address, pending.size_bytes);
                        let waiting = Waiting::Queued(old);
                        self.shadow_run(i, now, waiting, Vec::new(), 0, probe)?;
                        parked = false;
                    }
                }
            }
        }
        if misses {
            self.prefetch_buddy(i, unit, now, pending.field_id, probe)?;
        }
        Ok(parked)
    }

    /// The value part of a load or atomic, once the line is there.
    #[inline]
    pub(super) fn complete_access(
        &mut self,
        i: CpuIndex,
        p: &PendingAccess,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        self.complete_access_inline(i, p, Some(report), probe)?;
        Ok(())
    }

    /// [`Simulation::complete_access`], always inline: at the home's serve
    /// of a waiting CPU (`line_free`, every contended handover), where the
    /// report is `None`: the one the serve left in place
    /// (`Coherence::served`), read there. Returns the CPU's clock after the
    /// access, read while the CPU is at hand.
    #[inline(always)]
    fn complete_access_inline(
        &mut self,
        i: CpuIndex,
        p: &PendingAccess,
        report: Option<&AccessReport>,
        probe: &mut dyn Probe,
    ) -> Result<Cycle, SimError> {
        // (Borrowed from the coherence alone: the CPU, the bytes and the
        // sums below are other fields.)
        let report = match report {
            Some(report) => report,
            None => self.coherence.served(),
        };
        let old = self.read_value(p.address, p.size_bytes);
        let old = p.bits.map_or(old, |b| b.extract(old));
        let (kind, written) = match p.op {
            None => (AccessKind::Load, None),
            Some(op) => {
                let new = op.written(old, p.operand, p.expected);
                if let Some(n) = new {
                    write_value(&mut self.bytes, p.address, p.size_bytes, n);
                }
                (
                    AccessKind::Atomic(op),
                    new.map(|_| self.read_value(p.address, p.size_bytes)),
                )
            }
        };
        let l1 = Cycles::new(self.topology.spec.latency.l1_hit_cycles);
        let cpu = &mut self.cpus[i];
        cpu.now = cpu.now.max(report.done);
        if p.op.is_some() {
            // A locked instruction's own time after its data: on a hit the
            // rest of its figure, which holds the L1 access; after a
            // transfer all of it (`LatencySpec::locked_op_after_hit_cycles`).
            let latency = &self.topology.spec.latency;
            cpu.now += Cycles::new(if report.route == Route::Hit {
                latency.locked_op_after_hit_cycles()
            } else {
                latency.locked_op_cycles
            });
        }
        // Cycles beyond an L1 hit that the CPU waited for the line.
        let stall_cycles = ((report.done - report.issued) - l1).get();
        if p.op.is_some() && self.summed.atomics {
            count_shortcut!(self.shortcut_entries, 9);
            let (cpu_id, field_id, address) = (cpu.spec.cpu, p.field_id, p.address);
            self.summed
                .add_atomic(cpu_id, field_id, address, report, stall_cycles, probe);
        } else {
            if p.op.is_none() {
                // A load sees the CPU's atomics before it (`summed`).
                self.summed.report(cpu.spec.cpu, probe);
            }
            // The probe reads the changes: they were listed (only summed
            // atomics go without, `Coherence::atomic_changes_unlisted`).
            debug_assert!(
                report.need == Need::Read || report.others.len() as u32 == report.invalidations
            );
            probe.on_access(&AccessEvent {
                cpu: cpu.spec.cpu,
                issued: report.issued,
                latency_cycles: report.latency_cycles(),
                kind,
                address: p.address,
                size_bytes: p.size_bytes,
                field_id: p.field_id,
                value: old,
                new_value: written,
                report: Some(report),
                stall_cycles,
                misses_in_flight: 0,
            });
        }
        // A fused atomic whose value the next operation drops: past that
        // `Pop` at once, where the run-ahead would run it first thing when
        // the CPU resumes (nothing of the CPU changes before then: no load
        // arriving, no scheduler to switch it, the run's end not reached).
        debug_assert_eq!(
            self.discard_past_pop,
            self.run_local_ops && !self.sched.active
        );
        if p.discard
            && self.discard_past_pop
            && (cpu.outstanding.none_at(cpu.now)
                || (cpu.outstanding.late.is_empty()
                    && cpu.outstanding.speculating_until <= cpu.now))
            && cpu.now < self.time_limit
        {
            cpu.frame.pc += 2;
            count_shortcut!(self.shortcut_entries, 5);
            return Ok(cpu.now);
        }
        let now = cpu.now;
        self.push(i, old)?;
        self.advance_pc(i);
        Ok(now)
    }

    /// A line's transaction has ended: serve the next waiting request.
    ///
    /// Returns the served CPU's resume, when it is due before every queued
    /// event (the winner of a contended line, usually): the caller takes it
    /// as the next event without queueing it. The order is the queue's:
    /// queued at that point, the resume would have come after every event
    /// already queued at its cycle and before the line's next free. (The
    /// serve of each kind of waiter stays in this body, the hottest event's,
    /// for the reason `issue_at` gives.)
    pub(super) fn line_free(
        &mut self,
        unit: usize,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<Option<(Cycle, CpuIndex)>, SimError> {
        self.poll_line_reached(unit, probe);
        let (arbitration, zone) = (&mut self.arbitration, &mut self.arbitration_zone);
        let mut pick = |n: usize| {
            let bound = n as u64;
            if zone.0 != bound {
                *zone = (bound, acceptance_zone(bound));
            }
            uniform_below_in_zone(arbitration, bound, zone.1) as usize
        };
        // The report stays where the serve wrote it (`served`): a waiting
        // CPU's access reads it there; the rarer kinds take it out.
        let mut resume = None;
        match self
            .coherence
            .serve_next_in_place(self.topology, at, unit, &mut pick)
        {
            Err(error) => return Err(error),
            Ok(None) => {}
            Ok(Some(waiter)) => {
                let cpu = waiter.tag.cpu();
                let i = cpu;
                match waiter.tag.kind() {
                    RequestKind::Prefetch => {
                        let queued = self
                            .queued_prefetches
                            .iter()
                            .position(|q| q.unit == unit && q.cpu == cpu);
                        if let Some(k) = queued {
                            let queued = self.queued_prefetches.swap_remove(k);
                            let report = self.coherence.take_served();
                            self.report_prefetch(i, queued.field_id, queued.kind(), &report, probe);
                            self.coherence.recycle(report);
                        }
                    }
                    RequestKind::Drain => {
                        let report = self.coherence.take_served();
                        self.finish_drain(i, &report, probe);
                        self.coherence.recycle(report);
                    }
                    RequestKind::Demand => {
                        // The CPU looked up once for both questions.
                        let cpu = &mut self.cpus[i];
                        if cpu.outstanding.deferred.iter().any(|d| d.queued_for(unit)) {
                            // A queued load that did not hold its CPU: the
                            // CPU goes on from here only if it waits for it.
                            let report = self.coherence.take_served();
                            resume = self
                                .serve_deferred(i, unit, at, &report, probe)
                                .map(|now| (now, i));
                            self.coherence.recycle(report);
                        } else if let Some(p) = cpu.pending.take() {
                            // The waiting load or atomic completed; the CPU
                            // goes on (its resume is scheduled below).
                            cpu.wait = Wait::None;
                            let now = self.complete_access_inline(i, &p, None, probe)?;
                            resume = Some((now, i));
                        }
                    }
                }
            }
        }
        // The line's next free, its key computed once for the comparison
        // below and the queue.
        let line_free_at = self.coherence.busy_until_if_waiting(unit).map(|busy| {
            let free = busy.max(at);
            (
                free,
                event_key(self.tie_seed, EventKind::LineFree, free, unit),
            )
        });
        // The resume goes first when its key is before every other event's,
        // the line's next free (about to be queued) included.
        let direct = resume.filter(|&(now, i)| {
            if !self.options.direct_resume {
                return false;
            }
            // The turn rule, against the queue and the line's next free. At
            // the free's own cycle the resume goes first: a resume's class
            // comes before a line's free in every key (`event_class`), so
            // the keys' hashes need not be computed to compare them.
            debug_assert!(line_free_at.is_none_or(|(free, free_key)| {
                resume_position(self.tie_seed, free, i) < (free, free_key)
            }));
            !self.must_yield(now, i) && line_free_at.is_none_or(|(free, _)| now <= free)
        });
        if direct.is_some() {
            count_shortcut!(self.shortcut_entries, 6);
        }
        if direct.is_none() {
            if let Some((now, i)) = resume {
                self.schedule(now, EventKind::Resume, i);
            }
        }
        if let Some((free, free_key)) = line_free_at {
            self.queue.push(free.get(), free_key);
        }
        Ok(direct)
    }

    /// CPU `i`'s demand request for `unit` at `now`, where a prefetch of
    /// its own (the run ahead's, or the adjacent-line prefetcher's) still
    /// waits at the home asking for the same `need`: it takes that request
    /// over instead of queueing a second one
    /// (`Coherence::merge_with_queued_prefetch`), and the prefetch is no
    /// longer reported as one. None otherwise (the usual case: one test of
    /// an empty list).
    #[inline(always)]
    pub(super) fn merge_with_queued_prefetch(
        &mut self,
        i: CpuIndex,
        now: Cycle,
        unit: usize,
        need: Need,
        hold: Cycles,
    ) -> Option<Requested> {
        if self.queued_prefetches.is_empty() {
            return None;
        }
        self.merge_with_queued_prefetch_cold(i, now, unit, need, hold, RequestKind::Demand)
    }

    /// The request of kind `kind` (a demand access, or a store's drain
    /// taking over its line's RFO made ahead) takes over CPU `i`'s queued
    /// prefetch of `unit`, and the prefetch's miss buffer passes to it.
    #[inline(never)]
    pub(super) fn merge_with_queued_prefetch_cold(
        &mut self,
        i: CpuIndex,
        now: Cycle,
        unit: usize,
        need: Need,
        hold: Cycles,
        kind: RequestKind,
    ) -> Option<Requested> {
        let k = self
            .queued_prefetches
            .iter()
            .position(|q| q.unit == unit && q.cpu == i)?;
        let cpu = self.cpus[i].spec.cpu;
        let tag = RequestTag::new(i, kind);
        let merged = self
            .coherence
            .merge_with_queued_prefetch(now, cpu, unit, need, hold, tag)?;
        let taken_over = self.queued_prefetches.swap_remove(k);
        // The run ahead's request held a miss buffer of its own; the
        // access's miss holds it now (counted among its misses in flight).
        if let Some(until) = taken_over.run_ahead_until {
            let ahead = &mut self.cpus[i].ahead_in_flight;
            if let Some(k) = ahead.iter().position(|&ready| ready == until) {
                ahead.swap_remove(k);
            }
        }
        Some(merged)
    }

    /// Whether an access by `cpu` to `unit` is a demand miss that the
    /// adjacent-line prefetcher follows: the prefetcher is on and the core's
    /// cache cannot answer it, a load on a line it holds no copy of, or a
    /// write (RFO) on a line it does not hold writable: an RFO for a Shared
    /// copy misses too, since the request for ownership leaves the core.
    #[inline(always)]
    pub(super) fn demand_misses(&self, cpu: LinuxCpu, unit: usize, need: Need) -> bool {
        if !self.prefetch_buddies {
            return false;
        }
        let state = self.coherence.state(self.topology.core_of(cpu), unit);
        match need {
            Need::Read => state == LineState::Invalid,
            Need::Write => !matches!(state, LineState::Modified | LineState::Exclusive),
        }
    }

    /// The adjacent-line (L2 spatial) prefetcher: CPU `i`'s demand miss on
    /// `unit` at `at` also reads the buddy line, `unit ^ 1`, the other half
    /// of its 128-byte-aligned pair, for the same core. The CPU does not wait
    /// for it. It is dropped when the core already holds the buddy or has a
    /// request waiting for it; otherwise it is a read ordered at the buddy's
    /// home like any other (it downgrades an owner, and queues behind and
    /// ahead of others), reported to the probe as a prefetch attributed to
    /// `field_id`, the field whose miss issued it.
    pub(super) fn prefetch_buddy(
        &mut self,
        i: CpuIndex,
        unit: usize,
        at: Cycle,
        field_id: u32,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let buddy = unit ^ 1;
        if buddy >= self.coherence.unit_count() {
            return Ok(());
        }
        self.poll_line_reached(buddy, probe);
        let cpu_id = self.cpus[i].spec.cpu;
        match self.coherence.prefetch(
            self.topology,
            at,
            cpu_id,
            buddy,
            RequestTag::new(i, RequestKind::Prefetch),
        )? {
            None => {}
            Some(Requested::Done(report)) => {
                self.report_prefetch(i, field_id, AccessKind::Prefetch, &report, probe);
                self.coherence.recycle(report);
            }
            Some(Requested::Queued {
                free_at,
                first_waiter,
            }) => {
                self.queued_prefetches.push(QueuedPrefetch {
                    unit: buddy,
                    cpu: i,
                    field_id,
                    run_ahead_until: None,
                    for_store: false,
                });
                if first_waiter {
                    self.schedule_line_free(free_at, buddy);
                }
            }
        }
        Ok(())
    }

    /// A line requested ahead for CPU `i` (`kind`: the run ahead's,
    /// `RunAhead`, or the store buffer's, `StoreRfoAhead`) as its home took
    /// the request: it holds a miss buffer (`ahead_in_flight`) until the
    /// line arrives, which is now for a request served at once (reported),
    /// and after the line frees, at the earliest, for a queued one (queued
    /// as such, the line's free scheduled for its first waiter).
    #[inline]
    pub(super) fn hold_requested_ahead(
        &mut self,
        i: CpuIndex,
        unit: usize,
        field_id: u32,
        requested: Requested,
        kind: AccessKind,
        probe: &mut dyn Probe,
    ) {
        debug_assert!(matches!(
            kind,
            AccessKind::RunAhead | AccessKind::StoreRfoAhead
        ));
        match requested {
            Requested::Done(report) => {
                self.cpus[i].ahead_in_flight.push(report.done);
                self.report_prefetch(i, field_id, kind, &report, probe);
                self.coherence.recycle(report);
            }
            Requested::Queued {
                free_at,
                first_waiter,
            } => {
                self.cpus[i].ahead_in_flight.push(free_at);
                self.queued_prefetches.push(QueuedPrefetch {
                    unit,
                    cpu: i,
                    field_id,
                    run_ahead_until: Some(free_at),
                    for_store: kind == AccessKind::StoreRfoAhead,
                });
                if first_waiter {
                    self.schedule_line_free(free_at, unit);
                }
            }
        }
    }

    /// Reports a prefetch of `kind` (the adjacent-line prefetcher's, the
    /// run ahead's or the store buffer's) to the probe.
    pub(super) fn report_prefetch(
        &mut self,
        i: CpuIndex,
        field_id: u32,
        kind: AccessKind,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) {
        let line_bytes = self.memory.unit_bytes;
        probe.on_access(&AccessEvent {
            cpu: self.cpus[i].spec.cpu,
            issued: report.issued,
            latency_cycles: report.latency_cycles(),
            kind,
            address: report.unit as u64 * line_bytes as u64,
            size_bytes: line_bytes,
            field_id,
            value: 0,
            new_value: None,
            report: Some(report),
            stall_cycles: 0,
            misses_in_flight: 0,
        });
    }

    #[inline]
    pub(super) fn read_value(&self, address: u64, size: u32) -> i64 {
        read_value(&self.bytes, address, size)
    }

    /// Writes a whole field, or only a bitfield's bits of its unit (read,
    /// changed and written in the same instant, so the neighbours' bits
    /// stay as they are).
    #[inline]
    pub(super) fn write_field_merging_bits(
        &mut self,
        address: u64,
        size: u32,
        bits: Option<BitRange>,
        value: i64,
    ) {
        match bits {
            None => self.write_value(address, size, value),
            Some(b) => {
                let unit = self.read_value(address, size);
                self.write_value(address, size, b.insert(unit, value));
            }
        }
    }

    #[inline]
    pub(super) fn write_value(&mut self, address: u64, size: u32, value: i64) {
        write_value(&mut self.bytes, address, size, value)
    }
}
