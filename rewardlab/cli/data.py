"""Data commands: ``sample``, ``convert``, ``info``."""

from __future__ import annotations

import json
from pathlib import Path

from rewardlab.cli.options import add_format, add_format_options, format_options


def register(sub) -> None:
    p = sub.add_parser("sample", help="write simulated kanachan annotation files",
                       description="Write kanachan offline-RL annotation lines from a seeded "
                       "simulation of 4-player mahjong games (.gz / .bz2 by suffix).")
    p.add_argument("--games", type=int, required=True, help="number of games")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, help="output file, e.g. data/sample.tsv.gz")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.set_defaults(func=_sample)

    p = sub.add_parser("convert", help="convert annotation files to a Parquet (or Arrow) dataset",
                       description="Parse and validate annotation files and write the frame to "
                       "a dataset (atomic write): .parquet (lz4; array columns as fixed-size "
                       "binary, decoded by rewardlab's loaders) or .arrow (Arrow IPC, zstd). "
                       "Loaders scan the result lazily.")
    p.add_argument("sources", nargs="+", metavar="SRC",
                   help="input files (kanachan annotation files: plain, .gz, .bz2)")
    p.add_argument("--out", required=True,
                   help="output .parquet or .arrow file, or a folder name without a suffix: a dataset of "
                   "episode-aligned Parquet parts with a manifest, for data larger than memory (`apply` works on it "
                   "part by part)")
    p.add_argument("--memory", default="512M", metavar="SIZE",
                   help="dataset of parts: the memory to stay near, e.g. 512M or 2G (default 512M); sets the "
                   "input chunk size and the rows per part")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="dataset of parts: cores to use (default: the cores available). kanachan text: "
                   "parse threads; with several input files, one worker process per file for every 4 cores "
                   "(--workers 1: one file after the other in this process)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--resume", action="store_true",
                   help="dataset of parts: keep the parts a killed or interrupted run of the same command "
                   "finished (in OUT.partial) and write the others, reading kanachan text again only from the "
                   "first file not converted whole; refused if the input files changed (size, time, a checksum "
                   "of their ends) or an option differs")
    add_format(p)
    add_format_options(p)
    _add_on_error(p)
    p.set_defaults(func=_convert)

    p = sub.add_parser("info", help="summarise a dataset",
                       description="Print games, episodes, transitions, rounds and the "
                       "distribution of final ranks and scores (of another source's frame: its spec, "
                       "transitions and episodes). With --formats, list the input formats.")
    p.add_argument("dataset", nargs="*", help="input files or a converted .parquet / .arrow dataset")
    p.add_argument("--json", action="store_true", help="print JSON (stable keys)")
    p.add_argument("--formats", action="store_true", help="list the registered input formats and exit")
    add_format(p)
    add_format_options(p)
    _add_on_error(p)
    p.add_argument("--overwrite", action="store_true",
                   help="with --on-error skip: replace an existing side file of skipped lines")
    p.set_defaults(func=_info)


def _add_on_error(p) -> None:
    p.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                   help="stop at the first malformed line (raise, default) or skip it and the "
                   "episodes it breaks (skip); a dataset folder: stop at a missing, truncated, foreign or "
                   "duplicated part, or leave it out whole (its file left in place) and warn")
    p.add_argument("--skipped", metavar="FILE",
                   help="with --on-error skip: side file for the skipped lines "
                   "(default: OUT.skipped.txt or FIRST_SOURCE.skipped.txt; .skipped.parquet "
                   "for Parquet inputs)")


def _skipped_path(args, default_base: str, inputs) -> Path | None:
    """``--skipped``, else ``default_base`` + ``.skipped.parquet`` when the inputs are Parquet files (the
    skipped rows are kept as Parquet) or ``.skipped.txt`` (the skipped lines); None without skip mode."""
    if args.on_error != "skip":
        return None
    if args.skipped:
        return Path(args.skipped)
    parquet = all(Path(p).suffix.lower() == ".parquet" for p in inputs)
    return Path(default_base + (".skipped.parquet" if parquet else ".skipped.txt"))


def _report_skipped(result) -> None:
    import sys

    if result.skipped.height:
        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        print(f"skipped {result.skipped.height} lines ({counts}); kept verbatim in "
              f"{result.skipped_path}", file=sys.stderr)


def _sample(args) -> int:
    from rewardlab.domains.mahjong.simulate import write_sample

    summary = write_sample(args.out, games=args.games, seed=args.seed, overwrite=args.overwrite)
    print(f"wrote {summary.lines:,} lines ({summary.games} games, {summary.rounds} rounds) to {args.out}")
    return 0


def _check_outputs(args, inputs, outputs: dict) -> None:
    """Refuse, with the option's name, an output that is an input or another output, or cannot be written."""
    from rewardlab.core.files import check_not_input, check_output
    from rewardlab.core.errors import ParameterError

    seen: dict[Path, str] = {}
    for name, path in outputs.items():
        if path is None:
            continue
        check_not_input(path, inputs, name=name)
        if Path(path).suffix or name != "--out":  # a folder --out (a dataset of parts) is checked by its writer
            check_output(path, overwrite=args.overwrite)
        key = Path(path).resolve()
        if key in seen:
            raise ParameterError(name, f"should differ from {seen[key]}", str(path))
        seen[key] = name


def _convert(args) -> int:
    import warnings

    from rewardlab.dataset import convert
    from rewardlab.core.errors import SkippedLinesWarning

    skipped = _skipped_path(args, args.out, args.sources)
    _check_outputs(args, args.sources, {"--out": args.out, "--skipped": skipped})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedLinesWarning)
        result = convert(args.sources, args.out, overwrite=args.overwrite, on_error=args.on_error,
                         skipped_path=skipped, format=args.format, options=format_options(args) or None,
                         memory=args.memory, workers=args.workers, resume=args.resume)
    _report_skipped(result)
    if hasattr(result, "manifest"):
        m = result.manifest
        print(f"wrote {m.rows:,} transitions ({m.episodes:,} episodes) in {len(m.parts)} part{'s' if len(m.parts) != 1 else ''} to {args.out}")
        if args.resume and result.files_read < result.files:
            print(f"resumed: read {result.files_read:,} of {result.files:,} input files (the "
                  f"{result.files - result.files_read:,} before them were converted whole by the stopped run)")
    else:
        print(f"wrote {result.frame.height:,} transitions to {args.out}")
    return 0


def _formats(args) -> int:
    from rewardlab.sources.registry import registered_sources

    sources = registered_sources()
    if args.json:
        print(json.dumps({name: {"description": s.description, "suffixes": list(s.suffixes),
                                 "by_content": s.sniff is not None, "spec": s.spec.name}
                          for name, s in sources.items()}, indent=2))
        return 0
    width = max(map(len, sources))
    for name, s in sources.items():
        how = " or ".join(x for x in (", ".join(s.suffixes), "by content" if s.sniff is not None else "") if x)
        print(f"{name:<{width}}  {s.description} [{how}]")
    return 0


def _info(args) -> int:
    import warnings

    from rewardlab.core.errors import ParameterError, SkippedLinesWarning
    from rewardlab.sources.dispatch import resolve_source, scan

    if args.formats:
        return _formats(args)
    if not args.dataset:
        raise ParameterError("dataset", "should name at least one file (or pass --formats)", [])
    paths = [Path(p) for p in args.dataset]
    files, source = resolve_source(paths, format=args.format)
    given = format_options(args)
    from rewardlab.sources.datasets import is_dataset_folder

    if len(paths) == 1 and source.name == "dataset" and not given and is_dataset_folder(paths[0]):
        if args.skipped:
            raise ParameterError("--skipped", "applies to input read line by line: a dataset folder's bad "
                                 "parts are left out in place (the warning names their files)", args.skipped)
        print(_folder_summary(paths[0], args.json, on_error=args.on_error))  # part by part: need not fit in memory
        return 0
    if source.read is None or (args.on_error == "raise" and source.scan is not None
                               and all(_is_dataset(p) for p in paths)):
        data = scan(files, format=source.name, options=given or None)  # a converted dataset, read lazily
    else:
        skipped = _skipped_path(args, str(paths[0]), paths)
        _check_outputs(args, paths, {"--skipped": skipped})
        options = dict(given) if skipped is None else {**given, "on_error": args.on_error,
                                                       "skipped_path": skipped, "overwrite": args.overwrite}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedLinesWarning)
            result = source.read(files, **source.check_options(options, "read"))
        _report_skipped(result)
        data = result.frame
    print(_summary(data, source.name, args.json, roles=_roles(source, files, given, data)))
    return 0


def _roles(source, files, given: dict, data) -> dict | None:
    """The source's report of which column plays which role (sources with a ``roles`` hook); a hook that
    takes ``frame`` gets the frame already loaded, ``data``, when it is one (not a lazy scan)."""
    if source.roles is None:
        return None
    import inspect

    import polars as pl

    accepted = inspect.signature(source.roles).parameters
    options = {k: v for k, v in given.items() if k in accepted}
    if "frame" in accepted and isinstance(data, pl.DataFrame):
        options["frame"] = data
    return source.roles(files, **options)


def _is_dataset(path: Path) -> bool:
    from rewardlab.sources.storage import is_dataset

    return is_dataset(path)


def _summary(data, format_name: str, as_json: bool, *, roles: dict | None = None) -> str:
    """kanachan's summary (games, ranks, scores) for a kanachan frame; spec, transitions and episodes otherwise."""
    import polars as pl

    from rewardlab.sources.kanachan import schema as S
    from rewardlab.dataset import summarize
    from rewardlab.sources.registry import spec_of

    lf = data.lazy() if isinstance(data, pl.DataFrame) else data
    names = lf.collect_schema().names()
    if set(S.KANACHAN_SPEC.required) <= set(names):
        summary = summarize(data)  # its JSON keeps summarize's keys; the text adds the episode lengths
        if as_json:
            return json.dumps(summary.to_dict() | ({"roles": roles} if roles is not None else {}), indent=2)
        return "\n".join([str(summary), *_roles_lines(roles),
                          *_digest_lines(_episode_digest(data), padded_by_contract=True)])
    spec = spec_of(data)
    counts = lf.select(transitions=pl.len(), episodes=spec.episode_end(names).sum()).collect().row(0, named=True)
    out = {"format": format_name, "spec": spec.name, "transitions": int(counts["transitions"]),
           "episodes": int(counts["episodes"] or 0), "columns": names}
    if spec.agent is not None and spec.agent in names:  # multi-agent: an episode is one agent's steps of a trial
        trial = [c for c in spec.episode if c != spec.agent and c in names]
        found = lf.select(agents=pl.col(spec.agent).n_unique(),
                          trials=pl.struct(trial).n_unique() if trial else pl.lit(None)).collect().row(0, named=True)
        out["agents"] = {"column": spec.agent, "agents": int(found["agents"]),
                         "trials": None if found["trials"] is None else int(found["trials"])}
    if roles is not None:
        out["roles"] = roles
    out["episode_summary"] = _episode_digest(data)
    return _counts_text(out, f"{format_name} (spec {spec.name})", as_json)


def _counts_text(out: dict, heading: str, as_json: bool) -> str:
    """``info``'s view of data other than kanachan's: ``out`` (format, spec, counts, columns, roles,
    episode digest) as JSON, or as lines under ``format  HEADING``."""
    if as_json:
        return json.dumps(out, indent=2)
    lines = [f"format       {heading}",
             f"episodes     {out['episodes']:>12,}",
             f"transitions  {out['transitions']:>12,}",
             "columns      " + ", ".join(out["columns"])]
    agents = out.get("agents")
    if agents is not None:
        trials = "" if agents["trials"] is None else f", over {agents['trials']:,} trials"
        lines.append(f"agents       {agents['agents']:>12,}  ({agents['column']}{trials}: an episode is one agent's "
                     "steps of a trial; rewardlab.joint_view lines them up per joint step)")
    return "\n".join(lines + _roles_lines(out.get("roles")) + _digest_lines(out["episode_summary"]))


def _folder_summary(folder, as_json: bool, *, on_error: str = "raise") -> str:
    """``info`` of a dataset folder, read part by part (the same text and JSON as for one frame; ``on_error``
    "skip": of its good parts, the others left out with a warning)."""
    from rewardlab.analysis.episode_parts import dataset_episode_summary
    from rewardlab.analysis.episode_summary import describe_episodes
    from rewardlab.dataset import summarize_dataset
    from rewardlab.sources.datasets import PartedDataset
    from rewardlab.sources.kanachan import schema as S

    ds = PartedDataset(folder, on_error=on_error)
    names = list(ds.columns)  # its own columns, as `info` of one file shows (a rewards folder: the rewards table)
    digest = _clean_digest(describe_episodes(dataset_episode_summary(ds)))
    if set(S.KANACHAN_SPEC.required) <= set(names):
        summary = summarize_dataset(ds)
        if as_json:
            return json.dumps(summary.to_dict(), indent=2)
        return "\n".join([str(summary), *_digest_lines(digest, padded_by_contract=True)])
    out = {"format": "dataset", "spec": ds.spec.name, "transitions": ds.rows, "episodes": ds.episodes,
           "columns": names, "episode_summary": digest}
    return _counts_text(out, f"dataset (spec {ds.spec.name}; a folder of {len(ds):,} parts)", as_json)


def _roles_lines(roles: dict | None) -> list[str]:
    """``rewardlab info``'s lines for a source's roles report (a list value: its items joined)."""
    if roles is None:
        return []
    return ["roles"] + [f"  {role:<10} {', '.join(v) if isinstance(v, list) else v}" for role, v in roles.items()]


def _episode_digest(data) -> dict:
    """The episode summary's digest (episodes, endings, lengths, returns per reward), JSON-ready."""
    import math

    from rewardlab.analysis.episode_summary import describe_episodes, episode_summary

    return _clean_digest(describe_episodes(episode_summary(data, lists=False)))


def _clean_digest(value):
    """An episode digest made JSON-ready: NaN and infinities as None."""
    import math

    if isinstance(value, dict):
        return {k: _clean_digest(x) for k, x in value.items()}
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _digest_lines(digest: dict, *, padded_by_contract: bool = False) -> list[str]:
    """``rewardlab info``'s lines for an episode digest: endings, final states, then length and return
    distributions (``padded_by_contract``: kanachan's frames, whose files pad the state after a game)."""
    def dist(d: dict) -> str:
        text = "  ".join(f"{k} {'-' if d[k] is None else format(d[k], '.4g')}"
                         for k in ("min", "p25", "median", "p75", "max", "mean", "std"))
        return text + (f"  (not finite: {d['nonfinite']:,} episodes, left out)" if d.get("nonfinite") else "")

    rows = [("episode endings", ", ".join(f"{k}: {v:,}" for k, v in digest["ended"].items()))]
    if "final_states" in digest and padded_by_contract:
        rows.append(("final states", "none: kanachan's contract pads the state after a game's last step"))
    elif "final_states" in digest:
        f = digest["final_states"]
        rows.append(("final states", f"kept for {f['kept']:,} of {f['kept'] + f['missing']:,} episodes"
                     + (f"; {f['missing']:,} without (their last step's next state is padding)"
                        if f["missing"] else "")))
    rows.append(("episode length", dist(digest["steps"])))
    if "time_per_step" in digest:
        t = digest["time_per_step"]
        rows.append(("time per step", "-" if t is None else format(t, ".4g")))
    rows += [(f"return {n}", dist(d)) for n, d in digest["returns"].items()]
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{text}" for label, text in rows]
    return lines
