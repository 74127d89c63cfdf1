//! A pahole listing: parsed, every struct imported, checked against the C
//! layout rules, laid out and shown (`bounce_fuzz::pahole`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = bounce_fuzz::pahole(data);
});
