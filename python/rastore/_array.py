"""``rastore.Array``: a lazy array over a ``.ra`` file (or ``.npy``) or an ``s3://``
object, which reads nothing until it is indexed, pickles as its location, and which
Dask never copies. Basic indexing of a file is a view over its mapping; integer-array
indexing and ``take`` are gathers: one batch of reads at the device's queue depth
(``DataReader::read_many_into``), with the GIL released."""

import operator
import os

import numpy as np

from . import MappedFile, _is_remote, _numpy_dtype, _rastore, _settings
from ._rastore import Error


def _past_file(path):
    """Whether ``path`` goes on past a file, naming an array inside it
    (``x.h5/grp/dset``, ``m.safetensors/NAME``)."""
    if os.path.exists(path):
        return False
    while not os.path.exists(path):
        up = os.path.dirname(path)
        if up in ("", path):
            return False
        path = up
    return os.path.isfile(path)


class _Local:
    """A file, mapped on first use in each process; where its data cannot be used in
    place, read by its reader (``DataReader``) instead."""

    def __init__(self, path):
        self.path = path
        self.mapped = None
        self.view = None
        self.reader = None
        self.described = None
        # Whether indices are read by gathers: a mapped .ra file, or any data the
        # reader reads (a .npy is indexed by NumPy over its mapping).
        self.gathers = True
        # Mapping checks the header (a .npy's, and that its data is all there): what
        # it refuses, the reader would refuse too, so its error is the file's; but for
        # another format's array that does not lie raw in its file (a chunked HDF5
        # dataset, ``x.h5/grp/dset``), which the reader reads by chunks.
        try:
            mapped = MappedFile(path)
        except Error as mapping:
            if not _past_file(path):
                raise
            try:
                self._reader()
            except Error:
                raise mapping from None
            return
        try:
            # Making the array checks that the data can be used in place. The array
            # is kept: every batch found in the page cache is indexed from it.
            self.view = mapped.array
        except Error:
            # A .npy has no other reader here: its error stands.
            if mapped._npy_descr() is not None:
                raise
            # Big-endian data of a numeric type has no view in place: the reader
            # gathers it, swapped, from the file, and reads basic indexing the same way
            # (a file larger than memory stays on disk). Compressed, BitArray and
            # big-endian user-type data the reader decodes whole, once, when it opens.
            return
        self.mapped = mapped
        self.gathers = mapped._npy_descr() is None

    def describe(self):
        """(shape, dtype): the mapping's, or the reader's (which opens it)."""
        if self.view is not None:
            return self.view.shape, self.view.dtype
        if self.described is None:
            eltype, elbyte, dims = self._reader().header
            meta = self.metadata() if eltype == 0 else b""
            self.described = tuple(dims), _numpy_dtype(eltype, elbyte, meta)
        return self.described

    def metadata(self):
        if self.mapped is not None:
            return bytes(self.mapped.metadata)
        return bytes(self._reader().metadata)

    def token(self):
        # An array inside a file (``m.safetensors/NAME``): the file's.
        path = self.path
        while not os.path.exists(path) and os.path.dirname(path) not in ("", path):
            path = os.path.dirname(path)
        st = os.stat(path)
        return (st.st_size, st.st_mtime_ns)

    def __getitem__(self, key):
        if self.view is not None:
            return self.view[key]
        shape, dtype = self.describe()
        return _basic(key, shape, dtype, lambda sel, buf: self._reader().gather_selections([sel], buf))

    def in_memory(self, base, axis, indices):
        """Whether NumPy indexes the mapping rather than a gather reading the file: a
        ``.npy``, or a batch whose bytes the page cache holds (then the mapping is
        copied from at memory speed, with no read per sample)."""
        if self.view is None:
            return False
        if not self.gathers:
            return True
        return self._reader().resident(base, axis, indices)

    def _reader(self):
        if self.reader is None:
            self.reader = _rastore.ReaderCore(self.path)
        return self.reader

    def gather(self, base, axis, indices, buf):
        """Reads ``base`` (``(start, step, count)`` per axis) with each of ``indices`` on
        ``axis`` into ``buf``."""
        self._reader().gather(base, axis, indices, buf)

    def gather_selections(self, selections, buf):
        """Reads each of ``selections`` into ``buf``, as ``gather``; ``False`` where
        NumPy indexes the mapping instead."""
        if not self.gathers:
            return False
        self._reader().gather_selections(selections, buf)
        return True


def _strides(key, shape):
    """``(selection, flips, ints)`` for a checked ``key`` (an int, a slice or an index
    array per axis): per axis, the ascending ``(start, step, count)`` that reads it. A
    descending slice is read ascending (its axis in ``flips``, to flip after), an int
    is a count of one (its axis in ``ints``, to drop after), and an array's axis is
    ``(0, 1, 1)``, its indices gathered one by one."""
    sel, flips, ints = [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            picked = range(*k.indices(n))
            if picked.step < 0:
                picked = picked[::-1]
                flips.append(axis)
            sel.append((picked.start if picked else 0, picked.step, len(picked)))
        elif isinstance(k, np.ndarray):
            sel.append((0, 1, 1))
        else:
            sel.append((k, 1, 1))
            ints.append(axis)
    return sel, flips, ints


def _basic(key, shape, dtype, read):
    """Basic indexing (``key``: an int or a slice per axis, checked) of data read by
    ``read(selection, buf)``: a new array of only the selected elements, flipped and
    dropped after as ``_strides`` says."""
    sel, flip, drop = _strides(key, shape)
    counts = tuple(c for _, _, c in sel)
    out = np.empty(counts, dtype, order="F")
    if out.size:
        read(sel, out.T.reshape(-1).view(np.uint8))
    if flip:
        out = out[tuple(slice(None, None, -1) if a in flip else slice(None)
                        for a in range(len(counts)))]
    return out[tuple(0 if a in drop else slice(None) for a in range(len(counts)))]


class _Remote:
    """An object, opened (one ranged GET) on first use in each process."""

    def __init__(self, url, storage_options):
        self.core = _rastore.RemoteFileCore(url, _settings(storage_options))
        self.url = url
        self.storage_options = storage_options
        eltype, elbyte, bits = self.core._type()
        # The trailer (a second GET) only where the type needs it.
        trailer = self.metadata() if eltype == 0 and not bits else b""
        self.shape = tuple(self.core.dims)
        self.dtype = np.dtype("?") if bits else _numpy_dtype(eltype, elbyte, trailer)

    def describe(self):
        return self.shape, self.dtype

    def metadata(self):
        return bytes(self.core.metadata)

    def token(self):
        return (self.core.length, self.core.etag)

    def in_memory(self, base, axis, indices):
        return False

    def gather(self, base, axis, indices, buf):
        """As ``_Local.gather``: one batch of coalesced, concurrent ranged GETs."""
        self.core.gather(base, axis, indices, buf)

    def gather_selections(self, selections, buf):
        self.core.gather_selections(selections, buf)
        return True

    def __getitem__(self, key):
        return _basic(key, self.shape, self.dtype, self.core.read_selection)


def _kind_of(k):
    """What an index is, in a few words (never the whole of a large mask)."""
    a = np.asarray(k) if isinstance(k, (list, np.ndarray)) else None
    if a is not None and a.dtype == bool:
        return f"a boolean mask of shape {a.shape} (np.nonzero(mask) gives its indices)"
    if a is not None:
        return f"an array of {a.dtype} of shape {a.shape}"
    return f"a {type(k).__name__}"


_TAKEN = ("rastore.Array takes NumPy's indexing by ints, slices, ... and one integer "
          "array (or list) on one axis")


def _integers(k):
    """``k`` as an int64 array when it is an integer array or list, else ``None``."""
    if not isinstance(k, (list, np.ndarray)) and not hasattr(k, "__array__"):
        return None
    a = np.asarray(k)
    if a.dtype == bool:
        raise IndexError(f"{_TAKEN}, not {_kind_of(k)}")
    if a.size == 0 and a.dtype.kind == "f":
        a = a.astype(np.int64)  # [] is a float array to NumPy, an empty index to us
    if a.dtype.kind not in "iu":
        raise IndexError(f"{_TAKEN}, not {_kind_of(k)}")
    return a.astype(np.int64, copy=False)


def _take_indices(indices):
    """``indices`` as NumPy's ``take`` converts them: an array (or an array-like but a
    NumPy scalar) cast to int64 under ``same_kind`` casting (booleans are 0 and 1,
    floats refused), anything else as ``np.asarray(indices, dtype=np.int64)`` makes it
    (lists and scalars by ``int()``)."""
    if hasattr(indices, "__array__") and not isinstance(indices, np.generic):
        return np.asarray(indices).astype(np.int64, casting="same_kind", copy=False)
    return np.asarray(indices, dtype=np.int64)


def _key(key, shape):
    """``key`` as one entry per axis: an int (made non-negative), a slice, or an int64
    array (made non-negative), at most one array; every index checked against its
    axis before anything is read."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (len(shape) - (len(key) - 1)))
        elif isinstance(k, slice):
            out.append(k)
        elif isinstance(k, (bool, np.bool_)):
            # NumPy would add an axis of one (True) or none (False): a mask, refused.
            raise IndexError(f"{_TAKEN}, not a boolean ({k})")
        elif (a := _integers(k)) is not None:
            out.append(a)
        else:
            try:
                out.append(operator.index(k))
            except TypeError:
                raise IndexError(f"{_TAKEN}, not {_kind_of(k)}") from None
    if len(out) > len(shape):
        raise IndexError(f"too many indices: {len(out)} for {len(shape)} dims")
    out.extend([slice(None)] * (len(shape) - len(out)))
    if sum(isinstance(k, np.ndarray) for k in out) > 1:
        raise IndexError(f"{_TAKEN}: index with one array at a time")
    for axis, (k, n) in enumerate(zip(out, shape)):
        if isinstance(k, np.ndarray):
            # Two reductions, and the where only for negative indices: this runs for
            # every batch, cached ones too (docs/PYTHON.md).
            lo, hi = (k.min(), k.max()) if k.size else (0, 0)
            if lo < -n or hi >= n:
                bad = (k < -n) | (k >= n)
                raise IndexError(
                    f"index {int(k[bad].flat[0])} is out of bounds for axis {axis} with size {n}"
                )
            if lo < 0:
                out[axis] = np.where(k < 0, k + n, k)
        elif not isinstance(k, slice):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            out[axis] = k + n if k < 0 else k
    return tuple(out)


def _check_out(out, shape, dtype):
    """Refuses an ``out`` that is not an array of ``shape`` and ``dtype``, as NumPy's
    ``take`` refuses it."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy array, not {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"out has shape {out.shape}; the result has shape {tuple(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"out has dtype {out.dtype}; the array's is {dtype}")


def _into(out, result):
    """``result``, or ``out`` filled with it, as NumPy's ``take(..., out=out)`` fills
    it (``take`` checked ``out`` against the result's shape and type before reading)."""
    if out is None:
        return result
    np.copyto(out, result)
    return out


class Array:
    """``Array(path_or_url, storage_options=None)``: the array in a ``.ra`` (or
    ``.npy``) file or an ``s3://`` object, read only when indexed.

    ``x[...]`` takes NumPy's basic indexing (ints, slices, ``...``) and returns an
    ndarray: from a local file, a read-only view over its mapping; from an object, a
    new array filled with only the byte runs that hold the selection (merged across
    gaps under 1 MiB), fetched with concurrent ranged GETs. With one integer array (or
    list) on one axis, as NumPy's advanced indexing takes it, and with ``take``, the
    selections of every index are read as one batch at the device's queue depth (a
    gather: the fast way to read a shuffled batch from a file bigger than memory; see
    docs/PYTHON.md). ``np.asarray(x)`` reads it all. It pickles as its location (and
    what the header said), and the process that unpickles it opens the file or object
    again on its first index. ``__dask_tokenize__`` names the location, size and mtime
    (ETag for an object); there is no ``.copy``, so ``da.from_array`` never copies it.
    """

    def __init__(self, location, storage_options=None):
        location = os.fspath(location)
        self._remote = _is_remote(location)
        self._location = location if self._remote else os.path.abspath(location)
        self._storage_options = dict(storage_options or {})
        self._source = None
        source = self._open()
        self._shape, self._dtype = source.describe()
        self._token = source.token()

    def _open(self):
        if self._source is None:
            if self._remote:
                self._source = _Remote(self._location, self._storage_options)
            else:
                self._source = _Local(self._location)
        return self._source

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self._dtype.itemsize

    @property
    def location(self):
        """The path (absolute) or URL."""
        return self._location

    @property
    def metadata(self):
        """The trailer's bytes (an NDL document for files rastore wrote)."""
        return self._open().metadata()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __getitem__(self, key):
        key = _key(key, self._shape)
        if any(isinstance(k, np.ndarray) for k in key):
            return self._gather(key)
        return self._open()[key]

    def take(self, indices, axis=-1, out=None, mode="raise"):
        """NumPy's ``take``: the entries at ``indices`` (any shape, repeats allowed)
        along ``axis`` (``None``: of the array flattened in C order), in one batch of
        reads; ``mode`` is ``"raise"`` (an index out of range is an ``IndexError``
        before anything is read), ``"wrap"`` or ``"clip"``. The default axis is the
        last: whole frames. ``out``, an array of the result's shape, receives the
        result and is returned: a data loader's buffer, made once. It has the result's
        shape and the array's dtype, as NumPy's ``take`` wants. Whole frames into a
        Fortran-ordered ``out`` are read straight into it; any other is filled from
        the batch."""
        idx = _take_indices(indices)
        if axis is None:
            n = self.size
        else:
            axis = operator.index(axis)
            if not -self.ndim <= axis < self.ndim:
                raise np.exceptions.AxisError(axis, self.ndim)
            axis %= self.ndim
            n = self._shape[axis]
        if mode == "wrap":
            idx = idx % n if n else idx
        elif mode == "clip":
            idx = np.clip(idx, 0, max(n - 1, 0))
        elif mode != "raise":
            raise ValueError(f"mode must be 'raise', 'wrap' or 'clip', not {mode!r}")
        if out is not None:
            # Checked before anything is read, as NumPy checks it.
            shape = idx.shape if axis is None else (
                self._shape[:axis] + idx.shape + self._shape[axis + 1:])
            _check_out(out, shape, self._dtype)
        if axis is None:
            bad = (idx < -n) | (idx >= n)
            if bad.any():
                raise IndexError(f"index {int(idx[bad].flat[0])} is out of bounds for size {n}")
            flat = np.where(idx < 0, idx + n, idx).reshape(-1)
            return _into(out, self._gather_points(flat, idx.shape))
        key = _key((slice(None),) * axis + (idx,), self._shape)
        # Whole frames into a Fortran-ordered out (its shape and type checked above)
        # are read straight into it.
        frames = axis == self.ndim - 1 and idx.ndim == 1
        if out is not None and frames and out.flags.f_contiguous and out.flags.writeable:
            return self._gather(key, into=out)
        return _into(out, self._gather(key))

    def _gather(self, key, into=None):
        """``self[key]`` for a key with one integer array: one gather of a selection per
        index, then NumPy's placement of the indexed axes. ``into``: whole frames (the
        array on the last axis, slices on the others) are read into this
        Fortran-ordered array of the result's shape and type, and it is returned."""
        ndim = len(self._shape)
        axis = next(a for a, k in enumerate(key) if isinstance(k, np.ndarray))
        idx = key[axis]
        base, flips, ints = _strides(key, self._shape)
        flat = np.ascontiguousarray(idx.reshape(-1), dtype=np.uint64)
        counts = [c for _, _, c in base]
        source = self._open()
        if flat.size and source.in_memory(base, axis, flat):
            return _into(into, source.view[key])
        if into is not None:
            if into.size:
                source.gather(base, axis, flat, into.T.reshape(-1).view(np.uint8))
            return into
        buf = np.empty(counts + [flat.size], self._dtype, order="F")
        if buf.size:
            source.gather(base, axis, flat, buf.T.reshape(-1).view(np.uint8))
        res = buf
        if flips:
            res = res[tuple(slice(None, None, -1) if a in flips else slice(None) for a in range(ndim))]
        res = res[tuple(0 if a in ints or a == axis else slice(None) for a in range(ndim))]
        # NumPy puts the indexed axes (the array's, and the ints', which broadcast with
        # it) where the first of them was when they are neighbours, else first.
        advanced = sorted(ints + [axis])
        together = advanced == list(range(advanced[0], advanced[-1] + 1))
        at = sum(1 for a in range(advanced[0]) if a not in advanced) if together else 0
        res = np.moveaxis(res, -1, at)
        return res.reshape(res.shape[:at] + idx.shape + res.shape[at + 1:])

    def _gather_points(self, flat, shape):
        """The elements at the C-order flat indices ``flat`` (non-negative), as an
        array of ``shape``: ``take`` with ``axis=None``, one selection per element."""
        buf = np.empty(flat.size, self._dtype)
        if flat.size:
            points = np.unravel_index(flat, self._shape)
            sels = [[(int(p[i]), 1, 1) for p in points] for i in range(flat.size)]
            source = self._open()
            if not source.gather_selections(sels, buf.view(np.uint8)):
                return np.asarray(source.view).reshape(-1)[flat].reshape(shape)
        return buf.reshape(shape)

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self[...])
        if dtype is not None and a.dtype != np.dtype(dtype):
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def __dask_tokenize__(self):
        return ("rastore.Array", self._location, self._token)

    def __getstate__(self):
        return {
            "location": self._location,
            "storage_options": self._storage_options,
            "shape": self._shape,
            "dtype": self._dtype,
            "token": self._token,
        }

    def __setstate__(self, state):
        self._location = state["location"]
        self._remote = _is_remote(self._location)
        self._storage_options = state["storage_options"]
        self._shape = state["shape"]
        self._dtype = state["dtype"]
        self._token = state["token"]
        self._source = None

    def __repr__(self):
        return f"rastore.Array({self._location!r}, shape={self._shape}, dtype={self._dtype})"
