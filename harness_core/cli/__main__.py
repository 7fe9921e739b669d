"""``python -m harness_core.cli``: the same as the ``harness`` script."""

import sys

from . import main

sys.exit(main())
