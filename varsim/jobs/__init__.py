"""Running a grid of independent jobs: the floor under the simulator sweeps and the training-run grids.

- ``executor``  local process pool or Dask cluster behind one :func:`~varsim.jobs.executor.run_jobs` call
- ``resume``    a results directory of one JSON record per job: locked, sorted into finished / corrupt / to do, the
  rest run and each record written atomically as it arrives

Knows nothing of what a job computes; importing this package loads neither NumPy nor Dask.
"""
