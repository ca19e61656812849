"""rewardlab.domains."""
