//! The library's counters and the memcg charge path: how often the shared
//! line is touched (`percpu_counter` once per batch, the memcg stock once
//! per MEMCG_CHARGE_BATCH charges) and that the sums come out exact.

use std::collections::BTreeMap;

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::load_str;
use scenarios::run::results::{run_variant, VariantResult};
use sim_core::engine::run;
use sim_core::probe::{AccessEvent, AccessKind, Probe};

fn build(text: &str) -> BuiltVariant {
    let loaded = load_str("scenarios/counters.toml", text).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0)
}

fn result(text: &str) -> VariantResult {
    run_variant(&build(text)).unwrap_or_else(|f| panic!("{}", f.error))
}

fn traffic<'a>(r: &'a VariantResult, name: &str) -> &'a sim_core::stats::Traffic {
    &r.fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .traffic
}

fn address(built: &BuiltVariant, instance: &str, element: usize, field: &str) -> u64 {
    let memory = &built.config.memory;
    let i = memory.instance_index(instance).expect("instance");
    let def = memory.struct_of(i);
    let f = &def.fields[def.field_index(field).expect("field")];
    memory.instances[i].element_addresses[element] + f.offset_bytes as u64
}

/// The value memory holds at each written address once the run is over:
/// the last store to reach the cache or the last atomic's new value.
#[derive(Default)]
struct FinalValues(BTreeMap<u64, i64>);

impl Probe for FinalValues {
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        let written = match e.kind {
            AccessKind::Store | AccessKind::StoreDrain => Some(e.value),
            AccessKind::Atomic(_) => e.new_value,
            _ => None,
        };
        if let Some(v) = written {
            self.0.insert(e.address, v);
        }
    }
}

fn final_values(built: &BuiltVariant) -> FinalValues {
    let mut values = FinalValues::default();
    run(&built.config, &mut values).unwrap_or_else(|e| panic!("{e}"));
    values
}

impl FinalValues {
    fn at(&self, address: u64) -> i64 {
        self.0.get(&address).copied().unwrap_or(0)
    }
}

fn percpu_counter(amount: i64, batch: i64, iterations: u64) -> String {
    percpu_counter_adding(&amount.to_string(), batch, iterations)
}

/// Four CPUs of two sockets add `amount` (an expression) per iteration.
fn percpu_counter_adding(amount: &str, batch: i64, iterations: u64) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = ["counters/percpu_counter"]

[run]
iterations = {iterations}

[params]
batch = {batch}

[instances.acc]
struct = "percpu_counter"
kind = "global"

[instances.acc_pcpu]
struct = "percpu_counter_pcpu"
kind = "per-cpu"

[scripts]
add = """
percpu_counter_add(&acc.lock, &acc.count, &acc.counters, &acc_pcpu.count, {amount}, batch)
work 50
"""

[[threads]]
cpus = "0-1,40-41"
script = "add"
"#
    )
}

#[test]
fn percpu_counter_touches_the_shared_count_once_per_batch() {
    // 4 CPUs each add 1 320 times with batch 32: each CPU folds its 32 into
    // the shared count 10 times, under the lock.
    let r = result(&percpu_counter(1, 32, 320));
    let count = traffic(&r, "acc.count");
    assert_eq!(count.loads, 40);
    assert_eq!(count.stores, 40);
    assert!(traffic(&r, "acc.lock").atomics >= 40);
    // Against one atomic per add for a plain shared counter.
    assert_eq!(traffic(&r, "acc_pcpu.count").atomics, 0);
    assert_eq!(traffic(&r, "acc_pcpu.count").stores, 4 * 320);
}

#[test]
fn percpu_counter_add_reads_the_shared_pointer_and_misses_after_a_fold() {
    // Every add reads `fbc->counters` from the shared struct's line and
    // turns preemption off and on (percpu_counter_add_batch, Linux 4.13 to
    // 6.2); a fold reads the pointer again under the lock and takes
    // preemption off once more inside raw_spin_lock_irqsave.
    let r = result(&percpu_counter(1, 32, 320));
    let counters = traffic(&r, "acc.counters");
    assert_eq!(counters.loads, 4 * 320 + 40);
    assert_eq!(counters.stores + counters.atomics, 0);
    let preempt = traffic(&r, "preempt_count.count");
    assert_eq!(preempt.loads, 2 * (4 * 320 + 40));
    assert_eq!(preempt.stores, 2 * (4 * 320 + 40));
    // Only this CPU touches its preempt count: one cold miss per CPU.
    assert_eq!(preempt.misses, 4);
    // Each fold takes the line for the lock and the count, so the other
    // CPUs' next reads of the pointer miss: more than one per fold.
    assert!(counters.misses > 40, "{counters:?}");

    // Adds that cancel (1, then -1) never fold: the pointer's line is only
    // read, so after each CPU's first read every one hits.
    let r = result(&percpu_counter_adding("1 - 2 * (iteration() % 2)", 32, 320));
    assert_eq!(traffic(&r, "acc.count").loads, 0);
    let counters = traffic(&r, "acc.counters");
    assert_eq!(counters.loads, 4 * 320);
    assert_eq!(counters.misses, 4, "{counters:?}");
}

#[test]
fn percpu_counter_sums_exactly() {
    // With 3 per add and batch 32, a CPU folds when its delta would reach 32
    // (at 33, then 33 again, ...): the shared count plus every CPU's delta is
    // the total added.
    let built = build(&percpu_counter(3, 32, 100));
    let values = final_values(&built);
    let shared = values.at(address(&built, "acc", 0, "count"));
    let deltas: i64 = [0usize, 1, 40, 41]
        .iter()
        .map(|&c| values.at(address(&built, "acc_pcpu", c, "count")))
        .sum();
    assert_eq!(shared + deltas, 4 * 100 * 3);
    assert_eq!(shared % 33, 0, "folds of 33: {shared}");
    for &c in &[0usize, 1, 40, 41] {
        let d = values.at(address(&built, "acc_pcpu", c, "count"));
        assert!((0..32).contains(&d), "CPU {c} holds {d}");
    }
}

fn memcg(cpus: &str, batch: i64, depth: i64, iterations: u64, script: &str, extra: &str) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = ["memcg/stock"]

[run]
iterations = {iterations}

[params]
batch = {batch}
depth = {depth}

[instances.memcg]
struct = "page_counter"
kind = "global"
count = {depth}
{extra}
[scripts]
s = """
{script}
"""

[[threads]]
cpus = "{cpus}"
script = "s"
"#
    )
}

#[test]
fn a_charge_hits_the_stock_31_times_in_32() {
    // One page per charge, batch 32, three levels: every 32nd charge misses
    // the stock and charges a batch at each level, one atomic on `usage`
    // per level; the other 31 touch only this CPU's stock.
    let r = result(&memcg("0", 32, 3, 320, "try_charge(1)\nwork 100", ""));
    assert_eq!(traffic(&r, "memcg.usage").atomics, 320 / 32 * 3);
    // The same from four CPUs of two sockets, and with a batch of 64.
    let r = result(&memcg(
        "0-1,40-41",
        32,
        3,
        320,
        "try_charge(1)\nwork 100",
        "",
    ));
    assert_eq!(traffic(&r, "memcg.usage").atomics, 4 * 320 / 32 * 3);
    let r = result(&memcg(
        "0-1,40-41",
        64,
        3,
        320,
        "try_charge(1)\nwork 100",
        "",
    ));
    assert_eq!(traffic(&r, "memcg.usage").atomics, 4 * 320 / 64 * 3);
    // A miss also reads each level's max, parent and high.
    let r = result(&memcg("0", 32, 2, 320, "try_charge(1)\nwork 100", ""));
    assert_eq!(traffic(&r, "memcg.usage").atomics, 320 / 32 * 2);
    assert_eq!(traffic(&r, "memcg.max").loads, 320 / 32 * 2);
    assert!(traffic(&r, "memcg.parent").loads >= 320 / 32 * 2);
    assert_eq!(traffic(&r, "memcg.high").loads, 320 / 32 * 2);
}

#[test]
fn uncharges_past_the_batch_drain_the_stock() {
    // CPU 0 charges a page per iteration, CPU 40 (the other socket) gives
    // one back, as when memory charged in one context is freed in another:
    // CPU 0 walks the hierarchy every 32 charges, and CPU 40's stock,
    // filled by uncharges alone, passes the batch every 33 and is drained
    // back up the hierarchy (an atomic subtraction per level). Usage ends at
    // what the stocks still hold.
    let script = "if cpu() == 0 { try_charge(1) } else { uncharge(1) }\nwork 100";
    let built = build(&memcg("0,40", 32, 3, 320, script, ""));
    let values = final_values(&built);
    assert_eq!(values.at(address(&built, "memcg_stock", 0, "nr_pages")), 0);
    assert_eq!(
        values.at(address(&built, "memcg_stock", 40, "nr_pages")),
        320 - 320 / 33 * 33
    );
    for level in 0..3 {
        assert_eq!(
            values.at(address(&built, "memcg", level, "usage")),
            320 - 320 / 33 * 33,
            "level {level}"
        );
    }
    let r = run_variant(&built).unwrap();
    assert_eq!(
        traffic(&r, "memcg.usage").atomics,
        (320 / 32 + 320 / 33) * 3
    );
}

#[test]
fn remote_drains_under_the_per_cpu_spinlock_keep_the_counts_exact() {
    // The series' scheme: the stock lock is a per-CPU spinlock and CPU 0
    // drains the others' stocks from afar while they charge and uncharge.
    // At the end each level's usage is what the stocks still hold.
    let hooks = r#"
[procedures.memcg_stock_lock]
params = ["cpu"]
body = "percpu_spinlock_lock(&memcg_stock[cpu].stock_lock)"

[procedures.memcg_stock_unlock]
params = ["cpu"]
body = "percpu_spinlock_unlock(&memcg_stock[cpu].stock_lock)"
"#;
    let script = "\
if cpu() == 0 && iteration() % 4 == 0 {
  drain_stock_of(1 + random(3))
}
try_charge(1)
work 50
uncharge(1)
work 50";
    let built = build(&memcg("0-3", 32, 2, 300, script, hooks));
    let values = final_values(&built);
    let held: i64 = (0..4)
        .map(|c| values.at(address(&built, "memcg_stock", c, "nr_pages")))
        .sum();
    for level in 0..2 {
        assert_eq!(
            values.at(address(&built, "memcg", level, "usage")),
            held,
            "level {level}"
        );
    }
    let r = run_variant(&built).unwrap();
    // Each take of a stock lock is an atomic on the owner's stock line.
    assert!(traffic(&r, "memcg_stock.stock_lock").atomics >= 4 * 300 * 2);
}
