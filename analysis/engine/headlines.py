"""A study's headline claims against our measurements: reproduced, by construction, direction only,
stronger than the paper, or not reproduced.

A study TOML lists the paper's headline numbers as ``[[headline]]`` tables (see
:func:`parse_headline`). :func:`evaluate_headline` takes the study's cells (panel × value ×
replication, one variant, one realisation) at the values the headline pins and computes ``ours``
with a 95% interval by the headline's ``statistic``:

* ``"ratio of means"`` (every ratio headline): with a ``baseline`` mechanism, per cell (same
  workload) ``a = metric(mechanism)`` and ``b = metric(baseline)`` (``baseline_realisation``: the
  baseline's rows, or the mechanism's own, at another realisation, e.g. the same allocation under
  another placer); with a ``baseline_metric``, two columns of the SAME rows (e.g. a liar's true
  throughput when lying over the same tenant's throughput in the truthful twin run). ``ours =
  mean(a) / mean(b)``, its interval a paired percentile bootstrap over the cells
  (:data:`BOOTSTRAP` resamples, seeded by the study seed and the headline's id: deterministic). A
  ratio of means is not pulled up by a few cells with a tiny denominator (Eris' per-seed welfare
  ratios run from 0 to 5.7), where the mean of per-cell ratios is. Undefined when some ``b < 0`` (a
  ratio of a loss is not a speed-up) or ``mean(b) <= 0``. The per-cell ratios are reported too:
  min / median / max and how many cells lie on the paper's side of 1 (``cells_paper_side``);
* ``"share"``: a share of cells (each cell 0 or 1, e.g. "User-4 gains the most" per seed): ``k /
  n`` with a Wilson score interval, which never leaves [0, 1];
* ``"mean"`` (levels): the mean with a 95% Student-t interval.

Verdicts (:data:`HEADLINE_VERDICTS`), derived from the numbers, never written by hand, the same
rule for every study (:func:`verdict`):

* ``reproduced``: the paper's number lies inside our interval, or within the stated relative
  tolerance of our figure (``tolerance``, default 25%; for a ratio it is relative to the EFFECT,
  ``|log(ours) / log(paper) − 1| <= tolerance``, so +11% does not reproduce +35%; for a level and
  for a paper ratio of exactly 1 it is ``|ours − paper| <= tolerance · |paper|``); and, for a ratio
  the paper reports as different from 1, our interval excludes 1 on the paper's side (an interval
  that also contains "no effect" reproduces nothing);
* ``by construction``: it would be ``reproduced``, but the headline states a property the mechanism
  guarantees by construction (``by_construction = "why"``: e.g. non-cooperative OEF equalises
  estimated throughput because its LP says so): a check of the implementation, not a reproduction
  of the paper's evaluation, so it is not counted as reproduced. If such a row fails, it is ``not
  reproduced`` (and a bug);
* ``direction only``: a ratio whose interval lies entirely on the paper's side of 1 AND whose effect
  is at least a quarter of the paper's and at most four times it on a log scale (``MIN_EFFECT <=
  log ours / log paper <= MAX_EFFECT``: +0.3% against +20% is no effect);
* ``stronger than the paper``: as direction only, but the effect exceeds :data:`MAX_EFFECT` times
  the paper's on a log scale (Astraea's makespan at 0.38x against the paper's 0.83x is not "the
  paper's direction", it is a different result);
* ``not reproduced``: everything else: the opposite direction, an interval that includes 1 (no
  separation), an effect below a quarter of the paper's, an undefined ratio, or no cells. The
  reason column says which.

Where the paper gives no number, ``paper`` may be ``"higher"`` / ``"lower"`` (with a baseline:
reproduced iff our interval lies entirely above / below 1), ``"at most 0"`` (a statement about
every cell, e.g. a liar's gain under a truthful mechanism: reproduced iff no cell is positive) or
``"at least 1"`` (every cell, e.g. every user's ratio over max-min: reproduced iff no cell is
below 1 − 1e-6).

Roles. Every headline has an ``id`` (unique in its study; docs cite ``study:id``). A headline is
*counted* unless it is a ``sensitivity_of = "id"`` row (the same claim read with another
realisation or engine; so is any row with ``realisation`` other than ``"own"``) or an
``alternative_of = "id"`` row (another reading of the paper where the paper contradicts itself:
``conflict`` states the contradiction; :func:`headline_counts` says how the count changes with the
alternative reading). A counted verdict that a sensitivity row or a sensitivity panel
(:func:`marketsim.analysis.engine.studies.headline_sensitivity`) turns into another verdict is *fragile*
(:func:`mark_fragile`; the ``fragile`` column names the setting), when that re-reading is
:func:`conclusive` (it has cells and, for a ratio, its interval excludes 1).

Studies report ``n`` (cells) per headline; the reproduction studies use n >= 20 seeds.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from marketsim.analysis.engine.stats import t_interval
from marketsim.market.errors import InputError, check_int

__all__ = [
    "BOOTSTRAP",
    "DEFAULT_TOLERANCE",
    "MIN_EFFECT",
    "MAX_EFFECT",
    "HEADLINE_VERDICTS",
    "STATISTICS",
    "TABLE_COLUMNS",
    "Headline",
    "parse_headline",
    "evaluate_headline",
    "evaluate_headlines",
    "headline_cells",
    "headline_counts",
    "headline_markdown",
    "mark_fragile",
    "conclusive",
    "ratio_of_means",
    "verdict",
    "wilson_interval",
]

HEADLINE_VERDICTS = ("reproduced", "by construction", "direction only", "stronger than the paper", "not reproduced")
DEFAULT_TOLERANCE = 0.25
#: "direction only" needs at least this share of the paper's effect on a log scale
MIN_EFFECT = 0.25
#: beyond this multiple of the paper's effect (log scale) a same-direction result is "stronger than the paper"
MAX_EFFECT = 4.0
#: bootstrap resamples of a ratio of means (percentile interval)
BOOTSTRAP = 10_000
STATISTICS = ("ratio of means", "share", "mean")
_KEYS = {"text", "panel", "metric", "mechanism", "baseline", "baseline_metric", "paper", "x", "tolerance", "note",
         "variant", "realisation", "id", "by_construction", "statistic", "sensitivity_of", "alternative_of",
         "conflict", "baseline_realisation"}  # fmt: skip
#: the claims the paper states without a number
_WORDS = ("higher", "lower", "at most 0", "at least 1")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
#: columns of :func:`evaluate_headlines` (headlines.csv; auction studies drop ``realisation``)
TABLE_COLUMNS = ["id", "headline", "role", "of", "panel", "metric", "mechanism", "baseline", "variant", "realisation",
                 "paper", "direction", "statistic", "ours", "low", "high", "n", "cell_min", "cell_median", "cell_max",
                 "cells_paper_side", "tolerance", "verdict", "fragile", "by_construction", "reason", "note",
                 "conflict"]  # fmt: skip


@dataclass(frozen=True)
class Headline:
    """One headline number of the paper: ``metric`` of ``mechanism`` (over ``baseline`` as a ratio
    when given) on panel ``panel`` (values ``x``, all when empty), as the paper reports it (``paper``);
    the optional fields are the keys of the module docstring."""

    text: str
    panel: int
    metric: str
    mechanism: str
    paper: float
    baseline: str = ""
    x: tuple[Any, ...] = ()
    tolerance: float = DEFAULT_TOLERANCE
    note: str = ""
    variant: str = "truthful"
    direction: str = ""  # "higher" / "lower" / "at most 0" / "at least 1": the paper gave no number
    baseline_metric: str = ""  # ratio of two columns of the same rows instead of two mechanisms
    realisation: str = "own"  # fair-share: "own" (each policy's own realisation) or a realisation name
    id: str = ""
    by_construction: str = ""  # why the mechanism guarantees it (then it is never counted as reproduced)
    statistic: str = ""  # "" = the default: "ratio of means" for a ratio, else "mean"
    sensitivity_of: str = ""  # id of the counted headline this row re-reads (not counted)
    alternative_of: str = ""  # id of the headline this row is another reading of (not counted)
    conflict: str = ""  # where the paper contradicts itself (alternative readings)
    baseline_realisation: str = ""  # the denominator's realisation (default: the row's own)

    @property
    def is_ratio(self) -> bool:
        """Whether the headline is a ratio (over a baseline mechanism, a baseline metric or a baseline realisation)."""
        return bool(self.baseline or self.baseline_metric or self.baseline_realisation)

    @property
    def stat(self) -> str:
        """The statistic in use (:data:`STATISTICS`)."""
        return self.statistic or ("ratio of means" if self.is_ratio else "mean")

    @property
    def role(self) -> str:
        """``"counted"``, ``"sensitivity"`` (another realisation or engine) or ``"alternative"`` (another reading)."""
        if self.alternative_of:
            return "alternative"
        if self.sensitivity_of or self.realisation != "own":
            return "sensitivity"
        return "counted"


def _num(where: str, v: Any, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(where, v, "must be a finite number")
    if positive and v <= 0:
        raise InputError(where, v, "must be > 0")
    return float(v)


def _text(where: str, v: Any) -> str:
    if not isinstance(v, str):
        raise InputError(where, v, "must be a string")
    return " ".join(v.split())


def parse_headline(
    t: Mapping[str, Any],
    where: str,
    *,
    panels: Sequence[Any],
    mechanisms: Sequence[str],
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] = ("truthful",),
    index: int = 0,
) -> Headline:
    """Validate one ``[[headline]]`` table (``where`` prefixes error fields, e.g. ``study x: headline[0]``).

    ``panels`` are the study's panels (objects with ``values``, optionally ``realisations``),
    ``mechanisms`` its mechanism names, ``metrics`` the metric columns it records (None: not
    checked), ``variants`` its variant names, ``index`` the table's position (default id ``h<index>``).
    References between headlines (``sensitivity_of``, ``alternative_of``) are checked by the study."""
    if not isinstance(t, Mapping):
        raise InputError(where, t, "must be a table")
    for k in t:
        if k not in _KEYS:
            raise InputError(f"{where}.{k}", t[k], f"is not a known key (allowed: {sorted(_KEYS)})")
    text = t.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}.text", text, "must be a non-empty string (the paper's statement)")
    hid = t.get("id", f"h{index}")
    if not isinstance(hid, str) or not _ID.match(hid):
        raise InputError(f"{where}.id", hid, "must be a lower-case slug (letters, digits, '.', '_', '-')")
    pi = check_int(f"{where}.panel", t.get("panel"), minimum=0)
    if pi >= len(panels):
        raise InputError(f"{where}.panel", pi, f"must index one of the {len(panels)} panels")
    metric = t.get("metric")
    if not isinstance(metric, str) or not metric or (metrics is not None and metric not in metrics):
        raise InputError(f"{where}.metric", metric, f"must be one of the study's metrics {list(metrics or [])}")
    roles = {"mechanism": t.get("mechanism"), "baseline": t.get("baseline", "")}
    for role, name in roles.items():
        if role == "baseline" and name == "":
            continue
        if name not in mechanisms:
            raise InputError(f"{where}.{role}", name, f"must be one of the study's mechanisms {list(mechanisms)}")
    breal = t.get("baseline_realisation", "")
    if roles["baseline"] == roles["mechanism"] and not breal:
        raise InputError(f"{where}.baseline", roles["baseline"], "must differ from the mechanism")
    bmetric = t.get("baseline_metric", "")
    if bmetric != "":
        if not isinstance(bmetric, str) or (metrics is not None and bmetric not in metrics):
            raise InputError(f"{where}.baseline_metric", bmetric, "must name a metric column of the study")
        if roles["baseline"] or breal:
            raise InputError(f"{where}.baseline_metric", bmetric,
                             "give one of baseline / baseline_realisation or baseline_metric, not both")  # fmt: skip
        if bmetric == metric:
            raise InputError(f"{where}.baseline_metric", bmetric, "must differ from the metric")
    realisation = t.get("realisation", "own")
    if not isinstance(realisation, str) or not realisation:
        raise InputError(f"{where}.realisation", realisation, "must be 'own' or a realisation name")
    if breal != "":
        known = [r for r in getattr(panels[pi], "realisations", ()) if r != "own"]
        if not isinstance(breal, str) or breal not in known:
            raise InputError(f"{where}.baseline_realisation", breal,
                             f"must be one of panel {pi}'s other realisations {known}")  # fmt: skip
        if breal == realisation:
            raise InputError(f"{where}.baseline_realisation", breal, "must differ from the row's realisation")
    ratio = bool(roles["baseline"] or bmetric or breal)
    direction = ""
    if t.get("paper") in ("higher", "lower"):  # the paper states a direction, not a number
        if not ratio:
            raise InputError(f"{where}.paper", t.get("paper"), "a direction ('higher'/'lower') needs a baseline")
        direction, paper = str(t["paper"]), math.nan
    elif t.get("paper") in ("at most 0", "at least 1"):  # a statement about every cell
        if ratio:
            raise InputError(f"{where}.paper", t.get("paper"), f"'{t['paper']}' is a level claim: drop the baseline")
        direction = str(t["paper"])
        paper = 0.0 if direction == "at most 0" else 1.0
    else:
        paper = _num(f"{where}.paper", t.get("paper"))
    if ratio and paper <= 0:
        raise InputError(f"{where}.paper", paper, "must be > 0 (a ratio over the baseline)")
    statistic = t.get("statistic", "")
    if statistic != "":
        if statistic not in STATISTICS:
            raise InputError(f"{where}.statistic", statistic, f"must be one of {list(STATISTICS)}")
        if (statistic == "ratio of means") != ratio:
            raise InputError(f"{where}.statistic", statistic,
                             "'ratio of means' is for ratio headlines, and only it is" if ratio
                             else "'ratio of means' needs a baseline")  # fmt: skip
        if statistic == "share" and (direction or not 0 <= paper <= 1):
            raise InputError(f"{where}.paper", t.get("paper"), "a share is a number in [0, 1]")
    xs = t.get("x", [])
    xs = list(xs) if isinstance(xs, list) else [xs]
    values = list(panels[pi].values)
    for v in xs:
        if v not in values:
            raise InputError(f"{where}.x", v, f"must be values of panel {pi} {values}")
    tol = _num(f"{where}.tolerance", t.get("tolerance", DEFAULT_TOLERANCE))
    if tol < 0:
        raise InputError(f"{where}.tolerance", tol, "must be >= 0")
    note = _text(f"{where}.note", t.get("note", ""))
    variant = t.get("variant", "truthful")
    if variant not in variants:
        raise InputError(f"{where}.variant", variant, f"must be one of {list(variants)}")
    by_c = _text(f"{where}.by_construction", t.get("by_construction", ""))
    if "by_construction" in t and not by_c:
        raise InputError(f"{where}.by_construction", t["by_construction"], "must say why it holds by construction")
    refs = {}
    for key in ("sensitivity_of", "alternative_of"):
        v = t.get(key, "")
        if not isinstance(v, str) or (v and not _ID.match(v)):
            raise InputError(f"{where}.{key}", v, "must be the id of another headline")
        if v == hid:
            raise InputError(f"{where}.{key}", v, "must not be the headline's own id")
        refs[key] = v
    if refs["sensitivity_of"] and refs["alternative_of"]:
        raise InputError(f"{where}.alternative_of", refs["alternative_of"], "a row is a sensitivity or an alternative")
    conflict = _text(f"{where}.conflict", t.get("conflict", ""))
    if bool(refs["alternative_of"]) != bool(conflict):
        raise InputError(f"{where}.conflict", t.get("conflict", ""),
                         "an alternative reading (alternative_of) must state the paper's conflict, and only it")
    return Headline(
        " ".join(text.split()), pi, metric, str(roles["mechanism"]), paper, str(roles["baseline"]), tuple(xs), tol,
        note, str(variant), direction, str(bmetric), realisation, hid, by_c, str(statistic), refs["sensitivity_of"],
        refs["alternative_of"], conflict, str(breal),
    )  # fmt: skip


def _rows(frame: pd.DataFrame, h: Headline, mechanism: str, realisation: str) -> pd.DataFrame:
    """The rows of ``mechanism`` at ``realisation`` on the headline's panel, variant and values."""
    sub = frame[(frame["panel"] == h.panel) & (frame["variant"] == h.variant) & (frame["mechanism"] == mechanism)]
    if "realisation_mode" in sub.columns:  # fair-share: each policy's own realisation, or one named realisation
        if realisation == "own":
            sub = sub[sub["realisation_mode"] == "own"]
        else:
            sub = sub[sub["realisation"] == realisation]
    if h.x:
        sub = sub[sub["x"].isin([float(v) if isinstance(v, (int, float)) else v for v in h.x])]
    return sub


def _cells(frame: pd.DataFrame, h: Headline) -> pd.DataFrame:
    """Per-cell values: index (x, replication), column ``__metric`` and, for a ratio, ``__baseline``."""
    need = {"panel", "variant", "mechanism", "x", "replication", h.metric}
    if h.baseline_metric:
        need.add(h.baseline_metric)
    if frame.empty or not need <= set(frame.columns):
        return pd.DataFrame()
    num = _rows(frame, h, h.mechanism, h.realisation)
    if num.empty:
        return pd.DataFrame()
    num = num.drop_duplicates(["x", "replication"]).set_index(["x", "replication"])
    if h.baseline_metric:
        both = num[[h.metric, h.baseline_metric]]
        return both.rename(columns={h.metric: "__metric", h.baseline_metric: "__baseline"}).dropna()
    out = num[[h.metric]].rename(columns={h.metric: "__metric"})
    if not h.is_ratio:
        return out.dropna()
    den = _rows(frame, h, h.baseline or h.mechanism, h.baseline_realisation or h.realisation)
    if den.empty:
        return pd.DataFrame()
    den = den.drop_duplicates(["x", "replication"]).set_index(["x", "replication"])[[h.metric]]
    return out.join(den.rename(columns={h.metric: "__baseline"}), how="inner").dropna()


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a share ``k / n`` (inside [0, 1]; (nan, nan) for n = 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2))
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def ratio_of_means(a: np.ndarray, b: np.ndarray, *, seed: Sequence[int] | int = 0,
                   resamples: int = BOOTSTRAP, level: float = 0.95) -> tuple[float, float, float]:  # fmt: skip
    """``(mean(a) / mean(b), low, high)``: paired cells ``(a_i, b_i)``, percentile bootstrap over the
    cells (``resamples`` draws of n cells with replacement, ``np.random.default_rng(seed)``). Needs
    ``b >= 0`` and ``mean(b) > 0`` (the caller checks); NaN bounds for fewer than 2 cells. A
    resample whose ``b`` sums to 0 counts as +inf (or is dropped if its ``a`` sums to 0 too)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ours = float(a.mean() / b.mean())
    if a.size < 2:
        return ours, float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, a.size, size=(resamples, a.size))
    sa, sb = a[idx].sum(axis=1), b[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(sb > 0, sa / np.where(sb > 0, sb, 1.0), np.where(sa > 0, np.inf, np.nan))
    r = r[~np.isnan(r)]
    tail = (1 - level) / 2
    low, high = np.quantile(r, [tail, 1 - tail], method="inverted_cdf")
    return ours, float(low), float(high)


def _seed(seed: int, h: Headline) -> list[int]:
    key = f"{h.id}|{h.text}|{h.panel}|{h.x}|{h.realisation}"
    return [int(seed), zlib.crc32(key.encode())]


def _paper_side(a: np.ndarray, b: np.ndarray, h: Headline) -> float:
    """Cells on the paper's side of 1 (a > b for a paper ratio above 1 or "higher", a < b below)."""
    if h.direction == "higher" or (not h.direction and h.paper > 1):
        return float((a > b).sum())
    if h.direction == "lower" or (not h.direction and h.paper < 1):
        return float((a < b).sum())
    return float("nan")


def _base_row(h: Headline) -> dict[str, Any]:
    of = h.alternative_of or h.sensitivity_of
    return {
        "id": h.id, "headline": h.text, "role": h.role, "of": of, "panel": h.panel, "metric": h.metric,
        "mechanism": h.mechanism,
        "baseline": (h.baseline or h.mechanism) + (f"@{h.baseline_realisation}" if h.baseline_realisation else "")
        if h.baseline or h.baseline_realisation else (f"[{h.baseline_metric}]" if h.baseline_metric else ""),
        "variant": h.variant, "realisation": h.realisation, "paper": h.paper, "direction": h.direction,
        "statistic": h.stat, "tolerance": h.tolerance, "note": h.note, "fragile": "",
        "by_construction": h.by_construction, "conflict": h.conflict,
        "cell_min": float("nan"), "cell_median": float("nan"), "cell_max": float("nan"),
        "cells_paper_side": float("nan"),
    }  # fmt: skip


def _fail(row: dict[str, Any], reason: str, h: Headline, n: int = 0) -> dict[str, Any]:
    nan = float("nan")
    return {**row, "n": n, "ours": nan, "low": nan, "high": nan, "verdict": "not reproduced",
            "reason": _join(reason, h.note)}  # fmt: skip


def evaluate_headline(frame: pd.DataFrame, h: Headline, *, seed: int = 0) -> dict[str, Any]:
    """Our figure for ``h`` on a study frame: ``ours``, ``low``, ``high``, ``n`` (cells), the per-cell
    spread (``cell_min``, ``cell_median``, ``cell_max``: per-cell ratios for a ratio headline, values
    otherwise; ``cells_paper_side``), ``verdict`` and ``reason`` (plus the headline's own fields, the
    columns :data:`TABLE_COLUMNS`). ``seed`` (the study's) seeds the bootstrap of a ratio together
    with the headline's id: the same inputs give the same interval."""
    row = _base_row(h)
    if h.metric not in frame.columns:
        return _fail(row, f"metric {h.metric!r} is not in the results", h)
    cells = _cells(frame, h)
    n = int(len(cells))
    if n == 0:
        return _fail(row, "no cells measured", h)
    a = cells["__metric"].to_numpy(dtype=float)
    if h.is_ratio:
        b = cells["__baseline"].to_numpy(dtype=float)
        if (b < 0).any() or b.mean() <= 0:
            what = f"{h.mechanism}'s {h.baseline_metric}" if h.baseline_metric else \
                f"{h.baseline or h.mechanism}'s {h.metric}" + (f" at {h.baseline_realisation}"
                                                               if h.baseline_realisation else "")  # fmt: skip
            reason = (f"ratio undefined: {what} is < 0 in {int((b < 0).sum())} of {n} cells "
                      f"(mean {b.mean():.4g}; {h.mechanism}: {a.mean():.4g})")  # fmt: skip
            return _fail(row, reason, h, n)
        ours, low, high = ratio_of_means(a, b, seed=_seed(seed, h))
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(b > 0, a / np.where(b > 0, b, 1.0), np.where(a > 0, np.inf, np.nan))
        row["cells_paper_side"] = _paper_side(a, b, h)
    else:
        per = a
        if h.stat == "share":
            if not np.isin(a, (0.0, 1.0)).all():
                return _fail(row, f"statistic 'share' needs cells of 0 or 1 (got {sorted(set(a.tolist()))[:5]})", h, n)
            k = int(a.sum())
            ours = k / n
            low, high = wilson_interval(k, n)
        else:
            ours, low, high = t_interval(a)
    if (~np.isnan(per)).any():  # a ratio over a zero baseline cell is +inf (shown), 0 / 0 is left out
        row.update(cell_min=float(np.nanmin(per)), cell_median=float(np.nanmedian(per)),
                   cell_max=float(np.nanmax(per)))  # fmt: skip
    row.update(n=n, ours=ours, low=low, high=high)
    if h.direction in ("at most 0", "at least 1"):  # a statement about every cell, not the mean
        if h.direction == "at most 0":
            worst = float(a.max())
            tol = 1e-9 * max(1.0, float(np.abs(a).max()))
            bad = a > tol
            ok_text, bad_text = "never positive: largest", "positive"
        else:
            worst = float(a.min())
            bad = a < 1.0 - 1e-6
            ok_text, bad_text = "never below 1: smallest", "below 1"
        if not bad.any():
            v, reason = "reproduced", f"{ok_text} of {n} cells {worst:.4g} (mean {ours:.4g})"
        else:
            k = int(bad.sum())
            v, reason = "not reproduced", f"{bad_text} in {k} of {n} cells (extreme {worst:.4g}, mean {ours:.4g})"
    else:
        v, reason = verdict(h.paper, ours, low, high, ratio=h.is_ratio, tolerance=h.tolerance, direction=h.direction)
        if h.stat == "share":
            reason = f"{reason}; share {int(round(ours * n))}/{n}, Wilson interval"
        reason = f"{reason} (n={n})"
    if h.by_construction and v == "reproduced":
        v, reason = "by construction", f"holds by construction ({h.by_construction}): {reason}"
    return {**row, "verdict": v, "reason": _join(reason, h.note)}


def headline_cells(frame: pd.DataFrame, h: Headline) -> pd.DataFrame:
    """The cells behind ``h``'s figure: ``id, x, replication, value, baseline, ratio`` (``baseline``
    and ``ratio`` NaN for a level headline): the per-seed distribution the report shows."""
    cols = ["id", "x", "replication", "value", "baseline", "ratio"]
    if h.metric not in frame.columns:
        return pd.DataFrame(columns=cols)
    cells = _cells(frame, h)
    if cells.empty:
        return pd.DataFrame(columns=cols)
    out = cells.reset_index().rename(columns={"__metric": "value"})
    if "__baseline" in out:
        out = out.rename(columns={"__baseline": "baseline"})
        b = out["baseline"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["ratio"] = np.where(b > 0, out["value"].to_numpy(float) / np.where(b > 0, b, 1.0), np.nan)
    else:
        out["baseline"], out["ratio"] = np.nan, np.nan
    out["id"] = h.id
    return out[cols]


def _join(reason: str, note: str) -> str:
    return f"{reason}. {note}" if note else reason


def verdict(
    paper: float, ours: float, low: float, high: float, *, ratio: bool, tolerance: float = DEFAULT_TOLERANCE,
    direction: str = "",
) -> tuple[str, str]:
    """The verdict rule of the module docstring, applied to one figure: the paper's number (or
    ``direction`` "higher"/"lower"), ours with its 95% interval [low, high], whether it is a ratio,
    and the relative tolerance. Returns (verdict, reason without n). ``by construction`` is applied
    by :func:`evaluate_headline` on top of this rule (it needs the headline's declaration)."""
    has_ci = math.isfinite(low) and math.isfinite(high)
    ci = f"[{low:.3g}, {high:.3g}]" if has_ci else "(no interval: fewer than 2 cells)"
    if not math.isfinite(ours):
        return "not reproduced", "no finite figure"
    if direction in ("higher", "lower"):  # qualitative claim: the direction is all the paper states
        if not has_ci:
            return "not reproduced", f"ours {ours:.4g} {ci}: no interval, cannot separate from 1"
        up = direction == "higher"
        if (low > 1) if up else (high < 1):
            return "reproduced", f"{direction}, as the paper states (no number given): ours {ours:.4g}x {ci}"
        if (high < 1) if up else (low > 1):
            return "not reproduced", f"opposite direction: ours {ours:.4g}x {ci}, paper: {direction}"
        return "not reproduced", f"no separation: ours {ours:.4g}x, CI {ci} includes 1"
    inside = has_ci and low <= paper <= high
    close = abs(ours - paper) <= tolerance * abs(paper)
    if ratio and paper != 1:  # effect scale: compare log-ratios, not ratios
        close = ours > 0 and abs(math.log(ours) / math.log(paper) - 1) <= tolerance
    how = "inside our 95% CI" if inside else (f"effect within {tolerance:.0%}" if ratio and paper != 1
                                              else f"within {tolerance:.0%}")  # fmt: skip
    if not ratio or paper == 1:  # a level, or an equality claim ("comparable"): no direction to establish
        x = "x" if ratio else ""
        if inside or close:
            return "reproduced", f"paper's {paper:.4g}{x} {how} (ours {ours:.4g}{x} {ci})"
        return "not reproduced", f"ours {ours:.4g}{x} {ci} vs paper {paper:.4g}{x}, outside CI and tolerance"
    if not has_ci:
        return "not reproduced", f"ours {ours:.4g} {ci}: no interval, cannot separate from 1"
    up = paper > 1
    separated = low > 1 if up else high < 1
    opposite = high < 1 if up else low > 1
    if ours <= 0:
        return "not reproduced", f"ours {ours:.4g}x is not a positive ratio"
    share = math.log(ours) / math.log(paper)  # our effect as a share of the paper's, log scale
    if separated and (inside or close):
        return "reproduced", f"paper's {paper:.4g}x {how} (ours {ours:.4g}x {ci})"
    if separated and share > MAX_EFFECT:
        return "stronger than the paper", (f"same direction, effect {share:.0%} of the paper's on a log scale "
                                           f"(> {MAX_EFFECT:.0%}): ours {ours:.4g}x {ci} vs paper {paper:.4g}x")
    if separated and share >= MIN_EFFECT:
        size = "larger" if share > 1 else "smaller"
        return "direction only", (f"same direction, effect {size}: ours {ours:.4g}x {ci} vs paper {paper:.4g}x "
                                  f"({share:.0%} of the paper's effect on a log scale)")  # fmt: skip
    if separated:
        return "not reproduced", (f"effect too small: ours {ours:.4g}x {ci} is {share:.0%} of the paper's "
                                  f"{paper:.4g}x on a log scale (direction only needs >= {MIN_EFFECT:.0%})")
    if opposite:
        return "not reproduced", f"opposite direction: ours {ours:.4g}x {ci} vs paper {paper:.4g}x"
    return "not reproduced", f"no separation: ours {ours:.4g}x, CI {ci} includes 1"


def evaluate_headlines(frame: pd.DataFrame, headlines: Sequence[Headline], *, seed: int = 0) -> pd.DataFrame:
    """One row per headline (see :func:`evaluate_headline`), in the study's order; ``fragile`` is
    empty here (:func:`mark_fragile` fills it from the sensitivity rows)."""
    return pd.DataFrame([evaluate_headline(frame, h, seed=seed) for h in headlines], columns=TABLE_COLUMNS)


def conclusive(n: Any, low: Any, high: Any, *, ratio: bool) -> bool:
    """Whether a re-reading of a headline is evidence of a verdict at all: it has cells, and a ratio's
    interval excludes 1 (a ratio whose interval contains 1 on a few seeds says "cannot tell", which
    overturns nothing)."""
    try:
        n, low, high = float(n), float(low), float(high)
    except (TypeError, ValueError):
        return False
    if not n > 0:
        return False
    return not (ratio and math.isfinite(low) and math.isfinite(high) and low <= 1.0 <= high)


def mark_fragile(table: pd.DataFrame, sensitivity: pd.DataFrame | None = None) -> pd.DataFrame:
    """``table`` with its ``fragile`` column filled: for every counted or alternative row, the
    settings under which the same claim gets another verdict, from the table's own sensitivity rows
    (``role == "sensitivity"``, ``of`` = the row's id: another realisation or engine) and from
    ``sensitivity`` (:func:`marketsim.analysis.engine.studies.headline_sensitivity`: the headline at the other
    values of its panel and on its sensitivity panels; columns ``id, panel, x_name, x, n, verdict``,
    ``conclusive`` and ``sensitivity``: only rows of a sensitivity panel count, not the other points of
    the headline's own panel). Only a :func:`conclusive` re-reading can flip a verdict (a sensitivity
    panel's few seeds that cannot separate a ratio from 1, or a panel without the variant's cells,
    are listed in the sensitivity table but flip nothing). A row with a non-empty ``fragile`` is a
    verdict that one sensitivity change flips."""
    out = table.copy()
    flips: dict[str, list[str]] = {}
    main = out[out["role"] != "sensitivity"]
    verdict_of = dict(zip(main["id"], main["verdict"], strict=True))
    for _, r in out[out["role"] == "sensitivity"].iterrows():
        v0 = verdict_of.get(r["of"])
        ok = conclusive(r["n"], r["low"], r["high"], ratio=r["statistic"] == "ratio of means")
        if v0 is not None and ok and r["verdict"] != v0:
            what = r["note"] or f"realisation {r['realisation']}, panel {r['panel']}"
            flips.setdefault(r["of"], []).append(f"{r['id']} ({what}; n={int(r['n'])}): {r['verdict']}")
    if sensitivity is not None and not sensitivity.empty:
        for _, r in sensitivity.iterrows():
            v0 = verdict_of.get(r["id"])
            ok = bool(r["conclusive"]) if "conclusive" in sensitivity.columns else float(r["n"]) > 0
            ok = ok and (bool(r["sensitivity"]) if "sensitivity" in sensitivity.columns else True)
            if v0 is not None and ok and r["verdict"] != v0:
                x = f"{r['x']:.4g}" if isinstance(r["x"], float) else str(r["x"])
                flips.setdefault(r["id"], []).append(f"panel {r['panel']} {r['x_name']} = {x} (n={int(r['n'])}): "
                                                     f"{r['verdict']}")  # fmt: skip
    out["fragile"] = ["; ".join(flips.get(i, [])) if role != "sensitivity" else ""
                      for i, role in zip(out["id"], out["role"], strict=True)]  # fmt: skip
    return out


def headline_counts(table: pd.DataFrame) -> dict[str, Any]:
    """The counts a report and the docs quote, from an evaluated (and :func:`mark_fragile`-d) table:
    ``headlines`` (counted rows), ``verdicts`` (count per verdict of :data:`HEADLINE_VERDICTS`),
    ``fragile`` (ids of fragile counted rows, per verdict), ``sensitivity_rows``, and
    ``alternatives``: per alternative row the primary's id and both verdicts, and ``with_alternatives``:
    the verdict counts with every alternative reading in place of its primary (``changed``: how many
    verdicts that changes)."""
    counted = table[table["role"] == "counted"]
    verdicts = {v: int((counted["verdict"] == v).sum()) for v in HEADLINE_VERDICTS}
    frag = counted[counted["fragile"].fillna("") != ""] if "fragile" in counted else counted.iloc[0:0]
    alts = table[table["role"] == "alternative"]
    by_id = dict(zip(counted["id"], counted["verdict"], strict=True))
    swapped = dict(by_id)
    rows = []
    for _, r in alts.iterrows():
        rows.append({"id": r["id"], "of": r["of"], "verdict": r["verdict"], "primary_verdict": by_id.get(r["of"], ""),
                     "conflict": r["conflict"]})  # fmt: skip
        if r["of"] in swapped:
            swapped[r["of"]] = r["verdict"]
    changed = sum(1 for k in by_id if swapped[k] != by_id[k])
    return {
        "headlines": int(len(counted)),
        "verdicts": verdicts,
        "fragile": {v: sorted(frag.loc[frag["verdict"] == v, "id"]) for v in HEADLINE_VERDICTS
                    if (frag["verdict"] == v).any()},  # fmt: skip
        "sensitivity_rows": int((table["role"] == "sensitivity").sum()),
        "alternatives": rows,
        "with_alternatives": {"verdicts": {v: sum(1 for x in swapped.values() if x == v) for v in HEADLINE_VERDICTS},
                              "changed": changed},  # fmt: skip
    }


def _f(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else "—"


def headline_markdown(table: pd.DataFrame) -> str:
    """A verdict table: id, paper's headline, ours (95% CI), per-cell spread, paper, verdict, reason."""
    lines = [
        "| id | paper's headline | ours (95% CI) | per cell: min / median / max (on the paper's side) | paper "
        "| verdict | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        ratio = "x" if r["baseline"] else ""
        what = f"{r['metric']} of {r['mechanism']}" + (f" / {r['baseline']}" if r["baseline"] else "")
        stat = {"ratio of means": "ratio of means", "share": "share", "mean": "mean"}.get(r.get("statistic", ""), "")
        ours = f"{_f(r['ours'])}{ratio} [{_f(r['low'])}, {_f(r['high'])}]" + (f" ({stat})" if stat else "")
        side = r.get("cells_paper_side")
        spread = f"{_f(r.get('cell_min'))} / {_f(r.get('cell_median'))} / {_f(r.get('cell_max'))}"
        if isinstance(side, float) and math.isfinite(side):
            spread += f" ({int(side)}/{int(r['n'])})"
        v = f"**{r['verdict']}**"
        if r.get("fragile"):
            v += ", fragile"
        reason = str(r["reason"])
        if r.get("fragile"):
            reason += f". Fragile: {r['fragile']}"
        if r.get("conflict"):
            reason += f". The paper contradicts itself: {r['conflict']}"
        role = r.get("role", "counted")
        tag = "" if role == "counted" else f" ({role} of `{r['of']}`)" if r.get("of") else f" ({role})"
        cells = [
            f"`{r.get('id', '')}`{tag}",
            f"{r['headline']} (panel {r['panel']}, {what})",
            ours,
            spread,
            str(r["direction"]) if r.get("direction") else f"{_f(float(r['paper']))}{ratio}",
            v,
            reason,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
