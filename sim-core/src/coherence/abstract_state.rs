//! What the exhaustive checker ([`crate::checker`]) needs of the state:
//! read access to it, time made abstract (which keeps the checker's state
//! space finite), states copied and encoded for the visited set. None of
//! it is used by the engine.

use super::*;

/// LEB128: seven bits a byte, low first, high bit set on all but the last.
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Coherence {
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The line's write count: its position in coherence order.
    pub fn version(&self, unit: usize) -> u64 {
        self.units[unit].version
    }

    /// The caches holding the line and their states, by core.
    pub fn holders(&self, unit: usize) -> impl ExactSizeIterator<Item = (u32, LineState)> + '_ {
        self.units[unit].holders.iter().map(|h| (h.core, h.state))
    }

    /// Requests waiting for the line, in queue order.
    pub fn waiters(&self, unit: usize) -> &[Waiter] {
        &self.units[unit].waiting
    }

    /// Forgets time after a step taken at `now`: a line still busy (a
    /// transaction in flight or a lock held) stays busy until `now + 1`,
    /// every other time (the lock's end too) becomes `now`; waiters are put in (cpu, tag) order
    /// (the home's choice among them does not depend on their order, and the
    /// checker tries every choice); write counts are counted from the line's
    /// current one. With one thread per core, which thread wrote a line last
    /// cannot matter and is forgotten too. What is left is the state that
    /// decides what the protocol can do next.
    pub(crate) fn abstract_time(&mut self, now: Cycle, one_thread_per_core: bool) {
        for u in &mut self.units {
            u.busy_until = if u.busy_until > now {
                now + Cycles::new(1)
            } else {
                now
            };
            // The lock only delays hits (times); the line stays busy for it.
            u.locked_until = now;
            let base = u.version;
            u.version = 0;
            for h in &mut u.holders {
                h.ready_at = now;
                h.last_use = now;
                h.version = h.version.wrapping_sub(base);
                if one_thread_per_core {
                    h.last_writer_thread = None;
                }
            }
            for w in &mut u.waiting {
                w.issued = now;
            }
            u.waiting.sort_unstable_by_key(|w| (w.cpu, w.tag));
            // The queue's order changed: its index is rebuilt when needed.
            u.domain_index = waiting::IndexSlot::default();
        }
        self.domain_indexes.clear();
    }

    /// Becomes a copy of `other` (a state of the same configuration),
    /// reusing this one's allocations.
    pub(crate) fn copy_from(&mut self, other: &Coherence) {
        self.units.truncate(other.units.len());
        for (u, o) in self.units.iter_mut().zip(&other.units) {
            u.home_node = o.home_node;
            u.busy_until = o.busy_until;
            u.locked_until = o.locked_until;
            u.version = o.version;
            u.dir_owner = o.dir_owner;
            u.dir_sharers.words.clone_from(&o.dir_sharers.words);
            u.holders.clone_from(&o.holders);
            u.waiting.clone_from(&o.waiting);
            u.domain_index = o.domain_index;
            u.queued_hits_done = o.queued_hits_done;
        }
        let have = self.units.len();
        self.units.extend(other.units[have..].iter().cloned());
        self.protocol = other.protocol;
        self.lookup = other.lookup;
        self.check_invariants = other.check_invariants;
        self.special_transactions = other.special_transactions;
        self.atomic_changes_unlisted = other.atomic_changes_unlisted;
        self.hits_until_snoop = other.hits_until_snoop;
        self.unit_bytes = other.unit_bytes;
        self.caches.clone_from(&other.caches);
        self.domain_indexes.clone_from(&other.domain_indexes);
        self.any_pressured = other.any_pressured;
        self.l2_hit_cycles = other.l2_hit_cycles;
    }

    /// Lets the line's transaction (or lock) end, at `now`.
    pub(crate) fn end_busy(&mut self, unit: usize, now: Cycle) {
        let u = &mut self.units[unit];
        u.busy_until = now;
        u.locked_until = now;
    }

    /// Appends an exact encoding of every field that changes (the ones fixed
    /// at construction are left out), under a renaming of cores, CPUs,
    /// waiter tags and lines: equal encodings, states equal up to that
    /// renaming. The checker takes the least encoding over the renamings
    /// that map the configuration onto itself (symmetry reduction).
    pub(crate) fn encode(&self, renaming: &Renaming<'_>, out: &mut Vec<u8>) {
        let core = |c: u32| renaming.cores[c as usize];
        let key = |w: &Waiter| (renaming.cpus[w.cpu.slot()], (renaming.tags)(w.tag));
        for &unit in renaming.units {
            let u = &self.units[unit];
            put_varint(out, u.busy_until.get());
            put_varint(out, u.locked_until.get());
            put_varint(out, u.version);
            put_varint(out, u.dir_owner.map_or(0, |c| core(c) as u64 + 1));
            // Sharers and holders in the new core order.
            for &old in renaming.core_at {
                out.push(u.dir_sharers.contains(old) as u8);
            }
            put_varint(out, u.holders.len() as u64);
            for &old in renaming.core_at {
                if let Ok(i) = u.holders.binary_search_by_key(&old, |h| h.core) {
                    let h = &u.holders[i];
                    put_varint(out, core(h.core) as u64);
                    out.push(h.state as u8);
                    put_varint(out, h.ready_at.get());
                    put_varint(out, h.version);
                    // 255 for none: a byte, as before (threads are fewer).
                    out.push(h.last_writer_thread.unwrap_or(u8::MAX));
                }
            }
            // Waiters in (new CPU, new tag) order, picked one key at a time
            // (there are few) rather than sorted.
            put_varint(out, u.waiting.len() as u64);
            let mut last: Option<(u32, RequestTag)> = None;
            let mut emitted = 0;
            while emitted < u.waiting.len() {
                let mut least: Option<(u32, RequestTag)> = None;
                for w in &u.waiting {
                    let k = key(w);
                    if last.is_none_or(|l| k > l) && least.is_none_or(|m| k < m) {
                        least = Some(k);
                    }
                }
                for w in &u.waiting {
                    if Some(key(w)) != least {
                        continue;
                    }
                    let (cpu, tag) = key(w);
                    put_varint(out, cpu as u64);
                    put_varint(out, core(w.core) as u64);
                    out.push(w.need as u8);
                    put_varint(out, w.hold_cycles.get());
                    put_varint(out, w.issued.get());
                    put_varint(out, tag.code() as u64);
                    emitted += 1;
                }
                last = least;
            }
        }
    }
}
