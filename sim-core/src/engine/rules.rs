//! The operation rules: what each script operation does to a CPU's
//! stack, locals, frames and clock (`step`), the builtins, iteration ends,
//! places resolved to addresses, pointers, and the arithmetic.

use super::*;
use rand::distr::{Distribution, Uniform};
use rand_distr::Exp1;

/// A CPU at the start of its script's next iteration. Always inline (at
/// every iteration's end, the contended handover's included); a script
/// with locals sets them up out of line.
#[inline(always)]
pub(super) fn start_iteration(cpu: &mut Cpu) {
    cpu.operations += cpu.script_ops;
    cpu.stack.clear();
    cpu.callers.clear();
    cpu.locals.clear();
    // Most scripts have no locals: skip the call.
    if cpu.script_locals > 0 {
        fresh_locals(&mut cpu.locals, cpu.script_locals as usize);
    }
    cpu.frame = Frame {
        code: cpu.spec.script,
        pc: 0,
        locals_base: 0,
    };
}

/// `locals` as `count` zeroed locals (from empty).
#[inline(never)]
fn fresh_locals(locals: &mut Vec<i64>, count: usize) {
    locals.resize(count, 0);
}

/// What an iteration's end touches besides its CPU: the simulation's
/// pieces, borrowed apart so that a caller holding the CPU keeps it.
pub(super) struct IterationEnd<'a, 'c> {
    pub config: &'c SimConfig,
    pub summed: &'a mut shortcuts::summed::Summed,
    pub measure_start: &'a mut Cycle,
    pub shortcut_entries: &'a mut ShortcutEntries,
    /// `Simulation::last_iteration`.
    pub last_iteration: u64,
}

/// `cpu`'s iteration ends (its summed private hits already reported, see
/// [`Simulation::end_iteration`]): the probe told or the batch added to,
/// the count moved on, and the next iteration started, or, after the
/// last one, its frames dropped. Answers whether that was its last
/// iteration (the caller then finishes it).
#[inline(always)]
pub(super) fn end_iteration_of(cpu: &mut Cpu, with: IterationEnd, probe: &mut dyn Probe) -> bool {
    let warmup = with.config.warmup_iterations;
    let measured = cpu.iteration >= warmup;
    if measured && with.summed.iterations {
        count_shortcut!(with.shortcut_entries, 10);
        let cycles = (cpu.now - cpu.iteration_start).get();
        with.summed.add_iteration(cpu.spec.cpu, cycles, probe);
    } else {
        if !measured {
            // A warm-up iteration's end may start the CPU's measured
            // window: its atomics before it count as warm-up (`summed`).
            with.summed.report(cpu.spec.cpu, probe);
        }
        probe.on_iteration(
            cpu.spec.cpu,
            cpu.iteration,
            cpu.iteration_start,
            cpu.now,
            measured,
        );
    }
    cpu.iteration += 1;
    if cpu.iteration == warmup {
        *with.measure_start = (*with.measure_start).max(cpu.now);
    }
    if cpu.iteration >= with.last_iteration {
        cpu.callers.clear();
        return true;
    }
    cpu.iteration_start = cpu.now;
    start_iteration(cpu);
    false
}

// A pointer is an integer that carries its target: the address in bits
// 0-39, the size (at most 8 bytes are read or written) in bits 40-43, and
// the field's identity, for attribution, in bits 44-62. Zero is never a
// pointer, since every field has a size.
pub(super) const POINTER_ADDRESS_BITS: u32 = 40;

pub(super) const POINTER_SIZE_BITS: u32 = 4;

pub(super) fn encode_pointer(t: Target) -> i64 {
    let size = t.size_bytes.min(8) as u64;
    ((t.field_id as u64) << (POINTER_ADDRESS_BITS + POINTER_SIZE_BITS)
        | size << POINTER_ADDRESS_BITS
        | t.address) as i64
}

/// The place a pointer value names, if it is one `&inst.field` or `part()`
/// could have made: its field id names a field of the program, and its bytes
/// lie inside one element of that field and inside one line. A number a
/// script forged (stored, loaded back, shifted) that fails any of these is
/// not a pointer, so it can neither touch memory no field owns nor make an
/// access that straddles two lines, which the protocol has no rule for.
pub(super) fn decode_pointer(
    pointer: i64,
    memory: &MemoryLayout,
    field_names: &[(u32, u32)],
) -> Option<Target> {
    if pointer <= 0 {
        return None;
    }
    let v = pointer as u64;
    let address = v & ((1 << POINTER_ADDRESS_BITS) - 1);
    let size = (v >> POINTER_ADDRESS_BITS) & ((1 << POINTER_SIZE_BITS) - 1);
    let field_id = v >> (POINTER_ADDRESS_BITS + POINTER_SIZE_BITS);
    let &(instance, field) = field_names.get(usize::try_from(field_id).ok()?)?;
    if size == 0 || address + size > memory.total_bytes {
        return None;
    }
    let line_bytes = memory.unit_bytes as u64;
    if address / line_bytes != (address + size - 1) / line_bytes {
        return None;
    }
    let instance = &memory.instances[instance as usize];
    let def = &memory.structs[instance.struct_index];
    let field = &def.fields[field as usize];
    // Element bases ascend (the allocator places elements in order): the
    // last base at or below the address is the only element it can be in.
    let after = instance
        .element_addresses
        .partition_point(|&base| base <= address);
    let base = instance.element_addresses[after.checked_sub(1)?];
    let offset = address - base;
    let first = field.offset_bytes as u64;
    if offset < first || field.stride_bytes == 0 && field.count > 1 {
        return None;
    }
    let element = if field.count > 1 {
        (offset - first) / field.stride_bytes as u64
    } else {
        0
    };
    if element >= field.count as u64 {
        return None;
    }
    let start = first + element * field.stride_bytes as u64;
    if offset + size > start + field.size_bytes as u64 {
        return None;
    }
    Some(Target {
        address,
        size_bytes: size as u32,
        field_id: field_id as u32,
    })
}

/// The value of `a op b`; `None` for a division by zero or a shift out of
/// range (`Failure::Binary` says which). Small enough to inline into the
/// run-ahead loop, which leaves the failing cases to `step`.
#[inline(always)]
pub(super) fn binary_value(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
    // The commonest, ahead of the table the match compiles to.
    if op == BinaryOp::Add {
        return Some(a.wrapping_add(b));
    }
    Some(match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div | BinaryOp::Rem => {
            if b == 0 {
                return None;
            }
            if op == BinaryOp::Div {
                a.wrapping_div(b)
            } else {
                a.wrapping_rem(b)
            }
        }
        BinaryOp::BitAnd => a & b,
        BinaryOp::BitOr => a | b,
        BinaryOp::BitXor => a ^ b,
        BinaryOp::Shl | BinaryOp::Shr => {
            if !(0..64).contains(&b) {
                return None;
            }
            if op == BinaryOp::Shl {
                a.wrapping_shl(b as u32)
            } else {
                a.wrapping_shr(b as u32)
            }
        }
        BinaryOp::Eq => (a == b) as i64,
        BinaryOp::Ne => (a != b) as i64,
        BinaryOp::Lt => (a < b) as i64,
        BinaryOp::Le => (a <= b) as i64,
        BinaryOp::Gt => (a > b) as i64,
        BinaryOp::Ge => (a >= b) as i64,
        BinaryOp::And => (a != 0 && b != 0) as i64,
        BinaryOp::Or => (a != 0 || b != 0) as i64,
    })
}

/// The value a field of `size` bytes holds for `value`: its low bytes,
/// sign-extended, since fields hold signed integers.
pub(super) fn sign_extend(value: i64, size: u32) -> i64 {
    match size.min(8) {
        0 => 0,
        n => {
            let shift = 64 - 8 * n;
            (value << shift) >> shift
        }
    }
}

/// A uniform draw in 0..bound without modulo bias (rejection sampling).
pub(super) fn uniform_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    uniform_below_in_zone(rng, bound, acceptance_zone(bound))
}

/// The draws `uniform_below` accepts for `bound` are those below this.
pub(super) fn acceptance_zone(bound: u64) -> u64 {
    u64::MAX - (u64::MAX % bound)
}

/// `uniform_below` with the bound's acceptance zone computed beforehand.
#[inline]
pub(super) fn uniform_below_in_zone(rng: &mut ChaCha8Rng, bound: u64, zone: u64) -> u64 {
    loop {
        let v = rng.next_u64();
        if v < zone {
            return v % bound;
        }
    }
}

/// Why an operation cannot happen as its rule states. `step` reports it
/// as the script's error; a CPU running ahead stops before the operation,
/// with nothing of it done, and leaves it to `step` to report.
#[derive(Clone, Copy, Debug)]
pub(super) enum Failure {
    StackOverflow,
    StackEmpty,
    /// A local slot the running frame does not have (the compiler never
    /// names one).
    NoLocal(u16),
    /// `a op b` has no value: the operation and `b`.
    Binary(BinaryOp, i64),
    NegativeWork(i64),
    /// `assert` found zero: the assertion's index in `Program::positions`.
    Assertion(u32),
}

impl Failure {
    fn message(self) -> String {
        match self {
            Failure::StackOverflow => "operand stack overflow".into(),
            Failure::StackEmpty => "internal: operand stack empty".into(),
            Failure::NoLocal(slot) => format!("internal: no local slot {slot} in this frame"),
            Failure::Binary(BinaryOp::Shl | BinaryOp::Shr, b) => {
                format!("shift by {b} is out of range 0..=63")
            }
            Failure::Binary(..) => "division by zero".into(),
            Failure::NegativeWork(cycles) => format!("`work {cycles}`: cycles must be >= 0"),
            Failure::Assertion(_) => "assertion failed".into(),
        }
    }
}

/// Where the operation rules ([`execute`]) run: a CPU's registers (its
/// operand stack, the running frame's locals, its program counter and
/// clock), and what the operations that reach past them do there.
///
/// Two machines exist: `step`'s ([`Ordered`]), where every operation takes
/// effect and every failure is the script's error; and the run-ahead loop's
/// (`shortcuts::run_ahead::Ahead`), which runs a CPU ahead of the event
/// queue and stops, with nothing of the operation done, wherever `step`
/// would do anything but touch the CPU's registers, its clock and (through
/// its private-access policy) plain hits on its private lines.
pub(super) trait Registers {
    /// Why a run of operations ends before the next one.
    type Stop;
    fn stack(&mut self) -> &mut Vec<i64>;
    /// The running frame's local `slot`.
    fn local(&mut self, slot: u16) -> Option<&mut i64>;
    fn pc(&self) -> u32;
    fn set_pc(&mut self, pc: u32);
    fn now(&self) -> Cycle;
    fn set_now(&mut self, now: Cycle);
    /// The CPU's share of its core for `work` ([`stretched_work`]).
    fn work_share_percent(&self) -> u32;
    /// The conditional branch at the program counter goes the way `taken`
    /// says: the branch predictor keeps it (`in_flight`).
    fn branch_went(&mut self, taken: bool);
    /// The operation cannot happen as its rule states.
    fn fail(&mut self, failure: Failure) -> Self::Stop;
    /// The clock has moved (a loop back-edge, `work`, an access): go on,
    /// or stop (where the run's end or its cycle budget must be looked at).
    fn clock_moved(&mut self) -> Result<(), Self::Stop>;
    /// A loop goes round again: its body's `count` operations may run once
    /// more (`limits.operations`). A machine that must stop at the budget
    /// stops here, with nothing charged.
    fn charge_operations(&mut self, count: u32) -> Result<(), Self::Stop>;
}

/// A [`Registers`] with the operations that reach past them.
pub(super) trait Machine: Registers {
    /// A load, a store: the value, the stack and the program counter as
    /// the access leaves them (or the CPU waiting for it).
    fn load(&mut self, place: u32) -> Result<(), Self::Stop>;
    fn store(&mut self, place: u32) -> Result<(), Self::Stop>;
    /// The operations that reach past the registers and the private lines:
    /// atomics, `&place`, fences, calls and returns, builtins, the end of
    /// an iteration.
    fn beyond(&mut self, op: Op) -> Result<(), Self::Stop>;
}

#[inline(always)]
pub(super) fn push<M: Registers>(m: &mut M, value: i64) -> Result<(), M::Stop> {
    // The stack fetched once: its writes could alias whatever the machine
    // reads to find it.
    let stack = m.stack();
    if stack.len() < MAX_STACK {
        stack.push(value);
        return Ok(());
    }
    Err(m.fail(Failure::StackOverflow))
}

#[inline(always)]
pub(super) fn pop<M: Registers>(m: &mut M) -> Result<i64, M::Stop> {
    match m.stack().pop() {
        Some(value) => Ok(value),
        None => Err(m.fail(Failure::StackEmpty)),
    }
}

/// The top of the stack, left there (an operation that may fail looks
/// before it pops, so that failing changes nothing).
#[inline(always)]
fn top<M: Registers>(m: &mut M) -> Result<i64, M::Stop> {
    match m.stack().last() {
        Some(&value) => Ok(value),
        None => Err(m.fail(Failure::StackEmpty)),
    }
}

/// The running frame's local `slot`.
#[inline(always)]
pub(super) fn local<M: Registers>(m: &mut M, slot: u16) -> Result<i64, M::Stop> {
    match m.local(slot) {
        Some(&mut value) => Ok(value),
        None => Err(m.fail(Failure::NoLocal(slot))),
    }
}

/// `local = value`.
#[inline(always)]
pub(super) fn set_local<M: Registers>(m: &mut M, slot: u16, value: i64) -> Result<(), M::Stop> {
    match m.local(slot) {
        Some(local) => {
            *local = value;
            Ok(())
        }
        None => Err(m.fail(Failure::NoLocal(slot))),
    }
}

/// `a op b`.
#[inline(always)]
pub(super) fn binary<M: Registers>(
    m: &mut M,
    op: BinaryOp,
    a: i64,
    b: i64,
) -> Result<i64, M::Stop> {
    match binary_value(op, a, b) {
        Some(value) => Ok(value),
        None => Err(m.fail(Failure::Binary(op, b))),
    }
}

#[inline(always)]
fn unary_value(op: UnaryOp, v: i64) -> i64 {
    match op {
        UnaryOp::Neg => v.wrapping_neg(),
        UnaryOp::Not => (v == 0) as i64,
        UnaryOp::BitNot => !v,
    }
}

/// Whether `op` is one of [`Machine::beyond`]'s: it reaches past the
/// registers, the clock and the loads and stores.
#[inline(always)]
pub(super) fn reaches_beyond(op: Op) -> bool {
    matches!(
        op,
        Op::Atomic(..)
            | Op::AddressOf(_)
            | Op::Fence
            | Op::Call(_)
            | Op::Return
            | Op::Builtin(_)
            | Op::EndIteration
    )
}

/// The rules: one script operation on machine `m`. An operation either
/// takes effect whole (the program counter moved on or jumped, or the CPU
/// waiting on an access that will finish it), or fails before changing
/// anything the machine keeps ([`Machine::fail`]).
#[inline(always)]
pub(super) fn execute<M: Machine>(m: &mut M, op: Op) -> Result<(), M::Stop> {
    match op {
        Op::Push(v) => push(m, v)?,
        Op::Local(slot) => {
            let v = local(m, slot)?;
            push(m, v)?;
        }
        Op::SetLocal(slot) => {
            let v = top(m)?;
            set_local(m, slot, v)?;
            m.stack().pop();
        }
        Op::Pop => {
            pop(m)?;
        }
        Op::Unary(op) => {
            let v = pop(m)?;
            // Room: one was just popped.
            m.stack().push(unary_value(op, v));
        }
        Op::Binary(op) => {
            let stack = m.stack();
            let n = stack.len();
            let [.., a, b] = stack[..] else {
                return Err(m.fail(Failure::StackEmpty));
            };
            let Some(r) = binary_value(op, a, b) else {
                return Err(m.fail(Failure::Binary(op, b)));
            };
            stack[n - 2] = r;
            stack.truncate(n - 1);
        }
        Op::Jump(target) => {
            m.set_pc(target);
            return Ok(());
        }
        Op::JumpIfZero(target) | Op::JumpIfNonZero(target) => {
            let v = pop(m)?;
            let taken = (v == 0) == matches!(op, Op::JumpIfZero(_));
            m.branch_went(taken);
            if taken {
                m.set_pc(target);
                return Ok(());
            }
        }
        // Every loop back-edge costs a cycle, so that no loop runs without
        // time passing.
        Op::LoopBack(target) => {
            m.charge_operations(m.pc() + 1 - target)?;
            m.set_now(m.now() + Cycles::new(1));
            m.set_pc(target);
            return m.clock_moved();
        }
        Op::Work => {
            let cycles = top(m)?;
            if cycles < 0 {
                return Err(m.fail(Failure::NegativeWork(cycles)));
            }
            m.stack().pop();
            let cycles = stretched_work(cycles as u64, m.work_share_percent());
            m.set_now(m.now() + cycles);
            m.set_pc(m.pc() + 1);
            return m.clock_moved();
        }
        Op::Assert(index) => {
            if top(m)? == 0 {
                return Err(m.fail(Failure::Assertion(index)));
            }
            m.stack().pop();
        }
        Op::Load(place) => return m.load(place),
        Op::Store(place) => return m.store(place),
        _ => {
            debug_assert!(reaches_beyond(op));
            return m.beyond(op);
        }
    }
    m.set_pc(m.pc() + 1);
    Ok(())
}

/// CPU `i`'s registers where they live, in the simulation.
pub(super) struct CpuRegisters<'s, 'c> {
    pub(super) sim: &'s mut Simulation<'c>,
    pub(super) i: CpuIndex,
}

impl Registers for CpuRegisters<'_, '_> {
    type Stop = SimError;

    #[inline(always)]
    fn stack(&mut self) -> &mut Vec<i64> {
        &mut self.sim.cpus[self.i].stack
    }

    #[inline(always)]
    fn local(&mut self, slot: u16) -> Option<&mut i64> {
        let cpu = &mut self.sim.cpus[self.i];
        cpu.locals
            .get_mut(cpu.frame.locals_base as usize + slot as usize)
    }

    #[inline(always)]
    fn pc(&self) -> u32 {
        self.sim.cpus[self.i].frame.pc
    }

    #[inline(always)]
    fn set_pc(&mut self, pc: u32) {
        self.sim.cpus[self.i].frame.pc = pc;
    }

    #[inline(always)]
    fn now(&self) -> Cycle {
        self.sim.cpus[self.i].now
    }

    #[inline(always)]
    fn set_now(&mut self, now: Cycle) {
        self.sim.cpus[self.i].now = now;
    }

    #[inline(always)]
    fn work_share_percent(&self) -> u32 {
        self.sim.cpus[self.i].work_share_percent
    }

    #[inline(always)]
    fn branch_went(&mut self, taken: bool) {
        let cpu = &mut self.sim.cpus[self.i];
        if let Some(last) = cpu
            .predictor
            .get_mut(cpu.frame.code as usize)
            .and_then(|sites| sites.get_mut(cpu.frame.pc as usize))
        {
            *last = taken as u8;
        }
    }

    #[cold]
    fn fail(&mut self, failure: Failure) -> SimError {
        let i = self.i;
        if let Failure::Assertion(index) = failure {
            let (origin, pos) = self.sim.program.positions[index as usize];
            let cpu = &self.sim.cpus[i];
            return SimError::Script {
                cpu: cpu.spec.cpu,
                cycle: cpu.now,
                origin: self.sim.program.origins[origin as usize].clone(),
                pos,
                called_from: self.sim.called_from(cpu),
                message: failure.message(),
            };
        }
        self.sim.script_error(i, failure.message())
    }

    #[inline(always)]
    fn clock_moved(&mut self) -> Result<(), SimError> {
        // `run_cpu` looks at the run's end (and the operation budget)
        // before every operation.
        Ok(())
    }

    #[inline(always)]
    fn charge_operations(&mut self, count: u32) -> Result<(), SimError> {
        let cpu = &mut self.sim.cpus[self.i];
        cpu.operations += count as u64;
        if cpu.operations > self.sim.config.max_operations {
            return Err(self.sim.over_operations(self.i));
        }
        Ok(())
    }
}

/// `step`'s machine: CPU `i` of the simulation, every operation taking
/// effect at its turn in the global order, every access through the
/// coherence model.
pub(super) struct Ordered<'s, 'c, 'p> {
    pub(super) registers: CpuRegisters<'s, 'c>,
    pub(super) probe: &'p mut dyn Probe,
}

impl Registers for Ordered<'_, '_, '_> {
    type Stop = SimError;

    #[inline(always)]
    fn stack(&mut self) -> &mut Vec<i64> {
        self.registers.stack()
    }

    #[inline(always)]
    fn local(&mut self, slot: u16) -> Option<&mut i64> {
        self.registers.local(slot)
    }

    #[inline(always)]
    fn pc(&self) -> u32 {
        self.registers.pc()
    }

    #[inline(always)]
    fn set_pc(&mut self, pc: u32) {
        self.registers.set_pc(pc)
    }

    #[inline(always)]
    fn now(&self) -> Cycle {
        self.registers.now()
    }

    #[inline(always)]
    fn set_now(&mut self, now: Cycle) {
        self.registers.set_now(now)
    }

    #[inline(always)]
    fn work_share_percent(&self) -> u32 {
        self.registers.work_share_percent()
    }

    #[inline(always)]
    fn branch_went(&mut self, taken: bool) {
        self.registers.branch_went(taken)
    }

    #[cold]
    fn fail(&mut self, failure: Failure) -> SimError {
        self.registers.fail(failure)
    }

    #[inline(always)]
    fn clock_moved(&mut self) -> Result<(), SimError> {
        self.registers.clock_moved()
    }

    #[inline(always)]
    fn charge_operations(&mut self, count: u32) -> Result<(), SimError> {
        self.registers.charge_operations(count)
    }
}

impl Machine for Ordered<'_, '_, '_> {
    #[inline(always)]
    fn load(&mut self, place: u32) -> Result<(), SimError> {
        self.registers.sim.load(self.registers.i, place, self.probe)
    }

    #[inline(always)]
    fn store(&mut self, place: u32) -> Result<(), SimError> {
        self.registers
            .sim
            .store(self.registers.i, place, self.probe)
    }

    #[inline(always)]
    fn beyond(&mut self, op: Op) -> Result<(), SimError> {
        let i = self.registers.i;
        let sim = &mut *self.registers.sim;
        match op {
            Op::Atomic(op, place_id) => sim.atomic(i, op, place_id, self.probe)?,
            Op::AddressOf(place_id) => {
                let place = &sim.program.places[place_id as usize];
                let target = sim.address_of(i, place, 0)?;
                sim.drop_indices(i, place);
                push(self, encode_pointer(target))?;
                self.set_pc(self.pc() + 1);
            }
            Op::Fence => {
                if sim.cpus[i].outstanding.store_buffer.is_empty() {
                    self.set_pc(self.pc() + 1);
                } else {
                    sim.block_on(i, Wait::BufferEmpty);
                }
            }
            Op::Call(proc_index) => sim.call(i, proc_index)?,
            Op::Return => {
                let v = pop(self)?;
                let cpu = &mut self.registers.sim.cpus[i];
                cpu.locals.truncate(cpu.frame.locals_base as usize);
                let callers = cpu.callers.len();
                if let Some(caller) = cpu.callers.pop() {
                    cpu.frame = caller;
                }
                // A switch hook's value goes nowhere (`sched`).
                if cpu.hook.is_none() || !self.registers.sim.hook_returned(i, callers) {
                    push(self, v)?;
                }
            }
            Op::Builtin(b) if b.schedules() => sim.scheduling(i, b, self.probe)?,
            Op::EndIteration if sim.sched.active => sim.end_iteration_scheduled(i, self.probe)?,
            Op::Builtin(b) => {
                let v = sim.builtin(i, b)?;
                push(self, v)?;
                self.set_pc(self.pc() + 1);
            }
            Op::EndIteration => sim.end_iteration(i, self.probe),
            // `execute` states the others' rules.
            _ => return Err(sim.script_error(i, format!("internal: `{op:?}` stepped as `beyond`"))),
        }
        Ok(())
    }
}

impl Simulation<'_> {
    /// Executes one operation of CPU `i` ([`execute`] on [`Ordered`]).
    #[inline(always)]
    pub(super) fn step(
        &mut self,
        i: CpuIndex,
        op: Op,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        // The reorder window: an operation takes one entry, `work N`
        // N x the dispatch width (`in_flight`).
        let mut entries = 1;
        // With nothing outstanding (usually), nothing below waits.
        let cpu = &mut self.cpus[i];
        if !cpu.outstanding.none_at(cpu.now) {
            // What waits for the store buffer to drain waits for a posted
            // store too: a locked instruction, a fence, and the futex
            // operations. The kernel's futex_wake issues a full barrier
            // before it looks for waiters (futex_hb_waiters_pending:
            // smp_mb(), "Full barrier (B)", kernel/futex/futex.h) and
            // futex_wait one before it reads the word (futex_q_lock:
            // futex_hb_waiters_inc's atomic_inc and smp_mb__after_atomic(),
            // "Full barrier (A)"); on x86 each is a locked instruction,
            // which drains the store buffer (`sched::futex` waits for a
            // buffered store likewise).
            let fenced = matches!(
                op,
                Op::Atomic(..) | Op::Fence | Op::Builtin(Builtin::FutexWait | Builtin::FutexWake)
            );
            let written_at = cpu.outstanding.store_written_at;
            if written_at > cpu.now && fenced {
                // A store the empty buffer took at once is still being
                // written into its line: waited for as a drain (`store`);
                // the operation is stepped again at the new cycle (an
                // access takes its turn).
                cpu.now = written_at;
                return Ok(());
            }
            let work = &*cpu.outstanding;
            let waits = !work.late.is_empty()
                || (!work.in_flight.is_empty()
                    && matches!(op, Op::Atomic(..) | Op::Fence | Op::EndIteration))
                || (work.speculating_until > cpu.now
                    && matches!(
                        op,
                        Op::Atomic(..) | Op::Fence | Op::EndIteration | Op::Builtin(_)
                    ));
            if waits && self.await_operands(i, op, probe)? {
                // The CPU waited for a value or a miss: the operation is
                // stepped again at the new cycle (an access takes its turn
                // there).
                return Ok(());
            }
            let cpu = &self.cpus[i];
            if cpu.window_entries > 0 && !cpu.outstanding.window.is_empty() {
                if op == Op::Work {
                    // Its operand is at hand (`await_operands` waited for it).
                    if let Some(&cycles) = cpu.stack.last().filter(|&&c| c >= 0) {
                        let Some(stall) = self.work_window_stall(i, cycles as u64) else {
                            // A load queued at its home fills the window.
                            return Ok(());
                        };
                        self.cpus[i].now += Cycles::new(stall);
                        entries = 0;
                    }
                } else if self.await_window(i, 1, probe) {
                    return Ok(());
                }
            }
        }
        let registers = CpuRegisters { sim: self, i };
        let done = execute(&mut Ordered { registers, probe }, op);
        let cpu = &mut self.cpus[i];
        cpu.dispatched = cpu.dispatched.saturating_add(entries);
        if !cpu.outstanding.late.is_empty() {
            self.forget_dropped(i);
        }
        done
    }

    /// `Op::Call`: a frame for procedure `proc_index`, its parameters
    /// popped into its first locals.
    fn call(&mut self, i: CpuIndex, proc_index: u32) -> Result<(), SimError> {
        if self.cpus[i].callers.len() + 1 >= MAX_CALL_DEPTH {
            return Err(self.script_error(
                i,
                format!("calls nested deeper than {MAX_CALL_DEPTH} (unbounded recursion?)"),
            ));
        }
        let code = &self.program.procedures[proc_index as usize];
        let params = code.param_count as usize;
        let locals = code.local_count as usize;
        self.advance_pc(i);
        let cpu = &mut self.cpus[i];
        cpu.operations += code.ops.len() as u64;
        cpu.enter_call(
            (self.program.scripts.len() + proc_index as usize) as u32,
            params,
            locals,
        );
        Ok(())
    }

    /// The value of builtin `builtin` for CPU `i`. (Long as a table is: one
    /// short arm per builtin.)
    pub(super) fn builtin(&mut self, i: CpuIndex, builtin: Builtin) -> Result<i64, SimError> {
        let cpu_id = self.cpus[i].spec.cpu;
        Ok(match builtin {
            Builtin::Cpu => cpu_id.get() as i64,
            Builtin::Core => self.topology.core_of(cpu_id) as i64,
            Builtin::Node => self.topology.node_of(cpu_id) as i64,
            Builtin::Socket => self.topology.socket_of(cpu_id) as i64,
            Builtin::Tid => self.cpus[i].spec.tid as i64,
            Builtin::Nthreads => self.cpus[i].spec.group_size as i64,
            Builtin::Task => i.get() as i64 + 1,
            Builtin::Ncpus => self.topology.cpu_count() as i64,
            Builtin::Nnodes => self.topology.node_count() as i64,
            Builtin::Iteration => self.cpus[i].iteration as i64,
            Builtin::Now => {
                // A loop that reads the clock is not the same each turn
                // however alike its registers are (a spin with a deadline
                // leaves when the clock passes it, not when its line
                // changes): the spin watch forgets the period around it.
                let cpu = &mut self.cpus[i];
                cpu.spin.forget();
                cpu.now.get() as i64
            }
            Builtin::Random => {
                let n = self.pop(i)?;
                if n <= 0 {
                    return Err(
                        self.script_error(i, format!("random({n}): the bound must be >= 1"))
                    );
                }
                uniform_below(self.cpus[i].rng.rng(), n as u64) as i64
            }
            Builtin::Uniform => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                match Uniform::new_inclusive(a, b) {
                    Ok(range) => range.sample(self.cpus[i].rng.rng()),
                    Err(_) => {
                        return Err(self.script_error(
                            i,
                            format!("uniform({a}, {b}): the low end must be <= the high end"),
                        ))
                    }
                }
            }
            Builtin::Exp => {
                let mean = self.pop(i)?;
                if mean < 0 {
                    return Err(self.script_error(i, format!("exp({mean}): the mean must be >= 0")));
                }
                // rand_distr's ziggurat sampler for the unit exponential,
                // scaled; computed with libm, so the same on every host. The
                // float is only a value here, rounded (and saturated) to an
                // integer, never compared to decide an order.
                let draw: f64 = Exp1.sample(self.cpus[i].rng.rng());
                (draw * mean as f64).round() as i64
            }
            Builtin::Min => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                a.min(b)
            }
            Builtin::Max => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                a.max(b)
            }
            Builtin::Abs => self.pop(i)?.wrapping_abs(),
            Builtin::Part => {
                let size = self.pop(i)?;
                let offset = self.pop(i)?;
                let pointer = self.pop(i)?;
                let Some(whole) = decode_pointer(pointer, self.memory, &self.program.field_names)
                else {
                    return Err(self.script_error(
                        i,
                        format!(
                            "`part` of {pointer}, which is not a pointer made by `&inst.field`"
                        ),
                    ));
                };
                if offset < 0 || size < 1 || offset + size > whole.size_bytes as i64 {
                    return Err(self.script_error(
                        i,
                        format!(
                            "part(p, {offset}, {size}): the part must lie inside the {} bytes `p` points to",
                            whole.size_bytes
                        ),
                    ));
                }
                encode_pointer(Target {
                    address: whole.address + offset as u64,
                    size_bytes: size as u32,
                    field_id: whole.field_id,
                })
            }
            // `Ordered::beyond` gives them to `scheduling`.
            Builtin::TaskRunning
            | Builtin::NeedResched
            | Builtin::Yield
            | Builtin::Sleep
            | Builtin::FutexWait
            | Builtin::FutexWake => {
                return Err(
                    self.script_error(i, format!("internal: `{builtin:?}` evaluated as a value"))
                )
            }
        })
    }

    #[inline(always)]
    pub(super) fn end_iteration(&mut self, i: CpuIndex, probe: &mut dyn Probe) {
        // Before `on_iteration`, which may start the measured window; a
        // measured iteration's at the end of the run where the probe allows
        // it (`Probe::measured_hits_at_end`).
        if self.reports_private_hits_at_end_of(&self.cpus[i]) {
            self.report_private_hits(i, probe);
        }
        let last = end_iteration_of(
            &mut self.cpus[i],
            IterationEnd {
                config: self.config,
                summed: &mut self.summed,
                measure_start: &mut self.measure_start,
                shortcut_entries: &mut self.shortcut_entries,
                last_iteration: self.last_iteration,
            },
            probe,
        );
        if last {
            self.finish(i);
        }
    }

    /// Whether `cpu`'s iteration end reports its summed private hits
    /// first (a warm-up one's always; a measured one's only where the
    /// probe does not take them at the end of the run).
    #[inline(always)]
    pub(super) fn reports_private_hits_at_end_of(&self, cpu: &Cpu) -> bool {
        self.private.summed
            && self.private.slots > 0
            && !(cpu.iteration >= self.config.warmup_iterations && self.private.measured_at_end)
    }

    #[inline]
    pub(super) fn advance_pc(&mut self, i: CpuIndex) {
        self.cpus[i].frame.pc += 1;
    }

    #[inline]
    pub(super) fn push(&mut self, i: CpuIndex, value: i64) -> Result<(), SimError> {
        push(&mut CpuRegisters { sim: self, i }, value)
    }

    #[inline]
    pub(super) fn pop(&mut self, i: CpuIndex) -> Result<i64, SimError> {
        pop(&mut CpuRegisters { sim: self, i })
    }

    /// Removes a place's run-time operands (indices, or the pointer) from the stack.
    pub(super) fn drop_indices(&mut self, i: CpuIndex, place: &PlaceRef) {
        let operands =
            place.pointer as usize + place.has_element as usize + place.has_index as usize;
        let stack = &mut self.cpus[i].stack;
        let keep = stack.len().saturating_sub(operands);
        stack.truncate(keep);
    }

    /// `address_of` for an access: from `global_targets` when the place
    /// has one target for every CPU.
    #[inline]
    pub(super) fn target_of(
        &self,
        i: CpuIndex,
        place_id: u32,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        match self.global_targets[place_id as usize] {
            Some(target) => Ok(target),
            None => self.address_of(i, place, above),
        }
    }

    /// Resolves a place to its address from the run-time indices on the
    /// stack, below `above` other operands, without popping them (an access
    /// that must wait is retried whole).
    #[inline]
    pub(super) fn address_of(
        &self,
        i: CpuIndex,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        if !place.pointer && !place.has_element && !place.has_index && place.count > 0 {
            // The common case: the running CPU's (or node's, or the only)
            // element, no operands on the stack.
            let cpu_id = self.cpus[i].spec.cpu;
            let element = match place.kind {
                InstanceKind::Global => 0,
                InstanceKind::PerCpu => cpu_id.slot(),
                InstanceKind::PerNode => self.topology.node_of(cpu_id) as usize,
            };
            let inst = &self.memory.instances[place.instance as usize];
            if let Some(&base) = inst.element_addresses.get(element) {
                return Ok(Target {
                    address: base + place.offset_bytes as u64,
                    size_bytes: place.size_bytes,
                    field_id: place.field_id,
                });
            }
        }
        self.address_of_slow(i, place, above)
    }

    #[inline(never)]
    pub(super) fn address_of_slow(
        &self,
        i: CpuIndex,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        if place.pointer {
            let stack = &self.cpus[i].stack;
            let Some(&pointer) = stack
                .len()
                .checked_sub(above + 1)
                .and_then(|k| stack.get(k))
            else {
                return Err(self.script_error(i, "internal: operand stack empty".into()));
            };
            return decode_pointer(pointer, self.memory, &self.program.field_names).ok_or_else(
                || {
                    self.script_error(
                        i,
                        format!("`*` of {pointer}, which is not a pointer made by `&inst.field`"),
                    )
                },
            );
        }
        let stack = &self.cpus[i].stack;
        let operands = place.has_element as usize + place.has_index as usize;
        if stack.len() < above + operands {
            return Err(self.script_error(i, "internal: operand stack empty".into()));
        }
        let top = stack.len() - above;
        let index = if place.has_index { stack[top - 1] } else { 0 };
        let cpu_id = self.cpus[i].spec.cpu;
        let element = if place.has_element {
            stack[top - operands]
        } else {
            match place.kind {
                InstanceKind::Global => 0,
                InstanceKind::PerCpu => cpu_id.get() as i64,
                InstanceKind::PerNode => self.topology.node_of(cpu_id) as i64,
            }
        };
        let inst = &self.memory.instances[place.instance as usize];
        if element < 0 || element as usize >= inst.element_addresses.len() {
            let what = match place.kind {
                InstanceKind::Global => "element",
                InstanceKind::PerCpu => "CPU",
                InstanceKind::PerNode => "node",
            };
            return Err(self.script_error(
                i,
                format!(
                    "{what} {element} out of range for `{}`: valid 0..={}",
                    inst.name,
                    inst.element_addresses.len() - 1
                ),
            ));
        }
        if index < 0 || index >= place.count as i64 {
            return Err(self.script_error(
                i,
                format!(
                    "index {index} out of range for field `{}` of {} elements",
                    place.text, place.count
                ),
            ));
        }
        Ok(Target {
            address: inst.element_addresses[element as usize]
                + place.offset_bytes as u64
                + index as u64 * place.stride_bytes as u64,
            size_bytes: place.size_bytes,
            field_id: place.field_id,
        })
    }
}
