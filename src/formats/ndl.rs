//! YAML descriptions in the Ndarray Data Language (NDL): a File entity with one
//! ndarray (shape, type, attributes, storage), used both as `ra describe`'s output and
//! as the metadata trailer rastore writes itself (FORMAT.md section 6).
//!
//! Trailers are untrusted input: only one that starts with `---\n`, is at most
//! [`MAX_TRAILER_YAML`] bytes of UTF-8 and uses no aliases (which a loader would copy,
//! the "billion laughs") is parsed as YAML; anything else is opaque bytes.
//!
//! The NDL is the core's (every writer of a trailer uses it); here it is among the
//! formats, with `ra describe` of a `.npy` file ([`describe_npy`]) beside it.

pub use super::npy::describe_npy;
pub use crate::ndl::*;
