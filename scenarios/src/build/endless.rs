//! Loops that nothing leaves. `while 1 { ... }` with no `break` of its own
//! and no `return` never ends, so a CPU that enters it never finishes an
//! iteration: a run of `run.iterations` could then only stop at its cycle or
//! operation budget, without a result, after minutes to an hour of host time
//! (every turn of a loop costs a cycle, so the engine's no-progress check,
//! which looks for steps that take no time, does not fire). Found here,
//! before anything runs. A run by time (`run.cycles`) ends whatever its
//! CPUs are doing, so such a loop is legitimate there (a thread that keeps a
//! line busy for the whole run) and is not looked for.

use sim_core::script::ast::{Block, ExprKind, SourcePos, StmtKind};

/// What the error says of the loop.
pub(super) const MESSAGE: &str = "this loop never ends: its condition is a constant that is not 0 \
     and nothing in it leaves it (no `break` of its own, no `return`), so a CPU that enters it \
     never finishes an iteration and a run of `run.iterations` could only stop at its budgets, \
     without a result";

/// What would be valid instead.
pub(super) const VALID: &str = "a `break` or `return` inside the loop, a condition that can \
     become 0, or a run by time (`run.cycles = N`), which ends whatever the CPUs are doing";

/// The position of the first `while` in `block` (nested ones included)
/// whose condition is a non-zero integer literal and which no statement
/// leaves: no `break` outside a loop nested in it, no `return`, no
/// `assert` (a failing one ends the run).
pub(super) fn endless_loop(block: &Block) -> Option<SourcePos> {
    block.iter().find_map(|stmt| match &stmt.kind {
        StmtKind::While { cond, body } => {
            let constant_true = matches!(cond.kind, ExprKind::Int(n) if n != 0);
            if constant_true && !leaves(body, true) {
                Some(stmt.pos)
            } else {
                endless_loop(body)
            }
        }
        StmtKind::Repeat { body, .. } => endless_loop(body),
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => endless_loop(then_block).or_else(|| else_block.as_ref().and_then(endless_loop)),
        _ => None,
    })
}

/// Whether some statement of `block` leaves the loop whose body it is:
/// a `return` or `assert` anywhere, a `break` only while `own_loop` (not
/// inside a loop nested in it, whose `break` leaves that one).
fn leaves(block: &Block, own_loop: bool) -> bool {
    block.iter().any(|stmt| match &stmt.kind {
        StmtKind::Break => own_loop,
        StmtKind::Return(_) | StmtKind::Assert(_) => true,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            leaves(then_block, own_loop) || else_block.as_ref().is_some_and(|b| leaves(b, own_loop))
        }
        StmtKind::While { body, .. } | StmtKind::Repeat { body, .. } => leaves(body, false),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::script::parse::parse_block;

    fn endless(source: &str) -> Option<u32> {
        endless_loop(&parse_block(source).unwrap()).map(|p| p.line)
    }

    #[test]
    fn a_constant_loop_with_no_way_out_is_found() {
        assert_eq!(endless("work 1\nwhile 1 { }"), Some(2));
        assert_eq!(
            endless("if cpu() == 0 {\n  while 7 { work 10 }\n}"),
            Some(2)
        );
        // A `break` of a nested loop leaves only that one.
        assert_eq!(endless("while 1 {\n  while 1 { break }\n}"), Some(1));
    }

    #[test]
    fn a_loop_with_a_way_out_or_a_varying_condition_is_not() {
        assert_eq!(endless("while 1 { if g() { break } }"), None);
        assert_eq!(endless("while 1 { repeat 3 { return 0 } }"), None);
        assert_eq!(endless("while 1 { assert iteration() < 5 }"), None);
        assert_eq!(endless("while 0 { }"), None);
        assert_eq!(endless("let x = 1\nwhile x { x = 0 }"), None);
    }
}
