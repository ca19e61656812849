"""Sources: one module per input format, each registering a :class:`~rewardlab.sources.registry.Source`.

:mod:`rewardlab.sources.registry` holds the registry (the built-in sources are
imported on its first use), :mod:`rewardlab.sources.dispatch` the
:func:`rewardlab.load` / :func:`rewardlab.scan` that open files through it.
"""
