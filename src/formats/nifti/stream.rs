//! A `.nii.gz`'s data inflated on a thread of its own, piece by piece, while the
//! boxes already inflated are read (and written by a sink): inflating and writing
//! overlap, and a piece whose bytes have all been read is released, its buffer used
//! again for a later piece (no page faults for memory the process already has). Boxes
//! are read front to back once, as the planner reads them, or the array whole; a box
//! of a piece already released is refused.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::header::malformed;
use crate::convert::{Block, Desc, Grain, Source};
use crate::error::{Error, ErrorKind, Result};

/// Bytes inflated at a time (a multiple of every element's swap unit).
const PIECE: u64 = 16 << 20;

/// Released buffers kept for later pieces.
const SPARE: usize = 8;

/// Why inflating stopped early.
#[derive(Clone)]
enum Failure {
    /// The stream ended `got` bytes into the data.
    Short { got: u64 },
    /// The stream is not gzip, or a read failed.
    Io(String),
}

#[derive(Default)]
struct State {
    /// The inflated pieces (`None`: not yet, or released).
    pieces: Vec<Option<Arc<Vec<u8>>>>,
    /// Bytes of each piece not read yet.
    left: Vec<u64>,
    /// Pieces inflated.
    done: usize,
    failed: Option<Failure>,
    cancelled: bool,
    spare: Vec<Vec<u8>>,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A `.nii.gz` source whose data is inflated as it is read.
pub(crate) struct GzSource {
    desc: Desc,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    version: u8,
    shown: PathBuf,
}

impl GzSource {
    /// Starts inflating `n` bytes of data from `r` (which stands at the data), each
    /// piece swapped by `unit`-byte scalars into native order.
    pub(crate) fn start(
        r: impl Read + Send + 'static,
        desc: Desc,
        n: u64,
        unit: usize,
        version: u8,
        path: &Path,
    ) -> GzSource {
        let count = n.div_ceil(PIECE) as usize;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pieces: vec![None; count],
                left: (0..count as u64)
                    .map(|k| PIECE.min(n - k * PIECE))
                    .collect(),
                ..State::default()
            }),
            ready: Condvar::new(),
        });
        let inflating = Arc::clone(&shared);
        let thread = std::thread::spawn(move || inflate(r, &inflating, n, unit));
        GzSource {
            desc,
            shared,
            thread: Some(thread),
            version,
            shown: path.to_path_buf(),
        }
    }

    fn failure(&self, f: &Failure) -> Error {
        let n = self.desc.nbytes();
        match f {
            Failure::Short { got } => malformed(
                self.version,
                "dim",
                format!(
                    "the data needs {n} bytes of {:?}, the inflated file holds {got}",
                    self.desc.dims
                ),
            ),
            Failure::Io(detail) => ErrorKind::Decode {
                codec: "gzip",
                detail: detail.clone(),
            }
            .into(),
        }
        .at(&self.shown)
    }
}

/// The thread's work: each piece into a buffer (a spare one when there is one).
fn inflate(mut r: impl Read, shared: &Shared, n: u64, unit: usize) {
    let count = n.div_ceil(PIECE);
    for k in 0..count {
        let len = PIECE.min(n - k * PIECE);
        let mut buf = {
            let mut s = shared.lock();
            if s.cancelled {
                return;
            }
            s.spare.pop().unwrap_or_default()
        };
        buf.clear();
        let read = (&mut r).take(len).read_to_end(&mut buf);
        let mut s = shared.lock();
        match read {
            Ok(got) if got as u64 == len => {
                crate::codec::swap_bytes(&mut buf, unit);
                s.pieces[k as usize] = Some(Arc::new(buf));
                s.done = k as usize + 1;
            }
            Ok(got) => {
                s.failed = Some(Failure::Short {
                    got: k * PIECE + got as u64,
                })
            }
            Err(e) => s.failed = Some(Failure::Io(e.to_string())),
        }
        let stop = s.failed.is_some();
        drop(s);
        shared.ready.notify_all();
        if stop {
            return;
        }
    }
}

impl Source for GzSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        let w = self.desc.dtype.elbyte;
        crate::selection::fit(out, block.count() * w).map_err(|e| e.at(&self.shown))?;
        let runs: Vec<_> =
            crate::selection::runs(&self.desc.dims, w, &block.strides(), 0).collect();
        let Some(end) = runs.iter().map(|r| r.from + r.len as u64).max() else {
            return Ok(());
        };
        let first = runs.iter().map(|r| r.from).min().unwrap_or(0);
        let (lo, hi) = ((first / PIECE) as usize, ((end - 1) / PIECE) as usize);
        let held: Vec<Arc<Vec<u8>>> = {
            let mut s = self.shared.lock();
            while s.done <= hi && s.failed.is_none() {
                s = self.shared.ready.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            if s.done <= hi {
                let f = s.failed.clone().unwrap_or(Failure::Io("stopped".into()));
                return Err(self.failure(&f));
            }
            s.pieces[lo..=hi]
                .iter()
                .map(|p| {
                    p.clone().ok_or_else(|| {
                        Error::from(ErrorKind::Unsupported(
                            "reading a .nii.gz's bytes twice: it is inflated once, front to \
                             back"
                                .into(),
                        ))
                        .at(&self.shown)
                    })
                })
                .collect::<Result<_>>()?
        };
        let mut read = vec![0u64; hi - lo + 1];
        for r in &runs {
            let (mut at, mut to, mut len) = (r.from, r.to, r.len as u64);
            while len > 0 {
                let k = (at / PIECE) as usize;
                let within = at - k as u64 * PIECE;
                let take = len.min(PIECE - within);
                let piece = &held[k - lo];
                out[to..to + take as usize]
                    .copy_from_slice(&piece[within as usize..(within + take) as usize]);
                read[k - lo] += take;
                (at, to, len) = (at + take, to + take as usize, len - take);
            }
        }
        drop(held);
        let mut s = self.shared.lock();
        for (i, n) in read.into_iter().enumerate() {
            let k = lo + i;
            s.left[k] = s.left[k].saturating_sub(n);
            if s.left[k] == 0 {
                if let Some(Ok(buf)) = s.pieces[k].take().map(Arc::try_unwrap) {
                    if s.spare.len() < SPARE {
                        s.spare.push(buf);
                    }
                }
            }
        }
        Ok(())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

impl Drop for GzSource {
    fn drop(&mut self) {
        self.shared.lock().cancelled = true;
        if let Some(t) = self.thread.take() {
            // The thread stops at its next piece; a panic there has nothing to report.
            let _ = t.join();
        }
    }
}
