//! Reading selections of an object: only the byte runs that hold them, a batch at once.
//!
//! The runs of every selection of a batch are planned as a local gather plans them
//! ([`crate::gather::plan`]): sorted by where they lie, merged where they overlap,
//! touch or lie closer than [`GAP_BYTES`] (object_store's own coalescing default), cut
//! at the client's `range_bytes`; the GETs are made concurrently and each is copied to
//! its places as it arrives: memory is the output and the GETs in flight, whatever the
//! object's size.

use futures::{StreamExt, TryStreamExt};

use super::client::{get_exact, remote_err, runtime};
use super::read::{native_checked, RemoteRa};
use crate::error::{Result, ResultExt};
use crate::gather::plan;
use crate::selection::{self, batch, fit, Stride};

/// Runs closer than this are fetched by one GET, the bytes between them dropped.
const GAP_BYTES: u64 = 1 << 20;

impl RemoteRa {
    /// The elements `sel` picks (a [`Stride`] per axis, the first fastest), as native
    /// column-major bytes into `out` (of exactly their length): a batch of one (see
    /// [`read_many_into`](Self::read_many_into)).
    pub fn read_selection_into(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        self.read_many_into(&[sel], out)
    }

    /// The elements each of `selections` picks, one after another in `out`, each as
    /// native column-major bytes, as `DataReader::read_many_into` reads a file: every
    /// selection checked first, then from a plain object only the byte runs that hold
    /// them, coalesced across the whole batch into concurrent ranged GETs. A compressed
    /// or packed object is fetched whole and decoded first.
    pub fn read_many_into<S: AsRef<[Stride]>>(
        &self,
        selections: &[S],
        out: &mut [u8],
    ) -> Result<()> {
        let shown = self.url().shown();
        let decoded = match self.header().encoding() {
            crate::Encoding::Raw => None,
            _ => Some(self.decoded()?),
        };
        let header = decoded.as_ref().map_or(self.header(), |raw| &raw.header);
        let base = if decoded.is_some() {
            0
        } else {
            header.data_offset()
        };
        let (total, all) = batch(header, selections, base).at(&shown)?;
        fit(out, total).at(&shown)?;
        if let Some(raw) = &decoded {
            for r in all {
                let from = r.from as usize;
                out[r.to..r.to + r.len].copy_from_slice(&raw.data[from..from + r.len]);
            }
        } else if total > 0 {
            let reads = plan(all, GAP_BYTES, self.options.range_bytes.max(1));
            let path = self.url().path();
            runtime()?
                .block_on(async {
                    futures::stream::iter(reads)
                        .map(|r| {
                            let path = &path;
                            async move { Ok((get_exact(&self.store, path, r.range.clone()).await?, r)) }
                        })
                        .buffer_unordered(self.options.concurrency.max(1))
                        .try_for_each(|(bytes, r)| {
                            for run in &r.runs {
                                let at = (run.from - r.range.start) as usize;
                                out[run.to..run.to + run.len].copy_from_slice(&bytes[at..at + run.len]);
                            }
                            async { Ok(()) }
                        })
                        .await
                })
                .map_err(remote_err("get", self.url()))?;
        }
        if decoded.is_some() {
            // Decoded data is native, its Bools checked.
            return Ok(());
        }
        // A gather's elements come from anywhere: an offending one is named by its
        // place in `out`.
        native_checked(header, out, 0).at(&shown)
    }

    /// Whole frames (indices of the last axis) into `out`, in the order given, repeats
    /// included: `DataReader::take_into` for an object. An index past the end is
    /// refused before anything is fetched.
    pub fn take_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let header = self.header();
        selection::frames(header, indices).at(&self.url().shown())?;
        let lead = &header.dims()[..header.ndims() - 1];
        let sels: Vec<Vec<Stride>> = indices
            .iter()
            .map(|&i| {
                let mut sel: Vec<Stride> = lead.iter().map(|&d| Stride::all(d)).collect();
                sel.push(Stride::new(i, 1, 1));
                sel
            })
            .collect();
        self.read_many_into(&sels, out)
    }
}
