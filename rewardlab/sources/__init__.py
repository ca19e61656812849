"""One module per input format; each produces the common frame described in :mod:`rewardlab.schema`."""
