"""rastore.Loader and rastore.ray.read_ra against their peers (issue 40), by hand, in one
run: shuffled batches of uint8 frames of 64x64x3 (12 KiB), cold (the bench files'
pages are evicted first with ``posix_fadvise(DONTNEED)``: only these files, so that the
rest of the machine keeps its cache), then a second epoch.

    .venv/bin/python3 python/benches/loader_peers.py [--mib 512] [--workers 2] [--ray]
        [--mem-limit-mib M] [--first-seconds 30] [--fio]

The ways, each over the same shuffled epoch of batches of 256:
- ``Loader(warm=auto)``: the file fits in memory here, so the workers gather and warm
  the page cache front to back; ``Loader(warm=False)``: gathers around the cache (what
  it does for a file larger than memory);
- a PyTorch-style loop: ``workers`` processes doing ``np.memmap`` fancy indexing,
  sending each batch to the consumer (as a DataLoader's workers do);
- ``Array.take`` in one process (``take(..., out=buf)``, one buffer);
- with ``--ray``: ``read_ra(shuffle=True).iter_batches`` against
  ``ray.data.read_numpy`` of the same frames as ``.npy`` shards, then
  ``random_shuffle``, on ``ray.init(num_cpus=workers)``.
Prints samples/s per epoch and the ratios to ``np.memmap`` (or ``read_numpy``) of the
same run, and for the Ray ways the bytes of Ray's object store they touched.

``--mem-limit-mib M`` runs everything (the workers too) in a new child cgroup whose
memory, page cache included, is limited to M MiB (Linux, root; cgroup v1 or v2): a
machine of that much memory, so that a file bigger than memory needs no disk bigger
than the machine's memory. ``--first-seconds S`` also reports each way's samples/s over
the first S seconds of the cold epoch (the way a new user watches a run start);
``--seconds T`` cuts every epoch short after T seconds (a file bigger than memory, at
the pace ``np.memmap`` reads it, would take hours), its rate over what it read.
``--fio`` runs fio (Debian's ``fio``) replaying a gather's reads over the same file for
20 s: random reads of the pages one frame spans (16 KiB for these 12 KiB frames, which
start 80 bytes into a page), ``O_DIRECT``, io_uring, 64 in flight; the device's floor
for a gather around the cache, in frames/s.
"""
import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time

import numpy as np

import rastore
from rastore._frames import memory_cgroups

FRAME = (64, 64, 3)
BATCH = 256


def evict(path):
    """Drops ``path``'s pages from the page cache (after writing back what is dirty)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def limit_memory(mib):
    """Moves this process into a new child cgroup of its own whose memory (v1
    ``memory.limit_in_bytes``, v2 ``memory.max``), page cache included, is ``mib`` MiB;
    its children inherit it."""
    groups = memory_cgroups()
    if not groups:
        raise SystemExit("no memory cgroup to limit")
    folder, limit, _ = groups[0]
    folder = f"{folder}/loader-bench"
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/{limit}", "w") as f:
        f.write(str(mib << 20))
    with open(f"{folder}/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))


def fio_floor(path, offset, seconds=20):
    """Frames/s of fio replaying a gather's reads of ``path``: each frame (at ``offset``
    plus a multiple of its size) read around the cache as the whole pages it spans
    (O_DIRECT reads are page-aligned: 16 KiB for a 12 KiB frame off a page boundary),
    at random, 64 in flight through io_uring."""
    import json
    import subprocess

    frame = int(np.prod(FRAME))
    span = (offset % 4096 + frame + 4095) // 4096 * 4096
    out = subprocess.run(
        ["fio", "--name=frames", f"--filename={path}", "--rw=randread", f"--bs={span}",
         "--blockalign=4k", "--direct=1", "--ioengine=io_uring", "--iodepth=64",
         f"--runtime={seconds}", "--time_based", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["jobs"][0]["read"]["iops"]


class Clock:
    """Samples counted against time: the rate over the first ``first`` seconds too."""

    def __init__(self, first):
        self.first, self.t0, self.done, self.early = first, time.perf_counter(), 0, None

    def add(self, k):
        self.done += k
        if self.first and self.early is None and time.perf_counter() - self.t0 >= self.first:
            self.early = self.done / (time.perf_counter() - self.t0)

    def rate(self):
        return self.done / (time.perf_counter() - self.t0)

    def over(self):
        """Whether the epoch has run its ``--seconds``."""
        return bool(LIMIT[0]) and time.perf_counter() - self.t0 >= LIMIT[0]


FIRST = [0]  # --first-seconds, for the ways' first epochs
LIMIT = [0]  # --seconds: each epoch cut short after that long
EARLY = {}   # way -> samples/s over its first seconds


def batches(n, seed):
    perm = np.random.default_rng(seed).permutation(n)
    return [perm[i:i + BATCH] for i in range(0, n, BATCH)]


def memmap_batch(args):
    """One batch of the peer: NumPy's fancy indexing of the frames of an ``np.memmap``
    (each frame one contiguous row of bytes; indices sorted, as a careful user sorts
    them), the batch sent back to the consumer as a DataLoader's worker sends it."""
    path, offset, n, idx = args
    mm = _MAPS.get(path)
    if mm is None:  # mapped once per worker process
        mm = _MAPS[path] = np.memmap(path, np.uint8, "r", offset=offset,
                                     shape=(n, int(np.prod(FRAME))))
    return mm[np.sort(idx)]


_MAPS = {}


def run_memmap(path, n, workers, epochs):
    offset = os.path.getsize(path) - n * int(np.prod(FRAME))  # no trailer: data last
    out = []
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(abs, range(workers))
        for e in range(epochs):
            jobs = [(path, offset, n, b) for b in batches(n, e)]
            clock = Clock(FIRST[0] if e == 0 else 0)
            for b in pool.imap(memmap_batch, jobs, chunksize=1):
                clock.add(len(b))
                if clock.over():
                    break
            out.append(clock.rate())
            if e == 0:
                EARLY["np.memmap, worker processes"] = clock.early
    return out


def run_loader(path, workers, epochs, warm, name):
    out = []
    with rastore.Loader(path, BATCH, workers=workers, warm=warm) as loader:
        loader._start()  # the workers' start, as the memmap pool's, is not timed
        time.sleep(1.0)
        for e in range(epochs):
            loader.set_epoch(e)
            clock = Clock(FIRST[0] if e == 0 else 0)
            for b in loader:
                clock.add(len(b))
                if clock.over():
                    break
            out.append(clock.rate())
            if e == 0:
                EARLY[name] = clock.early
    return out


def run_take(path, n, epochs):
    x = rastore.Array(path)
    buf = np.empty(FRAME + (BATCH,), np.uint8, order="F")
    out = []
    for e in range(epochs):
        clock = Clock(0)
        for b in batches(n, e):
            o = buf if len(b) == BATCH else np.empty(FRAME + (len(b),), np.uint8, order="F")
            x.take(b, out=o)
            clock.add(len(b))
            if clock.over():
                break
        out.append(clock.rate())
    return out


def store_touched():
    """The bytes of Ray's object store (the raylet's plasma file) that have been touched:
    its allocated pages, a high-water mark of its use (Linux, root: it reads the file
    through /proc/PID/map_files)."""
    from ray._private import ray_constants, worker

    pid = worker._global_node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    files = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and "plasma" in parts[5]:
                st = os.stat(f"/proc/{pid}/map_files/{parts[0]}")
                files[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(files.values())


def run_ray(path, folder, n, workers, epochs):
    """Each way in its own Ray session, so that each one's object-store high-water mark
    is its own."""
    import ray
    import ray.data

    from rastore.ray import read_ra

    shards = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".npy"))
    res, touched = {}, {}
    for name in ("read_ra", "read_numpy + random_shuffle"):
        ray.init(num_cpus=workers, include_dashboard=False, object_store_memory=1 << 30,
                 log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        res[name] = []
        try:
            for p in [path] + shards:
                evict(p)
            for e in range(epochs):
                if name == "read_ra":
                    ds = read_ra(path, shuffle=True, seed=e, override_num_blocks=4 * workers)
                else:
                    ds = ray.data.read_numpy(shards).random_shuffle(seed=e)
                t = time.perf_counter()
                done = sum(len(b["data"]) for b in ds.iter_batches(batch_size=BATCH))
                res[name].append(done / (time.perf_counter() - t))
                assert done == n, (name, done)
            try:
                touched[name] = store_touched()
            except OSError as err:
                touched[name] = f"unknown ({err})"
        finally:
            ray.shutdown()
    return res, touched


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--ray", action="store_true")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--mem-limit-mib", type=int, default=None)
    ap.add_argument("--first-seconds", type=float, default=0)
    ap.add_argument("--fio", action="store_true")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--skip", default="", help="ways to leave out, comma-separated prefixes")
    args = ap.parse_args()
    if args.mem_limit_mib:
        limit_memory(args.mem_limit_mib)
    FIRST[0] = args.first_seconds
    LIMIT[0] = args.seconds
    frame_bytes = int(np.prod(FRAME))
    n = args.mib * (1 << 20) // frame_bytes
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = os.path.join(d, "frames.ra")
        rng = np.random.default_rng(0)
        rastore.create(path, np.uint8, FRAME + (n,))
        x = rastore.open_slab(path, 0, n)
        for s in range(0, n, 4096):
            x[..., s:s + 4096] = rng.integers(0, 255, FRAME + (min(4096, n - s),), np.uint8)
        x.base.flush()
        del x
        folder = os.path.join(d, "shards")
        if args.ray:
            os.mkdir(folder)
            a = rastore.open(path)
            for i, s in enumerate(range(0, n, n // 8 + 1)):
                np.save(os.path.join(folder, f"{i:02}.npy"),
                        np.ascontiguousarray(np.moveaxis(a[..., s:s + n // 8 + 1], -1, 0)))
            del a
        from rastore._frames import available_memory

        print(f"{n} frames of {FRAME} uint8 ({args.mib} MiB), batches of {BATCH}, "
              f"{args.workers} workers, {os.cpu_count()} CPUs, memory available "
              f"{available_memory() / (1 << 20):,.0f} MiB; samples/s per epoch (first cold)")
        results = {}
        ways = [
            ("np.memmap, worker processes", lambda: run_memmap(path, n, args.workers, args.epochs)),
            ("Loader (warm: auto)",
             lambda: run_loader(path, args.workers, args.epochs, None, "Loader (warm: auto)")),
            ("Loader (warm=False)",
             lambda: run_loader(path, args.workers, args.epochs, False, "Loader (warm=False)")),
            ("Array.take, one process", lambda: run_take(path, n, args.epochs)),
        ]
        skip = [p for p in args.skip.split(",") if p]
        ways = [(name, fn) for name, fn in ways if not any(name.startswith(p) for p in skip)]
        for name, fn in ways:
            evict(path)
            results[name] = fn()
        touched = {}
        if args.ray:
            rates, touched = run_ray(path, folder, n, args.workers, args.epochs)
            results.update(rates)
        for name, rates in results.items():
            peer = "memmap" if not name.startswith("read_") else "read_numpy"
            ref = results.get("np.memmap, worker processes" if peer == "memmap"
                              else "read_numpy + random_shuffle") or [float("nan")] * len(rates)
            cells = "  ".join(f"{r:10,.0f} ({r / b:5.2f}x {peer})" for r, b in zip(rates, ref))
            print(f"{name:32} {cells}")
        for name, early in EARLY.items():
            if early is not None:
                ref = EARLY.get("np.memmap, worker processes")
                vs = f" ({early / ref:5.2f}x memmap)" if ref else ""
                print(f"{name:32} first {FIRST[0]:g} s: {early:10,.0f}{vs}")
        if args.fio:
            evict(path)
            floor = fio_floor(path, os.path.getsize(path) - n * int(np.prod(FRAME)))
            for name in ("Loader (warm: auto)", "Loader (warm=False)"):
                rates = results[name]
                print(f"{name:32} cold epoch {rates[0]:10,.0f} = {rates[0] / floor:5.2f}x fio's "
                      f"{floor:,.0f} frame reads/s")
        for name, b in touched.items():
            size = f"{b / (1 << 20):,.0f} MiB" if isinstance(b, int) else b
            print(f"{name}: Ray's object store touched {size} (its high-water mark)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
