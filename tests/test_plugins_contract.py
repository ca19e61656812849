"""Every way a plug-in can break the contract, caught after the call with the batch and the row."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from rewardlab.contracts import checks as contract
from rewardlab.core.errors import (
    ContractError, ParameterError, PluginRuntimeError, RewardScaleWarning,
)
from rewardlab.plugins import apply_plugins, load_plugin

HEAD = "import torch\n\n\n"
# +-1 on the last step of each episode (by seat parity), 0 elsewhere: mean 0, std 1, no warning
ZERO = ('data["next", "reward"] = torch.where(data["next", "end_of_game"], '
        '(data["sparse"][:, 6] % 2).double() * 2 - 1, 0.0)')


def plugin(tmp_path: Path, name: str, body: str, *, head: str = HEAD):
    path = tmp_path / f"{name}.py"
    path.write_text(head + "def get_reward(data, contiguous):\n" + textwrap.indent(textwrap.dedent(body), "    "))
    return load_plugin(path)


def contract_error(frame, plug, **kw) -> ContractError:
    with pytest.raises(ContractError) as info:
        apply_plugins(frame, plug, progress=False, **kw)
    return info.value


# --- reward ------------------------------------------------------------------


def test_reward_missing_with_hint_when_returned(tmp_path, small_frame):
    err = contract_error(small_frame, plugin(tmp_path, "ret", "return torch.zeros(data.batch_size)\n"))
    text = str(err)
    assert text.startswith(f"plug-in 'ret' ({tmp_path / 'ret.py'}): data[\"next\", \"reward\"] is missing; "
                           "get_reward should set it to a float tensor of shape [B] (it returned a "
                           "tensor of shape [5] instead: assign it, `data[\"next\", \"reward\"] = ...`, "
                           "and return None)")
    assert ("in batch 0 of mode 'episodes' (kanachan's episode replay buffer, contiguous_training_data="
            "False; rows 0-4, 5 transitions, contiguous=False)") in text
    assert "small.tsv:1" in text
    assert text.endswith("[rule: reward_missing]")


@pytest.mark.parametrize("body, rule, message", [
    ('data["next", "reward"] = "high"\n', "reward_type",
     'data["next", "reward"] should be a torch.Tensor; got NonTensorData'),
    ('data["next", "reward"] = torch.zeros(data.batch_size, dtype=torch.int64)\n', "reward_dtype",
     'data["next", "reward"] should have dtype float16, float32 or float64; got torch.int64'),
    ('data["next", "reward"] = torch.zeros(data.batch_size[0], 2)\n', "reward_shape",
     'data["next", "reward"] should have shape [B] or [B, 1] with B = 5; got [5, 2]'),
])
def test_reward_form(tmp_path, small_frame, body, rule, message):
    err = contract_error(small_frame, plugin(tmp_path, "bad", body))
    assert message in str(err)
    assert str(err).endswith(f"[rule: {rule}]")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", ["(data.batch_size[0],)", "(data.batch_size[0], 1)"])
def test_reward_forms_kanachan_accepts(tmp_path, small_frame, dtype, shape):
    plug = plugin(tmp_path, "ok", f'data["next", "reward"] = '
                  f'(data["next", "end_of_game"].to(torch.{dtype}) * 2 - 1).reshape{shape}\n')
    out = apply_plugins(small_frame, plug, progress=False)
    expected = np.where(small_frame["end_of_game"].to_numpy(), 1.0, -1.0)
    np.testing.assert_array_equal(out["reward_ok"].to_numpy(), expected)
    # kanachan keeps the dtype the plug-in returns; so does the rewards table
    assert out.schema["reward_ok"] == getattr(pl, dtype.capitalize())
    assert out.schema["done_ok"] == pl.Boolean


@pytest.mark.parametrize("value, shown", [("float('nan')", "nan"), ("float('inf')", "inf")])
def test_reward_not_finite_names_the_first_row_and_its_line(tmp_path, small_frame, value, shown):
    plug = plugin(tmp_path, "nan", f"r = torch.zeros(data.batch_size, dtype=torch.float64)\n"
                  f"r[-2:] = {value}\n"
                  'data["next", "reward"] = r\n')
    err = contract_error(small_frame, plug, batch_mode="sequential", batch_size=8)
    text = str(err)
    assert (f'data["next", "reward"] should be finite; got {shown} at batch row 6 (2 non-finite '
            "values in the batch)") in text
    assert ("in batch 0 of mode 'sequential' (kanachan's offline DataLoader, num_workers=0; rows 0-7, 8 "
            "transitions, contiguous=False)") in text
    assert "offending transition: frame row 6 (game 00000000000000000000000000000001, seat 1, step 1; " in text
    assert "small.tsv:7)" in text


def test_reward_device_is_checked():
    v = contract.check_reward(torch.zeros(3, device="meta"), 3)
    assert v.rule == "reward_device"
    assert v.message == 'data["next", "reward"] should be on the CPU; got device meta'


# --- done --------------------------------------------------------------------


def test_done_end_of_round_trap_is_named(tmp_path, small_frame):
    plug = plugin(tmp_path, "trap", ZERO + '\ndata["next", "done"] = data["next", "end_of_round"].clone()\n')
    text = str(contract_error(small_frame, plug))
    assert ('data["next", "done"] is False on the last step of an episode (batch row 4, where '
            "end_of_game is True; 1 such row in the batch), so the episode's last trajectory never "
            "ends: kanachan never checks done, and its CQL target r + gamma * Q(next) bootstraps "
            "wherever done is False, so at that game end it would bootstrap from the padding state "
            "that stands for the next state. This is the `done = end_of_round` trap: in offline data "
            "end_of_round is False on a game's last step") in text
    assert 'OR in end_of_game: `data["next", "done"] = data["next", "end_of_round"] | data["next", ' \
           '"end_of_game"]`' in text
    assert "offending transition: frame row 4 (game 00000000000000000000000000000001, seat 0, step 4;" in text
    assert text.endswith("[rule: done_last_step]")


def test_done_cleared_without_the_trap(tmp_path, small_frame):
    plug = plugin(tmp_path, "clear", ZERO + '\ndata["next", "done"][:] = False\ndata["next", "done"][0] = True\n')
    text = str(contract_error(small_frame, plug))
    assert "is False on the last step of an episode (batch row 4" in text
    assert "`done = end_of_round` trap" not in text


@pytest.mark.parametrize("body, rule, message", [
    ('data["next", "done"] = data["next", "end_of_game"].to(torch.int64)\n', "done_dtype",
     'data["next", "done"] should have dtype torch.bool; got torch.int64'),
    ('data["next", "done"] = data["next", "end_of_game"][:, None].clone()\n', "done_shape",
     'data["next", "done"] should have shape [B] with B = 5; got [5, 1]'),
    ('del data["next", "done"]\n', "done_missing",
     'data["next", "done"] was removed; it is an IN-OUT field: leave it, or set it to a bool tensor '
     "of shape [B]"),
])
def test_done_form(tmp_path, small_frame, body, rule, message):
    err = contract_error(small_frame, plugin(tmp_path, "d", ZERO + "\n" + body))
    assert message in str(err) and str(err).endswith(f"[rule: {rule}]")


def test_done_may_end_more_trajectories(tmp_path, small_frame):
    plug = plugin(tmp_path, "rounds", ZERO + '\ndata["next", "done"] |= data["next", "end_of_round"]\n')
    out = apply_plugins(small_frame, plug, progress=False, batch_mode="shuffled", batch_size=7)
    expected = small_frame["end_of_round"].to_numpy() | small_frame["end_of_game"].to_numpy()
    np.testing.assert_array_equal(out["done_rounds"].to_numpy(), expected)


def test_done_device_is_checked():
    flags = np.array([False, True])
    assert contract.check_done(torch.zeros(2, dtype=torch.bool, device="meta"), flags, flags).rule == "done_device"


# --- IN fields ----------------------------------------------------------------


def test_in_place_change_names_field_row_and_values(tmp_path, small_frame):
    plug = plugin(tmp_path, "inplace", ZERO + '\ndata["sparse"][1:, 6] += 1\n')
    err = contract_error(small_frame, plug, batch_mode="sequential", batch_size=10)
    text = str(err)
    assert ('changed the IN field data["sparse"] in place: at batch row 1, position 6 71 became 72; '
            "IN fields must not be changed") in text
    assert "in batch 0 of mode 'sequential' (kanachan's offline DataLoader, num_workers=0; rows 0-9" in text
    assert "offending transition: frame row 1 (game 00000000000000000000000000000001, seat 0, step 1;" in text
    assert text.endswith("[rule: in_changed]")


def test_in_place_write_of_identical_values_is_not_a_change(tmp_path, small_frame):
    plug = plugin(tmp_path, "same", ZERO + '\ndata["numeric"].add_(0)\ndata["next", "results"].copy_(data["next", "results"].clone())\n')
    apply_plugins(small_frame, plug, progress=False)


@pytest.mark.parametrize("body, message", [
    ('data["next", "results"] = data["next", "results"] * 2\n',
     'changed the IN field data["next", "results"] (replaced it with other values): at batch row 2, '
     "position 0 1000 became 2000"),
    ('del data["action"]\n', 'removed the IN field data["action"]; IN fields must not be changed'),
    ('data["numeric"] = data["numeric"].to(torch.int64)\n',
     'replaced the IN field data["numeric"] (torch.int32, shape [5, 6]) with a torch.int64 tensor of '
     "shape [5, 6] on cpu"),
])
def test_in_fields_replaced_or_removed(tmp_path, small_frame, body, message):
    text = str(contract_error(small_frame, plugin(tmp_path, "rep", ZERO + "\n" + body)))
    assert message in text and text.endswith("[rule: in_changed]")


def test_replacing_with_equal_values_is_fine(tmp_path, small_frame):
    plug = plugin(tmp_path, "clone", ZERO + '\ndata["next", "end_of_round"] = data["next", "end_of_round"].clone()\n')
    apply_plugins(small_frame, plug, progress=False)


def test_writes_through_numpy_need_strict(tmp_path, small_frame):
    plug = plugin(tmp_path, "np", ZERO + '\ndata["numeric"].numpy()[0, 0] = 12345\n')
    apply_plugins(small_frame, plug, progress=False)  # invisible to version counters (documented)
    text = str(contract_error(small_frame, plug, strict=True))
    assert 'changed the IN field data["numeric"] in place: at batch row 0, position 0 0 became 12345' in text


def test_first_change_and_check_in_fields_units():
    a = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    assert contract.first_change(a, a.clone()) is None
    b = a.clone()
    b[1, 2] = 9
    b[1, 0] = 7
    assert contract.first_change(a, b) == (1, (0,), 4, 7)
    assert contract.check_in_fields({"action": a[0]}, {"action": a[0].clone()}) is None


# --- exceptions ----------------------------------------------------------------


def test_runtime_error_keeps_traceback_batch_and_line(tmp_path, small_frame):
    path = tmp_path / "boom.py"
    path.write_text(textwrap.dedent("""\
        import torch


        def _scale(data):
            if int(data.batch_size[0]) > 6:
                raise ValueError("episode too long")
            return 1.0


        def get_reward(data, contiguous):
            s = _scale(data)
            data["next", "reward"] = torch.zeros(data.batch_size, dtype=torch.float64) * s
        """))
    with pytest.raises(PluginRuntimeError) as info:
        apply_plugins(small_frame, load_plugin(path), progress=False)
    err = info.value
    assert err.line == 6
    text = str(err)
    assert text.startswith(f"plug-in 'boom' ({path}, line 6): get_reward raised ValueError: episode "
                           "too long on batch 4 of mode 'episodes' (kanachan's episode replay buffer, "
                           "contiguous_training_data=False; rows 20-26, 7 transitions, "
                           "contiguous=False); first transition of the batch: frame row 20 (game "
                           "00000000000000000000000000000002, seat 0, step 0; ")
    assert "small.tsv:21)" in text
    tb = err.plugin_traceback
    assert f'File "{path}", line 11, in get_reward' in tb and f'File "{path}", line 6, in _scale' in tb
    assert "runner.py" not in tb
    assert "The plug-in's traceback:" in text


def test_runtime_error_in_shuffled_mode_lists_rows(tmp_path, small_frame):
    plug = plugin(tmp_path, "fail", "raise RuntimeError('no')\n")
    with pytest.raises(PluginRuntimeError) as info:
        apply_plugins(small_frame, plug, batch_mode="shuffled", batch_size=8, seed=1, progress=False)
    perm = np.random.default_rng(1).permutation(small_frame.height)[:8]
    shown = ", ".join(map(str, perm[:3]))
    assert (f"on batch 0 of mode 'shuffled' (a shuffling data loader (seeded); rows {shown}, ..., 8 transitions, contiguous=False); "
            f"first transition of the batch: frame row {perm[0]} (") in str(info.value)


# --- scale ----------------------------------------------------------------------


def test_reward_scale_warning_over_the_whole_run(tmp_path, small_frame):
    plug = plugin(tmp_path, "raw", """\
        seat = data["sparse"][:, 6].long() - 71
        score = data["next", "results"][:, 4:8].gather(1, seat[:, None])[:, 0].double()
        data["next", "reward"] = torch.where(data["next", "end_of_game"], score, 0.0)
        """)
    with pytest.warns(RewardScaleWarning) as record:
        apply_plugins(small_frame, plug, progress=False)
    [w] = record
    scores = small_frame.filter(pl.col("end_of_game")).select(
        pl.col("results").arr.get(4 + pl.col("seat").cast(pl.Int64)))[:, 0].to_numpy()
    assert str(w.message).startswith(
        f"plug-in 'raw' ({tmp_path / 'raw.py'}): rewards are far from the mean 0 / std 1 the "
        f"contract asks for: mean {scores.mean():,.0f}, std ")
    assert "over the 12 transitions with a nonzero reward or done" in str(w.message)


def test_reward_scale_units():
    s = contract.reward_scale(np.array([0.0, 0.0, 3.0, np.nan, -1.0]), np.array([0, 0, 1, 0, 1], bool))
    assert (s.mean, s.std, s.count, s.count_all) == (1.0, 2.0, 2, 4)
    assert not s.far  # |mean| 1 is at the limit, std 2 inside [0.25, 4]
    assert contract.reward_scale(np.array([3.0, 0.0]), np.array([True, True])).far  # mean 1.5
    s = contract.reward_scale(np.array([1.0, -1.0]), np.array([True, True]))
    assert not s.far
    assert contract.reward_scale(np.zeros(3), np.array([0, 0, 1], bool)).far  # constant rewards
    assert contract.reward_scale(np.array([5.0, 15.0]), np.ones(2, bool)).far  # std 5


def test_compare_outputs_units():
    d = contract.compare_outputs(np.array([0.0, np.nan, 1.0]), np.array([0, 0, 1], bool),
                                 np.array([0.0, np.nan, 1.0 + 1e-12]), np.array([0, 1, 1], bool))
    assert d == {"rewards": 0, "dones": 1, "max_abs": 0.0, "first_row": 1}


# --- arguments ----------------------------------------------------------------------


def test_argument_validation(tmp_path, small_frame):
    good = plugin(tmp_path, "g", ZERO + "\n")
    cases = [
        (dict(frame=small_frame.lazy()), "`frame` should be an eager polars.DataFrame (collect it first)"),
        (dict(batch_mode="bulk"), "`batch_mode` should be one of 'episodes', 'sequential', 'dataloader', "
                                  "'fragments', 'shuffled'. Received 'bulk'."),
        (dict(batch_size=0), "`batch_size` should be an integer from 1 to 1099511627776 (one batch of that size already holds every row). Received 0."),
        (dict(seed=-2), "`seed` should be an integer >= 0. Received -2."),
        (dict(strict="yes"), "`strict` should be True or False. Received 'yes'."),
        (dict(plugins=[]), "`plugins` should name at least one plug-in. Received []."),
        (dict(plugins=3), "`plugins` should be a Plugin, a path to a plug-in file, or a sequence of them"),
        (dict(plugins=[good, good]), "`plugins` should have distinct names (they name the reward "
                                     "columns); repeated: g. Received ['g', 'g']. Load one with "
                                     "load_plugin(path, name=...)."),
        (dict(plugins=[tmp_path]), "`path` should name a plug-in file, not a folder"),
    ]
    for kw, message in cases:
        args = {"frame": small_frame, "plugins": good} | kw
        frame, plugins = args.pop("frame"), args.pop("plugins")
        with pytest.raises(ParameterError) as info:
            apply_plugins(frame, plugins, progress=False, **args)
        assert message in str(info.value), kw
