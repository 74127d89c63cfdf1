//! The library: locking schemes, counters and the memcg charge path written
//! in the script language, which a scenario selects by name with
//! `use = ["locks/ticket", "memcg/stock"]`.
//!
//! Each module is a TOML fragment (compiled into the binary with
//! `include_str!`, so nothing is read at run time) holding `[structs]`,
//! `[instances]` and `[procedures]` tables in the schema of a scenario's own.
//! A scenario that uses a module gets its entries as if they were written in
//! the file, its own entries of the same name winning; a module may require
//! others, which are then used too. The merge itself is `scenarios`' (it
//! knows TOML); this crate only holds the texts.
//!
//! Conventions every module follows:
//! - a lock `NAME` has `NAME_lock(p)` and `NAME_unlock(p)` taking a pointer
//!   to the lock word (`&inst.lock`); the queue locks keep their per-CPU
//!   queue nodes in instances of their own; the locks modelled on the
//!   kernel's put a `cpu_relax()` (`locks/cpu_relax`, the PAUSE) in their
//!   wait loops, as the kernel does, and the textbook TAS and TTAS do not;
//! - procedures that walk the memcg hierarchy address it as the global
//!   instance `memcg` (element 0 the leaf, element `depth - 1` the root) and
//!   read the scenario parameters `depth` and `batch`;
//! - memory starts zeroed, so a limit (`max`, `high`) of 0 stands for the
//!   kernel's PAGE_COUNTER_MAX (no limit).

/// One library module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module {
    /// The name a scenario's `use` gives, `group/name`.
    pub name: &'static str,
    /// One line: what it models and what it exposes.
    pub summary: &'static str,
    /// Modules this one's procedures call, used along with it.
    pub requires: &'static [&'static str],
    /// What a scenario must declare for the module's procedures to compile
    /// (empty when the module stands alone).
    pub needs: &'static str,
    /// The TOML text.
    pub text: &'static str,
}

/// Every module, in the order the README lists them.
pub const MODULES: &[Module] = &[
    Module {
        name: "locks/tas",
        summary: "test-and-set spinlock: `tas_lock(p)` spins on `xchg`, `tas_unlock(p)` stores 0",
        requires: &[],
        needs: "",
        text: include_str!("locks/tas.toml"),
    },
    Module {
        name: "locks/ttas",
        summary: "test-and-test-and-set: `ttas_lock(p)` reads until free, then `xchg`; `ttas_unlock(p)`",
        requires: &[],
        needs: "",
        text: include_str!("locks/ttas.toml"),
    },
    Module {
        name: "locks/cpu_relax",
        summary: "`cpu_relax()`, the PAUSE in the kernel's spin-wait loops: 140 cycles (Intel, Skylake and later; override for AMD)",
        requires: &[],
        needs: "",
        text: include_str!("locks/cpu_relax.toml"),
    },
    Module {
        name: "locks/ticket",
        summary: "the kernel's x86 ticket spinlock (head and tail halves of a 4-byte word): `ticket_lock(p)`, `ticket_unlock(p)`",
        requires: &["locks/cpu_relax"],
        needs: "",
        text: include_str!("locks/ticket.toml"),
    },
    Module {
        name: "locks/mcs",
        summary: "MCS queue lock on an 8-byte tail, per-CPU nodes `mcs_nodes`: `mcs_lock(p)`, `mcs_unlock(p)`, and `mcs_lock_node(p, next, locked)` / `mcs_unlock_node(...)` with a node of one's own",
        requires: &["locks/cpu_relax"],
        needs: "",
        text: include_str!("locks/mcs.toml"),
    },
    Module {
        name: "locks/qspinlock",
        summary: "the kernel's queued spinlock (pending bit, then an MCS queue of per-CPU nodes `qspinlock_qnodes`) on a 4-byte word: `qspinlock_lock(p)`, `qspinlock_unlock(p)`",
        requires: &["locks/cpu_relax"],
        needs: "",
        text: include_str!("locks/qspinlock.toml"),
    },
    Module {
        name: "locks/local_lock",
        summary: "`local_lock_irqsave` without lockdep: interrupts off and on, a local cost and no shared access: `local_lock_lock(p)`, `local_lock_unlock(p)`, `local_irq_save()`, `local_irq_restore()`",
        requires: &[],
        needs: "",
        text: include_str!("locks/local_lock.toml"),
    },
    Module {
        name: "locks/spinlock",
        summary: "the kernel's `spin_lock(p)` / `spin_unlock(p)` (preemption off, then qspinlock) and `spin_lock_irqsave(p)` / `spin_unlock_irqrestore(p)` (interrupts off, preemption off, then qspinlock), as include/linux/spinlock_api_smp.h builds them",
        requires: &["locks/local_lock", "locks/qspinlock", "sched/preempt"],
        needs: "",
        text: include_str!("locks/spinlock.toml"),
    },
    Module {
        name: "locks/percpu_spinlock",
        summary: "a spinlock in per-CPU data taken with `spin_lock_irqsave` (interrupts off, preemption off, then qspinlock): `percpu_spinlock_lock(p)`, `percpu_spinlock_unlock(p)`",
        requires: &["locks/spinlock"],
        needs: "",
        text: include_str!("locks/percpu_spinlock.toml"),
    },
    Module {
        name: "locks/mutex",
        summary: "a sleeping mutex with the kernel's optimistic spinning on a running owner (futex wait and wake on the owner word): `mutex_lock(p)`, `mutex_unlock(p)`",
        requires: &["locks/cpu_relax"],
        needs: "",
        text: include_str!("locks/mutex.toml"),
    },
    Module {
        name: "locks/rwsem",
        summary: "a reader-writer semaphore whose waiters sleep (readers in units of 256, writer bit, waiters bit): `rwsem_down_read(p)`, `rwsem_up_read(p)`, `rwsem_down_write(p)`, `rwsem_up_write(p)`",
        requires: &[],
        needs: "",
        text: include_str!("locks/rwsem.toml"),
    },
    Module {
        name: "locks/percpu_rwsem",
        summary: "the per-CPU reader-writer semaphore, one per scenario (`percpu_rwsem`, per-CPU `percpu_rwsem_readers`): `percpu_down_read()`, `percpu_up_read()`, `percpu_down_write()`, `percpu_up_write()`",
        requires: &["locks/mutex"],
        needs: "parameter `rcu_grace_cycles` (the writer's grace period)",
        text: include_str!("locks/percpu_rwsem.toml"),
    },
    Module {
        name: "measure/tsc",
        summary: "what an rdtsc_ordered() pair adds to the interval it measures (about one RDTSCP, the machine's `rdtsc_ordered` cost): `rdtsc_bracket()`, once per measured call",
        requires: &[],
        needs: "",
        text: include_str!("measure/tsc.toml"),
    },
    Module {
        name: "sched/preempt",
        summary: "`preempt_disable()` and `preempt_enable()` in a kernel that keeps the preemption count: an increment and a decrement of this CPU's `preempt_count` (x86's per-CPU `__preempt_count`)",
        requires: &[],
        needs: "",
        text: include_str!("sched/preempt.toml"),
    },
    Module {
        name: "counters/atomic",
        summary: "plain atomics on a pointer: `atomic_add(p, n)`, `atomic_sub`, `atomic_inc(p)`, `atomic_dec`, `atomic_add_return`, `atomic_sub_return`, `atomic_read(p)`, `atomic_set(p, v)`, `atomic_xchg`, `atomic_cmpxchg(p, old, new)`",
        requires: &[],
        needs: "",
        text: include_str!("counters/atomic.toml"),
    },
    Module {
        name: "counters/percpu_counter",
        summary: "`struct percpu_counter` with the kernel's batch: `percpu_counter_add(lock, count, counters, pcpu, amount, batch)` reads the struct's `counters` pointer, adds to this CPU's delta with preemption off, and folds into the shared count under its raw spinlock once the delta reaches the batch; `percpu_counter_read(count)`",
        requires: &["locks/spinlock", "sched/preempt"],
        needs: "",
        text: include_str!("counters/percpu_counter.toml"),
    },
    Module {
        name: "memcg/page_counter",
        summary: "`struct page_counter` (112 bytes) and its hierarchy walk: `page_counter_try_charge(level, nr)`, `page_counter_uncharge(level, nr)`, `page_counter_cancel`, `propagate_protected_usage`, `memcg_parent(level)`",
        requires: &[],
        needs: "parameter `depth`; global instance `memcg` with at least `depth` elements, of a struct with the fields of `page_counter`",
        text: include_str!("memcg/page_counter.toml"),
    },
    Module {
        name: "memcg/stock",
        summary: "the per-CPU charge stock `memcg_stock` (`struct memcg_stock_pcp`, 48 bytes) with MEMCG_CHARGE_BATCH = `batch`: `try_charge(nr)`, `uncharge(nr)`, `consume_stock(nr)`, `refill_stock(nr)`, `drain_stock()`, `drain_stock_of(cpu)`, lock hooks `memcg_stock_lock(cpu)` / `memcg_stock_unlock(cpu)` (local_lock by default)",
        requires: &["memcg/page_counter", "locks/local_lock", "locks/percpu_spinlock"],
        needs: "parameters `depth` and `batch`; global instance `memcg` as for `memcg/page_counter`",
        text: include_str!("memcg/stock.toml"),
    },
];

/// The module named `name`.
pub fn find(name: &str) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.name == name)
}

/// Every module's name, in order.
pub fn names() -> Vec<&'static str> {
    MODULES.iter().map(|m| m.name).collect()
}

/// The modules `used` brings in, each once: for each name in order, its
/// requirements (recursively) first, then itself. Unknown names are left
/// out (the caller reports them).
pub fn closure(used: &[&str]) -> Vec<&'static Module> {
    fn visit(name: &str, out: &mut Vec<&'static Module>) {
        let Some(m) = find(name) else { return };
        if out.iter().any(|o| o.name == m.name) {
            return;
        }
        for r in m.requires {
            visit(r, out);
        }
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    }
    let mut out = Vec::new();
    for name in used {
        visit(name, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_requirements_exist() {
        for (i, m) in MODULES.iter().enumerate() {
            assert!(
                MODULES[..i].iter().all(|o| o.name != m.name),
                "{} twice",
                m.name
            );
            for r in m.requires {
                assert!(find(r).is_some(), "{} requires unknown {r}", m.name);
            }
        }
    }

    #[test]
    fn closure_puts_requirements_first_and_once() {
        let names: Vec<&str> = closure(&["memcg/stock", "locks/qspinlock"])
            .iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(
            names,
            [
                "memcg/page_counter",
                "locks/local_lock",
                "locks/cpu_relax",
                "locks/qspinlock",
                "sched/preempt",
                "locks/spinlock",
                "locks/percpu_spinlock",
                "memcg/stock"
            ]
        );
    }
}
