"""h5py judges what `ra` made of an HDF5 file (tests/integration/hdf5.rs).

    python3 hdf5_judge.py corpus OUTDIR        # tests/corpus/hdf5.py's files
    python3 hdf5_judge.py datasets FILE        # JSON: every dataset h5py visits
    python3 hdf5_judge.py judge FILE FOLDER    # every FOLDER/PATH.ra against FILE's PATH
    python3 hdf5_judge.py npy FILE PATH NPY    # one .npy against FILE's PATH
    python3 hdf5_judge.py make OUTDIR          # small files the tests name
    python3 hdf5_judge.py refs FILE PATH REFS  # kerchunk references, read by zarr
    python3 hdf5_judge.py xarray NC FOLDER     # xr.identical of the two

`judge` reads each `.ra` with NumPy alone (FORMAT.md: a 48-byte header of u64s, the
dims, the data column-major) and compares it with h5py's values: exact, NaN where
NaN, byte order normalised; complex as complex (h5py's r/i, MATLAB's real/imag),
structured types by their bytes. A MATLAB v7.3 variable is h5py's array transposed
(MATLAB's shape). It prints {"checked": [...], "missing": [...]} and exits 1 on the
first difference.
"""

import json
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def read_ra(path):
    """(array, trailer bytes) of a plain little-endian `.ra`."""
    with open(path, "rb") as f:
        raw = f.read()
    head = np.frombuffer(raw[:48], "<u8")
    assert raw[:8] == b"rawarray", path
    flags, eltype, elbyte, size, ndims = (int(x) for x in head[1:6])
    assert flags == 0, (path, flags)
    dims = [int(d) for d in np.frombuffer(raw[48:48 + 8 * ndims], "<u8")]
    start = 48 + 8 * ndims
    data = raw[start:start + size]
    trailer = raw[start + size:]
    kinds = {1: "i", 2: "u", 3: "f", 4: "c"}
    if eltype == 5 and elbyte == 1:
        dt = np.dtype("?")
    elif eltype in kinds:
        dt = np.dtype(f"<{kinds[eltype]}{elbyte}")
    else:
        dt = np.dtype(f"V{elbyte}")
    return np.frombuffer(data, dt).reshape(dims, order="F"), trailer


def expected(ds, matlab):
    """h5py's values of `ds` as rastore should give them."""
    a = ds[()]
    a = np.asarray(a)
    if a.dtype.names == ("real", "imag"):
        a = a["real"] + 1j * a["imag"]
    if a.dtype.kind in "iufcb":
        a = a.astype(a.dtype.newbyteorder("="))
    if matlab:
        a = a.T
        cls = ds.attrs.get("MATLAB_class")
        if cls == b"logical":
            a = a.astype(bool)
        if cls == b"char":
            # Text, as scipy.io.loadmat gives it: the last axis made strings.
            lead = a.shape[:-1]
            text = [bytes(a[k].astype("<u2")).decode("utf-16-le") for k in np.ndindex(lead)]
            width = max([len(t) for t in text] + [1])
            a = np.array(text, dtype=f"<U{width}").reshape(lead)
    return a


def equal(got, want):
    if got.shape != want.shape:
        return f"shape {got.shape} != h5py's {want.shape}"
    if want.dtype.kind in "iufcb":
        if got.dtype != want.dtype:
            return f"dtype {got.dtype} != h5py's {want.dtype}"
        if want.dtype.kind in "fc":
            ok = np.array_equal(got, want, equal_nan=True)
        else:
            ok = np.array_equal(got, want)
        return None if ok else "values differ"
    # Structured and byte types: the same bytes, element by element.
    w = np.ascontiguousarray(want).view(np.uint8).reshape(want.shape + (-1,))
    g = np.ascontiguousarray(got).view(np.uint8).reshape(got.shape + (-1,))
    if w.shape != g.shape:
        return f"element bytes {g.shape} != h5py's {w.shape}"
    return None if np.array_equal(w, g) else "bytes differ"


def visited(path):
    names = []
    with h5py.File(path, "r") as f:
        def each(name, obj):
            if isinstance(obj, h5py.Dataset):
                names.append(name)
        f.visititems(each)
    return names


def matlab_file(path):
    with open(path, "rb") as f:
        return f.read(19) == b"MATLAB 7.3 MAT-file"


def judge(path, folder):
    matlab = matlab_file(path)
    checked, missing = [], []
    with h5py.File(path, "r") as f:
        for name in visited(path):
            ra = os.path.join(folder, name + ".ra")
            if not os.path.exists(ra):
                missing.append(name)
                continue
            got, _ = read_ra(ra)
            bad = equal(got, expected(f[name], matlab))
            if bad:
                print(f"{path}/{name}: {bad}", file=sys.stderr)
                sys.exit(1)
            checked.append(name)
    print(json.dumps({"checked": checked, "missing": missing}))


def npy(path, name, npy_path):
    with h5py.File(path, "r") as f:
        want = expected(f[name], matlab_file(path))
    got = np.load(npy_path)
    if got.dtype.kind in "iufcb":
        got = got.astype(got.dtype.newbyteorder("="))
    bad = equal(got, want)
    if bad:
        print(f"{path}/{name}: {bad}", file=sys.stderr)
        sys.exit(1)
    print("ok")


def refs(path, name, refs_path):
    """The references `ra refs` wrote, read by fsspec and zarr-python (Zarr v2, the
    dataset's own chunks and filters), equal h5py's values."""
    import fsspec
    import zarr

    with open(refs_path) as fh:
        fo = json.load(fh)
    store = fsspec.filesystem("reference", fo=fo).get_mapper("")
    a = zarr.open_group(store, mode="r", zarr_format=2)[name.split("/")[-1]]
    with h5py.File(path, "r") as f:
        want = f[name][()]
        chunks = f[name].chunks
    assert a.chunks == chunks, (a.chunks, chunks)
    got = a[...]
    if not np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"):
        sys.exit(f"{path}/{name}: the references read other values")
    print("ok", len([v for v in fo["refs"].values() if isinstance(v, list)]))


def xarray_identical(nc, folder):
    """xr.open_dataset of the folder (engine rastore) is xr.identical to the file's,
    times decoded; so is xr.open_zarr of a .zarr."""
    import xarray as xr

    want = xr.open_dataset(nc)
    if folder.endswith(".zarr"):
        got = xr.open_zarr(folder)
    else:
        got = xr.open_dataset(folder, engine="rastore")
    if not want.identical(got):
        sys.exit(f"{nc}: not identical\n{want}\n{got}")
    print("identical", sorted(want.variables))


def make(out):
    """Small files the tests name: a tree with attributes, and datasets of every layout
    for slicing."""
    rng = np.random.default_rng(7)
    with h5py.File(os.path.join(out, "tree.h5"), "w") as f:
        f.attrs["title"] = "issue 39"
        f.attrs["version"] = np.int32(3)
        f.attrs["scales"] = np.array([0.5, 2.0, np.nan])
        g = f.create_group("grp")
        g.attrs["units"] = "K"
        g.attrs["flags"] = np.array([[1, 2], [3, 4]], dtype="u2")
        d = g.create_dataset("temp", data=rng.normal(size=(3, 4, 5)).astype("f4"))
        d.attrs["long_name"] = "temperature"
        d.attrs["valid_range"] = np.array([-5.0, 5.0])
        d.attrs["bytes"] = np.bytes_(b"fixed")
        g.create_group("sub").create_dataset("count", data=np.arange(6, dtype=">i4").reshape(2, 3))
        f.create_dataset("chunked", data=rng.integers(0, 1000, (37, 23), dtype="u2"),
                         chunks=(8, 5), compression="gzip", shuffle=True)
        f.create_dataset("flag", data=np.array([True, False, True]))
        f.create_dataset("z", data=(rng.normal(size=(4, 2)) + 1j).astype("c8"))
    with h5py.File(os.path.join(out, "slices.h5"), "w", libver="latest") as f:
        a = rng.normal(size=(13, 7, 5)).astype("f8")
        f.create_dataset("contiguous", data=a)
        f.create_dataset("chunked", data=a, chunks=(4, 3, 2), compression="gzip",
                         shuffle=True, fletcher32=True)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        small = np.ascontiguousarray(a[:2, :3, :2])
        space = h5py.h5s.create_simple(small.shape)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.IEEE_F64LE, space, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, small)
        f.create_dataset("big", data=a.astype(">f4"))
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("five", data=np.arange(2 * 3 * 2 * 2 * 3, dtype="i2").reshape(2, 3, 2, 2, 3),
                         chunks=(1, 2, 2, 1, 3))
    print("ok")


def main():
    cmd = sys.argv[1]
    if cmd == "corpus":
        sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
        import hdf5 as corpus  # noqa: E402
        sys.argv = ["hdf5.py", sys.argv[2]]
        corpus.main()
    elif cmd == "datasets":
        print(json.dumps(visited(sys.argv[2])))
    elif cmd == "judge":
        judge(sys.argv[2], sys.argv[3])
    elif cmd == "npy":
        npy(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "make":
        make(sys.argv[2])
    elif cmd == "refs":
        refs(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "xarray":
        xarray_identical(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
