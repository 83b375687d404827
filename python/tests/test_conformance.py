"""The reference files, read as the Rust tests read them: the manifest, and NumPy's own
view of the bytes (np.memmap at the data offset) as the judge."""
import hashlib

import numpy as np

import rastore


def manifest(d):
    rows = []
    for line in (d / "MANIFEST.md").read_text().splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 7 and c[0].endswith(".ra"):
            dims = [int(x) for x in c[2].strip("[]").split(",")]
            rows.append((c[0], c[1], dims, int(c[3]), int(c[4]), int(c[5]), c[6]))
    return rows


def test_every_file_agrees_with_the_manifest(conformance):
    rows = manifest(conformance)
    assert len(rows) == 16
    for name, dtype, dims, flags, size, trailer, md5 in rows:
        p = conformance / name
        assert hashlib.md5(p.read_bytes()).hexdigest() == md5, name
        i = rastore.info(p)
        assert (i["dtype"], i["dims"], i["bytes"], i["metadata_bytes"]) == (dtype, dims, size, trailer), name
        a = rastore.read(p)
        assert a.shape == tuple(dims) and a.dtype == np.dtype(dtype), name
        if flags == 0:
            judge = np.memmap(p, dtype=dtype, mode="r", offset=i["data_offset"], shape=tuple(dims), order="F")
            np.testing.assert_array_equal(a, judge)
            np.testing.assert_array_equal(rastore.open(p), judge)
        else:
            np.testing.assert_array_equal(a, rastore.read(conformance / name.replace("_z", "")))


def test_test_ra_holds_k_minus_i_over_k(conformance):
    a = rastore.open(conformance / "test.ra")
    k = np.arange(12, dtype=np.float32)
    with np.errstate(divide="ignore"):
        im = -1 / k
    got = a.reshape(-1, order="F")
    np.testing.assert_array_equal(got.real, k)
    np.testing.assert_array_equal(got.imag, im.astype(np.float32))
