//! Running ahead of the event queue (`EngineOptions::run_ahead` and the
//! switches that build on it): the operation rules (`rules::execute`) on a
//! machine, [`Ahead`], that holds a CPU's registers and stops wherever
//! `step` would do anything but touch them, its clock, and plain hits on
//! its private places (taken by a [`PrivateAccesses`] policy and summed for
//! the probe); superinstructions from the fused table, made of the same
//! rules; and atomics at a script's or procedure's start issued at once.
//! Each must leave everything as stepping would
//! (`sim-core/tests/shortcuts.rs`).

use crate::engine::access::IssueAt;
use crate::engine::store_buffer::STORE_POST_CYCLES;
use crate::engine::*;

/// Which places can only ever reach lines of the running CPU: fields of a
/// per-CPU instance that no script indexes by CPU, on lines that hold no
/// other CPU's data. Accesses through them cannot interact with another
/// CPU: their plain hits are summed for the probe, and a CPU that makes no
/// other access runs them ahead of the event queue (see `run_cpu`).
///
/// With the adjacent-line prefetcher (`prefetch_buddies`), a miss on a line
/// also reads its buddy, so a line is private only if its buddy is too.
pub(in crate::engine) fn private_places(
    program: &Program,
    memory: &MemoryLayout,
    prefetch_buddies: bool,
) -> Vec<bool> {
    let instances = &memory.instances;
    let indexed: Vec<bool> = (0..instances.len())
        .map(|n| {
            program
                .places
                .iter()
                .any(|p| p.instance as usize == n && p.has_element)
                // A pointer can be passed to any CPU: an instance whose
                // address is taken is shared.
                || program.ops_take_address_of(n)
        })
        .collect();
    let mut shared_unit = vec![false; memory.unit_count()];
    let units_of = |n: usize| {
        let size = memory.structs[instances[n].struct_index].size_bytes as u64;
        instances[n]
            .element_addresses
            .iter()
            .flat_map(move |&a| memory.unit_of(a)..=memory.unit_of(a + size.max(1) - 1))
            .collect::<Vec<usize>>()
    };
    for (n, inst) in instances.iter().enumerate() {
        if inst.kind != InstanceKind::PerCpu || indexed[n] {
            for u in units_of(n) {
                shared_unit[u] = true;
            }
        }
    }
    if prefetch_buddies {
        let shared_line = shared_unit.clone();
        for (u, shared) in shared_unit.iter_mut().enumerate() {
            *shared |= shared_line.get(u ^ 1).copied().unwrap_or(false);
        }
    }
    let private_instance: Vec<bool> = (0..instances.len())
        .map(|n| {
            instances[n].kind == InstanceKind::PerCpu
                && !indexed[n]
                && units_of(n).iter().all(|&u| !shared_unit[u])
        })
        .collect();
    program
        .places
        .iter()
        .map(|p| !p.pointer && !p.has_element && private_instance[p.instance as usize])
        .collect()
}

/// Per place, its target when it is the same for every CPU: a field of a
/// global instance reached without pointer, element or index (what
/// `address_of` computes for it on every access).
pub(in crate::engine) fn global_targets(
    program: &Program,
    memory: &MemoryLayout,
) -> Vec<Option<Target>> {
    program
        .places
        .iter()
        .map(|place| {
            let fixed = !place.pointer
                && !place.has_element
                && !place.has_index
                && place.count > 0
                && place.kind == InstanceKind::Global;
            let base = memory.instances[place.instance as usize]
                .element_addresses
                .first()
                .copied();
            base.filter(|_| fixed).map(|base| Target {
                address: base + place.offset_bytes as u64,
                size_bytes: place.size_bytes,
                field_id: place.field_id,
            })
        })
        .collect()
}

/// Running ahead stopped at an operation it leaves to `step`, with
/// nothing of it done (`step` runs it, or reports why it cannot run). A
/// unit, so that the rules' results stay a flag in a register: an invariant
/// check that fails after a private hit is kept by the policy
/// ([`PrivateAccesses::take_failure`]).
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Halt;

/// How a CPU running ahead takes a plain hit on one of its private places
/// (by slot): the hit's completion, and for a load the value read; or
/// where `step` would do anything else (a miss, a turn to take, a store
/// buffer in the way), a stop with nothing changed. Both policies make the
/// hit by the one hit rule (`Coherence::plain_hit`, `Coherence::private_line`).
pub(in crate::engine) trait PrivateAccesses {
    /// A place's private slot (`PrivatePlaces::slot`).
    fn slot_of(&self, place: u32) -> Option<u32>;
    fn load(&mut self, slot: u32, now: Cycle) -> Result<(Cycle, i64), Halt>;
    fn store(&mut self, slot: u32, now: Cycle, value: i64) -> Result<Cycle, Halt>;
    /// The invariant check that failed after a hit, where the run stopped
    /// (boxed: the common answer, none, stays one word).
    fn take_failure(&mut self) -> Option<Box<SimError>>;
}

/// The run-ahead loop's policy in general: each private hit made and
/// summed for the probe as it comes.
pub(in crate::engine) struct Summed<'a> {
    coherence: &'a mut Coherence,
    bytes: &'a mut [u8],
    /// Every CPU's private targets and sums; the running CPU's start at
    /// `first_slot` (looked up on use: most runs ahead make no private
    /// access, and what is set up for each run shows on the contended
    /// paths).
    places: &'a mut PrivatePlaces,
    first_slot: usize,
    core: u32,
    thread: u8,
    l1_hit_cycles: Cycles,
    /// When an access must take its turn (`Turn::NEVER` for a CPU that
    /// makes private accesses only).
    turn: Turn,
    /// Private loads run ahead: hits are summed, and the store buffer is
    /// empty (else a load may have to forward or wait, as in `load`).
    loads: bool,
    /// Private stores run ahead: loads do, and the machine has store buffer
    /// entries (without, every store waits, as in `store`).
    stores: bool,
    /// When the last store made here is in its line (`Cpu::store_written_at`).
    written_at: Cycle,
    accesses: u64,
    failed: Option<Box<SimError>>,
}

impl Summed<'_> {
    #[inline(always)]
    fn hit(&mut self, slot: u32, now: Cycle, need: Need) -> Result<(Cycle, PrivateTarget), Halt> {
        if self.turn.must_yield(now) {
            return Err(Halt);
        }
        let slot = self.first_slot + slot as usize;
        let Some(target) = self.places.targets[slot] else {
            return Err(Halt);
        };
        let l1 = self.l1_hit_cycles;
        let done =
            match self
                .coherence
                .plain_hit(now, self.core, self.thread, target.unit, need, l1)
            {
                Ok(Some(done)) => done,
                Ok(None) => return Err(Halt),
                Err(e) => {
                    self.failed = Some(Box::new(e));
                    return Err(Halt);
                }
            };
        if need == Need::Read && done > now + l1 {
            // The line is still arriving: the load is left to `step`, which
            // goes on past it (`in_flight`).
            return Err(Halt);
        }
        let hits = &mut self.places.hits[slot];
        match need {
            Need::Read => {
                hits.loads += 1;
                // Cycles beyond an L1 hit that the CPU waited for the line.
                hits.stall_cycles += ((done - now) - l1).get();
            }
            Need::Write => hits.stores += 1,
        }
        self.accesses += 1;
        Ok((done, target))
    }
}

impl PrivateAccesses for Summed<'_> {
    #[inline(always)]
    fn slot_of(&self, place: u32) -> Option<u32> {
        self.places.slot[place as usize]
    }

    #[inline(always)]
    fn load(&mut self, slot: u32, now: Cycle) -> Result<(Cycle, i64), Halt> {
        if !self.loads {
            return Err(Halt);
        }
        let (done, target) = self.hit(slot, now, Need::Read)?;
        Ok((
            done,
            read_value(self.bytes, target.address, target.size_bytes),
        ))
    }

    #[inline(always)]
    fn store(&mut self, slot: u32, now: Cycle, value: i64) -> Result<Cycle, Halt> {
        if !self.stores {
            return Err(Halt);
        }
        let (done, target) = self.hit(slot, now, Need::Write)?;
        write_value(self.bytes, target.address, target.size_bytes, value);
        // Posted, as `store` has it: the L1 write goes on behind the CPU.
        self.written_at = done;
        Ok(now + STORE_POST_CYCLES)
    }

    fn take_failure(&mut self) -> Option<Box<SimError>> {
        self.failed.take()
    }
}

/// The policy where no private hit can run ahead (no private place has a
/// slot, or the probe wants every access): every private access stops.
/// Nothing to set up, which shows on the contended paths, where a CPU runs
/// ahead an operation or two at a time.
pub(in crate::engine) struct NoPrivate;

impl PrivateAccesses for NoPrivate {
    #[inline(always)]
    fn slot_of(&self, _: u32) -> Option<u32> {
        None
    }

    #[inline(always)]
    fn load(&mut self, _: u32, _: Cycle) -> Result<(Cycle, i64), Halt> {
        Err(Halt)
    }

    #[inline(always)]
    fn store(&mut self, _: u32, _: Cycle, _: i64) -> Result<Cycle, Halt> {
        Err(Halt)
    }

    #[inline(always)]
    fn take_failure(&mut self) -> Option<Box<SimError>> {
        None
    }
}

/// The run-ahead machine: a CPU's registers (its stack and the running
/// frame's locals borrowed, its program counter and clock held here and
/// written back when it stops), and its private accesses by policy `P`.
pub(in crate::engine) struct Ahead<'a, P> {
    stack: &'a mut Vec<i64>,
    /// The running frame's locals.
    locals: &'a mut [i64],
    /// The program counter, as an index (`Registers` sees it as `u32`).
    pc: usize,
    now: Cycle,
    /// The CPU's share of its core for `work`.
    work_share_percent: u32,
    /// Where `run_cpu` must look at the run's end.
    time_limit: Cycle,
    /// The CPU's operations charged, and past which `run_cpu` must stop
    /// the run (`limits.operations`).
    operations: u64,
    operations_limit: u64,
    private: P,
    /// Superinstructions entered (`shortcut-counts`).
    superinstructions: u64,
    /// The running code's branch directions (`Cpu::predictor`; empty
    /// without a reorder window).
    predictor: &'a mut [u8],
}

impl<P: PrivateAccesses> Registers for Ahead<'_, P> {
    type Stop = Halt;

    #[inline(always)]
    fn stack(&mut self) -> &mut Vec<i64> {
        self.stack
    }

    #[inline(always)]
    fn local(&mut self, slot: u16) -> Option<&mut i64> {
        self.locals.get_mut(slot as usize)
    }

    #[inline(always)]
    fn pc(&self) -> u32 {
        self.pc as u32
    }

    #[inline(always)]
    fn set_pc(&mut self, pc: u32) {
        self.pc = pc as usize;
    }

    #[inline(always)]
    fn now(&self) -> Cycle {
        self.now
    }

    #[inline(always)]
    fn set_now(&mut self, now: Cycle) {
        self.now = now;
    }

    #[inline(always)]
    fn work_share_percent(&self) -> u32 {
        self.work_share_percent
    }

    #[inline(always)]
    fn branch_went(&mut self, taken: bool) {
        if let Some(last) = self.predictor.get_mut(self.pc) {
            *last = taken as u8;
        }
    }

    /// Left to `step`, which reports it.
    #[inline(always)]
    fn fail(&mut self, _: Failure) -> Halt {
        Halt
    }

    #[inline(always)]
    fn clock_moved(&mut self) -> Result<(), Halt> {
        if self.now >= self.time_limit {
            return Err(Halt);
        }
        Ok(())
    }

    /// Past the budget, `run_cpu` reports the run truncated: the loop's
    /// turn is left to `step`, which charges it.
    #[inline(always)]
    fn charge_operations(&mut self, count: u32) -> Result<(), Halt> {
        let charged = self.operations + count as u64;
        if charged > self.operations_limit {
            return Err(Halt);
        }
        self.operations = charged;
        Ok(())
    }
}

impl<P: PrivateAccesses> Machine for Ahead<'_, P> {
    #[inline(always)]
    fn load(&mut self, place: u32) -> Result<(), Halt> {
        let Some(slot) = self.private.slot_of(place) else {
            return Err(Halt);
        };
        if self.stack.len() >= MAX_STACK {
            return Err(Halt);
        }
        let (done, value) = self.private.load(slot, self.now)?;
        self.stack.push(value);
        self.now = done;
        self.pc += 1;
        self.clock_moved()
    }

    #[inline(always)]
    fn store(&mut self, place: u32) -> Result<(), Halt> {
        let Some(slot) = self.private.slot_of(place) else {
            return Err(Halt);
        };
        let Some(&value) = self.stack.last() else {
            return Err(Halt);
        };
        let done = self.private.store(slot, self.now, value)?;
        self.stack.pop();
        self.now = done;
        self.pc += 1;
        self.clock_moved()
    }

    /// Every other access, and whatever changes frames or reaches past the
    /// CPU, is `step`'s.
    #[inline(always)]
    fn beyond(&mut self, _: Op) -> Result<(), Halt> {
        Err(Halt)
    }
}

impl<'a, P: PrivateAccesses> Ahead<'a, P> {
    /// CPU `cpu` at its position, running ahead until `time_limit`.
    pub(in crate::engine) fn new(
        cpu: &'a mut Cpu,
        time_limit: Cycle,
        operations_limit: u64,
        private: P,
    ) -> (Self, &'a mut Frame, &'a mut Cycle, &'a mut u64) {
        let base = cpu.frame.locals_base as usize;
        let work_share_percent = cpu.work_share_percent;
        let Cpu {
            stack,
            locals,
            frame,
            now,
            operations,
            predictor,
            ..
        } = cpu;
        let predictor = match predictor.get_mut(frame.code as usize) {
            Some(sites) => sites.as_mut_slice(),
            None => &mut [],
        };
        let machine = Ahead {
            stack,
            locals: &mut locals[base..],
            pc: frame.pc as usize,
            now: *now,
            work_share_percent,
            time_limit,
            operations: *operations,
            operations_limit,
            private,
            superinstructions: 0,
            predictor,
        };
        (machine, frame, now, operations)
    }

    /// Runs the plain operations of `ops` from the program counter until
    /// one stops it.
    #[inline(always)]
    fn run_plain(&mut self, ops: &[Op]) -> Halt {
        loop {
            let Some(&op) = ops.get(self.pc) else {
                return Halt;
            };
            if let Err(halt) = execute(self, op) {
                return halt;
            }
        }
    }

    /// Runs the fused table `fused` of `ops` from the program counter until
    /// an entry stops it.
    #[inline(always)]
    pub(in crate::engine) fn run_fused(&mut self, ops: &[Op], fused: &[Fused]) -> Halt {
        loop {
            // By reference: a superinstruction's fields are read where used
            // (copied whole, they would all be spilled).
            let Some(entry) = fused.get(self.pc) else {
                return Halt;
            };
            if let Err(halt) = self.execute_fused(entry, ops) {
                return halt;
            }
        }
    }

    /// One entry of a fused table: its plain operation, or a
    /// superinstruction made of the same rules ([`execute`]'s `local`,
    /// `binary`, `set_local`, the machine's private load and store) applied
    /// to values rather than stack slots. Where one of its plain operations
    /// would stop, it stops there, with the stack and the program counter
    /// as the plain operations before it leave them.
    #[inline(always)]
    fn execute_fused(&mut self, entry: &Fused, ops: &[Op]) -> Result<(), Halt> {
        // Fields bound by reference and read where used: bound by value,
        // a superinstruction's every field was loaded and spilled on entry.
        match entry {
            Fused::Plain(op) => execute(self, *op),
            Fused::LoopBack { target } => execute(self, Op::LoopBack(*target)),
            &Fused::RepeatHead { counter, exit } => {
                // The plain head reads the counter and pushes two operands
                // at most: where either could fail, its operations run one
                // by one. (`counter > 0`, `counter - 1`: the rules' values.)
                let room = self.stack.len() + 2 <= MAX_STACK;
                match self.locals.get_mut(counter as usize) {
                    Some(left) if room => {
                        let leaves = binary_value(BinaryOp::Gt, *left, 0) == Some(0);
                        // The head's JumpIfZero, its fourth operation.
                        if let Some(last) = self.predictor.get_mut(self.pc + 3) {
                            *last = leaves as u8;
                        }
                        if leaves {
                            self.pc = exit as usize;
                        } else {
                            *left = left.wrapping_sub(1);
                            self.pc += REPEAT_HEAD_OPS as usize;
                        }
                    }
                    _ => return execute(self, ops[self.pc]),
                }
                self.count_superinstruction();
                Ok(())
            }
            Fused::Binary {
                left,
                right,
                op,
                destination,
            } => {
                // The plain operations push two operands: without room for
                // both, they run one by one.
                if self.stack.len() + 2 > MAX_STACK {
                    return execute(self, ops[self.pc]);
                }
                self.count_superinstruction();
                let a = self.operand(*left, &[])?;
                let b = self.operand(*right, &[a])?;
                let value = match binary(self, *op, a, b) {
                    Ok(value) => value,
                    Err(halt) => return self.stop_after(&[a, b], 2, halt),
                };
                match *destination {
                    Destination::Local(slot) => {
                        if let Err(halt) = set_local(self, slot, value) {
                            return self.stop_after(&[value], BINARY_OPS - 1, halt);
                        }
                        self.pc += BINARY_OPS as usize;
                        Ok(())
                    }
                    Destination::Private(slot) => match self.private.store(slot, self.now, value) {
                        Ok(done) => {
                            self.now = done;
                            self.pc += BINARY_OPS as usize;
                            self.clock_moved()
                        }
                        Err(halt) => self.stop_after(&[value], BINARY_OPS - 1, halt),
                    },
                }
            }
        }
    }

    /// A superinstruction's operand, read as its plain push (`Push`,
    /// `Local`, a private `Load`) would, after the plain pushes of
    /// `before` (the stack has room for both); where that push would stop,
    /// the stop.
    #[inline(always)]
    fn operand(&mut self, operand: Operand, before: &[i64]) -> Result<i64, Halt> {
        let done = before.len() as u32;
        match operand {
            Operand::Const(v) => Ok(v),
            Operand::Local(slot) => match local(self, slot) {
                Ok(v) => Ok(v),
                Err(halt) => self.stop_after(before, done, halt),
            },
            Operand::Private(slot) => match self.private.load(slot, self.now) {
                Ok((done, value)) => {
                    self.now = done;
                    if let Err(halt) = self.clock_moved() {
                        self.stack.extend_from_slice(before);
                        self.stack.push(value);
                        self.pc += before.len() + 1;
                        return Err(halt);
                    }
                    Ok(value)
                }
                Err(halt) => self.stop_after(before, done, halt),
            },
        }
    }

    /// Stops where the plain operations stop after the first `ops_done`,
    /// which leave `values` on the stack. (Inline: a call taking the
    /// machine would keep its registers in memory for the whole loop.)
    #[inline(always)]
    fn stop_after<T>(&mut self, values: &[i64], ops_done: u32, halt: Halt) -> Result<T, Halt> {
        self.stack.extend_from_slice(values);
        self.pc += ops_done as usize;
        Err(halt)
    }

    /// The program counter, clock and operations charged where the
    /// machine stopped.
    pub(in crate::engine) fn position(&self) -> (u32, Cycle, u64) {
        (self.pc as u32, self.now, self.operations)
    }

    /// The invariant check that failed where the machine stopped.
    pub(in crate::engine) fn take_failure(&mut self) -> Option<Box<SimError>> {
        self.private.take_failure()
    }

    /// Its private accesses' policy, as the run left it.
    pub(in crate::engine) fn policy(&self) -> &P {
        &self.private
    }

    /// Superinstructions entered (counted with `shortcut-counts` only).
    pub(in crate::engine) fn superinstructions(&self) -> u64 {
        self.superinstructions
    }

    #[inline(always)]
    fn count_superinstruction(&mut self) {
        #[cfg(feature = "shortcut-counts")]
        {
            self.superinstructions += 1;
        }
    }
}

impl Simulation<'_> {
    /// Gives each private place with one fixed address per CPU a slot, and
    /// resolves its address for every CPU once (per-CPU addresses never
    /// move), so that the run-ahead loop needs no operand or lookup.
    pub(in crate::engine) fn resolve_private_targets(&mut self) {
        let private_code = |code: &Code| {
            code.ops.iter().all(|op| match op {
                Op::Load(p) | Op::Store(p) | Op::Atomic(_, p) => self.private.place[*p as usize],
                _ => true,
            })
        };
        // Only the procedures that running code can call (`code_reached`):
        // one nobody calls, a library module's brought in with one the
        // scenario uses, cannot make an access.
        let CodeReached {
            accessed_places: places_reached,
            called_procedures: procedures_reached,
            ..
        } = code_reached(self.config);
        let procedures_private = self
            .program
            .procedures
            .iter()
            .zip(&procedures_reached)
            .all(|(code, &reached)| !reached || private_code(code));
        // A switch hook is a call the script does not make.
        let hooks =
            self.config.scheduler.switch_in.is_some() || self.config.scheduler.switch_out.is_some();
        // Per script (not per CPU: hundreds of CPUs run one script): its
        // accesses are private and so are those of what it may call.
        let script_private: Vec<bool> = self
            .program
            .scripts
            .iter()
            .map(|script| {
                let calls = script.ops.iter().any(|op| matches!(op, Op::Call(_)));
                private_code(script) && (procedures_private || (!calls && !hooks))
            })
            .collect();
        let smt_dynamic = &self.sched.smt_dynamic;
        self.private.only = self
            .cpus
            .iter()
            .zip(smt_dynamic)
            .map(|(cpu, &smt_dynamic)| {
                // A thread whose share of its core follows its siblings
                // (`sched`) depends on another CPU.
                !smt_dynamic && script_private[cpu.spec.script as usize]
            })
            .collect();
        let places = &self.program.places;
        // One slot per distinct field, however often the code names it
        // (`mine.a = mine.a + 1` names it twice): the places of a slot land
        // on the same bytes for every CPU, and one slot is one look at the
        // line per call and one report of summed hits per iteration.
        // `slot_places`: each slot's first place, which stands for the rest.
        let mut slot_places: Vec<usize> = Vec::new();
        self.private.slot = (0..places.len())
            .map(|p| {
                let place = &places[p];
                let fixed = !place.has_index && place.count > 0 && place.bits.is_none();
                // A place no running code names gets none: a module's
                // procedure that no script calls (sched/preempt's count,
                // brought in with locks/spinlock by memcg/stock) would
                // otherwise make every run ahead take the summed policy.
                if !(self.private.place[p] && fixed && places_reached[p]) {
                    return None;
                }
                let bytes_of =
                    |p: &PlaceRef| (p.instance, p.offset_bytes, p.size_bytes, p.field_id);
                let same = |&q: &usize| bytes_of(&places[q]) == bytes_of(place);
                let slot = match slot_places.iter().position(same) {
                    Some(slot) => slot,
                    None => {
                        slot_places.push(p);
                        slot_places.len() - 1
                    }
                };
                Some(slot as u32)
            })
            .collect();
        let slots = slot_places.len() as u32;
        self.private.slots = slots as usize;
        let bytes_of = |p: usize| {
            let place = &places[p];
            let start = place.offset_bytes as u64;
            (place.instance, start..start + place.size_bytes as u64)
        };
        self.private.disjoint = slot_places.iter().enumerate().all(|(n, &p)| {
            let (instance, range) = bytes_of(p);
            slot_places[n + 1..].iter().all(|&q| {
                let (other, other_range) = bytes_of(q);
                instance != other
                    || range.end <= other_range.start
                    || other_range.end <= range.start
            })
        });
        let mut targets = Vec::with_capacity(self.cpus.len() * slots as usize);
        let mut sums = Vec::with_capacity(targets.capacity());
        for cpu in self.cpus.iter() {
            for &p in &slot_places {
                let place = &places[p];
                let inst = &self.memory.instances[place.instance as usize];
                // Private places are fields of per-CPU instances.
                let target = inst
                    .element_addresses
                    .get(cpu.spec.cpu.slot())
                    .map(|&base| {
                        let address = base + place.offset_bytes as u64;
                        PrivateTarget {
                            address,
                            unit: self.memory.unit_of(address),
                            size_bytes: place.size_bytes,
                        }
                    });
                targets.push(target);
                sums.push(PrivateHits {
                    field_id: place.field_id,
                    address: target.map_or(0, |t| t.address),
                    ..PrivateHits::default()
                });
            }
        }
        self.private.targets = targets;
        self.private.hits = sums;
        self.private.lines = vec![super::hoisted::SlotLine::default(); slots as usize];
    }

    /// Builds the run-ahead loop's fused tables. Accesses to private places
    /// are fused only where the run-ahead loop takes them itself.
    pub(in crate::engine) fn fuse_code(&mut self) {
        let private_slot = &self.private.slot;
        let summed = self.private.summed;
        let superinstructions = self.options.superinstructions;
        self.fused_code = self
            .code_ops
            .iter()
            .map(|ops| {
                if !superinstructions {
                    return Vec::new();
                }
                let fused =
                    fuse::fuse(ops, |place| private_slot[place as usize].filter(|_| summed));
                if fused
                    .iter()
                    .all(|f| matches!(f, Fused::Plain(_) | Fused::LoopBack { .. }))
                {
                    Vec::new()
                } else {
                    fused
                }
            })
            .collect();
        let global_targets = &self.global_targets;
        let reaches_access = &self.reaches_access;
        let fused_atomics = self.options.fused_atomics;
        self.atomic_heads = self
            .code_ops
            .iter()
            .enumerate()
            .map(|(code, ops)| {
                if !fused_atomics {
                    return Vec::new();
                }
                fuse::fuse_atomics(ops, |place| global_targets[place as usize].is_some())
                    .into_iter()
                    .enumerate()
                    .map(|(pc, head)| {
                        head.map(|FusedAtomic { operand, op, place }| AtomicHead {
                            operand,
                            op,
                            target: global_targets[place as usize]
                                .expect("fused only where the place has a fixed target"),
                            // The push at `pc`, the atomic, then the pop.
                            discarded: ops.get(pc + 2) == Some(&Op::Pop),
                            // `fetches_ahead` of the atomic queued: from
                            // the operation after it.
                            fetches_ahead_queued: reaches_access[code]
                                .get(pc + 2)
                                .copied()
                                .unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .collect();
        self.any_atomic_heads = self.atomic_heads.iter().any(|heads| !heads.is_empty());
    }

    /// Hands CPU `i`'s summed private hits to the probe.
    pub(in crate::engine) fn report_private_hits(&mut self, i: CpuIndex, probe: &mut dyn Probe) {
        let slots = self.private.slots;
        let cpu_id = self.cpus[i].spec.cpu;
        for hits in &mut self.private.hits[i.get() * slots..(i.get() + 1) * slots] {
            if hits.loads + hits.stores > 0 {
                count_shortcut!(self.shortcut_entries, 2);
                probe.on_private_hits(cpu_id, hits);
                (hits.loads, hits.stores, hits.stall_cycles) = (0, 0, 0);
            }
        }
    }

    /// Issues the atomic of an `AtomicHead` at CPU `i`'s position, when
    /// the plain run would reach and issue it from here without anything
    /// else happening first: what the push of the operand and `atomic`
    /// leave (the same access, clock, stack and position, the atomic's
    /// position while it waits), without the run-ahead call, the push and
    /// the pop between them. Otherwise (the run's end to look at, no stack
    /// room or no such local, a store buffer to drain, a turn to take)
    /// does nothing, leaving it all to the plain path; but where the turn
    /// alone is missing (`yield_at_atomic`), it does what that path's next
    /// pass would: the run-ahead pushes the operand, the atomic's turn is
    /// not there, the CPU's resume is queued at its clock (taken by
    /// `end_iteration_into_atomic`'s `resume_into_atomic`).
    ///
    /// Answers true when the CPU now waits for that resume: `run_cpu`
    /// returns at once.
    #[inline]
    pub(in crate::engine) fn fused_atomic(
        &mut self,
        i: CpuIndex,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let cpu = &self.cpus[i];
        let pc = cpu.frame.pc as usize;
        let Some(&Some(head)) = self.atomic_heads[cpu.frame.code as usize].get(pc) else {
            return Ok(false);
        };
        // What the loop's top looks at first.
        if cpu.finished || cpu.wait != Wait::None {
            return Ok(false);
        }
        let now = cpu.now;
        // Pushing a local checks its slot (as `step` does); the store
        // buffer is drained first (`atomic`); a CPU that makes only
        // private accesses but has this one cannot exist, but its turn is
        // decided as in `run_cpu` all the same.
        let operand = match head.operand {
            Operand::Const(v) => Some(v),
            Operand::Local(slot) => cpu
                .locals
                .get(cpu.frame.locals_base as usize + slot as usize)
                .copied(),
            Operand::Private(_) => None,
        };
        let Some(operand) = operand else {
            return Ok(false);
        };
        let work = &*cpu.outstanding;
        if now >= self.time_limit
            || cpu.stack.len() >= MAX_STACK
            // Usually nothing is outstanding; otherwise, piece by piece.
            || (!cpu.outstanding.none_at(now)
                && (!work.store_buffer.is_empty()
                    || work.store_written_at > now
                    // An atomic waits for the misses in flight (`in_flight`).
                    || !work.late.is_empty()
                    || work.in_flight.iter().any(|&ready| ready > now)
                    || work.speculating_until > now))
        {
            return Ok(false);
        }
        if !self.private.only[i.get()] && self.must_yield(now, i) {
            // The loop's next pass, with nothing outstanding (so that
            // stepping the push, with the run-ahead off, would do nothing
            // else either): the push, the atomic's turn not there.
            if self.options.yield_at_atomic && cpu.outstanding.none_at(now) {
                push_before_waiting_atomic(&mut self.cpus[i], operand, self.run_local_ops);
                self.schedule(now, EventKind::Resume, i);
                count_shortcut!(self.shortcut_entries, 12);
                return Ok(true);
            }
            return Ok(false);
        }
        let at = enter_head(&mut self.memory_ops, &mut self.cpus[i], now);
        self.issue_head(i, head, operand, at, probe)?;
        Ok(false)
    }

    /// Issues `head`'s atomic for CPU `i` at `at`, with `operand` pushed:
    /// what the push and `atomic` leave, once every check is made and
    /// [`enter_head`] has moved the CPU to the atomic. Answers whether the
    /// CPU is parked at the line ([`Simulation::issue_at`]).
    #[inline(always)]
    fn issue_head(
        &mut self,
        i: CpuIndex,
        head: AtomicHead,
        operand: i64,
        at: IssueAt,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        self.position.turn = Some((at.now, i));
        let pending = PendingAccess {
            op: Some(head.op),
            address: head.target.address,
            size_bytes: head.target.size_bytes,
            field_id: head.target.field_id,
            bits: None,
            operand,
            expected: 0,
            discard: head.discarded,
        };
        let hold = Cycles::new(self.topology.spec.latency.locked_op_cycles);
        let at = IssueAt {
            fetches_ahead_queued: Some(head.fetches_ahead_queued),
            ..at
        };
        let parked = self.issue_at(i, at, pending, Need::Write, hold, probe)?;
        count_shortcut!(self.shortcut_entries, 5);
        Ok(parked)
    }

    /// The resume of a CPU at its iteration's end whose next iteration
    /// starts with an `AtomicHead` (the contended counter's, once its
    /// atomic completed with its value dropped): ends the iteration and
    /// issues the atomic with exactly what `run_cpu`'s first pass does
    /// there (its run-ahead stops at once at `EndIteration`; `step` ends
    /// the iteration and takes its window entry; `fused_atomic` follows),
    /// without the loop's dispatch. Anything that pass would do otherwise
    /// (the run's end, a budget to look at, a scheduler, loads arriving, a
    /// reorder window to wait for) leaves it all to `run_cpu`. The event
    /// loop calls it before `run_cpu`, and calls `run_cpu` only while the
    /// CPU can still run (usually it waits at the line again).
    ///
    /// `event_cycle` is the cycle of the CPU's resume being taken: it came
    /// first in the (cycle, key) order and nothing has been queued since
    /// before it, so at that cycle the CPU's turn is known to have come and
    /// is not computed again.
    ///
    /// Where the atomic completes at once (a hit: the holder's window) and
    /// the CPU is at its iteration's end again, it goes on here as
    /// `run_cpu`'s loop would (`next_iteration_into_atomic`), its turn
    /// computed; where the turn is not there, it waits at the atomic as
    /// `fused_atomic` has it wait (`yield_at_atomic`).
    ///
    /// Answers false when the CPU is known to be parked at its line or
    /// waiting for its resume (the event loop need not look at it again),
    /// true otherwise.
    #[inline]
    pub(in crate::engine) fn end_iteration_into_atomic(
        &mut self,
        i: CpuIndex,
        event_cycle: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let mut event_cycle = event_cycle;
        loop {
            // The CPU looked up once for the checks, the iteration's end and
            // the atomic's entry: the rest of the simulation is borrowed apart.
            let cpu = &mut self.cpus[i];
            let now = cpu.now;
            // Nothing outstanding implies none of the pieces checked after it
            // (the store buffer, the last store's write, late values, misses
            // in flight, speculation, the reorder window).
            let work = &*cpu.outstanding;
            if cpu.finished
                || cpu.wait != Wait::None
                || now >= self.time_limit
                || cpu.operations > self.config.max_operations
                || (!cpu.outstanding.none_at(now)
                    && (!work.store_buffer.is_empty()
                        || work.store_written_at > now
                        || !work.late.is_empty()
                        || !work.in_flight.is_empty()
                        || work.speculating_until > now
                        || (cpu.window_entries > 0 && !work.window.is_empty())))
                || (now == cpu.still_at && cpu.still_steps >= self.config.max_steps_without_time)
            {
                return Ok(true);
            }
            // A scheduler, or the private hits' report (which takes the whole
            // simulation): `run_cpu`'s. Neither, usually: one test.
            debug_assert_eq!(
                self.resume_may_need_run_cpu,
                self.sched.active || (self.private.summed && self.private.slots > 0)
            );
            if self.resume_may_need_run_cpu
                && (self.sched.active
                    || (self.private.summed
                        && self.private.slots > 0
                        && !(cpu.iteration >= self.config.warmup_iterations
                            && self.private.measured_at_end)))
            {
                return Ok(true);
            }
            // At its script's last operation, the `EndIteration` every script
            // ends with (`compile`), known from the CPU alone; one in the middle
            // (a script's `return`) is left to `run_cpu`.
            if cpu.frame.code != cpu.spec.script || u64::from(cpu.frame.pc) + 1 != cpu.script_ops {
                // Elsewhere, perhaps waiting for its turn at a fused atomic.
                if self.options.resume_into_atomic {
                    return self.resume_into_atomic(i, event_cycle, probe);
                }
                return Ok(true);
            }
            debug_assert!(matches!(
                self.code_ops[cpu.frame.code as usize].get(cpu.frame.pc as usize),
                Some(Op::EndIteration)
            ));
            // Read in place until the issue (a copy made here was held on the
            // stack across the iteration's end).
            let Some(Some(head)) = self.atomic_heads[cpu.spec.script as usize].first() else {
                return Ok(true);
            };
            // `run_cpu`'s count of steps without time, then `step`.
            if now == cpu.still_at {
                cpu.still_steps += 1;
            } else {
                cpu.still_at = now;
                cpu.still_steps = 1;
            }
            count_shortcut!(self.shortcut_entries, 5);
            let last = end_iteration_of(
                cpu,
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
                self.cpus[i].dispatched += 1;
                return Ok(true);
            }
            debug_assert!(
                now != event_cycle || !queue_turn(&self.queue, self.tie_seed, i).must_yield(now),
                "the resume's turn has come"
            );
            cpu.dispatched += 1;
            // `fused_atomic`, after an iteration's end: the CPU at its script's
            // start (`head`), with an empty stack and fresh locals; its clock,
            // store buffer and loads as the checks above found them.
            let operand = match head.operand {
                Operand::Const(v) => v,
                Operand::Local(slot) => match cpu.locals.get(slot as usize) {
                    Some(&v) => v,
                    None => return Ok(true),
                },
                Operand::Private(_) => return Ok(true),
            };
            // Where the turn is known to have come (the usual case), it is not
            // computed again.
            if now != event_cycle
                && !self.private.only[i.get()]
                && queue_turn(&self.queue, self.tie_seed, i).must_yield(now)
            {
                // `fused_atomic`'s wait at the atomic (the stack is empty at a
                // script's start).
                if self.options.yield_at_atomic && cpu.outstanding.none_at(now) {
                    push_before_waiting_atomic(cpu, operand, self.run_local_ops);
                    self.schedule(now, EventKind::Resume, i);
                    count_shortcut!(self.shortcut_entries, 12);
                    return Ok(false);
                }
                return Ok(true);
            }
            let at = enter_head(&mut self.memory_ops, cpu, now);
            let parked = self.issue_head(i, *head, operand, at, probe)?;
            if parked || !self.options.next_iteration_into_atomic {
                return Ok(!parked);
            }
            // Completed at once: `run_cpu`'s loop would go on from here, its
            // turn no longer known (the clock moved, the queue may have).
            count_shortcut!(self.shortcut_entries, 13);
            event_cycle = Cycle::MAX;
        }
    }

    /// The resume of a CPU at an `AtomicHead`'s atomic with its operand
    /// pushed (its turn was not there: queued by `fused_atomic`'s yield, or
    /// by `run_cpu`'s turn check at the atomic): issues the atomic with
    /// exactly what `run_cpu`'s first pass does there (the run-ahead stops
    /// at once at an atomic; the access's turn; `step`, whose `atomic` pops
    /// the operand, counts the access and issues it), without the loop's
    /// dispatch. `end_iteration_into_atomic` calls it once its checks have
    /// passed (the CPU running, before the run's end, no store buffer, no
    /// load arriving, no speculation), with `event_cycle` as there; nothing
    /// outstanding at all is asked besides, so that `step` has nothing to
    /// wait for. Answers as `end_iteration_into_atomic` does.
    #[inline(always)]
    fn resume_into_atomic(
        &mut self,
        i: CpuIndex,
        event_cycle: Cycle,
        probe: &mut dyn Probe,
    ) -> Result<bool, SimError> {
        let cpu = &mut self.cpus[i];
        let pc = cpu.frame.pc as usize;
        let Some(&Some(head)) = pc
            .checked_sub(1)
            .and_then(|head_pc| self.atomic_heads[cpu.frame.code as usize].get(head_pc))
        else {
            return Ok(true);
        };
        let now = cpu.now;
        // With nothing outstanding, `run_cpu` orders the access unless the
        // CPU makes private accesses only; at the resume's own cycle its
        // turn is known to have come (see `end_iteration_into_atomic`).
        if !cpu.outstanding.none_at(now)
            || (now != event_cycle
                && !self.private.only[i.get()]
                && queue_turn(&self.queue, self.tie_seed, i).must_yield(now))
        {
            return Ok(true);
        }
        debug_assert!(matches!(
            self.code_ops[cpu.frame.code as usize].get(pc),
            Some(Op::Atomic(op, _)) if *op == head.op
        ));
        // An empty stack is `step`'s to report.
        let Some(operand) = cpu.stack.pop() else {
            return Ok(true);
        };
        count_accesses(&mut self.memory_ops, cpu, 1);
        let at = IssueAt {
            cpu: cpu.spec.cpu,
            now,
            core: cpu.core,
            fetches_ahead_queued: None,
            load: false,
        };
        count_shortcut!(self.shortcut_entries, 11);
        let parked = self.issue_head(i, head, operand, at, probe)?;
        // What `step` does after the operation.
        let cpu = &mut self.cpus[i];
        cpu.dispatched = cpu.dispatched.saturating_add(1);
        if !cpu.outstanding.late.is_empty() {
            self.forget_dropped(i);
        }
        Ok(!parked)
    }

    /// Runs CPU `i` ahead of the event queue as far as it can without
    /// `step` ([`Ahead`]): the operations that touch only its registers
    /// and clock, and (when `sum_private_hits`) plain hits on its private
    /// places, summed for the probe instead of reported one by one. Stops
    /// at the first operation that needs anything else, leaving it for
    /// `step`, and wherever `step` would fail, so that `step` reports it;
    /// and at `time_limit`, where `run_cpu` looks at the run's end.
    ///
    /// `run_cpu` calls it before every operation it steps, so nothing is
    /// computed ahead that only the accesses need.
    ///
    /// A private hit takes its turn as `run_cpu` gives it (see there): the
    /// loop stops before one that `run_cpu` would make yield (its
    /// [`Turn`]). Nothing here schedules events, so the next event
    /// stays where it was when the loop began.
    #[inline]
    pub(in crate::engine) fn run_ahead(&mut self, i: CpuIndex, op: Op) -> Result<(), SimError> {
        let cpu = &self.cpus[i];
        #[cfg(feature = "shortcut-counts")]
        let pc = cpu.frame.pc;
        // Where the machine would stop at once (about every other call, on
        // the contended paths), nothing need be set up for it. `op` is the
        // operation at `pc`, fetched once by `run_cpu`.
        let stops_at_once = match op {
            Op::Load(place) | Op::Store(place) => self.private.slot[place as usize].is_none(),
            op => reaches_beyond(op),
        };
        // A late value is the plain path's, and so is every operation
        // while loads are arriving: each takes its place in the reorder
        // window (`in_flight`).
        if stops_at_once
            || (!cpu.outstanding.none_at(cpu.now)
                && (!cpu.outstanding.late.is_empty()
                    || cpu.outstanding.speculating_until > cpu.now))
        {
            return Ok(());
        }
        // The code cannot change here: calls are left to `step`.
        let result = if self.fused_code[self.cpus[i].frame.code as usize].is_empty() {
            if self.private.summed && self.private.slots > 0 {
                self.run_ahead_summed::<false>(i)
            } else {
                self.run_ahead_registers(i);
                Ok(())
            }
        } else {
            // Out of line, so that the contended paths' loop stays small.
            self.run_ahead_fused(i)
        };
        #[cfg(feature = "shortcut-counts")]
        if self.cpus[i].frame.pc != pc {
            self.shortcut_entries[0] += 1;
        }
        result
    }

    /// `run_ahead` with the [`NoPrivate`] policy, on the plain code.
    #[inline(always)]
    fn run_ahead_registers(&mut self, i: CpuIndex) {
        let cpu = &mut self.cpus[i];
        let ops = self.code_ops[cpu.frame.code as usize];
        let (mut machine, frame, now, operations) =
            Ahead::new(cpu, self.time_limit, self.config.max_operations, NoPrivate);
        let Halt = machine.run_plain(ops);
        (frame.pc, *now, *operations) = machine.position();
    }

    /// `run_ahead` with the [`Summed`] policy; `FUSED` when the code has a
    /// fused table (a code without superinstructions keeps the plain
    /// dispatch: the contended paths run ahead one or two operations at a
    /// time, where the table's lookup would show).
    #[inline(always)]
    pub(in crate::engine) fn run_ahead_summed<const FUSED: bool>(
        &mut self,
        i: CpuIndex,
    ) -> Result<(), SimError> {
        let turn = self.private_turn(i);
        let Simulation {
            cpus,
            coherence,
            bytes,
            code_ops,
            fused_code,
            private,
            memory_ops,
            time_limit,
            store_buffer_entries,
            topology,
            shortcut_entries,
            config,
            ..
        } = self;
        let cpu = &mut cpus[i];
        let code = cpu.frame.code as usize;
        let loads = private.summed && cpu.outstanding.store_buffer.is_empty();
        let first_slot = i.get() * private.slots;
        let policy = Summed {
            coherence,
            bytes,
            places: private,
            first_slot,
            core: cpu.core,
            thread: cpu.thread,
            l1_hit_cycles: Cycles::new(topology.spec.latency.l1_hit_cycles),
            turn,
            loads,
            stores: loads && *store_buffer_entries != 0,
            written_at: Cycle::ZERO,
            accesses: 0,
            failed: None,
        };
        let (mut machine, frame, now, operations) =
            Ahead::new(cpu, *time_limit, config.max_operations, policy);
        let Halt = if FUSED {
            machine.run_fused(code_ops[code], &fused_code[code])
        } else {
            machine.run_plain(code_ops[code])
        };
        (frame.pc, *now, *operations) = machine.position();
        let (accesses, written_at, _superinstructions) = (
            machine.private.accesses,
            machine.private.written_at,
            machine.superinstructions(),
        );
        #[cfg(feature = "shortcut-counts")]
        {
            shortcut_entries[3] += _superinstructions;
        }
        let _ = shortcut_entries;
        let failed = machine.private.take_failure();
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

/// CPU `cpu` at an `AtomicHead`'s atomic, as the push of its operand and
/// `atomic` leave it (its completion moves on), its access counted: what
/// the atomic's issue at `now` reads of it.
#[inline(always)]
fn enter_head(memory_ops: &mut u64, cpu: &mut Cpu, now: Cycle) -> IssueAt {
    cpu.frame.pc += 1;
    count_accesses(memory_ops, cpu, 1);
    IssueAt {
        cpu: cpu.spec.cpu,
        now,
        core: cpu.core,
        fetches_ahead_queued: None,
        load: false,
    }
}

/// `fused_atomic`'s wait at an atomic whose turn has not come, with
/// nothing outstanding: what the plain path's next pass does first, the
/// push of `operand` (counted as `step` counts it, where local operations
/// are not run ahead), before the atomic finds its turn not there and the
/// CPU's resume is queued at its clock (`resume_into_atomic` takes it).
#[inline(always)]
fn push_before_waiting_atomic(cpu: &mut Cpu, operand: i64, run_local_ops: bool) {
    cpu.stack.push(operand);
    cpu.frame.pc += 1;
    if !run_local_ops {
        cpu.dispatched = cpu.dispatched.saturating_add(1);
    }
}
