"""`python -m fedflat.analysis <cmd>`: the entry point of the per-run analysis commands the workflow's rules run
(hessian, landscape, stability). The analysis itself is fedflat.pipeline.analysis; nothing imports this module.
It enters the kernel settings (--numerics) before the composition root imports torch."""
import sys

from .core.errors import ConfigError
from .core.util.numerics import enter_from_argv


def main() -> int:
    try:
        enter_from_argv(sys.argv[1:])  # --numerics: the kernel settings, before the composition root imports torch
    except ConfigError as exc:
        print(f"fedflat.analysis: error: {exc}", file=sys.stderr)
        return 2
    from . import plugins  # noqa: F401  (the composition root: the models, data sets and presets the commands load)
    from .pipeline.analysis.analysis_commands import main as commands

    return commands()


if __name__ == "__main__":
    sys.exit(main())
