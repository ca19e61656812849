"""Generate the MJAI game logs committed under data/mjai/ (see data/mjai/README.md).

    .venv/bin/python scripts/make_mjai_logs.py [--out data/mjai] [--only NAME ...] [--overwrite]

Engine: **riichienv 0.4.11** (PyPI; the ``test`` extra's pin), a Rust riichi
mahjong engine that plays full four-player games and keeps every game's MJAI
event log (``RiichiEnv.mjai_log``).  Each game is ``RiichiEnv(game_mode=...,
seed=...)`` (game mode 1: east-only "tonpusen", 2: half-length "hanchan";
riichienv's default ``GameRule``) played to its end by four
:class:`GreedyAgent` players, each with its own ``random.Random`` seeded from
the game's seed and the seat, so a seed gives the same game every time.

The agents (riichienv's own ``RandomAgent`` never wins a hand) play plausible
mahjong, in this order of preference:

* win (tsumo or ron) whenever it is legal; declare riichi whenever it is legal;
* a closed or added kan with probability 0.7, an open kan (daiminkan) 0.3;
* pon a dragon always, any other pon with probability 0.15; chi with 0.1;
* otherwise pass a call, or discard the tile whose removal leaves the lowest
  shanten (``riichienv.calculate_shanten``), ties broken at random;
* never the nine-terminals abortive draw (kyuushu kyuuhai): its discards win.

Every log is one compact JSON object per line (the engine's own key order),
``\\n`` line ends, one game per file; ``.json.gz`` files are gzip with mtime 0,
so a rerun gives the same bytes.  ``games.meta`` beside them records per file
the engine and version, the mode and seed, the engine's final ``scores()`` and
``ranks()`` (1-based), the rounds, the count of each event type and the share
of discards that are the drawn tile (``tsumogiri``).  A game whose share is
above 0.6 (the degenerate "every player discards the drawn tile" play that
``mjai`` 0.2.1's ``Bot`` produces) stops the script before anything is written.
The seeds were picked by playing seeds 0-299 of both modes and keeping games
that together show every event type, a double ron, riichi sticks carried over
and left over at the end, a tie in the final scores and a game cut short by a
negative score (tobi); each seed is used once, as both modes deal the same
opening rounds for one seed.  Files that exist are not replaced unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from importlib.metadata import version
from pathlib import Path

import riichienv
from riichienv import ActionType

from rewardlab.core.errors import FileAccessError, OutputExistsError
from rewardlab.core.files import atomic_open, check_output

ROOT = Path(__file__).resolve().parents[1]
ENGINE = "riichienv"
ENGINE_VERSION = "0.4.11"  # the version the committed files were generated with
MAX_TSUMOGIRI_SHARE = 0.6
GAME_MODES = {1: "tonpusen", 2: "hanchan"}

# file name -> (game_mode, seed); the seeds and what their games show: see the module docstring
GAMES = {
    "hanchan_102.json.gz": (2, 102),   # double ron, 2 riichi sticks left at the end, all three kinds of kan
    "hanchan_228.json": (2, 228),      # a riichi discard ronned (reach, no reach_accepted), tie in the final scores
    "hanchan_15.json": (2, 15),        # ends early: a player below zero (tobi)
    "tonpusen_245.json": (1, 245),     # 11 rounds (dealer repeats), all three kinds of kan
    "tonpusen_193.json.gz": (1, 193),  # 3 riichi sticks left at the end
    "tonpusen_196.json": (1, 196),     # short; double ron, 2 sticks left at the end (the test regenerates it)
}

FIRST_DRAGON = 31 * 4  # tile ids are 0-135 (four of each of the 34 kinds); P F C are kinds 31-33


class GreedyAgent:
    """Wins when it can, riichis when it can, calls sometimes, else discards towards the lowest shanten.

    Deterministic given ``seed``: all its random choices come from its own
    ``random.Random(seed)``.

    Examples
    --------
    >>> env = riichienv.RiichiEnv(game_mode=1, seed=3)
    >>> obs = env.reset()
    >>> [(seat, GreedyAgent(seed=seat).act(o).action_type == ActionType.DISCARD) for seat, o in obs.items()]
    [(0, True)]
    """

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def act(self, obs: riichienv.Observation) -> riichienv.Action:
        legal = obs.legal_actions()
        if not legal:
            raise RuntimeError(f"riichienv asked player {obs.player_id} to act with no legal action")
        by_type = collections.defaultdict(list)
        for action in legal:
            by_type[action.action_type].append(action)
        for kind in (ActionType.TSUMO, ActionType.RON, ActionType.RIICHI):
            if by_type[kind]:
                return by_type[kind][0]
        for kind, p in ((ActionType.ANKAN, 0.7), (ActionType.KAKAN, 0.7), (ActionType.DAIMINKAN, 0.3)):
            if by_type[kind] and self.rng.random() < p:
                return self.rng.choice(by_type[kind])
        if by_type[ActionType.PON]:
            pon = by_type[ActionType.PON][0]
            if pon.tile >= FIRST_DRAGON or self.rng.random() < 0.15:
                return pon
        if by_type[ActionType.CHI] and self.rng.random() < 0.1:
            return self.rng.choice(by_type[ActionType.CHI])
        if by_type[ActionType.DISCARD]:
            return self.discard(obs.hand, by_type[ActionType.DISCARD])
        if by_type[ActionType.PASS]:
            return by_type[ActionType.PASS][0]
        return legal[0]  # only kyuushu kyuuhai or a kan the dice said no to is left: take the first

    def discard(self, hand: list[int], discards: list[riichienv.Action]) -> riichienv.Action:
        """The discard leaving the lowest shanten; ties broken with the agent's generator."""
        best, choices = None, []
        for action in discards:
            rest = list(hand)
            rest.remove(action.tile)
            shanten = riichienv.calculate_shanten(rest)
            if best is None or shanten < best:
                best, choices = shanten, [action]
            elif shanten == best:
                choices.append(action)
        return self.rng.choice(choices)


def play(game_mode: int, seed: int) -> riichienv.RiichiEnv:
    """One full four-player game; returns the finished environment (``mjai_log``, ``scores()``, ``ranks()``)."""
    env = riichienv.RiichiEnv(game_mode=game_mode, seed=seed)
    agents = [GreedyAgent(seed=seed * 10 + seat) for seat in range(4)]
    obs = env.reset()
    while not env.done():
        obs = env.step({seat: agents[seat].act(o) for seat, o in obs.items()})
    return env


def mjai_lines(events: list[dict]) -> str:
    """The log as MJAI JSON lines: compact objects in the engine's key order, ``\\n`` after each."""
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)


def tsumogiri_share(events: list[dict]) -> float:
    """Share of ``dahai`` events that discard the tile just drawn (``tsumogiri: true``)."""
    discards = [e for e in events if e["type"] == "dahai"]
    return sum(bool(e["tsumogiri"]) for e in discards) / len(discards)


def summary(game_mode: int, seed: int, env: riichienv.RiichiEnv) -> dict:
    """What ``games.meta`` records for one game."""
    events = env.mjai_log
    counts = collections.Counter(e["type"] for e in events)
    return {
        "engine": ENGINE,
        "engine_version": version("riichienv"),
        "game_mode": game_mode,
        "game_mode_name": GAME_MODES[game_mode],
        "seed": seed,
        "scores": list(env.scores()),
        "ranks": list(env.ranks()),
        "rounds": counts["start_kyoku"],
        "lines": len(events),
        "events": dict(sorted(counts.items())),
        "tsumogiri_share": round(tsumogiri_share(events), 4),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "mjai", help="folder to write to (must exist)")
    parser.add_argument("--only", action="append", choices=sorted(GAMES), metavar="NAME",
                        help="generate only this file (repeatable); games.meta then lists only these")
    parser.add_argument("--overwrite", action="store_true", help="replace existing files")
    args = parser.parse_args(argv)

    running = version("riichienv")
    print(f"{ENGINE} {running}")
    if running != ENGINE_VERSION:
        print(f"warning: the committed logs were generated with {ENGINE} {ENGINE_VERSION}; "
              f"{running} may give other games", file=sys.stderr)
    names = [name for name in GAMES if name in (args.only or GAMES)]
    try:  # refuse an existing file before any game is played or written
        for name in [*names, "games.meta"]:
            check_output(args.out / name, overwrite=args.overwrite)
    except (OutputExistsError, FileAccessError) as exc:
        print(f"error: nothing written: {exc}", file=sys.stderr)
        return 1
    games = {}
    for name in names:
        game_mode, seed = GAMES[name]
        env = play(game_mode, seed)
        games[name] = (env.mjai_log, summary(game_mode, seed, env))
        info = games[name][1]
        print(f"{name}: {GAME_MODES[game_mode]} seed {seed}, {info['rounds']} rounds, {info['lines']} lines, "
              f"tsumogiri share {info['tsumogiri_share']:.3f}, scores {info['scores']}, ranks {info['ranks']}")
    degenerate = [name for name, (_, info) in games.items() if info["tsumogiri_share"] > MAX_TSUMOGIRI_SHARE]
    if degenerate:
        print(f"error: nothing written: in {', '.join(degenerate)} more than {MAX_TSUMOGIRI_SHARE:.0%} of the "
              "discards are the drawn tile (degenerate play: check the agents)", file=sys.stderr)
        return 1

    for name, (events, _) in games.items():
        with atomic_open(args.out / name, overwrite=args.overwrite) as f:
            f.write(mjai_lines(events))
    with atomic_open(args.out / "games.meta", overwrite=args.overwrite) as f:
        f.write(json.dumps({name: info for name, (_, info) in games.items()}, indent=2) + "\n")
    print(f"wrote {len(games)} logs and games.meta to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
