"""rastore.convert to and from Zarr, judged by zarr-python."""
import warnings

import numpy as np
import pytest

import rastore

zarr = pytest.importorskip("zarr")


def test_convert_to_and_from_zarr(tmp_path):
    a = np.arange(6 * 5 * 4, dtype=np.int16).reshape(6, 5, 4)
    rastore.write(tmp_path / "a.ra", a, metadata="---\nndarrays:\n  data:\n    attributes:\n      units: mm\n")
    rastore.convert(tmp_path / "a.ra", tmp_path / "a.zarr", chunks=(4, 5, 2), codec="gzip:3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_group(tmp_path / "a.zarr", mode="r")["a"]
        assert z.chunks == (4, 5, 2) and z.attrs["units"] == "mm"
        np.testing.assert_array_equal(z[...], a)
        b = zarr.create_array(tmp_path / "b.zarr", shape=(7, 3), chunks=(2, 2), dtype="f4", zarr_format=2)
        b[...] = np.arange(21, dtype="f4").reshape(7, 3)
    rastore.convert(tmp_path / "b.zarr", tmp_path / "b.ra")
    np.testing.assert_array_equal(rastore.read(tmp_path / "b.ra"), np.arange(21, dtype="f4").reshape(7, 3))
    with pytest.raises(FileExistsError, match="overwrite=True"):
        rastore.convert(tmp_path / "a.ra", tmp_path / "a.zarr")
    with pytest.raises(rastore.Error, match="codecs are zstd, gzip, blosc"):
        rastore.convert(tmp_path / "a.ra", tmp_path / "c.zarr", codec="lz5")
