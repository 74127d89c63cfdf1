//! The scheduler: threads that outnumber the CPUs, run queues, blocking
//! and waking.
//!
//! A run's threads (`SimConfig::threads`) are the engine's `Cpu`s; several
//! may name the same CPU. Each CPU runs one of its threads at a time; the
//! others wait in the CPU's run queue. The rule for which thread runs next,
//! deterministic and the same on every path:
//!
//! - Threads never migrate: a thread runs on the CPU its `ThreadSpec`
//!   names. At the start the first thread of each CPU (in `threads` order)
//!   runs and the rest queue in that order.
//! - A CPU's run queue is first in, first out. A thread joins its tail when
//!   it is preempted, when it yields while another waits, and when it
//!   arrives after a wake-up while its CPU runs another thread; a woken
//!   thread that finds its CPU idle runs at once.
//! - A CPU whose thread leaves it (blocks in `futex_wait`, `sleep`s,
//!   yields, is preempted, finishes) switches to the head of its queue,
//!   which starts `context_switch_cycles` later; with an empty queue it
//!   idles until a thread arrives.
//! - Preemption points are the end of an iteration (the return to user
//!   space, where the kernel looks at `TIF_NEED_RESCHED`) and the
//!   scheduling operations; between them a thread runs on, as kernel code
//!   does under `CONFIG_PREEMPT_NONE` (and any kernel with preemption off:
//!   spinlock holders and spinners are never preempted). At an iteration's
//!   end, a thread that has run `time_slice_cycles` since it was switched
//!   in while another waits for its CPU is preempted; `need_resched()`
//!   asks the same question, for loops that mean to stop (a mutex's
//!   optimistic spinning).
//! - A woken thread (`futex_wake`, or the end of its `sleep`) arrives at
//!   its CPU `wakeup_latency_cycles` after the wake.
//! - While a CPU has nothing to run (its threads asleep, blocked or
//!   finished), its SMT siblings have the whole core (`core_share`,
//!   applied by `share_core` at every change of what a CPU of a shared
//!   core runs).
//! - A CPU that a `sleep` of at least the machine's
//!   `deep_idle_writeback_cycles` leaves with nothing to run is in deep
//!   idle until the sleep ends; once every CPU of its core is (or never
//!   runs a thread), the core's private caches are written back and its
//!   copies dropped (`Coherence::write_back_core`).
//!
//! A thread leaves its CPU only with an empty store buffer (a context
//! switch is a full barrier: it takes the runqueue lock), and the futex
//! operations wait for it too (they take the futex hash bucket's lock, an
//! atomic). A blocked thread has no event queued and costs nothing while it
//! waits. Every scheduling operation (`Builtin::schedules`) takes its turn
//! in the global (cycle, key) order, as an access does, and so does an
//! iteration's end while the scheduler is on; the run-ahead loop stops at
//! them as at every builtin, and the spin-wait fast-forward forgets the
//! period it was watching, so that `task_running` and `need_resched` are
//! read afresh by every poll.
//!
//! Switch hooks (`SchedulerParams::switch_out`, `switch_in`) are procedures
//! without parameters: the outgoing thread runs `switch_out` before it
//! leaves (its scheduling operation then runs again, and goes through),
//! the incoming one runs `switch_in` once it is switched in, before its
//! own code; their accesses are the thread's, on its CPU. A hook cannot
//! block, sleep or yield.

use super::*;

/// What the scheduler is told: its parameters, in cycles of the machine's
/// clock (the scenarios crate converts the presets' nanoseconds), and the
/// switch hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerParams {
    /// The time a thread runs before it may be preempted by one waiting
    /// for its CPU.
    pub time_slice_cycles: u64,
    /// From a thread leaving its CPU to the next one running there.
    pub context_switch_cycles: u64,
    /// From a wake-up (`futex_wake`, a `sleep`'s timer) to the woken thread
    /// arriving at its CPU.
    pub wakeup_latency_cycles: u64,
    /// Procedure run by the outgoing thread at a context switch.
    pub switch_out: Option<u32>,
    /// Procedure run by the incoming thread at a context switch.
    pub switch_in: Option<u32>,
}

impl Default for SchedulerParams {
    /// The presets' values (`models::presets`, with their sources) at a
    /// 3 GHz clock: a 2.8 ms slice, a 1.1 µs switch, a 4 µs wake-up.
    fn default() -> Self {
        SchedulerParams {
            time_slice_cycles: 8_400_000,
            context_switch_cycles: 3_300,
            wakeup_latency_cycles: 12_000,
            switch_out: None,
            switch_in: None,
        }
    }
}

/// What a run's scheduling did (`RunOutcome::scheduling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulingCounts {
    /// Threads switched in (the first thread of each CPU not counted).
    pub context_switches: u64,
    /// Of them, switches at a preemption (a slice used up).
    pub preemptions: u64,
    /// `futex_wait`s that slept.
    pub futex_sleeps: u64,
    /// Threads woken by `futex_wake`.
    pub futex_wakeups: u64,
    /// Cores that powered down in deep idle
    /// (`MachineSpec::deep_idle_writeback_cycles`), and the copies of lines
    /// they wrote back and dropped.
    pub deep_idle_entries: u64,
    pub lines_written_back: u64,
}

/// Which switch hook a thread is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    Out,
    In,
}

/// The scheduler's state.
#[derive(Default)]
pub(super) struct Sched {
    /// Some CPU runs more than one thread, or the program has scheduling
    /// operations or hooks: iteration ends take their turn and may preempt.
    pub(super) active: bool,
    /// Per CPU (Linux number): the thread on it.
    running: Vec<Option<CpuIndex>>,
    /// Per CPU: the threads waiting for it, first to run first.
    queues: Vec<VecDeque<CpuIndex>>,
    /// Per CPU: when its thread started running.
    slice_start: Vec<Cycle>,
    /// Per CPU: how many threads it runs (0: idle the whole run).
    threads_on: Vec<u32>,
    /// Per CPU: idle, in a deep idle state, until this cycle (set by a
    /// long enough `sleep` that left the CPU with nothing to run).
    deep_idle_until: Vec<Cycle>,
    /// Threads asleep in `futex_wait`: (address, thread), longest asleep first.
    futex: Vec<(u64, CpuIndex)>,
    /// Per core: the threads of its CPUs, where their share of the core
    /// can change during the run (the scheduler is on and two or more of
    /// its CPUs have threads); empty elsewhere (`share_core`).
    smt_core_threads: Vec<Vec<CpuIndex>>,
    /// Per thread: its entry in `smt_core_threads` is not empty, so its
    /// share of the core follows what its siblings run. Such a thread is
    /// never private-only and never spin-sleeps (`shortcuts`): what it
    /// does depends on another CPU.
    pub(super) smt_dynamic: Vec<bool>,
    pub(super) counts: SchedulingCounts,
}

impl Sched {
    /// The scheduler of `threads` on a machine of `cpu_count` CPUs: the
    /// first thread of each CPU runs, the others queue. Returns it with
    /// the threads that start queued.
    pub(super) fn new(
        threads: &[ThreadSpec],
        cpu_count: u32,
        program: &Program,
        params: &SchedulerParams,
    ) -> (Sched, Vec<CpuIndex>) {
        let n = cpu_count as usize;
        let mut sched = Sched {
            running: vec![None; n],
            queues: vec![VecDeque::new(); n],
            slice_start: vec![Cycle::ZERO; n],
            threads_on: vec![0; n],
            deep_idle_until: vec![Cycle::ZERO; n],
            ..Sched::default()
        };
        let mut queued = Vec::new();
        for (i, t) in threads.iter().enumerate() {
            let i = CpuIndex::new(i);
            let c = t.cpu;
            sched.threads_on[c.slot()] += 1;
            if sched.running[c.slot()].is_none() {
                sched.running[c.slot()] = Some(i);
            } else {
                sched.queues[c.slot()].push_back(i);
                queued.push(i);
            }
        }
        let schedules = program
            .scripts
            .iter()
            .chain(&program.procedures)
            .any(|code| {
                code.ops
                    .iter()
                    .any(|op| matches!(op, Op::Builtin(b) if b.schedules()))
            });
        sched.active = !queued.is_empty()
            || schedules
            || params.switch_in.is_some()
            || params.switch_out.is_some();
        (sched, queued)
    }

    /// Marks the cores whose threads' share can change (`core_of` gives a
    /// CPU's core): with the scheduler on, those with threads on two or
    /// more CPUs.
    pub(super) fn find_smt_cores(
        &mut self,
        threads: &[ThreadSpec],
        core_count: u32,
        core_of: impl Fn(LinuxCpu) -> u32,
    ) {
        self.smt_dynamic = vec![false; threads.len()];
        self.smt_core_threads = vec![Vec::new(); core_count as usize];
        if !self.active {
            return;
        }
        let mut cpus_of_core: Vec<Vec<LinuxCpu>> = vec![Vec::new(); core_count as usize];
        for (i, t) in threads.iter().enumerate() {
            let core = core_of(t.cpu) as usize;
            self.smt_core_threads[core].push(CpuIndex::new(i));
            if !cpus_of_core[core].contains(&t.cpu) {
                cpus_of_core[core].push(t.cpu);
            }
        }
        for (core, cpus) in cpus_of_core.iter().enumerate() {
            if cpus.len() < 2 {
                self.smt_core_threads[core].clear();
            }
            for &i in &self.smt_core_threads[core] {
                self.smt_dynamic[i.get()] = true;
            }
        }
    }
}

/// A thread's own random stream: its CPU's for the first thread of a CPU
/// (so a run without more threads than CPUs draws what it always drew),
/// and a stream of its own, beside its CPU's, for the `k`th after it.
///
/// Made at the thread's first draw (`random`, `uniform`, `exp`), not at
/// the run's start: most scripts never draw, and a generator per CPU is a
/// seeding and a copy of its 300-byte state for each of hundreds of CPUs.
/// A generator made later is the same one: nothing is drawn from it before.
pub(super) struct ThreadStream {
    seed: u64,
    stream: u64,
    rng: Option<Box<ChaCha8Rng>>,
}

impl ThreadStream {
    /// The stream of the `k`th thread of CPU `cpu` in a run seeded with
    /// `seed`, not made yet.
    pub(super) fn new(seed: u64, cpu: LinuxCpu, k: u32) -> Self {
        ThreadStream {
            seed,
            stream: cpu.get() as u64 | (k as u64) << 32,
            rng: None,
        }
    }

    /// The generator, made at the first call.
    #[inline]
    pub(super) fn rng(&mut self) -> &mut ChaCha8Rng {
        let (seed, stream) = (self.seed, self.stream);
        self.rng.get_or_insert_with(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream);
            Box::new(rng)
        })
    }

    /// How many words have been drawn (0 before the first draw).
    pub(super) fn get_word_pos(&self) -> u128 {
        self.rng.as_ref().map_or(0, |rng| rng.get_word_pos())
    }
}

impl Simulation<'_> {
    /// What CPU `c` runs has just changed: every thread of its core takes
    /// the share [`core_share`] gives it now (a core whose share cannot
    /// change has no threads listed). The new share holds from this point
    /// of the global order: for a `work` dispatched after it, and for the
    /// window's next entries (entries already taken stay; a smaller window
    /// waits until it has room).
    fn share_core(&mut self, c: LinuxCpu) {
        let core = self.config.topology.core_of(c) as usize;
        let Some(threads) = self.sched.smt_core_threads.get(core) else {
            return;
        };
        for &j in threads {
            let own = self.cpus[j].linux_cpu();
            let sibling_runs = threads.iter().any(|&t| {
                let s = self.cpus[t].linux_cpu();
                s != own && self.sched.running[s.slot()].is_some()
            });
            let (share, window) = core_share(&self.config.topology.spec, sibling_runs);
            let cpu = &mut self.cpus[j];
            cpu.work_share_percent = share;
            cpu.window_entries = window;
        }
    }

    /// Whether thread `i`'s slice is over while another waits for its CPU.
    fn preempt_due(&self, i: CpuIndex) -> bool {
        let cpu = &self.cpus[i];
        let c = cpu.linux_cpu();
        !self.sched.queues[c.slot()].is_empty()
            && cpu.now - self.sched.slice_start[c.slot()]
                >= Cycles::new(self.config.scheduler.time_slice_cycles)
    }

    /// `Op::EndIteration` while the scheduler is on: the iteration ends,
    /// and a thread whose slice is over leaves for the next in its queue
    /// (its store buffer drained and its `switch_out` hook run first).
    pub(super) fn end_iteration_scheduled(
        &mut self,
        i: CpuIndex,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        if !self.preempt_due(i) {
            self.cpus[i].hook_done = false;
            self.end_iteration(i, probe);
            return Ok(());
        }
        if !self.ready_to_leave(i)? {
            return Ok(());
        }
        self.end_iteration(i, probe);
        if !self.cpus[i].finished {
            let c = self.cpus[i].linux_cpu();
            self.sched.queues[c.slot()].push_back(i);
            self.sched.counts.preemptions += 1;
            self.leave_cpu(i, Wait::Queued, probe);
        }
        Ok(())
    }

    /// Before thread `i` leaves its CPU: its store buffer must be empty,
    /// and its `switch_out` hook must have run. False when it waits for
    /// either (the operation runs again afterwards).
    fn ready_to_leave(&mut self, i: CpuIndex) -> Result<bool, SimError> {
        if !self.cpus[i].outstanding.store_buffer.is_empty() {
            self.block_on(i, Wait::BufferEmpty);
            return Ok(false);
        }
        if let Some(hook) = self.config.scheduler.switch_out {
            if !self.cpus[i].hook_done {
                self.call_hook(i, hook, Hook::Out)?;
                return Ok(false);
            }
        }
        self.cpus[i].hook_done = false;
        Ok(true)
    }

    /// A frame for hook procedure `proc_index` on thread `i`, whose code
    /// goes on where it stands once the hook returns (its value dropped).
    fn call_hook(&mut self, i: CpuIndex, proc_index: u32, hook: Hook) -> Result<(), SimError> {
        if self.cpus[i].callers.len() + 1 >= MAX_CALL_DEPTH {
            return Err(self.script_error(
                i,
                format!("calls nested deeper than {MAX_CALL_DEPTH} (unbounded recursion?)"),
            ));
        }
        let procedure = &self.program.procedures[proc_index as usize];
        let (locals, length) = (procedure.local_count as usize, procedure.ops.len() as u64);
        let code = (self.program.scripts.len() + proc_index as usize) as u32;
        let cpu = &mut self.cpus[i];
        // Charged as any call is (`limits.operations`).
        cpu.operations += length;
        cpu.enter_call(code, 0, locals);
        cpu.hook = Some((cpu.callers.len() as u32, hook));
        Ok(())
    }

    /// `Op::Return` has just left a frame of thread `i`, with `callers`
    /// frames below the one it was: whether that frame was a switch hook's
    /// (whose value is dropped); a `switch_out` hook's lets the scheduling
    /// operation it stopped go through.
    pub(super) fn hook_returned(&mut self, i: CpuIndex, callers: usize) -> bool {
        let cpu = &mut self.cpus[i];
        match cpu.hook {
            Some((depth, hook)) if depth as usize == callers => {
                cpu.hook = None;
                cpu.hook_done = hook == Hook::Out;
                true
            }
            _ => false,
        }
    }

    /// Thread `i` leaves its CPU, to wait as `wait` says; the CPU takes the
    /// next thread of its queue.
    fn leave_cpu(&mut self, i: CpuIndex, wait: Wait, probe: &mut dyn Probe) {
        // Its summed private hits are reported as it leaves, so that only
        // the running thread of a CPU ever holds some back (another
        // thread's iteration end may start the CPU's measured window).
        if self.private.summed && self.private.slots > 0 {
            self.report_private_hits(i, probe);
        }
        let cpu = &mut self.cpus[i];
        let c = cpu.linux_cpu();
        let at = cpu.now;
        cpu.wait = wait;
        cpu.wait_since = at;
        if self.sched.running[c.slot()] == Some(i) {
            self.sched.running[c.slot()] = None;
            self.dispatch(c, at);
            self.share_core(c);
        }
    }

    /// CPU `c`, free at `at`, switches to the head of its queue.
    fn dispatch(&mut self, c: LinuxCpu, at: Cycle) {
        if let Some(j) = self.sched.queues[c.slot()].pop_front() {
            self.switch_in(j, c, at);
        }
    }

    /// Thread `j` is switched in on CPU `c` at `at`: it runs once the
    /// switch has cost its cycles, its `switch_in` hook first.
    fn switch_in(&mut self, j: CpuIndex, c: LinuxCpu, at: Cycle) {
        let start =
            at.max(self.cpus[j].now) + Cycles::new(self.config.scheduler.context_switch_cycles);
        self.sched.running[c.slot()] = Some(j);
        self.share_core(c);
        self.sched.slice_start[c.slot()] = start;
        self.sched.counts.context_switches += 1;
        let cpu = &mut self.cpus[j];
        cpu.now = start;
        cpu.wait = Wait::None;
        cpu.spin.forget();
        if let Some(hook) = self.config.scheduler.switch_in {
            // Bounded as calls are: a thread switches out at a scheduling
            // operation or an iteration's end, never inside a hook.
            let _ = self.call_hook(j, hook, Hook::In);
        }
        self.schedule(start, EventKind::Resume, j);
    }

    /// Thread `i` is finished: its CPU takes the next thread.
    pub(super) fn finished_thread(&mut self, i: CpuIndex) {
        let c = self.cpus[i].linux_cpu();
        if self.sched.running.get(c.slot()) == Some(&Some(i)) {
            self.sched.running[c.slot()] = None;
            let at = self.cpus[i].now;
            self.dispatch(c, at);
            self.share_core(c);
        }
    }

    /// The resume of thread `i` woken (`Wait::Waking`) at its CPU: it runs
    /// if the CPU is idle, and queues otherwise.
    pub(super) fn arrive(&mut self, i: CpuIndex) {
        let c = self.cpus[i].linux_cpu();
        let at = self.cpus[i].now;
        if self.sched.running[c.slot()].is_none() {
            self.switch_in(i, c, at);
        } else {
            self.sched.queues[c.slot()].push_back(i);
            let cpu = &mut self.cpus[i];
            cpu.wait = Wait::Queued;
            cpu.wait_since = at;
        }
    }

    /// Thread `i` is woken at `at`: it arrives at its CPU after the
    /// wake-up latency.
    fn wake_thread(&mut self, i: CpuIndex, at: Cycle) {
        let arrival = at + Cycles::new(self.config.scheduler.wakeup_latency_cycles);
        let cpu = &mut self.cpus[i];
        cpu.now = arrival;
        cpu.wait = Wait::Waking;
        self.schedule(arrival, EventKind::Resume, i);
    }

    /// The scheduling operations (`Builtin::schedules`), at thread `i`'s
    /// turn: each pushes its value and moves on, or leaves the CPU (the
    /// value pushed for when it runs again), or waits for its store buffer
    /// or its `switch_out` hook and runs again after.
    pub(super) fn scheduling(
        &mut self,
        i: CpuIndex,
        builtin: Builtin,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        self.cpus[i].spin.forget();
        let blocks = matches!(
            builtin,
            Builtin::Yield | Builtin::Sleep | Builtin::FutexWait
        );
        if blocks && self.cpus[i].hook.is_some() {
            return Err(self.script_error(
                i,
                format!(
                    "`{}` in a switch hook: a hook runs inside a context switch and cannot block, sleep or yield",
                    builtin_name(builtin)
                ),
            ));
        }
        match builtin {
            Builtin::TaskRunning => self.task_running(i),
            Builtin::NeedResched => {
                let due = self.preempt_due(i);
                self.push(i, due as i64)?;
                self.advance_pc(i);
                Ok(())
            }
            Builtin::Yield => self.yield_cpu(i, probe),
            Builtin::Sleep => self.sleep(i, probe),
            Builtin::FutexWait | Builtin::FutexWake => self.futex(i, builtin, probe),
            _ => Err(self.script_error(
                i,
                format!("internal: `{builtin:?}` is not a scheduling operation"),
            )),
        }
    }

    /// `task_running(t)`: whether thread `t` (numbered from 1, as `task()`
    /// gives them) is on its CPU now.
    fn task_running(&mut self, i: CpuIndex) -> Result<(), SimError> {
        let t = self.pop(i)?;
        let threads = self.cpus.len() as i64;
        if !(1..=threads).contains(&t) {
            return Err(self.script_error(
                i,
                format!(
                    "task_running({t}): no such thread; valid 1..={threads} (`task()` of a thread)"
                ),
            ));
        }
        // `task()` numbers the engine's CPUs from 1.
        let t = CpuIndex::new(t as usize - 1);
        let on_cpu = self.sched.running[self.cpus[t].linux_cpu().slot()] == Some(t);
        self.push(i, on_cpu as i64)?;
        self.advance_pc(i);
        Ok(())
    }

    /// `yield()`: 0 at once when no other thread waits for the CPU;
    /// otherwise the thread goes to the back of its CPU's queue and gets 1
    /// when it runs again.
    fn yield_cpu(&mut self, i: CpuIndex, probe: &mut dyn Probe) -> Result<(), SimError> {
        let c = self.cpus[i].linux_cpu();
        if self.sched.queues[c.slot()].is_empty() {
            self.cpus[i].hook_done = false;
            self.push(i, 0)?;
            self.advance_pc(i);
        } else if self.ready_to_leave(i)? {
            self.push(i, 1)?;
            self.advance_pc(i);
            self.sched.queues[c.slot()].push_back(i);
            self.leave_cpu(i, Wait::Queued, probe);
        }
        Ok(())
    }

    /// `sleep(cycles)`: the thread leaves its CPU and is woken that many
    /// cycles later.
    fn sleep(&mut self, i: CpuIndex, probe: &mut dyn Probe) -> Result<(), SimError> {
        let now = self.cpus[i].now;
        let cycles = self.top_operand(i, 0)?;
        if cycles < 0 {
            return Err(self.script_error(i, format!("sleep({cycles}): cycles must be >= 0")));
        }
        if self.ready_to_leave(i)? {
            self.pop(i)?;
            self.push(i, 0)?;
            self.advance_pc(i);
            self.leave_cpu(i, Wait::Asleep, probe);
            self.wake_thread(i, now + Cycles::new(cycles as u64));
            self.enter_deep_idle(i, now, cycles as u64);
        }
        Ok(())
    }

    /// After thread `i`'s `sleep` of `cycles` from `now`: a CPU left with
    /// nothing to run for at least the machine's
    /// `deep_idle_writeback_cycles` enters its deepest idle state (the
    /// idle governor picks a state by the time to the next timer, here the
    /// sleep's end, against the state's target residency). A core enters
    /// it once every CPU of it is idle so (or never runs a thread); then
    /// its private caches, powered off, are written back and their lines
    /// dropped (`Coherence::write_back_core`). The write-back is made at
    /// the sleep's start; its own time and the wake-up's are not modelled
    /// beyond the scheduler's wake-up latency.
    fn enter_deep_idle(&mut self, i: CpuIndex, now: Cycle, cycles: u64) {
        let threshold = self.config.topology.spec.deep_idle_writeback_cycles;
        let c = self.cpus[i].linux_cpu();
        if threshold == 0 || cycles < threshold || self.sched.running[c.slot()].is_some() {
            return;
        }
        self.sched.deep_idle_until[c.slot()] = now + Cycles::new(cycles);
        let topology = &self.config.topology;
        let core = topology.core_of(c);
        let sched = &self.sched;
        let core_idle = topology
            .cpus()
            .filter(|&s| topology.core_of(s) == core)
            .all(|s| {
                sched.running[s.slot()].is_none()
                    && (sched.threads_on[s.slot()] == 0 || sched.deep_idle_until[s.slot()] > now)
            });
        if core_idle {
            let dropped = self.coherence.write_back_core(core, now);
            self.sched.counts.deep_idle_entries += 1;
            self.sched.counts.lines_written_back += dropped;
        }
    }

    /// `futex_wait(p, v)` and `futex_wake(p, n)`, once the thread's store
    /// buffer is empty: the operands read and the pointer decoded here, the
    /// operation itself in `futex_wake` and `futex_wait`.
    fn futex(
        &mut self,
        i: CpuIndex,
        builtin: Builtin,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        if !self.cpus[i].outstanding.store_buffer.is_empty() {
            self.block_on(i, Wait::BufferEmpty);
            return Ok(());
        }
        let pointer = self.top_operand(i, 1)?;
        let operand = self.top_operand(i, 0)?;
        let name = builtin_name(builtin);
        let Some(target) = decode_pointer(pointer, self.memory, &self.program.field_names) else {
            return Err(self.script_error(
                i,
                format!("`{name}` of {pointer}, which is not a pointer made by `&inst.field`"),
            ));
        };
        if builtin == Builtin::FutexWake {
            self.futex_wake(i, target.address, operand)
        } else {
            let value = self.read_value(target.address, target.size_bytes);
            self.futex_wait(i, target.address, value == operand, probe)
        }
    }

    /// `futex_wake(p, n)`: wakes up to `n` threads waiting on `address`,
    /// the longest-waiting first, and gets how many it woke.
    fn futex_wake(&mut self, i: CpuIndex, address: u64, n: i64) -> Result<(), SimError> {
        if n < 0 {
            return Err(self.script_error(
                i,
                format!("futex_wake(p, {n}): the number to wake must be >= 0"),
            ));
        }
        let now = self.cpus[i].now;
        self.pop(i)?;
        self.pop(i)?;
        let mut woken = 0;
        let mut k = 0;
        while k < self.sched.futex.len() && woken < n {
            let (waiting_on, t) = self.sched.futex[k];
            if waiting_on == address {
                self.sched.futex.remove(k);
                self.wake_thread(t, now);
                woken += 1;
            } else {
                k += 1;
            }
        }
        self.sched.counts.futex_wakeups += woken as u64;
        self.push(i, woken)?;
        self.advance_pc(i);
        Ok(())
    }

    /// `futex_wait(p, v)`: 1 at once when the word at `address` no longer
    /// holds `v` (`still_expected` false); otherwise the thread sleeps on
    /// `address` until a `futex_wake` and gets 0.
    fn futex_wait(
        &mut self,
        i: CpuIndex,
        address: u64,
        still_expected: bool,
        probe: &mut dyn Probe,
    ) -> Result<(), SimError> {
        if !still_expected {
            self.cpus[i].hook_done = false;
            self.pop(i)?;
            self.pop(i)?;
            self.push(i, 1)?;
            self.advance_pc(i);
        } else if self.ready_to_leave(i)? {
            self.pop(i)?;
            self.pop(i)?;
            self.push(i, 0)?;
            self.advance_pc(i);
            self.sched.futex.push((address, i));
            self.sched.counts.futex_sleeps += 1;
            self.leave_cpu(i, Wait::Futex, probe);
        }
        Ok(())
    }

    /// The operand `depth` places below the top of thread `i`'s stack,
    /// left there.
    fn top_operand(&self, i: CpuIndex, depth: usize) -> Result<i64, SimError> {
        let stack = &self.cpus[i].stack;
        stack
            .len()
            .checked_sub(depth + 1)
            .map(|k| stack[k])
            .ok_or_else(|| self.script_error(i, "internal: operand stack empty".into()))
    }

    /// What a thread that cannot run waits for, for a deadlock's report.
    pub(super) fn sleep_description(&self, i: CpuIndex) -> Option<String> {
        let cpu = &self.cpus[i];
        match cpu.wait {
            Wait::Futex => {
                let address = self
                    .sched
                    .futex
                    .iter()
                    .find(|&&(_, t)| t == i)
                    .map(|&(a, _)| a)?;
                Some(format!(
                    "a futex_wake on address {address:#x} (thread {} asleep in futex_wait since cycle {})",
                    i.get() + 1,
                    cpu.wait_since
                ))
            }
            Wait::Queued => Some(format!(
                "CPU {} to run it (thread {}, queued since cycle {})",
                cpu.spec.cpu,
                i.get() + 1,
                cpu.wait_since
            )),
            _ => None,
        }
    }
}

/// A builtin's name in scripts.
fn builtin_name(builtin: Builtin) -> &'static str {
    Builtin::ALL
        .iter()
        .find(|(_, b, _)| *b == builtin)
        .map_or("?", |(name, _, _)| name)
}
