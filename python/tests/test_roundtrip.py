"""Every dtype in every layout through write, read and open, judged by np.save/np.load."""
import numpy as np
import pytest

import rastore

DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
]


def sample(dtype, shape, seed=7):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        x = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    elif dtype.kind == "c":
        x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:
        x = rng.standard_normal(n).astype(dtype)
    return x.reshape(shape)


LAYOUTS = {
    "C": lambda a: np.ascontiguousarray(a),
    "F": lambda a: np.asfortranarray(a),
    "strided": lambda a: a[::2, 1::2, ::-1],
    "0-d": lambda a: a[0, 0, 0, ...],
    "empty": lambda a: a[:, :0, :],
}


def judge(tmp_path, a):
    """np.save then np.load: what NumPy itself gives back."""
    np.save(tmp_path / "judge.npy", a)
    return np.load(tmp_path / "judge.npy")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype_and_layout(tmp_path, dtype, layout):
    a = LAYOUTS[layout](sample(dtype, (6, 5, 4)))
    want = judge(tmp_path, a)
    p = tmp_path / "x.ra"
    rastore.write(p, a)
    for got in (rastore.read(p), rastore.open(p)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == want.tobytes()
    assert rastore.info(p)["dims"] == list(a.shape)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex64])
def test_compressed_and_big_endian_inputs_read_back(tmp_path, dtype):
    a = sample(dtype, (7, 3, 2))
    p = tmp_path / "z.ra"
    rastore.write(p, a, compress=True, metadata=b"\x00bytes")
    np.testing.assert_array_equal(rastore.read(p), a)
    assert rastore.MappedFile(p).metadata == b"\x00bytes"
    be = a.astype(a.dtype.newbyteorder(">"))
    rastore.write(p, be)
    np.testing.assert_array_equal(rastore.open(p), a)


def test_structured_dtypes_keep_their_fields(tmp_path):
    dt = np.dtype([("name", "S10"), ("age", "<i4"), ("weight", "<f4")])
    a = np.array([(b"ann", 31, 61.5), (b"bob", 42, 80.25), (b"cy", 7, 20.0)], dtype=dt)
    p = tmp_path / "s.ra"
    rastore.write(p, a)
    assert (rastore.info(p)["eltype"], rastore.info(p)["elbyte"]) == (0, 18)
    for got in (rastore.read(p), rastore.open(p)):
        assert got.dtype == dt
        np.testing.assert_array_equal(got, judge(tmp_path, a))
    # `ra convert` to .npy agrees: the same trailer, written the same way.
    rastore.convert(p, tmp_path / "s.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), a)


def test_long_double_is_stored_with_its_descr(tmp_path):
    a = np.arange(5, dtype=np.longdouble) / 3
    p = tmp_path / "g.ra"
    rastore.write(p, a)
    assert rastore.info(p)["dtype"] == "user<16>"
    np.testing.assert_array_equal(rastore.read(p), a)


def test_bfloat16_with_ml_dtypes(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([[1.5, -2.0], [3.25, 1e30]], dtype=ml_dtypes.bfloat16)
    p = tmp_path / "b.ra"
    rastore.write(p, a)
    assert rastore.info(p)["dtype"] == "bfloat16"
    for got in (rastore.read(p), rastore.open(p)):
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got.astype(np.float32), a.astype(np.float32))


@pytest.mark.parametrize("eltype, elbyte, name", [(1, 16, "int128"), (4, 4, "complex32")])
def test_types_without_a_numpy_equivalent_are_refused(tmp_path, eltype, elbyte, name):
    p = tmp_path / "n.ra"
    header = np.array([0x7961727261776172, 0, eltype, elbyte, 2 * elbyte, 1, 2], dtype="<u8")
    p.write_bytes(header.tobytes() + bytes(2 * elbyte))
    for f in (rastore.read, rastore.open):
        with pytest.raises(rastore.Error, match=f"{name} has no NumPy equivalent"):
            f(p)
    assert rastore.info(p)["dtype"] == name


def test_metadata_str_and_durable_and_object_refusal(tmp_path):
    p = tmp_path / "m.ra"
    rastore.write(p, np.ones(3), metadata="---\nnote: é\n", durable=True)
    assert rastore.MappedFile(p).metadata == "---\nnote: é\n".encode()
    with pytest.raises(rastore.Error, match="cannot be stored"):
        rastore.write(p, np.array([object()]))


def test_os_errors_stay_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.ra"):
        rastore.open(tmp_path / "missing.ra")
    with pytest.raises(FileNotFoundError):
        rastore.read(tmp_path / "missing.ra")
    assert issubclass(rastore.Error, ValueError)
    p = tmp_path / "e.ra"
    rastore.create(p, "f4", (2, 2))
    with pytest.raises(FileExistsError, match="file exists"):
        rastore.create(p, "f4", (2, 2))
    assert rastore.create(p, "f4", 5, overwrite=True).shape == (5,)


@pytest.mark.parametrize("dtype", ["<i4", ">f8", "u1", "c16", "?", "<f2",
                                   [("a", "<i2"), ("b", "u1"), ("c", ">f4")]])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (4, 1, 6, 7), (1, 9), (9, 1)])
def test_a_c_order_array_is_written_transposed_by_the_core(tmp_path, dtype, shape):
    """rastore.write of a C-order array: the Rust core's transpose (every type's size,
    structured ones too), read back and mapped equal to it."""
    rng = np.random.default_rng(len(shape))
    a = rng.integers(0, 100, size=shape).astype(dtype)
    assert a.flags.c_contiguous
    p = tmp_path / "c.ra"
    rastore.write(p, a)
    b = rastore.read(p)
    assert b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(rastore.open(p), a)
