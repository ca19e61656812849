"""Messages of the error paths added for issue 10 that no other test reads."""

from __future__ import annotations

import os

import numpy as np
import pytest

from rewardlab.plugins import isolation
from rewardlab.cli import main
from rewardlab.core.errors import ParameterError, PluginLoadError
from rewardlab.domains.mahjong.families.preset_values import preset_names
from rewardlab.plugins import apply_plugins, load_plugin, read_plugin
from rewardlab.sessions import RankingTuningSession, roundtrip_check

from conftest import PLUGINS_DIR

TOP = PLUGINS_DIR / "rank_top.py"


@pytest.mark.parametrize("kw, message", [
    (dict(isolate="yes"), "`isolate` should be True, False or None. Received 'yes'."),
    (dict(timeout=0), "`timeout` should be a number of seconds > 0, or None. Received 0."),
    (dict(timeout=True), "`timeout` should be a number of seconds > 0, or None. Received True."),
    (dict(isolate=False, timeout=5), "`timeout` needs isolate=True"),
    (dict(num_workers=-1), "`num_workers` should be an integer from 0 to 1024 (PyTorch DataLoader workers). Received -1."),
    (dict(convention="online"), "`convention` should be one of 'offline', 'simulation'. Received 'online'."),
])
def test_apply_argument_messages(small_frame, kw, message):
    with pytest.raises(ParameterError) as info:
        apply_plugins(small_frame, TOP, progress=False, **kw)
    assert message in str(info.value)


def test_plugin_file_that_is_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(PluginLoadError, match=r"is not a regular file \(a FIFO, socket or device\); name "
                       "the plug-in's .py file"):
        read_plugin(fifo)


def test_a_plugin_loaded_in_a_child_cannot_be_run_here(small_frame):
    portable = load_plugin(TOP).portable()
    with pytest.raises(ParameterError, match="should hold loaded plug-ins; this one was loaded in a child "
                       "process and has no function here. Received 'rank_top'. Pass its path instead."):
        apply_plugins(small_frame, portable, progress=False)
    with pytest.raises(ParameterError, match="`trainer_scope` should be True or False"):
        load_plugin(TOP, trainer_scope="yes")


def test_cli_contiguous_outside_episodes_and_bad_timeout(tmp_path, small_frame, capsys):
    data = tmp_path / "small.parquet"
    small_frame.write_parquet(data)
    out = tmp_path / "r.parquet"
    assert main(["apply", str(data), "--plugin", str(TOP), "--batch-mode", "sequential", "--contiguous",
                 "--out", str(out)]) == 2
    assert ("`--contiguous` applies only to --batch-mode episodes (kanachan's data loader always passes "
            "contiguous=False)") in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["check-plugin", str(TOP), "--data", str(data), "--timeout", "-1"])
    assert "--timeout: should be a number of seconds > 0; got '-1'" in capsys.readouterr().err


def test_cli_ctrl_c_is_one_line_and_status_130(monkeypatch, capsys, tmp_path, small_frame):
    data = tmp_path / "small.parquet"
    small_frame.write_parquet(data)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("rewardlab.plugins.check_plugin", interrupted)
    assert main(["check-plugin", str(TOP), "--data", str(data)]) == 130
    assert capsys.readouterr().err == "rewardlab check-plugin: interrupted\n"


def test_preset_names_of_an_unknown_family():
    with pytest.raises(ParameterError, match="`family` should be one of ranking, points, ranking_points, "
                       "round_delta. Received 'pointz'."):
        preset_names("pointz")


def test_roundtrip_argument_messages(small_frame, tmp_path):
    s = RankingTuningSession(small_frame, preset="top")
    with pytest.raises(ParameterError, match="`cancel` should be a rewardlab.sessions.CancelToken or None"):
        s.export(tmp_path / "a.py", cancel=True)
    with pytest.raises(ParameterError, match=r"`progress` should be a callable progress\(fraction, message\) "
                       "or None"):
        s.export(tmp_path / "a.py", progress="bar")
    path = s.export(tmp_path / "b.py").path
    with pytest.raises(ParameterError, match="`check_rows` should be an integer >= 1. Received 0."):
        roundtrip_check(s.family, path, small_frame, check_rows=0)
    with pytest.raises(ParameterError, match=r"`expected` should be two arrays of 56 rows \(rewards, dones\)"):
        roundtrip_check(s.family, path, small_frame, expected=(np.zeros(3), np.zeros(3, dtype=bool)))


@pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork")
def test_child_failure_texts():
    assert str(isolation.ChildFailure("cancelled", "cancelled", "batch 2")) == "was cancelled while running batch 2"
    assert str(isolation.ChildFailure("timeout", "3 s", "")) == "did not finish within 3 s; it was stopped"
