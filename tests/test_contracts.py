"""Plug-in contracts as a registry: kanachan's unchanged, the steps contract on a hand-built step table."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
import torch
from tensordict import TensorDict

import rewardlab
from rewardlab.plugins.batch_modes import BATCH_MODES, episode_ends, plan_batches
from rewardlab.contracts.kanachan.batching import IN_KEYS
from rewardlab.contracts import (
    KANACHAN, STEPS, Contract, StepsContract, contract_for, get_contract, register_contract,
    registered_contracts,
)
from rewardlab.contracts.steps import StepsArrays
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.core.errors import (
    ContractError, ParameterError, PluginLoadError, PluginRuntimeError, SpecError,
)
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin
from rewardlab.plugins.shards import split_shards
from rewardlab.plugins.runner import Locator, run_plugins

from conftest import PLUGINS_DIR

# the toy rewards are not normalized; the scale warning is tested in test_plugins_apply.py
pytestmark = pytest.mark.filterwarnings("ignore::rewardlab.core.errors.RewardScaleWarning")

SPEC = FrameSpec(
    name="toy_steps", episode=("ep",), step="t", terminated="term", truncated="trunc",
    states=(StateColumn("obs", 2, "float32", 0.0), StateColumn("pos", None, "int16", -1)),
    columns=("action", "label"), contract="steps")

# episode 7: 3 steps, terminated; episode 3: 2 steps, truncated; episode 9: 4 steps, terminated
EPISODES = ((7, 3, "term"), (3, 2, "trunc"), (9, 4, "term"))


def steps_frame() -> pl.DataFrame:
    rows = []
    for ep, length, how in EPISODES:
        for t in range(length):
            last = t == length - 1
            rows.append({"ep": ep, "t": t, "obs": [ep + t / 10, -t], "pos": 10 * ep + t,
                         "action": (ep + t) % 3, "label": f"e{ep}",
                         "term": last and how == "term", "trunc": last and how == "trunc"})
    return pl.DataFrame(rows, schema_overrides={"obs": pl.Array(pl.Float32, 2), "pos": pl.Int16})


@pytest.fixture
def frame():
    return attach(steps_frame(), SPEC)


def write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\n\n\ndef get_reward(data, contiguous):\n" + body)
    return path


# progress to the next observation, plus 1 on a terminal step: the same whatever the batching
PROGRESS = ('    gain = data["next", "obs"][:, 0] - data["obs"][:, 0]\n'
            '    data["next", "reward"] = gain + data["next", "terminated"].float()\n')


# --- the registry ------------------------------------------------------------------------


def test_registry_names_and_unknown_contract_message():
    assert list(registered_contracts()) == ["kanachan", "steps"]
    assert get_contract("steps") is STEPS and get_contract(KANACHAN) is KANACHAN
    with pytest.raises(ParameterError) as err:
        get_contract("atari")
    assert str(err.value) == (
        "`contract` should be one of the registered contracts 'kanachan', 'steps'. Received "
        "'atari'. Register it with rewardlab.contracts.register_contract(...) first.")
    with pytest.raises(ParameterError, match="names a contract already registered"):
        register_contract(StepsContract())
    with pytest.raises(ParameterError, match="should be a rewardlab.contracts.Contract instance"):
        register_contract("steps")


def test_the_contract_comes_from_the_spec_or_the_argument(frame, small_frame):
    assert contract_for(frame)[0] is STEPS
    assert contract_for(small_frame)[0] is KANACHAN  # recognized by its columns
    assert contract_for(frame, "kanachan")[0] is KANACHAN
    plain = steps_frame()  # a new object: no spec attached, none registered
    with pytest.raises(SpecError, match="the frame has no spec.*rewardlab.FrameSpec"):
        contract_for(plain)
    assert contract_for(plain, spec=SPEC) == (STEPS, SPEC)
    bare = FrameSpec(name="bare", episode=("ep",), terminated="term", truncated="trunc")
    with pytest.raises(SpecError) as err:
        contract_for(plain, spec=bare)
    assert str(err.value) == ("the frame's spec 'bare' names no plug-in contract, so rewardlab cannot "
                              "tell what a plug-in receives. Pass contract= one of 'kanachan', "
                              "'steps', or declare FrameSpec(..., contract=...)")


# --- kanachan: the same TensorDicts and runs as before -------------------------------------------


@pytest.mark.parametrize("convention", ["offline", "simulation"])
def test_kanachan_contract_builds_todays_tensordicts(small_frame, convention):
    arrays = KANACHAN.arrays(small_frame, None)
    rows = np.random.default_rng(3).permutation(small_frame.height)[:17]
    for r in (rows, slice(2, 30), None):
        got = arrays.tensordict(r, **KANACHAN.options(convention))
        want = rewardlab.to_tensordict(small_frame, rows=r, convention=convention)
        assert list(got.keys(include_nested=True, leaves_only=True)) == list(
            want.keys(include_nested=True, leaves_only=True))
        for key, value in want.items(include_nested=True, leaves_only=True):
            assert got[key].dtype == value.dtype and torch.equal(got[key], value)
    assert KANACHAN.in_keys(arrays) == IN_KEYS
    eog, eor = KANACHAN.done_flags(arrays, slice(0, small_frame.height), convention=convention)
    td = arrays.tensordict(convention=convention)
    np.testing.assert_array_equal(eog, td["next", "done"].numpy())
    np.testing.assert_array_equal(eor, td["next", "end_of_round"].numpy())


@pytest.mark.parametrize("mode", BATCH_MODES)
def test_kanachan_runs_named_or_default_agree(small_frame, mode):
    plug = load_plugin(PLUGINS_DIR / "round_delta.py")
    arrays = rewardlab.FrameArrays(small_frame)
    ends = episode_ends(arrays.end_of_game)
    outs = [run_plugins(arrays, Locator(small_frame), [plug],
                        plan_batches(mode, ends, batch_size=5, seed=1), mode=mode, batch_size=5,
                        **kw)[0] for kw in ({}, {"contract": "kanachan", "convention": "offline"})]
    np.testing.assert_array_equal(outs[0].rewards, outs[1].rewards)
    np.testing.assert_array_equal(outs[0].dones, outs[1].dones)
    assert outs[0].convention == outs[1].convention == "offline"


def _nodes(td, prefix=()):
    """``(key, node)`` of a TensorDict and every TensorDict nested in it, in key order."""
    yield prefix, td
    for key, value in td.items():
        if isinstance(value, TensorDict):
            yield from _nodes(value, (*prefix, key))


def _described(td):
    """Every node of a TensorDict (its key path, type, batch size, device, names, lock, keys) and its leaves."""
    nodes = [(key, type(node), type(node.batch_size), node.batch_size, node.device, node.names, node.is_locked,
              list(node.keys())) for key, node in _nodes(td)]
    return nodes, dict(td.items(include_nested=True, leaves_only=True))


@pytest.mark.parametrize("contract", ["kanachan", "steps"])
def test_each_call_gets_the_tensordict_the_constructor_builds(tmp_path, small_frame, frame, contract):
    # the runner builds each call's TensorDict without the constructor's checks (runner._nest); it must be
    # the one TensorDict(nested dict, batch_size=[B], device="cpu") builds, node for node, leaf for leaf
    data_frame, spec = (small_frame, None) if contract == "kanachan" else (frame, SPEC)
    seen = []

    def get_reward(data, contiguous):
        want = TensorDict(data.to_dict(), batch_size=[data.batch_size[0]], device="cpu")
        seen.append((_described(data), _described(want)))
        data["next", "reward"] = torch.zeros(data.batch_size, dtype=torch.float64)

    plug = dataclasses.replace(load_plugin(write(tmp_path, "zero", '    pass\n')), get_reward=get_reward)
    chosen = get_contract(contract)
    arrays = chosen.arrays(data_frame, spec)
    plan = plan_batches("episodes", episode_ends(chosen.episode_flags(arrays)), batch_size=1)
    run_plugins(arrays, Locator(data_frame), [plug], plan, mode="episodes", batch_size=None, contract=chosen)
    assert len(seen) > 1
    for (got_nodes, got_leaves), (want_nodes, want_leaves) in seen:
        assert got_nodes == want_nodes
        assert all(node[1] is TensorDict and node[2] is torch.Size for node in got_nodes)
        assert list(got_leaves) == list(want_leaves)
        assert all(got_leaves[k] is v for k, v in want_leaves.items())


# --- the steps contract's TensorDict ---------------------------------------------------------


def _loop_next(values, ends, pad):
    """The next state, one row at a time: the following row, or ``pad`` after an episode's end."""
    out = []
    for i in range(len(values)):
        out.append(np.full_like(values[i], pad) if ends[i] else values[i + 1])
    return np.array(out)


def test_steps_tensordict_keys_shapes_dtypes_and_padding(frame):
    td = StepsArrays(frame, SPEC).tensordict()
    assert list(td.keys(include_nested=True, leaves_only=True)) == [
        "obs", "pos", "action", ("next", "obs"), ("next", "pos"), ("next", "done"),
        ("next", "terminated"), ("next", "truncated")]  # the string column is not handed over
    assert td.batch_size == torch.Size([9])
    assert (td["obs"].dtype, td["obs"].shape) == (torch.float32, torch.Size([9, 2]))
    assert (td["pos"].dtype, td["next", "pos"].dtype, td["action"].dtype) == (
        torch.int16, torch.int16, torch.int64)
    ends = np.array([False, False, True, False, True, False, False, False, True])
    np.testing.assert_array_equal(td["next", "done"].numpy(), ends)
    np.testing.assert_array_equal(td["next", "terminated"].numpy(), ends & (np.arange(9) != 4))
    np.testing.assert_array_equal(td["next", "truncated"].numpy(), np.arange(9) == 4)
    obs = frame["obs"].to_numpy()
    np.testing.assert_array_equal(td["next", "obs"].numpy(), _loop_next(obs, ends, 0.0))
    np.testing.assert_array_equal(td["next", "pos"].numpy(),
                                  _loop_next(frame["pos"].to_numpy(), ends, -1))
    assert td["next", "pos"].tolist() == [71, 72, -1, 31, -1, 91, 92, 93, -1]


def test_steps_next_states_of_a_kanachan_frame_equal_kanachans_builder(small_frame):
    """An independent check of the padding: kanachan's own builder (pinned by the golden test)."""
    from rewardlab.sources.kanachan.schema import KANACHAN_SPEC

    rows = np.random.default_rng(5).permutation(small_frame.height)
    steps = StepsArrays(small_frame, KANACHAN_SPEC).tensordict(rows)
    kanachan = rewardlab.to_tensordict(small_frame, rows=rows)
    for name in ("sparse", "numeric", "progression", "candidates"):
        assert torch.equal(steps[name].int(), kanachan[name])
        assert torch.equal(steps["next", name].int(), kanachan["next", name])
    assert torch.equal(steps["next", "done"], kanachan["next", "done"])
    assert not steps["next", "truncated"].any()


def test_steps_gathered_rows_equal_the_whole_batch_rows(frame):
    arrays = StepsArrays(frame, SPEC)
    whole = arrays.tensordict()
    rows = np.array([8, 2, 3, 4, 0])
    for r, picked in ((rows, rows), (slice(3, 9), np.arange(3, 9)), (slice(0, 9, 2), np.arange(0, 9, 2))):
        part = arrays.tensordict(r)
        for key, value in whole.items(include_nested=True, leaves_only=True):
            assert torch.equal(part[key], value[torch.from_numpy(picked)]), key
    td = arrays.tensordict(slice(0, 3))
    td["obs"].fill_(5.0)  # a plug-in's write never reaches the frame's arrays
    assert torch.equal(arrays.tensordict(slice(0, 3))["obs"], whole["obs"][:3])
    with pytest.raises(ParameterError, match=r"`rows` should be positions in \[0, 9\)"):
        arrays.tensordict(np.array([9]))


def test_steps_arrays_need_a_spec_and_a_valid_frame(frame):
    with pytest.raises(SpecError, match="the steps contract needs the frame's spec"):
        STEPS.arrays(frame, None)
    bad = frame.with_columns(term=pl.Series([False] * 9))
    with pytest.raises(SpecError, match="column 'term', row 2: no terminal flag fires"):
        STEPS.arrays(bad, SPEC)


# --- steps plug-ins through apply_plugins and check_plugin ---------------------------------------


@pytest.mark.parametrize("mode", BATCH_MODES)
def test_steps_plugin_in_every_batch_mode(tmp_path, frame, mode):
    path = write(tmp_path, "progress", PROGRESS)
    out = apply_plugins(frame, path, batch_mode=mode, batch_size=2, isolate=False, progress=False)
    obs = frame["obs"].to_numpy()[:, 0]
    ends = frame["term"].to_numpy() | frame["trunc"].to_numpy()
    want = [(0.0 if ends[i] else obs[i + 1]) - obs[i] + float(frame["term"][i]) for i in range(9)]
    np.testing.assert_allclose(out["reward_progress"].to_numpy(), want, rtol=1e-6)
    assert out.schema["reward_progress"] == pl.Float32
    np.testing.assert_array_equal(out["done_progress"].to_numpy(), ends)


def test_steps_plugin_passes_check_plugin_in_a_child(tmp_path, frame):
    report = check_plugin(frame, write(tmp_path, "progress", PROGRESS), batch_sizes=(1, 4))
    assert report.ok, str(report)
    labels = [r.label for r in report.runs]
    assert labels[:3] == ["episodes", "episodes (contiguous=True)", "sequential x1"]
    assert not any("simulation" in label or "offline" in label for label in labels)
    assert all(r.convention is None for r in report.runs)
    assert "batch invariance: ok" in str(report)


def test_batch_dependent_steps_plugin_is_reported(tmp_path, frame):
    path = write(tmp_path, "centred", '    x = data["obs"][:, 0]\n'
                 '    data["next", "reward"] = x - x.mean()\n')
    report = check_plugin(frame, path, batch_sizes=(2,), isolate=False)
    assert not report.ok and report.differences
    assert "the plug-in computes statistics (`mean` on line 6)" in report.hints[0]


def test_cleared_done_at_an_episode_end_is_reported(tmp_path, frame):
    path = write(tmp_path, "nodone", '    data["next", "reward"] = torch.zeros(data.batch_size)\n'
                 '    data["next", "done"] = data["next", "terminated"].clone()\n')
    with pytest.raises(ContractError) as err:
        apply_plugins(frame, path, isolate=False, progress=False)
    text = str(err.value)
    assert ('data["next", "done"] is False on the last step of an episode (batch row 1, where '
            'data["next", "truncated"] is True; 1 such row in the batch): a plug-in may set done '
            "earlier") in text
    assert "offending transition: frame row 4 (ep 3, t 1)" in text and "[rule: done_last_step]" in text
    # the batch is described in the steps contract's words, not kanachan's
    assert "in batch 1 of mode 'episodes' (whole episodes, one per call, contiguous=False;" in text
    assert "kanachan" not in text
    report = check_plugin(frame, path, batch_sizes=(4,), isolate=False)
    assert [p[0] for p in report.problems] == ["done_last_step"] and not report.ok


def test_setting_done_early_is_allowed(tmp_path, frame):
    path = write(tmp_path, "early", '    data["next", "reward"] = torch.zeros(data.batch_size)\n'
                 '    data["next", "done"] = data["next", "done"] | (data["pos"] % 2 == 0)\n')
    out = apply_plugins(frame, path, isolate=False, progress=False)
    # pos is 70, 71, 72 | 30, 31 | 90, 91, 92, 93; episodes end at rows 2, 4, 8
    assert out["done_early"].to_list() == [True, False, True, True, True, True, False, True, True]


@pytest.mark.parametrize("strict", [False, True])
def test_steps_in_fields_must_not_change(tmp_path, frame, strict):
    path = write(tmp_path, "writer", '    data["next", "reward"] = torch.zeros(data.batch_size)\n'
                 '    data["next", "pos"].add_(1)\n')
    report = check_plugin(frame, path, batch_sizes=(4,), isolate=False, strict=strict)
    [(rule, message, _, _)] = report.problems
    assert rule == "in_changed"
    assert message.startswith('changed the IN field data["next", "pos"] in place: at batch row 0 71 '
                              "became 72; IN fields must not be changed")


def test_missing_reward_and_wrong_dtype_are_reported(tmp_path, frame):
    path = write(tmp_path, "ints", '    data["next", "reward"] = data["action"]\n')
    with pytest.raises(ContractError, match=r"should have dtype float16, float32 or float64; got "
                       r"torch.int64.*\[rule: reward_dtype\]"):
        apply_plugins(frame, path, isolate=False, progress=False)


def test_convention_is_refused_by_the_steps_contract(tmp_path, frame):
    path = write(tmp_path, "progress", PROGRESS)
    with pytest.raises(ParameterError) as err:
        apply_plugins(frame, path, convention="simulation", isolate=False, progress=False)
    assert str(err.value).startswith(
        "`convention` is not an option of the 'steps' contract: it builds its TensorDicts one way "
        "only (the kanachan contract's 'offline' / 'simulation' conventions are kanachan's). "
        "Received 'simulation'.")


def test_explicit_spec_and_contract_arguments(tmp_path):
    plain = steps_frame()
    path = write(tmp_path, "progress", PROGRESS)
    with pytest.raises(SpecError, match="the frame has no spec"):
        apply_plugins(plain, path, isolate=False, progress=False)
    with pytest.raises(SpecError, match="the steps contract needs the frame's spec"):
        apply_plugins(plain, path, contract="steps", isolate=False, progress=False)
    out = apply_plugins(plain, path, spec=SPEC, isolate=False, progress=False)
    assert out["reward_progress"].null_count() == 0
    with pytest.raises(ParameterError, match="`contract` should be one of the registered contracts"):
        check_plugin(plain, path, spec=SPEC, contract="gym")


# --- a contract of one's own -------------------------------------------------------------------


class OneArgument(StepsContract):
    """The steps TensorDict, with an entry point that takes the data only."""

    name = "one_argument"
    entry_point = "reward"
    parameters = ("data",)


def test_entry_point_and_signature_come_from_the_contract(tmp_path, frame):
    contract = OneArgument()
    path = write(tmp_path, "two", PROGRESS)
    with pytest.raises(PluginLoadError, match="defines no `reward`; a reward plug-in must define "
                       r"`def reward\(data\)`"):
        load_plugin(path, contract=contract)
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def reward(data, contiguous):\n    pass\n")
    with pytest.raises(PluginLoadError) as err:
        load_plugin(wrong, contract=contract)
    assert ("`reward` should accept exactly one parameter, (data), as a trainer using the steps "
            "contract calls reward(data); it is defined as reward(data, contiguous)") in str(err.value)
    good = tmp_path / "good.py"
    good.write_text("import torch\n\n\ndef reward(data):\n"
                    "    data['next', 'reward'] = data['obs'][:, 1].double()\n")
    plug = load_plugin(good, contract=contract)
    assert not plug.reads_contiguous and plug.signature == "reward(data)"
    with pytest.raises(ParameterError) as err:
        apply_plugins(frame, load_plugin(write(tmp_path, "two", PROGRESS)), contract=contract,
                      isolate=False, progress=False)
    assert str(err.value) == (
        "`plugins` should be loaded for the 'one_argument' contract, which calls reward(data); this "
        "one was loaded for get_reward(data, contiguous). Received 'two'. Pass its path, or load it "
        "with load_plugin(path, contract='one_argument').")
    out = apply_plugins(frame, good, contract=contract, isolate=False, progress=False)
    np.testing.assert_array_equal(out["reward_good"].to_numpy(), frame["obs"].to_numpy()[:, 1])
    assert isinstance(contract, Contract) and "one_argument" not in registered_contracts()
    crash = tmp_path / "crash.py"
    crash.write_text("def reward(data):\n    raise KeyError('obs2')\n")
    with pytest.raises(PluginRuntimeError, match=r"\breward raised KeyError: 'obs2' on batch 0"):
        apply_plugins(frame, crash, contract=contract, isolate=False, progress=False)


# --- the steps contract over a stream of shards ------------------------------------------------

# minus the batch mean: equal results need the very same batches
BATCH_MEAN = ('    x = data["next", "obs"][:, 0] - data["obs"][:, 0]\n'
              '    data["next", "reward"] = (x - x.mean()).double()\n')


def test_steps_shards_give_the_single_frame_rewards_bit_for_bit(tmp_path):
    """Shards of a steps table (windows and joins of StepsArrays) make the frame's batches in every mode."""
    rows = []
    rng = np.random.default_rng(3)
    for ep in range(40):
        length = int(rng.integers(1, 9))
        for t in range(length):
            last = t == length - 1
            rows.append({"ep": ep, "t": t, "obs": [float(rng.normal()), float(t)], "pos": t, "action": 0,
                         "label": "x", "term": last and ep % 3 > 0, "trunc": last and ep % 3 == 0})
    big = pl.DataFrame(rows, schema_overrides={"obs": pl.Array(pl.Float32, 2), "pos": pl.Int16})
    shards = split_shards(big, rows_per_shard=23, spec=SPEC)
    assert len(shards) > 5
    path = write(tmp_path, "batch_mean", BATCH_MEAN)
    for mode in BATCH_MODES:
        one = apply_plugins(big, path, spec=SPEC, batch_mode=mode, batch_size=7, isolate=False, progress=False)
        parts = apply_plugins(shards, path, spec=SPEC, batch_mode=mode, batch_size=7, isolate=False,
                              progress=False)
        joined = pl.concat(parts)
        same = joined["reward_batch_mean"].to_numpy().tobytes() == one["reward_batch_mean"].to_numpy().tobytes()
        assert same, mode
        assert joined["done_batch_mean"].equals(one["done_batch_mean"])
