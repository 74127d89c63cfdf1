//! PENDING: the pahole importer (pahole output to `[structs]`) is not built
//! yet. When it is, uncomment this target and its `[[bin]]` in Cargo.toml,
//! add `pahole` to src/lib.rs (import the text; an error is fine, a panic
//! is not), seed fuzz/corpus/pahole/ with real pahole listings, and add the
//! target to crates/scenarios/tests/fuzz_corpus.rs.
//!
//! #![no_main]
//!
//! use libfuzzer_sys::fuzz_target;
//!
//! fuzz_target!(|data: &[u8]| {
//!     bounce_fuzz::pahole(data);
//! });
