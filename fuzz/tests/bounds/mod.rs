//! The bounds every fuzz input is held to, shared by the corpus replay
//! (corpus.rs) and the generated inputs (generated.rs): the most bytes
//! allocated at once, counted by a global allocator installed in the test
//! binary that includes this module. Host time is not a bound here (no
//! test asserts on a clock): the harness's budgets
//! (`bounce_fuzz::RUN_MAX_*`) bound every run by counts; the time each
//! input took is only reported.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Bytes live at once beyond what was live before the input.
pub const MAX_LIVE_BYTES: usize = 256 << 20;

/// Counts the bytes live and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f`, returning its result, the time it took (for the report) and
/// the most bytes it
/// had allocated at once. Inputs run one at a time (one test per binary
/// does this), so nothing else allocates meanwhile.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Duration, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let result = f();
    let took = start.elapsed();
    let bytes = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    (result, took, bytes)
}
