"""safetensors against its peers, in the same run (issue 38).

1. A safetensors file of GIB GiB of tensors (a model's shapes: 2-D float32 and float16
   weights, 1-D biases, as `safetensors.numpy.save_file` writes them) converted into a
   dataset folder (`ra convert m.safetensors out/`, one NAME.ra per tensor, each
   transposed to column-major) against `cp` of the same file. The target: the
   conversion at least 0.8x as fast as `cp` (the ratio printed is cp's time over ra's).
2. Opening one tensor in place, `rastore.open("m.safetensors/NAME")`, against
   `safe_open(..., framework="numpy")` + `get_tensor(NAME)` (which copies it): each to a
   NumPy array, then each summed (every page read). The target: rastore no slower.

The page cache is warm (the file is read once first) and `sync` runs before each timed
conversion, so that no run pays for the one before's writeback. `cp` and `ra convert`
run in turn, RUNS rounds, and their ratio is also given round by round (a slow spell of
the machine falls on both), each after as much memory as it writes is touched and
freed (`timing.recycle`: on a VM that hands free pages back to its host, the one that
gets those pages back pays for it); the opening cases run RUNS times each (20 at least). Each
case's median is reported, with min and max.

3. The same opening on a file of SPARSE GiB (default 10, the issue's 10 GB): a header
   of that many 64 MiB float32 tensors laid out as the package lays them out, the first
   tensor written, the rest of the file a hole (`truncate`), so the size is real
   without the disk: neither reader touches another tensor's bytes.

Usage: safetensors_peers.py RA DIR RUNS [GIB [SPARSE]]
  RA: the `ra` binary (target/release/ra for figures worth quoting); DIR: where the
  files go (3 x GIB of room). `rastore` (this package) must be importable.
Prints `name<TAB>median<TAB>min<TAB>max` in seconds per case, then the ratios.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

import rastore
from timing import in_turn, paired, recycle, row, timed, warm


def make(path, gib):
    """Layers of a 4096-wide model: (4096, 4096) float32 and (4096, 2048) float16
    weights and 4096 biases, until GIB GiB."""
    rng = np.random.default_rng(38)
    w32 = rng.normal(size=(4096, 4096)).astype(np.float32)
    w16 = rng.normal(size=(4096, 2048)).astype(np.float16)
    bias = rng.normal(size=4096).astype(np.float32)
    tensors, total, k = {}, 0, 0
    while total < gib * (1 << 30):
        tensors[f"layers.{k}.attn.weight"] = w32 + np.float32(k)
        tensors[f"layers.{k}.mlp.weight"] = w16
        tensors[f"layers.{k}.attn.bias"] = bias
        total += w32.nbytes + w16.nbytes + bias.nbytes
        k += 1
    save_file(tensors, path, metadata={"format": "np", "layers": str(k)})
    return sorted(tensors)


def make_sparse(path, gib):
    """A safetensors file of ``gib`` GiB of (4096, 4096) float32 tensors, the first
    written and the rest a hole; returns the first's name and values."""
    import json
    import struct

    n = max(1, int(gib * (1 << 30)) // (64 << 20))
    first = np.random.default_rng(10).normal(size=(4096, 4096)).astype(np.float32)
    header = {f"t.{k:04}": {"dtype": "F32", "shape": [4096, 4096],
                            "data_offsets": [k * first.nbytes, (k + 1) * first.nbytes]}
              for k in range(n)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.write(first.tobytes())
        f.truncate(8 + len(text) + n * first.nbytes)
    return "t.0000", first


def main():
    ra, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gib = float(sys.argv[4]) if len(sys.argv) > 4 else 4.0
    sparse = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "m.safetensors")
    names = make(src, gib)
    size = os.path.getsize(src)
    print(f"# {size / (1 << 30):.2f} GiB, {len(names)} tensors, {runs} runs", flush=True)
    warm(src)
    copy, out = os.path.join(d, "copy.safetensors"), os.path.join(d, "out")

    def clean():
        for p in (copy, out):
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
        subprocess.run(["sync"], check=True)
        recycle(size)

    turns = in_turn({
        "cp": lambda: subprocess.run(["cp", src, copy], check=True),
        "ra": lambda: subprocess.run([ra, "convert", src, out], check=True),
    }, runs, clean)
    cp = row("cp", sorted(turns["cp"]))
    conv = row("ra convert -> folder", sorted(turns["ra"]))
    by_run = paired(turns["cp"], turns["ra"])
    clean()

    name = "layers.0.attn.weight"
    def ours():
        return rastore.open(f"{src}/{name}")

    def peer():
        with safe_open(src, framework="numpy") as f:
            return f.get_tensor(name)

    np.testing.assert_array_equal(ours(), peer())
    reps = max(runs, 20)
    o_open = row("rastore.open(m.safetensors/NAME)", timed(ours, reps))
    p_open = row("safe_open + get_tensor", timed(peer, reps))
    o_sum = row("rastore.open + sum", timed(lambda: ours().sum(dtype=np.float64), reps))
    p_sum = row("safe_open + get_tensor + sum", timed(lambda: peer().sum(dtype=np.float64), reps))
    big = os.path.join(d, "big.safetensors")
    first, values = make_sparse(big, sparse)

    def ours_big():
        return rastore.open(f"{big}/{first}")

    def peer_big():
        with safe_open(big, framework="numpy") as f:
            return f.get_tensor(first)

    np.testing.assert_array_equal(ours_big(), values)
    np.testing.assert_array_equal(peer_big(), values)
    b_ours = row(f"rastore.open, {os.path.getsize(big) / 1e9:.1f} GB file", timed(ours_big, reps))
    b_peer = row(f"safe_open + get_tensor, {os.path.getsize(big) / 1e9:.1f} GB file",
                 timed(peer_big, reps))
    os.remove(big)
    print(f"# ratio cp / ra convert (target >= 0.8): {cp / conv:.2f}; run by run, median "
          f"{by_run[0]:.2f} (min {by_run[1]:.2f}, max {by_run[2]:.2f})")
    print(f"# GB/s: cp {size / cp / 1e9:.2f}, ra convert {size / conv / 1e9:.2f}")
    print(f"# ratio safe_open+get_tensor / rastore.open (target >= 1): {p_open / o_open:.1f}")
    print(f"# with a sum of every element: {p_sum / o_sum:.2f}")
    print(f"# on the {sparse:g} GiB file, safe_open+get_tensor / rastore.open: "
          f"{b_peer / b_ours:.1f}")


if __name__ == "__main__":
    main()
