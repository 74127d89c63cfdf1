//! Spin-waits fast-forwarded (`EngineOptions::spin_fast_forward`).
//!
//! A CPU that polls a line (`while lock != 0 { cpu_relax() }`, a ticket or
//! MCS wait, a seqlock retry) repeats one period: from a load at some
//! position of its code, in some state, through operations that touch only
//! its registers and its clock, back to a load at the same position in the
//! same state. Stepped, each period is a plain hit and a few operations,
//! and with hundreds of waiters they are most of a lock workload's host
//! time. Here a CPU whose load is a plain hit on a shared line, made in the
//! same state (code position, callers, locals, stack, random stream,
//! iteration) as its previous access, which was also such a load of the
//! same bytes giving the same value, with no value of its still late,
//! sleeps instead: nothing it does in a period can change anything but its
//! clock, so every later period would be the same until some other access
//! reaches that line. A period that reads what the state leaves out (the
//! clock, `now()`; another thread's run state) is never taken as one
//! (`SpinWatch::forget`).
//!
//! It sleeps until an access by another CPU reaches the line (a request, a
//! drain, a prefetch, a write hit, the home serving a waiter): at that
//! point of the global order (the event being processed, or the accessing
//! CPU's turn) it wakes exactly where stepping would have left it. Its
//! loads at positions before that point happened, each a hit returning the
//! same value (reported summed, as private hits are); it stands at the
//! first load after that point, in the state of every period's load, with
//! its clock at that load's cycle, and takes its turn from there. A run
//! that stops at a cycle settles its sleepers at that cycle the same way;
//! a run in which nothing is pending while CPUs sleep is a deadlock,
//! reported at once rather than after the cycle budget.
//!
//! Only for a probe that takes summed hits (`Probe::needs_every_access`
//! false): a trace sees every poll. Where such a probe forbids the skip,
//! the same test still finds the
//! period, and the CPU goes on stepping it in a shadow of that sleep
//! (`Shadow`): ended where the sleep would be woken, and, once nothing
//! but such CPUs' polls is left to happen, the same error as the sleeping
//! run's deadlock, at once rather than after the cycle budget.

use crate::coherence::{AccessReport, Route};
use crate::cpu::CpuIndex;
use crate::engine::{
    event_of_key, resume_position, Cpu, EventKind, Frame, PendingAccess, Simulation, Wait,
};
use crate::error::SimError;
use crate::probe::{PrivateHits, Probe};
use crate::time::{Cycle, Cycles};

/// Where in the global (cycle, key) order the engine is, for a spinner
/// woken there: the order passed so far, the current event's resume when
/// it was taken without the queue, and the turn a CPU is taking during
/// it, if any (their keys made only when a spinner needs them).
///
/// Events are taken in (cycle, key) order, but for one queued at the
/// current cycle with a key below what the order has passed: a CPU's
/// resume (class 0) queued by a line's free (class 2) that served it at
/// the free's cycle, a drain's end queued by a free, a thread switched in
/// or woken at once by a scheduling operation's turn. It is taken right
/// after what queued it, however its key compares with a poller's at that
/// cycle. A spinning CPU, stepped, takes its turn at a poll when nothing
/// queued comes before it, so its polls at that cycle with keys below the
/// free's (or the turn's) were made before the free, and before what the
/// free queued. Where the order has got to is the greatest (cycle, key)
/// passed so far (`taken`), not the current event's.
///
/// Only events and scheduling turns queue such events: an access, a
/// direct resume or a wake queues nothing of another CPU at its own cycle
/// below its own key, so their keys need not join `taken`.
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Position {
    /// The greatest (cycle, key) of the queued events and scheduling turns
    /// taken while a CPU sleeps (`sleepers`).
    taken: (Cycle, u64),
    /// The current event, when it is CPU `cpu`'s resume at `cycle` taken
    /// without the queue (`line_free`'s direct resume).
    direct: Option<(Cycle, CpuIndex)>,
    /// CPU `cpu`'s turn at `cycle` (an access, or a scheduling operation or
    /// iteration end while the scheduler is on), taken during the current
    /// event: never before the event (a CPU resumed inside another event,
    /// as `drain_done` does, acts at that event's place when it is at that
    /// event's cycle). (A private-only CPU's access is taken for one,
    /// though it takes no turn: nobody polls its lines.)
    pub(in crate::engine) turn: Option<(Cycle, CpuIndex)>,
    /// CPUs asleep in a spin-wait. While none is, `taken` is left as it
    /// is: a sleeper's polls come after the cycle it falls asleep at, so
    /// only what passes after that can come after one of them (and nothing
    /// is compared where no wait sleeps).
    sleepers: u32,
}

impl Position {
    pub(in crate::engine) const START: Position = Position {
        taken: (Cycle::ZERO, 0),
        direct: None,
        turn: None,
        sleepers: 0,
    };

    fn key(self, tie_seed: u64) -> (Cycle, u64) {
        let resume = |(cycle, cpu): (Cycle, CpuIndex)| resume_position(tie_seed, cycle, cpu);
        let direct = self.direct.map_or(self.taken, resume).max(self.taken);
        self.turn.map_or(direct, resume).max(direct)
    }

    /// The engine takes the queued event at `at`.
    #[inline(always)]
    pub(in crate::engine) fn take_queued(&mut self, at: (Cycle, u64)) {
        if self.sleepers > 0 && at > self.taken {
            self.taken = at;
        }
        (self.direct, self.turn) = (None, None);
    }

    /// The engine takes CPU `cpu`'s resume at `cycle` without the queue.
    #[inline(always)]
    pub(in crate::engine) fn take_direct(&mut self, cycle: Cycle, cpu: CpuIndex) {
        (self.direct, self.turn) = (Some((cycle, cpu)), None);
    }

    /// CPU `cpu` takes its turn at `cycle` for a scheduling operation (or
    /// an iteration's end, which may preempt), which may queue another
    /// thread's resume at that cycle below its key (`sched`).
    #[inline]
    pub(in crate::engine) fn take_scheduling_turn(
        &mut self,
        cycle: Cycle,
        cpu: CpuIndex,
        tie_seed: u64,
    ) {
        self.turn = Some((cycle, cpu));
        if self.sleepers > 0 {
            self.taken = self.taken.max(resume_position(tie_seed, cycle, cpu));
        }
    }
}

/// A CPU's state that a period must return to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::engine) struct CpuState {
    code: u32,
    pc: u32,
    locals_base: u32,
    callers: Vec<(u32, u32, u32)>,
    locals: Vec<i64>,
    stack: Vec<i64>,
    rng_word: u128,
    iteration: u64,
}

impl CpuState {
    /// Copies `cpu`'s state in, reusing the buffers.
    fn take(&mut self, cpu: &Cpu) {
        let Frame {
            code,
            pc,
            locals_base,
        } = cpu.frame;
        (self.code, self.pc, self.locals_base) = (code, pc, locals_base);
        self.callers.clear();
        self.callers
            .extend(cpu.callers.iter().map(|f| (f.code, f.pc, f.locals_base)));
        self.locals.clone_from(&cpu.locals);
        self.stack.clone_from(&cpu.stack);
        self.rng_word = cpu.rng.get_word_pos();
        self.iteration = cpu.iteration;
    }

    /// Puts `cpu` back in this state (the random stream is where it was:
    /// a period draws nothing).
    fn restore(&self, cpu: &mut Cpu) {
        cpu.frame = Frame {
            code: self.code,
            pc: self.pc,
            locals_base: self.locals_base,
        };
        cpu.callers.clear();
        cpu.callers
            .extend(self.callers.iter().map(|&(code, pc, locals_base)| Frame {
                code,
                pc,
                locals_base,
            }));
        cpu.locals.clone_from(&self.locals);
        cpu.stack.clone_from(&self.stack);
    }
}

/// What a CPU's last access was, when it was a poll candidate, and its
/// sleep.
#[derive(Clone, Debug, Default)]
pub(in crate::engine) struct SpinWatch {
    /// The code and position of the last load that started, and the CPU's
    /// access count then: a load at the same place right after it (no
    /// access between) is a candidate, and only a candidate's state is
    /// taken, so that loads in code that does not poll cost a comparison.
    last_start: Option<(u32, u32, u64)>,
    /// The state at the load being made (taken as it starts).
    current: CpuState,
    current_taken: bool,
    /// The previous access, when it was a plain hit on a shared line: its
    /// state, cycle, address, size and value, and the CPU's access count
    /// after it.
    previous: CpuState,
    previous_load: Option<PollLoad>,
    /// While asleep: the next load's cycle and the period.
    pub(in crate::engine) asleep: Option<Sleep>,
    /// Where the probe forbids the skip: the sleep the CPU would be in,
    /// while it steps on through the same periods.
    pub(in crate::engine) shadow: Option<Shadow>,
}

/// A sleep not taken (the run steps every poll): the sleep, and the
/// clock and position the sleeping CPU would have been left at, for the
/// error once nothing else is left.
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Shadow {
    sleep: Sleep,
    now: Cycle,
    frame: Frame,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PollLoad {
    at: Cycle,
    address: u64,
    size_bytes: u32,
    field_id: u32,
    value: i64,
    latency: Cycles,
    accesses: u64,
}

#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Sleep {
    /// The cycle of the first load not yet made.
    next_load: Cycle,
    period: Cycles,
    pub(in crate::engine) unit: usize,
    address: u64,
    field_id: u32,
}

impl SpinWatch {
    /// Forgets the period being watched: a scheduling operation in it reads
    /// what other threads do (`task_running`, `need_resched`), and `now()`
    /// reads the clock (a poll with a deadline leaves when the clock passes
    /// it, with its line unchanged), so no two periods around them are
    /// known to be alike.
    pub(in crate::engine) fn forget(&mut self) {
        self.last_start = None;
        self.current_taken = false;
        self.previous_load = None;
    }
}

impl Simulation<'_> {
    /// Whether spin-waits found may sleep (else, with `spin_fast_forward`
    /// on, they are stepped in a shadow of the sleep: `Shadow`; with it
    /// off, the reference engine, nothing looks for them).
    #[inline]
    pub(in crate::engine) fn skips_spins(&self) -> bool {
        self.options.spin_fast_forward && self.private.summed
    }

    /// Whether CPU `i`'s load of `place_id` may start or continue a poll
    /// that sleeps.
    #[inline]
    fn may_poll(&self, i: CpuIndex, place_id: u32) -> bool {
        self.skips_spins() && self.may_watch(i, place_id)
    }

    /// Whether CPU `i`'s load of `place_id` may start or continue a poll,
    /// skipped or not.
    #[inline]
    fn may_watch(&self, i: CpuIndex, place_id: u32) -> bool {
        !self.private.place[place_id as usize]
            && self.cpus[i].outstanding.store_buffer.is_empty()
            // Loads still arriving: every operation takes its place in the
            // reorder window (`in_flight`).
            && self.cpus[i].outstanding.speculating_until <= self.cpus[i].now
            // A period's `work` may change length when a sibling of its
            // core starts or stops running (`sched`): no two periods are
            // known to be alike.
            && !self.sched.smt_dynamic[i.get()]
    }

    /// Called as a load starts: keeps the CPU's state for the comparison
    /// once the load is known to be a plain hit. Where spins are stepped,
    /// a shadowed CPU's poll is where the run may be found to have nothing
    /// else left (`shadowed_poll`).
    #[inline]
    pub(in crate::engine) fn poll_load_starts(
        &mut self,
        i: CpuIndex,
        place_id: u32,
    ) -> Result<(), SimError> {
        if !self.may_poll(i, place_id) {
            if self.options.spin_fast_forward && !self.private.summed {
                return self.watch_load_starts(i, place_id);
            }
            let watch = &mut self.cpus[i].spin;
            (watch.current_taken, watch.last_start) = (false, None);
            return Ok(());
        }
        self.take_poll_candidate(i);
        Ok(())
    }

    /// `poll_load_starts` where spins are stepped: out of line, off the
    /// sleeping run's path.
    #[inline(never)]
    fn watch_load_starts(&mut self, i: CpuIndex, place_id: u32) -> Result<(), SimError> {
        if self.cpus[i].spin.shadow.is_some() {
            return self.shadowed_poll(i);
        }
        if !self.may_watch(i, place_id) {
            let watch = &mut self.cpus[i].spin;
            (watch.current_taken, watch.last_start) = (false, None);
            return Ok(());
        }
        self.take_poll_candidate(i);
        Ok(())
    }

    /// The rest of `poll_load_starts`, for a load that may poll.
    #[inline]
    fn take_poll_candidate(&mut self, i: CpuIndex) {
        let cpu = &mut self.cpus[i];
        let start = (cpu.frame.code, cpu.frame.pc, cpu.accesses);
        let candidate = cpu
            .spin
            .last_start
            .is_some_and(|(code, pc, accesses)| (code, pc, accesses + 1) == start);
        cpu.spin.last_start = Some(start);
        // A value still late (its line arriving) would make the periods
        // differ: a branch on it is predicted, an operation on it waits.
        // `speculating_until` covers every load the CPU has in flight; this
        // also covers a late value whose arrival it does not (a hit read
        // behind a queued load, `in_flight`'s deferred loads).
        let now = cpu.now;
        if !candidate || cpu.outstanding.late.iter().any(|v| v.ready > now) {
            cpu.spin.current_taken = false;
            return;
        }
        let mut current = std::mem::take(&mut cpu.spin.current);
        current.take(cpu);
        cpu.spin.current = current;
        cpu.spin.current_taken = true;
    }

    /// Called after a load by CPU `i` that hit (`report`, returning
    /// `value`): puts the CPU to sleep when it completes a period, or keeps
    /// the load as the next comparison.
    ///
    /// Only a hit that changed nothing and waited for nothing counts: the
    /// core's own copy (`Route::Hit`), started when issued. A hit on a line
    /// the SMT sibling last wrote takes longer and clears that mark (the
    /// next hit is a plain one), and a hit that waited for the copy or for
    /// a locked instruction's hold waited for something that passes; two
    /// such hits in a row (the sibling writing other bytes of the line
    /// between them) looked like a period that the next would not repeat.
    pub(in crate::engine) fn poll_load_hit(
        &mut self,
        i: CpuIndex,
        pending: &PendingAccess,
        report: &AccessReport,
        value: i64,
    ) {
        let skips = self.skips_spins();
        let cpu = &mut self.cpus[i];
        let unchanged = report.route == Route::Hit && report.started == report.issued;
        if !cpu.spin.current_taken || !unchanged {
            cpu.spin.current_taken = false;
            cpu.spin.previous_load = None;
            return;
        }
        cpu.spin.current_taken = false;
        let (issued, latency) = (report.issued, report.done - report.issued);
        let load = PollLoad {
            at: issued,
            address: pending.address,
            size_bytes: pending.size_bytes,
            field_id: pending.field_id,
            value,
            latency,
            accesses: cpu.accesses,
        };
        let repeats = cpu.spin.previous_load.is_some_and(|p| {
            p.accesses + 1 == load.accesses
                && p.address == load.address
                && p.size_bytes == load.size_bytes
                && p.value == load.value
                && p.latency == load.latency
                && p.at < load.at
        }) && cpu.spin.previous == cpu.spin.current;
        if !repeats {
            std::mem::swap(&mut cpu.spin.previous, &mut cpu.spin.current);
            cpu.spin.previous_load = Some(load);
            return;
        }
        let period = load.at - cpu.spin.previous_load.expect("checked").at;
        let unit = self.memory.unit_of(load.address);
        let sleep = Sleep {
            next_load: load.at + period,
            period,
            unit,
            address: load.address,
            field_id: load.field_id,
        };
        cpu.spin.previous_load = None;
        if skips {
            cpu.spin.asleep = Some(sleep);
            cpu.wait = Wait::Spin;
            self.position.sleepers += 1;
            crate::engine::count_shortcut!(self.shortcut_entries, 8);
        } else {
            // Stepped on: the CPU as the sleep would leave it, kept.
            cpu.spin.shadow = Some(Shadow {
                sleep,
                now: cpu.now,
                frame: cpu.frame,
            });
            self.spin_shadows += 1;
        }
        if self.watchers.len() <= unit {
            self.watchers.resize(unit + 1, Vec::new());
        }
        self.watchers[unit].push(i);
    }

    /// An access reaches `unit` at the engine's current position (a
    /// CPU's request or write hit, a drain, a prefetch, the home serving a
    /// waiter): wakes every CPU sleeping on it (a sleeper makes no access,
    /// so none of them is the one reaching it).
    #[inline(always)]
    pub(in crate::engine) fn poll_line_reached(&mut self, unit: usize, probe: &mut dyn Probe) {
        if self.watchers.get(unit).is_some_and(|w| !w.is_empty()) {
            self.wake_watchers(unit, probe);
        }
    }

    /// `poll_line_reached` when someone sleeps on `unit`: out of line, so
    /// the check stays a load and a branch on every access.
    #[inline(never)]
    fn wake_watchers(&mut self, unit: usize, probe: &mut dyn Probe) {
        let sleepers = std::mem::take(&mut self.watchers[unit]);
        let at = self.position.key(self.tie_seed);
        for &s in &sleepers {
            if self.cpus[s].spin.asleep.is_none() {
                self.end_shadow(s);
                continue;
            }
            let resume = self.wake(s, at, probe);
            self.schedule(resume, EventKind::Resume, s);
        }
    }

    /// A shadowed CPU's line is reached: its watch as `wake` leaves a
    /// sleeper's. The next poll is compared afresh (`previous_load` is
    /// already none), and is a candidate only if no poll came since the
    /// sleep's, as after a wake: the start kept is the sleep's poll's (a
    /// shadowed poll leaves it), which the access count follows only then.
    fn end_shadow(&mut self, s: CpuIndex) {
        let watch = &mut self.cpus[s].spin;
        debug_assert!(watch.shadow.is_some() && watch.previous_load.is_none());
        watch.shadow = None;
        watch.current_taken = false;
        self.spin_shadows -= 1;
    }

    /// A shadowed CPU `i` starts a poll: the run ends here,
    /// with the sleeping run's error, when nothing but shadowed CPUs'
    /// polls is left to happen (every queued event is the resume of
    /// another shadowed CPU; `i` is running, so it has none queued):
    /// nothing will ever write their lines. A run with a stop cycle gets
    /// there instead, as a sleeping one does (`settle_sleepers`).
    #[cold]
    #[inline(never)]
    fn shadowed_poll(&mut self, i: CpuIndex) -> Result<(), SimError> {
        if self.stop_cycle.is_some() || self.queue.len() >= self.spin_shadows as usize {
            return Ok(());
        }
        let cpus = &self.cpus;
        let only_shadowed = self.queue.all_keys(|key| {
            let (kind, target) = event_of_key(key);
            kind == EventKind::Resume
                && target != i.get()
                && cpus[CpuIndex::new(target)].spin.shadow.is_some()
        });
        if !only_shadowed {
            return Ok(());
        }
        // Each shadowed CPU put where its sleep would have left it.
        for s in self.cpus.indices() {
            let cpu = &mut self.cpus[s];
            if let Some(shadow) = cpu.spin.shadow.take() {
                (cpu.now, cpu.frame, cpu.wait) = (shadow.now, shadow.frame, Wait::Spin);
                cpu.spin.asleep = Some(shadow.sleep);
            }
        }
        self.spin_shadows = 0;
        Err(self.nothing_left_to_happen())
    }

    /// Wakes sleeping CPU `s` where stepping would have it at the position
    /// `at`: its loads before `at` made (reported summed), the CPU at the
    /// first one not before it. Returns that load's cycle.
    fn wake(&mut self, s: CpuIndex, at: (Cycle, u64), probe: &mut dyn Probe) -> Cycle {
        let tie_seed = self.tie_seed;
        let cpu = &mut self.cpus[s];
        let sleep = cpu.spin.asleep.take().expect("a sleeping CPU");
        self.position.sleepers -= 1;
        let own = |cycle: Cycle| resume_position(tie_seed, cycle, s);
        // Loads at cycles up to `at`'s, the one at its cycle only if it
        // comes first there.
        let mut made = if at.0 < sleep.next_load {
            0
        } else {
            (at.0 - sleep.next_load) / sleep.period + 1
        };
        if made > 0 && own(sleep.next_load + sleep.period * (made - 1)) >= at {
            made -= 1;
        }
        let resume = sleep.next_load + sleep.period * made;
        let state = std::mem::take(&mut cpu.spin.previous);
        state.restore(cpu);
        cpu.spin.previous = state;
        cpu.now = resume;
        cpu.wait = Wait::None;
        crate::engine::count_accesses(&mut self.memory_ops, cpu, made);
        if made > 0 {
            // The polls see the CPU's atomics before them (`summed`).
            self.summed.report(cpu.spec.cpu, probe);
            probe.on_private_hits(
                cpu.spec.cpu,
                &PrivateHits {
                    field_id: sleep.field_id,
                    address: sleep.address,
                    loads: made,
                    stores: 0,
                    stall_cycles: 0,
                    spin_last_load: Some((sleep.next_load + sleep.period * (made - 1)).get()),
                },
            );
        }
        resume
    }

    /// The run stops at `stop`: each sleeping CPU's loads before it are
    /// made, and the CPU is finished there. Returns how many slept.
    pub(in crate::engine) fn settle_sleepers(
        &mut self,
        stop: Cycle,
        probe: &mut dyn Probe,
    ) -> usize {
        let sleepers = self.wake_every_sleeper((stop, 0), probe);
        for &s in &sleepers {
            self.finish(s);
        }
        sleepers.len()
    }

    /// Wakes every sleeping CPU where stepping would have it at `at`;
    /// returns them.
    fn wake_every_sleeper(&mut self, at: (Cycle, u64), probe: &mut dyn Probe) -> Vec<CpuIndex> {
        let mut woken = Vec::new();
        for s in self.cpus.indices() {
            if let Some(sleep) = self.cpus[s].spin.asleep {
                self.watchers[sleep.unit].retain(|&w| w != s);
                self.wake(s, at, probe);
                woken.push(s);
            }
        }
        woken
    }

    /// CPU `i` is past the cycle budget at `now`, its turn: the run stops
    /// at the first CPU past the budget, which a sleeping one polling on
    /// may be. Wakes every sleeper where stepping would have it then, and
    /// returns the cycle the run stops at.
    pub(in crate::engine) fn stop_at_budget(
        &mut self,
        now: Cycle,
        i: CpuIndex,
        probe: &mut dyn Probe,
    ) -> Cycle {
        let tie_seed = self.tie_seed;
        let budget = Cycle::new(self.config.max_cycles);
        let own = |cycle: Cycle, s: CpuIndex| resume_position(tie_seed, cycle, s);
        let mut stop = own(now, i);
        for (s, cpu) in self.cpus.enumerate() {
            if let Some(sleep) = cpu.spin.asleep {
                let past = if sleep.next_load > budget {
                    sleep.next_load
                } else {
                    let polls = (budget - sleep.next_load) / sleep.period + 1;
                    sleep.next_load + sleep.period * polls
                };
                stop = stop.min(own(past, s));
            }
        }
        self.wake_every_sleeper(stop, probe);
        stop.0
    }

    /// A deadlock's description of what sleeping CPU `cpu` waits for.
    pub(in crate::engine) fn spin_wait_description(&self, cpu: &Cpu) -> Option<String> {
        let sleep = cpu.spin.asleep?;
        Some(format!(
            "another CPU to write line {} (address {:#x}), which it reads in a loop that changes nothing else",
            sleep.unit, sleep.address
        ))
    }
}
