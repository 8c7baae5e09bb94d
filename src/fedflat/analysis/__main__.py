import sys

from ..errors import ConfigError
from ..util.numerics import enter_from_argv

try:
    enter_from_argv(sys.argv[1:])  # --numerics: the kernel settings, before the composition root imports torch
except ConfigError as exc:
    print(f"fedflat.analysis: error: {exc}", file=sys.stderr)
    sys.exit(2)

from .. import plugins  # noqa: E402,F401  (the composition root: the models, data sets and presets the commands load)
from .cli import main  # noqa: E402

sys.exit(main())
