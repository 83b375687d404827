//! The arrays the read commands take: a `.ra`, a `.npy`, or an array of any format the
//! conversion engine reads, as one logical array
//! (dims, element type, where each element lies), over a mapping where the bytes can
//! be used in place and over a decoded copy where they cannot (compressed, packed,
//! other byte order).

use std::path::Path;

use rastore::{DType, Encoding, MappedNpy, MappedRa};

/// Where the element bytes are.
enum Bytes {
    Ra(MappedRa),
    Npy(MappedNpy),
    Owned(Vec<u8>),
}

/// One file's array, in native byte order where the element layout is known.
pub struct Input {
    /// The element type (a BitArray reads as Julia Bool).
    pub dtype: DType,
    /// The logical shape, as NumPy and Julia show it.
    pub dims: Vec<u64>,
    /// Elements between neighbours along each dim: column-major for `.ra` and
    /// Fortran-order `.npy`, row-major for C-order `.npy`.
    pub strides: Vec<u64>,
    /// The first index of the last axis the bytes hold (an object's slab), else 0.
    origin: u64,
    bytes: Bytes,
    /// The metadata trailer of a decoded `.ra` (a mapped one has it in the mapping).
    owned_trailer: Option<Vec<u8>>,
}

/// Column-major strides of `dims`, in elements.
pub fn fortran_strides(dims: &[u64]) -> Vec<u64> {
    dims.iter()
        .scan(1u64, |acc, &d| {
            let s = *acc;
            *acc = acc.saturating_mul(d);
            Some(s)
        })
        .collect()
}

/// Whether `path` is a `.npy` file, by its first bytes.
pub fn is_npy(path: &Path) -> bool {
    let mut magic = [0u8; 6];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| rastore::sniff::is_npy(&magic))
}

/// Whether the read commands take `path`, of a format other than `.ra` and `.npy`, through
/// the engine: NIfTI, TIFF, safetensors, NetCDF-3 and HDF5 (images and archives are
/// converted first, as the message that refuses them says).
fn takes(path: &Path) -> bool {
    use rastore::convert::Format;
    matches!(
        Format::of(path),
        Ok(Format::Nifti | Format::Tiff | Format::Safetensors | Format::NetCdf3 | Format::Hdf5)
    )
}

impl Input {
    /// Opens `path` by its contents: a `.npy` as NumPy's format; an array of another
    /// format that lies raw in its file (a NIfTI `.nii`, `m.safetensors/NAME`, a TIFF's
    /// contiguous pages) mapped as one; a `.ra`; and any other array the conversion
    /// engine reads (a `.nii.gz`, compressed TIFF pages, a bfloat16 tensor) into memory.
    /// Another format's attributes come as its description's trailer.
    pub fn open(path: &Path) -> rastore::Result<Input> {
        // A `.ra` first: opening one reads nothing more than the mapping does.
        match Self::open_ra(path) {
            Err(e) if matches!(e.kind(), rastore::ErrorKind::NotRawArray { found: Some(f), .. } if *f == rastore::sniff::NPY_NAME) => {
                Self::open_npy(path)
            }
            Err(_) if rastore::convert::placeable(path) => Self::open_placed(path),
            Err(e) if matches!(e.kind(), rastore::ErrorKind::NotRawArray { .. }) && takes(path) => {
                Self::open_engine(path)
            }
            r => r,
        }
    }

    /// An array of another format that lies raw in its file, mapped, with its
    /// description's trailer; one that does not (compressed), read by the engine.
    fn open_placed(path: &Path) -> rastore::Result<Input> {
        match rastore::convert::placed(path) {
            Ok(placed) => {
                // SAFETY: as for `.ra` inputs below.
                let map = unsafe { MappedNpy::open_placed(&placed) }?;
                let mut input = Self::from_npy(map, path)?;
                let options = rastore::convert::ConvertOptions::new();
                let source = rastore::convert::open(path, &options)?;
                input.owned_trailer = Some(source.desc().trailer.clone());
                Ok(input)
            }
            Err(e) if matches!(e.kind(), rastore::ErrorKind::Unsupported(_)) => {
                Self::open_engine(path)
            }
            Err(e) => Err(e),
        }
    }

    fn open_ra(path: &Path) -> rastore::Result<Input> {
        // SAFETY: `ra` reads files that are not being truncated or rewritten in place
        // while it runs (docs/TOOL.md says so, as for `np.memmap`); rastore's own
        // writers replace files by rename and never truncate them.
        let map = unsafe { MappedRa::open(path) }?;
        let h = map.header();
        let (dims, strides) = (h.dims().to_vec(), fortran_strides(h.dims()));
        if h.encoding() == Encoding::Raw && h.native_endian() {
            return Ok(Input {
                dtype: h.dtype(),
                dims,
                strides,
                origin: 0,
                bytes: Bytes::Ra(map),
                owned_trailer: None,
            });
        }
        // Compressed, packed or the other byte order: decoded into memory.
        drop(map);
        let raw = rastore::decoded(path)?;
        Ok(Input {
            dtype: raw.header.dtype(),
            dims,
            strides,
            origin: 0,
            bytes: Bytes::Owned(raw.data),
            owned_trailer: Some(raw.metadata),
        })
    }

    /// Any array the conversion engine reads, into memory, column-major, its trailer kept.
    fn open_engine(path: &Path) -> rastore::Result<Input> {
        let source = rastore::convert::open(path, &rastore::convert::ConvertOptions::new())?;
        let d = source.desc().clone();
        let n = usize::try_from(d.nbytes()).map_err(|_| rastore::ErrorKind::TooLarge {
            what: "data bytes held in memory",
            value: d.nbytes().into(),
        })?;
        let mut data = vec![0u8; n];
        source.read_box(&rastore::convert::Block::all(&d.dims), &mut data)?;
        let (dtype, dims) = (d.dtype, d.dims);
        Ok(Input {
            dtype,
            strides: fortran_strides(&dims),
            dims,
            origin: 0,
            bytes: Bytes::Owned(data),
            owned_trailer: Some(d.trailer),
        })
    }

    fn open_npy(path: &Path) -> rastore::Result<Input> {
        // SAFETY: as for `.ra` inputs above.
        Self::from_npy(unsafe { MappedNpy::open(path) }?, path)
    }

    fn from_npy(map: MappedNpy, path: &Path) -> rastore::Result<Input> {
        let nh = map.header().clone();
        let dtype = nh.descr.dtype().map_err(|e| e.at(path))?;
        let dims = nh.shape.clone();
        let mut strides = fortran_strides(&dims);
        if !nh.fortran_order {
            let mut rev: Vec<u64> = dims.iter().rev().copied().collect();
            rev = fortran_strides(&rev);
            rev.reverse();
            strides = rev;
        }
        let swap = nh.descr.big_endian() != cfg!(target_endian = "big")
            && !matches!(nh.descr, rastore::formats::npy::Descr::Struct(_));
        let bytes = match dtype.swap_unit() {
            Some(unit) if swap && unit > 1 => {
                let mut v = map.data_bytes().to_vec();
                rastore::codec::swap_bytes(&mut v, unit);
                Bytes::Owned(v)
            }
            _ => Bytes::Npy(map),
        };
        Ok(Input {
            dtype,
            dims,
            strides,
            origin: 0,
            bytes,
            owned_trailer: None,
        })
    }

    /// All element bytes, in the file's element order.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Ra(m) => m.data_bytes(),
            Bytes::Npy(m) => m.data_bytes(),
            Bytes::Owned(v) => v,
        }
    }

    /// Decoded column-major bytes of `dims`, of which only the last axis's indices
    /// from `origin` on are held (all of them when `origin` is 0 and `data` is whole).
    #[cfg(feature = "s3")]
    pub fn owned(dtype: DType, dims: Vec<u64>, origin: u64, data: Vec<u8>) -> Input {
        let mut held = dims.clone();
        if let Some((last, frame_dims)) = held.split_last_mut() {
            let frame = rastore::checked_bytes(dtype.elbyte.max(1), frame_dims).unwrap_or(0);
            *last = (data.len() as u64).checked_div(frame).unwrap_or(0);
        }
        Input {
            dtype,
            strides: fortran_strides(&held),
            dims,
            origin,
            bytes: Bytes::Owned(data),
            owned_trailer: None,
        }
    }

    /// Where a mapped file's element bytes are: its path and their byte range (`None`
    /// for bytes held in memory).
    pub fn source(&self) -> Option<(&Path, std::ops::Range<u64>)> {
        let (path, offset) = match &self.bytes {
            Bytes::Ra(m) => (m.path(), m.header().data_offset()),
            Bytes::Npy(m) => (m.path(), m.header().data_offset),
            Bytes::Owned(_) => return None,
        };
        Some((path, offset..offset + self.bytes().len() as u64))
    }

    /// All element bytes in the file's element order, in slabs, `f(offset, slab)` for
    /// each in order: a mapped file is read by [`rastore::scan`] (large reads ahead of
    /// `f`, bounded memory, the page cache spared for files larger than memory), held
    /// bytes are one slab. Slabs never cut an element in two.
    pub fn scan(
        &self,
        mut f: impl FnMut(u64, &[u8]) -> rastore::Result<()>,
    ) -> rastore::Result<()> {
        let Some((path, range)) = self.source() else {
            return f(0, self.bytes());
        };
        let unit = self.dtype.elbyte.max(1) as usize;
        let options = rastore::scan::ScanOptions::default();
        rastore::scan::scan(path, range, unit, &options, |at, slab| f(at, slab))
    }

    /// The metadata trailer of a `.ra` file (`None` for a `.npy`, which has none, and
    /// for an object's slab).
    pub fn trailer(&self) -> Option<&[u8]> {
        match &self.bytes {
            Bytes::Ra(m) => Some(m.metadata()),
            _ => self.owned_trailer.as_deref(),
        }
    }

    /// The number of elements.
    pub fn count(&self) -> u64 {
        rastore::checked_bytes(1, &self.dims).unwrap_or(u64::MAX)
    }

    /// Whether every element is held, in column-major order (else a C-order `.npy`
    /// or an object's slab).
    pub fn is_fortran(&self) -> bool {
        self.origin == 0
            && self.strides == fortran_strides(&self.dims)
            && self.bytes().len() as u64 == self.count() * self.dtype.elbyte
    }

    /// The bytes of the element at `index` (a multi-index within the dims).
    pub fn element(&self, index: &[u64]) -> &[u8] {
        let w = self.dtype.elbyte as usize;
        let last = index.len().saturating_sub(1);
        let linear: u64 = index
            .iter()
            .zip(&self.strides)
            .enumerate()
            .map(|(d, (i, s))| {
                if d == last {
                    (i - self.origin) * s
                } else {
                    i * s
                }
            })
            .sum();
        &self.bytes()[linear as usize * w..][..w]
    }
}
