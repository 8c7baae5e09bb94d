"""`python -m fedflat.papers ...`: the entry point of the paper catalogs' commands (fedflat.results.papers.__main__:
the targets and their compute, --plan, --coverage, --settings, picks) and of `trace`, which is
`python -m fedflat.evidence trace` under the papers' command. Nothing imports this module."""
import sys

from .evidence.__main__ import main as evidence_main
from .results.papers.__main__ import main as catalogs_main


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # dispatched here, at the top, so that the catalogs (below the evidence) never import the evidence
    return evidence_main(argv) if argv[:1] == ["trace"] else catalogs_main(argv)


if __name__ == "__main__":
    sys.exit(main())
