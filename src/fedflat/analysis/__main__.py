import sys

from .. import plugins  # noqa: F401  (the composition root: the models, data sets and presets the commands load)
from .cli import main

sys.exit(main())
