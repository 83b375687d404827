"""Datasets (issue 31): a folder of .ra files is an xarray Dataset (and a tree of them a
DataTree), judged by xarray itself: every round trip must give an identical Dataset.
Also through Zarr (rastore.ZarrStore of the folder, and xarray's own to_zarr as input)
and NetCDF (xarray's scipy engine). Each variable file opens alone."""
import os
import warnings

import numpy as np
import pytest

import rastore
from conftest import fails_on_block_two

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")


def _dataset(chunks=None):
    rng = np.random.default_rng(7)
    time = pd.date_range("2026-01-01", periods=6, freq="6h")
    ds = xr.Dataset(
        {
            "temp": (("lat", "lon", "time"), rng.standard_normal((4, 5, 6)).astype("f4"),
                     {"units": "K", "long_name": "temperature"}),
            "land": (("lat", "lon"), rng.integers(0, 2, (4, 5)).astype(bool)),
            "count": (("lat", "lon"), rng.integers(0, 1000, (4, 5)).astype("i4")),
        },
        coords={
            "lat": ("lat", np.linspace(-30, 30, 4), {"units": "degrees_north"}),
            "lon": ("lon", np.arange(5) * 10.0),
            "time": time,
            "area": (("lat", "lon"), np.full((4, 5), 2.5)),
        },
        attrs={"title": "a run", "institution": "lab", "version": 3},
    )
    return ds.chunk(chunks) if chunks else ds


def test_a_dataset_round_trips_through_a_folder_and_each_file_opens_alone(tmp_path):
    ds = _dataset()
    folder = tmp_path / "run"
    rastore.write(folder, ds)
    assert sorted(os.listdir(folder)) == ["area.ra", "count.ra", "dataset.yaml", "land.ra",
                                          "lat.ra", "lon.ra", "temp.ra", "time.ra"]
    back = xr.open_dataset(folder, engine="rastore")
    assert back["temp"].variable._data is not None and not back["temp"].variable._in_memory
    xr.testing.assert_identical(back.load(), ds)
    # With Dask, lazily.
    lazy = xr.open_dataset(folder, engine="rastore", chunks={"time": 2})
    assert lazy["temp"].chunks[-1] == (2, 2, 2)
    xr.testing.assert_identical(lazy.compute(), ds)
    # Booleans are RawArray Bools, as any reader sees them.
    assert rastore.read(folder / "land.ra").dtype == np.bool_
    # Each variable is a complete RawArray with its labels.
    np.testing.assert_array_equal(rastore.open(folder / "temp.ra"), ds["temp"].values)
    alone = xr.open_dataarray(folder / "temp.ra", engine="rastore")
    assert alone.dims == ("lat", "lon", "time") and alone.attrs["units"] == "K"
    # The CF time axis is stored as integers with its units, as netCDF stores it (a
    # file opened alone is CF-decoded as a dataset is, unless asked not to be).
    time = xr.open_dataset(folder / "time.ra", engine="rastore", decode_times=False)["time"]
    assert time.dtype == np.int64 and "since" in time.attrs["units"]
    decoded = xr.open_dataset(folder / "time.ra", engine="rastore")["time"]
    assert decoded.dtype.kind == "M"
    # Not decoded when asked not to be.
    raw = xr.open_dataset(folder, engine="rastore", decode_times=False)
    assert raw["time"].dtype == np.int64


def test_fill_values_and_scale_offset_are_encoded_and_decoded(tmp_path):
    values = np.array([[1.5, np.nan, 3.25], [4.0, 5.5, np.nan]])
    ds = xr.Dataset({"v": (("y", "x"), values)})
    ds["v"].encoding = {"dtype": "i2", "scale_factor": 0.25, "add_offset": 1.0, "_FillValue": -1}
    rastore.write(tmp_path / "d", ds)
    stored = rastore.read(tmp_path / "d" / "v.ra")
    assert stored.dtype == np.int16 and stored[0, 1] == -1
    back = xr.open_dataset(tmp_path / "d", engine="rastore")
    np.testing.assert_array_equal(back["v"].values, values)
    assert back["v"].encoding["scale_factor"] == 0.25


def test_zarr_both_ways_gives_the_same_dataset(tmp_path):
    pytest.importorskip("zarr")
    ds = _dataset()
    folder = tmp_path / "run"
    rastore.write(folder, ds)
    mine = xr.open_dataset(folder, engine="rastore").load()
    for zarr_format in (3, 2):
        xr.testing.assert_identical(
            xr.open_zarr(rastore.ZarrStore(folder, zarr_format=zarr_format)).load(), mine)
    # A store xarray wrote, into a folder.
    for zarr_format in (3, 2):
        z = tmp_path / f"x{zarr_format}.zarr"
        ds.to_zarr(z, zarr_format=zarr_format)
        out = tmp_path / f"from{zarr_format}"
        rastore.write(out, xr.open_zarr(z))
        xr.testing.assert_identical(xr.open_dataset(out, engine="rastore").load(), ds)


def test_convert_makes_zarr_groups_that_xarray_opens_as_the_same_dataset(tmp_path):
    """`rastore.convert` (the engine `ra convert` runs): a folder into a Zarr v3 group
    with consolidated metadata, and Zarr groups xarray wrote (v3 and v2) into folders."""
    zarr = pytest.importorskip("zarr")
    ds = _dataset()
    ds["temp"][0, 0, 0] = np.nan  # xarray's NaN _FillValue, as Zarr v3 attributes hold it
    folder = tmp_path / "run"
    rastore.write(folder, ds)
    mine = xr.open_dataset(folder, engine="rastore").load()
    rastore.convert(folder, tmp_path / "run.zarr")
    group = zarr.open_group(tmp_path / "run.zarr", mode="r")
    assert group.metadata.consolidated_metadata is not None
    assert sorted(group.metadata.consolidated_metadata.metadata) == sorted(
        ["area", "count", "land", "lat", "lon", "temp", "time"])
    assert group["temp"].metadata.dimension_names == ("lat", "lon", "time")
    assert "rawarray_trailer" not in group["temp"].attrs
    z = xr.open_zarr(tmp_path / "run.zarr", consolidated=True).load()
    xr.testing.assert_identical(z, mine)
    xr.testing.assert_identical(z, ds)
    # And back into a folder: the same files' worth.
    rastore.convert(tmp_path / "run.zarr", tmp_path / "again")
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "again", engine="rastore").load(), ds)
    np.testing.assert_array_equal(rastore.read(tmp_path / "again" / "count.ra"), ds["count"].values)
    # Stores xarray wrote, v3 and v2, into folders whose files open alone.
    for zarr_format in (3, 2):
        z = tmp_path / f"x{zarr_format}.zarr"
        ds.to_zarr(z, zarr_format=zarr_format)
        out = tmp_path / f"conv{zarr_format}"
        rastore.convert(z, out)
        xr.testing.assert_identical(xr.open_dataset(out, engine="rastore").load(), ds)
        xr.testing.assert_identical(xr.open_dataset(out, engine="rastore").load(),
                                    xr.open_zarr(z).load())
        alone = xr.open_dataarray(out / "temp.ra", engine="rastore")
        assert alone.dims == ("lat", "lon", "time") and alone.attrs["units"] == "K"


def test_unlabeled_arrays_of_different_shapes_make_a_dataset_xarray_opens(tmp_path):
    """Arrays without labels (an .npz's, NumPy arrays written alone) have dims named
    after their variable (`a_dim_0`, ...), never xarray's `dim_0`, which variables of
    other sizes would conflict on: in the folder (engine="rastore"), in its Zarr view
    (ZarrStore), in the Zarr groups rastore.convert makes of the folder and of the .npz;
    and back in a folder they are no labels again, the files the same bytes."""
    zarr = pytest.importorskip("zarr")
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.arange(4, dtype="i4"),
              "c": np.ones(5, "f4")}
    np.savez(tmp_path / "three.npz", **arrays)
    folder = tmp_path / "three"
    rastore.convert(tmp_path / "three.npz", folder)
    rastore.write(folder / "d.ra", np.zeros((3, 2), "u1"))

    def dataset(arrays):
        return xr.Dataset({name: ([f"{name}_dim_{k}" for k in range(a.ndim)], a)
                           for name, a in arrays.items()})

    want = dataset({**arrays, "d": np.zeros((3, 2), "u1")})
    xr.testing.assert_identical(xr.open_dataset(folder, engine="rastore").load(), want)
    for zarr_format in (3, 2):
        xr.testing.assert_identical(
            xr.open_zarr(rastore.ZarrStore(folder, zarr_format=zarr_format)).load(), want)
    rastore.convert(folder, tmp_path / "via.zarr")
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "via.zarr").load(), want)
    group = zarr.open_group(tmp_path / "via.zarr", mode="r")
    assert group["a"].metadata.dimension_names == ("a_dim_0", "a_dim_1")
    rastore.convert(tmp_path / "three.npz", tmp_path / "direct.zarr")
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "direct.zarr").load(), dataset(arrays))
    # Back into folders: still no labels, the same bytes.
    for z in ("via", "direct"):
        rastore.convert(tmp_path / f"{z}.zarr", tmp_path / f"from-{z}")
        for name in sorted(os.listdir(tmp_path / f"from-{z}")):
            assert (tmp_path / f"from-{z}" / name).read_bytes() == (folder / name).read_bytes(), name
    # A file opened alone is a DataArray, its dims named as xarray names a DataArray's.
    assert xr.open_dataarray(folder / "a.ra", engine="rastore").dims == ("dim_0", "dim_1")


def test_dims_xarray_named_dim_0_stay_labels_in_a_dataset(tmp_path):
    """xarray's own `dim_0` (a DataArray's default, which variables share) is a label in
    a dataset: a group xarray wrote keeps it through a folder and back into Zarr."""
    pytest.importorskip("zarr")
    ds = xr.Dataset({"x": ("dim_0", np.arange(2)), "y": ("dim_0", np.array([3.0, 4.0])),
                     "z": (("dim_0", "dim_1"), np.zeros((2, 3), "f4"))})
    ds.to_zarr(tmp_path / "x.zarr", zarr_format=3)
    rastore.convert(tmp_path / "x.zarr", tmp_path / "f")
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "f", engine="rastore").load(), ds)
    rastore.convert(tmp_path / "f", tmp_path / "again.zarr")
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "again.zarr").load(), ds)


def test_a_folder_through_zarr_and_back_is_the_same_files(tmp_path):
    """A dataset's variables keep their trailers through a Zarr group byte for byte:
    labeled ones (name, dims and attributes as rastore.write puts them, with a float
    JSON spells otherwise), and ones without labels, with attributes or without. The
    trailer rides beside the Zarr metadata, where xarray does not see it: both sides
    are the same Dataset."""
    zarr = pytest.importorskip("zarr")
    ds = _dataset()
    ds["temp"].attrs["scale"] = 1e-5
    folder = tmp_path / "run"
    rastore.write(folder, ds)
    rastore.write(folder / "plain.ra", np.arange(3.0))
    ndl = ("---\nndarrays:\n  data:\n    shape:\n      - 2\n      - 5\n    type: int16\n"
           "    attributes:\n      units: counts\n      scale: 1e-5\n      valid_range: [0, 100]\n")
    rastore.write(folder / "ndl.ra", np.zeros((2, 5), "i2"), metadata=ndl)
    names = sorted(os.listdir(folder))
    rastore.convert(folder, tmp_path / "run.zarr")
    group = zarr.open_group(tmp_path / "run.zarr", mode="r")
    assert "rawarray_trailer" not in group["temp"].attrs
    assert "rawarray_trailer" not in group["ndl"].attrs
    mine = xr.open_dataset(folder, engine="rastore").load()
    assert mine["ndl"].attrs == {"units": "counts", "scale": 1e-5, "valid_range": [0, 100]}
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "run.zarr").load(), mine)
    rastore.convert(tmp_path / "run.zarr", tmp_path / "back")
    assert sorted(os.listdir(tmp_path / "back")) == names
    for name in names:
        assert (tmp_path / "back" / name).read_bytes() == (folder / name).read_bytes(), name
    # Attributes changed in Zarr win over the trailer kept beside them: the variable's
    # trailer is made anew, with its name beside its dims as rastore.write puts it.
    z = zarr.open_group(tmp_path / "run.zarr", mode="r+")
    z["count"].attrs["units"] = "1"
    rastore.convert(tmp_path / "run.zarr", tmp_path / "changed")
    count = xr.open_dataarray(tmp_path / "changed" / "count.ra", engine="rastore")
    assert count.name == "count" and count.dims == ("lat", "lon")
    assert count.attrs == {"units": "1", "coordinates": "area"}


def test_one_array_into_zarr_is_a_group_xarray_opens_or_bare_when_asked(tmp_path):
    zarr = pytest.importorskip("zarr")
    a = np.arange(24, dtype="<i4").reshape(2, 3, 4)
    rastore.write(tmp_path / "scan.ra", a)
    rastore.convert(tmp_path / "scan.ra", tmp_path / "g.zarr")
    got = xr.open_zarr(tmp_path / "g.zarr")["scan"]
    assert got.dims == ("dim_0", "dim_1", "dim_2")
    np.testing.assert_array_equal(got.values, a)
    xr.testing.assert_identical(got.load(), xr.open_dataarray(tmp_path / "scan.ra", engine="rastore")
                                .rename("scan"))
    # A group of one converts back as that array.
    rastore.convert(tmp_path / "g.zarr", tmp_path / "back.ra")
    assert open(tmp_path / "back.ra", "rb").read() == open(tmp_path / "scan.ra", "rb").read()
    rastore.convert(tmp_path / "scan.ra", tmp_path / "bare.zarr", group=False)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "bare.zarr", mode="r")[...], a)
    # Several arrays into one file are refused, naming them.
    rastore.write(tmp_path / "two", xr.Dataset({"a": ("x", [1, 2]), "b": ("x", [3, 4])}))
    rastore.convert(tmp_path / "two", tmp_path / "two.zarr")
    for source in ("two", "two.zarr"):
        with pytest.raises(rastore.Error, match=r"(dataset folder|Zarr group) of 2 arrays \(a, b\)"):
            rastore.convert(tmp_path / source, tmp_path / "one.ra")
    assert not (tmp_path / "one.ra").exists()


def test_a_folder_and_an_npz_both_ways(tmp_path):
    ds = _dataset()
    rastore.write(tmp_path / "run", ds)
    names = ["area", "count", "land", "lat", "lon", "temp", "time"]
    rastore.convert(tmp_path / "run", tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as z:
        assert sorted(z.files) == names
        for name in names:
            want = rastore.read(tmp_path / "run" / f"{name}.ra")
            assert z[name].dtype == want.dtype and z[name].shape == want.shape, name
            np.testing.assert_array_equal(z[name], want)
    rastore.convert(tmp_path / "run.npz", tmp_path / "back")
    for name in names:
        np.testing.assert_array_equal(rastore.read(tmp_path / "back" / f"{name}.ra"),
                                      rastore.read(tmp_path / "run" / f"{name}.ra"))
    # Names beyond ASCII, as NumPy reads them (UTF-8, flagged so in the archive).
    rastore.write(tmp_path / "u", xr.Dataset({"température": ("x", np.arange(3))}))
    rastore.convert(tmp_path / "u", tmp_path / "u.npz")
    with np.load(tmp_path / "u.npz") as z:
        assert z.files == ["température"] and z["température"].tolist() == [0, 1, 2]
    # An archive NumPy wrote, into a folder xarray opens.
    arrays = {"temp": ds["temp"].values, "lat": ds["lat"].values}
    np.savez(tmp_path / "np.npz", **arrays)
    rastore.convert(tmp_path / "np.npz", tmp_path / "fromnp")
    got = xr.open_dataset(tmp_path / "fromnp", engine="rastore")
    for name, a in arrays.items():
        np.testing.assert_array_equal(got[name].values, a)


def test_an_npz_of_several_arrays_converts_into_a_zarr_group(tmp_path):
    """An .npz is a tree of arrays as a folder is: `rastore.convert` makes a Zarr group of
    one array per member, straight, whether NumPy stored or deflated them."""
    zarr = pytest.importorskip("zarr")
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.arange(4, dtype="i4"),
              "c": np.ones(5, "f4")}
    for save in (np.savez, np.savez_compressed):
        npz = tmp_path / f"{save.__name__}.npz"
        save(npz, **arrays)
        out = tmp_path / f"{save.__name__}.zarr"
        rastore.convert(npz, out)
        group = zarr.open_group(out, mode="r")
        assert sorted(group.array_keys()) == sorted(arrays)
        for name, a in arrays.items():
            assert group[name].dtype == a.dtype, name
            np.testing.assert_array_equal(group[name][...], a)
    assert sorted(os.listdir(tmp_path)) == ["savez.npz", "savez.zarr", "savez_compressed.npz",
                                            "savez_compressed.zarr"]


def test_a_failed_conversion_of_a_dataset_leaves_nothing(tmp_path):
    pytest.importorskip("zarr")
    rastore.write(tmp_path / "run", _dataset())
    # The last variable (by name) is cut short: every other was converted first.
    with open(tmp_path / "run" / "time.ra", "r+b") as f:
        f.truncate(60)
    before = sorted(os.listdir(tmp_path))
    for out in ("out.zarr", "out"):
        with pytest.raises(rastore.Error, match="time.ra"):
            rastore.convert(tmp_path / "run", tmp_path / out)
        assert sorted(os.listdir(tmp_path)) == before, out


def test_netcdf_in_through_xarray(tmp_path):
    pytest.importorskip("scipy")
    ds = _dataset().drop_vars("land")  # netCDF3 has no bool
    nc = tmp_path / "x.nc"
    ds.to_netcdf(nc, engine="scipy")
    rastore.write(tmp_path / "nc", xr.open_dataset(nc, engine="scipy"))
    back = xr.open_dataset(tmp_path / "nc", engine="rastore").load()
    xr.testing.assert_identical(back, xr.open_dataset(nc, engine="scipy").load())


def test_a_tree_round_trips_through_folders_and_zarr_groups(tmp_path):
    ds = _dataset()
    tree = xr.DataTree.from_dict({
        "/": xr.Dataset(attrs={"project": "p"}),
        "/session1": ds,
        "/session1/coils": xr.Dataset({"c": (("coil", "x"), np.arange(8.0).reshape(2, 4))}),
        "/session2": ds.isel(time=slice(0, 3)),
    })
    rastore.write(tmp_path / "tree", tree)
    assert os.path.isfile(tmp_path / "tree" / "session1" / "coils" / "c.ra")
    back = xr.open_datatree(tmp_path / "tree", engine="rastore")
    xr.testing.assert_identical(back.load(), tree)
    pytest.importorskip("zarr")
    z = xr.open_datatree(rastore.ZarrStore(tmp_path / "tree"), engine="zarr")
    xr.testing.assert_identical(z.load(), tree)
    # Converted: folders into nested Zarr groups, and back into folders.
    rastore.convert(tmp_path / "tree", tmp_path / "tree.zarr")
    # Consolidated as zarr-python flattens it: a group's own is empty in its parents'.
    import json

    root = json.loads((tmp_path / "tree.zarr" / "zarr.json").read_text())["consolidated_metadata"]
    assert root["metadata"]["session1"]["consolidated_metadata"]["metadata"] == {}
    assert root["metadata"]["session1/coils/c"]["node_type"] == "array"
    xr.testing.assert_identical(xr.open_datatree(tmp_path / "tree.zarr", engine="zarr").load(), tree)
    rastore.convert(tmp_path / "tree.zarr", tmp_path / "again")
    xr.testing.assert_identical(xr.open_datatree(tmp_path / "again", engine="rastore").load(), tree)
    # A tree xarray wrote.
    tree.to_zarr(tmp_path / "x.zarr")
    rastore.convert(tmp_path / "x.zarr", tmp_path / "fromx")
    xr.testing.assert_identical(xr.open_datatree(tmp_path / "fromx", engine="rastore").load(), tree)


def test_dask_variables_are_written_by_the_workers(tmp_path, client):
    da = pytest.importorskip("dask.array")
    ds = _dataset(chunks={"time": 2})
    rastore.write(tmp_path / "run", ds)
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "run", engine="rastore").load(),
                                ds.compute())
    # A block failing on a worker: nothing new is left, and the dataset there is whole.
    failing = ds["temp"].copy(data=da.from_array(ds["temp"].values, chunks=(4, 5, 2))
                              .map_blocks(fails_on_block_two, dtype="f4"))
    with pytest.raises(ValueError, match="block 2 is bad"):
        rastore.write(tmp_path / "run", ds.assign(temp=failing, temp2=failing * 2))
    assert os.listdir(tmp_path) == ["run"]
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "run", engine="rastore").load(),
                                ds.compute())


def test_a_failed_write_at_any_variable_leaves_nothing(tmp_path):
    da = pytest.importorskip("dask.array")
    ds = _dataset()
    folder = tmp_path / "run"
    refused = (("lat",), np.array([object()] * 4))
    failing = ds["temp"].copy(data=da.from_array(ds["temp"].values, chunks=(4, 5, 2))
                              .map_blocks(fails_on_block_two, dtype="f4"))
    cases = {
        "a refused variable first": xr.Dataset({"a": refused}).merge(ds),
        "a refused variable last": ds.assign(zz=refused),
        "a Dask block failing": ds.assign(temp=failing),
    }
    for what, broken in cases.items():
        with pytest.raises((ValueError, rastore.Error)):
            rastore.write(folder, broken)
        assert os.listdir(tmp_path) == [], what
    # An existing dataset is kept whole when its replacement fails.
    rastore.write(folder, ds)
    broken = ds.assign(bad=(("lat",), np.array([object()] * 4)))
    with pytest.raises(rastore.Error):
        rastore.write(folder, broken)
    assert sorted(os.listdir(tmp_path)) == ["run"]
    xr.testing.assert_identical(xr.open_dataset(folder, engine="rastore").load(), ds)
    # Replacing it with a good one.
    rastore.write(folder, ds.isel(time=slice(0, 2)))
    assert xr.open_dataset(folder, engine="rastore").sizes["time"] == 2


def test_what_is_not_a_dataset_is_refused_by_name(tmp_path):
    ds = _dataset()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a dataset"):
        rastore.write(tmp_path / "notes", ds)
    with pytest.raises(FileNotFoundError):
        rastore.write(tmp_path / "no" / "run", ds)
    with pytest.raises(rastore.Error, match="cannot be a file name"):
        rastore.write(tmp_path / "bad", xr.Dataset({"a/b": (("x",), np.ones(2))}))
    assert sorted(os.listdir(tmp_path)) == ["notes"]


def test_a_dataset_and_a_tree_in_object_storage(tmp_path, s3):
    """Against s3s-fs: a Dataset and a DataTree under s3:// prefixes, written and read
    through xarray, converted into a Zarr group and a folder; a failed write leaves no
    object; a replaced dataset keeps none of the old one's variables."""
    o = s3.options
    ds = _dataset()
    url = s3.url("sets/run/")
    rastore.write(url, ds, storage_options=o)
    assert s3.object("sets/run/temp.ra").is_file() and s3.object("sets/run/dataset.yaml").is_file()
    back = xr.open_dataset(url, engine="rastore", storage_options=o)
    xr.testing.assert_identical(back.load(), ds)
    # Each object is a complete RawArray.
    np.testing.assert_array_equal(rastore.read(s3.url("sets/run/temp.ra"), storage_options=o),
                                  ds["temp"].values)
    # Through the engine: into a Zarr group xarray opens, and into a local folder.
    pytest.importorskip("zarr")
    rastore.convert(url, tmp_path / "run.zarr", storage_options=o)
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "run.zarr").load(), ds)
    rastore.convert(url, tmp_path / "run", storage_options=o)
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "run", engine="rastore").load(), ds)
    # Zarr groups in object storage, both ways (s3s-fs keeps objects as files, which
    # zarr-python and xarray then judge).
    rastore.convert(url, s3.url("sets/run.zarr"), storage_options=o)
    xr.testing.assert_identical(xr.open_zarr(s3.object("sets/run.zarr")).load(), ds)
    with pytest.raises(FileExistsError):
        rastore.convert(url, s3.url("sets/run.zarr"), storage_options=o)
    ds.to_zarr(s3.object("sets/x2.zarr"), zarr_format=2)
    for z in ("sets/run.zarr", "sets/x2.zarr"):
        out = tmp_path / z.replace("/", "_").replace(".zarr", "")
        rastore.convert(s3.url(z), out, storage_options=o)
        xr.testing.assert_identical(xr.open_dataset(out, engine="rastore").load(), ds)
    # A tree.
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"project": "p"}), "/a": ds,
                                  "/a/b": xr.Dataset({"c": (("x",), np.arange(3.0))})})
    rastore.write(s3.url("sets/tree/"), tree, storage_options=o)
    got = xr.open_datatree(s3.url("sets/tree/"), engine="rastore", storage_options=o)
    xr.testing.assert_identical(got.load(), tree)
    # A failure at a variable (a Dask block) leaves no object of the new dataset.
    da = pytest.importorskip("dask.array")
    failing = ds["temp"].copy(data=da.from_array(ds["temp"].values, chunks=(4, 5, 2))
                              .map_blocks(fails_on_block_two, dtype="f4"))
    with pytest.raises(ValueError, match="block 2 is bad"):
        rastore.write(s3.url("sets/bad/"), ds.assign(temp=failing), storage_options=o)
    assert not s3.object("sets/bad").exists() or not any(s3.object("sets/bad").rglob("*.ra"))
    # The same beside an empty Dask variable (one upload of nothing, no parts).
    empty = xr.DataArray(da.zeros((0, 3), chunks=(1, 3), dtype="f4"), dims=("e", "f"))
    before = set(s3.pending_uploads())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"):
            rastore.write(s3.url("sets/bad/"), ds.assign(temp=failing, empty=empty),
                          storage_options=o)
    assert [str(w.message) for w in record if "not cleaned up" in str(w.message)] == []
    assert not s3.object("sets/bad").exists() or not any(s3.object("sets/bad").rglob("*.ra"))
    assert set(s3.pending_uploads()) == before
    # Replacing: the old dataset's variables the new one has not are gone.
    rastore.write(url, ds[["count"]], storage_options=o)
    assert not s3.object("sets/run/temp.ra").exists()
    xr.testing.assert_identical(
        xr.open_dataset(url, engine="rastore", storage_options=o).load(), ds[["count"]])
