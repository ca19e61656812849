"""``python -m rewardlab`` runs the command-line interface."""

from rewardlab.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
