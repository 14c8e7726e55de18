"""``python -m marketsim``: the ``marketsim`` command (the same program as the console script)."""

import sys

from marketsim.analysis.frontends.cli import main

if __name__ == "__main__":
    sys.exit(main())
