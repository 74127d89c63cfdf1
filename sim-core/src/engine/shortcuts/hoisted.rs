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
use crate::engine::store_buffer::STORE_POST_CYCLES;
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
/// The field's value is held here for the call too: read from the bytes at
/// the first look, written back at the end if stored (no other place can
/// reach the slot's bytes while the loop runs: every access that is not to
/// a slot stops it, and the slots' bytes are disjoint, `PrivatePlaces::
/// disjoint`).
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::engine) struct SlotLine {
    /// What a plain hit may do on the line: one of the `LINE_` values.
    access: u8,
    /// `64 - 8 * size`: a stored value as the field's bytes give it back,
    /// `(value << shift) >> shift` (`read_value` after `write_value`).
    shift: u8,
    /// The place's size for this CPU (`PrivateTarget`), 1 to 8 bytes
    /// where the line allows hits (wider and empty fields are left to
    /// `step`).
    size_bytes: u32,
    /// `PrivateLine::floor`: a hit at `now` is done at `max(now, floor) + L1`.
    floor: Cycle,
    /// The field's value for the running CPU while the loop runs.
    value: i64,
    /// The place's address for this CPU (`PrivateTarget`).
    address: u64,
    line: Option<PrivateLine>,
    loads: u64,
    /// Write hits; with the invariants off, their state changes are still
    /// to be made (`settle_slot_lines`).
    stores: u64,
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
    bytes: &'a [u8],
    /// Per place, its private slot; the running CPU's targets by slot.
    slot: &'a [Option<u32>],
    targets: &'a [Option<PrivateTarget>],
    lines: &'a mut [SlotLine],
    core: u32,
    thread: u8,
    l1_hit_cycles: Cycles,
    /// When an access must take its turn, when `TAKES_TURNS`.
    turn: Turn,
    /// When the last store made here is in its line (`Cpu::store_written_at`).
    written_at: Cycle,
    /// The invariant check that failed after an access (the run stops
    /// there, before the access counts, as `plain_hit` fails).
    failed: Option<Box<SimError>>,
}

/// Looks at a slot's line on its first access in a call: what a plain hit
/// may do there, and the field's value. A CPU without an element misses
/// (left to `step`, which reports it), and so does a field wider than a
/// value or without bytes.
#[inline(never)]
fn look_at_line(
    state: &mut SlotLine,
    target: Option<PrivateTarget>,
    coherence: &Coherence,
    bytes: &[u8],
    core: u32,
    thread: u8,
) {
    let Some(target) = target.filter(|t| (1..=8).contains(&t.size_bytes)) else {
        state.access = LINE_MISS;
        return;
    };
    let line = coherence.private_line(core, thread, target.unit);
    // The sums were left at zero by the last call's end.
    state.access = match line {
        None => LINE_MISS,
        Some(line) if line.writable => LINE_WRITE,
        Some(_) => LINE_READ,
    };
    state.floor = line.map_or(Cycle::ZERO, |line| line.floor);
    (state.address, state.size_bytes) = (target.address, target.size_bytes);
    state.shift = (64 - 8 * target.size_bytes) as u8;
    state.line = line;
    if line.is_some() {
        state.value = read_value(bytes, target.address, target.size_bytes);
    }
}

impl<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>
    Hoisted<'_, CHECK_INVARIANTS, TAKES_TURNS>
{
    /// Private `slot`'s line, if it allows a plain hit that needs
    /// `at_least` (`LINE_READ` or `LINE_WRITE`); looked at on its first
    /// access in this call. (One bounds check on the common path.)
    #[inline(always)]
    fn line_allowing(&mut self, slot: usize, at_least: u8) -> Result<&mut SlotLine, Halt> {
        let state = &mut self.lines[slot];
        if state.access < at_least {
            if state.access != LINE_UNKNOWN {
                return Err(Halt);
            }
            let target = self.targets.get(slot).copied().flatten();
            look_at_line(
                state,
                target,
                self.coherence,
                self.bytes,
                self.core,
                self.thread,
            );
            if state.access < at_least {
                return Err(Halt);
            }
        }
        Ok(state)
    }

    /// With the invariants on, private `slot`'s line checked after a hit
    /// done at `done` (as `plain_hit` checks it).
    #[inline(always)]
    fn checked(&mut self, slot: usize, done: Cycle) -> Result<(), Halt> {
        if CHECK_INVARIANTS {
            if let Some(target) = self.targets[slot] {
                self.check(target.unit, done)?;
            }
        }
        Ok(())
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
        if TAKES_TURNS && self.turn.must_yield(now) {
            return Err(Halt);
        }
        let l1_hit_cycles = self.l1_hit_cycles;
        let state = self.line_allowing(slot, LINE_READ)?;
        if state.floor > now {
            // The line is still arriving: left to `step` (`in_flight`).
            // So a load here never waits beyond an L1 hit.
            return Err(Halt);
        }
        // `max(now, floor) + L1`, the floor behind.
        let done = now + l1_hit_cycles;
        let value = state.value;
        if CHECK_INVARIANTS {
            self.checked(slot, done)?;
            let state = &mut self.lines[slot];
            state.loads += 1;
        } else {
            state.loads += 1;
        }
        Ok((done, value))
    }

    #[inline(always)]
    fn store(&mut self, slot: u32, now: Cycle, value: i64) -> Result<Cycle, Halt> {
        let slot = slot as usize;
        if TAKES_TURNS && self.turn.must_yield(now) {
            return Err(Halt);
        }
        let l1_hit_cycles = self.l1_hit_cycles;
        let thread = self.thread;
        let state = self.line_allowing(slot, LINE_WRITE)?;
        let done = now.max(state.floor) + l1_hit_cycles;
        if CHECK_INVARIANTS {
            // The write's state change before the check, as `plain_hit`
            // makes it (`LINE_WRITE` comes with the line).
            if let (Some(line), Some(target)) = (state.line, self.targets[slot]) {
                self.coherence
                    .apply_private_writes(target.unit, line, thread, 1);
            }
            self.checked(slot, done)?;
            let state = &mut self.lines[slot];
            state.stores += 1;
            state.value = (value << state.shift) >> state.shift;
        } else {
            state.stores += 1;
            state.value = (value << state.shift) >> state.shift;
        }
        // Posted, as `store` has it: the L1 write (`done`) goes on behind
        // the CPU.
        self.written_at = done;
        Ok(now + STORE_POST_CYCLES)
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
            && self.private.disjoint
            && self.store_buffer_entries != 0
            && cpu.outstanding.store_buffer.is_empty();
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
                            written_at: Cycle::ZERO,
                            failed: None,
                        },
                    ),
                    ops,
                    fused,
                )
            };
        }
        let (failed, written_at, _superinstructions) = match (check_invariants, !private_only) {
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
        let accesses = settle_slot_lines(
            &mut slot_lines[..slots],
            sums,
            targets,
            coherence,
            bytes,
            thread,
            cpus[i].now,
        );
        let cpu = &mut cpus[i];
        // The later write only (no edit of the outstanding work otherwise).
        if written_at > cpu.outstanding.store_written_at {
            cpu.outstanding.edit().store_written_at = written_at;
        }
        count_accesses(memory_ops, cpu, accesses);
        match failed {
            None => Ok(()),
            Some(e) => Err(*e),
        }
    }
}

/// The end of a hoisted call: each slot's hits added to its sums, its
/// value written back and its writes' state changes made (with the
/// invariants off; on, each write made its own), and the slot left clean
/// for the next call; the accesses made, counted.
fn settle_slot_lines(
    lines: &mut [SlotLine],
    sums: &mut [crate::probe::PrivateHits],
    targets: &[Option<PrivateTarget>],
    coherence: &mut Coherence,
    bytes: &mut [u8],
    thread: u8,
    end: Cycle,
) -> u64 {
    let writes_pending = !coherence.check_invariants;
    let mut accesses = 0;
    for ((state, hits), target) in lines.iter_mut().zip(sums).zip(targets) {
        if state.access == LINE_UNKNOWN {
            continue;
        }
        if let (Some(line), Some(target)) = (state.line, target) {
            // The line's recency (`coherence::capacity`): its last
            // access here was before the call's end, each taking a cycle
            // at least, and every later access is at the end or after.
            // (Their order among this call's lines is not kept: the call
            // runs only while its core holds no more lines than the L1D
            // has ways, `Coherence::private_line`.)
            if state.loads + state.stores > 0 {
                coherence.touch_private(target.unit, line, Cycle::new(end.get().saturating_sub(1)));
            }
        }
        if state.stores > 0 {
            write_value(bytes, state.address, state.size_bytes, state.value);
            if let (Some(line), Some(target), true) = (state.line, target, writes_pending) {
                coherence.apply_private_writes(target.unit, line, thread, state.stores);
            }
        }
        accesses += state.loads + state.stores;
        hits.loads += state.loads;
        hits.stores += state.stores;
        // The loads here never wait beyond an L1 hit (`load`): no stall
        // cycles to add.
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
) -> (Option<Box<SimError>>, Cycle, u64) {
    let Halt = machine.run_fused(ops, fused);
    (frame.pc, *now, *operations) = machine.position();
    let written_at = machine.policy().written_at;
    (
        machine.take_failure(),
        written_at,
        machine.superinstructions(),
    )
}
