"""Root pytest configuration: applies to the test suite and to the package's doctests alike."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test or doctest drew (pyplot keeps every figure open until closed)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
