//! A script: parse it, compile it against a small layout, run it briefly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bounce_fuzz::script(data);
});
