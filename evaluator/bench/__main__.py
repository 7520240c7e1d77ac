"""``python -m evaluator.bench --worker NAME ...``: one bench worker process (started by :func:`run`)."""

import sys

from .run import worker_main

sys.exit(worker_main(sys.argv[1:]))
