//! The run-ahead machine's policy for private hits when nothing can change
//! a private line while the CPU runs ahead (`EngineOptions::
//! hoisted_private_hits`): a code with a fused table, hits summed, the
//! store buffer empty. What `Summed` asks of the line on every access
//! (`Coherence::plain_hit`) is asked once per line and call here
//! (`Coherence::private_line`, the same hit rule), and the writes' state
//! changes are made once, at the end: each access is the same hit at the
//! same cycle, summed the same way.

use crate::coherence::{Coherence, PrivateLine};
use crate::cpu::CpuIndex;
use crate::engine::shortcuts::run_ahead::{Ahead, Halt, PrivateAccesses};
use crate::engine::{
    count_accesses, read_value, write_value, PrivatePlaces, PrivateTarget, Simulation, Turn,
};
use crate::error::SimError;
use crate::time::{Cycle, Cycles};

/// What the hoisted policy knows of one private slot's line during one call.
/// Plain hits change nothing `Coherence::private_line` looks at, so its
/// answer holds for the whole call; their writes' state changes are made
/// once, at the end (or one by one when the invariants are checked, which
/// compares the copy's write count with the line's after each access).
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::engine) struct SlotLine {
    /// What a plain hit may do on the line: one of the `LINE_` values.
    access: u8,
    /// `PrivateLine::floor`: a hit at `now` is done at `max(now, floor) + L1`.
    floor: Cycle,
    /// The place's address and size for this CPU (`PrivateTarget`).
    address: u64,
    size_bytes: u32,
    line: Option<PrivateLine>,
    loads: u64,
    stores: u64,
    stall_cycles: u64,
    /// Write hits whose state changes are still to be made.
    pending_writes: u64,
}

/// `SlotLine::access`: not looked at yet in this call (zero, the default),
/// no plain hit (every access would miss), reads only, reads and writes.
const LINE_UNKNOWN: u8 = 0;
const LINE_MISS: u8 = 1;
const LINE_READ: u8 = 2;
const LINE_WRITE: u8 = 3;

/// Everything a private access reaches, borrowed for one call.
/// `CHECK_INVARIANTS`: the line is checked after each access (as
/// `plain_hit` does when the invariants are on). `TAKES_TURNS`: the CPU
/// makes other than private accesses, so each access takes its turn (see
/// `turn`); a CPU with private accesses only never yields.
pub(in crate::engine) struct Hoisted<'a, const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool> {
    coherence: &'a mut Coherence,
    bytes: &'a mut [u8],
    /// Per place, its private slot; the running CPU's targets by slot.
    slot: &'a [Option<u32>],
    targets: &'a [Option<PrivateTarget>],
    lines: &'a mut [SlotLine],
    core: u32,
    thread: u8,
    l1_hit_cycles: Cycles,
    /// When an access must take its turn, when `TAKES_TURNS`.
    turn: Turn,
    /// The invariant check that failed after an access (the run stops
    /// there, before the access counts, as `plain_hit` fails).
    failed: Option<Box<SimError>>,
}

impl<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>
    Hoisted<'_, CHECK_INVARIANTS, TAKES_TURNS>
{
    /// Looks at `slot`'s line on its first access in this call.
    #[inline(never)]
    fn look_at_line(&mut self, slot: usize) {
        // A CPU without an element misses (left to `step`, which reports it).
        let Some(target) = self.targets[slot] else {
            self.lines[slot].access = LINE_MISS;
            return;
        };
        let line = self
            .coherence
            .private_line(self.core, self.thread, target.unit);
        // The sums were left at zero by the last call's end.
        let state = &mut self.lines[slot];
        state.access = match line {
            None => LINE_MISS,
            Some(line) if line.writable => LINE_WRITE,
            Some(_) => LINE_READ,
        };
        state.floor = line.map_or(Cycle::ZERO, |line| line.floor);
        (state.address, state.size_bytes) = (target.address, target.size_bytes);
        state.line = line;
    }

    /// Whether private `slot`'s line allows a plain hit that needs `at_least`
    /// (`LINE_READ` or `LINE_WRITE`), looked at on its first access in this
    /// call.
    #[inline(always)]
    fn allows(&mut self, slot: usize, at_least: u8) -> bool {
        let access = self.lines[slot].access;
        if access >= at_least {
            return true;
        }
        if access != LINE_UNKNOWN {
            return false;
        }
        self.look_at_line(slot);
        self.lines[slot].access >= at_least
    }

    /// The hit at `now` on private `slot` (known to allow it): its
    /// completion, `max(now, floor) + L1`, as `plain_hit` makes it; with
    /// the invariants on, the line checked after it.
    #[inline(always)]
    fn hit(&mut self, slot: usize, now: Cycle) -> Result<Cycle, Halt> {
        let state = &self.lines[slot];
        let done = now.max(state.floor) + self.l1_hit_cycles;
        if CHECK_INVARIANTS {
            if let Some(target) = self.targets[slot] {
                self.check(target.unit, done)?;
            }
        }
        Ok(done)
    }

    #[cold]
    fn check(&mut self, unit: usize, done: Cycle) -> Result<(), Halt> {
        self.coherence.check_unit(unit, done).map_err(|e| {
            self.failed = Some(Box::new(e));
            Halt
        })
    }
}

impl<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool> PrivateAccesses
    for Hoisted<'_, CHECK_INVARIANTS, TAKES_TURNS>
{
    #[inline(always)]
    fn slot_of(&self, place: u32) -> Option<u32> {
        self.slot[place as usize]
    }

    #[inline(always)]
    fn load(&mut self, slot: u32, now: Cycle) -> Result<(Cycle, i64), Halt> {
        let slot = slot as usize;
        if (TAKES_TURNS && self.turn.must_yield(now)) || !self.allows(slot, LINE_READ) {
            return Err(Halt);
        }
        if self.lines[slot].floor > now {
            // The line is still arriving: left to `step` (`in_flight`).
            return Err(Halt);
        }
        let done = self.hit(slot, now)?;
        let state = &mut self.lines[slot];
        state.loads += 1;
        // Cycles beyond an L1 hit that the CPU waited for the line:
        // `(done - now) - L1` (seldom any: the line came long ago).
        if state.floor > now {
            state.stall_cycles += (state.floor - now).get();
        }
        let (address, size_bytes) = (state.address, state.size_bytes);
        Ok((done, read_value(self.bytes, address, size_bytes)))
    }

    #[inline(always)]
    fn store(&mut self, slot: u32, now: Cycle, value: i64) -> Result<Cycle, Halt> {
        let slot = slot as usize;
        if (TAKES_TURNS && self.turn.must_yield(now)) || !self.allows(slot, LINE_WRITE) {
            return Err(Halt);
        }
        if CHECK_INVARIANTS {
            // The write's state change before the check, as `plain_hit`
            // makes it (`LINE_WRITE` comes with the line).
            if let (Some(line), Some(target)) = (self.lines[slot].line, self.targets[slot]) {
                self.coherence
                    .apply_private_writes(target.unit, line, self.thread, 1);
            }
        } else {
            self.lines[slot].pending_writes += 1;
        }
        let done = self.hit(slot, now)?;
        let state = &mut self.lines[slot];
        state.stores += 1;
        let (address, size_bytes) = (state.address, state.size_bytes);
        write_value(self.bytes, address, size_bytes, value);
        Ok(done)
    }

    fn take_failure(&mut self) -> Option<Box<SimError>> {
        self.failed.take()
    }
}

impl Simulation<'_> {
    /// `run_ahead` for a code with a fused table: the [`Hoisted`] policy
    /// where it applies, else `Summed`. (Long because the four
    /// monomorphised loops, checks on or off and turns taken or not, are
    /// spelled out by one macro here, with the borrows they share.)
    #[inline(never)]
    pub(in crate::engine) fn run_ahead_fused(&mut self, i: CpuIndex) -> Result<(), SimError> {
        let cpu = &self.cpus[i];
        // What `Summed` asks before each private access and which nothing
        // here can change: the store buffer (no store here posts to it).
        let hoistable = self.options.hoisted_private_hits
            && self.private.summed
            && self.store_buffer_entries != 0
            && cpu.store_buffer.is_empty();
        if !hoistable {
            return self.run_ahead_summed::<true>(i);
        }
        crate::engine::count_shortcut!(self.shortcut_entries, 4);
        // `must_yield(now, i)` for every `now` of this call (nothing here
        // queues an event).
        let turn = self.private_turn(i);
        let private_only = self.private.only[i.get()];
        let Simulation {
            cpus,
            coherence,
            bytes,
            code_ops,
            fused_code,
            private,
            memory_ops,
            time_limit,
            topology,
            shortcut_entries,
            config,
            ..
        } = self;
        let cpu = &mut cpus[i];
        let code = cpu.frame.code as usize;
        let (ops, fused) = (code_ops[code], &fused_code[code][..]);
        let PrivatePlaces {
            slot,
            slots,
            targets,
            hits: sums,
            lines: slot_lines,
            ..
        } = private;
        let slots = *slots;
        let targets = &targets[i.get() * slots..(i.get() + 1) * slots];
        let lines = &mut slot_lines[..slots];
        let (core, thread) = (cpu.core, cpu.thread);
        let l1_hit_cycles = Cycles::new(topology.spec.latency.l1_hit_cycles);
        let check_invariants = coherence.check_invariants;
        // The loop for the CPU's case: the checks on or off, turns taken
        // or not.
        macro_rules! run {
            ($check:literal, $turns:literal) => {
                run_hoisted(
                    Ahead::new(
                        cpu,
                        *time_limit,
                        config.max_operations,
                        Hoisted::<$check, $turns> {
                            coherence,
                            bytes,
                            slot,
                            targets,
                            lines,
                            core,
                            thread,
                            l1_hit_cycles,
                            turn,
                            failed: None,
                        },
                    ),
                    ops,
                    fused,
                )
            };
        }
        let (failed, _superinstructions) = match (check_invariants, !private_only) {
            (false, false) => run!(false, false),
            (false, true) => run!(false, true),
            (true, false) => run!(true, false),
            (true, true) => run!(true, true),
        };
        #[cfg(feature = "shortcut-counts")]
        {
            shortcut_entries[3] += _superinstructions;
        }
        let _ = shortcut_entries;
        let sums = &mut sums[i.get() * slots..(i.get() + 1) * slots];
        let accesses =
            settle_slot_lines(&mut slot_lines[..slots], sums, targets, coherence, thread);
        count_accesses(memory_ops, &mut cpus[i], accesses);
        match failed {
            None => Ok(()),
            Some(e) => Err(*e),
        }
    }
}

/// The end of a hoisted call: each slot's hits added to its sums, its
/// writes' state changes made, and the slot left clean for the next call;
/// the accesses made, counted.
fn settle_slot_lines(
    lines: &mut [SlotLine],
    sums: &mut [crate::probe::PrivateHits],
    targets: &[Option<PrivateTarget>],
    coherence: &mut Coherence,
    thread: u8,
) -> u64 {
    let mut accesses = 0;
    for ((state, hits), target) in lines.iter_mut().zip(sums).zip(targets) {
        if state.access == LINE_UNKNOWN {
            continue;
        }
        if let (Some(line), Some(target), 1..) = (state.line, target, state.pending_writes) {
            coherence.apply_private_writes(target.unit, line, thread, state.pending_writes);
        }
        accesses += state.loads + state.stores;
        hits.loads += state.loads;
        hits.stores += state.stores;
        hits.stall_cycles += state.stall_cycles;
        *state = SlotLine::default();
    }
    accesses
}

/// The hoisted run proper, out of line (inlined into `run_ahead_fused`
/// beside the other cases, its registers spill): the machine's position
/// and clock written back to the CPU, and the superinstructions entered.
#[inline(never)]
fn run_hoisted<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>(
    (mut machine, frame, now, operations): (
        Ahead<'_, Hoisted<'_, CHECK_INVARIANTS, TAKES_TURNS>>,
        &mut crate::engine::Frame,
        &mut Cycle,
        &mut u64,
    ),
    ops: &[crate::script::compile::Op],
    fused: &[crate::script::fuse::Fused],
) -> (Option<Box<SimError>>, u64) {
    let Halt = machine.run_fused(ops, fused);
    (frame.pc, *now, *operations) = machine.position();
    (machine.take_failure(), machine.superinstructions())
}
