"""rastore from Python against NumPy, h5py and safetensors, in one run. Run by hand:

    .venv/bin/python python/benches/bench.py [DIR]

DIR (default target/bench-data) should be on the disk; figure 1 also runs on tmpfs
(/dev/shm). Prints each case's median with
its range, and the ratio against the peer named; the README's Python table comes from it.

- open + first element, 1 KiB and 64 GiB (sparse) float32 files: rastore.open,
  np.load(mmap_mode='r'), np.memmap (offset known), h5py, safetensors' safe_open;
- the RawArray paper's figure 1: write then read back vectors of 10 float32 and 10x10
  float32 images, a file per array (from a pool of 1,000 names), timed per array over
  rounds of 20,000 and 10,000: rastore, np.save/np.load, h5py;
- summing 1 GiB of float32 through the view, warm: rastore.open against np.memmap;
- 2 processes filling 1 GiB through open_slab against 2 processes on np.memmap r+;
- small files' writes (over existing names, and to new ones) and reads apart.

RASTORE_BENCH_ONLY=open,sum,fill,fig1,small picks sections.
"""
import multiprocessing as mp
import os
import statistics
import sys
import time

import h5py
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

import rastore

MAGIC = 0x7961727261776172


def per_call(fn, repeat=7, min_time=0.2):
    """Median (and range) over `repeat` rounds of the time per call of `fn`."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t >= min_time / 10:
            break
        n *= 2
    rounds = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t) / n)
    return statistics.median(rounds), min(rounds), max(rounds)


def show(name, t, base=None, unit=1e6, suffix="µs"):
    med, lo, hi = t
    ratio = "" if base is None else f"  rastore {med / base:5.2f}x faster"
    print(f"  {name:<44} {med * unit:10.2f} {suffix} ({lo * unit:.2f}..{hi * unit:.2f}){ratio}", flush=True)


def sparse_files(d, label, n):
    """A float32 file of n elements in each format; past 1 MiB, sparse."""
    ra, npy, h5, st = (os.path.join(d, f"py-open-{label}.{e}") for e in ("ra", "npy", "h5", "safetensors"))
    if n * 4 <= 1 << 20:
        a = np.arange(n, dtype=np.float32)
        rastore.write(ra, a)
        np.save(npy, a)
        save_file({"x": a}, st)
    else:
        with open(ra, "wb") as f:
            f.write(np.array([MAGIC, 0, 3, 4, 4 * n, 1, n], dtype="<u8").tobytes())
            f.truncate(56 + 4 * n)
        header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
        header["shape"] = (n,)
        with open(npy, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.truncate(f.tell() + 4 * n)
        st = None  # safetensors' file format needs the data written: no sparse file
    with h5py.File(h5, "w") as f:
        f.create_dataset("x", shape=(n,), dtype="f4")
    return ra, npy, h5, st


def bench_open(d):
    print("open + first element (per call):")
    for label, n in (("1KiB", 256), ("64GiB", 1 << 34)):
        ra, npy, h5, st = sparse_files(d, label, n)
        offset = 56
        base = per_call(lambda: np.load(npy, mmap_mode="r")[0])
        ours = per_call(lambda: rastore.open(ra)[0])
        show(f"{label}: rastore.MappedFile(p)", per_call(lambda: rastore.MappedFile(ra)))
        show(f"{label}: rastore.MappedFile(p).array (no element)", per_call(lambda: rastore.MappedFile(ra).array))
        show(f"{label}: rastore.open(p)[0]", ours)
        show(f"{label}: np.load(mmap_mode='r')[0]", base, ours[0])
        show(f"{label}: np.memmap(offset=..)[0]", per_call(lambda: np.memmap(ra, np.float32, "r", offset, (n,))[0]), ours[0])

        def h5_first():
            with h5py.File(h5, "r") as f:
                return f["x"][0]

        show(f"{label}: h5py File(p)['x'][0]", per_call(h5_first), ours[0])
        if st is not None:
            def st_first():
                with safe_open(st, framework="np") as f:
                    return f.get_slice("x")[0:1]

            show(f"{label}: safetensors safe_open get_slice[0:1]", per_call(st_first), ours[0])
        for p in (ra, npy, h5, st):
            if p:
                os.remove(p)


def bench_fig1(d):
    print(f"the paper's figure 1, a file per array in {d}, write + read back (per array):")
    pool = [os.path.join(d, f"py-fig1-{i}") for i in range(1000)]
    # The paper's counts are 100,000 vectors and 10,000 images; per-array times settle
    # well before that, so each round is 20,000 and 10,000 (h5py a tenth).
    for label, shape, count in (("vector of 10 f32", (10,), 20_000), ("10x10 f32 image", (10, 10), 10_000)):
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

        def run(write, read, ext, n):
            t = time.perf_counter()
            for k in range(n):
                p = pool[k % len(pool)] + ext
                write(p, a)
                read(p)
            return (time.perf_counter() - t) / n

        def h5_write(p, x):
            with h5py.File(p, "w") as f:
                f.create_dataset("x", data=x)

        def h5_read(p):
            with h5py.File(p, "r") as f:
                return f["x"][()]

        cases = {
            "rastore.write + rastore.read": (rastore.write, rastore.read, ".ra", count),
            "np.save + np.load": (np.save, np.load, ".npy", count),
            "h5py, a file per array": (h5_write, h5_read, ".h5", count // 10),
        }
        times = {k: [run(*v) for _ in range(3)] for k, v in cases.items()}
        ours = (statistics.median(times["rastore.write + rastore.read"]),)
        for k, ts in times.items():
            t = (statistics.median(ts), min(ts), max(ts))
            show(f"{label}: {k}", t, None if k.startswith("rastore") else ours[0])
        for p in pool:
            for ext in (".ra", ".npy", ".h5"):
                if os.path.exists(p + ext):
                    os.remove(p + ext)


def bench_small(d):
    """Figure 1's two halves apart, for a vector of 10 float32: writing over names that
    exist (as figure 1 does, cycling through 1,000 of them) and to new names, and reading."""
    print(f"small files in {d}, write and read apart (per call):")
    a = np.arange(10, dtype=np.float32)
    for kind, write, read, ext in (("rastore", rastore.write, rastore.read, ".ra"), ("numpy", np.save, np.load, ".npy")):
        names = [os.path.join(d, f"py-small-{i}{ext}") for i in range(2000)]
        t = time.perf_counter()
        for p in names[:1000]:
            write(p, a)
        fresh = (time.perf_counter() - t) / 1000
        rounds = []
        for _ in range(3):
            t = time.perf_counter()
            for p in names[:1000]:
                write(p, a)
            rounds.append((time.perf_counter() - t) / 1000)
        show(f"{kind}: write, 1,000 new names", (fresh, fresh, fresh))
        show(f"{kind}: write over existing names", (statistics.median(rounds), min(rounds), max(rounds)))
        show(f"{kind}: read", per_call(lambda: read(names[0])))
        for p in names[:1000]:
            os.remove(p)


def bench_sum(d):
    print("sum of 1 GiB float32 through a mapping, warm (per sum):")
    n = 1 << 28
    p = os.path.join(d, "py-sum.ra")
    rastore.write(p, np.ones(n, dtype=np.float32))
    ours = rastore.open(p)
    theirs = np.memmap(p, np.float32, "r", 56, (n,))
    ours.sum(), theirs.sum()  # warm the page cache
    t_ours = per_call(lambda: ours.sum(), repeat=5, min_time=0)
    t_mm = per_call(lambda: theirs.sum(), repeat=5, min_time=0)
    show("rastore.open(p).sum()", t_ours, unit=1e3, suffix="ms")
    show("np.memmap(p).sum()", t_mm, t_ours[0], unit=1e3, suffix="ms")
    ours = theirs = None  # unmapped, so that Windows lets the file go
    os.remove(p)


def fill_ra(p, start, stop):
    s = rastore.open_slab(p, start, stop)
    s[...] = np.float32(start + 1)
    return stop - start


def fill_memmap(p, start, stop, rows):
    m = np.memmap(p, np.float32, "r+", 4 * rows * start, (rows, stop - start), order="F")
    m[...] = np.float32(start + 1)
    return stop - start


def bench_fill(d):
    print("2 processes filling 1 GiB float32, halves of the last axis (per fill):")
    rows, cols = 1 << 18, 1 << 10
    ra = os.path.join(d, "py-fill.ra")
    raw = os.path.join(d, "py-fill.bin")
    half = cols // 2
    with mp.get_context("fork").Pool(2) as pool:
        def ours():
            rastore.create(ra, np.float32, (rows, cols), overwrite=True)
            pool.starmap(fill_ra, [(ra, 0, half), (ra, half, cols)])

        def theirs():
            np.memmap(raw, np.float32, "w+", 0, (rows * cols,))
            pool.starmap(fill_memmap, [(raw, 0, half, rows), (raw, half, cols, rows)])

        def timed(fn):
            ts = []
            for _ in range(5):
                for p in (ra, raw):
                    if os.path.exists(p):
                        os.remove(p)
                os.sync()
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
            return statistics.median(ts), min(ts), max(ts)

        t_ours = timed(ours)
        t_mm = timed(theirs)
    show("rastore.create + 2 x open_slab", t_ours, unit=1e3, suffix="ms")
    show("np.memmap w+ + 2 x np.memmap r+", t_mm, t_ours[0], unit=1e3, suffix="ms")
    for p in (ra, raw):
        if os.path.exists(p):
            os.remove(p)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "target", "bench-data")
    os.makedirs(d, exist_ok=True)
    print(f"numpy {np.__version__}, h5py {h5py.__version__}, in {os.path.abspath(d)}")
    shm = "/dev/shm/rastore-py-bench"
    os.makedirs(shm, exist_ok=True)
    only = os.environ.get("RASTORE_BENCH_ONLY", "open,sum,fill,fig1,small").split(",")
    if "open" in only:
        bench_open(d)
    if "sum" in only:
        bench_sum(d)
    if "fill" in only:
        bench_fill(d)
    if "fig1" in only:
        bench_fig1(shm)
        bench_fig1(d)
    if "small" in only:
        bench_small(d)


if __name__ == "__main__":
    main()
