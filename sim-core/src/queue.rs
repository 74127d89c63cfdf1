//! The event queue: events come out in (cycle, tie) order, the engine's
//! ordering contract. The tie is a property of the event itself (the engine
//! makes it from the event's class, its target and a seeded hash of both
//! with the cycle), never of when it was queued, so that a CPU that runs
//! ahead of the queue, or is resumed without it, lands where stepping would
//! have put it. Events with equal keys (which the engine never makes) come
//! out in insertion order.
//!
//! Why not a plain binary heap: with hundreds of CPUs queued, a heap's pop
//! costs about ten levels of 128-bit comparisons, the largest single cost of
//! a false-sharing run. Almost every event is scheduled a few hundred
//! cycles ahead of the event being processed, so the queue is a calendar:
//! a ring of `RING_CYCLES` buckets, one per cycle from the last popped
//! event's cycle on, each a list kept in tie order (an event usually goes
//! last, since few share a cycle), with a bitmap of the non-empty ones. Events further ahead wait in a heap and move into the ring, in
//! order, as soon as the ring reaches their cycle, before any later event
//! can be pushed there. An event scheduled before the last popped cycle
//! (the engine never does that) would turn the whole queue into the plain
//! heap, so the order stays right whatever happens.
//!
//! A queue that holds one event at a time (every CPU waiting at one
//! contended line, whose next free is the only event) keeps that event
//! apart from the buckets (`alone`), which the next push puts in its
//! bucket first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Cycles the ring covers: events are rarely scheduled further ahead than
/// a few transactions (hundreds of cycles).
const RING_CYCLES: u64 = 4096;
const RING_MASK: u64 = RING_CYCLES - 1;
const RING_WORDS: usize = (RING_CYCLES / 64) as usize;

/// One queued event: its cycle, its tie (its order among the events of
/// its cycle), its insertion sequence (for equal keys only), the target (a
/// CPU or a line) and the engine's event code. Ordered by the fields in
/// that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Event {
    cycle: u64,
    tie: u64,
    sequence: u64,
    pub target: u32,
    pub kind: u8,
}

impl Event {
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
}

/// Host bytes one queued event takes (for the estimate made before a run).
pub(crate) const EVENT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

/// Host bytes the queue takes however few events it holds: the ring's
/// buckets and its occupancy bits (for the estimate made before a run).
pub(crate) const FIXED_BYTES: u64 =
    RING_CYCLES * std::mem::size_of::<Bucket>() as u64 + RING_WORDS as u64 * 8;

/// No slot (the end of a bucket's list).
const NONE: u32 = u32::MAX;

/// A ring event and the next one in its bucket (or in the free list).
#[derive(Clone, Copy, Debug)]
struct Slot {
    event: Event,
    next: u32,
}

/// A bucket: the first and last slots of its list, `NONE` when empty.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    first: u32,
    last: u32,
}

const EMPTY: Bucket = Bucket {
    first: NONE,
    last: NONE,
};

#[derive(Debug)]
pub(crate) struct EventQueue {
    /// The cycle of the last popped event: no queued event is earlier.
    base: u64,
    /// Bucket `c & RING_MASK` lists the events at cycle `c`, for `c` in
    /// `base..base + RING_CYCLES`, in (tie, sequence) order (linked through
    /// `slots`, so that no bucket allocates).
    ring: Vec<Bucket>,
    slots: Vec<Slot>,
    /// The first unused slot, linked through `next`.
    free: u32,
    /// Bit `c & RING_MASK` is set when that bucket is not empty.
    occupied: [u64; RING_WORDS],
    in_ring: usize,
    /// The earliest cycle with an event in the ring (when `in_ring > 0`).
    head: u64,
    /// Events at `base + RING_CYCLES` or later, and every event once
    /// `heap_only` is set.
    later: BinaryHeap<Reverse<Event>>,
    /// An event was pushed before `base`: from then on the ring is unused.
    heap_only: bool,
    /// The ring's only event is `alone_event`, kept out of its bucket: an
    /// event pushed into an empty queue within the ring's reach waits here
    /// (counted in `in_ring`, its cycle the `head`) until it is popped or a
    /// second event comes, which first puts it into its bucket as it would
    /// have been. A queue that holds one event at a time, such as a
    /// contended line's next free while every CPU waits at that line, then
    /// never touches the buckets.
    alone: bool,
    alone_event: Event,
    sequence: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            base: 0,
            ring: vec![EMPTY; RING_CYCLES as usize],
            slots: Vec::new(),
            free: NONE,
            occupied: [0; RING_WORDS],
            in_ring: 0,
            head: 0,
            later: BinaryHeap::new(),
            heap_only: false,
            alone: false,
            alone_event: Event {
                cycle: 0,
                tie: 0,
                sequence: 0,
                target: 0,
                kind: 0,
            },
            sequence: 0,
        }
    }
}

impl EventQueue {
    /// Queues an event at `cycle`, among the events of that cycle by `tie`
    /// (after those with an equal tie).
    #[inline]
    pub fn push(&mut self, cycle: u64, tie: u64, target: u32, kind: u8) {
        self.sequence += 1;
        let event = Event {
            cycle,
            tie,
            sequence: self.sequence,
            target,
            kind,
        };
        if self.in_ring == 0 {
            if !self.heap_only
                && self.later.is_empty()
                && cycle >= self.base
                && cycle - self.base < RING_CYCLES
            {
                self.alone = true;
                self.alone_event = event;
                self.in_ring = 1;
                self.head = cycle;
                return;
            }
        } else if self.alone {
            // Still within the ring's reach: `base` moves only on a pop.
            self.alone = false;
            self.in_ring = 0;
            self.put_in_ring(self.alone_event);
        }
        if self.heap_only {
            self.later.push(Reverse(event));
        } else if cycle < self.base {
            self.give_up_ring();
            self.later.push(Reverse(event));
        } else if cycle - self.base < RING_CYCLES {
            self.put_in_ring(event);
        } else {
            self.later.push(Reverse(event));
        }
    }

    #[inline]
    fn put_in_ring(&mut self, event: Event) {
        let index = match self.free {
            NONE => {
                self.slots.push(Slot { event, next: NONE });
                (self.slots.len() - 1) as u32
            }
            index => {
                let slot = &mut self.slots[index as usize];
                self.free = slot.next;
                *slot = Slot { event, next: NONE };
                index
            }
        };
        let slot = (event.cycle & RING_MASK) as usize;
        let bucket = self.ring[slot];
        if bucket.last == NONE {
            self.ring[slot] = Bucket {
                first: index,
                last: index,
            };
        } else if self.slots[bucket.last as usize].event.tie <= event.tie {
            // The common case: after every event of its cycle.
            self.slots[bucket.last as usize].next = index;
            self.ring[slot].last = index;
        } else if event.tie < self.slots[bucket.first as usize].event.tie {
            self.slots[index as usize].next = bucket.first;
            self.ring[slot].first = index;
        } else {
            // Somewhere between: after the last event whose tie is not
            // greater (the sequence keeps equal ties in insertion order).
            let mut before = bucket.first;
            loop {
                let next = self.slots[before as usize].next;
                if self.slots[next as usize].event.tie > event.tie {
                    self.slots[index as usize].next = next;
                    self.slots[before as usize].next = index;
                    break;
                }
                before = next;
            }
        }
        self.occupied[slot / 64] |= 1 << (slot % 64);
        if self.in_ring == 0 || event.cycle < self.head {
            self.head = event.cycle;
        }
        self.in_ring += 1;
    }

    /// Moves every ring event into the heap (which orders them by their
    /// tie and sequence too) and stops using the ring.
    #[cold]
    fn give_up_ring(&mut self) {
        for bucket in &mut self.ring {
            let mut index = bucket.first;
            while index != NONE {
                let slot = self.slots[index as usize];
                self.later.push(Reverse(slot.event));
                index = slot.next;
            }
            *bucket = EMPTY;
        }
        self.slots.clear();
        self.free = NONE;
        self.occupied = [0; RING_WORDS];
        self.in_ring = 0;
        self.heap_only = true;
    }

    /// Takes the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.heap_only {
            return self.later.pop().map(|Reverse(event)| event);
        }
        let event = if self.alone {
            // The queue's only event (nothing in the heap to move).
            self.alone = false;
            self.in_ring = 0;
            self.alone_event
        } else if self.in_ring > 0 {
            // Every heap event is at `base + RING_CYCLES` or later, after
            // every ring event.
            let slot = (self.head & RING_MASK) as usize;
            let bucket = &mut self.ring[slot];
            let index = bucket.first;
            let Slot { event, next } = self.slots[index as usize];
            bucket.first = next;
            if next == NONE {
                bucket.last = NONE;
            }
            self.slots[index as usize].next = self.free;
            self.free = index;
            self.in_ring -= 1;
            if next == NONE {
                self.occupied[slot / 64] &= !(1 << (slot % 64));
                if self.in_ring > 0 {
                    self.head = self.next_occupied_after(self.head);
                }
            }
            event
        } else {
            self.later.pop()?.0
        };
        if event.cycle > self.base {
            self.base = event.cycle;
            // The ring now reaches further: the heap's events there move in
            // (in order, and before anything else can be pushed there).
            while let Some(Reverse(next)) = self.later.peek() {
                if next.cycle - self.base >= RING_CYCLES {
                    break;
                }
                let next = *next;
                self.later.pop();
                self.put_in_ring(next);
            }
        }
        Some(event)
    }

    /// The first cycle after `cycle` whose bucket is occupied (one is).
    #[inline]
    fn next_occupied_after(&self, cycle: u64) -> u64 {
        let start = ((cycle + 1) & RING_MASK) as usize;
        let (mut word, bit) = (start / 64, start % 64);
        let mut bits = self.occupied[word] & (!0u64 << bit);
        let mut scanned = 0;
        while bits == 0 {
            word = (word + 1) % RING_WORDS;
            bits = self.occupied[word];
            scanned += 1;
            debug_assert!(scanned <= RING_WORDS, "no occupied bucket");
        }
        let slot = (word * 64 + bits.trailing_zeros() as usize) as u64;
        // The distance from `cycle` around the ring.
        cycle + 1 + (slot.wrapping_sub(cycle + 1) & RING_MASK)
    }

    /// The (cycle, tie) of the earliest event, `(u64::MAX, u64::MAX)` when
    /// none is queued.
    #[inline]
    pub fn next_key(&self) -> (u64, u64) {
        if !self.heap_only && self.in_ring > 0 {
            let event = if self.alone {
                &self.alone_event
            } else {
                let first = self.ring[(self.head & RING_MASK) as usize].first;
                &self.slots[first as usize].event
            };
            return (event.cycle, event.tie);
        }
        self.later
            .peek()
            .map_or((u64::MAX, u64::MAX), |Reverse(event)| {
                (event.cycle, event.tie)
            })
    }

    pub fn len(&self) -> usize {
        self.in_ring + self.later.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// Random pushes and pops, checked against a plain heap of (cycle, tie,
    /// sequence): `ahead` bounds how far ahead of the last popped cycle an
    /// event goes, `past` lets some go before it, and ties are drawn from
    /// `ties` values (1: insertion order alone).
    fn matches_a_plain_heap(seed: u64, ahead: u64, past: bool, ties: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut queue = EventQueue::default();
        let mut plain: BinaryHeap<Reverse<(u64, u64, u64, u32)>> = BinaryHeap::new();
        let (mut sequence, mut now) = (0u64, 0u64);
        for step in 0..3000u32 {
            if rng.next_u64() % 5 < 3 {
                let mut cycle = now + rng.next_u64() % ahead;
                if past && rng.next_u64() % 200 == 0 {
                    cycle = now.saturating_sub(1 + rng.next_u64() % 50);
                }
                let tie = rng.next_u64() % ties;
                sequence += 1;
                queue.push(cycle, tie, step, (step % 3) as u8);
                plain.push(Reverse((cycle, tie, sequence, step)));
            } else {
                let got = queue.pop().map(|e| (e.cycle(), e.target));
                let want = plain.pop().map(|Reverse((c, _, _, t))| (c, t));
                assert_eq!(got, want, "seed {seed}, step {step}");
                if let Some((cycle, _)) = got {
                    now = cycle;
                }
            }
            let want_next = plain
                .peek()
                .map_or((u64::MAX, u64::MAX), |Reverse(e)| (e.0, e.1));
            assert_eq!(queue.next_key(), want_next, "seed {seed}, step {step}");
            assert_eq!(queue.len(), plain.len());
        }
        while let Some(Reverse((c, _, _, t))) = plain.pop() {
            assert_eq!(queue.pop().map(|e| (e.cycle(), e.target)), Some((c, t)));
        }
        assert_eq!(queue.pop(), None);
    }

    #[test]
    fn a_lone_event_keeps_its_place_when_others_come() {
        let mut queue = EventQueue::default();
        // Pushed into an empty queue: held apart from the ring.
        queue.push(10, 0, 1, 0);
        assert!(queue.alone);
        assert_eq!((queue.next_key(), queue.len()), ((10, 0), 1));
        // A second event at the same cycle comes after it, one earlier
        // before it, one beyond the ring's reach after both.
        queue.push(10, 0, 2, 0);
        assert!(!queue.alone);
        queue.push(7, 0, 3, 0);
        queue.push(10 + 2 * RING_CYCLES, 0, 4, 0);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop().map(|e| e.target)).collect();
        assert_eq!(order, [3, 1, 2, 4]);
        // Popped alone, then a push before the last popped cycle: the heap
        // takes over and the order still holds.
        queue.push(50_000, 0, 5, 0);
        assert_eq!(
            queue.pop().map(|e| (e.cycle(), e.target)),
            Some((50_000, 5))
        );
        queue.push(40_000, 0, 6, 0);
        queue.push(40_000, 0, 7, 0);
        assert!(!queue.alone);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop().map(|e| e.target)).collect();
        assert_eq!(order, [6, 7]);
    }

    #[test]
    fn events_of_one_cycle_come_out_by_tie_whenever_they_were_queued() {
        let mut queue = EventQueue::default();
        // Alone, then one with a smaller tie at the same cycle, then one
        // between them, then one equal to the first (after it).
        queue.push(20, 50, 1, 0);
        assert_eq!(queue.next_key(), (20, 50));
        queue.push(20, 10, 2, 0);
        assert_eq!(queue.next_key(), (20, 10));
        queue.push(20, 30, 3, 0);
        queue.push(20, 50, 4, 0);
        queue.push(21, 0, 5, 0);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop().map(|e| e.target)).collect();
        assert_eq!(order, [2, 3, 1, 4, 5]);
    }

    #[test]
    fn pops_in_cycle_then_tie_then_insertion_order_like_a_plain_heap() {
        for seed in 0..20 {
            for ties in [1, 3, u64::MAX] {
                // Many events at equal cycles, all inside the ring.
                matches_a_plain_heap(seed, 4, false, ties);
                // Across the ring's edge and far beyond it (through the heap).
                matches_a_plain_heap(seed, 3 * RING_CYCLES, false, ties);
                matches_a_plain_heap(seed, RING_CYCLES + 3, false, ties);
                // Some events before the last popped one: the plain heap
                // takes over.
                matches_a_plain_heap(seed, 300, true, ties);
            }
        }
    }
}
