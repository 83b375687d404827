//! What kind of file a file is, by its first bytes: so that a RawArray reader given
//! a PNG or an `.npz` says what it found instead of printing a number, and so that
//! readers that take several formats choose by content, not by name.
//!
//! This is the core's (the header's errors name what they found); here it is among
//! the formats.

pub use crate::sniff::*;
