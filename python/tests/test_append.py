"""rastore.Appender: frames grow a file that readers open at any moment."""
import numpy as np
import pytest

import rastore


def test_frames_of_any_layout_grow_the_file_and_readers_see_commits(tmp_path):
    p = tmp_path / "a.ra"
    frames = [np.arange(12, dtype=np.uint16).reshape(3, 4) + 100 * t for t in range(5)]
    with rastore.Appender(p, np.uint16, (3, 4)) as out:
        out.append(frames[0])
        assert (out.frames, out.pending) == (0, 1)
        assert rastore.open(p).shape == (3, 4, 0)
        assert out.commit() == 1
        assert rastore.info(p)["flags"]["appending"] is True
        np.testing.assert_array_equal(rastore.open(p)[..., 0], frames[0])
        out.append(np.asfortranarray(frames[1]))
        out.append(np.stack(frames[2:], axis=-1)[:, :, :])
        out.append(np.stack(frames[2:], axis=-1)[::-1, :, :][::-1])
    got = rastore.read(p)
    assert got.shape == (3, 4, 8) and rastore.info(p)["flags"]["appending"] is False
    want = np.stack(frames[:2] + frames[2:] + frames[2:], axis=-1)
    np.testing.assert_array_equal(got, want)


def test_an_exception_discards_what_is_pending(tmp_path):
    p = tmp_path / "a.ra"
    with pytest.raises(RuntimeError):
        with rastore.Appender(p, "f8", [2]) as out:
            out.append(np.ones(2))
            out.commit()
            out.append(np.zeros(2))
            raise RuntimeError
    np.testing.assert_array_equal(rastore.read(p), np.ones((2, 1)))
    with rastore.Appender(p) as out:
        with pytest.raises(rastore.Error, match="frame shape mismatch"):
            out.append(np.ones(3))
        with pytest.raises(rastore.Error, match="type mismatch"):
            out.append(np.ones(2, np.float32))
    rastore.write(p, np.ones((4, 4)), compress=True)
    with pytest.raises(rastore.Error, match="cannot append: the data is lz4"):
        rastore.Appender(p)
