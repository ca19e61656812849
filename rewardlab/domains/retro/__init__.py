"""The retro contest (Sonic): its reward vectorized, checked against each game's own Lua, and its family.

* :mod:`~rewardlab.domains.retro.contest`: the contest reward and done over
  per-timestep columns (NumPy), with a plain-loop twin beside each function;
* :mod:`~rewardlab.domains.retro.frames`: a recording in the N+1 layout ->
  the step frame (and spec) the family and its exported plug-in read, with
  the episode columns (start x, act-change shift, furthest x) as columns;
* :mod:`~rewardlab.domains.retro.family`: :class:`ContestFamily` on the
  family core, its exported plug-in and :func:`export_contest_plugin`.

Examples
--------
>>> from rewardlab.domains.retro import contest
>>> contest.SCALE, contest.BONUS, contest.FRAME_LIMIT
(9000.0, 1000.0, 18000)
"""
