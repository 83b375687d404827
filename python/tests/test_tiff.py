"""TIFF (issue 38) through the Python package, judged by tifffile and Pillow: raw stacks
open in place as tifffile would memory-map them, anything else reads as
``tifffile.imread`` gives it, and what rastore writes tifffile reads identically."""

import numpy as np
import pytest

import rastore

tifffile = pytest.importorskip("tifffile")


@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("bigtiff", [False, True])
def test_open_maps_a_raw_stack_in_place_as_tifffile_memmaps_it(tmp_path, byteorder, bigtiff):
    a = np.arange(3 * 5 * 7, dtype="u2").reshape(3, 5, 7) * 7
    p = tmp_path / "stack.tif"
    tifffile.imwrite(p, a, byteorder=byteorder, bigtiff=bigtiff, photometric="minisblack")
    with tifffile.TiffFile(p) as t:
        offset = t.series[0].dataoffset
        want = tifffile.memmap(p, mode="r")
        assert offset is not None
    v = rastore.open(p)
    assert v.shape == (3, 5, 7) and v.dtype == np.dtype(byteorder + "u2")
    assert v.flags.c_contiguous and not v.flags.writeable and not v.flags.owndata
    m = v.base
    assert isinstance(m, rastore.MappedFile)
    start, length = m._data_range()
    address = v.__array_interface__["data"][0]
    assert start <= address < start + length and length == a.nbytes
    np.testing.assert_array_equal(v, want)
    np.testing.assert_array_equal(v, a)
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0, 0] = 1
    # rastore.Array indexes the same mapping.
    np.testing.assert_array_equal(rastore.Array(p)[1, 2:4], a[1, 2:4])


def test_compressed_pages_are_read_not_mapped(tmp_path):
    a = np.random.default_rng(1).integers(0, 4000, (4, 33, 40), dtype="u2")
    p = tmp_path / "lzw.tif"
    tifffile.imwrite(p, a, compression="lzw", predictor=True, tile=(16, 16),
                     photometric="minisblack")
    with pytest.raises(rastore.Error, match=r"lzw.tif.*Lzw-compressed.*rastore.read"):
        rastore.open(p)
    b = rastore.read(p)
    assert b.flags.owndata and b.shape == a.shape and b.dtype == a.dtype
    np.testing.assert_array_equal(b, tifffile.imread(p))


@pytest.mark.parametrize("dtype", ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4",
                                   "f8"])
@pytest.mark.parametrize("shape", [(6, 5), (2, 6, 5), (6, 5, 3), (2, 3, 6, 5)])
@pytest.mark.parametrize("compress", [False, True])
def test_write_is_read_back_identically_by_tifffile(tmp_path, dtype, shape, compress):
    a = (np.random.default_rng(2).standard_normal(shape) * 100).astype(dtype)
    p = tmp_path / "w.tif"
    rastore.write(p, a, compress=compress)
    with tifffile.TiffFile(p) as t:
        b = t.asarray()
        assert t.pages[0].compression.name == ("ADOBE_DEFLATE" if compress else "NONE")
        assert (t.series[0].dataoffset is None) == compress
    assert b.shape == a.shape and b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(rastore.read(p), a)


@pytest.mark.parametrize("dtype", ["u1", "u2"])
def test_pillow_reads_a_written_gray_image(tmp_path, dtype):
    Image = pytest.importorskip("PIL.Image")
    a = (np.arange(12 * 17) * 37 % 65000).astype(dtype).reshape(12, 17)
    p = tmp_path / "g.tif"
    rastore.write(p, a)
    np.testing.assert_array_equal(np.asarray(Image.open(p)), a)


def test_convert_goes_tiff_to_zarr_and_npz_and_back(tmp_path):
    zarr = pytest.importorskip("zarr")
    a = np.random.default_rng(3).integers(-900, 900, (3, 8, 9), dtype="i2")
    p = tmp_path / "s.tif"
    tifffile.imwrite(p, a, compression="zlib", photometric="minisblack")
    rastore.convert(p, tmp_path / "s.zarr")
    z = zarr.open_group(tmp_path / "s.zarr", mode="r")
    np.testing.assert_array_equal(z["s"][...], a)
    rastore.convert(tmp_path / "s.zarr", tmp_path / "back.tif")
    np.testing.assert_array_equal(tifffile.imread(tmp_path / "back.tif"), a)
    np.savez(tmp_path / "one.npz", a=a)
    rastore.convert(tmp_path / "one.npz", tmp_path / "fromnpz.ra")
    rastore.convert(tmp_path / "fromnpz.ra", tmp_path / "fromnpz.tif")
    np.testing.assert_array_equal(tifffile.imread(tmp_path / "fromnpz.tif"), a)


def test_zarr_store_reads_a_raw_tiff_in_place(tmp_path):
    zarr = pytest.importorskip("zarr")
    a = np.arange(4 * 6 * 5, dtype="f4").reshape(4, 6, 5)
    p = tmp_path / "f.tif"
    tifffile.imwrite(p, a, photometric="minisblack")
    g = zarr.open_group(rastore.ZarrStore(p), mode="r")
    np.testing.assert_array_equal(g["f"][...], a)


def test_a_hostile_tiff_raises_naming_the_file_and_the_field(tmp_path):
    a = np.zeros((4, 4), "u1")
    p = tmp_path / "h.tif"
    tifffile.imwrite(p, a)
    b = bytearray(p.read_bytes())
    with tifffile.TiffFile(p) as t:
        # Where page 0's StripOffsets value lies: point it far past the end.
        tag = t.pages[0].tags["StripOffsets"]
        at = tag.valueoffset
    b[at:at + 4] = (1 << 30).to_bytes(4, "little")
    p.write_bytes(bytes(b))
    with pytest.raises(rastore.Error, match=r"h.tif.*page 0 StripOffsets.*past the end"):
        rastore.read(p)
    with pytest.raises(rastore.Error, match=r"h.tif"):
        rastore.convert(p, tmp_path / "h.ra")
    assert not (tmp_path / "h.ra").exists()
