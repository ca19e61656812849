"""The steps scaling as a family of the family core (rewardlab.families.scaling): registered, built from presets and
parameters, rendered by render_family with the header its files have always had, and checked by family_roundtrip."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import polars as pl
import pytest

import rewardlab
import rewardlab.families as families
from rewardlab import scaling
from rewardlab._version import __version__
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import attached
from rewardlab.families.export import render_family
from rewardlab.families.rendering import KeyLiteral, render_literal
from rewardlab.families.roundtrip import family_roundtrip
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.scaling import StepsScaling, export_scaling_plugin

from test_steps_plugins import steps_frame

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def test_the_scaling_is_a_registered_family_under_one_name_everywhere():
    assert families.get_family("scaling") is StepsScaling
    assert families.registered_families()["scaling"] is StepsScaling
    assert issubclass(StepsScaling, families.RewardFamily)
    # the old place, the core and the package's lazy table give the same class
    assert scaling.StepsScaling is families.StepsScaling is rewardlab.StepsScaling
    assert scaling.ScalingParams is families.ScalingParams is StepsScaling.params_type
    assert scaling.check_scaling_key is families.scaling.check_scaling_key
    assert scaling.RECORDED_KEY == families.scaling.RECORDED_KEY == "reward_recorded"


def test_presets_and_parameters_build_the_same_scaling_as_the_constructor():
    frame = steps_frame(11)
    c = rewardlab.normalization_constants(frame, "recorded")
    assert StepsScaling.from_preset("standardize", constants=c) == StepsScaling(c)
    assert StepsScaling.from_preset("scale-only", constants=c) == StepsScaling(c, center=False)
    s = StepsScaling(c)
    assert s.params == families.ScalingParams(c) and (s.params.mean, s.params.std) == (c.mean, c.std)
    assert (s.shift, s.scale) == (c.mean, c.std)
    assert s.with_params(center=False) == StepsScaling(c, center=False)
    assert s.with_params(center=False).params.mean == 0.0
    assert s.with_params(key="action").key == "action"
    assert set(families.field_hints(families.ScalingParams)) == {"constants", "key", "center"}
    assert s.parameter_key() == "scaling: key='reward_recorded', center=True"
    assert not s.constants_stale
    assert s.params.provenance.kind == "dataset" and s.params.provenance.fingerprint == c.fingerprint
    described = s.describe()
    assert described.startswith("Steps-contract scaling (scaling): key='reward_recorded', center=True; ")
    assert f"mean={c.mean!r}, std={c.std!r}" in described and c.fingerprint in described
    # constants measured again on data, over the constants' own scope, are normalization_constants' values
    other = steps_frame(12)
    again = s.with_constants_from(other)
    assert again.constants == rewardlab.normalization_constants(other, "reward_recorded")
    assert again.with_constants_from(c) == s


def test_bad_parameters_are_named_as_the_constructor_names_them():
    frame = steps_frame(13)
    c = rewardlab.normalization_constants(frame, "recorded")
    returns = rewardlab.normalization_constants(frame, "recorded", scope="episode_return")
    with pytest.raises(ParameterError, match="`constants` should be rewardlab.NormalizationConstants.*"
                       "Pass constants=rewardlab.normalization_constants"):
        StepsScaling.from_preset("standardize")
    with pytest.raises(ParameterError, match="`preset` should be one of standardize, scale_only"):
        StepsScaling.from_preset("zscore", constants=c)
    with pytest.raises(ParameterError, match="`cente` should be a parameter of the scaling family: constants, key, "
                       "center"):
        StepsScaling(c).with_params(cente=False)
    with pytest.raises(ParameterError, match="`center` should be False for constants of scope 'episode_return'"):
        StepsScaling(returns, center=False).with_params(center=True)
    with pytest.raises(ParameterError, match="`center` should be False for constants of scope 'episode_return'"):
        StepsScaling.from_preset("standardize", constants=returns)
    with pytest.raises(ParameterError, match=r"`key` should match \[A-Za-z_\]"):
        StepsScaling(c).with_params(key="x'); import os #")
    with pytest.raises(ParameterError, match="`constants` should come from rewardlab.normalization_constants"):
        StepsScaling(c).with_constants(0.0, 2.0)
    with pytest.raises(ParameterError, match="`constants.std` should be >= 1e-300"):
        StepsScaling(dataclasses.replace(c, std=1e-310))


def test_render_family_gives_the_text_its_files_have_always_had():
    frame = steps_frame(14)
    c = rewardlab.normalization_constants(frame, "recorded", scope="episode_return")
    s = StepsScaling(c, center=False)
    text = s.render(created=WHEN, source="a note\nimport os")
    assert render_family(s, created=WHEN, source="a note\nimport os") == text
    # the former renderer's text, written out by hand: header, the one import, three literals, the body
    expected = "\n".join([
        f"# Reward plug-in for the steps contract, generated by rewardlab {__version__} on 2026-01-02 03:04:05 UTC.",
        "# Self-contained (imports torch only).  To change it, measure the constants again in rewardlab",
        "# and export again; the literals below are exactly rewardlab's values.",
        "#",
        "# reward:      (data['reward_recorded'] - shift) / scale in float64 on every step; done left as given",
        "# key:         'reward_recorded' (a root IN key of the steps contract)",
        "# shift:       0.0 (not centered)",
        f"# scale:       {c.std!r} (the population std)",
        "# constants from: rewardlab.normalization_constants of reward 'recorded', scope 'episode_return'",
        f"#   constants:   mean = {c.mean!r}, std = {c.std!r} (over {c.count:,} values)",
        "#   data:        (in memory)",
        f"#   rows:        {c.rows:,}",
        f"#   fingerprint: {c.fingerprint}",
        "# source:      a note\\nimport os",
        "",
        "import torch as _RL_torch",
        "",
        "_RL_KEY = 'reward_recorded'",
        "_RL_SHIFT = 0.0",
        f"_RL_SCALE = {c.std!r}",
        "",
        "",
        "def get_reward(data, contiguous):",
        "    raw = data[_RL_KEY].to(_RL_torch.float64)",
        '    data["next", "reward"] = (raw - _RL_SHIFT) / _RL_SCALE',
        "",
    ])
    assert text == expected
    # a state note, as every family's header may carry, comes last
    assert render_family(s, created=WHEN, state="run 3").splitlines()[13] == "# state:       run 3"


def test_a_key_is_the_only_string_written_as_a_literal():
    assert render_literal("_RL_KEY", KeyLiteral("reward_recorded")) == "'reward_recorded'"
    with pytest.raises(ParameterError, match="`_RL_MEAN` should be an int or float"):
        render_literal("_RL_MEAN", "reward_recorded")
    with pytest.raises(ParameterError, match=r"`key` should match \[A-Za-z_\]"):
        KeyLiteral("a b")
    forged = KeyLiteral("ok")
    object.__setattr__(forged, "key", "x'); import os #")  # built around validation: refused when written
    with pytest.raises(ParameterError, match=r"`_RL_KEY` should match \[A-Za-z_\]"):
        render_literal("_RL_KEY", forged)


def test_family_roundtrip_checks_an_export_in_every_batch_mode_and_catches_a_change(tmp_path):
    frame = steps_frame(15, recorded_dtype=pl.Float32)
    s = StepsScaling(rewardlab.normalization_constants(frame, "recorded"))
    result = export_scaling_plugin(s.constants, tmp_path / "scaled.py", data=frame)
    rt = family_roundtrip(s, result.path, frame)
    assert set(rt.differing) == set(BATCH_MODES) and all(d == (0, 0) for d in rt.differing.values()) and rt.ok
    assert str(rt) == str(result.roundtrip)  # the export's own check is the same round trip
    # a frame without its spec, the spec given: the family evaluates under the same spec as the file
    bare = frame.clone()
    assert attached(bare) is None
    rt = family_roundtrip(s, result.path, bare, spec=attached(frame), modes=("shuffled",))
    assert rt.ok and attached(bare) is None, str(rt)
    # an altered file differs on every row whose reward it changes
    altered = tmp_path / "altered.py"
    altered.write_text(result.text.replace("(raw - _RL_SHIFT) / _RL_SCALE", "(raw - _RL_SHIFT) / _RL_SCALE * 1.001"))
    rt = family_roundtrip(s, altered, frame, modes=("episodes", "sequential"))
    changed = int(np.count_nonzero(s.evaluate(frame)[0]))
    assert not rt.ok and all(r == changed for r, _ in rt.differing.values()), rt.differing


def test_get_reward_runs_the_file_code_on_a_steps_batch():
    import torch
    from tensordict import TensorDict

    frame = steps_frame(16)
    s = StepsScaling(rewardlab.normalization_constants(frame, "recorded"))
    raw = frame["reward_recorded"].to_numpy()
    n = raw.shape[0]
    data = TensorDict({"reward_recorded": torch.from_numpy(raw.copy()),
                       "next": TensorDict({"done": torch.zeros(n, dtype=torch.bool)}, batch_size=[n])},
                      batch_size=[n])
    s.get_reward(data, True)
    loop = np.array([(float(v) - s.constants.mean) / s.constants.std for v in raw])  # a plain loop
    np.testing.assert_array_equal(data["next", "reward"].numpy(), loop)
    np.testing.assert_array_equal(data["next", "reward"].numpy(), s.evaluate(frame)[0])
