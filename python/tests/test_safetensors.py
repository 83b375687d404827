"""safetensors through the Python package, judged by the safetensors package:
``m.safetensors/NAME`` opens in place as ``safe_open`` gives it (C order, no copy),
reads, indexes lazily and converts; what rastore writes ``load_file`` and
``safe_open`` read the same, metadata included."""

import os

import numpy as np
import pytest

import rastore

safetensors = pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402


@pytest.fixture
def model(tmp_path):
    rng = np.random.default_rng(7)
    tensors = {
        "layers.0.weight": rng.normal(size=(4, 6)).astype(np.float32),
        "layers.0.bias": rng.normal(size=6).astype(np.float16),
        "embed.ids": rng.integers(-9, 9, size=(2, 3, 5)).astype(np.int64),
        "mask": rng.integers(0, 2, size=(3, 3)).astype(bool),
        "scalar": np.array(3.5, dtype=np.float64),
    }
    p = tmp_path / "m.safetensors"
    save_file(tensors, str(p), metadata={"format": "np", "step": "1200"})
    return p, tensors


def test_open_a_tensor_is_a_read_only_c_order_view_inside_the_mapping(model):
    p, tensors = model
    for name, want in tensors.items():
        m = rastore.MappedFile(f"{p}/{name}")
        v = m.array
        with safe_open(str(p), framework="numpy") as f:
            peer = f.get_tensor(name)
        assert v.dtype == peer.dtype and v.shape == peer.shape
        np.testing.assert_array_equal(v, peer)
        np.testing.assert_array_equal(v, want)
        start, length = m._data_range()
        if v.size:
            address = v.__array_interface__["data"][0]
            assert start <= address < start + length
            assert length == v.nbytes
        assert v.flags.c_contiguous and not v.flags.writeable and not v.flags.owndata
        with open(p, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
        # The mapping is the whole file; the view starts at the tensor's own offset.
        assert v.base is m
    v = rastore.open(p / "layers.0.weight")
    np.testing.assert_array_equal(v[1:, ::2], tensors["layers.0.weight"][1:, ::2])
    with pytest.raises(rastore.Error, match="name one, as"):
        rastore.open(p)
    with pytest.raises(rastore.Error, match='no tensor "nope"'):
        rastore.open(p / "nope")
    assert n % 8 == 0


def test_read_array_and_convert_a_tensor(model, tmp_path):
    p, tensors = model
    for name, want in tensors.items():
        got = rastore.read(f"{p}/{name}")
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.flags.owndata
    a = rastore.Array(p / "embed.ids")
    assert a.shape == (2, 3, 5)
    np.testing.assert_array_equal(a[1, :, 2:4], tensors["embed.ids"][1, :, 2:4])
    rastore.convert(p / "layers.0.weight", tmp_path / "w.ra")
    np.testing.assert_array_equal(rastore.read(tmp_path / "w.ra"), tensors["layers.0.weight"])


def test_bfloat16_reads_as_ml_dtypes_and_refuses_in_place_by_name(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import json
    import struct

    bf = np.array([[1.5, -2.0], [0.25, 8.0]], dtype=ml_dtypes.bfloat16)
    head = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}})
    head += " " * (-len(head) % 8)
    p = tmp_path / "bf.safetensors"
    p.write_bytes(struct.pack("<Q", len(head)) + head.encode() + bf.tobytes())
    got = rastore.read(p / "w")
    assert got.dtype == bf.dtype
    np.testing.assert_array_equal(got.astype(np.float32), bf.astype(np.float32))
    with pytest.raises(rastore.Error, match="bfloat16"):
        rastore.open(p / "w")


def test_written_safetensors_are_read_the_same_by_the_package(model, tmp_path):
    p, tensors = model
    folder = tmp_path / "ds"
    rastore.convert(p, folder)
    assert sorted(os.listdir(folder)) == sorted([f"{n}.ra" for n in tensors] + ["dataset.yaml"])
    back = tmp_path / "back.safetensors"
    rastore.convert(folder, back)
    got = load_file(str(back))
    assert sorted(got) == sorted(tensors)
    for name, want in tensors.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape
        np.testing.assert_array_equal(got[name], want)
    with safe_open(str(back), framework="numpy") as f:
        assert f.metadata() == {"format": "np", "step": "1200"}
    # Laid out as the package lays it out: the same size, the same data bytes (only
    # __metadata__'s order may differ: the package's is a hash map's).
    a, b = p.read_bytes(), back.read_bytes()
    n = int.from_bytes(a[:8], "little")
    assert len(a) == len(b) and a[:8] == b[:8] and a[8 + n:] == b[8 + n:]
    # One array in memory, written by its name.
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    one = tmp_path / "x.safetensors"
    rastore.write(one, x)
    got = load_file(str(one))
    assert list(got) == ["x"]
    np.testing.assert_array_equal(got["x"], x)
    assert got["x"].dtype == np.int32


def test_zarr_store_reads_a_tensor_in_place(model):
    zarr = pytest.importorskip("zarr")
    p, tensors = model
    z = zarr.open_array(rastore.ZarrStore(f"{p}/embed.ids", group=False), mode="r")
    np.testing.assert_array_equal(z[:], tensors["embed.ids"])


@pytest.mark.parametrize("header, data, field", [
    (b'{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}', 8, "x: data_offsets"),
    (b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
     b'"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', 6, "overlaps"),
    (b'{"x":{"dtype":"F8_E5M2","shape":[4],"data_offsets":[0,4]}}', 4, "F8_E5M2"),
    (b'{"x": [1,', 0, "not JSON"),
])
def test_hostile_files_raise_naming_the_file_and_field(tmp_path, header, data, field):
    import struct

    header += b" " * (-len(header) % 8)
    p = tmp_path / "bad.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + bytes(data))
    for call in (lambda: rastore.read(p), lambda: rastore.open(p / "x"),
                 lambda: rastore.convert(p, tmp_path / "out")):
        with pytest.raises(rastore.Error, match=field) as e:
            call()
        assert "bad.safetensors" in str(e.value)
    assert sorted(os.listdir(tmp_path)) == ["bad.safetensors"]
    # The package refuses them too.
    with pytest.raises(Exception):
        load_file(str(p))


def test_info_of_a_tensor(model):
    p, tensors = model
    i = rastore.info(p / "embed.ids")
    assert i["format"] == "safetensors" and i["dtype"] == "int64"
    assert i["dims"] == [2, 3, 5] and i["bytes"] == tensors["embed.ids"].nbytes
    with open(p, "rb") as f:
        raw = f.read()
    start = i["data_offset"]
    assert np.array_equal(np.frombuffer(raw[start:start + i["bytes"]], "<i8").reshape(2, 3, 5),
                          tensors["embed.ids"])
