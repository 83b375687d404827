"""rastore.Loader: batches of frames from worker processes, judged by NumPy (and by
PyTorch where it is installed)."""

import os
import time

import numpy as np
import pytest

import rastore
from rastore import _frames
from rastore._loader import _Sampler

N = 1000


def frames_file(path, n=N, frame=(6, 4), dtype=np.float32):
    """Frame i holds i * 100 + its element number: told apart by its first element."""
    size = int(np.prod(frame))
    a = (np.arange(n)[None, :] * 100 + np.arange(size)[:, None]).astype(dtype)
    a = np.asfortranarray(a.reshape(tuple(frame) + (n,), order="F"))
    rastore.write(path, a)
    return a


def ids(batch):
    return (batch.reshape(len(batch), -1)[:, 0] // 100).astype(np.int64)


def epoch(loader, a=None):
    """The frame ids of one epoch, each batch checked against NumPy when ``a`` is given."""
    out = []
    for b in loader:
        k = ids(b)
        if a is not None:
            np.testing.assert_array_equal(b, np.moveaxis(a, -1, 0)[k])
        out.append(k)
    return np.concatenate(out) if out else np.array([], np.int64)


def test_batches_are_frames_as_numpy_indexes_them(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 64, seed=3, workers=2) as loader:
        assert len(loader) == 16  # 15 of 64 and one of 40
        got = epoch(loader, a)
        np.testing.assert_array_equal(np.sort(got), np.arange(N))
        np.testing.assert_array_equal(got, loader.indices())
        assert not np.array_equal(got, np.arange(N))
        shapes = [b.shape for b in loader]
        assert shapes[0] == (64, 6, 4) and shapes[-1] == (40, 6, 4)


def test_the_order_depends_only_on_seed_and_epoch(tmp_path):
    frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 100, seed=7, workers=2) as one, \
            rastore.Loader(tmp_path / "x.ra", 100, seed=7, workers=1) as two, \
            rastore.Loader(tmp_path / "x.ra", 100, seed=8, workers=2) as other:
        e0 = epoch(one)
        np.testing.assert_array_equal(epoch(one), e0)   # the same epoch again
        np.testing.assert_array_equal(epoch(two), e0)   # another loader, other workers
        assert not np.array_equal(epoch(other), e0)     # another seed
        one.set_epoch(1)
        e1 = epoch(one)
        assert not np.array_equal(e1, e0)
        np.testing.assert_array_equal(np.sort(e1), np.arange(N))
        two.set_epoch(1)
        np.testing.assert_array_equal(epoch(two), e1)


def test_unshuffled_batches_come_in_order_and_drop_last_drops_the_short_one(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 300, shuffle=False, drop_last=True) as loader:
        assert len(loader) == 3
        np.testing.assert_array_equal(epoch(loader, a), np.arange(900))


def test_ranks_shard_as_distributed_sampler_does(tmp_path):
    frames_file(tmp_path / "x.ra")
    for world in (4, 3, 7):
        shards = []
        for rank in range(world):
            with rastore.Loader(tmp_path / "x.ra", 50, seed=1, rank=rank, world_size=world,
                                workers=1) as loader:
                got = epoch(loader)
                np.testing.assert_array_equal(got, loader.indices())
                shards.append(got)
        per = -(-N // world)
        assert [len(s) for s in shards] == [per] * world
        allof = np.concatenate(shards)
        np.testing.assert_array_equal(np.unique(allof), np.arange(N))
        # Padding repeats the head of the epoch's order, as DistributedSampler pads.
        assert len(allof) - N == per * world - N
        if N % world == 0:
            for i in range(world):
                for j in range(i):
                    assert not set(shards[i]) & set(shards[j])


def test_the_sampler_matches_distributed_samplers_arithmetic():
    # DistributedSampler: num_samples = ceil(n / world), or with drop_last and a
    # remainder ceil((n - world) / world); padding by the head, or truncation.
    for n, world, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 4, False)]:
        s = _Sampler(n, 1, True, 0, drop, 0, world)
        want = -(-(n - world) // world) if drop and n % world else -(-n // world)
        assert s.per_rank == want
        order = _frames.order(n, True, 0, 0)
        total = want * world
        padded = np.resize(order, total) if not drop else order[:total]
        for rank in range(world):
            r = _Sampler(n, 1, True, 0, drop, rank, world)
            np.testing.assert_array_equal(r.indices(0), padded[rank:total:world])


def test_a_killed_worker_is_a_clear_error_not_a_hang(tmp_path):
    frames_file(tmp_path / "x.ra", n=4000)
    loader = rastore.Loader(tmp_path / "x.ra", 10, seed=0, workers=2)
    it = iter(loader)
    next(it)
    pid = loader._procs[1].pid
    loader._procs[1].kill()  # SIGKILL; TerminateProcess on Windows
    start = time.monotonic()
    how = "killed by signal 9" if os.name == "posix" else r"exit code \d+"
    with pytest.raises(RuntimeError, match=rf"worker 1 \(pid {pid}\) died \({how}\)"):
        for _ in it:
            pass
    assert time.monotonic() - start < 30
    # Iterating again starts new workers.
    assert len(epoch(loader)) == 4000
    loader.close()


def test_a_failing_worker_is_an_error_naming_it(tmp_path):
    frames_file(tmp_path / "x.ra")
    loader = rastore.Loader(tmp_path / "x.ra", 100, workers=2, warm=False)
    os.remove(tmp_path / "x.ra")  # the workers open the file themselves, and cannot
    with pytest.raises(RuntimeError, match="(?s)worker [01] failed.*FileNotFoundError"):
        epoch(loader)
    loader.close()


def test_an_abandoned_epoch_does_not_disturb_the_next(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 32, seed=5, workers=2) as loader:
        for i, _ in enumerate(loader):
            if i == 3:
                break
        got = epoch(loader, a)
        np.testing.assert_array_equal(got, loader.indices())


def test_a_newer_iteration_ends_the_older_one_cleanly(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 32, seed=5, workers=2) as loader:
        old = iter(loader)
        next(old)
        new = iter(loader)
        with pytest.raises(RuntimeError, match="ended by a newer iter"):
            next(old)
        got = np.concatenate([ids(b) for b in new])
        np.testing.assert_array_equal(got, loader.indices())
        np.testing.assert_array_equal(epoch(loader, a), loader.indices())


def in_shared_memory(loader, batch):
    """Whether ``batch``'s data lies in one of the loader's shared-memory buffers."""
    import ctypes

    ptr = batch.__array_interface__["data"][0]
    shms = [shm for slots in loader._shms for slot in slots for shm in slot.values()]
    starts = [ctypes.addressof(ctypes.c_char.from_buffer(s.buf)) for s in shms]
    return any(s <= ptr < s + shm.size for s, shm in zip(starts, shms))


def test_batches_are_views_of_shared_memory_buffers_reused(tmp_path):
    frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 64, workers=1) as loader:
        ptrs = set()
        for b in loader:
            assert in_shared_memory(loader, b) and b.flags.writeable
            ptrs.add(b.__array_interface__["data"][0])
        assert len(ptrs) == 2  # one worker's two slots, for all 16 batches


def test_batches_go_to_torch_without_a_copy(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is optional (CI does not install it)")
    frames_file(tmp_path / "x.ra")
    with rastore.Loader(tmp_path / "x.ra", 64, workers=1) as loader:
        b = next(iter(loader))
        t = torch.from_numpy(b)
        assert t.data_ptr() == b.__array_interface__["data"][0] and tuple(t.shape) == b.shape


def test_warmed_and_unwarmed_loaders_give_the_same_batches(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    got = []
    for warm in (True, False):
        with rastore.Loader(tmp_path / "x.ra", 128, seed=2, warm=warm) as loader:
            assert loader.warm is warm
            got.append(epoch(loader, a))
    np.testing.assert_array_equal(got[0], got[1])


def test_warming_reads_every_byte_once_across_the_workers(tmp_path):
    frames_file(tmp_path / "a.ra", n=3000)
    frames_file(tmp_path / "b.ra", n=500)
    paths = [str(tmp_path / "a.ra"), str(tmp_path / "b.ra")]
    total = sum(os.path.getsize(p) for p in paths)
    shares = [_frames.file_range(paths, k, 3) for k in range(3)]
    assert sum(_frames.warm(r, chunk=4096) for r in shares) == total
    assert sum(b - a for r in shares for _, a, b in r) == total


def test_what_fits_is_judged_from_the_memory_available(tmp_path):
    frames_file(tmp_path / "x.ra")
    f = _frames.Frames(tmp_path / "x.ra")
    assert f.nbytes == N * 6 * 4 * 4
    avail = _frames.available_memory()
    assert avail is not None and avail > f.nbytes
    assert _frames.fits(f)
    assert not _frames.fits(f, share=f.nbytes / avail / 2)


def test_a_dataset_folder_gives_a_dict_of_batches(tmp_path):
    xr = pytest.importorskip("xarray", reason="dataset folders are written by xarray here")
    n = 500
    image = np.random.default_rng(0).integers(0, 255, (5, 4, n), dtype=np.uint8)
    label = np.arange(n, dtype=np.int32)
    rastore.write(tmp_path / "run", xr.Dataset({"image": (("y", "x", "s"), image),
                                                "label": ("s", label)}))
    with rastore.Loader(tmp_path / "run", 64, seed=1) as loader:
        assert set(loader.columns) == {"image", "label"}
        seen = []
        for b in loader:
            np.testing.assert_array_equal(b["image"], np.moveaxis(image, -1, 0)[b["label"]])
            seen.append(b["label"].copy())
        np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(n))


def test_loads_from_s3(tmp_path, s3):
    a = frames_file(tmp_path / "x.ra")
    url = s3.url("loader/x.ra")
    rastore.write(url, a, storage_options=s3.options)
    with rastore.Loader(url, 100, seed=4, storage_options=s3.options) as loader:
        assert loader.warm is False
        got = epoch(loader, a)
        np.testing.assert_array_equal(np.sort(got), np.arange(N))


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="rank"):
        rastore.Loader("x.ra", 4, rank=2, world_size=2)
    with pytest.raises(ValueError, match="batch_size"):
        rastore.Loader("x.ra", 0)


def _fake_host(tmp_path, meminfo_kib, cgroup_line, files):
    """A /proc and /sys/fs/cgroup of a made-up host: MemAvailable, this process's
    cgroup line, and the cgroup's files by path."""
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {meminfo_kib} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    for path, text in files.items():
        (cg / path).parent.mkdir(parents=True, exist_ok=True)
        (cg / path).write_text(text)
    return str(proc), str(cg)


def test_memory_available_is_the_smaller_of_the_hosts_and_the_cgroup_limits_room(tmp_path):
    from rastore._frames import available_memory

    gib = 1 << 30
    # cgroup v2 (a container's memory.max): 4 GiB limit, 1 GiB held by processes.
    v2 = _fake_host(tmp_path / "v2", 20 * gib // 1024, "0::/pod/c1", {
        "pod/c1/memory.max": f"{4 * gib}\n",
        "pod/c1/memory.stat": f"anon {gib}\nfile {2 * gib}\n",
    })
    assert available_memory(*v2) == 3 * gib
    # cgroup v1: the memory controller's own hierarchy.
    v1 = _fake_host(tmp_path / "v1", 20 * gib // 1024, "4:memory:/job", {
        "memory/job/memory.limit_in_bytes": f"{6 * gib}\n",
        "memory/job/memory.stat": f"cache {5 * gib}\nrss {gib}\ntotal_rss {2 * gib}\n",
    })
    assert available_memory(*v1) == 4 * gib
    # No limit ("max", or v1's page-rounded 2**63): the host's figure.
    free = _fake_host(tmp_path / "free", 5 * gib // 1024, "0::/", {
        "memory.max": "max\n", "memory.stat": "anon 0\n"})
    assert available_memory(*free) == 5 * gib
    # A limit roomier than the host: still the host's.
    roomy = _fake_host(tmp_path / "roomy", 2 * gib // 1024, "0::/a", {
        "a/memory.max": f"{64 * gib}\n", "a/memory.stat": "anon 0\n"})
    assert available_memory(*roomy) == 2 * gib
