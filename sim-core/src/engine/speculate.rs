//! Lines requested ahead of a waiting locked instruction.
//!
//! A locked instruction may not complete before every older load and
//! store has (Intel SDM vol. 3A §8.1.2: locked operations wait for all
//! outstanding loads and stores to complete), and the engine keeps that:
//! the atomic waits for the loads in flight, for the store buffer to drain
//! and for its own line, holding its CPU. An out-of-order core does not
//! stop fetching meanwhile: the instructions after the atomic execute
//! speculatively within the reorder window (AMD64 APM vol. 1 §3.9.1:
//! out-of-order and speculative reads are allowed, provided software sees
//! program order), their loads fetch their lines, and the order is
//! checked when they retire: a line another core takes before then is
//! read again (Intel's MACHINE_CLEARS.MEMORY_ORDERING counts the memory
//! ordering machine clears that "external snoops" hitting the load buffer
//! force; AMD's PMCx025 counts locked instructions whose "lock speculation
//! succeeded": `presets show`, `lock_rfo_ahead`).
//!
//! The model: when a locked instruction of a CPU with a reorder window has
//! to wait (for older loads, for the store buffer, or for its own line), a
//! shadow run of the CPU's script from that instruction on, within the
//! window's entries and the core's free miss buffers, requests the lines
//! its loads will need, as prefetches nobody waits for. Where the machine
//! says locked instructions execute speculatively
//! (`MachineSpec::lock_rfo_ahead`), it requests the locked instructions'
//! lines too, for ownership (the waiting one's included), and goes on past
//! them; elsewhere it stops at the next locked instruction. Nothing else of the shadow run
//! stays: its registers are restored, it writes no memory, charges no
//! operation, trains no predictor and draws no random number. The
//! instructions then run at their turn as before, each reading its value
//! then: a hit when the line is still there, a miss again when another
//! core took it meanwhile (the re-read). So values and order are exactly
//! x86-TSO's, and only timing changes.
//!
//! The same run, from a branch on a value not read yet. A load queued at
//! its line's home (or waiting for its address) has no value until the
//! home serves it, so whatever needs that value parks its CPU
//! (`in_flight`, `Wait::Served`). A core does not stop fetching there: it
//! predicts the branch and executes down the predicted path, and that
//! path's loads read memory speculatively, missing as any load does
//! (Intel SDM vol. 3A §11.3: on write-back memory "read misses cause cache
//! fills" and speculative reads are allowed; AMD64 APM vol. 1 §3.9.1
//! above). When the branch resolves against the guess, the core squashes
//! the path, but the lines its loads fetched stay in the cache (what
//! Kocher et al., "Spectre Attacks", IEEE S&P 2019, §4, rely on: a
//! mispredicted path's load leaves its line cached after the squash).
//! The model: when a CPU with a reorder window parks on an operation that
//! needs a value not read yet (`Waiting::Value`), the shadow run starts
//! at that operation, within the window's entries left past the oldest
//! load still arriving and the free miss buffers. It follows the values
//! not read yet as unknown: an operation on one gives an unknown result, a
//! branch on one goes the way the CPU's predictor guesses for that site
//! (the direction it took the last time, as `predict_branch` asks), a
//! load through one, or through a pointer one of the run's own loads still
//! fetches, waits for its address while the run goes on (no request, its
//! value unknown: a core's load waits in its queue for its address and
//! the younger independent work goes on); a store through one waits for
//! its address too, requesting nothing, and the younger loads go on past
//! it reading memory (memory disambiguation: a core's loads execute ahead
//! of older stores whose addresses are unknown, Intel's optimization
//! manual on the Core microarchitecture; Islam et al., "SPOILER", USENIX
//! Security 2019); a locked instruction through one is passed the same
//! way where the run passes locked instructions (`lock_rfo_ahead`, or the
//! waiting one itself), and one whose address is known but an operand not
//! read yet requests its line there, what it writes unknown to the run's
//! later loads. `work` of one, or an assertion of one, stops the run, as
//! does a locked instruction through one where locked instructions do not
//! speculate. Then the CPU parks as before; when the
//! value is read the branch resolves as any late branch does (right: it
//! goes on, and its path's lines are on their way; wrong: the penalty,
//! and the wrong path's lines stay fetched, for whoever reads them next).
//! A locked instruction parked for an older load not read yet (it waits
//! for every older load) runs the same run from itself
//! (`Waiting::LockAfterValue`): it is passed as a waiting locked
//! instruction is (its line requested where `lock_rfo_ahead` says locked
//! instructions execute speculatively), and the values not read yet are
//! followed as above.
//! Such a run requests no line whose home is busy (a transaction in flight
//! or requests waiting): an assumption, measured (`Shadow::request`), and
//! shown by `presets show` under `reorder_window_entries`.
//!
//! What the shadow run knows, it knows as the model does for late loads:
//! every value (read from memory now, or from its own earlier stores). It
//! follows the path those values give (the predictor assumed right), and
//! an access through a pointer one of its own loads still fetches (that
//! pointer may be the missing value) waits for that address alone, as an
//! access through a value not read yet does (`Shadow::follow_before`, in
//! every run), while the run goes on. It stops at `work` that does not fit the window, at a
//! fence, a builtin, the end of an iteration, a switch hook's return, or
//! anything that fails.

use super::in_flight::{operand_count, predicted_taken, Slot};
use super::rules::{execute, pop, push, Failure, Machine, Registers};
use super::*;

/// A shadow run: CPU `i`'s registers (saved by the caller and restored
/// after), what of the window and the miss buffers is left, and the
/// stores it made (seen by its own later loads, never by memory).
struct Shadow<'s, 'c, 'p> {
    sim: &'s mut Simulation<'c>,
    probe: &'p mut dyn Probe,
    i: CpuIndex,
    at: Cycle,
    misses_left: usize,
    /// The values of loads still arriving (the CPU's late values, and the
    /// run's loads of lines not here yet): a pointer equal to one of them
    /// may be that value, and the hardware would wait for it.
    arriving: Vec<i64>,
    /// Address, size, value, and whether the value is unknown.
    stores: Vec<(u64, u32, i64, bool)>,
    /// The next operation is the waiting locked instruction itself.
    at_waiting_lock: bool,
    /// The value the next store or atomic writes is not read yet.
    value_unknown: bool,
    /// Where the values not read yet are (the CPU's deferred loads', and
    /// what the run computed from them): none in a run past a locked
    /// instruction, which waited for every load before it.
    unknown: Vec<Slot>,
    /// The run's last load or atomic read a value not read yet (its own
    /// store of one).
    read_unknown: bool,
    /// The run is past a value not read yet (`Waiting::Value`).
    following: bool,
}

/// What an operation does to the values not read yet, once it has run:
/// every stack slot from `base` up is dropped (moved into the callee's
/// locals from `into_locals` on, for a call; the returning frame's locals
/// from `locals_from` on are dropped too), and the slot at `base` holds
/// one if `result_unknown` (or if the access read one).
#[derive(Clone, Copy)]
struct Follow {
    base: u32,
    result_unknown: bool,
    into_locals: Option<u32>,
    locals_from: Option<u32>,
}

/// Why a shadow run ends: nothing (a plain stop) or a protocol error of a
/// prefetch, which the run passes on.
type Halt = Option<SimError>;

/// Where a shadow run starts, against the waiting locked instruction.
#[derive(Clone, Copy, Debug)]
pub(super) enum Waiting {
    /// At the program counter with its operands, not issued yet (it waits
    /// for older loads or for the store buffer): the run passes it, its
    /// value guessed from memory.
    NotIssued,
    /// Issued and done (its line arrives later): the run starts after it.
    Issued,
    /// Issued and queued at its line's home, off the stack: its value is
    /// guessed as the line's now, and the run starts after it.
    Queued(i64),
    /// Not a locked instruction: the CPU is parked at the operation at its
    /// program counter, which needs a value not read yet (a load queued at
    /// its home, or waiting for its address). The run starts at that
    /// operation, within what is left of the window past the oldest load
    /// still arriving ([`Simulation::speculate_past_value`]).
    Value,
    /// A locked instruction not issued yet, at the program counter with its
    /// operands, parked for an older load not read yet (queued at its home,
    /// or waiting for its address): the run passes it as at `NotIssued`,
    /// and follows the values not read yet as at `Value`.
    LockAfterValue,
}

impl Simulation<'_> {
    /// CPU `i`'s locked instruction waits from `at` (`waiting` says how):
    /// its script is run ahead in shadow past the instruction, requesting
    /// the lines the instructions after it will need. `arriving`: values
    /// of loads still arriving that the CPU's late marks no longer show
    /// (an address made of one is not fetched ahead). `entries_taken`:
    /// window entries the run has used already (a fused atomic's completion
    /// that went past its `Pop`, which the run would otherwise take first).
    /// The CPU's registers are left as they were.
    ///
    /// Whether there is anything to fetch is looked at here, inline (a
    /// lock followed by the end of its iteration, the contended counter's
    /// every access, costs no call); the shadow run is out of line.
    #[inline(always)]
    pub(super) fn speculate_past_lock(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        waiting: Waiting,
        arriving: Vec<i64>,
        entries_taken: u64,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let cpu = &self.cpus[i];
        if cpu.window_entries == 0 || !self.fetches_ahead(cpu.frame, waiting) {
            return Ok(());
        }
        self.shadow_run(i, at, waiting, arriving, entries_taken, probe)
    }

    /// Whether CPU `i`, about to park at the operation at its program
    /// counter for a value not read yet, runs ahead past it: it has a
    /// reorder window with entries left past its oldest load still arriving
    /// (the answer: the entries taken), and the operations from there can
    /// reach an access.
    #[inline]
    pub(super) fn value_run_entries_taken(&self, i: CpuIndex, waiting: Waiting) -> Option<u64> {
        let cpu = &self.cpus[i];
        if cpu.window_entries == 0 || !self.fetches_ahead(cpu.frame, waiting) {
            return None;
        }
        let at = cpu.now;
        let taken = cpu
            .outstanding
            .window
            .iter()
            .find(|e| e.ready > at)
            .map_or(0, |oldest| cpu.dispatched.saturating_sub(oldest.seq));
        (taken < cpu.window_entries).then_some(taken)
    }

    /// CPU `i`, with a reorder window, parks at the operation at its
    /// program counter, which needs a value not read yet (`in_flight`,
    /// `Wait::Served`), at its turn: its script is run ahead in shadow
    /// from there, down the path its predictor guesses, within the
    /// window's entries left past its oldest load still arriving (the one
    /// it waits for, or an older one: `entries_taken`, from
    /// [`Simulation::value_run_entries_taken`]). The CPU's registers are
    /// left as they were.
    #[inline(never)]
    pub(super) fn speculate_past_value(
        &mut self,
        i: CpuIndex,
        waiting: Waiting,
        entries_taken: u64,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let at = self.cpus[i].now;
        self.shadow_run(i, at, waiting, Vec::new(), entries_taken, probe)
    }

    /// The shadow run of [`Simulation::speculate_past_lock`] and
    /// [`Simulation::speculate_past_value`], once it has something to
    /// fetch (a caller that checked that itself calls it directly).
    #[inline(never)]
    pub(super) fn shadow_run(
        &mut self,
        i: CpuIndex,
        at: Cycle,
        waiting: Waiting,
        mut arriving: Vec<i64>,
        entries_taken: u64,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        // A locked instruction's own request, once issued, holds a miss
        // buffer (a value's load holds its own, in `in_flight`, if any).
        let own_miss = matches!(waiting, Waiting::Issued | Waiting::Queued(_));
        // The buffers taken: the CPU's misses, the lines already requested
        // ahead, and the waiting instruction's own miss.
        let taken = self.cpus[i].miss_buffers_taken(at) + own_miss as usize;
        let misses_left = self.outstanding_misses.saturating_sub(taken);
        if misses_left == 0 {
            return Ok(());
        }
        let cpu = &self.cpus[i];
        let budget = cpu.window_entries;
        // The registers, into buffers kept for the purpose (restored below
        // into the CPU's own, so that neither loses its capacity).
        let (mut stack, mut locals, mut callers) = std::mem::take(&mut self.shadow_saved);
        let cpu = &self.cpus[i];
        stack.clone_from(&cpu.stack);
        locals.clone_from(&cpu.locals);
        callers.clone_from(&cpu.callers);
        let frame = cpu.frame;
        let width = self.dispatch_width;
        arriving.extend(late_values(&cpu.outstanding.late, &cpu.stack, &cpu.locals));
        // Past a value not read yet, the run follows where such values go.
        let following = matches!(waiting, Waiting::Value | Waiting::LockAfterValue);
        let unknown = if following {
            cpu.outstanding
                .late
                .iter()
                .filter(|v| v.ticket != 0)
                .map(|v| v.slot)
                .collect()
        } else {
            Vec::new()
        };
        let mut shadow = Shadow {
            sim: self,
            probe,
            i,
            at,
            misses_left,
            arriving,
            stores: Vec::new(),
            at_waiting_lock: matches!(waiting, Waiting::NotIssued | Waiting::LockAfterValue),
            unknown,
            read_unknown: false,
            value_unknown: false,
            following,
        };
        let mut used = entries_taken;
        let mut halt: Halt = None;
        if let Waiting::Queued(value) = waiting {
            if push(&mut shadow, value).is_err() {
                used = budget;
            }
            let pc = shadow.pc();
            shadow.set_pc(pc + 1);
            used += 1;
        }
        while used < budget {
            let frame = shadow.sim.cpus[i].frame;
            let Some(&op) = shadow.sim.code_ops[frame.code as usize].get(frame.pc as usize) else {
                break;
            };
            let entries = match op {
                Op::Work => match shadow.sim.cpus[i].stack.last() {
                    Some(&cycles) if cycles >= 0 => (cycles as u64).saturating_mul(width),
                    _ => break,
                },
                _ => 1,
            };
            // Saturating: the run may start with entries taken (a value's),
            // and `work` of a huge count takes every entry there is.
            if used.saturating_add(entries) > budget {
                break;
            }
            used += entries;
            // Every run follows where the values not read yet go (a run
            // ahead of a locked instruction starts with none, but meets
            // pointers its own loads still fetch).
            let follow = match shadow.follow_before(op) {
                Ok(follow) => follow,
                Err(stop) => {
                    halt = stop;
                    break;
                }
            };
            // None: taken already (a branch on a value not read yet, as
            // predicted; an access waiting for its address).
            if let Some(follow) = follow {
                if let Err(stop) = execute(&mut shadow, op) {
                    halt = stop;
                    break;
                }
                shadow.follow_after(follow);
            }
            shadow.at_waiting_lock = false;
        }
        let cpu = &mut self.cpus[i];
        cpu.stack.clone_from(&stack);
        cpu.locals.clone_from(&locals);
        cpu.callers.clone_from(&callers);
        cpu.frame = frame;
        self.shadow_saved = (stack, locals, callers);
        match halt {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl Simulation<'_> {
    /// Whether a shadow run from the waiting locked instruction at `frame`
    /// can reach an access at all: the straight-line operations after it
    /// (past it, where it has not issued), up to the first access, call or
    /// jump (then yes) or the first that ends the run (then no), as
    /// `reaches_access` tabled them, so that a lock followed by the end of
    /// an iteration costs one lookup.
    /// (Where locked instructions speculate, the waiting one's own line is
    /// requested ahead: yes.)
    #[inline(always)]
    pub(super) fn fetches_ahead(&self, frame: Frame, waiting: Waiting) -> bool {
        // The waiting instruction's own line, requested ahead.
        let not_issued = matches!(waiting, Waiting::NotIssued | Waiting::LockAfterValue);
        if self.lock_rfo_ahead && not_issued {
            return true;
        }
        // From the operation at the program counter where it has not run
        // yet (a waiting value's) or has run (an issued locked one's).
        let first =
            frame.pc as usize + (not_issued || matches!(waiting, Waiting::Queued(_))) as usize;
        self.reaches_access[frame.code as usize]
            .get(first)
            .copied()
            .unwrap_or(false)
    }
}

/// Per position of `code` and one past its end: whether the straight-line
/// operations from there reach an access, call or jump (a shadow run can
/// fetch something) before an operation that ends the run
/// ([`Simulation::fetches_ahead`]), computed once per code.
pub(super) fn reaches_access(code: &[Op]) -> Box<[bool]> {
    let mut reaches = vec![false; code.len() + 1];
    for (k, &op) in code.iter().enumerate().rev() {
        reaches[k] = match op {
            Op::Push(_)
            | Op::Local(_)
            | Op::SetLocal(_)
            | Op::Pop
            | Op::Unary(_)
            | Op::Binary(_)
            | Op::Assert(_)
            | Op::AddressOf(_)
            | Op::Work => reaches[k + 1],
            Op::EndIteration | Op::Fence | Op::Builtin(_) => false,
            _ => true,
        };
    }
    reaches.into_boxed_slice()
}

/// The values a CPU holds (in `stack` and `locals`) that are loads still
/// arriving (its `late` marks).
pub(super) fn late_values<'a>(
    late: &'a [LateValue],
    stack: &'a [i64],
    locals: &'a [i64],
) -> impl Iterator<Item = i64> + 'a {
    late.iter().filter_map(|v| match v.slot {
        in_flight::Slot::Stack(k) => stack.get(k as usize).copied(),
        in_flight::Slot::Local(k) => locals.get(k as usize).copied(),
    })
}

impl Shadow<'_, '_, '_> {
    /// The value `size` bytes at `address` hold for the shadow run: its
    /// own newest store there, the store buffer's, or memory's; and
    /// whether it is a value not read yet (its own store of one).
    fn value_at(&self, address: u64, size: u32) -> (i64, bool) {
        if let Some(&(_, _, v, unknown)) = self
            .stores
            .iter()
            .rev()
            .find(|&&(a, s, _, _)| a == address && s == size)
        {
            return (v, unknown);
        }
        if let Some(entry) = self.sim.cpus[self.i]
            .outstanding
            .store_buffer
            .iter()
            .rev()
            .find(|e| e.address == address && e.size_bytes == size && e.bits.is_none())
        {
            return (sign_extend(entry.value, size), false);
        }
        (self.sim.read_value(address, size), false)
    }

    /// Before the run takes `op`, past a value not read yet: where the
    /// run stops (`address_of` through such a value, `work` or an
    /// assertion of one, a locked instruction through one where the run
    /// does not pass locked instructions, a builtin, a fence, the
    /// iteration's end), or what `op` does to those values
    /// ([`Shadow::follow_after`]); None where it took `op` itself: a branch
    /// on such a value, which goes the way the CPU's predictor guesses for
    /// its site (`in_flight::predict_branch` asks the same), or a load, a
    /// store or (where passed) a locked instruction through such a value or
    /// a pointer still arriving, which waits for its address without a
    /// request, the value it reads unknown. One rule for every access: an
    /// address not here yet is waited for by that access alone.
    fn follow_before(&mut self, op: Op) -> Result<Option<Follow>, Halt> {
        let program = &self.sim.program;
        let cpu = &mut self.sim.cpus[self.i];
        let depth = cpu.stack.len() as u32;
        let unknown = &mut self.unknown;
        let among_top = |unknown: &[Slot], n: usize| {
            (depth.saturating_sub(n as u32)..depth).any(|k| unknown.contains(&Slot::Stack(k)))
        };
        let drop_top = |n: usize, result_unknown: bool| Follow {
            base: depth.saturating_sub(n as u32),
            result_unknown,
            into_locals: None,
            locals_from: None,
        };
        let operands = |place: u32| operand_count(&program.places[place as usize]);
        let follow = match op {
            Op::Push(_) | Op::Jump(_) | Op::LoopBack(_) => drop_top(0, false),
            Op::Local(slot) => {
                let local = Slot::Local(cpu.frame.locals_base + u32::from(slot));
                drop_top(0, unknown.contains(&local))
            }
            Op::SetLocal(slot) => {
                let local = Slot::Local(cpu.frame.locals_base + u32::from(slot));
                let value_unknown = among_top(unknown, 1);
                unknown.retain(|&s| s != local);
                if value_unknown {
                    unknown.push(local);
                }
                drop_top(1, false)
            }
            Op::Pop => drop_top(1, false),
            Op::Unary(_) => drop_top(1, among_top(unknown, 1)),
            Op::Binary(_) => {
                if unknown.contains(&Slot::Stack(depth.wrapping_sub(1))) {
                    // Its result is unknown whatever it holds: a divisor or
                    // a shift count that does not fail stands in for it.
                    if let Some(b) = cpu.stack.last_mut() {
                        *b = 1;
                    }
                }
                drop_top(2, among_top(unknown, 2))
            }
            Op::JumpIfZero(target) | Op::JumpIfNonZero(target) if among_top(unknown, 1) => {
                let taken = predicted_taken(cpu);
                cpu.stack.pop();
                cpu.frame.pc = if taken { target } else { cpu.frame.pc + 1 };
                unknown.retain(|&s| s != Slot::Stack(depth - 1));
                return Ok(None);
            }
            Op::JumpIfZero(_) | Op::JumpIfNonZero(_) => drop_top(1, false),
            Op::Load(place) => {
                let n = operands(place);
                let through_arriving = program.places[place as usize].pointer
                    && cpu.stack.last().is_some_and(|p| self.arriving.contains(p));
                if among_top(unknown, n) || through_arriving {
                    // Its address is not here yet: the load waits for it
                    // (no request), and the younger operations go on, its
                    // value unknown, as a core's do.
                    let base = depth.saturating_sub(n as u32);
                    waits_for_its_address(cpu, unknown, base, true);
                    return Ok(None);
                }
                drop_top(n, false)
            }
            Op::AddressOf(place) => {
                let n = operands(place);
                if among_top(unknown, n) {
                    return Err(None);
                }
                drop_top(n, false)
            }
            Op::Store(place) => {
                // The value on top, the address's operands under it.
                let n = operands(place);
                let value = depth.wrapping_sub(1);
                let through_arriving = program.places[place as usize].pointer
                    && cpu
                        .stack
                        .len()
                        .checked_sub(2)
                        .and_then(|k| cpu.stack.get(k))
                        .is_some_and(|p| self.arriving.contains(p));
                if through_arriving
                    || (depth.saturating_sub(n as u32 + 1)..value)
                        .any(|k| unknown.contains(&Slot::Stack(k)))
                {
                    // Its address is not here yet: the store waits for it in
                    // the store buffer, and the younger operations go on,
                    // their loads reading memory (a core's loads pass older
                    // stores whose addresses are unknown: memory
                    // disambiguation, Intel's optimization manual on the
                    // Core microarchitecture; Islam et al., "SPOILER",
                    // USENIX Security 2019, §3). It requests nothing, as
                    // any store of the run.
                    let base = depth.saturating_sub(n as u32 + 1);
                    waits_for_its_address(cpu, unknown, base, false);
                    return Ok(None);
                }
                self.value_unknown = unknown.contains(&Slot::Stack(value));
                drop_top(n + 1, false)
            }
            Op::Atomic(atomic_op, place) => {
                // The values on top, the address's operands under them.
                let values = if atomic_op == AtomicOp::CmpXchg { 2 } else { 1 };
                let n = operands(place) + values;
                let base = depth.saturating_sub(n as u32);
                let through_arriving = program.places[place as usize].pointer
                    && cpu
                        .stack
                        .len()
                        .checked_sub(values + 1)
                        .and_then(|k| cpu.stack.get(k))
                        .is_some_and(|p| self.arriving.contains(p));
                let address_unknown = through_arriving
                    || (base..depth.saturating_sub(values as u32))
                        .any(|k| unknown.contains(&Slot::Stack(k)));
                let passes = self.at_waiting_lock || self.sim.lock_rfo_ahead;
                if address_unknown && passes {
                    // Where the run passes locked instructions: one whose
                    // address is not here yet waits for it, requesting
                    // nothing, and the younger operations go on, as past a
                    // load waiting for its address; what it reads is
                    // unknown, and what it writes is nowhere known.
                    waits_for_its_address(cpu, unknown, base, true);
                    return Ok(None);
                }
                if address_unknown {
                    return Err(None);
                }
                // Its address is known: its line is requested as any
                // locked instruction's of the run, what it reads is memory's
                // value, and what it writes is unknown where an operand is.
                self.value_unknown = among_top(unknown, values);
                drop_top(n, false)
            }
            Op::Work | Op::Assert(_) => {
                if among_top(unknown, 1) {
                    return Err(None);
                }
                drop_top(1, false)
            }
            Op::Call(proc_index) => {
                let params = program.procedures[proc_index as usize].param_count as usize;
                Follow {
                    into_locals: Some(cpu.locals.len() as u32),
                    ..drop_top(params, false)
                }
            }
            Op::Return => Follow {
                locals_from: Some(cpu.frame.locals_base),
                ..drop_top(1, among_top(unknown, 1))
            },
            Op::Builtin(_) | Op::Fence | Op::EndIteration => return Err(None),
        };
        Ok(Some(follow))
    }

    /// After the run took an operation past a value not read yet: the
    /// values not read yet where `follow` (from [`Shadow::follow_before`])
    /// says they went.
    fn follow_after(&mut self, follow: Follow) {
        let Follow {
            base,
            result_unknown,
            into_locals,
            locals_from,
        } = follow;
        if let Some(first_local) = into_locals {
            // A call's arguments, now its parameters.
            for slot in &mut self.unknown {
                if let Slot::Stack(k) = *slot {
                    if k >= base {
                        *slot = Slot::Local(first_local + (k - base));
                    }
                }
            }
        }
        self.unknown.retain(|&slot| match slot {
            Slot::Stack(k) => k < base,
            Slot::Local(k) => locals_from.is_none_or(|from| k < from),
        });
        if result_unknown || std::mem::take(&mut self.read_unknown) {
            self.unknown.push(Slot::Stack(base));
        }
    }

    /// Requests `address`'s line for `need` ahead, unless the core holds
    /// it well enough or no miss buffer is left (then the run stops).
    /// Answers whether the line is here (not missing, not arriving).
    fn request(&mut self, address: u64, field_id: u32, need: Need) -> Result<bool, Halt> {
        let sim = &mut *self.sim;
        let unit = sim.memory.unit_of(address);
        let core = sim.cpus[self.i].core;
        let state = sim.coherence.state(core, unit);
        let arriving = sim
            .coherence
            .copy_ready_at(core, unit)
            .is_some_and(|ready| ready > self.at);
        let enough = match need {
            Need::Read => state != LineState::Invalid,
            Need::Write => matches!(state, LineState::Modified | LineState::Exclusive),
        };
        let here = !arriving && state != LineState::Invalid;
        if enough {
            return Ok(here);
        }
        if self.misses_left == 0 {
            return Err(None);
        }
        sim.poll_line_reached(unit, self.probe);
        if self.following
            && (sim.coherence.busy_until(unit) > self.at || sim.coherence.waiting_count(unit) > 0)
        {
            // Past a value not read yet, a line whose home is busy is not
            // requested (the busy-line rule: assumed, and shown by `presets
            // show` under `reorder_window_entries`). Measured: the value
            // waited for is a load queued at such a home, and the path after
            // it mostly reads lines as contended; a copy fetched ahead there
            // is taken back by the writers queued before the load's turn,
            // which reads it again, as a core replays a load snooped away
            // before it retires, while the request takes a whole transaction
            // of the contended line: `busy_walk`'s walk over four such lines,
            // in sim-core/tests/engine.rs, went from 4 450 to 6 192 cycles
            // with them requested. (After the poll: a spin-wait asleep on
            // the line, woken there, is a request at its home as stepping
            // it would have made.) The run ahead of a waiting locked
            // instruction still requests busy lines: under one rule for
            // both, sctp-memcg's `layout` row moved from -38.2 % to -31.0 %
            // against a measured -40.8 %, so that stays apart.
            return Ok(false);
        }
        let cpu_id = sim.cpus[self.i].spec.cpu;
        match sim.coherence.prefetch_for(
            sim.topology,
            self.at,
            cpu_id,
            unit,
            need,
            RequestTag::new(self.i, RequestKind::Prefetch),
        ) {
            Err(error) => return Err(Some(error)),
            Ok(None) => {}
            Ok(Some(requested)) => {
                self.misses_left -= 1;
                sim.hold_requested_ahead(
                    self.i,
                    unit,
                    field_id,
                    requested,
                    AccessKind::RunAhead,
                    self.probe,
                );
            }
        }
        Ok(here)
    }

    /// The target of an access to `place_id` with `above` value operands
    /// over its place's, or a stop where the address may depend on a load
    /// still arriving.
    fn target(&self, place_id: u32, above: usize) -> Result<Target, Halt> {
        let place = &self.sim.program.places[place_id as usize];
        if place.pointer {
            let stack = &self.sim.cpus[self.i].stack;
            let pointer = stack
                .len()
                .checked_sub(above + 1)
                .and_then(|k| stack.get(k));
            if pointer.is_none_or(|p| self.arriving.contains(p)) {
                return Err(None);
            }
        }
        self.sim
            .target_of(self.i, place_id, place, above)
            .map_err(|_| None)
    }
}

impl Registers for Shadow<'_, '_, '_> {
    type Stop = Halt;

    fn stack(&mut self) -> &mut Vec<i64> {
        &mut self.sim.cpus[self.i].stack
    }

    fn local(&mut self, slot: u16) -> Option<&mut i64> {
        let cpu = &mut self.sim.cpus[self.i];
        cpu.locals
            .get_mut(cpu.frame.locals_base as usize + slot as usize)
    }

    fn pc(&self) -> u32 {
        self.sim.cpus[self.i].frame.pc
    }

    fn set_pc(&mut self, pc: u32) {
        self.sim.cpus[self.i].frame.pc = pc;
    }

    fn now(&self) -> Cycle {
        self.at
    }

    /// The shadow's clock stays: its requests all leave at `at`.
    fn set_now(&mut self, _now: Cycle) {}

    fn work_share_percent(&self) -> u32 {
        100
    }

    /// A speculative branch trains nothing (the predictor learns at
    /// retirement, when the branch runs at its turn).
    fn branch_went(&mut self, _taken: bool) {}

    fn fail(&mut self, _failure: Failure) -> Halt {
        None
    }

    fn clock_moved(&mut self) -> Result<(), Halt> {
        Ok(())
    }

    fn charge_operations(&mut self, _count: u32) -> Result<(), Halt> {
        Ok(())
    }
}

impl Machine for Shadow<'_, '_, '_> {
    fn load(&mut self, place_id: u32) -> Result<(), Halt> {
        let target = self.target(place_id, 0)?;
        let bits = self.sim.program.places[place_id as usize].bits;
        let (value, unknown) = self.value_at(target.address, target.size_bytes);
        self.read_unknown = unknown;
        let value = bits.map_or(value, |b| b.extract(value));
        if !self.request(target.address, target.field_id, Need::Read)? {
            self.arriving.push(value);
        }
        let place = &self.sim.program.places[place_id as usize];
        self.sim.drop_indices(self.i, place);
        push(self, value)?;
        let pc = self.pc();
        self.set_pc(pc + 1);
        Ok(())
    }

    /// A store requests nothing (no vendor source here describes a
    /// store's RFO issued before it retires); its value is kept for the
    /// run's own later loads.
    fn store(&mut self, place_id: u32) -> Result<(), Halt> {
        let target = self.target(place_id, 1)?;
        let place = &self.sim.program.places[place_id as usize];
        if place.bits.is_some() {
            return Err(None);
        }
        let value = pop(self)?;
        let place = &self.sim.program.places[place_id as usize];
        self.sim.drop_indices(self.i, place);
        self.stores.push((
            target.address,
            target.size_bytes,
            sign_extend(value, target.size_bytes),
            std::mem::take(&mut self.value_unknown),
        ));
        let pc = self.pc();
        self.set_pc(pc + 1);
        Ok(())
    }

    fn beyond(&mut self, op: Op) -> Result<(), Halt> {
        let i = self.i;
        match op {
            // A later locked instruction: passed only where locked
            // instructions execute speculatively.
            Op::Atomic(..) if !self.at_waiting_lock && !self.sim.lock_rfo_ahead => {
                return Err(None);
            }
            Op::Atomic(atomic_op, place_id) => {
                let above = if atomic_op == AtomicOp::CmpXchg { 2 } else { 1 };
                let target = self.target(place_id, above)?;
                let operand = pop(self)?;
                let expected = if atomic_op == AtomicOp::CmpXchg {
                    pop(self)?
                } else {
                    0
                };
                let place = &self.sim.program.places[place_id as usize];
                self.sim.drop_indices(i, place);
                let size = target.size_bytes;
                let (old, unknown) = self.value_at(target.address, size);
                self.read_unknown = unknown;
                // An operand not read yet: whether and what it writes is
                // unknown (a value not read yet for the run's later loads).
                let operand_unknown = std::mem::take(&mut self.value_unknown);
                match atomic_op.written(old, operand, expected) {
                    Some(n) => self.stores.push((
                        target.address,
                        size,
                        sign_extend(n, size),
                        unknown || operand_unknown,
                    )),
                    None if operand_unknown => self.stores.push((target.address, size, 0, true)),
                    None => {}
                }
                // Its line for ownership, where locked instructions execute
                // speculatively; otherwise the instruction waits for it at
                // its turn, its value guessed from memory now.
                if self.sim.lock_rfo_ahead {
                    if !self.request(target.address, target.field_id, Need::Write)? {
                        self.arriving.push(old);
                    }
                } else {
                    self.arriving.push(old);
                }
                push(self, old)?;
                let pc = self.pc();
                self.set_pc(pc + 1);
            }
            Op::AddressOf(place_id) => {
                let place = &self.sim.program.places[place_id as usize];
                let target = self.sim.address_of(i, place, 0).map_err(|_| None)?;
                self.sim.drop_indices(i, place);
                push(self, encode_pointer(target))?;
                let pc = self.pc();
                self.set_pc(pc + 1);
            }
            Op::Call(proc_index) => {
                let sim = &mut *self.sim;
                if sim.cpus[i].callers.len() + 1 >= MAX_CALL_DEPTH {
                    return Err(None);
                }
                let code = &sim.program.procedures[proc_index as usize];
                let (params, locals) = (code.param_count as usize, code.local_count as usize);
                let callee_code = (sim.program.scripts.len() + proc_index as usize) as u32;
                let cpu = &mut sim.cpus[i];
                if cpu.stack.len() < params {
                    return Err(None);
                }
                cpu.frame.pc += 1;
                cpu.enter_call(callee_code, params, locals);
            }
            Op::Return => {
                let cpu = &mut self.sim.cpus[i];
                if cpu.hook.is_some() || cpu.callers.is_empty() {
                    return Err(None);
                }
                let v = pop(self)?;
                let cpu = &mut self.sim.cpus[i];
                cpu.locals.truncate(cpu.frame.locals_base as usize);
                if let Some(caller) = cpu.callers.pop() {
                    cpu.frame = caller;
                }
                push(self, v)?;
            }
            // Fences, builtins (a draw, a clock, scheduling) and the end of
            // an iteration: the run stops there.
            _ => return Err(None),
        }
        Ok(())
    }
}

/// In a run ahead, an access at the program counter whose address is not
/// here yet (its operands are the stack from `base` up): it waits for that
/// address alone, requesting nothing, and the run steps past it, the value
/// it reads (`reads`: a load's, a locked instruction's) unknown.
#[inline(always)]
fn waits_for_its_address(cpu: &mut Cpu, unknown: &mut Vec<Slot>, base: u32, reads: bool) {
    cpu.stack.truncate(base as usize);
    cpu.frame.pc += 1;
    unknown.retain(|&s| !matches!(s, Slot::Stack(k) if k >= base));
    if reads {
        cpu.stack.push(0);
        unknown.push(Slot::Stack(base));
    }
}
