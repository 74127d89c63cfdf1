//! The run-ahead loop for codes with superinstructions (`script::fuse`),
//! for the common case of a CPU whose private accesses can all run ahead:
//! what `run_ahead_loop` checks before every superinstruction and every
//! private access (the store buffer, the private targets, the locals, the
//! turn to take, the line's state) is checked once per call here, since
//! none of it can change while the CPU runs ahead alone.
//!
//! It runs exactly what `run_ahead_loop::<true>` would, stopping at the
//! same operation with the same stack, clock and state: each private access
//! is the same plain hit at the same cycle, summed the same way. Every
//! other case goes to `run_ahead_loop::<true>`.

use crate::coherence::{Coherence, PrivateLine};
use crate::engine::{
    binary_value, count_accesses, read_value, write_value, Cpu, PrivateTarget, Simulation, Turn,
    BINARY_OPS, MAX_STACK, NOT_PRIVATE, REPEAT_HEAD_OPS,
};
use crate::error::SimError;
use crate::script::ast::BinaryOp;
use crate::script::compile::Op;
use crate::script::fuse::{Destination, Fused, Operand};
use crate::time::Cycle;

/// What the fused loop knows of one private slot's line during one call.
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
struct PrivateAccess<'a, const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool> {
    coherence: &'a mut Coherence,
    bytes: &'a mut [u8],
    targets: &'a [PrivateTarget],
    lines: &'a mut [SlotLine],
    core: u32,
    thread: u8,
    l1_hit_cycles: u64,
    /// When an access must take its turn, when `TAKES_TURNS`.
    turn: Turn,
    /// The invariant check that failed after an access (the loop stops
    /// with it, before the access counts, as `plain_hit` fails).
    failed: Option<SimError>,
}

impl<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>
    PrivateAccess<'_, CHECK_INVARIANTS, TAKES_TURNS>
{
    /// Looks at `slot`'s line on its first access in this call.
    #[inline(never)]
    fn look_at_line(&mut self, slot: usize) {
        let target = self.targets[slot];
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

    /// `plain_hit` at `now` of a load from private `slot`, with its sums:
    /// its completion and the value read, as `run_ahead_loop` makes it;
    /// `None` where the plain loop stops before it (a turn to take, a miss,
    /// a failed check: see `stopped`).
    #[inline(always)]
    fn load(&mut self, slot: usize, now: Cycle) -> Option<(Cycle, i64)> {
        if TAKES_TURNS && self.turn.must_yield(now.0) {
            return None;
        }
        if self.lines[slot].access < LINE_READ {
            if self.lines[slot].access != LINE_UNKNOWN {
                return None;
            }
            self.look_at_line(slot);
            if self.lines[slot].access < LINE_READ {
                return None;
            }
        }
        let state = &mut self.lines[slot];
        let done = now.max(state.floor) + self.l1_hit_cycles;
        if CHECK_INVARIANTS {
            let unit = self.targets[slot].unit;
            if let Err(e) = self.coherence.check_unit(unit, done) {
                self.failed = Some(e);
                return None;
            }
        }
        let state = &mut self.lines[slot];
        state.loads += 1;
        // Cycles beyond an L1 hit that the CPU waited for the line:
        // `(done - now) - L1` (seldom any: the line came long ago).
        if state.floor > now {
            state.stall_cycles += state.floor - now;
        }
        let (address, size_bytes) = (state.address, state.size_bytes);
        Some((done, read_whole_field(self.bytes, address, size_bytes)))
    }

    /// `plain_hit` at `now` of a store of `value` to private `slot`, with
    /// its sums, as `run_ahead_loop` makes it: its completion.
    #[inline(always)]
    fn store(&mut self, slot: usize, now: Cycle, value: i64) -> Option<Cycle> {
        if TAKES_TURNS && self.turn.must_yield(now.0) {
            return None;
        }
        if self.lines[slot].access != LINE_WRITE {
            if self.lines[slot].access != LINE_UNKNOWN {
                return None;
            }
            self.look_at_line(slot);
            if self.lines[slot].access != LINE_WRITE {
                return None;
            }
        }
        let state = &mut self.lines[slot];
        let done = now.max(state.floor) + self.l1_hit_cycles;
        if CHECK_INVARIANTS {
            // `LINE_WRITE` comes with the line.
            let unit = self.targets[slot].unit;
            if let Some(line) = state.line {
                self.coherence
                    .apply_private_writes(unit, line, self.thread, 1);
            }
            if let Err(e) = self.coherence.check_unit(unit, done) {
                self.failed = Some(e);
                return None;
            }
        } else {
            state.pending_writes += 1;
        }
        let state = &mut self.lines[slot];
        state.stores += 1;
        let (address, size_bytes) = (state.address, state.size_bytes);
        write_whole_field(self.bytes, address, size_bytes, value);
        Some(done)
    }

    /// The result of a loop stopped at an access that did not happen.
    #[cold]
    fn stopped(&mut self) -> Result<(), SimError> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `read_value` with the common 8-byte field first, inlined.
#[inline(always)]
fn read_whole_field(bytes: &[u8], address: u64, size_bytes: u32) -> i64 {
    if size_bytes == 8 {
        let start = address as usize;
        i64::from_le_bytes(bytes[start..start + 8].try_into().unwrap())
    } else {
        read_value(bytes, address, size_bytes)
    }
}

/// `write_value` with the common 8-byte field first, inlined.
#[inline(always)]
fn write_whole_field(bytes: &mut [u8], address: u64, size_bytes: u32, value: i64) {
    if size_bytes == 8 {
        let start = address as usize;
        bytes[start..start + 8].copy_from_slice(&value.to_le_bytes());
    } else {
        write_value(bytes, address, size_bytes, value)
    }
}

impl Simulation<'_> {
    /// `run_ahead` for a code with a fused table.
    #[inline(never)]
    pub(in crate::engine) fn run_ahead_fused(&mut self, i: usize) -> Result<(), SimError> {
        let cpu = &self.cpus[i];
        let base = cpu.frame.locals_base as usize;
        // What `run_ahead_loop` checks before each superinstruction and
        // private access, and which nothing here can change: the store
        // buffer (no store here posts to it), the CPU's private targets,
        // and the frame's locals.
        let hoistable = self.options.hoisted_private_hits
            && self.sum_private_hits
            && self.store_buffer_entries != 0
            && cpu.store_buffer.is_empty()
            && self.private_targets_resolved[i]
            && cpu.locals.len() >= base + self.fused_locals[cpu.frame.code as usize] as usize;
        if !hoistable {
            return self.run_ahead_loop::<true>(i);
        }
        crate::engine::count_shortcut!(self.shortcut_entries, 4);
        // `must_yield(now, i)` for every `now` of this call (nothing here
        // queues an event).
        let turn = if self.private_only[i] {
            Turn::NEVER
        } else {
            self.turn(i)
        };
        let slots = self.private_slots;
        let Simulation {
            cpus,
            coherence,
            bytes,
            code_ops,
            fused_code,
            private_slot,
            private_targets,
            private_hits,
            slot_lines,
            memory_ops,
            time_limit,
            topology,
            ..
        } = self;
        let cpu = &mut cpus[i];
        let code = cpu.frame.code as usize;
        let (ops, fused) = (code_ops[code], &fused_code[code][..]);
        let targets = &private_targets[i * slots..(i + 1) * slots];
        let lines = &mut slot_lines[..slots];
        let (core, thread) = (cpu.core, cpu.thread);
        let l1_hit_cycles = topology.spec.latency.l1_hit_cycles;
        let check_invariants = coherence.check_invariants;
        // The loop for the CPU's case: the checks on or off, turns taken
        // or not.
        macro_rules! run {
            ($check:literal, $turns:literal) => {
                run_fused(
                    cpu,
                    ops,
                    fused,
                    private_slot,
                    &mut PrivateAccess::<$check, $turns> {
                        coherence,
                        bytes,
                        targets,
                        lines,
                        core,
                        thread,
                        l1_hit_cycles,
                        turn,
                        failed: None,
                    },
                    *time_limit,
                )
            };
        }
        let result = match (check_invariants, !self.private_only[i]) {
            (false, false) => run!(false, false),
            (false, true) => run!(false, true),
            (true, false) => run!(true, false),
            (true, true) => run!(true, true),
        };
        // The sums and the writes' state changes, and the slots left clean
        // for the next call.
        let sums = &mut private_hits[i * slots..(i + 1) * slots];
        for ((state, hits), target) in slot_lines[..slots].iter_mut().zip(sums).zip(targets) {
            if state.access == LINE_UNKNOWN {
                continue;
            }
            if let (Some(line), 1..) = (state.line, state.pending_writes) {
                coherence.apply_private_writes(target.unit, line, thread, state.pending_writes);
            }
            count_accesses(memory_ops, cpu, state.loads + state.stores);
            hits.loads += state.loads;
            hits.stores += state.stores;
            hits.stall_cycles += state.stall_cycles;
            *state = SlotLine::default();
        }
        result
    }
}

/// The fused loop proper: the CPU's frame from its program counter, until
/// an operation `run_ahead_loop` would stop at. (Out of line: inlined into
/// `run_ahead_fused` beside `run_ahead_loop`, its registers spill.)
#[inline(never)]
fn run_fused<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>(
    cpu: &mut Cpu,
    ops: &[Op],
    fused: &[Fused],
    private_slot: &[u32],
    access: &mut PrivateAccess<'_, CHECK_INVARIANTS, TAKES_TURNS>,
    time_limit: u64,
) -> Result<(), SimError> {
    let base = cpu.frame.locals_base as usize;
    let Cpu {
        stack,
        locals,
        frame,
        now: cpu_now,
        ..
    } = cpu;
    let locals = &mut locals[base..];
    // The clock and the program counter in registers, written back at the end.
    let mut now = *cpu_now;
    let mut pc = frame.pc;
    // Room for the two operands a superinstruction's plain operations
    // push; only plain operations change the stack.
    let mut room = stack.len() + 2 <= MAX_STACK;
    // An operand as the plain operations read it, or where they stop: at a
    // private load that does not happen (`$before`, then stop), or at the
    // time limit after one (`$after` with its value, then stop).
    macro_rules! operand {
        ($operand:expr, |$value:ident| $after:block, $before:block) => {
            match $operand {
                Operand::Const(v) => v,
                Operand::Local(slot) => locals[slot as usize],
                Operand::Private(slot) => match access.load(slot as usize, now) {
                    Some((done, $value)) => {
                        now = done;
                        if done.0 >= time_limit {
                            $after;
                            break Ok(());
                        }
                        $value
                    }
                    None => {
                        $before;
                        break access.stopped();
                    }
                },
            }
        };
    }
    let result = loop {
        let Some(entry) = fused.get(pc as usize) else {
            break Ok(());
        };
        let op = match *entry {
            Fused::Plain(op) => op,
            // The plain head pushes two operands at most.
            Fused::RepeatHead { counter, exit } if room => {
                let left = &mut locals[counter as usize];
                if *left > 0 {
                    *left -= 1;
                    pc += REPEAT_HEAD_OPS;
                } else {
                    pc = exit;
                }
                continue;
            }
            // The plain operations push both operands; where they would
            // stop, the values read so far stay on the stack.
            Fused::Binary {
                left,
                right,
                op,
                destination,
            } if room => {
                let left = operand!(
                    left,
                    |value| {
                        stack.push(value);
                        pc += 1;
                    },
                    {}
                );
                let right = operand!(
                    right,
                    |value| {
                        stack.extend_from_slice(&[left, value]);
                        pc += 2;
                    },
                    {
                        stack.push(left);
                        pc += 1;
                    }
                );
                let value = if op == BinaryOp::Add {
                    Some(left.wrapping_add(right))
                } else {
                    binary_value(op, left, right)
                };
                let Some(value) = value else {
                    stack.extend_from_slice(&[left, right]);
                    pc += 2;
                    break Ok(());
                };
                match destination {
                    Destination::Local(slot) => locals[slot as usize] = value,
                    Destination::Private(slot) => match access.store(slot as usize, now, value) {
                        Some(done) => {
                            now = done;
                            if done.0 >= time_limit {
                                pc += BINARY_OPS;
                                break Ok(());
                            }
                        }
                        None => {
                            stack.push(value);
                            pc += BINARY_OPS - 1;
                            break access.stopped();
                        }
                    },
                }
                pc += BINARY_OPS;
                continue;
            }
            Fused::LoopBack { target } => {
                now += 1;
                pc = target;
                if now.0 >= time_limit {
                    break Ok(());
                }
                continue;
            }
            // No room on the stack: the plain first operation.
            _ => ops[pc as usize],
        };
        match run_plain(
            op,
            stack,
            locals,
            private_slot,
            access,
            &mut now,
            time_limit,
        ) {
            Plain::Next => pc += 1,
            Plain::Jump(target) => pc = target,
            Plain::Access => {
                pc += 1;
                if now.0 >= time_limit {
                    break Ok(());
                }
            }
            Plain::JumpThenStop(target) => {
                pc = target;
                break Ok(());
            }
            Plain::Stop(result) => break result,
        }
        room = stack.len() + 2 <= MAX_STACK;
    };
    *cpu_now = now;
    frame.pc = pc;
    result
}
/// How a plain operation in the fused loop went.
enum Plain {
    Next,
    Jump(u32),
    /// A private access done (the clock moved to its completion).
    Access,
    /// A loop back-edge that reached the time limit.
    JumpThenStop(u32),
    Stop(Result<(), SimError>),
}

/// One plain operation as `run_ahead_loop` runs it, given what the fused
/// loop hoisted (the store buffer empty, the private targets resolved).
#[inline(always)]
fn run_plain<const CHECK_INVARIANTS: bool, const TAKES_TURNS: bool>(
    op: Op,
    stack: &mut Vec<i64>,
    locals: &mut [i64],
    private_slot: &[u32],
    access: &mut PrivateAccess<'_, CHECK_INVARIANTS, TAKES_TURNS>,
    now: &mut Cycle,
    time_limit: u64,
) -> Plain {
    match op {
        Op::Push(v) => {
            if stack.len() >= MAX_STACK {
                return Plain::Stop(Ok(()));
            }
            stack.push(v);
        }
        Op::Local(slot) => {
            let Some(&v) = locals.get(slot as usize) else {
                return Plain::Stop(Ok(()));
            };
            if stack.len() >= MAX_STACK {
                return Plain::Stop(Ok(()));
            }
            stack.push(v);
        }
        Op::SetLocal(slot) => {
            if slot as usize >= locals.len() {
                return Plain::Stop(Ok(()));
            }
            let Some(v) = stack.pop() else {
                return Plain::Stop(Ok(()));
            };
            locals[slot as usize] = v;
        }
        Op::Pop => {
            if stack.pop().is_none() {
                return Plain::Stop(Ok(()));
            }
        }
        Op::Binary(op) => {
            let n = stack.len();
            if n < 2 {
                return Plain::Stop(Ok(()));
            }
            let Some(r) = binary_value(op, stack[n - 2], stack[n - 1]) else {
                return Plain::Stop(Ok(()));
            };
            stack[n - 2] = r;
            stack.truncate(n - 1);
        }
        Op::Jump(target) => return Plain::Jump(target),
        Op::JumpIfZero(target) | Op::JumpIfNonZero(target) => {
            let Some(v) = stack.pop() else {
                return Plain::Stop(Ok(()));
            };
            if (v == 0) == matches!(op, Op::JumpIfZero(_)) {
                return Plain::Jump(target);
            }
        }
        Op::LoopBack(target) => {
            *now += 1;
            if now.0 >= time_limit {
                return Plain::JumpThenStop(target);
            }
            return Plain::Jump(target);
        }
        Op::Load(place) => {
            let slot = private_slot[place as usize];
            if slot == NOT_PRIVATE || stack.len() >= MAX_STACK {
                return Plain::Stop(Ok(()));
            }
            return match access.load(slot as usize, *now) {
                Some((done, value)) => {
                    stack.push(value);
                    *now = done;
                    Plain::Access
                }
                None => Plain::Stop(access.stopped()),
            };
        }
        Op::Store(place) => {
            let slot = private_slot[place as usize];
            let Some(&value) = stack.last() else {
                return Plain::Stop(Ok(()));
            };
            if slot == NOT_PRIVATE {
                return Plain::Stop(Ok(()));
            }
            return match access.store(slot as usize, *now, value) {
                Some(done) => {
                    stack.pop();
                    *now = done;
                    Plain::Access
                }
                None => Plain::Stop(access.stopped()),
            };
        }
        _ => return Plain::Stop(Ok(())),
    }
    Plain::Next
}
