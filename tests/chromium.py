"""Debian's chromium for the browser tests: where it is, how it is started, and the skip / fail rule."""

from __future__ import annotations

import os
import shutil

import pytest

#: How every browser test starts chromium (DEVELOPERS.md, "The browser test").
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """Debian's chromium (``/usr/bin/chromium``), or one on PATH; None when there is none."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def require_chromium(find=find_chromium) -> str:
    """The chromium to run; without one the test is skipped, or fails under CI (``CI`` set)."""
    path = find()
    if path is None:
        message = ("no chromium found (/usr/bin/chromium, or chromium / chromium-browser on PATH); "
                   "install Debian's package: apt-get install -y chromium")
        if os.environ.get("CI"):
            pytest.fail(message + " [CI is set, so this test may not be skipped]")
        pytest.skip(message)
    return path
