"""Compute the normalization constants embedded in the shipped plug-ins.

Not a plug-in (it imports rewardlab): run it on a dataset and paste the
printed literals into the plug-in files named in the output.

    .venv/bin/python data/plugins/tools/constants.py data/sample.tsv.gz

What is measured (over one dataset, population = the transitions the reward
is paid on; standard deviations are sample std, ddof=1, like torch's default):

* ``raw_points``: every episode's final score (``results[4 + seat]`` on the
  end-of-game step) -> ``_SCORE_MEAN``, ``_SCORE_STDEV``.
* ``rank_points_mjsoul_saint3``: ``[135, 65, -5, -255][rank] + (score - 25000) // 1000``
  per episode -> ``_REWARD_MEAN``, ``_REWARD_STDEV``.
* ``rank_points_mleague``: ``[500, 100, -100, -300][rank] + (score - 30000) // 100``
  per episode -> ``_REWARD_MEAN``, ``_REWARD_STDEV``.
* ``round_delta``: the player's score change in the round (``results[seat]``)
  on every step that ends a round or the game -> ``_DELTA_MEAN``, ``_DELTA_STDEV``.
"""

from __future__ import annotations

import sys

import numpy as np

RANKING_POINTS = {
    "rank_points_mjsoul_saint3": ([135.0, 65.0, -5.0, -255.0], 25000, 1000),
    "rank_points_mleague": ([500.0, 100.0, -100.0, -300.0], 30000, 100),
}


def compute_constants(frame) -> dict[str, dict[str, float]]:
    """``{plug-in name: {constant name: value}}`` measured on ``frame`` (the common frame).

    Examples
    --------
    >>> import rewardlab
    >>> constants = compute_constants(rewardlab.load_kanachan("data/sample.tsv.gz"))  # doctest: +SKIP
    >>> sorted(constants)  # doctest: +SKIP
    ['rank_points_mjsoul_saint3', 'rank_points_mleague', 'raw_points', 'round_delta']
    """
    from rewardlab.domains.mahjong.rules import ranks_from_scores

    results = frame["results"].to_numpy().reshape(-1, 8).astype(np.int64)
    seat = frame["seat"].to_numpy().astype(np.int64)
    eog = frame["end_of_game"].to_numpy()
    eor = frame["end_of_round"].to_numpy()

    scores = results[eog, 4:8]
    own = np.take_along_axis(scores, seat[eog, None], axis=1)[:, 0]
    ranks = ranks_from_scores(scores, seat[eog])
    out = {"raw_points": {"_SCORE_MEAN": float(own.mean()), "_SCORE_STDEV": float(own.std(ddof=1))}}
    for name, (by_rank, base, unit) in RANKING_POINTS.items():
        reward = np.asarray(by_rank)[ranks] + (own - base) // unit
        out[name] = {"_REWARD_MEAN": float(reward.mean()), "_REWARD_STDEV": float(reward.std(ddof=1))}
    ends = eor | eog
    delta = np.take_along_axis(results[ends, 0:4], seat[ends, None], axis=1)[:, 0]
    out["round_delta"] = {"_DELTA_MEAN": float(delta.mean()), "_DELTA_STDEV": float(delta.std(ddof=1))}
    return out


def main(argv: list[str]) -> int:
    import rewardlab

    if not argv:
        print(__doc__)
        return 2
    frame = rewardlab.load_kanachan(argv, progress=False)
    summary = rewardlab.summarize(frame)
    print(f"# from {', '.join(argv)}: {summary.transitions:,} transitions, "
          f"{summary.episodes:,} episodes, {summary.games:,} games")
    for name, constants in compute_constants(frame).items():
        print(f"\n# data/plugins/{name}.py")
        for key, value in constants.items():
            print(f"{key} = {value!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
