//! Running ahead of the event queue (`EngineOptions::run_ahead` and the
//! switches that build on it): register-only operations, plain hits on a
//! CPU's private places summed for the probe, superinstructions from the
//! fused table, and atomics at a script's or procedure's start issued at
//! once. Each must leave everything as stepping would
//! (`sim-core/tests/shortcuts.rs`).

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

/// A plain hit of the running CPU on a private place, as both run-ahead
/// loops take it: the hit ([`Coherence::plain_hit`]), its sums for the
/// statistics probe, and the CPU's clock moved to its completion. `Ok(None)`
/// where the access is no plain hit (nothing changed: the caller stops and
/// leaves it to `step`).
#[inline(always)]
pub(in crate::engine) fn take_private_hit(
    coherence: &mut Coherence,
    cpu: &mut Cpu,
    unit: usize,
    need: Need,
    l1_hit_cycles: u64,
    hits: &mut PrivateHits,
    accesses: &mut u64,
) -> Result<Option<Cycle>, SimError> {
    let now = cpu.now;
    let Some(done) = coherence.plain_hit(now, cpu.core, cpu.thread, unit, need, l1_hit_cycles)?
    else {
        return Ok(None);
    };
    match need {
        Need::Read => {
            hits.loads += 1;
            // Cycles beyond an L1 hit that the CPU waited for the line.
            hits.stall_cycles += (done - now).saturating_sub(l1_hit_cycles);
        }
        Need::Write => hits.stores += 1,
    }
    *accesses += 1;
    cpu.now = done;
    Ok(Some(done))
}

impl FusedBinary {
    /// Runs the fused operations exactly as the run-ahead loop runs the
    /// plain ones: each private access is the same plain hit at the same
    /// cycle with the same sums, and wherever the plain run would stop (a
    /// miss, a failed check, the time limit, a failing operation) this one
    /// stops at the same position with the same operands on the stack.
    #[inline(always)]
    pub(in crate::engine) fn run(
        &self,
        cpu: &mut Cpu,
        run: RunAheadContext<'_>,
        accesses: &mut u64,
    ) -> FusedStep {
        let base = cpu.frame.locals_base as usize;
        let locals = cpu.locals.len();
        let ready = |operand: Operand| match operand {
            Operand::Const(_) => true,
            Operand::Local(slot) => base + (slot as usize) < locals,
            Operand::Private(slot) => {
                run.sum_private_hits
                    && cpu.store_buffer.is_empty()
                    && run.private_targets[slot as usize].unit != usize::MAX
            }
        };
        let destination_ready = match self.destination {
            Destination::Local(slot) => base + (slot as usize) < locals,
            // Without store buffer entries every store waits (as `store` does).
            Destination::Private(slot) => {
                run.sum_private_hits
                    && run.store_buffer_entries != 0
                    && cpu.store_buffer.is_empty()
                    && run.private_targets[slot as usize].unit != usize::MAX
            }
        };
        // The plain run pushes both operands; none of these conditions can
        // change part-way, since nothing here touches the store buffer.
        if cpu.stack.len() + 2 > MAX_STACK
            || !ready(self.left)
            || !ready(self.right)
            || !destination_ready
        {
            return FusedStep::Plain;
        }
        let RunAheadContext {
            coherence,
            bytes,
            private_targets,
            private_hits,
            l1_hit_cycles: l1,
            time_limit,
            private_only,
            turn,
            ..
        } = run;
        // A private access takes its turn as the plain one does: it stops
        // before running (as on a miss).
        let must_wait = |now: Cycle| !private_only && turn.must_yield(now.0);
        // Leaves the first `done` plain operations done, their values on
        // the stack.
        let stop = |cpu: &mut Cpu, values: &[i64], done: u32, result| {
            cpu.stack.extend_from_slice(values);
            cpu.frame.pc += done;
            FusedStep::Stop(result)
        };
        let mut values = [0i64; 2];
        for (k, operand) in [self.left, self.right].into_iter().enumerate() {
            values[k] = match operand {
                Operand::Const(v) => v,
                Operand::Local(slot) => cpu.locals[base + slot as usize],
                Operand::Private(slot) => {
                    let target = private_targets[slot as usize];
                    if must_wait(cpu.now) {
                        return stop(cpu, &values[..k], k as u32, Ok(()));
                    }
                    let hits = &mut private_hits[slot as usize];
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Read,
                        l1,
                        hits,
                        accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => return stop(cpu, &values[..k], k as u32, Ok(())),
                        Err(e) => return stop(cpu, &values[..k], k as u32, Err(e)),
                    };
                    let value = read_value(bytes, target.address, target.size_bytes);
                    if done.0 >= time_limit {
                        values[k] = value;
                        return stop(cpu, &values[..=k], k as u32 + 1, Ok(()));
                    }
                    value
                }
            };
        }
        let Some(result) = binary_value(self.operator, values[0], values[1]) else {
            return stop(cpu, &values, 2, Ok(()));
        };
        match self.destination {
            Destination::Local(slot) => {
                cpu.locals[base + slot as usize] = result;
                cpu.frame.pc += BINARY_OPS;
                FusedStep::Continue
            }
            Destination::Private(slot) => {
                let target = private_targets[slot as usize];
                if must_wait(cpu.now) {
                    return stop(cpu, &[result], 3, Ok(()));
                }
                let hits = &mut private_hits[slot as usize];
                let done = match take_private_hit(
                    coherence,
                    cpu,
                    target.unit,
                    Need::Write,
                    l1,
                    hits,
                    accesses,
                ) {
                    Ok(Some(done)) => done,
                    Ok(None) => return stop(cpu, &[result], 3, Ok(())),
                    Err(e) => return stop(cpu, &[result], 3, Err(e)),
                };
                write_value(bytes, target.address, target.size_bytes, result);
                cpu.frame.pc += BINARY_OPS;
                if done.0 >= time_limit {
                    return FusedStep::Stop(Ok(()));
                }
                FusedStep::Continue
            }
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
                Op::Load(p) | Op::Store(p) | Op::Atomic(_, p) => self.private_place[*p as usize],
                _ => true,
            })
        };
        let procedures_private = self.program.procedures.iter().all(private_code);
        self.private_only = self
            .cpus
            .iter()
            .map(|cpu| {
                let script = &self.program.scripts[cpu.spec.script as usize];
                let calls = script.ops.iter().any(|op| matches!(op, Op::Call(_)));
                private_code(script) && (procedures_private || !calls)
            })
            .collect();
        let places = &self.program.places;
        let mut slots = 0u32;
        self.private_slot = (0..places.len())
            .map(|p| {
                let place = &places[p];
                if self.private_place[p]
                    && !place.has_index
                    && place.count > 0
                    && place.bits.is_none()
                {
                    slots += 1;
                    slots - 1
                } else {
                    NOT_PRIVATE
                }
            })
            .collect();
        self.private_slots = slots as usize;
        let mut targets = Vec::with_capacity(self.cpus.len() * slots as usize);
        let mut sums = Vec::with_capacity(targets.capacity());
        for cpu in &self.cpus {
            for (p, &slot) in self.private_slot.iter().enumerate() {
                if slot == NOT_PRIVATE {
                    continue;
                }
                let place = &places[p];
                let inst = &self.memory.instances[place.instance as usize];
                // Private places are fields of per-CPU instances.
                let target = match inst.element_addresses.get(cpu.spec.cpu as usize) {
                    Some(&base) => {
                        let address = base + place.offset_bytes as u64;
                        PrivateTarget {
                            address,
                            unit: self.memory.unit_of(address),
                            size_bytes: place.size_bytes,
                        }
                    }
                    None => PrivateTarget {
                        address: 0,
                        unit: usize::MAX,
                        size_bytes: 0,
                    },
                };
                targets.push(target);
                sums.push(PrivateHits {
                    field_id: place.field_id,
                    address: target.address,
                    ..PrivateHits::default()
                });
            }
        }
        self.private_targets_resolved = targets
            .chunks(slots.max(1) as usize)
            .map(|cpu_targets| cpu_targets.iter().all(|t| t.unit != usize::MAX))
            .collect();
        if slots == 0 {
            self.private_targets_resolved = vec![true; self.cpus.len()];
        }
        self.private_targets = targets;
        self.private_hits = sums;
        self.slot_lines = vec![super::fused_loop::SlotLine::default(); slots as usize];
    }

    /// Builds the run-ahead loop's fused tables. Accesses to private places
    /// are fused only where the run-ahead loop takes them itself.
    pub(in crate::engine) fn fuse_code(&mut self) {
        let private_slot = &self.private_slot;
        let sum_private_hits = self.sum_private_hits;
        let superinstructions = self.options.superinstructions;
        self.fused_code = self
            .code_ops
            .iter()
            .map(|ops| {
                if !superinstructions {
                    return Vec::new();
                }
                let fused = fuse::fuse(ops, |place| {
                    let slot = private_slot[place as usize];
                    (sum_private_hits && slot != NOT_PRIVATE).then_some(slot)
                });
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
        let fused_atomics = self.options.fused_atomics;
        self.atomic_heads = self
            .code_ops
            .iter()
            .map(|ops| {
                if !fused_atomics {
                    return Vec::new();
                }
                fuse::fuse_atomics(ops, |place| global_targets[place as usize].is_some())
                    .into_iter()
                    .map(|head| {
                        head.map(|FusedAtomic { operand, op, place }| AtomicHead {
                            operand,
                            op,
                            target: global_targets[place as usize]
                                .expect("fused only where the place has a fixed target"),
                        })
                    })
                    .collect()
            })
            .collect();
        self.any_atomic_heads = self.atomic_heads.iter().any(|heads| !heads.is_empty());
        self.fused_locals = self
            .fused_code
            .iter()
            .map(|fused| {
                let local = |operand: &Operand| match *operand {
                    Operand::Local(slot) => slot as u32 + 1,
                    _ => 0,
                };
                fused
                    .iter()
                    .map(|entry| match entry {
                        Fused::Plain(_) | Fused::LoopBack { .. } => 0,
                        Fused::RepeatHead { counter, .. } => *counter as u32 + 1,
                        Fused::Binary {
                            left,
                            right,
                            destination,
                            ..
                        } => local(left).max(local(right)).max(match destination {
                            Destination::Local(slot) => *slot as u32 + 1,
                            Destination::Private(_) => 0,
                        }),
                    })
                    .max()
                    .unwrap_or(0)
            })
            .collect();
    }

    /// Hands CPU `i`'s summed private hits to the probe.
    pub(in crate::engine) fn report_private_hits(&mut self, i: usize, probe: &mut dyn Probe) {
        let slots = self.private_slots;
        let cpu_id = self.cpus[i].spec.cpu;
        for hits in &mut self.private_hits[i * slots..(i + 1) * slots] {
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
    /// does nothing and answers false, leaving it all to the plain path.
    #[inline]
    pub(in crate::engine) fn fused_atomic(
        &mut self,
        i: usize,
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
        let now = cpu.now.0;
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
        if now >= self.time_limit
            || cpu.stack.len() >= MAX_STACK
            || !cpu.store_buffer.is_empty()
            || (!self.private_only[i] && self.must_yield(now, i))
        {
            return Ok(false);
        }
        // At the atomic, as `atomic` leaves it (its completion moves on).
        self.cpus[i].frame.pc += 1;
        count_accesses(&mut self.memory_ops, &mut self.cpus[i], 1);
        self.position = spin::Position {
            access: Some((now, i)),
            ..self.position
        };
        let pending = PendingAccess {
            op: Some(head.op),
            address: head.target.address,
            size_bytes: head.target.size_bytes,
            field_id: head.target.field_id,
            bits: None,
            operand,
            expected: 0,
        };
        let hold = self.topology.spec.latency.locked_op_cycles;
        self.issue(i, pending, Need::Write, hold, probe)?;
        count_shortcut!(self.shortcut_entries, 5);
        Ok(true)
    }

    /// Runs CPU `i` ahead of the event queue as far as it can without
    /// `step`: the operations that touch only its registers, loop
    /// back-edges, and (when `sum_private_hits`) plain hits on its private
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
    pub(in crate::engine) fn run_ahead(&mut self, i: usize) -> Result<(), SimError> {
        #[cfg(feature = "shortcut-counts")]
        let pc = self.cpus[i].frame.pc;
        // The code cannot change here: calls are left to `step`.
        let result = if self.fused_code[self.cpus[i].frame.code as usize].is_empty() {
            self.run_ahead_loop::<false>(i)
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

    /// `run_ahead`'s loop; `FUSED` when the code has a fused table (a code
    /// without superinstructions keeps the plain dispatch: the contended
    /// paths run ahead one or two operations at a time, where the table's
    /// lookup would show).
    #[inline(always)]
    pub(in crate::engine) fn run_ahead_loop<const FUSED: bool>(
        &mut self,
        i: usize,
    ) -> Result<(), SimError> {
        let turn = self.turn(i);
        let Simulation {
            cpus,
            coherence,
            bytes,
            code_ops,
            fused_code,
            private_slot,
            private_slots,
            private_targets,
            private_hits,
            private_only,
            memory_ops,
            time_limit,
            sum_private_hits,
            store_buffer_entries,
            topology,
            shortcut_entries,
            ..
        } = self;
        let cpu = &mut cpus[i];
        let ops = code_ops[cpu.frame.code as usize];
        let fused = &fused_code[cpu.frame.code as usize];
        let mut accesses = 0;
        let result = loop {
            let pc = cpu.frame.pc as usize;
            let entry = if FUSED {
                fused.get(pc).copied()
            } else {
                ops.get(pc).map(|&op| Fused::Plain(op))
            };
            let Some(entry) = entry else {
                break Ok(());
            };
            if FUSED && !matches!(entry, Fused::Plain(_) | Fused::LoopBack { .. }) {
                count_shortcut!(shortcut_entries, 3);
            }
            // A superinstruction runs whole, or stops where its plain
            // operations would, or (when it cannot start as they would)
            // leaves its first plain operation to the match below.
            let op = match entry {
                Fused::Plain(op) => op,
                Fused::LoopBack { .. } => ops[pc],
                Fused::RepeatHead { counter, exit } => {
                    let index = cpu.frame.locals_base as usize + counter as usize;
                    // The plain head pushes two operands at most.
                    if index < cpu.locals.len() && cpu.stack.len() + 2 <= MAX_STACK {
                        let left = cpu.locals[index];
                        if left > 0 {
                            cpu.locals[index] = left - 1;
                            cpu.frame.pc += REPEAT_HEAD_OPS;
                        } else {
                            cpu.frame.pc = exit;
                        }
                        continue;
                    }
                    ops[pc]
                }
                Fused::Binary {
                    left,
                    right,
                    op: operator,
                    destination,
                } => {
                    let fused_binary = FusedBinary {
                        left,
                        right,
                        operator,
                        destination,
                    };
                    let run = RunAheadContext {
                        coherence,
                        bytes,
                        private_targets: &private_targets[i * *private_slots..],
                        private_hits: &mut private_hits[i * *private_slots..],
                        sum_private_hits: *sum_private_hits,
                        store_buffer_entries: *store_buffer_entries,
                        l1_hit_cycles: topology.spec.latency.l1_hit_cycles,
                        time_limit: *time_limit,
                        private_only: private_only[i],
                        turn,
                    };
                    match fused_binary.run(cpu, run, &mut accesses) {
                        FusedStep::Plain => ops[pc],
                        FusedStep::Continue => continue,
                        FusedStep::Stop(result) => break result,
                    }
                }
            };
            let stack = &mut cpu.stack;
            match op {
                Op::Push(v) => {
                    if stack.len() >= MAX_STACK {
                        break Ok(());
                    }
                    stack.push(v);
                }
                Op::Local(slot) => {
                    let Some(&v) = cpu
                        .locals
                        .get(cpu.frame.locals_base as usize + slot as usize)
                    else {
                        break Ok(());
                    };
                    if stack.len() >= MAX_STACK {
                        break Ok(());
                    }
                    stack.push(v);
                }
                Op::SetLocal(slot) => {
                    let index = cpu.frame.locals_base as usize + slot as usize;
                    if index >= cpu.locals.len() {
                        break Ok(());
                    }
                    let Some(v) = stack.pop() else { break Ok(()) };
                    cpu.locals[index] = v;
                }
                Op::Pop => {
                    if stack.pop().is_none() {
                        break Ok(());
                    }
                }
                Op::Binary(op) => {
                    let n = stack.len();
                    if n < 2 {
                        break Ok(());
                    }
                    let Some(r) = binary_value(op, stack[n - 2], stack[n - 1]) else {
                        break Ok(());
                    };
                    stack[n - 2] = r;
                    stack.truncate(n - 1);
                }
                Op::Jump(target) => {
                    cpu.frame.pc = target;
                    continue;
                }
                Op::JumpIfZero(target) | Op::JumpIfNonZero(target) => {
                    let Some(v) = stack.pop() else { break Ok(()) };
                    if (v == 0) == matches!(op, Op::JumpIfZero(_)) {
                        cpu.frame.pc = target;
                        continue;
                    }
                }
                Op::LoopBack(target) => {
                    cpu.now += 1;
                    cpu.frame.pc = target;
                    if cpu.now.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                Op::Load(place) if *sum_private_hits => {
                    let slot = private_slot[place as usize];
                    if slot == NOT_PRIVATE
                        || !cpu.store_buffer.is_empty()
                        || stack.len() >= MAX_STACK
                        || (!private_only[i] && turn.must_yield(cpu.now.0))
                    {
                        break Ok(());
                    }
                    // This CPU's slots start at `i * private_slots`.
                    let slot = i * *private_slots + slot as usize;
                    let target = private_targets[slot];
                    if target.unit == usize::MAX {
                        break Ok(());
                    }
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Read,
                        topology.spec.latency.l1_hit_cycles,
                        &mut private_hits[slot],
                        &mut accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    };
                    cpu.stack
                        .push(read_value(bytes, target.address, target.size_bytes));
                    cpu.frame.pc += 1;
                    if done.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                Op::Store(place) if *sum_private_hits => {
                    let slot = private_slot[place as usize];
                    // An empty store buffer writes straight into an owned line.
                    if slot == NOT_PRIVATE
                        || !cpu.store_buffer.is_empty()
                        || stack.is_empty()
                        || (!private_only[i] && turn.must_yield(cpu.now.0))
                    {
                        break Ok(());
                    }
                    let slot = i * *private_slots + slot as usize;
                    let target = private_targets[slot];
                    // Without store buffer entries every store waits (as
                    // `store` does).
                    if target.unit == usize::MAX || *store_buffer_entries == 0 {
                        break Ok(());
                    }
                    let done = match take_private_hit(
                        coherence,
                        cpu,
                        target.unit,
                        Need::Write,
                        topology.spec.latency.l1_hit_cycles,
                        &mut private_hits[slot],
                        &mut accesses,
                    ) {
                        Ok(Some(done)) => done,
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    };
                    let value = cpu.stack.pop().unwrap_or_default();
                    write_value(bytes, target.address, target.size_bytes, value);
                    cpu.frame.pc += 1;
                    if done.0 >= *time_limit {
                        break Ok(());
                    }
                    continue;
                }
                _ => break Ok(()),
            }
            cpu.frame.pc += 1;
        };
        count_accesses(memory_ops, cpu, accesses);
        result
    }
}
