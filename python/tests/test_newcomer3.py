"""Regression tests for what the third newcomer's trial (issue 37) found in the Python
package, each judged by the library a user would check with: NumPy, Pillow, zarr-python,
xarray."""
import os

import numpy as np
import pytest

import rastore


def _listing(folder):
    return sorted(os.listdir(folder))


def _starts_rawarray(path):
    with open(path, "rb") as f:
        return f.read(8) == b"rawarray"


# 1: `write` writes the format the name says, as `convert` does.
@pytest.mark.parametrize("a", [
    np.arange(24, dtype="<f4").reshape(2, 3, 4),
    np.asfortranarray(np.arange(24, dtype="<i2").reshape(4, 6)),
    np.arange(24, dtype="<u8").reshape(4, 6)[::2, 1::2],
    np.array(3.5),
    np.zeros((0, 3), "<f8"),
    np.array([True, False, True]),
    np.arange(6, dtype=">i4").reshape(2, 3),
    np.array([(1, 2.5), (3, -1.0)], dtype=[("n", "<i4"), ("x", "<f8")]),
], ids=["c", "fortran", "strided", "0-d", "empty", "bool", "big-endian", "structured"])
def test_write_to_an_npy_name_writes_an_npy_that_numpy_loads(tmp_path, a):
    p = tmp_path / "x.npy"
    rastore.write(p, a)
    b = np.load(p)  # a RawArray under this name was "pickled data" to NumPy
    assert b.shape == a.shape and b.dtype == a.dtype.newbyteorder("=")
    np.testing.assert_array_equal(b, a)
    # Replaced, as every write replaces.
    rastore.write(p, a[..., :1] if a.ndim else a)
    assert np.load(p).shape == (a[..., :1] if a.ndim else a).shape
    assert _listing(tmp_path) == ["x.npy"]


def test_write_to_png_zarr_and_npz_names_writes_those_formats(tmp_path):
    from PIL import Image

    zarr = pytest.importorskip("zarr")
    img = (np.arange(12, dtype="u1") * 20).reshape(3, 4)
    rastore.write(tmp_path / "img.png", img)
    with Image.open(tmp_path / "img.png") as im:
        assert im.format == "PNG"
        np.testing.assert_array_equal(np.asarray(im), img)
    a = np.arange(60, dtype="<f4").reshape(3, 4, 5)
    rastore.write(tmp_path / "cube.zarr", a)
    g = zarr.open_group(tmp_path / "cube.zarr", mode="r")
    assert list(g.array_keys()) == ["cube"]  # named after the output, as convert names it
    np.testing.assert_array_equal(g["cube"][...], a)
    rastore.write(tmp_path / "z.zarr", a, compress=True)
    z = zarr.open_group(tmp_path / "z.zarr", mode="r")["z"]
    assert [type(c).__name__ for c in z.compressors] == ["ZstdCodec"]
    np.testing.assert_array_equal(z[...], a)
    rastore.write(tmp_path / "arch.npz", a)
    with np.load(tmp_path / "arch.npz") as f:
        assert list(f.keys()) == ["arch"]
        np.testing.assert_array_equal(f["arch"], a)
    # What a format cannot do is refused by name, and nothing is left.
    with pytest.raises(rastore.Error, match=r"compress=True .* a \.npy has no such option"):
        rastore.write(tmp_path / "c.npy", a, compress=True)
    with pytest.raises(rastore.Error, match=r"durable=True .* \.zarr folder"):
        rastore.write(tmp_path / "d.zarr", a, durable=True)
    with pytest.raises(rastore.Error, match=r"a PNG needs dims \[height, width\]"):
        rastore.write(tmp_path / "big.png", a)
    assert _listing(tmp_path) == ["arch.npz", "cube.zarr", "img.png", "z.zarr"]


def test_a_data_array_written_to_zarr_keeps_its_labels(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("y", "x"), name="t",
                      coords={"x": [10, 20, 30]}, attrs={"units": "K"})
    rastore.write(tmp_path / "t.zarr", da)
    ds = xr.open_zarr(tmp_path / "t.zarr")
    assert ds["t"].dims == ("y", "x") and ds["t"].attrs["units"] == "K"
    np.testing.assert_array_equal(ds["t"].values, da.values)


def test_other_names_stay_rawarray_and_ra_only_writers_refuse_other_formats(tmp_path):
    a = np.arange(6, dtype="f4").reshape(2, 3)
    for name in ["a.ra", "a.dat", "noext", "a.RA"]:
        rastore.write(tmp_path / name, a)
        assert _starts_rawarray(tmp_path / name), name
        np.testing.assert_array_equal(rastore.read(tmp_path / name), a)
    for call in (
        lambda: rastore.create(tmp_path / "m.npy", "f4", (2, 3)),
        lambda: rastore.Appender(tmp_path / "m.npy", "f4", (2,)),
    ):
        with pytest.raises(rastore.Error, match=r"this name says \.npy: name it \.ra"):
            call()
    assert not (tmp_path / "m.npy").exists()


def test_a_dask_array_or_a_dataset_to_another_format_is_refused_by_name(tmp_path):
    da = pytest.importorskip("dask.array")
    xr = pytest.importorskip("xarray")
    with pytest.raises(rastore.Error, match=r"a Dask array .* this name says \.npy"):
        rastore.write(tmp_path / "x.npy", da.ones((4, 4), chunks=2))
    ds = xr.Dataset({"v": ("x", np.ones(3))})
    with pytest.raises(rastore.Error, match=r"folder of \.ra files, and this name says \.zarr"):
        rastore.write(tmp_path / "ds.zarr", ds)
    assert _listing(tmp_path) == []


def test_write_to_an_npy_object_uploads_an_npy(s3):
    a = np.arange(20, dtype="<i4").reshape(4, 5)
    rastore.write(s3.url("x.npy"), a, storage_options=s3.options)
    np.testing.assert_array_equal(np.load(s3.object("x.npy")), a)
    zarr = pytest.importorskip("zarr")
    rastore.write(s3.url("g.zarr"), a, storage_options=s3.options)
    np.testing.assert_array_equal(zarr.open_group(s3.object("g.zarr"), mode="r")["g"][...], a)
    rastore.write(s3.url("x.ra"), a, storage_options=s3.options)
    assert _starts_rawarray(s3.object("x.ra"))
    with pytest.raises(rastore.Error, match="objects are stored raw"):
        rastore.write(s3.url("y.ra"), a, compress=True, storage_options=s3.options)
