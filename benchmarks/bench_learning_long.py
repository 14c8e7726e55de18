"""Long continuous best-response runs on the 20-tenant OEF population of bench_learning.py (why
they do not settle): per pass, the largest relative gain found and how many tenants moved; the last
three profiles as log10 report factors (rows: GPU types 1 and 2; columns: tenants).

Usage: ``.venv/bin/python benchmarks/bench_learning_long.py MECHANISM SECONDS`` (results of
``oef-coop 480`` and ``oef-noncoop 480`` are in ``benchmarks/results/learning_long.txt``)."""

# ruff: noqa: E402
import sys

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from bench_learning import population

from marketsim.market.learning.continuous import continuous_best_response

W, m = population()
mech = sys.argv[1]
r = continuous_best_response(mech, W, m, passes=1000, tol=0.01, time_limit=float(sys.argv[2]))
t = r.trajectory
print(mech, r.status, r.passes, r.seconds, r.eps_rel)
print(
    t.groupby("pass").agg(maxgain=("gain_rel", "max"), moved=("gain_rel", lambda g: int((g > 0.01).sum()))).to_string()
)
for h in r.history[-3:]:
    print(np.round(np.log10(h).T, 2))
