"""The one batch engine: design points to the device in blocks, results back to the host.

Every caller that evaluates many points of one (topology, routing) through
the kernels of :func:`evaluator._batch.compiled.batch_kernel` uses these modules:
:func:`evaluator.evaluate` and :func:`evaluator.evaluate_batch`
(:mod:`evaluator.evaluation`), several jobs (:mod:`evaluator.jobs`) and the
sweep's workers (:mod:`evaluator.sweep.worker`, through
:func:`evaluator.evaluation.evaluate_groups`, one call per chunk). One module
per concern:

* :mod:`.compiled`: the one-point kernels of :mod:`evaluator.kernel` batched
  (``vmap`` over a step, a loop over the steps of a block) and jitted once
  per (topology, routing), the program store, the count of compilations;
* :mod:`.checks`: the arguments (types, counts, the block size's two names);
* :mod:`.blocks`: shape buckets, the one block and step sizing rule,
  padding (task rows, flow lists, a sweep's flow bank), the one
  host-to-device transfer, fetching results back;
* :mod:`.memory`: the peak bytes of a traced block call, the working set of a
  call, refused before anything is allocated;
* :mod:`.dispatch`: the runners of each kernel input (flow lists, dense
  rank-one weights), a batch of single exchanges, a batch of any traffic;
* :mod:`.banked`: the banked runner (flows from banks planned per network,
  placements drawn from their seeds inside the call: a sweep's chunk);
* :mod:`.groups`: groups of points of any traffic, each to its runner (the
  sweep's one entry point; a path set's unroutable pairs refused per point);
* :mod:`.pathsets`: the communicating router pairs of a point, path-set
  routings bound to them;
* :mod:`.phases`: phased traffic, phase by phase, then combined;
* :mod:`.output`: results as a dataset, the notes and bounds of one point;
* :mod:`.run`: a whole batch (checked arguments, a path set bound, the
  working set refused or allowed, the points dispatched, paths per pair).

Words, one meaning each: a *block* is the points of one device call, a
*step* the points one vmapped evaluation inside it takes at once (the
kernel's loop runs over the steps of a block), a *bucket* the padded size of
an array axis (:func:`.blocks.bucket_size`), and a *chunk* the sweep's unit
of work and checkpoint (``sweep.chunk_size`` points), nothing here.

A private package of the root: every subpackage may import it (its names
are shared infrastructure, not public API).
"""
