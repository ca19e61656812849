"""rewardlab.domains.mahjong."""
