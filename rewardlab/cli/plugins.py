"""Plug-in commands: ``apply`` (rewards of plug-ins to a Parquet table) and ``check-plugin``."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from rewardlab.cli.options import (
    add_engine_options, add_format, add_format_options, format_options, refuse_engine_options,
)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"should be a number of seconds > 0; got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"should be a number of seconds > 0; got {text!r}")
    return value


def _add_isolation(p) -> None:
    p.add_argument("--timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="stop the plug-in after this many seconds (it runs in a child process; "
                   "default: no limit)")


def register(sub) -> None:
    from rewardlab.plugins.batch_modes import BATCH_MODES, CHECK_BATCH_SIZES, DEFAULT_BATCH_SIZES, DEFAULT_NUM_WORKERS
    from rewardlab.sources.kanachan.schema import CONVENTIONS

    sizes = ", ".join(f"{m} {s}" for m, s in DEFAULT_BATCH_SIZES.items() if s)
    p = sub.add_parser(
        "apply", help="run reward plug-ins over a dataset and write their rewards",
        description="Call each plug-in's get_reward on the data's transitions the way its contract's trainer "
        "does (kanachan's for kanachan data, the steps contract for step tables), check the contract after every "
        "call, and write the data's episode keys and step, the context every analysis needs (kanachan data: game, "
        "end_of_round, end_of_game, results; a step table: its flags) and the "
        "reward_<name> and done_<name> columns to a Parquet file (atomic write). A plug-in named like "
        "a column of the data (a step table's reward_recorded, a plug-in applied before) is refused "
        "unless --replace. Plug-ins are code: only the files named with --plugin run.")
    p.add_argument("dataset", nargs="+", metavar="DATA",
                   help="data file(s) of any format rewardlab reads (see --format), or one dataset folder")
    p.add_argument("--plugin", action="append", required=True, metavar="FILE",
                   help="a reward plug-in file (repeat for several)")
    p.add_argument("--batch-mode", choices=BATCH_MODES, default="episodes",
                   help="how transitions are cut into calls: episodes = one whole episode per call "
                   "(kanachan: its episode replay buffer), sequential = rows in order as a DataLoader with "
                   "num_workers=0, dataloader = as a DataLoader with --num-workers workers, fragments = episode "
                   "pieces, shuffled = a shuffling loader (default: episodes)")
    p.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help=f"rows per call, fragment length for fragments (default: {sizes})")
    p.add_argument("--contiguous", action="store_true",
                   help="pass contiguous=True in episodes mode (kanachan: its contiguous_training_data; "
                   "the default is False)")
    p.add_argument("--num-workers", type=int, default=DEFAULT_NUM_WORKERS, metavar="N",
                   help=f"DataLoader workers of --batch-mode dataloader (default {DEFAULT_NUM_WORKERS}, "
                   "what kanachan's cql/train.py uses on CUDA)")
    p.add_argument("--convention", choices=CONVENTIONS, default=None,
                   help="kanachan contract: build batches as kanachan's offline loaders do "
                   "(default) or as its simulator does (end_of_round on a game's last step, no "
                   "round summary)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled mode (default 0)")
    p.add_argument("--strict", action="store_true",
                   help="compare IN fields with a full copy after every call (slower, exact)")
    p.add_argument("--out", required=True, metavar="REWARDS.parquet",
                   help="output Parquet file; for a dataset folder (`rewardlab convert ... --out FOLDER`), a "
                   "folder name: a rewards dataset with the same parts, written part by part")
    add_engine_options(p, work="worked on")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--resume", action="store_true",
                   help="dataset folder: keep the parts a killed or interrupted run of this same command "
                   "finished (left in OUT.partial) and run the plug-ins over the others only (batch modes "
                   "episodes and fragments)")
    p.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                   help="stop at bad input (raise, default) or skip it (skip). A dataset folder: a missing, "
                   "truncated, foreign or duplicated part is left out whole (its file left in place) with a "
                   "warning naming it and the rows and episodes left out; the rewards dataset is written without "
                   "it and its manifest lists it. A file: the format's own skip mode for bad lines (as --option "
                   "on_error=skip)")
    p.add_argument("--replace", action="store_true",
                   help="replace the data's reward_<name> / done_<name> columns of a plug-in's name (by "
                   "default a plug-in named like a column of the data, e.g. one applied before, is refused)")
    add_format(p)
    add_format_options(p)
    _add_isolation(p)
    p.set_defaults(func=_apply)

    p = sub.add_parser(
        "check-plugin", help="check a plug-in's contract and batch invariance",
        description="Run a plug-in in every batch mode (whole episodes with contiguous False and True, "
        "rows in order as a DataLoader with 0 and --num-workers workers, episode fragments, shuffled batches) "
        "with two batch sizes, and, for kanachan data, on whole episodes in kanachan's simulation convention; "
        "check the data's contract (kanachan's, or the steps contract of a step table) after every call, and "
        "compare the rewards and dones of all runs. The plug-in is loaded and run in a child process: one that "
        "exits, crashes its process or runs past --timeout fails the check. Prints a report; exit "
        "status 0 when every check passes, 1 otherwise (2 when the check could not run, 130 on "
        "Ctrl-C).")
    p.add_argument("plugin", metavar="FILE", help="the reward plug-in file")
    p.add_argument("--data", action="append", required=True, metavar="DATA",
                   help="data file or dataset folder: a file of any format rewardlab reads (see --format; "
                   "repeat --data for several files), or one dataset folder (rewardlab convert ... --out "
                   "FOLDER): checked part by part, each part on its own, stopping at the first part that fails")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=list(CHECK_BATCH_SIZES),
                   metavar="N", help="batch sizes tried in the modes other than episodes "
                   f"(default: {' '.join(map(str, CHECK_BATCH_SIZES))})")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled mode (default 0)")
    p.add_argument("--num-workers", type=int, default=DEFAULT_NUM_WORKERS, metavar="N",
                   help=f"DataLoader workers of the dataloader runs (default {DEFAULT_NUM_WORKERS})")
    p.add_argument("--fast", action="store_true",
                   help="watch IN fields by version counters instead of full copies")
    add_engine_options(p, work="checked (default workers: the cores, at most 4; each holds its part)")
    add_format(p)
    add_format_options(p)
    _add_isolation(p)
    p.set_defaults(func=_check)


def _check_side_file(options: dict, inputs: list, out=None) -> None:
    """Refuse a ``--option skipped_path=FILE`` (the side file a skip-mode load writes) that is one of the
    command's inputs (a plug-in included: the source knows only its data files) or its ``--out``."""
    from rewardlab.core.errors import ParameterError
    from rewardlab.core.files import check_not_input

    side = options.get("skipped_path")
    if not isinstance(side, str):
        return  # none, or a value the source refuses with its own message
    check_not_input(side, inputs, name="--option skipped_path")
    if out is not None and Path(side).expanduser().resolve() == Path(out).expanduser().resolve():
        raise ParameterError("--option skipped_path", "should differ from --out (the command writes both)", side,
                             hint="Choose another path for the skipped lines.")


def _load(paths: list[str], format: str | None, options: dict | None = None):
    from rewardlab.sources.dispatch import load

    return load([Path(p) for p in paths], format=format, options=options or None)


def _forward(caught) -> None:
    """Warn again what a run recorded, after its summary (the CLI prints rewardlab's warnings as one line each:
    :func:`rewardlab.cli.main`)."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _apply_parts(args, names) -> int:
    from rewardlab.core.errors import ParameterError, RewardScaleWarning
    from rewardlab.engines import check_engine
    from rewardlab.plugins.apply_parts import CARRY_MODES, apply_to_dataset

    check_engine(args.engine, address=args.ray_address, argument="--engine", address_argument="--ray-address")
    if args.resume and args.batch_mode in CARRY_MODES:
        raise ParameterError("--resume", f"applies to --batch-mode episodes and fragments ({args.batch_mode} "
                             "carries rows from part to part, so a stopped run cannot pick up at a part)", True,
                             hint="Run it again from the start (remove OUT.partial first).")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RewardScaleWarning)
        manifest = apply_to_dataset(
            args.dataset[0], [Path(p) for p in args.plugin], args.out, batch_mode=args.batch_mode,
            batch_size=args.batch_size, seed=args.seed, contiguous=True if args.contiguous else None,
            num_workers=args.num_workers, convention=args.convention, strict=args.strict, isolate=True,
            timeout=args.timeout, replace=args.replace, overwrite=args.overwrite, resume=args.resume,
            engine=args.engine, workers=args.workers, address=args.ray_address, on_error=args.on_error)
    parts = len(manifest.parts)
    print(f"wrote {manifest.rows:,} transitions x {len(names)} plug-in(s) in {parts} part{'s' if parts != 1 else ''} "
          f"to {args.out}")
    _forward(caught)
    return 0


def _apply(args) -> int:
    import polars as pl

    from rewardlab.core import columns
    from rewardlab.core.files import atomic_path, check_not_input
    from rewardlab.contracts.checks import reward_scale
    from rewardlab.core.spec import attached
    from rewardlab.core.errors import ParameterError, RewardScaleWarning
    from rewardlab.plugins import apply_plugins, read_plugin
    from rewardlab.plugins.apply import check_column_clashes, rewards_table_columns
    from rewardlab.sources.storage import write_table

    out = Path(args.out)
    # read and compile every file first (a folder or a FIFO named as a plug-in is named as such); their
    # code runs only in the child process
    names = [read_plugin(p)[0] for p in args.plugin]
    check_not_input(out, [*args.dataset, *args.plugin], name="--out", folder_suffixes=(".parquet", ".arrow"))
    options = format_options(args)
    _check_side_file(options, [*args.dataset, *args.plugin], out)
    if args.batch_mode == "episodes" and args.batch_size is not None:
        raise ParameterError("--batch-size", "does not apply to --batch-mode episodes (one whole "
                             "episode per call)", args.batch_size,
                             hint="Leave it out, or pick another --batch-mode.")
    if args.contiguous and args.batch_mode != "episodes":
        raise ParameterError("--contiguous", "applies only to --batch-mode episodes (kanachan's data "
                             "loader always passes contiguous=False)", True)
    from rewardlab.sources.datasets import is_dataset_folder

    if len(args.dataset) == 1 and is_dataset_folder(args.dataset[0]):
        return _apply_parts(args, names)
    refuse_engine_options(args)
    if args.resume:
        raise ParameterError("--resume", "applies to a dataset folder (rewardlab convert ... --out FOLDER) only",
                             True, hint="A single-file output is written whole or not at all.")
    if args.on_error != "raise":  # a file: the format's own skip mode (bad lines), as --option on_error=skip
        if options.get("on_error", args.on_error) != args.on_error:
            raise ParameterError("--on-error", f"says {args.on_error} while --option on_error says "
                                 f"{options['on_error']}", args.on_error, hint="Give one of them.")
        options = {**options, "on_error": args.on_error}
    with atomic_path(out, overwrite=args.overwrite) as tmp:  # refuses an existing file up front
        frame = _load(args.dataset, args.format, options)
        spec = attached(frame)
        if not args.replace:  # before any plug-in runs
            check_column_clashes(frame.columns, list(zip(names, args.plugin)), argument="--plugin",
                                 replace="--replace",
                                 rename="Rename the plug-in file (its name comes from the file name)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RewardScaleWarning)
            result = apply_plugins(frame, [Path(p) for p in args.plugin], batch_mode=args.batch_mode,
                                   batch_size=args.batch_size, seed=args.seed,
                                   contiguous=True if args.contiguous else None,
                                   num_workers=args.num_workers, convention=args.convention,
                                   strict=args.strict, isolate=True, timeout=args.timeout,
                                   replace=args.replace)
        # keys, context, the data's own rewards (a step table's reward_recorded) and the plug-ins'
        kept = rewards_table_columns(result.columns, spec, names)
        write_table(result.select(kept), tmp, spec=spec)  # the spec, projected; a checksum in every page
    print(f"wrote {result.height:,} transitions x {len(names)} plug-in(s) to {out}")
    for name in names:
        rewards = result[columns.reward_column(name)]
        scale = reward_scale(rewards.cast(pl.Float64).to_numpy(), result[columns.done_column(name)].to_numpy())
        print(f"  {name}: {scale} (rewards returned as {str(rewards.dtype).lower()})")
    _forward(caught)
    return 0


def _check(args) -> int:
    from rewardlab.plugins import check_plugin, read_plugin

    read_plugin(args.plugin)  # read and compile it before reading data; it runs only in the child
    options = format_options(args)
    _check_side_file(options, [*args.data, args.plugin])
    from rewardlab.sources.datasets import is_dataset_folder

    if len(args.data) == 1 and args.format is None and not options and is_dataset_folder(args.data[0]):
        from rewardlab.engines import check_engine
        from rewardlab.plugins.check_parts import check_plugin_dataset

        check_engine(args.engine, address=args.ray_address, argument="--engine", address_argument="--ray-address")
        if args.workers is not None:
            from rewardlab.engines.embedded import check_workers

            check_workers(args.workers, argument="--workers")
        report = check_plugin_dataset(args.data[0], Path(args.plugin), batch_sizes=args.batch_sizes, seed=args.seed,
                                      num_workers=args.num_workers, strict=not args.fast, isolate=True,
                                      timeout=args.timeout, engine=args.engine, workers=args.workers,
                                      address=args.ray_address)
        print(report)
        sys.stdout.flush()
        return 0 if report.ok else 1
    refuse_engine_options(args)
    frame = _load(args.data, args.format, options)
    report = check_plugin(frame, Path(args.plugin), batch_sizes=args.batch_sizes, seed=args.seed,
                          num_workers=args.num_workers, strict=not args.fast, isolate=True,
                          timeout=args.timeout)
    print(report)
    sys.stdout.flush()
    return 0 if report.ok else 1
