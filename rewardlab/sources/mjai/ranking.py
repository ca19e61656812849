"""The final ranking of a game: the higher score first; of equal scores, the lower seat first.

This is the rule of Tenhou, Mahjong Soul and riichienv, and the one
:func:`rewardlab.domains.mahjong.rules.ranks_from_scores` applies to a
frame's final scores (a test checks they agree).  It lives here, on the
sources floor, so the compiled MJAI tracker can give the riichi sticks left
at the end to the top player and check an ``end_game``'s ``ranks`` without
importing upward.  Both functions are numba-compiled (cached on disk) and
can be called from Python as well.

Examples
--------
>>> import numpy as np
>>> ranks_of(np.array([30000, 30000, 20000, 40000])).tolist()
[1, 2, 3, 0]
>>> int(top_seat(np.array([25000, 30000, 30000, 15000])))
1
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ranks_of", "top_seat"]


@njit(cache=True, nogil=True)
def ranks_of(scores):
    """The rank (0 = top) of each of the four seats given their ``scores``.

    Parameters
    ----------
    scores : numpy.ndarray of int64, shape (4,)
        Final scores of seats 0-3.

    Returns
    -------
    numpy.ndarray of int64, shape (4,)
        Seat ``s``'s rank: ``#{j < s: scores[j] >= scores[s]} + #{j > s: scores[j] > scores[s]}``,
        so ranks are always 0, 1, 2, 3 in some order.

    Examples
    --------
    >>> import numpy as np
    >>> ranks_of(np.array([20000, 40000, 20000, 20000])).tolist()
    [1, 0, 2, 3]
    """
    out = np.zeros(4, dtype=np.int64)
    for s in range(4):
        r = 0
        for j in range(4):
            if (j < s and scores[j] >= scores[s]) or (j > s and scores[j] > scores[s]):
                r += 1
        out[s] = r
    return out


@njit(cache=True, nogil=True)
def top_seat(scores):
    """The seat ranked first (:func:`ranks_of` 0): the highest score, the lower seat among equals.

    Parameters
    ----------
    scores : numpy.ndarray of int64, shape (4,)

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> int(top_seat(np.array([10000, 45000, 45000, 0])))
    1
    """
    top = 0
    for s in range(1, 4):
        if scores[s] > scores[top]:
            top = s
    return top
