"""The experiment engine: Monte Carlo runs (:mod:`~analysis.engine.runner`, executors local, process pool and
Dask), resumable sweeps (:mod:`~analysis.engine.sweep`), the paper studies (:mod:`~analysis.engine.studies`, with
the fair-share cells in :mod:`~analysis.engine.fairshare_study`), paired statistics
(:mod:`~analysis.engine.stats`), the headline verdict rule (:mod:`~analysis.engine.headlines`) and the run-folder
status (:mod:`~analysis.engine.run_status`). It computes and writes data; it never imports the front ends
(:mod:`analysis.frontends`), which tests/test_layering.py checks. Submodules are imported on demand."""
