"""A study's headline claims against our measurements: reproduced, direction only, or not reproduced.

A study TOML lists the paper's headline numbers as ``[[headline]]`` tables (see
:func:`parse_headline`). :func:`evaluate_headline` takes the study's cells (panel × value ×
replication, one variant, default truthful, one realisation) at the values the headline pins and
computes:

* with a ``baseline``: per cell (same workload) the paired ratio ``metric(mechanism) /
  metric(baseline)``; ``ours`` is the mean of these per-seed ratios with a 95% Student-t interval
  over the cells (undefined when a baseline value is <= 0: a ratio of a loss is not a speed-up);
* with a ``baseline_metric`` instead: per cell the ratio of two columns of the SAME row (mechanism,
  variant, cell), e.g. a liar's true throughput when lying over the same tenant's throughput in the
  truthful twin run of the cell (fair-share studies); same t-interval;
* without a baseline: the mean of ``metric`` with a 95% Student-t interval.

Verdicts (:data:`HEADLINE_VERDICTS`), derived from the numbers, never written by hand, the same
rule for every study (:func:`verdict`):

* ``reproduced``: the paper's number lies inside our interval, or within the stated relative
  tolerance of our figure (``tolerance``, default 25%; for a ratio it is relative to the EFFECT,
  ``|log(ours) / log(paper) − 1| <= tolerance``, so +11% does not reproduce +35%; for a level and
  for a paper ratio of exactly 1 it is ``|ours − paper| <= tolerance · |paper|``); and, for a ratio
  the paper reports as different from 1, our interval excludes 1 on the paper's side (an interval
  that also contains "no effect" reproduces nothing);
* ``direction only``: a ratio whose interval lies entirely on the paper's side of 1 AND whose effect
  is at least a quarter of the paper's on a log scale (``|log ours| >= MIN_EFFECT · |log paper|``,
  :data:`MIN_EFFECT` = 0.25: +0.3% against +20% is not "the same direction", it is no effect);
* ``not reproduced``: everything else: the opposite direction, an interval that includes 1 (no
  separation), an effect below a quarter of the paper's, an undefined ratio, or no cells. The
  reason column says which.

Where the paper gives no number, ``paper`` may be ``"higher"`` / ``"lower"`` (with a baseline:
reproduced iff our interval lies entirely above / below 1), ``"at most 0"`` (a statement about
every cell, e.g. a liar's gain under a truthful mechanism: reproduced iff no cell is positive) or
``"at least 1"`` (every cell, e.g. every user's ratio over max-min: reproduced iff no cell is
below 1 − 1e-6).

Studies report ``n`` (cells) per headline; the reproduction studies use n >= 20 seeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.engine.stats import t_interval
from market.errors import InputError, check_int

__all__ = [
    "DEFAULT_TOLERANCE",
    "MIN_EFFECT",
    "HEADLINE_VERDICTS",
    "Headline",
    "parse_headline",
    "evaluate_headline",
    "evaluate_headlines",
    "headline_markdown",
    "verdict",
]

HEADLINE_VERDICTS = ("reproduced", "direction only", "not reproduced")
DEFAULT_TOLERANCE = 0.25
#: "direction only" needs at least this share of the paper's effect on a log scale
MIN_EFFECT = 0.25
_KEYS = {"text", "panel", "metric", "mechanism", "baseline", "baseline_metric", "paper", "x", "tolerance", "note",
         "variant", "realisation"}
#: the claims the paper states without a number
_WORDS = ("higher", "lower", "at most 0", "at least 1")


@dataclass(frozen=True)
class Headline:
    """One headline number of the paper: ``metric`` of ``mechanism`` (over ``baseline`` as a ratio
    when given) on panel ``panel`` (values ``x``, all when empty), as the paper reports it (``paper``)."""

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

    @property
    def is_ratio(self) -> bool:
        """Whether the headline is a ratio (over a baseline mechanism or a baseline metric)."""
        return bool(self.baseline or self.baseline_metric)


def _num(where: str, v: Any, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(where, v, "must be a finite number")
    if positive and v <= 0:
        raise InputError(where, v, "must be > 0")
    return float(v)


def parse_headline(
    t: Mapping[str, Any],
    where: str,
    *,
    panels: Sequence[Any],
    mechanisms: Sequence[str],
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] = ("truthful",),
) -> Headline:
    """Validate one ``[[headline]]`` table (``where`` prefixes error fields, e.g. ``study x: headline[0]``).

    ``panels`` are the study's panels (objects with ``values``), ``mechanisms`` its mechanism names,
    ``metrics`` the metric columns it records (None: not checked), ``variants`` its variant names."""
    if not isinstance(t, Mapping):
        raise InputError(where, t, "must be a table")
    for k in t:
        if k not in _KEYS:
            raise InputError(f"{where}.{k}", t[k], f"is not a known key (allowed: {sorted(_KEYS)})")
    text = t.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}.text", text, "must be a non-empty string (the paper's statement)")
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
    if roles["baseline"] == roles["mechanism"]:
        raise InputError(f"{where}.baseline", roles["baseline"], "must differ from the mechanism")
    bmetric = t.get("baseline_metric", "")
    if bmetric != "":
        if not isinstance(bmetric, str) or (metrics is not None and bmetric not in metrics):
            raise InputError(f"{where}.baseline_metric", bmetric, "must name a metric column of the study")
        if roles["baseline"]:
            raise InputError(f"{where}.baseline_metric", bmetric, "give either baseline or baseline_metric, not both")
        if bmetric == metric:
            raise InputError(f"{where}.baseline_metric", bmetric, "must differ from the metric")
    ratio = bool(roles["baseline"] or bmetric)
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
    xs = t.get("x", [])
    xs = list(xs) if isinstance(xs, list) else [xs]
    values = list(panels[pi].values)
    for v in xs:
        if v not in values:
            raise InputError(f"{where}.x", v, f"must be values of panel {pi} {values}")
    tol = _num(f"{where}.tolerance", t.get("tolerance", DEFAULT_TOLERANCE))
    if tol < 0:
        raise InputError(f"{where}.tolerance", tol, "must be >= 0")
    note = t.get("note", "")
    if not isinstance(note, str):
        raise InputError(f"{where}.note", note, "must be a string")
    variant = t.get("variant", "truthful")
    if variant not in variants:
        raise InputError(f"{where}.variant", variant, f"must be one of {list(variants)}")
    realisation = t.get("realisation", "own")
    if not isinstance(realisation, str) or not realisation:
        raise InputError(f"{where}.realisation", realisation, "must be 'own' or a realisation name")
    return Headline(
        " ".join(text.split()),
        pi,
        metric,
        str(roles["mechanism"]),
        paper,
        str(roles["baseline"]),
        tuple(xs),
        tol,
        " ".join(note.split()),
        str(variant),
        direction,
        str(bmetric),
        realisation,
    )


def _cells(frame: pd.DataFrame, h: Headline) -> pd.DataFrame:
    """Per-cell values of ``h.metric``: index (x, replication), one column per mechanism (with a
    ``baseline_metric``: the columns ``metric`` and ``baseline_metric`` of the mechanism's rows)."""
    need = {"panel", "variant", "mechanism", "x", "replication", h.metric}
    if h.baseline_metric:
        need.add(h.baseline_metric)
    if frame.empty or not need <= set(frame.columns):
        return pd.DataFrame()
    sub = frame[(frame["panel"] == h.panel) & (frame["variant"] == h.variant)]
    if "realisation_mode" in sub.columns:  # fair-share: each policy's own realisation, or one named realisation
        if h.realisation == "own":
            sub = sub[sub["realisation_mode"] == "own"]
        else:
            sub = sub[sub["realisation"] == h.realisation]
    if h.x:
        sub = sub[sub["x"].isin([float(v) if isinstance(v, (int, float)) else v for v in h.x])]
    if h.baseline_metric:
        sub = sub[sub["mechanism"] == h.mechanism]
        if sub.empty:
            return pd.DataFrame()
        both = sub.set_index(["x", "replication"])[[h.metric, h.baseline_metric]]
        return both.rename(columns={h.metric: "__metric", h.baseline_metric: "__baseline"}).dropna()
    mechs = [h.mechanism, *([h.baseline] if h.baseline else [])]
    sub = sub[sub["mechanism"].isin(mechs)]
    if sub.empty:
        return pd.DataFrame()
    wide = sub.pivot_table(index=["x", "replication"], columns="mechanism", values=h.metric, aggfunc="first")
    if not set(mechs) <= set(wide.columns):
        return pd.DataFrame()
    return wide[mechs].dropna()


def _paired_ratios(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-cell ratios ``a / b`` (the caller checks ``b > 0``)."""
    return np.asarray(a, dtype=float) / np.asarray(b, dtype=float)


def evaluate_headline(frame: pd.DataFrame, h: Headline, *, seed: int = 0) -> dict[str, Any]:
    """Our figure for ``h`` on a study frame: ``ours``, ``low``, ``high``, ``n`` (cells), ``verdict``,
    ``reason`` (plus the headline's own fields). ``seed`` is accepted for API stability (t-intervals
    need no resampling)."""
    row: dict[str, Any] = {
        "headline": h.text,
        "panel": h.panel,
        "metric": h.metric,
        "mechanism": h.mechanism,
        "baseline": h.baseline or (f"[{h.baseline_metric}]" if h.baseline_metric else ""),
        "variant": h.variant,
        "paper": h.paper,
        "direction": h.direction,
        "tolerance": h.tolerance,
        "note": h.note,
        "realisation": h.realisation,
    }
    if h.metric not in frame.columns:
        missing = f"metric {h.metric!r} is not in the results"
        return {**row, "n": 0, "ours": float("nan"), "low": float("nan"), "high": float("nan"),
                "verdict": "not reproduced", "reason": _join(missing, h.note)}  # fmt: skip
    cells = _cells(frame, h)
    n = int(len(cells))
    row["n"] = n
    if n == 0:
        return {**row, "ours": float("nan"), "low": float("nan"), "high": float("nan"),
                "verdict": "not reproduced", "reason": _join("no cells measured", h.note)}  # fmt: skip
    if h.baseline_metric:
        a, b = cells["__metric"].to_numpy(dtype=float), cells["__baseline"].to_numpy(dtype=float)
    else:
        a = cells[h.mechanism].to_numpy(dtype=float)
        b = cells[h.baseline].to_numpy(dtype=float) if h.baseline else a
    if h.is_ratio:
        if (b <= 0).any():
            what = f"{h.baseline}'s {h.metric}"
            if h.baseline_metric:
                what = f"{h.mechanism}'s {h.baseline_metric}"
            reason = (f"ratio undefined: {what} is <= 0 in {int((b <= 0).sum())} of {n} cells "
                      f"(mean {b.mean():.4g}; {h.mechanism}: {a.mean():.4g})")
            return {**row, "ours": float("nan"), "low": float("nan"), "high": float("nan"),
                    "verdict": "not reproduced", "reason": _join(reason, h.note)}  # fmt: skip
        ours, low, high = t_interval(_paired_ratios(a, b))
    else:
        ours, low, high = t_interval(a)
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
            verdict, reason = "reproduced", f"{ok_text} of {n} cells {worst:.4g} (mean {ours:.4g})"
        else:
            k = int(bad.sum())
            verdict, reason = "not reproduced", f"{bad_text} in {k} of {n} cells (extreme {worst:.4g}, mean {ours:.4g})"
        return {**row, "ours": ours, "low": low, "high": high, "verdict": verdict, "reason": _join(reason, h.note)}
    verdict, reason = _verdict(h, ours, low, high, n)
    return {**row, "ours": ours, "low": low, "high": high, "verdict": verdict, "reason": _join(reason, h.note)}


def _join(reason: str, note: str) -> str:
    return f"{reason}. {note}" if note else reason


def verdict(
    paper: float, ours: float, low: float, high: float, *, ratio: bool, tolerance: float = DEFAULT_TOLERANCE,
    direction: str = "",
) -> tuple[str, str]:
    """The verdict rule of the module docstring, applied to one figure: the paper's number (or
    ``direction`` "higher"/"lower"), ours with its 95% interval [low, high], whether it is a ratio,
    and the relative tolerance. Returns (verdict, reason without n)."""
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


def _verdict(h: Headline, ours: float, low: float, high: float, n: int) -> tuple[str, str]:
    v, reason = verdict(h.paper, ours, low, high, ratio=h.is_ratio, tolerance=h.tolerance, direction=h.direction)
    return v, f"{reason} (n={n})"


def evaluate_headlines(frame: pd.DataFrame, headlines: Sequence[Headline], *, seed: int = 0) -> pd.DataFrame:
    """One row per headline (see :func:`evaluate_headline`), in the study's order."""
    cols = ["headline", "panel", "metric", "mechanism", "baseline", "variant", "realisation", "paper", "direction",
            "ours", "low", "high", "n", "tolerance", "verdict", "reason", "note"]  # fmt: skip
    return pd.DataFrame([evaluate_headline(frame, h, seed=seed) for h in headlines], columns=cols)


def _f(v: float) -> str:
    return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else "—"


def headline_markdown(table: pd.DataFrame) -> str:
    """The report's closing table: paper's headline, ours (95% CI), paper, verdict, reason."""
    lines = [
        "| paper's headline | ours (95% CI) | paper | verdict | reason |",
        "|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        ratio = "x" if r["baseline"] else ""
        what = f"{r['metric']} of {r['mechanism']}" + (f" / {r['baseline']}" if r["baseline"] else "")
        ours = f"{_f(r['ours'])}{ratio} [{_f(r['low'])}, {_f(r['high'])}]"
        cells = [
            f"{r['headline']} (panel {r['panel']}, {what})",
            ours,
            str(r["direction"]) if r.get("direction") else f"{_f(float(r['paper']))}{ratio}",
            f"**{r['verdict']}**",
            str(r["reason"]),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
