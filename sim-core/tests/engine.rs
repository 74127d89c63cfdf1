//! The engine running scripts: serialisation of a contended line at its
//! home, atomics and their values, the x86-TSO store buffer, determinism,
//! and the cycles stop rule.

use models::layout::StructSpec;
use sim_core::coherence::{LineState, Need, Route};
use sim_core::engine::StopRule;
use sim_core::error::Stall;
use sim_core::probe::AccessKind;
use sim_core::script::ast::AtomicOp;
use sim_core::topology::{Lookup, MachineSpec, Protocol};
use sim_core::{Cycle, Cycles, SimError};
use testkit::{address, field, global, per_cpu, small_machine, strukt, Access, Seen, Setup};

fn counter_struct() -> StructSpec {
    strukt("ctr", vec![field("n", "long")])
}

/// A struct that fills a line of its own, so array elements never share one.
fn line_struct() -> StructSpec {
    let mut v = field("v", "long");
    v.align = Some(64);
    strukt("line", vec![v])
}

/// How long CPU 0's iteration `index` (from 0) took (the recorder's
/// iteration log).
fn cpu0_iteration_cycles(rec: &testkit::Recorder, index: u64) -> u64 {
    rec.log
        .iter()
        .find_map(|seen| match seen {
            Seen::Iteration(0, i, start, end) if *i == index => Some(end - start),
            _ => None,
        })
        .expect("CPU 0 finished the iteration")
}

/// How long CPU 0's first iteration took.
fn first_iteration_cycles(rec: &testkit::Recorder) -> u64 {
    cpu0_iteration_cycles(rec, 0)
}

fn atomics(rec: &testkit::Recorder) -> Vec<&Access> {
    rec.accesses()
        .filter(|a| matches!(a.kind, AccessKind::Atomic(_)))
        .collect()
}

// ---------------------------------------------------------------------------
// Serialisation at the home
// ---------------------------------------------------------------------------

#[test]
fn who_reaches_a_free_line_first_at_one_cycle_is_drawn_from_the_seed_not_the_cpu_number() {
    // Four CPUs (two cores of one L3 domain and their SMT siblings) ask
    // for the same free line at cycle 0: the first served is the one whose
    // event the cycle's tie puts first.
    // A tie by CPU number (or by the order the CPUs were queued, which is
    // the same at the start) would give CPU 0 every seed.
    let mut first = std::collections::BTreeMap::new();
    for seed in 1..=64 {
        let (_, rec) = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
            .structs(vec![counter_struct()])
            .instances(vec![global("c", "ctr", 0)])
            .script("inc", "fetch_add(c.n, 1)")
            .threads([0, 1, 16, 17], "inc")
            .seed(seed)
            .run();
        let winner = atomics(&rec)
            .into_iter()
            .find(|a| a.value == 0)
            .expect("the first increment")
            .cpu;
        *first.entry(winner).or_insert(0) += 1;
    }
    assert_eq!(
        first.len(),
        4,
        "every CPU is first for some seed: {first:?}"
    );
    assert!(
        first.values().all(|&n| (8..=24).contains(&n)),
        "each first for about a quarter of 64 seeds: {first:?}"
    );
}

#[test]
fn contended_fetch_add_is_served_one_at_a_time_at_the_home() {
    let machine = small_machine(Protocol::Mesif, Lookup::Local);
    let l = machine.latency.clone();
    let cpus = [0, 1, 2, 5, 8, 11, 13, 15];
    let (outcome, rec) = Setup::new(machine)
        .structs(vec![counter_struct()])
        .instances(vec![global("c", "ctr", 0)])
        .script("inc", "fetch_add(c.n, 1)")
        .threads(cpus, "inc")
        .run();
    let mut ops = atomics(&rec);
    assert_eq!(ops.len(), cpus.len());
    ops.sort_by_key(|a| a.report.as_ref().unwrap().done);
    for (k, a) in ops.iter().enumerate() {
        let r = a.report.as_ref().unwrap();
        assert_eq!(r.issued, Cycle::ZERO, "every CPU asks at cycle 0");
        // Values follow the order in which the home served the requests.
        assert_eq!(a.value, k as i64);
        assert_eq!(a.new_value, Some(k as i64 + 1));
        if k == 0 {
            assert_eq!(r.started, Cycle::ZERO);
            continue;
        }
        let prev = ops[k - 1];
        let p = prev.report.as_ref().unwrap();
        // Queued: ordered only once the previous holder's locked op is over...
        assert!(r.started > r.issued, "CPU {} waited", a.cpu);
        assert_eq!(r.started, p.done + Cycles::new(l.locked_op_cycles));
        // ... and the line comes from that holder's Modified copy.
        assert_eq!(
            r.supplier.map(|s| (s.0, s.1)),
            Some((prev.cpu, LineState::Modified))
        );
        assert!(r.hitm);
        let transfer = (r.done - r.started).get();
        assert!(transfer >= l.l3_transfer_cycles.min(3 * l.hop_in_node_cycles));
        assert!((r.done - p.done).get() >= transfer + l.locked_op_cycles);
    }
    // Distinct completion times, and the final value counts every CPU.
    let last = ops.last().unwrap();
    assert_eq!(last.new_value, Some(cpus.len() as i64));
    let done = last.report.as_ref().unwrap().done;
    assert_eq!(outcome.elapsed_cycles, done.get() + l.locked_op_cycles);
    // The stall each CPU saw is its whole wait for the line.
    for a in &ops {
        let r = a.report.as_ref().unwrap();
        assert_eq!(a.stall_cycles, (r.done - r.issued).get() - l.l1_hit_cycles);
    }
}

// ---------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------

fn value_struct() -> StructSpec {
    strukt(
        "vals",
        vec![field("q", "long"), field("w", "int"), field("w2", "int")],
    )
}

fn ops(rec: &testkit::Recorder) -> Vec<(AccessKind, i64, Option<i64>)> {
    rec.accesses()
        .map(|a| (a.kind, a.value, a.new_value))
        .collect()
}

#[test]
fn atomics_return_the_old_value_on_eight_byte_fields() {
    let script = "
        assert fetch_add(g.q, 5) == 0
        assert fetch_sub(g.q, 2) == 5
        assert fetch_or(g.q, 8) == 3
        assert fetch_and(g.q, 10) == 11
        assert xchg(g.q, 42) == 10
        assert cmpxchg(g.q, 42, 7) == 42
        assert cmpxchg(g.q, 42, 9) == 7
        assert g.q == 7
        assert fetch_sub(g.q, 10) == 7
        assert g.q == -3
        assert fetch_add(g.q, 0x7fff_ffff_ffff_ffff) == -3
        assert g.q == 0x7fff_ffff_ffff_fffc
    ";
    let (_, rec) = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![value_struct()])
        .instances(vec![global("g", "vals", 0)])
        .script("s", script)
        .thread(0, "s")
        .run();
    use AccessKind::{Atomic, Load};
    use AtomicOp::*;
    assert_eq!(
        ops(&rec),
        vec![
            (Atomic(FetchAdd), 0, Some(5)),
            (Atomic(FetchSub), 5, Some(3)),
            (Atomic(FetchOr), 3, Some(11)),
            (Atomic(FetchAnd), 11, Some(10)),
            (Atomic(Xchg), 10, Some(42)),
            (Atomic(CmpXchg), 42, Some(7)),
            // A failed compare-and-swap writes nothing.
            (Atomic(CmpXchg), 7, None),
            (Load, 7, None),
            (Atomic(FetchSub), 7, Some(-3)),
            (Load, -3, None),
            (Atomic(FetchAdd), -3, Some(0x7fff_ffff_ffff_fffc)),
            (Load, 0x7fff_ffff_ffff_fffc, None),
        ]
    );
    // Every atomic is a write, holding the line Modified.
    for a in atomics(&rec) {
        let r = a.report.as_ref().unwrap();
        assert_eq!(r.need, Need::Write);
        assert_eq!(r.requester_after, LineState::Modified);
    }
}

#[test]
fn atomics_on_four_byte_fields_wrap_and_sign_extend() {
    let script = "
        assert xchg(g.w, -1) == 0
        assert g.w == -1
        assert g.w2 == 0
        assert xchg(g.w, 0x1_0000_0001) == -1
        assert g.w == 1
        assert xchg(g.w, 0x7fff_ffff) == 1
        assert fetch_add(g.w, 1) == 0x7fff_ffff
        assert g.w == -0x8000_0000
        assert cmpxchg(g.w, -0x8000_0000, 0xffff_ffff) == -0x8000_0000
        assert g.w == -1
        assert fetch_and(g.w, 0xff) == -1
        assert g.w2 == 0
        assert g.q == 0
    ";
    let config = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![value_struct()])
        .instances(vec![global("g", "vals", 0)])
        .script("s", script)
        .thread(0, "s")
        .build();
    let (_, rec) = testkit::run_config(&config);
    use AccessKind::{Atomic, Load};
    use AtomicOp::*;
    assert_eq!(
        ops(&rec),
        vec![
            (Atomic(Xchg), 0, Some(-1)),
            (Load, -1, None),
            (Load, 0, None),
            // The new value is what the field holds: the low 32 bits.
            (Atomic(Xchg), -1, Some(1)),
            (Load, 1, None),
            (Atomic(Xchg), 1, Some(0x7fff_ffff)),
            (Atomic(FetchAdd), 0x7fff_ffff, Some(-0x8000_0000)),
            (Load, -0x8000_0000, None),
            (Atomic(CmpXchg), -0x8000_0000, Some(-1)),
            (Load, -1, None),
            (Atomic(FetchAnd), -1, Some(0xff)),
            (Load, 0, None),
            (Load, 0, None),
        ]
    );
    let q = address(&config, "g", 0, "q");
    for a in rec.accesses() {
        let size = if a.address == q { 8 } else { 4 };
        assert_eq!(a.size_bytes, size, "{a:?}");
    }
}

#[test]
fn plain_stores_to_four_byte_fields_keep_the_low_bits_once_drained() {
    // The line is not owned: the first store goes through the buffer.
    let script = "
        g.w = 0x1_0000_0001
        fence
        assert g.w == 1
        assert g.w2 == 0
        g.w2 = -1
        assert g.w2 == -1
        assert g.w == 1
        assert g.q == 0
    ";
    let config = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![value_struct()])
        .instances(vec![global("g", "vals", 0)])
        .script("s", script)
        .thread(0, "s")
        .build();
    let (_, rec) = testkit::run_config(&config);
    let w = address(&config, "g", 0, "w");
    let w2 = address(&config, "g", 0, "w2");
    assert_eq!(rec.loads(0, w), vec![1, 1]);
    assert_eq!(rec.loads(0, w2), vec![0, -1]);
    // The second store found the line owned and an empty buffer: written at once.
    let kinds: Vec<AccessKind> = rec
        .of_cpu(0)
        .iter()
        .filter(|a| a.address == w || a.address == w2)
        .map(|a| a.kind)
        .filter(|k| matches!(k, AccessKind::Store | AccessKind::StoreDrain))
        .collect();
    assert_eq!(kinds, vec![AccessKind::StoreDrain, AccessKind::Store]);
}

#[test]
fn a_forwarded_load_of_a_four_byte_field_sees_the_low_bits() {
    let script = "
        g.w = 0x1_0000_0001
        let fwd = g.w
        fence
        let mem = g.w
        assert fwd == mem
    ";
    let setup = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![value_struct()])
        .instances(vec![global("g", "vals", 0)])
        .script("s", script)
        .thread(0, "s");
    let config = setup.build();
    let mut rec = testkit::Recorder::default();
    let result = sim_core::engine::run(&config, &mut rec);
    let w = address(&config, "g", 0, "w");
    assert_eq!(
        rec.loads(0, w),
        vec![1, 1],
        "forwarded, then from the cache"
    );
    result.unwrap();
}

#[test]
fn a_zero_size_field_is_a_compile_error_or_reads_zero() {
    // local_lock_t is empty without lockdep; a script may still name it.
    let setup = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![strukt(
            "pcp",
            vec![field("lock", "local_lock_t"), field("count", "long")],
        )])
        .instances(vec![global("g", "pcp", 0)])
        .script("s", "let v = g.lock")
        .thread(0, "s");
    let Ok(config) = setup.try_build() else {
        return; // Rejected before the run: fine.
    };
    let run = std::panic::catch_unwind(|| {
        let mut rec = testkit::Recorder::default();
        let result = sim_core::engine::run(&config, &mut rec);
        (result.map(|_| ()), rec)
    });
    let (result, rec) = run.expect("an error, not a panic");
    result.unwrap();
    assert_eq!(rec.loads(0, address(&config, "g", 0, "lock")), vec![0]);
}

#[test]
fn a_failed_cmpxchg_still_takes_the_line_exclusive() {
    let (_, rec) = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![value_struct()])
        .instances(vec![global("g", "vals", 0)])
        .script("reader", "let a = g.q\nwork 2000\nlet b = g.q")
        .script("cas", "work 1000\nassert cmpxchg(g.q, 99, 7) == 0")
        .thread(4, "reader")
        .thread(0, "cas")
        .run();
    let cas = rec.of_cpu(0);
    assert_eq!(cas.len(), 1);
    let a = cas[0];
    assert_eq!(a.kind, AccessKind::Atomic(AtomicOp::CmpXchg));
    assert_eq!((a.value, a.new_value), (0, None));
    let r = a.report.as_ref().unwrap();
    assert_eq!(r.need, Need::Write);
    assert_eq!(
        (r.requester_before, r.requester_after),
        (LineState::Invalid, LineState::Modified)
    );
    assert_eq!(r.invalidations, 1);
    assert_eq!(r.others.len(), 1);
    assert_eq!(r.others[0].core, 4);
    assert_eq!(r.others[0].after, LineState::Invalid);
    // The reader misses again and finds the value unchanged, in CPU 0's M copy.
    let reads = rec.of_cpu(4);
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[1].value, 0);
    let r = reads[1].report.as_ref().unwrap();
    assert_eq!(
        r.supplier.map(|s| (s.0, s.1)),
        Some((0, LineState::Modified))
    );
    assert!(r.hitm);
}

// ---------------------------------------------------------------------------
// The x86-TSO store buffer
// ---------------------------------------------------------------------------

fn tso_setup<'a>(scripts: &[(&'a str, &'a str)], threads: &[(u32, &'a str)]) -> Setup<'a> {
    let mut s = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![line_struct()])
        .instances(vec![
            global("s", "line", 0),
            global("t", "line", 0),
            global("x", "line", 0),
            global("y", "line", 2),
            per_cpu("pad", "line"),
        ]);
    for &(name, body) in scripts {
        s = s.script(name, body);
    }
    for &(cpu, name) in threads {
        s = s.thread(cpu, name);
    }
    s
}

#[test]
fn a_load_after_a_posted_store_is_forwarded_from_the_buffer() {
    let setup = tso_setup(&[("s", "s.v = 5\nlet v = s.v\nassert v == 5")], &[(0, "s")]);
    let config = setup.build();
    let l = config.topology.spec.latency.clone();
    let (outcome, rec) = setup.run();
    let a = address(&config, "s", 0, "v");
    assert_eq!(rec.log[0], Seen::StorePosted(0, 0, a, 5));
    let seen = rec.of_cpu(0);
    assert_eq!(seen.len(), 2, "{seen:?}");
    // The drain: a write transaction that fetches the line from memory.
    assert_eq!(seen[0].kind, AccessKind::StoreDrain);
    assert_eq!(seen[0].value, 5);
    let drain = seen[0].report.as_ref().unwrap();
    assert_eq!(drain.route, Route::Memory { node: 0 });
    assert_eq!(drain.requester_after, LineState::Modified);
    assert_eq!(
        drain.done,
        Cycle::new(2 * l.hop_in_node_cycles + l.dram_cycles)
    );
    // The load: answered by the buffer, no transaction.
    assert_eq!(seen[1].kind, AccessKind::LoadForwarded);
    assert_eq!(seen[1].value, 5);
    assert!(seen[1].report.is_none());
    // Posting takes a cycle, the forwarded load an L1 hit: the CPU is done
    // long before its store reaches the cache.
    let finish = outcome.cpus[0].finish_cycle;
    assert_eq!(finish, 1 + l.l1_hit_cycles);
    assert!(Cycle::new(finish) < drain.done);
}

#[test]
fn an_atomic_or_a_fence_waits_for_the_buffer_to_drain() {
    for script in [
        "s.v = 1\nx.v = 2\nfetch_add(t.v, 1)",
        "s.v = 1\nx.v = 2\nfence\nlet v = t.v",
    ] {
        let setup = tso_setup(&[("s", script)], &[(0, "s")]);
        let config = setup.build();
        let (_, rec) = setup.run();
        let xv = address(&config, "x", 0, "v");
        let tv = address(&config, "t", 0, "v");
        let seen = rec.of_cpu(0);
        assert_eq!(seen.len(), 3, "{script}: {seen:?}");
        assert_eq!(seen[0].kind, AccessKind::StoreDrain, "{script}");
        assert_eq!(seen[1].kind, AccessKind::StoreDrain, "{script}");
        let first = seen[0].report.as_ref().unwrap().done;
        let second = seen[1].report.as_ref().unwrap();
        // The second store drains after the first, in order.
        assert_eq!(second.issued, first);
        let drained = second.done;
        let after = seen[2];
        assert_eq!(after.address, tv);
        let r = after.report.as_ref().unwrap();
        assert_eq!(
            r.issued, drained,
            "{script}: issued once the buffer drained"
        );
        // One wait, from the cycle after the two posts to the last drain.
        let waits: Vec<&Seen> = rec
            .log
            .iter()
            .filter(|s| matches!(s, Seen::BufferWait(..)))
            .collect();
        assert_eq!(
            waits,
            vec![&Seen::BufferWait(0, 2, drained.get(), xv)],
            "{script}"
        );
    }
}

#[test]
fn a_full_store_buffer_stalls_the_next_store_until_a_drain() {
    // 9 stores to 9 lines with 8 entries: the 9th waits for the first drain.
    let script = "let i = 0\nwhile i < 9 {\n  a[i].v = i\n  i = i + 1\n}\nfence";
    let mut arr = global("a", "line", 0);
    arr.count = 9;
    let setup = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![line_struct()])
        .instances(vec![arr])
        .script("s", script)
        .thread(0, "s");
    let config = setup.build();
    assert_eq!(config.topology.spec.store_buffer_entries, 8);
    let (_, rec) = setup.run();
    let posted: Vec<u64> = rec
        .log
        .iter()
        .filter_map(|s| match s {
            Seen::StorePosted(0, cycle, _, _) => Some(*cycle),
            _ => None,
        })
        .collect();
    assert_eq!(posted.len(), 9);
    let drains: Vec<&Access> = rec
        .accesses()
        .filter(|a| a.kind == AccessKind::StoreDrain)
        .collect();
    assert_eq!(drains.len(), 9);
    // Drains run one at a time, in program order.
    for (k, d) in drains.iter().enumerate() {
        assert_eq!(d.value, k as i64);
        if k > 0 {
            let prev = drains[k - 1].report.as_ref().unwrap().done;
            assert_eq!(d.report.as_ref().unwrap().issued, prev);
        }
    }
    let first_drained = drains[0].report.as_ref().unwrap().done.get();
    assert!(
        posted[7] < first_drained,
        "eight entries fill without waiting"
    );
    assert_eq!(posted[8], first_drained, "the ninth waits for a free entry");
}

/// The store-buffering litmus test. Each CPU first stores to its own line
/// (a slow miss), so its store to x (y) waits behind it in the buffer while
/// the load of y (x) runs: TSO lets both loads see 0. With a fence before
/// the load, at least one sees the other's store.
fn store_buffering(fenced: bool, b_delay: u64) -> (i64, i64) {
    let fence = if fenced { "fence\n" } else { "" };
    let a = format!("pad.v = 1\nx.v = 1\n{fence}let r1 = y.v");
    let b = format!("work {b_delay}\npad.v = 1\ny.v = 1\n{fence}let r2 = x.v");
    let setup = tso_setup(&[("a", &a), ("b", &b)], &[(0, "a"), (8, "b")]);
    let config = setup.build();
    let (_, rec) = setup.run();
    let r1 = rec.loads(0, address(&config, "y", 0, "v"));
    let r2 = rec.loads(8, address(&config, "x", 0, "v"));
    assert_eq!((r1.len(), r2.len()), (1, 1));
    (r1[0], r2[0])
}

#[test]
fn store_buffering_litmus_allows_both_zero_without_a_fence() {
    assert_eq!(store_buffering(false, 0), (0, 0));
}

#[test]
fn store_buffering_litmus_forbids_both_zero_with_fences() {
    for delay in [0, 1, 2, 5, 50, 100, 200, 209, 210, 211, 300, 500, 1000] {
        let (r1, r2) = store_buffering(true, delay);
        assert!(
            r1 == 1 || r2 == 1,
            "delay {delay}: fenced SB gave r1 = {r1}, r2 = {r2}"
        );
    }
    assert_eq!(store_buffering(true, 0), (1, 1));
}

/// The cycles of CPU 0's iteration `index` (from 0) of `script` over `a`
/// and `b` (a line each, homed on its own node, both uncached at the
/// start), alone on the machine.
fn iteration_cycles(script: &str, index: u64) -> u64 {
    let (_, rec) = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![line_struct()])
        .instances(vec![global("a", "line", 0), global("b", "line", 0)])
        .script("r", script)
        .threads([0], "r")
        .stop(StopRule::Iterations(index + 1))
        .run();
    cpu0_iteration_cycles(&rec, index)
}

/// CPU 0's third iteration: by then both lines are Modified in its core,
/// so every access hits.
fn owned_lines_iteration(script: &str) -> u64 {
    iteration_cycles(script, 2)
}

#[test]
fn a_locked_instruction_that_hits_costs_its_figure_once() {
    // `locked_op_cycles` is the whole instruction on a line in the core's
    // own L1, the load of its operand included: a second locked add on an
    // owned line adds exactly that, not the L1 access and then the figure.
    let l = small_machine(Protocol::Mesif, Lookup::Local).latency;
    assert!(l.locked_op_cycles > l.l1_hit_cycles);
    let one = owned_lines_iteration("a.v = 1\nfetch_add(b.v, 1)");
    let two = owned_lines_iteration("a.v = 1\nfetch_add(b.v, 1)\nfetch_add(b.v, 1)");
    assert_eq!(two - one, l.locked_op_cycles);
    assert_eq!(
        l.locked_op_after_hit_cycles(),
        l.locked_op_cycles - l.l1_hit_cycles
    );
}

#[test]
fn a_store_into_an_owned_line_is_posted_and_an_atomic_after_it_waits_for_its_write() {
    let l = small_machine(Protocol::Mesif, Lookup::Local).latency;
    assert!(l.l1_hit_cycles > 1);
    // A store costs the core its posting cycle, whether the empty buffer
    // writes it into the line at once or not.
    let one = owned_lines_iteration("a.v = 1\nwork 50\nfetch_add(b.v, 1)");
    let two = owned_lines_iteration("a.v = 1\na.v = 2\nwork 50\nfetch_add(b.v, 1)");
    assert_eq!(two - one, 1);
    // A locked instruction right after it waits for the write to reach
    // the line (the L1 access), as it waits for a buffered store's drain;
    // with work between, the write is long done.
    let apart = owned_lines_iteration("work 50\na.v = 1\nwork 50\nfetch_add(b.v, 1)");
    let close = owned_lines_iteration("work 50\nwork 50\na.v = 1\nfetch_add(b.v, 1)");
    assert_eq!(close - apart, l.l1_hit_cycles - 1);
    // So does a fence.
    let fenced = owned_lines_iteration("work 50\nwork 50\na.v = 1\nfence\nfetch_add(b.v, 1)");
    assert_eq!(fenced, close);
    // And so does a futex operation (the kernel's futex_wake and
    // futex_wait each issue a full barrier first), with work after it
    // before the locked instruction.
    let woke_apart = owned_lines_iteration(
        "work 50\na.v = 1\nwork 50\nlet w = futex_wake(&b.v, 1)\nwork 50\nfetch_add(b.v, 1)",
    );
    let woke_close = owned_lines_iteration(
        "work 50\nwork 50\na.v = 1\nlet w = futex_wake(&b.v, 1)\nwork 50\nfetch_add(b.v, 1)",
    );
    assert_eq!(woke_close - woke_apart, l.l1_hit_cycles - 1);
}

/// CPU 0's first iteration, both lines uncached at its start.
fn first_iteration(script: &str) -> u64 {
    iteration_cycles(script, 0)
}

#[test]
fn buffered_stores_into_an_owned_line_commit_one_a_cycle() {
    // `a` is read first (Exclusive, so writable); the store to `b` misses
    // and waits in the buffer, and the stores to `a` queue behind it. Once
    // `b` is written, the buffer commits one store a cycle into the L1,
    // pipelined (each write still takes an L1 access to reach its line),
    // so the fence after four more stores waits four cycles longer, not
    // four L1 accesses.
    let l = small_machine(Protocol::Mesif, Lookup::Local).latency;
    assert!(l.l1_hit_cycles > 1);
    let one = first_iteration("let x = a.v\nb.v = 1\na.v = 1\nfence");
    let five =
        first_iteration("let x = a.v\nb.v = 1\na.v = 1\na.v = 2\na.v = 3\na.v = 4\na.v = 5\nfence");
    assert_eq!(five - one, 4);
}

// ---------------------------------------------------------------------------
// Determinism
// ---------------------------------------------------------------------------

fn mixed_setup<'a>(seed: u64) -> Setup<'a> {
    let script = "
        let k = random(4)
        if k == 0 {
            fetch_add(c.n, 1)
        } else if k == 1 {
            c.n = cpu()
        } else if k == 2 {
            let v = c.n
        } else {
            mine.v = random(100)
        }
        work random(50)
    ";
    Setup::new(small_machine(Protocol::Moesi, Lookup::Home))
        .structs(vec![counter_struct(), line_struct()])
        .instances(vec![global("c", "ctr", 1), per_cpu("mine", "line")])
        .script("mix", script)
        .threads(0..32, "mix")
        .stop(StopRule::Iterations(20))
        .seed(seed)
}

#[test]
fn the_same_config_gives_the_same_run() {
    let config = mixed_setup(7).build();
    let (out1, rec1) = testkit::run_config(&config);
    let (out2, rec2) = testkit::run_config(&config);
    // One access per iteration (a store counts at its drain; a store still
    // in a buffer when its CPU finishes is never drained).
    assert!(rec1.accesses().count() > 32 * 19);
    assert_eq!(out1, out2);
    assert_eq!(rec1, rec2);
    // A fresh build of the same description, too.
    let (out3, rec3) = mixed_setup(7).run();
    assert_eq!(out1, out3);
    assert_eq!(rec1, rec3);
    // Another seed is another run.
    let (_, rec4) = mixed_setup(8).run();
    assert_ne!(rec1, rec4);
}

/// The CPUs in the order the home served their `fetch_add`.
fn winners(seed: u64) -> Vec<u32> {
    let (_, rec) = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![counter_struct()])
        .instances(vec![global("c", "ctr", 0)])
        .script("inc", "fetch_add(c.n, 1)")
        .threads(0..16, "inc")
        .seed(seed)
        .run();
    let mut by_value: Vec<(i64, u32)> = atomics(&rec).iter().map(|a| (a.value, a.cpu)).collect();
    by_value.sort();
    assert_eq!(
        by_value.iter().map(|v| v.0).collect::<Vec<_>>(),
        (0..16).collect::<Vec<i64>>()
    );
    by_value.into_iter().map(|v| v.1).collect()
}

#[test]
fn the_seed_decides_the_arbitration_of_a_contended_line() {
    let one = winners(1);
    let two = winners(2);
    assert_eq!(one, winners(1));
    assert_eq!(two, winners(2));
    assert_ne!(one, two);
    // Not first come, first served: the queue order is CPU order.
    assert_ne!(one, (0..16).collect::<Vec<u32>>());
    assert_ne!(two, (0..16).collect::<Vec<u32>>());
}

/// The values of `random(1000)` CPU 3 drew, with `extra` CPUs beside it.
fn draws(seed: u64, extra: &[(u32, &str)]) -> Vec<i64> {
    draws_of(seed, extra, 3)
}

/// The values of `random(1000)` CPU `cpu` drew, with CPU 3 drawing after `extra`.
fn draws_of(seed: u64, extra: &[(u32, &str)], cpu: u32) -> Vec<i64> {
    let mut setup = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![line_struct()])
        .instances(vec![per_cpu("r", "line")])
        .script("draw", "r.v = random(1000)")
        .script("idle", "work 10")
        .stop(StopRule::Iterations(16))
        .seed(seed);
    // The other CPUs come first, so CPU 3's place in the thread list moves.
    for &(cpu, script) in extra {
        setup = setup.thread(cpu, script);
    }
    let (_, rec) = setup.thread(3, "draw").run();
    let values = rec.stored(cpu);
    assert_eq!(values.len(), 16);
    values
}

#[test]
fn another_cpu_does_not_change_a_cpus_random_draws() {
    let alone = draws(5, &[]);
    assert!(alone.iter().all(|v| (0..1000).contains(v)));
    assert_eq!(draws(5, &[(0, "idle")]), alone);
    assert_eq!(draws(5, &[(0, "idle"), (1, "draw"), (7, "draw")]), alone);
    assert_ne!(draws(6, &[]), alone, "the seed changes the draws");
    // Each CPU has a stream of its own.
    let other = draws_of(5, &[(7, "draw")], 7);
    assert_ne!(other, alone, "CPUs 3 and 7 draw different values");
}

/// The values CPU 3 stored with `script`, one per iteration, 400 of them.
fn stored_by(script: &str, seed: u64) -> Vec<i64> {
    let (_, rec) = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![line_struct()])
        .instances(vec![per_cpu("r", "line")])
        .script("draw", script)
        .stop(StopRule::Iterations(400))
        .seed(seed)
        .thread(3, "draw")
        .run();
    rec.stored(3)
}

#[test]
fn uniform_draws_cover_both_ends_and_nothing_outside() {
    let values = stored_by("r.v = uniform(5, 9)", 5);
    assert_eq!(values.len(), 400);
    assert!(values.iter().all(|v| (5..=9).contains(v)), "{values:?}");
    for end in [5, 9] {
        assert!(values.contains(&end), "{end} never drawn");
    }
    assert_eq!(stored_by("r.v = uniform(5, 9)", 5), values, "same seed");
    assert_ne!(stored_by("r.v = uniform(5, 9)", 6), values, "another seed");
    // A one-value range.
    assert!(stored_by("r.v = uniform(-3, -3)", 1)
        .iter()
        .all(|&v| v == -3));
}

#[test]
fn exponential_draws_have_their_mean() {
    let values = stored_by("r.v = exp(200)", 5);
    assert!(values.iter().all(|&v| v >= 0));
    let mean = values.iter().sum::<i64>() / values.len() as i64;
    // 400 draws: the standard error of the mean is 200 / 20 = 10 cycles.
    assert!((170..=230).contains(&mean), "mean {mean}");
    // Spread like an exponential: some draws far above the mean, many below.
    assert!(values.iter().any(|&v| v > 600), "no draw above 3 means");
    assert!(values.iter().filter(|&&v| v < 200).count() > 200);
    assert!(stored_by("r.v = exp(0)", 5).iter().all(|&v| v == 0));
}

#[test]
fn work_drawn_from_a_distribution_takes_the_drawn_cycles() {
    // An iteration of nothing but the work (and its end): its length is
    // the draw.
    let lengths = |script: &str| -> Vec<u64> {
        let (_, rec) = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
            .script("w", script)
            .stop(StopRule::Iterations(300))
            .thread(3, "w")
            .run();
        rec.log
            .iter()
            .filter_map(|seen| match seen {
                Seen::Iteration(_, _, start, end) => Some(end - start),
                _ => None,
            })
            .collect()
    };
    let uniform = lengths("work uniform(10, 20)");
    assert_eq!(uniform.len(), 300);
    assert!(uniform.iter().all(|l| (10..=20).contains(l)), "{uniform:?}");
    assert!(
        uniform.contains(&10) && uniform.contains(&20),
        "{uniform:?}"
    );
    let exp = lengths("work exp(100)");
    let mean = exp.iter().sum::<u64>() / 300;
    assert!((80..=120).contains(&mean), "mean {mean}");
}

#[test]
fn smt_siblings_that_both_run_share_the_core() {
    // CPU c and c + 16 are the two threads of core c (small_machine).
    let lengths = |cpus: &[u32], share: u32| -> Vec<u64> {
        let machine = sim_core::topology::MachineSpec {
            smt_share_percent: share,
            ..small_machine(Protocol::Mesi, Lookup::Home)
        };
        let (_, rec) = Setup::new(machine)
            .script("w", "work 100")
            .threads(cpus.iter().copied(), "w")
            .stop(StopRule::Iterations(3))
            .run();
        rec.log
            .iter()
            .filter_map(|seen| match seen {
                Seen::Iteration(_, _, start, end) => Some(end - start),
                _ => None,
            })
            .collect()
    };
    // 100 cycles at 60 % of a core: 167 (rounded up).
    assert!(lengths(&[1, 17], 60).iter().all(|&l| l == 167));
    // Alone on its core, or beside a thread of another core: full speed.
    assert!(lengths(&[1], 60).iter().all(|&l| l == 100));
    assert!(lengths(&[1, 2], 60).iter().all(|&l| l == 100));
    // A share of 100: siblings share the caches only.
    assert!(lengths(&[1, 17], 100).iter().all(|&l| l == 100));
}

/// The CPUs of a counter's increments in the order they took effect, with
/// `cpus` each incrementing it 200 times on `machine` (their old values
/// give the order).
fn increments_in_order(machine: MachineSpec, cpus: &[u32]) -> Vec<u32> {
    let (_, rec) = Setup::new(machine)
        .structs(vec![counter_struct()])
        .instances(vec![global("c", "ctr", 0)])
        .script("inc", "fetch_add(c.n, 1)")
        .threads(cpus.iter().copied(), "inc")
        .stop(StopRule::Iterations(200))
        .run();
    let mut order: Vec<(i64, u32)> = rec
        .accesses()
        .filter(|a| matches!(a.kind, AccessKind::Atomic(_)))
        .map(|a| (a.value, a.cpu))
        .collect();
    order.sort();
    assert_eq!(order.len(), 200 * cpus.len());
    order.into_iter().map(|(_, cpu)| cpu).collect()
}

/// How many times the counter of `order` ([`increments_in_order`]) moved
/// between sockets, on a machine whose socket 1 starts at CPU 8.
fn socket_crossings(order: &[u32]) -> usize {
    order
        .windows(2)
        .filter(|w| (w[0] >= 8) != (w[1] >= 8))
        .count()
}

/// How many times a contended counter moved between sockets, with the
/// home preferring requesters near the owner in `near` percent of
/// handovers: CPUs 0 and 1 on socket 0, 8 and 9 on socket 1.
fn socket_switches(near: u32) -> usize {
    let machine = MachineSpec {
        arbitration_near_owner_percent: near,
        ..small_machine(Protocol::Mesi, Lookup::Home)
    };
    socket_crossings(&increments_in_order(machine, &[0, 1, 8, 9]))
}

#[test]
fn a_home_that_prefers_requesters_near_the_owner_keeps_the_line_on_its_socket() {
    let uniform = socket_switches(0);
    let local = socket_switches(100);
    let half = socket_switches(50);
    // Uniform: a waiter of the other socket is served about half the time.
    assert!(uniform > 200, "{uniform}");
    // Always the nearest: the line leaves a socket only when no waiter of
    // the owner's socket is queued.
    assert!(local * 3 < uniform, "{local} vs {uniform}");
    assert!(
        local < half && half < uniform,
        "{local} < {half} < {uniform}"
    );
}

/// The handovers of a contended counter that crossed sockets, and the
/// increments each socket made in the first half of the run (while all
/// eight CPUs still run), with eight CPUs, four a socket, on a machine
/// whose lookup is `lookup` (no near-owner preference), each socket one L3
/// domain (one caching agent per address, as on Intel's one-die sockets).
fn crossings_and_shares(lookup: Lookup) -> (usize, usize, usize) {
    let machine = MachineSpec {
        nodes_per_socket: 1,
        l3_per_node: 1,
        cores_per_l3: 8,
        ..small_machine(Protocol::Mesi, lookup)
    };
    let order = increments_in_order(machine, &[0, 1, 2, 3, 8, 9, 10, 11]);
    let first_half = &order[..800];
    let socket_1 = first_half.iter().filter(|&&cpu| cpu >= 8).count();
    (
        socket_crossings(&order),
        first_half.len() - socket_1,
        socket_1,
    )
}

#[test]
fn sockets_that_resolve_their_own_transfers_send_one_request_each() {
    // A home that looks every transfer up: every waiter competes, those of
    // the other socket with those of the owner's (468 of the 1600
    // handovers cross at this seed: not every CPU is queued at each one).
    let (home, _, _) = crossings_and_shares(Lookup::Home);
    // Each socket's agent resolving its own (`Lookup::Local`): the owner's
    // other waiters and one request from the other socket compete (199).
    let (local, socket_0, socket_1) = crossings_and_shares(Lookup::Local);
    assert!(home > 350, "{home} of 1600 cross");
    assert!((120..=300).contains(&local), "{local} of 1600 cross");
    assert!(local * 2 < home, "{local} vs {home}");
    // The remote request's own chance bounds its wait: neither socket
    // starves while both have waiters.
    assert!(
        socket_0 >= 300 && socket_1 >= 300,
        "{socket_0} / {socket_1} of the first 800"
    );
}

/// The cycle each of `cpus` started at, with a start spread of `spread`.
fn start_cycles(cpus: &[u32], spread: u64, seed: u64) -> Vec<i64> {
    let (_, rec) = Setup::new(small_machine(Protocol::Mesi, Lookup::Home))
        .structs(vec![line_struct()])
        .instances(vec![per_cpu("r", "line")])
        .script("start", "r.v = now()")
        .threads(cpus.iter().copied(), "start")
        .stop(StopRule::Iterations(1))
        .start_spread(spread)
        .seed(seed)
        .run();
    cpus.iter().map(|&c| rec.stored(c)[0]).collect()
}

#[test]
fn cpus_start_at_distinct_seeded_offsets() {
    let cpus: Vec<u32> = (0..16).collect();
    let starts = start_cycles(&cpus, 1_000, 3);
    assert!(starts.iter().all(|s| (0..1_000).contains(s)), "{starts:?}");
    let mut distinct = starts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 16, "{starts:?}");
    assert_eq!(start_cycles(&cpus, 1_000, 3), starts, "same seed");
    assert_ne!(start_cycles(&cpus, 1_000, 4), starts, "another seed");
    // A CPU's offset is its own: the others do not move it.
    assert_eq!(start_cycles(&[3], 1_000, 3), vec![starts[3]]);
    // No spread: lock-step at cycle 0.
    assert!(start_cycles(&cpus, 0, 3).iter().all(|&s| s == 0));
    // A spread narrower than the machine: one cycle apart, in CPU order.
    assert_eq!(start_cycles(&[0, 1, 2], 4, 3), vec![0, 1, 2]);
}

// ---------------------------------------------------------------------------
// Stop rules
// ---------------------------------------------------------------------------

#[test]
fn a_cycles_run_ends_at_its_cycle() {
    let (outcome, rec) = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![counter_struct()])
        .instances(vec![global("c", "ctr", 0)])
        .script("inc", "fetch_add(c.n, 1)\nwork 37")
        .threads([0, 5, 9, 14], "inc")
        .stop(StopRule::Cycles(10_000))
        .max_cycles(1_000)
        .run();
    assert_eq!(outcome.elapsed_cycles, 10_000);
    assert_eq!(outcome.measure_start_cycle, 0);
    for cpu in &outcome.cpus {
        assert!(cpu.measured_iterations > 0, "{cpu:?}");
        assert!(cpu.finish_cycle <= 10_000, "{cpu:?}");
    }
    for a in rec.accesses() {
        assert!(a.report.as_ref().unwrap().started < Cycle::new(10_000));
    }
    // Iterations counted by the outcome are the iterations the probe saw.
    let seen = rec
        .log
        .iter()
        .filter(|s| matches!(s, Seen::Iteration(..)))
        .count() as u64;
    assert_eq!(
        seen,
        outcome
            .cpus
            .iter()
            .map(|c| c.measured_iterations)
            .sum::<u64>()
    );
}

// ---------------------------------------------------------------------------
// The adjacent-line prefetcher
// ---------------------------------------------------------------------------

/// Two fields on lines 2N and 2N+1, the two halves of one 128-byte pair.
fn pair_struct() -> StructSpec {
    let mut a = field("a", "long");
    a.align = Some(64);
    let mut b = field("b", "long");
    b.align = Some(64);
    strukt("pair", vec![a, b])
}

fn pair_setup<'a>(prefetch: bool) -> Setup<'a> {
    let machine = sim_core::topology::MachineSpec {
        adjacent_line_prefetch: prefetch,
        ..small_machine(Protocol::Mesi, Lookup::Home)
    };
    // CPU 0 writes `b`; later CPU 4 (another node) reads `a`, then `b`.
    Setup::new(machine)
        .structs(vec![pair_struct()])
        .instances(vec![global("p", "pair", 0)])
        .script("owner", "fetch_add(p.b, 1)")
        .script("reader", "work 2000\nlet x = p.a\nwork 2000\nlet y = p.b")
        .thread(0, "owner")
        .thread(4, "reader")
}

#[test]
fn a_miss_prefetches_the_buddy_line_taking_it_from_a_modified_owner() {
    let setup = pair_setup(true);
    let config = setup.build();
    let (a, b) = (address(&config, "p", 0, "a"), address(&config, "p", 0, "b"));
    assert_eq!((a / 64) ^ 1, b / 64, "a and b are buddies");
    let (_, rec) = setup.run();
    let prefetches: Vec<&Access> = rec.accesses().filter(|x| x.kind.is_prefetch()).collect();
    // CPU 0's RFO miss on b prefetched a; CPU 4's load miss on a prefetched b.
    assert_eq!(prefetches.len(), 2, "{prefetches:?}");
    assert_eq!((prefetches[0].cpu, prefetches[0].address), (0, a));
    let p = prefetches[1];
    assert_eq!((p.cpu, p.address), (4, b));
    let r = p.report.as_ref().unwrap();
    // A read like any other: the Modified owner supplies the data and keeps
    // a Shared copy; no CPU waited for it.
    assert!(r.hitm);
    assert_eq!(r.requester_after, LineState::Shared);
    assert_eq!(r.others.len(), 1);
    assert_eq!(
        (r.others[0].core, r.others[0].before, r.others[0].after),
        (0, LineState::Modified, LineState::Shared)
    );
    assert_eq!(p.stall_cycles, 0);
    // CPU 4's later load of b hits on the prefetched copy.
    let load_b = rec
        .of_cpu(4)
        .into_iter()
        .find(|x| x.kind == AccessKind::Load && x.address == b)
        .unwrap();
    assert_eq!(load_b.report.as_ref().unwrap().route, Route::Hit);
    assert_eq!(load_b.value, 1);
}

#[test]
fn without_the_prefetcher_no_buddy_is_read() {
    let setup = pair_setup(false);
    let config = setup.build();
    let b = address(&config, "p", 0, "b");
    let (_, rec) = setup.run();
    assert!(rec.accesses().all(|x| !x.kind.is_prefetch()));
    let load_b = rec
        .of_cpu(4)
        .into_iter()
        .find(|x| x.kind == AccessKind::Load && x.address == b)
        .unwrap();
    let r = load_b.report.as_ref().unwrap();
    assert!(r.hitm, "the load itself takes b from its Modified owner");
}

#[test]
fn a_spin_wait_with_no_writer_is_reported_at_once_not_at_the_cycle_budget() {
    // `while g.v == 0 { }` on two CPUs and nothing that writes `g.v`: with
    // the spin-wait fast-forward both sleep on the line and the run stops
    // as soon as nothing is queued (it ran to the cycle budget before, 275 s
    // at the default budget on a 2-core host); stepped, it polls until
    // the budget.
    let config = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![counter_struct()])
        .instances(vec![global("g", "ctr", 0)])
        .script("wait", "while g.n == 0 {\n}")
        .threads([0, 5], "wait")
        .max_cycles(200_000)
        .build();
    let mut summed = testkit::Recorder {
        accepts_summed_hits: true,
        ..testkit::Recorder::default()
    };
    let fast = sim_core::engine::run(&config, &mut summed).unwrap_err();
    let SimError::NoProgress {
        stall, cycle, cpus, ..
    } = &fast
    else {
        panic!("expected no progress, got {fast}");
    };
    assert_eq!(*stall, Stall::SpinsForever);
    assert!(*cycle < Cycle::new(2_000), "found at cycle {cycle}");
    assert_eq!(cpus.len(), 2);
    assert!(
        fast.to_string()
            .contains("a lock never released, a flag never set"),
        "{fast}"
    );
    let stepped = sim_core::engine::run_with(
        &config,
        &mut testkit::Recorder::default(),
        sim_core::engine::EngineOptions::REFERENCE,
    )
    .unwrap_err();
    assert!(
        matches!(stepped, SimError::Truncated { .. }),
        "stepped: {stepped}"
    );
    // A probe that sees every poll (a trace) forbids the sleep, not the
    // finding: the same error, found as soon as only the polls are left.
    let traced = sim_core::engine::run(&config, &mut testkit::Recorder::default()).unwrap_err();
    assert_eq!(format!("{traced:?}"), format!("{fast:?}"));
}

/// `run` with a probe that takes summed hits (the spinners sleep) and with
/// one that sees every access (they step in a shadow of the sleep): the
/// same result, error or outcome (but for the events taken, which the
/// sleep skips); the traced run's error, if any.
fn slept_and_traced(config: &sim_core::engine::SimConfig) -> Result<(), SimError> {
    let mut summed = testkit::Recorder {
        accepts_summed_hits: true,
        ..testkit::Recorder::default()
    };
    let events_left_out = |outcome: sim_core::engine::RunOutcome| sim_core::engine::RunOutcome {
        events: 0,
        ..outcome
    };
    let slept = sim_core::engine::run(config, &mut summed).map(events_left_out);
    let traced =
        sim_core::engine::run(config, &mut testkit::Recorder::default()).map(events_left_out);
    assert_eq!(format!("{traced:?}"), format!("{slept:?}"));
    traced.map(|_| ())
}

#[test]
fn a_traced_spin_left_for_ever_after_wakes_ends_as_the_sleeping_run() {
    // The waiters are woken by every write of the writer's three
    // iterations, none of which lets them out: the last sleep is the one
    // the error names, and the traced run's shadow must start at the same
    // poll (one period apart would be another cycle in the error).
    for (waiter, writer_cpus) in [
        ("while g.n != 7 {\n}", vec![5]),
        ("while g.n != 7 {\n  work 13\n}", vec![5]),
        ("while g.n < 7 {\n  work 3\n}", vec![2, 5]),
    ] {
        let config = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
            .structs(vec![counter_struct()])
            .instances(vec![global("g", "ctr", 0)])
            .script("wait", waiter)
            .script("bump", "work 300\nlet x = fetch_add(g.n, 1)")
            .threads([0, 4], "wait")
            .threads(writer_cpus.clone(), "bump")
            .stop(StopRule::Iterations(3))
            .max_cycles(2_000_000)
            .build();
        let error = slept_and_traced(&config).unwrap_err();
        let SimError::NoProgress { stall, cycle, .. } = &error else {
            panic!("{waiter}: expected no progress, got {error}");
        };
        assert_eq!(*stall, Stall::SpinsForever, "{waiter}");
        assert!(*cycle < Cycle::new(50_000), "{waiter}: at cycle {cycle}");
    }
}

#[test]
fn a_traced_spin_that_is_released_runs_to_its_end() {
    // Sound: a shadowed waiter whose line a writer keeps reaching is not
    // reported while the writer runs, however long it polls between.
    let config = Setup::new(small_machine(Protocol::Mesif, Lookup::Local))
        .structs(vec![counter_struct()])
        .instances(vec![global("g", "ctr", 0)])
        .script("wait", "while g.n < 7 {\n}")
        .script("bump", "work 5000\nlet x = fetch_add(g.n, 1)")
        .threads([0, 4], "wait")
        .thread(5, "bump")
        .stop(StopRule::Iterations(7))
        .build();
    slept_and_traced(&config).unwrap();
}

/// CPU 0's one iteration of `script` over `a`, `b` and `c`, three lines
/// homed on node 3 that no cache holds (each read is a miss to memory),
/// with `buffers` misses in flight: the iteration's cycles, and the log.
fn misses(buffers: u32, script: &str) -> (u64, testkit::Recorder) {
    let machine = sim_core::topology::MachineSpec {
        outstanding_misses: buffers,
        ..small_machine(Protocol::Mesi, Lookup::Home)
    };
    let (_, rec) = Setup::new(machine)
        .structs(vec![line_struct(), value_struct()])
        .instances(vec![
            global("a", "line", 3),
            global("b", "line", 3),
            global("c", "line", 3),
            global("s", "vals", 3),
        ])
        .script("r", script)
        .threads([0], "r")
        .stop(StopRule::Iterations(1))
        .run();
    let length = first_iteration_cycles(&rec);
    (length, rec)
}

/// The latency of one read of a line no cache holds, from node 3.
fn one_miss() -> u64 {
    let (_, rec) = misses(1, "let x = a.v");
    let load = rec.of_cpu(0)[0];
    let report = load.report.as_ref().expect("a miss");
    report.done.get() - report.issued.get()
}

#[test]
fn independent_misses_overlap_up_to_the_miss_buffers() {
    let miss = one_miss();
    assert!(miss > 100, "a read from memory: {miss}");
    // The three loads are issued before the additions use their values.
    let script = "let x = a.v + (b.v + c.v)";
    let (one, rec_one) = misses(1, script);
    let (two, _) = misses(2, script);
    let (three, rec_three) = misses(3, script);
    // One buffer: each miss waits for the one before (and a cycle to issue).
    assert!(one >= 3 * miss, "{one} vs 3 x {miss}");
    // Two: the third waits for the first; three: all at once.
    assert!(
        two >= 2 * miss && two < 2 * miss + 10,
        "{two} vs 2 x {miss}"
    );
    assert!(three >= miss && three < miss + 10, "{three} vs {miss}");
    // The trace shows them in flight together, and the waits.
    let in_flight: Vec<u32> = rec_three
        .of_cpu(0)
        .iter()
        .map(|a| a.misses_in_flight)
        .collect();
    assert_eq!(in_flight, [1, 2, 3]);
    assert!(rec_three
        .log
        .iter()
        .any(|s| matches!(s, Seen::LoadWait(0, ..))));
    // The same values either way.
    let values =
        |rec: &testkit::Recorder| -> Vec<i64> { rec.of_cpu(0).iter().map(|a| a.value).collect() };
    assert_eq!(values(&rec_one), values(&rec_three));
}

#[test]
fn a_value_needed_at_once_costs_what_a_blocking_load_did() {
    // A branch on each value: nothing overlaps, however many buffers.
    let script = "let x = 0\nif a.v == 0 { x = b.v }\nif x == 0 { x = c.v }";
    let (one, _) = misses(1, script);
    let (many, _) = misses(12, script);
    assert_eq!(one, many);
    assert!(one >= 3 * one_miss());
}

#[test]
fn work_goes_on_while_a_miss_is_in_flight() {
    let miss = one_miss();
    let (length, _) = misses(4, "let x = a.v\nwork 50\nlet y = x + 1");
    // The work hides under the miss: one miss, not a miss and the work.
    assert!(length >= miss && length < miss + 10, "{length} vs {miss}");
    let (longer, _) = misses(
        4,
        &format!("let x = a.v\nwork {}\nlet y = x + 1", miss + 100),
    );
    assert!(longer >= miss + 100 && longer < miss + 110, "{longer}");
}

#[test]
fn loads_to_a_line_being_fetched_share_the_fetch() {
    let miss = one_miss();
    // s.q and s.w share a line: one transaction, the second load waits for it.
    let (length, rec) = misses(4, "let x = s.q + s.w");
    let loads = rec.of_cpu(0);
    assert_eq!(loads.len(), 2);
    let routes: Vec<bool> = loads
        .iter()
        .map(|a| a.report.as_ref().is_some_and(|r| r.is_hit()))
        .collect();
    // The first misses, the second is answered by the line on its way.
    assert_eq!(routes, [false, true]);
    assert!(length >= miss && length < miss + 10, "{length} vs {miss}");
    // The shared fetch takes no buffer of its own: with one buffer, a third
    // load to another line still waits only for the first.
    let (one, _) = misses(1, "let x = s.q + (s.w + a.v)");
    assert!(
        one >= 2 * miss && one < 2 * miss + 10,
        "{one} vs 2 x {miss}"
    );
}

#[test]
fn an_atomic_waits_for_every_miss_in_flight() {
    // x86: a locked instruction orders every earlier load.
    let (_, rec) = misses(
        4,
        "let x = a.v\nlet y = b.v\nfetch_add(c.v, 1)\nlet z = x + y",
    );
    let accesses = rec.of_cpu(0);
    let done_of = |k: usize| accesses[k].report.as_ref().unwrap().done;
    let atomic = accesses[2].report.as_ref().unwrap();
    assert!(matches!(accesses[2].kind, AccessKind::Atomic(_)));
    assert!(atomic.issued >= done_of(0).max(done_of(1)));
    // So does the iteration's end: its cycles are its loads' too.
    let (length, _) = misses(4, "let x = a.v");
    assert!(length >= one_miss());
}

// ---------------------------------------------------------------------------
// The reorder window: going on past predicted branches
// ---------------------------------------------------------------------------

/// A core with a reorder window of `window` entries (`dispatch_width` 2,
/// `mispredict_penalty_cycles` `penalty`) and 12 miss buffers.
fn windowed(window: u32, penalty: u32) -> sim_core::topology::MachineSpec {
    sim_core::topology::MachineSpec {
        outstanding_misses: 12,
        reorder_window_entries: window,
        dispatch_width: 2,
        mispredict_penalty_cycles: penalty,
        ..small_machine(Protocol::Mesi, Lookup::Home)
    }
}

/// CPU 0's one iteration of `script` on `machine`, over `a`, `b` and `c`
/// (one line each) and `w[0..16]` (a line each), all homed on node 3 and
/// in no cache: the iteration's cycles, and the log.
fn walk(machine: sim_core::topology::MachineSpec, script: &str) -> (u64, testkit::Recorder) {
    let (_, rec) = Setup::new(machine)
        .structs(vec![line_struct()])
        .instances(vec![
            global("a", "line", 3),
            global("b", "line", 3),
            global("c", "line", 3),
            models::layout::InstanceSpec {
                count: 16,
                ..global("w", "line", 3)
            },
        ])
        .script("r", script)
        .threads([0], "r")
        .stop(StopRule::Iterations(1))
        .run();
    let length = first_iteration_cycles(&rec);
    (length, rec)
}

/// A walk over twelve lines, each loaded, compared and branched on at once
/// (`drain_all_stock`'s shape). Every value is 0, so the branch skips the
/// body every time: after its first run, the predictor (the direction the
/// branch took last time) has it right.
const WALK: &str =
    "let k = 0\nlet n = 0\nwhile k < 12 {\n  if w[k].v == 7 { n = n + 1 }\n  k = k + 1\n}";

#[test]
fn a_walk_of_branches_on_misses_overlaps_up_to_the_window() {
    let (miss, _) = walk(windowed(0, 0), "let x = a.v");
    assert!(miss > 100, "a read from memory: {miss}");
    // No window: each branch waits for its load.
    let (serial, _) = walk(windowed(0, 0), WALK);
    assert!(serial >= 12 * miss, "{serial} vs 12 x {miss}");
    // A window that holds the whole walk: the first branch is mispredicted
    // (it waits for its load), the other eleven loads all overlap.
    let (wide, rec) = walk(windowed(1000, 0), WALK);
    assert!(
        wide >= 2 * miss && wide < 2 * miss + 200,
        "{wide} vs 2 x {miss}"
    );
    let most_in_flight = rec.of_cpu(0).iter().map(|a| a.misses_in_flight).max();
    assert_eq!(most_in_flight, Some(11));
    // A window of about two iterations of the walk (13 operations each):
    // the CPU waits for the oldest load whenever the window is full, so
    // about two loads overlap.
    let (narrow, rec) = walk(windowed(28, 0), WALK);
    assert!(
        narrow < serial && narrow > wide,
        "{narrow}: {wide}..{serial}"
    );
    assert!(narrow >= 5 * miss, "{narrow} vs 5 x {miss}");
    let most_in_flight = rec.of_cpu(0).iter().map(|a| a.misses_in_flight).max();
    assert!(most_in_flight <= Some(3), "{most_in_flight:?}");
    // The same values, however far the CPU went on.
    let loaded =
        |rec: &testkit::Recorder| -> Vec<i64> { rec.of_cpu(0).iter().map(|a| a.value).collect() };
    assert_eq!(loaded(&rec), loaded(&walk(windowed(0, 0), WALK).1));
}

#[test]
fn a_load_through_an_arriving_index_issues_when_it_arrives_and_the_cpu_goes_on() {
    // `w[i]`'s index is `a.v`, a miss; `b.v` and `c.v` depend on nothing.
    let script = "let i = a.v\nlet x = w[i].v\nlet y = b.v\nlet z = c.v";
    let times = |rec: &testkit::Recorder| -> Vec<(u64, u64)> {
        rec.of_cpu(0)
            .iter()
            .map(|access| {
                let report = access.report.as_ref().expect("every load misses");
                (report.issued.get(), report.done.get())
            })
            .collect()
    };
    // Without a window the CPU waits for the index at the dependent load:
    // every load after `a.v` issues once it has arrived.
    let (_, rec) = walk(windowed(0, 0), script);
    let plain = times(&rec);
    assert_eq!(plain.len(), 4);
    let index_arrives = plain[0].1;
    assert!(
        plain[1..]
            .iter()
            .all(|&(issued, _)| issued >= index_arrives),
        "{plain:?}"
    );
    // With one, the dependent load issues exactly when its index arrives,
    // and the two loads after it issue before that.
    let (_, rec) = walk(windowed(1000, 0), script);
    let overlapped = times(&rec);
    assert_eq!(overlapped.len(), 4);
    let index_arrives = overlapped[0].1;
    let at_arrival = overlapped
        .iter()
        .filter(|&&(issued, _)| issued == index_arrives)
        .count();
    let before = overlapped
        .iter()
        .filter(|&&(issued, _)| issued < index_arrives)
        .count();
    assert_eq!((at_arrival, before), (1, 3), "{overlapped:?}");
}

#[test]
fn a_mispredicted_branch_waits_for_its_value_and_pays_the_penalty() {
    // `a.v == 7` is false: the branch skips the body, where the predictor
    // guessed a branch never run would not.
    let wrong = "let x = 0\nif a.v == 7 { x = 1 }\nwork 500";
    let (free, _) = walk(windowed(1000, 0), wrong);
    let (paid, rec) = walk(windowed(1000, 40), wrong);
    assert_eq!(paid, free + 40);
    // It waited for the load before the work began: the work did not hide
    // under the miss.
    let load = rec.of_cpu(0)[0].report.as_ref().unwrap().clone();
    assert!(paid >= (load.done.get() - load.issued.get()) + 500 + 40);
    // Guessed right (`a.v == 0` is true: the body runs), the CPU goes on
    // into the work under the miss, and the penalty is not paid.
    let right = "let x = 0\nif a.v == 0 { x = 1 }\nwork 500";
    let (ahead, _) = walk(windowed(1000, 40), right);
    assert!(ahead < free, "{ahead} vs {free}");
}

#[test]
fn a_store_behind_a_pending_branch_drains_after_the_miss_arrives() {
    let script = "if a.v == 0 { b.v = 5 }\nlet y = c.v";
    let (_, rec) = walk(windowed(1000, 0), script);
    let accesses = rec.of_cpu(0);
    let load = accesses[0].report.as_ref().unwrap();
    let drain = accesses
        .iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .expect("the store drains");
    // Posted before the load's line arrived (the CPU went on past the
    // branch), but drained only after it: x86-TSO.
    let posted = rec
        .log
        .iter()
        .find_map(|s| match s {
            Seen::StorePosted(0, at, ..) => Some(*at),
            _ => None,
        })
        .expect("posted to the store buffer");
    assert!(
        posted < load.done.get(),
        "posted {posted}, load done {}",
        load.done
    );
    assert!(
        drain.report.as_ref().unwrap().issued >= load.done,
        "drain {} before {}",
        drain.report.as_ref().unwrap().issued,
        load.done
    );
    // The load after the store went on too: it overlaps the first.
    let last = accesses
        .iter()
        .rfind(|a| a.kind == AccessKind::Load)
        .unwrap();
    assert!(last.report.as_ref().unwrap().issued < load.done);
    // Without a window, the branch waits and the store drains at once.
    let (_, old) = walk(windowed(0, 0), script);
    let old_load = old.of_cpu(0)[0].report.as_ref().unwrap().done;
    let old_drain = old
        .of_cpu(0)
        .into_iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .unwrap()
        .report
        .as_ref()
        .unwrap()
        .issued;
    assert!(old_drain >= old_load);
}

#[test]
fn a_store_after_a_load_in_flight_waits_for_it_in_the_buffer() {
    let (_, rec) = walk(windowed(1000, 0), "let x = a.v\nb.v = 1\nlet y = x");
    let accesses = rec.of_cpu(0);
    let load = accesses[0].report.as_ref().unwrap();
    let drain = accesses
        .iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .expect("the store drains");
    assert!(drain.report.as_ref().unwrap().issued >= load.done);
    // Without a window (the old model), it drains at once.
    let (_, old) = walk(windowed(0, 0), "let x = a.v\nb.v = 1\nlet y = x");
    let old = old.of_cpu(0);
    let drain = old
        .iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .unwrap();
    assert!(drain.report.as_ref().unwrap().issued < old[0].report.as_ref().unwrap().done);
}

#[test]
fn work_fills_the_window_at_the_dispatch_width() {
    let (miss, _) = walk(windowed(0, 0), "let x = a.v");
    // 100 entries at 2 a cycle: 50 cycles of work fit under the miss,
    // then the window is full until the line arrives.
    let (length, _) = walk(windowed(100, 0), "let x = a.v\nwork 400\nlet y = x");
    assert!(length >= miss + 400 - 50, "{length} vs {miss} + 350");
    assert!(length < miss + 400 - 40, "{length} vs {miss} + 360");
    // A window that holds the work: it hides under the miss.
    let (hidden, _) = walk(windowed(4000, 0), "let x = a.v\nwork 100\nlet y = x");
    assert!(hidden < miss + 10, "{hidden} vs {miss}");
}

#[test]
fn a_spin_waits_exit_is_mispredicted() {
    // CPU 0 spins on `a.v`, a PAUSE-like `work` in its loop (hits while it
    // waits: each goes round again);
    // CPU 1 sets it after a while. The re-read that finds it set misses,
    // and the loop's branch, which went round last time, is guessed wrong:
    // the spinner waits for the line and pays the penalty, as a real
    // spin-wait's exit does. (Its re-reads are 1300 cycles apart, so the one
    // that finds the flag set comes after the writer's transaction rather
    // than queued behind it.)
    let spin = |penalty: u32| -> u64 {
        let (_, rec) = Setup::new(windowed(1000, penalty))
            .structs(vec![line_struct()])
            .instances(vec![global("a", "line", 3)])
            .script("spin", "while a.v == 0 {\n  work 1300\n}\n")
            .script("set", "work 2000\na.v = 1\n")
            .threads([0], "spin")
            .threads([8], "set")
            .stop(StopRule::Iterations(1))
            .run();
        first_iteration_cycles(&rec)
    };
    let (free, paid) = (spin(0), spin(40));
    assert!(free > 2000, "{free}");
    assert_eq!(paid, free + 40);
}

/// `windowed`, with locked instructions executing speculatively or not.
fn speculating(window: u32, lock_rfo_ahead: bool) -> sim_core::topology::MachineSpec {
    sim_core::topology::MachineSpec {
        lock_rfo_ahead,
        ..windowed(window, 0)
    }
}

/// Twelve locked adds, each on a line of its own (`w`, homed on node 3).
const LOCKED_WALK: &str = "let k = 0\nwhile k < 12 {\n  fetch_add(w[k].v, 1)\n  k = k + 1\n}";

#[test]
fn locked_instructions_after_a_waiting_one_fetch_ahead_where_locks_speculate() {
    let (miss, _) = walk(windowed(0, 0), "fetch_add(a.v, 1)");
    assert!(miss > 100, "a locked add from memory: {miss}");
    let prefetches = |rec: &testkit::Recorder| {
        rec.of_cpu(0)
            .iter()
            .filter(|a| a.kind.is_prefetch())
            .count()
    };
    // No window: each locked add waits for its line in turn.
    let (serial, rec) = walk(windowed(0, 0), LOCKED_WALK);
    assert!(serial >= 12 * miss, "{serial} vs 12 x {miss}");
    assert_eq!(prefetches(&rec), 0);
    // A window, but locked instructions do not speculate: the run ahead of
    // the first waiting add stops at the next one, so nothing overlaps.
    let (stopped, rec) = walk(speculating(1000, false), LOCKED_WALK);
    assert_eq!(stopped, serial);
    assert_eq!(prefetches(&rec), 0);
    // Locked instructions speculate: while the first add waits for its
    // line, the eleven others' lines are requested for ownership, and each
    // of them then hits at its turn.
    let (ahead, rec) = walk(speculating(1000, true), LOCKED_WALK);
    assert!(ahead < 3 * miss, "{ahead} vs 3 x {miss}");
    assert_eq!(prefetches(&rec), 11);
    let adds = atomics(&rec);
    assert_eq!(adds.len(), 12);
    assert!(adds[1..]
        .iter()
        .all(|a| a.report.as_ref().unwrap().latency_cycles() < 40));
    // The window bounds it: 28 entries hold about four turns of the loop
    // (the add, its operands, the count and the back-edge).
    let (narrow, rec) = walk(speculating(28, true), LOCKED_WALK);
    assert!(
        narrow > ahead && narrow < serial,
        "{narrow}: {ahead}..{serial}"
    );
    assert!(prefetches(&rec) < 11, "{}", prefetches(&rec));
    // So do the miss buffers: one left, none to fetch ahead with.
    let one_buffer = sim_core::topology::MachineSpec {
        outstanding_misses: 1,
        ..speculating(1000, true)
    };
    assert_eq!(walk(one_buffer, LOCKED_WALK).0, serial);
    // The same values whatever ran ahead: each add read 0 and wrote 1.
    let values = |rec: &testkit::Recorder| -> Vec<(i64, Option<i64>)> {
        atomics(rec)
            .iter()
            .map(|a| (a.value, a.new_value))
            .collect()
    };
    assert_eq!(values(&rec), values(&walk(windowed(0, 0), LOCKED_WALK).1));
}

#[test]
fn loads_after_a_waiting_locked_instruction_fetch_their_lines_under_it() {
    // A locked add that misses, then three loads of lines of their own.
    let script = "fetch_add(a.v, 1)\nlet x = w[0].v + w[1].v + w[2].v";
    let (plain, _) = walk(windowed(0, 0), script);
    let (ahead, rec) = walk(speculating(1000, false), script);
    let (miss, _) = walk(windowed(0, 0), "fetch_add(a.v, 1)");
    // The loads' lines were fetched while the add waited: at their turn
    // they hit, instead of missing after it.
    assert!(ahead + miss / 2 < plain, "{ahead} vs {plain}");
    let loads: Vec<_> = rec
        .of_cpu(0)
        .into_iter()
        .filter(|a| a.kind == AccessKind::Load)
        .collect();
    assert_eq!(loads.len(), 3);
    let add = &atomics(&rec)[0];
    for load in &loads {
        let report = load.report.as_ref().unwrap();
        assert!(report.issued >= add.report.as_ref().unwrap().done);
        assert!(report.latency_cycles() < 40, "{report:?}");
    }
}

#[test]
fn a_line_fetched_ahead_and_taken_meanwhile_is_read_again_at_its_turn() {
    // CPU 0's locked add on `a` (homed far away, node 3) waits; the load
    // after it fetches `b` (homed on CPU 0's node) ahead. CPU 1 writes `b`
    // while the add still waits: CPU 0's load must read the new value at
    // its turn, missing again (x86-TSO: a load is not ordered before an
    // older locked instruction).
    let run = |writer: &str| {
        Setup::new(speculating(1000, false))
            .structs(vec![line_struct()])
            .instances(vec![global("a", "line", 3), global("b", "line", 0)])
            .script("r", "fetch_add(a.v, 1)\nlet x = b.v")
            .script("w", writer)
            .thread(0, "r")
            .thread(1, "w")
            .stop(StopRule::Iterations(1))
            .run()
            .1
    };
    let quiet = run("work 1");
    let of = |rec: &testkit::Recorder, kind: AccessKind| -> Access {
        rec.of_cpu(0)
            .into_iter()
            .find(|a| a.kind == kind)
            .expect("the access")
            .clone()
    };
    let prefetch = of(&quiet, AccessKind::RunAhead);
    let add = atomics(&quiet)[0].clone();
    let load = of(&quiet, AccessKind::Load);
    let fetched = prefetch.report.as_ref().unwrap().done.get();
    let add_done = add.report.as_ref().unwrap().done.get();
    assert!(fetched < add_done, "{fetched} vs {add_done}");
    // Undisturbed, the load hits the line fetched ahead, and reads 0.
    assert_eq!(load.value, 0);
    assert!(load.report.as_ref().unwrap().latency_cycles() < 40);
    // CPU 1 stores 9 into `b` between the fetch and the add's end.
    let writer = format!("work {}\nb.v = 9\nfence", (fetched + add_done) / 2 - 100);
    let busy = run(&writer);
    let drain = busy
        .of_cpu(1)
        .into_iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .expect("CPU 1's store drains")
        .clone();
    let load = of(&busy, AccessKind::Load);
    let report = load.report.as_ref().unwrap();
    assert!(
        drain.report.as_ref().unwrap().done <= report.issued,
        "the store drained before the load's turn"
    );
    assert_eq!(load.value, 9);
    assert!(report.latency_cycles() >= 40, "{report:?}");
}

// ---------------------------------------------------------------------------
// Loads queued at a busy line's home: the CPU goes on
// ---------------------------------------------------------------------------

/// A line with a field read (`v`, always 0) and a field others keep
/// incrementing (`n`): its home is busy with their transactions.
fn busy_struct() -> StructSpec {
    let mut v = field("v", "long");
    v.align = Some(64);
    strukt("busy", vec![v, field("n", "long")])
}

/// CPU 0's one iteration of `script` on `machine`, over `a`, `b` (lines no
/// one else touches) and `w[0..4]`, four lines whose `n` two CPUs each keep
/// incrementing with atomics all through (so a read of a `w` line usually
/// queues at its home behind them), all homed on node 3: the iteration's
/// cycles, and the log.
fn busy_walk(machine: sim_core::topology::MachineSpec, script: &str) -> (u64, testkit::Recorder) {
    let hammers: Vec<String> = (0..4)
        .map(|k| format!("repeat 300 {{\n  fetch_add(w[{k}].n, 1)\n}}"))
        .collect();
    let names = ["h0", "h1", "h2", "h3"];
    let mut setup = Setup::new(machine)
        .structs(vec![line_struct(), busy_struct()])
        .instances(vec![
            global("a", "line", 3),
            global("b", "line", 3),
            models::layout::InstanceSpec {
                count: 4,
                ..global("w", "busy", 3)
            },
        ])
        .script("r", script)
        .threads([0], "r");
    for (k, body) in hammers.iter().enumerate() {
        setup = setup
            .script(names[k], body)
            .threads([8 + k as u32, 24 + k as u32], names[k]);
    }
    let (_, rec) = setup.stop(StopRule::Iterations(1)).run();
    let length = first_iteration_cycles(&rec);
    (length, rec)
}

/// A walk over the four busy lines, three rounds: each line loaded,
/// compared and branched on (`v` is always 0: the branch skips its body
/// every time, so the predictor learns it).
const BUSY_WALK: &str = "work 3000\nlet k = 0\nlet n = 0\nwhile k < 12 {\n  if w[k % 4].v == 7 { n = n + 1 }\n  k = k + 1\n}";

/// CPU 0's loads that queued at their home (served after a wait there).
fn queued_loads(rec: &testkit::Recorder) -> Vec<&Access> {
    rec.of_cpu(0)
        .into_iter()
        .filter(|a| {
            a.kind == AccessKind::Load && a.report.as_ref().is_some_and(|r| r.started > r.issued)
        })
        .collect()
}

#[test]
fn a_walk_over_busy_lines_overlaps_its_queued_loads_up_to_the_window() {
    // No window (the old model): every queued load holds its CPU until the
    // home serves it and its line arrives.
    let (serial, old) = busy_walk(windowed(0, 0), BUSY_WALK);
    let queued = queued_loads(&old);
    assert!(queued.len() >= 6, "{} loads queued", queued.len());
    assert!(queued.iter().all(|a| a.stall_cycles > 0), "{queued:?}");
    // The figures of the model before queued loads went on (main at
    // b565001, the same test): exactly.
    assert_eq!((serial, queued.len()), OLD_BUSY_WALK);
    // A window that holds the walk: the queued loads do not hold the CPU,
    // and several are queued or arriving at once.
    let (wide, rec) = busy_walk(windowed(1000, 0), BUSY_WALK);
    let queued = queued_loads(&rec);
    assert!(queued.len() >= 6, "{} loads queued", queued.len());
    assert!(queued.iter().all(|a| a.stall_cycles == 0), "{queued:?}");
    let most_in_flight = rec.of_cpu(0).iter().map(|a| a.misses_in_flight).max();
    assert!(most_in_flight >= Some(3), "{most_in_flight:?}");
    // (The walk after its 3000 cycles of work: less than half.)
    assert!((wide - 3000) * 2 < serial - 3000, "{wide} vs {serial}");
    // A window of about one round of the walk: in between.
    let (narrow, rec) = busy_walk(windowed(28, 0), BUSY_WALK);
    println!("busy walk: serial {serial}, wide {wide}, narrow {narrow}");
    assert!(
        narrow > wide && narrow < serial,
        "{narrow}: {wide}..{serial}"
    );
    let most_in_flight = rec.of_cpu(0).iter().map(|a| a.misses_in_flight).max();
    assert!(most_in_flight <= Some(3), "{most_in_flight:?}");
    // Every value read is the field's (0), however far the CPU went on.
    assert!(rec
        .of_cpu(0)
        .iter()
        .filter(|a| a.kind == AccessKind::Load)
        .all(|a| a.value == 0));
}

/// What `busy_walk(windowed(0, 0), BUSY_WALK)` gave before this change:
/// CPU 0's iteration cycles, and its loads that queued.
const OLD_BUSY_WALK: (u64, usize) = (6745, 12);

#[test]
fn a_branch_on_a_queued_loads_value_waits_for_the_home_to_serve_it() {
    // The load queues; the branch needs its value, which is read only when
    // the home serves the load: the CPU waits until then (and the branch,
    // predicted right from then on, does not wait for the line's arrival).
    let (_, rec) = busy_walk(
        windowed(1000, 0),
        "work 3000\nif w[0].v == 7 { a.v = 1 }\nlet y = b.v",
    );
    let accesses = rec.of_cpu(0);
    // (Reported when served, after the lines requested meanwhile.)
    let first = *accesses
        .iter()
        .find(|a| a.kind == AccessKind::Load)
        .expect("w[0] loaded");
    let served = first.report.as_ref().unwrap();
    assert!(served.started > served.issued, "not queued: {served:?}");
    assert_eq!(first.stall_cycles, 0);
    let next = accesses
        .iter()
        .find(|a| a.address != first.address && a.kind == AccessKind::Load)
        .expect("the load of b");
    assert!(
        next.report.as_ref().unwrap().issued >= served.started,
        "b read at {} before the home served w[0] at {}",
        next.report.as_ref().unwrap().issued,
        served.started
    );
    // The wait is in the log, ending no earlier than the serve.
    assert!(rec
        .log
        .iter()
        .any(|s| matches!(s, Seen::LoadWait(0, _, until, _) if *until >= served.started.get())));
    // Without the branch, the next load does not wait for the serve.
    let (_, rec) = busy_walk(
        windowed(1000, 0),
        "work 3000\nlet x = w[0].v\nlet y = b.v\nlet z = x + y",
    );
    let accesses = rec.of_cpu(0);
    let served = accesses
        .iter()
        .find(|a| a.report.as_ref().is_some_and(|r| r.started > r.issued))
        .expect("w[0] queued")
        .report
        .clone()
        .unwrap();
    let b = accesses
        .iter()
        .find(|a| {
            a.kind == AccessKind::Load
                && a.report.as_ref().unwrap().started == a.report.as_ref().unwrap().issued
        })
        .expect("b read at once");
    assert!(b.report.as_ref().unwrap().issued < served.started);
}

#[test]
fn a_store_behind_a_queued_load_waits_for_the_serve() {
    let (_, rec) = busy_walk(
        windowed(1000, 0),
        "work 3000\nlet x = w[0].v\nb.v = 1\nlet y = x",
    );
    let served = rec.of_cpu(0)[0].report.clone().unwrap();
    assert!(served.started > served.issued, "not queued: {served:?}");
    let posted = rec
        .log
        .iter()
        .find_map(|s| match s {
            Seen::StorePosted(0, at, ..) => Some(*at),
            _ => None,
        })
        .expect("posted");
    assert!(
        posted >= served.started.get(),
        "posted {posted}, served {}",
        served.started
    );
    let drain = rec
        .of_cpu(0)
        .into_iter()
        .find(|a| a.kind == AccessKind::StoreDrain)
        .expect("drained");
    assert!(drain.report.as_ref().unwrap().issued >= served.done);
}

/// Message passing under x86-TSO: CPU 1 writes `a` then `w[0].v`; CPU 0,
/// with `a` in its cache, reads `w[0].v` (queued at its home, which four
/// CPUs' atomics keep busy) then `a`. Seeing the flag but not the data is
/// forbidden, however long the flag's load waits at its home while the CPU
/// goes on to read `a` (a hit, whose value is read only after the flag's).
/// The writer's start sweeps the reader's flag load, so that in some runs
/// the data is written between the two loads.
#[test]
fn a_load_behind_a_queued_load_reads_its_value_after_it() {
    let (mut flag_seen, mut went_on) = (0, 0);
    for delay in (2600..3800).step_by(11) {
        let reader = "let d = a.v\nwork 3000\nlet f = w[0].v\nlet x = a.v\nb.v = f * 10 + x";
        let writer = format!("work {delay}\na.v = 1\nw[0].v = 1");
        let (_, rec) = Setup::new(windowed(1000, 0))
            .structs(vec![line_struct(), busy_struct()])
            .instances(vec![
                global("a", "line", 3),
                global("b", "line", 3),
                models::layout::InstanceSpec {
                    count: 1,
                    ..global("w", "busy", 3)
                },
            ])
            .script("r", reader)
            .script("wr", &writer)
            .script("h", "repeat 100 {\n  fetch_add(w[0].n, 1)\n}")
            .threads([0], "r")
            .threads([16], "wr")
            .threads([8, 12, 24, 28], "h")
            .stop(StopRule::Iterations(1))
            .run();
        let accesses = rec.of_cpu(0);
        let stored = accesses
            .iter()
            .find(|a| a.kind == AccessKind::StoreDrain)
            .expect("b stored")
            .value;
        assert_ne!(stored, 10, "delay {delay}: the flag seen without the data");
        flag_seen += (stored == 11) as u32;
        let flag = accesses.iter().find(|a| {
            a.kind == AccessKind::Load && a.report.as_ref().is_some_and(|r| r.started > r.issued)
        });
        went_on += flag.is_some_and(|a| a.stall_cycles == 0) as u32;
    }
    assert!(flag_seen > 0 && went_on > 0, "{flag_seen} {went_on}");
}

/// CPU 0's one iteration of `script` (after `work 20`) beside CPU 2 (same
/// L3, another core), whose one locked add on `w.n` fetches `w`'s line
/// from memory at the start, so that CPU 0's read of `w.v` at cycle 20
/// queues at the home behind it; `b` and `c` are lines no one else
/// touches. All homed on node 3, far from both. The iteration's cycles,
/// and the log.
fn behind_one_add(script: &str) -> (u64, testkit::Recorder) {
    behind_one_add_on(windowed(1000, 0), script)
}

/// [`behind_one_add`] on `machine`.
fn behind_one_add_on(
    machine: sim_core::topology::MachineSpec,
    script: &str,
) -> (u64, testkit::Recorder) {
    let (_, rec) = Setup::new(machine)
        .structs(vec![line_struct(), busy_struct()])
        .instances(vec![
            global("w", "busy", 3),
            global("b", "line", 3),
            models::layout::InstanceSpec {
                count: 2,
                ..global("c", "line", 3)
            },
        ])
        .script("r", &format!("work 20\n{script}"))
        .script("h", "fetch_add(w.n, 1)")
        .threads([0], "r")
        .threads([2], "h")
        .stop(StopRule::Iterations(1))
        .run();
    let length = first_iteration_cycles(&rec);
    (length, rec)
}

#[test]
fn a_branch_waiting_for_a_queued_load_fetches_its_predicted_paths_lines() {
    // CPU 0's load of `w.v`, reported when the home served it.
    let queued_load = |rec: &testkit::Recorder| -> Access {
        rec.of_cpu(0)
            .into_iter()
            .find(|a| a.kind == AccessKind::Load)
            .expect("w loaded")
            .clone()
    };
    // The instances in order from `w`'s line, a line each.
    let line = |rec: &testkit::Recorder, name: &str| {
        let k = ["w", "b", "c"].iter().position(|&n| n == name).unwrap();
        let w = queued_load(rec).address;
        w - w % 64 + 64 * k as u64
    };
    // The branch's site never ran, so it is predicted not taken: into the
    // body, which is right here (`w.v` is 0).
    let (length, rec) = behind_one_add("let n = 0\nif w.v != 7 { n = 1 }\nlet y = b.v");
    let accesses = rec.of_cpu(0);
    let queued = queued_load(&rec);
    let served = queued.report.as_ref().unwrap();
    assert!(served.started > served.issued, "not queued: {served:?}");
    // While the branch waited for the home to serve `w`, the line after it
    // was requested.
    let b = line(&rec, "b");
    let ahead = accesses
        .iter()
        .find(|a| a.kind.is_prefetch() && a.address == b)
        .expect("b's line requested ahead");
    let ahead = ahead.report.as_ref().unwrap();
    assert!(ahead.issued < served.started, "{ahead:?} vs {served:?}");
    // So its miss overlaps the wait: the iteration ends before a miss of
    // `b` from the serve would have.
    let miss = ahead.latency_cycles();
    assert!(miss > 100, "b from memory: {miss}");
    assert!(
        length < served.started.get() + miss,
        "{length} vs {} + {miss}",
        served.started
    );
    // The load of `b` itself still reads after `w` (x86-TSO's load order)
    // and reads memory's value.
    let load = accesses
        .iter()
        .find(|a| a.kind == AccessKind::Load && a.address == b)
        .expect("b loaded");
    assert!(load.report.as_ref().unwrap().issued >= served.started);
    assert_eq!((queued.value, load.value), (0, 0));

    // Predicted wrong: the body runs in shadow, fetching `c`'s line, which
    // the CPU never loads; it stays fetched. `b`, after the branch on both
    // paths, is fetched ahead too.
    let (wrong, rec) = behind_one_add("let n = 0\nif w.v == 7 { n = c[0].v }\nlet y = b.v");
    let accesses = rec.of_cpu(0);
    let prefetched = |name: &str| {
        accesses
            .iter()
            .any(|a| a.kind.is_prefetch() && a.address == line(&rec, name))
    };
    assert!(prefetched("c") && prefetched("b"));
    assert!(!accesses
        .iter()
        .any(|a| a.kind == AccessKind::Load && a.address == line(&rec, "c")));
    assert!(wrong < served.started.get() + miss, "{wrong}");

    // Where the shadow cannot go (the branch's body needs `work` of the
    // unknown value), nothing is requested ahead and `b` misses after the
    // serve.
    let (stopped, rec) = behind_one_add("let n = w.v\nwork n\nlet y = b.v");
    assert!(!rec.of_cpu(0).iter().any(|a| a.kind.is_prefetch()));
    assert!(stopped >= served.started.get() + miss, "{stopped}");
    println!(
        "behind one add: served at {}, b's miss {miss}: right {length}, wrong {wrong}, stopped {stopped}",
        served.started
    );
}

#[test]
fn a_demand_load_takes_over_its_cpus_prefetch_still_queued_at_the_home() {
    // `p.a` and `p.b`, the two lines of one 128-byte pair: CPU 2 keeps
    // incrementing `p.b`, so its home is busy. CPU 0's miss on `p.a` sends
    // the adjacent-line prefetcher's read of `p.b`, which queues there;
    // CPU 0's load of `p.b` a few cycles later finds it queued and takes
    // it over (one request, reported as the load's), where it queued a
    // second request before.
    let machine = sim_core::topology::MachineSpec {
        adjacent_line_prefetch: true,
        ..windowed(1000, 0)
    };
    let (_, rec) = Setup::new(machine)
        .structs(vec![pair_struct()])
        .instances(vec![global("p", "pair", 3)])
        .script("r", "work 200\nlet x = p.a\nlet y = p.b")
        .script("h", "repeat 300 {\n  fetch_add(p.b, 1)\n}")
        .threads([0], "r")
        .threads([2], "h")
        .stop(StopRule::Iterations(1))
        .run();
    let accesses = rec.of_cpu(0);
    let load_a = accesses
        .iter()
        .find(|a| a.kind == AccessKind::Load)
        .expect("p.a loaded");
    let (a, b) = (load_a.address, load_a.address + 64);
    assert_eq!(a / 64 % 2, 0, "p.a starts a pair");
    let load_b = accesses
        .iter()
        .find(|x| x.kind == AccessKind::Load && x.address == b)
        .expect("p.b loaded");
    let report = load_b.report.as_ref().expect("p.b missed");
    // Queued at the busy home, from the prefetch's place in its queue.
    assert!(report.started > report.issued, "{report:?}");
    // No prefetch of `p.b` reported: the load took it over.
    assert!(
        !accesses
            .iter()
            .any(|x| x.kind.is_prefetch() && x.address == b),
        "{accesses:#?}"
    );
}

#[test]
fn a_load_whose_address_is_not_read_yet_lets_the_run_ahead_go_past_it() {
    // `c[w.v].v`: the load's index is `w.v`, queued at its home behind
    // CPU 2's add, so the CPU parks at that load. The run ahead leaves the
    // load waiting for its address (no request for `c`) and goes on to
    // `b`, whose line it requests while the home has not served `w` yet.
    let (length, rec) = behind_one_add("let y = c[w.v].v\nlet z = b.v");
    let accesses = rec.of_cpu(0);
    let loads: Vec<&Access> = accesses
        .iter()
        .filter(|a| a.kind == AccessKind::Load)
        .copied()
        .collect();
    let queued = loads[0];
    let served = queued.report.as_ref().unwrap();
    assert!(served.started > served.issued, "not queued: {served:?}");
    // The lines in order from `w`'s: w, b, c[0].
    let w = queued.address - queued.address % 64;
    let (b, c0) = (w + 64, w + 128);
    let ahead: Vec<&Access> = accesses
        .iter()
        .filter(|a| a.kind.is_prefetch())
        .copied()
        .collect();
    assert_eq!(
        ahead.iter().map(|a| a.address).collect::<Vec<_>>(),
        vec![b],
        "only b's line requested ahead: {ahead:?}"
    );
    let ahead = ahead[0].report.as_ref().unwrap();
    assert!(ahead.issued < served.started, "{ahead:?} vs {served:?}");
    // Its miss overlaps the wait: the iteration ends before a miss of `b`
    // after the serve and `c`'s would have.
    let miss = ahead.latency_cycles();
    assert!(miss > 100, "b from memory: {miss}");
    assert!(
        length < served.started.get() + 2 * miss,
        "{length} vs {} + 2 x {miss}",
        served.started
    );
    // The values are the fields' (0), `c[0]` read at its own turn.
    let c_load = loads.iter().find(|a| a.address == c0).expect("c[0] loaded");
    assert!(c_load.report.as_ref().unwrap().issued >= served.started);
    assert!(loads.iter().all(|a| a.value == 0), "{loads:?}");
}

/// The lines CPU 0 requested ahead in `rec` while its first load (`w`'s,
/// queued at its home: asserted) waited to be served, and that load's line.
fn requested_ahead(rec: &testkit::Recorder) -> (Vec<u64>, u64) {
    let accesses = rec.of_cpu(0);
    let queued = accesses
        .iter()
        .find(|a| a.kind == AccessKind::Load)
        .expect("w loaded");
    let served = queued.report.as_ref().unwrap();
    assert!(served.started > served.issued, "not queued: {served:?}");
    let ahead = accesses
        .iter()
        .filter(|a| {
            a.kind == AccessKind::RunAhead
                && a.report.as_ref().is_some_and(|r| r.issued < served.started)
        })
        .map(|a| a.address)
        .collect();
    (ahead, queued.address - queued.address % 64)
}

#[test]
fn a_store_whose_address_is_not_read_yet_lets_the_run_ahead_go_past_it() {
    // `c[w.v].v = 1`: the store's index is `w.v`, queued at its home behind
    // CPU 2's add, so the CPU parks at the store. The store waits for its
    // address in the store buffer, requesting nothing, and the run goes on
    // to `b`, whose line it requests (loads pass older stores whose
    // addresses are unknown).
    let (_, rec) = behind_one_add("c[w.v].v = 1\nlet z = b.v");
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 64], "only b's line requested ahead");
    // The store wrote at its own turn, at its address (c[0]).
    let store = rec
        .of_cpu(0)
        .into_iter()
        .find(|a| matches!(a.kind, AccessKind::Store | AccessKind::StoreDrain))
        .expect("c[0] written")
        .clone();
    assert_eq!((store.address, store.value), (w + 128, 1));
}

#[test]
fn a_locked_instruction_whose_address_is_not_read_yet_is_passed_where_locks_speculate() {
    // `t` is `w.v + 1`, not read yet: the add through it waits for its
    // address. Where locked instructions execute speculatively, the run
    // passes it, requesting nothing for it, and requests `b`; elsewhere it
    // stops there, as at any later locked instruction.
    let script = "let t = w.v + 1\nfetch_add(c[t].v, 1)\nlet z = b.v";
    let (_, rec) = behind_one_add_on(speculating(1000, true), script);
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 64], "only b's line requested ahead");
    let (_, rec) = behind_one_add_on(speculating(1000, false), script);
    let (ahead, _) = requested_ahead(&rec);
    assert_eq!(ahead, Vec::<u64>::new());
}

#[test]
fn a_locked_instruction_adding_a_value_not_read_yet_fetches_its_line_where_locks_speculate() {
    // The add's address is known (`c[0]`), what it adds (`t`) is not read
    // yet: where locked instructions execute speculatively, the run
    // requests its line for ownership and goes on to `b`.
    let script = "let t = w.v + 1\nfetch_add(c[0].v, t)\nlet z = b.v";
    let (_, rec) = behind_one_add_on(speculating(1000, true), script);
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 128, w + 64], "c[0] for the add, then b");
    // The add at its turn adds what `w.v` held plus one.
    let add = rec
        .of_cpu(0)
        .into_iter()
        .find(|a| matches!(a.kind, AccessKind::Atomic(_)))
        .expect("the add")
        .clone();
    assert_eq!(
        (add.address, add.value, add.new_value),
        (w + 128, 0, Some(1))
    );
}

#[test]
fn a_locked_instruction_parked_for_a_queued_older_load_runs_ahead() {
    // The add waits for the older load of `w.v`, queued at its home behind
    // CPU 2's add (a locked instruction waits for every older load). The
    // run ahead of it requests `b`, and the add's own line for ownership
    // only where locked instructions execute speculatively.
    let script = "let y = w.v\nfetch_add(c[0].v, 1)\nlet z = b.v";
    let (_, rec) = behind_one_add_on(speculating(1000, false), script);
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 64], "b's line requested ahead");
    let (_, rec) = behind_one_add_on(speculating(1000, true), script);
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 128, w + 64], "c[0] for the add, then b");
    // Through the value not read yet, the add waits for its address and
    // the run passes it as it passes the waiting locked instruction.
    let script = "fetch_add(c[w.v].v, 1)\nlet z = b.v";
    let (_, rec) = behind_one_add_on(speculating(1000, false), script);
    let (ahead, w) = requested_ahead(&rec);
    assert_eq!(ahead, vec![w + 64], "b's line requested ahead");
}

#[test]
fn a_run_ahead_request_taken_over_by_a_load_frees_its_miss_buffer() {
    // Two miss buffers. CPU 0's locked add on `a` (homed on its own node)
    // waits for its line, and the run ahead of it requests `w`, whose home
    // is busy with CPU 2's add: queued there, a miss buffer counted until
    // the line frees. The load of `w.v` after the add takes that request
    // over (one buffer, the load's), and the branch on its value, not read
    // yet, runs ahead to `b`: a buffer is left for it only if the request
    // taken over no longer counts.
    let machine = sim_core::topology::MachineSpec {
        outstanding_misses: 2,
        ..windowed(1000, 0)
    };
    let (_, rec) = Setup::new(machine)
        .structs(vec![line_struct(), busy_struct()])
        .instances(vec![
            global("w", "busy", 3),
            global("b", "line", 3),
            global("a", "line", 0),
        ])
        .script(
            "r",
            "work 20\nfetch_add(a.v, 1)\nlet n = 0\nif w.v == 7 { n = 1 }\nlet z = b.v",
        )
        .script("h", "fetch_add(w.n, 1)")
        .threads([0], "r")
        .threads([2], "h")
        .stop(StopRule::Iterations(1))
        .run();
    let (ahead, w) = requested_ahead(&rec);
    // `w`'s request was taken over (reported as the load's), and `b`'s
    // went out while the load waited.
    assert_eq!(ahead, vec![w + 64], "b's line requested ahead");
}

#[test]
fn a_load_through_a_pointer_still_arriving_lets_the_run_ahead_of_a_lock_go_past_it() {
    // CPU 1 leaves a pointer to `b.v` in `h.p`. CPU 0's locked add on `a`
    // waits for its line; the run ahead of it requests `h`, whose pointer
    // is then still arriving: the load through it waits for that address
    // (no request for `b`), and the run goes on to `c`, as past a value not
    // read yet.
    let (_, rec) = Setup::new(windowed(1000, 0))
        .structs(vec![line_struct()])
        .instances(vec![
            global("a", "line", 3),
            global("b", "line", 3),
            global("c", "line", 3),
            global("h", "line", 3),
        ])
        .script(
            "r",
            "work 3000\nfetch_add(a.v, 1)\nlet q = h.v\nlet y = *q\nlet z = c.v",
        )
        .script("w", "h.v = &b.v")
        .threads([0], "r")
        .threads([1], "w")
        .stop(StopRule::Iterations(1))
        .run();
    let accesses = rec.of_cpu(0);
    let add = accesses
        .iter()
        .find(|a| matches!(a.kind, AccessKind::Atomic(_)))
        .expect("the add");
    let done = add.report.as_ref().expect("a missed").done;
    let line = |k: u64| add.address - add.address % 64 + 64 * k;
    let mut ahead: Vec<u64> = accesses
        .iter()
        .filter(|a| a.kind == AccessKind::RunAhead)
        .filter(|a| a.report.as_ref().is_some_and(|r| r.issued < done))
        .map(|a| a.address)
        .collect();
    ahead.sort_unstable();
    // a, b, c, h in order, a line each: h and c, not b.
    assert_eq!(ahead, vec![line(2), line(3)]);
}
