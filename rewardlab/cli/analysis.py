"""Analysis commands: ``stats``, ``compare`` and ``plot`` over a rewards table or a frame with reward columns."""

from __future__ import annotations

import contextlib
import json
import math

from rewardlab.cli.options import add_engine_options, add_input_options, format_options, refuse_engine_options

_SCOPES = ("all", "nonzero", "boundary", "episode_end", "episode_return", "trajectory_return",
           "end_of_round", "end_of_game")
_KINDS = ("hist", "ecdf", "returns", "correlation", "scatter", "by-rank", "normalization", "episodes")
#: The range of ``plot --dpi`` (nothing else in rewardlab takes a resolution).  Below 20 dpi the
#: smallest labels are under one pixel, which FreeType refuses; a raster's memory grows with the
#: square of the resolution, and 1200 dpi (print) gives 5040 x 3840 pixels for a 4.2 x 3.2 in panel.
MIN_DPI, MAX_DPI = 20, 1200


def register(sub) -> None:
    p = sub.add_parser(
        "stats", help="statistics and normalization constants of reward columns",
        description="Print count, mean, std (population and sample), min, max, zero share and "
        "quantiles of each reward column, per scope. Works on a rewards table from `rewardlab "
        "apply` or a Parquet frame with reward columns (end_of_round / end_of_game scopes need "
        "the full frame). A rewards dataset folder (`rewardlab apply FOLDER --out REWARDS`) is "
        "read part by part in bounded memory; its quantiles are exact up to 10^7 values, then "
        "a KLL sketch's (the rank error is printed).")
    p.add_argument("data", nargs="+", metavar="REWARDS",
                   help="Parquet file(s) with reward_* columns, or one rewards dataset folder")
    p.add_argument("--reward", action="append", metavar="NAME",
                   help="a reward name (repeatable; default: every reward_* column)")
    p.add_argument("--scope", action="append", choices=_SCOPES,
                   help="which values (repeatable; default: all): episode_return sums each whole "
                   "episode (as `plot --kind returns` does), trajectory_return each trajectory cut at "
                   "the plug-in's own done (as kanachan's trainer does)")
    p.add_argument("--json", action="store_true",
                   help="print JSON: {source, rows, rewards: {NAME: {SCOPE: {...}}}} (stable keys; "
                   "quantile_method and quantile_rank_error say how the quantiles were computed)")
    p.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                   help="dataset folder: stop at a missing, truncated, foreign or duplicated part (raise, "
                   "default), or leave it out whole (its file left in place; a rewards folder and its base "
                   "leave out the same parts) and warn, naming it and the rows and episodes left out (skip)")
    add_engine_options(p, work="read")
    add_input_options(p)
    p.set_defaults(func=_stats)

    p = sub.add_parser(
        "compare", help="how candidate rewards agree: correlations, distances, most disagreeing episodes",
        description="Sum each candidate reward over each whole episode and compare the candidates pair by "
        "pair: Pearson and Spearman correlation of the episode returns, the Pearson distance "
        "sqrt((1 - pearson) / 2) (not EPIC: not invariant to shaping; `rewardlab diagnose` measures EPIC), "
        "and the episodes where the two disagree most (returns standardized "
        "per candidate). The command-line twin of the lab's comparison board. A rewards dataset folder "
        "is read part by part.")
    p.add_argument("data", nargs="+", metavar="REWARDS",
                   help="Parquet file(s) with reward_* columns, or one rewards dataset folder")
    p.add_argument("--reward", action="append", metavar="NAME",
                   help="a candidate (repeatable, or comma-separated: --reward top,points; default: every "
                   "reward_* column; at least two)")
    p.add_argument("--top", type=int, default=5, metavar="K",
                   help="most disagreeing episodes shown per pair (default 5; 0: none)")
    p.add_argument("--json", action="store_true",
                   help="print JSON: {source, episodes, rewards, pairs: [{a, b, pearson, spearman, pearson_distance, "
                   "most_disagreeing: [...]}]}")
    add_engine_options(p, work="read")
    add_input_options(p)
    p.set_defaults(func=_compare)

    p = sub.add_parser(
        "plot", help="write a figure of reward columns",
        description="Draw reward distributions, episode returns, correlations between candidates, "
        "reward by final rank (needs the full frame) or what normalization does, and write it "
        "(atomic write; the format follows the suffix).")
    p.add_argument("data", nargs="+", metavar="REWARDS",
                   help="Parquet file(s) with reward_* columns, or one rewards dataset folder (read part by "
                   "part for every kind; normalization: one pass in part order)")
    p.add_argument("--out", required=True, metavar="FIG", help="output image, e.g. fig.png or fig.svg")
    p.add_argument("--kind", choices=_KINDS, default="hist",
                   help="hist (default), ecdf: step rewards; returns: episode returns (one sum per "
                   "whole episode, as stats --scope episode_return); correlation: Spearman heat map "
                   "of episode returns; scatter: episode returns of the first two rewards; by-rank: "
                   "mean episode return per final rank; normalization: raw and normalized rewards, "
                   "of the first reward; episodes: episode returns of the first reward and episode "
                   "lengths, by how episodes ended. Every figure is titled with what it shows")
    p.add_argument("--reward", action="append", metavar="NAME",
                   help="a reward name (repeatable; default: every reward_* column)")
    p.add_argument("--facet", action="store_true", help="hist / ecdf / returns: one panel per reward")
    p.add_argument("--dpi", type=int, default=120,
                   help=f"resolution of raster output, {MIN_DPI} .. {MAX_DPI} (default 120)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    add_engine_options(p, work="read")
    add_input_options(p)
    p.set_defaults(func=_plot)


#: The ``plot`` kinds drawn from a dataset folder part by part (the others load it whole).
_PART_KINDS = ("hist", "ecdf", "returns", "correlation", "scatter", "episodes", "by-rank", "normalization")


def _folder(args):
    """The dataset folder named alone (no --format), opened (its parts checked), or None."""
    from rewardlab.sources.datasets import PartedDataset, is_dataset_folder

    if len(args.data) == 1 and args.format is None and not args.option and is_dataset_folder(args.data[0]):
        return PartedDataset(args.data[0], on_error=getattr(args, "on_error", "raise"))
    if getattr(args, "on_error", "raise") != "raise":
        from rewardlab.core.errors import ParameterError

        raise ParameterError("--on-error", "applies to a dataset folder named alone (its bad parts are left "
                             "out); a table is read whole", args.on_error)
    return None


def _engine(args) -> dict:
    """``--engine``, ``--workers``, ``--ray-address`` checked (named as typed), as the part-by-part functions'
    keyword arguments."""
    from rewardlab.engines import check_engine
    from rewardlab.engines.embedded import check_workers

    check_engine(args.engine, address=args.ray_address, argument="--engine", address_argument="--ray-address")
    if args.workers is not None:
        check_workers(args.workers, argument="--workers")
    return {"engine": args.engine, "workers": args.workers, "address": args.ray_address}


def _data(args):
    from rewardlab.analysis.stats import lazy_table  # it checks every input before any open

    paths = args.data if len(args.data) > 1 else args.data[0]
    if args.format is not None or args.option:  # --format NAME / --option: through the source registry
        from rewardlab.sources.dispatch import scan

        return scan(args.data, format=args.format, options=format_options(args) or None), ", ".join(args.data)
    return lazy_table(paths)


@contextlib.contextmanager
def _reading(args):
    """Turn a Parquet file that fails to decode while the command reads it into one clear error."""
    import polars as pl

    from rewardlab.core.errors import DataFormatError, RewardlabError

    try:
        yield
    except RewardlabError:
        raise
    except (pl.exceptions.ComputeError, OSError) as exc:
        text = " ".join(str(exc).split())
        raise DataFormatError(", ".join(args.data), None, None, "unreadable",
                              f"could not be read ({text})",
                              hint="Write the rewards table again with `rewardlab apply`.") from exc


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _stats(args) -> int:
    import polars as pl

    from rewardlab.analysis.stats import reward_stats
    from rewardlab.analysis.tables import column_names, rewards_to_use

    from rewardlab.analysis.stats_parts import dataset_reward_stats

    scopes = list(dict.fromkeys(args.scope or ["all"]))
    with _reading(args):
        folder = _folder(args)
        if folder is not None:
            source, rows = args.data[0], folder.rows
            results = dataset_reward_stats(folder, args.reward, scopes, **_engine(args))
        else:
            refuse_engine_options(args)
            lf, source = _data(args)
            names = rewards_to_use(column_names(lf), args.reward)
            rows = int(lf.select(pl.len()).collect().item())
            results = {n: {s: reward_stats(lf, n, scope=s) for s in scopes} for n in names}
    if args.json:
        out = {"source": source, "rows": rows,
               "rewards": {n: {s: _clean(st.to_dict()) for s, st in per.items()} for n, per in results.items()}}
        print(json.dumps(out, indent=2))
        return 0
    print(f"{source}: {rows:,} rows")
    for n, per in results.items():
        print(f"\nreward {n}")
        header = f"  {'scope':<15}{'count':>11}{'mean':>12}{'std':>12}{'sample_std':>12}{'min':>12}" \
                 f"{'max':>12}{'zero':>8}{'p01':>11}{'p50':>11}{'p99':>11}"
        print(header)
        for s, st in per.items():
            q = st.quantiles
            print(f"  {s:<15}{st.count:>11,}{_g(st.mean)}{_g(st.std)}{_g(st.sample_std)}{_g(st.min)}"
                  f"{_g(st.max)}{st.zero_fraction:>8.1%}{_g(q.get(0.01), 11)}{_g(q.get(0.5), 11)}"
                  f"{_g(q.get(0.99), 11)}")
        print(_quantile_note(per))
    return 0


def _compare(args) -> int:
    from rewardlab.analysis.compare import compare_rewards, episode_key_columns, episode_return_table
    from rewardlab.analysis.compare import most_disagreeing_episodes
    from rewardlab.analysis.tables import column_names, rewards_to_use
    from rewardlab.core.errors import check_int

    top = check_int("--top", args.top, low=0, rule="should be an integer >= 0")
    wanted = [n.strip() for r in args.reward or () for n in r.split(",") if n.strip()] or None
    with _reading(args):
        folder = _folder(args)
        if folder is not None:
            from rewardlab.analysis.episode_parts import dataset_episode_returns

            names = rewards_to_use(list(folder.columns), wanted)
            table, source = dataset_episode_returns(folder, names, **_engine(args)), args.data[0]
        else:
            refuse_engine_options(args)
            lf, source = _data(args)
            names = rewards_to_use(column_names(lf), wanted)
            table = episode_return_table(lf, names)
    if len(names) < 2:
        from rewardlab.core.errors import ParameterError

        raise ParameterError("--reward", "should name at least two candidates to compare", names,
                             hint="Name two or more (--reward a --reward b), or leave it out for every reward_* "
                             "column.")
    cmp = compare_rewards(table)
    keys = episode_key_columns(table)
    pairs = cmp.pairs().to_dicts()
    for pair in pairs:
        worst = most_disagreeing_episodes(table, pair["a"], pair["b"], k=top).to_dicts() if top else []
        pair["most_disagreeing"] = [_clean(row) for row in worst]
    if args.json:
        print(json.dumps({"source": source, "episodes": cmp.episodes, "rewards": list(cmp.names),
                          "pairs": [_clean(p) for p in pairs]}, indent=2, default=str))
        return 0
    print(f"{source}: {cmp.episodes:,} episodes, {len(cmp.names)} candidates ({', '.join(cmp.names)})")
    print("episode returns compared pair by pair (pearson_distance = sqrt((1 - pearson) / 2): 0 returns "
          "equal up to scale and shift, 1 opposite; not EPIC, not invariant to shaping)\n")
    width = max(len(n) for n in cmp.names)
    print(f"  {'a':<{width}}  {'b':<{width}}  {'pearson':>9}  {'spearman':>9}  {'pearson_distance':>16}")
    for p in sorted(pairs, key=lambda p: -p["pearson_distance"] if p["pearson_distance"] == p["pearson_distance"]
                    else 0.0):
        print(f"  {p['a']:<{width}}  {p['b']:<{width}}  {p['pearson']:>9.4f}  {p['spearman']:>9.4f}  "
              f"{p['pearson_distance']:>16.4f}")
    for p in pairs:
        if not p["most_disagreeing"]:
            continue
        print(f"\nmost disagreeing episodes, {p['a']} vs {p['b']} (z-scores of the episode returns)")
        print("  " + "  ".join(f"{k:>10}" for k in keys)
              + f"  {'return_a':>11}  {'return_b':>11}  {'z_a':>7}  {'z_b':>7}  {'gap':>6}")
        for row in p["most_disagreeing"]:
            print("  " + "  ".join(f"{str(row[k]):>10}" for k in keys)
                  + f"  {_g(row['return_a'], 11)}  {_g(row['return_b'], 11)}  {row['z_a']:>7.3f}"
                  f"  {row['z_b']:>7.3f}  {row['gap']:>6.3f}")
    return 0


def _quantile_note(per: dict) -> str:
    """The footnote under a reward's table: how its quantiles were computed, per scope where they differ."""
    from rewardlab.analysis.sketches import describe_method

    words = {s: describe_method(st.quantile_method, st.quantile_rank_error) for s, st in per.items()}
    if len(set(words.values())) == 1:
        return f"  quantiles: {next(iter(words.values()))}"
    return "  quantiles: " + "; ".join(f"{s}: {w}" for s, w in words.items())


def _g(v, width: int = 12) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return f"{'-':>{width}}"
    return f"{v:>{width}.5g}"


def _plot(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from rewardlab.core.errors import check_int

    check_int("--dpi", args.dpi, low=MIN_DPI, high=MAX_DPI, rule=f"should be an integer in [{MIN_DPI}, {MAX_DPI}]")
    from pathlib import Path

    from rewardlab.core.files import check_not_input, check_output

    out = Path(args.out)
    check_not_input(out, args.data, name="--out", folder_suffixes=(".parquet",))
    check_output(out, overwrite=args.overwrite)  # before any work
    _check_image_suffix(out)
    with _reading(args):
        return _draw(args, out)


def _image_types() -> dict:
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def _check_image_suffix(out) -> str:
    """The image format ``--out`` names by its suffix, refused (before any work) when matplotlib writes none."""
    from rewardlab.core.errors import ParameterError

    fmt = out.suffix.lstrip(".").lower()
    if fmt not in _image_types():
        raise ParameterError("--out", "should end with an image suffix matplotlib writes ("
                             + ", ".join(sorted(_image_types())) + ")", str(out))
    return fmt


def plot_title(kind: str, rewards, *, facet: bool = False) -> str:
    """What a ``rewardlab plot --kind KIND`` figure shows, as its title.

    Examples
    --------
    >>> plot_title("correlation", ["top", "points"])
    'Spearman correlation of episode returns'
    """
    if kind == "hist":
        return "Distribution of nonzero step rewards" + (" (one panel per reward)" if facet else "")
    if kind == "ecdf":
        return "ECDF of nonzero step rewards" + (" (one panel per reward)" if facet else "")
    if kind == "returns":
        return "Distribution of episode returns (whole episodes)"
    if kind == "correlation":
        return "Spearman correlation of episode returns"
    if kind == "scatter":
        return f"Episode returns: {rewards[1]} against {rewards[0]}"
    if kind == "by-rank":
        return "Mean episode return by final rank"
    if kind == "episodes":
        return f"Episodes: returns of {rewards[0]} and lengths"
    return f"Normalization of {rewards[0]}: raw and normalized step rewards"


def _draw(args, out) -> int:
    import matplotlib.pyplot as plt

    from rewardlab import plots
    from rewardlab.core.files import atomic_path
    from rewardlab.core.errors import ParameterError
    from rewardlab.analysis.limits import display_limits, normalization_limits, series_limits
    from rewardlab.analysis.tables import column_names, rewards_to_use

    folder = _folder(args)
    if folder is not None and args.kind in _PART_KINDS:
        engine = _engine(args)
        names = rewards_to_use(list(folder.columns), args.reward)
        lf = None
    else:
        if folder is None:
            refuse_engine_options(args)
        else:
            refuse_engine_options(args, rule=f"applies to the kinds read part by part ({', '.join(_PART_KINDS)}); "
                                  f"--kind {args.kind} reads the folder whole", hint="Leave it out.")
        lf, _ = _data(args)
        names = rewards_to_use(column_names(lf), args.reward)
    kind = args.kind
    drawn = names  # the rewards the figure shows (scatter: two, normalization: one)
    sampled = ""
    if kind in ("hist", "ecdf"):
        import polars as pl

        if lf is None:
            from rewardlab.analysis.episode_parts import dataset_step_values

            values = dataset_step_values(folder, names, nonzero=False, **engine)
            frame = {n: v.values for n, v in values.items()}
            if any(v.sampled for v in values.values()):
                v = next(iter(values.values()))
                sampled = f" (a uniform sample of {v.limit:,} of {v.total:,} steps)"
        else:
            frame = lf.select([pl.col(f"reward_{n}").alias(n) for n in names]).collect()
        layout = "facet" if args.facet else "overlay"
        limits = None
        if kind == "hist":  # the bulk shown, what lies outside counted on the axis (one outlier flattens none)
            series = {n: frame[n] for n in names}
            limits = series_limits(series, nonzero=True) if args.facet else display_limits(series, nonzero=True)
        result = plots.plot_reward_distribution(frame, kind=kind, layout=layout, limits=limits)
    elif kind in ("returns", "correlation", "scatter"):
        from rewardlab.analysis.compare import compare_rewards, episode_return_table

        if lf is None:
            from rewardlab.analysis.episode_parts import dataset_episode_returns

            table = dataset_episode_returns(folder, names, **engine)
        else:
            table = episode_return_table(lf, names)
        if kind == "returns":
            series = {n: table[n] for n in names}
            result = plots.plot_return_distribution(
                table, layout="facet" if args.facet else "overlay",
                limits=series_limits(series) if args.facet else display_limits(series))
        elif kind == "correlation":
            result = plots.plot_correlation_heatmap(compare_rewards(table).matrix("spearman"))
        else:
            if len(names) < 2:
                raise ParameterError("--reward", "should name two rewards for --kind scatter", names)
            result = plots.plot_return_scatter(table, x=names[0], y=names[1])
            drawn = names[:2]
    elif kind == "episodes":
        if lf is None:
            from rewardlab.analysis.episode_parts import dataset_episode_summary

            summary = dataset_episode_summary(folder, rewards=names[:1], **engine)
        else:
            from rewardlab.analysis.episode_summary import episode_summary

            summary = episode_summary(lf, rewards=names[:1], lists=False)
        result = plots.plot_episode_summary(summary)
        drawn = names[:1]
    elif kind == "by-rank":
        if lf is None:
            from rewardlab.domains.mahjong.ranking_parts import dataset_reward_by_rank

            result = plots.plot_reward_by_rank(dataset_reward_by_rank(folder, names, **engine))
        else:
            from rewardlab.domains.mahjong.ranking import reward_by_rank

            result = plots.plot_reward_by_rank(reward_by_rank(lf, names))
    else:
        if lf is None:  # one ordered pass, the normalizers' state carried from part to part
            from rewardlab.analysis.normalizer_parts import dataset_normalized_rewards

            replayed = dataset_normalized_rewards(folder, names[0], **engine)
            replays = replayed.replays
            if replayed.sampled:
                sampled = f" (a uniform sample of {replays.height:,} of {replayed.total:,} steps)"
        else:
            from rewardlab.analysis.normalizers import normalized_rewards

            replays = normalized_rewards(lf, names[0])
        result = plots.plot_normalization(replays, clip_reward=10.0, limits=normalization_limits(replays))
        drawn = names[:1]
    axes = result if not hasattr(result, "figure") else [result]
    fig = axes[0].figure
    title = plot_title(kind, drawn, facet=args.facet) + sampled
    if len(axes) > 1:
        fig.suptitle(title)
    else:
        axes[0].set_title(title)
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in fig.canvas.get_supported_filetypes():  # checked before the work; the canvas has the last word
        plt.close(fig)
        raise ParameterError("--out", "should end with an image suffix matplotlib writes ("
                             + ", ".join(sorted(fig.canvas.get_supported_filetypes())) + ")", str(out))
    try:
        with atomic_path(out, overwrite=args.overwrite) as tmp:
            fig.savefig(tmp, dpi=args.dpi, format=fmt)
    finally:
        plt.close(fig)
    print(f"wrote {kind} figure of {', '.join(drawn)} to {out}")
    return 0
