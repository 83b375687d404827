"""RawArray (``.ra``) files as NumPy arrays, zero-copy over memory mappings.

``open`` gives a read-only array that lies straight over a mapping of the file, in
constant time whatever its size; ``create`` and ``open_slab`` give writeable ones, so that
processes fill disjoint slabs of one file; ``read`` and ``write`` copy whole arrays;
``Appender`` grows a file frame by frame. Everything that touches files or memory is the
Rust library's code, and its errors keep their messages: ``rastore.Error`` (a
``ValueError``) for bad files and refused operations, ``OSError`` subclasses such as
``FileNotFoundError`` for the operating system's failures.

A mapped file that another program truncates kills the interpreter with ``SIGBUS`` on the
next touch of a missing page, as with ``np.memmap``. rastore's own writers never truncate
a file in place: they build a new file and rename it over the old one, so a mapping keeps
the old contents.
"""

import ast
import errno
import io
import json
import os
import uuid

import numpy as np

from . import _rastore
from ._rastore import Error

__all__ = [
    "Appender",
    "Array",
    "Error",
    "Loader",
    "MappedFile",
    "convert",
    "create",
    "info",
    "open",
    "open_slab",
    "read",
    "references",
    "to_dask",
    "write",
    "ZarrStore",
]

# storage_options keys as fsspec/s3fs users write them -> object_store's names.
_SETTING_ALIASES = {
    "endpoint_url": "aws_endpoint",
    "endpoint": "aws_endpoint",
    "key": "aws_access_key_id",
    "secret": "aws_secret_access_key",
    "token": "aws_session_token",
    "region": "aws_region",
    "region_name": "aws_region",
}


def _is_remote(location):
    return isinstance(location, str) and location.startswith("s3://")


def _settings(storage_options):
    """``storage_options`` as object_store settings: its AWS names (``aws_endpoint``,
    ``aws_region``, ``allow_http``, ...) or the s3fs ones (``endpoint_url``, ``key``,
    ``secret``, ``region_name``), overriding the AWS environment (an ``http://``
    endpoint allows plain HTTP)."""
    out = []
    for k, v in (storage_options or {}).items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append((_SETTING_ALIASES.get(k, k), str(v)))
    return out


def _location(path):
    """A path or URL as the Rust side takes it: ``s3://`` URLs as they are."""
    return path if _is_remote(path) else os.fspath(path)

# (eltype, elbyte) -> NumPy type string, for the types NumPy has.
_NUMPY = {
    (1, 1): "i1", (1, 2): "<i2", (1, 4): "<i4", (1, 8): "<i8",
    (2, 1): "u1", (2, 2): "<u2", (2, 4): "<u4", (2, 8): "<u8",
    (3, 2): "<f2", (3, 4): "<f4", (3, 8): "<f8",
    (4, 8): "<c8", (4, 16): "<c16",
    (5, 1): "?",
}
_NUMPY = {k: np.dtype(v) for k, v in _NUMPY.items()}
_BFLOAT16 = (5, 2)
_KIND = {"i": 1, "u": 2, "f": 3, "c": 4}


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        raise Error("bfloat16 needs the ml_dtypes package (pip install ml_dtypes)") from None
    return np.dtype(ml_dtypes.bfloat16)


def _numpy_dtype(eltype, elbyte, trailer):
    """The NumPy dtype of a RawArray type; a user type's comes from its trailer."""
    if (eltype, elbyte) == _BFLOAT16:
        return _bfloat16()
    if eltype == 0:
        descr = _rastore.descr_of(trailer, elbyte)
        if descr is None:
            return np.dtype(f"V{elbyte}")
        return np.lib.format.descr_to_dtype(ast.literal_eval(descr))
    dtype = _NUMPY.get((eltype, elbyte))
    if dtype is None:
        raise Error(
            f"{_rastore.type_name(eltype, elbyte)} has no NumPy equivalent; "
            "read its raw bytes with `ra convert` to .npy (as user<N>) or from Rust"
        )
    return dtype


_RAW_TYPES = {}


def _raw_type(dtype):
    """(eltype, elbyte, descr) for a NumPy dtype: descr is the NumPy descr (Python
    source) when the type is stored as user<N> with it in the trailer, as `ra convert`
    does for structured dtypes and the platform's long double. Remembered per dtype:
    working it out costs more than writing a small file."""
    raw = _RAW_TYPES.get(dtype)
    if raw is None:
        raw = _RAW_TYPES[dtype] = _raw_type_of(dtype)
    return raw


def _raw_type_of(dtype):
    if dtype.name == "bfloat16":
        return _BFLOAT16 + (None,)
    if dtype.kind == "b":
        return 5, 1, None
    n = dtype.itemsize
    if dtype.fields is None and (
        (dtype.kind in "iu" and n in (1, 2, 4, 8))
        or (dtype.kind == "f" and n in (2, 4, 8))
        or (dtype.kind == "c" and n in (8, 16))
    ):
        return _KIND[dtype.kind], n, None
    if dtype.kind in "OMm" or dtype.hasobject:
        raise Error(f"{dtype} cannot be stored: only plain numeric, bool and structured types can")
    return 0, n, repr(np.lib.format.dtype_to_descr(dtype))


def _plain_array(array):
    """``array`` as an ndarray to store, refusing what would lose information on the
    way: a masked array's mask (``np.save`` refuses them too)."""
    if isinstance(array, np.ma.MaskedArray):
        raise Error(
            "a masked array cannot be stored as one RawArray: its mask would be lost. "
            "Write the data and the mask as two arrays, e.g. "
            "rastore.write('x.ra', a.filled(fill)) and "
            "rastore.write('x.mask.ra', np.ma.getmaskarray(a))"
        )
    return _native(np.asarray(array))


def _native(a):
    """`a` with its elements in this machine's byte order (structured types keep the
    byte order their descr records)."""
    if a.dtype.fields is None and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _hidden(path):
    """A hidden name beside ``path`` for the file a parallel write builds before it is
    named ``path``."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.rastore-{uuid.uuid4().hex[:12]}.tmp")


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _fortran_bytes(a):
    """The elements of `a` in column-major order, as a flat uint8 array (a copy only
    when `a` is not already Fortran-contiguous; a C-order one transposed by the Rust
    core, several times faster than NumPy's copy)."""
    if a.ndim >= 2 and a.flags.c_contiguous and not a.flags.f_contiguous and a.size:
        out = np.empty(a.nbytes, np.uint8)
        _rastore.fortran_of_c(a.reshape(-1).view(np.uint8), list(a.shape), a.itemsize, out)
        return out
    f = np.asarray(a, order="F")
    return np.ascontiguousarray(f.T).reshape(-1).view(np.uint8)


class MappedFile(_rastore.MappedFileCore):
    """A mapping of a ``.ra`` file: ``MappedFile(path, mode="r", slab=None)``.

    ``mode="r+"`` maps it read-write; ``slab=(start, stop)`` maps only that range of the
    last axis (read-write). A ``.npy`` file (told by its first bytes) is mapped read-only,
    in its own order and byte order. ``.array`` is the NumPy array over the mapping, with
    this object as its ``base``. ``close()`` unmaps, and raises ``BufferError`` while an
    array over the mapping is alive; a ``with`` block closes on exit. Pickling sends the
    path (made absolute when the file was mapped), mode and slab, so that another
    process, in any folder, maps the file again instead of copying it.
    """

    @property
    def array(self):
        """The array over the mapping: shape == dims, Fortran-ordered (a ``.npy`` in its
        own order), read-only unless mapped with ``mode="r+"``. Constant time whatever
        the size."""
        return self._export(self._numpy_dtype())

    def _numpy_dtype(self):
        descr = self._npy_descr()
        if descr is not None:
            return np.lib.format.descr_to_dtype(ast.literal_eval(descr))
        eltype, elbyte, bits = self._type()
        if bits:
            return np.dtype("?")
        return _numpy_dtype(eltype, elbyte, self.metadata if eltype == 0 else b"")

    @property
    def header(self):
        """What ``ra info --json`` says of the file, with ``dtype`` as a NumPy dtype."""
        h = info(self.path)
        h["dtype"] = self._numpy_dtype()
        return h

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __reduce__(self):
        return (MappedFile, (self._absolute, self.mode, self.slab))

    def __repr__(self):
        state = "closed" if self.closed else self.mode
        slab = "" if self.slab is None else f", slab={self.slab}"
        return f"rastore.MappedFile({self.path!r}, {state!r}{slab})"


def open(path, advice=None):
    """The array in ``path``, read-only, over a mapping of the file (no copy, constant
    time). A ``.ra`` file, or a ``.npy`` (as ``np.load(path, mmap_mode="r")`` gives it,
    in C or Fortran order and its own byte order). ``.ra`` files whose data cannot be
    used in place (big-endian, compressed, BitArray) raise ``rastore.Error``; ``read``
    decodes them.

    ``advice`` says how the array will be used, as ``MappedRa::advise`` does:
    ``"sequential"`` before a pass front to back, ``"random"`` for scattered access,
    ``"willneed"`` to start reading it all in now, ``"normal"``. A hint: ignored on
    Windows and for ``.npy`` files.

    For scattered samples of a file larger than memory, use ``rastore.Array`` and its
    ``take`` or integer-array indexing instead: a cold mapping faults pages in one
    read-ahead window at a time. On a 32 GiB file, cold, 16 KiB samples ran at about 500
    a second through this mapping (4,000-4,800 with ``advice="random"``) and 28,000-40,000
    a second through ``Array``, 0.71-0.92 of the disk's own rate (docs/PYTHON.md)."""
    m = MappedFile(os.fspath(path))
    if advice is not None:
        m.advise(advice)
    return m.array


def open_slab(path, start, stop):
    """The range ``start:stop`` of the last axis of ``path``, writeable, over a mapping:
    worker processes fill disjoint slabs of one file this way."""
    return MappedFile(os.fspath(path), "r+", (start, stop)).array


def create(path, dtype, shape, *, overwrite=False, split_links=False):
    """Creates ``path`` zeroed at full size (space reserved) and returns it as a
    writeable array over a mapping. ``flush()`` on its ``base`` makes the stores
    durable. An existing ``path`` raises ``FileExistsError`` unless ``overwrite``; one
    with other hard links is refused unless ``split_links`` (only this name is then
    replaced)."""
    _only_ra(path, "rastore.create maps a RawArray file for writing")
    dtype = np.dtype(dtype)
    eltype, elbyte, descr = _raw_type(dtype)
    dims = [int(d) for d in (shape if np.iterable(shape) else (shape,))]
    trailer = b"" if descr is None else _rastore.descr_trailer(eltype, elbyte, dims, descr)
    _rastore.create_file(os.fspath(path), eltype, elbyte, dims, overwrite, trailer, split_links)
    return MappedFile(os.fspath(path), "r+").array


def _only_ra(path, what):
    """Refuses a ``path`` whose name says another format than RawArray, for ``what``
    (a writer that makes only ``.ra`` files)."""
    fmt = _rastore.format_of_name(_location(path))
    if fmt is not None:
        raise Error(f"{path}: {what}, and this name says .{fmt}: name it .ra, then "
                    f"rastore.convert it to .{fmt} (or rastore.write an array in memory)")


def _allocator(path):
    """For ``read``: a new array of the file's type and dims, Fortran-ordered (C-ordered
    for a C-order ``.npy``), and its bytes as a flat view to read into."""

    def allocate(eltype, elbyte, dims, trailer, fortran=True):
        dtype = _numpy_dtype(eltype, elbyte, trailer)
        try:
            out = np.empty(dims, dtype, order="F" if fortran else "C")
        except (ValueError, MemoryError) as e:
            raise Error(f"{path}: NumPy cannot hold dims {dims} of {dtype}: {e}") from None
        flat = out.T if fortran else out
        return out, flat.reshape(-1).view(np.uint8)

    return allocate


def read(path, *, storage_options=None):
    """A copy of the array in ``path`` (a file or ``s3://bucket/key``), in memory
    NumPy allocates and the array owns (``flags.owndata``), for every file rastore
    reads: compressed, big-endian and BitArray files are decoded. A ``.npy`` file (told
    by its first bytes) gives what ``np.load`` gives, in its order (C or Fortran), in
    native byte order. The data is read straight into the new array; an object with
    concurrent ranged GETs."""
    path = _location(path)
    if _is_remote(path):
        return _rastore.remote_read(path, _settings(storage_options), _allocator(path))
    return _rastore.read(path, _allocator(path))


def write(
    path,
    array,
    *,
    compress=False,
    metadata=None,
    durable=False,
    split_links=False,
    storage_options=None,
    compute=True,
):
    """Writes ``array`` (any layout, 0-d and empty included) to ``path`` atomically: the
    file is built out of sight and named when complete. ``metadata`` (bytes or str)
    becomes the trailer; ``compress`` stores LZ4; ``durable`` syncs before naming; a
    ``path`` with other hard links is refused unless ``split_links``. The padding bytes
    of structured types are written as zeros.

    The format is the name's, as for ``convert``: a ``.npy`` (Fortran order, as
    ``np.load`` reads it), a ``.png``, a ``.zarr`` group holding the array under the
    name's stem, an ``.npz`` of it under that name; these keep what their format can
    (a ``.npy`` or ``.png`` the data only; ``compress`` is a ``.zarr``'s zstd and is
    refused for the others). Any other name (``.ra`` or none) is a RawArray file.

    ``path`` may be ``s3://bucket/key`` (a multipart upload: nothing appears under the
    key until it is whole). A Dask array is written by the workers that compute it,
    block by block (see ``rastore._dask``); ``compute=False`` then returns a
    ``dask.delayed`` that writes. An ``xarray.DataArray`` keeps its dims, 1-D
    coordinates, name and attrs in the file's NDL trailer. An ``xarray.Dataset`` (or
    ``DataTree``) becomes a folder, one ``NAME.ra`` per variable (see docs/FORMAT.md),
    built beside ``path`` and moved into place whole."""
    path = _location(path)
    kind = type(array).__module__.split(".")[0]
    if kind == "xarray" and type(array).__name__ in ("Dataset", "DataTree"):
        from . import _dataset

        return _dataset.write(path, array, durable=durable, split_links=split_links,
                              storage_options=storage_options, compute=compute)
    if kind == "xarray":
        from . import _xarray

        return _xarray.write(path, array, durable=durable, split_links=split_links,
                             storage_options=storage_options, compute=compute)
    if kind == "dask":
        from . import _dask

        return _dask.write(path, array, metadata=metadata, durable=durable,
                           split_links=split_links, storage_options=storage_options,
                           compute=compute)
    a = _plain_array(array)
    eltype, elbyte, descr = _raw_type(a.dtype)
    dims = list(a.shape)
    if isinstance(metadata, str):
        metadata = metadata.encode()
    if metadata is None:
        metadata = b"" if descr is None else _rastore.descr_trailer(eltype, elbyte, dims, descr)
    if _is_remote(path):
        _rastore.remote_write(path, _settings(storage_options), eltype, elbyte, dims,
                              _fortran_bytes(a), bytes(metadata), compress)
        return None
    _rastore.write(
        path, eltype, elbyte, dims, _fortran_bytes(a), compress, bytes(metadata), durable,
        split_links,
    )
    return None


def info(path, *, storage_options=None):
    """What ``ra info --json`` says of ``path`` (a ``.ra``, a ``.npy``, a NIfTI image, a
    tensor or variable inside a file, ``m.safetensors/NAME`` or ``x.nc/NAME``, or an
    ``s3://`` object), as a dict."""
    path = _location(path)
    if _is_remote(path):
        return json.loads(_rastore.remote_info_json(path, _settings(storage_options)))
    return json.loads(_rastore.info_json(path))


def convert(input, output, *, compress=False, overwrite=False, split_links=False, chunks=None,
            codec=None, nan_gray=None, group=True, storage_options=None):
    """``ra convert``: between ``.ra``, ``.npy``, ``.png``, ``.npz``, Zarr (a ``.zarr``
    folder) and dataset folders, the input told by its contents and the output by its
    name, either side local or ``s3://bucket/key``. A ``.zarr`` output is a group as
    xarray's ``open_zarr`` opens it: of the one array (named after the input; with
    ``group=False``, the bare array), or of a dataset's variables or an ``.npz``'s
    arrays. ``chunks`` (a shape)
    and ``codec`` (``"zstd"``, ``"gzip:6"``, ``"blosc"``, ``"none"``) shape a Zarr
    output; ``nan_gray`` (0 to 255) is the gray of NaNs in a PNG scaled to gray, which
    are refused without it."""
    chunks = None if chunks is None else [int(c) for c in chunks]
    _rastore.convert(_location(input), _location(output), compress, overwrite, split_links, chunks,
                     codec, _settings(storage_options), nan_gray, bool(group))


def to_dask(path, chunks=None, *, storage_options=None, name=None):
    """A ``dask.array`` over ``rastore.Array(path)`` (a file or ``s3://`` object). The
    default chunks are whole frames along the last axis, about Dask's
    ``array.chunk-size`` each (cut along the slower axes when one frame is larger);
    any chunking Dask accepts works. The graph holds the array's location, never its
    data."""
    from . import _dask

    return _dask.to_dask(path, chunks, storage_options=storage_options, name=name)


# A dataset folder's own attributes (docs/FORMAT.md section 10).
_DATASET_ATTRIBUTES = "dataset.yaml"


def _folder_attributes(folder):
    """The attributes in a dataset folder's ``dataset.yaml`` ({} without one); a file
    that is not an NDL document with a mapping of attributes is an error."""
    path = os.path.join(folder, _DATASET_ATTRIBUTES)
    if not os.path.isfile(path):
        return {}
    with io.open(path, "rb") as f:  # this module's `open` maps arrays
        return _attributes_in(f.read(), path)


def _attributes_in(text, path):
    """The attributes of the ``dataset.yaml`` document ``text`` (read from ``path``),
    with the types its ``attribute_types`` names."""
    doc = _rastore.ndl_document(text)
    attrs = None if doc is None else doc.get("attributes", {})
    if not isinstance(attrs, dict):
        raise Error(f"{path}: not an NDL document (YAML starting ---) with a mapping of "
                    "attributes")
    return _typed(attrs, doc.get("attribute_types"))


def _typed(attrs, types):
    """``attrs`` with the NumPy type ``types`` (NDL's ``attribute_types``: a mapping of
    names to ``float32``, ``int16``, ...) names for each: one number a NumPy scalar,
    a list an array, as netCDF4-python and xarray give a netCDF file's attributes (a
    ``float32`` ``scale_factor`` decodes to ``float32``). A value the type does not
    hold is left as it is."""
    if not isinstance(types, dict) or not types:
        return attrs
    out = dict(attrs)
    for name, kind in types.items():
        if name not in out or not isinstance(kind, str):
            continue
        try:
            dtype = np.dtype(kind)
            value = out[name]
            if dtype.kind in "iu":
                # Integers past int64 are kept as their decimal text.
                value = [int(v) for v in value] if isinstance(value, list) else int(value)
            typed = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            continue
        out[name] = typed[()] if typed.ndim == 0 else typed
    return out


def references(path, chunks=None, *, url=None, storage_options=None):
    """kerchunk v1 references to a ``.ra`` file or ``s3://`` object (or a ``.npy``
    file) read in place: a Zarr v2 group holding the array under the file's name, each
    chunk (whole frames along the last axis, one contiguous byte range; a C-order
    ``.npy``'s whole rows along the first) ``[url, offset, length]``. fsspec's
    ``ReferenceFileSystem`` reads them, and so does
    ``xr.open_dataset("reference://", engine="zarr", backend_kwargs={"storage_options":
    {"fo": refs}, "consolidated": False})``. ``chunks``: frames per chunk (or a shape of
    whole frames); by default the largest count that divides the frames within about
    16 MiB, so that no chunk is short; a short last chunk is inline (base64), never a
    range past the data. ``url``: where readers will find the file (default: the
    absolute path, or the ``s3://`` URL). Compressed, BitArray and appending files are
    refused, saying why."""
    chunks = None if chunks is None else [int(c) for c in np.atleast_1d(chunks)]
    text = _rastore.references_json(_location(path), _settings(storage_options), chunks, url)
    return json.loads(text)


def __getattr__(name):
    # zarr-python is an optional extra: imported when the store is first asked for.
    if name == "ZarrStore":
        from ._zarr_store import ZarrStore

        return ZarrStore
    if name == "Loader":
        from ._loader import Loader

        return Loader
    raise AttributeError(f"module 'rastore' has no attribute {name!r}")


class Appender(_rastore.AppenderCore):
    """Grows ``path`` along its last axis: ``Appender(path, dtype=None, frame=None,
    durable=True)``. With ``dtype`` and ``frame`` (a frame's shape) it creates the file
    when missing. ``append(a)`` takes one frame or frames along a last axis;
    ``commit()`` makes them visible (and durable); ``finish()`` ends, and so does a
    ``with`` block (on an exception, without committing what is pending)."""

    def __new__(cls, path, dtype=None, frame=None, durable=True):
        if dtype is None or frame is None:
            path = os.fspath(path)
            if not os.path.exists(path):
                raise FileNotFoundError(
                    errno.ENOENT,
                    "does not exist: give dtype= and frame= to create it "
                    "(rastore.Appender(path, dtype, frame), as ra append --dtype --frame)",
                    path,
                )
            return super().__new__(cls, path, durable=durable)
        _only_ra(path, "rastore.Appender grows a RawArray file")
        eltype, elbyte, descr = _raw_type(np.dtype(dtype))
        if descr is not None:
            raise Error(f"{np.dtype(dtype)} is stored as user<{elbyte}>: append to a file that has it")
        return super().__new__(cls, os.fspath(path), eltype, elbyte, [int(d) for d in frame], durable)

    def append(self, frames):
        """Appends one frame, or ``k`` frames given with a last extent of ``k``."""
        a = _plain_array(frames)
        eltype, elbyte, _ = _raw_type(a.dtype)
        return self._append(eltype, elbyte, list(a.shape), _fortran_bytes(a))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.finish()
        else:
            self.discard()
        return False


from ._array import Array  # noqa: E402  (uses the names above)
