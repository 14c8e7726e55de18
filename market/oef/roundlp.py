"""Per-round max-min LPs at scale: identical jobs solved once (exact aggregation).

A round of a GPU cluster scheduler holds thousands of jobs but few distinct ones: Gavel's workloads
draw jobs from a table of model types (26 on one GPU in its measured throughputs) and scale
factors. In a max-min LP (``gavel``, ``gavel-max-min-perf``) jobs whose rows are identical (same
throughputs, targets / weights, caps and scale factor) are interchangeable, so the program has an
optimal solution that treats them alike (it is convex and symmetric under swapping them: average
any optimum over the swaps). :func:`row_classes` finds the classes; the policies then solve the
aggregated program, one row per class ``c`` with ``n_c`` members, variables ``Y_c = n_c x_l``::

    max t  s.t.  A_c . Y_c >= n_c tau_c t,   sum_j Y_cj <= n_c D_c,   sum_c s_c Y_cj <= m_j,   Y >= 0

whose optimum ``t`` is the full program's and whose ``Y_c / n_c`` is an optimal allocation of the
full program (every constraint of member ``l`` is the class constraint divided by ``n_c``). The
full LP has ``n k`` variables; the aggregated one ``C k``. ``D_c`` is the row's time bound: the
cap for ``gavel``; ``caps / s`` (1 without caps) for ``gavel-max-min-perf``, whose classes are
keyed on it.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.errors import InputError

__all__ = ["row_classes", "row_groups", "AGGREGATE_CHOICES", "check_aggregate", "use_aggregation"]

AGGREGATE_CHOICES = ("auto", True, False)


def row_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of identical rows of ``key`` (n, q), as ``np.unique(key, axis=0, return_index=True,
    return_inverse=True, return_counts=True)`` gives them (rows equal entry by entry as floats; groups
    in lexicographic order): each group's first row, each row's group and the group sizes. One
    ``lexsort`` of the columns instead of ``np.unique``'s sort of whole rows (5-9x less CPU on a
    round's thousands of rows); a key holding NaN goes to ``np.unique``."""
    key = np.asarray(key, dtype=float)
    n = key.shape[0]
    if n == 0 or key.shape[1] == 0 or np.isnan(key).any():
        _, first, inverse, counts = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
        return first, inverse.ravel(), counts
    perm = np.lexsort(key.T[::-1])  # stable: equal rows in ascending position
    srt = key[perm]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.any(srt[1:] != srt[:-1], axis=1, out=new[1:])
    starts = np.flatnonzero(new)
    inverse = np.empty(n, dtype=np.int64)
    inverse[perm] = np.cumsum(new) - 1
    return perm[starts], inverse, np.diff(np.append(starts, n))


def row_classes(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Classes of identical rows over the stacked ``columns`` (each (n,) or (n, q)): the index of
    each class's first row (ascending), each row's class and the class sizes."""
    blocks = [np.asarray(c, dtype=float).reshape(len(c), -1) for c in columns]
    first, inverse, counts = row_groups(np.concatenate(blocks, axis=1))
    order = np.argsort(first, kind="stable")  # classes in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse], counts[order]


def check_aggregate(value: object) -> None:
    """Validate the ``aggregate`` option (``"auto"``, ``True`` or ``False``)."""
    if not (value == "auto" or value is True or value is False):
        raise InputError("aggregate", value, "must be 'auto', True or False")


def use_aggregation(option: object, solver: str, n_classes: int, n: int, nonzeros: int) -> bool:
    """Whether to solve the aggregated program: ``True``/``False`` as given; ``"auto"`` when some
    rows coincide and the full program is large enough for ``solver="auto"`` to pick interior point
    (:data:`marketsim.market.oef.lp.AUTO_IPM_NONZEROS`; small programs keep today's dual-simplex vertex)."""
    from marketsim.market.oef.lp import AUTO_IPM_NONZEROS

    if option is True or option is False:
        return bool(option) and n_classes < n
    return solver == "auto" and n_classes < n and nonzeros >= AUTO_IPM_NONZEROS
