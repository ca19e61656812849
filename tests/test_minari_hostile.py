"""format="minari" on hostile input: lying metadata, damaged Arrow and HDF5 episodes, and a seeded fuzz run.

Every broken dataset is a copy of a shipped one (data/minari/) with one
thing changed.  A load must give a clean frame (its spec holds, and its
episodes are what the files say, read here by a plain loop) or a rewardlab
error naming the dataset's file; never a raw exception, a crash, silently
wrong data, or memory the files do not hold.  The fuzz run loads in a child
process whose address space is capped (RLIMIT_AS) at what it uses after a
real load of both storages plus ``HEADROOM``.
"""

from __future__ import annotations

import json
import random
import shutil
import traceback
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from memory_cap import run_capped
from rewardlab.core.errors import DataFormatError, RewardlabError, StepTableError
from rewardlab.core.spec import attached
from rewardlab.sources.minari import load_minari

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "minari"
ARROW, HDF5 = DATA / "mountaincar-arrow-v0", DATA / "mountaincar-hdf5-v0"

#: The memory the fuzz child may take beyond what it holds after real loads.
HEADROOM = 512 << 20

linux_only = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RLIMIT_AS checks need Linux")


def copy_dataset(root: Path, target: Path) -> Path:
    shutil.copytree(root, target / root.name)
    return target / root.name / "data"


def edit_metadata(folder: Path, change) -> None:
    path = folder / "metadata.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def edit_space(folder: Path, key: str, **fields) -> None:
    def change(meta):
        space = json.loads(meta[key])
        space.update(fields)
        meta[key] = json.dumps(space)
    edit_metadata(folder, change)


def refused(folder: Path, error=RewardlabError, **options) -> RewardlabError:
    with pytest.raises(error) as info:
        load_minari(folder, **options)
    assert str(folder) in str(info.value)
    return info.value


# --- defects the fuzz found, one test each --------------------------------------------------------


@pytest.mark.parametrize("field,value", [("n", float("inf")), ("start", float("-inf")), ("n", float("nan"))])
def test_a_discrete_space_with_an_infinite_size_is_named(tmp_path, field, value):
    folder = copy_dataset(ARROW, tmp_path)
    edit_space(folder, "action_space", **{field: value})
    error = refused(folder, DataFormatError)
    assert error.rule == "unsupported_space" and error.path == str(folder / "metadata.json")


@pytest.mark.parametrize("shape", [[10**30], [2**40, 2**40], [float("inf")]])
def test_a_box_shape_too_large_for_a_column_is_named(tmp_path, shape):
    folder = copy_dataset(ARROW, tmp_path)
    edit_space(folder, "observation_space", shape=shape)
    error = refused(folder, DataFormatError)
    assert error.rule == "unsupported_space" and "metadata.json" in error.path


def test_json_nested_deeper_than_the_parser_is_bad_metadata(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    folder = copy_dataset(ARROW, tmp_path)
    text = (folder / "metadata.json").read_text()
    (folder / "metadata.json").write_text(text[:-1] + ', "deep": ' + deep + "}")
    assert refused(folder, DataFormatError).rule == "bad_metadata"
    folder = copy_dataset(HDF5, tmp_path / "space")
    edit_metadata(folder, lambda meta: meta.update(action_space=deep))
    assert refused(folder, DataFormatError).rule == "unsupported_space"


def test_an_episode_metadata_nested_too_deeply_is_ignored_like_an_unreadable_one(tmp_path):
    folder = copy_dataset(ARROW, tmp_path)
    (folder / "0" / "metadata.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert load_minari(folder).equals(load_minari(ARROW))


def test_names_of_non_ascii_digits_are_not_episodes(tmp_path):
    import h5py

    folder = copy_dataset(ARROW, tmp_path)
    (folder / "\u00b2").mkdir()  # "²".isdigit() is True, int("²") fails
    assert load_minari(folder).equals(load_minari(ARROW))
    folder = copy_dataset(HDF5, tmp_path / "h")
    with h5py.File(folder / "main_data.hdf5", "r+") as f:
        f.create_group("episode_\u00b2")
    assert load_minari(folder).equals(load_minari(HDF5))


@pytest.mark.parametrize("column,shape", [("observations", (10**9, 2)), ("rewards", (10**9,)),
                                          ("actions", (10**10,))])
def test_an_hdf5_shape_with_no_data_behind_it_is_refused_before_reading(tmp_path, column, shape):
    import h5py

    folder = copy_dataset(HDF5, tmp_path)
    with h5py.File(folder / "main_data.hdf5", "r+") as f:
        dtype = f[f"episode_0/{column}"].dtype
        del f[f"episode_0/{column}"]
        f.create_dataset(f"episode_0/{column}", shape=shape, dtype=dtype, chunks=(1000,) + shape[1:])
    error = refused(folder, StepTableError)
    assert error.rule == "declared_shape" and error.column == f"episode_0/{column}"
    assert str(shape[0]) in str(error)


@pytest.mark.parametrize("root", [ARROW, HDF5], ids=["arrow", "hdf5"])
def test_discrete_actions_stored_as_fractions_are_refused_not_truncated(tmp_path, root):
    import h5py
    import pyarrow as pa
    import pyarrow.ipc

    folder = copy_dataset(root, tmp_path)
    if root is HDF5:
        with h5py.File(folder / "main_data.hdf5", "r+") as f:
            actions = f["episode_1/actions"][()].astype(np.float64)
            actions[4] += 0.5
            del f["episode_1/actions"]
            f["episode_1/actions"] = actions
    else:
        path = folder / "1" / "part-0.arrow"
        with pa.OSFile(str(path), "rb") as source:
            table = pa.ipc.open_file(source).read_all()
        actions = table.column("actions").to_numpy().astype(np.float64)
        actions[4] = np.nan
        table = table.set_column(table.schema.get_field_index("actions"), "actions", pa.array(actions))
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    error = refused(folder, StepTableError)
    assert error.rule == "not_integer" and error.row == 4 and "episode 1, step 4" in str(error)
    whole = copy_dataset(HDF5, tmp_path / "whole")  # floats that are whole numbers load as the ints
    with h5py.File(whole / "main_data.hdf5", "r+") as f:
        actions = f["episode_1/actions"][()].astype(np.float32)
        del f["episode_1/actions"]
        f["episode_1/actions"] = actions
    assert load_minari(whole).equals(load_minari(HDF5))


def test_an_arrow_column_name_that_is_not_utf8_is_a_damaged_file(tmp_path):
    folder = copy_dataset(ARROW, tmp_path)
    path = folder / "2" / "part-0.arrow"
    data = path.read_bytes()
    path.write_bytes(data.replace(b"rewards", b"\xa3ewards"))
    error = refused(folder, DataFormatError)
    assert error.rule == "damaged_file" and error.path == str(path)


# --- the fuzz -------------------------------------------------------------------------------------


def _read_arrow(path: Path):
    import pyarrow as pa
    import pyarrow.ipc

    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _write_arrow(table, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.ipc

    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


HOSTILE_VALUES = [None, -1, -(2**63), 2**70, float("nan"), float("inf"), "8", [], {}, True, 1.5, [[[[[]]]]],
                  "[" * 2000, 0]


def _hostile(rng: random.Random):
    value = rng.choice(HOSTILE_VALUES)
    if value == "[" * 2000 and rng.random() < 0.5:
        value = json.loads("[" * 900 + "]" * 900)
    return value


def mutate_metadata(rng: random.Random, folder: Path) -> str:
    meta = json.loads((folder / "metadata.json").read_text())
    kind = rng.randrange(5)
    if kind == 0:
        key = rng.choice(sorted(meta))
        del meta[key]
        what = f"metadata without {key}"
    elif kind == 1:
        key = rng.choice(["total_episodes", "total_steps", "data_format", "jpeg_encoding", "observation_space",
                          "action_space", "dataset_id", "minari_version"])
        meta[key] = _hostile(rng)
        what = f"metadata {key}={str(meta[key])[:40]}"
    elif kind == 2:
        key = rng.choice(["total_episodes", "total_steps"])
        count = meta.get(key)  # an earlier mutation may have made it anything
        meta[key] = max(0, (count if isinstance(count, int) and not isinstance(count, bool) else 0)
                        + rng.choice([-3, -1, 1, 2, 10**6]))
        what = f"metadata {key} lies ({meta[key]})"
    else:
        key = rng.choice(["observation_space", "action_space"])
        try:
            space = json.loads(meta[key])
            assert isinstance(space, dict)
        except (KeyError, TypeError, ValueError, AssertionError):  # an earlier mutation replaced it
            space = {}
        field = rng.choice(["type", "shape", "dtype", "n", "start", "nvec", "low", "high"])
        space[field] = rng.choice([_hostile(rng), "Dict", "Tuple", "Text", "MultiBinary", "MultiDiscrete", "Box",
                                   "Discrete", "float16", "int8", "uint64", "bool", "S4", "O", [3], [1, 2], [0],
                                   [2, 1], [-2], [2**40, 2**40], 5, 2])
        meta[key] = json.dumps(space)
        what = f"{key} {field}={str(space[field])[:40]}"
    (folder / "metadata.json").write_text(json.dumps(meta))
    return what


RAW_DAMAGE = ("bytes of", "truncated")


def _raw(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    if rng.random() < 0.4:
        cut = rng.randrange(len(data))
        path.write_bytes(bytes(data[:cut]))
        return f"truncated {path.name} at {cut}"
    for _ in range(rng.choice([1, 1, 2, 8])):
        data[rng.randrange(len(data))] = rng.randrange(256)
    path.write_bytes(bytes(data))
    return f"bytes of {path.name} changed"


def mutate_arrow(rng: random.Random, folder: Path) -> str:
    import pyarrow as pa

    episode = rng.randrange(8)
    path = folder / str(episode) / "part-0.arrow"
    kind = rng.randrange(8)
    if kind == 0:
        return _raw(rng, path)
    if kind == 1:
        meta = {"id": episode, "total_steps": rng.choice([0, 1, 129, 131, 10**9, -1, "x", None])}
        (folder / str(episode) / "metadata.json").write_text(json.dumps(meta))
        return f"episode {episode} metadata total_steps={meta['total_steps']}"
    table = _read_arrow(path)
    name = rng.choice(["observations", "actions", "rewards", "terminations", "truncations"])
    index = table.schema.get_field_index(name)
    n = table.num_rows
    if kind == 2:
        table = table.remove_column(index) if rng.random() < 0.5 else table.rename_columns(
            [c if c != name else name + "_x" for c in table.column_names])
        what = f"{name} removed or renamed"
    elif kind == 3:
        cut = rng.choice([0, 1, n - 1, n - 2])
        table = table.slice(0, cut) if rng.random() < 0.5 else table.slice(n - cut)
        what = f"{cut} rows of {n}"
    elif kind == 4:
        values = table.column(name).to_pylist()
        at = rng.randrange(n)
        new = rng.choice([float("nan"), float("inf"), 2, -1, 7, 0.5, 10**18, None])
        values[at] = [new, new] if isinstance(values[at], list) else new
        try:
            column = pa.array(values)
        except (pa.ArrowException, OverflowError):
            column = pa.array([str(v) for v in values])
        table = table.set_column(index, name, column)
        what = f"{name}[{at}]={new}"
    elif kind == 5:
        column = table.column(name)
        target = rng.choice([pa.int8(), pa.int64(), pa.float16(), pa.float64(), pa.string(), pa.bool_(),
                             pa.list_(pa.float32()), pa.list_(pa.float32(), 3), pa.uint64()])
        try:
            column = column.cast(target, safe=False)
        except (pa.ArrowException, NotImplementedError):
            column = pa.array([str(v) for v in column.to_pylist()])
        table = table.set_column(index, name, column)
        what = f"{name} as {column.type}"
    elif kind == 6:
        flags = rng.choice(["terminations", "truncations"])
        values = np.zeros(n, np.int64)
        values[rng.randrange(n)] = rng.choice([1, 2, -1, 255])
        table = table.set_column(table.schema.get_field_index(flags), flags, pa.array(values))
        what = f"{flags} as ints {sorted(set(values.tolist()))}"
    else:
        table = table.append_column("extra", pa.array(range(n)))
        extra = folder / str(episode) / rng.choice(["part-1.arrow", "_hidden.arrow", "notes.txt"])
        extra.write_bytes(path.read_bytes()[: rng.randrange(1, 200)] if rng.random() < 0.5 else path.read_bytes())
        what = f"episode {episode} with an extra column and {extra.name}"
    _write_arrow(table, path)
    return what


def mutate_hdf5(rng: random.Random, folder: Path) -> str:
    import h5py

    path = folder / "main_data.hdf5"
    kind = rng.randrange(7)
    if kind == 0:
        return _raw(rng, path)
    episode = rng.randrange(8)
    name = rng.choice(["observations", "actions", "rewards", "terminations", "truncations"])
    with h5py.File(path, "r") as f:  # an earlier change may have removed the dataset or made it huge
        group = f.get(f"episode_{episode}")
        usable = (isinstance(group, h5py.Group) and isinstance(group.get(name), h5py.Dataset)
                  and group[name].size <= 10**6)
    if not usable:
        return _raw(rng, path)
    with h5py.File(path, "r+") as f:
        group = f[f"episode_{episode}"]
        values = group[name][()]
        if kind == 1:
            del group[name]
            if rng.random() < 0.5:
                group.create_group(name)
            return f"episode_{episode}/{name} removed"
        if kind == 2:
            del group[name]
            cut = rng.choice([0, 1, len(values) - 1, len(values) + 1])
            group[name] = np.resize(values, (cut,) + values.shape[1:])
            return f"episode_{episode}/{name} resized to {cut}"
        if kind == 3:
            key = rng.choice(["total_steps", "id", "seed"])
            value = rng.choice([0, 129, 131, -1, 2**62, np.array([1, 2]), "x", h5py.Empty("f"), 1.5])
            group.attrs[key] = value
            return f"episode_{episode} attribute {key}={value!r}"
        if kind == 4:
            del group[name]
            shape = (rng.choice([10**9, 2**40]),) + values.shape[1:]
            group.create_dataset(name, shape=shape, dtype=values.dtype, chunks=(64,) + values.shape[1:])
            return f"episode_{episode}/{name} declares {shape}"
        if kind == 5:
            del group[name]
            new = values.astype(rng.choice([np.float64, np.int8, np.uint64, np.float16, "S3"]))
            if new.dtype.kind == "f" and rng.random() < 0.5:
                new[rng.randrange(len(new))] = rng.choice([np.nan, np.inf, 0.5, 2.0])
            group[name] = new
            return f"episode_{episode}/{name} as {new.dtype}"
        del group[name]
        new = values.reshape(len(values), -1)
        group[name] = np.concatenate([new, new], axis=1) if rng.random() < 0.5 else new[:, :0]
        return f"episode_{episode}/{name} of shape {group[name].shape}"


def _stored_episodes(folder: Path) -> list[dict]:
    """The episodes as the files hold them, read by a plain loop (no rewardlab)."""
    meta = json.loads((folder / "metadata.json").read_text())
    episodes = []
    for i in range(meta["total_episodes"]):
        if meta["data_format"] == "hdf5":
            import h5py

            with h5py.File(folder / "main_data.hdf5", "r") as f:
                episodes.append({c: f[f"episode_{i}/{c}"][()] for c in
                                 ("observations", "actions", "rewards", "terminations", "truncations")})
        else:
            table = _read_arrow(folder / str(i) / "part-0.arrow")
            n = table.num_rows - 1
            ep = {c: np.asarray(table.column(c).to_pylist()) for c in table.column_names if c != "infos"}
            for c in ("actions", "rewards", "terminations", "truncations"):
                ep[c] = ep[c][:n]
            episodes.append(ep)
    return episodes


def _check_frame(frame: pl.DataFrame, folder: Path) -> str | None:
    """What is wrong with a loaded frame (None: nothing): its spec, and each episode against the files."""
    spec = attached(frame)
    if spec is None:
        return "no spec attached"
    spec.validate(frame)
    episodes = _stored_episodes(folder)
    parts = frame.partition_by("episode_id", maintain_order=True) if frame.height else []
    if len(parts) != len(episodes):
        return f"{len(parts)} episodes in the frame, {len(episodes)} in the files"
    for i, (ep, rows) in enumerate(zip(episodes, parts)):
        n = len(ep["rewards"])
        obs = np.asarray(ep["observations"], dtype=np.float64).reshape(n + 1, -1)
        if rows["episode_id"].to_list() != [i] * n or rows["t"].to_list() != list(range(n)):
            return f"episode {i}: ids or steps differ"
        # a changed byte may make an observation NaN: NaN observations load as they are (as in step tables)
        if not np.array_equal(rows["obs"].to_numpy().astype(np.float64), obs[:-1].astype(np.float32),
                              equal_nan=True):
            return f"episode {i}: observations differ"
        if not np.array_equal(np.asarray(rows["final_obs"][-1].to_list(), dtype=np.float64),
                              obs[-1].astype(np.float32), equal_nan=True):
            return f"episode {i}: final observation differs"
        if rows["action"].to_list() != np.asarray(ep["actions"]).reshape(n).tolist():
            return f"episode {i}: actions differ"
        if rows["reward_recorded"].to_list() != np.asarray(ep["rewards"], dtype=np.float64).tolist():
            return f"episode {i}: rewards differ"
        term = np.asarray(ep["terminations"]).astype(bool)
        trunc = np.asarray(ep["truncations"]).astype(bool) & ~term
        if rows["terminated"].to_list() != term.tolist() or rows["truncated"].to_list() != trunc.tolist():
            return f"episode {i}: flags differ"
        if not np.isin(np.asarray(ep["terminations"]), (0, 1)).all():
            return f"episode {i}: flags other than 0 / 1 loaded"
    return None


def _outcome(folder: Path, case: str) -> str | None:
    try:
        frame = load_minari(folder)
    except RewardlabError as exc:
        text = str(exc)
        if str(folder) not in text:
            return f"{case}: the error does not name the dataset's file: {text}"
        return None
    except Exception:  # noqa: BLE001 - the point: any other exception is a failure
        return f"{case}: {traceback.format_exc(limit=8)}"
    try:
        wrong = _check_frame(frame, folder)
    except Exception:  # noqa: BLE001
        wrong = f"loaded, yet the files cannot be read back plainly: {traceback.format_exc(limit=4)}"
    return f"{case}: {wrong}" if wrong else None


def fuzz_cases(seed: int, count: int, tmp: str) -> list[str]:
    """Load ``count`` mutations (seeded) of the shipped datasets; the failures, described."""
    rng = random.Random(seed)
    failures = []
    for i in range(count):
        root = rng.choice([ARROW, HDF5])
        folder = copy_dataset(root, Path(tmp) / f"case{i}")
        whats = []
        for _ in range(rng.choice([1, 1, 1, 2])):
            if rng.random() < 0.35:
                whats.append(mutate_metadata(rng, folder))
            else:
                whats.append((mutate_hdf5 if root is HDF5 else mutate_arrow)(rng, folder))
            if whats[-1].startswith(RAW_DAMAGE):  # a damaged file is the last change
                break
        problem = _outcome(folder, f"case {i} (seed {seed}, {root.name}: {'; '.join(whats)})")
        if problem:
            failures.append(problem)
        shutil.rmtree(folder.parent.parent)
    return failures


WARM = """
sys.setrecursionlimit(10_000)
from rewardlab.sources.minari import load_minari
load_minari({arrow!r}); load_minari({hdf5!r})  # pyarrow, h5py, polars' pools
"""

FUZZ = """
from test_minari_hostile import fuzz_cases
for failure in fuzz_cases({seed}, {count}, {tmp!r}):
    print(json.dumps({{"failure": failure}}), flush=True)
print(json.dumps({{"done": True}}), flush=True)
"""


def run_fuzz(seed: int, count: int, tmp: Path, timeout: int) -> None:
    """The fuzz cases of ``seed`` in a child with capped memory (:mod:`memory_cap`); no case may fail."""
    out = run_capped(WARM.format(arrow=str(ARROW), hdf5=str(HDF5)),
                     FUZZ.format(seed=seed, count=count, tmp=str(tmp)), headroom=HEADROOM, timeout=timeout,
                     cwd=ROOT)
    failures = [o["failure"] for o in out if "failure" in o]
    assert not failures, "\n\n".join(failures[:5])
    assert out[-1] == {"done": True}


@linux_only
def test_fuzzed_minari_datasets_load_or_are_refused_by_name(tmp_path):
    run_fuzz(2024, 60, tmp_path, timeout=300)


@linux_only
@pytest.mark.long_fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_fuzzed_minari_datasets_long_run(tmp_path, seed):
    run_fuzz(seed, 1500, tmp_path, timeout=3600)
