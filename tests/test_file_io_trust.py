"""Inputs and outputs that are not what they seem (issue 10): FIFOs, unreadable files, outputs
that are folders or sit in a missing folder, a full disk, outputs naming an input, and the
temporaries a killed writer leaves.  Each is a rewardlab error naming the path, never a hang,
never a traceback, never a half-written or destroyed file.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import rewardlab
from rewardlab.core import files as _io
from rewardlab.core.files import atomic_open, atomic_path, remove_stale_temporaries
from rewardlab.cli import main
from rewardlab.dataset import write_dataset
from rewardlab.core.errors import DataFormatError, FileAccessError, OutputExistsError, ParameterError
from conftest import PLUGINS_DIR, ROOT
from lines import game_lines, gid, write


WATCHDOG = """
import os, sys, time
time.sleep(float(sys.argv[2]))
while True:  # open the FIFO's other end whenever a reader waits on it, and say so
    try:
        os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK))
        open(sys.argv[3], "w").close()
    except OSError:
        pass
    time.sleep(0.1)
"""


def _no_hang(call, fifo: Path, seconds: float = 20.0):
    """Run ``call()``; fail if it blocked opening ``fifo`` (a watchdog process unblocks it after ``seconds``).

    The watchdog is a separate process: a reader blocked in ``open`` inside
    native code may hold the GIL, so no thread of this process could help.
    """
    marker = fifo.with_name(fifo.name + ".unblocked")
    watchdog = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(fifo), str(seconds), str(marker)])
    try:
        return call()
    finally:
        watchdog.kill()
        watchdog.wait()
        if marker.exists():
            pytest.fail(f"reading {fifo} blocked (it opened the FIFO)")


@pytest.fixture
def text_file(tmp_path):
    return write(tmp_path / "games.tsv", game_lines(gid(1)) + game_lines(gid(2)))


def _one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"rewardlab {command}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------
# Inputs: FIFOs and unreadable files
# ----------------------------------------------------------------------------

FIFO_MESSAGE = (r"is a FIFO \(named pipe\), not a regular file; rewardlab reads its inputs from files .*"
                r"\[rule: not_a_file\] Save the data to a regular file first")


def test_a_fifo_as_an_annotation_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "games.tsv"
    os.mkfifo(fifo)
    with pytest.raises(DataFormatError, match=r"games\.tsv: " + FIFO_MESSAGE):
        _no_hang(lambda: rewardlab.load_kanachan(fifo), fifo)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_fifo_as_a_dataset_or_a_shard_is_refused_without_blocking(tmp_path, small_frame, suffix):
    fifo = tmp_path / f"d{suffix}"
    os.mkfifo(fifo)
    with pytest.raises(DataFormatError, match=rf"d\{suffix}: " + FIFO_MESSAGE):
        _no_hang(lambda: rewardlab.load_kanachan(fifo), fifo)
    write_dataset(small_frame, tmp_path / f"a{suffix}", kind="parquet" if suffix == ".parquet" else "ipc")
    with pytest.raises(DataFormatError, match=rf"d\{suffix}: " + FIFO_MESSAGE):
        _no_hang(lambda: rewardlab.scan_kanachan(tmp_path), fifo)


@pytest.mark.parametrize("command", ["stats", "convert", "info"])
def test_a_fifo_given_to_a_command_is_one_error_line(tmp_path, capsys, command):
    fifo = tmp_path / ("r.parquet" if command == "stats" else "games.tsv")
    os.mkfifo(fifo)
    argv = {"stats": ["stats", str(fifo)], "info": ["info", str(fifo)],
            "convert": ["convert", str(fifo), "--out", str(tmp_path / "d.parquet")]}[command]
    assert _no_hang(lambda: main(argv), fifo) == 2
    err = _one_error_line(capsys, command)
    assert f"{fifo}: is a FIFO (named pipe), not a regular file" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file; the next test covers the check")
def test_an_unreadable_file_is_named(text_file):
    text_file.chmod(0)
    try:
        with pytest.raises(FileAccessError, match=r"games\.tsv: cannot be read: permission denied"):
            rewardlab.load_kanachan(text_file)
    finally:
        text_file.chmod(0o644)


@pytest.fixture
def deny_reading(monkeypatch):
    """Make ``os.access`` deny reading the paths added to the returned set (works as root too)."""
    denied: set[Path] = set()
    real = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.R_OK and Path(path).resolve() in denied:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    return denied


def test_a_file_this_user_may_not_read_is_named(tmp_path, text_file, small_frame, deny_reading, capsys):
    dataset = tmp_path / "d.parquet"
    write_dataset(small_frame, dataset)
    deny_reading.update({text_file.resolve(), dataset.resolve()})
    for path in (text_file, dataset):
        with pytest.raises(FileAccessError, match=rf"{path.name}: cannot be read: permission denied\. Give this "
                           r"user read access \(e\.g\. chmod u\+r\) or copy the file"):
            rewardlab.load_kanachan(path)
    assert main(["stats", str(dataset)]) == 2
    assert f"{dataset}: cannot be read: permission denied" in _one_error_line(capsys, "stats")
    assert main(["convert", str(text_file), "--out", str(tmp_path / "e.parquet")]) == 2
    assert f"{text_file}: cannot be read: permission denied" in _one_error_line(capsys, "convert")


# ----------------------------------------------------------------------------
# Outputs: folders, missing folders, non-regular files
# ----------------------------------------------------------------------------


def test_an_output_that_is_a_folder_is_refused_even_with_overwrite(tmp_path, text_file, capsys):
    folder = tmp_path / "d.parquet"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    with pytest.raises(FileAccessError, match=r"d\.parquet: is a folder; name a file to write"):
        with atomic_path(folder, overwrite=True):
            pytest.fail("the body must not run")
    assert main(["convert", str(text_file), "--out", str(folder), "--overwrite"]) == 2
    assert f"{folder}: is a folder; name a file to write" in _one_error_line(capsys, "convert")
    assert (folder / "keep.txt").read_text() == "keep"


def test_an_output_whose_parent_is_a_file_is_refused(tmp_path, text_file, capsys):
    out = text_file / "d.parquet"
    with pytest.raises(FileAccessError, match=rf"{text_file} is a file, not a folder\. Choose an output path "
                       r"inside a folder"):
        with atomic_open(out):
            pytest.fail("the body must not run")
    assert main(["convert", str(text_file), "--out", str(out)]) == 2
    assert f"{out}: {text_file} is a file, not a folder" in _one_error_line(capsys, "convert")


def test_an_output_in_a_missing_folder_is_refused_not_created(tmp_path, text_file, capsys):
    out = tmp_path / "typo" / "d.parquet"
    assert main(["convert", str(text_file), "--out", str(out)]) == 2
    err = _one_error_line(capsys, "convert")
    assert f"{out}: the folder {tmp_path / 'typo'} does not exist. Create it first" in err
    assert not (tmp_path / "typo").exists()


def test_an_output_that_is_a_fifo_is_refused_even_with_overwrite(tmp_path):
    fifo = tmp_path / "out.txt"
    os.mkfifo(fifo)
    with pytest.raises(FileAccessError, match=r"out\.txt: is a FIFO \(named pipe\), not a regular file; rewardlab "
                       r"writes only regular files"):
        with atomic_open(fifo, overwrite=True) as f:
            f.write("x")
    assert Path(fifo).is_fifo()


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="no /dev/full here")
def test_a_device_as_an_output_is_refused_even_with_overwrite():
    with pytest.raises(FileAccessError, match=r"/dev/full: is a character device, not a regular file"):
        _io.check_output("/dev/full", overwrite=True)  # atomic_path would have renamed a file over it


def test_an_empty_output_path_is_refused(tmp_path):
    with pytest.raises(FileAccessError, match=r"'': is not a file name"):
        with atomic_path(""):
            pytest.fail("the body must not run")


# ----------------------------------------------------------------------------
# A full disk
# ----------------------------------------------------------------------------


def test_a_full_disk_is_one_error_line_and_leaves_nothing(tmp_path, text_file, capsys, monkeypatch):
    import rewardlab.dataset as dataset_module

    def full_disk(frame, path, *, kind):
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(dataset_module, "write_dataset", full_disk)
    out = tmp_path / "d.parquet"
    assert main(["convert", str(text_file), "--out", str(out)]) == 2
    err = _one_error_line(capsys, "convert")
    assert (f"{out}: could not be written (No space left on device); nothing was written there. Free some "
            "space on that disk, or write to another one") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["games.tsv"]  # no output, no temporary


def test_a_full_disk_while_writing_text(tmp_path):
    out = tmp_path / "lines.txt"
    with pytest.raises(FileAccessError, match=r"lines\.txt: could not be written \(No space left on device\)"):
        with atomic_open(out) as f:
            f.write("a line\n")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_write_the_file_system_refuses_leaves_nothing(tmp_path, sample_path, suffix):
    """A real failed write: ``ulimit -f`` makes pyarrow's / Polars' writes fail with EFBIG."""
    out = tmp_path / f"d{suffix}"

    def limit():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    run = subprocess.run([sys.executable, "-m", "rewardlab", "convert", str(sample_path), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, preexec_fn=limit, timeout=300,
                         env={**os.environ, "REWARDLAB_PROGRESS": "0"})
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"rewardlab convert: error: {out}: could not be written (File too large); "
                                 "nothing was written there"), run.stderr
    assert "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------
# No command overwrites its own input
# ----------------------------------------------------------------------------


def test_convert_refuses_an_output_that_is_its_input(tmp_path, small_frame, capsys):
    dataset = tmp_path / "d.parquet"
    write_dataset(small_frame, dataset)
    before = dataset.read_bytes()
    assert main(["convert", str(dataset), "--out", str(dataset), "--overwrite"]) == 2
    err = _one_error_line(capsys, "convert")
    assert "`--out` should not name one of the command's inputs; writing it would destroy the input, even " \
           f"with overwrite. Received '{dataset}'." in err
    assert dataset.read_bytes() == before


@pytest.mark.parametrize("link", ["same", "hard", "symbolic"])
@pytest.mark.parametrize("command", ["convert", "info"])
def test_skipped_naming_an_input_is_refused(tmp_path, text_file, capsys, link, command):
    name = {"same": text_file, "hard": tmp_path / "hard.tsv", "symbolic": tmp_path / "sym.tsv"}[link]
    if link == "hard":
        os.link(text_file, name)
    elif link == "symbolic":
        os.symlink(text_file, name)
    before = text_file.read_bytes()
    argv = [command, str(text_file), "--on-error", "skip", "--skipped", str(name), "--overwrite"]
    if command == "convert":
        argv += ["--out", str(tmp_path / "d.parquet")]
    assert main(argv) == 2
    err = _one_error_line(capsys, command)
    what = "" if link == "same" else f" ({text_file})"
    assert f"`--skipped` should not name one of the command's inputs{what}; writing it would destroy" in err
    assert text_file.read_bytes() == before and not (tmp_path / "d.parquet").exists()


def test_read_kanachan_refuses_a_side_file_that_is_its_input(text_file):
    with pytest.raises(ParameterError, match=r"`skipped_path` should not name one of the command's inputs"):
        rewardlab.read_kanachan(text_file, on_error="skip", skipped_path=text_file, overwrite=True)


def test_convert_refuses_skipped_equal_to_out(tmp_path, text_file, capsys):
    out = tmp_path / "d.parquet"
    assert main(["convert", str(text_file), "--out", str(out), "--on-error", "skip", "--skipped", str(out)]) == 2
    assert "`--skipped` should differ from --out" in _one_error_line(capsys, "convert")
    with pytest.raises(ParameterError, match="`skipped_path` should differ from `out`"):
        rewardlab.convert(text_file, out, on_error="skip", skipped_path=out, progress=False)


def test_apply_plot_and_export_refuse_to_overwrite_their_input(tmp_path, sample_frame, capsys):
    dataset = tmp_path / "d.parquet"
    write_dataset(sample_frame, dataset)
    before = dataset.read_bytes()
    plugin = PLUGINS_DIR / "rank_top.py"
    argvs = {
        "apply": ["apply", str(dataset), "--plugin", str(plugin), "--out", str(dataset), "--overwrite"],
        "plot": ["plot", str(dataset), "--out", str(dataset), "--overwrite"],
        "export": ["export", "ranking", "--preset", "top", "--normalize-from", str(dataset),
                   "--out", str(dataset), "--overwrite"],
    }
    for command, argv in argvs.items():
        assert main(argv) == 2, command
        assert "`--out` should not name one of the command's inputs" in _one_error_line(capsys, command)
    assert dataset.read_bytes() == before
    folder = tmp_path / "shards"
    folder.mkdir()
    write_dataset(sample_frame, folder / "a.parquet")
    assert main(["apply", str(folder), "--plugin", str(plugin), "--out", str(folder / "r.parquet")]) == 2
    assert f"`--out` should not be inside the input folder {folder}" in _one_error_line(capsys, "apply")


# ----------------------------------------------------------------------------
# Temporaries of killed writers
# ----------------------------------------------------------------------------

KILLED_WRITER = """
import os, sys
from rewardlab.core.files import atomic_open
with atomic_open(sys.argv[1]) as f:
    f.write("half")
    f.flush()
    os._exit(9)  # killed mid-write: no cleanup runs
"""


def _killed_write(target: Path) -> None:
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], cwd=ROOT, check=False, timeout=120)


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "out.txt"
    _killed_write(target)
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.txt.") and left[0].endswith(".tmp")
    with atomic_open(target) as f:
        f.write("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    assert target.read_text() == "whole"


def test_temporaries_of_running_writers_are_kept(tmp_path):
    target = tmp_path / "out.txt"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ours = tmp_path / _io.temp_name(target)
        theirs = tmp_path / ours.name.replace(f"-{os.getpid()}-", f"-{sleeper.pid}-")
        other_host = tmp_path / f".out.txt.00000000-{sleeper.pid + 1}-abcd.tmp"
        unrelated = tmp_path / ".other.txt.00000000-1-abcd.tmp"
        for p in (ours, theirs, other_host, unrelated):
            p.write_text("in use")
        _killed_write(target)
        dead = {p for p in tmp_path.iterdir()} - {ours, theirs, other_host, unrelated}
        assert len(dead) == 1
        assert remove_stale_temporaries(target) == list(dead)
        assert {p for p in tmp_path.iterdir()} == {ours, theirs, other_host, unrelated}
    finally:
        sleeper.kill()
        sleeper.wait()


# ----------------------------------------------------------------------------
# The CLI: any file problem is one line
# ----------------------------------------------------------------------------


def test_an_unforeseen_os_error_is_one_line(tmp_path, capsys, monkeypatch):
    from rewardlab.cli import analysis

    def fails(args):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "x.parquet"))

    monkeypatch.setattr(analysis, "_stats", fails)
    assert main(["stats", str(tmp_path / "x.parquet")]) == 2
    assert f"[Errno 13] Permission denied: '{tmp_path / 'x.parquet'}'" in _one_error_line(capsys, "stats")


def test_the_existing_output_rule_still_holds(tmp_path, text_file):
    out = tmp_path / "d.parquet"
    out.write_bytes(b"keep")
    with pytest.raises(OutputExistsError):
        rewardlab.convert(text_file, out, progress=False)
    assert out.read_bytes() == b"keep"


@pytest.mark.parametrize("fmt, path", [("steps", "data/gym/cartpole_random.parquet"), ("kanachan", "data/sample.tsv.gz"),
                                       ("rllib", "data/rllib/old_stack_json/data"), ("mjai", "data/mjai")])
@pytest.mark.parametrize("bad", [3, 2.5, ["a.txt"], b"x"])
def test_a_skipped_path_that_is_not_a_path_is_a_parameter_error(fmt, path, bad):
    """Every source's side file: a value that is not a path is named, never a raw TypeError."""
    with pytest.raises(ParameterError, match="`skipped_path` should be a file path"):
        rewardlab.load(ROOT / path, format=fmt, on_error="skip", skipped_path=bad)
