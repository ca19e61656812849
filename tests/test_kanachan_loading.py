"""Loading kanachan annotation files: schema, fidelity against a line-by-line reference."""

from __future__ import annotations

import bz2
import gzip

import numpy as np
import polars as pl
import pytest
import torch

import rewardlab
from rewardlab.sources.kanachan import schema as S
from rewardlab.contracts.kanachan.batching import TENSORDICT_KEYS
from lines import game_lines, gid, write
from reference import read_lines, reference_tensors, wiki_rank


def test_frame_has_the_documented_schema(sample_frame):
    assert dict(sample_frame.schema) == S.FRAME_SCHEMA


def test_sample_tensordict_equals_line_by_line_reference(sample_path, sample_frame):
    lines = read_lines(sample_path)
    ref = reference_tensors(lines)
    td = rewardlab.to_tensordict(sample_frame)
    assert set(td.keys(include_nested=True, leaves_only=True)) == set(TENSORDICT_KEYS)
    for key in TENSORDICT_KEYS:
        got = td[key]
        assert got.dtype == ref[key].dtype, key
        assert got.device == torch.device("cpu")
        assert torch.equal(got, ref[key]), key


def test_shuffled_rows_match_reference(sample_path, sample_frame):
    lines = read_lines(sample_path)
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(lines))[:500]
    ref = reference_tensors([lines[i] for i in rows])
    td = rewardlab.to_tensordict(sample_frame, rows=rows)
    for key in TENSORDICT_KEYS:
        assert torch.equal(td[key], ref[key]), key


def test_slices_match_reference_including_frame_end(sample_path, sample_frame):
    lines = read_lines(sample_path)
    n = len(lines)
    for rows in (slice(0, 7), slice(10, 300), slice(n - 50, n)):
        ref = reference_tensors(lines[rows])
        td = rewardlab.to_tensordict(sample_frame, rows=rows)
        for key in TENSORDICT_KEYS:
            assert torch.equal(td[key], ref[key]), (rows, key)


def test_done_is_a_copy_not_a_view_of_end_of_game(small_frame):
    td = rewardlab.to_tensordict(small_frame)
    td["next", "done"][:] = True
    assert not bool(td["next", "end_of_game"].all())


def test_identifiers_agree_with_the_sparse_features(sample_frame):
    sparse = sample_frame[S.SPARSE].to_numpy()
    assert np.array_equal(sample_frame[S.SEAT].to_numpy(), sparse[:, 6] - 71)
    for col, lo, hi in ((S.CHANG, 75, 78), (S.JU, 78, 82), (S.ROOM, 0, 5)):
        mask = (sparse >= lo) & (sparse < hi)
        assert (mask.sum(axis=1) == 1).all()
        assert np.array_equal(np.where(mask, sparse - lo, 0).sum(axis=1), sample_frame[col].to_numpy())
    assert np.array_equal(sample_frame[S.BEN].to_numpy(), sample_frame[S.NUMERIC].to_numpy()[:, 0])


def test_steps_and_episodes(sample_frame):
    f = sample_frame
    per_episode = f.group_by(S.GAME, S.SEAT, maintain_order=True).agg(
        pl.col(S.STEP), pl.col(S.END_OF_GAME), pl.col(S.ROUND))
    for steps, eog, rounds in zip(per_episode[S.STEP].to_list(), per_episode[S.END_OF_GAME].to_list(),
                                  per_episode[S.ROUND].to_list()):
        assert steps == list(range(len(steps)))
        assert eog == [False] * (len(eog) - 1) + [True]
        assert rounds == sorted(rounds)
    assert f[S.GAME].n_unique() == f[S.GAME_ID].n_unique()
    assert f.filter(pl.col(S.END_OF_GAME)).height == 4 * f[S.GAME].n_unique()


@pytest.mark.parametrize("suffix,compress", [("", None), (".gz", gzip.compress), (".bz2", bz2.compress)])
def test_plain_gzip_and_bz2_give_the_same_frame(tmp_path, suffix, compress):
    text = "".join(line + "\n" for line in game_lines(gid(7)))
    path = tmp_path / f"x.tsv{suffix}"
    path.write_bytes(compress(text.encode()) if compress else text.encode())
    plain = tmp_path / "plain.tsv"
    plain.write_text(text)
    a = rewardlab.load_kanachan(path).drop(S.SOURCE_FILE)
    b = rewardlab.load_kanachan(plain).drop(S.SOURCE_FILE)
    assert a.equals(b)


def test_many_files_are_concatenated_and_games_numbered(tmp_path):
    a = write(tmp_path / "a.tsv", game_lines(gid(1)) + game_lines(gid(2)))
    b = write(tmp_path / "b.tsv", game_lines(gid(3)))
    frame = rewardlab.load_kanachan([a, b])
    assert frame[S.GAME].unique(maintain_order=True).to_list() == [0, 1, 2]
    assert frame[S.SOURCE_FILE].cast(pl.String).unique(maintain_order=True).to_list() == [str(a), str(b)]
    assert frame.filter(pl.col(S.SOURCE_FILE).cast(pl.String) == str(b))[S.SOURCE_LINE][0] == 1


def test_crlf_line_ends_are_accepted(tmp_path):
    lines = game_lines(gid(1))
    path = tmp_path / "crlf.tsv"
    path.write_bytes("".join(line + "\r\n" for line in lines).encode())
    frame = rewardlab.load_kanachan(path)
    plain = rewardlab.load_kanachan(write(tmp_path / "lf.tsv", lines))
    assert frame.drop(S.SOURCE_FILE).equals(plain.drop(S.SOURCE_FILE))


@pytest.mark.parametrize("suffix", [".tsv", ".tsv.gz"])
def test_blocks_of_plain_and_compressed_files_load_the_same(monkeypatch, tmp_path, sample_path, suffix):
    """Plain files are memory-mapped, compressed ones decompressed block by block."""
    import gzip

    from rewardlab.sources.kanachan import reader as kanachan
    lines = read_lines(sample_path)[:3000]
    cut = max(i for i, line in enumerate(lines) if line.count("\t") == 7) + 1
    text = "".join(lines[:cut]).encode()
    path = tmp_path / f"part{suffix}"
    path.write_bytes(gzip.compress(text) if suffix.endswith(".gz") else text)
    whole = rewardlab.load_kanachan(path)
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", 50_000)
    blocked = rewardlab.load_kanachan(path)
    assert blocked.n_chunks() > 1 and blocked.equals(whole)
    assert whole.height == cut


def test_compact_memory(sample_frame):
    per_row = sample_frame.estimated_size() / sample_frame.height
    assert per_row < 450, per_row


def test_parquet_round_trip_and_lazy_scan(tmp_path, sample_frame, sample_path):
    out = tmp_path / "d.parquet"
    rewardlab.convert(sample_path, out, progress=False)
    back = rewardlab.load_kanachan(out)
    assert back.equals(sample_frame)
    lf = rewardlab.scan_kanachan(out)
    assert isinstance(lf, pl.LazyFrame)
    n_end = lf.filter(pl.col(S.END_OF_GAME)).select(pl.len()).collect().item()
    assert n_end == sample_frame[S.END_OF_GAME].sum()


def test_convert_refuses_to_overwrite(tmp_path, sample_path):
    out = tmp_path / "d.parquet"
    out.write_text("keep me")
    with pytest.raises(rewardlab.core.errors.OutputExistsError, match="already exists"):
        rewardlab.convert(sample_path, out, progress=False)
    assert out.read_text() == "keep me"
    rewardlab.convert(sample_path, out, overwrite=True, progress=False)
    assert rewardlab.load_kanachan(out).height > 0


def test_summary_counts(small_frame):
    s = rewardlab.summarize(small_frame)
    assert (s.games, s.episodes, s.transitions) == (3, 12, small_frame.height)
    assert s.rounds == 2 + 3 + 1
    assert sum(s.rank_counts) == 12
    # game 3 ends 25000, 25000, 30000, 20000: seat 2 first, seat 0 beats seat 1 on the tie
    outcomes = rewardlab.episode_outcomes(small_frame).filter(pl.col(S.GAME) == 2)
    assert outcomes["rank"].to_list() == [1, 2, 0, 3]


def test_ranks_against_loop_reference():
    rng = np.random.default_rng(3)
    scores = rng.choice([10000, 25000, 30000, 40000], size=(500, 4))
    seat = rng.integers(0, 4, size=500)
    got = rewardlab.ranks_from_scores(scores, seat)
    for k in range(500):
        assert got[k] == wiki_rank(list(scores[k]), int(seat[k]))


@pytest.mark.parametrize("chunk", [1, 700, 50000])
def test_small_blocks_give_the_same_frame(monkeypatch, sample_path, sample_frame, tmp_path, chunk):
    """Files are parsed in blocks (in two threads); block boundaries must not matter."""
    from rewardlab.sources.kanachan import reader as kanachan
    lines = read_lines(sample_path)[: 150 if chunk == 1 else 1200]
    cut = max(i for i, line in enumerate(lines) if line.count("\t") == 7) + 1  # end on an end-of-game line
    path = tmp_path / "part.tsv"
    path.write_text("".join(lines[:cut]))
    whole = rewardlab.load_kanachan(path)
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", chunk)
    blocked = rewardlab.load_kanachan(path)
    assert blocked.equals(whole)
    assert whole.drop(S.SOURCE_FILE, S.SOURCE_LINE).equals(
        sample_frame.head(cut).drop(S.SOURCE_FILE, S.SOURCE_LINE))


def test_next_state_mismatch_across_a_block_boundary(monkeypatch, tmp_path):
    from rewardlab.sources.kanachan import reader as kanachan
    lines = game_lines(gid(1), rounds=(3, 2))
    cols = lines[1].split("\t")
    cols[6] = cols[6] + ",400"  # an extra id in the next sparse features
    lines[1] = "\t".join(cols)
    path = write(tmp_path / "x.tsv", lines)
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", len(lines[0]) + len(lines[1]) + 2)  # boundary after line 2
    with pytest.raises(rewardlab.core.errors.DataFormatError) as info:
        rewardlab.load_kanachan(path)
    assert (info.value.line, info.value.column, info.value.rule) == (2, 6, "next_state_mismatch")


def test_arrow_dataset_round_trip(tmp_path, sample_frame, sample_path):
    out = tmp_path / "d.arrow"
    rewardlab.convert(sample_path, out, progress=False)
    assert rewardlab.load_kanachan(out).equals(sample_frame)
    assert rewardlab.scan_kanachan(out).select(pl.len()).collect().item() == sample_frame.height


def test_convert_rejects_unknown_suffix(tmp_path, sample_path):
    with pytest.raises(rewardlab.core.errors.ParameterError, match="`out` should end with .parquet or .arrow"):
        rewardlab.convert(sample_path, tmp_path / "d.csv")
