//! cargo-fuzz target: see `rastore::fuzzing::hdf5`; the same function replays the
//! committed corpus in `tests/fuzz_replay.rs` on stable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rastore::fuzzing::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fuzz_target!(|data: &[u8]| rastore::fuzzing::hdf5(data));
