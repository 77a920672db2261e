"""Running a grid of independent jobs: the floor under the simulator sweeps and the trained-model grids.

- ``executor``  local process pool or Dask cluster behind one :func:`~varsim.jobs.executor.run_jobs` call

Knows nothing of what a job computes; importing this package loads neither NumPy nor Dask.
"""
