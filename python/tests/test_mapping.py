"""open, MappedFile, close and pickling: arrays over the mapping, never a copy."""
import gc
import pickle

import numpy as np
import pytest

import rastore


@pytest.fixture
def cube(tmp_path):
    p = tmp_path / "cube.ra"
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    rastore.write(p, a)
    return p, a


def test_open_takes_a_hint_of_how_the_mapping_will_be_used(cube, tmp_path):
    p, a = cube
    for advice in ["sequential", "random", "willneed", "normal"]:
        v = rastore.open(p, advice=advice)
        assert isinstance(v.base, rastore.MappedFile)
        np.testing.assert_array_equal(v, a)
    np.save(tmp_path / "c.npy", a)
    np.testing.assert_array_equal(rastore.open(tmp_path / "c.npy", advice="sequential"), a)
    with pytest.raises(rastore.Error, match='"sequential", "random" or "willneed", not "backwards"'):
        rastore.open(p, advice="backwards")


def test_open_is_a_read_only_fortran_view_over_the_mapping(cube):
    p, a = cube
    m = rastore.MappedFile(p)
    v = m.array
    start, length = m._data_range()
    address = v.__array_interface__["data"][0]
    assert start <= address < start + length
    assert v.shape == (2, 3, 4) and v.dtype == np.float32
    assert v.flags.f_contiguous and not v.flags.writeable and not v.flags.owndata
    assert v.base is m
    np.testing.assert_array_equal(v, a)
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0, 0] = 1


def test_open_keeps_its_mapping_alive_through_views(cube):
    p, a = cube
    v = rastore.open(p)[1, :, 2:]
    gc.collect()
    np.testing.assert_array_equal(v, a[1, :, 2:])
    assert isinstance(v.base.base, rastore.MappedFile)


def test_a_write_through_create_is_seen_by_a_later_open_without_copying(tmp_path):
    p = tmp_path / "c.ra"
    w = rastore.create(p, np.int16, (3, 5))
    assert w.flags.writeable and w.flags.f_contiguous and w.shape == (3, 5)
    w[2, 4] = 77
    w[:, 0] = [1, 2, 3]
    r = rastore.open(p)
    assert r[2, 4] == 77 and list(r[:, 0]) == [1, 2, 3]
    # Both arrays lie over mappings of the same file: a store now is seen by the reader.
    w[0, 1] = -5
    assert r[0, 1] == -5
    w.base.flush()
    assert rastore.read(p)[0, 1] == -5


def test_close_is_refused_while_an_array_lives_and_works_after_del(cube):
    p, _ = cube
    m = rastore.MappedFile(p)
    v = m.array
    s = v[1:]
    del v
    with pytest.raises(BufferError, match="1 array"):
        m.close()
    del s
    gc.collect()
    m.close()
    assert m.closed
    with pytest.raises(rastore.Error, match="closed"):
        m.array
    m.close()


def test_a_with_block_closes(cube):
    p, a = cube
    with rastore.MappedFile(p) as m:
        assert float(m.array.sum()) == float(a.sum())
    assert m.closed


def test_header_metadata_and_path(tmp_path):
    p = tmp_path / "h.ra"
    rastore.write(p, np.zeros((4, 2), np.complex64), metadata="---\nunits: m\n")
    m = rastore.MappedFile(p)
    h = m.header
    assert h["dtype"] == np.dtype(np.complex64)
    assert (h["eltype"], h["elbyte"], h["dims"], h["metadata_bytes"]) == (4, 8, [4, 2], 13)
    assert set(h) == set(rastore.info(p))
    assert m.metadata == b"---\nunits: m\n"
    assert m.path == str(p) and m.mode == "r" and m.slab is None


def test_pickling_sends_what_is_mapped(cube):
    p, a = cube
    m = rastore.MappedFile(p)
    blob = pickle.dumps(m)
    assert len(blob) < 200 + len(str(p))
    m2 = pickle.loads(blob)
    assert (m2.path, m2.mode, m2.slab) == (str(p), "r", None)
    np.testing.assert_array_equal(m2.array, a)
    s = pickle.loads(pickle.dumps(rastore.MappedFile(p, "r+", (1, 3))))
    assert (s.mode, s.slab, s.array.shape) == ("r+", (1, 3), (2, 3, 2))


@pytest.mark.parametrize(
    "write, reason",
    [
        (lambda p: rastore.write(p, np.arange(100, dtype=np.int32) // 50, compress=True), "compressed"),
        (lambda p: _big_endian(p), "not in native byte order"),
    ],
)
def test_files_that_cannot_be_viewed_in_place_point_to_read(tmp_path, write, reason):
    p = tmp_path / "x.ra"
    write(p)
    with pytest.raises(rastore.Error, match=f"{reason}; read it for a copy .*rastore.read in Python"):
        rastore.open(p)
    np.testing.assert_array_equal(rastore.read(p), np.arange(100, dtype=np.int32) // (50 if reason == "compressed" else 1))


def _big_endian(p):
    a = np.arange(100, dtype=">i4")
    header = np.array([0x7961727261776172, 1, 1, 4, 400, 1, 100], dtype="<u8").tobytes()
    p.write_bytes(header + a.tobytes())


def test_a_64_gib_sparse_file_maps_and_reads_its_last_element(tmp_path):
    p = tmp_path / "big.ra"
    n = 1 << 34  # 16 Gi float32 = 64 GiB, sparse
    header = np.array([0x7961727261776172, 0, 3, 4, 4 * n, 1, n], dtype="<u8").tobytes()
    with open(p, "wb") as f:
        f.write(header)
        f.truncate(len(header) + 4 * n)
    v = rastore.open(p)
    assert v.shape == (n,) and v[n - 1] == 0.0
