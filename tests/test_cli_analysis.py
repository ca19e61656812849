"""``rewardlab stats`` and ``rewardlab plot``."""

from __future__ import annotations

import json

import pytest

from analysis_data import rewards_table, with_rewards
from rewardlab.cli import main
from rewardlab.analysis.scopes import SCOPES
from rewardlab.analysis.stats import reward_stats


@pytest.fixture(scope="module")
def paths(sample_frame, tmp_path_factory):
    d = tmp_path_factory.mktemp("analysis_cli")
    frame = with_rewards(sample_frame)
    table, full = d / "rewards.parquet", d / "full.parquet"
    rewards_table(frame).write_parquet(table)
    frame.write_parquet(full)
    return table, full


def test_scopes_match_the_library():
    from rewardlab.cli import analysis

    assert analysis._SCOPES == SCOPES


def test_stats_json_is_stable_and_exact(paths, capsys):
    table, _ = paths
    assert main(["stats", str(table), "--scope", "all", "--scope", "episode_return", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["source", "rows", "rewards"]
    assert out["source"] == str(table)
    assert list(out["rewards"]) == ["top", "points", "delta"]
    assert list(out["rewards"]["delta"]) == ["all", "episode_return"]
    got = out["rewards"]["delta"]["episode_return"]
    ref = reward_stats(table, "delta", scope="episode_return")
    assert got["count"] == ref.count and got["std"] == pytest.approx(ref.std)
    assert got["quantiles"]["0.5"] == pytest.approx(ref.quantiles[0.5])


def test_stats_table_text(paths, capsys):
    _, full = paths
    assert main(["stats", str(full), "--reward", "points", "--scope", "end_of_game"]) == 0
    text = capsys.readouterr().out
    assert "reward points" in text and "end_of_game" in text and "reward top" not in text
    assert "sample_std" in text


def test_stats_errors_are_one_message(paths, capsys):
    table, _ = paths
    assert main(["stats", str(table), "--scope", "end_of_game"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rewardlab stats: error: scope 'end_of_game' needs the column 'end_of_game'")
    assert main(["stats", str(table), "--reward", "nope"]) == 2
    assert "'reward_nope' not found" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["hist", "ecdf", "returns", "correlation", "scatter", "by-rank", "normalization"])
def test_plot_writes_a_png(paths, tmp_path, kind, capsys):
    _, full = paths
    out = tmp_path / f"{kind}.png"
    assert main(["plot", str(full), "--out", str(out), "--kind", kind, "--dpi", "40"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {kind} figure" in capsys.readouterr().out


def test_plot_refuses_to_overwrite_and_checks_the_suffix(paths, tmp_path, capsys):
    table, _ = paths
    out = tmp_path / "fig.png"
    out.write_bytes(b"old")
    assert main(["plot", str(table), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == b"old"
    assert main(["plot", str(table), "--out", str(out), "--overwrite", "--facet", "--dpi", "40"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(table), "--out", str(tmp_path / "fig.xyz")]) == 2
    assert "`--out` should end with an image suffix" in capsys.readouterr().err
    assert main(["plot", str(table), "--out", str(tmp_path / "r.png"), "--kind", "by-rank"]) == 2
    assert "the ranking analysis is a mahjong analysis and needs the columns results, end_of_game" in \
        capsys.readouterr().err


def test_a_damaged_rewards_table_is_one_error_line(paths, tmp_path, capsys):
    table, _ = paths
    damaged = tmp_path / "damaged.parquet"
    data = bytearray(table.read_bytes())
    third = len(data) // 3
    data[third:third + 2000] = b"\xab" * 2000  # pages of a plain Polars table (no checksums) that fail to decode
    damaged.write_bytes(bytes(data))
    for argv in (["stats", str(damaged)], ["plot", str(damaged), "--out", str(tmp_path / "f.png")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        # read once with pyarrow first (page checksums, every page decoded), so the damage is named
        assert err.startswith(f"rewardlab {argv[0]}: error: {damaged}: the file is damaged or truncated (")
        assert "[rule: damaged_file]" in err and "run `rewardlab apply` again" in err
        assert err.count("\n") == 1
    assert not (tmp_path / "f.png").exists()


@pytest.mark.parametrize("kind, facet, title", [
    ("hist", False, "Distribution of nonzero step rewards"),
    ("hist", True, "Distribution of nonzero step rewards (one panel per reward)"),
    ("ecdf", False, "ECDF of nonzero step rewards"),
    ("returns", False, "Distribution of episode returns (whole episodes)"),
    ("correlation", False, "Spearman correlation of episode returns"),
    ("scatter", False, "Episode returns: points against top"),
    ("by-rank", False, "Mean episode return by final rank"),
    ("normalization", False, "Normalization of top: raw and normalized step rewards"),
    ("episodes", False, "Episodes: returns of top and lengths"),
])
def test_every_plot_kind_has_a_title_and_its_legends_outside_the_data(paths, tmp_path, monkeypatch, kind,
                                                                       facet, title):
    from matplotlib.figure import Figure

    from rewardlab.cli.analysis import _KINDS

    assert {"hist", "ecdf", "returns", "correlation", "scatter", "by-rank", "normalization",
            "episodes"} == set(_KINDS)
    saved = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (saved.append(self), real(self, *a, **k))[1])
    _, full = paths
    argv = ["plot", str(full), "--out", str(tmp_path / "f.png"), "--kind", kind, "--dpi", "40"]
    assert main(argv + (["--facet"] if facet else [])) == 0
    (fig,) = saved
    titles = [fig._suptitle.get_text()] if fig._suptitle is not None else [a.get_title() for a in fig.axes[:1]]
    assert titles == [title]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the command closed the figure; draw it again to measure
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:  # right of the axes: never over the data
            assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
