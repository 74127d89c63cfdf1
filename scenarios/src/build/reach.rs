//! Which instances the code that runs names: the scripts of the thread
//! groups, the scheduler's switch hooks, and every procedure they call,
//! directly or through each other. A library module a scenario `use`s
//! brings its instances with it (the lock library's `qspinlock_qnodes`,
//! sched/preempt's `preempt_count`); a variant that never calls the
//! procedures touching them still places them in memory, so that the
//! addresses of the other instances do not depend on which code a variant
//! runs, but has nothing to report of them.

use sim_core::engine::SimConfig;
use sim_core::script::compile::{Code, Op};

/// Per instance of `config.memory`, whether an access (`x.f`, `x[i].f`,
/// an atomic on it) or an address (`&x.f`) in code that can run names it.
/// An access through a pointer (`*p`) names no instance: the pointer's
/// `&` does.
pub fn instances_named_by_running_code(config: &SimConfig) -> Vec<bool> {
    let program = &config.program;
    let mut named = vec![false; config.memory.instances.len()];
    let mut called = vec![false; program.procedures.len()];
    let mut ran = vec![false; program.scripts.len()];
    let mut pending: Vec<&Code> = Vec::new();
    for thread in &config.threads {
        let script = thread.script as usize;
        if let Some(done) = ran.get_mut(script) {
            if !*done {
                *done = true;
                pending.push(&program.scripts[script]);
            }
        }
    }
    let hooks = [config.scheduler.switch_in, config.scheduler.switch_out];
    for index in hooks.into_iter().flatten() {
        let index = index as usize;
        if index < called.len() && !called[index] {
            called[index] = true;
            pending.push(&program.procedures[index]);
        }
    }
    while let Some(code) = pending.pop() {
        for op in &code.ops {
            match *op {
                Op::Call(index) => {
                    let index = index as usize;
                    if index < called.len() && !called[index] {
                        called[index] = true;
                        pending.push(&program.procedures[index]);
                    }
                }
                Op::Load(place)
                | Op::Store(place)
                | Op::AddressOf(place)
                | Op::Atomic(_, place) => {
                    if let Some(p) = program.places.get(place as usize) {
                        if !p.pointer {
                            if let Some(n) = named.get_mut(p.instance as usize) {
                                *n = true;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    named
}

/// The names of the instances of `config` that no running code names
/// ([`instances_named_by_running_code`]), in the memory layout's order.
pub fn instances_no_running_code_names(config: &SimConfig) -> Vec<String> {
    instances_named_by_running_code(config)
        .iter()
        .zip(&config.memory.instances)
        .filter(|(named, _)| !**named)
        .map(|(_, instance)| instance.name.clone())
        .collect()
}
