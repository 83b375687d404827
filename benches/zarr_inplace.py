"""Reading a .ra through Zarr in place (rastore.ZarrStore, kerchunk references) against
converting it to Zarr first and against rastore.to_dask, in one run.

A float32 array of GIB GiB, 1024 x 1024 x frames, written by `ra demo --keep`; chunks
of 16 MiB (4 whole frames) on every side. Each case runs RUNS times, `sync` before
each, with the page cache warm (every input read once before), or with `cold` as the
fifth argument, dropped before each run (root). The cases:
- `convert`: `ra convert x.ra x.zarr` (uncompressed, the same chunks): the copy a
  pipeline makes today before any Zarr reader can start;
- `open`: `xr.open_zarr(rastore.ZarrStore(x.ra))`, metadata only;
- `sum via ...`: a Dask sum over the whole array (the default threaded scheduler),
  through ZarrStore (Zarr v3; v3 with zarr-python's `array.order` set to "F", so that
  it decodes into Fortran-ordered arrays; and v2 with `order: "F"`), through fsspec over
  `rastore.references`, through zarr-python over the converted copy, and through
  `rastore.to_dask` (the native path).

Usage: zarr_inplace.py RA DIR RUNS [GIB] [cold]
Prints `name<TAB>median<TAB>min<TAB>max` in seconds, then the ratios.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import dask.array as da
import fsspec
import xarray as xr
import zarr

import rastore


COLD = False


def timed(runs, fn):
    out = []
    for _ in range(runs):
        subprocess.run(["sync"], check=True)
        if COLD:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out), min(out), max(out)


def main():
    global COLD
    ra, folder, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gib = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    COLD = len(sys.argv) > 5 and sys.argv[5] == "cold"
    os.makedirs(folder, exist_ok=True)
    subprocess.run([ra, "demo", "--gib", str(gib), "--keep", "--dir", folder], check=True,
                   stdout=subprocess.DEVNULL)
    made = sorted(glob.glob(os.path.join(folder, "rastore-demo-*.ra")))[-1]
    path = os.path.join(folder, "x.ra")
    os.replace(made, path)
    copy = os.path.join(folder, "x.zarr")
    open(path, "rb").read()  # warm
    store = rastore.ZarrStore(path, group=False)
    assert json.loads(bytes(store._value("zarr.json")))["chunk_grid"]["configuration"][
        "chunk_shape"] == [1024, 1024, 4]
    store2 = rastore.ZarrStore(path, group=False, zarr_format=2)
    refs = rastore.references(path)

    def fortran(store):
        with zarr.config.set({"array.order": "F"}):
            return da.from_zarr(store).sum().compute()

    def convert():
        shutil.rmtree(copy, ignore_errors=True)
        subprocess.run([ra, "convert", path, copy, "--array", "--chunks", "1024,1024,4"], check=True)

    results = {
        "convert": timed(runs, convert),
        "open": timed(runs, lambda: xr.open_zarr(rastore.ZarrStore(path))),
        "sum via ZarrStore": timed(runs, lambda: da.from_zarr(store).sum().compute()),
        "sum via ZarrStore, order F": timed(runs, lambda: fortran(store)),
        "sum via ZarrStore v2": timed(runs, lambda: da.from_zarr(store2).sum().compute()),
        "sum via references": timed(runs, lambda: da.from_zarr(zarr.open_group(
            fsspec.filesystem("reference", fo=refs).get_mapper(""), mode="r",
            zarr_format=2)["x"]).sum().compute()),
        "sum via the converted copy": timed(runs, lambda: da.from_zarr(copy).sum().compute()),
        "sum via to_dask": timed(runs, lambda: rastore.to_dask(path).sum().compute()),
    }
    for name, (med, lo, hi) in results.items():
        print(f"{name}\t{med:.3f}\t{lo:.3f}\t{hi:.3f}")
    native = results["sum via to_dask"][0]
    for name in ["sum via ZarrStore", "sum via ZarrStore, order F", "sum via ZarrStore v2",
                 "sum via references",
                 "sum via the converted copy"]:
        print(f"{name} / to_dask\t{results[name][0] / native:.2f}")
    first = results["convert"][0] + results["sum via the converted copy"][0]
    print(f"convert then sum / ZarrStore sum\t{first / results['sum via ZarrStore'][0]:.2f}")
    shutil.rmtree(copy, ignore_errors=True)
    os.remove(path)


if __name__ == "__main__":
    main()
