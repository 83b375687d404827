"""``rastore.Loader``: batches of frames for one machine's training loop, gathered by
worker processes into reused shared-memory buffers.

Each worker owns two slots (one shared-memory buffer per column in each): it fills one
with its next batch while the consumer holds the other, and refills a slot only when
the consumer has moved past the batch in it. Worker ``k`` of ``W`` makes batches ``k``,
``k + W``, ...; the consumer yields them in order. The order of an epoch is computed in
every worker from ``(seed, epoch, rank, world_size)``: the control messages carry no
indices, and no data goes through a pipe."""

import multiprocessing as mp
import queue
import traceback
from multiprocessing import shared_memory

import numpy as np

from ._frames import Frames, contiguous, file_range, fits, order, warm_in_background

_POLL = 0.2


class _Sampler:
    """The frames of one rank in an epoch, as ``torch.utils.data.DistributedSampler``
    picks them: the epoch's order (a permutation from ``(seed, epoch)``, or ``0..n``)
    padded by repeating its head to a multiple of ``world_size`` (``drop_last``: cut
    to one), then every ``world_size``-th from ``rank``; then batches of
    ``batch_size`` (``drop_last``: the last short one dropped)."""

    def __init__(self, count, batch_size, shuffle, seed, drop_last, rank, world_size):
        self.count, self.batch_size = count, batch_size
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.rank, self.world_size = rank, world_size
        # DistributedSampler's ceil((n - world_size) / world_size), with drop_last.
        self.per_rank = count // world_size if drop_last else -(-count // world_size)
        self.total = self.per_rank * world_size

    def indices(self, epoch):
        idx = order(self.count, self.shuffle, self.seed, epoch)
        if self.total > idx.size:
            reps = -(-self.total // max(idx.size, 1))
            idx = np.tile(idx, reps)[:self.total] if idx.size else idx
        else:
            idx = idx[:self.total]
        return idx[self.rank:self.total:self.world_size]

    def __len__(self):
        if self.drop_last:
            return self.per_rank // self.batch_size
        return -(-self.per_rank // self.batch_size)


def _views(frames, bufs, n):
    """The Fortran-ordered arrays of ``n`` frames per column over ``bufs`` (as ``take``
    fills them)."""
    return {name: np.ndarray(col.shape_of(n), col.dtype, buffer=bufs[name].buf, order="F")
            for name, col in frames.columns.items()}


def _attach(names):
    return [{n: shared_memory.SharedMemory(name=s) for n, s in slot.items()} for slot in names]


def _work(k, workers, frames, sampler, names, ctrl, results, ranges):
    """A worker: waits for an epoch, fills its batches into its two slots as they are
    freed, until the epoch ends or is abandoned; ``None`` ends it."""
    slots = _attach(names)
    try:
        msg = ctrl.get()
        while msg is not None:
            if msg[0] == "epoch":
                if ranges:
                    # With the first epoch's gathers, once.
                    warm_in_background(ranges)
                    ranges = None
                if not _epoch(k, workers, frames, sampler, slots, ctrl, results, *msg[1:]):
                    return
            msg = ctrl.get()
    except BaseException:
        results.put(("error", k, traceback.format_exc()))
    finally:
        for slot in slots:
            for shm in slot.values():
                shm.close()


def _epoch(k, workers, frames, sampler, slots, ctrl, results, gen, epoch):
    """One epoch of worker ``k``; False when told to end."""
    idx = sampler.indices(epoch)
    free = [True, True]
    b, j = k, 0
    while b < len(sampler):
        slot = j % 2
        # Messages are read as they come; the worker blocks only for its slot.
        while True:
            try:
                m = ctrl.get(block=not free[slot])
            except queue.Empty:
                break
            if m is None:
                return False
            if m[1] != gen:
                continue
            if m[0] == "abandon":
                return True
            free[m[2]] = True
        sel = idx[b * sampler.batch_size:(b + 1) * sampler.batch_size]
        run = contiguous(sel)
        for name, out in _views(frames, slots[slot], sel.size).items():
            col = frames.columns[name]
            if run is not None:
                np.copyto(out, col.slab(*run))
            else:
                col.take(sel, out=out)
        free[slot] = False
        results.put(("batch", gen, b, k, slot, sel.size))
        b, j = b + workers, j + 1
    return True


class Loader:
    """``Loader(path, batch_size, *, shuffle=True, seed=0, workers=2, drop_last=False,
    rank=0, world_size=1, storage_options=None, warm=None)``: batches of frames (along
    the last axis: item ``j`` of a batch is ``x[..., k_j]``) of a ``.ra`` or ``.npy``
    file, an ``s3://`` object, or a dataset folder (a dict of batches, one per variable
    that has the frame dimension).

    A batch is an ndarray of shape ``(n, *frame_shape)``, a view over a shared-memory
    buffer that a worker process filled: ``torch.from_numpy(batch)`` takes it without
    a copy. It stays valid until the next batch is asked for (the buffer is then
    refilled): copy it, or move it to the device, to keep it. ``len(loader)`` is the
    number of batches; ``set_epoch(e)`` chooses the epoch (the order depends only on
    ``(seed, e)``); ``rank`` and ``world_size`` shard as ``DistributedSampler`` does.
    ``workers`` processes gather batches, each with one batch in flight while the
    consumer holds another. A worker that dies is a ``RuntimeError`` in the consumer
    naming it. ``warm``: whether the workers also read the file front to back through
    the page cache while they gather (by default: when it is local and fits in four
    fifths of the memory available), so that later epochs read from memory. ``close()`` (or a
    ``with`` block) ends the workers; they start on the first iteration."""

    def __init__(self, path, batch_size, *, shuffle=True, seed=0, workers=2, drop_last=False,
                 rank=0, world_size=1, storage_options=None, warm=None):
        batch_size, workers = int(batch_size), int(workers)
        rank, world_size = int(rank), int(world_size)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size - 1}] (world_size "
                             f"{world_size}), not {rank}")
        self._frames = Frames(path, storage_options)
        self._sampler = _Sampler(self._frames.count, batch_size, bool(shuffle), int(seed),
                                 bool(drop_last), rank, world_size)
        self.batch_size, self.workers = batch_size, workers
        self.warm = fits(self._frames) if warm is None else bool(warm) and not self._frames.remote
        self.epoch = 0
        self._procs, self._gen, self._active, self._ready = [], 0, None, {}

    @property
    def columns(self):
        """``{name: (frame_shape, dtype)}``; an array's one column is ``data``."""
        return {n: (c.frame_shape, c.dtype) for n, c in self._frames.columns.items()}

    def __len__(self):
        return len(self._sampler)

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def indices(self, epoch=None):
        """The frames this rank reads in ``epoch`` (default: the current), in order."""
        return self._sampler.indices(self.epoch if epoch is None else epoch)

    def _start(self):
        if self._procs:
            return
        ctx = mp.get_context("spawn")
        frame_bytes = {n: max(c.frame_bytes * self.batch_size, 1)
                       for n, c in self._frames.columns.items()}
        self._shms = [[{n: shared_memory.SharedMemory(create=True, size=s)
                        for n, s in frame_bytes.items()} for _ in range(2)]
                      for _ in range(self.workers)]
        self._results = ctx.Queue()
        self._ctrls = [ctx.Queue() for _ in range(self.workers)]
        files = self._frames.files() if self.warm else []
        for k in range(self.workers):
            names = [{n: shm.name for n, shm in slot.items()} for slot in self._shms[k]]
            ranges = file_range(files, k, self.workers) if files else []
            p = ctx.Process(target=_work, name=f"rastore-loader-{k}", daemon=True,
                            args=(k, self.workers, self._frames, self._sampler, names,
                                  self._ctrls[k], self._results, ranges))
            p.start()
            self._procs.append(p)

    def _next_message(self):
        """The next message of a worker; a worker that died raises, naming it."""
        while True:
            try:
                return self._results.get(timeout=_POLL)
            except queue.Empty:
                pass
            for k, p in enumerate(self._procs):
                if p.exitcode is not None:
                    # A worker that failed sent its traceback before it ended: that
                    # message, once it has arrived, says more than the exit.
                    try:
                        return self._results.get(timeout=_POLL)
                    except queue.Empty:
                        pass
                    code = p.exitcode
                    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
                    self.close()
                    raise RuntimeError(f"rastore.Loader: worker {k} (pid {p.pid}) died "
                                       f"({how}); the epoch cannot go on. Iterating again "
                                       "starts new workers")

    def __iter__(self):
        self._start()
        if self._active is not None:
            for q in self._ctrls:
                q.put(("abandon", self._active))
        self._gen += 1
        gen = self._active = self._gen
        self._ready = {}
        for q in self._ctrls:
            q.put(("epoch", gen, self.epoch))
        return self._batches(gen)

    def _batches(self, gen):
        held, finished = None, False
        try:
            for b in range(len(self)):
                while b not in self._ready:
                    if self._active != gen:
                        raise RuntimeError("rastore.Loader: this iteration was ended by a "
                                           "newer iter(loader) (or by close())")
                    msg = self._next_message()
                    if msg[0] == "error":
                        self.close()
                        raise RuntimeError(f"rastore.Loader: worker {msg[1]} failed:\n{msg[2]}")
                    _, g, bb, k, slot, n = msg
                    if g == self._active:  # batches of an abandoned epoch are dropped
                        self._ready[bb] = (k, slot, n)
                k, slot, n = self._ready.pop(b)
                if held is not None:
                    self._ctrls[held[0]].put(("free", gen, held[1]))
                held = (k, slot)
                yield self._batch(k, slot, n)
            finished = True
        finally:
            if self._active == gen:
                self._active = None
                if not finished and self._procs:
                    for q in self._ctrls:
                        q.put(("abandon", gen))

    def _batch(self, k, slot, n):
        views = _views(self._frames, self._shms[k][slot], n)
        out = {name: self._frames.columns[name].rows(v) for name, v in views.items()}
        return out if self._frames.folder else out["data"]

    def close(self):
        """Ends the workers and frees the buffers (a batch still referenced keeps its
        memory until it goes)."""
        procs, self._procs, self._active = self._procs, [], None
        if not procs:
            return
        for q in self._ctrls:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in procs:
            p.join(timeout=2)
            if p.exitcode is None:
                p.terminate()
                p.join(timeout=2)
        for q in self._ctrls + [self._results]:
            q.cancel_join_thread()
            q.close()
        for slots in self._shms:
            for slot in slots:
                for shm in slot.values():
                    try:
                        shm.close()
                    except BufferError:
                        pass
                    shm.unlink()
        self._shms = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"rastore.Loader({self._frames.location!r}, batch_size={self.batch_size}, "
                f"{len(self)} batches, workers={self.workers})")

