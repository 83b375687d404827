//! The `safetensors` target: any bytes as a `.safetensors` file, end to end as `ra
//! convert` runs it. The header is parsed alone; the file is converted into a dataset
//! folder (one `NAME.ra` per tensor), each tensor compared with its bytes in the input
//! reordered naively from C order; the folder is converted back into a safetensors
//! file, whose tensors must be the input's bytes again; one tensor is converted by
//! name into a `.npy`. A file the parser refuses converts into nothing and leaves
//! nothing; no panic, and no allocation beyond what the input holds.

use std::path::Path;

use super::{
    check_peak_beyond, convert_over, converted_into_folder, peak_during, scratch_dir, scratch_file,
};
use crate::convert::Format;
use crate::dtype::DType;
use crate::formats::safetensors::{self as st, Header};

/// Largest tensor compared element by element.
const COMPARED_BYTES: u64 = 1 << 20;

/// See the module.
pub fn safetensors(data: &[u8]) {
    let input = scratch_file("in.safetensors", data);
    let outs = scratch_dir().join("safetensors");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = peak_during(|| outputs(data, &input, &outs));
    // Beyond the input's own bytes: the tensors read back to compare, and the sinks'
    // buffers that do not grow with the input.
    check_peak_beyond(
        "safetensors",
        data,
        peak,
        8,
        4 * COMPARED_BYTES as usize + (24 << 20),
    );
}

/// The header of `data` as the parser reads it from bytes.
fn parsed(data: &[u8]) -> crate::Result<Header> {
    let len = data.len() as u64;
    let n = st::header_len(data, len)?;
    st::parse(&data[8..8 + n as usize], len)
}

fn outputs(data: &[u8], input: &Path, outs: &Path) {
    let folder = outs.join("out");
    // Bytes the engine tells as another format (an empty ZIP archive, say) are that
    // format's.
    let parse = || parsed(data);
    let Some(header) = converted_into_folder(input, &folder, Format::Safetensors, parse) else {
        return;
    };
    for t in &header.tensors {
        let raw = crate::read_raw(folder.join(format!("{}.ra", t.name)))
            .expect("a tensor converted reads back");
        assert_eq!(raw.header.dims(), &t.shape[..], "{}: dims", t.name);
        assert_eq!(raw.header.dtype(), t.dtype, "{}: type", t.name);
        if t.nbytes <= COMPARED_BYTES {
            let bytes = &data[t.offset as usize..(t.offset + t.nbytes) as usize];
            assert_eq!(
                raw.data,
                column_major(bytes, t.dtype, &t.shape),
                "{}",
                t.name
            );
        }
    }
    let back = outs.join("back.safetensors");
    if convert_over(&folder, &back).is_err() {
        assert!(!back.exists(), "a failed conversion left {back:?}");
        return;
    }
    let written = std::fs::read(&back).expect("the file convert wrote");
    let again = parsed(&written).expect("what rastore writes parses");
    for t in &again.tensors {
        let Some(was) = header.tensor(&t.name) else {
            panic!("{} was not in the input", t.name)
        };
        assert_eq!((t.dtype, &t.shape), (was.dtype, &was.shape), "{}", t.name);
        let bytes = |d: &[u8], t: &st::Tensor| d[t.offset as usize..][..t.nbytes as usize].to_vec();
        let mut want = bytes(data, was);
        if t.dtype == DType::BOOL {
            want.iter_mut().for_each(|b| *b = u8::from(*b != 0));
        }
        assert_eq!(bytes(&written, t), want, "{}: bytes written back", t.name);
    }
    if let Some(t) = header.tensors.first() {
        let npy = outs.join("one.npy");
        if convert_over(&input.join(&t.name), &npy).is_err() {
            assert!(!npy.exists(), "a failed conversion left {npy:?}");
        }
    }
}

/// The C-order `bytes` of `shape` reordered column-major, one element at a time (Bools
/// made 0 or 1, as NumPy's are read).
pub(super) fn column_major(bytes: &[u8], dtype: DType, shape: &[u64]) -> Vec<u8> {
    let w = dtype.elbyte as usize;
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let count = bytes.len() / w.max(1);
    let mut c_strides = vec![1usize; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        c_strides[k] = c_strides[k + 1] * dims[k + 1];
    }
    let mut out = Vec::with_capacity(bytes.len());
    for i in 0..count {
        let (mut rest, mut src) = (i, 0usize);
        for (d, s) in dims.iter().zip(&c_strides) {
            src += rest % d * s;
            rest /= d;
        }
        out.extend_from_slice(&bytes[src * w..][..w]);
    }
    if dtype == DType::BOOL {
        out.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    out
}
