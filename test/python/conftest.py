"""Shared fixtures for Flow's Python tests."""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("FLOW_BUILD_DIR", ROOT / "build"))


# The `flow` package is built into build/python (sources plus extension).
sys.path.insert(0, str(build_dir() / "python"))


@pytest.fixture(scope="session")
def flow_opt() -> pathlib.Path:
    path = build_dir() / "bin" / "flow-opt"
    if not path.exists():
        pytest.fail(f"{path} is missing: build Flow first (scripts/build.sh)")
    return path


@pytest.fixture(scope="session")
def test_dir() -> pathlib.Path:
    return ROOT / "test"
