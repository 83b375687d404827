"""Files we did not write: every bad one raises rastore.Error, none crashes Python."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import rastore

MAGIC = 0x7961727261776172


def words(*w, tail=b""):
    return np.array(w, dtype="<u8").tobytes() + tail


CASES = {
    "short": (b"rawarray", "truncated: file is 8 bytes"),
    "magic": (words(1, 0, 3, 4, 4, 1, 1, tail=bytes(4)), "not a RawArray file"),
    "ndims": (words(MAGIC, 0, 3, 4, 4, 1 << 40), "truncated header"),
    "elbyte": (words(MAGIC, 0, 3, 0, 0, 1, 1), "elbyte = 0"),
    "overflow": (words(MAGIC, 0, 3, 4, 0, 2, 1 << 62, 1 << 62), "shape overflows"),
    "size": (words(MAGIC, 0, 3, 4, 8, 1, 1, tail=bytes(8)), "size mismatch"),
    "data": (words(MAGIC, 0, 3, 4, 1 << 40, 1, 1 << 38), "truncated data"),
    "flags": (words(MAGIC, 1 << 20, 3, 4, 4, 1, 1, tail=bytes(4)), "unsupported flags"),
    "lz4": (words(MAGIC, 2, 1, 4, 5, 1, 100, tail=b"\xff" * 5), "decode failed"),
    "numpy": (words(MAGIC, 0, 3, 4, 0, 3, 0, 1 << 62, 1 << 62), "NumPy cannot hold"),
    "many_dims": (words(MAGIC, 0, 2, 1, 0, 70, *([0] + [1] * 69)), "NumPy cannot hold"),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_files_raise_rastore_error_with_the_rust_message(tmp_path, name):
    data, message = CASES[name]
    p = tmp_path / f"{name}.ra"
    p.write_bytes(data)
    # A valid header with a bad LZ4 block: only decoding finds it. Valid headers of
    # shapes NumPy cannot hold: only making the array does.
    only = {"lz4": [rastore.read], "numpy": [rastore.read, rastore.open]}
    only["many_dims"] = only["numpy"]
    for f in only.get(name, [rastore.read, rastore.open, rastore.info, rastore.MappedFile]):
        with pytest.raises(rastore.Error, match=message) as e:
            f(p)
        assert str(p) in str(e.value)


def test_the_fuzz_corpora_never_crash_the_interpreter():
    """Every committed corpus input of the header and reader targets, in a child
    interpreter: an abort or a signal there fails this test instead of killing pytest."""
    root = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "corpus"
    files = sorted(p for t in ("header", "file") for p in (root / t).glob("*"))
    if not files:
        pytest.skip(f"no corpora under {root}")
    code = (
        "import sys, tempfile, os, rastore\n"
        "ok = bad = 0\n"
        "d = tempfile.mkdtemp()\n"
        "for f in sys.argv[1:]:\n"
        "    p = os.path.join(d, 'x.ra')\n"
        "    open(p, 'wb').write(open(f, 'rb').read())\n"
        "    for fn in (rastore.read, rastore.open, rastore.info):\n"
        "        try:\n"
        "            fn(p)\n"
        "            ok += 1\n"
        "        except rastore.Error:\n"
        "            bad += 1\n"
        "print(ok, bad)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, *map(str, files[:3000])], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ok, bad = map(int, r.stdout.split())
    assert ok + bad == 3 * min(len(files), 3000) and bad > 0 and ok > 0


def test_a_file_of_no_known_format_is_told_what_rastore_reads(tmp_path):
    """Issue 37: the magic kept, the formats rastore reads listed, and how to convert."""
    p = tmp_path / "junk.bin"
    p.write_bytes(words(0x12CBDC65AED76D0D, 7, 7, 7, 7, 7, 7))
    h5 = tmp_path / "x.h5"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(92))
    for f in (rastore.read, rastore.open, rastore.info):
        with pytest.raises(rastore.Error) as e:
            f(p)
        assert str(e.value).endswith(
            "junk.bin: not a RawArray file: magic is 0x12cbdc65aed76d0d, expected "
            '0x7961727261776172 ("rawarray"), and it is no other format rastore reads '
            "(.ra, .npy, .npz, PNG, NIfTI, TIFF, safetensors, HDF5 (NetCDF-4, MATLAB v7.3), "
            "NetCDF-3, Zarr and dataset folders); rastore.convert "
            "converts between "
            "them"
        ), e.value
        # HDF5 is read: a signature and no superblock is a broken HDF5 file.
        with pytest.raises(rastore.Error, match="x.h5: not a valid HDF5 file: superblock"):
            f(h5)


def test_a_truncated_npy_is_refused_by_info_naming_the_byte_counts(tmp_path):
    """Issue 37: header fine, data cut short: refused as a truncated .ra is."""
    p = tmp_path / "a.npy"
    np.save(p, np.arange(1000, dtype="<f8"))
    whole = p.stat().st_size
    assert rastore.info(p)["dims"] == [1000]
    cut = tmp_path / "trunc.npy"
    cut.write_bytes(p.read_bytes()[:200])
    with pytest.raises(rastore.Error) as e:
        rastore.info(cut)
    assert str(e.value) == f"{cut}: truncated data: header and data need {whole} bytes, file is 200 bytes"
    ra = tmp_path / "a.ra"
    rastore.write(ra, np.arange(1000, dtype="<f8"))
    (tmp_path / "trunc.ra").write_bytes(ra.read_bytes()[:200])
    with pytest.raises(rastore.Error, match="truncated data: header and data need"):
        rastore.info(tmp_path / "trunc.ra")
