//! The `netcdf3` target: any bytes as an `.nc` file, end to end as `ra convert` runs
//! it. The header is parsed alone; the file is converted into a dataset folder (one
//! `NAME.ra` per variable), each variable compared with its bytes in the input (its
//! records gathered `recsize` apart, big-endian values swapped, C order reordered
//! naively); the folder is converted into a Zarr group and back, the same values again;
//! one variable is converted by name into a `.npy`, and read by selection through its
//! source. A file the parser refuses converts into nothing and leaves nothing; no
//! panic, and no allocation beyond what the input holds.

use std::path::Path;

use super::safetensors::column_major;
use super::{
    check_peak_beyond, convert_over, converted_into_folder, peak_during, read_all, scratch_dir,
    scratch_file,
};
use crate::convert::Format;
use crate::formats::netcdf3::{self as nc, NcFile, Variable};

/// Largest variable compared element by element.
const COMPARED_BYTES: u64 = 1 << 20;

/// See the module.
pub fn netcdf3(data: &[u8]) {
    let input = scratch_file("in.nc", data);
    let outs = scratch_dir().join("netcdf3");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = peak_during(|| outputs(data, &input, &outs));
    // Beyond the input's own bytes: the variables read back to compare, and the sinks'
    // buffers that do not grow with the input.
    check_peak_beyond(
        "netcdf3",
        data,
        peak,
        8,
        6 * COMPARED_BYTES as usize + (24 << 20),
    );
}

/// The values of `v` as the file holds them, in native byte order, column-major: its
/// records (or its one run) gathered, each value swapped, C order reordered.
fn expected(data: &[u8], f: &NcFile, v: &Variable) -> Vec<u8> {
    let (count, stride) = match v.record {
        true => (f.numrecs, f.recsize),
        false => (1, 0),
    };
    let mut c = Vec::new();
    for r in 0..count {
        let at = (v.begin + r * stride) as usize;
        c.extend_from_slice(&data[at..at + v.slab as usize]);
    }
    let w = v.nc_type.size() as usize;
    if cfg!(target_endian = "little") {
        c.chunks_mut(w).for_each(<[u8]>::reverse);
    }
    column_major(&c, v.nc_type.dtype(), &v.shape)
}

fn outputs(data: &[u8], input: &Path, outs: &Path) {
    let folder = outs.join("out");
    // Refused whole too: a name no file may have, attributes too large for a trailer.
    let parse = || nc::parse(data, data.len() as u64);
    let Some(file) = converted_into_folder(input, &folder, Format::NetCdf3, parse) else {
        return;
    };
    for v in &file.vars {
        let raw = crate::read_raw(folder.join(format!("{}.ra", v.name)))
            .expect("a variable converted reads back");
        assert_eq!(raw.header.dims(), &v.shape[..], "{}: dims", v.name);
        assert_eq!(raw.header.dtype(), v.nc_type.dtype(), "{}: type", v.name);
        let names = crate::ndl::dimension_names(&raw.metadata, v.shape.len());
        let want: Vec<String> = v
            .dimids
            .iter()
            .map(|&d| file.dims[d].name.clone())
            .collect();
        assert_eq!(names, Some(want), "{}: dimension names", v.name);
        if file.nbytes(v) <= COMPARED_BYTES {
            assert_eq!(raw.data, expected(data, &file, v), "{}: values", v.name);
        }
    }
    let zarr = outs.join("out.zarr");
    if convert_over(&folder, &zarr).is_err() {
        assert!(!zarr.exists(), "a failed conversion left {zarr:?}");
    } else {
        let back = outs.join("back");
        convert_over(&zarr, &back).expect("a Zarr group rastore wrote converts back");
        for v in &file.vars {
            let name = format!("{}.ra", v.name);
            let (a, b) = (
                crate::read_raw(folder.join(&name)).expect("converted"),
                crate::read_raw(back.join(&name)).expect("converted back"),
            );
            assert_eq!(
                (a.header.dims(), &a.data),
                (b.header.dims(), &b.data),
                "{name}"
            );
        }
    }
    if let Some(v) = file.vars.iter().find(|v| file.nbytes(v) <= COMPARED_BYTES) {
        let named = input.join(&v.name);
        let npy = outs.join("one.npy");
        if convert_over(&named, &npy).is_err() {
            assert!(!npy.exists(), "a failed conversion left {npy:?}");
        }
        let source = crate::formats::netcdf3::engine::open_variable(input, &v.name)
            .expect("a variable that converted opens");
        let got = read_all(&source).expect("a variable that converted reads");
        assert_eq!(
            got,
            expected(data, &file, v),
            "{}: read by its source",
            v.name
        );
    }
}
