"""Monte Carlo runner (:mod:`analysis.engine.runner`), statistics (:mod:`analysis.engine.stats`), seaborn plots
(:mod:`analysis.frontends.plots`), markdown reports (:mod:`analysis.frontends.report`) and the ``marketsim`` CLI
(:mod:`analysis.frontends.cli`). Submodules are imported on demand (plots pull in matplotlib)."""
