"""Datasets: a folder of ``.ra`` files, one variable per file, read and written through
xarray (the model is docs/FORMAT.md's "Datasets").

- Each variable is ``NAME.ra``, a complete RawArray; its NDL trailer names it and its
  dimensions, and holds its attributes. A 1-D variable named after its dimension is
  that dimension's coordinate; other coordinates are named, CF-style, by the
  ``coordinates`` attribute of the variables that use them.
- Values are stored CF-encoded, as xarray encodes them for netCDF and Zarr: times as
  integers with ``units`` and ``calendar``, ``_FillValue``, ``scale_factor`` and
  ``add_offset`` from a variable's encoding; reading decodes them unless asked not to.
- The dataset's own attributes are ``dataset.yaml``, an NDL document
  (``attributes:``); a sub-folder is a sub-group (a ``DataTree`` node).
- A write builds the whole folder beside its target, under a hidden name, and moves
  it into place when every variable is written; on any failure nothing is left. A
  replaced dataset is swapped out in one step where the file system can (Linux,
  macOS); on Windows it is moved aside first, and for the moment between the two
  renames neither is at the target.
- In object storage, a dataset is the objects under a prefix ending ``/``
  (``s3://bucket/run/``). Object storage has no rename: each variable is a whole
  upload, ``dataset.yaml`` comes last, a failure removes the objects the write added,
  and a replaced dataset's objects that the new one has not are removed once it is
  written.

Imported only when used.
"""

import os
import shutil
import uuid

import numpy as np
import xarray as xr
from xarray.core import indexing

from . import (Error, _attributes_in, _folder_attributes, _is_remote, _rastore, _raw_type,
               _settings)
from ._array import Array
from ._xarray import RastoreBackendArray, _attributes, labels

from . import _DATASET_ATTRIBUTES as ATTRIBUTES


def is_dataset(path):
    """Whether ``path`` is a local folder or an ``s3://bucket/prefix/`` (a dataset, or a
    tree of them)."""
    if _is_remote(str(path)):
        return str(path).endswith("/")
    return os.path.isdir(path)


class _Prefix:
    """A dataset under an ``s3://`` prefix: its objects, listed once."""

    def __init__(self, url, storage_options):
        self.base = str(url).rstrip("/")
        self.storage_options = storage_options
        listed = _rastore.remote_list(self.base + "/", _settings(storage_options))
        self.names = [n for n, _ in listed
                      if not any(part.startswith(".") for part in n.split("/"))]

    def url(self, group, name):
        return "/".join(p for p in (self.base, group, name) if p)

    def variables(self, group):
        """The variable names of ``group`` ("" for the top) and their URLs."""
        at = f"{group}/" if group else ""
        for n in self.names:
            rest = n[len(at):] if n.startswith(at) else None
            if rest and "/" not in rest and rest.endswith(".ra"):
                yield rest[:-3], self.url(group, rest)

    def groups(self):
        """Every group that holds variables or attributes, parents first."""
        out = {""}
        for n in self.names:
            parts = n.split("/")[:-1]
            out.update("/".join(parts[:k]) for k in range(1, len(parts) + 1))
        return sorted(out, key=lambda g: (g.count("/"), g))

    def attributes(self, group):
        url = self.url(group, ATTRIBUTES)
        text = _rastore.remote_get(url, 1 << 20, _settings(self.storage_options))
        return {} if text is None else _attributes_in(bytes(text), url)


def _entries(folder):
    return sorted((e for e in os.scandir(folder) if not e.name.startswith(".")),
                  key=lambda e: e.name)


def _files(folder, prefix, group):
    """The variables of a local folder, or of ``group`` of a ``_Prefix``: (name, location)."""
    if prefix is not None:
        return list(prefix.variables(group))
    return [(e.name[:-3], e.path) for e in _entries(folder)
            if e.is_file() and e.name.endswith(".ra")]


def _raw(folder, drop_variables, prefix=None, group=""):
    """The folder's variables as stored (CF-encoded, lazy) and its attributes."""
    variables = {}
    for name, location in _files(folder, prefix, group):
        if drop_variables and name in drop_variables:
            continue
        array = Array(location, prefix.storage_options if prefix is not None else None)
        _, dims, coords, attrs = labels(array.metadata, array.shape, variable=name)
        data = indexing.LazilyIndexedArray(RastoreBackendArray(array))
        variables[name] = xr.Variable(dims, data, attrs=attrs)
        # A file written alone, as a DataArray, carries its coordinates inline.
        for c, v in coords.items():
            variables.setdefault(c, v)
    attrs = prefix.attributes(group) if prefix is not None else _folder_attributes(folder)
    return variables, attrs


def _checked(folder, storage_options):
    """Refuses a folder (or prefix) that is no dataset: no ``.ra`` files and no
    ``dataset.yaml``, in it or below (as ``ra info`` and ``ra convert`` refuse it). The
    ``_Prefix`` of an ``s3://`` one, ``None`` for a local one."""
    if not _is_remote(str(folder)):
        _rastore.dataset_check(os.fspath(folder))
        return None
    prefix = _Prefix(folder, storage_options)
    if not any(n.endswith(".ra") or n.split("/")[-1] == ATTRIBUTES for n in prefix.names):
        raise Error(f"{folder}: not a dataset: a prefix with no .ra objects and no "
                    f"{ATTRIBUTES}, at it or below")
    return prefix


def open_dataset(folder, *, drop_variables=None, storage_options=None, **decoders):
    """The dataset in ``folder`` (or under an ``s3://`` prefix ending ``/``), lazily,
    CF-decoded as ``decoders`` (xarray's ``decode_times``, ``mask_and_scale`` and so on)
    say. A folder that is no dataset is refused."""
    prefix = _checked(folder, storage_options)
    return _open_node(folder, drop_variables=drop_variables, _prefix=prefix, **decoders)


def _open_node(folder, *, drop_variables=None, _prefix=None, _group="", **decoders):
    """The dataset of one node: ``folder``, or ``_group`` of the ``_Prefix``."""
    variables, attrs = _raw(folder, drop_variables, _prefix, _group)
    try:
        ds = xr.Dataset(variables, attrs=attrs)
    except ValueError as e:
        raise Error(f"{folder}: its variables do not make one dataset: {e}") from None
    return xr.decode_cf(ds, **{k: v for k, v in decoders.items() if v is not None})


def open_datatree(folder, storage_options=None, **kwargs):
    """The tree of datasets in ``folder`` and its sub-folders (or under an ``s3://``
    prefix and the prefixes below it)."""
    nodes = {}
    prefix = _checked(folder, storage_options)
    if prefix is not None:
        for g in prefix.groups():
            nodes["/" + g] = _open_node(folder, _prefix=prefix, _group=g, **kwargs)
        return xr.DataTree.from_dict(nodes)

    def walk(path, at):
        nodes[at] = _open_node(path, **kwargs)
        for e in _entries(path):
            if e.is_dir(follow_symlinks=False):
                walk(e.path, f"{at.rstrip('/')}/{e.name}")

    walk(os.fspath(folder), "/")
    return xr.DataTree.from_dict(nodes)


def _check_name(name, where):
    text = str(name)
    if not text or text.startswith(".") or "/" in text or "\\" in text or text != name:
        raise Error(f"{where}: the variable name {name!r} cannot be a file name "
                    "(a non-empty str without '/' or '\\' that does not start with '.')")
    return text


def _encoded(ds):
    """The variables and attributes of ``ds`` as stored: CF-encoded, coordinates named;
    booleans stay RawArray Bools (CF's int8 with ``dtype: bool`` is for netCDF, which
    has none)."""
    variables, attrs = xr.conventions.encode_dataset_coordinates(ds)
    variables, attrs = xr.conventions.cf_encoder(variables, attrs)
    for name, var in variables.items():
        if var.attrs.get("dtype") == "bool" and var.dtype.kind == "i" and "_FillValue" not in var.attrs:
            plain = {k: v for k, v in var.attrs.items() if k != "dtype"}
            variables[name] = xr.Variable(var.dims, var.data.astype(bool), attrs=plain)
    return variables, attrs


def _check_type(name, var, where):
    """Refuses, naming it, a variable whose type no RawArray holds."""
    try:
        _raw_type(np.dtype(var.dtype))
    except Error:
        hint = (f"; strings held as Python objects become fixed-width with "
                f"ds[{name!r}].astype(str)" if var.dtype.kind == "O" else "")
        raise Error(f"{where}: the variable {name!r} ({var.dtype}) cannot be stored: a "
                    "variable holds numbers, bools, fixed-width strings (NumPy's U and S "
                    "types), times (CF-encoded as integers) or structured types"
                    f"{hint}") from None


def _named(ds, where):
    """The CF-encoded variables of ``ds`` as named DataArrays, each name checked to be
    a file name and each type one a RawArray holds, and its attributes."""
    variables, attrs = _encoded(ds)
    arrays = []
    for name, var in variables.items():
        name = _check_name(name, where)
        if name + ".ra" == ATTRIBUTES:
            raise Error(f"{where}: a variable may not be named {name!r}")
        _check_type(name, var, where)
        arrays.append(xr.DataArray(var.data, dims=var.dims, attrs=var.attrs, name=name))
    return arrays, attrs


def _attributes_doc(attrs):
    values, types = _attributes(dict(attrs))
    doc = {"attributes": values}
    if types:
        doc["attribute_types"] = types
    return bytes(_rastore.ndl_text(doc))


def _write_node(ds, folder, shown, delayed, options):
    """Writes the variables of ``ds`` into the new ``folder`` (``shown`` in errors: the
    folder it will be); Dask-backed ones are added to ``delayed`` to run together.
    Whether it wrote anything (a variable or attributes)."""
    from . import _xarray

    os.mkdir(folder)
    arrays, attrs = _named(ds, shown)
    for da in arrays:
        out = _xarray.write(os.path.join(folder, da.name + ".ra"), da, compute=False, **options)
        if out is not None:
            delayed.append(out)
    if attrs:
        with open(os.path.join(folder, ATTRIBUTES), "wb") as f:
            f.write(_attributes_doc(attrs))
    return bool(arrays or attrs)


def write(folder, obj, *, durable=False, split_links=False, storage_options=None,
          compute=True):
    """``rastore.write`` of a Dataset or DataTree: a folder built beside ``folder`` and
    moved into place whole; an existing ``folder`` is replaced only if it is a dataset
    (holds ``.ra`` files or ``dataset.yaml``)."""
    if str(folder).endswith(".ra"):
        raise Error(f"{folder}: a dataset is a folder, one NAME.ra per variable; give a "
                    "folder name without .ra (or write one variable: ds[name])")
    fmt = _rastore.format_of_name(str(folder))
    if fmt is not None:
        raise Error(f"{folder}: a dataset is written as a folder of .ra files, and this name "
                    f"says .{fmt}: write it to a folder, then rastore.convert(folder, "
                    f"{str(folder)!r})")
    if not compute:
        raise Error("compute=False writes one array; a dataset is written at once")
    if _is_remote(str(folder)):
        return _write_remote(str(folder), obj, storage_options)
    folder = os.path.abspath(os.fspath(folder))
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise FileNotFoundError(2, "the folder does not exist (no writer makes folders above "
                                "its output)", parent)
    if os.path.exists(folder) and not _replaceable(folder):
        raise FileExistsError(17, "exists and is not a dataset (no .ra files, no "
                              f"{ATTRIBUTES}): not replaced", folder)
    tmp = os.path.join(parent, f".{os.path.basename(folder)}.rastore-{uuid.uuid4().hex[:12]}.tmp")
    options = {"durable": durable, "split_links": split_links}
    delayed = []
    try:
        wrote = False
        for rel, ds in _nodes(obj):
            at = os.path.normpath(os.path.join(tmp, rel or "."))
            shown = os.path.normpath(os.path.join(folder, rel or "."))
            wrote |= _write_node(ds, at, shown, delayed, options)
        if not wrote:
            # An empty dataset is a dataset.yaml of no attributes: a folder holding
            # neither file is no dataset.
            with open(os.path.join(tmp, ATTRIBUTES), "wb") as f:
                f.write(_attributes_doc({}))
        if delayed:
            from . import _dask

            # On a failure each write cleans up, once its first task has ended.
            _dask.compute_writes(delayed)
        _rastore.place_dataset(tmp, folder, durable)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _nodes(obj):
    """(path below the top, Dataset) of each node of a DataTree, or of one Dataset."""
    if isinstance(obj, xr.DataTree):
        return [("" if node is obj else node.relative_to(obj), node.to_dataset(inherit=False))
                for node in obj.subtree]
    return [("", obj)]


def _write_remote(url, obj, storage_options):
    """A dataset under the prefix ``url`` (``s3://bucket/run/``): each variable a whole
    upload, then the ``dataset.yaml`` files; on a failure the objects it added are
    removed; a replaced dataset's objects that the new one has not are removed after."""
    from . import _xarray

    if not url.endswith("/"):
        raise Error(f"{url}: a dataset in object storage is a prefix ending '/' "
                    f"({url}/)")
    settings = _settings(storage_options)
    base = url.rstrip("/")
    old = [n for n, _ in _rastore.remote_list(url, settings)]
    if old and not any(n.endswith(".ra") or n.endswith(ATTRIBUTES) for n in old):
        raise FileExistsError(17, "holds objects and is not a dataset (no .ra objects, no "
                              f"{ATTRIBUTES}): not replaced", url)
    targets, delayed, docs = [], [], []
    try:
        for rel, ds in _nodes(obj):
            prefix = f"{base}/{rel}" if rel else base
            arrays, attrs = _named(ds, prefix)
            for da in arrays:
                target = f"{prefix}/{da.name}.ra"
                targets.append(target)
                out = _xarray.write(target, da, compute=False, storage_options=storage_options)
                if out is not None:
                    delayed.append(out)
            if attrs:
                docs.append((f"{prefix}/{ATTRIBUTES}", _attributes_doc(attrs)))
        if not targets and not docs:
            docs.append((f"{base}/{ATTRIBUTES}", _attributes_doc({})))
        if delayed:
            from . import _dask

            _dask.compute_writes(delayed)
        for target, doc in docs:
            targets.append(target)
            _rastore.remote_put(target, doc, settings)
    except BaseException:
        # What it added goes; an old object it replaced holds a whole new variable (an
        # upload is one object), the others are untouched.
        before = {f"{base}/{n}" for n in old}
        _rastore.remote_delete([t for t in targets if t not in before], settings)
        raise
    now = set(targets)
    _rastore.remote_delete([f"{base}/{n}" for n in old if f"{base}/{n}" not in now], settings)


def _replaceable(folder):
    if not os.path.isdir(folder):
        return False
    names = os.listdir(folder)
    return not names or any(n.endswith(".ra") or n == ATTRIBUTES for n in names)


def guess(path):
    """Whether xarray should give ``path`` to this backend: a ``.ra`` file, or a folder
    holding ``.ra`` files or ``dataset.yaml``."""
    return str(path).endswith(".ra") or (is_dataset(path) and _replaceable(path)
                                         and bool(os.listdir(path)))

