"""ipywidgets fronts (moved into a package; split per tuner in the next commit)."""

from rewardlab.widgets.base import *  # noqa: F401,F403
from rewardlab.widgets.base import __all__, _fmt, number_text  # noqa: F401
