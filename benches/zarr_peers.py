"""`ra convert` between .ra and Zarr v3 against zarr-python doing the same, and `cp`.

A 4 GiB float32 array, 1024 x 1024 x 1024 (column-major in the .ra), of detector-like
frames (Poisson counts around a smooth image, stored as float32). Each case runs RUNS
times, the page cache warm (the input is read once before), with `sync` before each run
so that no run pays for the previous one's writeback. zarr-python gets the same chunks
(whole 1024 x 1024 frames, 4 MiB) and the same codecs (transpose to column-major,
bytes, and zstd level 3 or nothing); it writes from, and reads into, an `np.memmap` of
the same file. Its threads are its defaults.

On a virtual machine whose memory the host backs on first touch, the first gigabytes
written after boot cost several times more than later ones: touch the memory once first
(`python3 -c "import numpy; numpy.ones(20 << 30, 'u1')"` on a 24 GiB machine).

Usage: zarr_peers.py RA DIR RUNS [GIB]
  RA: the `ra` binary (target/release/ra); DIR: where the files go (GIB x 4 of room).
Prints one line per case, `name<TAB>median<TAB>min<TAB>max` in seconds, then the ratios.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import zarr
from zarr.codecs import BytesCodec, TransposeCodec, ZstdCodec

MAGIC = 0x7961_7272_6177_6172
FLOAT = 3


def ra_header(dims, elbyte=4):
    size = elbyte * int(np.prod(dims))
    return np.array([MAGIC, 0, FLOAT, elbyte, size, len(dims), *dims], dtype="<u8").tobytes()


def make_input(path, dims):
    """Frames along the last axis: a smooth image plus Poisson counts, cycled."""
    nx, ny, nt = dims
    rng = np.random.default_rng(7)
    x = np.linspace(0, 6, nx, dtype=np.float32)[:, None]
    y = np.linspace(0, 6, ny, dtype=np.float32)[None, :]
    base = 200 + 100 * np.sin(x) * np.cos(y)
    noise = [rng.poisson(base).astype(np.float32) for _ in range(8)]
    with open(path, "wb") as f:
        f.write(ra_header(dims))
        for t in range(nt):
            # Column-major frame t: bytes of the (nx, ny) frame in Fortran order.
            f.write(np.asfortranarray(noise[t % 8] + np.float32(t % 17)).tobytes(order="F"))


def memmap(path, dims, mode):
    return np.memmap(path, dtype="<f4", mode=mode, offset=48 + 8 * len(dims),
                     shape=tuple(dims), order="F")


def new_ra(path, dims):
    with open(path, "wb") as f:
        f.write(ra_header(dims))
        f.truncate(48 + 8 * len(dims) + 4 * int(np.prod(dims)))


def zarr_write(src, dst, dims, zstd):
    a = memmap(src, dims, "r")
    z = zarr.create_array(
        dst, shape=a.shape, chunks=(a.shape[0], a.shape[1], 1), dtype="<f4",
        filters=[TransposeCodec(order=tuple(reversed(range(len(dims)))))],
        serializer=BytesCodec(endian="little"),
        compressors=[ZstdCodec(level=3)] if zstd else None, overwrite=True,
        fill_value=0,
    )
    z[...] = a


def zarr_read(src, dst, dims):
    new_ra(dst, dims)
    out = memmap(dst, dims, "r+")
    out[...] = zarr.open_array(src, mode="r")[...]
    out.flush()


def ra(binary, *args):
    subprocess.run([binary, *args], check=True, stdout=subprocess.DEVNULL)


def rm(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def timed(runs, fn, out):
    ts = []
    for _ in range(runs):
        rm(out)
        os.sync()
        start = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - start)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def main():
    binary, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gib = float(sys.argv[4]) if len(sys.argv) > 4 else 4.0
    nt = max(1, int(round(gib * 256)))  # 4 MiB frames
    dims = [1024, 1024, nt]
    x = os.path.join(d, "zb.ra")
    if not os.path.exists(x) or os.path.getsize(x) != 48 + 24 + 4 * 1024 * 1024 * nt:
        make_input(x, dims)
    with open(x, "rb") as f:  # warm the page cache
        while f.read(1 << 24):
            pass
    plain, packed = os.path.join(d, "zb.zarr"), os.path.join(d, "zbz.zarr")
    back, copy = os.path.join(d, "zb-back.ra"), os.path.join(d, "zb-copy.ra")
    cases = [
        ("cp", lambda: ra_cp(x, copy), copy),
        ("ra ra->zarr", lambda: ra(binary, "convert", "--array", *chunks, x, plain), plain),
        ("zarr-python ra->zarr", lambda: zarr_write(x, plain, dims, False), plain),
        ("ra ra->zarr zstd",
         lambda: ra(binary, "convert", "--array", *chunks, "--codec", "zstd:3", x, packed), packed),
        ("zarr-python ra->zarr zstd", lambda: zarr_write(x, packed, dims, True), packed),
    ]
    results = {}
    chunks = ["--chunks", "1024,1024,1"]
    for name, fn, out in cases:
        results[name] = timed(runs, fn, out)
        print(f"{name}\t" + "\t".join(f"{t:.3f}" for t in results[name]), flush=True)
    rm(copy)
    # The stores of the last runs (zarr-python's) are the inputs of the way back.
    for name, fn, out in [
        ("ra zarr->ra", lambda: ra(binary, "convert", plain, back), back),
        ("zarr-python zarr->ra", lambda: zarr_read(plain, back, dims), back),
        ("ra zarr->ra zstd", lambda: ra(binary, "convert", packed, back), back),
        ("zarr-python zarr->ra zstd", lambda: zarr_read(packed, back, dims), back),
    ]:
        results[name] = timed(runs, fn, out)
        print(f"{name}\t" + "\t".join(f"{t:.3f}" for t in results[name]), flush=True)
    same = np.array_equal(memmap(x, dims, "r"), memmap(back, dims, "r"))
    print(f"values back equal: {same}")
    print(f"zstd store: {du(packed) / 2**30:.2f} GiB of {os.path.getsize(x) / 2**30:.2f}")
    for way in ["ra->zarr", "ra->zarr zstd", "zarr->ra", "zarr->ra zstd"]:
        r = results[f"zarr-python {way}"][0] / results[f"ra {way}"][0]
        print(f"{way}: ra {r:.2f}x zarr-python")
    for way in ["ra->zarr", "zarr->ra"]:
        r = results[f"ra {way}"][0] / results["cp"][0]
        print(f"{way}: ra takes {r:.2f}x cp")
    for p in [plain, packed, back]:
        rm(p)


def ra_cp(src, dst):
    subprocess.run(["cp", src, dst], check=True)


def du(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


if __name__ == "__main__":
    main()
