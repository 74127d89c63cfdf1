//! The protocol invariants, checked after every transaction in debug
//! builds and tests (single writer or many readers, the data-value
//! invariant, directory and caches agreeing), and a line described for
//! errors.

use super::*;

impl Coherence {
    /// Checks single-writer-multiple-reader, the data-value invariant and
    /// directory-cache agreement on one line.
    pub fn check_unit(&self, unit: usize, cycle: Cycle) -> Result<(), SimError> {
        let u = &self.units[unit];
        let fail = |message: String| {
            Err(SimError::ProtocolViolation {
                cycle,
                unit,
                address: unit as u64 * self.unit_bytes as u64,
                message,
                states: self.describe_unit(unit),
            })
        };
        let writable = u.holders.iter().filter(|h| h.state.is_writable()).count();
        if writable > 0 && u.holders.len() > 1 {
            return fail(format!(
                "single writer violated: a writable copy coexists with {} other copies",
                u.holders.len() - 1
            ));
        }
        let suppliers = u.holders.iter().filter(|h| h.state.supplies_data()).count();
        if suppliers > 1 {
            return fail(format!(
                "{suppliers} caches answer for the line; at most one may"
            ));
        }
        for h in &u.holders {
            let allowed = match h.state {
                LineState::Invalid => false,
                LineState::Owned => self.protocol == Protocol::Moesi,
                LineState::Forward => self.protocol == Protocol::Mesif,
                _ => true,
            };
            if !allowed {
                return fail(format!(
                    "core {} holds the line in state {} which {} does not have",
                    h.core,
                    h.state,
                    self.protocol.name()
                ));
            }
            if h.version != u.version {
                return fail(format!(
                    "data value: core {} holds write #{} but the last write is #{}",
                    h.core, h.version, u.version
                ));
            }
        }
        let cached: Vec<u32> = u.holders.iter().map(|h| h.core).collect();
        let directory: Vec<u32> = u.dir_sharers.iter().collect();
        if cached != directory {
            return fail(format!(
                "directory lists sharers {directory:?} but caches {cached:?} hold the line"
            ));
        }
        let owner = u
            .holders
            .iter()
            .find(|h| h.state.supplies_data())
            .map(|h| h.core);
        if owner != u.dir_owner {
            return fail(format!(
                "directory names owner {:?} but the answering cache is {:?}",
                u.dir_owner, owner
            ));
        }
        Ok(())
    }

    /// The line's states, as `core 3: M, core 9: S; directory owner 3, sharers [3, 9]`.
    pub fn describe_unit(&self, unit: usize) -> String {
        let u = &self.units[unit];
        let caches: Vec<String> = u
            .holders
            .iter()
            .map(|h| format!("core {}: {}", h.core, h.state))
            .collect();
        let caches = if caches.is_empty() {
            "no cached copy".to_string()
        } else {
            caches.join(", ")
        };
        format!(
            "{caches}; directory owner {:?}, sharers {:?}; home node {}; write #{}",
            u.dir_owner,
            u.dir_sharers.iter().collect::<Vec<_>>(),
            u.home_node,
            u.version
        )
    }

    #[cfg(test)]
    pub(crate) fn corrupt_version_for_test(&mut self, unit: usize) {
        if let Some(h) = self.units[unit].holders.first_mut() {
            h.version = h.version.wrapping_add(7);
        }
    }
}
