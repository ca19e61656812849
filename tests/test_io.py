"""Atomic writes: all or nothing, no overwrite unless asked, normal permissions, reproducible gzip."""

from __future__ import annotations

import gzip
import os
import stat

import pytest

from rewardlab.core.files import atomic_open, atomic_path
from rewardlab.core.errors import OutputExistsError


def test_failure_leaves_neither_the_file_nor_a_temporary(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_refused_before_writing_and_kept(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("keep")
    with pytest.raises(OutputExistsError, match="out.txt already exists; pass overwrite=True"):
        with atomic_path(target):
            pytest.fail("the body must not run")
    assert target.read_text() == "keep"
    with atomic_open(target, overwrite=True) as f:
        f.write("new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_files_get_normal_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_open(tmp_path / "x.txt") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.txt").stat().st_mode) == 0o644


def test_gzip_output_is_byte_reproducible(tmp_path):
    for name in ("a.gz", "b.gz"):
        with atomic_open(tmp_path / name) as f:
            f.write("same text\n")
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()
    assert gzip.decompress((tmp_path / "a.gz").read_bytes()) == b"same text\n"
