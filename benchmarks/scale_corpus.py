"""A kanachan corpus of any size for the scale benchmark: the bundled sample tiled with fresh game ids.

The sample (``data/sample.tsv.gz``: 119,555 transitions, 240 games, each game's
lines contiguous) is repeated copy after copy; every copy gets new game ids, so
the corpus holds ``copies * 240`` distinct games with the sample's episode
structure.  A game id is 32 lowercase hex digits::

    16 digits  blake2b(seed, the original id)   differs from game to game and seed to seed
    12 digits  the copy index                    unique per (copy, game) by construction
     4 digits  the game's index in the sample

so ids are deterministic from the seed, unique, and (but for a 2^-64 chance per
game, which the tests check does not happen for the seeds they use) never an
id of the sample itself.  Only whole games are written: the requested number of
transitions is rounded up to the end of a game.

The text is written as several ``.tsv.gz`` files of about ``lines_per_file``
lines each (whole copies, the last file taking the remainder), compressed with
python-isal's deflate (one gzip member per file) at a low level for speed.
Memory stays at one copy's text (about 64 MB) whatever the size: each game's
block is compressed as soon as it is built.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     corpus = tile_corpus(Path(tmp), 1000, seed=1)
...     (corpus.lines, corpus.games, len(corpus.files))
(1072, 3, 1)
"""

from __future__ import annotations

import gzip
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from isal import isal_zlib

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample.tsv.gz"

#: Lines per written file (about 0.8 GB of text); files are whole copies of the sample.
LINES_PER_FILE = 1_500_000
#: isal deflate level: 1 writes about 0.75 GB of text per second per core here, at ~7.7% of its size.
GZIP_LEVEL = 1
ID_LENGTH = 32


@dataclass(frozen=True)
class SampleGames:
    """The sample split into games: each game's id, its text (ids cut out) and its line count."""

    ids: tuple[bytes, ...]
    pieces: tuple[tuple[bytes, ...], ...]  # a game's text split at its id: joined with a new id, the game
    lines: tuple[int, ...]

    @property
    def total_lines(self) -> int:
        return sum(self.lines)


@dataclass
class Corpus:
    """What :func:`tile_corpus` wrote."""

    files: list[Path] = field(default_factory=list)
    lines: int = 0
    games: int = 0
    copies: int = 0  # whole copies of the sample, not counting a final partial one
    text_bytes: int = 0
    gz_bytes: int = 0
    seconds: float = 0.0


def read_sample(path: Path = SAMPLE) -> SampleGames:
    """The sample's games in file order (a game is a run of lines with one id; the runs must not repeat)."""
    text = gzip.open(path, "rb").read()
    if not text.endswith(b"\n"):
        text += b"\n"
    ids: list[bytes] = []
    pieces: list[tuple[bytes, ...]] = []
    counts: list[int] = []
    start = 0
    while start < len(text):
        game = text[start:start + ID_LENGTH]
        # the game's block ends where a line starts with another id
        end = start
        lines = 0
        while end < len(text) and text[end:end + ID_LENGTH] == game:
            end = text.index(b"\n", end) + 1
            lines += 1
        block = text[start:end]
        ids.append(game)
        pieces.append(tuple(block.split(game)))
        counts.append(lines)
        start = end
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: a game's lines are not contiguous; the tiler needs one run of lines per game")
    return SampleGames(tuple(ids), tuple(pieces), tuple(counts))


def game_id(seed: int, copy: int, index: int, original: bytes) -> bytes:
    """The fresh id of game ``index`` (original id ``original``) in copy ``copy``: 32 lowercase hex digits."""
    mixed = hashlib.blake2b(original, digest_size=8, key=str(seed).encode()).hexdigest()
    return f"{mixed}{copy:012x}{index:04x}".encode()


def plan_games(sample: SampleGames, n: int) -> tuple[int, int]:
    """(whole copies, games of a final partial copy) for at least ``n`` transitions, rounded up to a game."""
    if n < 1:
        raise ValueError(f"n: the number of transitions must be at least 1, got {n}")
    copies, rest = divmod(n, sample.total_lines)
    games = 0
    while rest > 0:
        rest -= sample.lines[games]
        games += 1
    return copies, games


def tile_corpus(out_dir: Path, n: int, *, seed: int = 0, lines_per_file: int = LINES_PER_FILE,
                level: int = GZIP_LEVEL, sample: SampleGames | None = None,
                prefix: str = "corpus") -> Corpus:
    """Write at least ``n`` transitions (whole games) as ``out_dir/PREFIX-00000.tsv.gz``, ... .

    Parameters
    ----------
    out_dir : Path
        An existing folder.
    n : int
        Transitions wanted; the corpus ends at the end of the game that reaches ``n``.
    seed : int, keyword-only
        Mixed into every game id.
    lines_per_file : int, keyword-only
        About how many lines go into one file (whole copies of the sample, at least one).
    level : int, keyword-only
        isal deflate level (0-3).

    Returns
    -------
    Corpus
        The files in order, exact line and game counts, text and compressed sizes, and seconds taken.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     tile_corpus(Path(tmp), 119_556, seed=0, lines_per_file=100_000).copies
    1
    """
    sample = sample or read_sample()
    t0 = time.perf_counter()
    copies, partial = plan_games(sample, n)
    per_file = max(1, round(lines_per_file / sample.total_lines))
    units = [(copy, len(sample.ids)) for copy in range(copies)]
    if partial:
        units.append((copies, partial))
    corpus = Corpus(copies=copies)
    groups = [units[i:i + per_file] for i in range(0, len(units), per_file)]
    if len(groups) > 1 and len(groups[-1]) == 1 and partial:
        groups[-2].append(groups.pop()[0])  # a partial last copy joins the file before it, not a file alone
    for number, group in enumerate(groups):
        path = out_dir / f"{prefix}-{number:05d}.tsv.gz"
        deflate = isal_zlib.compressobj(level, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
        with open(path, "wb") as out:
            for copy, games in group:
                for index in range(games):
                    block = game_id(seed, copy, index, sample.ids[index]).join(sample.pieces[index])
                    corpus.text_bytes += len(block)
                    out.write(deflate.compress(block))
                corpus.lines += sum(sample.lines[:games])
                corpus.games += games
            out.write(deflate.flush())
            corpus.gz_bytes += out.tell()
        corpus.files.append(path)
    corpus.seconds = time.perf_counter() - t0
    return corpus
