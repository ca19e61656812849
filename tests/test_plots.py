"""Plots on the Agg backend: assert on the returned artists, close every figure."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest

from rewardlab.core.errors import ColumnNotFoundError, ParameterError
from rewardlab.plots import (
    plot_correlation_heatmap, plot_episode_steps, plot_normalization, plot_return_distribution,
    plot_return_scatter, plot_reward_by_rank, plot_reward_distribution, plot_step_marks, plot_term_shares,
)
from rewardlab.plots.axes import OWN_LABEL
from rewardlab.plots.diagnostics import MARK_BAND_COLOR, MARK_DOT_COLOR

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


STEPS = {
    "top": np.array([0.0] * 6 + [1.0, -1.0, -1.0, -1.0]),
    "points": np.array([0.0] * 5 + [3.0, 1.0, -2.0, 0.5, 4.0]),
}


def test_distribution_histogram_overlay():
    ax = plot_reward_distribution(STEPS, bins=5)
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["top (zero: 60.0%)", "points (zero: 50.0%)"]
    assert len(ax.patches) == 2  # one outline per plug-in (histtype="step")
    # the bars count nonzero steps only, as fractions of them
    heights = np.histogram(STEPS["points"][STEPS["points"] != 0], bins=5)[0] / 5
    poly = ax.patches[1]
    ys = poly.get_xy()[:, 1]
    assert ys.max() == pytest.approx(heights.max())
    assert ax.get_ylabel() == "fraction of nonzero steps"


def test_distribution_ecdf_facet_uses_given_axes():
    fig, axes = plt.subplots(1, 2)
    out = plot_reward_distribution(STEPS, ax=axes, kind="ecdf", layout="facet")
    assert list(out) == list(axes)
    line = axes[0].get_lines()[0]
    assert line.get_xdata().tolist() == [-1.0, -1.0, -1.0, 1.0]
    assert line.get_ydata().tolist() == [0.25, 0.5, 0.75, 1.0]
    assert [a.get_title() for a in axes] == ["top", "points"]
    assert axes[0].get_legend_handles_labels()[1] == ["zero: 60.0%"]  # the title names the reward


def test_distribution_of_frame_columns_and_all_zero_series():
    frame = pl.DataFrame({"game_id": ["g"] * 3, "reward_a": [0.0, 0.0, 0.0], "reward_b": [0.0, 1.0, 2.0]})
    ax = plot_reward_distribution(frame, kind="hist", bins=3)
    assert ax.get_legend_handles_labels()[1] == ["a (zero: 100.0%)", "b (zero: 33.3%)"]


def test_distribution_validation():
    with pytest.raises(ParameterError, match=r"`kind` should be one of 'hist', 'ecdf'. Received 'kde'."):
        plot_reward_distribution(STEPS, kind="kde")
    with pytest.raises(ParameterError, match=r"`ax` should be a sequence of 2 matplotlib Axes"):
        plot_reward_distribution(STEPS, ax=plt.subplots()[1], layout="facet")
    with pytest.raises(ParameterError, match=r"`bins` should be a positive integer. Received 0."):
        plot_reward_distribution(STEPS, bins=0)
    with pytest.raises(ParameterError, match=r"`ax` should be a matplotlib Axes or None"):
        plot_reward_distribution(STEPS, ax="axes")


def test_reward_by_rank_bars_and_error_bars():
    table = pl.DataFrame({
        "reward": ["top"] * 4 + ["points"] * 4, "rank": [0, 1, 2, 3] * 2,
        "mean": [1.0, -1.0, -1.0, -1.0, 15.0, 3.0, -4.0, -14.0],
        "ci_low": [1.0, -1.0, -1.0, -1.0, 14.0, 2.0, -5.0, -15.0],
        "ci_high": [1.0, -1.0, -1.0, -1.0, 16.0, 4.0, -3.0, -13.0],
    })
    fig, ax = plt.subplots()
    assert plot_reward_by_rank(table, ax=ax) is ax
    heights = [p.get_height() for p in ax.patches]
    assert heights == table["mean"].to_list()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1st", "2nd", "3rd", "4th"]
    assert ax.get_legend_handles_labels()[1] == ["top", "points"]
    assert len(ax.containers) == 4  # two bar containers and two error bar containers
    with pytest.raises(ColumnNotFoundError, match=r"'mean' not found"):
        plot_reward_by_rank(table.drop("mean"))


def test_return_distribution_skips_key_columns():
    returns = pl.DataFrame({"episode": [0, 1, 2], "game_id": ["a", "b", "c"], "seat": [0, 0, 0],
                            "top": [1.0, -1.0, -1.0], "points": [3.0, 0.5, -3.5]})
    ax = plot_return_distribution(returns, bins=4)
    assert ax.get_legend_handles_labels()[1] == ["top (3 episodes)", "points (3 episodes)"]
    assert len(ax.patches) == 2


def test_correlation_heatmap_shows_the_matrix():
    m = pl.DataFrame({"reward": ["a", "b"], "a": [1.0, 0.25], "b": [0.25, 1.0]})
    ax = plot_correlation_heatmap(m)
    np.testing.assert_array_equal(ax.images[0].get_array(), [[1.0, 0.25], [0.25, 1.0]])
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.25", "0.25", "1.00"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    with pytest.raises(ParameterError, match=r"`matrix` should be square"):
        plot_correlation_heatmap(m.select("reward", "b", "a"))


def test_return_scatter_offsets_are_the_data():
    returns = pl.DataFrame({"top": [1.0, -1.0, -1.0], "points": [3.0, 0.5, -3.5]})
    ax = plot_return_scatter(returns, x="top", y="points")
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), [[1.0, 3.0], [-1.0, 0.5], [-1.0, -3.5]])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("top episode return", "points episode return")
    with pytest.raises(ColumnNotFoundError, match=r"'delta' not found"):
        plot_return_scatter(returns, x="top", y="delta")


def test_normalization_before_after():
    normalized = pl.DataFrame({
        "raw": [0.0, 10.0, -20.0, 0.0], "constants": [0.1, 0.5, -1.0, 0.1],
        "gymnasium": [0.0, 1.0, -2.0, 0.0], "sb3": [0.0, 1.0, -1.5, 0.0], "sb3_clipped": [False, False, True, False],
    })
    before, after = plot_normalization(normalized, bins=4, clip_reward=1.5)
    assert before.get_title() == before.get_xlabel() == "raw reward"
    assert after.get_title() == after.get_xlabel() == "normalized reward"
    assert sum(p.get_height() for p in before.patches) == 2  # the nonzero raw steps only
    assert after.get_legend_handles_labels()[1] == ["constants", "gymnasium", "sb3"]
    assert sorted(line.get_xdata()[0] for line in after.get_lines()) == [-1.5, 1.5]
    assert before.get_legend_handles_labels()[1] == ["raw (50.0% of steps nonzero)"]
    with pytest.raises(ParameterError, match=r"at least one normalized column"):
        plot_normalization(normalized.select("raw"))


def test_plot_epsilon_schedule_draws_curve_reference_marks_and_threshold():
    from rewardlab.plots import plot_epsilon_schedule

    steps = np.arange(11)
    eps = np.linspace(1.0, 0.0, 11)
    ax = plot_epsilon_schedule(steps, eps, label="linear", reference=("intended", eps[::-1]),
                               marks={"warmup end": 2, "decay end": 8}, threshold=0.05)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["linear", "intended", "threshold 0.05", "warmup end: 2", "decay end: 8"]
    assert np.array_equal(ax.get_lines()[0].get_ydata(), eps)
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == "epsilon"
    plt.close(ax.figure)


def test_plot_epsilon_schedule_checks_shapes():
    from rewardlab.plots import plot_epsilon_schedule

    with pytest.raises(ParameterError, match=r"`epsilon` should be 1-D with the shape of `steps` \(3,\)"):
        plot_epsilon_schedule(np.arange(3), np.zeros(4))


LONG = [f"candidate_{i}_with_a_long_descriptive_name" for i in range(10)]


def test_heatmap_of_ten_long_named_candidates_has_full_labels_that_do_not_collide():
    rng = np.random.default_rng(0)
    m = np.corrcoef(rng.normal(size=(10, 50)))
    matrix = pl.DataFrame({"reward": LONG, **{n: m[:, i] for i, n in enumerate(LONG)}})
    ax = plot_correlation_heatmap(matrix)
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        assert [t.get_text() for t in labels] == LONG  # full names, never cut
        boxes = [t.get_window_extent(renderer) for t in labels]
        for a, b in zip(boxes, boxes[1:]):
            assert not a.overlaps(b), (a, b)
        figure_box = ax.figure.bbox
        assert all(figure_box.x0 <= bx.x0 and bx.x1 <= figure_box.x1 + 1 and figure_box.y0 <= bx.y0
                   for bx in boxes)  # inside the figure: readable in the saved image


def _legend_outside(ax) -> bool:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # constrained layout must find room for the legends
        ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    legend = ax.get_legend()
    return legend is not None and legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_legends_of_ten_candidates_lie_outside_the_axes():
    rng = np.random.default_rng(1)
    values = {n: rng.normal(size=200) for n in LONG}
    assert _legend_outside(plot_reward_distribution(values))
    assert all(_legend_outside(a) for a in plot_reward_distribution(values, layout="facet"))
    assert _legend_outside(plot_return_distribution(values))
    table = pl.DataFrame({"reward": [n for n in LONG for _ in range(4)], "rank": list(range(4)) * 10,
                          "mean": rng.normal(size=40)})
    assert _legend_outside(plot_reward_by_rank(table))
    assert _legend_outside(plot_return_scatter(pl.DataFrame(values), x=LONG[0], y=LONG[1]))
    before, after = plot_normalization(pl.DataFrame({"raw": rng.normal(size=50), "constants": rng.normal(size=50)}))
    assert _legend_outside(before) and _legend_outside(after)


# --------------------------------------------------------------------------
# One episode's steps with the marked ones, a composite reward's terms
# --------------------------------------------------------------------------


def band_edges(collection):
    """(left, right) of each band of a broken_barh collection, in x order."""
    return sorted((float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in collection.get_paths())


def test_episode_steps_draws_each_series_the_marks_and_the_end():
    steps = np.arange(10.0) + 100.0
    rewards = {"a$x$": np.arange(10.0), "b": -np.arange(10.0)}
    marked = np.array([7, 2, 3, 3])
    ax = plot_episode_steps(steps, rewards, marked=marked, title="ep 4", ended="truncated", color="C2")
    assert ax.figure.get_label() == OWN_LABEL  # a figure of its own, like the other plots
    series, end = ax.lines[:2], ax.lines[2]
    assert [line.get_label() for line in series] == [r"a\$x\$", "b"]  # $ escaped: no mathematics
    assert [line.get_color() for line in series] == ["C2", "C3"]
    for line, y in zip(series, rewards.values()):
        np.testing.assert_array_equal(line.get_xdata(), steps)
        np.testing.assert_array_equal(line.get_ydata(), y)
    assert end.get_label() == "end (truncated)" and float(end.get_xdata()[0]) == 109.0
    bands, dots = ax.collections
    # steps 102-103 and 107, half a step on each side: a loop over the positions as reference
    expected, run = [], []
    for p in sorted(set(marked.tolist())):
        if run and p != run[-1] + 1:
            expected.append((steps[run[0]] - 0.5, steps[run[-1]] + 0.5))
            run = []
        run.append(p)
    expected.append((steps[run[0]] - 0.5, steps[run[-1]] + 0.5))
    assert band_edges(bands) == expected
    assert matplotlib.colors.to_hex(bands.get_facecolor()[0]) == MARK_BAND_COLOR
    np.testing.assert_array_equal(dots.get_offsets(), np.column_stack([steps[marked], rewards["a$x$"][marked]]))
    assert matplotlib.colors.to_hex(dots.get_facecolor()[0]) == MARK_DOT_COLOR
    assert ax.get_legend_handles_labels()[1] == [r"a\$x\$", "b", "steps a finding names (4)", "end (truncated)"]
    assert ax.get_title() == "ep 4" and ax.get_legend() is not None


def test_episode_steps_on_given_axes_without_marks():
    fig, ax = plt.subplots()
    out = plot_episode_steps(np.arange(3.0), {"r": np.zeros(3)}, ax=ax)
    assert out is ax and len(ax.lines) == 2 and not ax.collections  # the series and the end
    assert ax.lines[1].get_label() == "end"
    out = plot_episode_steps(np.arange(3.0), {"r": np.zeros(3)}, ax=ax, marked=np.array([], dtype=np.int64))
    assert not ax.collections


def test_episode_steps_checks_its_arguments():
    with pytest.raises(ParameterError, match="one value per step"):
        plot_episode_steps(np.arange(3.0), {"r": np.zeros(4)})
    with pytest.raises(ParameterError, match="positions into steps"):
        plot_episode_steps(np.arange(3.0), {"r": np.zeros(3)}, marked=np.array([3]))
    with pytest.raises(ParameterError, match="at least one series"):
        plot_episode_steps(np.arange(3.0), {})
    with pytest.raises(ParameterError, match="Axes"):
        plot_episode_steps(np.arange(3.0), {"r": np.zeros(3)}, ax="left")


def test_step_marks_as_bands_merge_neighbours_and_lines_stay_the_default():
    ax = plot_step_marks([4.0, 0.0, 2.0, 10.0, 2.0], width=2.0, label="")
    assert band_edges(ax.collections[-1]) == [(-1.0, 5.0), (9.0, 11.0)] and not ax.lines
    assert ax.get_legend_handles_labels()[1] == []  # "" draws no legend entry
    ax = plot_step_marks([1.0, 3.0], label="f")
    assert [float(line.get_xdata()[0]) for line in ax.lines] == [1.0, 3.0] and not ax.collections
    with pytest.raises(ParameterError, match="width"):
        plot_step_marks([1.0], width=0.0)


def test_term_shares_bars_words_and_labels():
    names = ["a$", "b", "c"]
    shares = np.array([1.2, -0.2, np.nan])
    ax = plot_term_shares(names, shares, np.array([2.0, 0.5, 0.0]))
    assert ax.figure.get_label() == OWN_LABEL
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == [1.2, -0.2, 0.0]  # a flat total's NaN share shows as an empty bar
    colors = [matplotlib.colors.to_hex(bar.get_facecolor()) for bar in ax.patches]
    assert colors == [matplotlib.colors.to_hex(c) for c in ("C0", "C3", "C0")]
    assert [t.get_text() for t in ax.texts] == ["  120.0% (std 2)", "  -20.0% (std 0.5)", "  n/a (flat total)"]
    assert [t.get_text() for t in ax.get_yticklabels()] == [r"a\$", "b", "c"]
    assert ax.yaxis_inverted()  # the first term on top
    fig, given = plt.subplots()
    assert plot_term_shares(["x"], [0.5], [1.0], ax=given) is given and len(given.patches) == 1
    with pytest.raises(ParameterError, match="one value per term"):
        plot_term_shares(names, shares[:2], np.ones(3))

