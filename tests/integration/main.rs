//! One integration test binary (one link), one module per concern.

mod append;
mod cli;
mod cli_random;
mod common;
mod conformance;
mod dataset;
mod engine;
mod gather;
mod hardening;
mod interrupt;
mod malformed;
mod newcomer;
mod newcomer2;
mod npy;
mod platform;
mod refs;
mod roundtrip;
mod s3;
mod s3_server;
mod scan;
mod session;
mod tool;
mod validation;
mod writer;
mod zarr;
