"""Dask: ``to_dask`` over ``rastore.Array``, and writing a Dask array from the workers
that compute it. Imported only when used: ``import rastore`` does not import Dask.

A local write's first task creates the whole file (preallocated) under a hidden name
beside the target; each worker stores its blocks into their region (a block of whole
frames by one positioned write, any other through a mapping of the frames it spans);
the last task names the file when every block is stored. A write to ``s3://`` is a
distributed fill (``FillToken``): its first task begins a multipart upload, the array is
rechunked to whole frames along the last axis, one part (at least 5 MiB) per block; each
worker uploads its part and the upload completes only when every part succeeded. Nothing
is on disk or pending before the write runs; on a failure the hidden file is removed and
the upload aborted (see ``_Write`` for who notices which failure).
"""

import asyncio
import json
import os
import sys
import threading
import uuid
import warnings
import weakref
from collections import Counter
from contextlib import contextmanager

import dask
import dask.array as da
import numpy as np
from dask.array.core import slices_from_chunks
from dask.callbacks import Callback
from dask.delayed import Delayed
from dask.utils import parse_bytes

from . import (_fortran_bytes, _hidden, _is_remote, _native, _only_ra, _raw_type, _rastore,
               _remove, _settings)
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
    """The target of ``da.store``: ``target[region] = block`` writes the block into the
    file through the engine's file sink (``rastore::convert::write_box``): one
    positioned write per contiguous run, through the page cache, the padding of
    structured types zeroed, the file closed after (which, on a shared file system,
    sends it to the server). Pickles as its path."""

    def __init__(self, path, shape, dtype):
        self.path, self.shape, self.dtype = path, tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)

    def __setitem__(self, key, value):
        key = tuple(key) if isinstance(key, tuple) else (key,)
        origin, extent = [], []
        for k, n in zip(key, self.shape):
            start, stop, step = k.indices(n)
            if step != 1:
                raise ValueError(f"a store region with step {step}: Dask stores unit steps")
            origin.append(start)
            extent.append(max(stop - start, 0))
        if 0 in extent:
            return
        block = np.asarray(value, dtype=self.dtype).reshape(extent)
        _rastore.write_box(os.fspath(self.path), origin, extent, _fortran_bytes(block))


class _Write(Delayed):
    """The delayed write ``compute=False`` returns. Nothing is on disk, and no upload
    is begun, until it runs. A run that fails removes the hidden file (aborts the
    upload) without a call to ``cleanup()``:

    - under Dask's local schedulers (threads, processes, sync: ``dask.compute``'s
      default), a callback creates the hidden file when the run starts, before any
      task, and removes it when the run fails, whichever task failed; an upload's
      first task begins it, and the callback aborts it. But when the run's tasks ran
      in other processes (the ``processes`` scheduler), its parts may be in flight
      there, out of reach of a stop: then ``compute()`` aborts the upload once the
      run returned (the pool's processes ended with it), or ``cleanup()`` does;
    - under ``distributed``, the first task creates the file (begins the upload), and
      a store that fails removes it (a part that fails aborts the upload).
      ``compute()`` (and so ``rastore.write``) holds the first task too: when the run
      fails, it waits for that task to end (a worker may still be creating the file
      after another block failed), then removes what it made, and aborts the upload.
      ``dask.compute(w)`` cannot wait so; after a block that failed upstream of the
      stores, call ``cleanup()``.

    An upload is aborted once, when nothing of it is in flight (``_Uploads``): the
    requests not yet made are not made, and those being made are waited for. A
    cleanup that fails while the run's error propagates is a warning, not the error.
    """

    __slots__ = ("_cleanup", "_first", "_last", "_prepare", "_upload", "_pooled", "_started")

    def __init__(self, delayed, first, last, cleanup, prepare, upload):
        super().__init__(delayed.key, delayed.dask)
        self._cleanup, self._first, self._last = cleanup, first, last
        self._prepare, self._upload = prepare, upload
        # Whether the last local run's tasks ran in other processes; the first task's
        # result a failed run left for a later cleanup.
        self._pooled, self._started = False, None
        _Janitor.watch(self)

    def compute(self, **kwargs):
        return compute_writes([self], **kwargs)[0]

    def _first_task(self):
        """The write's first task as a Delayed, or None when it has none (an upload
        of an empty array is one task)."""
        layer = next((n for n, tasks in self.dask.layers.items() if self._first in tasks), None)
        return None if layer is None else Delayed(self._first, self.dask, layer=layer)

    def cleanup(self):
        """Removes the hidden file, or aborts the upload, of a failed write."""
        self._cleanup(self._started, _distributed_client(self, {}))


def compute_writes(writes, **kwargs):
    """Runs the ``_Write``s together (``rastore.write`` of one array, or of a
    dataset's), cleaning every one up when the run fails. On a ``distributed`` client,
    their first tasks are held too, and the cleanup waits for them to end: a worker may
    still be creating a file when another block fails."""
    client = _distributed_client(writes[0], kwargs) if writes else None
    if client is None:
        try:
            return dask.compute(*writes, **kwargs)
        except BaseException:
            # Under the processes scheduler the pool's processes ended before
            # dask.compute returned: nothing of the run is in flight any more.
            for w in writes:
                _clean(w, w._started, None)
            raise
    from distributed import as_completed, wait

    kwargs = {k: v for k, v in kwargs.items() if k != "scheduler"}
    firsts = [w._first_task() for w in writes]
    held = [f for f in firsts if f is not None]
    futures = client.compute(list(writes) + held, **kwargs)
    done, started = futures[:len(writes)], iter(futures[len(writes):])
    try:
        # The first write to fail ends the run, however long the others would take.
        for f in as_completed(done):
            if f.status != "finished":
                f.result()
        return [f.result() for f in done]
    except BaseException:
        # Nothing more is computed; what is running ends, and is waited for.
        finished = [d.status == "finished" for d in done]
        client.cancel(done)
        for w, f, ok in zip(writes, firsts, finished):
            first = None if f is None else next(started)
            if ok:
                continue
            if first is not None:
                wait(first)
            ok = first is not None and first.status == "finished"
            _clean(w, first.result() if ok else None, client)
        raise



class _Janitor(Callback):
    """A callback of Dask's local schedulers, registered once. When a run that holds a
    write's first task starts, it prepares the write (the hidden file); when the run
    fails before the write's last task ran, it cleans the write up, with the run's
    results at hand (an upload's token is its first task's result). An upload whose
    first task ran in another process (the ``processes`` scheduler) is not aborted
    here: its parts may be in flight in the pool's processes, which go on after the
    run failed and which no stop reaches; the callback keeps the token for the
    cleanup that follows the run (``compute_writes``, ``cleanup()``)."""

    _writes = weakref.WeakValueDictionary()
    _registered = False

    @classmethod
    def watch(cls, write):
        if not cls._registered:
            cls()._register_once()
        cls._writes[write._first] = write

    def _register_once(self):
        type(self)._registered = True
        self.register()

    def _start_state(self, dsk, state):
        for first, write in list(self._writes.items()):
            if first in dsk:
                write._pooled, write._started = False, None
                write._prepare()

    def _posttask(self, key, result, dsk, state, worker_id):
        # Every part depends on the first task: a part in flight when the run fails
        # runs where the first task ran, in this process or in a pool's.
        write = self._writes.get(key)
        if write is not None:
            write._pooled = not _in_this_process(worker_id)

    def _finish(self, dsk, state, errored):
        for first, write in list(self._writes.items()):
            if first not in dsk or write._last in state["finished"] or not errored:
                continue
            started = state["cache"].get(first)
            if write._upload and write._pooled:
                write._started = started
            else:
                _clean(write, started, None)


def _in_this_process(worker_id):
    """Whether a local scheduler's task ran in this process: its worker id is None
    (sync) or a thread of this process (threads); the processes scheduler's is the
    pid of a process of its pool."""
    return worker_id is None or any(t.ident == worker_id for t in threading.enumerate())


def _clean(write, started, client):
    """Cleans up a failed write while the run's error propagates: a cleanup that fails
    too is a warning, so that the error raised is the run's."""
    try:
        write._cleanup(started, client)
    except Exception as e:
        warnings.warn(f"a failed write was not cleaned up: {e}", RuntimeWarning, stacklevel=3)


def _distributed_client(collection, kwargs):
    """The ``distributed`` client that would run ``collection.compute(**kwargs)``, or
    None when a local scheduler would."""
    if "distributed" not in sys.modules:
        return None
    from distributed import Client

    get = dask.base.get_scheduler(scheduler=kwargs.get("scheduler"), collections=[collection])
    client = getattr(get, "__self__", None)
    return client if isinstance(client, Client) else None


def _in_worker():
    """Whether this task runs on a ``distributed`` worker (not a local scheduler)."""
    try:
        from distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def _create(tmp, eltype, elbyte, dims, trailer):
    """The first task of a local write. On a ``distributed`` worker it creates the
    hidden file at full size; under a local scheduler the janitor created it when the
    run started (so that a run failing early never races a late create)."""
    if _in_worker():
        _rastore.create_file(tmp, eltype, elbyte, dims, True, trailer, False)
    return tmp


def _store(tmp, region, key, block):
    """Stores one block; on failure the hidden file goes, and the run fails."""
    try:
        region[key] = block
    except BaseException:
        _remove(tmp)
        raise


def _name(_stored, tmp, path, durable, split_links):
    """Names the complete hidden file ``path`` as ``rastore.write`` names its files."""
    _rastore.place_file(tmp, path, durable, split_links)


def _local(path, x, eltype, elbyte, dims, dtype, trailer, durable, split_links):
    """The graph of a local write: create, store each block, name."""
    _rastore.check_output(os.fspath(path))
    tmp = _hidden(path)
    token = uuid.uuid4().hex
    first, last = f"rastore-create-{token}", f"rastore-write-{token}"
    made = dask.delayed(_create, pure=False)(tmp, eltype, elbyte, dims, trailer,
                                             dask_key_name=first)
    region = _Region(tmp, dims, dtype)
    store = dask.delayed(_store, pure=False)
    blocks = x.to_delayed().reshape(-1)
    stored = [
        store(made, region, key, block, dask_key_name=f"rastore-store-{token}-{i}")
        for i, (key, block) in enumerate(zip(slices_from_chunks(x.chunks), blocks))
    ]
    job = dask.delayed(_name)(stored, tmp, path, durable, split_links, dask_key_name=last)

    def cleanup(_first_result, _client):
        _remove(tmp)

    def prepare():
        _rastore.create_file(tmp, eltype, elbyte, dims, True, trailer, False)

    return job, first, last, cleanup, prepare, False


def write(path, x, *, metadata=None, durable=False, split_links=False, storage_options=None,
          compute=True):
    """``rastore.write`` of the Dask array ``x``."""
    _only_ra(path, "a Dask array is written into a RawArray file, block by block by its "
             "workers")
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
        graph = _fill(path, x, eltype, elbyte, dims, bytes(trailer), storage_options, compute)
    else:
        graph = _local(path, x, eltype, elbyte, dims, dtype, bytes(trailer), durable,
                       split_links)
    w = _Write(*graph)
    if not compute:
        return w
    w.compute()
    return None


class _Uploads:
    """What this process knows of each upload, by its gate (a name of its graph): the
    requests it has in flight (the upload's beginning, its parts, its completion),
    whether the gate is stopped (no request is made after that), the upload's token
    when this process began it, and whether the upload ended here (completed or
    aborted).

    A failed write stops the gate, waits until no request is in flight, then aborts
    the upload once. A part that lands after its upload was aborted would stay on the
    server (S3 asks for the abort to be repeated; s3s-fs keeps it for good). What
    makes "no request in flight" true when the abort is sent:

    - every process that may make one is stopped and waited for: this one; on
      ``distributed`` every worker (``_stop_on_worker``), and a worker that joins
      later stops it before it runs a task (a plugin, ``_distributed.StopUpload``);
      under Dask's ``processes`` scheduler no stop reaches the pool, so the abort
      waits until the run returned, the pool ended (``_Janitor``);
    - a request is "in flight" from before it is made until the Rust call returned,
      and that call returns only with the server's answer or a failed connection:
      the requests of an upload have no timeout (``rastore::remote`` upload_store),
      since a request the client gave up on may still be carried out;
    - a part skipped after the stop gives no ETag and raises nothing (the run's error
      is the one raised); a write that failed is not run again, on any worker (its
      gate stays stopped)."""

    _changed = threading.Condition()
    _sending = Counter()
    _stopped = set()
    _begun = {}
    _ended = set()

    @classmethod
    @contextmanager
    def sending(cls, gate):
        """Yields whether the request is to be made (False once the gate is stopped)."""
        with cls._changed:
            stopped = gate in cls._stopped
            if not stopped:
                cls._sending[gate] += 1
        if stopped:
            yield False
            return
        try:
            yield True
        finally:
            with cls._changed:
                cls._sending[gate] -= 1
                if not cls._sending[gate]:
                    del cls._sending[gate]
                cls._changed.notify_all()

    @classmethod
    def begun(cls, gate, token):
        """Records the upload this process began (inside ``sending``, so that a stop
        waits for it and then knows it)."""
        with cls._changed:
            cls._begun[gate] = token

    @classmethod
    def stop(cls, gate, timeout=None):
        """Stops the gate; (whether no request is in flight any more, whether this call
        stopped it). Waits up to ``timeout`` seconds; for ever if None, a second at a
        time (a wait without a timeout cannot be interrupted on Windows)."""
        def idle():
            return gate not in cls._sending

        with cls._changed:
            first = gate not in cls._stopped
            cls._stopped.add(gate)
            if timeout is not None:
                return cls._changed.wait_for(idle, timeout), first
            while not cls._changed.wait_for(idle, 1.0):
                pass
            return True, first

    @classmethod
    def report(cls, gate):
        """(the token of the upload begun here or None, whether it ended here)."""
        with cls._changed:
            return cls._begun.get(gate), gate in cls._ended

    @classmethod
    def end(cls, gate):
        """Marks the upload ended here; whether it had not already."""
        with cls._changed:
            first = gate not in cls._ended
            cls._ended.add(gate)
            return first

    @classmethod
    def abort(cls, gate, token, settings):
        """Aborts the upload, unless it ended in this process."""
        if cls.end(gate):
            _rastore.fill_abort(token, settings)


async def _stop_on_worker(gate):
    """``_Uploads.stop`` then ``report`` on a ``distributed`` worker, run by
    ``client.run``: polls, so that the worker's event loop goes on while its requests
    end."""
    while not _Uploads.stop(gate, timeout=0)[0]:
        await asyncio.sleep(0.01)
    return _Uploads.report(gate)


def _stop_everywhere(gate, client):
    """Stops the gate here and, with a ``distributed`` ``client``, on every worker and
    on every worker to join (a plugin the scheduler keeps), once no request is in
    flight; (a token of the upload or None, whether it ended) from what they know."""
    _Uploads.stop(gate)
    reports = [_Uploads.report(gate)]
    if client is not None:
        from ._distributed import StopUpload

        client.register_plugin(StopUpload(gate))
        reports += list(client.run(_stop_on_worker, gate).values())
    token = next((t for t, _ in reports if t), None)
    return token, any(ended for _, ended in reports)


def _begin(plan, settings, gate):
    """The first task of an upload: begins it (the plan gains its upload id), unless
    the client began it already, or the write failed before."""
    if json.loads(plan)["upload_id"]:
        return plan
    with _Uploads.sending(gate) as send:
        if not send:
            raise RuntimeError("the upload was not begun: its write had failed")
        token = _rastore.fill_start(plan, settings)
        _Uploads.begun(gate, token)
    return token


def _put(token, settings, part, block, gate):
    try:
        with _Uploads.sending(gate) as send:
            if not send:
                return part, None
            data = _fortran_bytes(_native(np.asarray(block)))
            return part, _rastore.fill_put(token, settings, part, data)
    except BaseException:
        # The first part to fail in this process stops the upload everywhere it can
        # reach, then aborts it. This part's error is the one raised; a refused abort
        # (another process aborted first) is a warning.
        if _Uploads.stop(gate, timeout=0)[1]:
            try:
                client = None
                if _in_worker():
                    from distributed import get_client

                    client = get_client()
                _, ended = _stop_everywhere(gate, client)
                if not ended:
                    _Uploads.abort(gate, token, settings)
            except Exception as e:
                warnings.warn(f"a failed upload was not aborted: {e}", RuntimeWarning)
        raise


def _complete(token, settings, etags, gate):
    """Completes the upload: a request in flight like a part (a stop waits for it, then
    knows the upload ended; none is made after a stop, so an abort never meets it)."""
    with _Uploads.sending(gate) as send:
        if not send or any(etag is None for _, etag in etags):
            raise RuntimeError("the upload was stopped by a failure of its write")
        _rastore.fill_complete(token, settings, [tuple(e) for e in etags])
        _Uploads.end(gate)


def _fill(url, x, eltype, elbyte, dims, trailer, storage_options, now):
    """The graph of an upload: begin (here and ``now``, or as its first task), put each
    part, complete."""
    settings = _settings(storage_options)
    key = uuid.uuid4().hex
    first, last = f"rastore-begin-{key}", f"rastore-complete-{key}"
    if not dims or 0 in dims:
        # Nothing to cut into parts: one upload of the (tiny) computed array.
        def whole(block):
            a = _native(np.asarray(block))
            _rastore.remote_write(url, settings, eltype, elbyte, dims, _fortran_bytes(a), trailer)

        job = dask.delayed(whole)(x, dask_key_name=last)
        return job, first, last, (lambda _started, _client: None), (lambda: None), False
    plan = _rastore.fill_plan(url, settings, eltype, elbyte, dims, trailer)
    frames = tuple(stop - start for _, start, stop in _rastore.fill_frames(plan))
    if now:
        # To be run at once: begun here, so that whatever fails, the client can abort.
        plan = _rastore.fill_start(plan, settings)
    token = dask.delayed(_begin, pure=False)(plan, settings, key, dask_key_name=first)
    parts = x.rechunk(tuple(dims[:-1]) + (frames,)).to_delayed().reshape(-1)
    put = dask.delayed(_put, pure=False)
    etags = [put(token, settings, part + 1, block, key) for part, block in enumerate(parts)]
    job = dask.delayed(_complete)(token, settings, etags, key, dask_key_name=last)

    def cleanup(started, client):
        # Nothing is in flight once the gate is stopped everywhere, and nothing is
        # begun after.
        begun, ended = _stop_everywhere(key, client)
        started = started or begun or (plan if now else None)
        if started is not None and not ended:
            _Uploads.abort(key, started, settings)

    return job, first, last, cleanup, (lambda: None), True
