"""A `.nii.gz` into a `.ra`: `ra convert` against nibabel loading it and `rastore.write`
(the peer path a Python user has), in the same run, and the ratio.

The image is an fMRI-like int16 series, 256 x 256 x 128 x T (T from GIB: 1 GiB of
voxels is T = 64): a smooth head-shaped volume plus noise, drifting over time, saved
by nibabel (gzip level 1, nibabel's default). Each case runs RUNS times, the
compressed file in the page cache (read once before), with `sync` before each run so
that no run pays for the previous one's writeback. Each side writes a new `.ra`.

Usage: nifti_peers.py RA DIR RUNS [GIB]
  RA: the `ra` binary (target/release/ra); DIR: where the files go (about 2.5 x GIB of
  room). `rastore` must be importable (the same build as RA).
Prints one line per case, `name<TAB>median<TAB>min<TAB>max` in seconds, then the ratio.
"""
import os
import subprocess
import sys
import time

import nibabel as nib
import numpy as np

import rastore


def make_input(path, t):
    x, y, z = np.meshgrid(np.linspace(-1, 1, 256), np.linspace(-1, 1, 256),
                          np.linspace(-1, 1, 128), indexing="ij")
    head = (x ** 2 / 0.8 + y ** 2 / 0.9 + z ** 2 / 0.7) < 1
    base = np.where(head, 800 + 300 * np.cos(3 * x) * np.sin(2 * y), 0).astype(np.float32)
    rng = np.random.default_rng(3)
    data = np.empty((256, 256, 128, t), dtype=np.int16, order="F")
    for k in range(t):
        noise = rng.normal(0, 20, base.shape).astype(np.float32)
        data[..., k] = np.clip(base * (1 + 0.01 * np.sin(k / 5)) + noise * head, -32768, 32767)
    img = nib.Nifti1Image(data, np.diag([-2.0, 2.0, 2.2, 1.0]), dtype=np.int16)
    img.header.set_xyzt_units("mm", "sec")
    nib.save(img, path)


def peer(src, dst):
    img = nib.load(src)
    rastore.write(dst, np.asanyarray(img.dataobj))


def timed(runs, fn, out):
    ts = []
    for _ in range(runs):
        if os.path.exists(out):
            os.remove(out)
        os.sync()
        start = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - start)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def main():
    binary, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gib = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    t = max(1, int(round(gib * 64)))
    src = os.path.join(d, f"fmri-{t}.nii.gz")
    if not os.path.exists(src):
        make_input(src, t)
    with open(src, "rb") as f:  # warm the page cache
        while f.read(1 << 24):
            pass
    out = os.path.join(d, "fmri.ra")
    cases = [
        ("ra convert", lambda: subprocess.run([binary, "convert", src, out], check=True)),
        ("nibabel + rastore.write", lambda: peer(src, out)),
    ]
    results = {}
    for name, fn in cases:
        results[name] = timed(runs, fn, out)
        print(f"{name}\t" + "\t".join(f"{v:.3f}" for v in results[name]), flush=True)
    os.remove(out)
    mine, theirs = results["ra convert"][0], results["nibabel + rastore.write"][0]
    print(f"{os.path.getsize(src) / 2**30:.2f} GiB compressed, {gib:.2f} GiB of voxels")
    print(f"speedup (nibabel + rastore.write) / ra convert: {theirs / mine:.2f}x")


if __name__ == "__main__":
    main()
