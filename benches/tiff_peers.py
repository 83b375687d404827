"""`ra convert x.tif x.ra` of a multi-page uint16 TIFF against `tifffile.imread` +
`rastore.write` of the same file, and `cp` (issue 38's TIFF benchmark).

The input is what `tifffile.imwrite` writes for a (pages, 2048, 2048) uint16 stack:
uncompressed, one strip per page, pages one after another, so `ra convert` reads it in
place as a C-order array (docs/formats/tiff.md) and writes the column-major `.ra`.
The peer reads it with `tifffile.imread` into a NumPy array and writes that with
`rastore.write` (the same `.ra`), in a fresh Python process per run, as `ra` is. With
`--deflate`, the input is Deflate-compressed (tifffile's `compression='zlib'`), which
both decode. Each case runs RUNS times, in turn, the page cache warm (the input read
once before), with `sync` before each run so that no run pays for another's writeback,
then as much memory as a run writes touched and freed (`timing.recycle`, for a VM
that hands free pages back to its host); the outputs are removed between runs.

Usage: tiff_peers.py RA DIR RUNS [GIB] [--deflate] [--peer-path PYTHONPATH]
  RA: the `ra` binary; DIR: where the files go (4 x GIB of room); GIB: the input's size
  (default 2, as the issue asks); --peer-path: the PYTHONPATH of the `rastore` the peer
  writes with (default: the one this Python imports).
Prints `name<TAB>median<TAB>min<TAB>max` seconds per case, then the ratios of medians
and the median of the ratios run by run (the cases run in turn: a slow spell of the
machine falls on each).
"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import tifffile

from timing import paired, recycle

PEER = """
import sys, tifffile, rastore
rastore.write(sys.argv[2], tifffile.imread(sys.argv[1]))
"""


def make_input(path, gib, deflate):
    pages = max(1, int(gib * (1 << 30)) // (2048 * 2048 * 2))
    rng = np.random.default_rng(38)
    frames = [rng.poisson(900, (2048, 2048)).astype(np.uint16) for _ in range(4)]
    if deflate:
        # One series: tifffile compresses the pages of one write, not of several.
        stack = np.empty((pages, 2048, 2048), np.uint16)
        for i in range(pages):
            stack[i] = frames[i % 4] + np.uint16(i % 7)
        tifffile.imwrite(path, stack, photometric="minisblack", compression="zlib",
                         bigtiff=gib >= 4)
        return pages
    with tifffile.TiffWriter(path, bigtiff=gib >= 4) as w:
        for i in range(pages):
            w.write(frames[i % 4] + np.uint16(i % 7), photometric="minisblack",
                    contiguous=True)
    return pages


def timed(cmd, env=None, recycled=0):
    subprocess.run(["sync"], check=True)
    recycle(recycled)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    deflate = "--deflate" in sys.argv
    peer_path = None
    if "--peer-path" in sys.argv:
        peer_path = sys.argv[sys.argv.index("--peer-path") + 1]
        args.remove(peer_path)
    ra, folder, runs = args[0], args[1], int(args[2])
    gib = float(args[3]) if len(args) > 3 else 2.0
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "stack.tif")
    pages = make_input(src, gib, deflate)
    with open(src, "rb") as f:
        while f.read(64 << 20):
            pass
    env = dict(os.environ)
    if peer_path:
        env["PYTHONPATH"] = peer_path
    out = {name: os.path.join(folder, name) for name in ["copy.tif", "ra.ra", "peer.ra"]}
    cases = {
        "cp": ["cp", src, out["copy.tif"]],
        "ra convert": [ra, "convert", src, out["ra.ra"]],
        "tifffile.imread + rastore.write": [sys.executable, "-c", PEER, src, out["peer.ra"]],
    }
    times = {name: [] for name in cases}
    for _ in range(runs):
        for name, cmd in cases.items():
            times[name].append(timed(cmd, env if name.startswith("tifffile") else None,
                                     os.path.getsize(src)))
        same = subprocess.run([ra, "diff", out["ra.ra"], out["peer.ra"]], capture_output=True,
                              text=True)
        assert same.returncode == 0, same.stdout + same.stderr
        for p in out.values():
            os.remove(p)
    size = os.path.getsize(src)
    print(f"# {pages} pages of 2048 x 2048 uint16, {size / (1 << 30):.2f} GiB"
          f"{', Deflate' if deflate else ''}; {runs} runs")
    med = {}
    for name, ts in times.items():
        med[name] = statistics.median(ts)
        print(f"{name}\t{med[name]:.3f}\t{min(ts):.3f}\t{max(ts):.3f}")
    ra_t = med["ra convert"]
    peer = "tifffile.imread + rastore.write"
    for name, label in [("cp", "cp"), (peer, f"({peer})")]:
        r = paired(times[name], times["ra convert"])
        print(f"ra convert speed / {label} speed: {med[name] / ra_t:.2f}; run by run, "
              f"median {r[0]:.2f} (min {r[1]:.2f}, max {r[2]:.2f})")
    os.remove(src)


if __name__ == "__main__":
    main()
