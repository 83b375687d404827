"""Regression tests for what the newcomer's trial (issue 18) found in the Python package."""
import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import rastore

# NumPy's aligned struct: a u1, 3 bytes of padding, an <i4.
PADDED = np.dtype([("a", "u1"), ("b", "<i4")], align=True)


def _dirty_heap():
    """Fills freed heap memory with 0xab, so that memory NumPy allocates and leaves
    uninitialized (the padding of structured items it copies) holds 0xab, not zeros."""
    junk = [bytes([0xAB]) * 4096 for _ in range(4000)]
    del junk
    gc.collect()


def _padding(raw):
    return raw.view(np.uint8).reshape(-1, 8)[:, 1:4]


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_write_zeroes_the_padding_of_structured_items(tmp_path, layout):
    base = np.zeros((6, 40), PADDED)
    base["a"] = np.arange(240).reshape(6, 40) % 256
    base["b"] = np.arange(240).reshape(6, 40) * 1000
    base.view(np.uint8).reshape(-1, 8)[:, 1:4] = 0xCD  # the caller's own padding bytes
    _dirty_heap()
    a = {"C": base, "F": np.asfortranarray(base), "strided": base[::2, ::3]}[layout]
    p = tmp_path / "s.ra"
    rastore.write(p, a)
    raw = p.read_bytes()
    start = 48 + 8 * a.ndim
    data = np.frombuffer(raw[start : start + a.size * 8], np.uint8)
    assert not _padding(data).any(), "padding bytes reached the file"
    got = rastore.read(p)
    np.testing.assert_array_equal(got["a"], a["a"])
    np.testing.assert_array_equal(got["b"], a["b"])
    # The caller's array is left as it was.
    assert (base.view(np.uint8).reshape(-1, 8)[:, 1:4] == 0xCD).all()


def test_open_of_a_npy_is_np_loads_mapping_without_a_copy(tmp_path):
    rng = np.random.default_rng(3)
    cases = {
        "c": rng.standard_normal((5, 7)).astype(np.float32),
        "f": np.asfortranarray(rng.integers(0, 99, (4, 3, 2), dtype=np.int16)),
        "be": rng.standard_normal(9).astype(">f8"),
        "s": np.array([(1, 2.5), (3, -1.0)], dtype=[("i", "<i4"), ("x", "<f8")]),
        "0d": np.array(7, dtype=np.uint64),
    }
    for name, a in cases.items():
        p = tmp_path / f"{name}.npy"
        np.save(p, a)
        want = np.load(p, mmap_mode="r")
        m = rastore.MappedFile(p)
        got = m.array
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.strides == want.strides, name
        np.testing.assert_array_equal(got, want)
        start, length = m._data_range()
        assert start <= got.__array_interface__["data"][0] <= start + length, name
        assert not got.flags.writeable and not got.flags.owndata and got.base is m
        np.testing.assert_array_equal(rastore.open(p), a)
        assert rastore.info(p)["format"] == "npy"
        assert m.header["dims"] == list(a.shape)


def test_an_existing_output_names_the_python_option(tmp_path):
    p = tmp_path / "x.ra"
    rastore.create(p, "f4", 3)
    with pytest.raises(FileExistsError, match="overwrite=True") as e:
        rastore.create(p, "f4", 3)
    assert "--overwrite" not in str(e.value) and e.value.filename == str(p)
    np.save(tmp_path / "a.npy", np.ones(2))
    with pytest.raises(FileExistsError, match="overwrite=True"):
        rastore.convert(tmp_path / "a.npy", p)
    rastore.convert(tmp_path / "a.npy", p, overwrite=True)
    os.link(p, tmp_path / "other.ra")
    with pytest.raises(rastore.Error, match="split_links=True"):
        rastore.write(p, np.zeros(2))
    rastore.write(p, np.zeros(2), split_links=True)
    np.testing.assert_array_equal(rastore.read(tmp_path / "other.ra"), np.ones(2))


def test_file_not_found_carries_the_filename(tmp_path):
    p = tmp_path / "nope.ra"
    for call in (rastore.read, rastore.open, rastore.info):
        with pytest.raises(FileNotFoundError) as e:
            call(p)
        assert e.value.filename == str(p) and e.value.errno == 2


def test_a_mapped_file_pickles_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rastore.write("rel.ra", np.arange(6.0))
    m = rastore.MappedFile("rel.ra")
    assert m.path == "rel.ra"
    blob = pickle.dumps(m)
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    code = "import pickle, sys; m = pickle.loads(sys.stdin.buffer.read()); print(m.array.sum())"
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob, cwd=elsewhere, capture_output=True, check=True
    )
    assert out.stdout.strip() == b"15.0"


def test_read_returns_an_array_that_owns_its_memory(tmp_path):
    p = tmp_path / "r.ra"
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    rastore.write(p, a)
    rastore.write(tmp_path / "z.ra", a, compress=True)
    for f in (p, tmp_path / "z.ra"):
        got = rastore.read(f)
        assert got.flags.owndata and got.base is None and got.flags.writeable
        assert got.flags.f_contiguous
        np.testing.assert_array_equal(got, a)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="space reserved ahead on Linux")
def test_a_finished_appender_keeps_no_space_reserved(tmp_path):
    p = tmp_path / "grow.ra"
    with rastore.Appender(p, np.uint8, (2,)) as out:
        out.append(np.array([1, 2], np.uint8))
    st = os.stat(p)
    assert st.st_blocks * 512 <= -(-st.st_size // st.st_blksize) * st.st_blksize
