//! Reading a strided selection of an object: only the byte runs that hold it.
//!
//! The selection's runs ([`crate::selection`]) are merged into GETs where the gap
//! between them is small ([`GAP_BYTES`], object_store's own coalescing default), cut at
//! the client's `range_bytes`, fetched concurrently, and scattered into the output as
//! each arrives: memory is the output and the GETs in flight, whatever the object's size.

use futures::{StreamExt, TryStreamExt};

use super::client::{remote_err, runtime};
use super::read::get_exact;
use super::RemoteRa;
use crate::error::{Result, ResultExt};
use crate::header::{Encoding, Header};
use crate::selection::{check, fetches, fit, runs, scatter, Fetch, Stride};

/// Runs closer than this are fetched by one GET, the bytes between them dropped.
const GAP_BYTES: u64 = 1 << 20;

impl RemoteRa {
    /// The elements `sel` picks (a [`Stride`] per axis, the first fastest), as native
    /// column-major bytes into `out` (of exactly their length). From plain data only
    /// the byte runs holding them are fetched, merged across small gaps, with
    /// concurrent ranged GETs; a compressed or packed object is fetched whole and
    /// decoded first.
    pub fn read_selection_into(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        let decoded = match self.header().encoding() {
            Encoding::Raw => None,
            _ => Some(self.decoded()?),
        };
        let header = decoded.as_ref().map_or(self.header(), |raw| &raw.header);
        let want = check(header, sel).at(&self.url().shown())?;
        fit(out, want)?;
        let (dims, elbyte, base) = (header.dims(), header.dtype().elbyte, header.data_offset());
        if let Some(raw) = &decoded {
            let all = Fetch {
                range: base..base + raw.data.len() as u64,
                runs: runs(dims, elbyte, sel, base).collect(),
            };
            scatter(&all, &raw.data, out);
        } else if want > 0 {
            let all = runs(dims, elbyte, sel, base);
            let most = self.options.range_bytes.max(1);
            let path = self.url().path();
            runtime()?
                .block_on(async {
                    futures::stream::iter(fetches(all, GAP_BYTES, most))
                        .map(|f| {
                            let path = &path;
                            async move { Ok((get_exact(&self.store, path, f.range.clone()).await?, f)) }
                        })
                        .buffer_unordered(self.options.concurrency.max(1))
                        .try_for_each(|(bytes, f)| {
                            scatter(&f, &bytes, &mut out[f.runs[0].to..]);
                            async { Ok(()) }
                        })
                        .await
                })
                .map_err(remote_err("get", self.url()))?;
        }
        to_native(header, out);
        Ok(())
    }
}

/// `out` in native byte order, when `header`'s data is not.
pub(super) fn to_native(header: &Header, out: &mut [u8]) {
    if !header.native_endian() {
        if let Some(unit) = header.dtype().swap_unit() {
            crate::codec::swap_bytes(out, unit);
        }
    }
}
