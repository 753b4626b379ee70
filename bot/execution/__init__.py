"""Where work runs: executors (this process, a process pool, a Dask cluster) and detection of a
fleet in partitions over them."""
