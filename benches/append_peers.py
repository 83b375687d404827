"""The peers of `cargo bench --bench append` (a2): 1 GiB as 256 frames of 1024 x 1024
float32 appended to one file, each frame made durable or flushed as the peer allows.

Usage: append_peers.py DIR RUNS. Prints `name<TAB>median<TAB>min<TAB>max` in seconds.
"""
import os
import sys
import time

import h5py
import numpy as np
from npy_append_array import NpyAppendArray

FRAMES = 256


def frames():
    return [np.full((1024, 1024), t, dtype=np.float32) + np.arange(1024, dtype=np.float32)
            for t in range(8)]


def h5(path, fs, fsync):
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(0, 1024, 1024), maxshape=(None, 1024, 1024),
                             chunks=(1, 1024, 1024), dtype="f4")
        for t in range(FRAMES):
            d.resize(t + 1, axis=0)
            d[t] = fs[t % len(fs)]
            f.flush()
            if fsync:
                os.fsync(f.id.get_vfd_handle())


def npy_append(path, fs):
    with NpyAppendArray(path, delete_if_exists=True) as a:
        for t in range(FRAMES):
            a.append(fs[t % len(fs)][None])


def timed(path, runs, fn):
    ts = []
    for _ in range(runs):
        if os.path.exists(path):
            os.remove(path)
        os.sync()
        start = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - start)
    if os.path.exists(path):
        os.remove(path)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def main():
    d, runs = sys.argv[1], int(sys.argv[2])
    fs = frames()
    h = os.path.join(d, "a2.h5")
    n = os.path.join(d, "a2.npy")
    cases = [
        ("h5py chunked append, flush per frame", h, lambda: h5(h, fs, False)),
        ("h5py chunked append, flush + fsync per frame", h, lambda: h5(h, fs, True)),
        ("npy-append-array (never syncs)", n, lambda: npy_append(n, fs)),
    ]
    for name, path, fn in cases:
        med, lo, hi = timed(path, runs, fn)
        print(f"{name}\t{med}\t{lo}\t{hi}", flush=True)


main()
