//! The scheduler (`engine::sched`): threads that outnumber their CPUs, the
//! run queue's rule, futex waits and wakes, sleeps, switch hooks, lost
//! wake-ups; every run compared with the plain path (all shortcuts off).

use models::layout::StructSpec;
use sim_core::engine::{run_with, EngineOptions, RunOutcome, SimConfig, StopRule};
use sim_core::error::Stall;
use sim_core::stats::Stats;
use sim_core::topology::{Lookup, Protocol};
use sim_core::SimError;
use testkit::{array, field, global, per_cpu, small_machine, strukt, Setup};

fn machine() -> sim_core::topology::MachineSpec {
    small_machine(Protocol::Mesif, Lookup::Local)
}

fn flags_struct() -> StructSpec {
    let mut state = field("state", "long");
    state.align = Some(64);
    let mut turn = field("turn", "long");
    turn.align = Some(64);
    strukt("flags", vec![state, turn, array("count", "long", 8)])
}

/// Runs `config` with every shortcut on, with all off, with each on alone
/// and with each off alone; every outcome and every statistic must be the
/// same. Returns the outcome.
fn run_everywhere(config: &SimConfig) -> RunOutcome {
    let run = |options: EngineOptions| {
        let mut stats = Stats::for_run(config);
        let outcome = run_with(config, &mut stats, options).unwrap_or_else(|e| panic!("{e}"));
        // The shortcuts take fewer events; everything else is the same.
        let outcome = RunOutcome {
            events: 0,
            ..outcome
        };
        (outcome, stats.per_field, stats.iteration_cycles)
    };
    let reference = run(EngineOptions::REFERENCE);
    let all = EngineOptions::ALL.bits();
    for bits in (0..EngineOptions::NAMES.len())
        .flat_map(|k| [1 << k, all & !(1 << k)])
        .chain([all])
    {
        let options = EngineOptions::from_bits(bits);
        let got = run(options);
        assert_eq!(got.0, reference.0, "{options:?}");
        assert_eq!(got.1, reference.1, "{options:?}");
        assert_eq!(got.2, reference.2, "{options:?}");
    }
    reference.0
}

#[test]
fn threads_sharing_a_cpu_take_turns_at_their_slices() {
    // Three threads on CPU 0, each 10 iterations of 1,000 cycles of work;
    // a slice of 2,500 cycles: each runs three iterations (the third ends
    // past the slice), then the next in the queue runs.
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("busy", "work 1000")
        .threads([0, 0, 0], "busy")
        .stop(StopRule::Iterations(10))
        .scheduler(2_500, 100, 500)
        .build();
    let outcome = run_everywhere(&config);
    assert!(outcome.cpus.iter().all(|c| c.measured_iterations == 10));
    // Rounds of three iterations (9 preemptions, the third iteration of
    // each ending past the slice), then each thread's tenth: the two
    // threads left run when the one before them finishes.
    let s = outcome.scheduling;
    assert_eq!((s.preemptions, s.context_switches), (9, 11), "{s:?}");
    // The last thread finishes after all the work and every switch.
    let last = outcome.cpus.iter().map(|c| c.finish_cycle).max().unwrap();
    assert_eq!(last, 30_000 + 11 * 100);
    // The FIFO rule: thread 1 runs first, then 2, then 3, so thread 1
    // ends first and thread 3 last.
    let finish: Vec<u64> = outcome.cpus.iter().map(|c| c.finish_cycle).collect();
    assert!(finish[0] < finish[1] && finish[1] < finish[2], "{finish:?}");
}

#[test]
fn a_futex_handoff_sleeps_the_waiter_and_wakes_it_after_the_latency() {
    // A ping-pong through `g.turn`: thread 1 (CPU 0) waits for 1, thread 2
    // (CPU 1) for 0; each hands over and wakes the other. With nothing
    // else to run, each sleeps in `futex_wait` while the other works.
    let ping = "
while g.turn != 0 { futex_wait(&g.turn, 1) }
work 200
xchg(g.turn, 1)
futex_wake(&g.turn, 1)";
    let pong = "
while g.turn != 1 { futex_wait(&g.turn, 0) }
work 200
xchg(g.turn, 0)
futex_wake(&g.turn, 1)";
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("ping", ping)
        .script("pong", pong)
        .thread(0, "ping")
        .thread(1, "pong")
        .stop(StopRule::Iterations(20))
        .scheduler(1_000_000, 300, 2_000)
        .build();
    let outcome = run_everywhere(&config);
    assert!(outcome.cpus.iter().all(|c| c.measured_iterations == 20));
    let s = outcome.scheduling;
    // Every hand-off but the ones found done already sleeps once and is
    // woken once; each wake-up switches the sleeper back in.
    assert!(s.futex_sleeps >= 38, "{s:?}");
    assert_eq!(s.futex_wakeups, s.futex_sleeps);
    assert_eq!(s.context_switches, s.futex_wakeups);
    // A round trip costs at least two wake-ups, two switches and the work.
    let end = outcome.cpus.iter().map(|c| c.finish_cycle).max().unwrap();
    assert!(end >= 19 * 2 * (2_000 + 300 + 200), "{end}");
}

#[test]
fn a_wait_nobody_wakes_is_a_lost_wake_up_naming_the_sleepers() {
    // Thread 1 sleeps while g.state is 0 and nobody wakes it; thread 2, on
    // the same CPU, sets the flag without a wake and finishes.
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("waiter", "while g.state == 0 { futex_wait(&g.state, 0) }")
        .script("setter", "work 10\ng.state = 1")
        .thread(3, "waiter")
        .thread(3, "setter")
        .stop(StopRule::Iterations(1))
        .build();
    let error = run_with(&config, &mut sim_core::probe::NoProbe, EngineOptions::ALL).unwrap_err();
    let SimError::NoProgress { stall, cpus, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*stall, Stall::LostWakeup);
    assert_eq!(cpus.len(), 1);
    assert_eq!(cpus[0].cpu.get(), 3);
    let shown = error.to_string();
    assert!(
        shown.starts_with(
            "lost wake-up at cycle 210: every unfinished thread sleeps in `futex_wait` and nothing still running will call `futex_wake` on its place"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("waiting for a futex_wake on address 0x0 (thread 1 asleep in futex_wait since cycle 210)"),
        "{shown}"
    );
}

#[test]
fn sleep_leaves_the_cpu_to_the_next_thread_for_its_cycles() {
    // Thread 1 sleeps 10,000 cycles per iteration; thread 2, on the same
    // CPU, works meanwhile: both finish far sooner than one after the
    // other would.
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("sleeper", "sleep(10000)")
        .script("worker", "work 1000")
        .thread(0, "sleeper")
        .thread(0, "worker")
        .stop(StopRule::Iterations(5))
        .scheduler(3_000, 100, 400)
        .build();
    let outcome = run_everywhere(&config);
    let sleeper_end = outcome.cpus[0].finish_cycle;
    // Five sleeps of 10,000 cycles, each followed by the wake-up latency
    // and (at the least) a switch back in.
    assert!(sleeper_end >= 5 * (10_000 + 400 + 100), "{sleeper_end}");
    assert!(
        sleeper_end < 5 * (10_000 + 400 + 100) + 5 * 4_000,
        "{sleeper_end}"
    );
    assert_eq!(outcome.cpus[1].measured_iterations, 5);
}

#[test]
fn switch_hooks_run_at_every_context_switch_on_the_threads_cpu() {
    // The hooks count switches out and in on a per-CPU counter: each
    // switch runs both (the first thread of a CPU was never switched in,
    // and a finished thread is not switched out).
    let config = Setup::new(machine())
        .structs(vec![
            flags_struct(),
            strukt("rq", vec![field("outs", "long"), field("ins", "long")]),
        ])
        .instances(vec![global("g", "flags", 0), per_cpu("rq", "rq")])
        .procedure("out", vec![], "rq.outs = rq.outs + 1")
        .procedure("in", vec![], "rq.ins = rq.ins + 1")
        .script("busy", "work 500\nlet y = yield()")
        .threads([2, 2, 5, 5, 5], "busy")
        .stop(StopRule::Iterations(6))
        .switch_hooks(Some("out"), Some("in"))
        .scheduler(1_000_000, 50, 100)
        .build();
    let outcome = run_everywhere(&config);
    let s = outcome.scheduling;
    assert!(outcome.cpus.iter().all(|c| c.measured_iterations == 6));
    // Every yield with another thread waiting switches: CPU 2's two
    // threads alternate, CPU 5's three go round.
    assert!(s.context_switches >= 6 * 2 + 6 * 3 - 2, "{s:?}");
    // The counters, read with a script of their own after the run, would
    // need another run; the statistics count the hooks' stores instead:
    // one per switch each.
    let mut stats = Stats::for_run(&config);
    run_with(&config, &mut stats, EngineOptions::ALL).unwrap();
    let outs = config
        .program
        .field_names
        .iter()
        .position(|&(inst, f)| config.memory.instances[inst as usize].name == "rq" && f == 0);
    let ins = config
        .program
        .field_names
        .iter()
        .position(|&(inst, f)| config.memory.instances[inst as usize].name == "rq" && f == 1);
    let stores = |id: Option<usize>| stats.per_field[id.unwrap()].stores;
    assert_eq!(stores(ins), s.context_switches);
    // A thread that finishes leaves without its switch-out hook: one of
    // CPU 2's two, two of CPU 5's three hand over so.
    assert_eq!(stores(outs), s.context_switches - 3);
}

#[test]
fn a_hook_that_blocks_is_an_error_naming_the_operation() {
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .procedure("out", vec![], "let r = yield()\nreturn 0")
        .script("busy", "work 10\nlet y = yield()")
        .threads([0, 0], "busy")
        .switch_hooks(Some("out"), None)
        .build();
    let error = run_with(&config, &mut sim_core::probe::NoProbe, EngineOptions::ALL).unwrap_err();
    assert_eq!(
        error.to_string(),
        "script failed on CPU 0 at cycle 10, procedures.out line 1, column 9: `yield` in a switch hook: a hook runs inside a context switch and cannot block, sleep or yield"
    );
}

#[test]
fn task_running_follows_the_owner_on_and_off_its_cpu() {
    // Thread 1 publishes its number, works, and sleeps; thread 2 (another
    // CPU) records whether thread 1 runs while it works and once it sleeps.
    let config = Setup::new(machine())
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("owner", "g.state = task()\nwork 3000\nsleep(5000)\nwork 100")
        .script(
            "watcher",
            "while g.state == 0 { work 10 }\ng.count[0] = task_running(g.state)\nwork 4000\ng.count[1] = task_running(g.state)",
        )
        .thread(0, "owner")
        .thread(1, "watcher")
        .stop(StopRule::Iterations(1))
        .scheduler(1_000_000, 100, 100)
        .build();
    let mut rec = testkit::Recorder::default();
    sim_core::engine::run(&config, &mut rec).unwrap();
    let stored: Vec<i64> = rec
        .accesses()
        .filter(|a| {
            matches!(
                a.kind,
                sim_core::probe::AccessKind::StoreDrain | sim_core::probe::AccessKind::Store
            )
        })
        .map(|a| a.value)
        .collect();
    // g.state = 1, then the two answers: running, then asleep.
    assert_eq!(stored, vec![1, 1, 0]);
    run_everywhere(&config);
}

#[test]
fn the_same_seed_gives_the_same_schedule() {
    // Eight threads on two CPUs passing a token round with random work.
    let body = "
let me = tid()
while g.turn % 8 != me { futex_wait(&g.turn, g.turn) }
work random(300)
fetch_add(g.turn, 1)
futex_wake(&g.turn, 8)";
    let config = |seed| {
        Setup::new(machine())
            .structs(vec![flags_struct()])
            .instances(vec![global("g", "flags", 0)])
            .script("ring", body)
            .threads([0, 1, 0, 1, 0, 1, 0, 1], "ring")
            .stop(StopRule::Iterations(4))
            .scheduler(5_000, 200, 700)
            .seed(seed)
            .build()
    };
    let a = run_everywhere(&config(7));
    let b = run_everywhere(&config(7));
    assert_eq!(a, b);
    assert!(a.cpus.iter().all(|c| c.measured_iterations == 4));
    let c = run_everywhere(&config(8));
    assert_ne!(a.elapsed_cycles, c.elapsed_cycles);
}

/// A writer on CPU 0 stores to `g.state` and sleeps; a reader on another
/// core reads it once the writer sleeps. Returns the reader's load report
/// and the run's scheduling counts.
fn read_after_writer_sleeps(
    deep_idle_cycles: u64,
    writer_sleep: u64,
    sibling_busy: bool,
) -> (
    sim_core::coherence::AccessReport,
    i64,
    sim_core::engine::SchedulingCounts,
) {
    let writer = format!("g.state = 7\nsleep({writer_sleep})");
    let mut spec = machine();
    spec.deep_idle_writeback_cycles = deep_idle_cycles;
    let mut setup = Setup::new(spec)
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script("writer", &writer)
        .script("reader", "work 3000\nlet v = g.state")
        .script("busy", "work 20000")
        .thread(0, "writer")
        .thread(5, "reader")
        .stop(StopRule::Iterations(1));
    if sibling_busy {
        // CPU 16 is CPU 0's SMT sibling on this machine (16 cores).
        setup = setup.thread(16, "busy");
    }
    let config = setup.build();
    let outcome = run_everywhere(&config);
    let (_, recorder) = setup.run();
    let address = testkit::address(&config, "g", 0, "state");
    let load = recorder
        .of_cpu(5)
        .into_iter()
        .find(|a| a.address == address)
        .cloned()
        .expect("the reader's load");
    (load.report.expect("a miss"), load.value, outcome.scheduling)
}

#[test]
fn a_core_asleep_past_its_deep_idle_entry_writes_its_lines_back() {
    use sim_core::coherence::{LineState, Route};
    // Deep idle after 1,000 cycles; the writer sleeps 5,000 with nothing
    // else to run on its core: its Modified copy is written back, and the
    // reader gets the line from memory, Exclusive, with the written value.
    let (report, value, counts) = read_after_writer_sleeps(1_000, 5_000, false);
    assert_eq!(value, 7);
    assert!(matches!(report.route, Route::Memory { .. }), "{report:?}");
    assert_eq!(report.requester_after, LineState::Exclusive);
    assert!(!report.hitm && report.supplier.is_none(), "{report:?}");
    assert_eq!(counts.deep_idle_entries, 1);
    assert!(counts.lines_written_back >= 1, "{counts:?}");

    // No deep idle on the machine, a sleep shorter than the entry, or the
    // core's other CPU still running: the writer's cache keeps the
    // Modified line and supplies it (a HITM), and the reader shares it.
    for (deep_idle, sleep, sibling_busy) in
        [(0, 5_000, false), (1_000, 500, false), (1_000, 5_000, true)]
    {
        let (report, value, counts) = read_after_writer_sleeps(deep_idle, sleep, sibling_busy);
        assert_eq!(value, 7);
        assert!(
            report.hitm,
            "{deep_idle} {sleep} {sibling_busy}: {report:?}"
        );
        assert_eq!(report.supplier.map(|s| s.0), Some(0), "{report:?}");
        assert_ne!(report.requester_after, LineState::Exclusive);
        assert_eq!(counts.deep_idle_entries, 0);
        assert_eq!(counts.lines_written_back, 0);
    }
}

/// A worker on CPU 0 runs ten iterations of `work 1000` on a machine whose
/// SMT siblings share the core half and half; CPU 16, its sibling, runs
/// `sibling` (one iteration, then the run's end leaves it asleep or done).
/// Returns the worker's finish cycle.
fn worker_beside(sibling: Option<&str>, scheduled: bool) -> u64 {
    let mut spec = machine();
    spec.smt_share_percent = 50;
    let mut setup = Setup::new(spec)
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0)])
        .script(
            "worker",
            if scheduled {
                // A `sleep` never reached: it only turns the scheduler on.
                "if iteration() == 100 { sleep(0) }\nwork 1000"
            } else {
                "work 1000"
            },
        )
        .thread(0, "worker")
        .stop(StopRule::Iterations(10));
    if let Some(script) = sibling {
        // CPU 16 is CPU 0's SMT sibling on this machine (16 cores).
        setup = setup.script("sibling", script).thread(16, "sibling");
    }
    let outcome = run_everywhere(&setup.build());
    outcome.cpus[0].finish_cycle
}

#[test]
fn an_smt_sibling_shares_the_core_only_while_it_runs_a_thread() {
    // Alone on its core the worker takes its 10 x 1,000 cycles.
    let alone = worker_beside(None, true);
    assert!((10_000..10_100).contains(&alone), "{alone}");
    // A sibling busy the whole time: every `work` at half the core.
    let shared = worker_beside(Some("work 100000"), true);
    assert!((20_000..20_100).contains(&shared), "{shared}");
    // A sibling that works 1,900 cycles (3,800 at half the core) and then
    // sleeps: the worker's two iterations started before cycle 3,800 run
    // at half the core (2 x 2,000 cycles), the eight after at the whole
    // core (8 x 1,000). A `work` keeps the share it started with.
    let half = worker_beside(
        Some("if iteration() == 0 { work 1900 }\nsleep(100000)"),
        true,
    );
    assert!((12_000..12_100).contains(&half), "{half}");
    // A sibling whose thread finishes at cycle 3,800 frees the core the
    // same way.
    let finished = worker_beside(Some("if iteration() == 0 { work 1900 }"), true);
    assert!((12_000..12_100).contains(&finished), "{finished}");
    // Without the scheduler (no scheduling operation, one thread per
    // CPU), threads never leave their CPUs and the share is the
    // placement's: a finished sibling still counts (book, "Limits").
    let unscheduled = worker_beside(Some("if iteration() == 0 { work 1900 }"), false);
    assert!((20_000..20_100).contains(&unscheduled), "{unscheduled}");
}

/// A reader on CPU 0 makes `loads` independent misses, each followed by
/// `spacing` register operations, on a machine with a 16-entry reorder
/// window; its sibling on CPU 16 works (`sibling_works`) or sleeps the
/// whole run. Returns the reader's finish cycle.
fn reader_beside(sibling_works: bool) -> u64 {
    let mut spec = machine();
    spec.reorder_window_entries = 16;
    spec.outstanding_misses = 8;
    spec.dispatch_width = 4;
    spec.mispredict_penalty_cycles = 5;
    let body: String = (0..8)
        .map(|k| {
            format!(
                "let v{k} = peer[{}].count[0]\nlet w{k} = v{k} + 1 + 2 + 3\n",
                k + 1
            )
        })
        .collect();
    let config = Setup::new(spec)
        .structs(vec![flags_struct()])
        .instances(vec![global("g", "flags", 0), per_cpu("peer", "flags")])
        .script("reader", &body)
        .script(
            "sibling",
            if sibling_works {
                "work 1000000\nsleep(0)"
            } else {
                "sleep(1000000)"
            },
        )
        .thread(0, "reader")
        .thread(16, "sibling")
        .stop(StopRule::Iterations(1))
        .build();
    run_everywhere(&config).cpus[0].finish_cycle
}

#[test]
fn a_sleeping_sibling_leaves_the_whole_reorder_window() {
    // Eight misses a few operations apart: the whole window holds more of
    // them in flight than the half a running sibling leaves.
    let full = reader_beside(false);
    let half = reader_beside(true);
    assert!(full < half, "sibling asleep {full}, working {half}");
}
