"""xarray: the ``rastore`` backend (``xr.open_dataarray(path, engine="rastore")``) and
the labels of a ``DataArray`` in a file's NDL trailer.

The ndarray of the NDL document keeps ``name`` (the DataArray's), ``dimcoords`` (one
entry per axis, in order: the dimension's ``name``, and for a dimension with a 1-D
coordinate its ``values``, NumPy ``type`` and ``attributes``) and ``attributes`` (the
DataArray's ``attrs``). Datetimes and timedeltas are kept as integers of their unit,
their type (``<M8[ns]``) saying which. Imported only when used.
"""

import os

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from . import Error, _rastore, _raw_type, _typed
from ._array import Array

def _plain(v):
    """``v`` as values NDL holds (NumPy scalars and arrays become Python ones)."""
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise Error(f"the attribute value {v!r} ({type(v).__name__}) has no NDL form")


def _attributes(attrs):
    """``attrs`` as NDL holds them, and the NumPy type of each that is a NumPy number
    or array of numbers (``attribute_types``: a ``float32`` ``scale_factor`` stays
    ``float32``, as netCDF keeps it); a ``uint64`` past ``int64`` as its decimal text."""
    values, types = {}, {}
    for k, v in attrs.items():
        k = str(k)
        if isinstance(v, (np.generic, np.ndarray)) and v.dtype.kind in "iuf":
            types[k] = v.dtype.name
            if v.dtype.kind == "u" and v.dtype.itemsize == 8:
                big = np.iinfo(np.int64).max
                v = np.vectorize(lambda x: str(x) if x > big else int(x), otypes=[object])(v)
        values[k] = _plain(v)
    return values, types


def _coord_values(values):
    if values.dtype.kind in "Mm":
        return values.view("i8").tolist()
    if values.dtype.kind in "biufUS":
        if values.dtype.kind == "S":
            return [b.decode("latin-1") for b in values.tolist()]
        return values.tolist()
    raise Error(f"a coordinate of {values.dtype} has no NDL form")


def trailer(da):
    """The NDL trailer of ``da``: its type, shape, labels and attrs."""
    dtype = np.dtype(da.dtype)
    eltype, elbyte, descr = _raw_type(dtype)
    dims = [int(d) for d in da.shape]
    dimcoords = []
    for d in da.dims:
        entry = {"name": str(d)}
        if d in da.coords and da.coords[d].ndim == 1:
            c = da.coords[d]
            values = np.asarray(c.values)
            entry["type"] = values.dtype.str
            entry["values"] = _coord_values(values)
            if c.attrs:
                entry["attributes"] = _plain(dict(c.attrs))
        dimcoords.append(entry)
    extra = {"dimcoords": dimcoords}
    if da.name is not None:
        extra["name"] = str(da.name)
    attrs, types = _attributes(dict(da.attrs))
    if types:
        extra["attribute_types"] = types
    text = _rastore.ndl_trailer(eltype, elbyte, dims, descr, attrs, extra)
    if len(text) > _rastore.MAX_TRAILER_YAML:
        raise Error(
            f"the labels of {da.name or 'the DataArray'} take {len(text)} bytes of NDL, over the "
            f"{_rastore.MAX_TRAILER_YAML} a trailer may hold: drop the largest coordinates"
        )
    return bytes(text)


def write(path, da, *, durable=False, split_links=False, storage_options=None, compute=True):
    """``rastore.write`` of a DataArray: its data (NumPy or Dask) with its labels."""
    from . import write as write_array

    data = da.data
    meta = trailer(da)
    if type(data).__module__.split(".")[0] == "dask":
        from . import _dask

        return _dask.write(path, data, durable=durable, split_links=split_links,
                           storage_options=storage_options, compute=compute, metadata=meta)
    return write_array(path, np.asarray(data), metadata=meta, durable=durable,
                       split_links=split_links, storage_options=storage_options)


def labels(metadata, shape, variable=None):
    """(name, dims, coords, attrs) from a trailer; for a file without labels, the NDL
    attributes and the dims as rastore names them everywhere: ``dim_0 ...`` for an
    array on its own (as xarray names a DataArray's), ``VAR_dim_0 ...`` for the
    ``variable`` VAR of a dataset, so that no two variables' dims conflict."""
    entity = _rastore.ndl_entity(metadata) or {}
    attrs = entity.get("attributes") or {}
    if not isinstance(attrs, dict):
        attrs = {}
    attrs = _typed(attrs, entity.get("attribute_types"))
    dims = list(_rastore.unlabeled_dims(len(shape), variable))
    coords = {}
    entries = entity.get("dimcoords")
    if isinstance(entries, list) and len(entries) == len(shape):
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or not isinstance(e.get("name"), str):
                continue
            dims[i] = e["name"]
            values, kind = e.get("values"), e.get("type")
            if isinstance(values, list) and len(values) == shape[i] and isinstance(kind, str):
                t = np.dtype(kind)
                v = np.asarray(values, dtype="i8").view(t) if t.kind in "Mm" else np.asarray(values, dtype=t)
                coords[e["name"]] = xr.Variable(e["name"], v, attrs=e.get("attributes") or {})
    name = entity.get("name")
    return (name if isinstance(name, str) else None), dims, coords, attrs


class RastoreBackendArray(BackendArray):
    """A ``rastore.Array`` as xarray's lazily indexed backend array (basic indexing)."""

    def __init__(self, array):
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self.array.__getitem__
        )


class RastoreBackendEntrypoint(BackendEntrypoint):
    """``engine="rastore"``: RawArray files and ``s3://`` objects, and folders of them
    (datasets, ``rastore._dataset``), lazily."""

    description = "RawArray (.ra) files, s3:// objects and folders of them, lazily"
    url = "https://github.com/rastore/rastore"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "storage_options",
                               "mask_and_scale", "decode_times", "decode_timedelta",
                               "use_cftime", "decode_coords")

    def open_dataset(self, filename_or_obj, *, drop_variables=None, storage_options=None,
                     mask_and_scale=None, decode_times=None, decode_timedelta=None,
                     use_cftime=None, decode_coords=None):
        location = filename_or_obj if isinstance(filename_or_obj, str) else str(filename_or_obj)
        from . import _dataset

        if _dataset.is_dataset(location):
            return _dataset.open_dataset(
                location, drop_variables=drop_variables, storage_options=storage_options,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times, decode_timedelta=decode_timedelta,
                use_cftime=use_cftime, decode_coords=decode_coords)
        array = Array(location, storage_options)
        name, dims, coords, attrs = labels(array.metadata, array.shape)
        data = indexing.LazilyIndexedArray(RastoreBackendArray(array))
        var = xr.Variable(dims, data, attrs=attrs)
        # Unnamed, it is named after the file, as ZarrStore and `ra convert` name it.
        key = name if name is not None else _rastore.array_name(location)
        variables = {} if drop_variables and key in drop_variables else {key: var}
        # CF-decoded as a dataset's variables are (a NIfTI image's scale_factor and
        # add_offset give nibabel's get_fdata()); its `coordinates` attribute is kept,
        # as the variables it names are not in a file alone.
        decoders = dict(mask_and_scale=mask_and_scale, decode_times=decode_times,
                        decode_timedelta=decode_timedelta, use_cftime=use_cftime,
                        decode_coords=bool(decode_coords))
        return xr.decode_cf(xr.Dataset(variables, coords=coords),
                            **{k: v for k, v in decoders.items() if v is not None})

    def open_datatree(self, filename_or_obj, *, drop_variables=None, storage_options=None,
                      mask_and_scale=None, decode_times=None, decode_timedelta=None,
                      use_cftime=None, decode_coords=None, **_):
        from . import _dataset

        return _dataset.open_datatree(
            os.fspath(filename_or_obj), storage_options=storage_options,
            drop_variables=drop_variables,
            mask_and_scale=mask_and_scale, decode_times=decode_times,
            decode_timedelta=decode_timedelta, use_cftime=use_cftime,
            decode_coords=decode_coords)

    def guess_can_open(self, filename_or_obj):
        from . import _dataset

        try:
            return _dataset.guess(filename_or_obj)
        except (TypeError, OSError):
            return False
