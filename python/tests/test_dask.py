"""rastore.Array, to_dask and writes of Dask arrays, on a real distributed.LocalCluster
with 2 worker processes, locally and on a real S3 server (s3s-fs)."""
import itertools
import os
import pickle
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import rastore
from conftest import fails_late_on_block_two, fails_on_block_two, wait_for_file

if os.environ.get("CI"):
    import dask.array as da  # CI installs rastore[dask]: its absence is a failure there
else:
    da = pytest.importorskip("dask.array")
import dask  # noqa: E402


def rss_anon():
    """This process's anonymous resident memory, in bytes (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def test_import_rastore_does_not_import_dask_or_xarray():
    import subprocess

    code = "import sys, rastore; print(sorted(m for m in ('dask', 'distributed', 'xarray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_array_indexes_like_numpy(tmp_path):
    a = np.arange(5 * 6 * 7, dtype="<i4").reshape(5, 6, 7) * 3
    rastore.write(tmp_path / "a.ra", a)
    x = rastore.Array(tmp_path / "a.ra")
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes) == (a.shape, a.dtype, 3, a.size, a.nbytes)
    assert len(x) == 5 and not hasattr(x, "copy")
    for key in [(...,), (1,), (-1, 2), (slice(1, 4), ..., -2), (slice(None, None, -2), 0, slice(6, 1, -3)),
                (..., 3), (slice(2, 2),), (0, 0, 0), (slice(-3, None), slice(None, 4), slice(1, None, 2))]:
        np.testing.assert_array_equal(x[key], a[key], err_msg=str(key))
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(x[[0, 1]], a[[0, 1]])
    with pytest.raises(IndexError, match="not a boolean mask"):
        x[a > 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]
    # Compressed data has no view in place: decoded on the first index.
    rastore.write(tmp_path / "c.ra", a, compress=True)
    c = rastore.Array(tmp_path / "c.ra")
    np.testing.assert_array_equal(c[1:3, ::2], a[1:3, ::2])


def test_array_pickles_as_its_location_and_tokenizes_by_file(tmp_path):
    a = np.zeros((256, 256, 64), "f4")
    rastore.write(tmp_path / "a.ra", a)
    x = rastore.Array(tmp_path / "a.ra")
    x[0, 0, 0]  # mapped in this process
    blob = pickle.dumps(x)
    assert len(blob) < 600, len(blob)
    y = pickle.loads(blob)
    assert y._source is None  # reopened lazily, on the first index
    assert y.shape == a.shape and y[1, 2, 3] == 0
    t1 = dask.base.tokenize(x)
    assert dask.base.tokenize(rastore.Array(tmp_path / "a.ra")) == t1
    time.sleep(0.01)
    rastore.write(tmp_path / "a.ra", a + 1)
    assert dask.base.tokenize(rastore.Array(tmp_path / "a.ra")) != t1


def test_to_dask_default_chunks_are_whole_frames_near_the_chunk_size(tmp_path):
    rastore.create(tmp_path / "a.ra", "f4", (512, 512, 300))
    with dask.config.set({"array.chunk-size": "8MiB"}):
        x = rastore.to_dask(tmp_path / "a.ra")
    assert x.chunks[0] == (512,) and x.chunks[1] == (512,)
    assert set(x.chunks[2][:-1]) == {8} and sum(x.chunks[2]) == 300
    # One frame over the chunk size: cut along the slower axes.
    with dask.config.set({"array.chunk-size": "256KiB"}):
        y = rastore.to_dask(tmp_path / "a.ra")
    assert y.chunks[0] == (512,) and y.chunks[2] == (1,) * 300 and y.chunks[1][0] == 128
    z = rastore.to_dask(tmp_path / "a.ra", chunks=(100, 200, 7))
    assert z.chunks[0][0] == 100 and z.chunks[1][0] == 200 and z.chunks[2][0] == 7


def test_the_graph_holds_no_data(tmp_path):
    rastore.create(tmp_path / "big.ra", "f8", (1024, 1024, 64))  # 512 MiB
    x = rastore.to_dask(tmp_path / "big.ra")
    assert len(pickle.dumps(dict(x.__dask_graph__()))) < 20_000


def test_sum_of_1_gib_on_the_cluster_keeps_the_client_small(tmp_path, client):
    n = 256
    a = rastore.create(tmp_path / "g.ra", "f4", (1024, 1024, n))  # 1 GiB
    for t in range(n):
        a[:, :, t] = t % 7
    a.base.flush()
    del a
    expect = 1024 * 1024 * sum(t % 7 for t in range(n))
    before = rss_anon()
    total = rastore.to_dask(tmp_path / "g.ra").sum(dtype="f8").compute()
    grew = rss_anon() - before
    assert total == expect
    # da.from_array(np.memmap(...)) copies the whole GiB into this process (dask#11850).
    assert grew < 128 << 20, f"the client grew by {grew >> 20} MiB"


@pytest.mark.parametrize("chunks", [(3, 4, 5), (7, 1, 2), (16, 10, 9)])
def test_dask_writes_match_numpy_writes_byte_for_byte(tmp_path, client, chunks):
    rng = np.random.default_rng(sum(chunks))
    a = rng.standard_normal((16, 10, 9)).astype("f4")
    x = da.from_array(a, chunks=chunks) * 2 + 1
    rastore.write(tmp_path / "d.ra", x)
    rastore.write(tmp_path / "n.ra", x.compute())
    assert (tmp_path / "d.ra").read_bytes() == (tmp_path / "n.ra").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["d.ra", "n.ra"]
    # Structured elements and compute=False.
    s = np.zeros(12, dtype=[("a", "<i4"), ("b", "<f8")])
    s["a"], s["b"] = np.arange(12), np.arange(12) / 4
    w = rastore.write(tmp_path / "s.ra", da.from_array(s, chunks=5), compute=False)
    assert not (tmp_path / "s.ra").exists()
    w.compute()
    np.testing.assert_array_equal(rastore.read(tmp_path / "s.ra"), s)
    # A padded struct (3 bytes after "c") whose padding holds junk, in blocks that cut
    # both axes: written as zeros, as rastore.write writes it.
    t = np.dtype([("c", "u1"), ("v", "<i4")], align=True)
    q = np.full(30 * t.itemsize, 0xAB, np.uint8).view(t).reshape(6, 5)
    q["c"], q["v"] = 7, np.arange(30).reshape(6, 5)
    rastore.write(tmp_path / "p.ra", da.from_array(q, chunks=(4, 2)))
    rastore.write(tmp_path / "pn.ra", q)
    assert (tmp_path / "p.ra").read_bytes() == (tmp_path / "pn.ra").read_bytes()
    assert 0xAB not in (tmp_path / "p.ra").read_bytes()[64:64 + q.nbytes]


def test_a_failing_block_leaves_no_file(tmp_path, client):
    x = da.ones((8, 8, 10), chunks=(8, 8, 2), dtype="f4").map_blocks(fails_on_block_two, dtype="f4")
    with pytest.raises(ValueError, match="block 2 is bad"):
        rastore.write(tmp_path / "f.ra", x)
    assert os.listdir(tmp_path) == []
    w = rastore.write(tmp_path / "g.ra", x, compute=False)
    with pytest.raises(ValueError, match="block 2 is bad"):
        w.compute()
    assert os.listdir(tmp_path) == []


def test_a_create_that_lands_after_the_failure_is_removed(tmp_path, monkeypatch):
    # The race CI met: block 2 fails while a worker is still creating the hidden file.
    # Workers in this process, so that the slowed create is the one they run.
    import distributed

    from rastore import _dask

    create = _dask._rastore.create_file
    failed, created = threading.Event(), threading.Event()

    def slow_create(*args):
        # Until the client has seen block 2 fail; with the fix the client waits for
        # this task instead, so it goes on after 2 s.
        failed.wait(timeout=2)
        create(*args)
        created.set()

    monkeypatch.setattr(_dask._rastore, "create_file", slow_create)
    x = da.ones((8, 8, 10), chunks=(8, 8, 2), dtype="f4").map_blocks(fails_on_block_two, dtype="f4")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with pytest.raises(ValueError, match="block 2 is bad"):
            rastore.write(tmp_path / "f.ra", x)
        failed.set()
        assert created.wait(timeout=10)
        assert os.listdir(tmp_path) == []


def test_a_dask_write_names_its_file_as_every_writer(tmp_path, client):
    x = da.arange(24, chunks=5, dtype="i4")
    rastore.write(tmp_path / "a.ra", np.zeros(3, "i4"))
    os.chmod(tmp_path / "a.ra", 0o640)
    os.link(tmp_path / "a.ra", tmp_path / "b.ra")
    with pytest.raises(rastore.Error, match="split_links=True"):
        rastore.write(tmp_path / "a.ra", x)
    assert sorted(os.listdir(tmp_path)) == ["a.ra", "b.ra"]
    rastore.write(tmp_path / "a.ra", x, split_links=True, durable=True)
    np.testing.assert_array_equal(rastore.read(tmp_path / "a.ra"), np.arange(24))
    assert os.stat(tmp_path / "a.ra").st_mode & 0o777 == 0o640
    assert rastore.read(tmp_path / "b.ra").tolist() == [0, 0, 0]


def _slow(block):
    time.sleep(0.1)
    return block + 1


def _kill_one_worker(client):
    """Kills a worker process (its nanny starts another) once the write is under way:
    40 blocks of 0.1 s on 2 workers take 2 s."""
    time.sleep(0.6)
    pids = list(client.run(os.getpid).values())
    os.kill(pids[0], 9)


def test_a_killed_worker_is_retried_and_the_file_is_right(tmp_path, client):
    a = np.arange(32 * 32 * 40, dtype="i8").reshape(32, 32, 40)
    x = da.from_array(a, chunks=(32, 32, 1)).map_blocks(_slow, dtype="i8")
    killer = threading.Thread(target=_kill_one_worker, args=(client,))
    killer.start()
    rastore.write(tmp_path / "k.ra", x)
    killer.join()
    np.testing.assert_array_equal(rastore.read(tmp_path / "k.ra"), a + 1)
    assert sorted(os.listdir(tmp_path)) == ["k.ra"]


# --- s3:// ----------------------------------------------------------------------------


def test_read_write_info_convert_on_s3(tmp_path, s3):
    o = s3.options
    a = np.arange(3 * 4 * 5, dtype="<u2").reshape(3, 4, 5)
    rastore.write(s3.url("a.ra"), a, storage_options=o, metadata="---\nx: 1\n")
    np.testing.assert_array_equal(rastore.read(s3.url("a.ra"), storage_options=o), a)
    rastore.write(tmp_path / "a.ra", a, metadata="---\nx: 1\n")
    assert s3.object("a.ra").read_bytes() == (tmp_path / "a.ra").read_bytes()
    h = rastore.info(s3.url("a.ra"), storage_options=o)
    assert h["dims"] == [3, 4, 5] and h["dtype"] == "uint16" and h["path"] == s3.url("a.ra")
    rastore.convert(s3.url("a.ra"), tmp_path / "a.npy", storage_options=o)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), a)
    rastore.convert(tmp_path / "a.npy", s3.url("b.ra"), storage_options=o)
    rastore.write(tmp_path / "ref.ra", a)
    assert s3.object("b.ra").read_bytes() == (tmp_path / "ref.ra").read_bytes()
    with pytest.raises(FileNotFoundError, match="no such object"):
        rastore.read(s3.url("missing.ra"), storage_options=o)
    with pytest.raises(FileNotFoundError):
        rastore.Array(s3.url("missing.ra"), storage_options=o)
    s3.object("junk.ra").write_bytes(b"x" * 100)
    with pytest.raises(rastore.Error, match="not a RawArray"):
        rastore.read(s3.url("junk.ra"), storage_options=o)


def test_convert_to_and_from_zarr_on_s3_by_storage_options_alone(tmp_path, s3, monkeypatch):
    zarr = pytest.importorskip("zarr") if not os.environ.get("CI") else __import__("zarr")
    for name in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_REGION", "AWS_ALLOW_HTTP"]:
        monkeypatch.delenv(name, raising=False)
    a = np.arange(6 * 7 * 9, dtype="<f4").reshape(6, 7, 9)
    rastore.write(tmp_path / "a.ra", a)
    rastore.convert(tmp_path / "a.ra", s3.url("z.zarr"), storage_options=s3.options)
    # s3s-fs keeps objects as files: the store is a folder zarr-python reads too.
    np.testing.assert_array_equal(zarr.open_group(str(s3.object("z.zarr")), mode="r")["a"][...], a)
    rastore.convert(s3.url("z.zarr"), tmp_path / "b.ra", storage_options=s3.options)
    np.testing.assert_array_equal(rastore.read(tmp_path / "b.ra"), a)
    with pytest.raises((rastore.Error, OSError)):
        rastore.convert(s3.url("z.zarr"), tmp_path / "c.ra",
                        storage_options={**s3.options, "secret": "wrong"})
    assert not (tmp_path / "c.ra").exists()


def test_array_on_s3_fetches_selections_and_pickles_small(s3):
    o = s3.options
    a = np.arange(6 * 5 * 40, dtype="<f8").reshape(6, 5, 40)
    rastore.write(s3.url("x.ra"), a, storage_options=o)
    x = rastore.Array(s3.url("x.ra"), storage_options=o)
    assert x.shape == a.shape and x.dtype == a.dtype
    for key in [(...,), (0,), (1, 2, 3), (..., slice(3, 30, 4)), (..., slice(None, None, -3)), (..., -1),
                (slice(1, 3), ..., slice(10, 10))]:
        np.testing.assert_array_equal(x[key], a[key], err_msg=str(key))
    y = pickle.loads(pickle.dumps(x))
    assert len(pickle.dumps(x)) < 800
    np.testing.assert_array_equal(y[..., 7], a[..., 7])
    t = dask.base.tokenize(x)
    rastore.write(s3.url("x.ra"), a + 1, storage_options=o)
    assert dask.base.tokenize(rastore.Array(s3.url("x.ra"), storage_options=o)) != t


def test_dask_on_s3_both_ways_on_the_cluster(s3, client):
    o = s3.options
    a = np.random.default_rng(1).standard_normal((256, 256, 100)).astype("f4")  # 25 MiB
    rastore.write(s3.url("in.ra"), a, storage_options=o)
    x = rastore.to_dask(s3.url("in.ra"), chunks=(100, 256, 7), storage_options=o)
    np.testing.assert_allclose(x.sum(dtype="f8").compute(), a.sum(dtype="f8"), rtol=1e-9)
    rastore.write(s3.url("out.ra"), x * 2, storage_options=o)
    np.testing.assert_array_equal(rastore.read(s3.url("out.ra"), storage_options=o), a * 2)
    assert s3.pending_uploads() == []


def _doubles_block_two_late(block, block_info=None):
    """Block 2 as float64 (so its parts have the wrong size and the upload refuses
    them), after a pause that lets the blocks before it be sent."""
    if block_info is not None and block_info[0]["chunk-location"][-1] == 2:
        time.sleep(0.15)
        return block.astype("f8")
    return block


def _no_cleanup_warnings(record):
    return [str(w.message) for w in record if "not cleaned up" in str(w.message)]


@pytest.mark.parametrize("scheduler", ["threads", "distributed"])
def test_a_part_refused_by_the_upload_aborts_it(s3, request, scheduler):
    import contextlib

    import distributed

    before = set(s3.pending_uploads())
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(_doubles_block_two_late, dtype="f4")
    on = contextlib.nullcontext()
    if scheduler == "distributed":
        on = distributed.Client(request.getfixturevalue("cluster"))
    with warnings.catch_warnings(record=True) as record, on:
        warnings.simplefilter("always")
        with pytest.raises(rastore.Error, match="holds frames"):
            rastore.write(s3.url("refused.ra"), x, storage_options=s3.options)
    assert _no_cleanup_warnings(record) == []
    assert not s3.object("refused.ra").exists()
    assert set(s3.pending_uploads()) == before


def test_a_failing_block_aborts_the_s3_upload_without_distributed(s3):
    before = set(s3.pending_uploads())
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(fails_late_on_block_two, dtype="f4")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"):
            rastore.write(s3.url("bad-local.ra"), x, storage_options=s3.options)
    assert _no_cleanup_warnings(record) == [], "aborted once, by one cleanup"
    assert not s3.object("bad-local.ra").exists()
    assert set(s3.pending_uploads()) == before


def test_cleanup_aborts_an_upload_begun_on_a_worker(s3, client):
    # dask.compute, not compute(): the client does not hold the write's first task,
    # so the upload is begun on a worker, and only the worker knows its id.
    before = set(s3.pending_uploads())
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(fails_on_block_two, dtype="f4")
    w = rastore.write(s3.url("later.ra"), x, storage_options=s3.options, compute=False)
    with pytest.raises(ValueError, match="block 2 is bad"):
        dask.compute(w)
    w.cleanup()
    assert not s3.object("later.ra").exists()
    assert set(s3.pending_uploads()) == before


def test_a_dataset_upload_failing_at_one_variable_aborts_only_the_unfinished(s3, client):
    xr = pytest.importorskip("xarray")
    before = set(s3.pending_uploads())
    good = xr.DataArray(da.ones((8, 8, 4), chunks=(8, 8, 4), dtype="f4"), dims=("x", "y", "t"))
    bad = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    bad = xr.DataArray(bad.map_blocks(fails_late_on_block_two, dtype="f4"), dims=("a", "b", "c"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"):
            rastore.write(s3.url("mixed/"), xr.Dataset({"good": good, "bad": bad}),
                          storage_options=s3.options)
    assert _no_cleanup_warnings(record) == [], "the finished upload is not aborted"
    assert set(s3.pending_uploads()) == before


def test_a_failing_block_aborts_the_s3_upload(s3, client):
    o = s3.options
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(fails_late_on_block_two, dtype="f4")
    with pytest.raises(ValueError, match="block 2 is bad"):
        rastore.write(s3.url("bad.ra"), x, storage_options=o)
    assert not s3.object("bad.ra").exists()
    assert s3.pending_uploads() == []


# --- Requests in flight when an upload fails (SlowS3 holds them) ----------------------


def _part(n):
    return lambda method, target: method == "PUT" and f"partNumber={n}&" in target


def _first_part():
    """Matches the first part an upload sends, whichever it is (Dask orders the
    blocks)."""
    count = itertools.count()
    return lambda method, target: (method == "PUT" and "partNumber=" in target
                                   and next(count) == 0)


def _fails_on_block_two_once(block, mark, block_info=None):
    """Raises on block 2 once the file ``mark`` exists (a request is held in flight)."""
    if block_info is not None and block_info[0]["chunk-location"][-1] == 2:
        wait_for_file(mark)
        raise ValueError("block 2 is bad")
    return block


def test_a_whole_upload_aborts_only_once_its_parts_in_flight_ended(slow_s3, tmp_path):
    # Part 3 is refused once part 1 was sent but for its last bytes, which are on their
    # way: the abort must wait for part 1, which the server finishes storing anyway.
    before = set(slow_s3.pending_uploads())
    slow_s3.hold_tail(_part(1), 1.5, mark=tmp_path / "part-1-sent")
    slow_s3.refuse(_part(3), after=tmp_path / "part-1-sent")
    a = np.ones((1024, 1024, 12), dtype="f4")  # 48 MiB: 4 parts of at most 16 MiB
    with pytest.raises(rastore.Error, match="part 3"):
        rastore.write(slow_s3.url("whole.ra"), a, storage_options=slow_s3.options)
    slow_s3.close()
    held = [(t.split("?")[1].split("&")[0], what) for m, t, what in slow_s3.log
            if what != "pass"]
    assert sorted(held) == [("partNumber=1", "tail"), ("partNumber=3", "refuse")]
    assert set(slow_s3.pending_uploads()) == before
    assert not slow_s3.server.object("whole.ra").exists()


def test_a_part_whose_request_would_time_out_is_waited_for_before_the_abort(slow_s3, tmp_path):
    # The client's timeout (0.5 s) passes while part 1's last bytes are on their way
    # (1.5 s): a client that gave up on it, and aborted, would leave part 1 stored after
    # the abort. The requests of an upload wait for their answer instead.
    before = set(slow_s3.pending_uploads())
    slow_s3.hold_tail(_first_part(), 1.5, mark=tmp_path / "sent")
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(_fails_on_block_two_once, mark=str(tmp_path / "sent"), dtype="f4")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"), \
                dask.config.set(scheduler="threads", num_workers=4):
            rastore.write(slow_s3.url("patient.ra"), x,
                          storage_options={**slow_s3.options, "timeout": "0.5s"})
    slow_s3.close()
    assert [what for _, _, what in slow_s3.log].count("tail") == 1
    assert _no_cleanup_warnings(record) == []
    assert set(slow_s3.pending_uploads()) == before


def test_a_completion_in_flight_when_another_write_fails_is_waited_for(slow_s3, tmp_path):
    # One variable's upload is being completed (the server did, its answer is on its
    # way) when the other's block 2 fails: the completed upload is not aborted too.
    xr = pytest.importorskip("xarray")
    before = set(slow_s3.pending_uploads())

    def completing(method, target):
        return method == "POST" and "/good.ra?uploadId=" in target

    slow_s3.hold_answer(completing, 1.5, mark=tmp_path / "completing")
    good = xr.DataArray(da.ones((8, 8, 4), chunks=(8, 8, 4), dtype="f4"), dims=("x", "y", "t"))
    bad = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    bad = bad.map_blocks(_fails_on_block_two_once, mark=str(tmp_path / "completing"), dtype="f4")
    bad = xr.DataArray(bad, dims=("a", "b", "c"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"), \
                dask.config.set(scheduler="threads", num_workers=4):
            rastore.write(slow_s3.url("held/"), xr.Dataset({"good": good, "bad": bad}),
                          storage_options=slow_s3.options)
    slow_s3.close()
    assert [what for m, t, what in slow_s3.log if completing(m, t)] == ["answer"]
    assert _no_cleanup_warnings(record) == []
    assert set(slow_s3.pending_uploads()) == before
    assert not slow_s3.server.object("held/good.ra").exists()


def test_under_the_processes_scheduler_the_abort_waits_for_the_pool(slow_s3, tmp_path):
    # A part is on its way from a process of the pool when block 2 fails in another:
    # the abort waits until the pool's tasks ended.
    before = set(slow_s3.pending_uploads())
    slow_s3.hold_tail(_first_part(), 3.0, mark=tmp_path / "sent")
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(_fails_on_block_two_once, mark=str(tmp_path / "sent"), dtype="f4")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="block 2 is bad"), \
                dask.config.set(scheduler="processes", num_workers=2, chunksize=1):
            rastore.write(slow_s3.url("pool.ra"), x, storage_options=slow_s3.options)
    slow_s3.close()
    assert [what for _, _, what in slow_s3.log].count("tail") == 1
    assert _no_cleanup_warnings(record) == []
    assert set(slow_s3.pending_uploads()) == before
    assert not slow_s3.server.object("pool.ra").exists()


def test_a_worker_that_joins_after_an_upload_failed_sends_nothing_of_it(slow_s3, cluster,
                                                                       client):
    # The failed write runs again on a worker that was not there when it was stopped:
    # it begins no upload and sends no part.
    before = set(slow_s3.pending_uploads())
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(fails_on_block_two, dtype="f4")
    w = rastore.write(slow_s3.url("joined.ra"), x, storage_options=slow_s3.options,
                      compute=False)
    with pytest.raises(ValueError, match="block 2 is bad"):
        dask.compute(w)
    w.cleanup()
    old = set(client.scheduler_info()["workers"])
    cluster.scale(3)
    try:
        client.wait_for_workers(3, timeout=120)
        new = sorted(set(client.scheduler_info()["workers"]) - old)
        seen = len(slow_s3.log)
        with pytest.raises((ValueError, RuntimeError)):
            dask.compute(w, workers=new)
        assert slow_s3.log[seen:] == []
    finally:
        cluster.scale(2)
    assert set(slow_s3.pending_uploads()) == before
