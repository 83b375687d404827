"""Frames: the samples of an array, or of a dataset folder, along one axis (for a single
array, its last: sample ``i`` is ``x[..., i]``), as ``rastore.ray.read_ra`` and
``rastore.Loader`` read them. Nothing here imports Ray or PyTorch.

Reading frames by their indices is ``Array.take``: a batch the page cache holds is
indexed from the mapping, any other is gathered around the cache. Where a local file
fits in the memory available (``fits``), the readers also warm the cache with large
sequential reads (``warm``) while they gather, so that the next epoch is read at memory
speed; where it does not fit, they leave the cache alone."""

import os
import threading

import numpy as np

from . import Error, _is_remote, _rastore, _settings
from ._array import Array


def _dims(array, variable):
    """The dimension names of ``array`` (a variable of a dataset folder, or None): its
    trailer's labels, else the names rastore gives unlabeled axes."""
    dims = list(_rastore.unlabeled_dims(array.ndim, variable))
    entity = _rastore.ndl_entity(array.metadata) or {}
    entries = entity.get("dimcoords")
    if isinstance(entries, list) and len(entries) == array.ndim:
        for i, e in enumerate(entries):
            if isinstance(e, dict) and isinstance(e.get("name"), str):
                dims[i] = e["name"]
    return dims


def _folder_variables(location, storage_options):
    """(name, location) of each variable of a dataset folder (or ``s3://`` prefix ending
    ``/``), by name; hidden names are not variables."""
    if _is_remote(location):
        base = location.rstrip("/")
        listed = _rastore.remote_list(base + "/", _settings(storage_options))
        return sorted((n[:-3], f"{base}/{n}") for n, _ in listed
                      if n.endswith(".ra") and "/" not in n and not n.startswith("."))
    return sorted((e.name[:-3], e.path) for e in os.scandir(location)
                  if e.is_file() and e.name.endswith(".ra") and not e.name.startswith("."))


def is_folder(location):
    return location.endswith("/") if _is_remote(location) else os.path.isdir(location)


class Column:
    """One array read frame by frame along ``axis``."""

    def __init__(self, array, axis):
        self.array, self.axis = array, axis
        shape = array.shape
        self.frame_shape = tuple(shape[:axis] + shape[axis + 1:])
        self.dtype = array.dtype
        self.frame_bytes = int(np.prod(self.frame_shape, dtype=np.int64)) * self.dtype.itemsize

    def shape_of(self, n):
        """The shape of ``n`` frames as ``take`` gives them (``n`` in place of the axis)."""
        s = self.array.shape
        return tuple(s[:self.axis]) + (n,) + tuple(s[self.axis + 1:])

    def take(self, indices, out=None):
        """The frames at ``indices`` along the axis (one gather; a resident batch from
        the mapping), into ``out`` (Fortran-ordered, of ``shape_of(n)``) when given."""
        return self.array.take(indices, axis=self.axis, out=out)

    def slab(self, start, stop):
        """Frames ``start:stop``, read by slab: a view over the mapping (local) or only
        their byte runs (``s3://``)."""
        key = (slice(None),) * self.axis + (slice(start, stop),)
        return self.array[key]

    def rows(self, block):
        """``block`` (frames on the axis) as rows: frame ``j`` is ``rows[j]``, a view."""
        return np.moveaxis(block, self.axis, 0)


class Frames:
    """The frames of one location: an array (a ``.ra``, ``.npy`` or ``s3://`` object:
    one column, ``data``, along its last axis) or a dataset folder (one column per
    variable that has the frame dimension, the last dimension of its largest variable).
    Pickles as its locations."""

    def __init__(self, location, storage_options=None):
        location = os.fspath(location)
        self.location = location
        self.storage_options = dict(storage_options or {})
        self.folder = is_folder(location)
        if self.folder:
            self.columns = self._folder(location)
        else:
            array = Array(location, storage_options)
            if array.ndim == 0:
                raise Error(f"{location}: a 0-d array has no frames (rows are x[..., i])")
            self.columns = {"data": Column(array, array.ndim - 1)}
        first = next(iter(self.columns.values()))
        self.count = first.array.shape[first.axis]

    def _folder(self, location):
        variables = []
        for name, loc in _folder_variables(location, self.storage_options):
            array = Array(loc, self.storage_options)
            variables.append((name, array, _dims(array, name)))
        arrays = [v for v in variables if v[1].ndim > 0]
        if not arrays:
            raise Error(f"{location}: no variable with an axis to read frames along "
                        "(a dataset folder holds one NAME.ra per variable)")
        _, big, big_dims = max(arrays, key=lambda v: v[1].nbytes)
        dim = big_dims[-1]
        n = big.shape[-1]
        columns = {}
        for name, array, dims in arrays:
            if dim in dims:
                axis = dims.index(dim)
                if array.shape[axis] != n:
                    raise Error(f"{location}: {name} has {array.shape[axis]} along {dim!r}, "
                                f"the frame dimension, and another variable {n}")
                columns[name] = Column(array, axis)
        return columns

    @property
    def frame_bytes(self):
        return sum(c.frame_bytes for c in self.columns.values())

    @property
    def nbytes(self):
        return self.frame_bytes * self.count

    @property
    def remote(self):
        return _is_remote(self.location)

    def files(self):
        """The paths of its local files (none for ``s3://``), to warm."""
        if self.remote:
            return []
        return [c.array.location for c in self.columns.values()]


def available_memory(proc="/proc", cgroups="/sys/fs/cgroup"):
    """Bytes of memory available without swapping, or None when unknown: Linux's
    ``MemAvailable``, or less where this process's cgroup (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``: a container's limit) leaves less beside the memory its
    processes hold (page cache aside, which the limit reclaims); elsewhere psutil's, if
    installed."""
    avail = None
    try:
        with open(f"{proc}/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            import psutil
        except ImportError:
            return None
        return int(psutil.virtual_memory().available)
    room = _cgroup_room(proc, cgroups)
    return avail if room is None else min(avail, room)


def memory_cgroups(proc="/proc", cgroups="/sys/fs/cgroup"):
    """This process's memory cgroups, v1's memory controller first, then v2's: each as
    (its folder, the file of its limit, the key of ``memory.stat`` that counts its
    processes' own memory)."""
    try:
        with open(f"{proc}/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    v1, v2 = [], []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2.append((f"{cgroups}{path}", "memory.max", "anon"))
        elif "memory" in controllers.split(","):
            v1.append((f"{cgroups}/memory{path}", "memory.limit_in_bytes", "total_rss"))
    return v1 + v2


def _cgroup_room(proc, cgroups):
    """What this process's cgroup limit leaves beside its processes' own memory (v2
    ``memory.max`` less ``anon``, v1 ``memory.limit_in_bytes`` less ``total_rss``), or
    None without a limit."""
    for folder, limit_name, held_name in memory_cgroups(proc, cgroups):
        try:
            with open(f"{folder}/{limit_name}") as f:
                limit = f.read().strip()
            with open(f"{folder}/memory.stat") as f:
                held = {k: int(v) for k, v in (ln.split() for ln in f if ln.strip())}
        except (OSError, ValueError):
            continue
        # No limit: "max" (v2), or a page-rounded 2**63 (v1).
        if limit == "max" or int(limit) >= 1 << 60:
            continue
        return max(int(limit) - held.get(held_name, 0), 0)
    return None


def fits(frames, share=0.8):
    """Whether ``frames`` (local files) fit in ``share`` of the memory available: then
    reading them through the page cache keeps them for the next epoch."""
    if frames.remote:
        return False
    avail = available_memory()
    return avail is not None and frames.nbytes <= share * avail


def file_range(paths, part, parts):
    """The byte ranges of the files ``paths`` that reader ``part`` of ``parts`` warms:
    an even share of their total, as (path, start, stop)."""
    sizes = [os.path.getsize(p) for p in paths]
    total = sum(sizes)
    lo, hi = total * part // parts, total * (part + 1) // parts
    out, at = [], 0
    for p, s in zip(paths, sizes):
        a, b = max(lo - at, 0), min(hi - at, s)
        if a < b:
            out.append((p, a, b))
        at += s
    return out


def warm(ranges, stop=None, chunk=8 << 20):
    """Reads ``ranges`` ((path, start, stop)) front to back through the page cache, in
    ``chunk``-byte reads into one buffer (the GIL released while each read runs), until
    done or ``stop`` (an Event) is set. Returns the bytes read."""
    buf = bytearray(chunk)
    view = memoryview(buf)
    done = 0
    for path, start, end in ranges:
        with open(path, "rb", buffering=0) as f:
            f.seek(start)
            at = start
            while at < end and not (stop is not None and stop.is_set()):
                got = f.readinto(view[:min(chunk, end - at)])
                if not got:
                    break
                at += got
                done += got
    return done


def warm_in_background(ranges):
    """``warm`` in a daemon thread; returns (thread, stop event)."""
    stop = threading.Event()
    t = threading.Thread(target=warm, args=(ranges, stop), daemon=True, name="rastore-warm")
    t.start()
    return t, stop


def order(count, shuffle, seed, epoch=0):
    """The frame order of an epoch: ``0..count`` or a permutation that depends only on
    ``(seed, epoch)``."""
    if not shuffle:
        return np.arange(count, dtype=np.int64)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, int(epoch)])
    return rng.permutation(count).astype(np.int64, copy=False)


def contiguous(indices):
    """(start, stop) when ``indices`` are one ascending run of consecutive frames, else
    None."""
    if indices.size == 0:
        return None
    start = int(indices[0])
    if np.array_equal(indices, np.arange(start, start + indices.size)):
        return start, start + indices.size
    return None
