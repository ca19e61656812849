"""Gymnasium recordings: :func:`rewardlab.record` runs a policy in an environment and keeps a step table.

Gymnasium is an optional extra (``.venv/bin/pip install -e '.[gym]'`` in a checkout); it is
imported only when :mod:`rewardlab.sources.gymnasium.recorder` records.  The
files it writes are converted datasets (the spec in their metadata), read by
the ``"dataset"`` source: ``rewardlab.load(path)``.
"""
