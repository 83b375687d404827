"""Shared fixtures: the conformance folder, and the `ra` binary for cross-checks."""
import os
import pathlib
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _conformance():
    d = os.environ.get("RASTORE_CONFORMANCE")
    return pathlib.Path(d) if d else ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance():
    d = _conformance()
    if not (d / "MANIFEST.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"no conformance files at {d}")
        pytest.skip(
            f"no conformance files at {d}: the files the RawArray reference implementations "
            "(C, Python, Julia) wrote, with a MANIFEST.md, kept outside this repository; "
            "set RASTORE_CONFORMANCE to their folder"
        )
    return d


# --- A real S3-protocol server (s3s-fs, as the Rust tests use) -----------------------

S3_KEY, S3_SECRET, S3_BUCKET = "rastore-test", "rastore-test-secret", "bkt"


def _s3s_fs():
    import shutil

    if os.environ.get("RASTORE_S3S_FS"):
        return os.environ["RASTORE_S3S_FS"]
    found = shutil.which("s3s-fs")
    if found:
        return found
    for home in (os.environ.get("CARGO_HOME"), os.path.expanduser("~/.cargo")):
        if home and os.path.isfile(os.path.join(home, "bin", "s3s-fs")):
            return os.path.join(home, "bin", "s3s-fs")
    return None


class S3Server:
    """s3s-fs on a free port over its own root folder: objects are plain files."""

    def __init__(self, binary, root):
        import socket
        import subprocess
        import time

        self.root = root
        (root / S3_BUCKET).mkdir()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), "--access-key", S3_KEY,
             "--secret-key", S3_SECRET, str(root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.025)
        self.proc.kill()
        raise RuntimeError(f"s3s-fs did not listen on port {self.port}")

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def options(self):
        """storage_options for this server (the s3fs spelling, as users write it)."""
        return {"endpoint_url": self.endpoint, "key": S3_KEY, "secret": S3_SECRET,
                "region_name": "us-east-1"}

    def url(self, key):
        return f"s3://{S3_BUCKET}/{key}"

    def object(self, key):
        return self.root / S3_BUCKET / key

    def pending_uploads(self):
        """Multipart uploads not completed nor aborted (s3s-fs keeps a file for each)."""
        return [n for _, _, names in os.walk(self.root) for n in names if n.startswith(".upload")]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    binary = _s3s_fs()
    if binary is None:
        if os.environ.get("CI") or os.environ.get("RASTORE_REQUIRE_S3"):
            pytest.fail("s3s-fs is not installed: .ci/run installs it with cargo install")
        pytest.skip("no s3s-fs (cargo install s3s-fs --version 0.14.1 --features binary --locked)")
    server = S3Server(binary, tmp_path_factory.mktemp("s3root"))
    yield server
    server.stop()


# --- A real Dask cluster: distributed.LocalCluster with 2 worker processes -----------


def _need(module):
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have {module}: .ci/run installs rastore[dask] in .venv")
        pytest.skip(f"no {module} (pip install ./python[dask])")


@pytest.fixture(scope="session")
def cluster():
    distributed = _need("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="4GiB") as c:
        yield c


@pytest.fixture
def client(cluster):
    import distributed

    with distributed.Client(cluster) as c:
        yield c


# --- Files in every stored form --------------------------------------------------------


@pytest.fixture
def encodings(tmp_path):
    """The same (5, 4, 3) float32 array in every stored form rastore reads:
    big-endian (little-endian header, and big-endian header) and LZ4, in ``tmp_path``
    under the names returned (``bit_array`` writes a BitArray)."""
    import numpy as np

    import rastore

    a = np.arange(60, dtype="<f4").reshape(5, 4, 3)
    plain = tmp_path / "plain.ra"
    rastore.write(plain, a)
    raw = plain.read_bytes()
    dims = raw[48:48 + 24]
    data = np.asfortranarray(a).tobytes(order="F")
    be_data = np.asfortranarray(a).astype(">f4").tobytes(order="F")

    def header(big_header, flags, size):
        words = [0x7961727261776172, flags, 3, 4, size, 3]
        order = ">" if big_header else "<"
        return np.array(words, dtype=f"{order}u8").tobytes() + np.frombuffer(dims, "<u8").astype(f"{order}u8").tobytes()

    files = {
        "big_data": header(False, 1, len(data)) + be_data,
        "big_header": header(True, 1, len(data)) + be_data,
    }
    for name, body in files.items():
        (tmp_path / f"{name}.ra").write_bytes(body)
    rastore.write(tmp_path / "lz4.ra", a, compress=True)
    return a, ["big_data", "big_header", "lz4"]


def bit_array(path):
    """Writes a Julia BitArray (flag bit 2) of (9, 10) Bools at ``path``; returns them."""
    import numpy as np

    bits = np.array([True, False, True, True, False, False, True, False, True] * 10).reshape(9, 10)
    words = np.packbits(bits.flatten(order="F"), bitorder="little")
    words = np.concatenate([words, np.zeros(-len(words) % 8, np.uint8)])
    head = np.array([0x7961727261776172, 4, 5, 8, len(words), 2, 9, 10], "<u8").tobytes()
    path.write_bytes(head + words.tobytes())
    return bits


def fails_on_block_two(block, block_info=None):
    """A ``map_blocks`` function that raises on the block at index 2 of the last axis:
    a Dask run that fails partway."""
    if block_info is not None and block_info[0]["chunk-location"][-1] == 2:
        raise ValueError("block 2 is bad")
    return block


def fails_late_on_block_two(block, block_info=None):
    """``fails_on_block_two`` after a pause, so that the blocks before it are being
    uploaded when the run fails."""
    if block_info is not None and block_info[0]["chunk-location"][-1] == 2:
        time.sleep(0.15)
    return fails_on_block_two(block, block_info)
