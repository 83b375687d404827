"""NetCDF-3 against its peers, in the same run (issue 39).

A CDF-2 (64-bit offset) file of about MIB MiB, written by netCDF4-python: a fixed
variable `elev(z, y, x)` float32 (half the bytes) and a record variable
`temp(time, y, x)` float32 (the other half), interleaved record by record with the
record coordinate `time(time)` float64, as a model's output is.

1. The file into a dataset folder: `ra convert x.nc out/` against
   `xr.open_dataset(x.nc).load()` + `rastore.write(out, ds)` (xarray's default engine,
   netCDF4). The ratio printed is the peer's time over ra's.
2. One variable to NumPy: `rastore.open("x.nc/elev")` (mapped in place, no copy)
   against `netCDF4.Dataset(x.nc)["elev"][:]` (which reads it), each then summed
   (every page read); and the record variable, `rastore.read("x.nc/temp")` (gathered
   record by record) against `netCDF4.Dataset(x.nc)["temp"][:]`.

The page cache is warm (the file is read once first) and `sync` runs before each timed
conversion. Each case runs RUNS times; the median is reported, with min and max.

Usage: netcdf3_peers.py RA DIR RUNS [MIB]
  RA: the `ra` binary; DIR: where the files go (4 x MIB of room). `rastore` (this
  package), netCDF4 and xarray must be importable.
Prints `name<TAB>median<TAB>min<TAB>max` in seconds per case, then the ratios.
"""
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np
import xarray as xr

import rastore
from timing import row, timed, warm


def make(path, mib):
    """`elev` of MIB/2 MiB and `temp` of MIB/2 MiB, slabs of 1024 x 512 float32."""
    ny, nx = 512, 1024
    slab = ny * nx * 4
    n = max(1, int(mib * (1 << 20) / 2 / slab))
    d = netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET")
    d.title = "netcdf3_peers"
    d.createDimension("time", None)
    d.createDimension("z", n)
    d.createDimension("y", ny)
    d.createDimension("x", nx)
    t = d.createVariable("time", "f8", ("time",))
    t.units = "hours since 2026-01-01"
    elev = d.createVariable("elev", "f4", ("z", "y", "x"))
    elev.units = "m"
    temp = d.createVariable("temp", "f4", ("time", "y", "x"))
    temp.units = "K"
    rng = np.random.default_rng(39)
    plane = rng.normal(size=(ny, nx)).astype(np.float32)
    for k in range(n):
        elev[k] = plane + np.float32(k)
        temp[k] = plane - np.float32(k)
        t[k] = k
    d.close()
    return n


def main():
    ra, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mib = float(sys.argv[4]) if len(sys.argv) > 4 else 256.0
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "x.nc")
    n = make(src, mib)
    size = os.path.getsize(src)
    print(f"# {size / (1 << 20):.0f} MiB CDF-2, {n} records, {runs} runs", flush=True)
    warm(src)
    ours_out, peer_out = os.path.join(d, "out"), os.path.join(d, "peer")

    def clean():
        for p in (ours_out, peer_out):
            shutil.rmtree(p, ignore_errors=True)
        subprocess.run(["sync"], check=True)

    def peer_convert():
        with xr.open_dataset(src) as ds:
            rastore.write(peer_out, ds.load())

    conv = row("ra convert x.nc out/", timed(
        lambda: subprocess.run([ra, "convert", src, ours_out], check=True), runs, clean))
    peer = row("xr.open_dataset().load() + rastore.write", timed(peer_convert, runs, clean))
    clean()

    def nc(name):
        with netCDF4.Dataset(src) as ds:
            ds.set_auto_maskandscale(False)
            return ds[name][:]

    np.testing.assert_array_equal(rastore.open(f"{src}/elev"), nc("elev"))
    np.testing.assert_array_equal(rastore.read(f"{src}/temp"), nc("temp"))
    reps = max(runs, 5)
    o_open = row("rastore.open(x.nc/elev)", timed(lambda: rastore.open(f"{src}/elev"), reps))
    p_open = row("netCDF4 elev[:]", timed(lambda: nc("elev"), reps))
    o_sum = row("rastore.open(x.nc/elev) + sum",
                timed(lambda: rastore.open(f"{src}/elev").sum(dtype=np.float64), reps))
    p_sum = row("netCDF4 elev[:] + sum", timed(lambda: nc("elev").sum(dtype=np.float64), reps))
    o_rec = row("rastore.read(x.nc/temp)", timed(lambda: rastore.read(f"{src}/temp"), reps))
    p_rec = row("netCDF4 temp[:]", timed(lambda: nc("temp"), reps))
    print(f"# ratio peer / ra convert: {peer / conv:.2f} "
          f"(ra {size / conv / 1e6:.0f} MB/s, peer {size / peer / 1e6:.0f} MB/s)")
    print(f"# ratio netCDF4 elev[:] / rastore.open: {p_open / o_open:.0f}")
    print(f"# with a sum of every element: {p_sum / o_sum:.2f}")
    print(f"# ratio netCDF4 temp[:] / rastore.read (records gathered): {p_rec / o_rec:.2f}")


if __name__ == "__main__":
    main()
