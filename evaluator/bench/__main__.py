"""``python -m evaluator.bench --worker NAME ...``: one bench worker process (started by :func:`run`)."""

import sys

from .._malloc import tune
from .run import worker_main

OWN_THREADS = ("mapping", "moves")
"""The workers that run the mapping search, whose process keeps glibc's arena per thread as ``evaluator map``'s does
(:func:`evaluator._malloc.tune`)."""

_worker = sys.argv[sys.argv.index("--worker") + 1] if "--worker" in sys.argv[1:-1] else None
tune(shared_arena=_worker not in OWN_THREADS)  # as the console command does: the workers' timings are what users get

sys.exit(worker_main(sys.argv[1:]))
