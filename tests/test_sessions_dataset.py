"""The ranking tuner on a dataset folder, part by part, against the same tuner on the whole frame.

The folder session never holds the frame: its prepared arrays come from
``prepare_dataset`` (per part, spooled fingerprint), its rank table from
``rank_table_of_dataset``, a game's steps from the part holding it, and the
export's round trip runs part by part.  Each is compared with the in-memory
path on the same rows, which is the independent reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import rewardlab
from rewardlab.core.errors import ExportCancelled, FrameError, ParameterError
from rewardlab.domains.mahjong.families import RoundDelta, prepare_dataset, prepare_frame
from rewardlab.sessions import CancelToken, RankingTuningSession
from rewardlab.sessions.roundtrip import roundtrip_check, roundtrip_check_dataset
from rewardlab.sources.datasets import PartedDataset
from rewardlab.sources.datasets.convert import convert_to_parts


@pytest.fixture(scope="module")
def folders(sample_path, tmp_path_factory):
    """The sample converted with three part sizes (a few games a part to one part)."""
    out = {}
    for rows in (2_000, 7_000, 1_000_000):
        folder = tmp_path_factory.mktemp("parts") / f"corpus-{rows}"
        convert_to_parts(sample_path, folder, part_rows=rows, progress=False)
        out[rows] = folder
    return out


@pytest.fixture(scope="module")
def frame(sample_path):
    return rewardlab.load(sample_path)


@pytest.mark.parametrize("rows", [2_000, 7_000, 1_000_000])
def test_prepare_dataset_equals_prepare_frame(folders, frame, rows):
    whole = prepare_frame(frame)
    parted = prepare_dataset(folders[rows])
    assert len(PartedDataset(folders[rows])) > 1 or rows == 1_000_000
    for name in ("game_rows", "rank", "score", "round_rows", "delta"):
        assert np.array_equal(getattr(whole, name), getattr(parted, name)), name
    assert (parted.n_rows, parted.fingerprint) == (whole.n_rows, whole.fingerprint)
    assert parted.source == str(folders[rows])
    for scope in ("end_of_game", "end_of_round"):
        assert np.array_equal(parted.done(scope), whole.done(scope))


def test_prepare_dataset_without_rounds_refuses_the_per_round_family(folders, frame):
    prepared = prepare_dataset(folders[2_000], rounds=False, workers=1)
    assert prepared.round_rows is None and prepared.fingerprint == prepare_frame(frame).fingerprint
    family = RoundDelta()
    with pytest.raises(FrameError, match=r"prepared without its round ends .* rounds=True"):
        family.evaluate(prepared)
    reward, done = family.evaluate(prepare_dataset(folders[2_000]))
    assert np.array_equal(reward, family.evaluate(prepare_frame(frame))[0])


def test_prepare_dataset_names_the_part_of_a_bad_seat(folders, tmp_path, frame):
    """A rule broken in one part is reported with that part's file and the row within it."""
    import polars as pl

    from rewardlab.sources.kanachan import schema as S

    sparse = frame[S.SPARSE].to_numpy().copy()
    sparse[-1, S.SEAT_POSITION] = 70  # not a seat id, on the last game's end
    broken = frame.with_columns(pl.Series(S.SPARSE, sparse).cast(frame.schema[S.SPARSE]))
    path = tmp_path / "broken.parquet"
    broken.write_parquet(path)
    convert_to_parts(path, tmp_path / "c", part_rows=7_000, progress=False)
    last = PartedDataset(tmp_path / "c").paths[-1]
    with pytest.raises(FrameError, match=rf"^{last}: row \d+: sparse\[6\] is 70"):
        prepare_dataset(tmp_path / "c")


@pytest.fixture(scope="module")
def pair(folders, frame):
    """The same tuner on the frame and on the folder of 2,000-row parts, with one change applied."""
    sessions = RankingTuningSession(frame, preset="tenhou_tokujo_6dan"), \
        RankingTuningSession(str(folders[2_000]), preset="tenhou_tokujo_6dan")
    for s in sessions:
        s.set_rank_value(3, -150.0)
    return sessions


def test_folder_session_equals_the_frame_session(pair):
    a, b = pair
    assert b.frame is None and b.dataset is not None
    ra, rb = a.results, b.results
    for name in ("raw", "reward", "histogram_counts", "histogram_edges", "raw_mean_by_rank", "mean_by_rank",
                 "rank_counts", "rank_probabilities"):
        assert np.array_equal(getattr(ra, name), getattr(rb, name)), name
    assert (ra.expected_reward, ra.zero_steps, ra.reward_moments, ra.raw_moments_all) == \
        (rb.expected_reward, rb.zero_steps, rb.reward_moments, rb.raw_moments_all)
    assert a.data_fingerprint() == b.data_fingerprint()
    assert (a.mean, a.std) == (b.mean, b.std)  # constants refitted from data, bit for bit
    with pytest.raises(ParameterError, match=r"step_rewards\(\).*session\.results\.reward"):
        b.step_rewards()


def test_folder_session_opens_games_from_their_parts(pair):
    a, b = pair
    for rank in range(4):
        key = a.episode_of_rank(rank)
        assert b.episode_of_rank(rank) == key
        da, db = a.episode(key), b.episode(key)
        assert da.outcome == db.outcome and da.steps.equals(db.steps)
    for index in (0, 1, 517, b.table.rank.size - 1):  # by index: the first, a part's edge and the last
        da, db = a.episode(index), b.episode(index)
        assert da.outcome == db.outcome and da.steps.equals(db.steps)
    key = a._episode_key(333)
    assert b._find_key(dict(key)) == 333  # a key never handed out: found by reading the parts
    with pytest.raises(ParameterError, match="should be an episode of the data"):
        b.episode({"game_id": "no-such-game", "seat": 0})
    with pytest.raises(ParameterError, match=r"`episode` should name the episode columns \['game_id', 'seat'\]"):
        b.episode({"game_id": key["game_id"]})
    with pytest.raises(ParameterError, match=r"`episode` should be an episode index in \[0, "):
        b.episode(b.table.rank.size)


def test_folder_export_round_trips_part_by_part_and_writes_the_same_file(pair, tmp_path):
    a, b = pair
    ra = a.export(tmp_path / "a.py", check_rows=3_000)
    rb = b.export(tmp_path / "b.py", check_rows=3_000)
    assert rb.roundtrip.ok and rb.roundtrip.rows == ra.roundtrip.rows
    assert (rb.roundtrip.checked_rows, rb.roundtrip.checked_games) == \
        (ra.roundtrip.checked_rows, ra.roundtrip.checked_games)

    def body(path):  # the header names the data and the time; the code is the same
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    assert body(tmp_path / "a.py") == body(tmp_path / "b.py")


def test_dataset_round_trip_counts_the_differences_the_frame_round_trip_counts(pair, folders, frame, tmp_path):
    """A file exported for other parameters differs: both round trips count the same rows."""
    a, b = pair
    a.export(tmp_path / "old.py", check_rows=2_000)
    a.set_rank_value(0, 77.0)
    b.set_rank_value(0, 77.0)
    try:
        family = b.family
        whole = roundtrip_check(family, tmp_path / "old.py", frame, check_rows=2_000)
        parted = roundtrip_check_dataset(family, tmp_path / "old.py", folders[2_000], prepared=b.prepared,
                                         game=b.table.game, check_rows=2_000)
        assert whole.rewards_differing > 0 and not parted.ok
        assert (parted.rewards_differing, parted.dones_differing, parted.max_abs_difference) == \
            (whole.rewards_differing, whole.dones_differing, whole.max_abs_difference)
    finally:
        a.undo()
        b.undo()


def test_folder_export_can_be_cancelled_and_writes_nothing(pair, tmp_path):
    _, b = pair
    token = CancelToken()
    seen = []

    def progress(fraction, message):
        seen.append(message)
        if len(seen) == 2:
            token.cancel()

    with pytest.raises(ExportCancelled, match=r"^export of '.*r\.py' cancelled during .*; nothing was written$"):
        b.export(tmp_path / "r.py", progress=progress, cancel=token)
    assert list(tmp_path.iterdir()) == []


def test_state_saved_on_the_file_restores_on_its_folder(pair, folders, tmp_path):
    a, _ = pair
    path = a.save_state(tmp_path / "state.json")
    restored = RankingTuningSession.load_state(path, data=str(folders[7_000]))
    assert restored.dataset is not None and restored.vector == a.vector
    assert np.array_equal(restored.results.reward, a.results.reward)


def test_dataset_take_and_part_of_row(folders, frame):
    ds = PartedDataset(folders[2_000])
    positions = np.sort(np.random.default_rng(7).choice(frame.height, 300, replace=False))
    assert ds.take(positions).equals(frame[positions])
    starts = ds.part_starts()
    assert starts[-1] == frame.height and len(starts) == len(ds) + 1
    for row in (0, int(starts[1]) - 1, int(starts[1]), frame.height - 1):
        part = ds.part_of_row(row)
        assert starts[part] <= row < starts[part + 1]
    with pytest.raises(ParameterError, match="should be ascending rows"):
        ds.take(np.array([5, 3]))
    with pytest.raises(ParameterError, match="should be a row of the dataset"):
        ds.part_of_row(frame.height)


# --- the comparison session on a rewards folder -------------------------------------------------------------

PLUGINS = ["data/plugins/rank_top.py", "data/plugins/raw_points.py"]


@pytest.fixture(scope="module")
def rewards(folders, frame, tmp_path_factory):
    """The two shipped plug-ins applied to the folder of 2,000-row parts, and the same on the frame."""
    from rewardlab.plugins.apply_parts import apply_to_dataset

    out = tmp_path_factory.mktemp("rewards") / "rewards"
    apply_to_dataset(folders[2_000], PLUGINS, out=out, progress=False)
    return out, rewardlab.apply_plugins(frame, PLUGINS, progress=False)


def test_comparison_on_a_rewards_folder_equals_the_frame(rewards):
    from rewardlab.sessions import ComparisonSession

    out, applied = rewards
    a, b = ComparisonSession(applied), ComparisonSession(str(out))
    assert b.frame is None and a.candidates == b.candidates == ("rank_top", "raw_points")
    for metric in ("pearson", "spearman", "pearson_distance", "epic"):  # epic: columns only, the fallback
        a.update(metric=metric)
        b.update(metric=metric)
        assert a.results.matrix.equals(b.results.matrix) and a.results.shown == b.results.shown, metric
    assert b.results.shown == "pearson_distance" and "ComparisonSession(rewardlab.load(DATA)" in b.results.epic_note
    with pytest.raises(ParameterError, match="should be a frame in memory for the diagnostics"):
        b.run_diagnostics()
    ra, rb = a.results, b.results
    assert ra.returns.equals(rb.returns) and ra.disagreements.equals(rb.disagreements)
    for name in ra.chosen:  # fewer rows than the sample limit: every step reward
        assert np.array_equal(ra.step_rewards[name], rb.step_rewards[name])
    assert a.data_fingerprint() == b.data_fingerprint() and a._summary(ra) == b._summary(rb)
    for key in b.disagreement_keys()[:3] + [0, 17]:
        da, db = a.episode(key), b.episode(key)
        assert da.outcome == db.outcome and da.steps.equals(db.steps)
    with pytest.raises(ParameterError, match="should be an episode of the data"):
        b.episode({"game_id": "no-such-game", "seat": 0})
    with pytest.raises(ParameterError, match=r"`episode` should name episode columns among \["):
        b.episode({"player": 3})
    with pytest.raises(ParameterError, match="`episode` should be an episode index or its key values"):
        b.episode("first")


def test_comparison_on_a_folder_refuses_plugins_with_the_command(rewards):
    from rewardlab.sessions import ComparisonSession

    out, _ = rewards
    with pytest.raises(ParameterError, match=r"applied to a dataset folder .* rewardlab apply .*--out REWARDS"):
        ComparisonSession(str(out), PLUGINS[:1])
    s = ComparisonSession(str(out))
    with pytest.raises(ParameterError, match="rewardlab apply"):
        s.add_plugin(PLUGINS[0], name="again")
    assert s.candidates == ("rank_top", "raw_points")


def test_comparison_state_saved_on_the_frame_restores_on_the_folder(rewards, tmp_path):
    from rewardlab.sessions import ComparisonSession

    out, applied = rewards
    a = ComparisonSession(applied, metric="epic")
    path = a.save_state(tmp_path / "cmp.json")
    b = ComparisonSession.load_state(path, data=str(out))
    assert b.metric == "epic" and b.results.matrix.equals(a.results.matrix)


def test_columns_fingerprint_of_parts_equals_the_whole(tmp_path):
    """Nulls (the mask is hashed only when a column has one anywhere), Boolean columns with nulls (hashed
    as Int32), text joined across parts, empty parts."""
    import polars as pl

    from rewardlab.sessions.fingerprints import ColumnsFingerprint, fingerprint_columns

    rng = np.random.default_rng(0)
    n = 1000
    f = pl.DataFrame({"b": pl.Series([True, None, False] * 333 + [True]), "c": pl.Series([True, False] * 500),
                      "i": pl.Series(rng.integers(0, 9, n)).set(pl.Series(rng.random(n) < 0.1), None),
                      "x": rng.random(n), "s": pl.Series([str(k) if k % 7 else None for k in range(n)]),
                      "cat": pl.Series([str(k % 5) for k in range(n)], dtype=pl.Categorical)})
    late = f.with_columns(pl.when(pl.int_range(pl.len()) == n - 1).then(None).otherwise(pl.col("c")).alias("c"))
    for frame in (f, late):  # in `late` the only null of c is in the last part
        for cuts in ([0, n], [0, 1, 500, n], [0, 0, 999, n], list(range(0, n + 1, 100))):
            with ColumnsFingerprint(frame.columns) as acc:
                for lo, hi in zip(cuts[:-1], cuts[1:]):
                    acc.add(frame[lo:hi])
                assert acc.hexdigest() == fingerprint_columns(frame, frame.columns), cuts
    with ColumnsFingerprint(["i"]) as acc:
        acc.add(f[:10])
        with pytest.raises(ParameterError, match="should hold column 'i' as Int64"):
            acc.add(f[10:20].with_columns(pl.col("i").cast(pl.Float64)))
