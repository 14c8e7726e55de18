"""The front ends over the engine (:mod:`analysis.engine`): the ``marketsim`` CLI (:mod:`~analysis.frontends.cli`),
the live page (:mod:`~analysis.frontends.viz`), markdown reports (:mod:`~analysis.frontends.report`), seaborn plots
(:mod:`~analysis.frontends.plots`), the learning experiments' config, runs and reports
(:mod:`~analysis.frontends.learn`, :mod:`~analysis.frontends.learn_bayesian`), the audit report
(:mod:`~analysis.frontends.audit_report`) and the lie-factor script (:mod:`~analysis.frontends.explore_lying`).
Submodules are imported on demand (plots pull in matplotlib, the page solara), so ``marketsim --help`` stays
fast."""
