"""Helpers shared by the RLlib tests: write JSON lines, read and replace a line's default-policy batch."""

from __future__ import annotations

import json


def write_lines(path, rows: list[bytes]):
    path.write_bytes(b"".join(r + b"\n" for r in rows))
    return path


def batch_of(line: bytes) -> dict:
    return json.loads(line)["policy_batches"]["default_policy"]


def with_batch(line: bytes, batch: dict) -> bytes:
    obj = json.loads(line)
    obj["policy_batches"]["default_policy"] = batch
    return json.dumps(obj).encode()
