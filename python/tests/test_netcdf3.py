"""NetCDF-3 through the Python package, judged by netCDF4-python, SciPy and xarray: a
file converts into a dataset folder that ``xr.open_dataset(folder, engine="rastore")``
reads identically to ``xr.open_dataset(x.nc)`` (dtypes and attribute types too), into
a Zarr group and back; ``x.nc/VAR`` reads, indexes lazily and maps in place where its
bytes are one run; hostile files are refused and leave nothing."""

import os

import numpy as np
import pytest

import rastore

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")
scipy_io = pytest.importorskip("scipy.io")

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"]
TYPES = ["i1", "S1", "i2", "i4", "f4", "f8"]
CDF5 = ["u1", "u2", "u4", "i8", "u8"]
SIZES = {"x": 2, "y": 3, "z": 2, "s": 3}
RANKS = [(), ("x",), ("x", "y"), ("x", "y", "z"), ("x", "y", "z", "s")]
NRECS = 4


def values(t, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if t == "S1":
        return rng.choice(np.array([b"a", b"q", b""], "S1"), n).reshape(shape)
    if t[0] == "f":
        return rng.normal(size=n).astype(t).reshape(shape)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, dtype=t, endpoint=True).reshape(shape)


def netcdf4_file(path, fmt):
    """Every type of ``fmt``, ranks 0 to 4 fixed and 1 to 4 record (plus the string
    axis of characters), a packed variable with a time axis and an auxiliary
    coordinate, typed attributes."""
    d = netCDF4.Dataset(path, "w", format=fmt)
    d.createDimension("time", None)
    for name, n in SIZES.items():
        d.createDimension(name, n)
    d.title = "issue 39"
    d.setncattr("levels", np.array([1, 2, 3], "i2"))
    d.setncattr("scale", np.float32(0.5))
    time = d.createVariable("time", "f8", ("time",))
    time.units = "days since 2026-01-01"
    time.calendar = "noleap"
    time[:] = np.arange(NRECS) * 1.5
    lat = d.createVariable("lat", "f4", ("x", "y"))
    lat[:] = values("f4", (2, 3), 1)
    packed = d.createVariable("packed", "i2", ("time", "x", "y"), fill_value=np.int16(-1))
    packed.scale_factor = np.float32(0.1)
    packed.add_offset = np.float32(-3)
    packed.coordinates = "lat"
    packed.set_auto_maskandscale(False)
    packed[:] = values("i2", (NRECS, 2, 3), 2)
    types = TYPES + (CDF5 if fmt == "NETCDF3_64BIT_DATA" else [])
    for k, t in enumerate(types):
        for dims in RANKS + [("time",) + r for r in RANKS[:4]]:
            if t == "S1":
                if not dims or dims[-1] == "s":
                    continue
                dims = dims + ("s",)
            name = f"{t}_{'r' if dims[:1] == ('time',) else 'f'}{len(dims)}"
            v = d.createVariable(name, t, dims)
            v.set_auto_maskandscale(False)
            if t != "S1":
                v.setncattr("valid_range", values(t, (2,), k))
                v.setncattr("missing_value", values(t, (1,), k)[0])
            shape = tuple(NRECS if n == "time" else SIZES[n] for n in dims)
            v[...] = values(t, shape, 10 * k + len(dims))
    d.close()


def scipy_file(path, version):
    f = scipy_io.netcdf_file(path, "w", version=version)
    f.title = b"scipy"
    f.createDimension("time", None)
    f.createDimension("x", 3)
    f.createDimension("s", 2)
    t = f.createVariable("time", "f8", ("time",))
    t.units = b"hours since 2000-01-01"
    t[:] = np.arange(NRECS, dtype="f8")
    for k, ty in enumerate(TYPES):
        dims = ("time", "x") if k % 2 else ("x",)
        if ty == "S1":
            dims = ("x", "s")
        v = f.createVariable(f"v_{ty}", {"S1": "c", "i1": "b"}.get(ty, ty), dims)
        if ty != "S1":
            v.valid_max = np.array(1, ty)
        v[:] = values(ty, tuple(NRECS if n == "time" else {"x": 3, "s": 2}[n] for n in dims), k)
    f.close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nc3")
    out = {}
    for fmt in FORMATS:
        p = d / f"{fmt}.nc"
        netcdf4_file(str(p), fmt)
        out[fmt] = (p, ["netcdf4"] if fmt == "NETCDF3_64BIT_DATA" else ["netcdf4", "scipy"])
    for version in (1, 2):
        p = d / f"scipy{version}.nc"
        scipy_file(str(p), version)
        out[f"scipy{version}"] = (p, ["netcdf4", "scipy"])
    return out


def same(ours, theirs):
    """xr.identical, and what it does not compare: dtypes and attribute types."""
    assert ours.identical(theirs)

    def kind(v):
        # SciPy gives array attributes big-endian: the type, not its byte order.
        d = np.asarray(v).dtype
        return type(v), d.kind, d.itemsize

    for k in theirs.variables:
        assert ours[k].dtype == theirs[k].dtype, k
        for n, v in theirs[k].attrs.items():
            assert kind(ours[k].attrs[n]) == kind(v), (k, n)
    for n, v in theirs.attrs.items():
        assert kind(ours.attrs[n]) == kind(v), n


def raw(path):
    d = netCDF4.Dataset(str(path))
    d.set_auto_maskandscale(False)
    d.set_auto_chartostring(False)
    return {k: np.asarray(v[...]) for k, v in d.variables.items()}


@pytest.mark.parametrize("case", FORMATS + ["scipy1", "scipy2"])
def test_a_file_converts_into_a_folder_xarray_reads_identically(files, case, tmp_path):
    nc, engines = files[case]
    folder = tmp_path / "out"
    rastore.convert(nc, folder)
    ours = xr.open_dataset(folder, engine="rastore")
    for engine in engines:
        same(ours, xr.open_dataset(nc, engine=engine))
    # Decoded as the file is: times, scaling and masking, the auxiliary coordinate.
    if case.startswith("NETCDF3"):
        assert ours.packed.dtype == np.float32 and "lat" in ours.packed.coords
        assert ours.time.dtype.kind == "O"  # noleap: cftime, as xarray decodes it
    # rastore.write of what xarray reads is the same dataset again.
    written = tmp_path / "written"
    rastore.write(written, xr.open_dataset(nc))
    same(xr.open_dataset(written, engine="rastore"), xr.open_dataset(nc, engine=engines[0]))


@pytest.mark.parametrize("case", ["NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA", "scipy1"])
def test_a_file_into_a_zarr_group_and_back(files, case, tmp_path):
    nc, engines = files[case]
    z = tmp_path / "x.zarr"
    rastore.convert(nc, z)
    theirs = xr.open_dataset(nc, engine=engines[0], decode_cf=False)
    got = xr.open_zarr(z, decode_cf=False)
    # The values as stored, under their dimension names.
    for k, v in raw(nc).items():
        assert got[k].dims == theirs[k].dims
        assert got[k].dtype == v.dtype
        np.testing.assert_array_equal(got[k].values, v)
    back = tmp_path / "back"
    rastore.convert(z, back)
    ours = xr.open_dataset(back, engine="rastore")
    want = xr.open_dataset(nc, engine=engines[0])
    # The variables keep their trailers through Zarr, types and all; the group's
    # attributes come back from JSON, their values but not their types.
    assert ours.drop_attrs(deep=False).identical(want.drop_attrs(deep=False))
    for k in want.variables:
        assert ours[k].dtype == want[k].dtype
    assert {k: np.asarray(v).tolist() for k, v in ours.attrs.items()} == \
        {k: np.asarray(v).tolist() for k, v in want.attrs.items()}


def test_zarr_store_reads_the_file_in_place(files):
    nc, _ = files["NETCDF3_CLASSIC"]
    want = raw(nc)
    for zarr_format in (3, 2):
        store = rastore.ZarrStore(nc, zarr_format=zarr_format)
        ds = xr.open_zarr(store, decode_cf=False, consolidated=zarr_format == 2)
        assert sorted(ds.variables) == sorted(want)
        for k, v in want.items():
            assert ds[k].dtype == v.dtype
            np.testing.assert_array_equal(ds[k].values, v)
        assert ds.attrs["title"] == "issue 39"
    # One record variable, interleaved with the others: a chunk per record.
    store = rastore.ZarrStore(f"{nc}/packed")
    ds = xr.open_zarr(store)
    assert ds.packed.chunks == ((1,) * NRECS, (2,), (3,))
    np.testing.assert_allclose(ds.packed.values, xr.open_dataset(nc).packed.values, rtol=1e-6)
    refs = rastore.references(f"{nc}/packed")
    starts = [refs["refs"][f"packed/{i}.0.0"][1] for i in range(NRECS)]
    assert len(set(np.diff(starts))) == 1 and starts[1] - starts[0] > 12


def test_a_variable_reads_indexes_and_maps_in_place(files):
    nc, _ = files["NETCDF3_64BIT_OFFSET"]
    want = raw(nc)
    for name, v in want.items():
        got = rastore.read(f"{nc}/{name}")
        assert got.dtype == v.dtype.newbyteorder("=") and got.shape == v.shape, name
        np.testing.assert_array_equal(got, v)
        a = rastore.Array(f"{nc}/{name}")
        assert a.shape == v.shape
        if v.ndim >= 2:
            np.testing.assert_array_equal(a[1, ..., ::2], v[1, ..., ::2])
            np.testing.assert_array_equal(a[[1, 0]], v[[1, 0]])
    # A fixed variable is big-endian bytes at its begin: mapped, no copy, inside the
    # mapping of the file, the same bytes as NumPy's own memmap of them.
    m = rastore.MappedFile(f"{nc}/lat")
    v = m.array
    assert v.dtype == np.dtype(">f4") and not v.flags.writeable and v.flags.c_contiguous
    np.testing.assert_array_equal(v, want["lat"])
    start, length = m._data_range()
    address = v.__array_interface__["data"][0]
    assert start <= address < start + length and length == v.nbytes
    assert v.base is m
    i = rastore.info(f"{nc}/lat")
    assert (i["format"], i["dim_names"], i["record"]) == ("netcdf3", ["x", "y"], False)
    peer = np.memmap(nc, dtype=">f4", mode="r", offset=i["data_offset"], shape=v.shape)
    np.testing.assert_array_equal(peer, v)
    # A record variable interleaved with others is not one run: refused in place, with
    # what reads it.
    with pytest.raises(rastore.Error, match="rastore.read or rastore.Array"):
        rastore.open(f"{nc}/packed")
    with pytest.raises(rastore.Error, match="name one, as"):
        rastore.open(nc)
    with pytest.raises(rastore.Error, match='no variable "nope"'):
        rastore.read(f"{nc}/nope")


def test_the_only_record_variable_maps_in_place(tmp_path):
    # One record variable: its records are not padded and lie one after another.
    p = tmp_path / "one.nc"
    d = netCDF4.Dataset(str(p), "w", format="NETCDF3_CLASSIC")
    d.createDimension("t", None)
    d.createDimension("x", 3)
    d.createVariable("b", "i1", ("t", "x"))[:] = np.arange(15, dtype="i1").reshape(5, 3)
    d.createVariable("fixed", "f8", ("x",))[:] = [1, 2, 3]
    d.close()
    v = rastore.open(f"{p}/b")
    np.testing.assert_array_equal(v, np.arange(15, dtype="i1").reshape(5, 3))
    assert not v.flags.owndata and not v.flags.writeable
    i = rastore.info(f"{p}/b")
    # 5 records of 3 bytes, unpadded (the file itself ends on a multiple of 4).
    assert i["record"] and i["record_stride"] is None
    assert i["data_offset"] + 15 == p.stat().st_size - 1


def test_streaming_numrecs_is_found_from_the_file_length(files, tmp_path):
    nc, _ = files["NETCDF3_CLASSIC"]
    data = bytearray(nc.read_bytes())
    data[4:8] = b"\xff\xff\xff\xff"
    s = tmp_path / "streaming.nc"
    s.write_bytes(bytes(data))
    rastore.convert(s, tmp_path / "out")
    same(xr.open_dataset(tmp_path / "out", engine="rastore"), xr.open_dataset(nc))


def test_hostile_files_are_refused_and_leave_nothing(files, tmp_path):
    nc, _ = files["NETCDF3_CLASSIC"]
    good = nc.read_bytes()
    cases = {
        "numrecs": (4, (1 << 30).to_bytes(4, "big")),
        "dim_list: nelems": (12, (0x7FFFFFFF).to_bytes(4, "big")),
        "dimension 0": (16, (0x7FFFFFF0).to_bytes(4, "big")),
    }
    for field, (at, raw_bytes) in cases.items():
        bad = bytearray(good)
        bad[at:at + len(raw_bytes)] = raw_bytes
        p = tmp_path / "bad.nc"
        p.write_bytes(bytes(bad))
        out = tmp_path / "out"
        with pytest.raises(rastore.Error, match=field):
            rastore.convert(p, out)
        assert not out.exists()
        with pytest.raises(rastore.Error, match="bad.nc"):
            rastore.read(f"{p}/lat")
    cut = tmp_path / "cut.nc"
    cut.write_bytes(good[:len(good) // 2])
    with pytest.raises(rastore.Error, match="not a valid NetCDF-3 file"):
        rastore.convert(cut, tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["bad.nc", "cut.nc"]
