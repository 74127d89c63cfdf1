//! Misses in flight: a load that misses does not hold its CPU. Its value
//! is read when the line's home orders the request (as before) and pushed
//! at once, marked late until the line arrives; the CPU goes on, and waits
//! only at an operation that needs a late value (`await_operands`), or when
//! every one of the core's miss buffers (`MachineSpec::outstanding_misses`)
//! is taken by a miss still in flight (`await_miss_buffer`). A load to a
//! line already arriving for the core shares that fetch: late until the
//! line is there, holding no buffer of its own.
//!
//! What needs a value: an operation that computes with it, branches on it,
//! stores it or addresses memory with it, a call's arguments, a builtin's
//! arguments, the value a procedure returns. Moving a value between the
//! stack and a local, or dropping it, does not. Atomics, `fence` and the end
//! of an iteration wait for every miss in flight: a locked instruction or a
//! fence orders every earlier load, and an iteration's cycles are its
//! loads' too.
//!
//! The reorder window (`MachineSpec::reorder_window_entries`, when not 0):
//! - arithmetic on a late value does not wait: its result is late until
//!   the latest of its operands arrives;
//! - a branch on a late value asks the CPU's predictor, which guesses the
//!   direction the branch took the last time it ran (a 1-bit predictor per
//!   branch site, code and pc; a site never run is guessed not taken).
//!   The model knows the value (read where the home ordered the load), so
//!   it compares: a right guess goes on at once; a wrong one waits for the
//!   value and then `mispredict_penalty_cycles`. Every conditional branch
//!   records its direction, whichever machine runs it (`Registers::
//!   branch_went`, the run-ahead loop's `repeat` head too); a spin-wait
//!   asleep in the spin watch repeats one period, whose directions it has
//!   already recorded, so the shortcuts leave the predictor as `step`
//!   would. A spin-wait's exit is thus mispredicted, as on the hardware;
//!   the wrong path of such a branch (on a value the model knows) is not
//!   executed;
//! - the CPU goes on past its oldest load still arriving for at most its
//!   window's entries (`Cpu::window_entries`: halved while the SMT sibling
//!   runs too), then waits for that load. The one rule for what a script
//!   takes of the window (no source gives the scripts' instruction counts,
//!   so it is an assumption): one entry per operation, `N x
//!   dispatch_width` for `work N`, which fills the window at the core's
//!   dispatch width and stops, partly done, when it is full;
//! - a store posted while loads are arriving may enter the store buffer but
//!   not drain before the last of them arrives (`BufferedStore::not_before`:
//!   x86-TSO retires a store after every older instruction).
//!
//! Atomics, fences and scheduling operations wait for every load in flight
//! as before. With no window (0), branches and arithmetic wait for their
//! values, stores drain at once, and nothing is limited but the miss
//! buffers, as before the window existed.
//!
//! Loads queued at a busy line's home (with a window; without one, such a
//! load parks its CPU until served, `Wait::Line`, as before): the load
//! goes into flight too (`queue_load`), holding a miss buffer and a window
//! entry whose arrival is unknown (`Cycle::MAX`) until the home serves it.
//! Its value is not read yet: its late mark carries a ticket, and the value
//! pushed is a placeholder. A later load to the same line shares its
//! request. A load after it, whatever it hits or misses, takes its cycles
//! as usual but reads its value only once every older queued load has been
//! served, in program order (`Cpu::deferred`; x86-TSO keeps loads in order:
//! without this, a message-passing reader could see a new flag and old
//! data). Whatever needs such a value (arithmetic, a branch, an access's
//! operands, `work`), a store (the drain order needs the load's arrival),
//! an atomic, a fence, a scheduling operation or an iteration's end, a full
//! window or a full set of miss buffers: each parks the CPU
//! (`Wait::Served`) until the home serves one of its queued loads. Then
//! `line_free` (`serve_deferred`) fills the values in, everywhere they were
//! copied, and resumes the CPU only if it was parked; the operation is
//! stepped again. Where an operation parks for such a value
//! (`await_value`: arithmetic, a branch, a store or call of it, ...), the
//! core does not stop fetching: its script runs ahead in shadow from there
//! (`speculate`, `Waiting::Value`), a branch on the value going the way
//! the predictor guesses, and requests the lines its loads need within
//! the window's entries left and the free miss buffers; the branch then
//! resolves, once the value is read, as any branch on a late value (a
//! wrong guess pays the penalty, and the wrong path's lines stay
//! fetched).
//!
//! Loads whose address is still arriving (with a window): a load whose
//! address operands are all known but one is a load still arriving does not
//! hold the CPU either (`park_load`). It takes its window entry and is
//! deferred as a queued load is (its value unknown, younger loads reading
//! theirs after it), and `EventKind::IssueLoad` issues it at the address's
//! arrival, in the global order, as a load issues at its turn
//! (`issue_parked_loads`: a hit, a share of a fetch or of an older queued
//! request, a miss when a miss buffer is free then, or a request queued at
//! the home). What needs its value waits for it as for a queued load's. A
//! buffered store overlapping its bytes, or an address that is itself a
//! value not read yet, keeps the wait for the address.
//!
//! Only `step` (the `Ordered` machine) meets late values: the run-ahead
//! loop does not start while a CPU has one or is speculating, and stops
//! before a private load on a line still arriving, so the shortcuts leave
//! every late value to the plain path.

use super::speculate::Waiting;
use super::*;

/// Where a late value sits: an operand stack entry, or a local (its index
/// in the CPU's locals, all frames').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Stack(u32),
    Local(u32),
}

/// A loaded value whose line has not arrived yet.
#[derive(Clone, Copy, Debug)]
pub(super) struct LateValue {
    pub(super) slot: Slot,
    /// The cycle the line arrives (the access's `done`).
    pub(super) ready: Cycle,
    /// The access, for the probe's wait.
    pub(super) address: u64,
    pub(super) field_id: u32,
    /// Not 0: the value is not read yet (its `ready` is `Cycle::MAX`): it
    /// is the deferred load with this ticket's (`Cpu::deferred`).
    pub(super) ticket: u32,
}

/// A load whose value is not read yet: queued at its line's home, or
/// younger than such a load (x86-TSO keeps loads in order, so it reads its
/// value when every older load has read its own).
#[derive(Clone, Debug)]
pub(super) struct DeferredLoad {
    /// The value's mark in `Cpu::late` (and its copies').
    pub(super) ticket: u32,
    pub(super) access: PendingAccess,
    pub(super) unit: usize,
    /// Still queued at the line's home, or not issued yet: its arrival is
    /// unknown.
    pub(super) unserved: bool,
    /// Not issued yet: its address is a value still arriving, and the load
    /// issues at `issued`, that value's arrival (`EventKind::IssueLoad`);
    /// `Cycle::MAX` while every miss buffer is held by a load still queued
    /// at its home (the home's serve of one sets it).
    pub(super) awaits_address: bool,
    /// It holds a miss buffer (a request of its own, not one shared with
    /// an older queued load to the same line).
    pub(super) buffer: bool,
    /// Its window position (`WindowEntry::seq`), for loads with an entry.
    pub(super) seq: Option<u64>,
    pub(super) issued: Cycle,
    /// When its line arrives (once served).
    pub(super) done: Cycle,
    /// The coherence report, for the probe (a load sharing a fetch has
    /// none, as a hit).
    pub(super) report: Option<AccessReport>,
}

impl DeferredLoad {
    /// Issued and queued at `unit`'s home (its request may be shared).
    pub(super) fn queued_for(&self, unit: usize) -> bool {
        self.unserved && !self.awaits_address && self.unit == unit
    }
}

/// Parks CPU `cpu` until the home serves one of its queued loads (true:
/// the operation is stepped again then).
fn await_served(cpu: &mut Cpu) -> bool {
    cpu.wait = Wait::Served;
    cpu.wait_since = cpu.now;
    true
}

/// The direction CPU `cpu`'s predictor guesses for the conditional branch
/// at its program counter: the one it took the last time it ran (a site
/// never run: not taken).
pub(super) fn predicted_taken(cpu: &Cpu) -> bool {
    cpu.predictor
        .get(cpu.frame.code as usize)
        .and_then(|sites| sites.get(cpu.frame.pc as usize))
        .is_some_and(|&last| last == 1)
}

/// Whether the value at `slot` is not read yet (a deferred load's), among
/// a CPU's late values.
fn unknown_at(late: &[LateValue], slot: Slot) -> bool {
    late.iter().any(|v| v.slot == slot && v.ticket != 0)
}

/// An operand is a value not read yet (a queued load's, or one waiting for
/// its address: `LateValue::ticket` set).
struct NotReadYet;

/// Among a CPU's late values, those in its stack slots from `lowest` up
/// (an operation's operands): the one arriving last, if any (its arrival
/// may be past already), or `NotReadYet` where one is not read yet. The
/// one scan behind both `await_operands`'s wait for operands and
/// `late_address`.
fn latest_operand(late: &[LateValue], lowest: u32) -> Result<Option<LateValue>, NotReadYet> {
    let mut latest: Option<LateValue> = None;
    for v in late {
        if matches!(v.slot, Slot::Stack(k) if k >= lowest) {
            if v.ticket != 0 {
                return Err(NotReadYet);
            }
            if latest.is_none_or(|l| v.ready > l.ready) {
                latest = Some(*v);
            }
        }
    }
    Ok(latest)
}

/// A load still arriving, in the CPU's reorder window.
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowEntry {
    /// Its position in the CPU's operations (`Cpu::dispatched`).
    pub(super) seq: u64,
    pub(super) ready: Cycle,
    pub(super) address: u64,
    pub(super) field_id: u32,
}

/// What an operation reads of the CPU's values before it runs.
enum Reads {
    /// The top `n` stack entries.
    Top(usize),
    /// Every late value, and every miss in flight.
    Everything,
}

impl Simulation<'_> {
    /// Before CPU `i` steps `op`: moves the late marks that `op` only moves
    /// (a local pushed, a value set into a local, a value dropped), and when
    /// `op` needs a late value, or is an atomic, a fence or an iteration's
    /// end with misses in flight, waits for them: the clock moves to their
    /// arrival and the answer is true, and `op` is stepped again from the
    /// new cycle (an access takes its turn there). (One match over the
    /// operation's stack effect, on every step with late values about:
    /// kept whole so that it stays one dispatch.)
    pub(super) fn await_operands(
        &mut self,
        i: CpuIndex,
        op: Op,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        // A load whose address is still arriving (known, not a queued
        // load's) does not hold the CPU (`park_load`).
        if let Op::Load(place) = op {
            if let Some(address_ready) = self.late_address(i, place) {
                if let Some(stepped) = self.park_load(i, place, address_ready, probe)? {
                    return Ok(stepped);
                }
            }
        }
        let cpu = &mut self.cpus[i];
        let now = cpu.now;
        // One edit of the outstanding work for the marks moved and the
        // waits below, ended before the CPU is parked or the clock moves.
        let mut work = cpu.outstanding.edit();
        work.late.retain(|v| v.ready > now);
        work.in_flight.retain(|&ready| ready > now);
        let depth = cpu.stack.len() as u32;
        let base = cpu.frame.locals_base;
        let local_slot = |slot: u16| Slot::Local(base + slot as u32);
        let reads = match op {
            Op::Push(_) | Op::Jump(_) | Op::LoopBack(_) => return Ok(false),
            Op::Local(slot) => {
                let from = local_slot(slot);
                if let Some(v) = work.late.iter().find(|v| v.slot == from).copied() {
                    work.late.push(LateValue {
                        slot: Slot::Stack(depth),
                        ..v
                    });
                }
                return Ok(false);
            }
            Op::SetLocal(slot) => {
                let to = local_slot(slot);
                work.late.retain(|v| v.slot != to);
                if let Some(v) = work
                    .late
                    .iter_mut()
                    .find(|v| depth > 0 && v.slot == Slot::Stack(depth - 1))
                {
                    v.slot = to;
                }
                return Ok(false);
            }
            Op::Pop => {
                work.late
                    .retain(|v| depth == 0 || v.slot != Slot::Stack(depth - 1));
                return Ok(false);
            }
            // With a reorder window, arithmetic does not wait: its result
            // is late until its last operand arrives. A value not read yet
            // (a queued load's) cannot be computed with: it waits.
            Op::Unary(_) if cpu.window_entries > 0 => {
                let unknown = unknown_at(&work.late, Slot::Stack(depth.wrapping_sub(1)));
                drop(work);
                return if unknown {
                    self.await_value(i, Waiting::Value, probe)
                } else {
                    Ok(false)
                };
            }
            Op::Binary(_) if cpu.window_entries > 0 => {
                let (a, b) = (
                    Slot::Stack(depth.wrapping_sub(2)),
                    Slot::Stack(depth.wrapping_sub(1)),
                );
                if unknown_at(&work.late, a) || unknown_at(&work.late, b) {
                    drop(work);
                    return self.await_value(i, Waiting::Value, probe);
                }
                let later = work.late.iter().find(|v| v.slot == b).copied();
                work.late.retain(|v| v.slot != b);
                if let Some(later) = later {
                    match work.late.iter_mut().find(|v| v.slot == a) {
                        Some(v) if v.ready >= later.ready => {}
                        Some(v) => *v = LateValue { slot: a, ..later },
                        None => work.late.push(LateValue { slot: a, ..later }),
                    }
                }
                return Ok(false);
            }
            Op::JumpIfZero(_) | Op::JumpIfNonZero(_) if cpu.window_entries > 0 => {
                drop(work);
                return self.predict_branch(i, op, probe);
            }
            Op::Unary(_)
            | Op::JumpIfZero(_)
            | Op::JumpIfNonZero(_)
            | Op::Work
            | Op::Assert(_)
            | Op::Return => Reads::Top(1),
            Op::Binary(_) => Reads::Top(2),
            Op::Load(place) | Op::AddressOf(place) => {
                Reads::Top(operand_count(&self.program.places[place as usize]))
            }
            Op::Store(place) => Reads::Top(1 + operand_count(&self.program.places[place as usize])),
            Op::Call(proc_index) => {
                Reads::Top(self.program.procedures[proc_index as usize].param_count as usize)
            }
            // Builtins take at most three arguments, and seldom follow a
            // load: all of the stack, to be brief.
            // The scheduling operations are full barriers (the runqueue's
            // and the futex bucket's locks): every miss, as an atomic.
            Op::Builtin(b) if b.schedules() => Reads::Everything,
            Op::Builtin(_) => Reads::Top(depth as usize),
            Op::Atomic(..) | Op::Fence | Op::EndIteration => Reads::Everything,
        };
        // What a locked instruction's run ahead (`speculate`) must not
        // take for a known address: the values still arriving, whose marks
        // the wait below clears.
        let arriving: Vec<i64> = if matches!(op, Op::Atomic(..)) && cpu.window_entries > 0 {
            super::speculate::late_values(&work.late, &cpu.stack, &cpu.locals).collect()
        } else {
            Vec::new()
        };
        let (mut ready, mut waited_for) = (now, None);
        match reads {
            Reads::Top(n) => {
                let lowest = depth.saturating_sub(n as u32);
                let Ok(latest) = latest_operand(&work.late, lowest) else {
                    drop(work);
                    return self.await_value(i, Waiting::Value, probe);
                };
                if let Some(v) = latest {
                    // The marks kept are all still arriving (pruned above).
                    (ready, waited_for) = (v.ready, Some(v));
                    work.late
                        .retain(|v| !matches!(v.slot, Slot::Stack(k) if k >= lowest));
                }
            }
            // A load still queued: its arrival is unknown until served. A
            // locked instruction parked so runs ahead as one waiting for
            // any older load does (`speculate`), following the values not
            // read yet.
            Reads::Everything if !work.deferred.is_empty() => {
                drop(work);
                if matches!(op, Op::Atomic(..)) {
                    return self.await_value(i, Waiting::LockAfterValue, probe);
                }
                return Ok(await_served(cpu));
            }
            Reads::Everything => {
                for v in work.late.drain(..) {
                    if v.ready > ready {
                        (ready, waited_for) = (v.ready, Some(v));
                    }
                }
                // A miss whose value was dropped still holds its buffer
                // until its line arrives.
                if let Some(&last) = work.in_flight.iter().max() {
                    ready = ready.max(last);
                }
                work.in_flight.clear();
                // And every load in the window has arrived by then.
                if cpu.window_entries > 0 {
                    ready = ready.max(work.speculating_until);
                    work.window.clear();
                }
            }
        }
        drop(work);
        if ready <= now {
            return Ok(false);
        }
        cpu.now = ready;
        let (address, field_id) = waited_for.map_or((0, None), |v| (v.address, Some(v.field_id)));
        probe.on_load_wait(cpu.spec.cpu, now, ready, address, field_id);
        if matches!(op, Op::Atomic(..)) {
            self.speculate_past_lock(
                i,
                now,
                super::speculate::Waiting::NotIssued,
                arriving,
                0,
                probe,
            )?;
        }
        Ok(true)
    }

    /// A branch `op` of CPU `i` (with a reorder window) whose operand may be
    /// late: when it is, the predictor guesses the direction the branch took
    /// the last time it ran. Right, the CPU goes on (false); wrong, it waits
    /// for the value and the misprediction penalty (true: the branch is
    /// stepped again, its value at hand). `execute` records the direction
    /// taken, whichever machine runs the branch.
    fn predict_branch(
        &mut self,
        i: CpuIndex,
        op: Op,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let cpu = &mut self.cpus[i];
        let depth = cpu.stack.len() as u32;
        let top = Slot::Stack(depth.wrapping_sub(1));
        let Some(k) = cpu.outstanding.late.iter().position(|v| v.slot == top) else {
            return Ok(false);
        };
        if cpu.outstanding.late[k].ticket != 0 {
            // Not read yet: the branch waits for the home to serve the
            // load, then is predicted as any other; meanwhile the predicted
            // path runs ahead in shadow (`await_value`).
            return self.await_value(i, Waiting::Value, probe);
        }
        let late = cpu.outstanding.edit().late.swap_remove(k);
        let value = cpu.stack.last().copied().unwrap_or_default();
        let taken = (value == 0) == matches!(op, Op::JumpIfZero(_));
        if predicted_taken(cpu) == taken {
            return Ok(false);
        }
        let now = cpu.now;
        cpu.now = late.ready + self.mispredict_penalty_cycles;
        let (origin, pos) = self.position_ref(&self.cpus[i]);
        let cpu_id = self.cpus[i].spec.cpu;
        probe.on_mispredict(
            cpu_id,
            now,
            late.ready,
            self.mispredict_penalty_cycles.get(),
            &crate::probe::BranchSite {
                origin,
                line: pos.line,
                column: pos.column,
            },
        );
        probe.on_load_wait(cpu_id, now, late.ready, late.address, Some(late.field_id));
        Ok(true)
    }

    /// CPU `i`'s operation at its program counter needs a value not read
    /// yet (a load queued at its home, or waiting for its address): the
    /// CPU parks until the home serves one of its queued loads (true: the
    /// operation is stepped again then), and meanwhile its script runs
    /// ahead in shadow from the operation on, down the predicted path,
    /// requesting the lines its loads need (`speculate`; `waiting` is
    /// `Waiting::Value`, or `Waiting::LockAfterValue` for a locked
    /// instruction parked for an older load, which the run passes as it
    /// passes any waiting locked instruction).
    ///
    /// Those requests reach homes, which take requests in the (cycle, key)
    /// order of the events; the operations that park here (arithmetic, a
    /// branch, a store's value) run ahead of the queue, as everything but
    /// an access does. So where the run would request anything and an
    /// earlier event is still queued, the CPU first waits for its turn
    /// (`Wait::Turn`, its resume queued at the same cycle) and steps the
    /// operation again there: a run ahead of its turn would put its
    /// requests at a home before requests made earlier (a walk's last
    /// line taken from the writer that was about to write it).
    fn await_value(
        &mut self,
        i: CpuIndex,
        waiting: Waiting,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let Some(entries_taken) = self.value_run_entries_taken(i, waiting) else {
            await_served(&mut self.cpus[i]);
            return Ok(true);
        };
        let now = self.cpus[i].now;
        if self.must_yield(now, i) {
            self.cpus[i].wait = Wait::Turn;
            self.schedule(now, EventKind::Resume, i);
            return Ok(true);
        }
        // Its turn, taken as an access's is (a spinner the run's requests
        // wake polls after it).
        self.position.turn = Some((now, i));
        await_served(&mut self.cpus[i]);
        self.speculate_past_value(i, waiting, entries_taken, probe)?;
        Ok(true)
    }

    /// Before CPU `i` takes `entries` of its reorder window for its next
    /// operation: when they do not fit past its oldest load still
    /// arriving, waits for that load (true: the operation is stepped again
    /// from there).
    pub(super) fn await_window(
        &mut self,
        i: CpuIndex,
        entries: u64,
        probe: &mut dyn Probe,
    ) -> bool {
        let cpu = &mut self.cpus[i];
        let now = cpu.now;
        let mut work = cpu.outstanding.edit();
        while work.window.front().is_some_and(|e| e.ready <= now) {
            work.window.pop_front();
        }
        let Some(&oldest) = work.window.front() else {
            return false;
        };
        if (cpu.dispatched - oldest.seq).saturating_add(entries) <= cpu.window_entries {
            return false;
        }
        if oldest.ready == Cycle::MAX {
            // Still queued at its home.
            drop(work);
            return await_served(cpu);
        }
        work.window.pop_front();
        drop(work);
        cpu.now = oldest.ready;
        probe.on_load_wait(
            cpu.spec.cpu,
            now,
            oldest.ready,
            oldest.address,
            Some(oldest.field_id),
        );
        true
    }

    /// The cycles `work` of `cycles` (before SMT stretching) by CPU `i`
    /// stalls on its reorder window: it fills the window at
    /// `dispatch_width` entries a cycle, and when the window is full it
    /// waits for the oldest load still arriving, then goes on. Takes the
    /// work's entries. None, taking nothing, when the work does not fit
    /// before a load still queued at its home fills the window: the CPU
    /// waits for the home to serve it.
    pub(super) fn work_window_stall(&mut self, i: CpuIndex, cycles: u64) -> Option<u64> {
        let width = self.dispatch_width;
        let cpu = &mut self.cpus[i];
        let start = cpu.now;
        let mut left = cycles.saturating_mul(width);
        // Nothing past a queued load's entry + the window can dispatch
        // until it is served (its arrival is unknown).
        if let Some(queued) = cpu
            .outstanding
            .window
            .iter()
            .find(|e| e.ready == Cycle::MAX)
        {
            if cpu.dispatched.saturating_add(left) > queued.seq.saturating_add(cpu.window_entries) {
                await_served(cpu);
                return None;
            }
        }
        let mut at = start;
        let mut work = cpu.outstanding.edit();
        loop {
            while work.window.front().is_some_and(|e| e.ready <= at) {
                work.window.pop_front();
            }
            let Some(&oldest) = work.window.front() else {
                break;
            };
            let free =
                (cpu.window_entries.saturating_add(oldest.seq)).saturating_sub(cpu.dispatched);
            if left <= free {
                break;
            }
            // The free entries take `free / width` cycles; then the window
            // is full until the oldest load arrives.
            cpu.dispatched += free;
            left -= free;
            at = (at + Cycles::new(free.div_ceil(width))).max(oldest.ready);
            work.window.pop_front();
        }
        drop(work);
        // Saturating: `work` of a huge count takes every entry there is.
        cpu.dispatched = cpu.dispatched.saturating_add(left);
        let end = at + Cycles::new(left.div_ceil(width));
        Some((end - start).get().saturating_sub(cycles))
    }

    /// After CPU `i` stepped an operation with late values about: drops the
    /// marks of values the operation took off the stack, or of a returning
    /// procedure's locals.
    pub(super) fn forget_dropped(&mut self, i: CpuIndex) {
        let cpu = &mut self.cpus[i];
        let (depth, locals) = (cpu.stack.len() as u32, cpu.locals.len() as u32);
        cpu.outstanding.edit().late.retain(|v| match v.slot {
            Slot::Stack(k) => k < depth,
            Slot::Local(k) => k < locals,
        });
    }

    /// Before a load by CPU `i` that the core cannot answer from its cache
    /// or from a fetch already under way (it holds no copy of `unit`):
    /// when every miss buffer is taken, waits for the first to free (true:
    /// the load is stepped again from there).
    pub(super) fn await_miss_buffer(
        &mut self,
        i: CpuIndex,
        unit: usize,
        probe: &mut dyn Probe,
    ) -> bool {
        let cpu = &self.cpus[i];
        if cpu.outstanding.in_flight.len() < self.outstanding_misses {
            return false;
        }
        let now = cpu.now;
        if self.coherence.state(cpu.core, unit) != LineState::Invalid {
            return false;
        }
        // It would share the request of an older load queued for the line.
        if cpu.outstanding.deferred.iter().any(|d| d.queued_for(unit)) {
            return false;
        }
        let cpu = &mut self.cpus[i];
        let mut work = cpu.outstanding.edit();
        work.in_flight.retain(|&ready| ready > now);
        if work.in_flight.len() < self.outstanding_misses {
            return false;
        }
        let first = *work.in_flight.iter().min().expect("every buffer is taken");
        if first == Cycle::MAX {
            // Every buffer is held by a load still queued at its home.
            drop(work);
            return await_served(cpu);
        }
        work.in_flight.retain(|&ready| ready > first);
        drop(work);
        cpu.now = first;
        probe.on_load_wait(cpu.spec.cpu, now, first, 0, None);
        true
    }

    /// Completes a load whose line is still on its way: the value (read
    /// where the home ordered the access) pushed and marked late until
    /// `report.done`, a cycle to issue it, and a miss buffer held until then
    /// unless the load shares a fetch already under way (`merged`). Behind
    /// a load still queued at its home, the value is read after that one's
    /// (`deferred`).
    pub(super) fn load_in_flight(
        &mut self,
        i: CpuIndex,
        p: &PendingAccess,
        report: &AccessReport,
        merged: bool,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let deferring = !self.cpus[i].outstanding.deferred.is_empty();
        let value = if deferring {
            0
        } else {
            let value = self.read_value(p.address, p.size_bytes);
            p.bits.map_or(value, |b| b.extract(value))
        };
        let cpu = &mut self.cpus[i];
        // Those that have arrived are free (they are dropped lazily).
        let now = cpu.now;
        let mut work = cpu.outstanding.edit();
        work.in_flight.retain(|&ready| ready > now);
        if !merged {
            work.in_flight.push(report.done);
        }
        if !deferring {
            // A load sees the CPU's atomics before it (`summed`).
            self.summed.report(cpu.spec.cpu, probe);
            probe.on_access(&AccessEvent {
                cpu: cpu.spec.cpu,
                issued: report.issued,
                latency_cycles: report.latency_cycles(),
                kind: AccessKind::Load,
                address: p.address,
                size_bytes: p.size_bytes,
                field_id: p.field_id,
                value,
                new_value: None,
                report: Some(report),
                // The CPU goes on; its waits are reported when a use meets them.
                stall_cycles: 0,
                misses_in_flight: work.in_flight.len().max(1) as u32,
            });
        }
        // Issuing the load takes a cycle of the core, as posting a store does.
        cpu.now += Cycles::new(1);
        let slot = Slot::Stack(cpu.stack.len() as u32);
        if cpu.window_entries > 0 {
            work.window.push_back(WindowEntry {
                seq: cpu.dispatched,
                ready: report.done,
                address: p.address,
                field_id: p.field_id,
            });
        }
        work.speculating_until = work.speculating_until.max(report.done);
        cpu.speculating_known = cpu.speculating_known.max(report.done);
        let ticket = if deferring {
            let ticket = take_ticket(&mut cpu.next_ticket);
            work.deferred.push_back(DeferredLoad {
                ticket,
                access: *p,
                unit: report.unit,
                unserved: false,
                awaits_address: false,
                buffer: false,
                seq: None,
                issued: report.issued,
                done: report.done,
                report: Some(report.clone()),
            });
            ticket
        } else {
            0
        };
        drop(work);
        self.push(i, value)?;
        let cpu = &mut self.cpus[i];
        cpu.outstanding.edit().late.push(LateValue {
            slot,
            ready: if deferring { Cycle::MAX } else { report.done },
            address: p.address,
            field_id: p.field_id,
            ticket,
        });
        self.advance_pc(i);
        Ok(())
    }

    /// A load by CPU `i` that hits in its cache while an older load is
    /// still queued at its home: it takes the hit's cycles, and reads its
    /// value after that one's (`deferred`).
    pub(super) fn defer_hit(
        &mut self,
        i: CpuIndex,
        p: &PendingAccess,
        report: AccessReport,
    ) -> Result<(), SimError> {
        let cpu = &mut self.cpus[i];
        cpu.now = cpu.now.max(report.done);
        let slot = Slot::Stack(cpu.stack.len() as u32);
        let ticket = take_ticket(&mut cpu.next_ticket);
        cpu.outstanding.edit().deferred.push_back(DeferredLoad {
            ticket,
            access: *p,
            unit: report.unit,
            unserved: false,
            awaits_address: false,
            buffer: false,
            seq: None,
            issued: report.issued,
            done: report.done,
            report: Some(report),
        });
        self.push(i, 0)?;
        self.cpus[i].outstanding.edit().late.push(LateValue {
            slot,
            ready: Cycle::MAX,
            address: p.address,
            field_id: p.field_id,
            ticket,
        });
        self.advance_pc(i);
        Ok(())
    }

    /// A load by CPU `i` (with a reorder window) queued at `unit`'s home
    /// behind other requesters, or sharing such a request of an older load
    /// of the CPU (`merged`): the CPU goes on. Its value is not read until
    /// the home serves it; it holds a miss buffer (unless merged) and a
    /// window entry, both until an arrival still unknown (`Cycle::MAX`).
    pub(super) fn queue_load(
        &mut self,
        i: CpuIndex,
        p: PendingAccess,
        unit: usize,
        merged: bool,
    ) -> Result<(), SimError> {
        let cpu = &mut self.cpus[i];
        let now = cpu.now;
        let mut work = cpu.outstanding.edit();
        work.in_flight.retain(|&ready| ready > now);
        if !merged {
            work.in_flight.push(Cycle::MAX);
        }
        let seq = cpu.dispatched;
        work.window.push_back(WindowEntry {
            seq,
            ready: Cycle::MAX,
            address: p.address,
            field_id: p.field_id,
        });
        work.speculating_until = Cycle::MAX;
        let ticket = take_ticket(&mut cpu.next_ticket);
        work.deferred.push_back(DeferredLoad {
            ticket,
            access: p,
            unit,
            unserved: true,
            awaits_address: false,
            buffer: !merged,
            seq: Some(seq),
            issued: now,
            done: Cycle::MAX,
            report: None,
        });
        drop(work);
        // Issuing the load takes a cycle of the core, as for a miss.
        cpu.now += Cycles::new(1);
        let slot = Slot::Stack(cpu.stack.len() as u32);
        self.push(i, 0)?;
        self.cpus[i].outstanding.edit().late.push(LateValue {
            slot,
            ready: Cycle::MAX,
            address: p.address,
            field_id: p.field_id,
            ticket,
        });
        self.advance_pc(i);
        Ok(())
    }

    /// The home of `unit` served CPU `i`'s queued load(s) of it at `at`
    /// (`report`): their arrival is known now, and every deferred load
    /// whose older loads have all been served reads its value, in order.
    /// Returns when the CPU goes on, if it was waiting for them.
    pub(super) fn serve_deferred(
        &mut self,
        i: CpuIndex,
        unit: usize,
        at: Cycle,
        report: &AccessReport,
        probe: &mut dyn Probe,
    ) -> Option<Cycle> {
        let cpu = &mut self.cpus[i];
        let mut first = true;
        let mut served_load = (0, None);
        let mut buffer_freed = false;
        // One edit for the serve: the lists are walked side by side.
        let mut edit = cpu.outstanding.edit();
        let work = &mut *edit;
        for d in work.deferred.iter_mut() {
            if !d.queued_for(unit) {
                continue;
            }
            if first {
                served_load = (d.access.address, Some(d.access.field_id));
            }
            d.unserved = false;
            d.done = report.done;
            if d.buffer {
                if let Some(held) = work.in_flight.iter_mut().find(|r| **r == Cycle::MAX) {
                    *held = report.done;
                    buffer_freed = true;
                }
            }
            // The first holds the request; the others share its fetch.
            if first {
                d.report = Some(report.clone());
                first = false;
            }
            if let Some(entry) = work.window.iter_mut().find(|e| Some(e.seq) == d.seq) {
                entry.ready = report.done;
            }
        }
        drop(edit);
        cpu.speculating_known = cpu.speculating_known.max(report.done);
        // A load waiting for a miss buffer that only queued loads held
        // issues when this one's frees.
        if buffer_freed {
            self.schedule_blocked_issues(i, report.done);
        }
        self.read_deferred_values(i, at, at, served_load, probe)
    }

    /// CPU `i`'s deferred loads whose older loads have all been served
    /// read their values, in program order (at `at`); the CPU goes on (the
    /// answer), from `resume_at` at the earliest, if it was waiting for
    /// them (`Wait::Served`; `served_load` names the load it waited for).
    fn read_deferred_values(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        resume_at: Cycle,
        served_load: (u64, Option<u32>),
        probe: &mut dyn Probe,
    ) -> Option<Cycle> {
        let cpu = &mut self.cpus[i];
        let bytes = &self.bytes;
        // One edit for the values read: the lists are walked side by side.
        let mut edit = cpu.outstanding.edit();
        let work = &mut *edit;
        while work.deferred.front().is_some_and(|d| !d.unserved) {
            let d = work.deferred.pop_front().expect("a front");
            let p = d.access;
            let value = read_value(bytes, p.address, p.size_bytes);
            let value = p.bits.map_or(value, |b| b.extract(value));
            for v in work.late.iter_mut().filter(|v| v.ticket == d.ticket) {
                let place = match v.slot {
                    Slot::Stack(k) => cpu.stack.get_mut(k as usize),
                    Slot::Local(k) => cpu.locals.get_mut(k as usize),
                };
                if let Some(place) = place {
                    *place = value;
                }
                v.ticket = 0;
                v.ready = d.done;
            }
            self.summed.report(cpu.spec.cpu, probe);
            probe.on_access(&AccessEvent {
                cpu: cpu.spec.cpu,
                issued: d.issued,
                latency_cycles: (d.done - d.issued).get(),
                kind: AccessKind::Load,
                address: p.address,
                size_bytes: p.size_bytes,
                field_id: p.field_id,
                value,
                new_value: None,
                report: d.report.as_ref(),
                stall_cycles: 0,
                misses_in_flight: work.in_flight.iter().filter(|&&r| r > at).count().max(1) as u32,
            });
        }
        if work.deferred.is_empty() {
            work.speculating_until = cpu.speculating_known;
        }
        drop(edit);
        if cpu.wait != Wait::Served || cpu.finished {
            return None;
        }
        cpu.wait = Wait::None;
        let since = cpu.wait_since;
        cpu.now = cpu.now.max(resume_at);
        if cpu.now > since {
            probe.on_load_wait(cpu.spec.cpu, since, cpu.now, served_load.0, served_load.1);
        }
        Some(cpu.now)
    }

    /// With a reorder window, when the address operands of CPU `i`'s load
    /// of `place_id` are all known but one still arrives: the arrival of
    /// the latest.
    fn late_address(&self, i: CpuIndex, place_id: u32) -> Option<Cycle> {
        let cpu = &self.cpus[i];
        if cpu.window_entries == 0 {
            return None;
        }
        let operands = operand_count(&self.program.places[place_id as usize]) as u32;
        let lowest = (cpu.stack.len() as u32).checked_sub(operands)?;
        match latest_operand(&cpu.outstanding.late, lowest) {
            Ok(Some(latest)) if latest.ready > cpu.now => Some(latest.ready),
            _ => None,
        }
    }

    /// Before CPU `i` steps the load of `place_id`, whose address operands
    /// are known but the latest of them still arriving (at `address_ready`):
    /// the load does not hold the CPU (a core issues it once its address is
    /// there, and goes on meanwhile). It takes its window entry now and is
    /// deferred, its value unknown, and `EventKind::IssueLoad` issues it at
    /// `address_ready`, in the global order (`issue_parked_loads`). Younger
    /// loads read their values after it (x86-TSO's load order, as behind a
    /// queued load). None, with nothing done, where the load is taken as
    /// before, waiting for its address: a buffered store overlaps its bytes
    /// (forwarding, or a wait for the buffer's drain, is decided at the
    /// load's own turn). Some(true): the CPU is past the load, or waits
    /// for room in its window and steps the load again.
    fn park_load(
        &mut self,
        i: CpuIndex,
        place_id: u32,
        address_ready: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<Option<bool>, SimError> {
        let place = &self.program.places[place_id as usize];
        let target = self.target_of(i, place_id, place, 0)?;
        let (address, size) = (target.address, target.size_bytes);
        let overlaps_a_store = self.cpus[i].outstanding.store_buffer.iter().any(|entry| {
            entry.address < address + size as u64
                && address < entry.address + entry.size_bytes as u64
        });
        if overlaps_a_store {
            return Ok(None);
        }
        if self.await_window(i, 1, probe) {
            return Ok(Some(true));
        }
        self.poll_load_starts(i, place_id)?;
        let place = &self.program.places[place_id as usize];
        let bits = place.bits;
        let operands = operand_count(place) as u32;
        let cpu = &mut self.cpus[i];
        let lowest = (cpu.stack.len() as u32).saturating_sub(operands);
        cpu.outstanding
            .edit()
            .late
            .retain(|v| !matches!(v.slot, Slot::Stack(k) if k >= lowest));
        self.drop_indices(i, &self.program.places[place_id as usize]);
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        let unit = self.memory.unit_of(address);
        let cpu = &mut self.cpus[i];
        let seq = cpu.dispatched;
        let mut work = cpu.outstanding.edit();
        work.window.push_back(WindowEntry {
            seq,
            ready: Cycle::MAX,
            address,
            field_id: target.field_id,
        });
        work.speculating_until = Cycle::MAX;
        // One issue event per cycle does every load parked for it.
        let scheduled = work
            .deferred
            .iter()
            .any(|d| d.awaits_address && d.issued == address_ready);
        let ticket = take_ticket(&mut cpu.next_ticket);
        work.deferred.push_back(DeferredLoad {
            ticket,
            access: PendingAccess {
                op: None,
                address,
                size_bytes: size,
                field_id: target.field_id,
                bits,
                operand: 0,
                expected: 0,
                discard: false,
            },
            unit,
            unserved: true,
            awaits_address: true,
            buffer: false,
            seq: Some(seq),
            issued: address_ready,
            done: Cycle::MAX,
            report: None,
        });
        drop(work);
        // Dispatching the load takes a cycle of the core, as issuing a
        // miss does.
        cpu.now += Cycles::new(1);
        cpu.dispatched = cpu.dispatched.saturating_add(1);
        let slot = Slot::Stack(cpu.stack.len() as u32);
        self.push(i, 0)?;
        self.cpus[i].outstanding.edit().late.push(LateValue {
            slot,
            ready: Cycle::MAX,
            address,
            field_id: target.field_id,
            ticket,
        });
        self.advance_pc(i);
        if !scheduled {
            self.schedule(address_ready, EventKind::IssueLoad, i);
        }
        Ok(Some(true))
    }

    /// Loads of CPU `i` parked for their addresses (`park_load`) that
    /// waited for a miss buffer only queued loads held: they issue at
    /// `free`, when one of those frees. (Not inlined: rare, and its caller
    /// is inlined into `run_events`, as `issue_parked_loads` is not.)
    #[inline(never)]
    fn schedule_blocked_issues(&mut self, i: CpuIndex, free: Cycle) {
        let mut work = self.cpus[i].outstanding.edit();
        let scheduled = work
            .deferred
            .iter()
            .any(|d| d.awaits_address && d.issued == free);
        let mut any = false;
        for d in work.deferred.iter_mut() {
            if d.awaits_address && d.issued == Cycle::MAX {
                d.issued = free;
                any = true;
            }
        }
        drop(work);
        if any && !scheduled {
            self.schedule(free, EventKind::IssueLoad, i);
        }
    }

    /// `EventKind::IssueLoad` at `at`: CPU `i`'s loads parked for their
    /// addresses until `at` issue, in program order, as a load issues at
    /// its turn: a hit (or a share of a fetch already arriving for the
    /// core), a share of an older queued load's request, a miss (when a
    /// miss buffer is free at `at`; else the load issues when the first
    /// frees) or a request queued at the line's home. Then the deferred
    /// loads whose older loads are all served read their values. Answers
    /// the CPU's resume, if it was waiting for them. (Not inlined: a rare
    /// event, kept out of `run_events`' loop, whose code for the common
    /// events it made longer: contended512 +34 instructions per op.)
    #[inline(never)]
    pub(super) fn issue_parked_loads(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<Option<Cycle>, SimError> {
        let mut served_load = (0, None);
        let mut from = 0;
        loop {
            let cpu = &self.cpus[i];
            let Some(k) = cpu
                .outstanding
                .deferred
                .iter()
                .skip(from)
                .position(|d| d.awaits_address && d.issued <= at)
                .map(|k| k + from)
            else {
                break;
            };
            from = k + 1;
            let d = &cpu.outstanding.deferred[k];
            let (p, unit, seq) = (d.access, d.unit, d.seq);
            let (cpu_id, core) = (cpu.spec.cpu, cpu.core);
            let hit =
                self.coherence
                    .try_hit(self.topology, at, cpu_id, unit, Need::Read, Cycles::ZERO);
            let done = if let Some(report) = hit {
                // A hit, or a share of the core's fetch still arriving.
                if self.coherence.check_invariants {
                    self.coherence.check_unit(unit, report.done)?;
                }
                Some(report)
            } else if self.cpus[i]
                .outstanding
                .deferred
                .iter()
                .any(|d| d.queued_for(unit))
            {
                // An older load of the CPU is queued for the line: this one
                // shares its request, served with it.
                self.cpus[i].outstanding.edit().deferred[k].awaits_address = false;
                None
            } else {
                let cpu = &self.cpus[i];
                let held: Vec<Cycle> = cpu
                    .outstanding
                    .in_flight
                    .iter()
                    .copied()
                    .filter(|&r| r > at)
                    .collect();
                if held.len() >= self.outstanding_misses {
                    // Every miss buffer taken: the load issues when the
                    // first frees (a queued load's, once served).
                    let first = held.iter().copied().min().expect("every buffer is taken");
                    let scheduled = cpu
                        .outstanding
                        .deferred
                        .iter()
                        .any(|d| d.awaits_address && d.issued == first);
                    self.cpus[i].outstanding.edit().deferred[k].issued = first;
                    if first != Cycle::MAX && !scheduled {
                        self.schedule(first, EventKind::IssueLoad, i);
                    }
                    continue;
                }
                self.poll_line_reached(unit, probe);
                let misses = self.demand_misses(cpu_id, unit, Need::Read);
                let requested =
                    match self.merge_with_queued_prefetch(i, at, unit, Need::Read, Cycles::ZERO) {
                        Some(merged) => merged,
                        None => self.coherence.request_after_miss(
                            self.topology,
                            at,
                            cpu_id,
                            core,
                            unit,
                            Need::Read,
                            Cycles::ZERO,
                            RequestTag::new(i, RequestKind::Demand),
                        )?,
                    };
                let done = match requested {
                    Requested::Done(report) => {
                        self.cpus[i].outstanding.edit().in_flight.push(report.done);
                        Some(report)
                    }
                    Requested::Queued {
                        free_at,
                        first_waiter,
                    } => {
                        if first_waiter {
                            self.schedule_line_free(free_at, unit);
                        }
                        let mut work = self.cpus[i].outstanding.edit();
                        work.in_flight.push(Cycle::MAX);
                        let d = &mut work.deferred[k];
                        d.awaits_address = false;
                        d.buffer = true;
                        d.issued = at;
                        None
                    }
                };
                if misses {
                    self.prefetch_buddy(i, unit, at, p.field_id, probe)?;
                }
                done
            };
            let Some(report) = done else {
                continue;
            };
            if served_load.1.is_none() {
                served_load = (p.address, Some(p.field_id));
            }
            let cpu = &mut self.cpus[i];
            let mut edit = cpu.outstanding.edit();
            let work = &mut *edit;
            let d = &mut work.deferred[k];
            d.awaits_address = false;
            d.unserved = false;
            d.issued = at;
            d.done = report.done;
            d.report = Some(report.clone());
            if let Some(entry) = work.window.iter_mut().find(|e| Some(e.seq) == seq) {
                entry.ready = report.done;
            }
            drop(edit);
            cpu.speculating_known = cpu.speculating_known.max(report.done);
            self.coherence.recycle(report);
        }
        // A CPU waiting for them resumes in the next cycle: its resume in
        // this one would come before this event among the cycle's events
        // (`event_class`), which have been taken up to here.
        Ok(self.read_deferred_values(i, at, at + Cycles::new(1), served_load, probe))
    }
}

/// A new deferred load's ticket (never 0), from the CPU's next.
fn take_ticket(next_ticket: &mut u32) -> u32 {
    let ticket = *next_ticket;
    *next_ticket = next_ticket.wrapping_add(1).max(1);
    ticket
}

/// The run-time operands of an access to `place` on the stack.
pub(super) fn operand_count(place: &PlaceRef) -> usize {
    place.pointer as usize + place.has_element as usize + place.has_index as usize
}
