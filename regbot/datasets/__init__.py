"""Seeded datasets with their truth, for `regbot demo`, the tests and the benchmarks:

* ``service``: a Python service in a real git repository, its py-spy-style profiles across
  deploys and one planted culprit among decoys (``build_scenario(directory, seed)``; built by
  the ``service_*`` modules);
* ``fleet``: gCPU series of many subroutines with planted regressions, creeps, transients,
  seasonality and cost shifts (``simulate_fleet``);
* ``cascades``: profiled services with planted regression cascades, for deduplication.
"""
