//! The operation rules: what each script operation does to a CPU's
//! stack, locals, frames and clock (`step`), the builtins, iteration ends,
//! places resolved to addresses, pointers, and the arithmetic.

use super::*;

pub(super) fn start_iteration(cpu: &mut Cpu, program: &Program) {
    let code = &program.scripts[cpu.spec.script as usize];
    cpu.stack.clear();
    cpu.callers.clear();
    cpu.locals.clear();
    // Most scripts have no locals: skip the call.
    if code.local_count > 0 {
        cpu.locals.resize(code.local_count as usize, 0);
    }
    cpu.frame = Frame {
        code: cpu.spec.script,
        pc: 0,
        locals_base: 0,
    };
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

pub(super) fn decode_pointer(pointer: i64, total_bytes: u64) -> Option<Target> {
    if pointer <= 0 {
        return None;
    }
    let v = pointer as u64;
    let address = v & ((1 << POINTER_ADDRESS_BITS) - 1);
    let size = (v >> POINTER_ADDRESS_BITS) & ((1 << POINTER_SIZE_BITS) - 1);
    let field_id = v >> (POINTER_ADDRESS_BITS + POINTER_SIZE_BITS);
    if size == 0 || address + size > total_bytes || field_id > u32::MAX as u64 {
        return None;
    }
    Some(Target {
        address,
        size_bytes: size as u32,
        field_id: field_id as u32,
    })
}

/// The value of `a op b`, or why there is none.
#[inline]
pub(super) fn eval_binary(op: BinaryOp, a: i64, b: i64) -> Result<i64, String> {
    binary_value(op, a, b).ok_or_else(|| match op {
        BinaryOp::Shl | BinaryOp::Shr => format!("shift by {b} is out of range 0..=63"),
        _ => "division by zero".into(),
    })
}

/// The value of `a op b`; `None` for a division by zero or a shift out of
/// range (`eval_binary` says which). Small enough to inline into the
/// run-ahead loop, which leaves the failing cases to `step`.
#[inline(always)]
pub(super) fn binary_value(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
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

impl Simulation<'_> {
    /// Executes one operation of CPU `i`.
    #[inline(always)]
    pub(super) fn step(&mut self, i: usize, op: Op, probe: &mut dyn Probe) -> Result<(), SimError> {
        match op {
            Op::Push(v) => {
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::Local(slot) => {
                let cpu = &self.cpus[i];
                let base = cpu.frame.locals_base as usize;
                let v = cpu.locals[base + slot as usize];
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::SetLocal(slot) => {
                let v = self.pop(i)?;
                let cpu = &mut self.cpus[i];
                let base = cpu.frame.locals_base as usize;
                cpu.locals[base + slot as usize] = v;
                self.advance_pc(i);
            }
            Op::Pop => {
                self.pop(i)?;
                self.advance_pc(i);
            }
            Op::Unary(op) => {
                let v = self.pop(i)?;
                let r = match op {
                    UnaryOp::Neg => v.wrapping_neg(),
                    UnaryOp::Not => (v == 0) as i64,
                    UnaryOp::BitNot => !v,
                };
                self.push(i, r)?;
                self.advance_pc(i);
            }
            Op::Binary(op) => {
                let b = self.pop(i)?;
                let a = self.pop(i)?;
                let r = eval_binary(op, a, b).map_err(|message| self.script_error(i, message))?;
                self.push(i, r)?;
                self.advance_pc(i);
            }
            Op::Jump(target) => self.jump(i, target),
            Op::LoopBack(target) => {
                self.cpus[i].now += 1;
                self.jump(i, target);
            }
            Op::JumpIfZero(target) => {
                if self.pop(i)? == 0 {
                    self.jump(i, target);
                } else {
                    self.advance_pc(i);
                }
            }
            Op::JumpIfNonZero(target) => {
                if self.pop(i)? != 0 {
                    self.jump(i, target);
                } else {
                    self.advance_pc(i);
                }
            }
            Op::Load(place_id) => self.load(i, place_id, probe)?,
            Op::AddressOf(place_id) => {
                let place = &self.program.places[place_id as usize];
                let target = self.address_of(i, place, 0)?;
                self.drop_indices(i, place);
                self.push(i, encode_pointer(target))?;
                self.advance_pc(i);
            }
            Op::Store(place_id) => self.store(i, place_id, probe)?,
            Op::Atomic(op, place_id) => self.atomic(i, op, place_id, probe)?,
            Op::Work => {
                let cycles = self.pop(i)?;
                if cycles < 0 {
                    return Err(
                        self.script_error(i, format!("`work {cycles}`: cycles must be >= 0"))
                    );
                }
                self.cpus[i].now += cycles as u64;
                self.advance_pc(i);
            }
            Op::Fence => {
                if self.cpus[i].store_buffer.is_empty() {
                    self.advance_pc(i);
                } else {
                    self.block_on(i, Wait::BufferEmpty);
                }
            }
            Op::Assert(index) => {
                let v = self.pop(i)?;
                if v == 0 {
                    let (origin, pos) = self.program.positions[index as usize];
                    let cpu = &self.cpus[i];
                    return Err(SimError::Script {
                        cpu: cpu.spec.cpu,
                        cycle: cpu.now,
                        origin: self.program.origins[origin as usize].clone(),
                        pos,
                        message: "assertion failed".into(),
                    });
                }
                self.advance_pc(i);
            }
            Op::Call(proc_index) => {
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
                let base = cpu.locals.len();
                cpu.locals.resize(base + locals, 0);
                for p in (0..params).rev() {
                    let v = cpu.stack.pop().unwrap_or(0);
                    cpu.locals[base + p] = v;
                }
                let callee = Frame {
                    code: (self.program.scripts.len() + proc_index as usize) as u32,
                    pc: 0,
                    locals_base: base as u32,
                };
                let caller = std::mem::replace(&mut cpu.frame, callee);
                cpu.callers.push(caller);
            }
            Op::Return => {
                let v = self.pop(i)?;
                let cpu = &mut self.cpus[i];
                cpu.locals.truncate(cpu.frame.locals_base as usize);
                if let Some(caller) = cpu.callers.pop() {
                    cpu.frame = caller;
                }
                self.push(i, v)?;
            }
            Op::Builtin(b) => {
                let v = self.builtin(i, b)?;
                self.push(i, v)?;
                self.advance_pc(i);
            }
            Op::EndIteration => self.end_iteration(i, probe),
        }
        Ok(())
    }

    pub(super) fn builtin(&mut self, i: usize, builtin: Builtin) -> Result<i64, SimError> {
        let cpu_id = self.cpus[i].spec.cpu;
        Ok(match builtin {
            Builtin::Cpu => cpu_id as i64,
            Builtin::Core => self.topology.core_of(cpu_id) as i64,
            Builtin::Node => self.topology.node_of(cpu_id) as i64,
            Builtin::Socket => self.topology.socket_of(cpu_id) as i64,
            Builtin::Tid => self.cpus[i].spec.tid as i64,
            Builtin::Nthreads => self.cpus[i].spec.group_size as i64,
            Builtin::Ncpus => self.topology.cpu_count() as i64,
            Builtin::Nnodes => self.topology.node_count() as i64,
            Builtin::Iteration => self.cpus[i].iteration as i64,
            Builtin::Now => self.cpus[i].now.0 as i64,
            Builtin::Random => {
                let n = self.pop(i)?;
                if n <= 0 {
                    return Err(
                        self.script_error(i, format!("random({n}): the bound must be >= 1"))
                    );
                }
                uniform_below(&mut self.cpus[i].rng, n as u64) as i64
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
                let Some(whole) = decode_pointer(pointer, self.memory.total_bytes) else {
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
        })
    }

    pub(super) fn end_iteration(&mut self, i: usize, probe: &mut dyn Probe) {
        if self.sum_private_hits && self.private_slots > 0 {
            // Before `on_iteration`, which may start the measured window.
            self.report_private_hits(i, probe);
        }
        let warmup = self.config.warmup_iterations;
        let cpu = &mut self.cpus[i];
        let measured = cpu.iteration >= warmup;
        probe.on_iteration(
            cpu.spec.cpu,
            cpu.iteration,
            cpu.iteration_start,
            cpu.now,
            measured,
        );
        cpu.iteration += 1;
        if cpu.iteration == warmup {
            self.measure_start = self.measure_start.max(cpu.now.0);
        }
        if let StopRule::Iterations(n) = self.config.stop {
            if cpu.iteration >= warmup.saturating_add(n) {
                cpu.callers.clear();
                self.finish(i);
                return;
            }
        }
        cpu.iteration_start = cpu.now;
        start_iteration(cpu, self.program);
    }

    #[inline]
    pub(super) fn advance_pc(&mut self, i: usize) {
        self.cpus[i].frame.pc += 1;
    }

    #[inline]
    pub(super) fn jump(&mut self, i: usize, target: u32) {
        self.cpus[i].frame.pc = target;
    }

    #[inline]
    pub(super) fn push(&mut self, i: usize, value: i64) -> Result<(), SimError> {
        let stack = &mut self.cpus[i].stack;
        if stack.len() >= MAX_STACK {
            return Err(self.script_error(i, "operand stack overflow".into()));
        }
        stack.push(value);
        Ok(())
    }

    #[inline]
    pub(super) fn pop(&mut self, i: usize) -> Result<i64, SimError> {
        match self.cpus[i].stack.pop() {
            Some(v) => Ok(v),
            None => Err(self.script_error(i, "internal: operand stack empty".into())),
        }
    }

    /// Removes a place's run-time operands (indices, or the pointer) from the stack.
    pub(super) fn drop_indices(&mut self, i: usize, place: &PlaceRef) {
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
        i: usize,
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
        i: usize,
        place: &PlaceRef,
        above: usize,
    ) -> Result<Target, SimError> {
        if !place.pointer && !place.has_element && !place.has_index && place.count > 0 {
            // The common case: the running CPU's (or node's, or the only)
            // element, no operands on the stack.
            let cpu_id = self.cpus[i].spec.cpu;
            let element = match place.kind {
                InstanceKind::Global => 0,
                InstanceKind::PerCpu => cpu_id as usize,
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
        i: usize,
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
            return decode_pointer(pointer, self.memory.total_bytes).ok_or_else(|| {
                self.script_error(
                    i,
                    format!("`*` of {pointer}, which is not a pointer made by `&inst.field`"),
                )
            });
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
                InstanceKind::PerCpu => cpu_id as i64,
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
