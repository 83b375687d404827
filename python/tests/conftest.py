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


class SlowS3:
    """A proxy in front of the S3 server that holds chosen requests, as a slow network
    or a slow server would: ``hold_tail`` sends a request on but for its last bytes,
    which it sends ``seconds`` later (the server has begun the request, and finishes it
    even if the client gave up meanwhile: the connection to the server stays open until
    it answered, as a load balancer's would);
    ``hold_answer`` sends the server's answer ``seconds`` late (the server has finished
    the request); ``refuse`` answers ``status`` itself. A rule matches ``(method,
    target)``, e.g. ``("PUT", "/bkt/x.ra?partNumber=1&uploadId=...")``; it creates the
    file ``mark`` once it has the whole request, and acts only once the file ``after``
    exists (files, so that other processes can wait on them). ``log`` lists each
    request's (method, target, what was done) as it arrives."""

    def __init__(self, server):
        import socket
        import threading

        self.server, self.rules, self.log = server, [], []
        self._threads, self._lock, self._closed = [], threading.Lock(), threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def options(self):
        return {**self.server.options, "endpoint_url": f"http://127.0.0.1:{self.port}"}

    def url(self, key):
        return self.server.url(key)

    def pending_uploads(self):
        return self.server.pending_uploads()

    def hold_tail(self, match, seconds, mark=None, after=None):
        self.rules.append((match, "tail", seconds, mark, after))

    def hold_answer(self, match, seconds, mark=None, after=None):
        self.rules.append((match, "answer", seconds, mark, after))

    def refuse(self, match, status=400, mark=None, after=None):
        self.rules.append((match, "refuse", status, mark, after))

    def _accept(self):
        import threading

        import socket

        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._lock:
                self._threads.append(t)
            t.start()

    def _serve(self, client):
        import socket
        import threading

        upstream = socket.create_connection(("127.0.0.1", self.server.port))
        late = {"seconds": 0.0, "answered": threading.Event()}
        answers = threading.Thread(target=self._answers, args=(upstream, client, late),
                                   daemon=True)
        answers.start()
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = client.recv(1 << 20)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                head += b"\r\n\r\n"
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                length = next((int(v) for k, _, v in (ln.partition(":") for ln in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                while len(buf) < length:
                    chunk = client.recv(1 << 20)
                    if not chunk:
                        break
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                rule = next((r for r in self.rules if r[0](method, target)), None)
                action = "pass" if rule is None else rule[1]
                self.log.append((method, target, action))
                if rule is not None and rule[3] is not None:
                    pathlib.Path(rule[3]).touch()
                if rule is not None and rule[4] is not None:
                    wait_for_file(rule[4])
                if action == "refuse":
                    client.sendall(f"HTTP/1.1 {rule[2]} Refused\r\ncontent-length: 0\r\n\r\n"
                                   .encode())
                    continue
                if action == "answer":
                    late["seconds"] = rule[2]
                if action == "tail":
                    cut = max(len(body) - 4096, 0)
                    late["answered"].clear()
                    upstream.sendall(head + body[:cut])
                    time.sleep(rule[2])
                    upstream.sendall(body[cut:])
                    # The server finishes the request, whether or not the client
                    # still waits for its answer (as one behind a proxy of its own
                    # would): the connection closes only once it answered.
                    late["answered"].wait(60)
                else:
                    upstream.sendall(head + body)
        except OSError:
            pass
        finally:
            # What was sent reaches the server, as a network delivers it: the server
            # answers, then the connection closes.
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            answers.join()
            client.close()
            upstream.close()

    @staticmethod
    def _answers(upstream, client, late):
        while True:
            data = upstream.recv(1 << 20)
            if not data:
                return
            if late["seconds"]:
                time.sleep(late["seconds"])
                late["seconds"] = 0.0
            late["answered"].set()
            try:
                client.sendall(data)
            except OSError:
                pass

    def close(self):
        """Stops accepting, and waits until every request held has reached the server
        and been answered."""
        self._closed.set()
        self._accepting.join()
        self._listener.close()
        for t in self._threads:
            t.join(timeout=60)


def wait_for_file(path, seconds=60):
    """Waits until ``path`` exists (a mark another process makes); raises after
    ``seconds``."""
    end = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise TimeoutError(f"no {path} after {seconds} s")
        time.sleep(0.01)


@pytest.fixture
def slow_s3(s3):
    proxy = SlowS3(s3)
    yield proxy
    proxy.close()


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
