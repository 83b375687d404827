"""HDF5, NetCDF-4 and MATLAB v7.3 files through the Python package, judged by h5py,
xarray and hdf5storage: ``rastore.read`` of ``x.h5/grp/dset`` equals h5py's values for
every dtype, rank and layout; ``rastore.open`` maps a contiguous dataset in place (no
copy: a write to the file shows through) and refuses a chunked one, pointing to
``read`` and ``Array``; ``rastore.Array`` slices any layout as h5py does; what is
refused is refused naming the object; a converted NetCDF-4 file opens in xarray
identical to the file."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import rastore

h5py = pytest.importorskip("h5py")

ROOT = pathlib.Path(__file__).resolve().parents[2]
JUDGE = ROOT / "tests" / "scripts" / "hdf5_judge.py"


def _run(*args):
    subprocess.run([sys.executable, str(JUDGE), *map(str, args)], check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pytest.importorskip("netCDF4")
    pytest.importorskip("h5netcdf")
    pytest.importorskip("hdf5storage")
    d = tmp_path_factory.mktemp("corpus")
    _run("corpus", d)
    return d


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("made")
    _run("make", d)
    return d


def _want(ds):
    a = np.asarray(ds[()])
    if a.dtype.kind in "iufcb":
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def _equal(got, want):
    assert got.shape == want.shape
    if want.dtype.kind in "iufcb":
        assert got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")
    else:
        assert got.dtype.itemsize == want.dtype.itemsize
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("name", ["dtypes.h5", "dtypes_latest.h5", "ranks.h5",
                                  "layouts_earliest.h5", "layouts_latest.h5",
                                  "superblock_v0.h5", "superblock_v3.h5", "groups_latest.h5"])
def test_read_equals_h5py_for_every_dtype_rank_and_layout(corpus, name):
    path = corpus / name
    checked = 0
    with h5py.File(path, "r") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in names:
            if n == "null_space":
                with pytest.raises(rastore.Error, match="null_space.*null dataspace"):
                    rastore.read(f"{path}/{n}")
                continue
            got = rastore.read(f"{path}/{n}")
            _equal(got, _want(f[n]))
            checked += 1
    assert checked >= 10


def test_open_maps_a_contiguous_dataset_in_place(made, tmp_path):
    src = made / "slices.h5"
    path = tmp_path / "s.h5"
    path.write_bytes(src.read_bytes())
    with h5py.File(path, "r") as f:
        offset = f["contiguous"].id.get_offset()
        want = f["contiguous"][()]
        big_offset = f["big"].id.get_offset()
    m = rastore.open(f"{path}/contiguous")
    assert isinstance(m, np.ndarray) and not m.flags.writeable and not m.flags.owndata
    assert m.shape == (13, 7, 5) and m.flags.c_contiguous
    mm = np.memmap(path, dtype="<f8", mode="r", offset=offset, shape=want.shape)
    assert np.array_equal(m, mm) and np.array_equal(m, want)
    # In place: a write to the file at the dataset's offset shows through the mapping.
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(np.float64(1234.5).tobytes())
    assert m[0, 0, 0] == 1234.5
    # Big-endian data maps as it lies.
    b = rastore.open(f"{path}/big")
    assert b.dtype == np.dtype(">f4")
    assert np.array_equal(b, np.memmap(path, ">f4", "r", big_offset, shape=want.shape))
    for name in ["chunked", "five"]:
        with pytest.raises(rastore.Error, match=rf"{name}: unsupported: a chunked dataset .*rastore\.read and rastore\.Array"):
            rastore.open(f"{path}/{name}")
    with pytest.raises(rastore.Error, match="name one"):
        rastore.open(str(path))


@pytest.mark.parametrize("name", ["contiguous", "chunked", "compact", "big", "five", "scalar"])
def test_array_slices_as_h5py_values_do(made, name):
    path = made / "slices.h5"
    a = rastore.Array(f"{path}/{name}")
    with h5py.File(path, "r") as f:
        ds = f[name]
        assert a.shape == ds.shape
        assert np.array_equal(np.asarray(a), ds[()])
        keys = {
            3: [(slice(None), slice(None), slice(None)), (slice(None), 2, slice(1, 4)), (slice(2, 11, 3), slice(None, None, -2), 0),
                (Ellipsis, -1), (slice(12, 13), slice(0, 0), slice(None))],
            5: [(1, slice(None), 0, slice(None), slice(1, 3)), (Ellipsis, 2)],
            0: [()],
        }[ds.ndim]
        for key in keys:
            # h5py takes no negative steps: NumPy indexes its values.
            want = ds[()][key]
            assert np.array_equal(a[key], want), key
    if name == "chunked":
        idx = np.array([7, 0, 12, 3])
        with h5py.File(path, "r") as f:
            want = f[name][()][idx]
        assert np.array_equal(a[idx], want)


@pytest.mark.parametrize("name,why", [
    ("refused_vlen_string.h5", "variable-length strings"),
    ("refused_vlen_int.h5", "variable-length sequences"),
    ("refused_object_ref.h5", "object references"),
    ("refused_region_ref.h5", "region references"),
    ("refused_virtual.h5", "virtual dataset"),
    ("refused_external.h5", "external dataset"),
    ("refused_lzf.h5", "lzf filter"),
    ("refused_szip.h5", "szip filter"),
])
def test_refused_kinds_name_the_object(corpus, name, why):
    path = corpus / name
    with pytest.raises(rastore.Error, match=rf"{name}/refused: unsupported: .*{why}"):
        rastore.read(f"{path}/refused")
    # Its siblings are read.
    with h5py.File(path, "r") as f:
        _equal(rastore.read(f"{path}/ok"), _want(f["ok"]))
    out = path.parent / f"out-{name.replace('.', '-')}"
    with pytest.raises(rastore.Error, match=f"{name}/refused"):
        rastore.convert(str(path), str(out))
    assert not out.exists()


def test_matlab_variables_have_matlabs_shape(corpus):
    path = corpus / "mat73.mat"
    with h5py.File(path, "r") as f:
        for name in ["A", "F", "I", "U", "s", "S/beta"]:
            want = f[name][()].T
            got = rastore.read(f"{path}/{name}")
            assert got.shape == want.shape and np.array_equal(got, want), name
        z = f["Z"][()].T
        got = rastore.read(f"{path}/Z")
        assert np.array_equal(got, z["real"] + 1j * z["imag"])
        logical = rastore.read(f"{path}/L")
        assert logical.dtype == bool and np.array_equal(logical, f["L"][()].T.astype(bool))
        text = rastore.read(f"{path}/name")
        codes = f["name"][()].T
        assert text.shape == codes.shape[:-1]
        assert text[0] == bytes(codes[0].astype("<u2")).decode("utf-16-le")
    a = rastore.open(f"{path}/A")
    assert a.flags.f_contiguous and a.shape == (3, 4)
    with pytest.raises(rastore.Error, match="mat73_cell.mat/C: unsupported: a MATLAB cell array"):
        rastore.read(f"{corpus / 'mat73_cell.mat'}/C")


@pytest.mark.parametrize("name", ["nc4_classic.nc", "nc4_h5netcdf.nc",
                                  "nc4_xarray_netcdf4.nc", "nc4_xarray_h5netcdf.nc"])
def test_netcdf4_converts_into_a_folder_xarray_opens_identical(corpus, tmp_path, name):
    xr = pytest.importorskip("xarray")
    folder = tmp_path / name.replace(".nc", "")
    rastore.convert(str(corpus / name), str(folder))
    want = xr.open_dataset(corpus / name)
    got = xr.open_dataset(folder, engine="rastore")
    assert want.identical(got), (want, got)
    if "time" in want:
        assert np.issubdtype(got["time"].dtype, np.datetime64)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("filters", [
    {"compression": "gzip", "shuffle": True},
    {"compression": "gzip", "shuffle": True, "fletcher32": True},
    {},
])
def test_zarr_store_serves_a_chunked_datasets_own_chunks(tmp_path, zarr_format, filters):
    """rastore.ZarrStore over a chunked HDF5 dataset: its chunks as they lie in the file,
    decoded by zarr-python with numcodecs' codecs, equal to h5py's values; a chunk never
    written is the fill value."""
    import h5py
    import zarr

    from rastore import ZarrStore

    path = tmp_path / "x.h5"
    want = np.arange(7 * 9 * 5, dtype=">i4").reshape(7, 9, 5) * 3 - 100
    with h5py.File(path, "w") as f:
        d = f.create_dataset("g/d", shape=want.shape, dtype=want.dtype, chunks=(3, 4, 5),
                             fillvalue=-7, **filters)
        d[:3] = want[:3]  # the other chunk rows are never written
        d.attrs["units"] = "K"
    with h5py.File(path) as f:
        want = f["g/d"][()]
        assert (want[3:] == -7).all()
    store = ZarrStore(f"{path}/g/d", group=False, zarr_format=zarr_format)
    z = zarr.open_array(store, mode="r", zarr_format=zarr_format)
    assert z.shape == want.shape
    assert np.dtype(z.dtype) in (want.dtype, want.dtype.newbyteorder("="))
    np.testing.assert_array_equal(z[...], want)
    np.testing.assert_array_equal(z[2:5, 1:8:3, 4], want[2:5, 1:8:3, 4])
    assert z.attrs["units"] == "K"
    grouped = zarr.open_group(ZarrStore(f"{path}/g/d", zarr_format=zarr_format), mode="r")
    np.testing.assert_array_equal(grouped["d"][...], want)
