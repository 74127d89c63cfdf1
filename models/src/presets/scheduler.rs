//! The scheduler's parameters per preset (`sched.NAME`), in nanoseconds:
//! what the engine's scheduler (`sim_core::engine::sched`) takes in cycles
//! at the machine's clock. Kept apart from the machine tables: they are the
//! kernel's and the platform's, not the caches'.

use super::{int, Param, Provenance};

/// The prefix of the scheduler's parameters in a preset's table.
pub const SCHED_PREFIX: &str = "sched.";

/// The keys, in the order tables show them.
pub const SCHED_KEYS: [&str; 3] = [
    "sched.time_slice_ns",
    "sched.context_switch_ns",
    "sched.wakeup_latency_ns",
];

/// Linux's base slice (EEVDF), the same on every preset.
fn time_slice() -> Param {
    int(
        "sched.time_slice_ns",
        2_800_000,
        "ns",
        Provenance::Documented,
        "Linux kernel/sched/fair.c: sysctl_sched_base_slice = 700000ULL (0.70 ms, since v6.15, commit 2ae891b \"sched: Reduce the default slice to avoid tasks getting an extra tick\"; 0.75 ms in v6.6-v6.14), scaled by SCHED_TUNABLESCALING_LOG: 1 + ilog2(min(online CPUs, 8)) = 4",
        "0.70 ms x 4 = 2.8 ms on any machine of 8 CPUs or more (3.0 ms on v6.6-v6.14); the slice a thread runs before one waiting for its CPU may preempt it",
    )
}

/// The direct cost of switching between two threads of one process.
fn context_switch() -> Param {
    int(
        "sched.context_switch_ns",
        1_100,
        "ns",
        Provenance::Measured,
        "pipe ping-pong between two threads pinned to one CPU, Linux 6.6, Intel 11th-generation Core: 2,140 ns per round trip, about 1,070 ns per switch (https://ddumbying.vercel.app/experiments/ctx-switch-overhead; the method of lmbench's lat_ctx)",
        "a desktop part, not the server SKU; the direct cost only: the cache refills a switched-in thread pays are its own accesses here",
    )
}

/// From a wake-up to the woken thread running on its CPU.
fn wakeup_latency(preset: &str) -> Param {
    if preset.starts_with("icelake") {
        return int(
            "sched.wakeup_latency_ns",
            4_000,
            "ns",
            Provenance::Documented,
            "Linux drivers/idle/intel_idle.c, icx_cstates: C1E exit_latency 4 us (C1 1 us, C6 170 us)",
            "the woken CPU taken to idle in C1E, the shallowest state intel_idle keeps enabled on Ice Lake-SP (CPUIDLE_FLAG_ALWAYS_ENABLE); the IPI and the scheduler's path are inside it",
        );
    }
    if preset.starts_with("cascadelake") {
        return int(
            "sched.wakeup_latency_ns",
            10_000,
            "ns",
            Provenance::Documented,
            "Linux drivers/idle/intel_idle.c, skx_cstates (Skylake-SP and Cascade Lake): C1E exit_latency 10 us (C1 2 us, C6 133 us)",
            "the woken CPU taken to idle in C1E, as on Ice Lake",
        );
    }
    // Measured on a Zen 2 desktop part: no EPYC figure was retrieved. Zen's
    // acpi_idle states (from the firmware's _CST) have no C1E: the woken
    // CPU sits in C1 (MWAIT, exit latency 1 us) unless it expects to idle
    // beyond C2's target residency, which a thread blocked for a wake-up
    // from another CPU seldom does.
    int(
        "sched.wakeup_latency_ns",
        1_150,
        "ns",
        Provenance::Measured,
        "[S72] LKML, \"Performance regression: thread wakeup time (latency) increased up to 3x\" (Norbert, 2021-10-15 and 2021-10-24): futex wake to the waiter's return on a neighbouring CPU, Zen 2 Threadripper at a fixed 4.0 GHz, Linux 5.13: 1,154 ns with the waiting CPU in C1 (ACPI FFH MWAIT, exit latency 1 us), 980-1,080 ns in the first report; 3,554 ns when it sat in C2 (ACPI IOPORT, exit latency 400 us, target residency 800 us)",
        "the woken CPU idle in C1, the state acpi_idle picks for idle periods shorter than C2's target residency; a desktop Zen 2 at 4.0 GHz, not the EPYC part (its software path would take longer at a lower clock); where the CPU enters C2 the wake takes about 3.5 us: set [scheduler] wakeup_latency_ns in a scenario to model that",
    )
}

/// The scheduler's parameters of preset `preset` (a preset name without
/// modes; any other name gets the assumed figures).
pub fn scheduler_params(preset: &str) -> Vec<Param> {
    vec![time_slice(), context_switch(), wakeup_latency(preset)]
}
