"""``rastore.virtualizarr.RaParser``: a VirtualiZarr parser of ``.ra`` files and objects.

``open_virtual_dataset(url, registry=registry, parser=RaParser())`` gives a virtual
dataset whose one variable is the file's array, named after the file: its chunks are
whole frames along the last axis, each a ``[url, offset, length]`` reference to one
contiguous byte range of the file, described as Zarr v3 (a ``transpose`` to
column-major, then ``bytes`` in the file's byte order), as ``rastore.ZarrStore`` serves
it. ``to_icechunk()`` saves it. VirtualiZarr's ``to_kerchunk()`` writes Zarr v2, whose
conversion of a ``transpose`` it does not make (it always writes ``order: "C"``): for
arrays of two or more dimensions use ``rastore.references`` (``ra refs``), which writes
kerchunk references with ``order: "F"`` and no fill value but the data's
``_FillValue`` itself. (VirtualiZarr's
kerchunk output keeps the Zarr v3 fill value, 0, which xarray takes as ``_FillValue``:
open it with ``mask_and_scale=False``, or the data's zeros read as NaN.)

Imported only when used: ``import rastore`` does not import VirtualiZarr.
"""

import json
import os
from urllib.parse import unquote, urlparse

import numpy as np
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from zarr.core.metadata import ArrayV3Metadata

from . import _rastore, _settings

__all__ = ["RaParser"]


def _location(url):
    """The path (``file://`` URL or plain path) or ``s3://`` URL rastore opens."""
    parsed = urlparse(str(url))
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme in ("", "s3") or len(parsed.scheme) == 1:  # C:\ is a path
        return os.fspath(url)
    raise ValueError(
        f"{url}: RaParser reads local files (file:// or a path) and s3:// objects")


def _url(url):
    """The URL chunks are referenced by: ``file://`` for a local path."""
    if len(urlparse(str(url)).scheme) > 1:
        return str(url)
    return "file://" + os.path.abspath(os.fspath(url))


class RaParser:
    """``RaParser(chunks=None, storage_options=None)``.

    ``chunks``: frames per chunk (or a chunk shape of whole frames); by default the
    largest count that divides the frames within about 16 MiB. A count that does not
    divide the frames is refused: a short last chunk would be a reference past the
    data, and a manifest holds references only. ``storage_options``: for ``s3://``
    objects, as ``rastore.open`` takes them (the registry reads the chunks later).
    Compressed, BitArray and appending files are refused, saying why.
    """

    def __init__(self, chunks=None, storage_options=None):
        self.chunks = chunks
        self.storage_options = storage_options

    def __call__(self, url, registry):
        chunks = None if self.chunks is None else [int(c) for c in np.atleast_1d(self.chunks)]
        location = _location(url)
        layout = json.loads(
            _rastore.zarr_in_place(location, _settings(self.storage_options), chunks))
        count, size = layout["count"], layout["chunk_bytes"]
        if count and layout["data_bytes"] != count * size:
            frames = layout["dims"][-1]
            raise ValueError(
                f"{url}: chunks of {layout['chunk'][-1]} frames do not divide its "
                f"{frames} frames; a virtual dataset references whole chunks only (give "
                "chunks that divide the frame count, or none for the default)")
        grid = tuple([1] * (len(layout["dims"]) - 1) + [count]) if layout["dims"] else ()
        starts = layout["data_offset"] + size * np.arange(count, dtype=np.uint64)
        manifest = ChunkManifest.from_arrays(
            paths=np.full(grid, _url(url), dtype=np.dtypes.StringDType()),
            offsets=starts.reshape(grid),
            lengths=np.full(grid, size, dtype=np.uint64),
        )
        array = ManifestArray(metadata=ArrayV3Metadata.from_dict(layout["zarr_json"]),
                              chunkmanifest=manifest)
        group = ManifestGroup(arrays={layout["name"]: array}, attributes={})
        return ManifestStore(group=group, registry=registry)
