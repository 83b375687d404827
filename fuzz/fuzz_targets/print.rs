//! cargo-fuzz target: `ra cat`, `ra diff` and `ra describe` over valid headers; the
//! body is `fuzz/shared/print.rs`, replayed on stable by `tests/fuzz_replay.rs`.
#![no_main]

#[path = "../../src/bin/ra/elements.rs"]
mod elements;
// The print target reads what the tool reads, not all of it.
#[allow(dead_code)]
#[path = "../../src/bin/ra/input.rs"]
mod input;
#[path = "../shared/print.rs"]
mod print;
#[path = "../../src/bin/ra/slice.rs"]
mod slice;

use libfuzzer_sys::fuzz_target;
use rastore::fuzzing::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fuzz_target!(|data: &[u8]| print::print(data));
