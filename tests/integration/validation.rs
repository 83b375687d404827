//! FORMAT.md section 4, rule by rule: each failing case gives its error variant,
//! through the header parser, the mapped reader and the copying reader. Plus the
//! encodings the view refuses and the owned path decodes.

use std::path::Path;

use rastore::ndarray::ArrayD;
use rastore::{codec, DType, Error, ErrorKind, Header, MappedRa, ViewRefusal};

use crate::common::{tmp, words, words_be, MAGIC};

/// Runs `bytes` through all three readers (as f32) and returns the three errors.
fn errors(bytes: &[u8]) -> [Error; 3] {
    let dir = tmp();
    let path = dir.path().join("bad.ra");
    std::fs::write(&path, bytes).unwrap();
    let parsed = Header::parse(bytes).and_then(|_| rastore::view_bytes::<f32>(bytes).map(drop));
    // SAFETY: private file, not modified while mapped.
    let mapped = unsafe { MappedRa::open(&path) }.and_then(|f| f.view::<f32>().map(drop));
    let owned = rastore::read::<f32>(&path).map(drop);
    let errs = [parsed.unwrap_err(), mapped.unwrap_err(), owned.unwrap_err()];
    for e in &errs[1..] {
        assert_eq!(e.path(), Some(path.as_path()), "{e}");
        assert!(e.to_string().starts_with(&path.display().to_string()));
    }
    errs
}

fn check(bytes: &[u8], pred: impl Fn(&ErrorKind) -> bool) {
    for e in errors(bytes) {
        assert!(pred(e.kind()), "unexpected error: {e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
}

#[test]
fn rule1_truncated_file() {
    check(&words(&[MAGIC, 0, 3, 4])[..], |k| {
        matches!(k, ErrorKind::Truncated { len: 32 })
    });
    check(&[], |k| matches!(k, ErrorKind::Truncated { len: 0 }));
}

#[test]
fn rule2_not_a_rawarray() {
    let mut b = words(&[0x1234, 0, 3, 4, 4, 1, 1]);
    b.extend([0; 4]);
    check(&b, |k| {
        matches!(
            k,
            ErrorKind::NotRawArray {
                magic: 0x1234,
                found: None
            }
        )
    });
}

#[test]
fn rule3_huge_ndims_is_a_truncated_header_not_an_allocation() {
    let b = words(&[MAGIC, 0, 3, 4, 4, 1 << 60, 1]);
    check(
        &b,
        |k| matches!(k, ErrorKind::TruncatedHeader { ndims, len: 56, .. } if *ndims == 1 << 60),
    );
    let b = words(&[MAGIC, 0, 3, 4, 4, u64::MAX, 1]);
    check(&b, |k| matches!(k, ErrorKind::TruncatedHeader { .. }));
    let b = words(&[MAGIC, 0, 3, 4, 4, 3, 1, 1]);
    check(&b, |k| {
        matches!(
            k,
            ErrorKind::TruncatedHeader {
                ndims: 3,
                needed: 72,
                len: 64
            }
        )
    });
}

#[test]
fn rule4_zero_elbyte() {
    let b = words(&[MAGIC, 0, 3, 0, 0, 1, 1]);
    check(&b, |k| matches!(k, ErrorKind::ZeroElbyte));
}

#[test]
fn rule5_dims_product_overflows() {
    let b = words(&[MAGIC, 0, 3, 4, 0, 2, 1 << 32, 1 << 32]);
    check(&b, |k| {
        matches!(k, ErrorKind::ShapeOverflow { elbyte: 4, .. })
    });
    // The elements fit, the bytes do not.
    let b = words(&[MAGIC, 0, 3, 4, 0, 1, 1 << 63]);
    check(&b, |k| matches!(k, ErrorKind::ShapeOverflow { .. }));
}

#[test]
fn rule6_lying_size() {
    let mut b = words(&[MAGIC, 0, 3, 4, 12, 1, 2]);
    b.extend([0; 12]);
    check(&b, |k| {
        matches!(
            k,
            ErrorKind::SizeMismatch {
                size: 12,
                expected: 8
            }
        )
    });
    let e = errors(&b)[0].to_string();
    assert!(e.contains("12") && e.contains('8'), "both numbers: {e}");
}

#[test]
fn rule7_truncated_data() {
    let mut b = words(&[MAGIC, 0, 3, 4, 400, 1, 100]);
    b.extend([0; 100]);
    check(&b, |k| {
        matches!(
            k,
            ErrorKind::TruncatedData {
                expected: 456,
                actual: 156
            }
        )
    });
    // A size near u64::MAX with a compressed flag must not overflow the end offset.
    let b = words(&[MAGIC, 2, 3, 4, u64::MAX - 10, 1, 1]);
    check(&b, |k| matches!(k, ErrorKind::TruncatedData { .. }));
}

#[test]
fn rule8_unknown_flags() {
    let mut b = words(&[MAGIC, 0x30, 3, 4, 4, 1, 1]);
    b.extend([0; 4]);
    check(&b, |k| {
        matches!(
            k,
            ErrorKind::UnsupportedFlags {
                flags: 0x30,
                unknown: 0x30
            }
        )
    });
    assert!(errors(&b)[0].to_string().contains("0x30"));
    // Bit 3 (appending) is known, but only on plain little-endian data.
    let mut b = words(&[MAGIC, 0x8 | 0x2, 3, 4, 4, 1, 1]);
    b.extend([0; 4]);
    check(
        &b,
        |k| matches!(k, ErrorKind::Unsupported(m) if m.contains("appending flag (0x8) with flags 0xa")),
    );
}

#[test]
fn rule9_type_mismatch_names_both() {
    let mut b = words(&[MAGIC, 0, 1, 4, 4, 1, 1]);
    b.extend([0; 4]);
    check(
        &b,
        |k| matches!(k, ErrorKind::TypeMismatch { file, requested } if *file == DType::I32 && *requested == DType::F32),
    );
    let msg = errors(&b)[2].to_string();
    assert!(msg.contains("int32") && msg.contains("float32"), "{msg}");
}

#[test]
fn streaming_reader_reports_truncation() {
    let mut b = words(&[MAGIC, 0, 3, 4, 400, 1, 100]);
    b.extend([0; 100]);
    let e = rastore::read_from::<f32>(&b[..]).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TruncatedData {
                expected: 456,
                actual: 156
            }
        ),
        "{e}"
    );
    let e = rastore::read_from::<f32>(&b[..50]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TruncatedHeader { len: 50, .. }),
        "{e}"
    );
    let e = rastore::read_from::<f32>(&b[..20]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { len: 20 }), "{e}");
    // A stream claiming 2^40 bytes of data but holding 100 fails without allocating 1 TiB.
    let mut b = words(&[MAGIC, 0, 2, 1, 1 << 40, 1, 1 << 40]);
    b.extend([0; 100]);
    let e = rastore::read_from::<u8>(&b[..]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TruncatedData { actual: 156, .. }),
        "{e}"
    );
}

fn refusal<T: rastore::Element + std::fmt::Debug>(path: &Path) -> ViewRefusal {
    // SAFETY: private file.
    let f = unsafe { MappedRa::open(path) }.unwrap();
    match f.view::<T>().unwrap_err().kind() {
        ErrorKind::NotViewable { reason } => *reason,
        other => panic!("{other}"),
    }
}

#[test]
fn big_endian_files_read_by_copy_and_refuse_views() {
    let dir = tmp();
    // Small files are read in one piece; larger ones by the scan's parallel reads.
    for n in [3u64, 40_000] {
        let vals: Vec<f32> = (0..n).map(|i| i as f32 * 1.5 - 2.0).collect();
        // Big-endian header (magic reads "yarrawar"), big-endian data.
        let mut b = words_be(&[MAGIC, 1, 3, 4, 4 * n, 1, n]);
        vals.iter().for_each(|v| b.extend(v.to_be_bytes()));
        b.extend(b"meta");
        let p = dir.path().join("be.ra");
        std::fs::write(&p, &b).unwrap();
        let a: ArrayD<f32> = rastore::read(&p).unwrap();
        assert_eq!(a.as_slice().unwrap(), &vals[..]);
        assert_eq!(refusal::<f32>(&p), ViewRefusal::NonNativeEndian);
        // SAFETY: private file.
        let f = unsafe { MappedRa::open(&p) }.unwrap();
        assert_eq!(f.metadata(), b"meta");
        assert_eq!(f.to_owned::<f32>().unwrap(), a);
        drop(f); // rewritten in place next: Windows refuses that while mapped
                 // Little-endian header with the BIG_ENDIAN flag: data alone is swapped.
        let mut b = words(&[MAGIC, 1, 3, 4, 4 * n, 1, n]);
        vals.iter().for_each(|v| b.extend(v.to_be_bytes()));
        std::fs::write(&p, &b).unwrap();
        assert_eq!(
            rastore::read::<f32>(&p).unwrap().as_slice().unwrap(),
            &vals[..]
        );
        // The wrong type is refused, naming the file, on both paths.
        let e = rastore::read::<i32>(&p).unwrap_err().to_string();
        assert!(e.contains("be.ra") && e.contains("float32"), "{e}");
    }
}

#[test]
fn leb128_julia_variant_decodes() {
    let dir = tmp();
    let vals = [0i32, -1, 1, 1000, -100_000, i32::MAX, i32::MIN, 7];
    let enc = codec::leb128_encode(vals.iter().map(|&v| v as i128), true);
    // flags = 2, size = the uncompressed length: LEB128, running to end of file.
    let mut b = words(&[MAGIC, 2, 1, 4, 32, 2, 4, 2]);
    b.extend(&enc);
    let p = dir.path().join("leb.ra");
    std::fs::write(&p, &b).unwrap();
    let a: ArrayD<i32> = rastore::read(&p).unwrap();
    assert_eq!(a.shape(), &[4, 2]);
    assert_eq!(a.t().iter().copied().collect::<Vec<_>>(), vals);
    assert_eq!(refusal::<i32>(&p), ViewRefusal::Compressed);
    // Extra bytes after the values are an error, not silently ignored; the message
    // names both attempts (FORMAT.md section 5).
    b.push(5);
    std::fs::write(&p, &b).unwrap();
    let e = rastore::read::<i32>(&p).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Decode {
                codec: "lz4 or leb128",
                ..
            }
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("as an LZ4 block") && msg.contains("1 bytes left over after 8 values"),
        "{msg}"
    );
}

/// A type that claims BitArray chunks, to reach the view's packed-bits refusal.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
struct Chunk(u64);

impl rastore::Element for Chunk {
    const DTYPE: DType = DType::BIT_CHUNK;
}

#[test]
fn julia_bool_and_bitarray() {
    let dir = tmp();
    let bools: Vec<bool> = (0..70).map(|i| i % 3 == 0 || i == 69).collect();
    // Bool: eltype 5, elbyte 1.
    let mut b = words(&[MAGIC, 0, 5, 1, 70, 2, 7, 10]);
    b.extend(bools.iter().map(|&x| u8::from(x)));
    let p = dir.path().join("bool.ra");
    std::fs::write(&p, &b).unwrap();
    let a = rastore::read_bool(&p).unwrap();
    assert_eq!(a.shape(), &[7, 10]);
    assert_eq!(a.t().iter().copied().collect::<Vec<_>>(), bools);
    // The same bytes may be viewed as u8.
    // SAFETY: private file.
    let f = unsafe { MappedRa::open(&p) }.unwrap();
    assert_eq!(f.view::<u8>().unwrap()[[0, 0]], 1);
    drop(f); // rewritten in place next: Windows refuses that while mapped
             // A byte other than 0 or 1 is refused.
    let last = b.len() - 1;
    b[last] = 2;
    std::fs::write(&p, &b).unwrap();
    assert!(rastore::read_bool(&p)
        .unwrap_err()
        .to_string()
        .contains("element 69 is 2"));

    // BitArray: flags 6, eltype 5, elbyte 8, two words for 70 bits.
    let mut b = words(&[MAGIC, 6, 5, 8, 16, 2, 7, 10]);
    b.extend(codec::bits_encode(&bools));
    let p = dir.path().join("bits.ra");
    std::fs::write(&p, &b).unwrap();
    let a = rastore::read_bool(&p).unwrap();
    assert_eq!(a.t().iter().copied().collect::<Vec<_>>(), bools);
    assert!(matches!(
        rastore::read::<u64>(&p).unwrap_err().kind(),
        ErrorKind::TypeMismatch { .. }
    ));
    assert_eq!(refusal::<Chunk>(&p), ViewRefusal::BitPacked);
    // BITS takes precedence: size must be 8 × ⌈70/64⌉ = 16, not elbyte × 70.
    let mut b = words(&[MAGIC, 6, 5, 8, 560, 2, 7, 10]);
    b.extend([0; 560]);
    assert!(matches!(
        Header::parse(&b).unwrap_err().kind(),
        ErrorKind::SizeMismatch {
            size: 560,
            expected: 16
        }
    ));
}

#[test]
fn lz4_refused_as_view_decoded_by_read() {
    let dir = tmp();
    let a = rastore::ndarray::Array2::<f32>::from_elem((50, 40), 2.5);
    let p = dir.path().join("z.ra");
    rastore::WriteOptions::new()
        .compress(true)
        .write(&p, &a)
        .unwrap();
    let h = rastore::read_raw(&p).unwrap().header;
    assert_eq!(h.encoding(), rastore::Encoding::Lz4);
    assert!(h.size() < 8000);
    assert_eq!(refusal::<f32>(&p), ViewRefusal::Compressed);
    assert_eq!(rastore::read::<f32>(&p).unwrap(), a.into_dyn());
    // Incompressible data is stored raw, so the LZ4/LEB128 rule stays unambiguous.
    let noise = rastore::ndarray::Array1::<u8>::from_iter(
        (0..64u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8),
    );
    rastore::WriteOptions::new()
        .compress(true)
        .write(&p, &noise)
        .unwrap();
    assert_eq!(rastore::read_raw(&p).unwrap().header.flags().0, 0);
}

#[test]
fn lz4_claiming_impossible_expansion_fails_before_allocating() {
    // 10 compressed bytes cannot decode to 2^40 bytes.
    let mut b = words(&[MAGIC, 2, 3, 4, 10, 1, 1 << 38]);
    b.extend([0; 10]);
    let e = rastore::read_raw_from(&b[..]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Decode { codec: "lz4", .. }),
        "{e}"
    );
}

#[test]
fn misaligned_i128_is_refused_as_view_but_read() {
    let a = rastore::ndarray::Array1::<i128>::from_iter([1, -2, 3]);
    let dir = tmp();
    let p = dir.path().join("q.ra");
    rastore::write(&p, &a).unwrap();
    assert_eq!(refusal::<i128>(&p), ViewRefusal::Misaligned { align: 16 });
    assert_eq!(rastore::read::<i128>(&p).unwrap(), a.into_dyn());
}

#[test]
fn reserved_eltypes_are_valid_headers_read_as_raw_bytes() {
    let mut b = words(&[MAGIC, 0, 7, 3, 6, 1, 2]);
    b.extend([1, 2, 3, 4, 5, 6]);
    let h = Header::parse(&b).unwrap();
    assert_eq!(h.dtype().name(), "eltype7x3");
    let raw = rastore::read_raw_from(&b[..]).unwrap();
    assert_eq!(raw.data, [1, 2, 3, 4, 5, 6]);
    assert!(matches!(
        rastore::read_from::<u8>(&b[..]).unwrap_err().kind(),
        ErrorKind::TypeMismatch { .. }
    ));
}
