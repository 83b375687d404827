"""NIfTI-1 and NIfTI-2 images (issue 38), judged by nibabel: mapped in place by
``rastore.open`` (a read-only view inside the file's mapping, nibabel's shape and raw
values), read by ``rastore.read`` and ``rastore.Array``, converted both ways with the
affine and header fields kept, CF-scaled values as ``get_fdata()`` gives them through
xarray, and read in place by Zarr through ``ZarrStore``."""

import numpy as np
import pytest

import rastore

nib = pytest.importorskip("nibabel")

AFFINE = np.array([[-1.5, 0.2, 0, 90], [0.1, 2.0, 0, -126], [0, 0, 3.0, -72], [0, 0, 0, 1]])

TYPES = ["u1", "i1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8", "c8", "c16", "rgb", "rgba"]
RGB = {"rgb": (128, np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1")])),
       "rgba": (2304, np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1"), ("A", "u1")]))}


def _values(t, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if t in RGB:
        dt = RGB[t][1]
        return rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt).reshape(shape)
    dt = np.dtype(t)
    if dt.kind in "iu":
        return rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt).reshape(shape)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt).reshape(shape)
    return rng.standard_normal(n).astype(dt).reshape(shape)


def _image(path, t, shape, version=1, order="<", affine=AFFINE):
    klass, header = (nib.Nifti2Image, nib.Nifti2Header) if version == 2 else (nib.Nifti1Image, nib.Nifti1Header)
    hdr = header(endianness=order)
    a = _values(t, shape)
    hdr.set_data_dtype(RGB[t][0] if t in RGB else a.dtype)
    img = klass(a, affine, header=hdr)
    if str(path).endswith(".hdr"):
        img = (nib.Nifti2Pair if version == 2 else nib.Nifti1Pair).from_image(img)
    nib.save(img, path)
    return nib.load(path)


def _raw(img):
    return np.asanyarray(img.dataobj.get_unscaled())


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("order", ["<", ">"])
def test_open_maps_the_image_in_place(tmp_path, t, order):
    for k, (version, name) in enumerate([(1, "a.nii"), (2, "b.nii"), (1, "c.hdr")]):
        p = tmp_path / name
        img = _image(p, t, (3, 4, 2, 1)[: 1 + k + 1] if k else (5,), version, order)
        want = _raw(img)
        m = rastore.MappedFile(p)
        got = m.array
        assert got.shape == img.shape and got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)
        start, length = m._data_range()
        assert start <= got.__array_interface__["data"][0] < start + max(length, 1)
        assert not got.flags.writeable and not got.flags.owndata and got.base is m
        # No copy: nibabel's own memmap of the file holds the same bytes.
        assert got.tobytes(order="F") == want.tobytes(order="F")
        np.testing.assert_array_equal(rastore.open(p), want)


def test_open_refuses_a_gzipped_image_and_read_inflates_it(tmp_path):
    p = tmp_path / "a.nii.gz"
    img = _image(p, "i2", (4, 3, 2))
    with pytest.raises(rastore.Error, match=r"a\.nii\.gz.*gzipped NIfTI image in place"):
        rastore.open(p)
    got = rastore.read(p)
    assert got.flags.owndata and got.shape == (4, 3, 2)
    np.testing.assert_array_equal(got, _raw(img))


@pytest.mark.parametrize("ext", [".nii", ".nii.gz", ".hdr"])
def test_read_and_array_give_nibabels_raw_values(tmp_path, ext):
    p = tmp_path / f"a{ext}"
    img = _image(p, "f4", (3, 4, 5, 2), order=">")
    np.testing.assert_array_equal(rastore.read(p), _raw(img))
    if ext != ".nii.gz":
        a = rastore.Array(p)
        assert a.shape == img.shape
        np.testing.assert_array_equal(a[1:, :, 2], _raw(img)[1:, :, 2])


@pytest.mark.parametrize("version", [1, 2])
def test_scaled_values_decode_to_get_fdata_through_xarray(tmp_path, version):
    xr = pytest.importorskip("xarray")
    klass, header = (nib.Nifti2Image, nib.Nifti2Header) if version == 2 else (nib.Nifti1Image, nib.Nifti1Header)
    hdr = header()
    hdr.set_data_dtype(np.int16)
    a = np.linspace(-3.7, 1234.5, 60).reshape(3, 4, 5)
    nib.save(klass(a, AFFINE, header=hdr), tmp_path / "s.nii")
    img = nib.load(tmp_path / "s.nii")
    slope, inter = img.dataobj.slope, img.dataobj.inter
    assert slope != 1.0 and inter != 0.0
    rastore.convert(tmp_path / "s.nii", tmp_path / "s.ra")
    attrs = rastore.info(tmp_path / "s.ra")
    assert attrs is not None
    raw = rastore.read(tmp_path / "s.ra")
    assert raw.dtype == np.int16
    np.testing.assert_array_equal(raw, _raw(img))
    da = xr.open_dataarray(tmp_path / "s.ra", engine="rastore")
    assert da.dtype == np.float64
    np.testing.assert_array_equal(da.values, img.get_fdata())
    assert "scale_factor" not in da.attrs and da.encoding["scale_factor"] == slope
    # And through Zarr, as xarray reads a Zarr group.
    rastore.convert(tmp_path / "s.ra", tmp_path / "s.zarr")
    z = xr.open_zarr(tmp_path / "s.zarr")
    np.testing.assert_array_equal(z["s"].values, img.get_fdata())


def test_write_and_convert_keep_the_affine_and_header_fields(tmp_path):
    p = tmp_path / "a.nii"
    img = nib.Nifti1Image(_values("i2", (4, 5, 6)), AFFINE)
    img.set_qform(AFFINE @ np.diag([1, 1, 1, 1.0]), code=1)
    img.header.set_xyzt_units("mm", "sec")
    img.header["descrip"] = b"T1 weighted"
    img.header["intent_code"] = 2
    img.header["intent_p1"] = 12.0
    img.header["intent_name"] = b"ttest"
    img.header["aux_file"] = b"aux.txt"
    img.header.extensions.append(nib.nifti1.Nifti1Extension(6, b"a comment"))
    nib.save(img, p)
    a = nib.load(p)
    rastore.convert(p, tmp_path / "a.ra")
    for out in ("b.nii", "b.nii.gz"):
        rastore.convert(tmp_path / "a.ra", tmp_path / out)
        b = nib.load(tmp_path / out)
        np.testing.assert_array_equal(b.affine, a.affine)
        np.testing.assert_array_equal(b.get_qform(), a.get_qform())
        np.testing.assert_array_equal(b.get_sform(), a.get_sform())
        for k in ("qform_code", "sform_code", "xyzt_units", "descrip", "intent_code",
                  "intent_p1", "intent_name", "aux_file", "pixdim", "dim", "datatype"):
            np.testing.assert_array_equal(b.header[k], a.header[k], err_msg=k)
        assert [e.get_code() for e in b.header.extensions] == [6]
        assert b.header.extensions[0].get_content() == b"a comment"
        np.testing.assert_array_equal(_raw(b), _raw(a))
    # rastore.read of the .ra keeps the header as attributes rastore writes back.
    arr = rastore.read(tmp_path / "a.ra")
    rastore.write(tmp_path / "c.nii", arr)
    c = nib.load(tmp_path / "c.nii")
    np.testing.assert_array_equal(_raw(c), _raw(a))
    assert c.header["sform_code"] == 0 and c.header["qform_code"] == 0


def test_a_plain_array_is_written_as_nibabel_writes_one_without_an_affine(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    rastore.write(tmp_path / "a.nii", a)
    got = nib.load(tmp_path / "a.nii")
    nib.save(nib.Nifti1Image(a, None), tmp_path / "n.nii")
    want = nib.load(tmp_path / "n.nii")
    np.testing.assert_array_equal(got.get_fdata(), a)
    np.testing.assert_array_equal(got.affine, want.affine)
    for k in ("sform_code", "qform_code", "pixdim", "dim", "datatype", "bitpix", "vox_offset"):
        np.testing.assert_array_equal(got.header[k], want.header[k], err_msg=k)


def test_zarr_store_reads_a_nii_in_place(tmp_path):
    zarr = pytest.importorskip("zarr")
    p = tmp_path / "a.nii"
    img = _image(p, "f4", (4, 3, 5), order=">")
    z = zarr.open_group(rastore.ZarrStore(p), mode="r")
    np.testing.assert_array_equal(z["a"][...], _raw(img))


def test_refused_types_are_named(tmp_path):
    with pytest.raises(rastore.Error, match=r"a\.nii: unsupported: an array of 8 axes in NIfTI, which holds 1 to 7"):
        rastore.write(tmp_path / "a.nii", np.zeros((1,) * 8, np.uint8))
    with pytest.raises(rastore.Error, match="float16 in NIfTI"):
        rastore.write(tmp_path / "a.nii", np.zeros(3, np.float16))
    assert not (tmp_path / "a.nii").exists()


def test_info_reads_the_header_alone(tmp_path):
    for name, version in (("a.nii.gz", 1), ("b.nii", 2)):
        _image(tmp_path / name, "u2", (6, 5, 4), version)
        assert rastore.info(tmp_path / name) == {
            "path": str(tmp_path / name), "format": "nifti", "version": version,
            "dtype": "uint16", "dims": [6, 5, 4], "count": 120, "bytes": 240}
