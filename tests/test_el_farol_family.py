"""The El Farol family on the family core: evaluation, normalization, its exported reward-manager file and CLI.

References: ``evaluate`` is compared with the brute-force ``*_loop`` rewards of
``rewardlab.domains.el_farol.rewards`` over joint actions gathered from the frame's rows by a plain loop (no joint
view), on frames whose rows are shuffled; the exported manager file is run by the manager runner
(``apply_managers``) and compared bit for bit with ``evaluate``; an altered file must fail; the file must hold
literals only and import numpy only.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewardlab.families as families
from rewardlab.cli import main
from rewardlab.core import columns
from rewardlab.core.errors import OutputExistsError, ParameterError, RoundTripError
from rewardlab.domains import el_farol as ef
from rewardlab.domains.el_farol import (BarSetting, ElFarolFamily, ElFarolParams, SMALL, export_el_farol_manager,
                                        manager_roundtrip, simulate_bar)
from rewardlab.plugins.managers import apply_managers

LOOPS = {"global": lambda a, **o: np.repeat(ef.global_reward_loop(a, **o)[:, None], a.shape[1], axis=1),
         "local": ef.local_reward_loop, "uniform_division": ef.uniform_division_reward_loop,
         "difference": ef.difference_reward_loop}
HOME = BarSetting(agents=9, nights=4, capacity=2.5, home=True)


def _family(setting, kind, clamp=None, mean=0.0, std=1.0):
    fam = ElFarolFamily(ElFarolParams(kind=kind, clamp=clamp, nights=setting.nights, capacity=setting.capacity,
                                      home=setting.home))
    return fam.with_constants(mean, std) if (mean, std) != (0.0, 1.0) else fam


def _loop_rewards(frame: pl.DataFrame, kind: str, clamp, opts) -> np.ndarray:
    """Each row's raw reward by a plain loop: the step's joint action gathered from the rows, then the brute force."""
    steps: dict = {}
    for e, t, a, act in zip(frame["episode_id"], frame["t"], frame["agent_id"], frame["action"]):
        steps.setdefault((e, t), {})[a] = act
    out = np.empty(frame.height)
    for r, (e, t, a) in enumerate(zip(frame["episode_id"], frame["t"], frame["agent_id"])):
        agents = sorted(steps[(e, t)])
        joint = np.array([[steps[(e, t)][x] for x in agents]])
        if kind == "wonderful_life":
            values = ef.wonderful_life_reward_loop(joint, clamp=clamp, **opts)
        else:
            values = LOOPS[kind](joint, **opts)
        out[r] = values[0, agents.index(a)]
    return out


def _shuffled(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return frame[np.random.default_rng(seed).permutation(frame.height)]


def test_registered_on_the_core():
    assert families.get_family("el_farol") is ElFarolFamily
    assert isinstance(ElFarolFamily(), families.RewardFamily)
    assert {"global", "difference", "local", "wonderful_life"} <= set(ElFarolFamily.presets)
    assert ElFarolFamily.from_preset("wonderful_life").params.kind == "wonderful_life"


@pytest.mark.parametrize("setting", [SMALL, HOME], ids=["small", "home"])
@pytest.mark.parametrize("kind,clamp", [("global", None), ("local", None), ("uniform_division", None),
                                        ("difference", None), ("wonderful_life", None), ("wonderful_life", 1)])
def test_evaluate_equals_the_brute_force_in_frame_row_order(setting, kind, clamp):
    frame = _shuffled(simulate_bar(setting, episodes=2, weeks=3, seed=7), 1)  # rows in any order
    fam = _family(setting, kind, clamp, mean=0.25, std=1.5)
    got = fam.evaluate(frame, spec=ef.SPEC)
    want = (_loop_rewards(frame, kind, clamp, setting.reward_options()) - 0.25) / 1.5
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # and bit for bit the vectorized reward, put back row by row
    view = fam.prepare(frame, spec=ef.SPEC).view
    cells = (ef.agent_rewards(view.actions, kind=kind, clamp=clamp, **setting.reward_options()) - 0.25) / 1.5
    by_row = np.empty(frame.height)
    for s in range(view.steps):
        for i in range(view.n_agents):
            by_row[view.rows[s, i]] = cells[s, i]
    assert got.view(np.uint64).tolist() == by_row.view(np.uint64).tolist()


def test_a_frame_without_a_spec_reads_with_the_runners_columns():
    frame = simulate_bar(SMALL, episodes=1, weeks=2, seed=0)
    plain = pl.DataFrame(frame.to_dict())  # no spec attached
    fam = ElFarolFamily.from_preset("difference")
    assert fam.evaluate(plain).tolist() == fam.evaluate(frame).tolist()


def test_normalization_constants_and_their_provenance():
    frame = simulate_bar(SMALL, episodes=2, weeks=4, seed=2)
    fam = ElFarolFamily.from_preset("local").with_constants_from(frame)
    raw = _loop_rewards(frame, "local", None, SMALL.reward_options())
    assert fam.params.mean == pytest.approx(raw.mean(), abs=1e-12)
    assert fam.params.std == pytest.approx(raw.std(), abs=1e-12)
    prov = fam.params.provenance
    assert (prov.kind, prov.rows, prov.steps, prov.scope) == ("dataset", frame.height, frame.height, "all")
    assert prov.fingerprint.startswith("blake2b-128:") and not fam.constants_stale
    assert fam.with_params(capacity=5.0).constants_stale
    reward = fam.evaluate(frame)
    assert abs(reward.mean()) < 1e-12 and reward.std() == pytest.approx(1.0)


def test_with_columns_and_done_on_each_trials_last_step():
    frame = simulate_bar(SMALL, episodes=2, weeks=3, seed=0)
    out = ElFarolFamily.from_preset("difference").with_columns(frame, "d")
    assert out["done_d"].to_list() == (frame["t"] == 2).to_list()
    assert out["reward_d"].to_list() == ElFarolFamily.from_preset("difference").evaluate(frame).tolist()


def test_parameters_are_checked():
    assert ElFarolParams(kind="WL", clamp=0).kind == "wonderful_life" and ElFarolParams(kind="G").kind == "global"
    with pytest.raises(ParameterError, match="`kind`"):
        ElFarolParams(kind="team")
    with pytest.raises(ParameterError, match="`clamp` should be None unless"):
        ElFarolParams(kind="difference", clamp=0)
    with pytest.raises(ParameterError, match="`clamp` should be None or a night in 0..5"):
        ElFarolParams(kind="wonderful_life", clamp=6)
    assert ElFarolParams(kind="wonderful_life", clamp=6, home=True).clamp == 6
    with pytest.raises(ParameterError, match="`nights`"):
        ElFarolParams(nights=0)
    with pytest.raises(ParameterError, match="`capacity`"):
        ElFarolParams(capacity=-1.0)
    with pytest.raises(ParameterError, match="`home`"):
        ElFarolParams(home="yes")
    with pytest.raises(ParameterError, match="should be a parameter"):
        ElFarolFamily().with_params(capcity=3.0)
    with pytest.raises(ParameterError, match="`std`"):
        ElFarolFamily().with_constants(0.0, 1e-300)  # (G - mean) / std beyond the reward limit


def test_the_reward_manager_is_the_family_step_by_step():
    frame = simulate_bar(HOME, episodes=1, weeks=4, seed=5)
    fam = _family(HOME, "wonderful_life", clamp=2, mean=0.1, std=0.7)
    view = fam.prepare(frame).view
    manager = fam.reward_manager()
    manager.reset()
    got = np.array([[manager.get_reward(i, {}, view.actions[s])[0] for i in range(view.n_agents)]
                    for s in range(view.steps)])
    want = (ef.wonderful_life_reward(view.actions, clamp=2, **HOME.reward_options()) - 0.1) / 0.7
    assert got.view(np.uint64).tolist() == want.view(np.uint64).tolist()
    g = ef.global_reward(view.actions, **HOME.reward_options())
    assert manager.world_utility == g.tolist()  # PRLT's log of G, one per week


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(ef.REWARD_KINDS), agents=st.integers(1, 12),
       nights=st.integers(1, 9), capacity=st.sampled_from([0.5, 4.0, 7.3]), home=st.booleans(),
       clamp_away=st.booleans(), std=st.sampled_from([1.0, 0.37]))
def test_export_round_trip_bit_for_bit_in_the_manager_runner(tmp_path_factory, seed, kind, agents, nights, capacity,
                                                             home, clamp_away, std):
    setting = BarSetting(agents=agents, nights=nights, capacity=capacity, home=home)
    clamp = None if kind != "wonderful_life" or clamp_away else seed % (nights + int(home))
    fam = _family(setting, kind, clamp, mean=0.125, std=std)
    frame = simulate_bar(setting, episodes=2, weeks=3, seed=seed % 1000, policy="preference")
    path = tmp_path_factory.mktemp("el_farol") / "bar.py"
    result = export_el_farol_manager(fam, path, data=frame)
    assert result.roundtrip.ok, str(result.roundtrip)
    applied = apply_managers(frame, path, isolate=False)  # again, here, against the family
    assert applied["reward_bar"].to_numpy().view(np.uint64).tolist() == fam.evaluate(frame).view(np.uint64).tolist()
    assert applied["done_bar"].to_list() == (frame["t"] == 2).to_list()


def test_export_returns_the_path_and_refuses_an_existing_file(tmp_path):
    frame = simulate_bar(SMALL, episodes=2, weeks=2, seed=0)
    path = tmp_path / "bar.py"
    assert export_el_farol_manager(ElFarolFamily(), path, data=frame).path == path
    with pytest.raises(OutputExistsError):
        export_el_farol_manager(ElFarolFamily(), path)
    assert export_el_farol_manager(ElFarolFamily.from_preset("local"), path, overwrite=True).path == path
    assert "_RL_KIND = 1" in path.read_text()


def test_an_altered_file_fails_the_round_trip(tmp_path, monkeypatch):
    frame = simulate_bar(HOME, episodes=2, weeks=3, seed=4)
    fam = _family(HOME, "wonderful_life", clamp=1, mean=0.5, std=2.0)
    prepared = fam.prepare(frame)
    expected = (fam.evaluate(prepared), prepared.done("all"))
    text = fam.render()
    for old, new in (("_RL_CAPACITY = 2.5", "_RL_CAPACITY = 2.5000000001"), ("_RL_MEAN = 0.5", "_RL_MEAN = 0.4"),
                     ("counts[_RL_NIGHTS] = 0", "counts[_RL_NIGHTS] = 1"),
                     ("return self.rewards[agent], False", "return self.rewards[agent], agent == -1 or len("
                      "self.world_utility) == 2")):
        assert old in text
        path = tmp_path / "altered.py"
        path.write_text(text.replace(old, new))
        rt = manager_roundtrip(path, frame, expected)
        assert not rt.identical and not rt.ok, old
    assert manager_roundtrip(tmp_path / "altered.py", frame, expected).differing[1] > 0  # finished early: dones
    # the export itself refuses a file that differs, and writes nothing
    monkeypatch.setattr(ElFarolFamily, "render", lambda self, **kw: text.replace("_RL_MEAN = 0.5", "_RL_MEAN = 0.4"))
    with pytest.raises(RoundTripError, match="DIFFERS"):
        export_el_farol_manager(fam, tmp_path / "never.py", data=frame)
    assert not (tmp_path / "never.py").exists()


def test_the_file_holds_literals_only():
    text = _family(HOME, "wonderful_life", clamp=3, mean=0.1, std=0.3).render(source='a note\nimport os\x00"""')
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [(a.name, a.asname) for n in imports for a in n.names] == [("numpy", "_RL_numpy")]
    literals = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            assert node.targets[0].id.startswith("_RL_")
            literals[node.targets[0].id] = ast.literal_eval(node.value)
        else:
            assert isinstance(node, (ast.Import, ast.ClassDef)) and getattr(node, "name", "RewardManager") == \
                "RewardManager"
    assert literals == {"_RL_KIND": 4, "_RL_NIGHTS": 4, "_RL_CAPACITY": 2.5, "_RL_HOME": 1, "_RL_CLAMP": 3,
                        "_RL_MEAN": 0.1, "_RL_STD": 0.3}
    code = text.split("\n\n", 1)[1]
    assert "rewardlab" not in code and "import os" not in code  # only the header names them, as comments
    assert all(line.startswith("#") for line in text.split("\n\n", 1)[0].splitlines())
    # every parameter value reaches the code only as these literals
    body = code.split("class RewardManager", 1)[1]
    assert "2.5" not in body and "0.1" not in body and "0.3" not in body


def test_a_stay_home_action_in_a_file_without_home_is_an_error(tmp_path):
    frame = simulate_bar(HOME, episodes=1, weeks=3, seed=0)
    frame = frame.with_columns(pl.lit(HOME.nights).alias("action"))  # everyone at home: action K
    path = tmp_path / "nohome.py"
    export_el_farol_manager(_family(BarSetting(agents=9, nights=4, capacity=2.5), "difference"), path)
    from rewardlab.core.errors import PluginRuntimeError

    with pytest.raises(PluginRuntimeError, match="an action is not a night in 0..3"):
        apply_managers(frame, path, isolate=False)


def test_cli_export_el_farol(tmp_path, capsys):
    data = tmp_path / "bar.parquet"
    frame = simulate_bar(HOME, episodes=3, weeks=4, seed=9)
    frame.write_parquet(data)
    out = tmp_path / "bar_wl.py"
    argv = ["export", "el-farol", "--preset", "wonderful_life", "--capacity", "2.5", "--nights", "4", "--home",
            "--clamp", "2", "--data", str(data), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "identical to rewardlab's rewards and dones on all 108 agent-steps" in printed
    assert "check-plugin: PASS" in printed
    fam = _family(HOME, "wonderful_life", clamp=2)
    body = lambda s: s.split("\n\n", 1)[1]  # noqa: E731  (the header's time differs)
    assert body(out.read_text()) == body(fam.render())
    applied = apply_managers(frame, out, isolate=False)
    assert applied[columns.reward_column("bar_wl")].to_list() == fam.evaluate(frame).tolist()
    assert main(argv) == 2  # exists: refused without --overwrite
    assert main([*argv, "--overwrite"]) == 0
    capsys.readouterr()
    assert main(["export", "el-farol", "--kind", "D", "--clamp", "1", "--out", str(tmp_path / "x.py")]) == 2
    assert "`--clamp` should be None unless kind is 'wonderful_life'" in capsys.readouterr().err
    assert main(["export", "el-farol", "--format", "steps", "--out", str(tmp_path / "x.py")]) == 2
    assert not (tmp_path / "x.py").exists()


def test_raw_extremes_bound_every_reward():
    actions = ef.simulate_actions(HOME, episodes=3, weeks=30, seed=1).reshape(-1, HOME.agents)
    for kind in ef.REWARD_KINDS:
        for clamp in ((None, 0, 2) if kind == "wonderful_life" else (None,)):
            params = ElFarolParams(kind=kind, clamp=clamp, nights=4, capacity=2.5, home=True)
            (high, *_), (low, *_) = params.raw_extremes()
            values = ef.agent_rewards(actions, kind=kind, clamp=clamp, **HOME.reward_options())
            assert low <= values.min() and values.max() <= high and math.isfinite(high)


def test_the_export_refuses_another_family_and_a_bad_overwrite(tmp_path):
    with pytest.raises(ParameterError, match=r"^`family` should be an ElFarolFamily. Received 'str'."):
        export_el_farol_manager("difference", tmp_path / "m.py")
    with pytest.raises(ParameterError, match=r"^`overwrite` should be True or False. Received 'yes'."):
        export_el_farol_manager(ElFarolFamily(), tmp_path / "m.py", overwrite="yes")
    assert not (tmp_path / "m.py").exists()

