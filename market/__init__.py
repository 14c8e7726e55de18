"""The core layer (import it as ``marketsim.market``): mechanisms, audit, data; no Mesa, no plotting."""

if __name__ != "marketsim.market":  # the bare name (this checkout's root on sys.path): a second copy of every module
    raise ImportError(f"import marketsim.market, not {__name__}: marketsim's packages live in one namespace "
                      "(docs/concepts.md, Package layout)", name=__name__)
