"""Shared fixtures: the conformance folder, and the `ra` binary for cross-checks."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _conformance():
    d = os.environ.get("RASTORE_CONFORMANCE")
    return pathlib.Path(d) if d else ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance():
    d = _conformance()
    if not (d / "MANIFEST.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"no conformance files at {d}")
        pytest.skip(f"no conformance files at {d} (set RASTORE_CONFORMANCE)")
    return d
