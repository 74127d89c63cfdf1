//! The answers of the exercises of "The protocol as a table and a proof"
//! (book/src/ch16-protocol-proof.md), recomputed from the code: each
//! exercise's expected answer must say what the coherence code and the
//! checker give today.

use sim_core::checker::{check, Invariant};
use sim_core::coherence::planted;
use sim_core::coherence::LineState;
use sim_core::protocol_table::{transition_table, DataFrom, Event, Pair, Transition};
use sim_core::topology::Protocol;
use std::path::Path;

const CHAPTER: &str = "book/src/ch16-protocol-proof.md";

/// The chapter's text with every run of white space made one space, so an
/// answer matches whatever its line breaks.
fn chapter() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .join(CHAPTER);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{CHAPTER}: {e}"));
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Exercise `n`'s text, from its number to the next exercise or the end.
fn exercise(n: u32) -> String {
    let text = chapter();
    let exercises = &text[text.find("## Exercises").expect("an Exercises section")..];
    let start = exercises
        .find(&format!(" {n}. "))
        .unwrap_or_else(|| panic!("no exercise {n}"));
    let rest = &exercises[start + 4..];
    let end = rest.find(&format!(" {}. ", n + 1)).unwrap_or(rest.len());
    rest[..end].to_string()
}

fn transition(protocol: Protocol, local: LineState, remote: LineState, event: Event) -> Transition {
    transition_table(protocol)
        .unwrap()
        .into_iter()
        .find(|t| t.before == Pair { local, remote } && t.event == event)
        .unwrap_or_else(|| panic!("{protocol:?}: no {local}/{remote} {event:?}"))
}

fn says(n: u32, expected: &str) {
    let text = exercise(n);
    assert!(
        text.contains(expected),
        "exercise {n} should say `{expected}`:\n{text}"
    );
}

#[test]
fn exercise_1_mesi_read_of_a_modified_line() {
    let t = transition(
        Protocol::Mesi,
        LineState::Invalid,
        LineState::Modified,
        Event::LocalLoad,
    );
    assert_eq!(t.data_from, DataFrom::OtherCache(LineState::Modified));
    assert!(t.hitm && t.writeback);
    says(1, &format!("**{}**", t.after));
    says(1, "from the other cache's M copy (a HITM)");
    says(1, "M data written back to memory");
}

#[test]
fn exercise_2_moesi_keeps_the_dirty_line_owned() {
    let t = transition(
        Protocol::Moesi,
        LineState::Invalid,
        LineState::Modified,
        Event::LocalLoad,
    );
    assert_eq!(t.data_from, DataFrom::OtherCache(LineState::Modified));
    assert!(!t.writeback);
    assert_eq!(t.after.remote, LineState::Owned);
    says(2, &format!("**{}**", t.after));
    says(2, "no writeback");
    says(2, "keeps the dirty line as O");
}

#[test]
fn exercise_3_stable_configurations() {
    let configurations = |p: Protocol| {
        let mut pairs: Vec<Pair> = transition_table(p)
            .unwrap()
            .iter()
            .map(|t| t.before)
            .collect();
        pairs.dedup();
        pairs
    };
    let (mesi, mesif, moesi) = (
        configurations(Protocol::Mesi),
        configurations(Protocol::Mesif),
        configurations(Protocol::Moesi),
    );
    says(
        3,
        &format!(
            "{} for MESI, {} for MESIF and {} for MOESI",
            mesi.len(),
            mesif.len(),
            moesi.len()
        ),
    );
    let only_mesif: Vec<String> = mesif
        .iter()
        .filter(|p| !mesi.contains(p))
        .map(|p| p.to_string())
        .collect();
    let only_mesi: Vec<String> = mesi
        .iter()
        .filter(|p| !mesif.contains(p))
        .map(|p| p.to_string())
        .collect();
    says(
        3,
        &format!(
            "MESIF has {} where MESI has {}",
            only_mesif.join(" and "),
            only_mesi.join(" and ")
        ),
    );
}

#[test]
fn exercise_4_a_third_value_adds_transitions_not_states() {
    let run = |values| check(&xtask::check_config(Protocol::Mesi, (2, 1, values, 1))).unwrap();
    let (two, three) = (run(2), run(3));
    assert!(two.complete && three.complete);
    assert_eq!(two.states, three.states);
    says(4, &format!("{} states both times", two.states));
    says(
        4,
        &format!(
            "{} transitions against {}",
            two.transitions, three.transitions
        ),
    );
}

#[test]
fn exercise_5_the_planted_bug_needs_a_third_cache_or_evictions() {
    let planted_check = |caches, evictions| {
        let config = sim_core::checker::CheckConfig {
            evictions,
            ..xtask::check_config(Protocol::Moesi, (caches, 1, 2, 1))
        };
        planted::with(xtask::LAB_BUG, || check(&config)).unwrap()
    };
    let invariant = |r: &sim_core::checker::CheckReport| r.violation.as_ref().map(|v| v.invariant);
    // The chapter's command explores evictions (the default).
    assert!(xtask::check_config(Protocol::Moesi, (2, 1, 2, 1)).evictions);
    let two = planted_check(2, true);
    assert_eq!(invariant(&two), Some(Invariant::DataValue));
    let two_without = planted_check(2, false);
    assert!(two_without.complete && two_without.violation.is_none());
    let three = planted_check(3, false);
    assert_eq!(invariant(&three), Some(Invariant::DataValue));
    says(5, "*Expect yes, thanks to the evictions: with 2 caches, 1 line, 2 values and buffers of 1 the checker finds the stale value too.");
    says(
        5,
        "With `--no-evictions` the exploration completes without a violation",
    );
}
