"""Ray Data: ``read_ra`` (a ``Datasource``) and ``write_ra``. Imported only when used:
``import rastore`` does not import Ray. Install with ``pip install "rastore[ray]"``.

Rows are frames: row ``i`` of an array is ``x[..., i]`` (column ``data``); of a dataset
folder, one column per variable that has the frame dimension. A read task's arguments
are locations and frame indices, never bytes: each task opens the files (or objects)
itself and reads its own frames, by slab where they are consecutive and by one gather
per block where they are not. ``write_ra`` gives each write task the references of the
blocks it writes and the place of their rows; it fills its own slab of one
preallocated file, or its own parts of one S3 multipart upload."""

import os
import threading

import numpy as np
import ray
from ray.data import Dataset
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from . import (Error, _fortran_bytes, _hidden, _is_remote, _native, _only_ra, _rastore,
               _raw_type, _remove, _settings)
from ._frames import Frames, contiguous, file_range, fits, order, warm

__all__ = ["RaDatasource", "read_ra", "write_ra"]


class RaDatasource(Datasource):
    """The frames of one or more locations (files, ``s3://`` objects, dataset folders) as
    rows, in order, or shuffled from ``seed``. Every location must give the same columns
    with the same frame shapes and types; their frames follow one another."""

    def __init__(self, paths, *, shuffle=False, seed=None, storage_options=None, warm=None):
        super().__init__()
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        paths = [p if _is_remote(str(p)) else os.path.abspath(os.fspath(p)) for p in paths]
        if not paths:
            raise Error("read_ra needs at least one path")
        self._sources = [Frames(p, storage_options) for p in paths]
        first = self._sources[0]
        want = self._layout(first)
        for s in self._sources[1:]:
            if self._layout(s) != want:
                raise Error(f"{s.location}: its frames ({self._layout(s)}) differ from "
                            f"those of {first.location} ({want}); read_ra reads paths "
                            "whose columns have the same frame shapes and types")
        self._counts = np.array([s.count for s in self._sources], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(self._counts)])
        self._shuffle = bool(shuffle)
        # A seed drawn now, when none is given: a task run again reads the same frames.
        self._seed = int(np.random.SeedSequence().entropy if seed is None else seed) \
            if shuffle else None
        self._warm = warm

    @staticmethod
    def _layout(frames):
        return [(n, c.frame_shape, str(c.dtype)) for n, c in frames.columns.items()]

    @property
    def count(self):
        return int(self._starts[-1])

    @property
    def frame_bytes(self):
        return self._sources[0].frame_bytes

    def get_name(self):
        return "ReadRa"

    def estimate_inmemory_data_size(self):
        return self.count * self.frame_bytes

    def schema(self):
        """The Arrow schema of the rows, made from one zeroed row (nothing is read)."""
        cols = self._sources[0].columns
        row = {n: np.zeros((1,) + c.frame_shape, c.dtype) for n, c in cols.items()}
        return BlockAccessor.batch_to_block(row).slice(0, 0).schema

    def _may_warm(self):
        """Whether read tasks may warm the page cache: shuffled reads of local files (a
        slab read goes through the cache anyway), unless ``warm=False``."""
        total = _Total(self._sources)
        return self._shuffle and not total.remote and self._warm is not False

    def _order(self):
        """The frames in the order the tasks read them (global indices)."""
        return order(self.count, self._shuffle, self._seed or 0)

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        n = self.count
        tasks = max(1, min(int(parallelism), n)) if n else 1
        frames = self._order()
        edges = np.linspace(0, n, tasks + 1).astype(np.int64)
        if data_context is None:
            from ray.data import DataContext

            data_context = DataContext.get_current()
        target = data_context.target_max_block_size or (128 << 20)
        rows = max(1, int(target) // max(self.frame_bytes, 1))
        schema = self.schema()
        files = [p for s in self._sources for p in s.files()] if self._may_warm() else []
        total = _Total(self._sources)
        out = []
        for t in range(tasks):
            idx = frames[edges[t]:edges[t + 1]]
            ranges = file_range(files, t, tasks) if files else []
            read = _Reader(self._sources, self._starts, idx, rows, ranges,
                           total if self._warm is None else None)
            out.append(_task(read, int(idx.size), int(idx.size) * self.frame_bytes,
                             [s.location for s in self._sources], schema, per_task_row_limit))
        return out


def _task(read, rows, size, files, schema, limit):
    """A ReadTask that says its rows, bytes and schema before it runs."""
    try:
        meta = BlockMetadata(num_rows=rows, size_bytes=size, input_files=files,
                             exec_stats=None)
    except TypeError:
        # Ray releases whose block metadata holds the schema.
        meta = BlockMetadata(num_rows=rows, size_bytes=size, schema=schema,
                             input_files=files, exec_stats=None)
        return ReadTask(read, meta)
    if limit is not None:
        return ReadTask(read, meta, schema=schema, per_task_row_limit=limit)
    return ReadTask(read, meta, schema=schema)


class _Total:
    """The files of several sources, as one, for ``fits``."""

    def __init__(self, sources):
        self.remote = any(s.remote for s in sources)
        self.nbytes = sum(s.nbytes for s in sources)


class _Reader:
    """A read task's body: the frames at ``indices`` (global, over the sources), in
    blocks of at most ``rows`` rows; a block of consecutive frames of one source is read
    by slab, any other by one gather per source. With ``ranges``, it also warms its
    share of the files through the page cache, and finishes that before it ends (the
    next epoch then reads from memory): always, or, with ``judge`` (the files' total),
    when they fit in the memory of the machine the task runs on."""

    def __init__(self, sources, starts, indices, rows, ranges, judge):
        self.sources, self.starts, self.indices = sources, starts, indices
        self.rows, self.ranges, self.judge = rows, ranges, judge

    def __call__(self):
        warming = None
        if self.ranges and (self.judge is None or fits(self.judge)):
            warming = threading.Thread(target=warm, args=(self.ranges,), daemon=True)
            warming.start()
        for lo in range(0, self.indices.size, self.rows):
            yield BlockAccessor.batch_to_block(self._block(self.indices[lo:lo + self.rows]))
        if warming is not None:
            warming.join()

    def _block(self, idx):
        which = np.searchsorted(self.starts, idx, side="right") - 1
        first = int(which[0])
        if (which == first).all():
            local = idx - self.starts[first]
            return self._read(self.sources[first], local)
        columns = self.sources[0].columns
        out = {n: np.empty((idx.size,) + c.frame_shape, c.dtype) for n, c in columns.items()}
        for s in np.unique(which):
            at = np.nonzero(which == s)[0]
            part = self._read(self.sources[int(s)], idx[at] - self.starts[s])
            for n in out:
                out[n][at] = part[n]
        return out

    @staticmethod
    def _read(source, local):
        run = contiguous(local)
        out = {}
        for name, col in source.columns.items():
            block = col.slab(*run) if run else col.take(local)
            out[name] = np.ascontiguousarray(col.rows(block))
        return out


def read_ra(paths, *, shuffle=False, seed=None, override_num_blocks=None,
            storage_options=None, warm=None, **ray_remote_args):
    """A Ray ``Dataset`` of the frames of ``paths`` (a path or URL, or a list of them:
    ``.ra`` or ``.npy`` files, ``s3://`` objects, dataset folders or ``s3://`` prefixes
    ending ``/``). Row ``i`` of an array is ``x[..., i]`` in column ``data``; a dataset
    folder has a column per variable that has the frame dimension (the last dimension
    of its largest variable).

    ``shuffle=True`` reads the frames in a permutation drawn from ``seed`` (drawn at
    random when None), split evenly across the read tasks, each gathering its own:
    the cheap shuffle of fixed-size samples (``Dataset.random_shuffle()`` works too,
    at the cost of an all-to-all exchange). ``override_num_blocks`` sets the number of
    read tasks. ``warm``: whether shuffled readers also read the files front to back
    through the page cache, so that the next epoch reads from memory; by default they
    do when the files fit in four fifths of the memory available. Other keywords go to
    ``ray.data.read_datasource`` (``num_cpus``, ``concurrency``, ...)."""
    source = RaDatasource(paths, shuffle=shuffle, seed=seed, storage_options=storage_options,
                          warm=warm)
    return ray.data.read_datasource(source, override_num_blocks=override_num_blocks,
                                    **ray_remote_args)


# --- write_ra --------------------------------------------------------------------------


def _rows(ref, column, lo, hi, frame_shape, dtype):
    """Rows ``lo:hi`` of the block ``ref`` (in this task's object store or fetched to it),
    column ``column``, as an array of ``(hi - lo, *frame_shape)``, checked."""
    block = ray.get(ref)
    acc = BlockAccessor.for_block(block)
    batch = acc.slice(lo, hi, copy=False)
    a = BlockAccessor.for_block(batch).to_batch_format("numpy")
    if column not in a:
        raise Error(f"write_ra: the dataset has no column {column!r} (it has "
                    f"{', '.join(map(repr, a))}); say column=")
    rows = np.asarray(a[column])
    if rows.dtype == object or rows.shape[1:] != tuple(frame_shape):
        shape = rows.shape[1:] if rows.dtype != object else "of varying shapes"
        raise Error(f"write_ra: rows with frames {shape} in a dataset whose first row's "
                    f"frame is {tuple(frame_shape)}: every row of {column!r} is one frame "
                    "of the same shape")
    if rows.dtype != dtype:
        raise Error(f"write_ra: rows of {rows.dtype} in a dataset whose first row is "
                    f"{dtype}: cast them (map_batches) before writing")
    return rows


def _frames_bytes(rows):
    """Rows ``(n, *frame)`` as the column-major bytes of ``x[..., start:start + n]``."""
    return _fortran_bytes(_native(np.moveaxis(rows, 0, -1)))


def _write_slab(tmp, pieces, column, frame_shape, dtype):
    """A local write task: each piece (block reference, its rows lo:hi, first frame) into
    its place in the preallocated file (one positioned write per piece)."""
    for ref, lo, hi, start in pieces:
        rows = _rows(ref, column, lo, hi, frame_shape, dtype)
        extent = list(frame_shape) + [hi - lo]
        _rastore.write_box(tmp, [0] * len(frame_shape) + [start], extent, _frames_bytes(rows))
    return sum(hi - lo for _, lo, hi, _ in pieces)


def _put_part(token, settings, part, pieces, column, frame_shape, dtype):
    """An upload's write task: the frames of part ``part``, from its pieces, as one part
    of the multipart upload; (part, ETag)."""
    rows = np.concatenate([_rows(ref, column, lo, hi, frame_shape, dtype)
                           for ref, lo, hi, _ in pieces])
    return part, _rastore.fill_put(token, settings, part, _frames_bytes(rows))


def _blocks(ds):
    """(reference, rows) of each block of the materialized ``ds``, in its order."""
    out = []
    for bundle in ds.iter_internal_ref_bundles():
        for ref, meta in zip(bundle.block_refs, bundle.metadata):
            if meta.num_rows:
                out.append((ref, int(meta.num_rows)))
    return out


def _pieces(blocks, start, stop):
    """The pieces of the blocks that hold rows ``start:stop``: (reference, lo, hi, first
    row's frame)."""
    out, at = [], 0
    for ref, n in blocks:
        a, b = max(start - at, 0), min(stop - at, n)
        if a < b:
            out.append((ref, a, b, at + a))
        at += n
        if at >= stop:
            break
    return out


def _run(remote, jobs):
    """Runs the tasks; on the first failure cancels the others and waits until every
    one has ended (none is left writing) before raising its error."""
    refs = [remote.remote(*job) for job in jobs]
    pending, results = list(refs), {}
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            results[done[0]] = ray.get(done[0])
    except BaseException:
        for r in pending:
            ray.cancel(r)
        # Cancelled tasks that had begun end their write first (a cancel interrupts
        # Python, not the engine's call).
        for r in pending:
            try:
                ray.get(r)
            except Exception:
                pass
        raise
    return [results[r] for r in refs]


def write_ra(ds, path, *, column="data", storage_options=None, durable=False,
             target_bytes=128 << 20):
    """Writes the rows of the Ray Dataset ``ds`` as the frames of one ``.ra`` (a path,
    or an ``s3://`` URL): row ``i`` becomes ``x[..., i]``, in the dataset's order; each
    row of ``column`` is one frame, all of one shape and type.

    The dataset is materialized first (its blocks stay in Ray's object store, spilled
    as Ray spills them) so that the frame count and each block's place are known. A
    local file is then created whole under a hidden name beside ``path`` and each
    write task fills its own slab (about ``target_bytes`` of blocks); the file is
    renamed into place when every task succeeded (``durable=True``: synced first). An
    ``s3://`` object is one multipart upload (``FillToken``), each task uploading its
    own parts; it completes only when every part succeeded. When a task fails, the
    others are cancelled and waited for, the hidden file is removed or the upload
    aborted: nothing is left, and the error raised."""
    _only_ra(path, "write_ra writes one RawArray file")
    if not isinstance(ds, Dataset):
        raise TypeError(f"write_ra writes a ray.data.Dataset, not {type(ds).__name__}")
    ds = ds.materialize()
    blocks = _blocks(ds)
    n = sum(r for _, r in blocks)
    if n == 0:
        raise Error("write_ra: the dataset has no rows, and so no frame shape to write")
    first = ds.take_batch(1, batch_format="numpy")
    if column not in first:
        raise Error(f"write_ra: the dataset has no column {column!r} (it has "
                    f"{', '.join(map(repr, first))}); say column=")
    sample = np.asarray(first[column])
    if sample.dtype == object:
        raise Error(f"write_ra: the column {column!r} holds Python objects, not frames of "
                    "one shape and type")
    frame_shape, dtype = sample.shape[1:], np.dtype(sample.dtype)
    if dtype.fields is None and not dtype.isnative:
        dtype = dtype.newbyteorder("=")
    eltype, elbyte, descr = _raw_type(dtype)
    dims = [int(d) for d in frame_shape] + [n]
    trailer = b"" if descr is None else bytes(_rastore.descr_trailer(eltype, elbyte, dims, descr))
    frame_bytes = max(1, int(np.prod(frame_shape, dtype=np.int64)) * dtype.itemsize)
    if _is_remote(str(path)):
        _write_remote(str(path), blocks, column, frame_shape, dtype, eltype, elbyte, dims,
                      trailer, storage_options)
        return
    _write_local(os.fspath(path), blocks, column, frame_shape, dtype, eltype, elbyte, dims,
                 trailer, durable, max(1, target_bytes // frame_bytes))


def _write_local(path, blocks, column, frame_shape, dtype, eltype, elbyte, dims, trailer,
                 durable, rows_per_task):
    _rastore.check_output(path)
    tmp = _hidden(path)
    _rastore.create_file(tmp, eltype, elbyte, dims, True, trailer, False)
    try:
        n = dims[-1]
        tasks = max(1, -(-n // rows_per_task))
        edges = np.linspace(0, n, tasks + 1).astype(np.int64)
        jobs = [(tmp, _pieces(blocks, int(a), int(b)), column, frame_shape, dtype)
                for a, b in zip(edges[:-1], edges[1:]) if b > a]
        remote = ray.remote(num_cpus=1, max_retries=0)(_write_slab)
        _run(remote, jobs)
        _rastore.place_file(tmp, path, durable, False)
    except BaseException:
        _remove(tmp)
        raise


def _write_remote(url, blocks, column, frame_shape, dtype, eltype, elbyte, dims, trailer,
                  storage_options):
    settings = _settings(storage_options)
    plan = _rastore.fill_plan(url, settings, eltype, elbyte, dims, trailer)
    parts = _rastore.fill_frames(plan)
    token = _rastore.fill_start(plan, settings)
    try:
        jobs = [(token, settings, int(p), _pieces(blocks, int(a), int(b)), column,
                 frame_shape, dtype) for p, a, b in parts]
        remote = ray.remote(num_cpus=1, max_retries=0)(_put_part)
        etags = _run(remote, jobs)
        _rastore.fill_complete(token, settings, [tuple(e) for e in etags])
    except BaseException:
        _rastore.fill_abort(token, settings)
        raise
