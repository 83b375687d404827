//! zstd chunks without zarrs' per-chunk setup: one compression context kept per thread
//! (zarrs makes a new one for every chunk), and frames decompressed straight into
//! their place in the output mapping (zarrs decodes into a new buffer, copied after).
//! The frames are the ones zarrs and numcodecs write and read: the content size in the
//! frame header, no checksum (a checksum in a frame read is checked).

use std::cell::RefCell;
use std::io;

use zstd::bulk::{Compressor, Decompressor};

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `data` as one zstd frame at `level`.
pub(super) fn compress(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_none_or(|(l, _)| *l != level) {
            *c = Some((level, Compressor::new(level)?));
        }
        let (_, compressor) = c.as_mut().expect("made above");
        compressor.compress(data)
    })
}

/// Decompresses the frames in `src` into `dst`, which they must fill exactly.
pub(super) fn decompress_into(src: &[u8], dst: &mut [u8]) -> io::Result<()> {
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(Decompressor::new()?);
        }
        let n = d
            .as_mut()
            .expect("made above")
            .decompress_to_buffer(src, dst)?;
        if n == dst.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("decompresses to {n} bytes, a chunk is {}", dst.len()),
            ))
        }
    })
}
