"""The loaders and spec lookup users reach for at the top level: rewardlab.load_steps / load_rllib / spec_of."""

from __future__ import annotations

import rewardlab
from conftest import ROOT
from rewardlab.core.spec import attached


def test_load_steps_and_spec_of_at_the_top_level(tmp_path):
    path = tmp_path / "steps.csv"
    path.write_text("episode_id,t,obs,action,reward,terminated\n0,0,0.5,1,1.0,false\n0,1,0.25,0,0.0,true\n")
    frame = rewardlab.load_steps(path)
    assert frame.height == 2 and rewardlab.spec_of(frame) == attached(frame)
    assert rewardlab.spec_of(frame).episode == ("episode_id",)
    assert rewardlab.load(path).equals(frame)


def test_load_rllib_at_the_top_level():
    folder = ROOT / "data" / "rllib" / "old_stack_json" / "data"
    frame = rewardlab.load_rllib(folder, unfinished="truncate")
    assert frame.equals(rewardlab.load(folder, format="rllib", unfinished="truncate"))
    assert rewardlab.spec_of(frame).name == "rllib"
    assert rewardlab.spec_of(frame.lazy(), rewardlab.spec_of(frame)) == rewardlab.spec_of(frame)
