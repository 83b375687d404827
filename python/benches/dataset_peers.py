"""A dataset of 8 variables, 4 GiB in all, opened and averaged through xarray and Dask
(a LocalCluster of 2 worker processes, 1 thread each), in one run:

- `open_dataset(folder, engine="rastore")`: a folder of 8 `.ra` files (rastore.write);
- `open_zarr` of the same Dataset written by xarray's `to_zarr` (Zarr v3, no
  compression, the same chunks);
- `open_dataset(x.nc, engine="h5netcdf")` of it written as NetCDF4/HDF5, if h5netcdf
  installs.

Each is opened with `chunks={"time": 32}` (16 MiB chunks), then `ds.mean().compute()`;
the page cache warm (every file read once before), RUNS runs each. Also the time to
open alone (metadata, no data), median of 50.

Usage: .venv/bin/python python/benches/dataset_peers.py DIR RUNS [FRAMES]
(FRAMES: 1024 by default, 4 GiB in all; fewer for a quick try)
Prints `name<TAB>median<TAB>min<TAB>max` in seconds, then the ratios.
"""
import importlib.util
import os
import shutil
import statistics
import sys
import time

import numpy as np
import xarray as xr
from distributed import Client, LocalCluster

import rastore


def timed(runs, fn):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out), min(out), max(out)


def warm(path):
    for root, _, names in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                while f.read(64 << 20):
                    pass


def main():
    folder, runs = sys.argv[1], int(sys.argv[2])
    os.makedirs(folder, exist_ok=True)
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    shape = (256, 512, frames)  # x, y, time: 512 MiB of float32 per variable by default
    rng = np.random.default_rng(1)
    frame = rng.standard_normal(shape[:2]).astype("f4")
    data = np.broadcast_to(frame[:, :, None], shape)
    ds = xr.Dataset({f"v{i}": (("x", "y", "time"), data + np.float32(i)) for i in range(8)},
                    coords={"time": np.arange(shape[2])}, attrs={"title": "bench"})
    paths = {"rastore": os.path.join(folder, "run"), "zarr": os.path.join(folder, "run.zarr"),
             "h5netcdf": os.path.join(folder, "run.nc")}
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else None
    rastore.write(paths["rastore"], ds)
    ds.chunk({"time": 32}).to_zarr(paths["zarr"], zarr_format=3,
                                   encoding={v: {"compressors": None} for v in ds.data_vars})
    openers = {
        "rastore": lambda c: xr.open_dataset(paths["rastore"], engine="rastore", chunks=c),
        "zarr": lambda c: xr.open_zarr(paths["zarr"], chunks=c),
    }
    if importlib.util.find_spec("h5netcdf") is not None:
        ds.to_netcdf(paths["h5netcdf"], engine="h5netcdf")
        openers["h5netcdf"] = lambda c: xr.open_dataset(paths["h5netcdf"], engine="h5netcdf",
                                                        chunks=c)
    else:
        print("h5netcdf\tnot installed")
    del ds, data
    results = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        for name, opener in openers.items():
            warm(paths[name])
            opener(None)
            results[f"open {name}"] = timed(50, lambda: opener(None))
            results[f"open+mean {name}"] = timed(
                runs, lambda: opener({"time": 32}).mean().compute())
    for name, (med, lo, hi) in results.items():
        print(f"{name}\t{med:.4f}\t{lo:.4f}\t{hi:.4f}")
    base = results["open+mean rastore"][0]
    for name in openers:
        if name != "rastore":
            print(f"{name} / rastore (open+mean)\t{results['open+mean ' + name][0] / base:.2f}")
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (
            os.remove(p) if os.path.exists(p) else None)


if __name__ == "__main__":
    main()
