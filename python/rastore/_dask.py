"""Dask: ``to_dask`` over ``rastore.Array``, and writing a Dask array from the workers
that compute it. Imported only when used: ``import rastore`` does not import Dask.

A local write creates the whole file (preallocated) under a hidden name beside the
target, lets each worker store its blocks into their region (a block of whole frames
by one positioned write, any other through a mapping of the frames it spans), and
names the file when every block is stored. A write to
``s3://`` is a distributed fill (``FillToken``): the array is rechunked to whole frames
along the last axis, one part (at least 5 MiB) per block; each worker uploads its part
and the upload completes only when every part succeeded. On any failure (after Dask's
retries) the hidden file is removed and the upload aborted: no file, no object, nothing
pending on the server.
"""

import os
import uuid

import dask
import dask.array as da
import numpy as np
from dask.delayed import Delayed
from dask.utils import parse_bytes

from . import (MappedFile, _fortran_bytes, _is_remote, _native, _raw_type, _rastore,
               _settings)
from ._array import Array


def frame_chunks(shape, itemsize, target):
    """Whole frames along the last axis, about ``target`` bytes per chunk; where one
    frame is larger, cut along the slowest axes that make it fit."""
    chunks = [max(int(d), 1) for d in shape]
    for k in range(len(shape) - 1, -1, -1):
        inner = itemsize * int(np.prod(shape[:k], dtype=np.int64))
        inner = max(inner, 1)
        if inner * max(int(shape[k]), 1) <= target:
            break
        if inner >= target:
            chunks[k] = 1
            continue
        chunks[k] = max(1, min(int(shape[k]), target // inner))
        break
    return tuple(chunks)


def to_dask(path, chunks=None, *, storage_options=None, name=None):
    x = path if isinstance(path, Array) else Array(path, storage_options)
    if chunks is None:
        target = parse_bytes(dask.config.get("array.chunk-size"))
        chunks = frame_chunks(x.shape, x.dtype.itemsize, target)
    if name is None:
        name = "rastore-" + dask.base.tokenize(x, chunks)
    return da.from_array(
        x, chunks=chunks, name=name, lock=False, fancy=False, asarray=True,
        inline_array=False, meta=np.empty((0,) * x.ndim, x.dtype),
    )


class _Region:
    """The target of ``da.store``: ``target[region] = block`` stores a block into the
    file. A block of whole frames (every inner axis whole) is one contiguous run of
    the file: it is written with one positioned write, through the page cache, and
    the file is closed (which, on a shared file system, sends it to the server). Any
    other block is stored through a read-write mapping of the frames it spans, synced
    (``msync``) before it is unmapped. Pickles as its path."""

    def __init__(self, path, shape, dtype):
        self.path, self.shape, self.dtype = path, tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)
        self.offset = 48 + 8 * self.ndim

    def _frames(self, key):
        """``(start, stop)`` when ``key`` selects whole frames ``start:stop``."""
        if self.ndim == 0 or len(key) != self.ndim or self.dtype.fields is not None:
            return None
        *inner, last = key
        for k, n in zip(inner, self.shape):
            if not isinstance(k, slice) or k.indices(n) != (0, n, 1):
                return None
        if not isinstance(last, slice) or last.step not in (None, 1):
            return None
        start, stop, _ = last.indices(self.shape[-1])
        return start, stop

    def __setitem__(self, key, value):
        key = tuple(key) if isinstance(key, tuple) else (key,)
        frames = self._frames(key)
        if frames is not None:
            start, stop = frames
            if stop <= start:
                return
            frame = self.dtype.itemsize * int(np.prod(self.shape[:-1], dtype=np.int64))
            data = _fortran_bytes(np.asarray(value, dtype=self.dtype))
            with open(self.path, "r+b") as f:
                f.seek(self.offset + start * frame)
                f.write(data)
            return
        last = key[-1] if len(key) == self.ndim and self.ndim else None
        if isinstance(last, slice) and last.step in (None, 1):
            start, stop, _ = last.indices(self.shape[-1])
            if stop <= start:
                return
            m = MappedFile(self.path, "r+", (start, stop))
            key = key[:-1] + (slice(0, stop - start),)
        else:
            m = MappedFile(self.path, "r+")
        a = m.array
        a[key] = value
        del a
        m.flush()
        m.close()


class _Write(Delayed):
    """The delayed write ``compute=False`` returns: its ``compute()`` cleans up after a
    failure as ``rastore.write`` does (``dask.compute`` of it cannot: a failed graph
    runs no task of ours, so there the hidden file or pending upload is the caller's
    to remove, with ``cleanup()``)."""

    __slots__ = ("_cleanup",)

    def __init__(self, delayed, cleanup):
        super().__init__(delayed.key, delayed.dask)
        self._cleanup = cleanup

    def compute(self, **kwargs):
        try:
            return super().compute(**kwargs)
        except BaseException:
            self._cleanup()
            raise

    def cleanup(self):
        """Removes the hidden file, or aborts the upload, of a failed write."""
        self._cleanup()


def _hidden(path):
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.rastore-{uuid.uuid4().hex[:12]}.tmp")


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _name(_stored, tmp, path, durable, split_links):
    """Names the complete hidden file ``path`` as ``rastore.write`` names its files."""
    _rastore.place_file(tmp, path, durable, split_links)


def write(path, x, *, metadata=None, durable=False, split_links=False, storage_options=None,
          compute=True):
    """``rastore.write`` of the Dask array ``x``."""
    dtype = np.dtype(x.dtype)
    if dtype.fields is None and not dtype.isnative:
        x = x.astype(dtype.newbyteorder("="))
        dtype = x.dtype
    eltype, elbyte, descr = _raw_type(dtype)
    dims = [int(d) for d in x.shape]
    if isinstance(metadata, str):
        metadata = metadata.encode()
    trailer = metadata
    if trailer is None:
        trailer = b"" if descr is None else _rastore.descr_trailer(eltype, elbyte, dims, descr)
    if _is_remote(path):
        job, cleanup = _fill(path, x, eltype, elbyte, dims, bytes(trailer), storage_options)
    else:
        tmp = _hidden(path)
        _rastore.create_file(tmp, eltype, elbyte, dims, False, bytes(trailer), False)
        stored = da.store(x, _Region(tmp, dims, dtype), lock=False, compute=False)
        job = dask.delayed(_name)(stored, tmp, path, durable, split_links,
                                  dask_key_name=f"rastore-write-{uuid.uuid4().hex}")

        def cleanup():
            _remove(tmp)

    w = _Write(job, cleanup)
    if not compute:
        return w
    w.compute()
    return None


def _put(token, settings, part, block):
    return part, _rastore.fill_put(token, settings, part, _fortran_bytes(_native(np.asarray(block))))


def _complete(token, settings, etags):
    _rastore.fill_complete(token, settings, [tuple(e) for e in etags])


def _fill(url, x, eltype, elbyte, dims, trailer, storage_options):
    settings = _settings(storage_options)
    if not dims or 0 in dims:
        # Nothing to cut into parts: one upload of the (tiny) computed array.
        def whole(block):
            a = _native(np.asarray(block))
            _rastore.remote_write(url, settings, eltype, elbyte, dims, _fortran_bytes(a), trailer)

        return dask.delayed(whole)(x), (lambda: None)
    token = _rastore.fill_begin(url, settings, eltype, elbyte, dims, trailer)
    plan = _rastore.fill_frames(token)
    frames = tuple(stop - start for _, start, stop in plan)
    parts = x.rechunk(tuple(dims[:-1]) + (frames,)).to_delayed().reshape(-1)
    put = dask.delayed(_put, pure=False)
    etags = [put(token, settings, part, block) for (part, _, _), block in zip(plan, parts)]
    job = dask.delayed(_complete)(token, settings, etags)

    def cleanup():
        _rastore.fill_abort(token, settings)

    return job, cleanup
