"""Gathers (issue 29): ``rastore.Array.take`` and integer-array indexing equal NumPy's
on the same data, for every dtype, file encoding and index placement, locally and on
``s3://``; indices out of range are refused before anything is read; worker processes
gather shuffled batches from one file, as a data loader's do."""
import concurrent.futures
import multiprocessing
import os
import pickle
import sys

import numpy as np
import pytest

import rastore

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
          [("name", "S3"), ("age", "<i4"), ("w", "<f8")]]


def _data(dtype, shape=(6, 5, 7), seed=0):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dt.names:
        a = np.zeros(shape, dt)
        a["name"] = b"ab"
        a["age"] = rng.integers(-100, 100, shape)
        a["w"] = rng.standard_normal(shape)
        return a
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    raw = rng.integers(0, 255, int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    a = raw.view(dt).reshape(shape)
    if dt.kind == "f":
        a = rng.standard_normal(shape).astype(dt)
    return np.asfortranarray(a)


KEYS = [
    (np.array([3, 0, 3, -1]),),
    (slice(None), [4, 1]),
    (slice(1, 5), slice(None), [6, 6, 0, -7]),
    (Ellipsis, [2]),
    (0, slice(None), [1, 2]),
    (0, [1, 2]),
    (slice(None, None, -2), np.array([[0, 4], [2, 2]]), slice(5, 1, -1)),
    ([], slice(None)),
    (2, slice(None), np.int64(3)),
]


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype)
    if want.dtype.names:
        for f in want.dtype.names:
            np.testing.assert_array_equal(got[f], want[f])
    else:
        np.testing.assert_array_equal(got, want)


def _gathers(monkeypatch):
    """A list that grows by one for each gather a local ``Array`` makes (rather than
    copying a resident batch from its mapping)."""
    made = []
    gather = rastore._array._Local.gather

    def counted(self, *args):
        made.append(args)
        return gather(self, *args)

    monkeypatch.setattr(rastore._array._Local, "gather", counted)
    return made


def _gathering(monkeypatch):
    """Local ``Array``s gather every batch, resident or not (by default a batch the
    page cache holds is NumPy indexing the mapping; evicting a small file does not
    make it cold: opening it maps its first pages and reads the rest ahead)."""
    monkeypatch.setattr(rastore._array._Local, "in_memory", lambda self, *args: False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_take_and_array_indexing_equal_numpys_for_every_dtype(tmp_path, dtype, monkeypatch):
    a = _data(dtype, shape=(32, 64, 7))
    p = tmp_path / "a.ra"
    rastore.write(p, a)
    made = _gathers(monkeypatch)
    x = rastore.Array(p)
    for key in KEYS:
        _same(x[key], a[key])  # resident: copied from the mapping
    assert made == [], "a resident batch is indexed in memory"
    _gathering(monkeypatch)
    for key in KEYS:
        _same(x[key], a[key])  # gathered
    # Each key but the empty one, which reads nothing.
    assert len(made) == len(KEYS) - 1
    for axis in (0, 1, 2, -1, -3):
        _same(x.take([4, 0, 4, -2], axis=axis), a.take([4, 0, 4, -2], axis=axis))
    _same(x.take([[1, 2], [3, -1]]), a.take([[1, 2], [3, -1]], axis=-1))
    _same(x.take([7, -1, 0, 209], axis=None), a.take([7, -1, 0, 209]))
    _same(x.take(3, axis=1), a.take(3, axis=1))
    _same(x.take([9, -9], axis=0, mode="wrap"), a.take([9, -9], axis=0, mode="wrap"))
    _same(x.take([9, -9], axis=0, mode="clip"), a.take([9, -9], axis=0, mode="clip"))
    # Indices as NumPy's take converts them: lists by int(), arrays cast same_kind.
    for idx in ([True, False, True], np.array([True, False]), [1.9, -2.5], "3", np.uint8(2),
                np.float64(4.0)):
        _same(x.take(idx, axis=1), a.take(idx, axis=1))


@pytest.mark.parametrize("cached", [True, False], ids=["resident", "gathered"])
def test_take_into_out_fills_it_as_numpy_does(tmp_path, cached, monkeypatch):
    a = _data("<f4")
    p = tmp_path / "a.ra"
    rastore.write(p, a)
    x = rastore.Array(p)
    idx = [4, 0, 4, -2]
    if not cached:
        _gathering(monkeypatch)

    # Whole frames into a Fortran-ordered buffer: read straight into it.
    out = np.full((6, 5, 4), -1, np.float32, order="F")
    got = x.take(idx, out=out)
    assert got is out
    _same(out, a.take(idx, axis=-1))
    # The same buffer again, for the next batch: a loader's buffer made once.
    # Gathered, the bytes land in it, not in a buffer of the gather's own.
    source = x._open()
    landed = []
    gather = source.gather
    source.gather = lambda base, axis, flat, buf: (landed.append(buf), gather(base, axis, flat, buf))
    x.take([1, 2, 3, 5], out=out)
    _same(out, a.take([1, 2, 3, 5], axis=-1))
    assert [np.shares_memory(b, out) for b in landed] == ([] if cached else [True])
    # Any other layout or axis: filled from the batch, as np.take fills it.
    c = np.zeros((6, 5, 4), np.float32)
    assert x.take(idx, out=c) is c
    _same(c, a.take(idx, axis=-1, out=np.zeros((6, 5, 4), np.float32)))
    rows = np.zeros((2, 5, 7), np.float32)
    assert x.take([5, -6], axis=0, out=rows) is rows
    _same(rows, a.take([5, -6], axis=0))
    flat = np.zeros(3, np.float32)
    assert x.take([7, -1, 0], axis=None, out=flat) is flat
    _same(flat, a.take([7, -1, 0]))
    # A wrong out is refused before anything is read, as NumPy refuses it.
    landed.clear()
    with pytest.raises(ValueError, match=r"out has shape \(6, 5, 3\); the result has shape \(6, 5, 4\)"):
        x.take(idx, out=np.zeros((6, 5, 3), np.float32, order="F"))
    with pytest.raises(TypeError, match="out has dtype float64; the array's is float32"):
        x.take(idx, out=np.zeros((6, 5, 4), np.float64, order="F"))
    with pytest.raises(TypeError, match="out must be a NumPy array"):
        x.take(idx, out=[0] * 120)
    with pytest.raises(ValueError, match=r"the result has shape \(6, 5, 2\)"):
        x.take([1, 2], out=np.zeros((6, 5, 4), np.float32))
    assert landed == []


def _big_endian(plain, big, a):
    """Writes ``big``: the 3-D array ``a``, stored in ``plain``, as a big-endian file
    (header words and data swapped, flag bit 0 set)."""
    head = np.frombuffer(plain.read_bytes()[:72], "<u8").copy()
    head[1] |= 1
    data = np.asfortranarray(a).astype(a.dtype.newbyteorder(">"))
    big.write_bytes(head.astype(">u8").tobytes() + data.tobytes(order="F"))


def test_every_encoding_gathers_the_same(tmp_path, monkeypatch):
    a = _data("<f4")
    rastore.write(tmp_path / "plain.ra", a)
    rastore.write(tmp_path / "lz4.ra", np.round(a), compress=True)
    _big_endian(tmp_path / "plain.ra", tmp_path / "big.ra", a)
    np.save(tmp_path / "c.npy", np.ascontiguousarray(a))
    made = _gathers(monkeypatch)
    for name, want in [("plain.ra", a), ("lz4.ra", np.round(a)), ("big.ra", a), ("c.npy", a)]:
        x = rastore.Array(tmp_path / name)
        for key in KEYS:
            _same(x[key], want[key])
        _same(x.take([6, 0, 6]), want.take([6, 0, 6], axis=-1))
        _same(x[1:4, ::-2, 5], want[1:4, ::-2, 5])
        _same(np.asarray(x), want)
    # Only the files without a view in place gather a small cached file's batches:
    # the big-endian one from the file, swapped, and the compressed one from what its
    # reader decoded; each of the two, every key but the empty one, and the take.
    assert len(made) == 2 * len(KEYS)


def test_a_big_endian_file_is_read_by_its_reader_not_decoded_whole(tmp_path, monkeypatch):
    a = _data("<i8", shape=(8, 4, 6))
    rastore.write(tmp_path / "plain.ra", a)
    _big_endian(tmp_path / "plain.ra", tmp_path / "big.ra", a)
    monkeypatch.setattr(rastore._rastore, "read", lambda *args, **kw: pytest.fail("decoded whole"))
    x = rastore.Array(tmp_path / "big.ra")
    assert x.dtype == np.dtype("i8") and x.shape == (8, 4, 6)
    _same(x[2:7:2, 1, ::-1], a[2:7:2, 1, ::-1])
    _same(x[:, [3, 0, 3]], a[:, [3, 0, 3]])
    _same(x.take([5, -6], axis=None), a.take([5, -6]))
    assert x._open().view is None


def test_out_of_range_and_unsupported_indices_are_refused_before_any_read(tmp_path):
    a = _data("i2")
    rastore.write(tmp_path / "a.ra", a)
    x = rastore.Array(tmp_path / "a.ra")
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 2 with size 7"):
        x[:, :, [0, 7]]
    with pytest.raises(IndexError, match="index -8 is out of bounds for axis 2 with size 7"):
        x.take([-8])
    with pytest.raises(IndexError, match="out of bounds for size 210"):
        x.take([210], axis=None)
    with pytest.raises(IndexError, match="one integer array.*not a boolean mask"):
        x[a > 0]
    with pytest.raises(IndexError, match="one array at a time"):
        x[[0, 1], [0, 1]]
    with pytest.raises(IndexError, match="not an array of float64"):
        x[np.array([0.5])]
    # NumPy adds an axis for True: a mask, refused like the others.
    for mask in (True, np.False_):
        with pytest.raises(IndexError, match=f"not a boolean \\({mask}\\)"):
            x[1, mask]
    with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
        x.take(np.array([1.0], np.float32))

    class Floats:
        def __array__(self, dtype=None, copy=None):
            return np.array([1.0])

    with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
        x.take(Floats())  # an array-like is cast as an array, as NumPy casts it
    with pytest.raises(np.exceptions.AxisError):
        x.take([0], axis=3)


def test_gathers_from_an_object_equal_numpys(s3):
    a = _data("<f8", shape=(64, 32, 40))
    url = s3.url("g.ra")
    rastore.write(url, a, storage_options=s3.options)
    x = rastore.Array(url, storage_options=s3.options)
    for key in KEYS:
        _same(x[key], a[key])
    order = np.random.default_rng(1).permutation(40)[:25]
    _same(x.take(order), a.take(order, axis=-1))
    _same(x.take(np.concatenate([order, order[:3]])), a.take(np.concatenate([order, order[:3]]), axis=-1))
    with pytest.raises(IndexError, match="out of bounds for axis 2 with size 40"):
        x.take([40])


def _worker_batches(x, batches):
    """A data loader's worker: the array arrives pickled (as its location); each batch
    is one take."""
    return [x.take(b) for b in batches]


def test_worker_processes_gather_shuffled_batches_from_one_file(tmp_path):
    a = _data("<f4", shape=(16, 16, 300))
    p = tmp_path / "train.ra"
    rastore.write(p, a)
    x = rastore.Array(p)
    assert len(pickle.dumps(x)) < 1000, "the array travels as its location"
    order = np.random.default_rng(2).permutation(300)
    batches = [order[i:i + 32] for i in range(0, 300, 32)]
    per_worker = [batches[w::3] for w in range(3)]
    with concurrent.futures.ProcessPoolExecutor(3) as pool:
        results = list(pool.map(_worker_batches, [x] * 3, per_worker))
    for w, got in enumerate(results):
        for b, g in zip(per_worker[w], got):
            np.testing.assert_array_equal(g, a[..., b])


class _Gather:
    """The data-loader recipe's ``collate_fn`` (docs/PYTHON.md): a batch of indices
    in, one ``take`` of those frames out, as a tensor."""

    def __init__(self, path):
        self.x = rastore.Array(path)

    def __call__(self, indices):
        import torch

        return torch.from_numpy(np.ascontiguousarray(self.x.take(np.asarray(indices))))


def test_the_pytorch_data_loader_recipe(tmp_path):
    torch = pytest.importorskip("torch")
    a = _data("<f4", shape=(8, 8, 200))
    p = tmp_path / "train.ra"
    rastore.write(p, a)
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(range(200), batch_size=32, shuffle=True,
                                         num_workers=2, collate_fn=_Gather(p))
    seen = []
    for batch in loader:
        assert batch.shape[:2] == (8, 8) and batch.dtype == torch.float32
        seen.append(batch.numpy())
    got = np.concatenate(seen, axis=-1)
    assert got.shape == a.shape
    # Shuffled: the frames are a's, each once, in some order.
    order = [int(np.argmin([np.abs(a[..., k] - got[..., i]).sum() for k in range(200)])) for i in range(200)]
    assert sorted(order) == list(range(200)) and order != list(range(200))
    np.testing.assert_array_equal(got, a[..., order])


def _evict_unmapped(path):
    """Drops what the page cache holds of ``path`` and no process maps (Linux)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _gather_rounds(x, a, rounds, path):
    """``rounds`` cold gathers of shuffled frames from ``x``, each checked against
    ``a``; the first frame that differs, or ``None``."""
    rng = np.random.default_rng(os.getpid())
    for _ in range(rounds):
        _evict_unmapped(path)
        ks = rng.integers(8, a.shape[2], 24)
        got = x.take(ks)
        if not np.array_equal(got, a.take(ks, axis=-1)):
            return int(ks[0])
    return None


# What forked workers inherit (not pickled: an ``Array`` pickles as its location, and
# a worker that unpickles it opens the file again).
_INHERITED = []


def _forked_rounds(_):
    x, a, path = _INHERITED[0]
    return _gather_rounds(x, a, 40, path)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux",
                    reason="fork, and reads around the cache, are Linux's")
def test_a_forked_worker_gathers_on_its_own_ring(tmp_path, monkeypatch):
    """An ``Array`` that has gathered, inherited by forked workers (a data loader's
    default on Linux), gathers right in each of them while the parent gathers too:
    the reader's kept io_uring ring is its process's own, never shared."""
    _gathering(monkeypatch)
    a = np.asfortranarray(np.arange(64 * 64 * 96, dtype=np.float32).reshape(64, 64, 96))
    p = tmp_path / "a.ra"
    rastore.write(p, a)
    x = rastore.Array(p)
    assert _gather_rounds(x, a, 2, p) is None  # the parent's ring, made
    _INHERITED[:] = [(x, a, p)]
    fork = multiprocessing.get_context("fork")
    with fork.Pool(2) as pool:
        children = pool.map_async(_forked_rounds, [0, 1])
        assert _gather_rounds(x, a, 40, p) is None
        assert children.get(timeout=120) == [None, None]
