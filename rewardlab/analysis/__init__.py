"""rewardlab.analysis."""
