"""Gathers from Python (issue 29), by hand: shuffled batches of samples of a big
float32 ``.ra`` ([1024, 1024, frames], as ``ra demo --gib G --keep`` or the ``bigdata``
benchmark makes it), cold, against the device's floor in the same run.

    .venv/bin/python3 python/benches/gather_peers.py /work/big/big.ra [runs]
    .venv/bin/python3 python/benches/gather_peers.py --warm /work/big/warm.ra [runs]
    .venv/bin/python3 python/benches/gather_peers.py --fast /work/big/big.ra [runs]

Each batch is ``x[:, j:j+w, ks]``: a random ``j`` per batch and ``BATCH`` random frames
``ks`` (sorted within the batch, or not): blocks of 4 KiB (w=1), 16 KiB (w=4) and
1 MiB (w=256), each one contiguous run of the file. The ways:
- ``fio --rw=randread --ioengine=libaio --iodepth=32 --direct=1``: the device (floor);
- fio replaying the blocks the gather reads (a sample starts 72 bytes past a block of
  the file system's direct-read alignment, 512 bytes on ext4 over a 512-byte-sector
  disk, so it takes one block more), batch by batch, at queue depth 64;
- ``np.memmap`` of the data, fancy-indexed;
- ``rastore.open`` (the mapping), with and without ``advice="random"``;
- ``os.pread`` of each block from 32 Python threads;
- ``rastore.Array`` integer-array indexing: one gather per batch;
- the same from 2 worker processes sharing the batches, as a data loader's workers do.

``--fast`` leaves out the mappings and ``np.memmap`` (minutes at 4 KiB).
``--warm``: the file (which must fit in memory) is read into the page cache first, and
the gather is compared with NumPy's fancy indexing of the same array in memory. Cold
runs drop the page cache first (root only; it says when it cannot). Prints samples/s,
median of ``runs`` (min-max), the ratio to the floor, and the peak anonymous memory
(of the process, or of the loader's workers; fio's is not counted).
"""
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import rastore

BATCH = 500
LOADER_WORKERS = 2


def drop_cache():
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return True
    except OSError:
        return False


def batches(n, w, frames, sorted_, seed):
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n, BATCH):
        ks = rng.integers(0, frames, min(BATCH, n - start))
        if sorted_:
            ks.sort()
        out.append((int(rng.integers(0, 1024 - w + 1)), ks))
    return out


def rss_anon(pids):
    """The anonymous memory (bytes) of ``pids`` (``"self"`` among them), together."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) << 10 for line in f
                               if line.startswith("RssAnon:")), 0)
        except OSError:
            pass
    return total


def timed(fn, runs, cold, pids=("self",)):
    """Seconds of each run of ``fn``, sorted (for fio: its own, from its IOPS), and the
    most anonymous memory ``pids`` held beyond what they held before a run, sampled
    every 2 ms by a thread (the gathers release the GIL)."""
    times, peak = [], 0
    for _ in range(runs):
        if cold:
            drop_cache()
        base = rss_anon(pids)
        most = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                most[0] = max(most[0], rss_anon(pids) - base)
                done.wait(0.002)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t = time.perf_counter()
        rate = fn()
        elapsed = time.perf_counter() - t
        done.set()
        sampler.join()
        peak = max(peak, most[0], rss_anon(pids) - base)
        times.append(elapsed if rate is None else 1 / rate)
    times.sort()
    return times, peak


def fio_iops(*args):
    """fio's own read IOPS (its start and end left out) for a job of ``args``."""
    out = subprocess.run(
        ["fio", *args, "--direct=1", "--ioengine=libaio", "--output-format=terse",
         "--terse-version=3"],
        check=True, capture_output=True, text=True,
    )
    return float(out.stdout.split(";")[7])


def fio(path, block, n):
    """fio's IOPS for ``n`` random reads of ``block``, 32 in flight."""
    return fio_iops("--name=floor", f"--filename={path}", "--rw=randread", f"--bs={block}",
                    "--blockalign=4096", "--iodepth=32", f"--io_size={block * n}",
                    "--norandommap", "--randrepeat=0")


def direct_align(path):
    """What the offsets and lengths of ``path``'s direct reads are multiples of, as
    rastore finds it: ``statx``'s ``STATX_DIOALIGN`` (Linux 6.1), else 4 KiB. By ctypes:
    Python has no ``os.statx`` before 3.15."""
    import ctypes
    buf = ctypes.create_string_buffer(256)
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, statx_dioalign = -100, 0x2000
    if libc.statx(at_fdcwd, os.fsencode(path), 0, statx_dioalign, buf) != 0:
        return 4096
    mask = int.from_bytes(buf.raw[0:4], "little")
    align = int.from_bytes(buf.raw[156:160], "little")  # stx_dio_offset_align
    ok = mask & statx_dioalign and align and 4096 % align == 0
    return align if ok else 4096


def fio_replay(path, reads):
    """fio's IOPS replaying ``reads`` ((offset, length), aligned as rastore reads) in order from
    a version 2 iolog, at queue depth 64, direct: the device doing exactly the reads a
    gather asks of it."""
    lines = ["fio version 2 iolog", f"{path} add", f"{path} open"]
    lines += [f"{path} read {at} {n}" for at, n in reads]
    lines.append(f"{path} close")
    with tempfile.NamedTemporaryFile("w", suffix=".iolog") as log:
        log.write("\n".join(lines) + "\n")
        log.flush()
        return fio_iops("--name=replay", f"--read_iolog={log.name}", "--replay_no_stall=1",
                        "--iodepth=64")


def blocks(picked, w, offset, align):
    """Each sample's blocks, sorted within its batch as a gather reads them."""
    out = []
    for j, ks in picked:
        spans = []
        for k in ks:
            at = offset + 4 * 1024 * (j + 1024 * int(k))
            start = at // align * align
            spans.append((start, -(-(at + 4096 * w) // align) * align - start))
        out += sorted(spans)
    return out


def _worker_batches(args):
    """One data-loader worker's share: its batches, each one gather from its own
    ``Array`` of the file."""
    path, w, picked = args
    x = rastore.Array(path)
    for j, ks in picked:
        x[:, j:j + w, ks]


def cold_cases(path, runs, fast):
    h = rastore.info(path)
    dims = h["dims"]
    frames = dims[2]
    offset = h["data_offset"]
    align = direct_align(path)
    fd = os.open(path, os.O_RDONLY)
    # Started, and their imports done, before any timing.
    workers = concurrent.futures.ProcessPoolExecutor(LOADER_WORKERS)
    list(workers.map(abs, range(LOADER_WORKERS)))
    for w, n, what in [(1, 20000, "4 KiB"), (4, 20000, "16 KiB"), (256, 2000, "1 MiB")]:
        block = 4096 * w
        for sorted_ in (True, False):
            picked = batches(n, w, frames, sorted_, w)

            def memmap():
                m = np.memmap(path, np.float32, "r", offset, tuple(dims), order="F")
                for j, ks in picked:
                    np.asarray(m[:, j:j + w, ks])

            def mapping(advice=None):
                def go():
                    v = rastore.open(path, advice=advice)
                    for j, ks in picked:
                        np.asarray(v[:, j:j + w, ks])
                return go

            pool = concurrent.futures.ThreadPoolExecutor(32)

            def preads():
                for j, ks in picked:
                    out = np.empty((1024 * w, len(ks)), np.float32, order="F")

                    def one(i):
                        at = offset + 4 * (j * 1024 + int(ks[i]) * 1024 * 1024)
                        out[:, i] = np.frombuffer(os.pread(fd, block, at), np.float32)

                    list(pool.map(one, range(len(ks))))

            def gather():
                x = rastore.Array(path)
                for j, ks in picked:
                    x[:, j:j + w, ks]

            def loader():
                shares = [(path, w, picked[i::LOADER_WORKERS]) for i in range(LOADER_WORKERS)]
                list(workers.map(_worker_batches, shares))

            spans = blocks(picked, w, offset, align)
            cases = [
                ("fio randread libaio qd32 direct: its IOPS (floor)", lambda: fio(path, block, n)),
                ("fio replaying the gather's own blocks, qd64 direct",
                 lambda: fio_replay(path, spans)),
                ("rastore.Array[:, j:j+w, ks] (a gather per batch)", gather),
                (f"the same from {LOADER_WORKERS} worker processes, batches shared (a data loader)",
                 loader),
                ("os.pread from 32 Python threads", preads),
            ]
            if not fast:
                cases += [
                    ("rastore.open, advice='random'", mapping("random")),
                    ("rastore.open", mapping()),
                    ("np.memmap fancy indexing", memmap),
                ]
            order = "sorted" if sorted_ else "unsorted"
            print(f"\n{n} samples of {what} ({order}), batches of {BATCH}, {runs} runs, cold")
            print("case\tsamples/s median (min-max)\tvs floor\tpeak anonymous MiB")
            floor = None
            for name, fn in cases:
                # np.memmap and the mapping take minutes at 4 KiB: one run.
                r = 1 if "open" in name or "memmap" in name else runs
                # The loader's memory is its workers'; fio's is not counted.
                pids = list(workers._processes) if fn is loader else ["self"]
                t, peak = timed(fn, r, True, pids)
                if name.startswith("fio"):
                    t = [x * n for x in t]  # seconds per read, as seconds for n reads
                rate = n / t[len(t) // 2]
                floor = floor or rate
                print(f"{name}\t{rate:,.0f} ({n / t[-1]:,.0f}-{n / t[0]:,.0f})\t"
                      f"{rate / floor:.2f}\t{peak >> 20}", flush=True)
            pool.shutdown()
    workers.shutdown()
    os.close(fd)


def warm_cases(path, runs):
    h = rastore.info(path)
    dims = h["dims"]
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
    a = np.fromfile(path, np.float32, offset=h["data_offset"]).reshape(dims, order="F")
    x = rastore.Array(path)
    for w, what in [(1, "4 KiB"), (4, "16 KiB"), (256, "1 MiB")]:
        n = 20000 if w < 256 else 2000
        picked = batches(n, w, dims[2], False, w)
        for j, ks in picked[:2]:
            assert (x[:, j:j + w, ks] == a[:, j:j + w, ks]).all()

        def numpy():
            for j, ks in picked:
                a[:, j:j + w, ks]

        def gather():
            for j, ks in picked:
                x[:, j:j + w, ks]

        t_np, _ = timed(numpy, runs, False)
        t_ra, _ = timed(gather, runs, False)
        mid = lambda t: t[len(t) // 2]
        print(f"{n} samples of {what}, warm: NumPy in memory {n / mid(t_np):,.0f}/s "
              f"({n / t_np[-1]:,.0f}-{n / t_np[0]:,.0f}), rastore.Array {n / mid(t_ra):,.0f}/s "
              f"({n / t_ra[-1]:,.0f}-{n / t_ra[0]:,.0f}): {mid(t_np) / mid(t_ra):.2f}x", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    warm = args and args[0] == "--warm"
    if warm:
        args = args[1:]
    fast = args and args[0] == "--fast"
    if fast:
        args = args[1:]
    runs = int(args[1]) if len(args) > 1 else 3
    if not warm and not drop_cache():
        print("cannot drop the page cache (not root?): the figures are NOT cold")
    if warm:
        warm_cases(args[0], runs)
    else:
        cold_cases(args[0], runs, fast)
