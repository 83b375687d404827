"""``rastore.Array``: a lazy array over a ``.ra`` file (or ``.npy``) or an ``s3://``
object, which reads nothing until it is indexed, pickles as its location, and which
Dask never copies."""

import operator
import os

import numpy as np

from . import MappedFile, _is_remote, _numpy_dtype, _rastore, _settings, info, read
from ._rastore import Error


class _Local:
    """A file, mapped on first use in each process."""

    def __init__(self, path):
        self.path = path
        self.mapped = None
        self.decoded = None
        try:
            mapped = MappedFile(path)
            # Mapping checks the header; making the array checks that the data can
            # be used in place.
            mapped.array
            self.mapped = mapped
        except Error:
            # Compressed, big-endian or BitArray data has no view in place: it is
            # decoded whole, once, on the first index.
            pass

    def array(self):
        if self.mapped is not None:
            return self.mapped.array
        if self.decoded is None:
            self.decoded = read(self.path)
        return self.decoded

    def describe(self):
        """(shape, dtype)."""
        if self.mapped is not None:
            a = self.mapped.array
            return a.shape, a.dtype
        h = info(self.path)
        bits = h["flags"]["bits"]
        dtype = np.dtype("?") if bits else _numpy_dtype(h["eltype"], h["elbyte"], self.metadata())
        return tuple(h["dims"]), dtype

    def metadata(self):
        if self.mapped is not None:
            return bytes(self.mapped.metadata)
        return bytes(_rastore.trailer_of(self.path))

    def token(self):
        st = os.stat(self.path)
        return (st.st_size, st.st_mtime_ns)

    def __getitem__(self, key):
        return self.array()[key]


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

    def __getitem__(self, key):
        # Per axis, ascending (start, step, count); a descending slice is fetched
        # ascending and flipped, an int is a count of one dropped at the end.
        sel, flip, drop = [], [], []
        for axis, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, slice):
                picked = range(*k.indices(n))
                if picked.step < 0:
                    picked = picked[::-1]
                    flip.append(axis)
                sel.append((picked.start if picked else 0, picked.step, len(picked)))
            else:
                sel.append((k, 1, 1))
                drop.append(axis)
        counts = tuple(c for _, _, c in sel)
        out = np.empty(counts, self.dtype, order="F")
        self.core.read_selection(sel, out.T.reshape(-1).view(np.uint8))
        if flip:
            out = out[tuple(slice(None, None, -1) if a in flip else slice(None)
                            for a in range(len(counts)))]
        return out[tuple(0 if a in drop else slice(None) for a in range(len(counts)))]


def _kind_of(k):
    """What an index is, in a few words (never the whole of a large mask)."""
    a = np.asarray(k) if isinstance(k, (list, np.ndarray)) else None
    if a is not None and a.dtype == bool:
        return f"a boolean mask of shape {a.shape} (np.nonzero(mask) gives its indices)"
    if a is not None:
        return f"an array of {a.dtype} of shape {a.shape}"
    return f"a {type(k).__name__}"


def _basic_key(key, shape):
    """`key` as a tuple of one int (made non-negative) or slice per axis; anything
    but NumPy's basic indexing (ints, slices, ``...``) is refused."""
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
        else:
            try:
                out.append(operator.index(k))
            except TypeError:
                raise IndexError(
                    f"rastore.Array takes NumPy's basic indexing (ints, slices, ...), not "
                    f"{_kind_of(k)}; index the array it returns for anything else"
                ) from None
    if len(out) > len(shape):
        raise IndexError(f"too many indices: {len(out)} for {len(shape)} dims")
    out.extend([slice(None)] * (len(shape) - len(out)))
    for axis, (k, n) in enumerate(zip(out, shape)):
        if not isinstance(k, slice):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            out[axis] = k + n if k < 0 else k
    return tuple(out)


class Array:
    """``Array(path_or_url, storage_options=None)``: the array in a ``.ra`` (or
    ``.npy``) file or an ``s3://`` object, read only when indexed.

    ``x[...]`` takes NumPy's basic indexing and returns an ndarray: from a local file,
    a read-only view over its mapping; from an object, a new array filled with only
    the byte runs that hold the selection (merged across gaps under 1 MiB), fetched
    with concurrent ranged GETs. ``np.asarray(x)`` reads it all. It pickles as its
    location (and what the header said), and the process that unpickles it opens the
    file or object again on its first index. ``__dask_tokenize__`` names the location, size and mtime
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
        return self._open()[_basic_key(key, self._shape)]

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
