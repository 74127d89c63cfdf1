//! A script: parse it, compile it against a small layout, run it briefly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A finding (a protocol violation, a layout that changes when
    // flattened) is a crash for libFuzzer to save; an input error is not.
    if let Err(finding) = bounce_fuzz::script(data) {
        panic!("{}", finding.0);
    }
});
