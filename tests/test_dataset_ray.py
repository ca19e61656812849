"""A dataset folder through the ray engine: apply, statistics, per-episode tables and check-plugin give what
the embedded engine gives, on a local 2-CPU Ray (the ``ray_local`` fixture; skipped without the ray extra
outside CI)."""

from __future__ import annotations

import pytest

from rewardlab.analysis.episode_parts import dataset_episode_returns
from rewardlab.analysis.stats_parts import dataset_reward_stats
from rewardlab.plugins.apply_parts import apply_to_dataset
from rewardlab.plugins.check_parts import check_plugin_dataset
from rewardlab.sources.datasets import open_dataset
from rewardlab.sources.datasets.convert import convert_to_parts

PLUGINS = ["data/plugins/rank_top.py", "data/plugins/raw_points.py"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("ray-parts") / "corpus"
    convert_to_parts("data/sample.tsv.gz", out, part_rows=30_000, progress=False)
    return out


@pytest.fixture(scope="module")
def rewards(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("ray-rewards") / "rewards"
    apply_to_dataset(corpus, PLUGINS, out, workers=2, progress=False)
    return out


@pytest.mark.parametrize("mode", ["episodes", "sequential"])
def test_apply_through_ray_equals_the_embedded_engine_bit_for_bit(ray_local, corpus, rewards, tmp_path, mode):
    out = tmp_path / "ray-rewards"
    apply_to_dataset(corpus, PLUGINS, out, batch_mode=mode, engine="ray", workers=2, progress=False)
    want = rewards if mode == "episodes" else tmp_path / "embedded"
    if mode != "episodes":
        apply_to_dataset(corpus, PLUGINS, want, batch_mode=mode, workers=2, progress=False)
    assert open_dataset(out).load().equals(open_dataset(want).load())
    assert not out.with_name(out.name + ".partial").exists()


def test_statistics_and_episode_returns_through_ray_equal_the_embedded_engine(ray_local, rewards):
    scopes = ("all", "episode_return")
    assert dataset_reward_stats(rewards, scopes=scopes, engine="ray", workers=2) == \
        dataset_reward_stats(rewards, scopes=scopes, workers=2)
    assert dataset_episode_returns(rewards, engine="ray", workers=2).equals(dataset_episode_returns(rewards))


def test_check_plugin_through_ray_merges_every_part(ray_local, corpus):
    report = check_plugin_dataset(corpus, PLUGINS[0], batch_sizes=(64,), engine="ray", workers=2)
    assert report.ok and report.parts == (len(open_dataset(corpus)),) * 2
