"""NetCDF-3 files made by netCDF4-python and SciPy, and what rastore makes of them judged
by netCDF4-python, SciPy and xarray, for tests/integration/netcdf3.rs.

    make DIR            the cases (cases.txt: NAME FILE JUDGE...): every type of each
                        version, ranks 0 to 4, record and fixed variables, CDF-1, CDF-2
                        and CDF-5 from netCDF4, CDF-1 and CDF-2 from SciPy, a STREAMING
                        file (judged by the file it was made from)
    folder NC DIR J..   the dataset folder DIR, read by this script as FORMAT.md §10 says
                        (each NAME.ra, its trailer's dimcoords, attributes and
                        attribute_types; dataset.yaml) and CF-decoded, is xr.identical to
                        xr.open_dataset(NC, engine=J) for each judge J
    npz NC NPZ          the arrays of NPZ are NC's variables as stored (netCDF4, no
                        masking or scaling): names, dtypes, shapes, values
    back NC DIR J       as folder, but the global attributes compared by value only (a
                        folder made back from a Zarr group: JSON keeps no types)
    zarr NC ZARR        xr.open_zarr(ZARR) has NC's variables, dimensions and values (the
                        raw values: Zarr's JSON attributes keep no float32)
    refs NC JSON        kerchunk references JSON (of the whole file), read by fsspec and
                        xarray, hold NC's variables as stored and its attributes
    npy NC VAR NPY      the .npy NPY is NC's variable VAR as stored
    hostile DIR         hostile files (hostile.txt: FILE FIELD), each a valid file with
                        one field made to lie
"""

import os
import struct
import sys

import numpy as np
import xarray as xr
import yaml

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"]
CLASSIC_TYPES = ["i1", "S1", "i2", "i4", "f4", "f8"]
CDF5_TYPES = ["u1", "u2", "u4", "i8", "u8"]
FIXED = [(), ("x",), ("x", "y"), ("x", "y", "z"), ("x", "y", "z", "w")]
RECORD = [("time",), ("time", "x"), ("time", "x", "y"), ("time", "x", "y", "z")]
SIZES = {"x": 2, "y": 3, "z": 2, "w": 2, "s": 4}
NRECS = 3


def values(t, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if t == "S1":
        return rng.choice(np.array([b"a", b"b", b"", b"z"], "S1"), n).reshape(shape)
    if t.startswith("f"):
        return rng.normal(size=n).astype(t).reshape(shape)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, dtype=t, endpoint=True).reshape(shape)


def attribute(t, k):
    """A typed attribute value: a scalar for even ``k``, an array for odd."""
    a = values(t if t != "S1" else "i1", (1 + k % 2 * 2,), k).astype(t if t != "S1" else "i1")
    return a[0] if k % 2 == 0 else a


def make_netcdf4(path, fmt):
    import netCDF4

    d = netCDF4.Dataset(path, "w", format=fmt)
    d.createDimension("time", None)
    for name, n in SIZES.items():
        d.createDimension(name, n)
    types = CLASSIC_TYPES + (CDF5_TYPES if fmt == "NETCDF3_64BIT_DATA" else [])
    d.title = "issue 39"
    d.history = "made by netcdf3_fixtures.py"
    for k, t in enumerate(types):
        if t != "S1":
            d.setncattr(f"g_{t}", attribute(t, k))
    time = d.createVariable("time", "f8", ("time",))
    time.units = "hours since 2026-01-01"
    time.calendar = "standard"
    time[:] = np.arange(NRECS) * 6.0
    lat = d.createVariable("lat", "f4", ("x", "y"))
    lat.units = "degrees_north"
    lat[:] = values("f4", (2, 3), 7)
    packed = d.createVariable("packed", "i2", ("time", "x", "y"), fill_value=np.int16(-32767))
    packed.scale_factor = np.float32(0.25)
    packed.add_offset = np.float32(10)
    packed.coordinates = "lat"
    packed.set_auto_maskandscale(False)
    raw = values("i2", (NRECS, 2, 3), 8)
    raw[0, 0, 0] = -32767
    packed[:] = raw
    for k, t in enumerate(types):
        for rank, dims in enumerate(FIXED + RECORD):
            if t == "S1" and not dims:
                continue
            if t == "S1":
                dims = dims + ("s",)
            kind = "rec" if dims[:1] == ("time",) else "fix"
            v = d.createVariable(f"{t}_{len(dims)}d_{kind}", t, dims)
            v.set_auto_maskandscale(False)
            if t != "S1":
                v.setncattr("valid_range", attribute(t, 1))
                v.setncattr("one", attribute(t, 0))
            v.long_name = f"{t} of rank {len(dims)}"
            shape = tuple(NRECS if n == "time" else SIZES[n] for n in dims)
            v[...] = values(t, shape, 100 * k + rank)
    d.close()


def make_scipy(path, version):
    from scipy.io import netcdf_file

    f = netcdf_file(path, "w", version=version)
    f.title = b"scipy"
    f.count = np.int32(4)
    f.createDimension("time", None)
    for name, n in SIZES.items():
        f.createDimension(name, n)
    t = f.createVariable("time", "f8", ("time",))
    t.units = b"days since 2000-01-01"
    t[:] = np.arange(NRECS, dtype="f8")
    for k, ty in enumerate(CLASSIC_TYPES):
        dims = RECORD[k % 4] if k % 2 else FIXED[1 + k % 4]
        if ty == "S1":
            dims = dims + ("s",)
        code = {"S1": "c", "i1": "b"}.get(ty, ty)
        v = f.createVariable(f"v_{ty}", code, dims)
        if ty != "S1":
            v.scale = np.array(attribute(ty, 1), ty)
        v.units = b"m"
        shape = tuple(NRECS if n == "time" else SIZES[n] for n in dims)
        v[:] = values(ty, shape, 50 + k)
    f.close()


def make(folder):
    cases = []
    for fmt in FORMATS:
        name = fmt.lower().replace("netcdf3_", "n4_")
        make_netcdf4(os.path.join(folder, f"{name}.nc"), fmt)
        judges = "netcdf4" if fmt == "NETCDF3_64BIT_DATA" else "netcdf4 scipy"
        cases.append(f"{name} {name}.nc {judges}")
    for version in (1, 2):
        make_scipy(os.path.join(folder, f"scipy_v{version}.nc"), version)
        cases.append(f"scipy_v{version} scipy_v{version}.nc netcdf4 scipy")
    # STREAMING: numrecs all ones, found from the file's length (neither peer reads it:
    # the file it was made from judges).
    with open(os.path.join(folder, "n4_classic.nc"), "rb") as f:
        data = bytearray(f.read())
    data[4:8] = b"\xff\xff\xff\xff"
    with open(os.path.join(folder, "streaming.nc"), "wb") as f:
        f.write(bytes(data))
    cases.append("streaming streaming.nc n4_classic.nc")
    with open(os.path.join(folder, "cases.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")


def read_ra(path):
    """A .ra file as FORMAT.md §1 lays it out: the array (column-major) and its trailer."""
    with open(path, "rb") as f:
        data = f.read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<8sQQQQQ", data)
    assert magic == b"rawarray" and flags == 0, (path, magic, flags)
    dims = struct.unpack_from(f"<{ndims}Q", data, 48)
    start = 48 + 8 * ndims
    trailer = yaml.safe_load(data[start + size:].decode()) if len(data) > start + size else {}
    nd = next(iter(trailer["ndarrays"].values()))
    kinds = {1: "i", 2: "u", 3: "f"}
    if eltype == 0:
        dtype = np.dtype(eval(nd["type"]["numpy_descr"]))
    else:
        dtype = np.dtype(f"<{kinds[eltype]}{elbyte}")
    a = np.frombuffer(data[start:start + size], dtype=dtype).reshape(dims, order="F")
    return a, nd


def typed(attrs, types):
    out = dict(attrs or {})
    for k, t in (types or {}).items():
        a = np.asarray(out[k], dtype=np.dtype(t))
        out[k] = a[()] if a.ndim == 0 else a
    return out


def open_folder(folder):
    """The dataset folder as FORMAT.md §10 says: each NAME.ra a variable named by its
    dimcoords, its attributes typed as attribute_types says; dataset.yaml's attributes."""
    variables = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".ra"):
            continue
        a, nd = read_ra(os.path.join(folder, name))
        dims = [e["name"] for e in nd["dimcoords"]]
        attrs = typed(nd.get("attributes"), nd.get("attribute_types"))
        variables[name[:-3]] = xr.Variable(dims, a, attrs=attrs)
    doc = {}
    at = os.path.join(folder, "dataset.yaml")
    if os.path.exists(at):
        with open(at) as f:
            doc = yaml.safe_load(f)
    attrs = typed(doc.get("attributes"), doc.get("attribute_types"))
    return xr.decode_cf(xr.Dataset(variables, attrs=attrs))


def check_folder(nc, folder, judges):
    ours = open_folder(folder)
    for j in judges:
        if j.endswith(".nc"):
            theirs = xr.open_dataset(os.path.join(os.path.dirname(nc), j), engine="netcdf4")
        else:
            theirs = xr.open_dataset(nc, engine=j)
        if not ours.identical(theirs):
            for k in theirs.variables:
                if k not in ours.variables or not ours[k].identical(theirs[k]):
                    print(k, ours.get(k), theirs[k])
            print("ours", ours.attrs, "theirs", theirs.attrs)
            raise SystemExit(f"{folder}: not identical to {nc} read by {j}")
        same_types(ours, theirs)
    print(f"identical: {len(ours.variables)} variables, {len(judges)} judges")


def same_types(ours, theirs):
    """What xr.identical does not compare: each variable's dtype, and each attribute's
    type (a float32 scale_factor is not a float64 one)."""
    def kind(v):
        # SciPy gives array attributes big-endian: the type, not its byte order.
        d = np.asarray(v).dtype
        return type(v), d.kind, d.itemsize

    for k in theirs.variables:
        assert ours[k].dtype == theirs[k].dtype, (k, ours[k].dtype, theirs[k].dtype)
        for n, v in theirs[k].attrs.items():
            assert kind(ours[k].attrs[n]) == kind(v), (k, n, ours[k].attrs[n], v)
    for n, v in theirs.attrs.items():
        assert kind(ours.attrs[n]) == kind(v), (n, ours.attrs[n], v)


def check_back(nc, folder, judge):
    """As ``check_folder``, but the global attributes compared by value: a folder made
    back from a Zarr group has them from JSON, which keeps no types (a uint64 past
    2^63 - 1 stays the decimal text NDL gave it)."""
    ours = open_folder(folder)
    theirs = xr.open_dataset(nc, engine=judge)
    assert ours.drop_attrs(deep=False).identical(theirs.drop_attrs(deep=False)), folder
    plain = {k: str(np.asarray(v).tolist()) for k, v in theirs.attrs.items()}
    assert {k: str(np.asarray(v).tolist()) for k, v in ours.attrs.items()} == plain, folder
    print(f"identical but attribute types: {len(ours.variables)} variables")


def raw(nc):
    import netCDF4

    d = netCDF4.Dataset(nc)
    d.set_auto_maskandscale(False)
    d.set_auto_chartostring(False)
    return {k: np.asarray(v[...]) for k, v in d.variables.items()}, d


def check_npz(nc, npz):
    want, _ = raw(nc)
    got = np.load(npz)
    assert sorted(got.files) == sorted(want), (got.files, list(want))
    for k, a in want.items():
        b = got[k]
        assert (b.dtype, b.shape) == (a.dtype, a.shape), (k, b.dtype, b.shape, a.dtype, a.shape)
        assert np.array_equal(a, b), k
    print(f"equal: {len(want)} arrays")


def check_zarr(nc, zarr):
    want, d = raw(nc)
    ds = xr.open_zarr(zarr, decode_cf=False, mask_and_scale=False)
    assert sorted(ds.variables) == sorted(want), (list(ds.variables), list(want))
    for k, a in want.items():
        v = ds[k]
        assert v.dims == d.variables[k].dimensions, (k, v.dims)
        assert v.dtype == a.dtype and np.array_equal(v.values, a), k
    print(f"equal: {len(want)} variables")


def check_refs(nc, refs):
    """kerchunk references (JSON) read by fsspec and xarray's Zarr engine: NC's
    variables, dimensions and raw values, and its global attributes."""
    import json

    with open(refs) as f:
        fo = json.load(f)
    want, d = raw(nc)
    ds = xr.open_dataset("reference://", engine="zarr", decode_cf=False, mask_and_scale=False,
                         backend_kwargs={"consolidated": False,
                                         "storage_options": {"fo": fo}})
    assert sorted(ds.variables) == sorted(want), (list(ds.variables), list(want))
    for k, a in want.items():
        v = ds[k]
        assert v.dims == d.variables[k].dimensions, (k, v.dims)
        assert v.dtype == a.dtype and np.array_equal(v.values, a), k
    assert sorted(ds.attrs) == sorted(d.ncattrs()), (ds.attrs, d.ncattrs())
    print(f"equal: {len(want)} variables in place")


def check_npy(nc, var, npy):
    want, _ = raw(nc)
    b = np.load(npy)
    a = want[var]
    assert (b.dtype, b.shape) == (a.dtype, a.shape) and np.array_equal(a, b), var
    print(f"equal: {var}")


def hostile(folder):
    """Valid CDF-1 and CDF-5 files from netCDF4, each with one field made to lie."""
    import netCDF4

    lines = []
    for fmt, tag in (("NETCDF3_CLASSIC", "c1"), ("NETCDF3_64BIT_DATA", "c5")):
        base = os.path.join(folder, f"base_{tag}.nc")
        d = netCDF4.Dataset(base, "w", format=fmt)
        d.createDimension("t", None)
        d.createDimension("x", 3)
        d.note = "a global attribute"
        v = d.createVariable("fixed", "f4", ("x",))
        v.units = "K"
        v[:] = [1, 2, 3]
        d.createVariable("rec", "i2", ("t", "x"))[:] = np.ones((2, 3), "i2")
        d.createVariable("rec2", "f8", ("t",))[:] = [1, 2]
        d.close()
        with open(base, "rb") as f:
            good = f.read()
        big = tag == "c5"
        count = (lambda n: struct.pack(">q", n)) if big else (lambda n: struct.pack(">i", n))
        cb = 8 if big else 4

        def patched(name, at, raw_bytes, field):
            data = bytearray(good)
            data[at:at + len(raw_bytes)] = raw_bytes
            path = os.path.join(folder, f"{tag}_{name}.nc")
            with open(path, "wb") as f:
                f.write(bytes(data))
            lines.append(f"{os.path.basename(path)} {field}")

        # numrecs (after the magic) lies: 2^30 records.
        patched("numrecs", 4, count(1 << 30), "numrecs")
        # dim_list's nelems: 2^60 (CDF-5) or 2^31 - 1 dimensions.
        patched("ndims", 4 + cb + 4, count((1 << 60) if big else 0x7FFFFFFF), "dim_list")
        # The first dimension's name length: huge.
        patched("namelen", 4 + cb + 4 + cb, count((1 << 40) if big else 0x7FFFFFF0),
                "dimension 0")
        # x's length: 2^40 (CDF-5) or 2^31: its variables' data past the end.
        xat = good.index(b"x\0\0\0") + 4
        patched("dimlen", xat, count((1 << 40) if big else 0x7FFFFFFF), "variable")
        # fixed's begin (the last field of its entry: before "rec"'s name) past the end.
        off = 8 if big or fmt != "NETCDF3_CLASSIC" else 4
        rec_name = good.index(count(3) + b"rec\0")
        packer = ">q" if off == 8 else ">i"
        patched("begin", rec_name - off, struct.pack(packer, 1 << 30), "variable \"fixed\": begin")
        # fixed's begin negative.
        patched("negative", rec_name - off, struct.pack(packer, -8), "variable \"fixed\": begin")
        # fixed's begin inside the header: overlapping it.
        patched("overlap", rec_name - off, struct.pack(packer, 8), "variable \"fixed\": begin")
        # the units attribute's nelems: more values than the file holds.
        uat = good.index(b"units\0\0\0") + 8 + 4
        patched("attlen", uat, count((1 << 62) if big else 0x7FFFFFFF), "attribute \"units\"")
        # An nc_type no version has.
        patched("nctype", uat - 4, struct.pack(">i", 99), "nc_type")
        # Truncated: the header cut in its middle, and the data cut short.
        for name, n in (("cut_header", 40), ("cut_data", len(good) - 3)):
            path = os.path.join(folder, f"{tag}_{name}.nc")
            with open(path, "wb") as f:
                f.write(good[:n])
            lines.append(f"{os.path.basename(path)} {'numrecs' if name == 'cut_data' else ''}")
    # A text file named .nc, and a NetCDF-4 (HDF5) file cut short: refused as what
    # they are.
    with open(os.path.join(folder, "text.nc"), "w") as f:
        f.write("netcdf x { dimensions: x = 3 ; }\n")
    lines.append("text.nc text")
    d = netCDF4.Dataset(os.path.join(folder, "nc4.nc"), "w", format="NETCDF4")
    d.createDimension("x", 2)
    d.createVariable("v", "f4", ("x",))[:] = [1, 2]
    d.close()
    with open(os.path.join(folder, "nc4.nc"), "r+b") as f:
        f.truncate(100)
    lines.append("nc4.nc HDF5")
    with open(os.path.join(folder, "hostile.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        make(args[0])
    elif cmd == "folder":
        check_folder(args[0], args[1], args[2:])
    elif cmd == "back":
        check_back(*args)
    elif cmd == "npz":
        check_npz(*args)
    elif cmd == "zarr":
        check_zarr(*args)
    elif cmd == "refs":
        check_refs(*args)
    elif cmd == "npy":
        check_npy(*args)
    elif cmd == "hostile":
        hostile(args[0])
    else:
        raise SystemExit(f"unknown command {cmd}")
