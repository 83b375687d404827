"""A corpus of small real HDF5, NetCDF and MATLAB v7.3 files, for judging HDF5 readers
(issue 39: docs/HDF5.md, "Choosing a reader") and as the seed corpus of the HDF5 fuzz
targets.

    python3 tests/corpus/hdf5.py OUTDIR

writes the files into OUTDIR and OUTDIR/MANIFEST.json, which lists, per file: its
writer (and the HDF5 library version the writer linked), its kind (hdf5, netcdf4,
netcdf3, mat73), what it covers, and the datasets a reader must refuse by name
(`refuse`: path -> reason) rather than read. Every other dataset is to be read with
h5py's values, dtype and shape. The corpus is deterministic (fixed seeds) apart from
the timestamps HDF5 writes when asked to (they are turned off where h5py allows).

Writers: h5py (every dtype, rank, layout, chunk index, superblock, group and attribute
storage, links, and the cases a reader must refuse), netCDF4-python (NETCDF4,
NETCDF4_CLASSIC, NETCDF3_64BIT_DATA), h5netcdf, xarray (engines netcdf4 and h5netcdf),
scipy (NetCDF-3 CDF-1 and CDF-2) and hdf5storage (MATLAB v7.3).
"""

import json
import os
import sys

import h5py
import numpy as np

MANIFEST = []
RNG = np.random.default_rng(39)


def record(name, writer, kind, covers, refuse=None):
    MANIFEST.append({
        "file": name,
        "writer": writer,
        "kind": kind,
        "covers": covers,
        "refuse": refuse or {},
    })


def h5py_writer():
    return f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version})"


def values(dtype, shape):
    """Deterministic values of a NumPy dtype, with edge values where they fit."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        a = RNG.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = RNG.integers(info.min, info.max, n, dtype=dtype.newbyteorder("="), endpoint=True)
        if n >= 2:
            a[0], a[1] = info.min, info.max
    elif dtype.kind == "f":
        a = RNG.normal(size=n).astype(dtype.newbyteorder("="))
        special = [np.nan, np.inf, -np.inf, -0.0]
        for k, v in enumerate(special[: max(0, n - 1)]):
            a[k + 1] = v
    elif dtype.kind == "c":
        a = (RNG.normal(size=n) + 1j * RNG.normal(size=n)).astype(dtype.newbyteorder("="))
    else:
        raise ValueError(dtype)
    return a.astype(dtype).reshape(shape)


def new_file(out, name, libver=None, **kw):
    return h5py.File(os.path.join(out, name), "w", libver=libver, track_order=None, **kw)


# ---------------------------------------------------------------- h5py: types and ranks

NUMERIC = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
BIG_ENDIAN = [">i2", ">i4", ">u8", ">f4", ">f8", ">c16"]
COMPOUND = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
COMPOUND_ALIGNED = np.dtype([("x", "u1"), ("y", "<f8"), ("z", "<i2", (3,))], align=True)


def compound_values(dtype, n):
    a = np.zeros(n, dtype)
    for name in dtype.names:
        sub = dtype.fields[name][0]
        base, shape = sub.base, sub.shape
        if base.kind == "S":
            a[name] = [[b"abc", b"de", b"", b"xyz"][k % 4] for k in range(n)]
        else:
            a[name] = values(base, (n,) + shape)
    return a


def write_dtypes(out):
    for libver, name in ((None, "dtypes.h5"), ("latest", "dtypes_latest.h5")):
        with new_file(out, name, libver=libver) as f:
            for t in NUMERIC:
                f.create_dataset(t, data=values(t, (3, 4)))
            for t in BIG_ENDIAN:
                f.create_dataset("be_" + t.strip(">"), data=values(t, (3, 4)))
            f.create_dataset("bool", data=values("?", (3, 4)))
            f.create_dataset("compound", data=compound_values(COMPOUND, 6))
            f.create_dataset("compound_aligned", data=compound_values(COMPOUND_ALIGNED, 5))
            f.create_dataset("fixed_string", data=np.array([b"one", b"two", b"three"], "S5"))
            f.create_dataset("enum_i1", data=np.array([0, 1, 2, 1], "i1"),
                             dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))
        record(name, h5py_writer(), "hdf5",
               [f"libver {libver or 'default (earliest)'}",
                "dtypes " + " ".join(NUMERIC) + " (complex as h5py's compound r/i)",
                "big-endian " + " ".join(BIG_ENDIAN),
                "bool (h5py's enum FALSE/TRUE of i1)", "compound struct (packed, with S3)",
                "compound aligned with padding and a (3,) subarray member",
                "fixed-length string dataset S5", "enum of i1 (not bool)"])


def write_ranks(out):
    with new_file(out, "ranks.h5") as f:
        f.create_dataset("scalar_f8", data=np.float64(2.5))
        f.create_dataset("scalar_i4", data=np.int32(-7))
        shapes = [(5,), (3, 4), (2, 3, 4), (2, 3, 2, 3), (2, 1, 3, 2, 2)]
        for shape in shapes:
            f.create_dataset(f"rank{len(shape)}", data=values("f4", shape))
            f.create_dataset(f"rank{len(shape)}_chunked", data=values("i2", shape),
                             chunks=tuple(max(1, s // 2) for s in shape))
        f.create_dataset("empty_0", shape=(0,), dtype="f8")
        f.create_dataset("empty_3x0", shape=(3, 0), dtype="i4")
        f.create_dataset("empty_2x0x4", data=np.zeros((2, 0, 4), "u2"))
        f.create_dataset("empty_chunked", shape=(0, 3), dtype="f4", maxshape=(None, 3), chunks=(4, 3))
        f.create_dataset("null_space", data=h5py.Empty("f4"))
    record("ranks.h5", h5py_writer(), "hdf5",
           ["0-D scalars f8 and i4", "ranks 1 to 5, contiguous and chunked (partial edge chunks)",
            "empty: (0,), (3, 0), (2, 0, 4), chunked (0, 3) unlimited",
            "null dataspace (h5py.Empty): h5py reads it as an Empty, not an array"],
           refuse={"null_space": "null dataspace (no shape): h5py gives h5py.Empty"})


# ---------------------------------------------------------------- h5py: layouts and chunk indexes

def dcpl_with(layout=None, chunks=None, alloc_early=False):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if layout is not None:
        dcpl.set_layout(layout)
    if chunks is not None:
        dcpl.set_chunk(chunks)
    if alloc_early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    return dcpl


def write_layouts(out):
    for libver in ("earliest", "latest"):
        name = f"layouts_{libver}.h5"
        with new_file(out, name, libver=libver) as f:
            f.create_dataset("contiguous", data=values("f8", (20, 30)))
            f.create_dataset("compact", data=values("i4", (4, 5)),
                             dcpl=dcpl_with(layout=h5py.h5d.COMPACT))
            f.create_dataset("contiguous_unwritten", shape=(6, 7), dtype="i4", fillvalue=-3)
            f.create_dataset("gzip_shuffle", data=values("f4", (40, 50)), chunks=(16, 16),
                             compression="gzip", compression_opts=4, shuffle=True)
            f.create_dataset("gzip_only", data=values("i8", (33,)), chunks=(10,),
                             compression="gzip", compression_opts=9)
            f.create_dataset("shuffle_only", data=values("u2", (9, 9)), chunks=(4, 4), shuffle=True)
            f.create_dataset("fletcher32", data=values("i4", (30, 20)), chunks=(8, 8), fletcher32=True)
            f.create_dataset("gzip_shuffle_fletcher32", data=values("f8", (25, 25)), chunks=(10, 10),
                             compression="gzip", shuffle=True, fletcher32=True)
            # One chunk covering the whole dataset (latest: the single-chunk index).
            f.create_dataset("single_chunk", data=values("f4", (12, 12)), chunks=(12, 12))
            f.create_dataset("single_chunk_gzip", data=values("f4", (12, 12)), chunks=(12, 12),
                             compression="gzip")
            # Fixed dims, several chunks (latest: fixed array; earliest: B-tree v1).
            f.create_dataset("fixed_array", data=values("i2", (50, 40)), chunks=(7, 9))
            f.create_dataset("fixed_array_gzip", data=values("i2", (50, 40)), chunks=(7, 9),
                             compression="gzip", shuffle=True)
            # Many chunks: the fixed array pages (more than 1024 entries) and a deep B-tree v1.
            f.create_dataset("many_chunks", data=values("u1", (60, 60)), chunks=(1, 2))
            # One unlimited dim (latest: extensible array).
            d = f.create_dataset("extensible_array", shape=(0, 6), maxshape=(None, 6),
                                 chunks=(3, 6), dtype="f8")
            for k in range(7):
                d.resize(d.shape[0] + 4, axis=0)
                d[-4:] = values("f8", (4, 6))
            d = f.create_dataset("extensible_array_gzip", shape=(0,), maxshape=(None,),
                                 chunks=(5,), dtype="i4", compression="gzip")
            d.resize((200,))
            d[:] = values("i4", (200,))
            # Two unlimited dims (latest: B-tree v2).
            d = f.create_dataset("btree_v2", shape=(10, 10), maxshape=(None, None),
                                 chunks=(4, 3), dtype="i4", fillvalue=0)
            d[...] = values("i4", (10, 10))
            d.resize((13, 11))
            d[10:, :] = values("i4", (3, 11))
            d = f.create_dataset("btree_v2_gzip", data=values("f4", (20, 20)),
                                 maxshape=(None, None), chunks=(6, 6), compression="gzip")
            # Early allocation, no filter, fixed dims (latest: the implicit index).
            d = f.create_dataset("implicit", shape=(10, 12), dtype="u4", fillvalue=7,
                                 dcpl=dcpl_with(chunks=(4, 5), alloc_early=True))
            d[:4, :5] = values("u4", (4, 5))
            # Chunks never written: the reader gives the fill value there.
            d = f.create_dataset("unallocated_chunks", shape=(20, 20), chunks=(5, 5),
                                 dtype="f4", fillvalue=np.float32(-1.25))
            d[5:10, 10:15] = values("f4", (5, 5))
            f.create_dataset("never_written_chunked", shape=(8, 8), chunks=(4, 4),
                             dtype="i2", fillvalue=42)
            d = f.create_dataset("unallocated_gzip", shape=(30,), chunks=(10,), dtype="i8",
                                 fillvalue=-9, compression="gzip")
            d[10:20] = np.arange(10)
            f.create_dataset("fillvalue_default_zero", shape=(5,), chunks=(2,), dtype="f8")
        record(name, h5py_writer(), "hdf5",
               [f"libver {libver}",
                "contiguous (written and never written, fill value -3)", "compact (2-D)",
                "chunked gzip+shuffle, gzip alone, shuffle alone, fletcher32, gzip+shuffle+fletcher32",
                "chunk index: " + ("B-tree v1 for every chunked dataset" if libver == "earliest" else
                                   "single chunk (single_chunk*), fixed array (fixed_array*, "
                                   "many_chunks: paged), extensible array (extensible_array*), "
                                   "B-tree v2 (btree_v2*), implicit (implicit)"),
                "unallocated chunks with fill values (unallocated_*, never_written_chunked)",
                "partial edge chunks, resized datasets"])


def set_istore_k(fcpl, k):
    """H5Pset_istore_k through ctypes, on the libhdf5 h5py loaded (h5py does not wrap it)."""
    import ctypes
    import glob
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*"))
    lib = ctypes.CDLL(libs[0]) if libs else ctypes.CDLL(h5py.h5.__file__)
    lib.H5Pset_istore_k.argtypes = [ctypes.c_int64, ctypes.c_uint]
    if lib.H5Pset_istore_k(fcpl.id, k) < 0:
        raise SystemExit("H5Pset_istore_k failed")


def write_superblocks(out):
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    for version, name in ((0, "superblock_v0.h5"), (1, "superblock_v1.h5")):
        fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
        if version == 1:
            set_istore_k(fcpl, 64)  # h5py does not wrap H5Pset_istore_k
        fid = h5py.h5f.create(os.path.join(out, name).encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
        with h5py.File(fid) as f:
            f.attrs["superblock"] = version
            f.create_dataset("data", data=values("f8", (4, 5)))
            f.create_dataset("chunked", data=values("i4", (30, 30)), chunks=(5, 5), compression="gzip")
            g = f.create_group("g")
            for k in range(12):
                g.create_dataset(f"d{k:02d}", data=np.arange(k, k + 3, dtype="i2"))
    for version, libver, name in ((2, "v108", "superblock_v2.h5"), (3, "latest", "superblock_v3.h5")):
        with new_file(out, name, libver=(libver, libver if libver != "latest" else "latest")) as f:
            f.attrs["superblock"] = version
            f.create_dataset("data", data=values("f8", (4, 5)))
            f.create_dataset("chunked", data=values("i4", (30, 30)), chunks=(5, 5), compression="gzip")
            g = f.create_group("g")
            for k in range(12):
                g.create_dataset(f"d{k:02d}", data=np.arange(k, k + 3, dtype="i2"))
    for version in range(4):
        name = f"superblock_v{version}.h5"
        with open(os.path.join(out, name), "rb") as fh:
            actual = fh.read(9)[8]
        if actual != version:
            raise SystemExit(f"{name}: superblock version {actual}, not {version}")
        record(name, h5py_writer(), "hdf5",
               [f"superblock version {version}" +
                (" (non-default istore_k 64)" if version == 1 else ""),
                "a contiguous and a gzip B-tree/index chunked dataset, a group of 12 datasets"])


# ---------------------------------------------------------------- h5py: groups, attributes, links

def attrs_of_every_kind(obj, prefix=""):
    a = obj.attrs
    a[prefix + "int_scalar"] = np.int64(-42)
    a[prefix + "u8_scalar"] = np.uint8(200)
    a[prefix + "float_scalar"] = 3.25
    a[prefix + "f4_array"] = np.array([1.5, -2.0, np.nan], "f4")
    a[prefix + "i2_2d"] = np.arange(6, dtype="i2").reshape(2, 3)
    a[prefix + "bool"] = np.bool_(True)
    a[prefix + "complex"] = np.complex128(1 - 2j)
    a[prefix + "fixed_string"] = np.bytes_(b"fixed")
    a[prefix + "fixed_string_array"] = np.array([b"ab", b"cde"], "S3")
    a[prefix + "vlen_string"] = "variable length é"
    a[prefix + "vlen_string_array"] = ["a", "bb", "ccc"]
    a.create(prefix + "empty", h5py.Empty("f8"))


def write_groups(out):
    with new_file(out, "groups_earliest.h5", libver="earliest") as f:
        attrs_of_every_kind(f)
        g = f.create_group("a/b/c")
        attrs_of_every_kind(g)
        d = g.create_dataset("data", data=values("f4", (3, 3)))
        attrs_of_every_kind(d)
        for k in range(40):
            d.attrs[f"extra_{k:02d}"] = k
        big = f.create_group("big")
        for k in range(30):
            big.create_dataset(f"d{k:02d}", data=np.full((2,), k, "i4"))
        f["hard_link"] = g["data"]
        f["soft_link"] = h5py.SoftLink("/a/b/c/data")
        f["soft_group"] = h5py.SoftLink("/a/b")
    record("groups_earliest.h5", h5py_writer(), "hdf5",
           ["symbol-table groups (v1 object headers), nested a/b/c",
            "a group of 30 datasets (symbol table B-tree with several nodes)",
            "attributes of every kind on the file, a group and a dataset (int, uint, float, "
            "float array with NaN, 2-D, bool, complex, fixed string, fixed string array, "
            "vlen string, vlen string array, empty)", "52 attributes on one dataset",
            "hard link /hard_link and soft links /soft_link, /soft_group"])

    with new_file(out, "groups_latest.h5", libver="latest") as f:
        attrs_of_every_kind(f)
        compact = f.create_group("compact")
        for k in range(5):
            compact.create_dataset(f"d{k}", data=np.arange(3, dtype="i4") + k)
        dense = f.create_group("dense")
        for k in range(40):
            dense.create_dataset(f"d{k:02d}", data=np.arange(2, dtype="f8") * k)
        dense.create_group("sub").create_dataset("leaf", data=values("u2", (2, 2)))
        ordered = f.create_group("ordered", track_order=True)
        for k in range(12):
            ordered.create_dataset(f"z{11 - k:02d}", data=np.int8(k))
        d = f.create_dataset("many_attrs", data=values("f8", (4,)))
        attrs_of_every_kind(d)
        for k in range(60):
            d.attrs[f"attr_{k:02d}"] = np.arange(k % 5 + 1, dtype="i4")
        attrs_of_every_kind(dense, prefix="g_")
        f["hard_link"] = dense["d07"]
        f["soft_link"] = h5py.SoftLink("/dense/sub/leaf")
    record("groups_latest.h5", h5py_writer(), "hdf5",
           ["link-message groups (v2 object headers): compact (5 links) and dense "
            "(41 links: fractal heap + B-tree v2 name index), a group with creation order "
            "tracked (track_order)",
            "dense attribute storage (72 attributes on one dataset)",
            "attributes of every kind on the file, a dense group and a dataset",
            "hard link and soft link"])

    with new_file(out, "links_cycle.h5", libver="latest") as f:
        g = f.create_group("loop")
        g.create_dataset("x", data=np.arange(4, dtype="i4"))
        g["back_to_root"] = f["/"]
        g["self"] = g
        f["dangling"] = h5py.SoftLink("/nowhere")
    record("links_cycle.h5", h5py_writer(), "hdf5",
           ["hard links that make cycles (/loop/back_to_root -> /, /loop/self -> /loop): "
            "a walker must stop", "a dangling soft link"])


# ---------------------------------------------------------------- h5py: refused cases

def write_refused(out):
    def one(name, covers, reason, make):
        with new_file(out, name) as f:
            f.create_dataset("ok", data=np.arange(5, dtype="i4"))
            make(f)
        record(name, h5py_writer(), "hdf5", covers + ["/ok: a plain dataset beside it"],
               refuse={"refused": reason})

    one("refused_vlen_string.h5", ["variable-length string dataset"], "variable-length strings",
        lambda f: f.create_dataset("refused", data=np.array(["a", "bcd", ""], object),
                                   dtype=h5py.string_dtype()))
    one("refused_vlen_int.h5", ["variable-length sequence dataset (vlen of i4)"], "variable-length sequences",
        lambda f: f.create_dataset("refused", data=np.array([np.arange(2), np.arange(3)], object),
                                   dtype=h5py.vlen_dtype("i4")))

    def refs(f):
        f.create_dataset("refused", data=np.array([f["ok"].ref, f.ref], object), dtype=h5py.ref_dtype)
    one("refused_object_ref.h5", ["object reference dataset"], "object references", refs)

    def region(f):
        f.create_dataset("refused", data=np.array([f["ok"].regionref[1:3]], object),
                         dtype=h5py.regionref_dtype)
    one("refused_region_ref.h5", ["region reference dataset"], "region references", region)

    def virtual(f):
        for k in range(3):
            f.create_dataset(f"src{k}", data=np.full((4,), k + 1, "i4"))
        layout = h5py.VirtualLayout(shape=(3, 4), dtype="i4")
        for k in range(3):
            layout[k] = h5py.VirtualSource(".", f"src{k}", shape=(4,))
        f.create_virtual_dataset("refused", layout, fillvalue=-1)
    one("refused_virtual.h5", ["virtual dataset (sources in the same file)"], "virtual dataset", virtual)

    def external(f):
        raw = np.arange(12, dtype="<i4")
        with open(os.path.join(out, "refused_external.bin"), "wb") as fh:
            fh.write(raw.tobytes())
        f.create_dataset("refused", shape=(12,), dtype="<i4",
                         external=[("refused_external.bin", 0, raw.nbytes)])
    one("refused_external.h5", ["external dataset (refused_external.bin beside it)"], "external storage",
        external)

    one("refused_lzf.h5", ["lzf filter (32000)"], "filter lzf (32000)",
        lambda f: f.create_dataset("refused", data=values("f4", (20, 20)), chunks=(10, 10),
                                   compression="lzf"))
    one("refused_scaleoffset.h5", ["scaleoffset filter (6), integer and float"], "filter scaleoffset (6)",
        lambda f: (f.create_dataset("refused", data=np.arange(100, dtype="i4"), chunks=(10,),
                                    scaleoffset=0),
                   f.create_dataset("refused_float", data=np.linspace(0, 1, 50), chunks=(10,),
                                    scaleoffset=3)))
    MANIFEST[-1]["refuse"]["refused_float"] = "filter scaleoffset (6)"

    def nbit(f):
        # HDF5 2.0 refuses to create a dataset of a reduced-precision type ("unusual
        # datatype"), so the type is a full i4: the pipeline still names nbit.
        tid = h5py.h5t.STD_I32LE.copy()
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0, ())
        space = h5py.h5s.create_simple((40,))
        dsid = h5py.h5d.create(f.id, b"refused", tid, space, dcpl=dcpl)
        data = (np.arange(40, dtype="<i4") * 37) % 2000 - 1000
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data.astype("<i4"))
    one("refused_nbit.h5", ["nbit filter (5) on a full-precision i4"], "filter nbit (5)", nbit)
    one("refused_szip.h5", ["szip filter (4)"], "filter szip (4)",
        lambda f: f.create_dataset("refused", data=np.arange(400, dtype="i4"), chunks=(100,),
                                   compression="szip"))


# ---------------------------------------------------------------- NetCDF

def write_netcdf(out):
    import netCDF4
    import xarray as xr
    import pandas as pd

    nc_writer = f"netCDF4-python {netCDF4.__version__} (netCDF-C {netCDF4.__netcdf4libversion__}, " \
                f"HDF5 {netCDF4.__hdf5libversion__})"
    for fmt, name in (("NETCDF4", "nc4_netcdf4.nc"), ("NETCDF4_CLASSIC", "nc4_classic.nc"),
                      ("NETCDF3_64BIT_DATA", "nc3_cdf5.nc")):
        with netCDF4.Dataset(os.path.join(out, name), "w", format=fmt) as ds:
            ds.title = "rastore corpus"
            ds.history = "made by tests/corpus/hdf5.py"
            ds.version = np.int32(3)
            ds.createDimension("time", None)
            ds.createDimension("lat", 4)
            ds.createDimension("lon", 5)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01 00:00:00"
            t.calendar = "standard"
            t.standard_name = "time"
            lat = ds.createVariable("lat", "f4", ("lat",))
            lat.units = "degrees_north"
            lon = ds.createVariable("lon", "f4", ("lon",))
            lon.units = "degrees_east"
            kw = {} if fmt.startswith("NETCDF3") else {"zlib": True, "complevel": 4, "shuffle": True}
            temp = ds.createVariable("temp", "f4", ("time", "lat", "lon"), fill_value=np.float32(-999.0), **kw)
            temp.units = "K"
            temp.long_name = "air temperature"
            temp.valid_range = np.array([150, 350], "f4")
            count = ds.createVariable("count", "i2", ("lat", "lon"), fill_value=np.int16(-1))
            count.scale_factor = 0.5
            count.add_offset = 10.0
            flag = ds.createVariable("flag", "i1", ("time",))
            scalar = ds.createVariable("scalar", "f8", ())
            lat[:] = np.linspace(-45, 45, 4)
            lon[:] = np.linspace(0, 288, 5)
            t[:] = np.arange(6) * 0.5
            data = values("f4", (6, 4, 5))
            data[np.isnan(data) | np.isinf(data)] = 1.0
            data[0, 0, 0] = np.float32(-999.0)
            temp[:] = np.ma.masked_equal(data, -999.0)
            count[:] = np.arange(20, dtype="i2").reshape(4, 5)
            count[0, 0] = np.ma.masked
            flag[:] = np.array([0, 1, 0, 1, 1, 0], "i1")
            scalar.assignValue(273.15)
            if fmt == "NETCDF4":
                g = ds.createGroup("forecast")
                g.createDimension("step", 3)
                v = g.createVariable("lead", "i4", ("step",))
                v[:] = [6, 12, 18]
                s = ds.createVariable("names", str, ("lat",))
                s[:] = np.array(["a", "bb", "ccc", "dddd"], object)
                u = ds.createVariable("u8", "u8", ("lon",))
                u[:] = np.arange(5, dtype="u8") * (2 ** 40)
        kind = "netcdf3" if fmt.startswith("NETCDF3") else "netcdf4"
        refuse = {"names": "variable-length strings (NC_STRING)"} if fmt == "NETCDF4" else {}
        record(name, nc_writer, kind,
               [f"format {fmt}", "dims time (unlimited), lat, lon; coordinate variables",
                "time with CF units and calendar", "fill values (_FillValue on temp and count)",
                "scale_factor/add_offset attributes", "global and variable attributes"]
               + ([] if fmt.startswith("NETCDF3") else ["zlib+shuffle compression"])
               + (["a subgroup with its own dimension", "an NC_STRING variable", "a u8 variable"]
                  if fmt == "NETCDF4" else [])
               + (["CDF-5 (64-bit data), record dimension"] if fmt.startswith("NETCDF3") else []),
               refuse=refuse)

    import h5netcdf
    with h5netcdf.File(os.path.join(out, "nc4_h5netcdf.nc"), "w") as ds:
        ds.attrs["title"] = "h5netcdf file"
        ds.dimensions = {"x": 4, "y": 3, "t": None}
        x = ds.create_variable("x", ("x",), "f8")
        x[:] = np.arange(4) * 1.5
        x.attrs["units"] = "m"
        v = ds.create_variable("v", ("t", "y", "x"), "i4", chunks=(1, 3, 4), compression="gzip",
                               fillvalue=np.int32(-99))
        ds.resize_dimension("t", 3)
        v[...] = np.arange(36, dtype="i4").reshape(3, 3, 4)
        v.attrs["long_name"] = "counts"
        g = ds.create_group("sub")
        g.dimensions = {"z": 2}
        z = g.create_variable("z", ("z",), "f4")
        z[:] = [1.0, 2.0]
        w = g.create_variable("w", ("z", "x"), "f8")
        w[...] = values("f8", (2, 4))
    record("nc4_h5netcdf.nc", f"h5netcdf {h5netcdf.__version__} ({h5py_writer()})", "netcdf4",
           ["dims x, y, t (unlimited, resized to 3); coordinate variable x",
            "gzip chunked variable with a fill value", "a subgroup with its own dimension z, "
            "and a variable using the parent's dimension x", "global and variable attributes"])

    times = pd.date_range("2001-02-03", periods=5, freq="6h")
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), values("f4", (5, 3, 4))),
         "mask": (("lat", "lon"), values("?", (3, 4)).astype("i1")),
         "flux": (("time",), np.array([1.0, np.nan, 3.0, 4.5, -2.0]))},
        coords={"time": times, "lat": np.array([-10.0, 0.0, 10.0], "f4"),
                "lon": np.arange(4, dtype="f8") * 90, "station": ("lat", np.array([101, 102, 103], "i4"))},
        attrs={"title": "xarray corpus", "source": "tests/corpus/hdf5.py", "answer": 42})
    ds["temp"].attrs = {"units": "K", "long_name": "temperature"}
    ds["flux"].attrs = {"units": "W m-2"}
    for engine in ("netcdf4", "h5netcdf"):
        name = f"nc4_xarray_{engine}.nc"
        enc = {"temp": {"zlib": True, "complevel": 3, "_FillValue": np.float32(-9999.0), "chunksizes": (2, 3, 4)},
               "time": {"units": "hours since 2001-01-01", "calendar": "proleptic_gregorian"}}
        ds.to_netcdf(os.path.join(out, name), engine=engine, unlimited_dims=["time"], encoding=enc)
        record(name, f"xarray {xr.__version__} to_netcdf engine={engine}", "netcdf4",
               ["dims time (unlimited), lat, lon; coordinates lat, lon and non-dimension coordinate station",
                "a datetime64 time coordinate encoded with CF units 'hours since 2001-01-01'",
                "zlib-compressed chunked temp with _FillValue -9999", "NaN _FillValue on flux",
                "global and variable attributes"])

    from scipy.io import netcdf_file
    import scipy
    for version, name in ((1, "nc3_cdf1.nc"), (2, "nc3_cdf2.nc")):
        with netcdf_file(os.path.join(out, name), "w", version=version) as f:
            f.title = b"scipy netcdf"
            f.createDimension("time", None)
            f.createDimension("x", 3)
            # Fixed variables first: scipy places a fixed variable defined after a
            # record variable inside the first record (a file netCDF-C refuses).
            c = f.createVariable("c", "f4", ("x",))
            c[:] = [0.25, 0.5, 0.75]
            t = f.createVariable("time", "f8", ("time",))
            t.units = b"seconds since 1970-01-01"
            v = f.createVariable("v", "i2", ("time", "x"))
            v.long_name = b"values"
            v._FillValue = np.int16(-1)
            rec2 = f.createVariable("w", "f4", ("time",))
            t[:4] = np.arange(4) * 10.0
            v[:4] = np.arange(12, dtype="i2").reshape(4, 3)
            rec2[:4] = [1.5, 2.5, 3.5, 4.5]
        record(name, f"scipy {scipy.__version__} netcdf_file version={version}", "netcdf3",
               [f"CDF-{version}" + (" (64-bit offset)" if version == 2 else " (classic)"),
                "record dimension time with 4 records, three record variables (f8, i2[x], f4)",
                "a fixed variable (f4[x]), global and variable attributes"])


# ---------------------------------------------------------------- MATLAB v7.3

def write_mat(out):
    import hdf5storage
    writer = f"hdf5storage {hdf5storage.__version__} ({h5py_writer()})"
    mdict = {
        "A": np.arange(12.0).reshape(3, 4),
        "Z": (np.arange(6) + 1j * np.arange(6)[::-1]).reshape(2, 3),
        "I": np.arange(-6, 6, dtype="int16").reshape(4, 3),
        "U": np.arange(5, dtype="uint8").reshape(1, 5),
        "L": np.array([[True, False, True], [False, False, True]]),
        "F": np.float32([[1.5, -2.5]]),
        "s": np.float64(3.0),
        "name": "hello",
        "S": {"alpha": np.float64(1.0), "beta": np.arange(4.0).reshape(2, 2), "gamma": np.int32([[7, 8]])},
    }
    hdf5storage.savemat(os.path.join(out, "mat73.mat"), mdict, format="7.3",
                        store_python_metadata=False)
    record("mat73.mat", writer, "mat73",
           ["MATLAB v7.3 (512-byte user block before the superblock)", "real double A 3x4, single F",
            "complex Z (compound real/imag)", "int16 I, uint8 U", "logical L (uint8 with "
            "MATLAB_class logical)", "scalar s", "char name (uint16)", "struct S (a group of fields)",
            "MATLAB_class attributes; data stored transposed (MATLAB column-major)"])
    hdf5storage.savemat(os.path.join(out, "mat73_cell.mat"),
                        {"C": np.array([np.arange(3.0), "text"], dtype=object)}, format="7.3",
                        store_python_metadata=False)
    record("mat73_cell.mat", writer, "mat73",
           ["MATLAB v7.3 cell array: a dataset of object references into #refs#"],
           refuse={"C": "object references (a MATLAB cell array)"})


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(out)  # h5py resolves external storage against the working directory
    try:
        out = "."
        write_dtypes(out)
        write_ranks(out)
        write_layouts(out)
        write_superblocks(out)
        write_groups(out)
        write_refused(out)
        write_netcdf(out)
        write_mat(out)
    finally:
        os.chdir(cwd)
    out = sys.argv[1]
    total = 0
    for entry in MANIFEST:
        size = os.path.getsize(os.path.join(out, entry["file"]))
        entry["bytes"] = size
        total += size
    with open(os.path.join(out, "MANIFEST.json"), "w") as fh:
        json.dump({"files": MANIFEST, "total_bytes": total}, fh, indent=1)
    print(f"{len(MANIFEST)} files, {total} bytes in {out}")


if __name__ == "__main__":
    main()
