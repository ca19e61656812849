"""Figures people can read: display limits that show the bulk and say what they leave out, small multiples,
and the widgets' toolbar clear of the figure (the browser test checks it on screen).

``display_limits`` is checked against a plain-loop twin of its rule (sorted values, interpolated quantiles,
counted by hand); the plots against ``numpy.histogram`` of the values within the limits.
"""

from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest

from rewardlab.analysis.limits import DisplayLimits, display_limits, normalization_limits, series_limits
from rewardlab.core.errors import ParameterError
from rewardlab.plots import plot_normalization, plot_return_distribution, plot_reward_distribution

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _quantile(xs: list[float], q: float) -> float:
    """NumPy's default (linear) quantile of sorted ``xs``, by hand."""
    pos = q * (len(xs) - 1)
    below = int(math.floor(pos))
    above = min(below + 1, len(xs) - 1)
    return xs[below] + (xs[above] - xs[below]) * (pos - below)


def _reference(values, *, nonzero=False, quantiles=(0.01, 0.99), reach=1.0):
    """The module's rule as a plain loop: (low, high, below, above, minimum, maximum, count, nonfinite)."""
    xs, nonfinite = [], 0
    for v in values:
        v = float(v)
        if nonzero and v == 0:
            continue
        if not math.isfinite(v):
            nonfinite += 1
            continue
        xs.append(v)
    if not xs:
        return None
    xs.sort()
    lo_q, hi_q = _quantile(xs, quantiles[0]), _quantile(xs, quantiles[1])
    span = hi_q - lo_q
    low, high = (max(xs[0], lo_q - reach * span), min(xs[-1], hi_q + reach * span)) if span > 0 else (xs[0], xs[-1])
    below = sum(1 for v in xs if v < low)
    above = sum(1 for v in xs if v > high)
    return low, high, below, above, xs[0], xs[-1], len(xs), nonfinite


@pytest.mark.parametrize("seed", range(6))
def test_display_limits_match_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    kind = seed % 3
    x = (rng.normal(size=n) if kind == 0 else rng.integers(-3, 4, size=n).astype(float) if kind == 1
         else rng.standard_cauchy(size=n))
    x[rng.integers(0, n, size=3)] = rng.choice([-70.0, 250.0, 0.0, np.nan, np.inf], size=3)
    for nonzero in (False, True):
        for quantiles, reach in (((0.01, 0.99), 1.0), ((0.05, 0.95), 0.5), ((0.25, 0.75), 0.0)):
            got = display_limits(x, nonzero=nonzero, quantiles=quantiles, reach=reach)
            low, high, below, above, minimum, maximum, count, nonfinite = _reference(
                x, nonzero=nonzero, quantiles=quantiles, reach=reach)
            assert got.low == pytest.approx(low, rel=1e-12, abs=1e-12)
            assert got.high == pytest.approx(high, rel=1e-12, abs=1e-12)
            assert (got.below, got.above, got.count, got.nonfinite) == (below, above, count, nonfinite)
            assert (got.minimum, got.maximum) == (minimum, maximum)


def test_limits_keep_well_behaved_data_whole_and_leave_out_a_lone_extreme():
    rng = np.random.default_rng(0)
    normal = rng.normal(size=100_000)
    assert display_limits(normal).outside == 0  # the tails of a normal sample are not outliers
    assert display_limits([-1.5, 0.0, 0.4, 1.1] * 240).range == (-1.5, 1.1)  # a few discrete values
    bulk = np.r_[rng.normal(-0.05, 0.01, size=5000), -70.7, -2.0]
    limits = display_limits(bulk)
    assert limits.below == 2 and limits.above == 0 and -0.2 < limits.low < -0.08
    assert limits.note == "2 values outside the limits, min -70.7, max " + f"{bulk.max():.4g}"
    # nearly every value equal: no scale to judge by, the whole range stays
    assert display_limits([-1.0] * 500 + [0.0]).range == (-1.0, 0.0)
    # sparse rewards: the zeros would make every quantile 0
    assert display_limits([0.0] * 1000 + [1.0, 2.0, 3.0], nonzero=True).range == (1.0, 3.0)
    # several series (an overlay) are pooled; per series (small multiples) each has its own
    pooled = display_limits({"a": [1.0, 2.0], "b": [10.0, 11.0]})
    assert pooled.range == (1.0, 11.0) and pooled.count == 4
    assert {k: v.range for k, v in series_limits({"a": [1.0, 2.0], "b": [10.0, 11.0]}).items()} == {
        "a": (1.0, 2.0), "b": (10.0, 11.0)}
    empty = display_limits([0.0, np.nan], nonzero=True)
    assert empty.count == 0 and math.isnan(empty.low) and empty.note == "1 value not finite"


def test_limits_validation():
    with pytest.raises(ParameterError, match=r"`quantiles` should rise"):
        display_limits([1.0, 2.0], quantiles=(0.9, 0.1))
    with pytest.raises(ParameterError, match=r"`quantiles\[1\]` should be in \[0, 1\]"):
        display_limits([1.0, 2.0], quantiles=(0.1, 2.0))
    with pytest.raises(ParameterError, match=r"`reach` should be >= 0"):
        display_limits([1.0, 2.0], reach=-1.0)
    with pytest.raises(ParameterError, match=r"`values` should be numbers"):
        display_limits(["a", "b"])
    with pytest.raises(ParameterError, match=r"`limits` should be None, a DisplayLimits"):
        plot_reward_distribution({"a": [1.0]}, limits=(0.0, 1.0))
    with pytest.raises(ParameterError, match=r"`limits` should be a pair of DisplayLimits"):
        plot_normalization(pl.DataFrame({"raw": [1.0], "gymnasium": [1.0]}), limits=display_limits([1.0]))


def _bar_edges(ax) -> tuple[float, float]:
    xs = np.concatenate([p.get_path().vertices[:, 0] for p in ax.patches])
    return float(xs.min()), float(xs.max())


def test_histograms_span_the_limits_and_say_what_they_leave_out():
    rng = np.random.default_rng(1)
    x = np.r_[np.zeros(500), rng.normal(0.5, 0.1, size=2000), -70.0]
    limits = display_limits({"r": x}, nonzero=True)
    ax = plot_reward_distribution({"r": x}, bins=20, limits=limits)
    assert _bar_edges(ax) == pytest.approx(limits.range)
    assert ax.get_xlim()[0] > -1.0  # the bulk fills the axis: -70 no longer stretches it
    assert ax.get_xlabel() == "reward\n1 value outside the limits, min -70, max " + f"{x.max():.4g}"
    # the bars are the values within the limits, as fractions of all nonzero steps
    nonzero = x[x != 0]
    expected = np.histogram(nonzero, bins=20, range=limits.range)[0] / nonzero.size
    heights = ax.patches[0].get_xy()[1:-1:2, 1]
    np.testing.assert_allclose(heights, expected)
    # nothing outside: the label is the plain one
    calm = plot_reward_distribution({"r": nonzero[nonzero > -1]}, limits=display_limits(nonzero[nonzero > -1]))
    assert calm.get_xlabel() == "reward"


def test_facet_limits_per_series_by_name_with_or_without_the_reward_prefix():
    frame = pl.DataFrame({"reward_a": [0.0, 1.0, 2.0, 3.0] * 50 + [400.0], "reward_b": [0.0, -1.0, -2.0, -3.0] * 50 + [-2.0]})
    axes = plot_reward_distribution(frame, layout="facet", bins=5, limits=series_limits(frame, nonzero=True))
    assert [a.get_title() for a in axes] == ["a", "b"]
    assert "1 value outside the limits, min 1, max 400" in axes[0].get_xlabel()
    assert axes[1].get_xlabel() == "reward" and _bar_edges(axes[1]) == pytest.approx((-3.0, -1.0))


def test_return_distribution_small_multiples():
    rng = np.random.default_rng(2)
    returns = {f"r{i}": rng.normal(i, 1.0 + i, size=300) for i in range(8)}
    axes = plot_return_distribution(returns, layout="facet", bins=12)
    assert len(axes) == 8 and len({id(a) for a in axes}) == 8  # one panel each, not one crowded Axes
    assert [a.get_title() for a in axes] == list(returns)
    for ax, (name, x) in zip(axes, returns.items()):
        assert len(ax.patches) == 1
        assert ax.get_legend_handles_labels()[1] == ["300 episodes"]
        heights = ax.patches[0].get_xy()[1:2 * 12:2, 1]  # a filled outline: up, across, down per bar
        np.testing.assert_array_equal(heights, np.histogram(x, bins=12)[0])
    fig = axes[0].figure
    assert len(fig.axes) == 8 and fig.get_figheight() >= 3 * 3.0  # a grid, three panels a row
    overlay = plot_return_distribution(returns)
    assert len(overlay.patches) == 8  # the overlay stays the default
    with pytest.raises(ParameterError, match=r"`layout` should be one of"):
        plot_return_distribution(returns, layout="grid")


@pytest.fixture(scope="module")
def mountaincar_replays():
    import rewardlab
    from rewardlab.sessions import locate

    frame = rewardlab.load(locate("data/gym/mountaincar_scripted.parquet"))
    return rewardlab.normalized_rewards(frame, "recorded")


def test_normalized_reward_histogram_shows_the_bulk_not_the_first_steps(mountaincar_replays):
    """Gymnasium's replay starts at -70.7 (a running std of almost nothing); every later step is near -0.05."""
    normalized = mountaincar_replays
    assert normalized["gymnasium"].min() < -50
    before, after = normalization_limits(normalized)
    assert before.range == (-1.0, -1.0) and before.outside == 0  # a constant reward is shown as it is
    nonzero = normalized["raw"].to_numpy() != 0
    pooled = np.concatenate([normalized[m].to_numpy()[nonzero] for m in ("gymnasium", "sb3")])
    assert after.count == pooled.size and after.outside == int(((pooled < after.low) | (pooled > after.high)).sum())
    assert 0 < after.outside < 0.02 * pooled.size and after.high - after.low < 0.5
    axes = plot_normalization(normalized, clip_reward=10.0, limits=(before, after))
    lo, hi = axes[1].get_xlim()
    assert -0.5 < lo < hi < 0.0  # was [-74, 14]: the distribution a one-pixel spike
    assert axes[1].get_xlabel() == (f"normalized reward\n{after.outside} values outside the limits, "
                                    f"min {pooled.min():.4g}, max {pooled.max():.4g}")
    assert axes[1].get_lines() == []  # the clip bounds at ±10 lie outside the view: not drawn to stretch it
    plain = plot_normalization(normalized, clip_reward=10.0)  # without limits: the data's own range, as before
    assert plain[1].get_xlim()[0] < -70 and plain[1].get_xlabel() == "normalized reward"


def test_normalization_panel_draws_within_the_limits(mountaincar_replays):
    pytest.importorskip("ipympl")
    import rewardlab
    from rewardlab.sessions import locate
    from rewardlab.widgets import NormalizationPanel

    frame = rewardlab.load(locate("data/gym/mountaincar_scripted.parquet"))
    panel = NormalizationPanel(frame, reward="recorded", scope="episode_return")
    after = panel.plot.axes[1]
    assert after.get_xlim()[0] > -1.0 and "values outside the limits, min -70.71" in after.get_xlabel()


def test_figure_pane_keeps_its_toolbar_in_a_column_of_its_own():
    pytest.importorskip("ipympl")
    from rewardlab.widgets.figures import TOOLBAR_ROOM_PX, FigurePane

    pane = FigurePane(figsize=(4.0, 2.0))
    # ipympl places the toolbar (position: absolute) 3 px from the canvas widget's top-left corner for
    # "left": the widget's left padding is its room, wider than its 34 px buttons
    assert pane.canvas.toolbar_position == "left" and pane.canvas.toolbar_visible
    assert pane.canvas.layout.padding == f"0px 0px 0px {TOOLBAR_ROOM_PX}px" and TOOLBAR_ROOM_PX >= 40
    assert not pane.canvas.header_visible


def test_display_limits_is_a_plain_value():
    limits = DisplayLimits(0.0, 1.0, 10, 1, 0, -3.0, 1.0)
    assert limits.outside == 1 and limits.range == (0.0, 1.0)
    assert limits.note == "1 value outside the limits, min -3, max 1"
