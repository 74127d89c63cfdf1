//! Transactions at a line's home: requests served at once or queued, the
//! waiter the home serves when the line frees, the state changes and the
//! cost of each route (`TargetReach`: the legs to the directory and to
//! every target), and the adjacent-line prefetch.

use super::*;

/// What a transaction's targets (the supplier of data and the copies to
/// invalidate) mean for its cost, gathered as they are met (their order
/// does not matter).
pub(super) struct TargetReach {
    requester: CorePlace,
    /// There is at least one target.
    any: bool,
    /// Every target shares the requester's L3 domain (true without targets).
    all_in_l3: bool,
    /// Some target is on another socket than the requester.
    cross_socket: bool,
    /// max over targets of [leg(directory, target) + leg(target, requester)].
    slowest: Cycles,
    /// max over targets of [the target's data arrival + its leg back to the
    /// requester]: a cache answers no earlier than its own copy arrived (a
    /// pipelined read's copy may still be on its way), and its answer then
    /// still travels back.
    answered_floor: Cycle,
}

impl TargetReach {
    #[inline]
    pub(super) fn new(requester: CorePlace) -> TargetReach {
        TargetReach {
            requester,
            any: false,
            all_in_l3: true,
            cross_socket: false,
            slowest: Cycles::ZERO,
            answered_floor: Cycle::ZERO,
        }
    }

    #[inline]
    pub(super) fn add(
        &mut self,
        topology: &Topology,
        directory_node: u32,
        target_core: u32,
        target_ready_at: Cycle,
    ) {
        let target = topology.place_of_core(target_core);
        self.any = true;
        self.all_in_l3 &= target.l3 == self.requester.l3;
        self.cross_socket |= target.socket != self.requester.socket;
        let back = topology.hop_between_places(target, self.requester);
        self.slowest = self
            .slowest
            .max(topology.hop_place_to_node(target, directory_node) + back);
        self.answered_floor = self
            .answered_floor
            .max(target_ready_at + answer_leg(topology, target, self.requester));
    }

    /// A broadcast invalidation: every L3 domain of the machine is a target
    /// (one core of each stands for the domain; an L3 domain's cores are
    /// equally far from everything outside it).
    pub(super) fn add_every_l3(&mut self, topology: &Topology, directory_node: u32) {
        for l3 in 0..topology.l3_count() {
            self.add(
                topology,
                directory_node,
                l3 * topology.spec.cores_per_l3,
                Cycle::ZERO,
            );
        }
    }

    /// leg(requester, directory) + max over targets of [leg(directory,
    /// target) + leg(target, requester)] (the first leg alone without targets).
    #[inline]
    pub(super) fn directory_path(&self, topology: &Topology, directory_node: u32) -> Cycles {
        topology.hop_place_to_node(self.requester, directory_node) + self.slowest
    }
}

/// The leg a target's answer takes back to the requester: between L3
/// domains the topology's leg; inside one, a third of an L3 transfer (its
/// three legs taken as equal, as for the home's occupancy).
#[inline]
fn answer_leg(topology: &Topology, target: CorePlace, requester: CorePlace) -> Cycles {
    if target.l3 == requester.l3 {
        l3_answer_leg(topology)
    } else {
        topology.hop_between_places(target, requester)
    }
}

/// [`answer_leg`] inside one L3 domain.
#[inline(always)]
fn l3_answer_leg(topology: &Topology) -> Cycles {
    Cycles::new(topology.spec.latency.l3_transfer_cycles / 3)
}

/// The route of a transaction through the directory: on Intel
/// (`Lookup::Local`) one that reaches a cache on another socket goes on from
/// the requester's snoop filter to the line's home agent (same cost; see the
/// module's documentation).
#[inline]
fn directory_route(lookup: Lookup, directory_node: u32, home: u32, cross_socket: bool) -> Route {
    if lookup == Lookup::Local && cross_socket {
        Route::HomeAgent {
            snoop_filter: directory_node,
            home,
        }
    } else {
        Route::Directory {
            node: directory_node,
        }
    }
}

impl Coherence {
    /// Performs an access: a hit when possible; otherwise a transaction at
    /// once if the line is free at its home, or a place in the line's queue.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
        tag: RequestTag,
    ) -> Result<Requested, SimError> {
        if let Some(report) = self.try_hit(topology, now, cpu, unit, need, hold_cycles) {
            if self.check_invariants {
                self.check_unit(unit, report.done)?;
            }
            return Ok(Requested::Done(report));
        }
        let core = topology.core_of(cpu);
        self.request_after_miss(topology, now, cpu, core, unit, need, hold_cycles, tag)
    }

    /// [`Coherence::request`] for a caller that has just tried
    /// [`Coherence::try_hit`] at `now` and missed (a failed try changes
    /// nothing, so trying again would miss again). Always inline: on a
    /// contended line queueing is the usual answer, a few stores, which
    /// the call's eight arguments cost as much again. `core` is `cpu`'s
    /// (`Topology::core_of`), which the engine keeps with its CPU.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn request_after_miss(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        core: u32,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
        tag: RequestTag,
    ) -> Result<Requested, SimError> {
        debug_assert_eq!(core, topology.core_of(cpu));
        let u = &mut self.units[unit];
        if u.busy_until > now || !u.waiting.is_empty() {
            u.waiting.push(Waiter {
                cpu,
                core,
                need,
                hold_cycles,
                issued: now,
                tag,
            });
            if let Some(index) = self.domain_indexes.get_mut(u.domain_index) {
                index.pushed(core);
            }
            return Ok(Requested::Queued {
                free_at: u.busy_until.max(now),
                first_waiter: u.waiting.len() == 1,
            });
        }
        self.transaction_at_once(topology, now, cpu, unit, need, hold_cycles)
    }

    /// The transaction of a request that found its line free. Out of line, so
    /// that queueing (the usual answer on a contended line) stays cheap.
    #[inline(never)]
    pub(super) fn transaction_at_once(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
    ) -> Result<Requested, SimError> {
        let core = topology.core_of(cpu);
        let report = self.transaction(topology, now, now, cpu, core, unit, need, hold_cycles, true);
        if self.check_invariants {
            self.check_unit(unit, report.started)?;
        }
        Ok(Requested::Done(report))
    }

    /// `cpu`'s demand request for `unit` (`need`, held `hold_cycles`,
    /// tagged `tag`), where the home still queues a prefetch of the same
    /// CPU asking for the same: the demand takes that request over (a
    /// core's demand miss finds its line's fill buffer already allocated
    /// by the prefetch and waits for that fill), at the prefetch's place in
    /// the queue. None where there is no such prefetch.
    pub fn merge_with_queued_prefetch(
        &mut self,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        hold_cycles: Cycles,
        tag: RequestTag,
    ) -> Option<Requested> {
        // A demand access, or a store's drain taking over the request its
        // store buffer made ahead (`engine::store_buffer`).
        debug_assert!(matches!(
            tag.kind(),
            RequestKind::Demand | RequestKind::Drain
        ));
        let u = &mut self.units[unit];
        let waiter = u
            .waiting
            .iter_mut()
            .find(|w| w.cpu == cpu && w.need == need && w.tag.kind() == RequestKind::Prefetch)?;
        waiter.tag = tag;
        waiter.hold_cycles = hold_cycles;
        waiter.issued = now;
        Some(Requested::Queued {
            free_at: u.busy_until.max(now),
            first_waiter: false,
        })
    }

    /// The adjacent-line prefetcher's read of `unit` for `cpu`'s core (the
    /// buddy of a line it missed on), tagged `tag` (of
    /// [`RequestKind::Prefetch`]): `None`
    /// when it is dropped, because the core already holds the line in any
    /// valid state or already has a request of its own waiting for it;
    /// otherwise a plain read, at once if the line is free or in the line's
    /// queue, ordered at the home like any other request. Nobody waits for
    /// it: the engine lets the CPU go on.
    pub fn prefetch(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        tag: RequestTag,
    ) -> Result<Option<Requested>, SimError> {
        self.prefetch_for(topology, now, cpu, unit, Need::Read, tag)
    }

    /// A prefetch of `unit` for `cpu`'s core that asks for `need`: a read
    /// (as [`Coherence::prefetch`]) or ownership (a locked instruction's
    /// line requested ahead of its turn). Dropped when the core already
    /// holds the line well enough (any copy for a read, a writable one for
    /// ownership) or has a request of its own waiting for it.
    pub fn prefetch_for(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        unit: usize,
        need: Need,
        tag: RequestTag,
    ) -> Result<Option<Requested>, SimError> {
        debug_assert_eq!(tag.kind(), RequestKind::Prefetch);
        let core = topology.core_of(cpu);
        let u = &self.units[unit];
        // The holders are sorted by core: a search, not a scan (on a
        // contended line's buddy every core holds a copy, and every
        // demand miss asks).
        let held = match u.holders.binary_search_by_key(&core, |h| h.core) {
            Ok(index) => {
                need == Need::Read
                    || matches!(
                        u.holders[index].state,
                        LineState::Modified | LineState::Exclusive
                    )
            }
            Err(_) => false,
        };
        let core_waits = match self.domain_indexes.get(u.domain_index) {
            Some(index) => index.has_core(core),
            None => u.waiting.iter().any(|w| w.core == core),
        };
        if held || core_waits {
            return Ok(None);
        }
        let requested =
            self.request_after_miss(topology, now, cpu, core, unit, need, Cycles::ZERO, tag)?;
        #[cfg(any(test, feature = "planted-bugs"))]
        planted::after_prefetch(self, unit, &requested)?;
        Ok(Some(requested))
    }

    /// The line is due to be free at `now`: serves one waiting request,
    /// chosen by `pick(number_waiting)`. Returns `None` when the line is
    /// still busy (retry at [`Coherence::busy_until`]) or nobody waits.
    ///
    /// The pick stands for the home's conflict resolution: under contention
    /// requests are retried, and which one wins is not first come, first
    /// served, so the engine passes a seeded random choice.
    pub fn serve_next<P: FnMut(usize) -> usize + ?Sized>(
        &mut self,
        topology: &Topology,
        now: Cycle,
        unit: usize,
        pick: &mut P,
    ) -> Result<Option<(Waiter, AccessReport)>, SimError> {
        let served = self.serve_next_in_place(topology, now, unit, pick)?;
        Ok(served.map(|waiter| (waiter, self.take_served())))
    }

    /// [`Coherence::serve_next`] with the report left in place, where
    /// [`Coherence::served`] reads it: the engine's serve of every
    /// contended handover, which then moves no report (about 90 bytes,
    /// moved twice through the result and the pair in the option).
    #[inline(always)]
    pub fn serve_next_in_place<P: FnMut(usize) -> usize + ?Sized>(
        &mut self,
        topology: &Topology,
        now: Cycle,
        unit: usize,
        pick: &mut P,
    ) -> Result<Option<Waiter>, SimError> {
        #[cfg(any(test, feature = "planted-bugs"))]
        if let Some(bug) = planted::active_at(planted::Hook::Serve) {
            let served = planted::serve_next(self, bug, topology, now, unit, &mut |n| pick(n))?;
            return Ok(served.map(|(waiter, report)| {
                self.served.0 = report;
                waiter
            }));
        }
        let u = &mut self.units[unit];
        let busy = u.busy_until > now;
        if u.waiting.is_empty() || busy {
            return Ok(None);
        }
        let (waiter, holder) = u.take_next_waiter(
            topology,
            &mut self.domain_indexes,
            pick,
            self.check_invariants,
        );
        // The last report's list, if it has one, becomes the spare for
        // this transaction's.
        if self.served.0.others.capacity() > self.spare_changes.0.capacity() {
            self.spare_changes.0 = std::mem::take(&mut self.served.0.others);
        }
        let hit = if holder {
            self.try_hit_for_waiter(topology, now, &waiter, unit)
        } else {
            None
        };
        // A CPU's own write is its atomic (its stores drain as `Drain`).
        let list_changes = !(self.atomic_changes_unlisted
            && waiter.need == Need::Write
            && waiter.tag.kind() == RequestKind::Demand);
        match hit {
            Some(r) => self.served.0 = r,
            None => self.transaction_into_served(
                topology,
                waiter.issued,
                now,
                waiter.cpu,
                waiter.core,
                unit,
                waiter.need,
                waiter.hold_cycles,
                list_changes,
            ),
        }
        if self.check_invariants {
            if let Some(message) = self.domain_indexes.mismatch.take() {
                return Err(SimError::ProtocolViolation {
                    cycle: now,
                    unit,
                    address: unit as u64 * self.unit_bytes as u64,
                    message,
                    states: self.describe_unit(unit),
                });
            }
            self.check_unit(unit, self.served.0.started)?;
        }
        Ok(Some(waiter))
    }

    /// [`Coherence::transaction`] with its report left in `served`, the
    /// special shape's written there field by field (assigned whole, a
    /// report goes through a copy on the stack: the old one's list is
    /// dropped first).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn transaction_into_served(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: LinuxCpu,
        core: u32,
        unit_index: usize,
        need: Need,
        hold_cycles: Cycles,
        list_changes: bool,
    ) {
        #[cfg(any(test, feature = "planted-bugs"))]
        if planted::active_at(planted::Hook::Transaction).is_some() {
            self.served.0 = self.transaction(
                topology,
                issued,
                now,
                cpu,
                core,
                unit_index,
                need,
                hold_cycles,
                list_changes,
            );
            return;
        }
        if self.takes_the_only_copy(core, unit_index, need) {
            #[cfg(feature = "shortcut-counts")]
            {
                self.special_transactions_taken += 1;
            }
            let taken = self.only_copy_taken(topology, now, cpu, core, unit_index, hold_cycles);
            let others = if list_changes {
                Some(self.only_copy_change(&taken))
            } else {
                None
            };
            let r = &mut self.served.0;
            match others {
                Some(list) => r.others = list,
                None => r.others.clear(),
            }
            r.unit = unit_index;
            r.need = Need::Write;
            r.issued = issued;
            r.started = now;
            r.done = taken.done;
            r.route = taken.route;
            r.supplier = taken.supplier;
            r.requester_before = LineState::Invalid;
            r.requester_after = LineState::Modified;
            r.invalidations = 1;
            r.hitm = taken.hitm;
            r.cross_socket = taken.cross_socket;
            r.hit_while_requests_wait = false;
            self.note_fill(core, unit_index, LineState::Invalid, now);
            return;
        }
        self.served.0 =
            self.transaction_general(topology, issued, now, cpu, unit_index, need, hold_cycles);
        if self.caches.is_some() {
            let others = std::mem::take(&mut self.served.0.others);
            self.note_copies_lost(&others);
            self.served.0.others = others;
        }
        let before = self.served.0.requester_before;
        self.note_fill(core, unit_index, before, now);
    }

    /// Whether a transaction takes [`Coherence::write_taking_the_only_copy`]:
    /// a write by core `core`, which holds no copy, of a line one other
    /// cache holds.
    #[inline(always)]
    fn takes_the_only_copy(&self, core: u32, unit_index: usize, need: Need) -> bool {
        if need != Need::Write {
            return false;
        }
        let [only] = self.units[unit_index].holders.as_slice() else {
            return false;
        };
        // A broadcast directory invalidates more than the one copy.
        let broadcast = self.directory == DirectoryPrecision::BroadcastShared
            && matches!(only.state, LineState::Shared | LineState::Owned);
        self.special_transactions && only.core != core && !broadcast
    }

    /// A transaction at the home: the line's new states and what it cost.
    /// The commonest contended shape, a write by a core without a copy of a
    /// line that one other cache holds (an atomic or a store taking the line
    /// from its last writer), takes [`Coherence::write_taking_the_only_copy`];
    /// every other shape the general walk over the holders. Both give the
    /// same states and report (a test compares them). Always inline, and
    /// the special shape with it: at the engine's serve of a contended
    /// line the common transaction is then part of the serve, without a
    /// call of nine arguments and its registers saved and restored (15
    /// instructions per handover; the general walk stays out of line).
    /// Without `list_changes` the special shape leaves the report's
    /// `others` empty ([`Coherence::atomic_changes_unlisted`]); the
    /// general walk lists them always.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn transaction(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: LinuxCpu,
        core: u32,
        unit_index: usize,
        need: Need,
        hold_cycles: Cycles,
        list_changes: bool,
    ) -> AccessReport {
        #[cfg(any(test, feature = "planted-bugs"))]
        if let Some(bug) = planted::active_at(planted::Hook::Transaction) {
            return planted::transaction(
                self,
                bug,
                topology,
                issued,
                now,
                cpu,
                unit_index,
                need,
                hold_cycles,
            );
        }
        let report = if self.takes_the_only_copy(core, unit_index, need) {
            #[cfg(feature = "shortcut-counts")]
            {
                self.special_transactions_taken += 1;
            }
            self.write_taking_the_only_copy(
                topology,
                issued,
                now,
                cpu,
                core,
                unit_index,
                hold_cycles,
                list_changes,
            )
        } else {
            let report =
                self.transaction_general(topology, issued, now, cpu, unit_index, need, hold_cycles);
            self.note_copies_lost(&report.others);
            report
        };
        self.note_fill(core, unit_index, report.requester_before, now);
        report
    }

    /// [`Coherence::transaction_general`] for a write by a core holding no
    /// copy of a line that exactly one other cache holds: that copy is the
    /// only target (the supplier of the data when its state answers for the
    /// line, else memory supplies it) and is invalidated; the writer's copy
    /// takes its place in the holder list and the directory. The steps:
    /// the route and cost to the one target, when the transaction is done,
    /// the supplier, the hand-over of the line, the report. (The commonest
    /// contended transaction: its steps are `#[inline(always)]`.)
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn write_taking_the_only_copy(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: LinuxCpu,
        core: u32,
        unit_index: usize,
        hold_cycles: Cycles,
        list_changes: bool,
    ) -> AccessReport {
        let taken = self.only_copy_taken(topology, now, cpu, core, unit_index, hold_cycles);
        let others = if list_changes {
            self.only_copy_change(&taken)
        } else {
            Vec::new()
        };
        AccessReport {
            unit: unit_index,
            need: Need::Write,
            issued,
            started: now,
            done: taken.done,
            route: taken.route,
            supplier: taken.supplier,
            requester_before: LineState::Invalid,
            requester_after: LineState::Modified,
            others,
            invalidations: 1,
            hitm: taken.hitm,
            cross_socket: taken.cross_socket,
            hit_while_requests_wait: false,
        }
    }

    /// The one change of [`Coherence::write_taking_the_only_copy`], listed
    /// in the spare list: the previous holder's copy invalidated.
    #[inline(always)]
    fn only_copy_change(&mut self, taken: &OnlyCopyTaken) -> Vec<StateChange> {
        let mut others = std::mem::take(&mut self.spare_changes.0);
        others.clear();
        others.push(StateChange {
            core: taken.previous_core,
            before: taken.previous_state,
            after: LineState::Invalid,
        });
        others
    }

    /// [`Coherence::write_taking_the_only_copy`]'s steps up to the report:
    /// the route and cost, when it is done, the supplier, and the line
    /// handed over to the writer.
    #[inline(always)]
    fn only_copy_taken(
        &mut self,
        topology: &Topology,
        now: Cycle,
        cpu: LinuxCpu,
        core: u32,
        unit_index: usize,
        hold_cycles: Cycles,
    ) -> OnlyCopyTaken {
        debug_assert_eq!(core, topology.core_of(cpu));
        let thread = topology.thread_of(cpu) as u8;
        let lookup = self.lookup;
        let l3_supplies = self.l3_shared_lines.supplies();
        let u = &mut self.units[unit_index];
        let home = u.home_node;
        let previous = u.holders[0];
        let requester = topology.place_of_core(core);
        let target = topology.place_of_core(previous.core);
        let directory_node = match lookup {
            Lookup::Home => home,
            Lookup::Local => requester.node,
        };
        let data_from_cache = previous.state.supplies_data();
        // Every leg between the two cores and the directory, and what they
        // cross, in one look (tabled by the topology).
        let legs = topology.directory_legs(requester, target, directory_node);
        let same_l3 = target.l3 == requester.l3;
        // A Shared copy in the requester's domain, whose L3 keeps the line:
        // the L3 supplies the data (as the general walk's `choose_source`).
        let from_own_l3 = !data_from_cache && same_l3 && l3_supplies;
        let path = only_copy_path(
            topology,
            lookup,
            home,
            directory_node,
            requester,
            same_l3,
            &legs,
            data_from_cache,
            from_own_l3,
        );
        let start = now;
        // The copy answers no earlier than its data arrived, and the answer
        // still travels back (as `TargetReach` has it in the walk:
        // `answer_leg`, its leg between L3 domains the tabled one).
        let answer = if same_l3 {
            l3_answer_leg(topology)
        } else {
            legs.back
        };
        // No earlier than the holder's hits taken while this request was
        // queued end (`Coherence::try_hit`): their data leaves with the line.
        let done = (start + path.cost)
            .max(previous.ready_at + answer)
            .max(u.queued_hits_done);
        let (supplier, hitm) = if data_from_cache {
            (
                // The class of the requesting CPU and the supplier's thread 0
                // (`pair_class(cpu, previous.core)` in the general walk): two
                // different cores, so their places decide it.
                Some((previous.core, previous.state, legs.class)),
                matches!(previous.state, LineState::Modified | LineState::Owned),
            )
        } else {
            (None, false)
        };
        u.hand_over_to_writer(previous.core, core, thread, done, hold_cycles);
        self.note_copy_lost(previous.core);
        OnlyCopyTaken {
            done,
            route: path.route,
            supplier,
            hitm,
            cross_socket: path.cross_socket,
            previous_core: previous.core,
            previous_state: previous.state,
        }
    }

    /// Any transaction, by a walk over the line's holders. The protocol's
    /// steps in order: survey the holders (the requester's copy, the
    /// supplier, a write's invalidations), choose where the data comes
    /// from, the route and its cost, when the transaction is done and how
    /// long the home stays busy, the other copies' new states, the
    /// requester's copy and the directory, and the report. (Each step is
    /// `#[inline(always)]`: this runs on every miss, and the split must cost
    /// nothing; `bash benches/callgrind.sh` shows it does not.)
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn transaction_general(
        &mut self,
        topology: &Topology,
        issued: Cycle,
        now: Cycle,
        cpu: LinuxCpu,
        unit_index: usize,
        need: Need,
        hold_cycles: Cycles,
    ) -> AccessReport {
        let core = topology.core_of(cpu);
        let thread = topology.thread_of(cpu) as u8;
        let protocol = self.protocol;
        let lookup = self.lookup;
        let l3_supplies = self.l3_shared_lines.supplies();
        let broadcast_shared = self.directory == DirectoryPrecision::BroadcastShared;
        let mut others = std::mem::take(&mut self.spare_changes.0);
        others.clear();
        let u = &mut self.units[unit_index];
        let start = now;
        let home = u.home_node;
        let requester = topology.place_of_core(core);
        let directory_node = match lookup {
            Lookup::Home => home,
            Lookup::Local => requester.node,
        };

        let clean_shared_answer = topology.spec.clean_shared_line_answer;
        // The nearest Shared copy is looked for only where it may answer.
        let find_nearest_shared =
            need == Need::Read && clean_shared_answer != CleanSharedLineAnswer::MemoryOrForwarder;
        let mut survey = u.survey_holders(
            topology,
            core,
            requester,
            directory_node,
            need,
            find_nearest_shared,
            &mut others,
        );
        let source = survey.choose_source(
            topology,
            directory_node,
            need,
            l3_supplies,
            broadcast_shared,
            clean_shared_answer,
        );
        let path = route_and_cost(
            topology,
            lookup,
            home,
            directory_node,
            requester,
            &source,
            &survey.reach,
        );
        let (mut done, mut busy_cycles) = completion(topology, start, &path, &source, &survey);
        // No earlier than the holders' hits taken while this request was
        // queued end (`Coherence::try_hit`): their data leaves with the line.
        if u.queued_hits_done > done {
            busy_cycles += u.queued_hits_done - done;
            done = u.queued_hits_done;
        }
        let (supplier, hitm) = supplier_report(topology, cpu, &source, &survey);
        let (requester_after, invalidations) =
            u.change_other_copies(protocol, core, need, &survey, &mut others);
        u.install_requester(
            core,
            requester_after,
            need,
            thread,
            done,
            start + busy_cycles,
            hold_cycles,
        );
        AccessReport {
            unit: unit_index,
            need,
            issued,
            started: start,
            done,
            route: path.route,
            supplier,
            requester_before: survey.requester_before,
            requester_after,
            others,
            invalidations,
            hitm,
            cross_socket: path.cross_socket,
            hit_while_requests_wait: false,
        }
    }
}

/// What the general walk's one pass over a line's holders found.
struct HolderSurvey {
    /// The requester's own copy (`Invalid` without one).
    requester_before: LineState,
    /// The first other cache in a supplying state, and when its copy arrived.
    supplier: Option<(u32, LineState)>,
    supplier_ready: Cycle,
    /// Another cache holds a copy.
    other_copies: bool,
    /// Some other copy is writable (M or E): it must answer before the line
    /// changes hands.
    writable_other: bool,
    /// Another core of the requester's L3 domain holds a copy.
    copy_in_requester_l3: bool,
    /// Some other copy is Shared or Owned (a line the directory may know
    /// only as shared).
    shared_copy: bool,
    /// The Shared copy nearest the requester and when it arrived (looked
    /// for only when a clean shared line may be answered by a cache,
    /// [`CleanSharedLineAnswer`]; the first in core order among equals).
    nearest_shared: Option<(u32, Cycle)>,
    /// The other copies are in more than one L3 domain (looked at only
    /// with `nearest_shared`).
    copies_in_several_l3: bool,
    /// When the earliest copy in the requester's L3 arrived (a pipelined
    /// read's may still be on its way): the L3 has the line from then.
    /// (`Cycle::MAX` is `min`'s identity, not a value: it is read only when
    /// `copy_in_requester_l3`, which a copy sets with it.)
    earliest_l3_copy_ready: Cycle,
    /// The targets met so far (a write's every other copy).
    reach: TargetReach,
}

/// Where a transaction's data comes from, as the survey decides it.
struct Source {
    /// The requester has no valid copy: data must come.
    needs_data: bool,
    /// A read of a line other caches hold, none of them writable: no
    /// ownership moves and nobody must acknowledge.
    clean_read: bool,
    /// The requester's L3 keeps the clean line one of its cores holds and
    /// supplies the data: a read's alone, no other cache asked; a write's
    /// once the copies are invalidated (those in the domain through the
    /// L3's own tags, any beyond it through the directory).
    from_own_l3: bool,
    /// Another cache supplies the data (the survey's supplier).
    data_from_cache: bool,
    /// What the supplier's answer costs less than a dirty copy's (a read
    /// only): its L3 answers a clean shared line without snooping a core
    /// (`CleanSharedLineAnswer::HoldingL3`), or a core answers from a clean
    /// copy (`LatencySpec::clean_snoop_saving_cycles`). 0 otherwise.
    answer_saving: Cycles,
}

/// A transaction's route through the machine and what it costs.
struct Path {
    route: Route,
    cost: Cycles,
    cross_socket: bool,
}

impl Unit {
    /// The home's choice of the next waiter to serve, taken out of the
    /// queue (which must not be empty), with whether its core already holds
    /// the line (then it may complete as a hit). With `check`, the socket
    /// agents' draw from the queue's index is compared with a rescan (a
    /// difference is left in `indexes.mismatch`).
    #[inline(always)]
    fn take_next_waiter<P: FnMut(usize) -> usize + ?Sized>(
        &mut self,
        topology: &Topology,
        indexes: &mut waiting::DomainIndexes,
        pick: &mut P,
        check: bool,
    ) -> (Waiter, bool) {
        // A waiter whose core already holds the line only queued behind a
        // pending snoop; the snoops (requests from other cores) go first.
        // (The directory's sharers are the holders' cores, an invariant
        // checked after every transaction: one bit instead of a walk over
        // the holders for each waiter, which with hundreds of readers
        // queued at a released lock was most of the run.)
        let n = self.waiting.len();
        let (drawn, mut chosen) = match self.socket_agent_draw(topology, indexes, pick, check) {
            Some(k) => (k, Some(k)),
            None => {
                let holds = |w: &Waiter| self.dir_sharers.contains(w.core);
                let drawn = pick(n).min(n - 1);
                // From the drawn waiter, the first (cyclically) that is not
                // a holder's re-access; only holders waiting means the
                // drawn one. (The drawn one itself first, without the
                // chained walk: under contention it is almost always the
                // answer.)
                let chosen = if !holds(&self.waiting[drawn]) {
                    Some(drawn)
                } else {
                    (drawn + 1..n)
                        .chain(0..drawn)
                        .find(|&k| !holds(&self.waiting[k]))
                };
                (drawn, chosen)
            }
        };
        // Locality (`arbitration_near_owner_percent`): in that share of
        // handovers of an owned line, the first (cyclically from the drawn
        // one) of the waiters nearest the owner. The coin is drawn only on
        // machines with a preference, so uniform machines draw as before.
        // (The machine's preference looked at first: most machines have
        // none, and it decides alone.)
        let near = topology.spec.arbitration_near_owner_percent;
        if let (true, Some(owner), Some(_)) = (near > 0, self.dir_owner, chosen) {
            if (pick(100) as u32) < near {
                let holds = |w: &Waiter| self.dir_sharers.contains(w.core);
                let owner_place = topology.place_of_core(owner);
                let distance = |w: &Waiter| {
                    if w.core == owner {
                        PairClass::SmtSibling
                    } else {
                        Topology::class_of_places(topology.place_of_core(w.core), owner_place)
                    }
                };
                chosen = (drawn..n)
                    .chain(0..drawn)
                    .filter(|&k| !holds(&self.waiting[k]))
                    .min_by_key(|&k| distance(&self.waiting[k]));
            }
        }
        // Only a core that holds the line can complete as a hit: the drawn
        // waiter when every waiter holds it.
        let holder = chosen.is_none();
        let taken = chosen.unwrap_or(drawn);
        if let Some(index) = indexes.get_mut(self.domain_index) {
            index.removing(&self.waiting, taken);
        }
        (self.waiting.swap_remove(taken), holder)
    }

    /// Who competes for an owned line on a machine whose L3 domains resolve
    /// their own transfers (`Lookup::Local`, more than one L3 domain):
    /// every waiter of the owner's L3 domain, and from each other domain
    /// only its earliest waiting request. A uniform draw among those
    /// competitors, as the index of the chosen waiter; `None` where the
    /// rule does not apply (one domain, a home that looks every transfer
    /// up, no owner, no other domain's request waiting), and the draw is
    /// uniform over the whole queue.
    ///
    /// Why: the caching agent a line's address hashes to (Intel's Cbo, the
    /// CHA since Skylake-SP; one per address in each die's ring or mesh,
    /// which is one L3 domain here: a socket, or a die of Cascade Lake-AP)
    /// lets one request per address into its tracker (TOR) at a time; a
    /// later one to the same address is rejected and retried until the
    /// first completes (Intel's uncore event descriptions, Xeon E5 v3/v4
    /// Cbo `RxR_IRQ_RETRY.ADDR_CONFLICT`: "requests to the same address
    /// are not allowed to pass each other"; Skylake-SP CHA
    /// `RxC_IRQ1_REJECT.PA_MATCH`). So each die sends at most one request
    /// for the line out at a time, while the owner's die resolves its own
    /// cores' requests in its agent (its snoop filter knows the owner,
    /// `Lookup::Local`). A request from another die arrives there as a
    /// snoop, retried against the local ones on the same conflict
    /// (`RxR_IPQ_RETRY.ADDR_CONFLICT`: "two different sockets are sending
    /// requests to the same address at the same time"). Which retry wins
    /// is not documented: each competitor is equally likely, as on every
    /// other machine. That bounds the wait of a remote request by itself,
    /// without a parameter: it wins a handover with probability
    /// 1 / (local waiters + other domains waiting). Which of a domain's
    /// requests holds its tracker entry is taken as the one issued first
    /// (ties: the first in the queue).
    ///
    /// How: from the queue's index by domain and core
    /// ([`waiting::DomainIndex`]), built once [`waiting::INDEXED_FROM_WAITERS`]
    /// requests wait (a contended line's 160 were scanned at every
    /// handover); below, one pass over the waiters
    /// ([`Unit::socket_agent_draw_by_scan`]). With `check`, both, the
    /// index's with the engine's `pick` and the pass with its answers
    /// replayed: they must ask the same and choose the same waiter.
    #[inline(always)]
    fn socket_agent_draw<P: FnMut(usize) -> usize + ?Sized>(
        &mut self,
        topology: &Topology,
        indexes: &mut waiting::DomainIndexes,
        pick: &mut P,
        check: bool,
    ) -> Option<usize> {
        let domains = topology.l3_count();
        if domains < 2 || topology.spec.lookup != Lookup::Local {
            return None;
        }
        let owner = self.dir_owner?;
        let owner_domain = topology.l3_of_core(owner);
        if self.domain_index.get().is_none() && self.waiting.len() >= waiting::INDEXED_FROM_WAITERS
        {
            self.domain_index = indexes.add(waiting::DomainIndex::new(
                topology.spec.cores_per_l3,
                domains,
                topology.core_count(),
                &self.waiting,
            ));
        }
        let Some(index) = indexes.get_mut(self.domain_index) else {
            return self.socket_agent_draw_by_scan(topology, owner_domain, pick);
        };
        if !check {
            return index.draw(&self.waiting, &self.dir_sharers, owner_domain, pick);
        }
        match self.checked_draw(topology, index, owner_domain, pick) {
            Ok(drawn) => drawn,
            Err((message, drawn)) => {
                indexes.mismatch = Some(message);
                drawn
            }
        }
    }

    /// [`Unit::socket_agent_draw`] from `index`, checked: the index against
    /// one rebuilt from the queue, and its draw against a rescan's (with
    /// `pick`'s answer replayed). A difference is an error, with the
    /// index's draw.
    #[cold]
    #[inline(never)]
    fn checked_draw<P: FnMut(usize) -> usize + ?Sized>(
        &self,
        topology: &Topology,
        index: &mut waiting::DomainIndex,
        owner_domain: u32,
        pick: &mut P,
    ) -> Result<Option<usize>, (String, Option<usize>)> {
        if let Err(message) = index.check(&self.waiting) {
            return Err((message, None));
        }
        let mut asked: Option<(usize, usize)> = None;
        let by_index = index.draw(&self.waiting, &self.dir_sharers, owner_domain, &mut |n| {
            let k = pick(n);
            asked = Some((n, k));
            k
        });
        let mut scan_asked = None;
        let by_scan = self.socket_agent_draw_by_scan(topology, owner_domain, &mut |n| {
            scan_asked = Some(n);
            asked.map_or(0, |(_, k)| k)
        });
        if by_index != by_scan || scan_asked != asked.map(|(n, _)| n) {
            let message = format!(
                "the socket agents' draw from the queue's index chose waiter {by_index:?} \
                 (pick asked {asked:?}), a rescan of the queue {by_scan:?} \
                 (pick asked {scan_asked:?})"
            );
            return Err((message, by_index));
        }
        Ok(by_index)
    }

    /// [`Unit::socket_agent_draw`] by one pass over the queue, the owner
    /// being in `owner_domain`: the owner domain's competing waiters are
    /// counted, and each other domain's earliest competing request kept
    /// as (domain, issued, index). Few domains wait at once, so a linear
    /// search of `remote` stays short; sorted by domain afterwards, the
    /// draw sees the competitors in the order it always has.
    fn socket_agent_draw_by_scan<P: FnMut(usize) -> usize + ?Sized>(
        &self,
        topology: &Topology,
        owner_domain: u32,
        pick: &mut P,
    ) -> Option<usize> {
        let mut locals = 0usize;
        let mut remote: Vec<(u32, Cycle, usize)> = Vec::new();
        for (index, w) in self.waiting.iter().enumerate() {
            if self.dir_sharers.contains(w.core) {
                continue;
            }
            let d = topology.l3_of_core(w.core);
            if d == owner_domain {
                locals += 1;
            } else if let Some(entry) = remote.iter_mut().find(|e| e.0 == d) {
                if (w.issued, index) < (entry.1, entry.2) {
                    *entry = (d, w.issued, index);
                }
            } else {
                remote.push((d, w.issued, index));
            }
        }
        // No other domain waiting: every waiter is the owner domain's, and
        // the whole-queue draw below is the same rule (kept, so that a run
        // on one socket of a larger machine draws as before).
        if remote.is_empty() {
            return None;
        }
        remote.sort_unstable_by_key(|e| e.0);
        let competitors = locals + remote.len();
        let k = pick(competitors).min(competitors - 1);
        if k < locals {
            self.waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| {
                    !self.dir_sharers.contains(w.core)
                        && topology.l3_of_core(w.core) == owner_domain
                })
                .nth(k)
                .map(|(index, _)| index)
        } else {
            Some(remote[k - locals].2)
        }
    }

    /// Step 1, survey the holders: one pass finds the requester's copy and
    /// the supplier (the first other cache in a supplying state). A write's
    /// targets are every other copy (to invalidate): they are reached in the
    /// same pass, their invalidations listed in `others` (in core order) and
    /// their directory bits dropped, since every one of them goes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn survey_holders(
        &mut self,
        topology: &Topology,
        core: u32,
        requester: CorePlace,
        directory_node: u32,
        need: Need,
        find_nearest_shared: bool,
        others: &mut Vec<StateChange>,
    ) -> HolderSurvey {
        let mut survey = HolderSurvey {
            requester_before: LineState::Invalid,
            supplier: None,
            supplier_ready: Cycle::ZERO,
            other_copies: false,
            writable_other: false,
            copy_in_requester_l3: false,
            shared_copy: false,
            nearest_shared: None,
            copies_in_several_l3: false,
            earliest_l3_copy_ready: Cycle::MAX,
            reach: TargetReach::new(requester),
        };
        let mut nearest_shared_leg = Cycles::ZERO;
        let mut first_copy_l3 = None;
        if need == Need::Write {
            // One allocation at most, not one per doubling.
            others.reserve(self.holders.len());
        }
        for h in &self.holders {
            if h.core == core {
                survey.requester_before = h.state;
                continue;
            }
            survey.other_copies = true;
            survey.writable_other |= h.state.is_writable();
            survey.shared_copy |= matches!(h.state, LineState::Shared | LineState::Owned);
            if topology.place_of_core(h.core).l3 == requester.l3 {
                survey.copy_in_requester_l3 = true;
                survey.earliest_l3_copy_ready = survey.earliest_l3_copy_ready.min(h.ready_at);
            }
            if find_nearest_shared {
                let l3 = topology.place_of_core(h.core).l3;
                survey.copies_in_several_l3 |= *first_copy_l3.get_or_insert(l3) != l3;
            }
            if find_nearest_shared && h.state == LineState::Shared {
                let leg = topology.hop_between_places(topology.place_of_core(h.core), requester);
                if survey.nearest_shared.is_none() || leg < nearest_shared_leg {
                    survey.nearest_shared = Some((h.core, h.ready_at));
                    nearest_shared_leg = leg;
                }
            }
            if survey.supplier.is_none() && h.state.supplies_data() {
                survey.supplier = Some((h.core, h.state));
                survey.supplier_ready = h.ready_at;
            }
            if need == Need::Write {
                survey
                    .reach
                    .add(topology, directory_node, h.core, h.ready_at);
                others.push(StateChange {
                    core: h.core,
                    before: h.state,
                    after: LineState::Invalid,
                });
                self.dir_sharers.remove(h.core);
            }
        }
        survey
    }

    /// Step 5, the other copies' new states: a write's are all gone (listed
    /// in the survey), a read's writable or forwarding copy gives up
    /// answering for the line (MOESI keeps an Owned one). Returns the
    /// requester's new state and the number of invalidations.
    #[inline(always)]
    fn change_other_copies(
        &mut self,
        protocol: Protocol,
        core: u32,
        need: Need,
        survey: &HolderSurvey,
        others: &mut Vec<StateChange>,
    ) -> (LineState, u32) {
        match need {
            Need::Write => {
                // Every other copy was listed by the survey; the requester's
                // own copy (if any) is replaced by `install_requester`.
                let invalidations = others.len() as u32;
                self.holders.clear();
                self.version += 1;
                (LineState::Modified, invalidations)
            }
            Need::Read => {
                let mut new_state = LineState::Shared;
                if !survey.other_copies {
                    new_state = LineState::Exclusive;
                } else {
                    let mut owned = survey.requester_before == LineState::Owned;
                    for h in self.holders.iter_mut().filter(|h| h.core != core) {
                        let before = h.state;
                        let after = match (protocol, before) {
                            (Protocol::Moesi, LineState::Modified) => LineState::Owned,
                            (Protocol::Moesi, LineState::Owned) => LineState::Owned,
                            (_, LineState::Shared) => LineState::Shared,
                            // E, M (MESI, MESIF) and F give up answering
                            // for the line: M writes back and both share.
                            _ => LineState::Shared,
                        };
                        owned |= after == LineState::Owned;
                        if after != before {
                            h.state = after;
                            others.push(StateChange {
                                core: h.core,
                                before,
                                after,
                            });
                        }
                    }
                    if protocol == Protocol::Mesif && !owned {
                        // The newest sharer becomes the forwarder.
                        new_state = LineState::Forward;
                    }
                }
                (new_state, 0)
            }
        }
    }

    /// Step 6, the requester's copy and the directory: the requester's copy
    /// in its new state (in core order), the directory following the caches
    /// (the holders are the old ones less those a write invalidated, their
    /// bits dropped by the survey, plus the requester; the owner is the
    /// cache that now answers for the line, at most one does), and the line
    /// busy at the home until `busy_until`, or until an atomic's hold ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn install_requester(
        &mut self,
        core: u32,
        state: LineState,
        need: Need,
        thread: u8,
        done: Cycle,
        busy_until: Cycle,
        hold_cycles: Cycles,
    ) {
        let holder = Holder {
            core,
            state,
            ready_at: done,
            version: self.version,
            last_writer_thread: (need == Need::Write).then_some(thread),
            in_l1: true,
            last_use: done,
        };
        match self.holders.binary_search_by_key(&core, |h| h.core) {
            Ok(i) => self.holders[i] = holder,
            Err(i) => self.holders.insert(i, holder),
        }
        self.dir_sharers.insert(core);
        self.dir_owner = self
            .holders
            .iter()
            .rev()
            .find(|h| h.state.supplies_data())
            .map(|h| h.core);
        self.busy_until = busy_until;
        self.hold_after(done, hold_cycles);
    }

    /// An atomic's hold: the line stays locked, and its home busy,
    /// `hold_cycles` past the access's `done` (nothing for other accesses).
    #[inline(always)]
    fn hold_after(&mut self, done: Cycle, hold_cycles: Cycles) {
        if hold_cycles > Cycles::ZERO {
            self.locked_until = done + hold_cycles;
            self.busy_until = self.locked_until;
        }
    }
}

impl Unit {
    /// The hand-over of [`Coherence::write_taking_the_only_copy`]: the
    /// writer's Modified copy replaces the only other copy (`previous`,
    /// invalidated) in the holder list and the directory, the line's version
    /// moves on, and the home stays busy until the write is done, or until
    /// an atomic's hold ends.
    #[inline(always)]
    fn hand_over_to_writer(
        &mut self,
        previous: u32,
        writer: u32,
        thread: u8,
        done: Cycle,
        hold_cycles: Cycles,
    ) {
        self.version += 1;
        self.holders[0] = Holder {
            core: writer,
            state: LineState::Modified,
            ready_at: done,
            version: self.version,
            last_writer_thread: Some(thread),
            in_l1: true,
            last_use: done,
        };
        self.dir_sharers.move_bit(previous, writer);
        self.dir_owner = Some(writer);
        // A write holds the line for its whole cost, and an atomic on.
        self.busy_until = done;
        self.hold_after(done, hold_cycles);
    }
}

impl HolderSurvey {
    /// Step 2, choose where the data comes from: the requester's own copy,
    /// its L3 (a clean line one of its cores holds, when the L3 keeps such
    /// lines), the supplier's cache, or memory. Adds the targets this
    /// decides: a read's supplier; a write's every L3 domain when the
    /// directory knows a shared line only as shared (`broadcast_shared`).
    #[inline(always)]
    fn choose_source(
        &mut self,
        topology: &Topology,
        directory_node: u32,
        need: Need,
        l3_supplies: bool,
        broadcast_shared: bool,
        clean_shared_answer: CleanSharedLineAnswer,
    ) -> Source {
        let needs_data = self.requester_before == LineState::Invalid;
        let clean_read = need == Need::Read && self.other_copies && !self.writable_other;
        // A write of a line no cache answers for (every copy Shared) takes
        // its data where a read of it would: from the requester's L3 when
        // that keeps the line, not from memory. The L3 that keeps the
        // shared lines its cores read (Intel's inclusive L3, AMD's victim
        // L3 that keeps shared lines) has the line while a core of its
        // domain holds it.
        let clean_write = need == Need::Write && self.supplier.is_none();
        let from_own_l3 =
            (clean_read || clean_write) && needs_data && self.copy_in_requester_l3 && l3_supplies;
        if need == Need::Write && self.shared_copy && broadcast_shared {
            // The directory knows the line only as shared: every L3 domain
            // is asked to invalidate.
            self.reach.add_every_l3(topology, directory_node);
        }
        // A clean shared line (its copies all Shared or Forward) held in
        // another domain: under `holding-l3` the Forward copy, else the
        // nearest Shared one, is answered by its domain's L3, without
        // snooping the core; under `holding-die` a line held in one domain
        // only is answered by that domain's Shared copy instead of memory
        // (a directory that tracks domains sees one domain holding it, as
        // it would see an owner; copies in several domains: memory).
        let mut l3_answers = false;
        if clean_read
            && needs_data
            && !from_own_l3
            && clean_shared_answer != CleanSharedLineAnswer::MemoryOrForwarder
        {
            let clean_shared = match (self.supplier, self.nearest_shared) {
                (Some((_, LineState::Forward)), _) => true,
                (None, Some(_))
                    if clean_shared_answer == CleanSharedLineAnswer::HoldingDie
                        && self.copies_in_several_l3 =>
                {
                    false
                }
                (None, Some((shared_core, ready))) => {
                    self.supplier = Some((shared_core, LineState::Shared));
                    self.supplier_ready = ready;
                    true
                }
                _ => false,
            };
            l3_answers = clean_shared && clean_shared_answer == CleanSharedLineAnswer::HoldingL3;
        }
        let data_from_cache = needs_data && self.supplier.is_some() && !from_own_l3;
        let l = &topology.spec.latency;
        let answer_saving = match self.supplier {
            _ if need != Need::Read || !data_from_cache => 0,
            _ if l3_answers => l.l3_transfer_cycles.saturating_sub(l.l3_hit_cycles),
            Some((_, LineState::Exclusive | LineState::Forward | LineState::Shared)) => {
                l.clean_snoop_saving_cycles.unwrap_or(0)
            }
            _ => 0,
        };
        if need == Need::Read && data_from_cache {
            // A read's only target is the supplier of the data.
            if let Some((supplier_core, _)) = self.supplier {
                self.reach
                    .add(topology, directory_node, supplier_core, self.supplier_ready);
            }
        }
        Source {
            needs_data,
            clean_read,
            from_own_l3,
            data_from_cache,
            answer_saving: Cycles::new(answer_saving),
        }
    }
}

/// Step 3, the route and its cost: the requester's L3; a transfer inside
/// one L3 domain; memory at the home (invalidations, if any, proceed in
/// parallel through the directory); or the directory and its targets.
#[inline(always)]
fn route_and_cost(
    topology: &Topology,
    lookup: Lookup,
    home: u32,
    directory_node: u32,
    requester: CorePlace,
    source: &Source,
    reach: &TargetReach,
) -> Path {
    let l = &topology.spec.latency;
    let no_targets = !reach.any;
    let mut cross_socket = false;
    let route;
    let cost;
    if source.from_own_l3 {
        route = Route::L3 { l3: requester.l3 };
        let hit = Cycles::new(l.l3_hit_cycles);
        cost = if no_targets {
            // A read: the L3 answers alone.
            hit
        } else if reach.all_in_l3 {
            // A write whose copies are all in the domain: the L3 invalidates
            // them and answers, request, invalidation and answer, the three
            // legs of a transfer inside the domain.
            hit.max(Cycles::new(l.l3_transfer_cycles))
        } else {
            // Copies beyond the domain are invalidated through the
            // directory, in parallel with the L3's answer.
            cross_socket |= reach.cross_socket;
            hit.max(reach.directory_path(topology, directory_node))
        };
    } else if (source.data_from_cache || !source.needs_data) && reach.all_in_l3 && !no_targets {
        route = Route::SameL3;
        cost = Cycles::new(l.l3_transfer_cycles) - source.answer_saving;
    } else if source.needs_data && !source.data_from_cache {
        // Memory at the home supplies the data; invalidations (if any)
        // proceed in parallel through the directory.
        let memory_path =
            topology.hop_place_to_node(requester, home) * 2 + Cycles::new(l.dram_cycles);
        cross_socket |= topology.socket_of_node(home) != requester.socket;
        let invalidate_path = if no_targets {
            Cycles::ZERO
        } else {
            reach.directory_path(topology, directory_node)
        };
        cross_socket |= reach.cross_socket;
        route = Route::Memory { node: home };
        cost = memory_path.max(invalidate_path);
    } else {
        cross_socket |= topology.socket_of_node(directory_node) != requester.socket;
        cross_socket |= reach.cross_socket;
        route = directory_route(lookup, directory_node, home, reach.cross_socket);
        cost = if no_targets {
            // Permission only (an upgrade with no other copy): ask and be answered.
            topology.hop_place_to_node(requester, directory_node) * 2
        } else {
            // (`Cycles`' subtraction stops at zero.)
            reach.directory_path(topology, directory_node) - source.answer_saving
        };
    }
    Path {
        route,
        cost,
        cross_socket,
    }
}

/// Step 4, when the transaction is done and how long the home stays busy
/// (returned in that order, the second a length from `start`).
///
/// A cache answers (supplies or acknowledges) no earlier than its own
/// copy's data arrived: after pipelined reads, the next transaction may
/// find a copy still on its way.
///
/// A transfer of ownership (any write, any read of an M or E copy) holds
/// the home until the data and every acknowledgement have arrived, and so
/// does a read that memory answers (the line has no cache that answers for
/// it yet). A clean read of a line already resolved to a cache that answers
/// for it (a forwarding or owning copy, or the requester's L3 keeping it)
/// holds the home only while it decides and forwards,
/// `home_occupancy_cycles`: the data leg overlaps with the next request, so
/// N cores re-reading a released line cost N occupancies plus one transfer,
/// not N transfers (the first read resolves the line; the next ones are
/// served at the home's throughput). The occupancy is the machine's
/// parameter (the presets' is assumed: one leg of an L3 transfer).
#[inline(always)]
fn completion(
    topology: &Topology,
    start: Cycle,
    path: &Path,
    source: &Source,
    survey: &HolderSurvey,
) -> (Cycle, Cycles) {
    let answered_by = if source.from_own_l3 {
        // A write's invalidated copies acknowledge too.
        survey
            .earliest_l3_copy_ready
            .max(survey.reach.answered_floor)
    } else {
        survey.reach.answered_floor
    };
    let done = (start + path.cost).max(answered_by);
    let resolved_read = source.clean_read && (source.data_from_cache || source.from_own_l3);
    let busy_cycles = if resolved_read {
        Cycles::new(topology.spec.latency.home_occupancy_cycles).min(done - start)
    } else {
        done - start
    };
    (done, busy_cycles)
}

/// The report's supplier (the cache that supplied the data, its state and
/// its relation to the requesting CPU) and whether it was a HITM (a
/// Modified or Owned copy answered).
#[inline(always)]
fn supplier_report(
    topology: &Topology,
    cpu: LinuxCpu,
    source: &Source,
    survey: &HolderSurvey,
) -> (Option<(u32, LineState, PairClass)>, bool) {
    let mut hitm = false;
    let supplier = if source.data_from_cache {
        survey.supplier.map(|(c, s)| {
            hitm = matches!(s, LineState::Modified | LineState::Owned);
            // Thread 0 of the supplier's core (Linux CPU c is core c's first
            // thread), for the class.
            let sibling_cpu = LinuxCpu::new(c);
            (c, s, topology.pair_class(cpu, sibling_cpu))
        })
    } else {
        None
    };
    (supplier, hitm)
}

/// What [`Coherence::only_copy_taken`] found: the report's parts that
/// vary, and the previous holder for the listed change.
struct OnlyCopyTaken {
    done: Cycle,
    route: Route,
    supplier: Option<(u32, LineState, PairClass)>,
    hitm: bool,
    cross_socket: bool,
    previous_core: u32,
    previous_state: LineState,
}

/// The route and cost of [`Coherence::write_taking_the_only_copy`]: with
/// one target (in the requester's L3 domain when `same_l3`, its legs
/// `legs`), the general walk's [`route_and_cost`] reduces to a transfer
/// inside the requester's L3 domain, the requester's L3 when it keeps the
/// Shared copy of a core of its domain (the L3 invalidates it and answers),
/// memory at the home (the target's invalidation in parallel through the
/// directory) when the target's copy does not answer for the line, or the
/// directory and the target.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn only_copy_path(
    topology: &Topology,
    lookup: Lookup,
    home: u32,
    directory_node: u32,
    requester: CorePlace,
    same_l3: bool,
    legs: &DirectoryLegs,
    data_from_cache: bool,
    from_own_l3: bool,
) -> Path {
    let l = &topology.spec.latency;
    // `legs.path` is leg(requester, directory) + leg(directory, target) +
    // leg(target, requester), as `TargetReach` gives for one target.
    let route;
    let cost;
    let cross_socket;
    if from_own_l3 {
        route = Route::L3 { l3: requester.l3 };
        cost = Cycles::new(l.l3_hit_cycles).max(Cycles::new(l.l3_transfer_cycles));
        cross_socket = false;
    } else if data_from_cache && same_l3 {
        route = Route::SameL3;
        cost = Cycles::new(l.l3_transfer_cycles);
        cross_socket = false;
    } else if !data_from_cache {
        let memory_path =
            topology.hop_place_to_node(requester, home) * 2 + Cycles::new(l.dram_cycles);
        cross_socket =
            topology.socket_of_node(home) != requester.socket || legs.target_cross_socket;
        route = Route::Memory { node: home };
        cost = memory_path.max(legs.path);
    } else {
        cross_socket = legs.directory_cross_socket || legs.target_cross_socket;
        route = directory_route(lookup, directory_node, home, legs.target_cross_socket);
        cost = legs.path;
    }
    Path {
        route,
        cost,
        cross_socket,
    }
}
