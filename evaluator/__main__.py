"""``python -m evaluator`` is the ``evaluator`` command."""

import sys

from .cli import main

sys.exit(main())
