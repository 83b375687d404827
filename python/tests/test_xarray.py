"""The xarray backend (engine="rastore") and DataArray labels in NDL trailers."""
import os

import numpy as np
import pytest

import rastore

if os.environ.get("CI"):
    import xarray as xr  # CI installs rastore[dask]: its absence is a failure there
else:
    xr = pytest.importorskip("xarray")


def labeled():
    t = np.array(["2026-01-01T00:00", "2026-01-01T00:10", "2026-01-01T00:20"], dtype="M8[ns]")
    return xr.DataArray(
        np.arange(4 * 5 * 3, dtype="f4").reshape(4, 5, 3),
        dims=("x", "y", "time"),
        coords={"x": np.linspace(0, 1.5, 4), "time": t, "y": ["a", "b", "c", "d", "e"]},
        name="temperature",
        attrs={"units": "K", "scale": np.float64(0.5), "levels": np.array([1, 2, 3]), "ok": True},
    )


def test_labels_round_trip_through_the_trailer(tmp_path):
    a = labeled()
    a.coords["x"].attrs["units"] = "m"
    rastore.write(tmp_path / "t.ra", a)
    # The file is a plain .ra: the data, with an NDL trailer.
    np.testing.assert_array_equal(rastore.open(tmp_path / "t.ra"), a.values)
    b = xr.open_dataarray(tmp_path / "t.ra", engine="rastore")
    assert b.name == "temperature" and b.dims == ("x", "y", "time")
    assert list(b.attrs) == ["units", "scale", "levels", "ok"]
    assert b.attrs["units"] == "K" and b.attrs["ok"] is True
    # NumPy numbers keep their types (the trailer's attribute_types), as netCDF's do.
    assert type(b.attrs["scale"]) is np.float64 and b.attrs["scale"] == 0.5
    assert b.attrs["levels"].dtype == np.int64 and b.attrs["levels"].tolist() == [1, 2, 3]
    assert b.coords["x"].attrs == {"units": "m"}
    xr.testing.assert_identical(b.drop_attrs(), a.drop_attrs())
    np.testing.assert_array_equal(b.coords["time"].values, a.coords["time"].values)
    assert b.coords["y"].values.tolist() == ["a", "b", "c", "d", "e"]


def test_open_is_lazy_and_chunks_make_it_dask(tmp_path):
    a = labeled()
    rastore.write(tmp_path / "t.ra", a)
    b = xr.open_dataarray(tmp_path / "t.ra", engine="rastore")
    assert not b.variable._in_memory
    np.testing.assert_array_equal(b.isel(time=1, x=slice(1, 3)).values, a.values[1:3, :, 1])
    c = xr.open_dataarray(tmp_path / "t.ra", engine="rastore", chunks={"time": 1})
    assert c.chunks[2] == (1, 1, 1)
    np.testing.assert_array_equal(c.sum().compute().values, a.values.sum())
    ds = xr.open_dataset(tmp_path / "t.ra", engine="rastore")
    assert list(ds.data_vars) == ["temperature"]


def test_a_file_without_labels_opens_with_dim_names_and_its_attributes(tmp_path):
    rastore.write(tmp_path / "p.ra", np.ones((2, 3), "i2"))
    p = xr.open_dataarray(tmp_path / "p.ra", engine="rastore")
    assert p.dims == ("dim_0", "dim_1") and p.name == "p" and p.attrs == {}
    rastore.write(tmp_path / "q.ra", np.ones((2, 3), "i2"),
                  metadata="---\nndarrays:\n  data:\n    attributes:\n      units: mm\n")
    q = xr.open_dataarray(tmp_path / "q.ra", engine="rastore")
    assert q.attrs == {"units": "mm"} and q.dims == ("dim_0", "dim_1")
    # An unnamed DataArray comes back named after its file, as ZarrStore names it.
    rastore.write(tmp_path / "u.ra", xr.DataArray(np.zeros(3), dims="k"))
    u = xr.open_dataarray(tmp_path / "u.ra", engine="rastore")
    assert u.name == "u" and u.dims == ("k",)


def test_a_dask_backed_data_array_is_written_by_the_workers(tmp_path, client):
    a = labeled().chunk({"time": 1, "x": 3})
    rastore.write(tmp_path / "d.ra", a)
    b = xr.open_dataarray(tmp_path / "d.ra", engine="rastore")
    xr.testing.assert_identical(b.drop_attrs(), a.compute().drop_attrs())


def test_labels_on_s3(s3):
    a = labeled()
    rastore.write(s3.url("t.ra"), a, storage_options=s3.options)
    b = xr.open_dataarray(s3.url("t.ra"), engine="rastore",
                          backend_kwargs={"storage_options": s3.options})
    assert b.name == "temperature"
    xr.testing.assert_identical(b.drop_attrs(), a.drop_attrs())


def test_labels_too_large_for_a_trailer_are_refused(tmp_path):
    n = 200_000
    a = xr.DataArray(np.zeros(n, "f4"), dims="x", coords={"x": np.arange(n) * 1.000001})
    with pytest.raises(rastore.Error, match="over the"):
        rastore.write(tmp_path / "big.ra", a)
    assert not (tmp_path / "big.ra").exists()
