//! The statistics probe: per-field and per-line attribution of coherence
//! traffic, in the spirit of `perf c2c`, and the distribution of cycles per
//! iteration.

use crate::coherence::Route;
use crate::cpu::LinuxCpu;
use crate::probe::{AccessEvent, AccessKind, AtomicSums, PrivateHits, Probe};
use crate::time::Cycle;

/// Counters for one field or one line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    /// Accesses answered by the core's own cache (or its store buffer).
    pub hits: u64,
    pub misses: u64,
    /// Misses served from a Modified or Owned copy in another core.
    pub hitm: u64,
    /// Those of them served from a core on another NUMA node (`perf c2c`'s
    /// remote HITM; the rest are local).
    pub hitm_remote: u64,
    /// Copies invalidated in other caches by these accesses.
    pub invalidations: u64,
    /// Misses with a leg crossing sockets.
    pub cross_socket: u64,
    /// Cycles CPUs waited for these accesses (not counting store drains).
    pub stall_cycles: u64,
    /// Cycles CPUs spent polling: from a load to the same CPU's next load
    /// of the same bytes that returned the same value, with no access of
    /// its own between (a spin-wait's period, `while lock != 0`), less the
    /// first load's own stall (counted in `stall_cycles`), so the two never
    /// overlap. Private per-CPU fields are left out: no other CPU can end
    /// such a wait.
    pub spin_cycles: u64,
    /// Cycles these accesses' requests waited at the line's home behind
    /// other requests for the line before the home took them (a lock's
    /// queue of atomics, readers queued at a released line): the part of
    /// `stall_cycles` spent queued.
    pub queue_wait_cycles: u64,
    /// Prefetches: adjacent-line reads of a buddy line that a miss on this
    /// field issued, and run-ahead requests for this field (per field), or
    /// those for this line (per line), apart from the accesses above; the
    /// CPU waits for none of them.
    pub prefetches: u64,
    /// Those of them served from a Modified or Owned copy in another core.
    pub prefetch_hitm: u64,
    /// Atomics that hit the core's own L1 (not a line its SMT sibling last
    /// wrote): their locked operation holds the L1 access
    /// (`LatencySpec::locked_op_after_hit_cycles`).
    pub atomic_hits: u64,
}

/// The latencies of one CPU's accesses to one field, from which a report
/// prices what one of them takes as a micro-benchmark times it (see
/// [`Stats::count_field_costs_per_cpu`]): each access from its issue to its
/// data (a store from its drain's start to its write), and an atomic's
/// locked operation, which the report adds from the machine's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldCost {
    /// Cycles from issue to data of the accesses reported one by one (a
    /// load, a store's drain or direct write, an atomic), and the cycles
    /// beyond an L1 hit of those reported summed.
    pub latency_cycles: u64,
    /// Accesses reported summed (plain hits, atomics), whose L1 access
    /// the report adds (`l1_hit_cycles` each).
    pub summed_accesses: u64,
    pub atomics: u64,
    /// Atomics that hit the core's own L1 (as [`Traffic::atomic_hits`]).
    pub atomic_hits: u64,
}

/// Sums traffic counts (over fields, instances or members).
impl std::ops::AddAssign<&Traffic> for Traffic {
    #[inline]
    fn add_assign(&mut self, t: &Traffic) {
        self.loads += t.loads;
        self.stores += t.stores;
        self.atomics += t.atomics;
        self.hits += t.hits;
        self.misses += t.misses;
        self.hitm += t.hitm;
        self.hitm_remote += t.hitm_remote;
        self.invalidations += t.invalidations;
        self.cross_socket += t.cross_socket;
        self.stall_cycles += t.stall_cycles;
        self.spin_cycles += t.spin_cycles;
        self.queue_wait_cycles += t.queue_wait_cycles;
        self.prefetches += t.prefetches;
        self.prefetch_hitm += t.prefetch_hitm;
        self.atomic_hits += t.atomic_hits;
    }
}

impl Traffic {
    pub fn accesses(&self) -> u64 {
        self.loads + self.stores + self.atomics
    }

    /// HITM served from a core on the same NUMA node.
    pub fn hitm_local(&self) -> u64 {
        self.hitm - self.hitm_remote
    }

    /// Every cycle CPUs waited on this field or line: stalled on an
    /// access (queued at its home included) or polling it.
    pub fn wait_cycles(&self) -> u64 {
        self.stall_cycles + self.spin_cycles
    }

    /// What one access adds to the counts of its field and of its line
    /// (computed once for both).
    #[inline]
    fn of_access(event: &AccessEvent<'_>) -> Traffic {
        let mut t = Traffic::default();
        if event.kind.is_prefetch() {
            // Prefetch traffic is counted apart: it is no access of the
            // program's (a prefetch the core's own cache answers costs
            // nothing and is not counted).
            if let Some(r) = event.report.filter(|r| !r.is_hit()) {
                t.prefetches = 1;
                t.prefetch_hitm = r.hitm as u64;
            }
            return t;
        }
        match event.kind {
            AccessKind::Load | AccessKind::LoadForwarded => t.loads = 1,
            AccessKind::Store => t.stores = 1,
            // The program's store was counted when it was posted; its drain
            // brings the line traffic.
            AccessKind::StoreDrain => {}
            AccessKind::Atomic(_) => t.atomics = 1,
            AccessKind::Prefetch | AccessKind::RunAhead | AccessKind::StoreRfoAhead => {}
        }
        match event.report {
            None => t.hits = 1,
            Some(r) => {
                if r.is_hit() {
                    t.hits = 1;
                    t.atomic_hits = (matches!(event.kind, AccessKind::Atomic(_))
                        && r.route == Route::Hit) as u64;
                } else {
                    t.misses = 1;
                    t.hitm = r.hitm as u64;
                    t.hitm_remote = r.hitm_from_other_node() as u64;
                    t.cross_socket = r.cross_socket as u64;
                    // A drain's wait is the store buffer's, not the CPU's.
                    if event.kind != AccessKind::StoreDrain {
                        t.queue_wait_cycles = (r.started - r.issued).get();
                    }
                }
                t.invalidations = r.invalidations as u64;
            }
        }
        t.stall_cycles = event.stall_cycles;
        t
    }
}

/// A log-linear histogram: exact below 128, then 64 buckets per power of
/// two (under 1.6 % relative error), deterministic and small. A quantile
/// answers its bucket's highest value (HdrHistogram's "highest equivalent
/// value"), capped at the largest sample: never below the exact
/// percentile, less than 1/64 above it, and constant samples give the
/// constant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    max: u64,
}

const SUB_BUCKET_BITS: u32 = 6;
const EXACT_LIMIT: u64 = 2 << SUB_BUCKET_BITS;

/// Below `EXACT_LIMIT`, the value itself; above, 64 buckets per power of
/// two: the value's top `SUB_BUCKET_BITS + 1` bits (`mantissa`, 64 to 127)
/// after the `shift` that leaves them, at `shift * 64 + mantissa`, which
/// continues the exact range (shift 1 starts at 128). Written without a
/// branch: below 128 the shift is 0 and the formula gives the value.
#[inline]
fn bucket_of(value: u64) -> usize {
    let exponent = 63 - (value | 1).leading_zeros();
    let shift = exponent.saturating_sub(SUB_BUCKET_BITS);
    (((shift as u64) << SUB_BUCKET_BITS) + (value >> shift)) as usize
}

fn bucket_low(bucket: usize) -> u64 {
    let bucket = bucket as u64;
    if bucket < EXACT_LIMIT {
        return bucket;
    }
    let above = bucket - EXACT_LIMIT;
    let shift = above / (1 << SUB_BUCKET_BITS) + 1;
    let mantissa = above % (1 << SUB_BUCKET_BITS) + (1 << SUB_BUCKET_BITS);
    mantissa << shift
}

/// The largest value `bucket` holds: one below the next bucket's lowest.
/// The last bucket's successor would start at 2^64, which the shift
/// leaves as 0, so the wrapping subtraction gives `u64::MAX`, its highest.
fn bucket_high(bucket: usize) -> u64 {
    bucket_low(bucket + 1).wrapping_sub(1)
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, value: u64) {
        let b = bucket_of(value);
        match self.counts.get_mut(b) {
            Some(count) => *count += 1,
            None => self.grow_to_count(b),
        }
        self.total += 1;
        self.sum += value as u128;
        self.max = self.max.max(value);
    }
    /// Records each of `values`; answers their largest and their sum (0
    /// for none). The totals are kept in locals through the loop (written
    /// through `self` after each bucket's count, they were reloaded).
    #[inline]
    fn record_all(&mut self, values: &[u64]) -> (u64, u64) {
        let (mut largest, mut sum) = (0u64, 0u64);
        let mut wide_sum = 0u128;
        for &value in values {
            let b = bucket_of(value);
            match self.counts.get_mut(b) {
                Some(count) => *count += 1,
                None => self.grow_to_count(b),
            }
            wide_sum += value as u128;
            largest = largest.max(value);
            sum = sum.wrapping_add(value);
        }
        self.total += values.len() as u64;
        self.sum += wide_sum;
        self.max = self.max.max(largest);
        (largest, sum)
    }
    /// Room for bucket `b`, and its first count: seldom needed, kept out
    /// of `record`.
    #[cold]
    #[inline(never)]
    fn grow_to_count(&mut self, b: usize) {
        self.counts.resize(b + 1, 0);
        self.counts[b] = 1;
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }
    pub fn count(&self) -> u64 {
        self.total
    }
    /// Exact mean, in hundredths of a cycle (integer, so reports are
    /// stable), computed in 128 bits: a mean of more than `u64::MAX / 100`
    /// cycles (an iteration of 10^17 cycles and more) saturates, it never
    /// wraps into a small one.
    pub fn mean_centi(&self) -> u64 {
        u64::try_from(self.mean_centi_wide()).unwrap_or(u64::MAX)
    }
    fn mean_centi_wide(&self) -> u128 {
        if self.total == 0 {
            0
        } else {
            self.sum * 100 / self.total as u128
        }
    }
    /// The mean in cycles, from the exact 128-bit one.
    pub fn mean(&self) -> f64 {
        self.mean_centi_wide() as f64 / 100.0
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// The value at `per_mille`/1000 of the distribution (nearest rank):
    /// the highest value of the sample's bucket, capped at the largest
    /// sample. That is never below the exact percentile (the reported p99
    /// of iterations all of 425 cycles is 425, not its bucket's lowest,
    /// 424, which read as a p99 under the mean) and less than 1/64 above
    /// it; exact below 128. Monotone in `per_mille`: a p99 is never below
    /// the p50.
    pub fn quantile(&self, per_mille: u64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = (self.total as u128 * per_mille as u128)
            .div_ceil(1000)
            .max(1);
        let mut seen: u128 = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u128;
            if seen >= rank {
                return bucket_high(b).min(self.max);
            }
        }
        self.max
    }
}

/// What the accesses at one offset of a line did (`perf c2c`'s per-offset
/// rows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffsetTraffic {
    /// Byte offset inside the line.
    pub offset_bytes: u32,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub hitm_local: u64,
    pub hitm_remote: u64,
}

/// Who touched one line and where: per offset, and the set of CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineDetail {
    /// Sorted by offset; only offsets that were accessed.
    pub offsets: Vec<OffsetTraffic>,
    /// Bit `c` set: CPU `c` made a measured access to the line.
    pub cpus: Vec<u64>,
}

impl LineDetail {
    fn offset(&mut self, offset_bytes: u32) -> &mut OffsetTraffic {
        let k = match self
            .offsets
            .binary_search_by_key(&offset_bytes, |o| o.offset_bytes)
        {
            Ok(k) => k,
            Err(k) => {
                self.offsets.insert(
                    k,
                    OffsetTraffic {
                        offset_bytes,
                        ..OffsetTraffic::default()
                    },
                );
                k
            }
        };
        &mut self.offsets[k]
    }

    fn touched_by(&mut self, cpu: LinuxCpu) {
        let word = cpu.slot() / 64;
        if self.cpus.len() <= word {
            self.cpus.resize(word + 1, 0);
        }
        self.cpus[word] |= 1 << (cpu.get() % 64);
    }

    /// The CPUs that touched the line, ascending.
    pub fn cpu_list(&self) -> Vec<LinuxCpu> {
        let mut out = Vec::new();
        for (w, &bits) in self.cpus.iter().enumerate() {
            for b in 0..64 {
                if bits & (1 << b) != 0 {
                    out.push(LinuxCpu::new((w * 64 + b) as u32));
                }
            }
        }
        out
    }
}

/// Collects traffic per field and per line, and cycles per iteration.
#[derive(Clone, Debug)]
pub struct Stats {
    pub per_field: Vec<Traffic>,
    pub per_unit: Vec<Traffic>,
    /// Per line: accesses per offset and the CPUs that made them.
    pub per_unit_detail: Vec<LineDetail>,
    pub iteration_cycles: Histogram,
    /// Cycles of each CPU's longest measured iteration, in the order of the
    /// `cpus` given to [`Stats::new`] (for fairness: the longest wait).
    pub longest_iteration: Vec<u64>,
    /// Cycles of each CPU's measured iterations added up, in the same order
    /// (for figures of one thread group).
    pub iteration_cycles_per_cpu: Vec<u64>,
    pub stalled_on_store_buffer_cycles: u64,
    /// log2 of the coherence unit's size.
    unit_shift: u32,
    /// Per CPU slot and field id (`slot * field_count + field_id`): what
    /// the CPU spent in accesses to the field. Empty unless
    /// [`Stats::count_field_costs_per_cpu`] asked for it (it takes a
    /// counter per CPU and field, which only a `[[measured]]` figure of
    /// one thread group's accesses needs).
    pub field_costs_per_cpu: Vec<FieldCost>,
    field_count: usize,
    /// Per field id: only reached through private places (left out of
    /// spin attribution; see [`Traffic::spin_cycles`]).
    private_fields: Vec<bool>,
    /// Iterations per CPU before its accesses are counted.
    warmup: u64,
    /// Per CPU number: its slot in `cpus` (`None` for a CPU that runs no
    /// script) and whether its accesses are counted yet, side by side since
    /// every access and iteration end looks both up.
    by_cpu: Vec<CpuState>,
}

#[derive(Clone, Copy, Debug)]
struct CpuState {
    slot: Option<u32>,
    measuring: bool,
    /// The CPU's last access, when it was a load of a shared field: a
    /// next load of the same bytes giving the same value polls.
    last_load: Option<LastLoad>,
}

impl CpuState {
    /// Cycles the CPU polled if its load of `load`'s bytes repeats its
    /// last access (see [`Traffic::spin_cycles`]); keeps the load as the
    /// last access.
    #[inline]
    fn poll(&mut self, load: LastLoad) -> u64 {
        let spun = match self.last_load {
            Some(last)
                if (last.address, last.size_bytes, last.value)
                    == (load.address, load.size_bytes, load.value) =>
            {
                // A load parked for a miss buffer issues after a younger
                // one that hit (`issue_parked_loads`), yet reports first
                // (program order): the younger one polled no cycles.
                load.issued
                    .saturating_sub(last.issued)
                    .saturating_sub(last.stall_cycles)
            }
            _ => 0,
        };
        self.last_load = Some(load);
        spun
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LastLoad {
    address: u64,
    size_bytes: u32,
    value: i64,
    issued: u64,
    /// The load's own stall (its miss), not counted again as polling.
    stall_cycles: u64,
}

impl Stats {
    /// The statistics of a run of `config`: its fields, lines, running CPUs
    /// and warm-up.
    pub fn for_run(config: &crate::engine::SimConfig) -> Stats {
        let cpus = Stats::cpu_slots(config);
        let mut stats = Stats::new(
            config.program.field_names.len(),
            config.memory.unit_count(),
            config.memory.unit_bytes,
            &cpus,
            config.warmup_iterations,
        );
        stats.private_fields = crate::engine::private_fields(config);
        stats
    }

    /// The CPUs of a run's threads, each once, in the threads' order: the
    /// slots of the per-CPU figures ([`Stats::for_run`]). Threads sharing a
    /// CPU share its slot.
    pub fn cpu_slots(config: &crate::engine::SimConfig) -> Vec<LinuxCpu> {
        let mut seen = vec![false; config.topology.cpu_count() as usize];
        let mut cpus: Vec<LinuxCpu> = Vec::with_capacity(config.threads.len());
        for t in &config.threads {
            if let Some(seen) = seen.get_mut(t.cpu.slot()) {
                if !std::mem::replace(seen, true) {
                    cpus.push(t.cpu);
                }
            }
        }
        cpus
    }

    /// `cpus`: the CPUs that run scripts; `warmup` iterations are not measured.
    pub fn new(
        field_count: usize,
        unit_count: usize,
        unit_bytes: u32,
        cpus: &[LinuxCpu],
        warmup: u64,
    ) -> Stats {
        let max_cpu = cpus
            .iter()
            .copied()
            .max()
            .map(|c| c.slot() + 1)
            .unwrap_or(0);
        let mut by_cpu = vec![
            CpuState {
                slot: None,
                measuring: false,
                last_load: None,
            };
            max_cpu
        ];
        for (slot, &cpu) in cpus.iter().enumerate() {
            by_cpu[cpu.slot()] = CpuState {
                slot: Some(slot as u32),
                measuring: warmup == 0,
                last_load: None,
            };
        }
        Stats {
            per_field: vec![Traffic::default(); field_count],
            per_unit: vec![Traffic::default(); unit_count],
            per_unit_detail: vec![LineDetail::default(); unit_count],
            iteration_cycles: Histogram::default(),
            longest_iteration: vec![0; cpus.len()],
            iteration_cycles_per_cpu: vec![0; cpus.len()],
            stalled_on_store_buffer_cycles: 0,
            field_costs_per_cpu: Vec::new(),
            field_count,
            unit_shift: unit_bytes.trailing_zeros(),
            private_fields: vec![false; field_count],
            warmup,
            by_cpu,
        }
    }

    /// Counts, from here on, what each CPU spends in accesses to each
    /// field ([`Stats::field_costs_per_cpu`]).
    pub fn count_field_costs_per_cpu(&mut self) {
        self.field_costs_per_cpu =
            vec![FieldCost::default(); self.longest_iteration.len() * self.field_count];
    }

    /// What CPU slot `slot` spent in accesses to field `field_id`, when
    /// counted (see [`Stats::field_costs_per_cpu`]).
    pub fn field_cost(&self, slot: usize, field_id: usize) -> Option<&FieldCost> {
        if field_id >= self.field_count {
            return None;
        }
        self.field_costs_per_cpu
            .get(slot * self.field_count + field_id)
    }

    /// The counter of `slot`'s accesses to `field_id`, when counted.
    #[inline]
    fn field_cost_mut(&mut self, slot: Option<u32>, field_id: u32) -> Option<&mut FieldCost> {
        if self.field_costs_per_cpu.is_empty() || field_id as usize >= self.field_count {
            return None;
        }
        let k = slot? as usize * self.field_count + field_id as usize;
        self.field_costs_per_cpu.get_mut(k)
    }

    /// The slot of `cpu` in the per-CPU figures (None: it runs no script).
    #[inline]
    fn slot_of(&self, cpu: LinuxCpu) -> Option<u32> {
        self.by_cpu.get(cpu.slot()).and_then(|state| state.slot)
    }

    #[inline]
    fn measuring(&self, cpu: LinuxCpu) -> bool {
        self.by_cpu
            .get(cpu.slot())
            .is_some_and(|state| state.measuring)
    }

    fn is_private(&self, field_id: u32) -> bool {
        self.private_fields
            .get(field_id as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Cycles CPU `cpu` polled if its load of `load`'s bytes repeats its
    /// last access (see [`Traffic::spin_cycles`]); keeps the load as the
    /// last access.
    fn poll(&mut self, cpu: LinuxCpu, load: LastLoad) -> u64 {
        match self.by_cpu.get_mut(cpu.slot()) {
            Some(state) => state.poll(load),
            None => 0,
        }
    }

    /// CPU `cpu` made an access that is not a poll.
    fn not_a_poll(&mut self, cpu: LinuxCpu) {
        if let Some(state) = self.by_cpu.get_mut(cpu.slot()) {
            state.last_load = None;
        }
    }

    /// Adds one access's counts at `address` (of `cpu`) to the line's detail.
    /// Always inline: every counted access comes here, and as a call the
    /// caller's dozen live counts were spilled around it.
    #[inline(always)]
    fn add_detail(&mut self, cpu: LinuxCpu, address: u64, counts: &Traffic) {
        let unit = (address >> self.unit_shift) as usize;
        let offset_bytes = (address & ((1 << self.unit_shift) - 1)) as u32;
        if let Some(d) = self.per_unit_detail.get_mut(unit) {
            let o = d.offset(offset_bytes);
            o.loads += counts.loads;
            o.stores += counts.stores;
            o.atomics += counts.atomics;
            o.hitm_local += counts.hitm - counts.hitm_remote;
            o.hitm_remote += counts.hitm_remote;
            if counts.accesses() > 0 {
                d.touched_by(cpu);
            }
        }
    }

    pub fn total(&self) -> Traffic {
        let mut t = Traffic::default();
        for f in &self.per_field {
            t += f;
        }
        t
    }
}

impl Probe for Stats {
    fn on_access(&mut self, event: &AccessEvent<'_>) {
        let private = self.is_private(event.field_id);
        // One look at the CPU's state, for the poll and the measuring flag
        // (a CPU that runs no script has neither).
        let Some(state) = self.by_cpu.get_mut(event.cpu.slot()) else {
            return;
        };
        let mut spun = 0;
        if !private {
            match event.kind {
                // Neither is the CPU's own program access.
                AccessKind::StoreDrain
                | AccessKind::Prefetch
                | AccessKind::RunAhead
                | AccessKind::StoreRfoAhead => {}
                AccessKind::Load => {
                    spun = state.poll(LastLoad {
                        address: event.address,
                        size_bytes: event.size_bytes,
                        value: event.value,
                        issued: event.issued.get(),
                        stall_cycles: event.stall_cycles,
                    })
                }
                _ => state.last_load = None,
            }
        }
        if !state.measuring {
            return;
        }
        let slot = state.slot;
        let mut counts = Traffic::of_access(event);
        counts.spin_cycles = spun;
        if let Some(c) = self.field_cost_mut(slot, event.field_id) {
            if !event.kind.is_prefetch() {
                c.latency_cycles += event.latency_cycles;
            }
            c.atomics += counts.atomics;
            c.atomic_hits += counts.atomic_hits;
        }
        if !event.kind.is_prefetch() {
            self.add_detail(event.cpu, event.address, &counts);
        }
        if let Some(f) = self.per_field.get_mut(event.field_id as usize) {
            *f += &counts;
        }
        let unit = (event.address >> self.unit_shift) as usize;
        if let Some(u) = self.per_unit.get_mut(unit) {
            *u += &counts;
        }
    }

    /// The statistics are sums, so summed hits give the same counts.
    fn needs_every_access(&self) -> bool {
        false
    }

    /// Hits count only once the CPU measures (`on_iteration` turns that
    /// on at the warm-up's end, for good), and then only their sums.
    fn measured_hits_at_end(&self) -> bool {
        true
    }

    /// Only sums are kept; a CPU's state is its last load (read by its next
    /// load or summed polls, which an atomic resets) and whether it
    /// measures (changed at a warm-up iteration's end): atomics summed up
    /// to any of these count as they would one by one.
    fn summed_atomics(&self) -> bool {
        true
    }

    fn on_atomics(&mut self, cpu: LinuxCpu, sums: &AtomicSums) {
        let private = self.is_private(sums.field_id);
        let Some(state) = self.by_cpu.get_mut(cpu.slot()) else {
            return;
        };
        // What `on_access` does for each of them: no poll after an atomic.
        if !private {
            state.last_load = None;
        }
        if !state.measuring {
            return;
        }
        let slot = state.slot;
        if let Some(c) = self.field_cost_mut(slot, sums.field_id) {
            c.latency_cycles += sums.stall_cycles;
            c.summed_accesses += sums.count;
            c.atomics += sums.count;
            c.atomic_hits += sums.l1_hits;
        }
        let counts = Traffic {
            atomics: sums.count,
            hits: sums.hits,
            atomic_hits: sums.l1_hits,
            misses: sums.misses,
            hitm: sums.hitm,
            hitm_remote: sums.hitm_remote,
            invalidations: sums.invalidations,
            cross_socket: sums.cross_socket,
            stall_cycles: sums.stall_cycles,
            queue_wait_cycles: sums.queue_wait_cycles,
            ..Traffic::default()
        };
        self.add_detail(cpu, sums.address, &counts);
        if let Some(f) = self.per_field.get_mut(sums.field_id as usize) {
            *f += &counts;
        }
        if let Some(u) = self
            .per_unit
            .get_mut((sums.address >> self.unit_shift) as usize)
        {
            *u += &counts;
        }
    }

    fn on_private_hits(&mut self, cpu: LinuxCpu, hits: &PrivateHits) {
        let mut spun = 0;
        if let (Some(last_issued), false) = (hits.spin_last_load, self.is_private(hits.field_id)) {
            // The polls stepping would have made one by one: the same
            // load each time, so only the last one's cycle matters.
            if let Some(last) = self.by_cpu.get(cpu.slot()).and_then(|s| s.last_load) {
                spun = self.poll(
                    cpu,
                    LastLoad {
                        issued: last_issued,
                        // The summed polls are plain hits.
                        stall_cycles: hits.stall_cycles,
                        ..last
                    },
                );
            }
        }
        if !self.measuring(cpu) {
            return;
        }
        if let Some(c) = self.field_cost_mut(self.slot_of(cpu), hits.field_id) {
            c.latency_cycles += hits.stall_cycles;
            c.summed_accesses += hits.loads + hits.stores;
        }
        let add = |t: &mut Traffic| {
            t.loads += hits.loads;
            t.stores += hits.stores;
            t.hits += hits.loads + hits.stores;
            t.stall_cycles += hits.stall_cycles;
            t.spin_cycles += spun;
        };
        self.add_detail(
            cpu,
            hits.address,
            &Traffic {
                loads: hits.loads,
                stores: hits.stores,
                ..Traffic::default()
            },
        );
        if let Some(f) = self.per_field.get_mut(hits.field_id as usize) {
            add(f);
        }
        if let Some(u) = self
            .per_unit
            .get_mut((hits.address >> self.unit_shift) as usize)
        {
            add(u);
        }
    }

    fn on_iteration(
        &mut self,
        cpu: LinuxCpu,
        index: u64,
        start: Cycle,
        end: Cycle,
        measured: bool,
    ) {
        // The statistics are serialized counts: plain cycles from here on.
        let iteration_cycles = (end - start).get();
        let Some(state) = self.by_cpu.get_mut(cpu.slot()) else {
            if measured {
                self.iteration_cycles.record(iteration_cycles);
            }
            return;
        };
        // A wait belongs to its iteration.
        state.last_load = None;
        if measured {
            self.iteration_cycles.record(iteration_cycles);
            if let Some(slot) = state.slot.map(|s| s as usize) {
                if let Some(l) = self.longest_iteration.get_mut(slot) {
                    *l = (*l).max(iteration_cycles);
                }
                if let Some(t) = self.iteration_cycles_per_cpu.get_mut(slot) {
                    *t += iteration_cycles;
                }
            }
        } else if state.slot.is_some() && index + 1 >= self.warmup {
            // The warm-up's last iteration ended: measure from here on.
            state.measuring = true;
        }
    }

    /// Each iteration's length is all the statistics keep of it, and the
    /// poll state it resets is read only by the CPU's next load or polls.
    fn batched_iterations(&self) -> bool {
        true
    }

    /// What `on_iteration` does for each measured one.
    fn on_iterations(&mut self, cpu: LinuxCpu, cycles: &[u64]) {
        let (longest, sum) = self.iteration_cycles.record_all(cycles);
        let Some(state) = self.by_cpu.get_mut(cpu.slot()) else {
            return;
        };
        state.last_load = None;
        if let Some(slot) = state.slot.map(|s| s as usize) {
            if let Some(l) = self.longest_iteration.get_mut(slot) {
                *l = (*l).max(longest);
            }
            if let Some(t) = self.iteration_cycles_per_cpu.get_mut(slot) {
                *t += sum;
            }
        }
    }

    fn on_store_posted(
        &mut self,
        cpu: LinuxCpu,
        _cycle: Cycle,
        address: u64,
        field_id: u32,
        _value: i64,
    ) {
        if !self.is_private(field_id) {
            self.not_a_poll(cpu);
        }
        if !self.measuring(cpu) {
            return;
        }
        if let Some(f) = self.per_field.get_mut(field_id as usize) {
            f.stores += 1;
        }
        self.add_detail(
            cpu,
            address,
            &Traffic {
                stores: 1,
                ..Traffic::default()
            },
        );
        if let Some(u) = self.per_unit.get_mut((address >> self.unit_shift) as usize) {
            u.stores += 1;
        }
    }

    fn on_store_buffer_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        field_id: u32,
    ) {
        if !self.measuring(cpu) {
            return;
        }
        let waited = (until - from).get();
        self.stalled_on_store_buffer_cycles += waited;
        // The wait is the cost of the store that had to drain first.
        if let Some(f) = self.per_field.get_mut(field_id as usize) {
            f.stall_cycles += waited;
        }
        if let Some(u) = self.per_unit.get_mut((address >> self.unit_shift) as usize) {
            u.stall_cycles += waited;
        }
    }

    fn on_load_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        field_id: Option<u32>,
    ) {
        // A miss the CPU went on past costs the cycles a use waited for it.
        let Some(field_id) = field_id else {
            return;
        };
        if !self.measuring(cpu) {
            return;
        }
        let waited = (until - from).get();
        if let Some(f) = self.per_field.get_mut(field_id as usize) {
            f.stall_cycles += waited;
        }
        if let Some(u) = self.per_unit.get_mut((address >> self.unit_shift) as usize) {
            u.stall_cycles += waited;
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_those_of_the_two_range_formula() {
        // Exact below 128, then `128 + (shift - 1) * 64 + mantissa - 64`:
        // the formula `bucket_of` writes without a branch.
        let two_ranges = |value: u64| -> usize {
            if value < EXACT_LIMIT {
                return value as usize;
            }
            let shift = 63 - value.leading_zeros() - SUB_BUCKET_BITS;
            let mantissa = value >> shift;
            (EXACT_LIMIT + (shift as u64 - 1) * 64 + mantissa - 64) as usize
        };
        let mut values: Vec<u64> = (0..100_000).collect();
        for bit in 0..64 {
            let p = 1u64 << bit;
            values.extend([p - 1, p, p + 1, p | (p >> 1), p.wrapping_mul(3) / 2]);
        }
        values.push(u64::MAX);
        for v in values {
            assert_eq!(bucket_of(v), two_ranges(v), "{v}");
        }
    }

    #[test]
    fn histogram_buckets_round_trip_within_two_percent() {
        for v in [0u64, 1, 127, 128, 129, 1000, 4095, 65_537, 1 << 40] {
            let low = bucket_low(bucket_of(v));
            assert!(low <= v, "{v}: low {low}");
            assert!((v - low) as f64 <= v as f64 * 0.016 + 0.5, "{v}: low {low}");
        }
        let mut prev = 0;
        for b in 0..2000 {
            let low = bucket_low(b);
            assert!(b == 0 || low > prev, "bucket {b}");
            assert_eq!(bucket_of(low), b);
            prev = low;
        }
    }

    #[test]
    fn recording_a_batch_is_recording_each() {
        let values = [0, 5, 127, 128, 4096, 1 << 40, 77, 3, 1 << 40];
        let mut each = Histogram::default();
        for v in values {
            each.record(v);
        }
        let mut batch = Histogram::default();
        assert_eq!(batch.record_all(&values[..4]), (128, 260));
        batch.record_all(&values[4..]);
        assert_eq!(batch.record_all(&[]), (0, 0));
        assert_eq!(batch, each);
    }

    #[test]
    fn quantiles_and_mean() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(500), 50);
        assert_eq!(h.quantile(990), 99);
        assert_eq!(h.mean_centi(), 5050);
        // One iteration of 9.22e18 cycles: its mean is that, not a wrapped
        // hundredth of it.
        let mut huge = Histogram::default();
        huge.record(9_223_372_036_854_775_807);
        assert_eq!(huge.mean(), 9_223_372_036_854_775_807.0);
        assert_eq!(huge.mean_centi(), u64::MAX);
        assert_eq!(h.count(), 100);
    }

    /// The tutorial's one-CPU run: every iteration 425 cycles. Each
    /// percentile is 425 (the bucket's lowest, 424, read as below the mean).
    #[test]
    fn quantiles_of_constant_samples_are_the_constant() {
        for constant in [0u64, 1, 127, 128, 425, 4097, 1 << 40, u64::MAX] {
            let mut h = Histogram::default();
            for _ in 0..1000 {
                h.record(constant);
            }
            for per_mille in [1, 500, 990, 1000] {
                assert_eq!(h.quantile(per_mille), constant, "{constant} at {per_mille}");
            }
        }
    }

    /// Against the exact nearest-rank percentile of the sorted samples: never
    /// below, less than 1/64 above, and never decreasing in the rank.
    #[test]
    fn quantiles_bound_the_exact_percentile_from_above_within_a_64th() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut samples = Vec::new();
        let mut h = Histogram::default();
        for _ in 0..5000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Spread over five decades, as iteration lengths are.
            let value = (state % 1000) << (state >> 60);
            samples.push(value);
            h.record(value);
        }
        samples.sort_unstable();
        let mut previous = 0;
        for per_mille in 1..=1000u64 {
            let rank = (samples.len() as u64 * per_mille).div_ceil(1000).max(1);
            let exact = samples[rank as usize - 1];
            let reported = h.quantile(per_mille);
            assert!(reported >= exact, "{per_mille}: {reported} < {exact}");
            assert!(
                reported == exact || (reported - exact) * 64 < exact,
                "{per_mille}: {reported} vs {exact}"
            );
            assert!(reported >= previous, "{per_mille}: {reported} < {previous}");
            previous = reported;
        }
    }
}
