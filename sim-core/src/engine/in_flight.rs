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
//! Only `step` (the `Ordered` machine) meets late values: the run-ahead
//! loop does not start while a CPU has one, and stops before a private load
//! on a line still arriving, so the shortcuts leave every late value to the
//! plain path.

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
    pub(super) fn await_operands(&mut self, i: usize, op: Op, probe: &mut dyn Probe) -> bool {
        let cpu = &mut self.cpus[i];
        let now = cpu.now;
        cpu.late.retain(|v| v.ready > now);
        cpu.in_flight.retain(|&ready| ready > now);
        let depth = cpu.stack.len() as u32;
        let base = cpu.frame.locals_base;
        let local_slot = |slot: u16| Slot::Local(base + slot as u32);
        let reads = match op {
            Op::Push(_) | Op::Jump(_) | Op::LoopBack(_) => return false,
            Op::Local(slot) => {
                let from = local_slot(slot);
                if let Some(v) = cpu.late.iter().find(|v| v.slot == from).copied() {
                    cpu.late.push(LateValue {
                        slot: Slot::Stack(depth),
                        ..v
                    });
                }
                return false;
            }
            Op::SetLocal(slot) => {
                let to = local_slot(slot);
                cpu.late.retain(|v| v.slot != to);
                if let Some(v) = cpu
                    .late
                    .iter_mut()
                    .find(|v| depth > 0 && v.slot == Slot::Stack(depth - 1))
                {
                    v.slot = to;
                }
                return false;
            }
            Op::Pop => {
                cpu.late
                    .retain(|v| depth == 0 || v.slot != Slot::Stack(depth - 1));
                return false;
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
        let (mut ready, mut waited_for) = (now, None);
        match reads {
            Reads::Top(n) => {
                let lowest = depth.saturating_sub(n as u32);
                cpu.late.retain(|v| match v.slot {
                    Slot::Stack(k) if k >= lowest => {
                        if v.ready > ready {
                            (ready, waited_for) = (v.ready, Some(*v));
                        }
                        false
                    }
                    _ => true,
                });
            }
            Reads::Everything => {
                for v in cpu.late.drain(..) {
                    if v.ready > ready {
                        (ready, waited_for) = (v.ready, Some(v));
                    }
                }
                // A miss whose value was dropped still holds its buffer
                // until its line arrives.
                if let Some(&last) = cpu.in_flight.iter().max() {
                    ready = ready.max(last);
                }
                cpu.in_flight.clear();
            }
        }
        if ready <= now {
            return false;
        }
        cpu.now = ready;
        let (address, field_id) = waited_for.map_or((0, None), |v| (v.address, Some(v.field_id)));
        probe.on_load_wait(cpu.spec.cpu, now, ready, address, field_id);
        true
    }

    /// After CPU `i` stepped an operation with late values about: drops the
    /// marks of values the operation took off the stack, or of a returning
    /// procedure's locals.
    pub(super) fn forget_dropped(&mut self, i: usize) {
        let cpu = &mut self.cpus[i];
        let (depth, locals) = (cpu.stack.len() as u32, cpu.locals.len() as u32);
        cpu.late.retain(|v| match v.slot {
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
        i: usize,
        unit: usize,
        probe: &mut dyn Probe,
    ) -> bool {
        let cpu = &self.cpus[i];
        if cpu.in_flight.len() < self.outstanding_misses {
            return false;
        }
        let now = cpu.now;
        if self.coherence.state(cpu.core, unit) != LineState::Invalid {
            return false;
        }
        let cpu = &mut self.cpus[i];
        cpu.in_flight.retain(|&ready| ready > now);
        if cpu.in_flight.len() < self.outstanding_misses {
            return false;
        }
        let first = *cpu.in_flight.iter().min().expect("every buffer is taken");
        cpu.now = first;
        cpu.in_flight.retain(|&ready| ready > first);
        probe.on_load_wait(cpu.spec.cpu, now, first, 0, None);
        true
    }

    /// Completes a load whose line is still on its way: the value (read
    /// where the home ordered the access) pushed and marked late until
    /// `report.done`, a cycle to issue it, and a miss buffer held until then
    /// unless the load shares a fetch already under way (`merged`).
    pub(super) fn load_in_flight(
        &mut self,
        i: usize,
        p: &PendingAccess,
        report: &AccessReport,
        merged: bool,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        let value = self.read_value(p.address, p.size_bytes);
        let value = p.bits.map_or(value, |b| b.extract(value));
        let cpu = &mut self.cpus[i];
        // Those that have arrived are free (they are dropped lazily).
        let now = cpu.now;
        cpu.in_flight.retain(|&ready| ready > now);
        if !merged {
            cpu.in_flight.push(report.done);
        }
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
            misses_in_flight: cpu.in_flight.len().max(1) as u32,
        });
        // Issuing the load takes a cycle of the core, as posting a store does.
        cpu.now += Cycles::new(1);
        let slot = Slot::Stack(cpu.stack.len() as u32);
        self.push(i, value)?;
        let cpu = &mut self.cpus[i];
        cpu.late.push(LateValue {
            slot,
            ready: report.done,
            address: p.address,
            field_id: p.field_id,
        });
        self.advance_pc(i);
        Ok(())
    }
}

/// The run-time operands of an access to `place` on the stack.
fn operand_count(place: &PlaceRef) -> usize {
    place.pointer as usize + place.has_element as usize + place.has_index as usize
}
