//! Which instances the code that runs names: the scripts of the thread
//! groups, the scheduler's switch hooks, and every procedure they call,
//! directly or through each other. A library module a scenario `use`s
//! brings its instances with it (the lock library's `qspinlock_qnodes`,
//! sched/preempt's `preempt_count`); a variant that never calls the
//! procedures touching them still places them in memory, so that the
//! addresses of the other instances do not depend on which code a variant
//! runs, but has nothing to report of them.

use sim_core::engine::{code_reached, SimConfig};

/// Per instance of `config.memory`, whether an access (`x.f`, `x[i].f`,
/// an atomic on it) or an address (`&x.f`) in code that can run names it
/// (the engine's own walk, [`code_reached`]). An access through a pointer
/// (`*p`) names no instance: the pointer's `&` does.
pub fn instances_named_by_running_code(config: &SimConfig) -> Vec<bool> {
    let reached = code_reached(config);
    let mut named = vec![false; config.memory.instances.len()];
    let places = reached
        .accessed_places
        .iter()
        .zip(&reached.addressed_places)
        .map(|(&accessed, &addressed)| accessed || addressed);
    for (place, named_here) in config.program.places.iter().zip(places) {
        if named_here && !place.pointer {
            named[place.instance as usize] = true;
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
