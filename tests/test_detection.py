"""Detection never misroutes and always says what to pass (issue 23).

Only files with rewardlab's metadata (or a plain file of a whole kanachan
frame, or a dataset folder) are datasets; any other Parquet table is a step
table.  Folders are detected by content across their files, patterns name
files, and every detection or format error names the formats and what to
pass on each front.  Each loaded frame is compared with an independent load
of the same rows (the files listed one by one, or the table under its
default names).
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from conftest import ROOT
from rewardlab.cli import main
from rewardlab.core.errors import DataFormatError, FilesLeftOutWarning, ParameterError, StepTableError
from rewardlab.core.spec import attached
from rewardlab.sources import storage
from rewardlab.sources.registry import detect_source, format_remedy

GYM = "data/gym/cartpole_random.parquet"
MJAI_LOGS = ["data/mjai/hanchan_15.json", "data/mjai/hanchan_228.json", "data/mjai/tonpusen_196.json",
             "data/mjai/tonpusen_245.json"]


def table(n: int = 6, seed: int = 0) -> pl.DataFrame:
    """A step table under Gymnasium's default names: ``n`` episodes of 2..5 steps, ending terminated."""
    rng = np.random.default_rng(seed)
    rows = []
    for e in range(n):
        length = int(rng.integers(2, 6))
        for t in range(length):
            rows.append({"episode_id": e, "t": t, "obs_x": float(rng.random()), "reward": float(rng.random()),
                         "terminated": t == length - 1})
    return pl.DataFrame(rows)


def renamed(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.rename({"episode_id": "ep"})


# ----------------------------------------------------------------------------
# A Parquet table without rewardlab metadata is a step table, never a dataset
# ----------------------------------------------------------------------------


def test_a_parquet_step_table_with_its_own_names_is_a_step_table(tmp_path):
    plain = pl.read_parquet(GYM)  # the recording's rows, without rewardlab's metadata
    plain.write_parquet(tmp_path / "default.parquet")
    renamed(plain).write_parquet(tmp_path / "steps.parquet")
    assert detect_source(tmp_path / "steps.parquet").name == "steps"
    with pytest.raises(StepTableError, match=r"steps\.parquet: no episode column: none of episode_id.*"
                                             r"\(columns: ep, t, .*\[rule: missing_column\]"):
        rewardlab.load(tmp_path / "steps.parquet")
    got = rewardlab.load(tmp_path / "steps.parquet", episode="ep")
    want = rewardlab.load(tmp_path / "default.parquet")  # the same rows under the default names
    assert got.rename({"ep": "episode_id"}).equals(want)
    assert attached(got).episode == ("ep",) and got.height == plain.height


def test_the_cli_reads_a_renamed_parquet_table_with_option_episode(tmp_path, capsys):
    renamed(pl.read_parquet(GYM)).write_parquet(tmp_path / "steps.parquet")
    assert main(["info", str(tmp_path / "steps.parquet"), "--option", "episode=ep"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format       steps (spec steps)")
    assert "episodes               50" in out and "  episode    ep" in out
    assert main(["info", str(tmp_path / "steps.parquet")]) == 2
    err = capsys.readouterr().err
    assert "no episode column" in err and "lacks columns ['game_id'" not in err and "'dataset'" not in err


def test_a_plain_kanachan_frame_and_converted_files_stay_datasets(tmp_path, small_frame):
    small_frame.write_parquet(tmp_path / "kanachan.parquet")  # every kanachan column: read as kanachan's frame
    assert detect_source(tmp_path / "kanachan.parquet").name == "dataset"
    assert rewardlab.load(tmp_path / "kanachan.parquet").equals(small_frame)
    assert detect_source(GYM).name == "dataset"  # rewardlab's metadata: the stored spec
    assert attached(rewardlab.load(GYM)).name == "gymnasium"
    # kanachan's episode columns without the rest of the frame: a table, not a dataset
    small_frame.select("game_id", "seat", "step", "end_of_game").write_parquet(tmp_path / "part.parquet")
    assert detect_source(tmp_path / "part.parquet").name == "steps"


def test_format_dataset_on_a_plain_table_names_the_steps_format(tmp_path):
    renamed(table()).write_parquet(tmp_path / "steps.parquet")
    with pytest.raises(DataFormatError, match=r"lacks columns \['game_id'.*it has no rewardlab metadata.*"
                       r"\[rule: not_a_dataset\] This looks like generic step tables.*--format steps --option "
                       r"episode=COLUMN on the command line, format=\"steps\""):
        rewardlab.load(tmp_path / "steps.parquet", format="dataset")


# ----------------------------------------------------------------------------
# Errors name what the file looks like, the formats tried, and what to pass
# ----------------------------------------------------------------------------


def test_an_unknown_file_says_what_it_looks_like_and_what_to_pass(tmp_path, capsys):
    (tmp_path / "notes.xyz").write_text("\n  hello there\nsecond\n")
    (tmp_path / "blob.xyz").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(ParameterError, match=r"could not be detected for .*notes\.xyz: .*text whose first line "
                       r"reads 'hello there'.*tried 'dataset', 'kanachan', 'rllib', 'mjai', 'minari', 'retro', 'steps'.*"
                       r"--format NAME on the command line, format=\"NAME\" in Python"):
        rewardlab.load(tmp_path / "notes.xyz")
    with pytest.raises(ParameterError, match=r"binary data, first bytes 00 01 02"):
        rewardlab.load(tmp_path / "blob.xyz")
    assert main(["info", str(tmp_path / "notes.xyz")]) == 2
    assert "--format NAME on the command line" in capsys.readouterr().err


def test_a_folder_of_several_formats_names_them_and_what_to_pass(tmp_path):
    shutil.copy(MJAI_LOGS[0], tmp_path)
    table().write_parquet(tmp_path / "steps.parquet")  # default names: claimed by content too
    with pytest.raises(ParameterError, match=r"folder .* holds files of several formats \(by content\): "
                       r"mjai \(hanchan_15\.json\); steps \(steps\.parquet\).*pass --format mjai or --format "
                       r"steps on the command line, format=\"mjai\" or format=\"steps\" in Python"):
        detect_source(tmp_path)
    frame = rewardlab.load(tmp_path, format="mjai", progress=False)  # the remedy works
    assert frame.drop("source_file").equals(rewardlab.load(MJAI_LOGS[0], progress=False).drop("source_file"))


def test_paths_of_two_formats_name_both(tmp_path):
    table().write_csv(tmp_path / "a.csv")
    with pytest.raises(ParameterError, match=r"should all be one format; .*a\.csv is 'steps' .*the first, "
                       r"data/mjai/hanchan_15\.json, is 'mjai'.*--format mjai or --format steps"):
        detect_source([MJAI_LOGS[0], tmp_path / "a.csv"])


@pytest.mark.parametrize("name", ["log.json", "steps.csv", "steps.parquet", "renamed.parquet"])
def test_load_kanachan_says_what_another_formats_file_looks_like(tmp_path, name):
    path = tmp_path / name
    if name == "log.json":
        shutil.copy(MJAI_LOGS[0], path)
        fmt, what = "mjai", "MJAI game logs"
    else:
        fmt, what = "steps", "generic step tables"
        frame = renamed(table()) if name.startswith("renamed") else table()
        frame.write_csv(path) if name.endswith(".csv") else frame.write_parquet(path)
    with pytest.raises(DataFormatError, match=rf"not kanachan data .*this looks like {what}.* \(format '{fmt}'.*"
                       rf"\[rule: other_format\].*--format {fmt} on the command line, format=\"{fmt}\" in Python "
                       rf"\(rewardlab\.load\(PATH, format=\"{fmt}\"\), or rewardlab\.load_{fmt}\(PATH\)\)"):
        rewardlab.load_kanachan(path, progress=False)


def test_load_kanachan_still_names_a_broken_line_of_its_own_files(tmp_path, sample_path):
    (tmp_path / "notes.txt").write_text("not a kanachan line\n")  # no format claims it: kanachan's rules speak
    with pytest.raises(DataFormatError, match=r"notes\.txt:1: expected 8, 10 or 12 TAB-separated columns"):
        rewardlab.load_kanachan(tmp_path / "notes.txt", progress=False)
    assert rewardlab.load_kanachan(sample_path, progress=False).height > 0


def test_format_remedy_speaks_both_fronts():
    assert format_remedy("steps") == ('pass --format steps on the command line, format="steps" in Python '
                                      '(rewardlab.load(PATH, format="steps"), or rewardlab.load_steps(PATH))')


# ----------------------------------------------------------------------------
# Folders and patterns
# ----------------------------------------------------------------------------


def test_an_mjai_folder_with_a_summary_beside_the_logs_loads_the_logs(tmp_path):
    for log in MJAI_LOGS:
        shutil.copy(log, tmp_path)
    (tmp_path / "0_summary.csv").write_text("game,winner\nhanchan_15,0\n")  # sorts first: claimed by suffix only
    (tmp_path / "README.md").write_text("# my games\n")
    assert detect_source(tmp_path).name == "mjai"
    frame = rewardlab.load(tmp_path, progress=False, room=3)
    want = rewardlab.load(sorted(tmp_path.glob("*.json")), progress=False, room=3)
    assert frame.drop("source_file").equals(want.drop("source_file"))


def test_a_folder_of_step_tables_loads_as_one_table_and_names_what_it_left_out(tmp_path):
    runs = tmp_path / "runs"
    (runs / "b").mkdir(parents=True)
    whole = renamed(table(9))
    cut = whole["ep"].search_sorted(3), whole["ep"].search_sorted(6)
    whole[:cut[0]].write_parquet(runs / "a.parquet")
    whole[cut[0]:cut[1]].write_parquet(runs / "b" / "c.parquet")
    whole[cut[1]:].write_parquet(runs / "d.parquet")
    pl.DataFrame({"run": ["a"], "mean": [1.0]}).write_parquet(runs / "summary.parquet")
    (runs / "README.md").write_text("# runs\n")
    files = [runs / "a.parquet", runs / "b" / "c.parquet", runs / "d.parquet"]
    want = rewardlab.load(files, episode="ep")  # the files listed one by one
    assert want.height == whole.height
    assert detect_source(runs).name == "steps"
    with pytest.warns(FilesLeftOutWarning, match=r"left out 1 file of .*runs that is not a step table.*"
                      r"summary\.parquet$"):
        assert rewardlab.load(runs, episode="ep").equals(want)
    with pytest.warns(FilesLeftOutWarning, match=r"summary\.parquet$"):  # the same through load_steps
        assert rewardlab.load_steps(runs, episode="ep").equals(want)
    with pytest.raises(StepTableError, match=r"summary\.parquet: column 'ep': its columns differ"):
        rewardlab.load(str(runs / "*.parquet"), episode="ep")  # a pattern names files: all of them are read
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pattern names only the files it matches: nothing left out
        assert rewardlab.load(str(runs / "**" / "[abcd].parquet"), episode="ep").equals(want)
        assert rewardlab.load(str(runs / "[a-d].parquet"), format="steps", episode="ep").equals(
            rewardlab.load([runs / "a.parquet", runs / "d.parquet"], episode="ep"))


def test_a_folder_of_csv_step_tables_and_the_cli(tmp_path, capsys):
    whole = table(6)
    cut = whole["episode_id"].search_sorted(3)  # whole episodes in each file
    whole[:cut].write_csv(tmp_path / "a.csv")
    whole[cut:].write_csv(tmp_path / "b.csv")
    want = rewardlab.load([tmp_path / "a.csv", tmp_path / "b.csv"])
    assert rewardlab.load(tmp_path).equals(want)
    assert main(["info", str(tmp_path / "*.csv")]) == 0
    assert "episodes                6" in capsys.readouterr().out


def test_a_pattern_matching_nothing_is_named(tmp_path):
    with pytest.raises(ParameterError, match=r"`paths` should match at least one file; no file matches this "
                       r"pattern\. Received '.*nothing\*\.parquet'"):
        rewardlab.load(tmp_path / "nothing*.parquet")


def test_rllib_and_minari_folders_with_files_beside_the_data_are_detected():
    assert detect_source("data/rllib/old_stack_json").name == "rllib"  # stats.json beside data/
    assert detect_source("data/rllib/new_stack_parquet").name == "rllib"
    assert detect_source("data/minari/mountaincar-arrow-v0").name == "minari"


def test_a_dataset_folder_is_detected_by_its_manifest(tmp_path):
    out = tmp_path / "parts"
    rewardlab.convert(GYM, out, progress=False)  # no suffix: a folder of parts
    (out / "notes.csv").write_text("a,b\n1,2\n")  # a file beside the parts claimed by suffix only
    assert detect_source(out).name == "dataset"
    assert rewardlab.load(out).equals(rewardlab.load(GYM))


# ----------------------------------------------------------------------------
# Every command that reads data takes --format and --option
# ----------------------------------------------------------------------------


def _body(path) -> str:
    return "".join(line for line in open(path) if "generated by rewardlab" not in line)


def test_export_normalize_from_reads_mjai_logs_with_format_and_options(tmp_path, capsys):
    detected, named = tmp_path / "a.py", tmp_path / "b.py"
    assert main(["export", "ranking", "--preset", "top", "--normalize-from", "data/mjai", "--out",
                 str(detected)]) == 0
    assert main(["export", "ranking", "--preset", "top", "--normalize-from", "data/mjai", "--format", "mjai",
                 "--option", "room=3", "--out", str(named)]) == 0
    assert _body(named) == _body(detected)
    capsys.readouterr()
    assert main(["export", "points", "--normalize-from", "data/mjai", "--option", "rooom=3", "--out",
                 str(tmp_path / "c.py")]) == 2
    assert "'rooom' is not one" in capsys.readouterr().err
    assert main(["export", "ranking", "--preset", "top", "--format", "mjai", "--out", str(tmp_path / "d.py")]) == 2
    assert "`--format` applies to the data --normalize-from" in capsys.readouterr().err
    assert not (tmp_path / "c.py").exists() and not (tmp_path / "d.py").exists()


def test_export_scaling_takes_format_options(tmp_path, capsys):
    renamed(pl.read_parquet(GYM)).write_parquet(tmp_path / "steps.parquet")
    assert main(["export", "scaling", "--data", str(tmp_path / "steps.parquet"), "--option", "episode=ep",
                 "--scope", "episode_return", "--no-center", "--out", str(tmp_path / "s.py")]) == 0
    assert (tmp_path / "s.py").exists()


def test_every_command_that_reads_data_takes_format_and_option():
    from rewardlab.cli import build_parser

    parser = build_parser()
    for argv in (["info", "x"], ["convert", "x", "--out", "y"], ["apply", "x", "--plugin", "p", "--out", "o"],
                 ["check-plugin", "p", "--data", "x"], ["export", "scaling", "--data", "x", "--out", "o"],
                 ["export", "ranking", "--preset", "top", "--normalize-from", "x", "--out", "o"],
                 ["export", "points", "--normalize-from", "x", "--out", "o"],
                 ["export", "round-delta", "--normalize-from", "x", "--out", "o"], ["stats", "x"], ["compare", "x"],
                 ["plot", "x", "--out", "f.png"]):
        args = parser.parse_args([*argv, "--format", "steps", "--option", "episode=ep"])
        assert args.format == "steps" and args.option == ["episode=ep"], argv


def test_storage_reads_columns_from_the_footer_only():
    assert storage.file_columns(GYM) == tuple(pl.read_parquet_schema(GYM))
    assert storage.file_columns("data/sample.tsv.gz") is None


def test_convert_format_kanachan_on_an_mjai_log_says_what_it_looks_like(tmp_path, capsys):
    """The streaming reader (convert to a folder) gives the same advice as load_kanachan."""
    assert main(["convert", "data/mjai/hanchan_15.json", "--format", "kanachan", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "this looks like MJAI game logs (format 'mjai'" in err and "--format mjai" in err
    assert not (tmp_path / "c").exists()


def test_stats_plot_and_compare_read_a_renamed_step_table_with_option(tmp_path, capsys):
    table = pl.read_parquet("data/gym/cartpole_random.parquet").rename({"episode_id": "ep"})
    table.with_columns(pl.col("reward_recorded").alias("reward_x")).write_parquet(tmp_path / "t.parquet")
    data = [str(tmp_path / "t.parquet"), "--option", "episode=ep"]
    assert main(["stats", *data]) == 0 and "reward x" in capsys.readouterr().out
    assert main(["compare", *data]) == 0 and "recorded" in capsys.readouterr().out
    assert main(["plot", *data, "--kind", "returns", "--out", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 0


def test_a_folder_of_many_files_is_detected_from_an_even_spread_of_them(tmp_path, monkeypatch):
    from rewardlab.sources import registry

    log = open("data/mjai/hanchan_15.json", "rb").read()
    for i in range(40):
        (tmp_path / f"game{i:03d}.json").write_bytes(log)
    (tmp_path / "zz_summary.csv").write_text("game,score\n1,2\n")
    seen = []
    claim = registry.claim
    monkeypatch.setattr(registry, "claim", lambda q: seen.append(q) or claim(q))
    monkeypatch.setattr(registry, "FOLDER_FILES_LOOKED_AT", 5)
    assert detect_source(tmp_path).name == "mjai"
    looked = {q.name for q in seen}
    assert len(looked) == 5 and {"game000.json", "zz_summary.csv"} <= looked  # the first and the last


def test_the_cli_prints_a_warning_as_one_line_of_its_own(tmp_path, capsys):
    """A file left out of a folder of step tables reads 'rewardlab info: warning: ...', not a Python warning
    with one of rewardlab's source lines."""
    runs = tmp_path / "runs"
    runs.mkdir()
    renamed(table(4)).write_parquet(runs / "a.parquet")
    (runs / "summary.csv").write_text("run,mean\n1,3.0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as outside the test suite, where warnings are not errors
        assert main(["info", str(runs), "--option", "episode=ep"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rewardlab info: warning: left out 1 file of ") and err.rstrip().endswith("summary.csv")
    assert "FilesLeftOutWarning" not in err and ".py:" not in err


def test_a_folder_of_dataset_files_names_the_files_it_leaves_out(tmp_path):
    """A folder as users keep it (the data, a README, a summary CSV): loaded, and the others named."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(ROOT / "data" / "gym" / "mountaincar_scripted.parquet", runs)
    (runs / "README.md").write_text("# my runs\n")
    (runs / "summary.csv").write_text("episode,return\n0,-200\n")
    (runs / ".hidden").write_text("x")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = rewardlab.load(runs)
    assert frame.height == 3765
    [w] = [w for w in caught if issubclass(w.category, FilesLeftOutWarning)]
    text = str(w.message)
    assert "left out 2 files of" in text and "README.md" in text and "summary.csv" in text
    assert ".hidden" not in text and "not a dataset file" in text


def test_a_folder_above_dataset_folders_names_them(tmp_path, sample_path, capsys):
    """The folder that keeps a corpus's dataset folders (and a README, a summary): no data of its own, so
    the error names the dataset folders inside, one of which the user meant."""
    from rewardlab.sources.datasets.convert import convert_to_parts

    corpora = tmp_path / "corpora"
    corpora.mkdir()
    convert_to_parts(sample_path, corpora / "mahjong", part_rows=50_000, progress=False)
    (corpora / "README.md").write_text("# corpora\n")
    (corpora / "summary.csv").write_text("corpus,rows\nmahjong,1\n")
    (corpora / "notes").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the files left out are named in a warning of their own
        assert main(["info", str(corpora)]) == 2
    err = capsys.readouterr().err
    assert f"It holds dataset folders: {corpora / 'mahjong'}; name one of them." in err, err
    assert "notes" not in err.split("It holds")[1]
    assert main(["info", str(corpora / "mahjong")]) == 0
