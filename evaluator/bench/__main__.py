"""``python -m evaluator.bench --worker NAME ...``: one bench worker process (started by :func:`run`)."""

import sys

from .._malloc import tune
from .run import worker_main

tune()  # as the console command does (evaluator._malloc): the workers' timings are what users get

sys.exit(worker_main(sys.argv[1:]))
