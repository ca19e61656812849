"""Tuning sessions (moved into a package; split per tuner in the next commit)."""

from rewardlab.sessions.base import *  # noqa: F401,F403
from rewardlab.sessions.base import COMPARE_BATCH_SIZE, COMPARE_MODE, __all__, sample_whole_games, whole_games  # noqa: F401
