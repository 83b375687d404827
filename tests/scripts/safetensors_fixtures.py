"""safetensors files made and judged by the safetensors package, for
tests/integration/safetensors.rs.

    make DIR         m.safetensors (every NumPy type, ranks 0 to 3, metadata) and
                     bf16.safetensors (bfloat16 and complex64, written by hand)
    same A B         A and B hold the same tensors (names, dtypes, shapes, values) and
                     the same __metadata__, as load_file and safe_open read them
    npz A NPZ        the tensors of A equal the arrays of NPZ (as np.load reads them)
    npy A NAME NPY   the tensor NAME of A equals the .npy NPY
"""

import json
import struct
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

TYPES = ["bool", "uint8", "int8", "uint16", "int16", "float16", "uint32", "int32",
         "float32", "uint64", "int64", "float64"]
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0, 3)]


def tensors():
    rng = np.random.default_rng(38)
    out = {}
    for t in TYPES:
        for k, shape in enumerate(SHAPES):
            n = int(np.prod(shape))
            if t == "bool":
                a = rng.integers(0, 2, n).astype(bool)
            elif t.startswith("float"):
                a = rng.normal(size=n).astype(t)
            else:
                info = np.iinfo(t)
                a = rng.integers(info.min, info.max, n, dtype=t, endpoint=True)
            out[f"layers.{k}.{t}"] = a.reshape(shape)
    return out


def write_raw(path, entries, metadata):
    """A safetensors file of (name, dtype, shape, bytes), laid out in that order."""
    head, data = {}, b""
    if metadata:
        head["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        head[name] = {"dtype": dtype, "shape": list(shape),
                      "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def metadata(path):
    with safe_open(path, framework="numpy") as f:
        return f.metadata()


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        d = sys.argv[2]
        save_file(tensors(), f"{d}/m.safetensors",
                  metadata={"format": "np", "model": "issue 38", "n": "12"})
        import ml_dtypes
        bf = np.array([[1.5, -2.0, 3.25], [0.0, 1e30, -1e-3]], dtype=ml_dtypes.bfloat16)
        c = np.array([1 + 2j, -3.5j, 4], dtype=np.complex64)
        write_raw(f"{d}/bf16.safetensors",
                  [("w.bf16", "BF16", bf.shape, bf.tobytes()),
                   ("z.c64", "C64", c.shape, c.tobytes())], None)
    elif cmd == "same":
        a, b = load_file(sys.argv[2]), load_file(sys.argv[3])
        assert sorted(a) == sorted(b), (sorted(a), sorted(b))
        for k in a:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, (k, a[k], b[k])
            assert np.array_equal(a[k], b[k]), k
        assert metadata(sys.argv[2]) == metadata(sys.argv[3]), (
            metadata(sys.argv[2]), metadata(sys.argv[3]))
        print(len(a), "tensors")
    elif cmd == "npz":
        a, z = load_file(sys.argv[2]), dict(np.load(sys.argv[3]))
        assert sorted(a) == sorted(z), (sorted(a), sorted(z))
        for k in a:
            assert a[k].dtype == z[k].dtype and a[k].shape == z[k].shape, k
            assert np.array_equal(a[k], z[k]), k
        print(len(a), "arrays")
    elif cmd == "npy":
        with safe_open(sys.argv[2], framework="numpy") as f:
            want = f.get_tensor(sys.argv[3])
        got = np.load(sys.argv[4])
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        assert np.array_equal(got, want)
        print("equal")
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
