//! What code that can run reaches: the scripts of the thread groups, the
//! scheduler's switch hooks, and every procedure they call, directly or
//! through each other. A library module a scenario `use`s brings its
//! procedures and instances with it whether or not anything calls them;
//! the engine gives run-ahead slots and turns only for what is reached,
//! and the reports leave out the instances nothing reaches. One walk for
//! both, so that they cannot disagree about what runs.

use super::SimConfig;
use crate::script::compile::{Code, Op};

/// Per place and per procedure of a run's program, what running code reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeReached {
    /// Per place: code that can run loads, stores or makes an atomic on it.
    pub accessed_places: Vec<bool>,
    /// Per place: code that can run takes its address (`&x.f`).
    pub addressed_places: Vec<bool>,
    /// Per procedure: code that can run calls it (a switch hook counts).
    pub called_procedures: Vec<bool>,
}

/// Walks `config`'s program from every thread group's script and the
/// scheduler's switch hooks through the procedures they call.
pub fn code_reached<'c>(config: &'c SimConfig) -> CodeReached {
    let program = &config.program;
    let mut reached = CodeReached {
        accessed_places: vec![false; program.places.len()],
        addressed_places: vec![false; program.places.len()],
        called_procedures: vec![false; program.procedures.len()],
    };
    let mut pending: Vec<&'c Code> = Vec::new();
    let mut scripts_ran = vec![false; program.scripts.len()];
    for thread in &config.threads {
        let script = thread.script as usize;
        if !scripts_ran[script] {
            scripts_ran[script] = true;
            pending.push(&program.scripts[script]);
        }
    }
    let called = &mut reached.called_procedures;
    let mut call = |index: u32, pending: &mut Vec<&'c Code>| {
        let index = index as usize;
        if !called[index] {
            called[index] = true;
            pending.push(&program.procedures[index]);
        }
    };
    let hooks = [config.scheduler.switch_in, config.scheduler.switch_out];
    for index in hooks.into_iter().flatten() {
        call(index, &mut pending);
    }
    while let Some(code) = pending.pop() {
        for op in &code.ops {
            match *op {
                Op::Call(index) => call(index, &mut pending),
                Op::Load(place) | Op::Store(place) | Op::Atomic(_, place) => {
                    reached.accessed_places[place as usize] = true;
                }
                Op::AddressOf(place) => reached.addressed_places[place as usize] = true,
                _ => {}
            }
        }
    }
    reached
}
