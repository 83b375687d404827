"""``rastore.ZarrStore``: a read-only zarr-python 3 store that presents one ``.ra`` file
or object (or an uncompressed ``.npy`` file), or a folder of ``.ra`` files, as a Zarr v3
hierarchy, read in place.

Each array's metadata comes from its header and NDL trailer (shape, type, dimension
names, attributes; a ``transpose`` to column-major and ``bytes`` in the file's byte
order); each chunk is whole frames along the last axis, one contiguous byte range of
the file, served from a mapping of it (a view: no copy) or, on ``s3://``, by ranged
GETs. A short last chunk is padded in memory; the file is never written. The layout is
computed by the Rust core (``rastore::convert::refs``), which ``rastore.references``
and ``ra refs`` share. The store pickles as its location, so Dask workers open the file
themselves."""

import asyncio
import errno
import json
import os

import numpy as np
from zarr.abc.store import (ByteRequest, OffsetByteRequest, RangeByteRequest, Store,
                            SuffixByteRequest)
from zarr.core.buffer import default_buffer_prototype

from . import _folder_attributes, _is_remote, _location, _rastore, _settings


class _ArrayNode:
    """One `.ra` file or object (or `.npy` file) as a Zarr array: its metadata and its
    chunks' ranges, along ``axis`` (the last; the first for a C-order ``.npy``). A
    dataset's ``variable`` has the dims it has no labels for named after it."""

    def __init__(self, location, chunks, storage_options, variable=False):
        self.location = location
        self.storage_options = storage_options
        settings = _settings(storage_options)
        chunks = None if chunks is None else [int(c) for c in np.atleast_1d(chunks)]
        layout = json.loads(_rastore.zarr_in_place(location, settings, chunks, variable))
        self.meta = layout["zarr_json"]
        self.zarray, self.zattrs = layout["zarray"], layout["zattrs"]
        self.name = layout["name"]
        self.ndim = len(layout["dims"])
        self.axis = layout["axis"]
        self.offset = layout["data_offset"]
        self.data_bytes = layout["data_bytes"]
        self.chunk_bytes = layout["chunk_bytes"]
        # Where one chunk starts after the one before: the chunk's size, but for the
        # records of a NetCDF record variable interleaved with others'.
        self.chunk_stride = layout["chunk_stride"]
        self.count = layout["count"]
        self._source = None

    def _grid(self, i):
        """The grid index of chunk ``i``: ``i`` on ``axis``, 0 on the others."""
        return [i if k == self.axis else 0 for k in range(self.ndim)]

    def chunk_index(self, key, zarr_format):
        """The chunk a key names (v3 ``c/0/0/i``, ``c`` for 0-d; v2 ``0.0.i``, ``0``
        for 0-d; ``i`` on ``axis``), or ``None``."""
        if zarr_format == 3:
            parts = key.split("/")
            if parts[0] != "c":
                return None
            parts = parts[1:]
        else:
            parts = key.split(".") if self.ndim else ([] if key == "0" else [key])
        if len(parts) != self.ndim:
            return None
        try:
            index = [int(p) for p in parts]
        except ValueError:
            return None
        i = index[self.axis] if index else 0
        if index != self._grid(i) or not 0 <= i < self.count:
            return None
        return i

    def chunk_keys(self, zarr_format):
        if self.ndim == 0:
            return ([("c" if zarr_format == 3 else "0")] if self.count else [])
        sep, start = ("/", "c/") if zarr_format == 3 else (".", "")
        return [start + sep.join(map(str, self._grid(i))) for i in range(self.count)]

    def docs(self, zarr_format):
        """The array's metadata documents, by key within it."""
        if zarr_format == 3:
            return {"zarr.json": self.meta}
        if self.zarray is None:
            raise ValueError(
                f"{self.location}: {self.meta['data_type']} has no Zarr v2 type; "
                "ZarrStore serves it with zarr_format=3")
        return {".zarray": self.zarray, ".zattrs": self.zattrs}

    def _bytes(self, start, stop):
        """Bytes ``start:stop`` after the data's offset: a view of the mapping, or a
        ranged GET."""
        if _is_remote(self.location):
            if self._source is None:
                self._source = _rastore.RemoteFileCore(self.location, _settings(self.storage_options))
            return np.frombuffer(
                self._source.read_range(self.offset + start, self.offset + stop), dtype="u1")
        if self._source is None:
            self._source = np.memmap(_file_of(self.location), dtype="u1", mode="r")
        return self._source[self.offset + start:self.offset + stop]

    def chunk(self, i):
        start = i * self.chunk_bytes
        n = min(self.chunk_bytes, self.data_bytes - start)
        at = i * self.chunk_stride
        data = self._bytes(at, at + n)
        if n < self.chunk_bytes:
            # A short last chunk, padded with the fill value (zeros) in memory.
            padded = np.zeros(self.chunk_bytes, dtype="u1")
            padded[:n] = data
            data = padded
        return data


# Zarr v3 data types of the NumPy kinds and sizes a chunk table's ``.zarray`` names.
_V3_TYPES = {("b", 1): "bool", ("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32",
             ("i", 8): "int64", ("u", 1): "uint8", ("u", 2): "uint16", ("u", 4): "uint32",
             ("u", 8): "uint64", ("f", 2): "float16", ("f", 4): "float32",
             ("f", 8): "float64", ("c", 8): "complex64", ("c", 16): "complex128"}


class _TableNode:
    """An array whose chunks lie in another format's file, each encoded by its own
    codecs (a chunked HDF5 dataset, ``x.h5/grp/dset``): the table the Rust core reads
    from the file (``_rastore.hdf5_chunks``), served as Zarr v2 as it is, or as Zarr v3
    with the same codecs as numcodecs' (``numcodecs.zlib``, ``numcodecs.shuffle``,
    ``numcodecs.fletcher32``). A chunk not in the table is the fill value."""

    def __init__(self, location, table):
        t = json.loads(table)
        self.location = location
        self.file = t["file"]
        self.zarray, self.zattrs = t["zarray"], dict(t["zattrs"])
        self.chunks = {k: (int(a), int(n)) for k, (a, n) in t["chunks"].items()}
        # Named as `rastore.references` names it.
        self.name = _rastore.array_name(location)
        self._map = None

    def _v3(self):
        z = self.zarray
        dt = np.dtype(z["dtype"])
        kind = _V3_TYPES.get((dt.kind, dt.itemsize))
        if kind is None:
            raise ValueError(
                f"{self.location}: {dt} has no Zarr v3 type; ZarrStore serves it with "
                "zarr_format=2")
        endian = "big" if dt.byteorder == ">" else "little"
        codecs = [{"name": "bytes", "configuration": {"endian": endian}}]
        for c in list(z.get("filters") or []) + ([z["compressor"]] if z.get("compressor") else []):
            c = dict(c)
            codecs.append({"name": f"numcodecs.{c.pop('id')}", "configuration": c})
        attrs = dict(self.zattrs)
        names = attrs.pop("_ARRAY_DIMENSIONS", None)
        fill = z.get("fill_value")
        meta = {
            "zarr_format": 3, "node_type": "array", "shape": z["shape"],
            "data_type": kind,
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": z["chunks"] or []}},
            "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
            "fill_value": (False if kind == "bool" else 0) if fill is None else fill,
            "codecs": codecs, "attributes": attrs,
        }
        if names is not None:
            meta["dimension_names"] = names
        return meta

    def docs(self, zarr_format):
        if zarr_format == 3:
            return {"zarr.json": self._v3()}
        return {".zarray": self.zarray, ".zattrs": self.zattrs}

    def chunk_index(self, key, zarr_format):
        return key if key in self.chunks else None

    def chunk_keys(self, zarr_format):
        return list(self.chunks)

    def chunk(self, key):
        start, n = self.chunks[key]
        if self._map is None:
            self._map = np.memmap(self.file, dtype="u1", mode="r")
        return self._map[start:start + n]


def _group_docs(zarr_format, members, attributes=None):
    """A group's metadata documents, by key within it; in v3 its members' metadata
    consolidated (xarray asks). ``members``: (path, {key: doc}) of every node below."""
    attributes = attributes or {}
    if zarr_format == 2:
        return {".zgroup": {"zarr_format": 2}, ".zattrs": attributes}
    metadata = {path: docs["zarr.json"] for path, docs in members}
    return {"zarr.json": {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": attributes,
        "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                  "metadata": metadata},
    }}


def _slice(data, byte_range):
    if byte_range is None:
        return data
    n = len(data)
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start:byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset:]
    if isinstance(byte_range, SuffixByteRequest):
        return data[max(n - byte_range.suffix, 0):]
    raise ValueError(f"unexpected byte range {byte_range!r}")


def _file_of(path):
    """The file or folder ``path`` is, or the file that holds the array it names
    (``m.safetensors`` of ``m.safetensors/NAME``); ``None`` if there is none."""
    while not os.path.exists(path):
        up = os.path.dirname(path)
        if up in ("", path) or os.path.isdir(up):
            return None
        path = up
    return path


class ZarrStore(Store):
    """``ZarrStore(path_or_url, chunks=None, *, group=True, storage_options=None)``.

    ``path_or_url``: a ``.ra`` file (or an uncompressed ``.npy``, C or Fortran order:
    chunks of whole rows along the first axis for C order, or a tensor of a safetensors
    file, ``m.safetensors/NAME``), an ``s3://`` object, or a
    folder (a dataset: each
    ``.ra`` in it an array named after the file, ``dataset.yaml`` its attributes, each
    sub-folder a sub-group). ``chunks``: frames
    per chunk (or a chunk shape of whole frames); by default the largest count that
    divides the frames within about 16 MiB. ``group=True`` (the default, what
    ``xr.open_zarr`` wants) puts a single file's array in a root group under the file's
    name; ``group=False`` makes it the root array (``zarr.open_array(store)``).
    ``zarr_format=3`` (the default) describes the column-major chunks as a
    ``transpose`` codec; ``zarr_format=2`` as ``order: "F"``, which zarr-python 3.1
    decodes several times faster (docs/ZARR.md has the figures), with consolidated
    ``.zmetadata`` for a group.
    """

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, path_or_url, chunks=None, *, group=True, zarr_format=3,
                 storage_options=None):
        super().__init__(read_only=True)
        if zarr_format not in (2, 3):
            raise ValueError(f"zarr_format={zarr_format!r}: 2 or 3")
        self.location = _location(path_or_url)
        if not _is_remote(self.location) and _file_of(self.location) is None:
            # Said here: zarr would take a store with no metadata for one with no array.
            raise FileNotFoundError(
                errno.ENOENT, "no such file or folder (ZarrStore reads a .ra or .npy file, "
                "or a folder of .ra files, in place)", self.location)
        self.chunks = chunks
        self.group = group
        self.zarr_format = zarr_format
        self.storage_options = storage_options
        self._nodes = None

    def _tree(self):
        """(metadata documents by full key, arrays by key prefix: '' for the root,
        'a/' for a member a)."""
        if self._nodes is not None:
            return self._nodes
        docs, arrays = {}, {}
        group = None if _is_remote(self.location) else _rastore.file_group(self.location)
        if not _is_remote(self.location) and os.path.isdir(self.location):
            self._folder(self.location, "", docs, arrays)
        elif group is not None:
            self._file_group(*group, docs, arrays)
        else:
            table = None if _is_remote(self.location) else _rastore.hdf5_chunks(self.location)
            if table is not None:
                array = _TableNode(self.location, table)
            else:
                array = _ArrayNode(self.location, self.chunks, self.storage_options)
            prefix = f"{array.name}/" if self.group else ""
            arrays[prefix] = array
            mine = array.docs(self.zarr_format)
            docs.update({prefix + k: v for k, v in mine.items()})
            if self.group:
                group = _group_docs(self.zarr_format, [(array.name, mine)])
                docs.update(group)
        if self.zarr_format == 2 and (self.group or os.path.isdir(self.location)
                                      or group is not None):
            docs[".zmetadata"] = {"zarr_consolidated_format": 1, "metadata": dict(docs)}
        # Longest prefix first, so that a key's array is the first that prefixes it.
        arrays = dict(sorted(arrays.items(), key=lambda item: -len(item[0])))
        self._nodes = (docs, arrays)
        return self._nodes

    def _file_group(self, names, attributes, docs, arrays):
        """Adds the arrays of a file of named arrays (a NetCDF file's variables, each
        ``FILE/NAME``) as the root group's, its attributes the group's."""
        members = []
        for name in names:
            array = _ArrayNode(f"{self.location}/{name}", self.chunks, self.storage_options,
                               variable=True)
            arrays[f"{name}/"] = array
            mine = array.docs(self.zarr_format)
            docs.update({f"{name}/{k}": v for k, v in mine.items()})
            members.append((name, mine))
        docs.update(_group_docs(self.zarr_format, members, json.loads(attributes)))

    def _folder(self, folder, prefix, docs, arrays):
        """Adds the group at ``folder`` and everything below it; returns its members'
        (path within it, documents)."""
        members = []
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                below = self._folder(entry.path, f"{prefix}{entry.name}/", docs, arrays)
                group = _group_docs(self.zarr_format, below, _folder_attributes(entry.path))
                members.append((entry.name, group))
                members += [(f"{entry.name}/{p}", d) for p, d in below]
            elif entry.name.endswith(".ra"):
                array = _ArrayNode(entry.path, self.chunks, self.storage_options, variable=True)
                arrays[f"{prefix}{array.name}/"] = array
                mine = array.docs(self.zarr_format)
                docs.update({f"{prefix}{array.name}/{k}": v for k, v in mine.items()})
                members.append((array.name, mine))
        group = _group_docs(self.zarr_format, members, _folder_attributes(folder))
        docs.update({prefix + k: v for k, v in group.items()})
        return members

    def _value(self, key, fetch=True):
        """The bytes at ``key`` (``True`` for a chunk that exists, without ``fetch``),
        or ``None``."""
        docs, arrays = self._tree()
        if key in docs:
            return np.frombuffer(json.dumps(docs[key]).encode(), dtype="u1")
        for prefix, node in arrays.items():
            if key.startswith(prefix):
                i = node.chunk_index(key[len(prefix):], self.zarr_format)
                if i is None:
                    return None
                return node.chunk(i) if fetch else True
        return None

    def _id(self):
        return (self.location, str(self.chunks), self.group, self.zarr_format)

    def __eq__(self, other):
        return isinstance(other, ZarrStore) and self._id() == other._id()

    def __hash__(self):
        return hash(self._id())

    def __repr__(self):
        return f"rastore.ZarrStore({self.location!r})"

    def __getstate__(self):
        return {"location": self.location, "chunks": self.chunks, "group": self.group,
                "zarr_format": self.zarr_format, "storage_options": self.storage_options}

    def __setstate__(self, state):
        self.__init__(state["location"], state["chunks"], group=state["group"],
                      zarr_format=state["zarr_format"],
                      storage_options=state["storage_options"])

    async def get(self, key, prototype=None, byte_range: "ByteRequest | None" = None):
        prototype = prototype or default_buffer_prototype()
        if _is_remote(self.location):
            # A ranged GET blocks: off the event loop, so that chunks are fetched at once.
            data = await asyncio.to_thread(self._value, key)
        else:
            data = self._value(key)
        if data is None:
            return None
        return prototype.buffer.from_array_like(np.ascontiguousarray(_slice(data, byte_range)))

    async def get_partial_values(self, prototype, key_ranges):
        return [await self.get(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key):
        return self._value(key, fetch=False) is not None

    async def set(self, key, value):
        raise ValueError(f"{self!r} is read-only: the .ra file is never written")

    async def delete(self, key):
        raise ValueError(f"{self!r} is read-only: the .ra file is never written")

    def _keys(self):
        docs, arrays = self._tree()
        yield from docs
        for prefix, node in arrays.items():
            for k in node.chunk_keys(self.zarr_format):
                yield f"{prefix}{k}"

    async def list(self):
        for k in self._keys():
            yield k

    async def list_prefix(self, prefix):
        for k in self._keys():
            if k.startswith(prefix):
                yield k

    async def list_dir(self, prefix):
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        seen = set()
        for k in self._keys():
            if k.startswith(base):
                child = k[len(base):].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child
