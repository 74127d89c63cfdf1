//! BTF: parsed, every struct imported with its alignment inferred, checked
//! against the C layout rules, laid out and shown (`bounce_fuzz::btf`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A finding (an imported struct that does not lay out, a layout that
    // changes when flattened) is a crash for libFuzzer to save; an input
    // error is not.
    if let Err(finding) = bounce_fuzz::btf(data) {
        panic!("{}", finding.0);
    }
});
