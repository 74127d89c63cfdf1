//! The store buffer's RFO prefetch (`MachineSpec::store_rfo_ahead_entries`):
//! stores behind the head have their lines requested for ownership ahead of
//! their drain, up to the core's miss buffers, while the stores themselves
//! are still written one at a time, in program order. x86-TSO holds (the
//! store-buffering and message-passing litmus tests), stores to distinct
//! lines overlap their misses, and a line taken back before its store's
//! turn is requested again with no value lost.

use models::layout::StructSpec;
use sim_core::engine::StopRule;
use sim_core::probe::AccessKind;
use sim_core::topology::{Lookup, MachineSpec, Protocol};
use testkit::{address, field, global, per_cpu, small_machine, strukt, Setup};

/// A struct that fills a line of its own.
fn line_struct() -> StructSpec {
    let mut v = field("v", "long");
    v.align = Some(64);
    strukt("line", vec![v])
}

/// Two fields on one line, written by different CPUs.
fn pair_struct() -> StructSpec {
    let mut a = field("a", "long");
    a.align = Some(64);
    strukt("pair", vec![a, field("b", "long")])
}

/// The test machine with `misses` miss buffers and the buffer requesting
/// `ahead` entries' lines ahead of their drain (0: none).
fn machine(ahead: u32, misses: u32) -> MachineSpec {
    MachineSpec {
        outstanding_misses: misses,
        store_rfo_ahead_entries: ahead,
        ..small_machine(Protocol::Mesif, Lookup::Local)
    }
}

/// CPU 0 stores to `lines` lines of its own (homed far away, on node 3,
/// in no cache), then fences: the iteration's cycles, the drains'
/// latencies and how many lines the buffer requested ahead.
fn stream(spec: MachineSpec, lines: u32) -> (u64, Vec<u64>, usize) {
    let script =
        format!("let k = 0\nwhile k < {lines} {{\n  w[k].v = k + 1\n  k = k + 1\n}}\nfence");
    let (_, rec) = Setup::new(spec)
        .structs(vec![line_struct()])
        .instances(vec![models::layout::InstanceSpec {
            count: 16,
            ..global("w", "line", 3)
        }])
        .script("s", &script)
        .thread(0, "s")
        .stop(StopRule::Iterations(1))
        .run();
    let cycles = rec
        .log
        .iter()
        .find_map(|seen| match seen {
            testkit::Seen::Iteration(0, 0, start, end) => Some(end - start),
            _ => None,
        })
        .expect("CPU 0 finished");
    let accesses = rec.of_cpu(0);
    let drains: Vec<_> = accesses
        .iter()
        .filter(|a| a.kind == AccessKind::StoreDrain)
        .collect();
    // Whatever was requested ahead, the stores drain in program order.
    let values: Vec<i64> = drains.iter().map(|a| a.value).collect();
    assert_eq!(values, (1..=i64::from(lines)).collect::<Vec<_>>());
    let latencies = drains
        .iter()
        .map(|a| a.report.as_ref().unwrap().latency_cycles())
        .collect();
    let ahead = accesses
        .iter()
        .filter(|a| a.kind == AccessKind::StoreRfoAhead)
        .count();
    (cycles, latencies, ahead)
}

#[test]
fn a_writer_streaming_to_distinct_lines_overlaps_their_rfos_up_to_the_miss_buffers() {
    let (serial, latencies, ahead) = stream(machine(0, 12), 8);
    assert_eq!(ahead, 0);
    let miss = latencies[0];
    assert!(miss > 100, "a store's line from memory: {miss}");
    // Off: each drain waits for its own line in turn.
    assert!(serial >= 8 * miss, "{serial} vs 8 x {miss}");
    assert!(latencies.iter().all(|&l| l >= miss));
    // On, with buffers to spare: the seven lines behind the head are
    // requested as their stores enter, and their drains hit.
    let (overlapped, latencies, ahead) = stream(machine(12, 12), 8);
    assert_eq!(ahead, 7);
    assert!(overlapped < 2 * miss, "{overlapped} vs 2 x {miss}");
    assert!(
        latencies[1..].iter().all(|&l| l < miss / 2),
        "{latencies:?}"
    );
    // The miss buffers bound it: with two (the head's drain holds one),
    // one line is requested ahead at a time.
    let (two, _, ahead_two) = stream(machine(12, 2), 8);
    assert!(
        overlapped < two && two < serial,
        "{overlapped} < {two} < {serial}"
    );
    assert!((1..8).contains(&ahead_two), "{ahead_two}");
    // And so does the entry count: two entries past the head.
    let (near, _, _) = stream(machine(2, 12), 8);
    assert!(
        overlapped < near && near < serial,
        "{overlapped} < {near} < {serial}"
    );
    // One miss buffer: the head's drain holds it, nothing goes ahead.
    let (one, _, ahead_one) = stream(machine(12, 1), 8);
    assert_eq!((one, ahead_one), (serial, 0));
}

/// The store-buffering litmus test (as in engine.rs), with the lines of
/// the buffered stores requested ahead: each CPU's first store misses on a
/// line of its own homed far away (`pa`, `pb` on node 3), its store to x
/// (y) waits behind it, and its load of y (x) runs meanwhile. The line of
/// x (y) is held early, but holding it writes nothing: the other CPU's load
/// takes it back and reads 0, so TSO's both-zero outcome stays reachable,
/// and a fence still forbids it.
fn store_buffering(fenced: bool, b_delay: u64) -> (i64, i64) {
    let fence = if fenced { "fence\n" } else { "" };
    let a = format!("pa.v = 1\nx.v = 1\n{fence}let r1 = y.v");
    let b = format!("work {b_delay}\npb.v = 1\ny.v = 1\n{fence}let r2 = x.v");
    let setup = Setup::new(machine(12, 12))
        .structs(vec![line_struct()])
        .instances(vec![
            global("x", "line", 0),
            global("y", "line", 2),
            global("pa", "line", 3),
            global("pb", "line", 3),
        ])
        .script("a", &a)
        .script("b", &b)
        .thread(0, "a")
        .thread(8, "b");
    let config = setup.build();
    let (_, rec) = setup.run();
    assert!(
        rec.accesses().any(|a| a.kind == AccessKind::StoreRfoAhead),
        "x or y requested ahead"
    );
    let r1 = rec.loads(0, address(&config, "y", 0, "v"));
    let r2 = rec.loads(8, address(&config, "x", 0, "v"));
    assert_eq!((r1.len(), r2.len()), (1, 1));
    (r1[0], r2[0])
}

#[test]
fn store_buffering_litmus_keeps_its_tso_outcomes_with_rfo_ahead() {
    let delays = [0, 1, 2, 5, 50, 100, 200, 210, 300, 500, 1000];
    // Unfenced: both loads may read 0 (the stores still sit in the
    // buffers when the loads run), whatever lines are held.
    let both_zero = delays
        .iter()
        .filter(|&&delay| store_buffering(false, delay) == (0, 0))
        .count();
    assert!(both_zero > 0, "TSO's store-buffering outcome never seen");
    for delay in delays {
        let (r1, r2) = store_buffering(true, delay);
        assert!(
            r1 == 1 || r2 == 1,
            "delay {delay}: fenced SB gave r1 = {r1}, r2 = {r2}"
        );
    }
}

#[test]
fn message_passing_never_shows_the_flag_without_the_data_with_rfo_ahead() {
    // The writer's data store waits behind a miss (`pad`), and its flag's
    // line, homed near the reader, is requested ahead and may arrive first:
    // the flag is still written after the data. The reader polls the flag,
    // then reads the data; its start sweeps the writer's drains.
    let (mut flag_seen, mut requested_ahead) = (0, 0);
    for delay in (0..1600).step_by(37) {
        let writer = "pad.v = 1\nd.v = 1\nf.v = 1";
        let reader = format!("work {delay}\nlet flag = f.v\nlet data = d.v");
        let setup = Setup::new(machine(12, 12))
            .structs(vec![line_struct()])
            .instances(vec![
                global("d", "line", 3),
                global("f", "line", 2),
                per_cpu("pad", "line"),
            ])
            .script("w", writer)
            .script("r", &reader)
            .thread(0, "w")
            .thread(8, "r");
        let config = setup.build();
        let (_, rec) = setup.run();
        let flag = rec.loads(8, address(&config, "f", 0, "v"));
        let data = rec.loads(8, address(&config, "d", 0, "v"));
        assert!(
            !(flag[0] == 1 && data[0] == 0),
            "delay {delay}: the flag seen without the data"
        );
        flag_seen += u32::from(flag[0] == 1);
        requested_ahead += u32::from(
            rec.of_cpu(0)
                .iter()
                .any(|a| a.kind == AccessKind::StoreRfoAhead),
        );
    }
    assert!(flag_seen > 0, "some runs read the flag set");
    assert!(requested_ahead > 0, "some runs requested a line ahead");
}

#[test]
fn a_line_requested_ahead_and_taken_back_is_requested_again_with_no_value_lost() {
    // CPU 0's store to `x.a` waits behind a slow miss (`pad`, homed far
    // away) while its line, homed near, is requested ahead and arrives.
    // CPU 8 then adds 10 to `x.b`, on the same line, before CPU 0's store
    // drains: it takes the line back, so the drain requests it again.
    let run = |delay: u64| {
        let adder = format!("work {delay}\nfetch_add(x.b, 10)");
        let setup = Setup::new(machine(12, 12))
            .structs(vec![line_struct(), pair_struct()])
            .instances(vec![global("x", "pair", 0), global("pad", "line", 3)])
            .script("w", "pad.v = 1\nx.a = 1\nfence")
            .script("t", &adder)
            .script("r", "work 20000\nlet a = x.a\nlet b = x.b")
            .thread(0, "w")
            .thread(8, "t")
            .thread(12, "r")
            .stop(StopRule::Iterations(1));
        let config = setup.build();
        let (_, rec) = setup.run();
        // CPU 0's access of `kind` to x's line.
        let x_line = address(&config, "x", 0, "a") / 64;
        let of = |kind: AccessKind| {
            rec.of_cpu(0)
                .into_iter()
                .find(|a| a.kind == kind && a.address / 64 == x_line)
                .map(|a| a.report.clone().unwrap())
        };
        let ahead = of(AccessKind::StoreRfoAhead).expect("x requested ahead");
        let drain = of(AccessKind::StoreDrain).expect("x.a drained");
        let a = rec.loads(12, address(&config, "x", 0, "a"));
        let b = rec.loads(12, address(&config, "x", 0, "b"));
        (ahead, drain, a[0], b[0])
    };
    // Undisturbed (the add long after): the drain hits the line held.
    let (ahead, drain, a, b) = run(15000);
    assert!(ahead.done < drain.issued);
    assert!(drain.latency_cycles() < 40, "{drain:?}");
    assert_eq!((a, b), (1, 10));
    // The add lands between the line's arrival and the drain: the drain
    // misses again, and both writes survive.
    let between = (ahead.done.get() + drain.issued.get()) / 2;
    let (ahead2, drain2, a2, b2) = run(between);
    assert_eq!(ahead2.done, ahead.done);
    assert!(drain2.latency_cycles() > 40, "{drain2:?}");
    assert_eq!((a2, b2), (1, 10));
}
