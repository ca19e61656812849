"""The kanachan plug-in contract (:class:`KanachanContract`).

Examples
--------
>>> from rewardlab.contracts.kanachan import KANACHAN
>>> KANACHAN.name
'kanachan'
"""

from rewardlab.contracts.kanachan.contract import KANACHAN, KanachanContract

__all__ = ["KANACHAN", "KanachanContract"]
