"""The batch planners against plain loop references."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardlab.plugins import batch_modes as bm
from rewardlab.core.errors import ParameterError


def ends_from_lengths(lengths):
    return np.cumsum(np.asarray(lengths, dtype=np.int64))


def rows_of(rows) -> list[int]:
    return list(range(rows.start, rows.stop)) if isinstance(rows, slice) else rows.tolist()


# --- loop references -------------------------------------------------------


def ref_episodes(lengths, contiguous=False):
    out, start = [], 0
    for n in lengths:
        out.append((list(range(start, start + n)), contiguous))
        start += n
    return out


def ref_dataloader(n_rows, batch_size, workers):
    """kanachan's DataIterator per worker, then PyTorch's round-robin over live workers."""
    if workers == 0:
        return ref_sequential(n_rows, batch_size)
    per_worker = []
    for w in range(workers):
        mine, batch = [], []
        line = w  # skip `w` lines, then take one and skip workers - 1
        while line < n_rows:
            batch.append(line)
            if len(batch) == batch_size:
                mine.append(batch)
                batch = []
            line += workers
        if batch:
            mine.append(batch)
        per_worker.append(mine)
    out, live = [], list(range(workers))
    r = 0
    while live:
        for w in list(live):
            if r < len(per_worker[w]):
                out.append((per_worker[w][r], False))
            else:
                live.remove(w)
        r += 1
    return out


def ref_sequential(n_rows, batch_size):
    out, batch = [], []
    for row in range(n_rows):
        batch.append(row)
        if len(batch) == batch_size:
            out.append((batch, False))
            batch = []
    if batch:
        out.append((batch, False))
    return out


def ref_fragments(lengths, batch_size):
    out, start = [], 0
    for n in lengths:
        piece = []
        for row in range(start, start + n):
            piece.append(row)
            if len(piece) == batch_size:
                out.append((piece, False))
                piece = []
        if piece:
            out.append((piece, False))
        start += n
    return out


lengths_st = st.lists(st.integers(1, 40), min_size=0, max_size=25)


@settings(max_examples=150, deadline=None)
@given(lengths=lengths_st, batch_size=st.integers(1, 50))
def test_planners_match_loop_references(lengths, batch_size):
    ends = ends_from_lengths(lengths)
    n = int(ends[-1]) if len(lengths) else 0
    got = [(rows_of(r), c) for r, c in bm.plan_episodes(ends)]
    assert got == ref_episodes(lengths)
    got = [(rows_of(r), c) for r, c in bm.plan_episodes(ends, contiguous=True)]
    assert got == ref_episodes(lengths, contiguous=True)
    for workers in (0, 1, 2, 3):
        got = [(rows_of(r), c) for r, c in bm.plan_dataloader(n, batch_size, workers)]
        assert got == ref_dataloader(n, batch_size, workers), workers
    got = [(rows_of(r), c) for r, c in bm.plan_sequential(n, batch_size)]
    assert got == ref_sequential(n, batch_size)
    got = [(rows_of(r), c) for r, c in bm.plan_fragments(ends, batch_size)]
    assert got == ref_fragments(lengths, batch_size)


@settings(max_examples=100, deadline=None)
@given(lengths=lengths_st, batch_size=st.integers(1, 50), seed=st.integers(0, 2**32))
def test_every_mode_covers_every_row_exactly_once(lengths, batch_size, seed):
    ends = ends_from_lengths(lengths)
    n = int(ends[-1]) if len(lengths) else 0
    for mode in bm.BATCH_MODES:
        batches = list(bm.plan_batches(mode, ends, batch_size=batch_size, seed=seed))
        rows = [r for b, _ in batches for r in rows_of(b)]
        assert sorted(rows) == list(range(n)), mode
        assert all(c is bm.CONTIGUOUS[mode] for _, c in batches), mode
        if mode != "episodes":
            assert all(len(rows_of(b)) <= batch_size for b, _ in batches), mode


def test_episodes_are_whole_and_in_order():
    eog = np.array([0, 0, 1, 1, 0, 0, 0, 1], dtype=bool)
    ends = bm.episode_ends(eog)
    assert ends.tolist() == [3, 4, 8]
    batches = list(bm.plan_episodes(ends))  # kanachan's default: contiguous_training_data=False
    assert batches == [(slice(0, 3), False), (slice(3, 4), False), (slice(4, 8), False)]
    assert list(bm.plan_batches("episodes", ends, batch_size=1, contiguous=True))[0] == (slice(0, 3), True)
    for rows, _ in batches:  # each batch ends on an end-of-game row and holds no other
        assert eog[rows.stop - 1] and not eog[rows.start:rows.stop - 1].any()


def test_fragments_cut_episodes_at_the_right_length():
    ends = ends_from_lengths([7, 2, 5])
    got = [rows_of(r) for r, _ in bm.plan_fragments(ends, 3)]
    assert got == [[0, 1, 2], [3, 4, 5], [6], [7, 8], [9, 10, 11], [12, 13]]


def test_sequential_crosses_episode_boundaries():
    got = [rows_of(r) for r, _ in bm.plan_batches("sequential", ends_from_lengths([2, 3]), batch_size=4)]
    assert got == [[0, 1, 2, 3], [4]]


def test_shuffled_is_deterministic_per_seed():
    ends = ends_from_lengths([30, 40, 30])
    a = [r.tolist() for r, _ in bm.plan_shuffled(100, 16, seed=3)]
    b = [r.tolist() for r, _ in bm.plan_shuffled(100, 16, seed=3)]
    c = [r.tolist() for r, _ in bm.plan_shuffled(100, 16, seed=4)]
    assert a == b
    assert a != c
    assert [len(x) for x in a] == [16] * 6 + [4]
    assert sorted(sum(a, [])) == list(range(100))
    assert a != [list(range(i, min(i + 16, 100))) for i in range(0, 100, 16)]  # really shuffled
    via = [r.tolist() for r, _ in bm.plan_batches("shuffled", ends, batch_size=16, seed=3)]
    assert via == a


def test_empty_plans():
    empty = np.zeros(0, dtype=np.int64)
    for mode in bm.BATCH_MODES:
        assert list(bm.plan_batches(mode, empty, batch_size=4)) == []


@pytest.mark.parametrize("call, message", [
    (lambda: bm.plan_sequential(10, 0), "`batch_size` should be an integer from 1 to 1099511627776 (one batch of that size already holds every row). Received 0."),
    (lambda: bm.plan_sequential(10, True), "`batch_size` should be an integer from 1 to 1099511627776 (one batch of that size already holds every row). Received True."),
    (lambda: bm.plan_shuffled(10, 2, seed=-1), "`seed` should be an integer >= 0. Received -1."),
    (lambda: bm.plan_sequential(-1, 2), "`n_rows` should be an integer >= 0. Received -1."),
    (lambda: bm.plan_episodes(np.array([3, 3])),
     "`ends` should be strictly increasing positive end positions. Received [3, 3]."),
    (lambda: bm.plan_fragments(np.array([0.5]), 2), "`ends` should be a 1-D integer array"),
    (lambda: bm.plan_batches("random", np.array([3]), batch_size=2),
     "`batch_mode` should be one of 'episodes', 'sequential', 'dataloader', 'fragments', 'shuffled'. "
     "Received 'random'."),
    (lambda: bm.episode_ends(np.array([True, False])),
     "`end_of_game` should be True on the last row (complete episodes)."),
    (lambda: bm.episode_ends(np.array([1, 0])), "`end_of_game` should be a 1-D bool array."),
])
def test_validation_messages(call, message):
    with pytest.raises(ParameterError) as info:
        call()  # validation happens when the plan is made, not when it is first iterated
    assert message in str(info.value)


class _KanachanLines(torch.utils.data.IterableDataset):
    """kanachan's offline DataIterator over row numbers instead of text lines:
    each worker skips ``worker.id`` lines, then yields one and skips ``num_workers - 1``."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        lines = iter(range(self.n))
        if info is not None:
            for _ in range(info.id):
                next(lines, None)

        def gen():
            for line in lines:
                if info is not None:
                    for _ in range(info.num_workers - 1):
                        next(lines, None)
                yield line
        return gen()


@pytest.mark.filterwarnings("ignore:This DataLoader will create")  # 3 workers on 2 cores: fine here
@pytest.mark.parametrize("n_rows,batch_size,workers", [(23, 4, 2), (10, 3, 3), (9, 16, 2), (7, 2, 0)])
def test_dataloader_mode_matches_pytorchs_own_dataloader(n_rows, batch_size, workers):
    """The plan equals the batches a real torch DataLoader gives over kanachan's line split."""
    loader = torch.utils.data.DataLoader(_KanachanLines(n_rows), batch_size=batch_size,
                                         num_workers=workers)
    real = [b.tolist() for b in loader]
    planned = [rows_of(r) for r, _ in bm.plan_dataloader(n_rows, batch_size, workers)]
    assert planned == real


def test_contiguous_and_workers_validation():
    ends = np.array([3])
    with pytest.raises(ParameterError, match="can be True only with batch_mode 'episodes'"):
        bm.plan_batches("sequential", ends, batch_size=2, contiguous=True)
    with pytest.raises(ParameterError, match="`num_workers` should be an integer from 0 to 1024"):
        bm.plan_batches("dataloader", ends, batch_size=2, num_workers=-1)
    assert bm.mode_setting("episodes", contiguous=True) == (
        "kanachan's episode replay buffer, contiguous_training_data=True")
