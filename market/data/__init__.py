"""Reference data shipped with the package (read with :func:`marketsim.market.traces.data_path`).

* ``gavel_throughputs.csv``: Gavel's measured K80/P100/V100 throughputs (MIT, see its README).
* ``gavel_trace_seed1.trace``: a 1,301-job trace written by Gavel's simulator (MIT, see its README).
* ``philly_sample.csv``: a 2,007-job sample of the Microsoft Philly trace (CC BY 4.0, see its README).
"""
