"""Golden values of the kanachan path, pinned before the core is reorganised (issue 11).

What a refactor of the core must not change, on the first 40 games of the
bundled sample: the TensorDicts a plug-in receives (every leaf's bytes,
dtype, shape and the key order, offline and simulation conventions, sliced
and gathered rows), every shipped plug-in's rewards, reward dtype and dones
in every batch mode, the text of every exported preset, and the loader's
error messages (``file:line: column N: ... [rule: name]``).

The values live in ``tests/golden/kanachan.json``.  When a change is meant to
alter them, regenerate the file and say why in the commit::

    .venv/bin/python tests/test_golden_kanachan.py --write
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "kanachan.json"
ROOT = HERE.parent
GAMES = 40
MODES = (("episodes", None, False), ("episodes", None, True), ("sequential", 64, None),
         ("dataloader", 64, None), ("fragments", 16, None), ("shuffled", 64, None))
CREATED = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

# (description, how to corrupt one line of a valid 3-game file)
CORRUPTIONS = (
    ("action out of range", lambda cols: cols[:5] + ["31"] + cols[6:]),
    ("non-integer numeric", lambda cols: cols[:2] + ["1,2,x,4,5,6"] + cols[3:]),
    ("too few columns", lambda cols: cols[:7]),
    ("sparse id too large", lambda cols: [cols[0], cols[1] + ",600"] + cols[2:]),
    ("next state differs", lambda cols: cols[:7] + ["9" + cols[7]] + cols[8:]),
)


def _digest(array) -> str:
    array = np.ascontiguousarray(array)
    return hashlib.sha256(array.tobytes()).hexdigest()[:24]


def _frame(sample):
    ends = sample["end_of_game"].to_numpy().nonzero()[0]
    return sample.head(int(ends[4 * GAMES - 1]) + 1)


def compute(sample) -> dict:
    import rewardlab
    from rewardlab.domains.mahjong.families import Points, Ranking, RankingPoints, RoundDelta
    from rewardlab.plugins import apply_plugins

    from lines import game_lines, gid, write

    frame = _frame(sample)
    out: dict = {"rows": frame.height}

    tds = {}
    rng = np.random.default_rng(7)
    for label, rows, convention in (
            ("all offline", None, "offline"), ("all simulation", None, "simulation"),
            ("slice 100:900", slice(100, 900), "offline"),
            ("gathered", rng.permutation(frame.height)[:1000], "offline")):
        td = rewardlab.to_tensordict(frame, rows=rows, convention=convention)
        tds[label] = [[list(k) if isinstance(k, tuple) else k, str(v.dtype), list(v.shape), _digest(v.numpy())]
                      for k, v in td.items(include_nested=True, leaves_only=True)]
    out["tensordicts"] = tds

    plugins = sorted((ROOT / "data" / "plugins").glob("*.py"))
    rewards = {}
    for path in plugins:
        for mode, size, contiguous in MODES:
            applied = apply_plugins(frame, path, batch_mode=mode, batch_size=size, contiguous=contiguous,
                                    seed=3, isolate=False, progress=False)
            reward = applied[f"reward_{path.stem}"]
            key = f"{path.stem} {mode} {size} {contiguous}"
            rewards[key] = [str(reward.dtype), _digest(reward.cast(float).to_numpy()),
                            _digest(applied[f"done_{path.stem}"].to_numpy())]
    out["rewards"] = rewards

    exports = {}
    for cls in (Ranking, Points, RankingPoints, RoundDelta):
        for preset in sorted(cls.presets):
            family = cls.from_preset(preset).with_constants_from(frame)
            text = rewardlab.render_plugin(family, source="golden test", created=CREATED)
            # the dataset path in the provenance differs between machines: drop those lines
            kept = "\n".join(line for line in text.splitlines() if str(ROOT) not in line
                             and "/tmp" not in line)
            exports[f"{cls.name} {preset}"] = hashlib.sha256(kept.encode()).hexdigest()[:24]
    out["exports"] = exports

    messages = {}
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = game_lines(gid(1), rounds=(2, 1)) + game_lines(gid(2), rounds=(1,)) + game_lines(gid(3))
        at = next(i for i, line in enumerate(base) if i > 2 and line.count("\t") == 9)  # a 10-column line
        for label, corrupt in CORRUPTIONS:
            lines = list(base)
            lines[at] = "\t".join(corrupt(lines[at].split("\t")))
            path = Path(tmp) / "bad.tsv"
            write(path, lines)
            try:
                rewardlab.load_kanachan(path, progress=False)
                messages[label] = "(loaded)"
            except ValueError as exc:
                messages[label] = str(exc).replace(str(path), "FILE")
    out["messages"] = messages
    return out


@pytest.fixture(scope="module")
def golden():
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN} is missing; write it with `python {Path(__file__).name} --write`")
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def current(sample_frame):
    return compute(sample_frame)


@pytest.mark.parametrize("part", ["rows", "tensordicts", "rewards", "exports", "messages"])
def test_kanachan_path_is_unchanged(golden, current, part):
    if isinstance(golden[part], dict):
        changed = sorted(k for k in golden[part] if golden[part][k] != current[part].get(k))
        assert not changed, f"{part} changed: {changed[:5]}"
        assert sorted(current[part]) == sorted(golden[part]), f"{part}: entries added or removed"
    else:
        assert current[part] == golden[part]


if __name__ == "__main__":  # regenerate: python tests/test_golden_kanachan.py --write
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    sys.path.insert(0, str(HERE))
    import rewardlab

    data = compute(rewardlab.load_kanachan(ROOT / "data" / "sample.tsv.gz", progress=False))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
