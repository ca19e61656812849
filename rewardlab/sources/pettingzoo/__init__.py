"""PettingZoo recordings: :func:`rewardlab.record_parallel` plays policies in a parallel environment and keeps
a joint step table (one row per episode, step and agent; :mod:`rewardlab.sources.pettingzoo.recorder`).

PettingZoo is the optional ``pettingzoo`` extra (with ``mpe2``, where MPE's
environments now live); it is imported only when the recorder runs.
"""
