//! A scenario file: load it, build every variant, run each briefly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bounce_fuzz::scenario(data);
});
