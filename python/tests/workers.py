"""Worker functions for the multiprocessing tests (importable by spawned children)."""
import numpy as np

import rastore


def value(k, shape):
    """The slab k of the test array: a function of position and slab."""
    i = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape, order="F")
    return (i * 0.5 + k * 1000.0).astype(np.float32)


def fill_slabs(path, start, stop):
    s = rastore.open_slab(path, start, stop)
    for k in range(start, stop):
        s[..., k - start] = value(k, s.shape[:-1])
    s.base.flush()
    return stop - start


def sum_mapped(mapped):
    """Takes a MappedFile (pickled as path, mode and slab) and sums its array."""
    return float(mapped.array.sum(dtype=np.float64)), mapped.mode, mapped.slab
