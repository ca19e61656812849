"""format="rllib": real RLlib output (data/rllib/, recorded by scripts/make_rllib_data.py with Ray 2.60.0).

The committed files are what RLlib wrote; the tests check the loaded frames
against RLlib's own episode statistics from the same run (``stats.json``),
and build every broken input from a real line.
"""

from __future__ import annotations

import base64
import json
import pickle
import shutil

import lz4.frame
import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rllib_lines import batch_of, with_batch, write_lines
from rewardlab.contracts.steps import STEPS
from rewardlab.core.errors import (DataFormatError, FilesLeftOutWarning, OutputExistsError, ParameterError,
                                   SkippedLinesWarning, StepTableError)
from rewardlab.core.spec import attached
from rewardlab.plugins import apply_plugins
from rewardlab.sources.registry import detect_source
from rewardlab.sources.rllib import read_rllib

DATA = ROOT / "data" / "rllib"
OLD = DATA / "old_stack_json"
PACKED = DATA / "old_stack_compressed"
NEW = DATA / "new_stack_parquet"
TRUNCATE = {"unfinished": "truncate"}


def json_file(folder):
    (path,) = sorted((folder / "data").glob("*.json"))
    return path


def lines(folder) -> list[bytes]:
    return json_file(folder).read_bytes().split(b"\n")[:-1]


def stats(folder) -> dict:
    return json.loads((folder / "stats.json").read_text())


def episodes(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by("eps_id", maintain_order=True).agg(
        pl.len().alias("length"), pl.col("reward_recorded").sum().alias("return"),
        pl.col("terminated").last(), pl.col("truncated").last())


def check_against_rllib(frame: pl.DataFrame, folder, *, longer=()):
    """Every episode RLlib saw end is in the frame with RLlib's length and return; the others are
    the episodes the run stopped in (loaded as truncated).  ``longer``: episodes RLlib counts one
    step longer than their rows (see the Parquet test)."""
    rllib = {str(e["eps_id"]): e for e in stats(folder)["episodes"]}
    ours = episodes(frame.with_columns(pl.col("eps_id").cast(pl.String)))
    finished = ours.filter(pl.col("terminated"))
    assert finished.height == len(rllib) > 40
    for eps_id, length, ret, *_ in finished.iter_rows():
        assert length + (eps_id in longer) == rllib[eps_id]["length"], eps_id
        assert ret == pytest.approx(rllib[eps_id]["return"]), eps_id
        assert ret == length  # CartPole: +1 a step
    cut = ours.filter(~pl.col("terminated"))
    assert cut["truncated"].all() and not set(cut["eps_id"]) & set(rllib)
    return ours


# --- the real data ------------------------------------------------------------------------------


def test_old_stack_json_matches_rllibs_episode_statistics():
    frame = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    spec = attached(frame)
    assert spec.contract == "steps" and spec.episode == ("eps_id", "agent") and spec.agent == "agent"
    assert spec.states[0].name == "obs" and spec.states[0].width == 4
    assert frame.height == 3000 == sum(json.loads(x)["count"] for x in lines(OLD))
    ours = check_against_rllib(frame, OLD)
    assert ours.height == 134  # 133 finished + the one the run stopped in
    # each (episode, agent) in one block, in step order, starting at t=0
    starts = frame.group_by("eps_id", maintain_order=True).agg(
        pl.col("t").first().alias("first"), pl.col("t").diff().min().alias("gap"))
    assert starts["first"].to_list() == [0] * 134 and starts["gap"].drop_nulls().min() == 1
    assert "new_obs" not in frame.columns
    assert frame["done_recorded"].sum() == 134


def test_the_standard_librarys_json_gives_the_same_frame(monkeypatch):
    from rewardlab.sources.rllib import files as reader

    fast = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    assert reader.parse_json is not json.loads  # orjson, from the test extra
    monkeypatch.setattr(reader, "parse_json", json.loads)
    assert rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE).equals(fast)


def test_episodes_continue_over_lines():
    # the first line's last episode goes on in the second line: one block in the frame
    first, second = batch_of(lines(OLD)[0]), batch_of(lines(OLD)[1])
    assert first["eps_id"][-1] == second["eps_id"][0] and not first["terminateds"][-1]
    frame = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    block = frame.filter(pl.col("eps_id") == first["eps_id"][-1])
    assert block["t"].to_list() == list(range(block.height))
    assert block.height == first["eps_id"].count(first["eps_id"][-1]) + second["eps_id"].count(second["eps_id"][0])


def test_compressed_columns_decode_to_what_rllib_wrote_uncompressed():
    packed = rewardlab.load(PACKED / "data", format="rllib", options=TRUNCATE)
    assert isinstance(batch_of(lines(PACKED)[0])["obs"], str)  # really packed by RLlib
    check_against_rllib(packed, PACKED)
    assert packed.schema["obs"] == pl.Array(pl.Float32, 4)
    # the same seed: the first iteration of the plain run is the compressed run
    plain = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    ids = set(packed["eps_id"])
    same = plain.filter(pl.col("eps_id").is_in(list(ids)))
    finished = episodes(packed).filter(pl.col("terminated"))["eps_id"]
    a = packed.filter(pl.col("eps_id").is_in(finished.to_list()))
    b = same.filter(pl.col("eps_id").is_in(finished.to_list()))
    np.testing.assert_array_equal(a["obs"].to_numpy(), b["obs"].to_numpy().astype(np.float32))
    assert a["actions"].to_list() == b["actions"].to_list()


def test_new_stack_parquet_matches_rllibs_episode_statistics():
    frame = rewardlab.load(NEW / "data", format="rllib", options=TRUNCATE)
    assert frame.height == 3000 and frame.schema["eps_id"] == pl.String
    assert set(frame["agent"]) == {"default_agent"}
    # RLlib's new stack counts an episode that continues over a sample() call (here: over a file)
    # one step longer than its steps (its own episode_len_mean > episode_return_mean on CartPole
    # shows it too); the returns agree, and new_obs chains the rows over the boundary.
    spanning = {e for e, n in pl.concat([
        pl.read_parquet(p, columns=["eps_id"]).unique().with_columns(pl.lit(i).alias("f"))
        for i, p in enumerate(sorted((NEW / "data").rglob("*.parquet")))]).group_by("eps_id").len().iter_rows()
        if n > 1}
    assert len(spanning) == 2
    check_against_rllib(frame, NEW, longer=spanning)


def test_compressed_parquet_rows_decode(tmp_path):
    # the new stack packs each row's value on its own (pack_if_needed per step)
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = sorted((NEW / "data").rglob("*.parquet"))[0]
    plain = rewardlab.load(source, format="rllib", options=TRUNCATE)
    table = pq.read_table(source)
    for name in ("obs", "new_obs"):
        column = table.column(name)
        if isinstance(column.type, pa.ExtensionType):  # Ray Data's tensor type
            column = pa.chunked_array([c.storage for c in column.chunks])
        packed = [pack(np.asarray(v, dtype=np.float32)) for v in column.to_pylist()]
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(packed))
    path = tmp_path / "packed.parquet"
    pq.write_table(table, path)
    packed = rewardlab.load(path, format="rllib", options=TRUNCATE)
    assert packed.equals(plain)


def test_a_folder_is_searched_for_rllib_files():
    # stats.json beside the data is not sample data: left out, and named
    with pytest.warns(FilesLeftOutWarning, match=rf"left out 1 file of {OLD} that is not RLlib sample data "
                      rf".*: {OLD / 'stats.json'}$"):
        frame = rewardlab.load(OLD, format="rllib", options=TRUNCATE)
    assert frame.height == 3000


def test_format_is_detected_by_content():
    assert detect_source(json_file(OLD)).name == "rllib"
    parquet = sorted((NEW / "data").rglob("*.parquet"))[0]
    assert detect_source(parquet).name == "rllib"


def test_unfinished_episode_is_reported():
    with pytest.raises(DataFormatError) as err:
        rewardlab.load(OLD / "data", format="rllib")
    text = str(err.value)
    last = batch_of(lines(OLD)[-1])
    assert f"{json_file(OLD)}:12: column 'terminateds': episode {last['eps_id'][-1]} agent 0: the " in text
    assert f"episode's last step t={last['t'][-1]} has neither terminateds nor truncateds set" in text
    assert "[rule: unfinished]" in text and "Load with unfinished='truncate'" in text
    assert (err.value.line, err.value.column, err.value.rule) == (12, "terminateds", "unfinished")


def test_sample_batch_lines_with_dones_and_an_episode_over_two_files(tmp_path):
    # older RLlib: plain SampleBatch lines and a single `dones` flag; blank lines and empty batches pass
    rows = lines(OLD)
    out = []
    for row in rows[:4]:
        batch = batch_of(row)
        batch["dones"] = batch.pop("terminateds")
        del batch["truncateds"]
        out.append(json.dumps({"type": "SampleBatch", **batch}).encode())
    empty = {k: [] for k in batch_of(rows[0])}
    a = write_lines(tmp_path / "a.json", [out[0], out[1], b"", json.dumps({"type": "SampleBatch", **empty}).encode()])
    b = write_lines(tmp_path / "b.json", out[2:])
    frame = rewardlab.load([a, b], format="rllib", options=TRUNCATE)
    clean = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE).head(frame.height)
    spanning = batch_of(rows[1])["eps_id"][-1]
    assert spanning == batch_of(rows[2])["eps_id"][0]  # this episode goes on in the next file
    flags = ("truncated", "done_recorded", "final_obs")
    assert frame.drop(*flags).equals(clean.drop(*flags))
    assert not frame["truncated"][:-1].any() and frame["truncated"][-1]
    # the episode the shorter input cuts keeps its last new_obs (the full input goes on: null there)
    cut = frame.height - 1
    assert frame["final_obs"].head(cut).equals(clean["final_obs"].head(cut))
    assert frame["final_obs"][cut].to_list() == batch_of(rows[3])["new_obs"][-1] and clean["final_obs"][cut] is None


# --- bad input, built from real lines ----------------------------------------------------------------


def test_new_obs_disagreeing_with_the_next_obs_is_an_error(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[2])
    batch["new_obs"][3] = [9.0, 9.0, 9.0, 9.0]
    path = write_lines(tmp_path / "out.json", [rows[0], rows[1], with_batch(rows[2], batch), *rows[3:]])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path, unfinished="truncate")
    assert str(err.value).replace("'", "").startswith(
        f"{path}:3: column new_obs: episode {batch['eps_id'][3]} agent 0: step t={batch['t'][3]}: new_obs "
        f"[9.0, 9.0, 9.0, 9.0] differs from the obs {batch['obs'][4]!r} of the following step "
        f"t={batch['t'][4]} ({path} line 3) [rule: next_obs_mismatch]".replace("'", ""))


def test_missing_columns_are_listed(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[0])
    del batch["t"], batch["actions"]
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path)
    text = str(err.value)
    assert text.startswith(f"{path}:1: column 't': policy 'default_policy': the batch lacks t, actions; it "
                           "has action_dist_inputs, action_logp, action_prob, advantages, agent_index, ")
    assert "[rule: missing_column]" in text


def test_repeated_or_out_of_order_steps_are_an_error(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[0])
    batch["t"][5] = batch["t"][4]
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path, unfinished="truncate")
    assert str(err.value).startswith(
        f"{path}:1: column 't': episode {batch['eps_id'][5]} agent 0: step t=4 follows t=4 ({path} line 1) "
        "within the episode: steps should increase (repeated or out of order) [rule: step_order]")
    # a later line that repeats earlier steps of an episode
    path = write_lines(tmp_path / "again.json", [rows[0], rows[1], rows[1]])
    with pytest.raises(DataFormatError, match=r"again.json:3: column 't': .* \[rule: step_order\]"):
        read_rllib(path, unfinished="truncate")


def test_ragged_observations_are_an_error(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[0])
    batch["obs"][7] = batch["obs"][7][:3]
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path)
    assert str(err.value).startswith(
        f"{path}:1: column 'obs': policy 'default_policy': step 7 of the batch has 3 values, step 0 has 4 "
        "values (ragged values) [rule: ragged]")


def test_mixed_dtypes_across_files_are_an_error(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[1])
    batch["obs"] = [[int(v) for v in o] for o in batch["obs"]]
    batch["new_obs"] = [[int(v) for v in o] for o in batch["new_obs"]]
    a = write_lines(tmp_path / "a.json", [rows[0]])
    b = write_lines(tmp_path / "b.json", [with_batch(rows[1], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib([a, b], unfinished="truncate")
    assert str(err.value).startswith(f"{b}:1: column 'obs': is int64 x 4 here, float64 x 4 in {a} line 1 "
                                     "[rule: mixed_dtype]")


def test_undecodable_compressed_column_is_an_error(tmp_path):
    rows = lines(PACKED)
    batch = batch_of(rows[0])
    batch["new_obs"] = batch["new_obs"][:40] + "AAAA" + batch["new_obs"][44:]
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path)
    assert str(err.value).startswith(
        f"{path}:1: column 'new_obs': policy 'default_policy': the compressed column cannot be decoded: ")
    assert "[rule: undecodable_column]" in str(err.value)


class Payload:
    """Not an array: a pickle of it names this class, which a safe decode refuses."""

    def __init__(self, values):
        self.values = values

    def __reduce__(self):
        return (np.asarray, (self.values,))


def pack(value) -> str:  # what ray.rllib.utils.compression.pack does (cloudpickle is pickle-compatible)
    return base64.b64encode(lz4.frame.compress(pickle.dumps(value, protocol=5))).decode("ascii")


def test_compressed_column_that_is_not_an_array_is_refused_unless_allowed(tmp_path):
    rows = lines(PACKED)
    batch = batch_of(rows[0])
    plain = rewardlab.load(PACKED / "data", format="rllib", options=TRUNCATE)
    batch["obs"] = pack(Payload(np.stack([np.asarray(o) for o in plain["obs"].to_list()[:250]]).astype(np.float32)))
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], batch)])
    with pytest.raises(DataFormatError) as err:
        read_rllib(path, unfinished="truncate")
    text = str(err.value)
    assert text.startswith(f"{path}:1: column 'obs': policy 'default_policy': the compressed column refers "
                           "to numpy.asarray, not only to NumPy arrays; ")
    assert "Pass allow_pickle=True only for files you trust [rule: unsafe_pickle]" in text
    frame = read_rllib(path, unfinished="truncate", allow_pickle=True).frame
    assert frame.height == 250


# --- multi-agent ----------------------------------------------------------------------------------


def test_multi_agent_batch_becomes_rows_per_episode_and_agent(tmp_path):
    rows = lines(OLD)
    obj = json.loads(rows[0])
    a = obj["policy_batches"]["default_policy"]
    b = json.loads(json.dumps(a))
    b["agent_index"] = [1] * len(b["t"])
    b["obs"] = [[v + 10 for v in o] for o in b["obs"]]
    b["new_obs"] = [[v + 10 for v in o] for o in b["new_obs"]]
    obj["policy_batches"] = {"runner": a, "chaser": b}
    obj["count"] = len(a["t"])
    path = write_lines(tmp_path / "ma.json", [json.dumps(obj).encode()])
    frame = rewardlab.load(path, format="rllib", options=TRUNCATE)
    assert frame.height == 2 * len(a["t"])
    keys = frame.select("eps_id", "agent").unique(maintain_order=True)
    # each (episode, agent) is one block; an episode's agents follow their first appearance
    assert keys.height == 2 * len(set(a["eps_id"]))
    blocks = frame.with_columns(pl.struct("eps_id", "agent").rle_id().alias("block"))
    assert blocks["block"].n_unique() == keys.height
    chaser = frame.filter(pl.col("agent") == 1)
    assert set(chaser["policy_id"]) == {"chaser"} and set(frame.filter(pl.col("agent") == 0)["policy_id"]) == {"runner"}
    first = a["eps_id"][0]
    mine = chaser.filter(pl.col("eps_id") == first)
    np.testing.assert_allclose(mine["obs"].to_numpy()[:, 0],
                               [o[0] + 10 for o, e in zip(a["obs"], a["eps_id"]) if e == first])


# --- skip mode ------------------------------------------------------------------------------------


def test_skip_mode_drops_whole_episodes_and_keeps_their_lines_byte_for_byte(tmp_path):
    rows = lines(OLD)
    batch = batch_of(rows[4])
    broken_episode = batch["eps_id"][-1]  # continues on line 6
    batch["new_obs"][-3] = [1.0, 2.0, 3.0, 4.0]
    bad_line = with_batch(rows[4], batch).replace(b"}}}", b"}}}\r")  # a CR kept as it was
    rows = [*rows[:4], bad_line, *rows[5:8], b"{not json", *rows[8:]]
    path = write_lines(tmp_path / "out.json", rows)
    side = tmp_path / "skipped.json"
    with pytest.warns(SkippedLinesWarning, match=r"skipped \d+ lines of RLlib data"):
        result = read_rllib(path, on_error="skip", skipped_path=side)
    kept = result.frame
    clean = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    assert broken_episode not in set(kept["eps_id"])
    # never part of an episode: every kept episode is whole, as in a clean load
    ours = episodes(kept)
    theirs = episodes(clean).filter(pl.col("eps_id").is_in(ours["eps_id"].to_list()))
    assert ours.sort("eps_id")["length"].to_list() == theirs.sort("eps_id")["length"].to_list()
    # the skipped lines, verbatim, and only lines of the input
    skipped = result.skipped
    assert side.read_bytes() == b"".join(r + b"\n" for r in skipped["raw"].to_list())
    assert all(rows[line - 1] == raw for line, raw in zip(skipped["line"], skipped["raw"]))
    assert 5 in skipped["line"].to_list() and 9 in skipped["line"].to_list()
    assert skipped.filter(pl.col("line") == 9)["reason"].item() == "bad_json"
    counts = result.skip_counts
    assert counts["next_obs_mismatch"] >= 1 and counts["unfinished"] >= 1
    # every episode with a row on a skipped line is gone from the frame
    assert kept.height == clean.height - clean.filter(
        ~pl.col("eps_id").is_in(kept["eps_id"].to_list())).height
    with pytest.raises(OutputExistsError):
        read_rllib(path, on_error="skip", skipped_path=side)
    with pytest.warns(SkippedLinesWarning):
        read_rllib(path, on_error="skip", skipped_path=side, overwrite=True)


def test_option_checks():
    with pytest.raises(ParameterError, match="`skipped_path` is only used with on_error='skip'"):
        read_rllib(OLD / "data", skipped_path="x.json")
    with pytest.raises(ParameterError, match="`skipped_path` should end with .parquet for Parquet input"):
        read_rllib(NEW / "data", on_error="skip", skipped_path="x.json")
    with pytest.raises(ParameterError, match=r"`unfinished` should be one of"):
        read_rllib(OLD / "data", unfinished="drop")
    with pytest.raises(ParameterError, match="should name only options of the 'rllib' format"):
        rewardlab.load(OLD / "data", format="rllib", options={"unfinish": "truncate"})


def test_parquet_skip_mode_keeps_the_skipped_rows_value_for_value(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    sources = sorted((NEW / "data").rglob("*.parquet"))
    table = pq.read_table(sources[1])
    eps = table.column("eps_id").to_pylist()
    broken = eps[100]  # an episode in the middle of the second file
    terminated = table.column("terminateds").to_pylist()
    terminated[100] = True  # fires mid-episode (row 101 is the same episode)
    assert eps[101] == broken
    table = table.set_column(table.schema.get_field_index("terminateds"), "terminateds", pa.array(terminated))
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sources[0], folder / "a.parquet")
    pq.write_table(table, folder / "b.parquet", row_group_size=400)
    with pytest.raises(DataFormatError) as err:
        read_rllib(folder, unfinished="truncate")
    assert isinstance(err.value, StepTableError) and (err.value.row_group, err.value.row) == (0, 100)
    assert str(err.value).startswith(f"{folder / 'b.parquet'}: row group 0 (row 100): column 'terminateds': episode "
                                     f"'{broken}' agent 'default_agent': step t=")
    side = tmp_path / "skipped.parquet"
    with pytest.warns(SkippedLinesWarning, match=r"skipped \d+ rows of RLlib data \(flag_before_end: "):
        result = read_rllib(folder, on_error="skip", skipped_path=side, unfinished="truncate")
    assert broken not in set(result.frame["eps_id"])
    length = eps.count(broken)
    assert result.skipped.height == length and set(result.skipped["reason"]) == {"flag_before_end"}
    kept = pq.read_table(side)
    assert kept.column("eps_id").to_pylist() == [broken] * length
    rows = kept.column("rewardlab_row").to_pylist()
    groups = kept.column("rewardlab_row_group").to_pylist()
    original = pq.read_table(folder / "b.parquet")
    assert [g * 400 + r for g, r in zip(groups, rows)] == [i for i, e in enumerate(eps) if e == broken]
    assert kept.column("rewards").to_pylist() == [original.column("rewards")[g * 400 + r].as_py()
                                                  for g, r in zip(groups, rows)]


def test_parquet_without_a_column_names_the_file_and_the_columns(tmp_path):
    import pyarrow.parquet as pq

    source = sorted((NEW / "data").rglob("*.parquet"))[0]
    table = pq.read_table(source).drop_columns(["rewards"])
    path = tmp_path / "part.parquet"
    pq.write_table(table, path)
    with pytest.raises(DataFormatError) as err:
        read_rllib(path)
    assert str(err.value).startswith(f"{path}: column 'rewards': the rows lack rewards; the file "
                                     "has eps_id, agent_id, module_id, obs, actions, new_obs, terminateds")


# --- the steps contract on the loaded frame ---------------------------------------------------------------


SHAPING = '''
import torch

GAMMA = 0.99


def potential(obs):
    return -obs[:, 2].abs()  # an upright pole is worth more


def get_reward(data, contiguous):
    phi_next = torch.where(data["next", "done"], torch.zeros(()), potential(data["next", "obs"]))
    data["next", "reward"] = (GAMMA * phi_next - potential(data["obs"])).to(torch.float64)
'''


def test_a_plugin_runs_through_the_steps_contract(tmp_path):
    frame = rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE)
    path = tmp_path / "shaping.py"
    path.write_text(SHAPING)
    out = apply_plugins(frame, path, isolate=False, progress=False)
    obs = np.stack(frame["obs"].to_numpy())
    end = frame["done_recorded"].to_numpy()
    phi = -np.abs(obs[:, 2])
    nxt = np.append(phi[1:], 0.0)
    want = np.where(end, 0.0, 0.99 * nxt) - phi
    np.testing.assert_allclose(out["reward_shaping"].to_numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(out["done_shaping"].to_numpy(), end)
    assert STEPS.arrays(frame, attached(frame)).extras.keys() == {"actions"}


# --- review fixes ----------------------------------------------------------------------------------


def test_skip_mode_drops_every_episode_with_steps_out_of_order(tmp_path):
    # two episodes with a repeated step: both are skipped, and the load then passes the frame checks
    rows = lines(OLD)
    first, second = batch_of(rows[0]), batch_of(rows[3])
    first["t"][5] = first["t"][4]
    second["t"][5] = second["t"][4]
    assert first["eps_id"][5] != second["eps_id"][5]
    path = write_lines(tmp_path / "out.json", [with_batch(rows[0], first), *rows[1:3],
                                               with_batch(rows[3], second), *rows[4:]])
    with pytest.warns(SkippedLinesWarning):
        frame = rewardlab.load(path, format="rllib", options={**TRUNCATE, "on_error": "skip",
                                                              "skipped_path": tmp_path / "skipped.json"})
    assert not {first["eps_id"][5], second["eps_id"][5]} & set(frame["eps_id"])
    skipped = [json.loads(x) for x in (tmp_path / "skipped.json").read_bytes().split(b"\n")[:-1]]
    assert len([s for s in skipped if s == json.loads(with_batch(rows[3], second))]) == 1


def test_episodes_next_to_an_unreadable_line_are_dropped_across_files_and_blank_lines(tmp_path):
    rows = lines(OLD)
    spanning = batch_of(rows[1])["eps_id"][-1]
    assert spanning == batch_of(rows[2])["eps_id"][0]  # the episode goes on in the line made corrupt
    skip = {**TRUNCATE, "on_error": "skip"}
    # the episode ends a.json; its later steps are on b.json's corrupt first line
    a = write_lines(tmp_path / "a.json", [rows[0], rows[1]])
    b = write_lines(tmp_path / "b.json", [b"{corrupt", *rows[3:]])
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib([a, b], **skip)
    assert spanning not in set(result.frame["eps_id"])
    reasons = dict(zip(result.skipped["file"], result.skipped["reason"]))
    assert reasons[str(a)] == "in_broken_episode" and f"next to {b} line 1" in result.skipped["message"][0]
    # a blank line between the episode's line and the corrupt one hides nothing
    c = write_lines(tmp_path / "c.json", [rows[0], rows[1], b"", b"{corrupt", *rows[3:]])
    with pytest.warns(SkippedLinesWarning):
        result = read_rllib(c, **skip)
    assert spanning not in set(result.frame["eps_id"])


def test_a_folder_file_with_a_corrupt_first_line_is_read_not_passed_over(tmp_path):
    rows = lines(OLD)
    folder = tmp_path / "out"
    folder.mkdir()
    write_lines(folder / "a.json", rows[:6])
    b = write_lines(folder / "b.json", [b'\x00\x00{"typ', *rows[7:]])  # a cut-off line
    (folder / "params.json").write_text('{"env": "CartPole-v1"}')  # Tune's, not sample data
    with pytest.raises(DataFormatError, match=rf"{b}:1: .*\[rule: bad_json\]"):
        with pytest.warns(FilesLeftOutWarning):
            read_rllib(folder, unfinished="truncate")
    with pytest.warns(SkippedLinesWarning), pytest.warns(FilesLeftOutWarning, match=r"left out 1 file of "
                                                         rf".*: {folder / 'params.json'}$"):
        result = read_rllib(folder, unfinished="truncate", on_error="skip")
    # b.json's episodes away from the corrupt line are loaded
    later = batch_of(rows[8])["eps_id"][-1]
    assert later in set(result.frame["eps_id"])
    assert result.skipped.filter(pl.col("reason") == "bad_json")["file"].to_list() == [str(b)]


def test_unfinished_takes_the_steps_sources_values():
    with pytest.raises(DataFormatError, match=r"\[rule: unfinished\]"):
        read_rllib(OLD / "data", unfinished="error")
    with pytest.raises(ParameterError, match=r"`unfinished` should be one of .*'error', 'truncate'"):
        read_rllib(OLD / "data", unfinished="raise")


def test_a_file_that_is_not_parquet_has_its_own_rule(tmp_path):
    path = tmp_path / "rows.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(StepTableError, match=r"rows.parquet: not a Parquet file .*\[rule: bad_parquet\]"):
        read_rllib(path)


def test_a_parquet_row_without_an_episode_id_is_an_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(sorted((NEW / "data").rglob("*.parquet"))[0])
    eps = table.column("eps_id").to_pylist()
    eps[7] = None
    table = table.set_column(table.schema.get_field_index("eps_id"), "eps_id", pa.array(eps, pa.string()))
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    with pytest.raises(StepTableError, match=r"rows.parquet: row group 0: column 'eps_id': row 7 of the row "
                       r"group is empty \[rule: missing_column\]"):
        read_rllib(path, unfinished="truncate")


def test_one_name_means_one_thing_across_sources():
    from rewardlab.core.columns import reward_column
    from rewardlab.sources import rllib, steps

    # `RECORDED` is a column name (steps); RLlib's candidate *name* has its own constant
    assert not hasattr(rllib, "RECORDED")
    assert reward_column(rllib.RECORDED_NAME) == steps.RECORDED
    assert steps.RECORDED in rewardlab.load(OLD / "data", format="rllib", options=TRUNCATE).columns


def test_a_parquet_file_rewardlab_wrote_is_a_dataset_not_rllib(tmp_path):
    import pyarrow.parquet as pq

    from rewardlab.core.spec import SPEC_KEY
    from rewardlab.sources.rllib import sniff_rllib

    table = pq.read_table(sorted((NEW / "data").rglob("*.parquet"))[0])
    plain, ours = tmp_path / "plain.parquet", tmp_path / "ours.parquet"
    pq.write_table(table, plain)
    pq.write_table(table.replace_schema_metadata({SPEC_KEY: "{}"}), ours)
    assert sniff_rllib(plain) and not sniff_rllib(ours)
