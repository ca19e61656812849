"""MJAI game logs as trajectories: Mortal / mjai.app / simulator records in the kanachan frame.

An MJAI log is JSON lines of events (``start_game``, ``start_kyoku``,
``tsumo``, ``dahai``, ``reach``, ``reach_accepted``, ``chi``, ``pon``,
``daiminkan``, ``ankan``, ``kakan``, ``dora``, ``hora``, ``ryukyoku``,
``end_kyoku``, ``end_game``).  ``rewardlab.load(paths, format="mjai")`` (or
:func:`rewardlab.load_mjai`, :func:`rewardlab.read_mjai`) reads logs (plain,
``.gz`` or ``.bz2``; files or folders) into the **kanachan frame**
(:mod:`rewardlab.sources.kanachan.schema`), so the kanachan contract, the
reward families, the ranking tuner and the export work on them unchanged.

Rows
----
One row per decision of a player: a discard (``dahai``), a riichi
declaration (``reach``; its discard is the next row), a call (``chi``,
``pon``, ``daiminkan``), a closed or added kan (``ankan``, ``kakan``) and a
win (``hora``, by its ``actor``), with the state before it.  An episode is
one player's game (``game_id`` is a 32-hex-digit hash of the game's lines,
``seat`` the player), rounds are keyed by (``chang``, ``ju``, ``ben``);
``end_of_round`` is on the player's last row of a round, ``end_of_game`` on
the player's last row of the game (then ``end_of_round`` is False, as in
kanachan's offline files).  A player without a decision in a round has no
row in it, so that round's results are on no row of theirs.

What each column holds
----------------------
``sparse``
    room and grades (options; a log has none: defaults room 0, grade 0),
    game length (half-length when the game plays a South round, or the
    ``game_length`` option), the seat, chang, ju, the tiles drawn so far
    (``82 + n``, ``n`` = the round's tsumo events so far minus one), the dora
    indicators, the concealed hand (``337 + tile id``, red five = copy 0,
    plain fives copies 1-3) and, after the player's own tsumo, the drawn tile
    (``473 + kind``).
``numeric``
    ben, the riichi sticks on the table and the four scores, all at the
    start of the round (``start_kyoku``).
``results``
    On a round-end row: the round's four deltas, exactly as the log's
    ``hora`` / ``ryukyoku`` give them (summed over a double ron; riichi
    sticks paid at ``reach_accepted`` are not in them), and the four scores
    after the round.  On a game-end row: the last round's deltas and the
    final scores.
``round_summary``
    On round-end rows: tsumo / ron / draw, the winners, the ron's discarder,
    tenpai seats (when ``ryukyoku`` gives ``tenpais``), dealer kept, game
    over, bust (ids of :data:`rewardlab.sources.mjai.features.SUMMARY_IDS`).
``progression``, ``candidates``, ``action``
    Padding: a log has neither kanachan's progression encoding nor the legal
    options of a decision (:data:`rewardlab.sources.mjai.reader.PADDED_COLUMNS`;
    ``rewardlab info`` shows them).

Scores
------
Engines differ: some give ``scores`` on ``hora`` / ``ryukyoku`` /
``reach_accepted`` / ``end_game``, some only ``deltas``; riichi payments may
appear only as ``reach_accepted``.  The tracker computes the scores from the
round's starting scores, the riichi payments (1000 at ``reach_accepted``) and
the deltas, and checks every score the log gives against them; each
``start_kyoku`` must start from the previous round's end with the sticks left
on the table as ``kyotaku``, and the points plus 1000 per stick must keep the
game's total.  Sticks left at the game's end go to the top player (ties: the
lower seat), as in Tenhou, Mahjong Soul and riichienv; an ``end_game`` with
``scores`` must agree, and one with ``ranks`` (four integers, 1 = top, or 0-3)
must give the final scores' ranks by that rule
(:mod:`rewardlab.sources.mjai.ranking`; rule ``ranks_mismatch``).

Who pays a win is checked on its deltas (given, or the scores' change; rule
``wrong_payment``, :data:`rewardlab.sources.mjai.tiles.PAYMENT_RULES`): in a
ron only the discarder pays (each winner of a double ron from the same
discarder), in a tsumo every other player pays, the two non-dealers equal
shares and the dealer more (all three equal on the dealer's tsumo), and the
winner gains what the others pay plus the riichi sticks on the table, which
go to the round's first winner.  A seat that fed the pon or open kan
completing a winner's big three dragons, big four winds or four kans is
liable (pao): it may share a ron's payment, and a tsumo's shares are then
free.  The value of a hand (han, fu, honba) is not checked: a log need not
give it.  Each round must be one the round before allows (rule
``round_order``): after a non-dealer's win the next deal with honba 0, after
the dealer's win the same round with one more honba, after a draw one more
honba in the same round or the next.  Scores must stay within +-2**30 (the
frame's columns are 32-bit).

Files
-----
A file with no event (empty, blank lines or a byte order mark) is refused
(``empty_file``), in skip mode too; a compressed body under a plain name is
named as such (``looks_compressed``: rename it to ``.gz`` / ``.bz2``), and a
damaged ``.gz`` / ``.bz2`` is ``unreadable``.  Skip mode leaves such a file
out whole: a row of ``result.skipped`` names it (``line`` and ``raw`` null),
its bytes stay in the file and nothing of it goes to the side file.

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/mjai", format="mjai", progress=False)
>>> frame.select("game_id").n_unique()
6
"""
