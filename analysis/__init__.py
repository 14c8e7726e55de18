"""The application layer over the core (:mod:`market`), the Mesa models (:mod:`agents`) and the scenarios:
:mod:`analysis.engine` runs experiments (Monte Carlo runs, sweeps, the paper studies, statistics, headline
verdicts, run status) and :mod:`analysis.frontends` presents them (the ``marketsim`` CLI, the live page,
reports, plots, the learning and audit front ends). The engine never imports a front end
(tests/test_layering.py). Submodules are imported on demand (plots pull in matplotlib)."""
