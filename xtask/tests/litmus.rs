//! The litmus tests of the memory-ordering chapter show x86-TSO's rules:
//! under store buffering (SB) both loads can read 0 without a fence, and
//! never with an mfence or a locked store; under message passing (MP) a CPU
//! that sees the flag always sees the payload, and only reading the payload
//! first lets a stale payload through. Each scenario runs with its own seed
//! and three more, each a different set of timings.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .to_path_buf()
}

/// Each variant's histogram (r1r2 = 00, 01, 10, 11), for the scenario as
/// shipped and with seeds 2 to 4.
fn histograms(scenario: &str) -> Vec<(u64, String, [u64; 4])> {
    let root = root();
    let text = std::fs::read_to_string(root.join(scenario)).expect("scenario");
    assert!(text.contains("\nseed = 1\n"), "{scenario} has seed 1");
    let dir = std::env::temp_dir().join(format!(
        "bounce-litmus-{}-{}",
        std::process::id(),
        scenario.replace('/', "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut all = Vec::new();
    for seed in 1..=4u64 {
        let name = format!("{}-seed{seed}.toml", scenario.replace('/', "_"));
        std::fs::write(
            dir.join(&name),
            text.replace("\nseed = 1\n", &format!("\nseed = {seed}\n")),
        )
        .unwrap();
        for (variant, counts) in xtask::litmus_histograms(&dir, &name)
            .unwrap_or_else(|e| panic!("{scenario} with seed {seed}: {e}"))
        {
            all.push((seed, variant, counts));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    all
}

const BOTH_ZERO: usize = 0b00;
const FLAG_WITHOUT_PAYLOAD: usize = 0b10;

#[test]
fn store_buffering_reads_both_zeros_only_without_a_barrier() {
    let all = histograms("book/scenarios/litmus-sb.toml");
    assert_eq!(all.len(), 12, "three variants, four seeds: {all:?}");
    for (seed, variant, counts) in &all {
        match variant.as_str() {
            "plain" => assert!(
                counts[BOTH_ZERO] > 0,
                "seed {seed}: without a fence r1 = r2 = 0 must appear: {counts:?}"
            ),
            "fence" | "locked" => assert_eq!(
                counts[BOTH_ZERO], 0,
                "seed {seed}, `{variant}`: r1 = r2 = 0 is forbidden: {counts:?}"
            ),
            other => panic!("unexpected variant `{other}`"),
        }
        // Every variant also sees more than one outcome: the timings vary.
        assert!(
            counts.iter().filter(|&&c| c > 0).count() >= 2,
            "seed {seed}, `{variant}`: {counts:?}"
        );
    }
}

#[test]
fn message_passing_never_shows_the_flag_without_the_payload() {
    let all = histograms("book/scenarios/litmus-mp.toml");
    assert_eq!(all.len(), 8, "two variants, four seeds: {all:?}");
    for (seed, variant, counts) in &all {
        match variant.as_str() {
            "in-order" => assert_eq!(
                counts[FLAG_WITHOUT_PAYLOAD], 0,
                "seed {seed}: TSO forbids r1 = 1, r2 = 0: {counts:?}"
            ),
            "reads-swapped" => assert!(
                counts[FLAG_WITHOUT_PAYLOAD] > 0,
                "seed {seed}: read in the other order, a stale payload must appear: {counts:?}"
            ),
            other => panic!("unexpected variant `{other}`"),
        }
    }
}
