"""rastore with Dask and object storage, against the peers, in one run. By hand:

    .venv/bin/python python/benches/dask_peers.py DIR RUNS [GIB]

Needs the `dask` extra, zarr-python, obstore, `ra` (target/release/ra) and s3s-fs.
DIR holds the files (about 4 x GIB); GIB (default 4) is the size of the float32 array.

- sum: the array summed through Dask on a LocalCluster of 2 worker processes (1 thread
  each), page cache warm: rastore.to_dask against da.from_zarr of the same data
  (written by `ra convert`, one frame per chunk like to_dask's chunks), uncompressed
  and zstd; and on a 1 GiB file against da.from_array(np.memmap), with the growth of
  the client's anonymous memory (dask copies the memmap into the client and ships it
  in the graph: at 4 GiB distributed cannot even serialize that graph, "bytes object
  is too large").
- s3 read: a 1 GiB object from s3s-fs into NumPy: rastore.read against zarr-python over
  obstore (zarr.storage.ObjectStore) reading the same data stored as Zarr.
- write: a Dask array of GIB (computed by the workers) to a local file and to s3s-fs:
  rastore.write against to_zarr (local, and over obstore).

Prints `name<TAB>median<TAB>min<TAB>max` seconds, then the ratios.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import dask
import dask.array as da
import distributed
import numpy as np
import zarr

import rastore

RA = os.environ.get("RASTORE_RA", "target/release/ra")
KEY, SECRET, BUCKET = "bench", "bench-secret", "bkt"


def rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def timed(runs, fn, before=None):
    ts = []
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def show(name, r):
    print(f"{name}\t" + "\t".join(f"{t:.3f}" for t in r), flush=True)


def make(path, frames):
    a = rastore.create(path, "f4", (1024, 1024, frames), overwrite=True)
    base = np.arange(1024 * 1024, dtype="f4").reshape(1024, 1024, order="F") % 251
    for t in range(frames):
        a[:, :, t] = base + t
    a.base.flush()


def s3s_fs(root):
    binary = shutil.which("s3s-fs") or os.path.expanduser("~/.cargo/bin/s3s-fs")
    os.makedirs(os.path.join(root, BUCKET), exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", str(port), "--access-key", KEY,
                          "--secret-key", SECRET, root], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            time.sleep(0.025)
    return p, f"http://127.0.0.1:{port}"


def main():
    d, runs = sys.argv[1], int(sys.argv[2])
    gib = float(sys.argv[3]) if len(sys.argv) > 3 else 4.0
    frames = int(gib * 256)
    shape = (1024, 1024, frames)
    x = os.path.join(d, "db.ra")
    if not os.path.exists(x) or rastore.info(x)["dims"] != list(shape):
        make(x, frames)
    plain, packed = os.path.join(d, "db.zarr"), os.path.join(d, "dbz.zarr")
    for store, codec in [(plain, "none"), (packed, "zstd")]:
        shutil.rmtree(store, ignore_errors=True)
        subprocess.run([RA, "convert", "--chunks", "1024,1024,1", "--codec", codec, x, store], check=True)
    results = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  memory_limit="8GiB") as cluster, distributed.Client(cluster):
        with dask.config.set({"array.chunk-size": "4MiB"}):
            results["sum rastore.to_dask"] = timed(runs, lambda: rastore.to_dask(x).sum(dtype="f8").compute())
        results["sum da.from_zarr"] = timed(runs, lambda: da.from_zarr(plain).sum(dtype="f8").compute())
        results["sum da.from_zarr zstd"] = timed(runs, lambda: da.from_zarr(packed).sum(dtype="f8").compute())
        for k in results:
            show(k, results[k])
        before = rss_anon()
        rastore.to_dask(x).sum(dtype="f8").compute()
        big_growth = rss_anon() - before
        small = os.path.join(d, "db1.ra")
        make(small, 256)
        grew = []

        def memmap_sum():
            before = rss_anon()
            m = np.memmap(small, dtype="<f4", mode="r", offset=48 + 24, shape=(1024, 1024, 256),
                          order="F")
            da.from_array(m, chunks=(1024, 1024, 1)).sum(dtype="f8").compute()
            grew.append(rss_anon() - before)

        with dask.config.set({"array.chunk-size": "4MiB"}):
            results["sum 1 GiB rastore.to_dask"] = timed(
                runs, lambda: rastore.to_dask(small).sum(dtype="f8").compute())
        results["sum 1 GiB da.from_array(np.memmap)"] = timed(runs, memmap_sum)
        show("sum 1 GiB rastore.to_dask", results["sum 1 GiB rastore.to_dask"])
        show("sum 1 GiB da.from_array(np.memmap)", results["sum 1 GiB da.from_array(np.memmap)"])
        print(f"client RssAnon growth: rastore.to_dask of {gib:g} GiB {big_growth >> 20} MiB, "
              f"np.memmap of 1 GiB {max(grew) >> 20} MiB", flush=True)

        root = tempfile.mkdtemp(dir=d)
        server, endpoint = s3s_fs(root)
        opts = {"endpoint_url": endpoint, "key": KEY, "secret": SECRET, "region_name": "us-east-1"}
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
               "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
        try:
            one = (1024, 1024, 256)  # 1 GiB
            rastore.write(f"s3://{BUCKET}/one.ra", rastore.open(small), storage_options=opts)
            subprocess.run([RA, "convert", "--array", "--chunks", "1024,1024,4", small, f"s3://{BUCKET}/one.zarr"],
                           check=True, env={**os.environ, **env})
            from obstore.store import S3Store

            s3 = S3Store(BUCKET, endpoint=endpoint, access_key_id=KEY, secret_access_key=SECRET,
                         region="us-east-1", client_options={"allow_http": True})
            zstore = zarr.storage.ObjectStore(s3, read_only=True)
            results["s3 read rastore.read"] = timed(
                runs, lambda: rastore.read(f"s3://{BUCKET}/one.ra", storage_options=opts))
            results["s3 read zarr over obstore"] = timed(
                runs, lambda: zarr.open_array(zstore, path="one.zarr", mode="r")[...])
            a = rastore.read(f"s3://{BUCKET}/one.ra", storage_options=opts)
            b = zarr.open_array(zstore, path="one.zarr", mode="r")[...]
            assert a.shape == one and np.array_equal(a, b)
            show("s3 read rastore.read", results["s3 read rastore.read"])
            show("s3 read zarr over obstore", results["s3 read zarr over obstore"])

            src = lambda: rastore.to_dask(x) + 1  # noqa: E731  (computed by the workers)
            out_ra, out_zarr = os.path.join(d, "dbw.ra"), os.path.join(d, "dbw.zarr")
            results["write local rastore.write"] = timed(runs, lambda: rastore.write(out_ra, src()))
            results["write local to_zarr"] = timed(
                runs, lambda: da.to_zarr(src(), out_zarr, overwrite=True, zarr_format=3, compressors=None))
            wstore = zarr.storage.ObjectStore(s3)
            results["write s3 rastore.write"] = timed(
                runs, lambda: rastore.write(f"s3://{BUCKET}/w.ra", src().rechunk((1024, 1024, 4)),
                                            storage_options=opts))
            results["write s3 to_zarr over obstore"] = timed(
                runs, lambda: da.to_zarr(src().rechunk((1024, 1024, 4)), wstore, component="w.zarr",
                                         overwrite=True, zarr_format=3, compressors=None))
            for k in ["write local rastore.write", "write local to_zarr", "write s3 rastore.write",
                      "write s3 to_zarr over obstore"]:
                show(k, results[k])
            os.remove(out_ra)
            shutil.rmtree(out_zarr, ignore_errors=True)
        finally:
            server.kill()
            shutil.rmtree(root, ignore_errors=True)
    r = results
    print(f"sum: rastore {r['sum da.from_zarr'][0] / r['sum rastore.to_dask'][0]:.2f}x da.from_zarr, "
          f"{r['sum da.from_zarr zstd'][0] / r['sum rastore.to_dask'][0]:.2f}x zstd, "
          f"{r['sum 1 GiB da.from_array(np.memmap)'][0] / r['sum 1 GiB rastore.to_dask'][0]:.2f}x "
          "np.memmap at 1 GiB")
    print(f"s3 read: rastore {r['s3 read zarr over obstore'][0] / r['s3 read rastore.read'][0]:.2f}x zarr")
    print(f"write: local {r['write local to_zarr'][0] / r['write local rastore.write'][0]:.2f}x to_zarr, "
          f"s3 {r['write s3 to_zarr over obstore'][0] / r['write s3 rastore.write'][0]:.2f}x to_zarr")


if __name__ == "__main__":
    main()
