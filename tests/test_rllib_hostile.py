"""format="rllib" on hostile input: memory bombs in packed columns, bad flags, odd dtypes, and a fuzz run.

Every broken input is built from RLlib's own output (data/rllib/).  A load
must give a clean frame or a rewardlab error naming the file, the line (or
row group) and the column; never a raw exception, a crash, silently wrong
data, or memory the file does not hold.  Memory is checked in a child
process whose address space is capped (RLIMIT_AS) at what it uses after a
real load plus ``HEADROOM``: a load that allocated a bomb would fail there
with a MemoryError or an abort instead of the rewardlab error the test
expects.  The fuzz run (``fuzz_cases``) runs in such a child too.
"""

from __future__ import annotations

import base64
import json
import pickle
import random
import struct
import traceback
from pathlib import Path

import lz4.frame
import numpy as np
import polars as pl
import pytest

from memory_cap import run_capped
from rllib_lines import batch_of, with_batch, write_lines
from rewardlab.core.errors import RewardlabError, SkippedLinesWarning, StepTableError
from rewardlab.core.spec import attached
from rewardlab.sources.rllib import SKIP_REASONS, read_rllib
from rewardlab.sources.rllib.compression import MAX_UNPACKED_BYTES, PICKLE_OVERHEAD, unpack

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "rllib"
OLD_FILE = next((DATA / "old_stack_json" / "data").glob("*.json"))
PACKED_FILE = next((DATA / "old_stack_compressed" / "data").glob("*.json"))
NEW_FILE = sorted((DATA / "new_stack_parquet" / "data").rglob("*.parquet"))[0]
TRUNCATE = {"unfinished": "truncate"}

#: The memory a child process may take beyond what it holds after a real load of each layout.
HEADROOM = 384 << 20

linux_only = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RLIMIT_AS checks need Linux")


# --- building packed values -----------------------------------------------------------------------


def pack(value, *, protocol: int = 5, store_size: bool = True) -> str:
    """What ``ray.rllib.utils.compression.pack`` writes (cloudpickle is pickle-compatible)."""
    data = value if isinstance(value, bytes) else pickle.dumps(value, protocol=protocol)
    return base64.b64encode(lz4.frame.compress(data, store_size=store_size)).decode("ascii")


def pack_frame(frame: bytes) -> str:
    return base64.b64encode(frame).decode("ascii")


class Call:
    """Pickles as ``func(*args)`` (and ``state`` for BUILD): what a hostile writer can put in a pickle."""

    def __init__(self, func, args, state=None):
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (self.func, self.args, self.state)


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 (the LZ4 frame header's checksum), to write a frame header that claims another size."""
    p1, p2, p3, p4, p5, m = 2654435761, 2246822519, 3266489917, 668265263, 374761393, 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for k in range(4):
                v[k] = (rotl((v[k] + int.from_bytes(data[i:i + 4], "little") * p2) & m, 13) * p1) & m
                i += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = (rotl((h + int.from_bytes(data[i:i + 4], "little") * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    return h ^ (h >> 16)


def claiming(frame: bytes, size: int) -> bytes:
    """An LZ4 frame (written with its content size) whose header claims ``size`` bytes, checksum fixed."""
    out = bytearray(frame)
    assert out[4] & 0x08, "the frame has no content size"
    out[6:14] = size.to_bytes(8, "little")
    out[14] = (_xxh32(bytes(out[4:14])) >> 8) & 0xFF
    return bytes(out)


def zeros_frame(size: int, *, store_size: bool, prefix: bytes = b"") -> bytes:
    """An LZ4 frame of ``prefix`` and ``size`` zero bytes, compressed piece by piece (never ``size``
    bytes at once)."""
    compressor = lz4.frame.LZ4FrameCompressor()
    parts = [compressor.begin(source_size=len(prefix) + size if store_size else 0), compressor.compress(prefix)]
    block = bytes(1 << 24)
    for start in range(0, size, len(block)):
        parts.append(compressor.compress(block[:min(len(block), size - start)]))
    parts.append(compressor.flush())
    return b"".join(parts)


def memo_bomb() -> bytes:
    """A pickle of a few bytes that asks the unpickler for a memo of 2**27 entries (1 GiB)."""
    return b"\x80\x05N" + b"r" + struct.pack("<I", 1 << 27) + b"."


def bytearray_bomb(size: int = 1 << 40) -> bytes:
    """A pickle whose BYTEARRAY8 claims ``size`` bytes and holds 4."""
    return b"\x80\x05\x96" + struct.pack("<Q", size) + b"abcd."


# --- the files ------------------------------------------------------------------------------------


def old_lines() -> list[bytes]:
    return OLD_FILE.read_bytes().split(b"\n")[:-1]


def packed_lines() -> list[bytes]:
    return PACKED_FILE.read_bytes().split(b"\n")[:-1]


def json_with(tmp_path, name: str, **columns) -> Path:
    """The first old-stack line with some batch columns replaced (None: removed)."""
    row = old_lines()[0]
    batch = batch_of(row)
    for key, value in columns.items():
        if value is None:
            batch.pop(key, None)
        else:
            batch[key] = value
    return write_lines(tmp_path / name, [with_batch(row, batch)])


def parquet_table(rows: int = 60):
    import pyarrow.parquet as pq

    from rewardlab.sources.rllib.files import arrow_column

    table = pq.read_table(NEW_FILE).slice(0, rows)
    for name in ("obs", "new_obs", "action_dist_inputs"):  # Ray's tensor type -> plain lists
        table = table.set_column(table.schema.get_field_index(name), name, arrow_column(table.column(name)))
    return table


def with_column(table, name: str, values):
    import pyarrow as pa

    values = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, values)
    return table.append_column(name, values)


def write_parquet(table, path: Path, row_group_size: int = 20) -> Path:
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def packed_rows_table(table, values_of=None):
    """The table with obs and new_obs packed row by row (RLlib's new stack, ``pack_if_needed``)."""
    for name in ("obs", "new_obs"):
        rows = [np.asarray(v, dtype=np.float32) for v in table.column(name).to_pylist()]
        table = with_column(table, name, [pack(r if values_of is None else values_of(r)) for r in rows])
    return table


def error_of(path, **options) -> StepTableError:
    with pytest.raises(StepTableError) as err:
        read_rllib(path, **{**TRUNCATE, **options})
    return err.value


# --- loads in a child process with a capped address space ----------------------------------------


WARM = """
import json
from rewardlab.core.errors import RewardlabError
from rewardlab.sources.rllib import read_rllib
read_rllib({warm_json!r}, unfinished="truncate")  # thread pools and caches of both layouts
read_rllib({warm_parquet!r}, unfinished="truncate")
"""


def limited(script: str, timeout: int = 300) -> list[dict]:
    """Run ``script`` after a warm load, in a child with capped memory (:mod:`memory_cap`); its JSON lines."""
    return run_capped(WARM.format(warm_json=str(OLD_FILE), warm_parquet=str(NEW_FILE)), script,
                      headroom=HEADROOM, timeout=timeout)


LOAD_EACH = """
for path in {paths!r}:
    try:
        frame = read_rllib(path, unfinished="truncate").frame
        print(json.dumps({{"path": path, "rows": frame.height}}), flush=True)
    except RewardlabError as exc:
        print(json.dumps({{"path": path, "error": type(exc).__name__, "rule": getattr(exc, "rule", None),
                          "message": str(exc)}}), flush=True)
    except MemoryError as exc:
        print(json.dumps({{"path": path, "error": "MemoryError", "rule": None, "message": repr(exc)}}), flush=True)
"""


def load_limited(paths) -> list[dict]:
    out = limited(LOAD_EACH.format(paths=[str(p) for p in paths]))
    assert [o["path"] for o in out] == [str(p) for p in paths]
    return out


def assert_refused(outcome: dict, rule: str, *pieces):
    assert outcome.get("error") == "StepTableError", outcome
    assert outcome["rule"] == rule, outcome
    for piece in pieces:
        assert piece in outcome["message"], (piece, outcome["message"])


# --- memory bombs ---------------------------------------------------------------------------------


@linux_only
def test_packed_values_that_call_ndarray_are_refused_before_allocating(tmp_path):
    # numpy.ndarray((4, 2**26), 'f8'): 2 GiB of uninitialised memory from a 200-byte pickle; and a
    # stride-0 view of 8 bytes with the same logical shape (Polars copies it out)
    bombs = [pack(Call(np.ndarray, ((250, 2 ** 20), "f8"))),
             pack(Call(np.ndarray, ((250, 2 ** 20), "f8", b"\0" * 8, 0, (0, 0))))]
    assert max(map(len, bombs)) < 300
    uninitialised = json_with(tmp_path, "a.json", obs=bombs[0], new_obs=None)
    strided = json_with(tmp_path, "b.json", obs=bombs[1], new_obs=None)
    # the same in Parquet, one packed value a row: 3.5 KB of file
    table = parquet_table(20)
    bomb = pack(Call(np.ndarray, ((2 ** 24,), "f8")))
    rows = write_parquet(with_column(with_column(table, "obs", [bomb] * 20), "new_obs", [bomb] * 20),
                         tmp_path / "c.parquet")
    out = load_limited([uninitialised, strided, rows])
    for outcome, where in zip(out, [f"{uninitialised}:1: column 'obs'", f"{strided}:1: column 'obs'",
                                    f"{rows}: row group 0: column 'obs': row 0 of the row group"]):
        assert_refused(outcome, "undecodable_column", where, "calls numpy.ndarray(...) itself")


@linux_only
def test_lz4_frames_decode_within_the_limit_or_are_refused_unread(tmp_path):
    # a header that claims 2**62 bytes (lz4.frame.decompress raised a raw MemoryError)
    small = lz4.frame.compress(pickle.dumps(np.zeros((250, 4)), protocol=5))
    header = json_with(tmp_path, "a.json", obs=pack_frame(claiming(small, 2 ** 62)))
    # 1 GiB of zeros in 4 MB of LZ4, with its size in the header and without it (decoded as read)
    sized = json_with(tmp_path, "b.json", obs=pack_frame(zeros_frame(1 << 30, store_size=True)))
    unsized = json_with(tmp_path, "c.json", obs=pack_frame(zeros_frame(
        1 << 30, store_size=False, prefix=b"\x80\x05\x96" + struct.pack("<Q", 1 << 30))))  # BYTEARRAY8 of it all
    # a real pickle of a small array, padded with 200 MB of zeros after its end (within the limit)
    padded = json_with(tmp_path, "d.json", obs=pack_frame(zeros_frame(
        200 << 20, store_size=True, prefix=pickle.dumps(np.zeros((250, 4)), protocol=5))))
    out = load_limited([header, sized, unsized, padded])
    assert_refused(out[0], "undecodable_column", f"{header}:1: column 'obs'",
                   "the LZ4 frame claims 4611686018427387904 bytes, more than its")
    assert_refused(out[1], "oversized_column", f"{sized}:1: column 'obs'",
                   f"the value decodes to {1 << 30} bytes, more than the limit of {MAX_UNPACKED_BYTES} bytes")
    assert_refused(out[2], "oversized_column", f"{unsized}:1: column 'obs'", "more than the limit of")
    assert_refused(out[3], "undecodable_column", f"{padded}:1: column 'obs'", "data follows the pickle's end")


@linux_only
def test_pickles_that_claim_memory_they_do_not_hold_are_refused(tmp_path):
    memo = json_with(tmp_path, "a.json", obs=pack(memo_bomb()))
    claim = json_with(tmp_path, "b.json", obs=pack(bytearray_bomb()))
    claim_1g = json_with(tmp_path, "c.json", obs=pack(bytearray_bomb(1 << 30)))
    out = load_limited([memo, claim, claim_1g])
    assert_refused(out[0], "undecodable_column", f"{memo}:1: column 'obs'", "memo 134217728")
    assert_refused(out[1], "oversized_column", f"{claim}:1: column 'obs'", "more than the limit")
    assert_refused(out[2], "oversized_column", f"{claim_1g}:1: column 'obs'", "more than the limit")


def test_a_column_decodes_within_what_its_shape_needs(tmp_path):
    rows = packed_lines()
    batch = batch_of(rows[0])
    obs = unpack(batch["obs"])
    # new_obs is obs's shape: it may not decode to (much) more than obs does
    batch["new_obs"] = pack(np.zeros((250, 4000), dtype=np.float32))
    path = write_lines(tmp_path / "a.json", [with_batch(rows[0], batch)])
    err = error_of(path)
    assert err.rule == "oversized_column" and err.column == "new_obs" and err.line == 1
    assert f"more than the limit of {obs.nbytes + PICKLE_OVERHEAD} bytes" in str(err)
    # a one-value-a-step column: 8 bytes a step
    batch = batch_of(rows[0])
    batch["rewards"] = pack(np.zeros((250, 100)))
    err = error_of(write_lines(tmp_path / "b.json", [with_batch(rows[0], batch)]))
    assert err.rule == "oversized_column" and err.column == "rewards"
    assert f"more than the limit of {250 * 8 + PICKLE_OVERHEAD} bytes" in str(err)
    # Parquet rows after the first decode within the first row's size
    table = packed_rows_table(parquet_table(20))
    values = table.column("obs").to_pylist()
    values[7] = pack(np.zeros(100_000, dtype=np.float32))
    path = write_parquet(with_column(table, "obs", values), tmp_path / "c.parquet")
    err = error_of(path)
    assert (err.rule, err.column, err.row_group) == ("oversized_column", "obs", 0)
    assert str(err).startswith(f"{path}: row group 0: column 'obs': row 7 of the row group: the compressed "
                               "column is refused before decoding it: the value decodes to 400")


# --- flags, dtypes, skip mode ---------------------------------------------------------------------


@pytest.mark.parametrize("values, shown", [([0] * 249 + [2], "step 249 of the batch is 2,"),
                                           ([0] * 100 + [-1] + [0] * 149, "step 100 of the batch is -1,"),
                                           ([0.0] * 249 + [0.5], "step 249 of the batch is 0.5,")])
def test_flags_other_than_0_and_1_are_refused(tmp_path, values, shown):
    path = json_with(tmp_path, "a.json", terminateds=values)
    err = error_of(path)
    assert (err.rule, err.column, err.line) == ("bad_flag", "terminateds", 1)
    assert f"{shown} not a flag (true/false or 1/0)" in str(err)
    # skip mode: the line is skipped with its reason
    with pytest.warns(SkippedLinesWarning, match="bad_flag"):
        result = read_rllib(path, on_error="skip", **TRUNCATE)
    assert result.frame.height == 0 and result.skipped["reason"].to_list() == ["bad_flag"]


def test_flags_as_0_and_1_load_as_the_booleans(tmp_path):
    plain = read_rllib(json_with(tmp_path, "a.json"), **TRUNCATE).frame
    batch = batch_of(old_lines()[0])
    ints = [int(v) for v in batch["terminateds"]]
    floats = [float(v) for v in batch["truncateds"]]
    other = read_rllib(json_with(tmp_path, "b.json", terminateds=ints, truncateds=floats), **TRUNCATE).frame
    assert other.equals(plain)


def test_parquet_flags_other_than_0_and_1_are_refused(tmp_path):
    import pyarrow as pa

    table = parquet_table(20)
    flags = [0] * 20
    flags[3] = 7
    path = write_parquet(with_column(table, "truncateds", pa.array(flags, pa.int8())), tmp_path / "a.parquet")
    err = error_of(path)
    assert (err.rule, err.column, err.row_group) == ("bad_flag", "truncateds", 0)
    assert "row 3 of the row group is 7, not a flag" in str(err)


def test_packed_float16_observations_load_as_float32(tmp_path):
    rows = packed_lines()
    batch = batch_of(rows[0])
    for name in ("obs", "new_obs"):
        batch[name] = pack(unpack(batch[name]).astype(np.float16))
    path = write_lines(tmp_path / "a.json", [with_batch(rows[0], batch)])
    frame = read_rllib(path, **TRUNCATE).frame
    assert frame.schema["obs"] == pl.Array(pl.Float32, 4) and frame.schema["final_obs"] == pl.Array(pl.Float32, 4)
    expected = unpack(batch_of(rows[0])["obs"]).astype(np.float16).astype(np.float32)
    got = frame.sort("eps_id", "t", maintain_order=True)["obs"].to_numpy()
    assert sorted(map(tuple, got)) == sorted(map(tuple, expected))
    attached(frame).validate(frame)
    # Parquet rows packed as float16, and a Parquet float16 column (Arrow halffloat)
    table = packed_rows_table(parquet_table(20), lambda r: r.astype(np.float16))
    frame = read_rllib(write_parquet(table, tmp_path / "b.parquet"), **TRUNCATE).frame
    assert frame.schema["obs"] == pl.Array(pl.Float32, 4)
    attached(frame).validate(frame)


def test_boolean_observations_load(tmp_path):
    batch = batch_of(old_lines()[0])
    obs = (np.asarray(batch["obs"]) > 0).tolist()
    new_obs = (np.asarray(batch["new_obs"]) > 0).tolist()
    for name, (o, n) in {"lists": (obs, new_obs), "packed": (pack(np.asarray(obs)), pack(np.asarray(new_obs)))}.items():
        path = json_with(tmp_path, f"{name}.json", obs=o, new_obs=n)
        frame = read_rllib(path, **TRUNCATE).frame
        spec = attached(frame)
        assert frame.schema["obs"] == pl.Array(pl.Boolean, 4), name
        assert spec.states[0].dtype == "bool" and spec.states[0].pad == 0
        spec.validate(frame)
        assert frame["obs"].to_list()[0] == obs[0]
    # bytes other than 0 and 1 in a packed boolean array are not booleans
    from numpy._core.numeric import _frombuffer

    data = np.asarray(obs).view(np.uint8).copy()
    data[0, 0] = 2
    hostile = Call(_frombuffer, (data.tobytes(), np.dtype(bool), data.shape, "C"))
    err = error_of(json_with(tmp_path, "bad.json", obs=pack(hostile), new_obs=None))
    assert err.rule == "undecodable_column" and "holds bytes other than 0 and 1" in str(err)


def test_packed_void_and_other_non_numeric_rows_are_refused(tmp_path):
    table = parquet_table(20)
    void = [pack(np.zeros(4, "V4")) for _ in range(20)]
    path = write_parquet(with_column(with_column(table, "obs", void), "new_obs", void), tmp_path / "a.parquet")
    err = error_of(path)
    assert (err.rule, err.column, err.row_group) == ("undecodable_column", "obs", 0)
    assert "row 0 of the row group: the compressed column cannot be decoded: the array's dtype is 'V4'" in str(err)
    for dtype in ("c8", "U3", "M8[s]"):
        err = error_of(json_with(tmp_path, "b.json", obs=pack(np.zeros((250, 4), dtype)), new_obs=None))
        assert err.rule == "undecodable_column" and err.column == "obs", dtype


@pytest.mark.parametrize("layout", ["json", "parquet"])
def test_skip_mode_with_no_good_line_loads_an_empty_frame(tmp_path, layout):
    if layout == "json":
        path = write_lines(tmp_path / "a.json", [b"not json", b'{"type": "SampleBatch"}'])
    else:
        path = write_parquet(with_column(parquet_table(20), "rewards", [float("nan")] * 20), tmp_path / "a.parquet")
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib(path, on_error="skip", **TRUNCATE)
    assert result.frame.height == 0 and result.skipped.height == (2 if layout == "json" else 20)
    assert set(result.skipped["reason"]) <= set(SKIP_REASONS)


# --- the same class of defect, found around them ---------------------------------------------------


def test_rewards_that_are_not_finite_are_refused(tmp_path):
    rewards = [1.0] * 250
    rewards[5] = float("inf")
    batch = batch_of(old_lines()[0])
    batch["rewards"] = pack(np.asarray(rewards))
    err = error_of(write_lines(tmp_path / "a.json", [with_batch(old_lines()[0], batch)]))
    assert (err.rule, err.column) == ("not_finite", "rewards")
    assert "step 5 of the batch: the reward is inf, not a finite number" in str(err)


@pytest.mark.parametrize("values, rule, shown", [
    ([None] + [0] * 249, "mixed_dtype", "step 0 of the batch is null, not a number"),
    ([{"a": 1}] + [0] * 249, "mixed_dtype", "step 0 of the batch is a dict, not a number"),
    ([0] * 249 + [2 ** 70], "mixed_dtype", "step 249 of the batch is 1180591620717411303424, past 64-bit"),
    ([[0], [1, 2]] + [[0]] * 248, "ragged", "step 1 of the batch has 2 values, step 0 has 1 values"),
])
def test_json_values_that_are_not_numbers_are_named(tmp_path, values, rule, shown, monkeypatch):
    from rewardlab.sources.rllib import files

    monkeypatch.setattr(files, "parse_json", json.loads)  # orjson refuses 2**70 itself (bad_json)
    err = error_of(json_with(tmp_path, "a.json", t=values))
    assert (err.rule, err.column) == (rule, "t") and shown in str(err)


def test_deeply_nested_json_is_a_bad_line_with_either_parser(tmp_path, monkeypatch):
    from rewardlab.sources.rllib import files

    rows = old_lines()
    path = write_lines(tmp_path / "a.json", [rows[0], b"[" * 200_000 + b"]" * 200_000])
    for parser in (files.parse_json, json.loads):
        monkeypatch.setattr(files, "parse_json", parser)
        err = error_of(path)
        assert (err.rule, err.line) == ("bad_json", 2) and "not JSON (" in str(err)


def test_parquet_columns_of_other_types_are_named(tmp_path):
    import pyarrow as pa

    table = parquet_table(20)
    obs = table.column("obs").to_pylist()
    obs[4][2] = None
    cases = {
        "null_inside": (with_column(table, "obs", pa.array(obs, pa.large_list(pa.float32()))), "obs",
                        "missing_column", "row 4 of the row group has an empty (null) value in its list"),
        "text_ids": (with_column(table, "eps_id", pa.array([[1]] * 20)), "eps_id", "mixed_dtype",
                     "int64> values, not text or integer ids"),
        "struct_obs": (with_column(table, "obs", pa.array([{"x": 1.0}] * 20)), "obs", "mixed_dtype",
                       "not numbers"),
        "nested": (with_column(table, "obs", pa.array([[[1.0]]] * 20)), "obs", "mixed_dtype", "not of numbers"),
        "empty": (with_column(table, "obs", pa.array([[]] * 20, pa.list_(pa.float32()))), "obs", "column_length",
                  "has no values in a step"),
        "list_rewards": (with_column(table, "rewards", pa.array([[1.0, 2.0]] * 20)), "rewards", "mixed_dtype",
                         "should hold one number per step"),
    }
    for name, (bad, column, rule, shown) in cases.items():
        err = error_of(write_parquet(bad, tmp_path / f"{name}.parquet"))
        assert (err.column, err.rule, err.row_group) == (column, rule, 0), (name, str(err))
        assert shown in str(err), (name, str(err))
    # a fixed-size list and a halffloat column load as the plain layout does
    fixed = with_column(table, "obs", pa.array(table.column("obs").to_pylist(), pa.list_(pa.float32(), 4)))
    plain = read_rllib(write_parquet(table, tmp_path / "plain.parquet"), **TRUNCATE).frame
    assert read_rllib(write_parquet(fixed, tmp_path / "fixed.parquet"), **TRUNCATE).frame.equals(plain)


def test_equivalent_encodings_of_packed_values_load_the_same(tmp_path):
    rows = packed_lines()
    batch = batch_of(rows[0])
    base = read_rllib(write_lines(tmp_path / "base.json", [rows[0]]), **TRUNCATE).frame
    obs, new_obs = unpack(batch["obs"]), unpack(batch["new_obs"])
    variants = {
        "protocol 3": (pack(obs, protocol=3), pack(new_obs, protocol=3)),
        "protocol 4": (pack(obs, protocol=4), pack(new_obs, protocol=4)),
        "big-endian": (pack(obs.astype(">f4")), pack(new_obs.astype(">f4"))),
        "fortran order": (pack(np.asfortranarray(obs)), pack(np.asfortranarray(new_obs))),
        "no size in the header": (pack(obs, store_size=False), pack(new_obs, store_size=False)),
    }
    for name, (o, n) in variants.items():
        batch["obs"], batch["new_obs"] = o, n
        frame = read_rllib(write_lines(tmp_path / "v.json", [with_batch(rows[0], batch)]), **TRUNCATE).frame
        assert frame.equals(base), name


def test_what_follows_an_lz4_frame_is_refused(tmp_path):
    rows = packed_lines()
    batch = batch_of(rows[0])
    batch["obs"] = pack_frame(base64.b64decode(batch["obs"]) + b"\0\0\0\0")
    err = error_of(write_lines(tmp_path / "a.json", [with_batch(rows[0], batch)]))
    assert err.rule == "undecodable_column" and "4 bytes follow the LZ4 frame" in str(err)


def test_the_skipped_rows_side_file_keeps_what_can_be_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir()
    table = parquet_table(40)
    flags = table.column("terminateds").to_pylist()
    flags[0] = 2  # a bad flag: the first row group of each file is skipped
    write_parquet(with_column(table, "terminateds", pa.array([int(v) for v in flags], pa.int8())),
                  folder / "a.parquet")
    packed = packed_rows_table(table)  # obs packed: text here, lists in a.parquet
    write_parquet(with_column(packed, "terminateds", pa.array([int(v) for v in flags], pa.int8())),
                  folder / "b.parquet")
    # a corrupt page of the actions column in c.parquet's first row group
    corrupt = write_parquet(table, folder / "c.parquet")
    meta = pq.ParquetFile(corrupt).metadata
    at = meta.row_group(0).column(table.column_names.index("actions")).data_page_offset
    raw = bytearray(corrupt.read_bytes())
    raw[at:at + 12] = b"\xff" * 12
    corrupt.write_bytes(bytes(raw))
    side = tmp_path / "skipped.parquet"
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib(folder, on_error="skip", skipped_path=side, **TRUNCATE)
    kept = pq.read_table(side)
    assert kept.num_rows == result.skipped.height
    files = kept.column("rewardlab_file").to_pylist()
    assert {Path(f).name for f in files} == {"a.parquet", "b.parquet", "c.parquet"}
    # obs as a.parquet has them, b.parquet's packed text beside them, c.parquet without its actions
    assert "obs" in kept.column_names and "obs (string)" in kept.column_names
    rows = kept.to_pylist()
    b_rows = [r for r in rows if r["rewardlab_file"].endswith("b.parquet")]
    assert b_rows and all(r["obs"] is None and isinstance(r["obs (string)"], str) for r in b_rows)
    c_rows = [r for r in rows if r["rewardlab_file"].endswith("c.parquet") and r["rewardlab_row_group"] == 0]
    assert len(c_rows) == 20 and all(r["actions"] is None for r in c_rows)
    assert {r["eps_id"] for r in c_rows} <= set(table.column("eps_id").to_pylist())
    assert "bad_parquet" in set(result.skipped["reason"])


# --- fuzz -----------------------------------------------------------------------------------------


HOSTILE_VALUES = [2, -1, 0.5, 1e308, None, "", "abc", "AAAA", True, [], [[]], [[[]]], {}, [None], [2 ** 64],
                  [-(2 ** 63) - 1], [1.5, "x"], [[1, 2], [3]], [{"a": 1}], [[[[[[1]]]]]], 2 ** 63, "\u00e9" * 5]


def hostile_pickle(rng: random.Random) -> bytes:
    """A pickle a hostile writer could pack: NumPy's constructors called with odd arguments, dtypes
    that are not numbers, shapes that do not match the bytes, broken or oversized pickles."""
    from numpy._core.multiarray import _reconstruct
    from numpy._core.numeric import _frombuffer

    kind = rng.randrange(9)
    size = rng.choice([0, 1, 4, 7, 2 ** 20, 2 ** 26, 2 ** 31, 2 ** 40])
    shape = rng.choice([(size,), (250, size), (size, 4), (250, 4), (-1, 4), (0, size), ("a",), (1.5,), (True,),
                        ((2,),), (2 ** 70, 0)])
    dtype = rng.choice(["f8", "f4", "f2", "b1", "i1", "u8", "V4", "c8", "O", "U2", "S3", "M8", "f16", ("f8", (4,)),
                        [("a", "f8")], "f8,f8"])
    if kind == 0:
        args = [(shape, dtype), (shape, dtype, b"\0" * 8, 0, (0,) * max(len(shape), 1)),
                (shape, dtype, bytearray(32), rng.choice([0, 8, -8, 2 ** 40]))]
        return pickle.dumps(Call(np.ndarray, rng.choice(args)), protocol=5)
    if kind == 1:
        buf = bytes(rng.choice([0, 8, 32, 8000]))
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = dtype
        return pickle.dumps(Call(_frombuffer, (buf, dt, shape, rng.choice(["C", "F", "K", 3]))), protocol=5)
    if kind == 2:
        state = rng.choice([(1, shape, np.dtype("f8"), False, bytes(32)), (shape, np.dtype("f4"), True, b"\0" * 16),
                            (1, (4,), np.dtype("f8"), 3, bytes(32)), (1, (4,), "f8", False, bytes(32)), (1,)])
        return pickle.dumps(Call(_reconstruct, (rng.choice([np.ndarray, np.matrix, bytes]), (0,), b"b"), state),
                            protocol=rng.choice([3, 4, 5]))
    if kind == 3:
        try:
            value = np.zeros((250, 4), dtype)
        except (TypeError, ValueError):
            value = np.zeros((250, 4))
        return pickle.dumps(value, protocol=rng.choice([3, 4, 5]))
    if kind == 4:  # a real array's pickle with bytes flipped, cut or added
        raw = bytearray(pickle.dumps(np.arange(1000.0).reshape(250, 4), protocol=rng.choice([3, 4, 5])))
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(raw))
            choice = rng.randrange(3)
            if choice == 0:
                raw[at] = rng.randrange(256)
            elif choice == 1:
                del raw[at:at + rng.randrange(1, 9)]
            else:
                raw[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        return bytes(raw)
    if kind == 5:
        return rng.choice([
            memo_bomb(), bytearray_bomb(), bytearray_bomb(1 << 30), b"\x80\x05" + b"N0" * 10_000 + b"N.",
            b"\x80\x05" + b"(" * 5000 + b"N.", b"\x80\x05\x95" + struct.pack("<Q", 1 << 40) + b"N.",
            b"\x80\x05\x8d" + struct.pack("<Q", 1 << 40) + b"ab.", b"cos\nsystem\n(S'true'\ntR.",
            # BUILD on the globals themselves: a pickle must not change them for the loads after it
            b"\x80\x05cnumpy._core.numeric\n_frombuffer\n(N}tb.", b"\x80\x05cnumpy\ndtype\n(NK\x01\x85tb.",
            b"\x80\x05cnumpy\ndtype\n(K\x01tb."])
    if kind == 6:
        return pickle.dumps(rng.choice([np.float32(1.0), [1.0, 2.0], (np.zeros(3),), {"a": np.zeros(3)},
                                        np.zeros((250, 4)).astype(object), np.ma.zeros(4),
                                        np.zeros((250, 4))[:, ::2]]),
                            protocol=5)
    if kind == 7:  # a pickle padded after its end, or an array with a big-endian or Fortran layout
        value = rng.choice([np.zeros((250, 4), ">f8"), np.asfortranarray(np.ones((250, 4))), np.zeros((250, 4), bool)])
        return pickle.dumps(value, protocol=5) + bytes(rng.choice([0, 1, 5000]))
    return pickle.dumps(Call(np.dtype, (rng.choice(["f8", "V8", "(4,)f8", "O", "f8,f8", 5]),)), protocol=5)


def hostile_text(rng: random.Random) -> str:
    """A packed column's text: a hostile pickle, or a broken LZ4 frame or base64 around a real one."""
    kind = rng.randrange(5)
    if kind <= 1:
        return pack(hostile_pickle(rng), store_size=rng.random() < 0.8)
    frame = bytearray(lz4.frame.compress(pickle.dumps(np.zeros((250, 4), np.float32), protocol=5)))
    if kind == 2:
        for _ in range(rng.randrange(1, 4)):
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        return pack_frame(bytes(frame))
    if kind == 3:
        choice = rng.randrange(5)
        if choice == 0:
            return pack_frame(claiming(bytes(frame), rng.choice([2 ** 62, 2 ** 40, 2 ** 31, 10, 0])))
        if choice == 1:
            return pack_frame(bytes(frame[:rng.randrange(len(frame))]))
        if choice == 2:
            return pack_frame(bytes(frame) + rng.choice([b"\x04\x22\x4d\x18", bytes(frame), b"\0"]))
        return pack_frame(big_zeros(rng.random() < 0.5))
    text = pack(np.zeros((250, 4), np.float32))
    return rng.choice([text[:-3], text + "=", "@" + text[1:], text.encode().hex(), " " + text])


_ZEROS: dict[bool, bytes] = {}


def big_zeros(store_size: bool) -> bytes:
    """A frame of 512 MiB of zeros after a real array's pickle (made once)."""
    if store_size not in _ZEROS:
        _ZEROS[store_size] = zeros_frame(1 << 29, store_size=store_size,
                                         prefix=pickle.dumps(np.zeros((250, 4), np.float32), protocol=5))
    return _ZEROS[store_size]


def mutate_json(rng: random.Random, line: bytes, packed: bool) -> tuple[bytes, str]:
    """One mutation of a JSON line: bytes, a value, a column removed, or a hostile packed value."""
    kind = rng.randrange(5)
    if kind == 0:
        raw = bytearray(line)
        for _ in range(rng.randrange(1, 6)):
            at = rng.randrange(len(raw))
            choice = rng.randrange(3)
            if choice == 0:
                raw[at] = rng.choice(b'0123456789-.,[]{}":eE tn\x00\xff')
            elif choice == 1:
                del raw[at:at + rng.randrange(1, 20)]
            else:
                raw[at:at] = rng.choice([b"[", b"]", b",", b"1", b"null", b'"', b"-", b"1e999"])
        return bytes(raw), "bytes"
    batch = batch_of(line)
    columns = ["obs", "new_obs", "actions", "rewards", "terminateds", "truncateds", "eps_id", "t", "agent_index"]
    name = rng.choice(columns)
    if kind == 1:
        value = batch.get(name)
        if isinstance(value, list) and value and rng.random() < 0.7:
            value = list(value)
            for _ in range(rng.randrange(1, 4)):
                at = rng.randrange(len(value))
                value[at] = rng.choice(HOSTILE_VALUES + [value[rng.randrange(len(value))]])
            if rng.random() < 0.2:
                del value[rng.randrange(len(value))]
        else:
            value = rng.choice(HOSTILE_VALUES)
        batch[name] = value
        return with_batch(line, batch), f"value of {name}"
    if kind == 2:
        batch.pop(name, None)
        if rng.random() < 0.2:
            obj = json.loads(line)
            obj[rng.choice(["type", "policy_batches"])] = rng.choice(HOSTILE_VALUES)
            return json.dumps(obj).encode(), "batch"
        return with_batch(line, batch), f"no {name}"
    if kind == 3 or packed:
        name = rng.choice(["obs", "new_obs"] if packed and rng.random() < 0.7 else columns)
        batch[name] = hostile_text(rng)
        return with_batch(line, batch), f"packed {name}"
    flags = [rng.choice([0, 1, 2, -1, 0.5, True, False]) for _ in batch["terminateds"]]
    batch[rng.choice(["terminateds", "truncateds", "dones"])] = flags
    return with_batch(line, batch), "flags"


def mutate_parquet(rng: random.Random, table) -> tuple[object, str]:
    """One mutation of a Parquet table: a column of another type or values, or hostile packed rows."""
    import pyarrow as pa

    n = table.num_rows
    kind = rng.randrange(4)
    name = rng.choice(["obs", "new_obs", "actions", "rewards", "terminateds", "truncateds", "eps_id", "agent_id",
                       "module_id"])
    if kind == 0:
        column = table.column(name).to_pylist() if name in table.column_names else [None] * n
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(n)
            column[at] = rng.choice([None, 2, -1, 0.5, float("nan"), float("inf"), [], [None], [1.0, None, 2.0, 3.0],
                                     [1.0] * 5, "x", column[rng.randrange(n)]])
        try:
            values = pa.array(column)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            values = pa.array([str(v) for v in column])
        return with_column(table, name, values), f"values of {name}"
    if kind == 1:
        values = rng.choice([
            lambda: pa.array([rng.choice([0, 1, 2]) for _ in range(n)], pa.int8()),
            lambda: pa.array([float(rng.choice([0, 1, 0.5])) for _ in range(n)], pa.float16()),
            lambda: pa.array([b"ab"] * n, pa.binary()),
            lambda: pa.array([{"x": 1}] * n),
            lambda: pa.array([[[1.0]]] * n),
            lambda: pa.array([[1.0, 2.0, 3.0, 4.0]] * n, pa.list_(pa.float16())),
            lambda: pa.array([[True, False, True, True]] * n, pa.list_(pa.bool_(), 4)),
            lambda: pa.array(list(range(n)), pa.uint64()),
            lambda: pa.array([str(i) for i in range(n)]),
            lambda: pa.nulls(n),
            lambda: pa.array([[]] * n, pa.list_(pa.float32())),
        ])()
        return with_column(table, name, values), f"type of {name}"
    if kind == 2:
        if name not in ("obs", "new_obs", "rewards", "actions", "terminateds"):
            name = "obs"
        column = [v if isinstance(v, str) else pack(np.asarray(v, dtype=np.float32 if name in ("obs", "new_obs")
                                                                 else None))
                  for v in table.column(name).to_pylist()]
        for _ in range(rng.randrange(1, 3)):
            column[rng.randrange(n)] = hostile_text(rng)
        if rng.random() < 0.3:
            column = [column[0]] * n  # Parquet's dictionary: one value for every row
        return with_column(table, name, column), f"packed {name}"
    return table.drop_columns([name]) if name in table.column_names else table, f"no {name}"


def equivalent_json(rng: random.Random, line: bytes, packed: bool) -> tuple[bytes, str]:
    """The same steps written another way: flags as numbers, keys reordered, other columns added, or
    (packed) obs re-packed with another protocol, byte order, memory order or frame header."""
    batch = batch_of(line)
    kind = rng.randrange(4)
    if kind == 0:
        name = rng.choice(["terminateds", "truncateds"])
        batch[name] = [rng.choice([int, float, bool])(v) for v in batch[name]]
        return with_batch(line, batch), f"{name} as numbers"
    if kind == 1:
        keys = list(batch)
        rng.shuffle(keys)
        return with_batch(line, {k: batch[k] for k in keys}), "keys reordered"
    if kind == 2 or not packed:
        batch[rng.choice(["infos", "vf_preds", "unroll_id", "weird"])] = rng.choice([[0] * len(batch["t"]), "x", {}])
        return with_batch(line, batch), "another column"
    name = rng.choice(["obs", "new_obs"])
    value = unpack(batch[name])
    how = rng.randrange(4)
    if how == 0:
        batch[name] = pack(value, protocol=rng.choice([3, 4]))
    elif how == 1:
        batch[name] = pack(value.astype(value.dtype.newbyteorder(">")))
    elif how == 2:
        batch[name] = pack(np.asfortranarray(value))
    else:
        batch[name] = pack(value, store_size=False)
    return with_batch(line, batch), f"{name} re-packed ({how})"


def equivalent_parquet(rng: random.Random, table) -> tuple[object, str]:
    """The same rows written another way: obs as fixed-size lists, flags as 0/1 numbers, obs packed."""
    import pyarrow as pa

    kind = rng.randrange(3)
    if kind == 0:
        name = rng.choice(["obs", "new_obs"])
        values = pa.array(table.column(name).to_pylist(), pa.list_(pa.float32(), 4))
        return with_column(table, name, values), f"{name} as fixed-size lists"
    if kind == 1:
        name = rng.choice(["terminateds", "truncateds"])
        kind_of = rng.choice([pa.int8(), pa.uint32(), pa.float64()])
        values = pa.array([int(v) for v in table.column(name).to_pylist()], pa.int64()).cast(kind_of)
        return with_column(table, name, values), f"{name} as {kind_of}"
    return packed_rows_table(table), "obs packed row by row"


def _check_frame(frame: pl.DataFrame) -> str | None:
    """What is wrong with a loaded frame (None: nothing)."""
    spec = attached(frame)
    if spec is None:
        return "no spec attached"
    spec.validate(frame)
    for name in ("terminated", "truncated", "done_recorded"):
        if frame.schema[name] != pl.Boolean or frame[name].null_count():
            return f"{name} is {frame.schema[name]} with {frame[name].null_count()} nulls"
    reward = frame["reward_recorded"].to_numpy()
    if frame.schema["reward_recorded"] != pl.Float64 or not np.isfinite(reward).all():
        return "reward_recorded is not finite Float64"
    inner = frame.schema["obs"].inner if isinstance(frame.schema["obs"], pl.Array) else frame.schema["obs"]
    if not (inner.is_numeric() or inner == pl.Boolean) or inner == pl.Float16:
        return f"obs is {frame.schema['obs']}"
    return None


def _outcome(path: Path, case: str, expected: pl.DataFrame | None, options: dict) -> str | None:
    """None when the load gives a sound frame (``expected``'s, if given) or a rewardlab error naming the
    file and place; else what went wrong."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedLinesWarning)
            result = read_rllib(path, **TRUNCATE, **options)
    except RewardlabError as exc:
        text = str(exc)
        if str(path) not in text:
            return f"{case}: the error does not name the file: {text}"
        if isinstance(exc, StepTableError):
            if exc.line is None and exc.row_group is None and exc.rule not in ("bad_parquet", "missing_column"):
                return f"{case}: the error names no line or row group: {text}"
            if exc.rule not in SKIP_REASONS:
                return f"{case}: unknown rule {exc.rule}: {text}"
        return None
    except Exception:  # noqa: BLE001 - the point: any other exception is a failure
        return f"{case}: {traceback.format_exc(limit=6)}"
    try:
        wrong = _check_frame(result.frame)
    except RewardlabError as exc:
        wrong = f"the frame breaks its spec: {exc}"
    if wrong:
        return f"{case}: {wrong}"
    if expected is not None and not result.frame.equals(expected):
        return f"{case}: the frame differs from the input's (silently wrong data)"
    if result.skipped is not None and not set(result.skipped["reason"]) <= set(SKIP_REASONS):
        return f"{case}: skipped with unknown reasons {set(result.skipped['reason'])}"
    return None


def fuzz_cases(seed: int, count: int, folder: str) -> list[str]:
    """Load ``count`` mutations of real RLlib input (seeded); the failures, described."""
    rng = random.Random(seed)
    folder = Path(folder)
    plain = old_lines()[:2]
    packed = packed_lines()[:1]
    table = parquet_table(60)
    bases = {"plain": read_rllib(write_lines(folder / "plain.json", plain), **TRUNCATE).frame,
             "packed": read_rllib(write_lines(folder / "packed.json", packed), **TRUNCATE).frame,
             "table": read_rllib(write_parquet(table, folder / "table.parquet"), **TRUNCATE).frame}
    failures = []
    for i in range(count):
        options = {"on_error": "skip"} if rng.random() < 0.25 else {}
        same = rng.random() < 0.15  # an equivalent input: the frame must be the same
        layout = rng.randrange(3)
        if options and rng.random() < 0.5:  # the skipped lines (rows) kept in a side file too
            options["skipped_path"] = folder / f"skipped{i}.{'parquet' if layout == 2 else 'json'}"
        if layout < 2:
            lines = list(packed if layout else plain)
            at = rng.randrange(len(lines))
            lines[at], what = (equivalent_json if same else mutate_json)(rng, lines[at], bool(layout))
            path = write_lines(folder / f"case{i}.json", lines)
            expected = bases["packed" if layout else "plain"] if same else None
        else:
            if same:
                mutated, what = equivalent_parquet(rng, table)
            else:
                mutated, what = mutate_parquet(rng, packed_rows_table(table) if rng.random() < 0.3 else table)
            path = folder / f"case{i}.parquet"
            write_parquet(mutated, path, row_group_size=rng.choice([7, 20, 60]))
            expected = bases["table"] if same else None
            if not same and rng.random() < 0.1:  # a byte of the file itself
                raw = bytearray(path.read_bytes())
                raw[rng.randrange(len(raw))] = rng.randrange(256)
                path.write_bytes(bytes(raw))
                what += ", a byte of the file"
        problem = _outcome(path, f"case {i} (seed {seed}, {what})", expected, options)
        if problem:
            failures.append(problem)
        path.unlink()
        if "skipped_path" in options:
            options["skipped_path"].unlink(missing_ok=True)
    return failures


FUZZ = """
sys.setrecursionlimit(10_000)
from test_rllib_hostile import fuzz_cases
for failure in fuzz_cases({seed}, {count}, {folder!r}):
    print(json.dumps({{"failure": failure}}), flush=True)
print(json.dumps({{"done": True}}), flush=True)
"""


@linux_only
def test_fuzzed_rllib_input_loads_or_is_refused_by_name(tmp_path):
    out = limited(FUZZ.format(seed=2024, count=120, folder=str(tmp_path)))
    failures = [o["failure"] for o in out if "failure" in o]
    assert not failures, "\n\n".join(failures[:5])
    assert out[-1] == {"done": True}


@linux_only
@pytest.mark.long_fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_fuzzed_rllib_input_long_run(tmp_path, seed):
    out = limited(FUZZ.format(seed=seed, count=1500, folder=str(tmp_path)), timeout=1800)
    failures = [o["failure"] for o in out if "failure" in o]
    assert not failures, "\n\n".join(failures[:5])
    assert out[-1] == {"done": True}
