//! What a CPU still has outstanding in its memory system: stores in its
//! buffer or still being written into their lines, loads still arriving
//! (late values, miss buffers held, reorder-window entries), loads not yet
//! served, and the speculation past them. Every shortcut, and `step`
//! before each operation, asks whether any of it is there; usually none
//! of it is, so one summary kept beside the state answers in one
//! comparison ([`Outstanding::none_at`]), and only a CPU with something
//! outstanding is looked at piece by piece.
//!
//! The summary cannot go stale: the state is read through
//! [`Outstanding`]'s `Deref`, and written only through [`Outstanding::edit`],
//! whose guard recomputes the summary when it is dropped. Debug builds
//! check the summary against the state wherever it is read.

use super::in_flight::{DeferredLoad, LateValue, WindowEntry};
use super::BufferedStore;
use crate::time::Cycle;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

/// A CPU's outstanding memory work (the fields' meanings are the engine's;
/// see `in_flight` and `store_buffer`).
#[derive(Debug, Default)]
pub(super) struct OutstandingWork {
    pub(super) store_buffer: VecDeque<BufferedStore>,
    /// When the last store taken at once by an empty buffer (`store`), or
    /// drained from the buffer into a line the core holds (`finish_drain`:
    /// its entry leaves after its commit cycle), is in its line: a locked
    /// instruction, a fence or a futex operation waits for it as for a
    /// buffered store's drain.
    pub(super) store_written_at: Cycle,
    /// Loaded values whose lines have not arrived (`in_flight`).
    pub(super) late: Vec<LateValue>,
    /// When each miss holding one of the core's miss buffers arrives
    /// (`MachineSpec::outstanding_misses`); entries in the past are free.
    pub(super) in_flight: Vec<Cycle>,
    /// The loads still arriving, oldest first, in the reorder window
    /// (`MachineSpec::reorder_window_entries`; entries in the past are
    /// done).
    pub(super) window: VecDeque<WindowEntry>,
    /// The latest arrival of a load in `window` (its speculation lasts
    /// until then; the shortcuts stay out before it).
    pub(super) speculating_until: Cycle,
    /// Loads whose values are not read yet (`in_flight`): the oldest is
    /// queued at its line's home, and every later load waits for it to
    /// read its value (x86-TSO's load order). Empty without a window.
    pub(super) deferred: VecDeque<DeferredLoad>,
}

impl OutstandingWork {
    /// The first cycle from which nothing is outstanding if nothing
    /// changes: `Cycle::MAX` while any list holds an entry (even one in
    /// the past, which only the code that drops it can tell), otherwise
    /// the later of the last store's write and the speculation's end.
    #[inline(always)]
    fn clear_from(&self) -> Cycle {
        let entries = self.store_buffer.len()
            | self.late.len()
            | self.in_flight.len()
            | self.window.len()
            | self.deferred.len();
        if entries != 0 {
            Cycle::MAX
        } else {
            self.store_written_at.max(self.speculating_until)
        }
    }
}

/// [`OutstandingWork`] with its summary.
#[derive(Debug, Default)]
pub(super) struct Outstanding {
    work: OutstandingWork,
    /// `work.clear_from()`, kept current by [`Edit`]'s drop.
    clear_from: Cycle,
}

impl Outstanding {
    /// Whether nothing is outstanding at `now`: the store buffer, the late
    /// values, the miss buffers, the reorder window and the deferred loads
    /// empty, the last store written and no speculation past `now`. When
    /// false, something may be (the caller looks at each piece).
    #[inline(always)]
    pub(super) fn none_at(&self, now: Cycle) -> bool {
        debug_assert_eq!(
            self.clear_from,
            self.work.clear_from(),
            "the outstanding summary is its state's"
        );
        self.clear_from <= now
    }

    /// The state to change; the summary follows when the guard is dropped.
    #[inline(always)]
    pub(super) fn edit(&mut self) -> Edit<'_> {
        Edit(self)
    }
}

impl Deref for Outstanding {
    type Target = OutstandingWork;

    #[inline(always)]
    fn deref(&self) -> &OutstandingWork {
        &self.work
    }
}

/// A change to a CPU's outstanding work ([`Outstanding::edit`]).
pub(super) struct Edit<'a>(&'a mut Outstanding);

impl Deref for Edit<'_> {
    type Target = OutstandingWork;

    #[inline(always)]
    fn deref(&self) -> &OutstandingWork {
        &self.0.work
    }
}

impl DerefMut for Edit<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut OutstandingWork {
        &mut self.0.work
    }
}

impl Drop for Edit<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.clear_from = self.0.work.clear_from();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::in_flight::Slot;

    fn late(ready: Cycle) -> LateValue {
        LateValue {
            slot: Slot::Stack(0),
            ready,
            address: 64,
            field_id: 0,
            ticket: 0,
        }
    }

    #[test]
    fn the_summary_follows_every_edit() {
        let mut o = Outstanding::default();
        assert!(o.none_at(Cycle::ZERO));
        // A store still being written holds the CPU until it is in its line.
        o.edit().store_written_at = Cycle::new(10);
        assert!(!o.none_at(Cycle::new(9)));
        assert!(o.none_at(Cycle::new(10)));
        // An entry in any list holds it whatever the cycle, until dropped.
        o.edit().late.push(late(Cycle::new(5)));
        assert!(!o.none_at(Cycle::new(1_000)));
        o.edit().late.clear();
        assert!(o.none_at(Cycle::new(10)));
        o.edit().in_flight.push(Cycle::new(3));
        assert!(!o.none_at(Cycle::new(1_000)));
        o.edit().in_flight.retain(|&ready| ready > Cycle::new(3));
        // Speculation lasts until its last load arrives.
        o.edit().speculating_until = Cycle::new(20);
        assert!(!o.none_at(Cycle::new(19)));
        assert!(o.none_at(Cycle::new(20)));
        // Several changes under one guard: the summary is taken at its end.
        {
            let mut e = o.edit();
            e.window.push_back(WindowEntry {
                seq: 0,
                ready: Cycle::new(30),
                address: 64,
                field_id: 0,
            });
            e.speculating_until = Cycle::new(30);
        }
        assert!(!o.none_at(Cycle::new(30)));
        o.edit().window.pop_front();
        assert!(o.none_at(Cycle::new(30)));
        assert!(!o.none_at(Cycle::new(29)));
    }
}
