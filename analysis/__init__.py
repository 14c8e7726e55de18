"""Monte Carlo runner (:mod:`analysis.runner`), statistics (:mod:`analysis.stats`), seaborn plots
(:mod:`analysis.plots`), markdown reports (:mod:`analysis.report`) and the ``marketsim`` CLI
(:mod:`analysis.cli`). Submodules are imported on demand (plots pull in matplotlib)."""
