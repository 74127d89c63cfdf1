//! The capacity of each core's private caches: an L1D and an L2, each
//! set-associative with LRU replacement (`MachineSpec::private_caches`;
//! absent, unbounded caches and none of this runs).
//!
//! Model decisions:
//! - A line's set is its line address's low bits (`unit % sets`, the sets
//!   a power of two), as a physically indexed cache with a line-granular
//!   index has it. Real L2s and L1Ds index by physical address; the
//!   simulator's addresses stand for physical ones (no page mapping), and
//!   no index hashing is modelled.
//! - The L2 holds every line of the L1D (inclusive of it): a line enters
//!   both when the core fetches it, moves into the L1D again when an
//!   access finds it in the L2 only (costing `l2_hit_cycles` instead of
//!   `l1_hit_cycles`), and leaves the L1D alone for the L2 when the L1D
//!   needs its way. (Skylake-SP's L2 is inclusive of its L1D, [S15];
//!   on the others this is a simplification.)
//! - Recency is the cycle of the copy's last access (`Holder::last_use`:
//!   a hit's issue, a fill's arrival); ties go to the lower line address.
//!   One stamp serves both levels. The engine's hoisted loop of private
//!   hits stamps the lines it touched one cycle before the loop's end
//!   (after their last access, before any later one), which loses their
//!   order among themselves; it runs only while the core holds no more
//!   lines than the L1D has ways, and summed hits (`plain_hit`) stamp each
//!   access. A core whose sets have once been full leaves both to
//!   `try_hit`. Two SMT siblings of one core: a sibling running ahead over
//!   its private hits stamps them before the other's fill, in event
//!   order, may choose a victim (the shortcuts' one inexactness here).
//! - A line the L2 evicts leaves the core as a deep-idle write-back does
//!   ([`Coherence::drop_copy`]): a Modified or Owned copy's data is
//!   written back, a clean one dropped, the directory forgets the core. A
//!   line the home is busy with (a transaction, an atomic's hold, queued
//!   requests) or whose copy is still arriving is not chosen; when every
//!   line of the set is such, the set stays over its ways until the next
//!   fill into it tries again.
//! - Bookkeeping, in two modes per core. While a core holds no more lines
//!   than the L1D has ways, no set of either cache can be full: one
//!   counter per core, its fills since it was last counted (an upper
//!   bound on its lines: copies other cores' writes took are not
//!   subtracted), is all a fill costs; past the ways, the core's lines are
//!   counted over every line, and only if they are really more does the
//!   core switch to per-set counts, for good. Then each fill counts in its
//!   L1D set and L2 set the same way (fills since the set was last
//!   counted), and only when one passes its ways are the set's lines
//!   counted exactly and the least recently used evicted. A contended
//!   line's handovers between cores that hold a few lines each cost one
//!   counter per fill.

use super::*;

/// The private caches' geometry and bookkeeping, per core and set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Caches {
    l1_sets: usize,
    l1_ways: u32,
    l2_sets: usize,
    l2_ways: u32,
    /// Per `core * l1_sets + set`: fills of the L1D set since its last
    /// exact count (at least the lines it holds).
    l1_fills: Vec<u32>,
    /// The same for the L2.
    l2_fills: Vec<u32>,
    /// Per core: fills since its lines were last counted, while it counts
    /// per core; [`PER_SET`] once it counts per set (it once held more
    /// lines than the L1D has ways).
    core_fills: Vec<u32>,
    /// Per core: a set of its caches has been full (`make_room` ran). From
    /// then on its hits go through `try_hit`, not the engine's summed or
    /// hoisted private hits, which take every private hit for an L1D hit
    /// and would run ahead of the fills that decide what stays.
    pressured: Vec<bool>,
    /// Lines the L2s evicted, written back or dropped.
    evictions: u64,
    /// Accesses that found their line in the L2 but not the L1D.
    l2_hits: u64,
}

impl Caches {
    pub(super) fn new(topology: &Topology) -> Option<Box<Caches>> {
        let spec = &topology.spec.private_caches;
        if !spec.is_bounded() {
            return None;
        }
        let line = topology.spec.line_size_bytes;
        let l1_sets = PrivateCacheSpec::sets(spec.l1d_kib, spec.l1d_ways, line) as usize;
        let l2_sets = PrivateCacheSpec::sets(spec.l2_kib, spec.l2_ways, line) as usize;
        let cores = topology.core_count() as usize;
        Some(Box::new(Caches {
            l1_sets,
            l1_ways: spec.l1d_ways,
            l2_sets,
            l2_ways: spec.l2_ways,
            l1_fills: vec![0; cores * l1_sets],
            l2_fills: vec![0; cores * l2_sets],
            core_fills: vec![0; cores],
            pressured: vec![false; cores],
            evictions: 0,
            l2_hits: 0,
        }))
    }
}

/// `Caches::core_fills` of a core counting per set: above any ways, so
/// that every fill takes the per-set path.
const PER_SET: u32 = u32::MAX / 2;

impl Coherence {
    /// After a transaction installed `core`'s copy of `unit` (new when
    /// `before` is Invalid, else an upgrade, which also brings the line
    /// into the L1D): the sets' fill counts, and room made when one
    /// passes its ways.
    #[inline(always)]
    pub(super) fn note_fill(&mut self, core: u32, unit: usize, before: LineState, now: Cycle) {
        let Some(c) = self.caches.as_deref_mut() else {
            return;
        };
        let fills = &mut c.core_fills[core as usize];
        *fills += (before == LineState::Invalid) as u32;
        if *fills > c.l1_ways {
            self.fill_past_core_count(core, unit, before, now);
        }
    }

    /// `core`'s copy of a line was taken (another core's write, or it left
    /// by `drop_copy`): one line fewer to bound, while it counts per core.
    #[inline(always)]
    pub(super) fn note_copy_lost(&mut self, core: u32) {
        if let Some(c) = self.caches.as_deref_mut() {
            let fills = &mut c.core_fills[core as usize];
            if *fills > 0 && *fills < PER_SET {
                *fills -= 1;
            }
        }
    }

    /// [`Coherence::note_copy_lost`] for each copy a transaction
    /// invalidated.
    #[inline]
    pub(super) fn note_copies_lost(&mut self, changes: &[StateChange]) {
        if self.caches.is_none() {
            return;
        }
        for change in changes {
            if change.after == LineState::Invalid {
                self.note_copy_lost(change.core);
            }
        }
    }

    /// [`Coherence::note_fill`] past the core's count: its lines counted
    /// (`count_core`), or, counting per set, the fill counted in its sets.
    #[cold]
    #[inline(never)]
    fn fill_past_core_count(&mut self, core: u32, unit: usize, before: LineState, now: Cycle) {
        let c = self.caches.as_deref_mut().expect("bounded caches");
        if c.core_fills[core as usize] < PER_SET {
            self.count_core(core, unit, now);
            return;
        }
        c.core_fills[core as usize] = PER_SET;
        let l2 = core as usize * c.l2_sets + (unit & (c.l2_sets - 1));
        let l1 = core as usize * c.l1_sets + (unit & (c.l1_sets - 1));
        c.l2_fills[l2] += (before == LineState::Invalid) as u32;
        c.l1_fills[l1] += 1;
        if c.l2_fills[l2] > c.l2_ways || c.l1_fills[l1] > c.l1_ways {
            self.make_room(core, unit, now);
        }
    }

    /// An access of `core` found `unit` in its L2 but not its L1D (the
    /// copy now marked in the L1D): counted, and room made in the L1D set.
    #[cold]
    #[inline(never)]
    pub(super) fn note_l2_hit(&mut self, core: u32, unit: usize, now: Cycle) {
        let Some(c) = self.caches.as_deref_mut() else {
            return;
        };
        c.l2_hits += 1;
        let l1 = core as usize * c.l1_sets + (unit & (c.l1_sets - 1));
        c.l1_fills[l1] += 1;
        if c.l1_fills[l1] > c.l1_ways {
            self.make_room(core, unit, now);
        }
    }

    /// A core counting per core has filled more lines than the L1D has
    /// ways since it was last counted: its lines counted over every line.
    /// No more than the ways: its count is that. More: it counts per set
    /// from now on, each set's count its lines there, and room is made in
    /// `unit`'s sets (just filled, the only ones that can be over).
    #[cold]
    #[inline(never)]
    fn count_core(&mut self, core: u32, unit: usize, now: Cycle) {
        let held: Vec<usize> = (0..self.units.len())
            .filter(|&u| {
                self.units[u]
                    .holders
                    .binary_search_by_key(&core, |h| h.core)
                    .is_ok()
            })
            .collect();
        let c = self.caches.as_deref_mut().expect("bounded caches");
        let k = core as usize;
        if held.len() <= c.l1_ways as usize {
            c.core_fills[k] = held.len() as u32;
            return;
        }
        c.core_fills[k] = PER_SET;
        for &u in &held {
            c.l2_fills[k * c.l2_sets + (u & (c.l2_sets - 1))] += 1;
            c.l1_fills[k * c.l1_sets + (u & (c.l1_sets - 1))] += 1;
        }
        let (l1, l2) = (
            k * c.l1_sets + (unit & (c.l1_sets - 1)),
            k * c.l2_sets + (unit & (c.l2_sets - 1)),
        );
        if c.l2_fills[l2] > c.l2_ways || c.l1_fills[l1] > c.l1_ways {
            self.make_room(core, unit, now);
        }
    }

    /// `core`'s lines of `unit`'s L2 set and L1D set counted exactly, and
    /// the least recently used ones evicted from the L2 (leaving the core)
    /// and moved out of the L1D (staying in the L2) until each set is
    /// within its ways. `unit`, just filled or used, is never the victim.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, core: u32, unit: usize, now: Cycle) {
        self.any_pressured = true;
        let (l1_sets, l1_ways, l2_sets, l2_ways) = {
            let c = self.caches.as_deref_mut().expect("bounded caches");
            c.pressured[core as usize] = true;
            (c.l1_sets, c.l1_ways, c.l2_sets, c.l2_ways)
        };
        // The L2 first: a line it evicts leaves the L1D too.
        let l2_set = unit & (l2_sets - 1);
        let mut resident = self.lines_of_set(core, l2_set, l2_sets, false);
        while resident.len() > l2_ways as usize {
            let victim = resident
                .iter()
                .enumerate()
                .filter(|(_, &(_, u))| u != unit && self.may_drop(core, u, now))
                .min_by_key(|(_, &key)| key)
                .map(|(k, _)| k);
            let Some(k) = victim else {
                break;
            };
            let (_, victim_unit) = resident.remove(k);
            self.drop_copy(core, victim_unit, now);
            self.caches
                .as_deref_mut()
                .expect("bounded caches")
                .evictions += 1;
        }
        let l2_count = resident.len() as u32;
        let l1_set = unit & (l1_sets - 1);
        let mut in_l1 = self.lines_of_set(core, l1_set, l1_sets, true);
        while in_l1.len() > l1_ways as usize {
            let Some(k) = in_l1
                .iter()
                .enumerate()
                .filter(|(_, &(_, u))| u != unit)
                .min_by_key(|(_, &key)| key)
                .map(|(k, _)| k)
            else {
                break;
            };
            let (_, victim_unit) = in_l1.remove(k);
            let u = &mut self.units[victim_unit];
            if let Ok(i) = u.holders.binary_search_by_key(&core, |h| h.core) {
                u.holders[i].in_l1 = false;
            }
        }
        let c = self.caches.as_deref_mut().expect("bounded caches");
        c.l2_fills[core as usize * l2_sets + l2_set] = l2_count;
        c.l1_fills[core as usize * l1_sets + l1_set] = in_l1.len() as u32;
    }

    /// `core`'s copies of the lines of set `set` (of `sets`), those in the
    /// L1D only when `l1_only`, as (last use, unit), in unit order.
    fn lines_of_set(
        &self,
        core: u32,
        set: usize,
        sets: usize,
        l1_only: bool,
    ) -> Vec<(Cycle, usize)> {
        (set..self.units.len())
            .step_by(sets)
            .filter_map(|unit| {
                let u = &self.units[unit];
                let i = u.holders.binary_search_by_key(&core, |h| h.core).ok()?;
                let h = &u.holders[i];
                (!l1_only || h.in_l1).then_some((h.last_use, unit))
            })
            .collect()
    }

    /// Whether `core`'s copy of `unit` may leave its caches at `now`: the
    /// home is not busy with the line (no transaction, no atomic's hold,
    /// nobody queued) and the copy has arrived.
    pub fn may_drop(&self, core: u32, unit: usize, now: Cycle) -> bool {
        let u = &self.units[unit];
        if u.busy_until > now || u.locked_until > now || !u.waiting.is_empty() {
            return false;
        }
        u.holders
            .binary_search_by_key(&core, |h| h.core)
            .is_ok_and(|k| u.holders[k].ready_at <= now)
    }

    /// `core`'s copy of `unit` leaves its private caches at `now` (an
    /// eviction, or deep idle's write-back), if [`Coherence::may_drop`]
    /// allows: a Modified or Owned copy's data is written back (to memory;
    /// where the L3 keeps lines, a later reader of the domain still finds
    /// another core's clean copy there), a clean copy is dropped, and the
    /// directory forgets the core. The next reader finds no cache holding
    /// the line unless another core does. Returns whether it left.
    pub fn drop_copy(&mut self, core: u32, unit: usize, now: Cycle) -> bool {
        if !self.may_drop(core, unit, now) {
            return false;
        }
        let u = &mut self.units[unit];
        let Ok(k) = u.holders.binary_search_by_key(&core, |h| h.core) else {
            return false;
        };
        u.holders.remove(k);
        u.dir_sharers.remove(core);
        u.dir_owner = u
            .holders
            .iter()
            .find(|h| h.state.supplies_data())
            .map(|h| h.core);
        self.note_copy_lost(core);
        true
    }

    /// Whether `core`'s copy of `unit` is in its L1D (bounded caches), or
    /// held at all (unbounded: every copy counts as in the L1D).
    pub fn in_l1(&self, core: u32, unit: usize) -> bool {
        let u = &self.units[unit];
        u.holders
            .binary_search_by_key(&core, |h| h.core)
            .is_ok_and(|k| u.holders[k].in_l1)
    }

    /// Whether `core` counts its lines per set (it once held more lines
    /// than its L1D has ways): only then can a fill choose a victim.
    #[inline]
    pub(super) fn counts_per_set(&self, core: u32) -> bool {
        self.caches
            .as_deref()
            .is_some_and(|c| c.core_fills[core as usize] >= PER_SET)
    }

    /// Whether `core`'s caches have once had a full set.
    pub(super) fn pressured(&self, core: u32) -> bool {
        self.caches
            .as_deref()
            .is_some_and(|c| c.pressured[core as usize])
    }

    /// Lines the private L2s evicted so far (0 with unbounded caches).
    pub fn evictions(&self) -> u64 {
        self.caches.as_deref().map_or(0, |c| c.evictions)
    }

    /// Accesses that found their line in the core's L2 but not its L1D.
    pub fn l2_hits(&self) -> u64 {
        self.caches.as_deref().map_or(0, |c| c.l2_hits)
    }

    /// The hoisted loop's stamp of recency on a private line it used
    /// ([`Coherence::private_line`]) at `now`.
    #[inline]
    pub fn touch_private(&mut self, unit: usize, line: PrivateLine, at: Cycle) {
        let h = &mut self.units[unit].holders[line.holder as usize];
        h.last_use = h.last_use.max(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::LinuxCpu;
    use crate::memory::MemoryLayout;
    use crate::topology::{LatencySpec, MachineSpec};

    const TAG: RequestTag = RequestTag::new(CpuIndex::new(0), RequestKind::Demand);
    const L1_HIT: u64 = 4;
    const L2_HIT: u64 = 12;

    /// Two cores of one L3 domain, with an L1D of 1 KiB in 2 ways (8 sets,
    /// 16 lines) and an L2 of 4 KiB in 4 ways (16 sets, 64 lines).
    fn topology(l3_shared_lines: L3SharedLines) -> Topology {
        Topology::new(MachineSpec {
            cores_per_l3: 2,
            l3_shared_lines,
            private_caches: PrivateCacheSpec {
                l1d_kib: 1,
                l1d_ways: 2,
                l2_kib: 4,
                l2_ways: 4,
                l2_hit_cycles: L2_HIT,
            },
            latency: LatencySpec {
                l1_hit_cycles: L1_HIT,
                ..LatencySpec::MADE_UP
            },
            ..MachineSpec::made_up("capacity", Protocol::Mesi, Lookup::Home)
        })
        .unwrap()
    }

    fn coherence(topology: &Topology, lines: usize) -> Coherence {
        let memory = MemoryLayout {
            structs: Vec::new(),
            instances: Vec::new(),
            total_bytes: 64 * lines as u64,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: vec![0; lines],
        };
        let mut c = Coherence::new(topology, &memory);
        c.check_invariants = true;
        c
    }

    /// An access by `cpu` once the line is free: its report.
    fn access(
        c: &mut Coherence,
        t: &Topology,
        at: &mut Cycle,
        cpu: u32,
        unit: usize,
        need: Need,
    ) -> AccessReport {
        *at = (*at).max(c.busy_until(unit));
        let cpu = LinuxCpu::new(cpu);
        match c
            .request(t, *at, cpu, unit, need, Cycles::ZERO, TAG)
            .unwrap()
        {
            Requested::Done(r) => {
                *at = r.done + Cycles::new(1);
                r
            }
            Requested::Queued { .. } => panic!("line busy"),
        }
    }

    fn walk(c: &mut Coherence, t: &Topology, at: &mut Cycle, lines: usize) -> Vec<AccessReport> {
        (0..lines)
            .map(|unit| access(c, t, at, 0, unit, Need::Read))
            .collect()
    }

    #[test]
    fn a_walk_over_more_lines_than_the_l1d_holds_hits_the_l2_on_its_second_pass() {
        let t = topology(L3SharedLines::NotKept);
        let mut c = coherence(&t, 32);
        let mut at = Cycle::ZERO;
        let first = walk(&mut c, &t, &mut at, 32);
        assert!(first.iter().all(|r| !r.is_hit()));
        for pass in 0..2 {
            let again = walk(&mut c, &t, &mut at, 32);
            for r in &again {
                assert_eq!(r.route, Route::Hit, "pass {pass}, line {}", r.unit);
                assert_eq!(r.latency_cycles(), L2_HIT, "pass {pass}, line {}", r.unit);
            }
        }
        assert_eq!(c.l2_hits(), 64);
        assert_eq!(c.evictions(), 0);
        // A line just used is in the L1D: its next access costs the L1D's.
        let r = access(&mut c, &t, &mut at, 0, 31, Need::Read);
        assert_eq!(r.latency_cycles(), L1_HIT);
    }

    #[test]
    fn a_walk_within_the_l1d_hits_it() {
        let t = topology(L3SharedLines::NotKept);
        let mut c = coherence(&t, 16);
        let mut at = Cycle::ZERO;
        walk(&mut c, &t, &mut at, 16);
        let again = walk(&mut c, &t, &mut at, 16);
        assert!(again.iter().all(|r| r.latency_cycles() == L1_HIT));
        assert_eq!(c.l2_hits(), 0);
    }

    #[test]
    fn a_walk_over_more_lines_than_the_l2_holds_misses_again() {
        let t = topology(L3SharedLines::NotKept);
        let mut c = coherence(&t, 128);
        let mut at = Cycle::ZERO;
        walk(&mut c, &t, &mut at, 128);
        assert_eq!(c.evictions(), 64);
        let again = walk(&mut c, &t, &mut at, 128);
        for r in &again {
            assert_eq!(r.route, Route::Memory { node: 0 }, "line {}", r.unit);
            assert_eq!(r.requester_before, LineState::Invalid);
        }
        // Every core holds at most the L2's 64 lines.
        let held = (0..128)
            .filter(|&u| c.state(0, u) != LineState::Invalid)
            .count();
        assert_eq!(held, 64);
    }

    /// Lines 0, 16, 32, 48 and 64 share one L2 set of 4 ways.
    #[test]
    fn a_modified_line_evicted_is_written_back_and_read_from_memory() {
        for l3 in [L3SharedLines::NotKept, L3SharedLines::Inclusive] {
            let t = topology(l3);
            let mut c = coherence(&t, 80);
            let mut at = Cycle::ZERO;
            access(&mut c, &t, &mut at, 0, 0, Need::Write);
            assert_eq!(c.state(0, 0), LineState::Modified);
            for unit in [16, 32, 48, 64] {
                access(&mut c, &t, &mut at, 0, unit, Need::Read);
            }
            assert_eq!(c.state(0, 0), LineState::Invalid, "{l3:?}");
            assert_eq!(c.evictions(), 1);
            let r = access(&mut c, &t, &mut at, 1, 0, Need::Read);
            assert_eq!(r.route, Route::Memory { node: 0 }, "{l3:?}");
            assert_eq!(r.supplier, None);
            assert!(!r.hitm);
            assert_eq!(r.requester_after, LineState::Exclusive);
            // The write is not lost: the line's write count moved on once.
            assert_eq!(c.version(0), 1);
        }
    }

    #[test]
    fn ways_plus_one_lines_of_a_set_evict_the_least_recently_used() {
        let t = topology(L3SharedLines::NotKept);
        let mut c = coherence(&t, 80);
        let mut at = Cycle::ZERO;
        for unit in [0, 16, 32, 48] {
            access(&mut c, &t, &mut at, 0, unit, Need::Read);
        }
        // 0 used again: 16 is now the least recently used.
        let r = access(&mut c, &t, &mut at, 0, 0, Need::Read);
        assert!(r.is_hit());
        access(&mut c, &t, &mut at, 0, 64, Need::Read);
        assert_eq!(c.state(0, 16), LineState::Invalid);
        for unit in [0, 32, 48, 64] {
            assert_ne!(c.state(0, unit), LineState::Invalid, "line {unit}");
        }
        // The L1D set (lines 0, 8, 16, ... in 2 ways) keeps the last two
        // of its lines used: 0 and 64 (48 and 32 fell to the L2).
        assert!(c.in_l1(0, 0) && c.in_l1(0, 64));
        assert!(!c.in_l1(0, 32) && !c.in_l1(0, 48));
    }

    #[test]
    fn a_line_taken_by_another_core_frees_its_way() {
        let t = topology(L3SharedLines::NotKept);
        let mut c = coherence(&t, 80);
        let mut at = Cycle::ZERO;
        for unit in [0, 16, 32, 48] {
            access(&mut c, &t, &mut at, 0, unit, Need::Read);
        }
        // Core 1's write takes line 16 from core 0: the set has a free way.
        access(&mut c, &t, &mut at, 1, 16, Need::Write);
        access(&mut c, &t, &mut at, 0, 64, Need::Read);
        assert_eq!(c.evictions(), 0);
        for unit in [0, 32, 48, 64] {
            assert_ne!(c.state(0, unit), LineState::Invalid, "line {unit}");
        }
    }

    /// The same random accesses give the same states and reports.
    #[test]
    fn evictions_are_deterministic() {
        let run = || {
            let t = topology(L3SharedLines::Inclusive);
            let mut c = coherence(&t, 200);
            let mut at = Cycle::ZERO;
            let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut reports = Vec::new();
            for _ in 0..2000 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let unit = ((state >> 33) % 200) as usize;
                let cpu = ((state >> 20) % 2) as u32;
                let need = if (state >> 10).is_multiple_of(3) {
                    Need::Write
                } else {
                    Need::Read
                };
                reports.push(access(&mut c, &t, &mut at, cpu, unit, need));
            }
            (c, reports)
        };
        let (a, ra) = run();
        let (b, rb) = run();
        assert!(a.evictions() > 0);
        assert_eq!(ra, rb);
        assert!(a == b);
    }
}
