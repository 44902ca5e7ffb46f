"""Fixtures of the InfluxQL differential test: one reference InfluxDB and one candidate for the session."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compat_data  # noqa: E402  (also puts bench/lib on sys.path)


def pytest_addoption(parser):
    # Only honoured when this conftest is loaded at start-up (`pytest tests/compat`); the environment
    # variable SUNDIAL_COMPAT_STRICT_TIE_ORDER=1 works from anywhere.
    try:
        parser.addoption("--strict-tie-order", action="store_true", default=False,
                         help="compare rows that share a timestamp in order, not as a multiset")
    except ValueError:
        pass


@pytest.fixture(scope="session")
def strict_tie_order(request):
    return bool(request.config.getoption("--strict-tie-order", default=False)) \
        or os.environ.get("SUNDIAL_COMPAT_STRICT_TIE_ORDER") == "1"


@pytest.fixture(scope="session")
def compat_inputs():
    return compat_data.ensure_inputs()


@pytest.fixture(scope="session")
def pair(compat_inputs, strict_tie_order, tmp_path_factory):
    root = tmp_path_factory.mktemp("compat")
    p = compat_data.start_pair(root, compat_inputs, strict_tie_order)
    try:
        yield p
    finally:
        p.stop()
        compat_data.remove(root)
