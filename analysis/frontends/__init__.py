"""The front ends over the engine (:mod:`marketsim.analysis.engine`): the ``marketsim`` CLI
(:mod:`~marketsim.analysis.frontends.cli`), the live page (:mod:`~marketsim.analysis.frontends.viz`), markdown reports
(:mod:`~marketsim.analysis.frontends.report`), seaborn plots (:mod:`~marketsim.analysis.frontends.plots`), the learning
experiments' config, runs and reports (:mod:`~marketsim.analysis.frontends.learn`,
:mod:`~marketsim.analysis.frontends.learn_bayesian`), the audit report
(:mod:`~marketsim.analysis.frontends.audit_report`) and the lie-factor script
(:mod:`~marketsim.analysis.frontends.explore_lying`). Submodules are imported on demand (plots pull in matplotlib, the
page solara), so ``marketsim --help`` stays fast."""
