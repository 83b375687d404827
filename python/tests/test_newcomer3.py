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


# 2: a .npy is read by `read`, and read in place by ZarrStore and `references`.
_NPY = {
    "c": np.arange(60, dtype="<f4").reshape(3, 4, 5),
    "fortran": np.asfortranarray(np.arange(60, dtype="<i2").reshape(3, 4, 5)),
    "big-endian": np.arange(12, dtype=">f8").reshape(3, 4),
    "1-d": np.arange(7, dtype="<u2"),
    "0-d": np.array(4.0),
    "bool": np.array([[True, False, True], [False, True, True]]),
    "structured": np.array([(1, 2.5), (3, -1.0)], dtype=[("n", "<i4"), ("x", "<f8")]),
}


@pytest.mark.parametrize("name", list(_NPY))
def test_read_of_an_npy_is_what_np_load_gives(tmp_path, name):
    p = tmp_path / "a.npy"
    np.save(p, _NPY[name])
    want, got = np.load(p), rastore.read(p)
    assert got.shape == want.shape and got.flags.owndata
    # Native byte order, as read decodes every file: the same type otherwise.
    assert got.dtype == want.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, want)
    # In the file's order, read as it is stored.
    assert got.flags.f_contiguous == want.flags.f_contiguous
    assert got.flags.c_contiguous == want.flags.c_contiguous


@pytest.mark.parametrize("name", list(_NPY))
def test_an_npy_reads_in_place_through_zarr_store_and_references(tmp_path, name):
    zarr = pytest.importorskip("zarr")
    p = tmp_path / "a.npy"
    np.save(p, _NPY[name])
    want = np.load(p)
    for frames in [None, 1, 2]:
        z = zarr.open_array(rastore.ZarrStore(p, chunks=frames, group=False), mode="r")
        assert z.shape == want.shape
        np.testing.assert_array_equal(z[...], want, err_msg=f"v3 {frames}")
        g = zarr.open_group(rastore.ZarrStore(p, chunks=frames), mode="r")
        np.testing.assert_array_equal(g["a"][...], want)
        if want.dtype.fields is not None:
            continue  # Zarr v2 has no structured type: served as v3 only (as for a .ra)
        v2 = zarr.open_array(rastore.ZarrStore(p, chunks=frames, group=False, zarr_format=2),
                             mode="r", zarr_format=2)
        c_order = want.ndim > 1 and not want.flags.f_contiguous
        assert v2.metadata.order == ("C" if c_order else "F")
        np.testing.assert_array_equal(v2[...], want, err_msg=f"v2 {frames}")
        fsspec = pytest.importorskip("fsspec")
        refs = rastore.references(p, chunks=frames)
        mapper = fsspec.filesystem("reference", fo=refs).get_mapper("")
        r = zarr.open_group(mapper, mode="r", zarr_format=2)["a"][...]
        np.testing.assert_array_equal(r, want, err_msg=f"refs {frames}")


def test_a_c_order_npy_is_chunked_in_whole_rows_along_its_first_axis(tmp_path):
    zarr = pytest.importorskip("zarr")
    xr = pytest.importorskip("xarray")
    a = np.arange(7 * 4 * 3, dtype="<f4").reshape(7, 4, 3)
    p = tmp_path / "rows.npy"
    np.save(p, a)
    z = zarr.open_array(rastore.ZarrStore(p, chunks=2, group=False), mode="r")
    assert z.chunks == (2, 4, 3)  # the last chunk short: padded in memory
    np.testing.assert_array_equal(z[5:, 1, ::2], a[5:, 1, ::2])
    # A chunk shape of whole rows, as for a .ra whole frames.
    assert zarr.open_array(rastore.ZarrStore(p, chunks=(3, 4, 3), group=False),
                           mode="r").chunks == (3, 4, 3)
    with pytest.raises(ValueError, match=r"every axis but axis 0 whole"):
        rastore.ZarrStore(p, chunks=(7, 4, 1), group=False)._tree()
    refs = rastore.references(p, chunks=2)
    assert sorted(k for k in refs["refs"] if not k.split("/")[-1].startswith(".")) == [
        "rows/0.0.0", "rows/1.0.0", "rows/2.0.0", "rows/3.0.0"]
    ds = xr.open_zarr(rastore.ZarrStore(p))
    np.testing.assert_array_equal(ds["rows"].values, a)


def test_an_npy_object_is_not_read_in_place_and_the_error_says_why(s3):
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    rastore.write(s3.url("o.npy"), a, storage_options=s3.options)
    with pytest.raises(rastore.Error, match=r"\.npy file in object storage: objects are read "
                                            r"in place as \.ra only"):
        rastore.references(s3.url("o.npy"), storage_options=s3.options)


# 3: a truncated .npy is refused for what it is, by every reader of it.
def test_a_truncated_npy_says_truncated_with_the_byte_counts_and_the_file(tmp_path):
    good, bad = tmp_path / "good.npy", tmp_path / "trunc.npy"
    np.save(good, np.arange(24, dtype="<f8").reshape(4, 6))
    whole = good.read_bytes()
    bad.write_bytes(whole[:-10])
    readers = [rastore.Array, rastore.open, rastore.read, rastore.references,
               lambda p: rastore.to_dask(p)]
    try:
        import xarray as xr
        readers.append(lambda p: xr.open_dataarray(p, engine="rastore"))
    except ImportError:
        pass
    for read in readers:
        with pytest.raises(rastore.Error) as e:
            read(bad)
        msg = str(e.value)
        assert "not a RawArray" not in msg, msg
        assert str(bad) in msg and "truncated data" in msg, msg
        assert f"need {len(whole)} bytes, file is {len(whole) - 10} bytes" in msg, msg
    np.testing.assert_array_equal(rastore.Array(good)[...], np.load(good))


# 4: a ZarrStore of a missing file is a FileNotFoundError naming it.
def test_a_zarr_store_of_a_missing_file_is_file_not_found(tmp_path):
    import errno

    zarr = pytest.importorskip("zarr")
    missing = tmp_path / "missing.ra"
    with pytest.raises(FileNotFoundError) as e:
        zarr.open_group(rastore.ZarrStore(missing), mode="r")
    assert type(e.value) is FileNotFoundError  # not zarr's "no array found" (a subclass)
    assert e.value.errno == errno.ENOENT and e.value.filename == str(missing)
    assert "ZarrStore reads a .ra or .npy file" in str(e.value)


# 5: a variable of a type no RawArray holds is named, with the types that are held.
def test_a_dataset_variable_of_strings_as_objects_is_refused_by_name(tmp_path):
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": ("x", np.ones(2)),
                     "label": ("x", np.array(["a", "bb"], dtype=object))})
    with pytest.raises(rastore.Error) as e:
        rastore.write(tmp_path / "run", ds)
    msg = str(e.value)
    assert "the variable 'label' (object) cannot be stored" in msg, msg
    assert "fixed-width strings" in msg and "ds['label'].astype(str)" in msg, msg
    # The folder named is the user's, not the hidden one being built; nothing is left.
    assert msg.startswith(str(tmp_path / "run") + ":"), msg
    assert _listing(tmp_path) == []
    # A coordinate too; and what the message says to do works.
    ds2 = xr.Dataset({"t": ("x", np.ones(2))}, coords={"x": np.array(["a", "b"], dtype=object)})
    with pytest.raises(rastore.Error, match="the variable 'x' \\(object\\)"):
        rastore.write(tmp_path / "run", ds2)
    ds["label"] = ds["label"].astype(str)
    rastore.write(tmp_path / "run", ds)
    back = xr.open_dataset(tmp_path / "run", engine="rastore")
    assert back["label"].values.tolist() == ["a", "bb"]


# 6: a folder that is no dataset is refused by the engine, as by `ra info` and `ra convert`.
def test_xarray_refuses_a_folder_that_is_no_dataset(tmp_path):
    xr = pytest.importorskip("xarray")
    nd = tmp_path / "notadataset"
    (nd / "sub").mkdir(parents=True)
    (nd / "notes.txt").write_text("mine")
    for open_ in (xr.open_dataset, xr.open_datatree):
        with pytest.raises(rastore.Error) as e:
            open_(nd, engine="rastore")
        msg = str(e.value)
        assert str(nd) in msg and "not a dataset" in msg, msg
        assert "no .ra files and no dataset.yaml" in msg, msg
    with pytest.raises(rastore.Error, match="not a dataset"):
        rastore.convert(nd, tmp_path / "out.zarr")
    assert not (tmp_path / "out.zarr").exists()
    # An empty Dataset written is a dataset (a dataset.yaml of no attributes), and reads back.
    rastore.write(tmp_path / "empty", xr.Dataset())
    assert _listing(tmp_path / "empty") == ["dataset.yaml"]
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "empty", engine="rastore"),
                                xr.Dataset())
    # A dataset with an empty sub-folder still opens, as a tree too.
    rastore.write(tmp_path / "run", xr.Dataset({"v": ("x", np.arange(3.0))}))
    (tmp_path / "run" / "scratch").mkdir()
    assert list(xr.open_dataset(tmp_path / "run", engine="rastore").data_vars) == ["v"]
    assert "scratch" in xr.open_datatree(tmp_path / "run", engine="rastore").children


def test_xarray_refuses_a_prefix_that_is_no_dataset(s3):
    xr = pytest.importorskip("xarray")
    rastore.write(s3.url("odd/x.npy"), np.ones(2), storage_options=s3.options)
    with pytest.raises(rastore.Error, match=r"odd/: not a dataset: a prefix with no \.ra"):
        xr.open_dataset(s3.url("odd/"), engine="rastore", storage_options=s3.options)
    rastore.write(s3.url("empty/"), xr.Dataset(), storage_options=s3.options)
    assert xr.open_dataset(s3.url("empty/"), engine="rastore",
                           storage_options=s3.options).sizes == {}


# 7: the variable of a file that names none is named after the file, as ZarrStore names it.
def test_an_unlabeled_file_opens_as_a_variable_named_after_the_file(tmp_path):
    xr = pytest.importorskip("xarray")
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    rastore.write(tmp_path / "f3.ra", a)
    ds = xr.open_dataset(tmp_path / "f3.ra", engine="rastore")
    assert list(ds.data_vars) == ["f3"]
    np.testing.assert_array_equal(ds["f3"].values, a)
    da = xr.open_dataarray(tmp_path / "f3.ra", engine="rastore")
    assert da.name == "f3"
    np.testing.assert_array_equal(da.values, a)
    # As zarr-python sees the same file through ZarrStore, and as `ra convert` names it.
    zarr = pytest.importorskip("zarr")
    assert list(zarr.open_group(rastore.ZarrStore(tmp_path / "f3.ra"), mode="r").array_keys()) \
        == ["f3"]
    rastore.convert(tmp_path / "f3.ra", tmp_path / "f3.zarr")
    assert list(xr.open_zarr(tmp_path / "f3.zarr").data_vars) == ["f3"]
    # A .npy too; a name the file holds wins; drop_variables takes the file's name.
    np.save(tmp_path / "t.2m.npy", a)
    assert list(xr.open_dataset(tmp_path / "t.2m.npy", engine="rastore").data_vars) == ["t.2m"]
    rastore.write(tmp_path / "g.ra", xr.DataArray(a, dims=("y", "x"), name="temp"))
    assert list(xr.open_dataset(tmp_path / "g.ra", engine="rastore").data_vars) == ["temp"]
    assert list(xr.open_dataset(tmp_path / "f3.ra", engine="rastore",
                                drop_variables=["f3"]).data_vars) == []


# 8: docs/PYTHON.md's parallel fill, run as the page has it (the block is taken from it).
def _doc_block(doc, heading):
    """The first ```python block under ``heading`` in the Markdown file ``doc``."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_parallel_fill_of_the_docs_runs(tmp_path):
    import pathlib
    import subprocess
    import sys

    docs = pathlib.Path(__file__).resolve().parents[2] / "docs" / "PYTHON.md"
    code = _doc_block(docs, "## A parallel fill")
    assert "rastore.open_slab" in code and "ProcessPoolExecutor" in code and "flush()" in code
    (tmp_path / "fill.py").write_text(code, encoding="utf-8")
    env = dict(os.environ)
    package = os.path.dirname(os.path.dirname(rastore.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    run = subprocess.run([sys.executable, "fill.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # Judged by NumPy: every frame k holds k.
    v = np.memmap(tmp_path / "volume.ra", dtype="<f4", mode="r", offset=48 + 8 * 3,
                  shape=(256, 256, 64), order="F")
    np.testing.assert_array_equal(v, np.broadcast_to(np.arange(64, dtype="f4"), (256, 256, 64)))
    assert _listing(tmp_path) == ["fill.py", "volume.ra"]
