"""``rewardlab apply`` and ``rewardlab check-plugin`` round trips."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from rewardlab.cli import main
from rewardlab.plugins import apply_plugins

from conftest import PLUGINS_DIR

TOP = str(PLUGINS_DIR / "rank_top.py")
ROUNDS = str(PLUGINS_DIR / "round_delta.py")


@pytest.fixture()
def dataset(tmp_path, small_frame):
    path = tmp_path / "small.parquet"
    small_frame.write_parquet(path)
    return path


def test_apply_writes_keys_and_columns(tmp_path, dataset, small_frame, capsys):
    out = tmp_path / "rewards.parquet"
    code = main(["apply", str(dataset), "--plugin", TOP, "--plugin", ROUNDS, "--batch-mode",
                 "shuffled", "--batch-size", "5", "--seed", "3", "--out", str(out)])
    assert code == 0
    written = pl.read_parquet(out)
    assert written.columns == ["game_id", "seat", "step", "game", "end_of_round", "end_of_game",
                               "results", "reward_rank_top", "done_rank_top",
                               "reward_round_delta", "done_round_delta"]
    expected = apply_plugins(small_frame, [TOP, ROUNDS], batch_mode="shuffled", batch_size=5,
                             seed=3, progress=False).select(written.columns)
    assert written.with_columns(pl.col("game_id").cast(pl.String)).equals(
        expected.with_columns(pl.col("game_id").cast(pl.String)))
    stdout = capsys.readouterr().out
    assert f"wrote 56 transitions x 2 plug-in(s) to {out}" in stdout
    assert "  rank_top: mean " in stdout and "  round_delta: mean " in stdout


def test_apply_reads_annotation_files_and_refuses_to_overwrite(tmp_path, sample_path, capsys):
    out = tmp_path / "r.parquet"
    assert main(["apply", str(sample_path), "--plugin", TOP, "--batch-mode", "sequential",
                 "--out", str(out)]) == 0
    assert pl.read_parquet(out).height > 1000
    before = out.read_bytes()
    capsys.readouterr()
    assert main(["apply", str(sample_path), "--plugin", ROUNDS, "--out", str(out)]) == 2
    assert "already exists; pass --overwrite to replace it" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_apply_reports_a_broken_plugin_and_writes_nothing(tmp_path, dataset, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef get_reward(data, contiguous):\n"
                   "    data['next', 'reward'] = torch.zeros(data.batch_size, dtype=torch.int32)\n")
    out = tmp_path / "r.parquet"
    assert main(["apply", str(dataset), "--plugin", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rewardlab apply: error: plug-in 'bad' ({bad}): data[\"next\", \"reward\"] "
                          "should have dtype float16, float32 or float64; got torch.int32")
    assert not out.exists() and list(tmp_path.glob(".r.parquet*")) == []


def test_apply_prints_the_scale_warning(tmp_path, dataset, capsys):
    raw = tmp_path / "raw.py"
    raw.write_text("import torch\n\ndef get_reward(data, contiguous):\n"
                   "    data['next', 'reward'] = data['next', 'results'][:, 4].double()\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as outside the test suite, where rewardlab's warnings are not errors
        assert main(["apply", str(dataset), "--plugin", str(raw), "--out", str(tmp_path / "o.parquet")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rewardlab apply: warning: plug-in 'raw' (") and "rewards are far from the mean 0 / std 1" in err


def test_check_plugin_exit_status(tmp_path, dataset, capsys):
    assert main(["check-plugin", ROUNDS, "--data", str(dataset), "--batch-sizes", "3", "20"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("check-plugin 'round_delta'")
    assert "runs: episodes, episodes (contiguous=True), sequential x3, sequential x20, dataloader x3" in out
    assert out.rstrip().endswith("result: PASS")
    # --data may come before the plug-in file, too
    assert main(["check-plugin", "--data", str(dataset), ROUNDS, "--batch-sizes", "3", "20"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("result: PASS")

    trap = tmp_path / "trap.py"
    trap.write_text("import torch\n\ndef get_reward(data, contiguous):\n"
                    "    data['next', 'reward'] = data['next', 'end_of_game'].double() - 0.5\n"
                    "    data['next', 'done'] = data['next', 'end_of_round'].clone()\n")
    assert main(["check-plugin", str(trap), "--data", str(dataset), "--fast"]) == 1
    out = capsys.readouterr().out
    assert "[done_last_step]" in out and out.rstrip().endswith("result: FAIL")

    assert main(["check-plugin", str(tmp_path / "absent.py"), "--data", str(dataset)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_apply_output_serves_every_stats_scope_and_the_by_rank_plot(tmp_path, dataset, capsys):
    """The rewards table carries what stats scopes and the ranking analysis need."""
    import json

    out = tmp_path / "r.parquet"
    assert main(["apply", str(dataset), "--plugin", ROUNDS, "--out", str(out)]) == 0
    capsys.readouterr()
    for scope in ("all", "nonzero", "end_of_round", "end_of_game", "episode_return"):
        assert main(["stats", str(out), "--scope", scope, "--json"]) == 0, scope
        stats = json.loads(capsys.readouterr().out)
        assert stats, scope
    assert main(["plot", str(out), "--kind", "by-rank", "--out", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 0


def test_apply_refuses_a_batch_size_in_episodes_mode(tmp_path, dataset, capsys):
    out = tmp_path / "r.parquet"
    assert main(["apply", str(dataset), "--plugin", ROUNDS, "--batch-mode", "episodes",
                 "--batch-size", "64", "--out", str(out)]) == 2
    assert ("`--batch-size` does not apply to --batch-mode episodes (one whole episode per call). "
            "Received 64.") in capsys.readouterr().err
    assert not out.exists()
