//! The event queue: events are (cycle, key) pairs and come out in that
//! order, the engine's ordering contract. The key is the whole event apart
//! from its cycle (the engine packs the event's class, a seeded hash of its
//! cycle and target, and the target into it), so the order is a property of
//! the events themselves, never of when they were queued: a CPU that runs
//! ahead of the queue, or is resumed without it, lands where stepping would
//! have put it. Two equal events are interchangeable, so no insertion
//! sequence is kept.
//!
//! Why not a plain binary heap: with hundreds of CPUs queued, a heap's pop
//! costs about ten levels of 128-bit comparisons, the largest single cost of
//! a false-sharing run. Almost every event is scheduled a few hundred
//! cycles ahead of the event being processed, so the queue is a calendar:
//! a ring of `RING_CYCLES` buckets, one per cycle from the last popped
//! event's cycle on, each an unordered list that knows its smallest key,
//! with a bitmap of the non-empty ones. When the queue reaches a cycle its
//! bucket's keys are sorted once into `current` (one event alone skips
//! it), where an event pushed at that cycle is inserted in its place. Events further ahead wait in a heap and
//! move into the ring, in order, as soon as the ring reaches their cycle,
//! before any later event can be pushed there. An event scheduled before
//! the last popped cycle (the engine never does that) would turn the whole
//! queue into the plain heap, so the order stays right whatever happens.
//!
//! A queue that holds one event at a time (every CPU waiting at one
//! contended line, whose next free is the only event) keeps that event
//! apart from the buckets (`alone`), which the next push puts where it
//! belongs first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Cycles the ring covers: events are rarely scheduled further ahead than
/// a few transactions (hundreds of cycles).
const RING_CYCLES: u64 = 4096;
const RING_MASK: u64 = RING_CYCLES - 1;
const RING_WORDS: usize = (RING_CYCLES / 64) as usize;

/// One queued event: its cycle and its key (everything else about it, in
/// the engine's encoding, which also orders the events of one cycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Event {
    pub cycle: u64,
    pub key: u64,
}

/// Host bytes one queued event takes (for the estimate made before a run).
pub(crate) const EVENT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

/// Host bytes the queue takes however few events it holds: the ring's
/// buckets and its occupancy bits (for the estimate made before a run).
pub(crate) const FIXED_BYTES: u64 =
    RING_CYCLES * std::mem::size_of::<Bucket>() as u64 + RING_WORDS as u64 * 8;

/// A link in a list of slots: a slot's index, or the end of the list.
/// Four bytes (the index, or `u32::MAX` for the end, which only this type
/// reads), since every queued event carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotLink(u32);

impl SlotLink {
    /// The end of a list: an empty bucket's first and last, the last
    /// slot's next, an empty free list.
    const END: SlotLink = SlotLink(u32::MAX);

    /// A link to slot `index` (the slots are fewer than the events a run
    /// may have queued, far below `u32::MAX`).
    #[inline]
    fn to(index: usize) -> SlotLink {
        debug_assert!(index < u32::MAX as usize);
        SlotLink(index as u32)
    }

    /// The slot linked to, or `None` at the end of the list.
    #[inline]
    fn slot(self) -> Option<usize> {
        if self == SlotLink::END {
            None
        } else {
            Some(self.0 as usize)
        }
    }

    /// The slot of a link that is known not to be the end (an occupied
    /// bucket's first).
    #[inline]
    fn known_slot(self) -> usize {
        debug_assert!(self != SlotLink::END);
        self.0 as usize
    }
}

/// A ring event and the next one in its bucket (or in the free list).
#[derive(Clone, Copy, Debug)]
struct Slot {
    event: Event,
    next: SlotLink,
}

/// A bucket: the first and last slots of its list (`SlotLink::END` when
/// empty), and the smallest key among them (for `next_key` without a
/// walk).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    first: SlotLink,
    last: SlotLink,
    min_key: u64,
}

const EMPTY: Bucket = Bucket {
    first: SlotLink::END,
    last: SlotLink::END,
    min_key: u64::MAX,
};

#[derive(Debug)]
pub(crate) struct EventQueue {
    /// The cycle of the last popped event: no queued event is earlier.
    base: u64,
    /// Bucket `c & RING_MASK` lists the events at cycle `c`, for `c` in
    /// `base..base + RING_CYCLES`, in no order (linked through `slots`, so
    /// that no bucket allocates).
    ring: Vec<Bucket>,
    slots: Vec<Slot>,
    /// The first unused slot, linked through `next`.
    free: SlotLink,
    /// Bit `c & RING_MASK` is set when that bucket is not empty.
    occupied: [u64; RING_WORDS],
    /// Events in the ring's buckets (not the one `alone`).
    in_ring: usize,
    /// The earliest cycle with an event in the ring (when `in_ring > 0`).
    head: u64,
    /// The keys of the events of cycle `base` once the queue has reached
    /// it, sorted last-first (the next one at the end); while it holds any,
    /// an event pushed at `base` is inserted in its place, and the ring
    /// holds nothing at `base`.
    current: Vec<u64>,
    /// Events at `base + RING_CYCLES` or later, and every event once
    /// `heap_only` is set.
    later: BinaryHeap<Reverse<Event>>,
    /// An event was pushed before `base`: from then on the ring is unused.
    heap_only: bool,
    /// The queue's only event is `next`, kept out of its bucket: an event
    /// pushed into an empty queue, wherever its cycle, waits there (in no
    /// bucket, not counted in `in_ring`) until it is popped or a second
    /// event comes, which first places it as its own push would have. A queue that holds one event at a time, such as a contended
    /// line's next free while every CPU waits at that line, then never
    /// touches the buckets, and its push and pop write `next` and this
    /// flag only.
    alone: bool,
    /// The earliest queued event (`NO_EVENT` when none): the engine asks
    /// for it before every access, far more often than it pushes or pops.
    next: Event,
    /// Events queued, wherever they are: the engine asks for it after
    /// every event (its in-flight bound), and a push into an empty queue
    /// needs only it.
    len: usize,
}

/// What `next` says of an empty queue.
const NO_EVENT: Event = Event {
    cycle: u64::MAX,
    key: u64::MAX,
};

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            base: 0,
            ring: vec![EMPTY; RING_CYCLES as usize],
            slots: Vec::new(),
            free: SlotLink::END,
            occupied: [0; RING_WORDS],
            in_ring: 0,
            head: 0,
            current: Vec::new(),
            later: BinaryHeap::new(),
            heap_only: false,
            alone: false,
            next: NO_EVENT,
            len: 0,
        }
    }
}

impl EventQueue {
    /// Queues an event at `cycle`, among the events of that cycle by `key`.
    ///
    /// The push into an empty queue (a contended line's next free, once
    /// per handover) is inline at the caller; the rest is out of line.
    #[inline(always)]
    pub fn push(&mut self, cycle: u64, key: u64) {
        let empty = self.len == 0;
        self.len += 1;
        // Wherever its cycle is: it is placed only if a second event comes.
        if empty && !self.heap_only {
            // `next` is `NO_EVENT`, after every event.
            debug_assert!(!self.alone && self.next == NO_EVENT);
            debug_assert!(self.in_ring == 0 && self.current.is_empty() && self.later.is_empty());
            self.next = Event { cycle, key };
            self.alone = true;
            return;
        }
        self.push_into_occupied(cycle, key);
    }

    /// [`EventQueue::push`] into a queue that holds events (or into the
    /// heap).
    #[inline(never)]
    fn push_into_occupied(&mut self, cycle: u64, key: u64) {
        let event = Event { cycle, key };
        if self.alone {
            // Placed first, as its own push would have placed it (`base`
            // moves only on a pop).
            self.alone = false;
            self.place(self.next);
        }
        if event < self.next {
            self.next = event;
        }
        self.place(event);
    }

    /// Puts `event` where it waits: the heap, the events of the current
    /// cycle, or the ring.
    #[inline]
    fn place(&mut self, event: Event) {
        let Event { cycle, key } = event;
        if self.heap_only {
            self.later.push(Reverse(event));
        } else if cycle < self.base {
            self.give_up_ring();
            self.later.push(Reverse(event));
        } else if cycle == self.base && !self.current.is_empty() {
            // Before (nearer the end than) every greater key.
            let at = self.current.partition_point(|&k| k > key);
            self.current.insert(at, key);
        } else if cycle - self.base < RING_CYCLES {
            self.put_in_ring(event);
        } else {
            self.later.push(Reverse(event));
        }
    }

    #[inline]
    fn put_in_ring(&mut self, event: Event) {
        let link = match self.free.slot() {
            None => {
                self.slots.push(Slot {
                    event,
                    next: SlotLink::END,
                });
                SlotLink::to(self.slots.len() - 1)
            }
            Some(index) => {
                let slot = &mut self.slots[index];
                let link = std::mem::replace(&mut self.free, slot.next);
                *slot = Slot {
                    event,
                    next: SlotLink::END,
                };
                link
            }
        };
        let slot = (event.cycle & RING_MASK) as usize;
        let bucket = &mut self.ring[slot];
        match bucket.last.slot() {
            None => bucket.first = link,
            Some(last) => self.slots[last].next = link,
        }
        bucket.last = link;
        bucket.min_key = bucket.min_key.min(event.key);
        self.occupied[slot / 64] |= 1 << (slot % 64);
        if self.in_ring == 0 || event.cycle < self.head {
            self.head = event.cycle;
        }
        self.in_ring += 1;
    }

    /// Moves every event into the heap and stops using the ring.
    #[cold]
    fn give_up_ring(&mut self) {
        for bucket in &mut self.ring {
            let mut link = bucket.first;
            while let Some(index) = link.slot() {
                let slot = self.slots[index];
                self.later.push(Reverse(slot.event));
                link = slot.next;
            }
            *bucket = EMPTY;
        }
        let base = self.base;
        self.later.extend(
            self.current
                .drain(..)
                .map(|key| Reverse(Event { cycle: base, key })),
        );
        self.slots.clear();
        self.free = SlotLink::END;
        self.occupied = [0; RING_WORDS];
        self.in_ring = 0;
        self.heap_only = true;
    }

    /// Takes the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.alone {
            // The only event (nothing in `current` or the heap): the queue
            // is empty after it, as `take` and `earliest` would find.
            debug_assert!(!self.heap_only && self.current.is_empty() && self.later.is_empty());
            self.alone = false;
            self.len = 0;
            let event = self.next;
            self.base = self.base.max(event.cycle);
            self.next = NO_EVENT;
            return Some(event);
        }
        let event = self.take()?;
        self.len -= 1;
        self.next = self.earliest();
        Some(event)
    }

    /// `pop` but for keeping `next`.
    #[inline]
    fn take(&mut self) -> Option<Event> {
        if self.heap_only {
            return self.later.pop().map(|Reverse(event)| event);
        }
        if let Some(key) = self.current.pop() {
            // At `base`, before every other queued event.
            return Some(Event {
                cycle: self.base,
                key,
            });
        }
        let event = if self.alone {
            // The queue's only event (nothing in the heap to move).
            self.alone = false;
            self.next
        } else if self.in_ring > 0 {
            // Every heap event is at `base + RING_CYCLES` or later, after
            // every ring event: the head bucket holds the next ones.
            self.take_head_bucket()
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

    /// Empties the head bucket and returns its first event by key: a lone
    /// event directly, several sorted into `current`, which keeps the rest.
    #[inline]
    fn take_head_bucket(&mut self) -> Event {
        let slot = (self.head & RING_MASK) as usize;
        let bucket = std::mem::replace(&mut self.ring[slot], EMPTY);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        let mut link = bucket.first;
        let mut taken = 0;
        let first = self.slots[bucket.first.known_slot()].event;
        while let Some(index) = link.slot() {
            let Slot { event, next } = self.slots[index];
            if bucket.first != bucket.last {
                self.current.push(event.key);
            }
            self.slots[index].next = self.free;
            self.free = link;
            taken += 1;
            link = next;
        }
        self.in_ring -= taken;
        if self.in_ring > 0 {
            self.head = self.next_occupied_after(self.head);
        }
        if taken == 1 {
            first
        } else {
            // One cycle's keys, sorted last first: a few (the usual case)
            // by insertion, without the general sort's set-up.
            if self.current.len() <= 16 {
                for k in 1..self.current.len() {
                    let key = self.current[k];
                    let mut j = k;
                    while j > 0 && self.current[j - 1] < key {
                        self.current[j] = self.current[j - 1];
                        j -= 1;
                    }
                    self.current[j] = key;
                }
            } else {
                self.current.sort_unstable_by(|a, b| b.cmp(a));
            }
            Event {
                cycle: first.cycle,
                key: self.current.pop().expect("the bucket's events"),
            }
        }
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

    /// The earliest event, `Event { cycle: u64::MAX, key: u64::MAX }` when
    /// none is queued.
    #[inline]
    pub fn next(&self) -> Event {
        self.next
    }

    /// The earliest event, found from the queue's parts.
    #[inline]
    fn earliest(&self) -> Event {
        if !self.heap_only {
            if let Some(&key) = self.current.last() {
                return Event {
                    cycle: self.base,
                    key,
                };
            }
            if self.alone {
                return self.next;
            }
            if self.in_ring > 0 {
                return Event {
                    cycle: self.head,
                    key: self.ring[(self.head & RING_MASK) as usize].min_key,
                };
            }
        }
        self.later.peek().map_or(NO_EVENT, |Reverse(event)| *event)
    }

    /// Whether `test` holds for every queued event's key, taken in no
    /// order (stops at the first that fails). For the engine's rare look
    /// at what is left to happen (`engine::shortcuts::spin`), never on the
    /// event loop's path.
    pub fn all_keys(&self, mut test: impl FnMut(u64) -> bool) -> bool {
        if self.alone && !test(self.next.key) {
            return false;
        }
        if !self.current.iter().all(|&key| test(key)) {
            return false;
        }
        if !self.later.iter().all(|Reverse(event)| test(event.key)) {
            return false;
        }
        for (word, &bits) in self.occupied.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let bucket = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let mut link = self.ring[bucket].first;
                while let Some(slot) = link.slot() {
                    if !test(self.slots[slot].event.key) {
                        return false;
                    }
                    link = self.slots[slot].next;
                }
            }
        }
        true
    }

    pub fn len(&self) -> usize {
        debug_assert_eq!(
            self.len,
            self.alone as usize + self.in_ring + self.current.len() + self.later.len()
        );
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// Random pushes and pops, checked against a plain heap of (cycle,
    /// key): `ahead` bounds how far ahead of the last popped cycle an event
    /// goes, `past` lets some go before it, and keys are drawn from `keys`
    /// values (few: many equal events).
    fn matches_a_plain_heap(seed: u64, ahead: u64, past: bool, keys: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut queue = EventQueue::default();
        let mut plain: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut now = 0u64;
        for step in 0..3000u32 {
            if rng.next_u64() % 5 < 3 {
                let mut cycle = now + rng.next_u64() % ahead;
                if past && rng.next_u64() % 200 == 0 {
                    cycle = now.saturating_sub(1 + rng.next_u64() % 50);
                }
                let key = rng.next_u64() % keys;
                queue.push(cycle, key);
                plain.push(Reverse((cycle, key)));
            } else {
                let got = queue.pop().map(|e| (e.cycle, e.key));
                let want = plain.pop().map(|Reverse(e)| e);
                assert_eq!(got, want, "seed {seed}, step {step}");
                if let Some((cycle, _)) = got {
                    now = cycle;
                }
            }
            let want_next = plain.peek().map_or((u64::MAX, u64::MAX), |Reverse(e)| *e);
            let next = queue.next();
            assert_eq!(
                (next.cycle, next.key),
                want_next,
                "seed {seed}, step {step}"
            );
            assert_eq!(queue.len(), plain.len());
            // `all_keys` visits every queued key once, wherever it is held.
            let mut seen = Vec::new();
            assert!(queue.all_keys(|key| {
                seen.push(key);
                true
            }));
            seen.sort_unstable();
            let mut want_keys: Vec<u64> = plain.iter().map(|Reverse((_, key))| *key).collect();
            want_keys.sort_unstable();
            assert_eq!(seen, want_keys, "seed {seed}, step {step}");
            if let Some(&last) = want_keys.last() {
                assert!(
                    !queue.all_keys(|key| key != last),
                    "seed {seed}, step {step}"
                );
            }
        }
        while let Some(Reverse(want)) = plain.pop() {
            assert_eq!(queue.pop().map(|e| (e.cycle, e.key)), Some(want));
        }
        assert_eq!(queue.pop(), None);
    }

    fn keys(queue: &mut EventQueue) -> Vec<u64> {
        std::iter::from_fn(|| queue.pop().map(|e| e.key)).collect()
    }

    #[test]
    fn a_lone_event_keeps_its_place_when_others_come() {
        let mut queue = EventQueue::default();
        // Pushed into an empty queue: held apart from the ring.
        queue.push(10, 1);
        assert!(queue.alone);
        assert_eq!(
            (queue.next(), queue.len()),
            (Event { cycle: 10, key: 1 }, 1)
        );
        // A second event at the same cycle with a greater key comes after
        // it, one earlier before it, one beyond the ring's reach after both.
        queue.push(10, 2);
        assert!(!queue.alone);
        queue.push(7, 3);
        queue.push(10 + 2 * RING_CYCLES, 4);
        assert_eq!(keys(&mut queue), [3, 1, 2, 4]);
        // Popped alone, then a push before the last popped cycle: the heap
        // takes over and the order still holds.
        queue.push(50_000, 5);
        assert_eq!(
            queue.pop(),
            Some(Event {
                cycle: 50_000,
                key: 5
            })
        );
        queue.push(40_000, 7);
        queue.push(40_000, 6);
        assert!(!queue.alone);
        assert_eq!(keys(&mut queue), [6, 7]);
    }

    #[test]
    fn events_of_one_cycle_come_out_by_key_whenever_they_were_queued() {
        let mut queue = EventQueue::default();
        // Alone, then a smaller key at the same cycle, then several between
        // and around them, one of them pushed once the cycle is being taken.
        queue.push(20, 50);
        assert_eq!(queue.next(), Event { cycle: 20, key: 50 });
        queue.push(20, 10);
        assert_eq!(queue.next(), Event { cycle: 20, key: 10 });
        queue.push(20, 30);
        queue.push(20, 60);
        queue.push(21, 0);
        assert_eq!(queue.pop(), Some(Event { cycle: 20, key: 10 }));
        queue.push(20, 40);
        queue.push(20, 5);
        assert_eq!(keys(&mut queue), [5, 30, 40, 50, 60, 0]);
    }

    #[test]
    fn pops_in_cycle_then_key_order_like_a_plain_heap() {
        for seed in 0..20 {
            for keys in [1, 3, u64::MAX] {
                // Many events at equal cycles, all inside the ring.
                matches_a_plain_heap(seed, 4, false, keys);
                // Across the ring's edge and far beyond it (through the heap).
                matches_a_plain_heap(seed, 3 * RING_CYCLES, false, keys);
                matches_a_plain_heap(seed, RING_CYCLES + 3, false, keys);
                // Some events before the last popped one: the plain heap
                // takes over.
                matches_a_plain_heap(seed, 300, true, keys);
            }
        }
    }
}
