"""Worker processes: slabs filled through open_slab, and a MappedFile sent by pickle."""
import multiprocessing as mp

import numpy as np

import rastore
import workers

SHAPE = (64, 33, 40)


def test_four_workers_filling_slabs_match_one_process(tmp_path):
    shared = tmp_path / "shared.ra"
    rastore.create(shared, np.float32, SHAPE)
    cuts = [(0, 7), (7, 20), (20, 21), (21, 40)]
    with mp.get_context("spawn").Pool(4) as pool:
        done = pool.starmap(workers.fill_slabs, [(str(shared), a, b) for a, b in cuts])
    assert done == [7, 13, 1, 19]
    alone = tmp_path / "alone.ra"
    rastore.create(alone, np.float32, SHAPE)
    workers.fill_slabs(str(alone), 0, SHAPE[-1])
    assert shared.read_bytes() == alone.read_bytes()
    assert rastore.open(shared)[5, 6, 30] == workers.value(30, SHAPE[:2])[5, 6]


def test_a_mapped_file_goes_to_a_worker_as_its_path(tmp_path):
    p = tmp_path / "m.ra"
    a = np.arange(1000, dtype=np.float64).reshape(10, 100)
    rastore.write(p, a)
    m = rastore.MappedFile(p)
    s = rastore.MappedFile(p, "r+", (10, 20))
    with mp.get_context("spawn").Pool(2) as pool:
        whole, part = pool.map(workers.sum_mapped, [m, s])
    assert whole == (float(a.sum()), "r", None)
    assert part == (float(a[:, 10:20].sum()), "r+", (10, 20))
