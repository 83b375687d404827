//! The platform layer: every operating-system call the crate makes that differs
//! between platforms, behind one small set of functions. One file per platform
//! family, as memmap2 splits its own: `unix.rs` (Linux and macOS, with Linux-only
//! pieces under `cfg(target_os = "linux")`) and `windows.rs`. The rest of the crate
//! never says `cfg(unix)`.

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod imp;

pub(crate) use imp::*;
