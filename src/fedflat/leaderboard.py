"""`python -m fedflat.leaderboard ...`: the entry point of the leaderboard's commands (fedflat.results.leaderboard.
__main__: the run count and wall-time estimate, --progress, --lockstep). Nothing imports this module."""
import sys

from .results.leaderboard.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
