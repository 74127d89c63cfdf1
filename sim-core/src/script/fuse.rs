//! A peephole pass over compiled code for the engine's run-ahead loop: runs
//! of stack operations that a script repeats in its hot loops become one
//! register-style superinstruction that reads its operands (constants,
//! locals, private places) directly and writes its result where the last
//! operation of the run would.
//!
//! The plain code stays as it is and is what `step` runs; the fused table
//! sits beside it, one entry per operation, so a jump into the middle of a
//! run, an error, a source position or a stop half-way all still see the
//! plain operations. The run-ahead loop takes a fused entry only when it can
//! complete it the way the plain operations would, and otherwise runs the
//! plain operation at the same position.

use super::ast::{AtomicOp, BinaryOp};
use super::compile::Op;

/// A value a superinstruction reads without the operand stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// `Op::Push`.
    Const(i64),
    /// `Op::Local`: a slot of the running frame.
    Local(u16),
    /// `Op::Load` of a private place: its slot among the private places
    /// (`Simulation::private_slot`), a plain hit on the CPU's own line.
    Private(u32),
}

/// Where a superinstruction's result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// `Op::SetLocal`.
    Local(u16),
    /// `Op::Store` to a private place (its private slot).
    Private(u32),
}

/// One entry of the fused table: what the run-ahead loop runs at a position.
/// (`repr(u8)`: a tag of its own, one compare to tell the entries apart,
/// rather than one folded into `Op`'s.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fused {
    /// The plain operation.
    Plain(Op),
    /// A `repeat` head, [`REPEAT_HEAD_OPS`] operations: `Local(c) Push(0)
    /// Binary(Gt) JumpIfZero(exit) Local(c) Push(1) Binary(Sub)
    /// SetLocal(c)`: go on with the counter one lower while it is above zero,
    /// else leave the loop.
    RepeatHead { counter: u16, exit: u32 },
    /// [`BINARY_OPS`] operations: two operands, `Binary(op)`, and a
    /// `SetLocal` or `Store` of the result (`mine.a = mine.a + 1`).
    Binary {
        left: Operand,
        right: Operand,
        op: BinaryOp,
        destination: Destination,
    },
    /// `Op::LoopBack`, in the table so that the run-ahead loop takes it
    /// without decoding a plain operation (it alone does not make a code
    /// worth a table).
    LoopBack { target: u32 },
}

/// Plain operations a [`Fused::RepeatHead`] stands for.
pub const REPEAT_HEAD_OPS: u32 = 8;
/// Plain operations a [`Fused::Binary`] stands for.
pub const BINARY_OPS: u32 = 4;

/// Builds the fused table of one code: one entry per operation, a
/// superinstruction where a run starts. `private_slot` gives a place's
/// private slot, or `None` where the run-ahead loop does not take the
/// place's accesses itself (then no superinstruction reads or writes it).
pub fn fuse(ops: &[Op], private_slot: impl Fn(u32) -> Option<u32>) -> Vec<Fused> {
    let operand = |op: Op| match op {
        Op::Push(v) => Some(Operand::Const(v)),
        Op::Local(slot) => Some(Operand::Local(slot)),
        Op::Load(place) => private_slot(place).map(Operand::Private),
        _ => None,
    };
    (0..ops.len())
        .map(|pc| {
            let rest = &ops[pc..];
            if let [Op::Local(c), Op::Push(0), Op::Binary(BinaryOp::Gt), Op::JumpIfZero(exit), Op::Local(c2), Op::Push(1), Op::Binary(BinaryOp::Sub), Op::SetLocal(c3), ..] =
                *rest
            {
                if c == c2 && c == c3 {
                    return Fused::RepeatHead { counter: c, exit };
                }
            }
            if let [a, b, Op::Binary(op), last, ..] = *rest {
                let destination = match last {
                    Op::SetLocal(slot) => Some(Destination::Local(slot)),
                    Op::Store(place) => private_slot(place).map(Destination::Private),
                    _ => None,
                };
                if let (Some(left), Some(right), Some(destination)) =
                    (operand(a), operand(b), destination)
                {
                    return Fused::Binary {
                        left,
                        right,
                        op,
                        destination,
                    };
                }
            }
            match ops[pc] {
                Op::LoopBack(target) => Fused::LoopBack { target },
                op => Fused::Plain(op),
            }
        })
        .collect()
}

/// An atomic whose operand is pushed just before it: `Push(v)` or
/// `Local(s)`, then `Atomic(op, place)` on a place with one target for
/// every CPU (so the atomic pops the operand and nothing else).
/// `run_cpu` issues it straight from the head's position, without pushing
/// the operand and stepping the atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedAtomic {
    /// `Operand::Const` or `Operand::Local` (never `Private`).
    pub operand: Operand,
    pub op: AtomicOp,
    pub place: u32,
}

/// Per operation of a code, the [`FusedAtomic`] that starts there, if
/// any; empty when none does (the common case costs one length check).
/// `fixed_target` tells a place with one target for every CPU.
/// `CmpXchg` pops two operands and stays plain.
pub fn fuse_atomics(ops: &[Op], fixed_target: impl Fn(u32) -> bool) -> Vec<Option<FusedAtomic>> {
    let heads: Vec<Option<FusedAtomic>> = ops
        .windows(2)
        .map(|pair| {
            let operand = match pair[0] {
                Op::Push(v) => Operand::Const(v),
                Op::Local(slot) => Operand::Local(slot),
                _ => return None,
            };
            match pair[1] {
                Op::Atomic(op, place) if op != AtomicOp::CmpXchg && fixed_target(place) => {
                    Some(FusedAtomic { operand, op, place })
                }
                _ => None,
            }
        })
        .chain(std::iter::once(None))
        .collect();
    if heads.iter().all(Option::is_none) {
        Vec::new()
    } else {
        heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_head_and_private_updates_fuse_and_other_runs_stay_plain() {
        // repeat 16 { mine.a = mine.a + 1 ; x = x * mine.a } with place 0
        // private (slot 5) and place 1 not.
        let ops = [
            Op::Push(16),
            Op::SetLocal(1),
            Op::Local(1),
            Op::Push(0),
            Op::Binary(BinaryOp::Gt),
            Op::JumpIfZero(19),
            Op::Local(1),
            Op::Push(1),
            Op::Binary(BinaryOp::Sub),
            Op::SetLocal(1),
            Op::Load(0),
            Op::Push(1),
            Op::Binary(BinaryOp::Add),
            Op::Store(0),
            Op::Local(0),
            Op::Load(0),
            Op::Binary(BinaryOp::Mul),
            Op::SetLocal(0),
            Op::Load(1),
            Op::Push(1),
            Op::Binary(BinaryOp::Add),
            Op::Store(1),
        ];
        let fused = fuse(&ops, |p| (p == 0).then_some(5));
        assert_eq!(fused.len(), ops.len());
        assert_eq!(
            fused[2],
            Fused::RepeatHead {
                counter: 1,
                exit: 19
            }
        );
        assert_eq!(
            fused[10],
            Fused::Binary {
                left: Operand::Private(5),
                right: Operand::Const(1),
                op: BinaryOp::Add,
                destination: Destination::Private(5),
            }
        );
        assert_eq!(
            fused[14],
            Fused::Binary {
                left: Operand::Local(0),
                right: Operand::Private(5),
                op: BinaryOp::Mul,
                destination: Destination::Local(0),
            }
        );
        // Place 1 is not private: its load and store stay plain.
        assert_eq!(fused[18], Fused::Plain(Op::Load(1)));
        // Every position keeps an entry, so a jump can land anywhere.
        assert_eq!(fused[3], Fused::Plain(Op::Push(0)));
        assert_eq!(fused[0], Fused::Plain(Op::Push(16)));
    }

    #[test]
    fn a_loop_back_edge_gets_an_entry_of_its_own() {
        let ops = [Op::Push(1), Op::Pop, Op::LoopBack(0)];
        let fused = fuse(&ops, |_| None);
        assert_eq!(fused[2], Fused::LoopBack { target: 0 });
        assert_eq!(fused[1], Fused::Plain(Op::Pop));
    }

    #[test]
    fn a_repeat_head_with_different_counters_stays_plain() {
        let ops = [
            Op::Local(1),
            Op::Push(0),
            Op::Binary(BinaryOp::Gt),
            Op::JumpIfZero(9),
            Op::Local(2),
            Op::Push(1),
            Op::Binary(BinaryOp::Sub),
            Op::SetLocal(1),
        ];
        let fused = fuse(&ops, |_| None);
        assert_eq!(fused[0], Fused::Plain(Op::Local(1)));
    }

    #[test]
    fn an_atomic_on_a_fixed_place_fuses_with_the_push_of_its_operand() {
        // fetch_add(shared.value, 1) ; xchg(shared.value, x) ;
        // fetch_add(other[i].value, 1) ; cmpxchg(shared.value, 0, 1)
        let ops = [
            Op::Push(1),
            Op::Atomic(AtomicOp::FetchAdd, 0),
            Op::Pop,
            Op::Local(2),
            Op::Atomic(AtomicOp::Xchg, 0),
            Op::Pop,
            Op::Push(1),
            Op::Atomic(AtomicOp::FetchAdd, 1),
            Op::Pop,
            Op::Push(0),
            Op::Push(1),
            Op::Atomic(AtomicOp::CmpXchg, 0),
            Op::EndIteration,
        ];
        let heads = fuse_atomics(&ops, |place| place == 0);
        assert_eq!(heads.len(), ops.len());
        assert_eq!(
            heads[0],
            Some(FusedAtomic {
                operand: Operand::Const(1),
                op: AtomicOp::FetchAdd,
                place: 0
            })
        );
        assert_eq!(
            heads[3],
            Some(FusedAtomic {
                operand: Operand::Local(2),
                op: AtomicOp::Xchg,
                place: 0
            })
        );
        // Place 1 has no fixed target; a compare-exchange pops two.
        assert_eq!(heads[6], None);
        assert_eq!(heads[10], None);
        assert_eq!(heads.iter().flatten().count(), 2);
        // A code without such a pair has no table at all.
        assert!(fuse_atomics(&ops, |_| false).is_empty());
    }
}
