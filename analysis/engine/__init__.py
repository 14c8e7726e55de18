"""The experiment engine: Monte Carlo runs (:mod:`~marketsim.analysis.engine.runner`, executors local, process pool and
Dask), resumable sweeps (:mod:`~marketsim.analysis.engine.sweep`), the paper studies
(:mod:`~marketsim.analysis.engine.studies`, with the fair-share cells in
:mod:`~marketsim.analysis.engine.fairshare_study`), paired statistics (:mod:`~marketsim.analysis.engine.stats`), the
headline verdict rule (:mod:`~marketsim.analysis.engine.headlines`) and the run-folder status
(:mod:`~marketsim.analysis.engine.run_status`). It computes and writes data; it never imports the front ends
(:mod:`marketsim.analysis.frontends`), which tests/test_layering.py checks. Submodules are imported on demand."""
