"""rewardlab.sources.kanachan.reader."""
