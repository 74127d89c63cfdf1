//! The library's locks under contention: mutual exclusion (a plain counter
//! incremented under the lock, without a fence, ends exact), fairness, and
//! the scaling shapes the literature reports.

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::load_str;
use scenarios::run::results::{run_variant, VariantResult};
use sim_core::engine::run;
use sim_core::probe::{AccessEvent, AccessKind, LinuxCpu, Probe};
use sim_core::script::ast::AtomicOp;
use sim_core::Cycle;

/// 16 CPUs, eight on each socket of the 2-socket Ice Lake-SP.
const SIXTEEN: &str = "0-7,40-47";

/// The spinning locks: (module, lock procedure prefix, type of the lock word).
const SPINNING: &[(&str, &str, &str)] = &[
    ("locks/tas", "tas", "int"),
    ("locks/ttas", "ttas", "int"),
    ("locks/ticket", "ticket", "spinlock_t"),
    ("locks/mcs", "mcs", "struct mcs_spinlock *"),
    ("locks/qspinlock", "qspinlock", "spinlock_t"),
    ("locks/percpu_spinlock", "percpu_spinlock", "spinlock_t"),
];

/// A scenario where every CPU of `cpus` takes the lock, increments the
/// guarded count with a plain load and store, and releases it.
fn contended(module: &str, lock: &str, word: &str, cpus: &str, run: &str, work: u32) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = ["{module}"]

[run]
{run}

[structs.guarded]
fields = [
  {{ name = "lock", type = "{word}" }},
  {{ name = "count", type = "long" }},
]

[instances.g]
struct = "guarded"
kind = "global"

[scripts]
s = """
{lock}_lock(&g.lock)
g.count = g.count + 1
{lock}_unlock(&g.lock)
work {work}
"""

[[threads]]
cpus = "{cpus}"
script = "s"
"#
    )
}

fn build(text: &str) -> Vec<BuiltVariant> {
    let loaded = load_str("scenarios/locks.toml", text).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn address(built: &BuiltVariant, instance: &str, element: usize, field: &str) -> u64 {
    let memory = &built.config.memory;
    let i = memory.instance_index(instance).expect("instance");
    let def = memory.struct_of(i);
    let f = &def.fields[def.field_index(field).expect("field")];
    memory.instances[i].element_addresses[element] + f.offset_bytes as u64
}

/// Values stored to chosen addresses, by address, and the iterations.
#[derive(Default)]
struct Recorder {
    watched: Vec<u64>,
    stored: Vec<(u64, i64)>,
    /// Atomics on watched addresses: (address, operation, size).
    atomics: Vec<(u64, AtomicOp, u32)>,
    /// (cpu, start, end) of every iteration.
    iterations: Vec<(LinuxCpu, u64, u64)>,
}

impl Probe for Recorder {
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        if e.kind == AccessKind::Store && self.watched.contains(&e.address) {
            self.stored.push((e.address, e.value));
        }
        if let AccessKind::Atomic(op) = e.kind {
            if self.watched.contains(&(e.address & !3)) {
                self.atomics.push((e.address, op, e.size_bytes));
            }
        }
    }
    fn on_store_posted(
        &mut self,
        _cpu: LinuxCpu,
        _cycle: Cycle,
        address: u64,
        _field: u32,
        value: i64,
    ) {
        if self.watched.contains(&address) {
            self.stored.push((address, value));
        }
    }
    fn on_iteration(
        &mut self,
        cpu: LinuxCpu,
        _index: u64,
        start: Cycle,
        end: Cycle,
        _measured: bool,
    ) {
        self.iterations.push((cpu, start.get(), end.get()));
    }
}

fn record(built: &BuiltVariant, watched: Vec<u64>) -> Recorder {
    let mut recorder = Recorder {
        watched,
        ..Recorder::default()
    };
    run(&built.config, &mut recorder).unwrap_or_else(|e| panic!("{}: {e}", built.name));
    recorder
}

/// The values stored to `address`, sorted.
fn stored_at(recorder: &Recorder, address: u64) -> Vec<i64> {
    let mut v: Vec<i64> = recorder
        .stored
        .iter()
        .filter(|(a, _)| *a == address)
        .map(|(_, v)| *v)
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn every_spinning_lock_excludes_sixteen_cpus_on_two_sockets() {
    const ITERATIONS: i64 = 40;
    for &(module, lock, word) in SPINNING {
        // Two CPUs (one on each socket: the qspinlock's pending path) and
        // sixteen (its queue).
        for (cpus, n) in [("0,40", 2), (SIXTEEN, 16)] {
            let text = contended(
                module,
                lock,
                word,
                cpus,
                &format!("iterations = {ITERATIONS}"),
                20,
            );
            let built = &build(&text)[0];
            let lock_word = address(built, "g", 0, "lock");
            let count = address(built, "g", 0, "count");
            let recorder = record(built, vec![lock_word, count]);
            // Each increment stores count + 1: under mutual exclusion the
            // stored values are exactly 1..=N, each once.
            assert_eq!(
                stored_at(&recorder, count),
                (1..=n * ITERATIONS).collect::<Vec<i64>>(),
                "{module} on {cpus}"
            );
            if lock == "qspinlock" {
                let seen = |op: AtomicOp, offset: u64, size: u32| {
                    recorder
                        .atomics
                        .iter()
                        .any(|&(a, o, s)| a == lock_word + offset && o == op && s == size)
                };
                // The pending bit is set with fetch_or on the word; the
                // queue's tail is exchanged as the word's upper half.
                assert!(seen(AtomicOp::FetchOr, 0, 4), "no pending on {cpus}");
                if n == 16 {
                    assert!(seen(AtomicOp::Xchg, 2, 2), "no queueing on {cpus}");
                }
            }
        }
    }
}

#[test]
fn the_per_cpu_spinlock_excludes_remote_takers() {
    // Every CPU increments the count of a random CPU's per-CPU stock under
    // that CPU's lock (as the series' remote drain does): each per-CPU
    // count's stored values are exactly 1..=n, each once.
    let text = format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = ["locks/percpu_spinlock"]
[run]
iterations = 40
[structs.stock]
fields = [
  {{ name = "stock_lock", type = "spinlock_t" }},
  {{ name = "nr_pages", type = "unsigned int" }},
]
[instances.st]
struct = "stock"
kind = "per-cpu"
shared_aligned = true
[scripts]
s = """
let t = random(4)
let c = t + (t >= 2) * 38
percpu_spinlock_lock(&st[c].stock_lock)
st[c].nr_pages = st[c].nr_pages + 1
percpu_spinlock_unlock(&st[c].stock_lock)
work 20
"""
[[threads]]
cpus = "{SIXTEEN}"
script = "s"
"#
    );
    let built = &build(&text)[0];
    let owners = [0usize, 1, 40, 41];
    let counts: Vec<u64> = owners
        .iter()
        .map(|&c| address(built, "st", c, "nr_pages"))
        .collect();
    let recorder = record(built, counts.clone());
    let mut total = 0;
    for (c, a) in owners.iter().zip(&counts) {
        let values = stored_at(&recorder, *a);
        let n = values.len() as i64;
        assert!(n > 0, "CPU {c}'s stock was never taken");
        assert_eq!(values, (1..=n).collect::<Vec<i64>>(), "CPU {c}");
        total += n;
    }
    assert_eq!(total, 16 * 40);
}

#[test]
fn spin_lock_irqsave_raises_the_preemption_count_and_local_lock_irqsave_does_not() {
    // include/linux/spinlock_api_smp.h: __raw_spin_lock_irqsave is
    // local_irq_save, preempt_disable, then the lock; its unlock drops the
    // lock, restores interrupts, then preempt_enable. local_lock_irqsave on
    // a !PREEMPT_RT kernel is local_irq_save alone
    // (include/linux/local_lock_internal.h).
    let text = r#"schema = 1
machine = "icelake-sp-2s"
use = ["locks/percpu_spinlock", "locks/spinlock"]
[run]
iterations = 10
[structs.stock]
fields = [{ name = "stock_lock", type = "spinlock_t" }]
[instances.st]
struct = "stock"
kind = "per-cpu"
[scripts]
s = """
percpu_spinlock_lock(&st.stock_lock)
assert preempt_count.count == 1
percpu_spinlock_unlock(&st.stock_lock)
assert preempt_count.count == 0
spin_lock(&st.stock_lock)
assert preempt_count.count == 1
spin_unlock(&st.stock_lock)
local_lock_lock(0)
assert preempt_count.count == 0
local_lock_unlock(0)
"""
[[threads]]
cpus = "0-1"
script = "s"
"#;
    let built = &build(text)[0];
    let outcome = run(&built.config, &mut Recorder::default()).expect("every assert holds");
    // Per iteration of each of the two CPUs: for each of the two spinlock
    // calls the lock word's cmpxchg and release and preempt_count's load
    // and store twice; the four asserts' loads; nothing for the local_lock.
    assert_eq!(outcome.memory_ops, 2 * 10 * (2 * (2 + 4) + 4));
}

#[test]
fn the_local_lock_touches_no_memory() {
    // local_lock_irqsave without lockdep: interrupts off and on, nothing else.
    let text = r#"schema = 1
machine = "icelake-sp-2s"
use = ["locks/local_lock"]
[run]
iterations = 10
[structs.stock]
fields = [{ name = "nr_pages", type = "unsigned int" }]
[instances.st]
struct = "stock"
kind = "per-cpu"
[scripts]
s = """
local_lock_lock(0)
local_lock_unlock(0)
"""
[[threads]]
cpus = "0-1"
script = "s"
"#;
    let built = &build(text)[0];
    let recorder = record(built, vec![]);
    assert_eq!(recorder.iterations.len(), 20);
    // Each iteration is the two assumed costs (4 + 4 cycles), nothing more.
    for (_, start, end) in &recorder.iterations {
        assert_eq!(end - start, 8);
    }
    let outcome = run(&built.config, &mut Recorder::default()).unwrap();
    assert_eq!(outcome.memory_ops, 0);
}

/// Runs a contended scenario (the guarded count on the lock's line) for
/// `cycles` and returns its result.
fn contended_result(lock: &str, cpus: &str, cycles: u64) -> VariantResult {
    contended_result_with_seed(lock, cpus, cycles, None)
}

/// `contended_result` with every CPU starting at cycle 0.
fn contended_result_together(lock: &str, cpus: &str, cycles: u64) -> VariantResult {
    let &(module, name, word) = SPINNING
        .iter()
        .find(|(_, n, _)| *n == lock)
        .expect("a spinning lock");
    let run = format!("cycles = {cycles}\nstart_spread_cycles = 0");
    let text = contended(module, name, word, cpus, &run, 20);
    run_variant(&build(&text)[0]).unwrap_or_else(|f| panic!("{lock}: {}", f.error))
}

/// `contended_result` with the scenario's `seed` set (else the default).
fn contended_result_with_seed(
    lock: &str,
    cpus: &str,
    cycles: u64,
    seed: Option<u64>,
) -> VariantResult {
    let &(module, name, word) = SPINNING
        .iter()
        .find(|(_, n, _)| *n == lock)
        .expect("a spinning lock");
    let mut text = contended(module, name, word, cpus, &format!("cycles = {cycles}"), 20);
    if let Some(seed) = seed {
        text = text.replacen("use = ", &format!("seed = {seed}\nuse = "), 1);
    }
    run_variant(&build(&text)[0]).unwrap_or_else(|f| panic!("{lock}: {}", f.error))
}

fn acquisitions(r: &VariantResult) -> u64 {
    r.per_cpu.iter().map(|c| c.iterations).sum()
}

/// Cycles per acquisition: with every CPU waiting, the hand-off time.
fn hand_off(r: &VariantResult) -> f64 {
    r.outcome.elapsed_cycles as f64 / acquisitions(r) as f64
}

/// Most minus fewest acquisitions of one CPU.
fn spread(r: &VariantResult) -> u64 {
    let max = r.per_cpu.iter().map(|c| c.iterations).max().unwrap();
    let min = r.per_cpu.iter().map(|c| c.iterations).min().unwrap();
    max - min
}

fn longest_wait(r: &VariantResult) -> u64 {
    r.per_cpu
        .iter()
        .map(|c| c.longest_iteration_cycles)
        .max()
        .unwrap()
}

fn field<'a>(r: &'a VariantResult, name: &str) -> &'a sim_core::stats::Traffic {
    &r.fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .traffic
}

#[test]
fn queue_locks_share_evenly_and_tas_does_not() {
    // 16 CPUs on two sockets for 4 M cycles: the ticket lock, MCS and the
    // qspinlock serve in arrival order, so each CPU gets its turn once per
    // round; TAS (and TTAS) serve whoever's request the home picks.
    // The CPUs start together: a CPU that starts after the first round has
    // begun (the default seeded offsets) misses that round, which is not
    // the locks' doing.
    let results: Vec<(&str, VariantResult)> = ["tas", "ttas", "ticket", "mcs", "qspinlock"]
        .iter()
        .map(|l| (*l, contended_result_together(l, SIXTEEN, 4_000_000)))
        .collect();
    let by = |name: &str| &results.iter().find(|(l, _)| *l == name).unwrap().1;
    for fifo in ["ticket", "mcs", "qspinlock"] {
        let r = by(fifo);
        assert!(acquisitions(r) >= 16 * 10, "{fifo}: {}", acquisitions(r));
        // One round apart at most where the end of the run cuts a round;
        // the qspinlock's fast-path trylock may also take the lock ahead of
        // the queue's head (the kernel's lock stealing), so one more there.
        let allowed = if fifo == "qspinlock" { 2 } else { 1 };
        assert!(spread(r) <= allowed, "{fifo}: {:?}", r.per_cpu);
    }
    let tas = by("tas");
    assert!(spread(tas) >= 5, "tas: {:?}", tas.per_cpu);
    for fifo in ["ticket", "mcs", "qspinlock"] {
        // The longest wait under TAS is many rounds of the queue locks'.
        assert!(
            longest_wait(tas) > 4 * longest_wait(by(fifo)),
            "tas {} vs {fifo} {}",
            longest_wait(tas),
            longest_wait(by(fifo))
        );
    }
    // The report's fairness block says so.
    let block = scenarios::report::text::fairness(tas);
    assert!(block.contains("iterations per CPU: min "), "{block}");
    assert!(block.contains("per node: node 0 "), "{block}");
    assert!(block.contains("longest iteration: "), "{block}");
}

#[test]
fn ticket_hand_off_grows_with_waiters_and_mcs_does_not() {
    // 2, 4 and 8 CPUs of one socket, then 16 over two: the ticket lock's
    // release invalidates every waiter's copy and they all re-read it, the
    // next owner among them, so the hand-off grows with every waiter
    // (linearly: each re-read of the clean line holds the L3's tags for one
    // forward leg; across sockets each holds the home for a whole transfer);
    // an MCS release writes one waiter's own line.
    let sets = ["0-1", "0-3", "0-7", SIXTEEN];
    let ticket: Vec<VariantResult> = sets
        .iter()
        .map(|c| contended_result("ticket", c, 1_000_000))
        .collect();
    let mcs: Vec<VariantResult> = sets
        .iter()
        .map(|c| contended_result("mcs", c, 1_000_000))
        .collect();
    let t: Vec<f64> = ticket.iter().map(hand_off).collect();
    let m: Vec<f64> = mcs.iter().map(hand_off).collect();
    // (Each step at least a fifth more: 633, 887, 1133 and 3785 cycles
    // when the holder's hits while requests are queued came in; the
    // releasing core's own re-read now hits, so one waiter fewer re-reads.)
    for w in t.windows(2) {
        assert!(w[1] > 1.2 * w[0], "ticket hand-off {t:?}");
    }
    // Growing with the waiters, not levelling off: a waiter added between
    // 4 and 8 CPUs costs at least two fifths of what one added between 2
    // and 4 did (127 and 61 cycles then).
    let per_waiter = [(t[1] - t[0]) / 2.0, (t[2] - t[1]) / 4.0];
    assert!(
        per_waiter[1] > 0.4 * per_waiter[0],
        "ticket hand-off {t:?}, per added waiter {per_waiter:?}"
    );
    for x in &m[1..3] {
        assert!(*x < 1.2 * m[0], "mcs hand-off {m:?}");
    }
    // Invalidations of the ticket word per acquisition grow with the waiters.
    let inval =
        |r: &VariantResult| field(r, "g.lock").invalidations as f64 / acquisitions(r) as f64;
    let ti: Vec<f64> = ticket.iter().map(inval).collect();
    for w in ti.windows(2) {
        assert!(w[1] > w[0], "ticket invalidations per acquisition {ti:?}");
    }
}

#[test]
fn mcs_waiters_spin_on_their_own_line() {
    // Whatever the number of waiters, an acquisition costs the waiter's
    // `locked` three invalidations (its own reset of `locked`; the
    // predecessor's hand-over, which also finds the successor's copy, taken
    // when the successor linked itself through `next` on the same 16-byte
    // node) and four misses (the reset, the hand-over's store, and the two
    // reads after them). The waiting itself is reads that hit.
    let per_acquisition = |cpus: &str| {
        let r = contended_result("mcs", cpus, 2_000_000);
        let n = acquisitions(&r) as f64;
        let locked = field(&r, "mcs_nodes.locked").clone();
        (
            locked.invalidations as f64 / n,
            locked.misses as f64 / n,
            locked,
        )
    };
    let (inval4, miss4, _) = per_acquisition("0-3");
    let (inval16, miss16, locked16) = per_acquisition(SIXTEEN);
    for (inval, miss) in [(inval4, miss4), (inval16, miss16)] {
        assert!(inval <= 3.05, "{inval} invalidations per acquisition");
        assert!(miss <= 4.05, "{miss} misses per acquisition");
    }
    assert!(
        (inval16 - inval4).abs() < 0.1,
        "{inval4} at 4, {inval16} at 16"
    );
    assert!(locked16.loads > 20 * locked16.misses, "{locked16:?}");
    // The ticket lock's waiters all read the one word the owner writes.
    let t = contended_result("ticket", SIXTEEN, 2_000_000);
    let word = field(&t, "g.lock");
    assert!(
        word.invalidations as f64 / acquisitions(&t) as f64 > 8.0,
        "{word:?} for {}",
        acquisitions(&t)
    );
}

#[test]
fn tas_collapses_under_sixteen_cpus() {
    // From 2 CPUs to 16 over two sockets, TAS's throughput falls by more
    // than four times and ends below a third of the queue locks' (297
    // against qspinlock's 906 since an owned line's competitors are the
    // owner socket's waiters and one request of the other socket, which
    // keeps TAS's lock on a socket for several hand-offs; 215 against
    // MCS's 921 and qspinlock's 856 when every waiter competed, once a
    // holder's hits while requests are queued let TAS's winner keep the
    // line for its next access; below a fifth before), which keep more
    // than a third of theirs: their hand-off is one transfer, but some of
    // the hand-offs now cross the sockets (with CPUs no longer in
    // lock-step, the queue mixes them; 390 of 815 at 16 and 2 on
    // `icelake-sp-2s` when every waiter competed).
    let tas2 = contended_result("tas", "0-1", 1_000_000);
    let tas16 = contended_result("tas", SIXTEEN, 1_000_000);
    assert!(
        acquisitions(&tas16) * 4 < acquisitions(&tas2),
        "{} at 16 vs {} at 2",
        acquisitions(&tas16),
        acquisitions(&tas2)
    );
    for queue in ["mcs", "qspinlock"] {
        let q2 = contended_result(queue, "0-1", 1_000_000);
        let q16 = contended_result(queue, SIXTEEN, 1_000_000);
        assert!(
            acquisitions(&tas16) * 3 < acquisitions(&q16),
            "tas {} vs {queue} {} at 16",
            acquisitions(&tas16),
            acquisitions(&q16)
        );
        assert!(
            acquisitions(&q16) * 3 > acquisitions(&q2),
            "{queue}: {} at 16 vs {} at 2",
            acquisitions(&q16),
            acquisitions(&q2)
        );
    }
}

/// Acquisitions in 2 M cycles of `lock` by each CPU set, in order.
fn acquisitions_by_cpus(lock: &str, sets: &[&str]) -> Vec<u64> {
    sets.iter()
        .map(|c| acquisitions(&contended_result(lock, c, 2_000_000)))
        .collect()
}

#[test]
fn tas_collapses_first_and_ttas_holds_out_longer() {
    // Anderson (IEEE TPDS 1990) and Herlihy and Shavit (ch. 7): TAS's
    // waiters write the line at every attempt, so the holder's own accesses
    // queue behind them, and TAS falls below TTAS, whose waiters spin on a
    // shared copy and re-read it together after a release. 8, 16 and 32
    // CPUs of one socket: the re-reads are resolved in its L3. (Across
    // sockets each re-read holds the home for a whole transfer, and the two
    // tie: 16 CPUs over two sockets give both about the same throughput.)
    let sets = ["0-7", "0-15", "0-31"];
    let tas = acquisitions_by_cpus("tas", &sets);
    let ttas = acquisitions_by_cpus("ttas", &sets);
    let ratio: Vec<f64> = (0..3).map(|k| tas[k] as f64 / ttas[k] as f64).collect();
    // Below TTAS at 16 and more, by a quarter at least.
    assert!(
        ratio[1] < 0.75 && ratio[2] < 0.75,
        "tas / ttas {ratio:?} (tas {tas:?}, ttas {ttas:?})"
    );
    // Falling faster: from 8 CPUs to 16 and to 32, TAS loses a larger share
    // of its throughput than TTAS.
    assert!(
        ratio[1] < ratio[0] && ratio[2] < ratio[0],
        "tas / ttas {ratio:?} (tas {tas:?}, ttas {ttas:?})"
    );
}

#[test]
fn qspinlock_stays_close_to_mcs() {
    // The kernel's qspinlock is an MCS queue whose head spins on the lock
    // word, plus the pending byte for the first waiter: under contention it
    // pays a few more transfers of the lock word per hand-off than MCS (the
    // head's read and its store of the locked byte, the newcomer's trylock
    // read), not a different shape: the ratio stays the same from 4 to 32
    // CPUs of one socket. How large it is depends on how often the queue's
    // head and the pending waiter re-read the lock word, which shares its
    // line with the data: since the core goes on past the branches it
    // predicts (issue 16), a waiter whose re-read misses and still finds the
    // lock held goes on into its PAUSE at once, so it re-reads about once a
    // PAUSE rather than once a miss and a PAUSE, and takes the line from the
    // holder more often. MCS gets 1.92x the acquisitions on the Ice Lake
    // preset (1.91x to 1.94x from 4 to 32 CPUs; 1.70x while a load queued
    // at a busy home held its CPU, 1.22x when waiters waited for every
    // re-read): at most twice as many, and the same at every count.
    let sets = ["0-3", "0-7", "0-15", "0-31"];
    let mcs = acquisitions_by_cpus("mcs", &sets);
    let q = acquisitions_by_cpus("qspinlock", &sets);
    let ratio: Vec<f64> = (0..sets.len())
        .map(|k| mcs[k] as f64 / q[k] as f64)
        .collect();
    let (low, high) = ratio
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
    assert!(
        high < 1.1 * low,
        "mcs / qspinlock {ratio:?}: not the same shape"
    );
    for k in 0..sets.len() {
        assert!(
            (mcs[k] as f64) < 2.0 * q[k] as f64,
            "at {}: mcs {mcs:?} vs qspinlock {q:?}",
            sets[k]
        );
    }
    // For 16 CPUs over two sockets each of those transfers crosses the link
    // and the adjacent-line prefetcher adds the buddy lines' reads; and
    // which socket keeps the lock word for how long depends on the home's
    // arbitration draws and the order of each cycle's events: over 2 M
    // cycles the ratio ranges from 1.0x to 2.4x with the seed (seeds 1 to
    // 16; as widely with the events of a cycle taken in the order they were
    // queued, where the one seed this test ran happened to give 1.34x). So
    // the sum over eight seeds: 1.28x, at most half as many again.
    let (mut mcs, mut q) = (0, 0);
    for seed in 1..=8 {
        mcs += acquisitions(&contended_result_with_seed(
            "mcs",
            SIXTEEN,
            2_000_000,
            Some(seed),
        ));
        q += acquisitions(&contended_result_with_seed(
            "qspinlock",
            SIXTEEN,
            2_000_000,
            Some(seed),
        ));
    }
    assert!(
        (mcs as f64) < 1.5 * q as f64,
        "at {SIXTEEN}, eight seeds: mcs {mcs} vs qspinlock {q}"
    );
}

#[test]
fn ticket_cycles_per_iteration_rise_with_cpus_on_the_book_sweep() {
    // Chapter 8's sweep (book/scenarios/locks.toml): the ticket lock's mean
    // cycles per critical section grow at every step from 1 to 48 CPUs. The
    // run must be long enough that every CPU completes iterations: in a short
    // one, the CPUs still queued at its end complete none, and the mean of
    // the few that did falls (the 48-CPU figure once dropped below the
    // 32-CPU one that way).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/scenarios/locks.toml");
    let text = std::fs::read_to_string(path).expect("the book's locks scenario");
    let loaded = load_str(path, &text).unwrap_or_else(|e| panic!("{e}"));
    let cases = scenarios::run::cases::build_cases(&loaded, BuildOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut by_cpus: Vec<(usize, f64, u64)> = Vec::new();
    for case in &cases {
        let ticket = case
            .variants
            .iter()
            .find(|v| v.name == "ticket")
            .expect("a ticket variant");
        let r = run_variant(ticket).unwrap_or_else(|f| panic!("{}", f.error));
        let fewest = r.per_cpu.iter().map(|c| c.iterations).min().unwrap();
        by_cpus.push((r.cpus.len(), r.iteration_cycles.mean(), fewest));
    }
    assert_eq!(by_cpus.len(), 7, "{by_cpus:?}");
    for w in by_cpus.windows(2) {
        assert!(
            w[1].1 > w[0].1,
            "ticket (cpus, mean cycles, fewest) {by_cpus:?}"
        );
    }
    assert!(
        by_cpus.iter().all(|&(_, _, fewest)| fewest >= 1),
        "{by_cpus:?}"
    );
}
