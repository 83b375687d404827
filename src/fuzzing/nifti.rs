//! The `nifti` target: any bytes as a NIfTI image, end to end. The first byte says how
//! the rest is stored: a `.nii`, a `.nii.gz` (deflated here), or a `.hdr`/`.img` pair
//! (split where the next two bytes say). The parser either refuses the header or gives
//! one that encodes back to the same attributes; the image then converts into `.ra`,
//! `.npy`, `.nii`, `.nii.gz` and Zarr, and each output either is refused and left
//! nothing, or reads back as the same array (type, shape, values) and, from NIfTI, the
//! same affine. The allocation peak stays within what the input's bytes can hold.

use std::io::Write;
use std::path::Path;

use super::{check_peak_beyond, peak_during, read_all, scratch_dir};
use crate::convert::{convert, open, ConvertOptions};
use crate::formats::nifti::{self, attrs};

/// Bytes of the largest array whose values are compared (larger ones: shapes only).
const COMPARED: u64 = 1 << 20;

/// Runs the `nifti` target on `data`.
pub fn nifti(data: &[u8]) {
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    let dir = scratch_dir().join("nifti");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder for the nifti target");
    let input = match how % 3 {
        0 => write(&dir, "in.nii", rest),
        1 => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(rest).expect("deflate in memory");
            write(&dir, "in.nii.gz", &gz.finish().expect("deflate in memory"))
        }
        _ => {
            let (len, body) = match rest {
                [a, b, body @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), body),
                _ => (0, rest),
            };
            let split = len.min(body.len());
            write(&dir, "in.img", &body[split..]);
            write(&dir, "in.hdr", &body[..split])
        }
    };
    let peak = peak_during(|| {
        parse_round_trip(rest);
        outputs(&input, &dir.join("out"));
    });
    // The image read (at most its bytes: a .nii.gz here inflates to `rest`), read back
    // from each output to compare, and the sinks' and codecs' own buffers.
    check_peak_beyond("nifti", data, peak, 8, 8 * COMPARED as usize + (24 << 20));
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write a fuzz input");
    p
}

/// A header that parses encodes to one that parses to the same attributes.
fn parse_round_trip(bytes: &[u8]) {
    let Ok(f) = nifti::parse(bytes) else {
        return;
    };
    let mut again = f.header.encode(&f.extensions);
    let n = f.data_len().expect("parsed, so its data's length is known");
    again.extend(std::iter::repeat_n(0u8, n as usize));
    let g = nifti::parse(&again).expect("an encoded header parses");
    assert_eq!(g.header.shape(), f.header.shape());
    assert_eq!(g.header.datatype, f.header.datatype);
    let text =
        |f: &nifti::NiftiFile| crate::ndl::to_text(&attrs::to_attributes(&f.header, &f.extensions));
    assert_eq!(text(&g), text(&f), "attributes survive encoding");
}

/// Converts `input` into each output and checks what comes back.
fn outputs(input: &Path, outs: &Path) {
    std::fs::create_dir_all(outs).expect("scratch output folder");
    let options = ConvertOptions::new();
    let Ok(source) = open(input, &options) else {
        return;
    };
    let want = source.desc().clone();
    let expected = (want.nbytes() <= COMPARED).then(|| read_all(source.as_ref()));
    drop(source);
    let refused = matches!(expected, Some(Err(_)));
    let mut sinks = vec![
        ("o.ra", ConvertOptions::new()),
        ("o.npy", ConvertOptions::new()),
        ("o.nii", ConvertOptions::new()),
        ("o.nii.gz", ConvertOptions::new()),
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
        let back = open(&out, &opts)
            .unwrap_or_else(|e| panic!("{name} written from {input:?} does not open: {e}"));
        let got = back.desc();
        assert_eq!(got.dims, want.dims, "{name}: dims");
        assert_eq!(got.dtype, want.dtype, "{name}: type");
        if name != "o.npy" {
            assert_eq!(affine(got), affine(&want), "{name}: affine");
        }
        if let Some(Ok(expected)) = &expected {
            let got = read_all(back.as_ref()).expect("what convert wrote reads back");
            assert_eq!(&got, expected, "{name}: data");
        }
    }
}

/// The numbers of the `affine` attribute, NaN as one value (Zarr's JSON carries them
/// in its own spelling).
fn affine(d: &crate::convert::Desc) -> Option<Vec<u64>> {
    let a = d.attributes()?;
    let rows = a.get(&crate::ndl::s("affine"))?.as_vec()?.clone();
    let numbers = rows
        .iter()
        .flat_map(|r| r.as_vec().cloned().unwrap_or_default());
    Some(
        numbers
            .map(|v| {
                let x = match &v {
                    yaml_rust2::Yaml::Real(t) => match t.as_str() {
                        ".nan" => f64::NAN,
                        ".inf" => f64::INFINITY,
                        "-.inf" => f64::NEG_INFINITY,
                        t => t.parse().unwrap_or(f64::NAN),
                    },
                    yaml_rust2::Yaml::Integer(i) => *i as f64,
                    _ => f64::NAN,
                };
                if x.is_nan() {
                    u64::MAX
                } else {
                    x.to_bits()
                }
            })
            .collect(),
    )
}
