//! A pahole listing: parsed, every struct imported, checked against the C
//! layout rules, laid out and shown (`bounce_fuzz::pahole`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A finding (a protocol violation, a layout that changes when
    // flattened) is a crash for libFuzzer to save; an input error is not.
    if let Err(finding) = bounce_fuzz::pahole(data) {
        panic!("{}", finding.0);
    }
});
