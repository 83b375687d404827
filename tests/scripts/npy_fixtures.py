"""Writes .npy fixtures with NumPy, and checks round-tripped files.

    python3 npy_fixtures.py make DIR     # DIR/<name>.npy and DIR/<name>.fbytes
    python3 npy_fixtures.py check DIR    # compares DIR/<name>.back.npy with DIR/<name>.npy

<name>.fbytes holds the array's elements in column-major order, native byte order:
what the .ra data segment must be. Every case is listed in DIR/cases.txt as
`name rastore-type dims` (dims comma-separated, '-' for 0-d).
"""
import sys
from pathlib import Path

import numpy as np
from numpy.lib import format as npf


def cases():
    rng = np.random.default_rng(7)
    out = {}
    numeric = ["f2", "f4", "f8", "c8", "c16", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
    for code in numeric:
        a = (rng.standard_normal((3, 4, 5)) * 100).astype("<" + code if code not in ("i1", "u1") else code)
        if code.startswith("c"):
            a = a + 1j * (rng.standard_normal((3, 4, 5)) * 10).astype(a.dtype)
        out[f"c_{code}"] = (a, False, None)
        out[f"f_{code}"] = (a, True, None)
        out[f"be_{code}"] = (a.astype(a.dtype.newbyteorder(">")), False, None)
    out["bool"] = (rng.standard_normal((4, 6)) > 0, False, None)
    out["scalar"] = (np.array(3.5, dtype="<f8"), False, None)
    out["empty"] = (np.zeros((3, 0, 2), dtype="<i4"), False, None)
    out["vec"] = (np.arange(7, dtype="<u2"), False, None)
    out["v2"] = (np.arange(12, dtype="<f4").reshape(3, 4), False, (2, 0))
    out["v3"] = (np.arange(12, dtype="<i8").reshape(4, 3), False, (3, 0))
    people = np.array(
        [(b"ada", 36, 61.5), (b"grace", 85, 55.25), (b"linus", 54, 80.0), (b"x" * 10, -1, 0.5)],
        dtype=[("name", "S10"), ("age", "<i4"), ("weight", "<f4")],
    )
    out["struct"] = (people, False, None)
    out["struct2d"] = (np.stack([people, people[::-1]], axis=1), False, None)
    return out


def ra_type(dt):
    if dt.kind == "V":
        return f"user<{dt.itemsize}>"
    if dt.kind == "b":
        return "bool"
    prefix = {"i": "int", "u": "uint", "f": "float", "c": "complex"}[dt.kind]
    return f"{prefix}{dt.itemsize * 8}"


def make(d):
    d.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, (a, fortran, version) in cases().items():
        with open(d / f"{name}.npy", "wb") as f:
            npf.write_array(f, a.copy(order="F" if fortran else "C"), version=version)
        native = a.astype(a.dtype.newbyteorder("=")) if a.dtype.byteorder == ">" else a
        (d / f"{name}.fbytes").write_bytes(native.tobytes(order="F"))
        dims = ",".join(str(x) for x in a.shape) or "-"
        lines.append(f"{name} {ra_type(a.dtype)} {dims}")
    (d / "cases.txt").write_text("\n".join(lines) + "\n")


def check(d):
    bad = 0
    for line in (d / "cases.txt").read_text().split("\n"):
        if not line:
            continue
        name = line.split()[0]
        a = np.load(d / f"{name}.npy")
        b = np.load(d / f"{name}.back.npy")
        same = a.shape == b.shape and a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=")
        same = same and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        if not same:
            bad += 1
            print(f"MISMATCH {name}: {a.dtype} {a.shape} vs {b.dtype} {b.shape}")
    print(f"checked; {bad} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](Path(sys.argv[2]))
