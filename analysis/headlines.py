"""A study's headline claims against our measurements: reproduced, direction only, or not reproduced.

A study TOML lists the paper's headline numbers as ``[[headline]]`` tables (see
:func:`parse_headline`). :func:`evaluate_headlines` pools the study's cells (panel × value ×
replication, one variant, default truthful) and computes, per headline:

* with a ``baseline``: the paired ratio of means ``mean(metric | mechanism) / mean(metric | baseline)``
  over the cells where both ran (same workload), with a 95% percentile interval from a seeded
  paired bootstrap over cells (:data:`BOOTSTRAP` resamples); undefined when the baseline's mean
  is <= 0 (a ratio of a loss is not a speed-up);
* with a ``baseline_metric`` instead: the paired ratio ``mean(metric) / mean(baseline_metric)`` of two
  columns of the SAME rows (mechanism, variant, cell), e.g. a liar's true throughput when lying over
  the same tenant's throughput in the truthful twin run of the cell (fair-share studies);
* without a baseline: the mean of ``metric`` with a 95% Student-t interval.

Verdicts (:data:`HEADLINE_VERDICTS`), derived from the numbers, never written by hand:

* ``reproduced``: the paper's number lies inside our interval or is close to our figure, and, with
  a baseline, our interval excludes 1 on the paper's side (the mechanisms separate in the direction
  the paper reports; a paper ratio of exactly 1, "no difference", needs no separation). "Close" is
  relative to the EFFECT for a ratio: ``|log(ours) / log(paper) − 1| <= tolerance`` (a paper's
  1.35x, +35%, is not reproduced by our 1.11x, although 1.11 is within 25% of 1.35); for a level
  (no baseline) and for a paper ratio of exactly 1 it is ``|ours − paper| <= tolerance · |paper|``;
* ``direction only``: with a baseline, our interval lies entirely on the paper's side of 1, but the
  magnitude is off;
* ``not reproduced``: everything else: the opposite direction, an interval that includes 1 (no
  separation), an undefined ratio, or no cells. The reason column says which.

Where the paper gives no number, ``paper`` may be ``"higher"`` / ``"lower"`` (with a baseline:
reproduced iff our ratio's interval lies entirely above / below 1) or ``"at most 0"`` (a statement
about every cell, e.g. a liar's gain under a truthful mechanism: reproduced iff no cell is positive).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.stats import t_interval
from market.errors import InputError, check_int

__all__ = [
    "BOOTSTRAP",
    "DEFAULT_TOLERANCE",
    "HEADLINE_VERDICTS",
    "Headline",
    "parse_headline",
    "evaluate_headline",
    "evaluate_headlines",
    "headline_markdown",
]

HEADLINE_VERDICTS = ("reproduced", "direction only", "not reproduced")
DEFAULT_TOLERANCE = 0.25
BOOTSTRAP = 2000
_KEYS = {
    "text",
    "panel",
    "metric",
    "mechanism",
    "baseline",
    "baseline_metric",
    "paper",
    "x",
    "tolerance",
    "note",
    "variant",
}


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
    direction: str = ""  # "higher" / "lower": a qualitative claim (paper gave no number)
    baseline_metric: str = ""  # ratio of two columns of the same rows instead of two mechanisms

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
    elif t.get("paper") == "at most 0":  # e.g. truthfulness: a liar's gain is never positive
        if ratio:
            raise InputError(f"{where}.paper", t.get("paper"), "'at most 0' is a level claim: drop the baseline")
        direction, paper = "at most 0", 0.0
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


def _rng(seed: int, h: Headline) -> np.random.Generator:
    key = f"{h.panel}|{h.metric}|{h.mechanism}|{h.baseline}|{h.variant}|{h.x}"
    if h.baseline_metric:
        key += f"|{h.baseline_metric}"
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(key.encode()),)))


def _ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of mean(a)/mean(b) from a paired bootstrap (NaN if too many resamples
    have a non-positive baseline mean)."""
    n = a.size
    if n < 2:
        return float("nan"), float("nan")
    idx = rng.integers(0, n, size=(BOOTSTRAP, n))
    num, den = a[idx].mean(axis=1), b[idx].mean(axis=1)
    ok = den > 0
    if ok.mean() < 0.95:
        return float("nan"), float("nan")
    r = num[ok] / den[ok]
    return float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))


def evaluate_headline(frame: pd.DataFrame, h: Headline, *, seed: int = 0) -> dict[str, Any]:
    """Our figure for ``h`` on a study frame: ``ours``, ``low``, ``high``, ``n`` (cells), ``verdict``,
    ``reason`` (plus the headline's own fields)."""
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
        if b.mean() <= 0:
            what = f"{h.baseline}'s mean {h.metric}"
            if h.baseline_metric:
                what = f"{h.mechanism}'s mean {h.baseline_metric}"
            reason = f"ratio undefined: {what} is {b.mean():.4g} <= 0 ({h.mechanism}: {a.mean():.4g})"
            return {**row, "ours": float("nan"), "low": float("nan"), "high": float("nan"),
                    "verdict": "not reproduced", "reason": _join(reason, h.note)}  # fmt: skip
        ours = float(a.mean() / b.mean())
        low, high = _ratio_ci(a, b, _rng(seed, h))
    else:
        ours, low, high = t_interval(a)
    if h.direction == "at most 0":  # a statement about every cell, not the mean: check the largest
        worst = float(a.max())
        tol = 1e-9 * max(1.0, float(np.abs(a).max()))
        if worst <= tol:
            verdict, reason = "reproduced", f"never positive: largest of {n} cells {worst:.4g} (mean {ours:.4g})"
        else:
            k = int((a > tol).sum())
            verdict, reason = "not reproduced", f"positive in {k} of {n} cells (largest {worst:.4g}, mean {ours:.4g})"
        return {**row, "ours": ours, "low": low, "high": high, "verdict": verdict, "reason": _join(reason, h.note)}
    verdict, reason = _verdict(h, ours, low, high, n)
    return {**row, "ours": ours, "low": low, "high": high, "verdict": verdict, "reason": _join(reason, h.note)}


def _join(reason: str, note: str) -> str:
    return f"{reason}. {note}" if note else reason


def _verdict(h: Headline, ours: float, low: float, high: float, n: int) -> tuple[str, str]:
    has_ci = math.isfinite(low) and math.isfinite(high)
    ci = f"[{low:.3g}, {high:.3g}]" if has_ci else "(no interval: fewer than 2 cells or unstable bootstrap)"
    if h.direction:  # qualitative claim: the direction is all the paper states
        if not has_ci:
            return "not reproduced", f"ours {ours:.4g} {ci}: no interval, cannot separate from 1 (n={n})"
        up = h.direction == "higher"
        if (low > 1) if up else (high < 1):
            return "reproduced", f"{h.direction}, as the paper states (no number given): ours {ours:.4g}x {ci}, n={n}"
        if (high < 1) if up else (low > 1):
            return "not reproduced", f"opposite direction: ours {ours:.4g}x {ci}, paper: {h.direction} (n={n})"
        return "not reproduced", f"no separation: ours {ours:.4g}x, CI {ci} includes 1 (n={n})"
    close = abs(ours - h.paper) <= h.tolerance * abs(h.paper)
    if h.is_ratio and h.paper != 1:  # effect scale: compare log-ratios, not ratios
        close = ours > 0 and abs(math.log(ours) / math.log(h.paper) - 1) <= h.tolerance
    inside = has_ci and low <= h.paper <= high
    if not h.is_ratio:
        if inside or close:
            how = "inside our 95% CI" if inside else f"within {h.tolerance:.0%}"
            return "reproduced", f"paper's {h.paper:.4g} {how} (ours {ours:.4g} {ci}, n={n})"
        return "not reproduced", f"ours {ours:.4g} {ci} vs paper {h.paper:.4g} (n={n})"
    if h.paper == 1:  # an equality claim ("the same welfare"): no direction to establish
        if inside or close:
            how = "inside our 95% CI" if inside else f"within {h.tolerance:.0%}"
            return "reproduced", f"paper's 1x (no difference) {how} (ours {ours:.4g}x {ci}, n={n})"
        return "not reproduced", f"the mechanisms differ: ours {ours:.4g}x {ci} vs paper 1x (n={n})"
    up = h.paper > 1
    if not has_ci:
        return "not reproduced", f"ours {ours:.4g} {ci}: no interval, cannot separate from 1 (n={n})"
    separated = low > 1 if up else high < 1
    opposite = high < 1 if up else low > 1
    if separated and (inside or close):
        how = "inside our 95% CI" if inside else f"effect within {h.tolerance:.0%}"
        return "reproduced", f"paper's {h.paper:.4g}x {how} (ours {ours:.4g}x {ci}, n={n})"
    if separated:
        size = "larger" if abs(math.log(ours)) > abs(math.log(h.paper)) else "smaller"
        return "direction only", f"same direction, effect {size}: ours {ours:.4g}x {ci} vs paper {h.paper:.4g}x (n={n})"
    if opposite:
        return "not reproduced", f"opposite direction: ours {ours:.4g}x {ci} vs paper {h.paper:.4g}x (n={n})"
    return "not reproduced", f"no separation: ours {ours:.4g}x, CI {ci} includes 1 (n={n})"


def evaluate_headlines(frame: pd.DataFrame, headlines: Sequence[Headline], *, seed: int = 0) -> pd.DataFrame:
    """One row per headline (see :func:`evaluate_headline`), in the study's order."""
    cols = ["headline", "panel", "metric", "mechanism", "baseline", "variant", "paper", "direction", "ours", "low",
            "high", "n", "tolerance", "verdict", "reason", "note"]  # fmt: skip
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
