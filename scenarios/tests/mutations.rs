//! Loading many mutated versions of valid files never panics, and every
//! error it reports points at a real place in the text.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// A tiny deterministic xorshift64 generator.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn char_starts(text: &str) -> Vec<usize> {
    text.char_indices().map(|(i, _)| i).collect()
}

fn mutate(rng: &mut XorShift, text: &str) -> String {
    let mut out = text.to_string();
    for _ in 0..1 + rng.below(3) {
        match rng.below(6) {
            // Delete a random char.
            0 | 1 => {
                let starts = char_starts(&out);
                if let Some(&i) = starts.get(rng.below(starts.len())) {
                    out.remove(i);
                }
            }
            // Duplicate a random line.
            2 | 3 => {
                let mut lines: Vec<&str> = out.split('\n').collect();
                let i = rng.below(lines.len());
                let line = lines[i];
                lines.insert(i, line);
                out = lines.join("\n");
            }
            // Insert a TOML-significant char.
            4 => {
                const CHARS: &[char] = &[
                    '[', ']', '{', '}', '=', '"', '\'', '.', ',', '-', '#', '\n', '0', 'a', 'é',
                ];
                let starts = char_starts(&out);
                let i = starts
                    .get(rng.below(starts.len() + 1))
                    .copied()
                    .unwrap_or(out.len());
                out.insert(i, CHARS[rng.below(CHARS.len())]);
            }
            // Delete a random line.
            _ => {
                let mut lines: Vec<&str> = out.split('\n').collect();
                let i = rng.below(lines.len());
                lines.remove(i);
                out = lines.join("\n");
            }
        }
    }
    out
}

fn check_never_panics(name: &str, original: &str, rounds: usize, seed: u64) {
    let mut rng = XorShift(seed);
    let mut errors = 0;
    for round in 0..rounds {
        let text = mutate(&mut rng, original);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let error = scenarios::load_str("mutated.toml", &text).err();
            if let Some(e) = &error {
                // Rendering must not panic either.
                let _ = e.to_string();
            }
            error
        }));
        let error = match outcome {
            Ok(e) => e,
            Err(_) => panic!("{name} round {round}: loading panicked on:\n{text}"),
        };
        if let Some(e) = error {
            errors += 1;
            assert!(
                e.line >= 1 && e.column >= 1,
                "{name} round {round}: {e:?}\n{text}"
            );
            let line = text
                .split('\n')
                .nth(e.line - 1)
                .map(|l| l.trim_end_matches('\r'));
            assert_eq!(
                e.source_line.as_deref(),
                line,
                "{name} round {round}: {e}\n{text}"
            );
            assert!(e.span_len >= 1, "{name} round {round}: {e:?}");
            assert!(!e.message.is_empty());
        }
    }
    // Sanity: most mutations of a valid file break it.
    assert!(
        errors > rounds / 4,
        "{name}: only {errors} of {rounds} mutations failed to load"
    );
}

#[test]
fn mutated_fixture_never_panics() {
    let original = include_str!("../../tests/fixtures/false-sharing.toml");
    assert!(scenarios::load_str("ok.toml", original).is_ok());
    check_never_panics("fixture", original, 3000, 0x9E37_79B9_7F4A_7C15);
}

#[test]
fn mutated_small_file_never_panics() {
    let original = r#"schema = 1
machine = { preset = "x", protocol = "mesi", latency = { dram_cycles = 3 } }
run = { cycles = 100, max_cycles = 1000 }
params = { a = 1, b_2 = -3 }
structs.s = { align = 8, fields = [{ name = "f", size = 4, count = 2 }, { name = "g", type = "u8" }] }
instances.i = { struct = "s", kind = "per-node" }
procedures.p = { params = ["q"], body = "q" }
scripts = { t = "" }
threads = [{ name = "a", cpus = "0-1", script = "t" }, { cpus = "2", script = "t" }]
variants = [{ name = "v", set = { "structs.s.fields" = ["g", "f"], "threads.t.cpus" = "5", "machine.latency.dram_cycles" = 4 } }]
"#;
    assert!(
        scenarios::load_str("ok.toml", original).is_ok(),
        "{:?}",
        scenarios::load_str("ok.toml", original).err()
    );
    check_never_panics("small", original, 3000, 0xD1B5_4A32_D192_ED03);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    const ALPHABET: &[u8] = b"[]{}=\"'.,-#\n 0123abcxyz_\t\\";
    for _ in 0..2000 {
        let len = rng.below(60);
        let text: String = (0..len)
            .map(|_| ALPHABET[rng.below(ALPHABET.len())] as char)
            .collect();
        let result =
            catch_unwind(|| scenarios::load_str("r.toml", &text).map_err(|e| e.to_string()));
        assert!(result.is_ok(), "panicked on {text:?}");
    }
}
