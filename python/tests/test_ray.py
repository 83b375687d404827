"""rastore.ray: read_ra and write_ra on a real local Ray cluster (2 CPUs), judged by NumPy
and by Ray's own APIs (take_all, iter_batches, random_shuffle, from_numpy)."""

import os

import numpy as np
import pyarrow as pa
import pytest

import rastore

if os.environ.get("CI"):
    import ray  # CI installs rastore[ray]: its absence is a failure there
else:
    ray = pytest.importorskip("ray", reason="no Ray (pip install ./python[ray])")
import ray.data  # noqa: E402

from rastore.ray import RaDatasource, read_ra, write_ra  # noqa: E402

N = 3000


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 << 20,
             log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    # Ray Data keeps the order of rows only when asked (as for every source).
    ctx.execution_options.preserve_order = True
    yield
    ray.shutdown()


def frames_file(path, n=N, frame=(5, 4), dtype=np.float32):
    """A file whose frame i holds i * 100 + its element number: every frame is told
    apart by its first element."""
    size = int(np.prod(frame))
    a = (np.arange(n)[None, :] * 100 + np.arange(size)[:, None]).astype(dtype)
    a = np.asfortranarray(a.reshape(tuple(frame) + (n,), order="F"))
    rastore.write(path, a)
    return a


def rows_of(a):
    """NumPy's rows: frame i is a[..., i]."""
    return np.moveaxis(a, -1, 0)


def test_take_all_and_iter_batches_give_every_frame_in_order(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    ds = read_ra(tmp_path / "x.ra", override_num_blocks=4)
    assert ds.count() == N
    got = np.stack([r["data"] for r in ds.take_all()])
    np.testing.assert_array_equal(got, rows_of(a))
    batches = list(ds.iter_batches(batch_size=256, batch_format="numpy"))
    assert [len(b["data"]) for b in batches[:-1]] == [256] * (len(batches) - 1)
    np.testing.assert_array_equal(np.concatenate([b["data"] for b in batches]), rows_of(a))


def test_without_preserve_order_every_frame_comes_once(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = False
    try:
        ds = read_ra(tmp_path / "x.ra", override_num_blocks=4)
        got = np.stack([r["data"] for r in ds.take_all()])
    finally:
        ctx.execution_options.preserve_order = True
    k = (got[:, 0, 0] // 100).astype(np.int64)
    np.testing.assert_array_equal(np.sort(k), np.arange(N))
    np.testing.assert_array_equal(got, rows_of(a)[k])


def test_sizes_and_schema_are_known_without_reading(tmp_path):
    frames_file(tmp_path / "x.ra")
    src = RaDatasource(str(tmp_path / "x.ra"))
    assert src.estimate_inmemory_data_size() == N * 5 * 4 * 4
    tasks = src.get_read_tasks(7)
    rows = [t.metadata.num_rows for t in tasks]
    assert sum(rows) == N and max(rows) - min(rows) <= 1 and len(tasks) == 7
    assert sum(t.metadata.size_bytes for t in tasks) == N * 80
    field = tasks[0].schema.field("data")
    assert tuple(field.type.shape) == (5, 4)
    assert field.type.storage_type.value_type == pa.float32()
    # Ray's own view agrees, before any read task ran.
    ds = read_ra(str(tmp_path / "x.ra"))
    assert ds.schema().names == ["data"]


def test_read_tasks_carry_locations_not_bytes(tmp_path):
    frames_file(tmp_path / "x.ra", n=300, frame=(64, 64))  # 4.9 MB of frames
    for shuffle in (False, True):
        tasks = RaDatasource(str(tmp_path / "x.ra"), shuffle=shuffle, seed=1).get_read_tasks(2)
        sizes = [len(ray.cloudpickle.dumps(t)) for t in tasks]
        # A task holds the path, the header's facts and its frame indices (8 bytes each).
        assert max(sizes) < 20_000, sizes


def test_shuffled_reads_give_every_frame_once_as_seeded(tmp_path):
    a = frames_file(tmp_path / "x.ra")
    ids = []
    for seed in (5, 5, 6):
        ds = read_ra(tmp_path / "x.ra", shuffle=True, seed=seed, override_num_blocks=3)
        got = np.concatenate([b["data"] for b in ds.iter_batches(batch_size=500)])
        k = (got[:, 0, 0] // 100).astype(np.int64)
        np.testing.assert_array_equal(got, rows_of(a)[k])
        np.testing.assert_array_equal(np.sort(k), np.arange(N))
        ids.append(k)
    np.testing.assert_array_equal(ids[0], ids[1])
    assert not np.array_equal(ids[0], ids[2])
    assert not np.array_equal(ids[0], np.arange(N))


def test_random_shuffle_of_the_dataset_works_too(tmp_path):
    a = frames_file(tmp_path / "x.ra", n=800)
    ds = read_ra(tmp_path / "x.ra").random_shuffle(seed=1)
    got = np.stack([r["data"] for r in ds.take_all()])
    k = (got[:, 0, 0] // 100).astype(np.int64)
    np.testing.assert_array_equal(got, rows_of(a)[k])
    np.testing.assert_array_equal(np.sort(k), np.arange(800))
    assert not np.array_equal(k, np.arange(800))


def test_warmed_and_unwarmed_shuffled_reads_agree(tmp_path):
    a = frames_file(tmp_path / "x.ra", n=1000)
    for warm in (True, False):
        ds = read_ra(tmp_path / "x.ra", shuffle=True, seed=2, warm=warm, override_num_blocks=2)
        got = np.stack([r["data"] for r in ds.take_all()])
        k = (got[:, 0, 0] // 100).astype(np.int64)
        np.testing.assert_array_equal(got, rows_of(a)[k])
        np.testing.assert_array_equal(np.sort(k), np.arange(1000))


def test_several_files_follow_one_another(tmp_path):
    a = frames_file(tmp_path / "a.ra", n=700)
    b = frames_file(tmp_path / "b.ra", n=500) + 0.5
    rastore.write(tmp_path / "b.ra", b)
    both = np.concatenate([rows_of(a), rows_of(b)])
    ds = read_ra([tmp_path / "a.ra", tmp_path / "b.ra"], override_num_blocks=3)
    np.testing.assert_array_equal(np.stack([r["data"] for r in ds.take_all()]), both)
    ds = read_ra([tmp_path / "a.ra", tmp_path / "b.ra"], shuffle=True, seed=9)
    got = np.stack([r["data"] for r in ds.take_all()])
    order = np.lexsort((got[:, 0, 0],))
    np.testing.assert_array_equal(got[order], both[np.lexsort((both[:, 0, 0],))])
    frames_file(tmp_path / "c.ra", n=10, frame=(3,))
    with pytest.raises(rastore.Error, match="differ"):
        read_ra([tmp_path / "a.ra", tmp_path / "c.ra"])


def test_a_dataset_folder_has_a_column_per_variable_with_the_frame_dimension(tmp_path):
    xr = pytest.importorskip("xarray", reason="dataset folders are written by xarray here")
    n = 1200
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (6, 5, n), dtype=np.uint8)
    label = np.arange(n, dtype=np.int64)
    weight = rng.random((n, 3)).astype(np.float32)  # the frame dimension first
    ds = xr.Dataset({"image": (("y", "x", "sample"), image), "label": ("sample", label),
                     "weight": (("sample", "c"), weight),
                     "scale": ("y", np.arange(6.0))})
    rastore.write(tmp_path / "run", ds)
    got = read_ra(tmp_path / "run", shuffle=True, seed=4, override_num_blocks=3)
    assert sorted(got.schema().names) == ["image", "label", "weight"]
    batches = list(got.iter_batches(batch_size=None, batch_format="numpy"))
    out = {k: np.concatenate([b[k] for b in batches]) for k in ("image", "label", "weight")}
    k = out["label"]
    np.testing.assert_array_equal(np.sort(k), np.arange(n))
    np.testing.assert_array_equal(out["image"], np.moveaxis(image, -1, 0)[k])
    np.testing.assert_array_equal(out["weight"], weight[k])


def test_reads_from_s3(tmp_path, s3):
    a = frames_file(tmp_path / "x.ra", n=2000)
    url = s3.url("ray/x.ra")
    rastore.write(url, a, storage_options=s3.options)
    ds = read_ra(url, storage_options=s3.options, override_num_blocks=2)
    np.testing.assert_array_equal(np.stack([r["data"] for r in ds.take_all()]), rows_of(a))
    ds = read_ra(url, shuffle=True, seed=1, storage_options=s3.options, override_num_blocks=2)
    got = np.stack([r["data"] for r in ds.take_all()])
    k = (got[:, 0, 0] // 100).astype(np.int64)
    np.testing.assert_array_equal(np.sort(k), np.arange(2000))
    np.testing.assert_array_equal(got, rows_of(a)[k])


def test_reads_a_dataset_prefix_from_s3(s3):
    xr = pytest.importorskip("xarray", reason="dataset folders are written by xarray here")
    n = 600
    image = np.random.default_rng(2).integers(0, 255, (4, 3, n), dtype=np.uint8)
    label = np.arange(n, dtype=np.int16)
    url = s3.url("ray/run/")
    rastore.write(url, xr.Dataset({"image": (("y", "x", "s"), image), "label": ("s", label)}),
                  storage_options=s3.options)
    ds = read_ra(url, shuffle=True, seed=3, storage_options=s3.options, override_num_blocks=2)
    rows = ds.take_all()
    k = np.array([r["label"] for r in rows])
    np.testing.assert_array_equal(np.sort(k), np.arange(n))
    np.testing.assert_array_equal(np.stack([r["image"] for r in rows]),
                                  np.moveaxis(image, -1, 0)[k])


def ten_thousand(frame=(4, 3), dtype=np.uint8, blocks=7):
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 255, (10_000,) + frame).astype(dtype)
    return rows, ray.data.from_numpy(rows).repartition(blocks)


def test_write_ra_round_trips_ten_thousand_rows(tmp_path):
    rows, ds = ten_thousand()
    write_ra(ds, tmp_path / "out.ra")
    back = rastore.read(tmp_path / "out.ra")
    assert back.shape == (4, 3, 10_000)
    np.testing.assert_array_equal(rows_of(back), rows)
    # And back through read_ra: the same rows, in the same order.
    again = np.stack([r["data"] for r in read_ra(tmp_path / "out.ra").take_all()])
    np.testing.assert_array_equal(again, rows)
    assert [p.name for p in tmp_path.iterdir()] == ["out.ra"]


def test_write_ra_of_a_transformed_dataset_keeps_its_order(tmp_path):
    a = frames_file(tmp_path / "x.ra", n=2500)
    ds = read_ra(tmp_path / "x.ra", override_num_blocks=5).map_batches(
        lambda b: {"data": b["data"] * 2})
    write_ra(ds, tmp_path / "y.ra", target_bytes=8000)  # many slabs
    np.testing.assert_array_equal(rastore.read(tmp_path / "y.ra"), a * 2)


def test_write_ra_round_trips_ten_thousand_rows_on_s3(s3):
    # 10,000 frames of 1 KiB: an upload of two parts (5 MiB at least each but the last).
    rows, ds = ten_thousand(frame=(32, 32))
    url = s3.url("ray/out.ra")
    write_ra(ds, url, storage_options=s3.options)
    back = rastore.read(url, storage_options=s3.options)
    np.testing.assert_array_equal(rows_of(back), rows)
    assert s3.pending_uploads() == []


def mixed_shapes(frame_b):
    """A dataset whose second half has frames of another shape: its write tasks fail."""
    good = ray.data.from_numpy(np.zeros((6000, 32, 32), np.uint8))
    bad = ray.data.from_numpy(np.ones((6000,) + frame_b, np.uint8))
    return good.union(bad)


def test_a_failed_write_task_leaves_no_file(tmp_path):
    with pytest.raises(Exception, match="every row of 'data' is one frame of the same shape"):
        write_ra(mixed_shapes((32, 31)), tmp_path / "out.ra", target_bytes=1 << 20)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_task_leaves_no_object_and_no_pending_upload(s3):
    url = s3.url("ray/failed.ra")
    with pytest.raises(Exception, match="every row of 'data' is one frame of the same shape"):
        write_ra(mixed_shapes((32, 31)), url, storage_options=s3.options)
    assert not s3.object("ray/failed.ra").exists()
    assert s3.pending_uploads() == []


def test_a_dataset_that_fails_before_writing_leaves_nothing(tmp_path):
    def boom(b):
        raise ValueError("bad batch")

    ds = ray.data.from_numpy(np.zeros((100, 3), np.uint8)).map_batches(boom)
    with pytest.raises(Exception, match="bad batch"):
        write_ra(ds, tmp_path / "out.ra")
    assert list(tmp_path.iterdir()) == []


def test_write_ra_refuses_a_missing_column_and_an_empty_dataset(tmp_path):
    ds = ray.data.from_items([{"x": 1}, {"x": 2}])
    with pytest.raises(rastore.Error, match="no column 'data'.*'x'"):
        write_ra(ds, tmp_path / "out.ra")
    write_ra(ds, tmp_path / "out.ra", column="x")
    np.testing.assert_array_equal(rastore.read(tmp_path / "out.ra"), [1, 2])
    with pytest.raises(rastore.Error, match="no rows"):
        write_ra(ds.filter(lambda r: False), tmp_path / "none.ra")


def test_a_npy_file_reads_the_same(tmp_path):
    a = np.random.default_rng(1).random((3, 4, 900)).astype(np.float64)
    np.save(tmp_path / "c.npy", a)  # C order: read through NumPy's view of its mapping
    for shuffle in (False, True):
        ds = read_ra(tmp_path / "c.npy", shuffle=shuffle, seed=0, override_num_blocks=3)
        got = np.stack([r["data"] for r in ds.take_all()])
        want = rows_of(a) if not shuffle else rows_of(a)[RaDatasource(
            str(tmp_path / "c.npy"), shuffle=True, seed=0)._order()]
        np.testing.assert_array_equal(got, want)


def test_import_rastore_does_not_import_ray():
    import subprocess
    import sys

    code = "import sys, rastore; rastore.Loader; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert out.stdout.strip() == "False"


def test_a_read_task_warms_only_what_fits_where_it_runs(tmp_path, monkeypatch):
    import rastore.ray as rr

    a = frames_file(tmp_path / "x.ra", n=500)
    warmed = []
    monkeypatch.setattr(rr, "warm", lambda ranges: warmed.append(ranges))
    src = RaDatasource(str(tmp_path / "x.ra"), shuffle=True, seed=1)
    task = src.get_read_tasks(1)[0]
    read = task.read_fn
    assert read.ranges == [(str(tmp_path / "x.ra"), 0, os.path.getsize(tmp_path / "x.ra"))]
    blocks = list(read())
    assert warmed == [read.ranges]  # 40 KB fit in any machine's memory
    got = np.concatenate([ray.data.block.BlockAccessor.for_block(b).to_batch_format("numpy")["data"]
                          for b in blocks])
    k = (got[:, 0, 0] // 100).astype(np.int64)
    np.testing.assert_array_equal(got, rows_of(a)[k])

    class Huge:  # files that fit in no machine's memory
        remote, nbytes = False, 1 << 62

    read.judge, warmed[:] = Huge(), []
    list(read())
    assert warmed == []
    unwarmed = RaDatasource(str(tmp_path / "x.ra"), shuffle=True, seed=1, warm=False)
    assert unwarmed.get_read_tasks(1)[0].read_fn.ranges == []
