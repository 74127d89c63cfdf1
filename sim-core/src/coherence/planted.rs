//! Deliberately broken transitions, which the exhaustive checker must catch
//! (its unit tests, and the book's lab on `bounce check-protocol`).
//!
//! Compiled only into this crate's unit tests and with the `planted-bugs`
//! feature, which `xtask` turns on to print a caught bug in the book; the
//! `bounce` package never does, so `bounce` built on its own (`cargo build
//! -p bounce`, `cargo install`) has none of this module. (A build of the
//! whole workspace unifies features, so its `bounce` has the module, with
//! no bug switched on and no way to switch one on.) The protocol code
//! holds no bug: each bug is made here, around the real transition, by
//! changing what it did (the line's entry and the report) or what it was
//! asked (a request the home takes and drops, a queue a hit ignores). The
//! transaction code only hands over to this module, at four entry points,
//! when a bug is switched on: transaction-level bugs
//! (`Coherence::transaction`) get the general walk's result to break;
//! serve-, hit- and prefetch-level bugs wrap [`Coherence::serve_next`],
//! [`Coherence::try_hit`] and [`Coherence::prefetch`].
//!
//! One bug at a time is switched on, per thread, with [`with`].

use super::{
    AccessReport, Coherence, Holder, LineState, Need, RequestKind, Requested, Route, Unit, Waiter,
};
use crate::cpu::LinuxCpu;
use crate::error::SimError;
use crate::time::{Cycle, Cycles};
use crate::topology::{Protocol, Topology};
use std::cell::Cell;

/// A deliberately broken transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    /// A write miss that finds several other copies leaves the last one valid.
    WriteSparesOneSharer,
    /// An upgrade (the writer already has the data) leaves the other
    /// Shared copies valid.
    UpgradeKeepsSharers,
    /// MOESI: a read of a Modified line leaves it Shared instead of
    /// Owned, without a writeback: the dirty data has no owner.
    MoesiModifiedToShared,
    /// MESIF: the old forwarder stays F when a new reader becomes F.
    MesifKeepsForward,
    /// A read is granted Exclusive while other Shared copies exist.
    ExclusiveDespiteSharers,
    /// MOESI: an Owned copy is not asked for the data; memory answers.
    OwnedNotSupplier,
    /// A write hit does not advance the line's write count.
    WriteHitKeepsVersion,
    /// The directory does not add a requester that had no copy.
    DirectoryMissesRequester,
    /// The directory keeps the old owner when no cache answers any more.
    DirectoryKeepsOwner,
    /// The home serves a waiter while the line's transaction is in flight.
    ServeWhileBusy,
    /// A core hits in its cache while another core's request waits.
    HitBypassesQueue,
    /// When only holders' re-accesses wait, the home serves none of them.
    HoldersNeverServed,
    /// The home takes a waiting read off the queue and never answers it.
    ServeDropsRead,
    /// An adjacent-line prefetch read of a Modified line grants the
    /// prefetcher a Shared copy but leaves the owner Modified.
    PrefetchKeepsOwnerModified,
    /// A request for ownership with no store attached (an RFO prefetch)
    /// takes the line Exclusive, clean, even when the data it took over
    /// was dirty: evicted before any store, it is dropped unwritten.
    OwnershipPrefetchTakesDirtyDataClean,
}

/// Where a bug acts: the entry point that hands over to this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    /// [`Coherence::transaction`]: the state changes of a transaction.
    Transaction,
    /// [`Coherence::serve_next`]: which waiter the home serves, and when.
    Serve,
    /// [`Coherence::try_hit`]: an access the cache answers itself.
    Hit,
    /// [`Coherence::prefetch`]: a prefetch read served at once.
    Prefetch,
}

impl Bug {
    pub const ALL: [Bug; 15] = [
        Bug::WriteSparesOneSharer,
        Bug::UpgradeKeepsSharers,
        Bug::MoesiModifiedToShared,
        Bug::MesifKeepsForward,
        Bug::ExclusiveDespiteSharers,
        Bug::OwnedNotSupplier,
        Bug::WriteHitKeepsVersion,
        Bug::DirectoryMissesRequester,
        Bug::DirectoryKeepsOwner,
        Bug::ServeWhileBusy,
        Bug::HitBypassesQueue,
        Bug::HoldersNeverServed,
        Bug::ServeDropsRead,
        Bug::PrefetchKeepsOwnerModified,
        Bug::OwnershipPrefetchTakesDirtyDataClean,
    ];

    /// Whether the bug acts at `hook`.
    pub(super) fn acts_at(self, hook: Hook) -> bool {
        match self {
            Bug::ServeWhileBusy | Bug::HoldersNeverServed | Bug::ServeDropsRead => {
                hook == Hook::Serve
            }
            Bug::HitBypassesQueue | Bug::WriteHitKeepsVersion => hook == Hook::Hit,
            Bug::PrefetchKeepsOwnerModified => matches!(hook, Hook::Serve | Hook::Prefetch),
            Bug::OwnershipPrefetchTakesDirtyDataClean => hook == Hook::Prefetch,
            _ => hook == Hook::Transaction,
        }
    }
}

thread_local! {
    static ACTIVE: Cell<Option<Bug>> = const { Cell::new(None) };
}

/// The bug switched on in this thread, if it acts at `hook`.
#[inline]
pub(super) fn active_at(hook: Hook) -> Option<Bug> {
    ACTIVE.with(|a| a.get()).filter(|b| b.acts_at(hook))
}

/// Runs `f` with `bug` switched on in this thread (and off again after,
/// whatever `f` does).
pub fn with<R>(bug: Bug, f: impl FnOnce() -> R) -> R {
    let previous = ACTIVE.with(|a| a.replace(Some(bug)));
    let _restore = Restore(previous);
    f()
}

/// Runs `f` with no bug switched on: the real transition a bug wraps.
fn real<R>(f: impl FnOnce() -> R) -> R {
    let previous = ACTIVE.with(|a| a.replace(None));
    let _restore = Restore(previous);
    f()
}

struct Restore(Option<Bug>);

impl Drop for Restore {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.0));
    }
}

/// The directory rebuilt from the caches after a bug changed the holders,
/// as the general walk sets it: every holder a sharer, the owner the last
/// holder (in core order) whose state answers for the line.
fn directory_from_caches(u: &mut Unit) {
    u.dir_sharers.clear();
    for h in &u.holders {
        u.dir_sharers.insert(h.core);
    }
    u.dir_owner = u
        .holders
        .iter()
        .rev()
        .find(|h| h.state.supplies_data())
        .map(|h| h.core);
}

/// Puts copies a write should have invalidated back among the holders.
fn spare(u: &mut Unit, spared: impl IntoIterator<Item = Holder>) {
    for h in spared {
        let at = u.holders.partition_point(|k| k.core < h.core);
        u.holders.insert(at, h);
    }
}

/// A transaction with `bug` planted: the general walk's result, broken.
/// (One arm per planted bug, each a short edit of the result: a table.)
#[allow(clippy::too_many_arguments)]
pub(super) fn transaction(
    coherence: &mut Coherence,
    bug: Bug,
    topology: &Topology,
    issued: Cycle,
    now: Cycle,
    cpu: LinuxCpu,
    unit: usize,
    need: Need,
    hold_cycles: Cycles,
) -> AccessReport {
    let core = topology.core_of(cpu);
    let before = coherence.units[unit].clone();
    let mut report =
        coherence.transaction_general(topology, issued, now, cpu, unit, need, hold_cycles);
    let protocol = coherence.protocol;
    let u = &mut coherence.units[unit];
    let others_before: Vec<Holder> = before
        .holders
        .iter()
        .filter(|h| h.core != core)
        .copied()
        .collect();
    let missed = report.requester_before == LineState::Invalid;
    match bug {
        Bug::WriteSparesOneSharer if need == Need::Write && missed && others_before.len() >= 2 => {
            spare(u, others_before.last().copied());
            directory_from_caches(u);
        }
        Bug::UpgradeKeepsSharers if need == Need::Write && !missed => {
            spare(
                u,
                others_before
                    .into_iter()
                    .filter(|h| h.state == LineState::Shared),
            );
            directory_from_caches(u);
        }
        Bug::MoesiModifiedToShared if protocol == Protocol::Moesi && need == Need::Read => {
            for change in report.others.iter_mut() {
                if change.before == LineState::Modified && change.after == LineState::Owned {
                    change.after = LineState::Shared;
                    if let Some(h) = u.holders.iter_mut().find(|h| h.core == change.core) {
                        h.state = LineState::Shared;
                    }
                }
            }
            directory_from_caches(u);
        }
        Bug::MesifKeepsForward if need == Need::Read => {
            report.others.retain(|change| {
                let kept = change.before == LineState::Forward;
                if kept {
                    if let Some(h) = u.holders.iter_mut().find(|h| h.core == change.core) {
                        h.state = LineState::Forward;
                    }
                }
                !kept
            });
            directory_from_caches(u);
        }
        Bug::ExclusiveDespiteSharers
            if need == Need::Read
                && u.holders
                    .iter()
                    .all(|h| h.core == core || h.state == LineState::Shared) =>
        {
            if let Some(h) = u.holders.iter_mut().find(|h| h.core == core) {
                h.state = LineState::Exclusive;
            }
            report.requester_after = LineState::Exclusive;
            directory_from_caches(u);
        }
        Bug::OwnedNotSupplier => {
            if let Some((_, LineState::Owned, _)) = report.supplier {
                report.supplier = None;
                report.hitm = false;
                report.route = Route::Memory { node: u.home_node };
            }
        }
        Bug::DirectoryMissesRequester if missed => u.dir_sharers.remove(core),
        Bug::DirectoryKeepsOwner if u.dir_owner.is_none() => u.dir_owner = before.dir_owner,
        _ => {}
    }
    report
}

/// [`Coherence::serve_next`] with `bug` planted.
pub(super) fn serve_next(
    coherence: &mut Coherence,
    bug: Bug,
    topology: &Topology,
    now: Cycle,
    unit: usize,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Result<Option<(Waiter, AccessReport)>, SimError> {
    let u = &mut coherence.units[unit];
    match bug {
        Bug::ServeWhileBusy if !u.waiting.is_empty() && u.busy_until > now => {
            // The home forgets the transaction in flight.
            let busy_until = u.busy_until;
            u.busy_until = now;
            let served = real(|| coherence.serve_next(topology, now, unit, pick))?;
            if served.is_none() {
                coherence.units[unit].busy_until = busy_until;
            }
            Ok(served)
        }
        Bug::HoldersNeverServed
            if u.busy_until <= now
                && !u.waiting.is_empty()
                && u.waiting.iter().all(|w| u.dir_sharers.contains(w.core)) =>
        {
            Ok(None)
        }
        Bug::ServeDropsRead => {
            let before = u.clone();
            let served = real(|| coherence.serve_next(topology, now, unit, pick))?;
            match served {
                Some((waiter, _)) if waiter.need == Need::Read => {
                    // Nothing of the transaction happened, and the request
                    // is gone. (The queue's index, if it has one, already
                    // lost it in the serve: the queue restored less the
                    // request is the queue the serve left.)
                    let u = &mut coherence.units[unit];
                    *u = before;
                    if let Some(k) = u.waiting.iter().position(|w| *w == waiter) {
                        u.waiting.swap_remove(k);
                    }
                    Ok(None)
                }
                other => Ok(other),
            }
        }
        Bug::PrefetchKeepsOwnerModified => {
            let served = real(|| coherence.serve_next(topology, now, unit, pick))?;
            if let Some((waiter, report)) = &served {
                if waiter.tag.kind() == RequestKind::Prefetch {
                    keep_owner_modified(coherence, unit, report)?;
                }
            }
            Ok(served)
        }
        _ => real(|| coherence.serve_next(topology, now, unit, pick)),
    }
}

/// [`Coherence::try_hit`] with `bug` planted.
#[allow(clippy::too_many_arguments)]
pub(super) fn try_hit(
    coherence: &mut Coherence,
    bug: Bug,
    topology: &Topology,
    now: Cycle,
    cpu: LinuxCpu,
    unit: usize,
    need: Need,
    hold_cycles: Cycles,
) -> Option<AccessReport> {
    if bug == Bug::HitBypassesQueue {
        // The waiting requests are not looked at.
        return coherence.try_hit_unqueued(topology, now, cpu, unit, need, hold_cycles, Cycle::MAX);
    }
    let report = real(|| coherence.try_hit(topology, now, cpu, unit, need, hold_cycles))?;
    if bug == Bug::WriteHitKeepsVersion && need == Need::Write {
        let core = topology.core_of(cpu);
        let u = &mut coherence.units[unit];
        u.version -= 1;
        let version = u.version;
        if let Some(h) = u.holders.iter_mut().find(|h| h.core == core) {
            h.version = version;
        }
    }
    Some(report)
}

/// After a prefetch served at once, the planted prefetch bug switched on,
/// if any.
pub(super) fn after_prefetch(
    coherence: &mut Coherence,
    unit: usize,
    requested: &Requested,
) -> Result<(), SimError> {
    match (active_at(Hook::Prefetch), requested) {
        (Some(Bug::PrefetchKeepsOwnerModified), Requested::Done(report)) => {
            keep_owner_modified(coherence, unit, report)
        }
        (Some(Bug::OwnershipPrefetchTakesDirtyDataClean), Requested::Done(report))
            if report.need == Need::Write =>
        {
            // After a write transaction the requester's copy is the only one.
            for h in &mut coherence.units[unit].holders {
                if h.state == LineState::Modified {
                    h.state = LineState::Exclusive;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The planted `PrefetchKeepsOwnerModified`: the owner a prefetch read
/// downgraded stays Modified beside the new Shared copy. (Then the line is
/// checked again, as the transaction was.)
fn keep_owner_modified(
    coherence: &mut Coherence,
    unit: usize,
    report: &AccessReport,
) -> Result<(), SimError> {
    let u = &mut coherence.units[unit];
    for change in &report.others {
        if change.before == LineState::Modified {
            if let Ok(i) = u.holders.binary_search_by_key(&change.core, |h| h.core) {
                u.holders[i].state = LineState::Modified;
                u.dir_owner = Some(change.core);
            }
        }
    }
    if coherence.check_invariants {
        coherence.check_unit(unit, report.started)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The protocol code names no bug: its only mentions of this module are
    /// the hand-overs, one per entry point, each compiled only where this
    /// module is.
    #[test]
    fn the_protocol_code_holds_no_bug_only_hand_overs() {
        const GATE: &str = "#[cfg(any(test, feature = \"planted-bugs\"))]";
        for (file, text, hand_overs) in [
            ("transaction.rs", include_str!("transaction.rs"), 4),
            ("hits.rs", include_str!("hits.rs"), 1),
        ] {
            assert!(!text.contains("Bug::"), "{file} names a bug");
            assert!(!text.contains("cfg(test)"), "{file} has test-only code");
            assert_eq!(text.matches(GATE).count(), hand_overs, "{file}");
            let lines: Vec<&str> = text.lines().collect();
            for (n, line) in lines.iter().enumerate() {
                if line.contains("planted::") {
                    let gated = lines[..n].iter().rev().take(2).any(|l| l.trim() == GATE);
                    assert!(gated, "{file}:{}: `{}` is not gated", n + 1, line.trim());
                }
            }
        }
    }
}
