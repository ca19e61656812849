"""Export commands: ``export ranking|points|round-delta|scaling|normalized|contest|el-farol`` (a plug-in file) and
``schedule``.

``rewardlab export contest [--preset contest|ppo2|rainbow] [--scale X --bonus X --frame-limit N --scaler
--backtracking --levels FILE] [--data RECORDING] --out FILE.py [--overwrite]`` writes the retro contest's
reward family (:mod:`rewardlab.domains.retro.family`) as a steps plug-in.

``rewardlab export el-farol [--preset global|difference|local|wonderful_life|uniform_division] [--kind K
--capacity B --nights K --home --clamp C] [--data JOINT] --out FILE.py [--overwrite]`` writes an El Farol
reward (:mod:`rewardlab.domains.el_farol.family`) as a reward-manager file (numpy only).

``rewardlab export normalized --plugin FILE.py --data DATA [--scope S] [--no-center] --out FILE.py
[--overwrite]`` writes a normalized version of the user's own steps plug-in
(:mod:`rewardlab.normalized_export`): a subcommand of its own rather than an
option of ``export scaling``, whose ``--reward`` / ``--key`` name a column of
the data, while this one runs a file.

``rewardlab export ranking (--preset NAME | --vector V1,V2,V3,V4)
[--points-offset N --points-divisor N] [--mean M --std S | --wiki-normalization |
--normalize-from DATA] [--measure-on DATA] [--format NAME] [--option NAME=VALUE ...]
--out FILE.py [--overwrite]``

``--normalize-from`` and ``--measure-on`` read data of any format (MJAI logs,
annotation files, a dataset; ``--format`` / ``--option`` as for every command
that reads data), so MJAI logs need no conversion first.

``--normalize-from`` sets mean and std to the population mean and standard
deviation of the exported (raw) reward over the dataset's end-of-game steps
(end-of-round and end-of-game steps for ``round-delta``), so the file's
rewards there have mean 0 and std 1.

The wiki-normalization pitfall: the ranking example of kanachan's wiki divides by
the *sample* standard deviation of the 4-entry vector (``--wiki-normalization``
reproduces it; ``--seed-normalization`` is its old, hidden and deprecated
name).  On complete games every rank is equally frequent, so the rewards at
the end-of-game steps then have a standard deviation of
``sqrt(3)/2 ~= 0.87``, not 1.  For the ranking family the command measures
this on the dataset (``--normalize-from`` or ``--measure-on``) and prints the
number next to what the written file gives.

``rewardlab schedule rljl|kanachan ...`` prints summary figures of an
epsilon-greedy schedule and its parameters as a JSON or YAML snippet (or the
Julia constructor call).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings

from rewardlab.cli.options import add_input_options, format_options
from rewardlab.core.errors import ParameterError, ScalingBlowUpWarning


def register(sub) -> None:
    p = sub.add_parser("export", help="write a reward family as a stand-alone plug-in file",
                       description="Write one self-contained kanachan reward plug-in file (imports "
                       "torch only) that reproduces rewardlab's family bit for bit.")
    fam = p.add_subparsers(dest="family", metavar="FAMILY", required=True)

    r = fam.add_parser("ranking", help="end-of-game ranking (optionally + points)",
                       description="Reward by final rank, optionally plus (score - offset) // divisor. "
                       "Write a vector starting with a minus sign as --vector=-1,0,0,1.")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", help="a preset name: " + ", ".join(_ranking_presets()))
    src.add_argument("--vector", help="four rewards by final rank, comma separated, e.g. 90,45,0,-135")
    r.add_argument("--points-offset", type=int, metavar="N",
                   help="add (score - N) // DIVISOR to the rank reward (with --points-divisor)")
    r.add_argument("--points-divisor", type=int, metavar="N", help="see --points-offset (integer >= 1)")
    _add_common(r, seed=True)
    r.set_defaults(func=_export_ranking)

    for name, family, help_ in (("points", "points", "end-of-game raw points (score - offset) / divisor"),
                                ("round-delta", "round_delta",
                                 "per-round score delta (delta - offset) / divisor, done at every round")):
        q = fam.add_parser(name, help=help_, description=help_ + ".")
        q.add_argument("--preset", help="a preset name: " + ", ".join(_presets(family))
                       + " (--offset / --divisor override it)")
        q.add_argument("--offset", type=float, help="subtracted before dividing")
        q.add_argument("--divisor", type=float, help="nonzero divisor")
        _add_common(q, seed=False)
        q.set_defaults(func=_export_other, family_name=family)

    c = fam.add_parser("scaling", help="steps contract: a recorded reward scaled by constants from data",
                       description="Write a plug-in for the steps contract that returns (data[KEY] - mean) / "
                       "std, with mean and std measured on the data (rewardlab.normalization_constants of "
                       "--reward over --scope), after checking the file bit for bit against rewardlab on the "
                       "data in every batch mode (and check-plugin on whole episodes); nothing is written "
                       "when that fails.")
    c.add_argument("--data", nargs="+", required=True, metavar="DATA",
                   help="the step table(s) the constants are measured and the file checked on")
    add_input_options(c)
    c.add_argument("--reward", default="recorded", help="the reward whose constants to use (default: recorded)")
    c.add_argument("--scope", default="all", help="the scope of the constants (default: all; a return scope "
                   "needs --no-center)")
    c.add_argument("--key", default="reward_recorded",  # rewardlab.scaling.RECORDED_KEY (not imported for --help)
                   help="the root IN key the plug-in scales: a numeric column, one number per step, that the "
                   "steps contract hands at the root (a state or a column of the spec; default: "
                   "reward_recorded, the reward a step table recorded)")
    c.add_argument("--no-center", action="store_true", help="divide by the std only (do not subtract the mean)")
    c.add_argument("--out", required=True, metavar="FILE.py", help="the plug-in file to write")
    c.add_argument("--overwrite", action="store_true", help="replace an existing file")
    c.add_argument("--note", help="a note for the file's header (e.g. where it will be used)")
    c.set_defaults(func=_export_scaling)

    n = fam.add_parser("normalized", help="steps contract: your own plug-in, normalized by constants from data",
                       description="Write a plug-in for the steps contract that runs YOUR plug-in file (loaded "
                       "from beside the written file, at the relative path it has now, and refused at run time "
                       "if its SHA-256 changed: no code of yours is copied) and returns (its reward - mean) / "
                       "std, with mean and std measured by applying your plug-in to the data "
                       "(rewardlab.normalization_constants over --scope). The file is checked bit for bit "
                       "against rewardlab on the data in every batch mode (and check-plugin on whole "
                       "episodes); nothing is written when that fails.")
    n.add_argument("--plugin", required=True, metavar="FILE.py",
                   help="your steps plug-in file (get_reward(data, contiguous)); keep the written file where it "
                   "can reach this one at the same relative path")
    n.add_argument("--data", nargs="+", required=True, metavar="DATA",
                   help="the step table(s) the constants are measured and the file checked on")
    add_input_options(n)
    n.add_argument("--scope", default="all", help="the scope of the constants (default: all; a return scope "
                   "needs --no-center)")
    n.add_argument("--batch-mode", default="episodes", metavar="MODE",
                   help="how your plug-in is applied to measure the constants (default: episodes)")
    n.add_argument("--no-center", action="store_true", help="divide by the std only (do not subtract the mean)")
    n.add_argument("--out", required=True, metavar="FILE.py", help="the plug-in file to write")
    n.add_argument("--overwrite", action="store_true", help="replace an existing file")
    n.add_argument("--note", help="a note for the file's header (e.g. where it will be used)")
    n.set_defaults(func=_export_normalized)

    k = fam.add_parser("contest", help="steps contract: the retro contest's progress reward (Sonic)",
                       description="Write a plug-in for the steps contract that computes the OpenAI Retro Contest's "
                       "reward (script.lua's contest_reward / contest_done, per timestep) on retro recordings: "
                       "(progress - previous progress) * SCALE, plus (1 - frame / FRAME_LIMIT) * BONUS when the "
                       "level is finished. With --data the file is first checked bit for bit against rewardlab on "
                       "the recording in every batch mode (and check-plugin on whole episodes); nothing is written "
                       "when that fails.")
    k.add_argument("--preset", choices=("contest", "ppo2", "rainbow"),
                   help="contest (the script's reward), ppo2 (--scaler), rainbow (--backtracking); the other "
                   "options override it")
    k.add_argument("--scale", type=float, help="progress reward for a whole level (default 9000)")
    k.add_argument("--bonus", type=float, help="time bonus at frame 0 (default 1000)")
    k.add_argument("--frame-limit", type=int, metavar="N", help="frames over which the bonus falls to 0 "
                   "(default 18000)")
    k.add_argument("--scaler", action="store_true", default=None,
                   help="retro-baselines RewardScaler: every reward times 0.01")
    k.add_argument("--backtracking", action="store_true", default=None,
                   help="retro-baselines AllowBacktracking: pay only new maxima of the cumulative reward")
    k.add_argument("--levels", metavar="FILE", help="a level table of your own (an edited script.lua, or a JSON / "
                   "TOML table per game); its games replace the installed tables, the other games keep theirs "
                   "(default: the three Sonic games' installed script.lua tables)")
    k.add_argument("--data", metavar="RECORDING", help="a retro recording (read with --format retro: Parquet or CSV "
                   "in the retro layout) to check the file on before writing it")
    k.add_argument("--out", required=True, metavar="FILE.py", help="the plug-in file to write")
    k.add_argument("--overwrite", action="store_true", help="replace an existing file")
    k.add_argument("--note", help="a note for the file's header (e.g. where it will be used)")
    k.set_defaults(func=_export_contest)

    e = fam.add_parser("el-farol", help="reward manager: the El Farol bar problem's per-agent reward",
                       description="Write a reward-manager file (PRLT's RewardManager, numpy only) that computes an "
                       "El Farol reward over a joint frame: G (every agent), local, uniform division, difference "
                       "D_i = G(z) - G(z_-i) or Wonderful Life, with f(x) = x exp(-x / b) per night. Like PRLT's Bar "
                       "Problem manager it computes G on agent 0's call. With --data the file is first applied to "
                       "the joint frame and checked bit for bit against rewardlab (and check-plugin on whole "
                       "trials); nothing is written when that fails.")
    e.add_argument("--preset", choices=("global", "difference", "local", "wonderful_life", "uniform_division"),
                   help="the reward kind (default global); the other options override it")
    e.add_argument("--kind", help="the reward kind: global, local, uniform_division, difference, wonderful_life "
                   "(or G, L, UD, D, WL)")
    e.add_argument("--capacity", type=float, metavar="B", help="b, the night's best attendance (default 4)")
    e.add_argument("--nights", type=int, metavar="K", help="the nights, actions 0..K-1 (default 6)")
    e.add_argument("--home", action="store_true", default=None, help="action K means the agent stays home")
    e.add_argument("--clamp", type=int, metavar="C", help="wonderful_life: the night agent i is clamped to "
                   "(default: clamped away, which gives the difference reward)")
    e.add_argument("--data", metavar="JOINT", help="a joint step table (one row per episode, step and agent; see "
                   "--format) to check the file on before writing it")
    add_input_options(e)  # of the data --data reads
    e.add_argument("--out", required=True, metavar="FILE.py", help="the reward-manager file to write")
    e.add_argument("--overwrite", action="store_true", help="replace an existing file")
    e.add_argument("--note", help="a note for the file's header (e.g. where it will be used)")
    e.set_defaults(func=_export_el_farol)

    s = sub.add_parser("schedule", help="epsilon-greedy schedules: summary and config snippet",
                       description="Summarize an epsilon-greedy schedule and print its parameters "
                       "for the training program.")
    kinds = s.add_subparsers(dest="program", metavar="PROGRAM", required=True)
    j = kinds.add_parser("rljl", help="ReinforcementLearning.jl EpsilonGreedyExplorer",
                         description="ReinforcementLearning.jl's EpsilonGreedyExplorer (steps from 1).")
    j.add_argument("--kind", choices=("linear", "exp"), default="linear")
    j.add_argument("--init", type=float, default=1.0, help="ϵ_init (default 1.0)")
    j.add_argument("--stable", type=float, required=True, help="ϵ_stable")
    j.add_argument("--warmup", type=int, default=0, help="warmup_steps (default 0)")
    j.add_argument("--decay", type=int, default=0, help="decay_steps (default 0)")
    _add_schedule_common(j, formats=("json", "yaml", "julia"))
    j.set_defaults(func=_schedule_rljl)
    k = kinds.add_parser("kanachan", help="kanachan EpsilonGreedy (intended and actual)",
                         description="kanachan's EpsilonGreedy: the intended linear anneal and what its "
                         "code actually does (epsilon stays at epsilon_first unless one step() call "
                         "reports >= annealing_steps steps).")
    k.add_argument("--first", type=float, required=True, help="epsilon_first")
    k.add_argument("--last", type=float, required=True, help="epsilon_last")
    k.add_argument("--annealing-steps", type=int, required=True, help="annealing_steps")
    k.add_argument("--increment", type=int, default=1,
                   help="steps the training loop reports per step() call (default 1)")
    _add_schedule_common(k, formats=("json", "yaml"))
    k.set_defaults(func=_schedule_kanachan)


def _ranking_presets() -> list[str]:
    from rewardlab.domains.mahjong.families.preset_values import preset_names  # plain data: no torch for --help

    return preset_names("ranking")


def _presets(family: str) -> list[str]:
    from rewardlab.domains.mahjong.families.preset_values import preset_names

    return preset_names(family)


class _WikiNormalization(argparse.Action):
    """``--wiki-normalization`` (or its deprecated name): True, remembering the spelling used."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.wiki_normalization = True
        namespace.wiki_flag = option_string
        if option_string == "--seed-normalization":
            print("rewardlab: --seed-normalization is deprecated; use --wiki-normalization", file=sys.stderr)


def _add_common(p, *, seed: bool) -> None:
    norm = p.add_mutually_exclusive_group()
    norm.add_argument("--normalize-from", metavar="DATA",
                      help="mean and population std of the raw reward over the data's end-of-game "
                      "steps (end-of-round and end-of-game for round-delta); files or a folder of any format "
                      "that gives kanachan's frame (MJAI logs, annotation files, a dataset; see --format)")
    norm.add_argument("--mean", type=float, help="typed mean (with --std)")
    if seed:
        norm.add_argument("--wiki-normalization", action=_WikiNormalization, nargs=0, dest="wiki_normalization",
                          default=False, help="the recipe of kanachan's wiki ranking example: vector mean "
                          "and sample std (see the note it prints)")
        norm.add_argument("--seed-normalization", action=_WikiNormalization, nargs=0, dest="wiki_normalization",
                          default=False, help=argparse.SUPPRESS)  # deprecated name, kept working
        p.add_argument("--measure-on", metavar="DATA",
                       help="measure the wiki normalization and the written rewards on this data "
                       "(default: the --normalize-from data; see --format)")
    p.add_argument("--std", type=float, help="typed std (with --mean)")
    add_input_options(p)  # of the data --normalize-from / --measure-on read
    p.add_argument("--out", required=True, metavar="FILE.py", help="the plug-in file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--note", help="a note for the file's header (e.g. where it will be used)")


def _add_schedule_common(p, *, formats) -> None:
    p.add_argument("--steps", type=int, default=1_000_000,  # 10**9: rewardlab.schedules.MAX_HORIZON
                   help="horizon for the summary, 1 .. 10**9 steps (default 1e6)")
    p.add_argument("--threshold", type=float, default=0.1,
                   help="report the first step where epsilon < this (default 0.1)")
    p.add_argument("--format", choices=formats, default="json", help="snippet format (default json)")


def _parse_vector(text: str) -> tuple[float, ...]:
    parts = [t.strip() for t in text.split(",")]
    try:
        return tuple(float(t) for t in parts)
    except ValueError:
        raise ParameterError("--vector", "should be four numbers separated by commas", text) from None


def _normalize(family, args, prepared):
    from rewardlab.families.provenance import Provenance

    flag = getattr(args, "wiki_flag", "--wiki-normalization")
    if args.std is not None and (args.normalize_from or getattr(args, "wiki_normalization", False)):
        other = "--normalize-from" if args.normalize_from else flag
        raise ParameterError("--std", f"cannot be combined with {other}", args.std)
    if args.mean is not None or args.std is not None:
        if args.mean is None or args.std is None:
            missing = "--std" if args.std is None else "--mean"
            raise ParameterError(missing, "is required with " + ("--mean" if missing == "--std" else "--std"),
                                 None)
        return family.with_constants(args.mean, args.std, provenance=Provenance.typed("command line"))
    if getattr(args, "wiki_normalization", False):
        if family.name != "ranking":
            raise ParameterError(flag, "applies to a rank vector without points "
                                 "(the wiki's example computes the ranking + points constants from data)", True)
        return family.with_seed_constants()
    if prepared is not None:
        return family.with_constants_from(prepared)
    return family


def _refuse_existing(args, inputs=()) -> None:
    """Refuse a bad ``--out`` (empty, a folder, inside a file, existing, a name the plug-in loader refuses,
    one of the inputs) before any dataset is read.

    export_plugin / export_scaling_plugin check again when they write.
    """
    from rewardlab.core.files import check_not_input
    from rewardlab.export import plugin_target

    check_not_input(args.out, [getattr(args, "normalize_from", None), getattr(args, "measure_on", None), *inputs],
                    name="--out")  # even with --overwrite
    try:
        plugin_target(args.out, overwrite=args.overwrite)
    except ParameterError as exc:
        raise ParameterError("--out", exc.rule, exc.value, hint=exc.hint) from None


def _refuse_unread_format(args) -> None:
    """``--format`` / ``--option`` name how data is read: refused when no data is read."""
    if args.normalize_from is None and getattr(args, "measure_on", None) is None:
        for flag, value in (("--format", args.format), ("--option", args.option or None)):
            if value is not None:
                raise ParameterError(flag, "applies to the data --normalize-from (or --measure-on) reads, "
                                     "and none is given", value,
                                     hint="Pass --normalize-from DATA, or leave the option out.")


def _prepare(path, args):
    """The prepared frame of ``path``, read with ``--format`` and ``--option`` (detected when not given)."""
    if path is None:
        return None
    import dataclasses

    from rewardlab.domains.mahjong.families import prepare_frame
    from rewardlab.sources.dispatch import scan

    options = format_options(args)
    if args.format is None and not options:
        return prepare_frame(path)
    prepared = prepare_frame(scan(path, format=args.format, progress=False, options=options or None))
    return dataclasses.replace(prepared, source=str(path))  # named by its path, as prepare_frame(path) does


def _report(family, path, prepared, dataset: str | None) -> None:
    from rewardlab.families.provenance import SCOPE_WORDS, population_constants

    print(f"wrote {path}")
    print(f"  {family.describe()}")
    if family.params.provenance.kind == "default":
        print("  note: no normalization (mean 0, std 1); kanachan asks for rewards near mean 0, std 1. "
              "Pass --normalize-from DATASET.")
    if prepared is not None:
        reward, _ = family.evaluate(prepared)
        values = reward[prepared.rows(family.scope)]
        mean, std = population_constants(values)
        mean = 0.0 if abs(mean) < 5e-5 else mean  # do not print -0.0000
        print(f"  on {dataset}: the written rewards have mean {mean:.4f} and population std {std:.4f} "
              f"over {values.size:,} {SCOPE_WORDS[family.scope]}")


def _export_ranking(args) -> int:
    from rewardlab.export import export_plugin
    from rewardlab.domains.mahjong.families import (Ranking, RankingParams, RankingPoints, RankingPointsParams,
                                     check_seed_normalization, ranking_preset)

    if args.preset is not None:
        family = ranking_preset(args.preset)
    else:
        family = Ranking(RankingParams(vector=_parse_vector(args.vector)))
    has_points = args.points_offset is not None or args.points_divisor is not None
    if has_points:
        if isinstance(family, RankingPoints):
            changes = {k: v for k, v in (("offset", args.points_offset), ("divisor", args.points_divisor))
                       if v is not None}
            family = family.with_params(**changes)
        else:
            for flag, value in (("--points-offset", args.points_offset),
                                ("--points-divisor", args.points_divisor)):
                if value is None:
                    raise ParameterError(flag, "is required to add points to a rank vector", None)
            family = RankingPoints(RankingPointsParams(vector=family.params.vector, offset=args.points_offset,
                                                       divisor=args.points_divisor))
    measure_path = args.measure_on or args.normalize_from
    _refuse_unread_format(args)
    _refuse_existing(args)
    prepared = _prepare(measure_path, args)
    norm_prepared = prepared if args.normalize_from else None
    if args.normalize_from and args.measure_on and args.measure_on != args.normalize_from:
        norm_prepared = _prepare(args.normalize_from, args)
    family = _normalize(family, args, norm_prepared)
    path = export_plugin(family, args.out, overwrite=args.overwrite, source=args.note)
    _report(family, path, prepared, measure_path)
    if family.name == "ranking":
        if prepared is not None:
            check = check_seed_normalization(prepared, family.params.vector)
            print(f"  wiki normalization check on {measure_path}: {check}")
        else:
            print("  note: the ranking example of kanachan's wiki divides by the vector's sample std, which leaves a "
                  "reward std of sqrt(3)/2 = 0.866 (not 1) on complete games; pass --normalize-from or "
                  "--measure-on DATASET to measure it on your data.")
    return 0


def _export_other(args) -> int:
    from rewardlab.export import export_plugin
    from rewardlab.domains.mahjong.families import family_class

    cls = family_class(args.family_name)
    if args.preset is not None:
        family = cls.from_preset(args.preset)
    else:
        family = cls()
    changes = {k: v for k, v in (("offset", args.offset), ("divisor", args.divisor)) if v is not None}
    if changes:
        family = family.with_params(**changes)
    _refuse_unread_format(args)
    _refuse_existing(args)
    prepared = _prepare(args.normalize_from, args)
    family = _normalize(family, args, prepared)
    path = export_plugin(family, args.out, overwrite=args.overwrite, source=args.note)
    _report(family, path, prepared, args.normalize_from)
    return 0


def _export_scaling(args) -> int:
    import dataclasses

    from rewardlab.analysis.stats import normalization_constants
    from rewardlab.scaling import check_scaling_key, export_scaling_plugin
    from rewardlab.sources.dispatch import load

    _refuse_existing(args, args.data)  # before any work
    frame = load(args.data if len(args.data) > 1 else args.data[0], format=args.format, progress=False,
                 options=format_options(args) or None)
    check_scaling_key(frame, args.key, name="--key")  # before any constant is measured
    constants = normalization_constants(frame, args.reward, scope=args.scope)
    constants = dataclasses.replace(constants, source=", ".join(args.data))  # measured on these files
    with warnings.catch_warnings():  # a blow-up is printed with the result (once, in its words), not warned
        warnings.simplefilter("ignore", ScalingBlowUpWarning)
        result = export_scaling_plugin(constants, args.out, data=frame, key=args.key, center=not args.no_center,
                                       overwrite=args.overwrite, source=args.note, progress=None)
    print(result)
    return 0


def _export_normalized(args) -> int:
    import dataclasses

    from rewardlab.normalized_export import export_normalized_plugin, plugin_constants
    from rewardlab.sources.dispatch import load

    from rewardlab.core.errors import check_choice
    from rewardlab.plugins.batch_modes import BATCH_MODES

    check_choice("--batch-mode", args.batch_mode, BATCH_MODES)
    _refuse_existing(args, [*args.data, args.plugin])  # before any work
    frame = load(args.data if len(args.data) > 1 else args.data[0], format=args.format, progress=False,
                 options=format_options(args) or None)
    applied, constants = plugin_constants(frame, args.plugin, scope=args.scope, batch_mode=args.batch_mode,
                                          progress=None)  # a bar on an interactive terminal
    constants = dataclasses.replace(constants, source=", ".join(args.data))  # measured on these files
    with warnings.catch_warnings():  # a blow-up is printed with the result (once, in its words), not warned
        warnings.simplefilter("ignore", ScalingBlowUpWarning)
        with _round_trip_bar() as bar:
            result = export_normalized_plugin(args.plugin, constants, args.out, data=applied,
                                              center=not args.no_center, batch_mode=args.batch_mode,
                                              overwrite=args.overwrite, source=args.note, progress=bar)
    print(result)
    return 0


def _export_contest(args) -> int:
    from rewardlab.core.files import check_input, check_not_input
    from rewardlab.domains.retro.family import ContestFamily, export_contest_plugin
    from rewardlab.sources.dispatch import load
    from rewardlab.sources.retro.levels import SONIC_GAMES, level_table, load_levels

    inputs = [p for p in (args.levels, args.data) if p is not None]
    _refuse_existing(args, inputs)  # before any work
    for path in inputs:
        check_input(path)
    changes = {k: v for k, v in (("scale", args.scale), ("bonus", args.bonus), ("frame_limit", args.frame_limit),
                                 ("scaler", args.scaler), ("backtracking", args.backtracking)) if v is not None}
    if args.levels is not None:
        table = {game: level_table(game) for game in SONIC_GAMES}
        table.update({game: dict(levels.max_x) for game, levels in load_levels(args.levels).items()})
        changes["levels"] = table
    try:
        family = ContestFamily.from_preset(args.preset or "contest", **changes)
    except ParameterError as exc:  # in the command's words: --scale, --frame-limit, ...
        flag = "--" + exc.name.replace("_", "-") if exc.name in changes and exc.name != "levels" else exc.name
        raise ParameterError(flag, exc.rule, exc.value, hint=exc.hint) from None
    data = None
    if args.data is not None:
        check_not_input(args.out, [args.data], name="--out")
        data = load(args.data, format="retro", progress=False)  # the retro source: checked, with its columns
    result = export_contest_plugin(family, args.out, data=data, overwrite=args.overwrite, source=args.note,
                                   progress=None)  # bars on an interactive terminal
    print(result)
    print(f"  {family.describe()}")
    return 0


def _export_el_farol(args) -> int:
    from rewardlab.core.files import check_input, check_not_input
    from rewardlab.domains.el_farol.family import ElFarolFamily, export_el_farol_manager
    from rewardlab.sources.dispatch import load

    _refuse_existing(args, [args.data] if args.data is not None else [])  # before any work
    if args.data is None:
        for flag, value in (("--format", args.format), ("--option", args.option or None)):
            if value is not None:
                raise ParameterError(flag, "applies to the data --data reads, and none is given", value,
                                     hint="Pass --data JOINT, or leave the option out.")
    changes = {k: v for k, v in (("kind", args.kind), ("capacity", args.capacity), ("nights", args.nights),
                                 ("home", args.home), ("clamp", args.clamp)) if v is not None}
    try:
        family = ElFarolFamily.from_preset(args.preset or "global", **changes)
    except ParameterError as exc:  # in the command's words: --capacity, --clamp, ...
        flag = "--" + exc.name if exc.name in changes else exc.name
        raise ParameterError(flag, exc.rule, exc.value, hint=exc.hint) from None
    data = None
    if args.data is not None:
        check_input(args.data)
        check_not_input(args.out, [args.data], name="--out")
        data = load(args.data, format=args.format, progress=False, options=format_options(args) or None)
    result = export_el_farol_manager(family, args.out, data=data, overwrite=args.overwrite, source=args.note)
    print(result)
    print(f"  {family.describe()}")
    return 0


@contextlib.contextmanager
def _round_trip_bar():
    """A ``progress(fraction, message)`` callable drawing a bar on an interactive terminal (else doing nothing)."""
    from tqdm.auto import tqdm

    from rewardlab.core.files import progress_enabled

    with tqdm(total=1000, desc="round trip", disable=not progress_enabled(None), leave=False,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}") as bar:
        def report(fraction: float, message: str) -> None:
            bar.n = min(1000, max(0, int(fraction * 1000)))
            bar.set_postfix_str(message[:60], refresh=True)

        yield report


def _print_snippet(schedule, fmt: str) -> None:
    from rewardlab.schedules import to_json, to_yaml

    if fmt == "yaml":
        sys.stdout.write(to_yaml(schedule))
    elif fmt == "julia":
        print(schedule.julia())
    else:
        print(to_json(schedule))


def _schedule_rljl(args) -> int:
    from rewardlab.schedules import ExplorerSchedule, check_horizon

    check_horizon(args.steps, name="--steps")  # before any work
    sched = ExplorerSchedule(kind=args.kind, epsilon_init=args.init, epsilon_stable=args.stable,
                             warmup_steps=args.warmup, decay_steps=args.decay)
    print(f"# ReinforcementLearning.jl, steps 1..{args.steps:,}: "
          f"{sched.summary(args.steps, threshold=args.threshold)}")
    _print_snippet(sched, args.format)
    return 0


def _schedule_kanachan(args) -> int:
    from rewardlab.schedules import KanachanEpsilonGreedy, check_horizon

    check_horizon(args.steps, name="--steps")  # before any work
    sched = KanachanEpsilonGreedy(epsilon_first=args.first, epsilon_last=args.last,
                                  annealing_steps=args.annealing_steps)
    intended = sched.summary(args.steps, threshold=args.threshold, actual=False, increment=args.increment)
    actual = sched.summary(args.steps, threshold=args.threshold, actual=True, increment=args.increment)
    print(f"# kanachan EpsilonGreedy, step({args.increment}) per {args.increment} steps, "
          f"steps 0..{args.steps - 1:,}")
    print(f"# intended: {intended}")
    print(f"# actual:   {actual}")
    if sched.annealing_steps and args.increment < sched.annealing_steps and sched.epsilon_first != sched.epsilon_last:
        print(f"# note: each step() call reports {args.increment} < annealing_steps = "
              f"{sched.annealing_steps} steps, so kanachan's epsilon never leaves epsilon_first "
              f"({sched.epsilon_first!r})")
    _print_snippet(sched, args.format)
    return 0
