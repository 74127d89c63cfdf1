//! An index of a contended line's queue by L3 domain and by core, kept as
//! requests arrive and leave, so that the socket agents' draw
//! (`Unit::socket_agent_draw`) finds its competitors without a pass over
//! the waiters: a line with 160 waiters on two sockets was scanned whole at
//! every handover.
//!
//! What it keeps, per queue position (the index into the line's `waiting`,
//! which `swap_remove` reorders): a bit in its domain's bitmap, and a link
//! in its core's list of positions. The directory's sharers are not kept:
//! they change in many places, and a sharer's requests (which do not
//! compete) are found at the draw from the sharers that have requests
//! waiting, one bitmap word per 64 cores, then their lists. The draw is
//! the rescan's exactly: the same competitors, counted the same, the same
//! `pick` argument and the same chosen waiter; `check_unit` compares the
//! index with one rebuilt from the queue, and the engine's draw with a
//! rescan (both under `check_invariants`).

use super::*;

/// The index is built for a line once this many requests wait at once
/// (below, one pass over the few waiters costs less than keeping it).
pub(super) const INDEXED_FROM_WAITERS: usize = 16;

/// No position: the end of a core's list.
const NONE: u32 = u32::MAX;

/// A queue position's neighbours in its core's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link {
    next: u32,
    prev: u32,
}

/// The index of one line's queue (see the module's documentation).
#[derive(Clone, Debug)]
pub(super) struct DomainIndex {
    cores_per_domain: u32,
    /// Bitmap words per domain in `positions` (grown by doubling).
    words_per_domain: usize,
    /// Per domain, a bitmap of the queue positions whose core is in it.
    positions: Vec<u64>,
    /// Per domain, how many requests of its cores wait.
    domain_len: Vec<u32>,
    /// Bitmap of the domains with a request waiting.
    nonempty_domains: Vec<u64>,
    /// Per core, the first position in its list (`NONE`: no request).
    core_first: Vec<u32>,
    /// Bitmap of the cores with a request waiting (words as `CoreSet`'s).
    waiting_cores: Vec<u64>,
    /// Per queue position, its links in its core's list.
    links: Vec<Link>,
    /// The draw's scratch: per domain, its requests from sharers (zero
    /// between draws) ...
    excluded_in_domain: Vec<u32>,
    /// ... the positions of the owner domain's requests from sharers, and
    /// of every request from a sharer (to clear `excluded_in_domain`) ...
    excluded_local: Vec<u32>,
    excluded_any: Vec<u32>,
    /// ... and the other domains with a competing request, in order.
    remote: Vec<u32>,
}

impl DomainIndex {
    /// The index of `waiters` on a machine of `cores` cores in domains of
    /// `cores_per_domain` consecutive cores (`Topology::l3_of_core`).
    pub(super) fn new(cores_per_domain: u32, domains: u32, cores: u32, waiters: &[Waiter]) -> Self {
        let words_per_domain = (waiters.len() / 64 + 1).next_power_of_two();
        let mut index = DomainIndex {
            cores_per_domain,
            words_per_domain,
            positions: vec![0; domains as usize * words_per_domain],
            domain_len: vec![0; domains as usize],
            nonempty_domains: vec![0; (domains as usize).div_ceil(64)],
            core_first: vec![NONE; cores as usize],
            waiting_cores: vec![0; (cores as usize).div_ceil(64)],
            links: Vec::with_capacity(waiters.len()),
            excluded_in_domain: vec![0; domains as usize],
            excluded_local: Vec::new(),
            excluded_any: Vec::new(),
            remote: Vec::new(),
        };
        for w in waiters {
            index.pushed(w.core);
        }
        index
    }

    #[inline(always)]
    fn domain_of(&self, core: u32) -> usize {
        (core / self.cores_per_domain) as usize
    }

    #[inline(always)]
    fn set_position(&mut self, domain: usize, position: usize) {
        self.positions[domain * self.words_per_domain + position / 64] |= 1 << (position % 64);
    }

    #[inline(always)]
    fn clear_position(&mut self, domain: usize, position: usize) {
        self.positions[domain * self.words_per_domain + position / 64] &= !(1 << (position % 64));
    }

    /// A request of `core` was pushed at the queue's end.
    #[inline]
    pub(super) fn pushed(&mut self, core: u32) {
        let position = self.links.len();
        if position == self.words_per_domain * 64 {
            self.grow();
        }
        let domain = self.domain_of(core);
        self.set_position(domain, position);
        self.domain_len[domain] += 1;
        self.nonempty_domains[domain / 64] |= 1 << (domain % 64);
        let first = self.core_first[core as usize];
        self.links.push(Link {
            next: first,
            prev: NONE,
        });
        if first != NONE {
            self.links[first as usize].prev = position as u32;
        }
        self.core_first[core as usize] = position as u32;
        self.waiting_cores[(core / 64) as usize] |= 1 << (core % 64);
    }

    /// Doubles every domain's bitmap.
    #[cold]
    fn grow(&mut self) {
        let old = self.words_per_domain;
        let mut positions = vec![0; self.positions.len() * 2];
        for (domain, words) in self.positions.chunks(old).enumerate() {
            positions[domain * old * 2..domain * old * 2 + old].copy_from_slice(words);
        }
        self.positions = positions;
        self.words_per_domain = old * 2;
    }

    /// The queue is about to `swap_remove(index)`: the request there
    /// leaves, the last one moves to its place.
    #[inline]
    pub(super) fn removing(&mut self, waiters: &[Waiter], index: usize) {
        let last = waiters.len() - 1;
        let core = waiters[index].core;
        let domain = self.domain_of(core);
        self.clear_position(domain, index);
        self.domain_len[domain] -= 1;
        if self.domain_len[domain] == 0 {
            self.nonempty_domains[domain / 64] &= !(1 << (domain % 64));
        }
        self.unlink(core, index);
        if index != last {
            let moved = waiters[last].core;
            let moved_domain = self.domain_of(moved);
            self.clear_position(moved_domain, last);
            self.set_position(moved_domain, index);
            let link = self.links[last];
            self.links[index] = link;
            if link.prev == NONE {
                self.core_first[moved as usize] = index as u32;
            } else {
                self.links[link.prev as usize].next = index as u32;
            }
            if link.next != NONE {
                self.links[link.next as usize].prev = index as u32;
            }
        }
        self.links.pop();
    }

    /// Takes `position` out of `core`'s list.
    #[inline(always)]
    fn unlink(&mut self, core: u32, position: usize) {
        let Link { next, prev } = self.links[position];
        if prev == NONE {
            self.core_first[core as usize] = next;
            if next == NONE {
                self.waiting_cores[(core / 64) as usize] &= !(1 << (core % 64));
            }
        } else {
            self.links[prev as usize].next = next;
        }
        if next != NONE {
            self.links[next as usize].prev = prev;
        }
    }

    /// Whether a request of `core` waits.
    #[inline]
    pub(super) fn has_core(&self, core: u32) -> bool {
        self.core_first[core as usize] != NONE
    }

    /// The socket agents' draw for an owned line whose owner is in
    /// `owner_domain` (the rule of `Unit::socket_agent_draw_by_scan`, which
    /// this equals): `None` when no other domain has a competing request
    /// (then `pick` is not called), else the chosen waiter's index. Out of
    /// line: inlined, it grew the home's serve on every machine (bergamo's
    /// contended512, where the rule is off, +5 % per op).
    #[inline(never)]
    pub(super) fn draw<P: FnMut(usize) -> usize + ?Sized>(
        &mut self,
        waiters: &[Waiter],
        sharers: &CoreSet,
        owner_domain: u32,
        pick: &mut P,
    ) -> Option<usize> {
        let owner_domain = owner_domain as usize;
        // The requests of cores that hold the line do not compete: found
        // from the sharers with requests waiting (on a contended atomic,
        // the owner's core, if its other thread waits).
        self.excluded_local.clear();
        self.excluded_any.clear();
        for (word_index, (&waiting, &shared)) in
            self.waiting_cores.iter().zip(&sharers.words).enumerate()
        {
            let mut both = waiting & shared;
            while both != 0 {
                let core = word_index as u32 * 64 + both.trailing_zeros();
                both &= both - 1;
                let domain = (core / self.cores_per_domain) as usize;
                let mut position = self.core_first[core as usize];
                while position != NONE {
                    self.excluded_in_domain[domain] += 1;
                    self.excluded_any.push(domain as u32);
                    if domain == owner_domain {
                        self.excluded_local.push(position);
                    }
                    position = self.links[position as usize].next;
                }
            }
        }
        // The other domains with a competing request, in domain order.
        self.remote.clear();
        for (word_index, &word) in self.nonempty_domains.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let domain = word_index * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if domain != owner_domain
                    && self.domain_len[domain] > self.excluded_in_domain[domain]
                {
                    self.remote.push(domain as u32);
                }
            }
        }
        let locals =
            (self.domain_len[owner_domain] - self.excluded_in_domain[owner_domain]) as usize;
        for &domain in &self.excluded_any {
            self.excluded_in_domain[domain as usize] = 0;
        }
        if self.remote.is_empty() {
            return None;
        }
        let competitors = locals + self.remote.len();
        let k = pick(competitors).min(competitors - 1);
        if k < locals {
            // The k-th competing request of the owner's domain in queue
            // order: its bitmap without the sharers' requests.
            let base = owner_domain * self.words_per_domain;
            for &position in &self.excluded_local {
                self.positions[base + position as usize / 64] &= !(1 << (position % 64));
            }
            let chosen = nth_set_bit(&self.positions[base..base + self.words_per_domain], k);
            for &position in &self.excluded_local {
                self.positions[base + position as usize / 64] |= 1 << (position % 64);
            }
            chosen
        } else {
            // Another domain's earliest competing request (a pass over that
            // domain's requests: a remote win is one draw in (local
            // waiters + domains waiting)).
            let domain = self.remote[k - locals] as usize;
            let words = &self.positions
                [domain * self.words_per_domain..(domain + 1) * self.words_per_domain];
            let mut earliest: Option<(Cycle, usize)> = None;
            for (word_index, &word) in words.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let position = word_index * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let w = &waiters[position];
                    if !sharers.contains(w.core)
                        && earliest.is_none_or(|e| (w.issued, position) < e)
                    {
                        earliest = Some((w.issued, position));
                    }
                }
            }
            earliest.map(|(_, position)| position)
        }
    }

    /// Whether this index is the one `waiters` gives (as rebuilt from
    /// them); what differs, if not.
    pub(super) fn check(&self, waiters: &[Waiter]) -> Result<(), String> {
        let domains = self.domain_len.len() as u32;
        let cores = self.core_first.len() as u32;
        let mut rebuilt = DomainIndex::new(self.cores_per_domain, domains, cores, &[]);
        while rebuilt.words_per_domain < self.words_per_domain {
            rebuilt.grow();
        }
        for w in waiters {
            rebuilt.pushed(w.core);
        }
        if rebuilt.words_per_domain != self.words_per_domain || rebuilt.positions != self.positions
        {
            return Err("the queue's domain bitmaps differ from the waiters' domains".into());
        }
        if rebuilt.domain_len != self.domain_len
            || rebuilt.nonempty_domains != self.nonempty_domains
        {
            return Err(format!(
                "the queue's domain counts {:?} differ from the waiters' {:?}",
                self.domain_len, rebuilt.domain_len
            ));
        }
        if rebuilt.waiting_cores != self.waiting_cores || self.links.len() != waiters.len() {
            return Err("the queue's cores with requests differ from the waiters'".into());
        }
        if self.excluded_in_domain.iter().any(|&n| n != 0) {
            return Err("the draw's per-domain scratch was left set".into());
        }
        // Each core's list: linked both ways, holding exactly the
        // positions of its requests (each position met once).
        let mut met = vec![false; waiters.len()];
        for core in 0..cores {
            let (mut position, mut prev) = (self.core_first[core as usize], NONE);
            while position != NONE {
                let p = position as usize;
                if p >= waiters.len() || met[p] || self.links[p].prev != prev {
                    return Err(format!("core {core}'s list of requests is broken at {p}"));
                }
                if waiters[p].core != core {
                    return Err(format!(
                        "core {core}'s list holds position {p}, a request of core {}",
                        waiters[p].core
                    ));
                }
                met[p] = true;
                prev = position;
                position = self.links[p].next;
            }
        }
        if let Some(p) = met.iter().position(|&m| !m) {
            return Err(format!("the request at position {p} is in no core's list"));
        }
        Ok(())
    }
}

/// The position of the `k`-th (from 0) set bit of `words`.
#[inline]
fn nth_set_bit(words: &[u64], mut k: usize) -> Option<usize> {
    for (word_index, &word) in words.iter().enumerate() {
        let ones = word.count_ones() as usize;
        if k < ones {
            let mut bits = word;
            for _ in 0..k {
                bits &= bits - 1;
            }
            return Some(word_index * 64 + bits.trailing_zeros() as usize);
        }
        k -= ones;
    }
    None
}

/// Where a line's [`DomainIndex`] is in [`DomainIndexes`] (none until
/// its queue first reaches [`INDEXED_FROM_WAITERS`]). Left out of the
/// line's equality and hash, like the index itself: the protocol state
/// is the queue, of which the index is a copy arranged for the draw.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IndexSlot(u32);

impl IndexSlot {
    #[inline(always)]
    pub(super) fn get(self) -> Option<usize> {
        (self.0 != 0).then(|| self.0 as usize - 1)
    }
}

impl PartialEq for IndexSlot {
    fn eq(&self, _other: &IndexSlot) -> bool {
        true
    }
}

impl Eq for IndexSlot {}

impl std::hash::Hash for IndexSlot {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}

/// The indexes of the lines that have one (few: the contended ones).
#[derive(Clone, Debug, Default)]
pub(super) struct DomainIndexes {
    indexes: Vec<DomainIndex>,
    /// What a checked draw found different from a rescan, until the
    /// serve reports it (`Coherence::serve_next_in_place`).
    pub(super) mismatch: Option<String>,
}

impl PartialEq for DomainIndexes {
    fn eq(&self, _other: &DomainIndexes) -> bool {
        true
    }
}

impl Eq for DomainIndexes {}

impl std::hash::Hash for DomainIndexes {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}

impl DomainIndexes {
    #[inline(always)]
    pub(super) fn get_mut(&mut self, slot: IndexSlot) -> Option<&mut DomainIndex> {
        slot.get().map(|i| &mut self.indexes[i])
    }

    #[inline(always)]
    pub(super) fn get(&self, slot: IndexSlot) -> Option<&DomainIndex> {
        slot.get().map(|i| &self.indexes[i])
    }

    /// Keeps `index`, and returns its slot.
    pub(super) fn add(&mut self, index: DomainIndex) -> IndexSlot {
        self.indexes.push(index);
        IndexSlot(self.indexes.len() as u32)
    }

    /// Forgets every index (their lines' slots must be cleared too).
    pub(super) fn clear(&mut self) {
        self.indexes.clear();
    }
}

impl Coherence {
    /// How many lines' queues have an index by domain and core (built
    /// once 16 requests wait at a line of a machine where the socket
    /// agents draw): for tests that must know it was used.
    pub fn indexed_queues(&self) -> usize {
        self.units
            .iter()
            .filter(|u| self.domain_indexes.get(u.domain_index).is_some())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draw as the rule states it, over plain lists: the owner
    /// domain's competing positions in queue order, then each other
    /// domain's earliest (issued, position), by domain.
    fn competitors(
        waiters: &[Waiter],
        sharers: &CoreSet,
        owner_domain: u32,
        cores_per_domain: u32,
    ) -> Vec<usize> {
        let competing = |p: &usize| !sharers.contains(waiters[*p].core);
        let domain = |p: usize| waiters[p].core / cores_per_domain;
        let mut list: Vec<usize> = (0..waiters.len())
            .filter(competing)
            .filter(|&p| domain(p) == owner_domain)
            .collect();
        let mut domains: Vec<u32> = (0..waiters.len())
            .filter(competing)
            .map(domain)
            .filter(|&d| d != owner_domain)
            .collect();
        domains.sort_unstable();
        domains.dedup();
        for d in domains {
            let earliest = (0..waiters.len())
                .filter(competing)
                .filter(|&p| domain(p) == d)
                .min_by_key(|&p| (waiters[p].issued, p))
                .unwrap();
            list.push(earliest);
        }
        list
    }

    /// Random pushes and removals (queues from empty to past two bitmap
    /// words, so the bitmaps grow), random sharers and owners: after each
    /// step the index equals one rebuilt from the queue, and its draw
    /// equals the rule's for every answer `pick` can give.
    #[test]
    fn the_index_draws_as_the_rule_over_the_whole_queue() {
        let (cores_per_domain, domains, cores) = (3, 5, 15);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % below
        };
        let mut waiters: Vec<Waiter> = Vec::new();
        let mut index = DomainIndex::new(cores_per_domain, domains, cores, &waiters);
        let (mut remote_draws, mut local_draws, mut excluded_draws) = (0, 0, 0);
        for step in 0..4000u64 {
            // Pushes outnumber removals in the first half, then the reverse.
            let push_share = if step < 2000 { 6 } else { 4 };
            if waiters.is_empty() || next(10) < push_share {
                let core = next(cores as u64) as u32;
                waiters.push(Waiter {
                    cpu: LinuxCpu::new(core),
                    core,
                    need: Need::Write,
                    hold_cycles: Cycles::ZERO,
                    // Few distinct times, so ties are common.
                    issued: Cycle::new(next(8)),
                    tag: RequestTag::new(CpuIndex::new(0), RequestKind::Demand),
                });
                index.pushed(core);
            } else {
                let k = next(waiters.len() as u64) as usize;
                index.removing(&waiters, k);
                waiters.swap_remove(k);
            }
            index.check(&waiters).unwrap();
            let mut sharers = CoreSet::with_capacity(cores);
            for core in 0..cores {
                if next(4) == 0 {
                    sharers.insert(core);
                }
            }
            let owner_domain = next(domains as u64) as u32;
            let expected = competitors(&waiters, &sharers, owner_domain, cores_per_domain);
            let has_remote = expected
                .iter()
                .any(|&p| waiters[p].core / cores_per_domain != owner_domain);
            if !has_remote {
                let drawn = index.draw(&waiters, &sharers, owner_domain, &mut |_| {
                    panic!("no other domain competes: no draw")
                });
                assert_eq!(drawn, None);
                continue;
            }
            excluded_draws += waiters.iter().any(|w| sharers.contains(w.core)) as u32;
            for (k, &position) in expected.iter().enumerate() {
                let drawn = index.draw(&waiters, &sharers, owner_domain, &mut |n| {
                    assert_eq!(n, expected.len(), "competitors");
                    k
                });
                assert_eq!(drawn, Some(position), "answer {k} of {expected:?}");
                if waiters[position].core / cores_per_domain == owner_domain {
                    local_draws += 1;
                } else {
                    remote_draws += 1;
                }
            }
            // An answer past the competitors means the last.
            let drawn = index.draw(&waiters, &sharers, owner_domain, &mut |_| usize::MAX);
            assert_eq!(drawn, expected.last().copied());
            index.check(&waiters).unwrap();
        }
        assert!(index.words_per_domain >= 4, "the bitmaps grew");
        assert!(local_draws > 10_000 && remote_draws > 5_000 && excluded_draws > 1000);
    }

    #[test]
    fn a_broken_index_is_told_apart_from_its_queue() {
        let waiter = |core: u32| Waiter {
            cpu: LinuxCpu::new(core),
            core,
            need: Need::Read,
            hold_cycles: Cycles::ZERO,
            issued: Cycle::ZERO,
            tag: RequestTag::new(CpuIndex::new(0), RequestKind::Demand),
        };
        let waiters = vec![waiter(0), waiter(4), waiter(0)];
        let index = DomainIndex::new(2, 3, 6, &waiters);
        index.check(&waiters).unwrap();
        // The queue changed without the index.
        let moved = vec![waiter(0), waiter(0), waiter(4)];
        assert!(index.check(&moved).is_err());
        let mut unlinked = index.clone();
        unlinked.core_first[0] = NONE;
        assert!(unlinked.check(&waiters).is_err());
    }
}
