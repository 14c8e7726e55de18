"""The application layer over the core (:mod:`marketsim.market`), the Mesa models (:mod:`marketsim.agents`) and the
scenarios:
:mod:`marketsim.analysis.engine` runs experiments (Monte Carlo runs, sweeps, the paper studies, statistics, headline
verdicts, run status) and :mod:`marketsim.analysis.frontends` presents them (the ``marketsim`` CLI, the live page,
reports, plots, the learning and audit front ends). The engine never imports a front end
(tests/test_layering.py). Submodules are imported on demand (plots pull in matplotlib)."""

if __name__ != "marketsim.analysis":  # the bare name (this checkout's root on sys.path): a second copy of every module
    raise ImportError(f"import marketsim.analysis, not {__name__}: marketsim's packages live in one namespace "
                      "(docs/concepts.md, Package layout)", name=__name__)
