"""nibabel judges rastore's NIfTI: `make DIR` writes images of every datatype nibabel
writes, ranks 1 to 7, NIfTI-1 and NIfTI-2, both byte orders, .nii, .nii.gz and pairs,
with scaling, qforms, intents and extensions, and lists them in DIR/cases.txt;
`check DIR` compares each with what rastore made of it (NAME.back.nii[.gz] from the
.ra, NAME.npy), header field by field, and prints "N checked; M mismatches"."""

import os
import sys

import nibabel as nib
import numpy as np

TYPES = ["u1", "i1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8", "c8", "c16", "rgb", "rgba"]
RGB = np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1")])
RGBA = np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1"), ("A", "u1")])


def values(t, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if t in ("rgb", "rgba"):
        dt = RGB if t == "rgb" else RGBA
        return rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt).reshape(shape, order="F")
    dt = np.dtype(t)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "c":
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    else:
        a = rng.standard_normal(n).astype(dt) * 100
    return a.reshape(shape, order="F")


def make(d):
    cases = []
    shapes = {1: (5,), 2: (4, 3), 3: (4, 3, 2), 4: (3, 2, 2, 2), 5: (2, 2, 3, 1, 2), 6: (2, 1, 2, 2, 1, 3), 7: (2, 2, 1, 2, 1, 2, 2)}
    aff = np.array([[-2.0, 0.1, 0, 90], [0.2, 2.5, 0, -126], [0, 0, 3, -72], [0, 0, 0, 1]])
    k = 0
    for t in TYPES:
        for rank, shape in shapes.items():
            k += 1
            version = 2 if k % 3 == 0 else 1
            order = ">" if k % 2 == 0 else "<"
            klass = (nib.Nifti2Image, nib.Nifti2Header) if version == 2 else (nib.Nifti1Image, nib.Nifti1Header)
            hdr = klass[1](endianness=order)
            a = values(t, shape, k)
            hdr.set_data_dtype({"rgb": 128, "rgba": 2304}.get(t, a.dtype))
            img = klass[0](a, aff if k % 4 else None, header=hdr)
            if k % 5 == 0:
                img.header["descrip"] = b"case %d" % k
                img.header["intent_code"] = 1002
                img.header["intent_name"] = b"label"
                img.header["intent_p1"] = 0.25
                img.header.set_xyzt_units("mm", "sec")
                img.header.extensions.append(nib.nifti1.Nifti1Extension(6, b"a comment %d" % k))
                img.header.extensions.append(nib.nifti1.Nifti1Extension(40, bytes(range(7))))
            if k % 7 == 0:
                img.set_qform(aff, code=1)
                img.header["slice_code"] = 1
                img.header["slice_duration"] = 0.5
                img.header["toffset"] = 1.5
                img.header["cal_max"] = 9.0
            ext = [".nii", ".nii.gz", ".hdr"][k % 3]
            if ext == ".hdr":
                img = (nib.Nifti2Pair if version == 2 else nib.Nifti1Pair).from_image(img)
            name = f"{t}_{rank}d_v{version}"
            nib.save(img, os.path.join(d, name + ext))
            cases.append((name, name + ext))
    # Scaled: float values stored as int16 with a slope and an intercept nibabel picks.
    for v, (ki, kh) in ((1, (nib.Nifti1Image, nib.Nifti1Header)), (2, (nib.Nifti2Image, nib.Nifti2Header))):
        a = np.linspace(-3.7, 1234.5, 60).reshape(3, 4, 5)
        hdr = kh()
        hdr.set_data_dtype(np.int16)
        img = ki(a, aff, header=hdr)
        name = f"scaled_v{v}"
        nib.save(img, os.path.join(d, name + ".nii"))
        cases.append((name, name + ".nii"))
    with open(os.path.join(d, "cases.txt"), "w") as f:
        for name, file in cases:
            f.write(f"{name} {file}\n")


def unscaled(img):
    return np.asanyarray(img.dataobj.get_unscaled())


def same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f":
        return np.array_equal(x, y, equal_nan=True)
    return np.array_equal(x, y)


# Fields nibabel recomputes or that hold no value of the image.
SKIP = {"vox_offset", "sizeof_hdr", "magic", "scl_slope", "scl_inter", "regular", "glmax", "glmin", "data_type", "db_name", "extents", "session_error", "unused_str"}


def check(d):
    bad = n = 0
    for line in open(os.path.join(d, "cases.txt")):
        name, file = line.split()
        a = nib.load(os.path.join(d, file))
        for back in (name + ".back.nii", name + ".back.nii.gz"):
            p = os.path.join(d, back)
            if not os.path.exists(p):
                continue
            n += 1
            b = nib.load(p)
            why = []
            if a.shape != b.shape:
                why.append(f"shape {a.shape} {b.shape}")
            elif a.get_data_dtype() != b.get_data_dtype().newbyteorder(a.get_data_dtype().byteorder) and a.get_data_dtype().str[1:] != b.get_data_dtype().str[1:]:
                why.append(f"dtype {a.get_data_dtype()} {b.get_data_dtype()}")
            elif not same(unscaled(a), unscaled(b)):
                why.append("values")
            elif a.get_data_dtype().names is None and not same(a.get_fdata(), b.get_fdata()):
                why.append("get_fdata")
            if not np.array_equal(a.affine, b.affine):
                why.append(f"affine {a.affine} {b.affine}")
            # nibabel moves the scaling from the header to the dataobj as it loads.
            sa, sb = (a.dataobj.slope, a.dataobj.inter), (b.dataobj.slope, b.dataobj.inter)
            if sa != sb:
                why.append(f"slope/inter {sa} {sb}")
            for k in a.header.keys():
                if k not in SKIP and not same(a.header[k], b.header[k]):
                    why.append(f"{k} {a.header[k]} {b.header[k]}")
            ea = [(e.get_code(), bytes(e._raw) if hasattr(e, "_raw") else e.content) for e in a.header.extensions]
            eb = [(e.get_code(), bytes(e._raw) if hasattr(e, "_raw") else e.content) for e in b.header.extensions]
            if ea != eb:
                why.append(f"extensions {ea} {eb}")
            if why:
                bad += 1
                print(back, "; ".join(why))
        p = os.path.join(d, name + ".npy")
        if os.path.exists(p):
            n += 1
            x = np.load(p)
            if x.shape != a.shape or not same(x, unscaled(a)):
                bad += 1
                print(name + ".npy", x.shape, x.dtype, a.shape, a.get_data_dtype())
    print(f"{n} checked; {bad} mismatches")


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
