//! Fuzz target bodies, shared by the cargo-fuzz targets in `fuzz/` (nightly) and by
//! the corpus-replay test in `tests/fuzz_replay.rs` (stable), so that a regression is
//! caught without nightly.
//!
//! Every target asserts what must hold for *any* input: no panic (the fuzzer catches
//! those), and, where the binary installs [`CountingAlloc`], no allocation peak beyond
//! what the input legitimately describes: its own length plus, once the header has been
//! validated, the decoded size it declares.

#[cfg(feature = "hdf5")]
mod hdf5;
mod netcdf3;
mod nifti;
mod npz;
mod safetensors;
mod tiff;

#[cfg(feature = "hdf5")]
pub use hdf5::hdf5;
pub use netcdf3::netcdf3;
pub use nifti::nifti;
pub use npz::npz;
pub use safetensors::safetensors;
pub use tiff::tiff;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};

use crate::convert::{convert, ConvertOptions};
use crate::dtype::DType;
use crate::formats::npy::NpyHeader;
use crate::header::{Encoding, Header, MAGIC};

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// A global allocator that records the peak of live heap bytes. Install it with
/// `#[global_allocator] static A: CountingAlloc = CountingAlloc;` in a fuzz or test
/// binary; the targets then check their peak.
pub struct CountingAlloc;

// SAFETY: every method forwards to the system allocator with the caller's arguments;
// the counters are plain atomics and never affect the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNTING.store(true, Ordering::Relaxed);
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged; `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns the peak of heap bytes allocated during it (above what was
/// live before), or `None` when no [`CountingAlloc`] is installed.
fn peak_during(f: impl FnOnce()) -> Option<usize> {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    COUNTING
        .load(Ordering::Relaxed)
        .then(|| PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Slack for small bookkeeping allocations (dims, error messages, buffers of readers).
const SLACK: usize = 128 << 10;

/// What decoding `file` may legitimately allocate: the decoded data its validated
/// header declares (bools unpacked: one byte each).
fn declared(file: &[u8]) -> usize {
    match Header::parse(file) {
        Ok(h) => {
            let count = usize::try_from(h.count()).unwrap_or(usize::MAX);
            let bytes = usize::try_from(h.nbytes()).unwrap_or(usize::MAX);
            // A Bool read holds the bytes and the bools; a BitArray words and bools.
            bytes.saturating_add(count).saturating_mul(2)
        }
        Err(_) => 0,
    }
}

/// Checks a peak against `factor` × the input's length (plus what a valid header
/// declares, plus slack). Readers get factor 2 (the data and its trailer may both be
/// copied out); decoders and the YAML loader get their documented expansion.
fn check_peak(what: &str, file: &[u8], peak: Option<usize>, factor: usize) {
    check_peak_beyond(what, file, peak, factor, 0);
}

/// [`check_peak`] with `fixed` more bytes allowed: a codec's own state, whatever the input.
fn check_peak_beyond(what: &str, file: &[u8], peak: Option<usize>, factor: usize, fixed: usize) {
    if let Some(p) = peak {
        let allowed = file
            .len()
            .saturating_mul(factor)
            .saturating_add(declared(file))
            .saturating_add(SLACK)
            .saturating_add(fixed);
        assert!(
            p <= allowed,
            "{what}: allocated {p} bytes for a {}-byte input (allowed {allowed})",
            file.len()
        );
    }
}

/// Runs `f` and checks its allocation peak against `factor` × `file`'s length plus
/// what `file`'s header declares (for targets outside this module).
pub fn within_peak(what: &str, file: &[u8], factor: usize, f: impl FnOnce()) {
    let peak = peak_during(f);
    check_peak(what, file, peak, factor);
}

/// Header parse and validation from bytes; a valid header re-encodes to its own bytes.
pub fn header(data: &[u8]) {
    let peak = peak_during(|| {
        if let Ok(h) = Header::parse(data) {
            let enc = h.encode();
            assert_eq!(&data[..enc.len()], &enc[..], "encode(parse(x)) == x");
            assert_eq!(h.data_offset() as usize, enc.len());
            assert!(h.data_end(data.len() as u64) <= data.len() as u64);
        }
    });
    check_peak("header", data, peak, 2);
}

/// A whole file image through every reader: parse, view, owned read, raw read, bools.
/// When a view succeeds every element is read, and writing it back reproduces the
/// data bytes.
pub fn file(data: &[u8]) {
    let peak = peak_during(|| file_inner(data));
    // The streaming reader does not know the length: its buffer doubles as data arrives,
    // and a reallocation briefly holds old and new.
    check_peak("file", data, peak, 3);
}

fn file_inner(data: &[u8]) {
    let parsed = Header::parse(data);
    let raw = crate::read_raw_from(data);
    let h = match parsed {
        Ok(h) => h,
        Err(_) => {
            assert!(
                raw.is_err(),
                "the streaming reader accepts what the parser refuses"
            );
            return;
        }
    };
    if h.encoding() == Encoding::Raw {
        let raw = raw.expect("plain data of a valid header always reads");
        assert_eq!(raw.data.len() as u64, h.nbytes());
        // The trailer: every byte after the data, or none while the file is open for
        // appending (the bytes after its data are uncommitted frames).
        let trailer = h.trailer_start(data.len() as u64) as usize;
        assert_eq!(raw.metadata, &data[trailer..]);
    }
    let _ = crate::read_bool_from(data);
    match h.dtype().elbyte {
        1 => view_round_trip::<[u8; 1]>(&h, data),
        2 => view_round_trip::<[u8; 2]>(&h, data),
        4 => view_round_trip::<[u8; 4]>(&h, data),
        8 => view_round_trip::<[u8; 8]>(&h, data),
        16 => view_round_trip::<[u8; 16]>(&h, data),
        _ => {}
    }
    match h.dtype() {
        DType::F32 => drop(crate::read_from::<f32>(data)),
        DType::I64 => drop(crate::read_from::<i64>(data)),
        DType::U8 => drop(crate::read_from::<u8>(data)),
        _ => {}
    }
}

/// Views the data as raw `N`-byte elements (any type, as bytes) and writes it back.
fn view_round_trip<E: crate::Element>(h: &Header, data: &[u8]) {
    // Raw byte elements match eltype 0; relabel the header so the view applies to the
    // data of any type.
    let Ok(as_bytes) = Header::new(DType::user(h.dtype().elbyte), h.dims()) else {
        return;
    };
    let relabeled = as_bytes.with_storage(h.flags().0, h.size());
    let start = h.data_offset() as usize;
    let end = h.data_end(data.len() as u64) as usize;
    let Ok(v) = crate::view_data::<E>(&relabeled, &data[start..end]) else {
        return;
    };
    assert_eq!(v.len() as u64, h.count());
    let mut out = Vec::new();
    crate::write_to(&mut out, &v).expect("writing to a Vec cannot fail");
    assert_eq!(
        &out[out.len() - h.size() as usize..],
        &data[start..start + h.size() as usize]
    );
}

/// The NPY header parser; what parses re-encodes and parses to the same header.
pub fn npy_header(data: &[u8]) {
    let peak = peak_during(|| {
        if let Ok(h) = NpyHeader::parse(data) {
            let enc = NpyHeader::encode(&h.descr, h.fortran_order, &h.shape);
            let back = NpyHeader::parse(&enc).expect("our own header parses");
            assert_eq!(
                (back.descr, back.fortran_order, back.shape),
                (h.descr, h.fortran_order, h.shape)
            );
        }
    });
    check_peak("npy_header", data, peak, 2);
}

/// LZ4 and LEB128 decoding against a claimed size taken from the input, and an LZ4
/// round trip of the input itself.
pub fn codecs(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Some((claim, payload)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let claimed = u32::from_le_bytes(*claim) as u64 & 0x00ff_ffff;
    let peak = peak_during(|| {
        if sel & 1 == 0 {
            if crate::codec::lz4_check_ratio(payload.len() as u64, claimed).is_ok() {
                let mut out = vec![0u8; claimed as usize];
                let _ = crate::codec::lz4_decode(payload, &mut out);
            }
            let packed = crate::codec::lz4_encode(payload);
            let mut back = vec![0u8; payload.len()];
            crate::codec::lz4_decode(&packed, &mut back).expect("LZ4 round trip");
            assert_eq!(back, payload);
        } else {
            let dtype = [
                DType::I8,
                DType::U16,
                DType::I32,
                DType::U64,
                DType::I128,
                DType::BOOL,
            ][(sel as usize >> 1) % 6];
            let count = (claimed as usize).min(payload.len());
            let mut out = vec![0u8; count * dtype.elbyte as usize];
            let _ = crate::codec::leb128_decode(payload, dtype, &mut out);
        }
    });
    // LZ4 may expand 255×, LEB128 16× (one byte per 16-byte value).
    check_peak("codecs", data, peak, 258);
}

/// `ra describe` over an arbitrary trailer: never panics, and prints YAML.
pub fn describe(data: &[u8]) {
    let Ok(h) = Header::new(DType::F32, &[2, 3]) else {
        return;
    };
    let peak = peak_during(|| {
        let text = crate::ndl::describe("fuzz.ra", &h, data);
        let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("describe prints YAML");
        assert_eq!(docs.len(), 1);
    });
    // A YAML tree costs a few dozen bytes per input byte.
    check_peak("describe", data, peak, 64);
}

/// A file image: header words in either byte order, then `body`.
pub fn image(words: &[u64], body: &[u8], big: bool) -> Vec<u8> {
    let mut b: Vec<u8> = words
        .iter()
        .flat_map(|w| {
            if big {
                w.to_be_bytes()
            } else {
                w.to_le_bytes()
            }
        })
        .collect();
    b.extend_from_slice(body);
    b
}

/// A near-valid RawArray: fields chosen to get past the magic and, mostly, past
/// validation, so the fuzzer spends its time in the readers.
#[derive(Debug, Clone)]
pub struct NearValid {
    /// The file image built from the fields.
    pub bytes: Vec<u8>,
}

impl<'a> Arbitrary<'a> for NearValid {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let big = u.ratio(1, 8)?;
        let flags: u64 = *u.choose(&[0, 0, 0, 1, 2, 4, 6, 3, 8])?;
        let (eltype, elbyte): (u64, u64) = *u.choose(&[
            (1, 4),
            (2, 1),
            (3, 4),
            (3, 8),
            (4, 8),
            (5, 1),
            (5, 2),
            (5, 8),
            (0, 3),
            (1, 16),
            (6, 2),
        ])?;
        let ndims = u.int_in_range(0..=4u64)?;
        let dims: Vec<u64> = (0..ndims)
            .map(|_| u.int_in_range(0..=9u64))
            .collect::<arbitrary::Result<_>>()?;
        let count: u64 = dims.iter().product();
        let honest = match (flags & 4 != 0, flags & 2 != 0) {
            (true, _) => 8 * count.div_ceil(64),
            _ => count * elbyte,
        };
        let size = if u.ratio(1, 6)? {
            u.int_in_range(0..=honest + 64)?
        } else {
            honest
        };
        let body: &[u8] = u.bytes(u.len().min(size as usize + 32))?;
        let words: Vec<u64> = [MAGIC, flags, eltype, elbyte, size, ndims]
            .into_iter()
            .chain(dims)
            .collect();
        Ok(NearValid {
            bytes: image(&words, body, big),
        })
    }
}

/// The structure-aware target: a near-valid image through [`file`].
pub fn structured(data: &[u8]) {
    if let Ok(nv) = NearValid::arbitrary_take_rest(Unstructured::new(data)) {
        file(&nv.bytes);
    }
}

/// A folder of this process's own for the targets that go through files (on tmpfs
/// where there is one): `ra` converts files, so its fuzz targets do too.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("rastore-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder for fuzz inputs");
        dir
    })
}

/// Writes `data` as `name` in the scratch folder and returns its path.
fn scratch_file(name: &str, data: &[u8]) -> PathBuf {
    let p = scratch_dir().join(name);
    std::fs::write(&p, data).expect("write a fuzz input");
    p
}

/// Converts `input` to `output` (replacing it), ignoring progress.
fn convert_over(input: &Path, output: &Path) -> crate::Result<()> {
    let options = ConvertOptions::new().overwrite(true);
    convert(input, output, &options, &mut |_, _| ()).map(drop)
}

/// Converts `input` into the folder `folder`, and `parsed` (the parser's reading of
/// `input` as a file of `format`) with it where there is more to check: `None` when
/// the parser refused it (then it converts only as another format's, fuzzed by that
/// format's target) or the conversion refused it whole; a failed conversion leaves
/// nothing.
fn converted_into_folder<T, E>(
    input: &Path,
    folder: &Path,
    format: crate::convert::Format,
    parsed: impl FnOnce() -> std::result::Result<T, E>,
) -> Option<T> {
    let converted = convert_over(input, folder);
    if converted.is_err() {
        assert!(!folder.exists(), "a failed conversion left {folder:?}");
    }
    let parsed = parsed().ok();
    let other = crate::convert::Format::of(input).is_ok_and(|f| f != format);
    if parsed.is_none() && !other {
        assert!(converted.is_err(), "a file the parser refuses converts");
    }
    parsed.filter(|_| converted.is_ok())
}

/// The most a PNG's pixels can expand to: deflate's 1032:1, then palette or sub-byte
/// samples to RGBA8 (32 bytes per input byte at most).
const PNG_EXPANSION: usize = 1032 * 32;

/// PNG → `.ra` (`ra convert x.png x.ra`): never panics, and allocates no more than
/// the image data the file can really hold (three copies: rows, reordered data and
/// the write), however large the header says the image is.
pub fn png_to_ra(data: &[u8]) {
    let input = scratch_file("in.png", data);
    let output = scratch_dir().join("out.ra");
    let peak = peak_during(|| {
        if convert_over(&input, &output).is_ok() {
            let raw = crate::read_raw(&output).expect("what convert wrote reads back");
            let dims = raw.header.dims();
            assert!(matches!(dims.len(), 2 | 3), "image dims {dims:?}");
        }
    });
    check_peak("png_to_ra", data, peak, 3 * PNG_EXPANSION);
}

/// `.npy` → `.ra` in both memory orders: the fuzzer's header and data as they are,
/// and with the order flipped. What converts equals a naive reordering of the input.
pub fn npy_to_ra(data: &[u8]) {
    let output = scratch_dir().join("out.ra");
    let peak = peak_during(|| {
        let Ok(h) = NpyHeader::parse(data) else {
            let input = scratch_file("in.npy", data);
            assert!(
                convert_over(&input, &output).is_err(),
                "a bad header converts"
            );
            return;
        };
        let body = data.get(h.data_offset as usize..).unwrap_or_default();
        for fortran in [h.fortran_order, !h.fortran_order] {
            let mut file = NpyHeader::encode(&h.descr, fortran, &h.shape);
            file.extend_from_slice(body);
            let input = scratch_file("in.npy", &file);
            if convert_over(&input, &output).is_ok() {
                check_npy_conversion(&h, fortran, body, &output);
            }
        }
    });
    check_peak("npy_to_ra", data, peak, 4);
}

/// Compares a converted file's data with the input reordered one element at a time.
fn check_npy_conversion(h: &NpyHeader, fortran: bool, body: &[u8], output: &Path) {
    let raw = crate::read_raw(output).expect("what convert wrote reads back");
    assert_eq!(raw.header.dims(), &h.shape[..]);
    let item = h.descr.itemsize().expect("itemsize of a converted descr") as usize;
    let count = raw.data.len() / item.max(1);
    let swap = h.descr.big_endian() && !matches!(h.descr, crate::formats::npy::Descr::Struct(_));
    let unit = raw.header.dtype().swap_unit().filter(|_| swap).unwrap_or(1);
    let bools = raw.header.dtype() == DType::BOOL;
    // The input's strides in elements: column-major, or reversed for C order
    // (saturating: with a zero extent there is no element to place).
    let dims: Vec<usize> = h.shape.iter().map(|&d| d as usize).collect();
    let running = |ds: &mut dyn Iterator<Item = &usize>| -> Vec<usize> {
        ds.scan(1usize, |acc, &d| {
            let s = *acc;
            *acc = acc.saturating_mul(d);
            Some(s)
        })
        .collect()
    };
    let strides = if fortran {
        running(&mut dims.iter())
    } else {
        let mut v = running(&mut dims.iter().rev());
        v.reverse();
        v
    };
    for i in 0..count {
        // Column-major index i → the input's element.
        let mut rest = i;
        let mut src = 0usize;
        for (d, s) in dims.iter().zip(&strides) {
            src += rest % d * s;
            rest /= d;
        }
        let mut want = body[src * item..][..item].to_vec();
        crate::codec::swap_bytes(&mut want, unit);
        if bools {
            want[0] = u8::from(want[0] != 0);
        }
        assert_eq!(&raw.data[i * item..][..item], &want[..], "element {i}");
    }
}

/// What the PNG encoder's deflate compressor holds, whatever the image.
const PNG_ENCODER_BYTES: usize = 1 << 20;

/// `.ra` → `.npy` and `.ra` → `.png` over near-valid files: never panics; what
/// converts to `.npy` has a header NumPy's rules accept and the whole data.
pub fn ra_export(data: &[u8]) {
    let Ok(nv) = NearValid::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let file = nv.bytes;
    let input = scratch_file("in.ra", &file);
    let npy = scratch_dir().join("out.npy");
    let png = scratch_dir().join("out.png");
    let peak = peak_during(|| {
        if convert_over(&input, &npy).is_ok() {
            let out = std::fs::read(&npy).expect("read the .npy written");
            let h = NpyHeader::parse(&out).expect("our .npy header parses");
            let (_, nbytes) = h.data_len().expect("its shape fits");
            crate::formats::npy::check_numpy_shape(&h.shape, h.descr.itemsize().unwrap_or(1))
                .expect("NumPy can hold what we write");
            assert_eq!(out.len() as u64, h.data_offset + nbytes);
        }
        let _ = convert_over(&input, &png);
    });
    // PNG scaling holds one f64 per element, and the whole image twice more; the
    // encoder's deflate state is a fixed few hundred KiB.
    check_peak_beyond("ra_export", &file, peak, 24, PNG_ENCODER_BYTES);
}

/// Largest array (and chunk) the `zarr` target decodes: bigger ones are checked and
/// skipped, so that the allocation bound below holds.
#[cfg(feature = "zarr")]
const ZARR_BYTES: u64 = 4 << 20;

/// A Zarr array from untrusted bytes: `zarr.json` (or `.zarray`, when the input starts
/// `{"zarr_format": 2`) up to a `\n\0` separator, and one stored chunk after it under
/// every key a first chunk can have. Opening checks the metadata (never a panic or an
/// allocation sized by it); a small array is then decoded whole, and decodes to its
/// declared length or is an error.
#[cfg(feature = "zarr")]
pub fn zarr(data: &[u8]) {
    use crate::formats::zarr::ZarrInput;
    let split = data
        .windows(2)
        .position(|w| w == b"\n\0")
        .unwrap_or(data.len());
    let (meta, chunk) = (&data[..split], data.get(split + 2..).unwrap_or_default());
    let name = if meta.starts_with(b"{\"zarr_format\": 2") {
        ".zarray"
    } else {
        "zarr.json"
    };
    let keys = ["c", "c/0", "c/0/0", "c/0/0/0", "0", "0.0", "0.0.0"];
    let mut files = vec![(name, meta)];
    files.extend(keys.iter().map(|k| (*k, chunk)));
    let peak = peak_during(|| {
        let Ok(z) = ZarrInput::open_in_memory(&files) else {
            return;
        };
        let (Ok(dtype), dims) = (z.dtype(), z.dims()) else {
            return;
        };
        let bytes = |shape: &[u64]| {
            shape
                .iter()
                .try_fold(dtype.elbyte, |a, &d| a.checked_mul(d))
        };
        let small = |b: Option<u64>| b.is_some_and(|b| b <= ZARR_BYTES);
        if small(bytes(dims)) && small(bytes(z.chunk_shape())) {
            let mut out = vec![0u8; bytes(dims).unwrap_or(0) as usize];
            let origin = vec![0; dims.len()];
            let _ = z.read_box(&origin, dims, &mut out);
            let _ = z.trailer();
        }
    });
    // The output, a chunk decoded and its column-major copy, and the codecs' state.
    check_peak_beyond("zarr", data, peak, 4, 3 * ZARR_BYTES as usize + (16 << 20));
}

/// Extents the `engine` target draws: small ones, and the huge ones that only a zero
/// extent beside them lets through (a zero-element array may be 2^63 long).
const EXTENTS: [u64; 12] = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    9,
    1 << 32,
    1 << 63,
    u64::MAX,
    u64::MAX >> 1,
];

/// A structure-aware input of the engine: a `.ra`, `.npy`, `.npz` or PNG file built
/// from drawn fields, then mutated at a few drawn bytes.
#[derive(Debug, Clone)]
pub struct EngineInput {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The name it is converted under (its extension is a hint only: the engine tells
    /// formats by their contents).
    pub name: &'static str,
}

impl<'a> Arbitrary<'a> for EngineInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let ndims = u.int_in_range(0..=5usize)?;
        let dims: Vec<u64> = (0..ndims)
            .map(|_| u.choose(&EXTENTS).copied())
            .collect::<arbitrary::Result<_>>()?;
        let kind = u.int_in_range(0..=4u8)?;
        let (mut bytes, name) = match kind {
            0 => (engine_ra(u, &dims)?, "in.ra"),
            1 => (engine_npy(u, &dims)?, "in.npy"),
            2 => {
                let member = engine_npy(u, &dims)?;
                let two = u.ratio(1, 4)?;
                (engine_npz(&member, two), "in.npz")
            }
            3 => (engine_png(u)?, "in.png"),
            // Any bytes, under any of the names.
            _ => {
                let name = *u.choose(&["in.ra", "in.npy", "in.npz", "in.png", "in.dat"])?;
                let n = u.arbitrary_len::<u8>()?;
                (u.bytes(n)?.to_vec(), name)
            }
        };
        // A few bytes changed, anywhere: past the structure the fields made.
        for _ in 0..u.int_in_range(0..=3u8)? {
            if bytes.is_empty() {
                break;
            }
            let at = u.choose_index(bytes.len())?;
            bytes[at] = u.arbitrary()?;
        }
        Ok(EngineInput { bytes, name })
    }
}

/// A `.ra` of `dims` with a drawn type, flags, size and trailer.
fn engine_ra(u: &mut Unstructured<'_>, dims: &[u64]) -> arbitrary::Result<Vec<u8>> {
    let flags: u64 = *u.choose(&[0, 0, 0, 1, 2, 4, 3])?;
    let (eltype, elbyte): (u64, u64) = *u.choose(&[
        (1, 4),
        (2, 1),
        (2, 2),
        (3, 4),
        (3, 8),
        (4, 16),
        (5, 1),
        (5, 8),
        (0, 3),
        (2, 3),
    ])?;
    let count = checked_bytes_or_max(1, dims);
    let size = if flags & 4 != 0 {
        8 * count.div_ceil(64)
    } else {
        checked_bytes_or_max(elbyte, dims)
    };
    let size = if u.ratio(1, 8)? {
        u.int_in_range(0..=64)?
    } else {
        size
    };
    let body = u.bytes(u.len().min(size.min(1 << 16) as usize))?.to_vec();
    let trailer: Vec<u8> = match u.int_in_range(0..=3u8)? {
        0 => Vec::new(),
        1 => b"---\nattrs: {a: 1}\n".to_vec(),
        _ => u.bytes(u.len().min(24))?.to_vec(),
    };
    let words: Vec<u64> = [MAGIC, flags, eltype, elbyte, size, dims.len() as u64]
        .into_iter()
        .chain(dims.iter().copied())
        .collect();
    let mut file = image(&words, &body, u.ratio(1, 8)?);
    file.extend_from_slice(&trailer);
    Ok(file)
}

/// `elbyte × Π dims`, or `u64::MAX` when it overflows.
fn checked_bytes_or_max(elbyte: u64, dims: &[u64]) -> u64 {
    crate::header::checked_bytes(elbyte, dims).unwrap_or(u64::MAX)
}

/// A `.npy` of `dims` with a drawn descr (simple, structured, and some NumPy refuses)
/// and order.
fn engine_npy(u: &mut Unstructured<'_>, dims: &[u64]) -> arbitrary::Result<Vec<u8>> {
    let descr = *u.choose(&[
        "'<f8'",
        "'>i4'",
        "'|u1'",
        "'|b1'",
        "'<c16'",
        "'<f2'",
        "'|S3'",
        "'<U2'",
        "'<u3'",
        "[('a', '<i4'), ('b', '<f8')]",
        "[('a', '<i4'), ('a', '<f8')]",
        "[('x', '<f4'), ('', '|V4')]",
    ])?;
    let fortran = u.arbitrary::<bool>()?;
    let shape = crate::descr::shape_python(dims);
    let order = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}");
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let mut file = crate::sniff::NPY_MAGIC.to_vec();
    file.extend([1u8, 0]);
    file.extend(((total - 10) as u16).to_le_bytes());
    file.extend(dict.as_bytes());
    file.resize(total - 1, b' ');
    file.push(b'\n');
    let want = u.int_in_range(0..=512usize)?;
    file.extend_from_slice(u.bytes(u.len().min(want))?);
    Ok(file)
}

/// An `.npz` of `member` (twice, under two names, when `two`), stored.
fn engine_npz(member: &[u8], two: bool) -> Vec<u8> {
    let path = scratch_dir().join("build.npz");
    let file = std::fs::File::create(&path).expect("scratch npz");
    let mut w = crate::formats::npz::NpzWriter::new(&file, &path);
    let names: &[&str] = if two { &["a", "b"] } else { &["a"] };
    for n in names {
        w.add(n, member, member.len() as u64).expect("add a member");
    }
    w.finish().expect("finish the npz");
    drop(file);
    std::fs::read(&path).expect("read the npz back")
}

/// A small PNG of drawn size, color type and depth, with drawn pixels.
fn engine_png(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    use ::png::{BitDepth, ColorType};
    let (w, h) = (u.int_in_range(1..=9u32)?, u.int_in_range(1..=9u32)?);
    let (color, channels) = *u.choose(&[
        (ColorType::Grayscale, 1),
        (ColorType::GrayscaleAlpha, 2),
        (ColorType::Rgb, 3),
        (ColorType::Rgba, 4),
    ])?;
    let (depth, bytes) = *u.choose(&[(BitDepth::Eight, 1), (BitDepth::Sixteen, 2)])?;
    let n = (w * h) as usize * channels * bytes;
    let mut pixels = u.bytes(u.len().min(n))?.to_vec();
    pixels.resize(n, 0);
    let mut out = Vec::new();
    let mut enc = ::png::Encoder::new(&mut out, w, h);
    enc.set_color(color);
    enc.set_depth(depth);
    let mut writer = enc
        .write_header()
        .map_err(|_| arbitrary::Error::IncorrectFormat)?;
    writer
        .write_image_data(&pixels)
        .map_err(|_| arbitrary::Error::IncorrectFormat)?;
    drop(writer);
    Ok(out)
}

/// Largest array the `engine` target reads back whole to compare.
const ENGINE_BYTES: u64 = 1 << 20;

/// The engine end to end, as `ra convert` and `rastore.convert` run it: a
/// structure-aware input ([`EngineInput`]) converted into every output (`.ra`, `.ra`
/// compressed, `.npy`, `.png`, Zarr), each output opened again by the engine and
/// compared with the input as the engine reads it. Each conversion either fails or
/// gives the same array: type, dims, data, and the trailer where the output keeps it
/// (PNG keeps 8- and 16-bit pixels; other types are scaled, and only their dims are
/// compared). Never a panic, and nothing left in the folder after a failure.
pub fn engine(data: &[u8]) {
    let Ok(input) = EngineInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let path = scratch_file(input.name, &input.bytes);
    let outs = scratch_dir().join("engine");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = peak_during(|| engine_outputs(&path, &outs));
    // Beyond the input's own bytes: the arrays read back to compare, and the buffers
    // of the sinks and codecs that do not grow with the input (the fuzzer found a
    // 106-byte input whose conversions peak at 8.2 MiB; fixed-size buffers, as the
    // allowance of a few MiB per sink says, not a claimed size).
    check_peak_beyond(
        "engine",
        &input.bytes,
        peak,
        8,
        8 * ENGINE_BYTES as usize + (24 << 20),
    );
}

/// Converts `input` into each output in `outs` and checks what comes back.
fn engine_outputs(input: &Path, outs: &Path) {
    let options = ConvertOptions::new();
    let Ok(source) = crate::convert::open(input, &options) else {
        // Refused as one array: an archive of several, or bad input. A folder output
        // takes an archive's members; whatever it makes is a dataset whose attributes
        // and arrays read back.
        let folder = outs.join("members");
        if convert(input, &folder, &options, &mut |_, _| ()).is_ok() {
            crate::dataset::check(&folder).expect("the folder convert made is a dataset");
            crate::dataset::attribute_files(&folder).expect("its attributes read back");
            for v in crate::dataset::variables(&folder).expect("the folder convert made") {
                crate::read_raw(&v.path).expect("a member reads back");
            }
        } else {
            assert!(!folder.exists(), "a failed conversion left {folder:?}");
        }
        return;
    };
    let want = source.desc().clone();
    let small = want.nbytes() <= ENGINE_BYTES;
    let expected = match small.then(|| read_all(source.as_ref())) {
        // Refused as it is read (a Bool that is neither 0 nor 1): so is every conversion.
        Some(Err(_)) => None,
        Some(Ok(data)) => Some(data),
        None => None,
    };
    let refused = small && expected.is_none();
    // Padding between a structured type's fields is written as zeros.
    let expected = expected.map(|mut data| {
        if let Some(p) = crate::padding::Padding::of_trailer(&want.trailer, want.dtype) {
            p.zero(&mut data, 0);
        }
        data
    });
    drop(source);
    let mut sinks = vec![
        ("o.ra", ConvertOptions::new()),
        ("oz.ra", ConvertOptions::new().compress(true)),
        ("o.npy", ConvertOptions::new()),
        ("o.png", ConvertOptions::new()),
    ];
    #[cfg(feature = "zarr")]
    sinks.push(("o.zarr", ConvertOptions::new().zarr_array(true)));
    for (name, opts) in sinks {
        let out = outs.join(name);
        if convert(input, &out, &opts, &mut |_, _| ()).is_err() {
            assert!(!out.exists(), "a failed conversion left {out:?}");
            continue;
        }
        assert!(!refused, "{name}: converted an input that does not read");
        let back = crate::convert::open(&out, &opts)
            .unwrap_or_else(|e| panic!("{name} written from {input:?} does not open: {e}"));
        let got = back.desc();
        // A PNG of one channel is read as [height, width], as Pillow shows it.
        let dims = match (name, want.dims.as_slice()) {
            ("o.png", [h, w, 1]) => vec![*h, *w],
            _ => want.dims.clone(),
        };
        assert_eq!(got.dims, dims, "{name}: dims");
        let exact = match name {
            "o.png" => matches!(want.dtype, DType::U8 | DType::U16),
            // zarr-python's structured type is packed: padding is dropped (ZARR.md).
            "o.zarr" => crate::padding::Padding::of_trailer(&want.trailer, want.dtype).is_none(),
            _ => true,
        };
        if exact {
            assert_eq!(got.dtype, want.dtype, "{name}: type");
        }
        if exact && matches!(name, "o.ra" | "oz.ra" | "o.zarr") {
            assert_eq!(got.trailer, want.trailer, "{name}: trailer");
        }
        if let (true, Some(expected)) = (exact, &expected) {
            let got = read_all(back.as_ref()).expect("what convert wrote reads back");
            assert_eq!(&got, expected, "{name}: data");
        }
    }
}

/// Every element of `source`, column-major.
fn read_all(source: &dyn crate::convert::Source) -> crate::Result<Vec<u8>> {
    let desc = source.desc();
    let mut out = vec![0u8; desc.nbytes() as usize];
    source.read_box(&crate::convert::Block::all(&desc.dims), &mut out)?;
    Ok(out)
}
