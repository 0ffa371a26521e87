#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| billboard_fuzz::udp::check(data));
