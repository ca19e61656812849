"""Behave like kanachan's real trainer, and never pass a bad plug-in off as good (issue 10).

Each test here failed before the change it pins: the trainer's globals, the
``contiguous`` flag, reward dtypes, the simulation convention, plug-ins that
exit, hang or misbehave, and plug-ins applied together.
"""

from __future__ import annotations

import os
import signal
import textwrap
import time

import numpy as np
import polars as pl
import pytest
import torch

from rewardlab.plugins import isolation
from rewardlab.cli import main
from rewardlab.core.errors import PluginLoadError, PluginRuntimeError, PluginTimeoutError
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin

from conftest import PLUGINS_DIR

pytestmark = pytest.mark.skipif(not isolation.AVAILABLE, reason="needs os.fork")

GOOD = ('data["next", "reward"] = torch.where(data["next", "end_of_game"], '
        '(data["sparse"][:, 6] % 2).double() * 2 - 1, 0.0)\n')


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def body(tmp_path, name, code, header="import torch\n"):
    return write(tmp_path, name, header + "\n\ndef get_reward(data, contiguous):\n"
                 + textwrap.indent(textwrap.dedent(code), "    "))


# --- the trainer's globals ----------------------------------------------------------------


WIKI_RAW_POINTS = """\
from torch import Tensor
from tensordict import TensorDict

_SCORE_MEAN = 25000.0
_SCORE_STDEV = 10000.0

def get_reward(data: TensorDict, contiguous: bool) -> None:
    batch_size = int(data.size(0))
    sparse: Tensor = data["sparse"]
    results: Tensor = data["next", "results"]
    end_of_game: Tensor = data["next", "end_of_game"]
    data["next", "reward"] = torch.zeros_like(end_of_game, dtype=torch.float64)
    for i in range(batch_size):
        if not end_of_game[i].item():
            continue
        seat = int(sparse[i, 6].item()) - 71
        scores: list[int] = results[i, 4:8].tolist()
        data["next", "reward"][i] = (scores[seat] - _SCORE_MEAN) / _SCORE_STDEV
"""


def test_wiki_example_without_import_torch_runs_as_in_the_trainer(tmp_path, small_frame):
    path = write(tmp_path, "raw", WIKI_RAW_POINTS)
    plugin = load_plugin(path)
    assert plugin.trainer_names == ("torch",)
    out = apply_plugins(small_frame, plugin, progress=False)
    eog = small_frame["end_of_game"].to_numpy()
    assert np.all(out["reward_raw"].to_numpy()[~eog] == 0) and np.any(out["reward_raw"].to_numpy()[eog])
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert report.ok  # it runs in kanachan's trainer ...
    text = str(report)
    # ... but it is not self-contained, and check-plugin says so
    assert ("warning: the file uses torch without defining or importing it: it runs in kanachan's "
            "trainer, which exec-s plug-ins into its own module where these names exist, but it is "
            "not self-contained; add import torch at its top") in text
    # a stand-alone module would fail, as it fails anywhere but in the trainer
    with pytest.raises(PluginRuntimeError, match="NameError: name 'torch' is not defined"):
        apply_plugins(small_frame, load_plugin(path, trainer_scope=False), progress=False)


def test_self_contained_file_has_no_trainer_names(tmp_path):
    assert load_plugin(PLUGINS_DIR / "rank_top.py").trainer_names == ()
    path = body(tmp_path, "own", "Tensor = 1\nreturn None\n")
    assert load_plugin(path).trainer_names == ()


# --- the contiguous flag, and the DataLoader's batches ------------------------------------


CONTIGUOUS_RECORDER = """\
import torch

def get_reward(data, contiguous):
    data["next", "reward"] = torch.full(data.batch_size, 1.0 if contiguous else 0.0,
                                        dtype=torch.float64)
"""


def test_episodes_pass_kanachans_default_contiguous_false_unless_asked(tmp_path, small_frame):
    path = write(tmp_path, "flag", CONTIGUOUS_RECORDER)
    with pytest.warns(Warning):  # rewards far from mean 0 / std 1
        default = apply_plugins(small_frame, path, progress=False)
    assert (default["reward_flag"] == 0).all()
    with pytest.warns(Warning):
        asked = apply_plugins(small_frame, path, contiguous=True, progress=False)
    assert (asked["reward_flag"] == 1).all()
    with pytest.raises(ValueError, match="`contiguous` can be True only with batch_mode 'episodes'"):
        apply_plugins(small_frame, path, batch_mode="sequential", contiguous=True, progress=False)


def test_dataloader_batches_are_every_second_line(tmp_path, small_frame):
    path = body(tmp_path, "rows", """\
        global CALL  # reward = the number of the call
        CALL = globals().get("CALL", -1) + 1
        data["next", "reward"] = torch.full(data.batch_size, float(CALL), dtype=torch.float64)
        """)
    with pytest.warns(Warning):
        out = apply_plugins(small_frame, path, batch_mode="dataloader", batch_size=4, num_workers=2,
                            progress=False)
    calls = out["reward_rows"].to_numpy()
    # worker 0 has rows 0, 2, 4, ...; worker 1 rows 1, 3, 5, ...; the loader alternates them
    assert calls[[0, 2, 4, 6]].tolist() == [0] * 4 and calls[[1, 3, 5, 7]].tolist() == [1] * 4
    assert calls[[8, 10, 12, 14]].tolist() == [2] * 4


# --- reward dtypes --------------------------------------------------------------------------


def test_float16_rewards_are_kept_and_precision_loss_is_reported(tmp_path, small_frame):
    path = body(tmp_path, "half", """\
        score = data["next", "results"][:, 4].to(torch.float64)
        data["next", "reward"] = torch.where(data["next", "end_of_game"], score, 0.0).half()
        """)
    with pytest.warns(Warning):
        out = apply_plugins(small_frame, path, progress=False)
    assert out.schema["reward_half"] == pl.Float16
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert report.reward_dtype == "float16"
    text = str(report)
    assert "reward dtype: float16 (kept as returned: what kanachan's trainer receives)" in text
    assert "warning: float16 rounds rewards near |r| = " in text
    assert "Return float32 or float64 rewards" in text


def test_float32_rewards_are_kept_without_warning(tmp_path, small_frame):
    path = body(tmp_path, "single", "data['next', 'reward'] = "
                "torch.where(data['next', 'end_of_game'], 1.0, 0.0).float()\n")
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert report.reward_dtype == "float32" and "float16" not in str(report)


# --- the simulation convention --------------------------------------------------------------


def test_simulation_convention_builds_what_kanachans_simulator_builds(small_frame):
    from rewardlab import to_tensordict

    off = to_tensordict(small_frame)
    sim = to_tensordict(small_frame, convention="simulation")
    eog = off["next", "end_of_game"]
    assert not off["next", "end_of_round"][eog].any()  # the offline files' convention
    assert sim["next", "end_of_round"][eog].all()  # the simulator's
    assert torch.equal(sim["next", "end_of_round"], off["next", "end_of_round"] | eog)
    assert (sim["next", "round_summary"] == 29).all()
    assert torch.equal(sim["next", "results"], off["next", "results"])
    assert list(sim.keys(include_nested=True, leaves_only=True)) == list(
        off.keys(include_nested=True, leaves_only=True))


def test_plugin_reading_round_summary_differs_between_conventions(tmp_path, small_frame):
    path = body(tmp_path, "summ", """\
        eor = data["next", "end_of_round"] | data["next", "end_of_game"]
        summary = (data["next", "round_summary"][:, 0] < 29).double()
        data["next", "reward"] = torch.where(eor, summary - 0.5, 0.0)
        """)
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert report.ok  # a warning, not a failure
    [d] = report.convention_differences
    assert d.run == "simulation episodes (contiguous=True)" and d.reference == "episodes (contiguous=True)"
    assert d.rewards > 0
    assert "simulation convention: WARNING the rewards differ from the offline files' convention" in str(report)


# --- plug-ins that exit, hang or misbehave --------------------------------------------------


@pytest.mark.parametrize("code, shown", [
    ("import sys\nsys.exit(0)\n", "raised SystemExit while loading: 0 (it called sys.exit"),
    ("import os\nos._exit(0)\n", "ended rewardlab's child process (exit status 0) while running "
                                 "loading plug-in 'bye'"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "(killed by SIGKILL)"),
])
def test_exit_at_import_is_a_load_error_never_a_pass(tmp_path, small_frame, code, shown):
    path = write(tmp_path, "bye", code + "import torch\n\ndef get_reward(data, contiguous):\n    "
                 + GOOD)
    with pytest.raises(PluginLoadError) as info:
        check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert shown in str(info.value)
    assert "plug-in 'bye'" in str(info.value)


@pytest.mark.parametrize("code, shown", [
    ("import sys; sys.exit(3)", "get_reward raised SystemExit: 3"),
    ("raise KeyboardInterrupt", "get_reward raised KeyboardInterrupt"),
    ("raise GeneratorExit('odd')", "get_reward raised GeneratorExit: odd"),
    ("import os; os._exit(0)", "ended rewardlab's child process (exit status 0) while running plug-in "
                               "'bad' on batch 0 of mode 'episodes'"),
])
def test_exit_or_base_exception_at_call_time_fails_the_check(tmp_path, small_frame, code, shown):
    path = body(tmp_path, "bad", code + "\n")
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert not report.ok
    text = str(report)
    assert shown in text and text.endswith("result: FAIL")
    assert "contract: ok" not in text
    with pytest.raises(PluginRuntimeError, match=shown.split(" (")[0].replace("(", r"\(")):
        apply_plugins(small_frame, path, progress=False)


def test_exception_whose_str_fails_is_reported_with_its_traceback(tmp_path, small_frame):
    path = body(tmp_path, "odd", """\
        class Odd(Exception):
            def __str__(self):
                raise RuntimeError("no str")
        raise Odd()
        """)
    with pytest.raises(PluginRuntimeError) as info:
        apply_plugins(small_frame, path, progress=False)
    assert "get_reward raised Odd: <str() of the Odd raised RuntimeError>" in str(info.value)
    assert f'File "{path}", line 8, in get_reward' in info.value.plugin_traceback


@pytest.mark.parametrize("code, rule, shown", [
    ('data["next", "reward"] = torch.zeros(data.batch_size, dtype=torch.float64).to_sparse()',
     "reward_type", "should be a dense (strided) torch.Tensor; got layout torch.sparse_coo"),
    ('data["next", "reward"] = torch.nn.Parameter(torch.zeros(data.batch_size, dtype=torch.float64), '
     'requires_grad=False)', "reward_type", "should be a plain torch.Tensor; got the subclass "
     "torch.nn.parameter.Parameter"),
])
def test_sparse_or_subclassed_reward_is_refused(tmp_path, small_frame, code, rule, shown):
    path = body(tmp_path, "odd", code + "\n")
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert not report.ok
    [(got_rule, message, _, _)] = report.problems
    assert got_rule == rule and shown in message


def test_hang_is_stopped_by_timeout_with_the_plugins_own_stack(tmp_path, small_frame):
    path = body(tmp_path, "slow", "while True: pass\n")  # one line: the frame is on line 5
    start = time.monotonic()
    report = check_plugin(small_frame, path, batch_sizes=(5,), timeout=1.5, progress=False)
    assert time.monotonic() - start < 30
    assert not report.ok and report.stopped
    text = str(report)
    assert "did not finish within 1.5 s while running plug-in 'slow' on batch 0 of mode 'episodes'" in text
    assert f'File "{path}", line 5 in get_reward' in text  # the hung plug-in's own frame
    with pytest.raises(PluginTimeoutError, match="did not finish within 1.5 s"):
        apply_plugins(small_frame, path, timeout=1.5, progress=False)


def test_timeout_needs_isolation(small_frame):
    with pytest.raises(ValueError, match="`timeout` needs isolate=True"):
        apply_plugins(small_frame, PLUGINS_DIR / "rank_top.py", isolate=False, timeout=1,
                      progress=False)


def test_ctrl_c_stops_the_child_and_leaves_no_process(tmp_path):
    def job(status, send):
        send(os.getpid())
        time.sleep(60)

    pids = []
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            isolation.run_in_child(job, on_part=pids.append)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    [pid] = pids
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# --- plug-ins applied together --------------------------------------------------------------


def test_plugins_applied_together_do_not_see_each_others_writes(tmp_path, small_frame):
    vandal = body(tmp_path, "vandal", 'data["next", "results"].numpy()[:] = 1000000\n' + GOOD)
    reader = body(tmp_path, "reader", 'data["next", "reward"] = torch.where(data["next", "end_of_game"], '
                  'data["next", "results"][:, 4].double() / 100000.0, 0.0)\n')
    with pytest.warns(Warning):
        alone = apply_plugins(small_frame, reader, progress=False)["reward_reader"]
    with pytest.warns(Warning):
        together = apply_plugins(small_frame, [vandal, reader], progress=False)
    assert together["reward_reader"].equals(alone)  # the first one's writes did not leak


# --- the command line -----------------------------------------------------------------------


def test_check_plugin_cli_never_exits_zero_without_a_report(tmp_path, small_frame, capsys):
    data = tmp_path / "small.parquet"
    small_frame.write_parquet(data)
    quiet = write(tmp_path, "quiet", "import os\nos._exit(0)\n")
    code = main(["check-plugin", str(quiet), "--data", str(data)])
    captured = capsys.readouterr()
    assert code == 2
    assert "rewardlab check-plugin: error: plug-in 'quiet'" in captured.err
    assert "ended rewardlab's child process (exit status 0)" in captured.err
    slow = body(tmp_path, "slow", "import time\ntime.sleep(30)\n" + GOOD)
    code = main(["check-plugin", str(slow), "--data", str(data), "--timeout", "1"])
    captured = capsys.readouterr()
    assert code == 1 and "did not finish within 1 s" in captured.out
    assert captured.out.rstrip().endswith("result: FAIL")


def test_check_plugin_reports_zero_transitions_without_statistics(small_frame):
    report = check_plugin(small_frame.head(0), PLUGINS_DIR / "rank_top.py", progress=False)
    text = str(report)
    assert not report.ok
    assert "contract: not checked (no transitions)" in text and "reward scale" not in text
    assert text.endswith("result: FAIL")


def test_cancel_stops_a_running_check_at_once(tmp_path, small_frame):
    from rewardlab.core.errors import PluginRunCancelled

    path = body(tmp_path, "slow", "import time\ntime.sleep(30)\n" + GOOD)
    start = time.monotonic()
    asked = []

    def cancel():  # the caller asks to stop about half a second in
        asked.append(time.monotonic())
        return time.monotonic() - start > 0.5

    with pytest.raises(PluginRunCancelled, match="running plug-in 'slow' was cancelled"):
        check_plugin(small_frame, path, cancel=cancel, progress=False)
    assert time.monotonic() - start < 10 and len(asked) > 1
    with pytest.raises(ValueError, match="`cancel` should be a callable"):
        apply_plugins(small_frame, path, cancel=True, progress=False)


def test_a_crash_of_the_process_fails_the_check_and_says_where(tmp_path, small_frame):
    path = body(tmp_path, "segv", "import ctypes\nctypes.string_at(0)\n")  # a segmentation fault
    report = check_plugin(small_frame, path, batch_sizes=(5,), progress=False)
    assert not report.ok
    text = str(report)
    assert ("stopped: the plug-in ended its process (killed by SIGSEGV) during the run episodes, so no "
            "further run was made (see below)") in text
    assert "ended rewardlab's child process (killed by SIGSEGV) while running plug-in 'segv' on batch 0" in text
    assert text.endswith("result: FAIL")
