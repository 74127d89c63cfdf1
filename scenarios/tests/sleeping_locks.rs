//! More threads than CPUs through the scenario format: `[[threads]] count`,
//! `[scheduler]`, the sleeping locks of the library under contention
//! (mutual exclusion with twice as many threads as CPUs), the preset's
//! scheduler parameters, and the errors for bad input.

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::load_str;
use scenarios::run::results::run_variant;

fn build(text: &str) -> Vec<BuiltVariant> {
    let loaded = load_str("t.toml", text).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The rendered error of loading and building `text` (as `t.toml`).
#[track_caller]
fn error_of(text: &str) -> String {
    let loaded = match load_str("t.toml", text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => panic!("expected an error, and it built:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Eight threads on CPUs 0-3 of the Ice Lake-SP, each `iterations` times
/// taking the lock with `lock`, incrementing `g.count` with a plain load
/// and store, and releasing it with `unlock`.
fn guarded(module: &str, lock: &str, unlock: &str, extra: &str) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = ["{module}"]

[run]
iterations = 30

[params]
rcu_grace_cycles = 20000

[structs.guarded]
fields = [
  {{ name = "lock", type = "atomic_long_t", align = 64 }},
  {{ name = "count", type = "long", align = 64 }},
]

[instances.g]
struct = "guarded"
kind = "global"

[scripts]
s = """
{lock}
g.count = g.count + 1
work 500
{unlock}
work 300
"""

[[threads]]
cpus = "0-3"
count = 8
script = "s"
{extra}
"#
    )
}

/// The count after the run: every increment made under the lock survives.
fn final_count(built: &BuiltVariant) -> (i64, sim_core::engine::RunOutcome) {
    let result = run_variant(built).unwrap_or_else(|f| panic!("{}", f.error));
    let field = result
        .fields
        .iter()
        .find(|f| f.name == "g.count")
        .expect("g.count");
    (field.traffic.stores as i64, result.outcome)
}

#[test]
fn the_sleeping_locks_exclude_twice_as_many_threads_as_cpus() {
    for (module, lock, unlock) in [
        (
            "locks/mutex",
            "mutex_lock(&g.lock)",
            "mutex_unlock(&g.lock)",
        ),
        (
            "locks/rwsem",
            "rwsem_down_write(&g.lock)",
            "rwsem_up_write(&g.lock)",
        ),
        (
            "locks/percpu_rwsem",
            "percpu_down_write()",
            "percpu_up_write()",
        ),
    ] {
        let built = build(&guarded(module, lock, unlock, ""));
        let (stores, outcome) = final_count(&built[0]);
        assert_eq!(outcome.cpus.len(), 8, "{module}");
        assert!(
            outcome.cpus.iter().all(|c| c.measured_iterations == 30),
            "{module}"
        );
        assert_eq!(stores, 240, "{module}");
        // The value left in memory is the number of increments: none lost.
        let mut rec = LastStore::default();
        let config = &built[0].config;
        rec.address = address(config, "g", "count");
        sim_core::engine::run(config, &mut rec).unwrap();
        assert_eq!(rec.value, 240, "{module}: an increment was lost");
        // Sleepers were woken, and threads shared CPUs.
        assert!(outcome.scheduling.context_switches > 0, "{module}");
    }
}

#[test]
fn readers_of_an_rwsem_and_a_percpu_rwsem_share_it_and_writers_exclude_them() {
    // Half the threads read (count nothing), half write; the writers'
    // increments must all survive.
    for (module, read, read_done, write, write_done) in [
        (
            "locks/rwsem",
            "rwsem_down_read(&g.lock)",
            "rwsem_up_read(&g.lock)",
            "rwsem_down_write(&g.lock)",
            "rwsem_up_write(&g.lock)",
        ),
        (
            "locks/percpu_rwsem",
            "percpu_down_read()",
            "percpu_up_read()",
            "percpu_down_write()",
            "percpu_up_write()",
        ),
    ] {
        let text = guarded(
            module,
            &format!("if tid() % 2 == 0 {{ {write} }} else {{ {read} }}"),
            &format!("if tid() % 2 == 0 {{ {write_done} }} else {{ {read_done} }}"),
            "",
        )
        .replace(
            "g.count = g.count + 1",
            "if tid() % 2 == 0 { g.count = g.count + 1 }",
        );
        let built = build(&text);
        let config = &built[0].config;
        let mut rec = LastStore {
            address: address(config, "g", "count"),
            ..LastStore::default()
        };
        let outcome = sim_core::engine::run(config, &mut rec).unwrap();
        assert!(outcome.cpus.iter().all(|c| c.measured_iterations == 30));
        assert_eq!(rec.value, 4 * 30, "{module}");
    }
}

/// The last value stored to one address.
#[derive(Default)]
struct LastStore {
    address: u64,
    value: i64,
}

impl sim_core::probe::Probe for LastStore {
    fn on_access(&mut self, e: &sim_core::probe::AccessEvent<'_>) {
        use sim_core::probe::AccessKind;
        if matches!(e.kind, AccessKind::Store | AccessKind::StoreDrain) && e.address == self.address
        {
            self.value = e.value;
        }
    }
}

fn address(config: &sim_core::engine::SimConfig, instance: &str, field: &str) -> u64 {
    let memory = &config.memory;
    let i = memory.instance_index(instance).expect("instance");
    let def = memory.struct_of(i);
    let f = &def.fields[def.field_index(field).expect("field")];
    memory.instances[i].element_addresses[0] + f.offset_bytes as u64
}

#[test]
fn the_scheduler_takes_the_presets_figures_at_the_machine_clock_and_the_scenarios_over_them() {
    let text = guarded(
        "locks/mutex",
        "mutex_lock(&g.lock)",
        "mutex_unlock(&g.lock)",
        "",
    );
    let built = build(&text);
    let s = &built[0].config.scheduler;
    // Ice Lake-SP at 3,400 MHz: 2.8 ms, 1.1 us, 4 us (models::presets).
    assert_eq!(
        (
            s.time_slice_cycles,
            s.context_switch_cycles,
            s.wakeup_latency_cycles
        ),
        (9_520_000, 3_740, 13_600)
    );
    let text = text.replace(
        "[params]",
        "[scheduler]\ntime_slice_ns = 100000\nwakeup_latency_ns = 1000\n\n[params]",
    );
    let s = build(&text)[0].config.scheduler.clone();
    assert_eq!(
        (
            s.time_slice_cycles,
            s.context_switch_cycles,
            s.wakeup_latency_cycles
        ),
        (340_000, 3_740, 3_400)
    );
    // Threads are placed round the group's CPUs, by CPU then tid.
    let cpus: Vec<(u32, u32)> = built[0]
        .config
        .threads
        .iter()
        .map(|t| (t.cpu.get(), t.tid))
        .collect();
    assert_eq!(
        cpus,
        vec![
            (0, 0),
            (0, 4),
            (1, 1),
            (1, 5),
            (2, 2),
            (2, 6),
            (3, 3),
            (3, 7)
        ]
    );
}

#[test]
fn a_count_below_the_cpus_or_past_the_limit_names_the_key_and_the_range() {
    let text = guarded(
        "locks/mutex",
        "mutex_lock(&g.lock)",
        "mutex_unlock(&g.lock)",
        "",
    );
    assert_eq!(
        error_of(&text.replace("count = 8", "count = 3")),
        "error: 3 threads for the 4 CPU(s) of `threads.s.cpus` (in `threads.s.count`)\n  --> t.toml:32:9\n   |\n32 | count = 3\n   |         ^\n   |\n   \
         = valid: 4..=256: at least one thread per CPU, at most 64 per CPU (limits: threads per CPU)"
    );
    assert_eq!(
        error_of(&text.replace("count = 8", "count = 257")),
        "error: 257 threads for the 4 CPU(s) of `threads.s.cpus` (in `threads.s.count`)\n  --> t.toml:32:9\n   |\n32 | count = 257\n   |         ^^^\n   |\n   \
         = valid: 4..=256: at least one thread per CPU, at most 64 per CPU (limits: threads per CPU)"
    );
}

#[test]
fn a_variant_giving_too_few_threads_is_refused_at_its_count() {
    let text = guarded(
        "locks/mutex",
        "mutex_lock(&g.lock)",
        "mutex_unlock(&g.lock)",
        "\n[[variants]]\nname = \"few\"\nset = { \"threads.s.count\" = 2 }\n",
    );
    assert_eq!(
        error_of(&text),
        "error: in variant `few`: 2 threads for the 4 CPU(s) of `threads.s.cpus` (in `threads.s.count`)\n  --> t.toml:37:29\n   |\n37 | set = { \"threads.s.count\" = 2 }\n   |                             ^\n   |\n   \
         = valid: 4..=256: at least one thread per CPU, at most 64 per CPU (limits: threads per CPU)"
    );
}

#[test]
fn a_switch_hook_must_name_a_procedure_without_parameters() {
    let text = guarded(
        "locks/mutex",
        "mutex_lock(&g.lock)",
        "mutex_unlock(&g.lock)",
        "",
    );
    let with = |section: &str| text.replace("[params]", &format!("{section}\n\n[params]"));
    assert_eq!(
        error_of(&with("[scheduler]\nswitch_in = \"mutex_lok\"")),
        "error: unknown procedure `mutex_lok` (in `scheduler.switch_in`)\n --> t.toml:9:13\n  |\n9 | switch_in = \"mutex_lok\"\n  |             ^^^^^^^^^^^\n  |\n  \
         = valid: cpu_relax, mutex_lock, mutex_unlock\n  = help: did you mean `mutex_lock`?"
    );
    assert_eq!(
        error_of(&with("[scheduler]\nswitch_out = \"mutex_lock\"")),
        "error: procedure `mutex_lock` takes 1 parameter(s): a switch hook is called with none (in `scheduler.switch_out`)\n --> t.toml:9:14\n  |\n9 | switch_out = \"mutex_lock\"\n  |              ^^^^^^^^^^^^\n  |\n  \
         = valid: a procedure with `params = []`"
    );
    assert_eq!(
        error_of(&with("[scheduler]\ntime_slice = 5")),
        "error: unknown key `time_slice` in `scheduler`\n --> t.toml:9:1\n  |\n9 | time_slice = 5\n  | ^^^^^^^^^^\n  |\n  \
         = valid: time_slice_ns, context_switch_ns, wakeup_latency_ns, switch_out, switch_in\n  \
         = help: did you mean `time_slice_ns`?"
    );
}
