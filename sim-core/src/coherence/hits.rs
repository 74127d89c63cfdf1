//! Hits: an access the requester's own cache answers, with no message
//! to the home (a plain hit, a private line's hits summed, a waiter's
//! re-access once served).

use super::*;

impl Coherence {
    /// The fast path: `Some(done)` when `cpu` can complete the access from
    /// its own core's cache without a transaction, changing nothing else.
    /// `hold_cycles` is the execution time of an atomic (0 for loads and
    /// stores); the line stays locked for it. While requests are queued
    /// for the line the core's copy still answers, until the snoop of the
    /// first one the home serves could reach the core: the line's
    /// `busy_until` (when the home serves it) plus the leg from the home
    /// to the core. An access that ends by then hits (a retry right after
    /// a failed cmpxchg, a load right after an atomic), without delaying
    /// the serve; the transaction served then completes no earlier than
    /// such hits end, since their data leaves with the line. (Before, any
    /// queued request refused every hit, so the owner's next access, in
    /// the same cycle, queued behind every waiter.) Such a hit's report
    /// says so (`AccessReport::hit_while_requests_wait`), for the trace.
    /// Always inline: it is every contended access's first question.
    #[inline(always)]
    pub fn try_hit(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
    ) -> Option<AccessReport> {
        #[cfg(any(test, feature = "planted-bugs"))]
        if let Some(bug) = planted::active_at(planted::Hook::Hit) {
            return planted::try_hit(self, bug, topology, now, cpu, unit, need, hold_cycles);
        }
        let u = &self.units[unit];
        if !u.waiting.is_empty() {
            // A request is queued for the line: the home serves it when the
            // line frees, and its snoop then takes its leg to reach this
            // core. Until then the core's copy answers; an access that
            // would end later (an atomic's hold included) queues too.
            if !self.hits_until_snoop {
                return None;
            }
            let place = topology.place_of_core(topology.core_of(cpu));
            let snoop_at = u.busy_until.max(now) + topology.hop_place_to_node(place, u.home_node);
            return self.try_hit_unqueued(topology, now, cpu, unit, need, hold_cycles, snoop_at);
        }
        self.try_hit_unqueued(topology, now, cpu, unit, need, hold_cycles, Cycle::MAX)
    }

    /// [`Coherence::try_hit`] once nothing is queued for the line
    /// (`snoop_at` is `Cycle::MAX`), or before the snoop of a queued
    /// request can reach the core (`snoop_at`, the earliest it can): the
    /// access must end by then, and it does not keep the home from serving
    /// the queue (the line's `busy_until` stays).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn try_hit_unqueued(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
        snoop_at: Cycle,
    ) -> Option<AccessReport> {
        let core = topology.core_of(cpu);
        let thread = topology.thread_of(cpu) as u8;
        let l = &topology.spec.latency;
        let u = &mut self.units[unit];
        let index = u.holders.binary_search_by_key(&core, |h| h.core).ok()?;
        let holder = &mut u.holders[index];
        if need == Need::Write && !holder.state.is_writable() {
            return None;
        }
        let before = holder.state;
        let start = now.max(holder.ready_at).max(u.locked_until);
        let sibling_wrote = holder.last_writer_thread.is_some_and(|t| t != thread);
        // A line in the L2 only (`capacity`) costs the L2's hit, and moves
        // into the L1D.
        let in_l1 = holder.in_l1;
        holder.in_l1 = true;
        holder.last_use = holder.last_use.max(now);
        let level_cycles = if in_l1 {
            l.l1_hit_cycles
        } else {
            self.l2_hit_cycles
        };
        let access_cycles = Cycles::new(if sibling_wrote {
            level_cycles + l.smt_transfer_cycles
        } else {
            level_cycles
        });
        let done = start + access_cycles;
        // A locked instruction: on the core's own line its figure holds
        // the L1 access (`LatencySpec::locked_op_after_hit_cycles`);
        // after the sibling's write, all of it follows the transfer.
        let after_access = if sibling_wrote {
            hold_cycles
        } else {
            Cycles::new(hold_cycles.get().saturating_sub(l.l1_hit_cycles))
        };
        let queued = snoop_at != Cycle::MAX;
        if queued && done + after_access > snoop_at {
            return None;
        }
        if need == Need::Write {
            holder.state = LineState::Modified;
            holder.last_writer_thread = Some(thread);
            u.version += 1;
            holder.version = u.version;
        } else if sibling_wrote {
            holder.last_writer_thread = None;
        }
        if hold_cycles > Cycles::ZERO {
            u.locked_until = done + after_access;
            if !queued {
                u.busy_until = u.busy_until.max(u.locked_until);
            }
        }
        if queued {
            u.queued_hits_done = u.queued_hits_done.max(done + after_access);
        }
        let after = holder.state;
        if !in_l1 {
            self.note_l2_hit(core, unit, now);
        }
        Some(AccessReport {
            unit,
            need,
            issued: now,
            started: start,
            done,
            route: if sibling_wrote {
                Route::SmtSibling
            } else {
                Route::Hit
            },
            supplier: None,
            requester_before: before,
            requester_after: after,
            others: Vec::new(),
            invalidations: 0,
            hitm: false,
            cross_socket: false,
            hit_while_requests_wait: queued,
        })
    }

    /// The plain hit of `try_hit` (the core holds the line as `need` wants,
    /// nothing is queued for it, no atomic hold, not last written by the SMT
    /// sibling), with the same state changes and timing, returning only when
    /// the data is there. The engine's run-ahead path for a CPU's private
    /// lines sums such hits instead of reporting each; every other case is
    /// `Ok(None)`, changes nothing, and goes through `try_hit`. With the
    /// invariants on, the line is checked after the hit, as `request` does.
    #[inline]
    pub fn plain_hit(
        &mut self,
        now: Cycle,
        core: u32,
        thread: u8,
        unit: usize,
        need: Need,
        l1_hit_cycles: Cycles,
    ) -> Result<Option<Cycle>, SimError> {
        let Some(done) = self.plain_hit_unchecked(now, core, thread, unit, need, l1_hit_cycles)
        else {
            return Ok(None);
        };
        if self.check_invariants {
            self.check_unit(unit, done)?;
        }
        Ok(Some(done))
    }

    #[inline]
    pub(super) fn plain_hit_unchecked(
        &mut self,
        now: Cycle,
        core: u32,
        thread: u8,
        unit: usize,
        need: Need,
        l1_hit_cycles: Cycles,
    ) -> Option<Cycle> {
        if self.any_pressured && self.pressured(core) {
            return None;
        }
        let u = &mut self.units[unit];
        if !u.waiting.is_empty() {
            return None;
        }
        let holder = match u.holders.as_mut_slice() {
            // A private line has one holder: no search.
            [only] if only.core == core => only,
            holders => {
                let index = holders.binary_search_by_key(&core, |h| h.core).ok()?;
                &mut holders[index]
            }
        };
        if holder.last_writer_thread.is_some_and(|t| t != thread) || !holder.in_l1 {
            return None;
        }
        if need == Need::Write {
            if !holder.state.is_writable() {
                return None;
            }
            holder.state = LineState::Modified;
            holder.last_writer_thread = Some(thread);
            u.version += 1;
            holder.version = u.version;
        }
        // (The core's own CPU on its private line: its clock only moves on.)
        holder.last_use = now;
        Some(now.max(holder.ready_at).max(u.locked_until) + l1_hit_cycles)
    }

    /// What `plain_hit` would allow on `unit` for `core`'s `thread` right
    /// now, without changing anything: `None` where it returns `Ok(None)`
    /// for reads and writes alike. Plain hits change neither the holder's
    /// `ready_at` nor the line's `locked_until`, nor what this answers, so
    /// the engine's fused run-ahead loop asks once per line and run, and
    /// gives every later hit `max(now, floor) + L1`, as `plain_hit` does.
    #[inline]
    pub fn private_line(&self, core: u32, thread: u8, unit: usize) -> Option<PrivateLine> {
        if self.counts_per_set(core) {
            // Its lines' order of use may choose a victim: each hit goes
            // through `plain_hit` or `try_hit`, which stamp it.
            return None;
        }
        let u = &self.units[unit];
        if !u.waiting.is_empty() {
            return None;
        }
        let index = match u.holders.as_slice() {
            [only] if only.core == core => 0,
            holders => holders.binary_search_by_key(&core, |h| h.core).ok()?,
        };
        let holder = &u.holders[index];
        if holder.last_writer_thread.is_some_and(|t| t != thread) || !holder.in_l1 {
            return None;
        }
        Some(PrivateLine {
            holder: index as u32,
            floor: holder.ready_at.max(u.locked_until),
            writable: holder.state.is_writable(),
        })
    }

    /// The state changes of `writes` plain write hits by `thread` on a line
    /// that [`Coherence::private_line`] found writable (at `holder`), made
    /// at once: the copy Modified and last written by `thread`, and the
    /// line's write count (and the copy's) `writes` higher.
    #[inline]
    pub fn apply_private_writes(
        &mut self,
        unit: usize,
        line: PrivateLine,
        thread: u8,
        writes: u64,
    ) {
        let u = &mut self.units[unit];
        let holder = &mut u.holders[line.holder as usize];
        holder.state = LineState::Modified;
        holder.last_writer_thread = Some(thread);
        u.version += writes;
        holder.version = u.version;
    }

    /// A queued request whose core has meanwhile obtained what it needs
    /// (its SMT sibling's transaction brought the line) completes as a hit.
    pub(super) fn try_hit_for_waiter(
        &mut self,
        topology: &Topology,
        now: Cycle,
        waiter: &Waiter,
        unit: usize,
    ) -> Option<AccessReport> {
        let saved = std::mem::take(&mut self.units[unit].waiting);
        let hit = self.try_hit(
            topology,
            now,
            waiter.cpu,
            unit,
            waiter.need,
            waiter.hold_cycles,
        );
        self.units[unit].waiting = saved;
        hit.map(|mut r| {
            r.issued = waiter.issued;
            r
        })
    }
}
