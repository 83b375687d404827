"""Regression tests for what the second newcomer's trial (issue 28) found in the Python
package; the findings `ra` answers are in `tests/integration/newcomer2.rs`."""
import errno
import gc
import os

import numpy as np
import pytest

import rastore
from conftest import bit_array, fails_late_on_block_two


def _listing(folder):
    return sorted(os.listdir(folder))


# 2: every OSError carries the OS's errno and the user's filename.
def test_a_missing_folder_is_errno_2_naming_the_file(tmp_path):
    target = tmp_path / "nofolder" / "x.ra"
    for call in (
        lambda: rastore.write(target, np.zeros(3)),
        lambda: rastore.create(target, "f4", (2, 2)),
        lambda: rastore.convert(tmp_path / "missing.npy", tmp_path / "x.ra"),
    ):
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert e.value.errno == errno.ENOENT, e.value
        assert e.value.filename in (str(target), str(tmp_path / "missing.npy")), e.value


# 5: a delayed Dask write makes nothing until it runs, and a failed run leaves nothing.
def test_a_delayed_write_makes_nothing_until_it_runs(tmp_path):
    da = pytest.importorskip("dask.array")
    x = da.ones((64, 64, 8), chunks=(64, 64, 2), dtype="f4")
    w = rastore.write(tmp_path / "x.ra", x, compute=False)
    assert _listing(tmp_path) == []
    del w
    gc.collect()
    assert _listing(tmp_path) == []
    w = rastore.write(tmp_path / "x.ra", x, compute=False)
    w.compute()
    assert _listing(tmp_path) == ["x.ra"]
    np.testing.assert_array_equal(rastore.read(tmp_path / "x.ra"), np.ones((64, 64, 8), "f4"))


def _fails_on_block_2(block, block_info=None):
    if block_info[None]["chunk-location"][-1] == 2:
        raise RuntimeError("block 2 failed")
    return block


@pytest.mark.parametrize("scheduler", ["threads", "sync", "processes"])
def test_a_failed_block_under_dask_compute_leaves_nothing(tmp_path, scheduler):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = da.ones((32, 32, 8), chunks=(32, 32, 1), dtype="f4").map_blocks(_fails_on_block_2, dtype="f4")
    w = rastore.write(tmp_path / "x.ra", x, compute=False)
    with pytest.raises(RuntimeError, match="block 2 failed"):
        dask.compute(w, scheduler=scheduler)
    assert _listing(tmp_path) == [], "no hidden file after a failed run, without cleanup()"


def test_a_failed_block_of_an_upload_leaves_nothing_pending(s3):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = da.ones((1024, 1024, 48), chunks=(1024, 1024, 4), dtype="f4")
    x = x.map_blocks(fails_late_on_block_two, dtype="f4")
    url = s3.url("failed.ra")
    before = set(s3.pending_uploads())
    w = rastore.write(url, x, compute=False, storage_options=s3.options)
    assert set(s3.pending_uploads()) == before, "no upload begun before the write runs"
    with pytest.raises(ValueError, match="block 2 is bad"):
        dask.compute(w, scheduler="threads")
    # At once: the abort waited for the parts the scheduler's threads had in flight.
    assert set(s3.pending_uploads()) == before
    assert not s3.object("failed.ra").exists()


# 6: a masked array's mask is not silently dropped.
def test_masked_arrays_are_refused_saying_how_to_keep_the_mask(tmp_path):
    a = np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])
    with pytest.raises(rastore.Error, match="mask would be lost.*getmaskarray"):
        rastore.write(tmp_path / "m.ra", a)
    with pytest.raises(rastore.Error, match="mask would be lost"):
        with rastore.Appender(tmp_path / "ap.ra", "f8", (4,)) as ap:
            ap.append(a)
    assert "m.ra" not in _listing(tmp_path)


# 6b: every encoding reads through Array, to_dask and the xarray backend.
def test_every_encoding_reads_through_array_dask_and_xarray(tmp_path, encodings):
    a, names = encodings
    for name in names:
        p = tmp_path / f"{name}.ra"
        x = rastore.Array(p)
        np.testing.assert_array_equal(x[...], a, err_msg=name)
        np.testing.assert_array_equal(x[1:4, ::-1, 2], a[1:4, ::-1, 2], err_msg=name)
        pytest.importorskip("dask.array")
        np.testing.assert_array_equal(rastore.to_dask(p, chunks=(5, 4, 1)).compute(), a, err_msg=name)
        xr = pytest.importorskip("xarray")
        v = xr.open_dataarray(p, engine="rastore")
        np.testing.assert_array_equal(v.values, a, err_msg=name)
    bits = bit_array(tmp_path / "bits.ra")
    x = rastore.Array(tmp_path / "bits.ra")
    np.testing.assert_array_equal(x[...], bits)
    np.testing.assert_array_equal(rastore.to_dask(tmp_path / "bits.ra").compute(), bits)


# 9: appending to a file that is not there says how to create it.
def test_an_appender_without_a_file_says_how_to_create_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="give dtype= and frame= to create it") as e:
        rastore.Appender(tmp_path / "new.ra")
    assert e.value.errno == errno.ENOENT and e.value.filename == str(tmp_path / "new.ra")


# 10: a boolean mask is refused in a few words, naming what is taken.
def test_a_mask_index_error_is_short_and_says_what_is_taken(tmp_path):
    rastore.write(tmp_path / "a.ra", np.arange(2000.0))
    x = rastore.Array(tmp_path / "a.ra")
    mask = np.arange(2000) % 3 == 0
    with pytest.raises(IndexError) as e:
        x[mask]
    text = str(e.value)
    assert "boolean mask of shape (2000,)" in text and "np.nonzero" in text, text
    assert len(text) < 400 and "True" not in text, text


# 12: a Dataset is a folder (issue 31); one named like a file is refused plainly.
def test_a_dataset_named_like_a_file_is_refused_plainly(tmp_path):
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": (("x",), np.arange(3.0)), "p": (("x",), np.ones(3))})
    with pytest.raises(rastore.Error, match="a dataset is a folder"):
        rastore.write(tmp_path / "ds.ra", ds)
    assert os.listdir(tmp_path) == []


# 16: an input is what its contents are.
def test_convert_reads_a_ra_named_dat(tmp_path):
    rastore.write(tmp_path / "ct.dat", np.arange(6, dtype="i2").reshape(2, 3))
    rastore.convert(tmp_path / "ct.dat", tmp_path / "ct.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "ct.npy"), np.arange(6, dtype="i2").reshape(2, 3))
