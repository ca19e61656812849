"""Export: the exported ranking plug-in on one 1-million-row TensorDict, vs the seed's per-row loop.

* rows/s of the exported file's ``get_reward`` on one TensorDict of 1,000,000
  rows (the sample tiled; built once, not timed), best and median of 15 calls
  (the calls take milliseconds, so a busy machine shows in the median).
* The same formula as a plain per-row Python loop (the seed's ranking
  example: ``.item()`` / ``.tolist()`` per row, then ``(vector[rank] - mean) /
  std``) on the same TensorDict.  The loop is timed on its first 50,000 rows
  and scaled linearly to 1,000,000 rows (its cost is per row); the ratio is
  loop time / vectorized time.
* Re-tuning on a whole frame: a new rank vector evaluated from a prepared
  frame of 1,000,000 rows (a gather), best of 5.
* The tuner's export of a tuned ranking plug-in (``RankingTuningSession.export``:
  render, round trip, write) on the sample tiled to 1,000,000 transitions
  (target: under 5 s), and on the bundled sample; best of 2 each.  The round
  trip compares every row bit for bit in one batch mode and runs check-plugin
  (every mode) on about 20,000 rows of whole games.  Before this design
  (check-plugin over every row, in every mode) it took 9.6 s on the sample.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

import rewardlab
from benchmarks._data import SAMPLE, best_time, tiled_frame, timings
from rewardlab.export import export_plugin
from rewardlab.domains.mahjong.families import Ranking, prepare_frame
from rewardlab.plugins import load_plugin
from rewardlab.sessions import RankingTuningSession

ROWS = 1_000_000
LOOP_ROWS = 50_000


def _loop_get_reward(vector, mean, std):
    """The seed's ranking example, per row, with the same constants."""

    def get_reward(data, contiguous):
        batch_size = int(data.size(0))
        sparse = data["sparse"]
        results = data["next", "results"]
        end_of_game = data["next", "end_of_game"]
        data["next", "reward"] = torch.zeros_like(end_of_game, dtype=torch.float64)
        for i in range(batch_size):
            if not end_of_game[i].item():
                continue
            seat = int(sparse[i, 6].item()) - 71
            scores = results[i, 4:8].tolist()
            score = scores[seat]
            ranking = 0
            for j in range(seat):
                if scores[j] >= score:
                    ranking += 1
            for j in range(seat + 1, 4):
                if scores[j] > score:
                    ranking += 1
            data["next", "reward"][i] = (vector[ranking] - mean) / std

    return get_reward


def run(report) -> None:
    frame = rewardlab.load_kanachan(SAMPLE, progress=False)
    family = Ranking.from_preset("tenhou_houou_7dan").with_constants_from(frame)
    big = tiled_frame(frame, ROWS + 1)
    td = rewardlab.FrameArrays(big).tensordict(slice(0, ROWS))
    with tempfile.TemporaryDirectory() as tmp:
        plugin = load_plugin(export_plugin(family, Path(tmp) / "houou.py"))
    with torch.no_grad():
        times = timings(lambda: plugin.get_reward(td, False), 15)
        vec_time, median = min(times), float(np.median(times))
        vectorized = td["next", "reward"].clone()
        report("exported ranking plug-in, 1M-row TensorDict (best of 15)", ROWS / vec_time, "rows/s",
               "target >= 10,000,000")
        report("exported ranking plug-in, 1M-row TensorDict (median of 15)", ROWS / median, "rows/s")
        report("exported ranking plug-in, time per 1M-row call (best)", vec_time * 1e3, "ms")

        p = family.params
        loop = _loop_get_reward(list(p.vector), p.mean, p.std)
        part = td[:LOOP_ROWS]
        loop_time = best_time(lambda: loop(part, False), repeat=2)
        assert torch.equal(part["next", "reward"], vectorized[:LOOP_ROWS]), "loop and plug-in disagree"
        scaled = loop_time * ROWS / LOOP_ROWS
        report(f"per-row loop (timed on {LOOP_ROWS:,} rows, scaled to 1M)", ROWS / scaled, "rows/s")
        report("speed-up of the exported plug-in over the per-row loop", scaled / vec_time, "x")

    prepared = prepare_frame(big.head(ROWS) if big.height == ROWS else big)
    vectors = np.random.default_rng(0).normal(size=(5, 4))
    i = iter(range(10**6))
    retune = best_time(lambda: family.with_params(vector=vectors[next(i) % 5]).evaluate(prepared), repeat=5)
    report(f"re-tune a rank vector on a prepared frame ({prepared.n_rows:,} rows)", retune * 1e3, "ms")

    big_rows = tiled_frame(frame, ROWS)
    for label, data in (("1M", big_rows), ("the sample", frame)):
        session = RankingTuningSession(data, preset="tenhou_tokujo_6dan")
        session.set_rank_value(3, -150.0)
        with tempfile.TemporaryDirectory() as tmp:
            k = iter(range(10))
            seconds = best_time(lambda: session.export(Path(tmp) / f"tuned_{next(k)}.py"), repeat=2)
        report(f"tuner export with round trip, {label} ({data.height:,} transitions), best of 2", seconds, "s",
               "target < 5 s" if label == "1M" else None)

