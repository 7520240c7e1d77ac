"""``python -m evaluator`` is the ``evaluator`` command."""

from .cli import run

run()
