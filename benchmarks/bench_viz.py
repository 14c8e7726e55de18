"""Benchmark of the live page (``marketsim viz``) in headless Chromium: seconds per Step.

For each page (fair-share ``default`` and auction ``control_auction``) the benchmark starts the page
server on loopback (``marketsim viz NAME --no-browser``), opens it in headless Chromium (Debian's
``/usr/bin/chromium``, or ``$CHROMIUM``) over the Chrome DevTools Protocol and waits until the
default model's four figures are drawn. Then:

1. **Per-round time.** After a Reset, ``--rounds`` times: click Step, and wait until the page shows
   the new round (every card's caption reads ``round r/R`` / ``slot s/T`` and every card's chart is
   the one drawn for that round: each SVG chart's ``data-round`` / ``data-slot``; on a PNG page (an
   old ``--baseline``) the first card's image, whose title carries the round, must have changed).
   The clock runs in the browser (``performance.now()``, polled every 5 ms), from the click to the
   first check where the condition holds, so it covers the server's step and re-render,
   the websocket round trips and the browser's decoding and layout.
2. **Queued clicks.** Reset, then 4 Step clicks 50 ms apart (faster than a step): the time until the
   page shows round 4, and the round it settles at (must be 4: clicks are queued, not dropped).

``--baseline REV`` also serves the page of git revision ``REV`` (``git archive`` into a temporary
directory, same interpreter) in the same run, page for page, so the speed-up is a ratio measured
under the same load. The machine (2 cores) is shared with other jobs: the load average is recorded
at the start and end of each measurement.

    .venv/bin/python benchmarks/bench_viz.py [--rounds 6] [--baseline 6fb905f] [--quick]

Writes benchmarks/results/viz.json and viz.md (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import test_viz as tv  # noqa: E402  (the CDP client and page server of the browser tests)

GOAL_S = 0.5  # issue 20: at most 0.5 s per round on the default scenario
PAGES = {
    "fair-share": {
        "target": "default",
        "unit": "round",
        "max": 24,
        "keys": ["allocation", "throughput", "gain", "topology"],
    },
    "auction": {
        "target": "control_auction",
        "unit": "slot",
        "max": 8,
        "keys": ["timeline", "prices", "auction_gain", "resources"],
    },
}

# JS: click Step (or Reset) and resolve with the milliseconds until every card shows `unit r/` and a new,
# decoded image; `clicks` Step clicks `gap` ms apart (the queued-click measurement).
JS_FIGURES = r"""
window.__bench = {
  cards: (keys) => keys.map(k => document.querySelector('.marketsim-' + k)),
  figure: (c) => {  // a card's figure: a decoded PNG <img> (the matplotlib page) or an inline <svg>
    const img = c.querySelector('img');
    if (img) return img.complete && img.naturalWidth > 0 ? img.src : null;
    const svg = c.querySelector('svg');
    return svg ? svg.outerHTML : null;
  },
  drawn: (keys) => window.__bench.cards(keys).every(c => c && window.__bench.figure(c) !== null),
  // the round/slot an inline SVG chart was drawn for (its data-round / data-slot); null for a PNG
  figureRound: (c, unit) => {
    const svg = c.querySelector('svg.marketsim-chart');
    return svg ? svg.getAttribute('data-' + unit) : null;
  },
};
true
"""
JS_TIMED = r"""
(async (keys, unit, target, clicks, gap, reset, timeout) => {
  const mk = window.__mk;
  const cards = () => window.__bench.cards(keys);
  const figure = window.__bench.figure;
  const srcs = () => cards().map(c => c ? figure(c) : null);
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const ready = (before, r) => cards().every((c, i) => {
    if (!c) return false;
    const cap = c.querySelector('.marketsim-caption');
    const f = figure(c);
    if (!(cap && cap.textContent.includes(unit + ' ' + r + '/') && f !== null)) return false;
    // every card's chart must be the one drawn for round r (an SVG chart carries it as data-round /
    // data-slot), so a stale chart does not count; a PNG figure (the old matplotlib page) cannot say
    // which round it shows: there the first card's image (its title carries the round) must have changed
    const fr = window.__bench.figureRound(c, unit);
    if (fr !== null) return fr === String(r);
    return before === null || i > 0 || f !== before[i];
  });
  if (reset && !mk.click('Reset')) return {error: 'no Reset button'};
  const before = srcs();
  const t0 = performance.now();
  let clicked = 0;
  for (let c = 0; c < clicks; c++) {
    if (c > 0 || reset) await sleep(gap);
    if (mk.click('Step')) clicked++;
  }
  let ms = null;
  while (true) {
    if (ready(reset ? null : before, target)) { ms = performance.now() - t0; break; }
    if (performance.now() - t0 > timeout) {
      if (!reset) return {error: 'timed out', text: mk.text().slice(0, 600)};
      break;  // queued clicks: report where the page settled
    }
    await sleep(5);
  }
  if (reset) await sleep(3000);  // give any extra (or late) step time to show up
  const caps = keys.map(k => mk.caption(k));
  return {ms, clicked, captions: caps};
})
"""


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _call(cdp: tv.CDP, keys: list[str], unit: str, target: int, clicks: int = 1, gap: float = 50.0,
          reset: bool = False, timeout_s: float = 120.0) -> dict:  # fmt: skip
    expr = f"{JS_TIMED}({json.dumps(keys)}, {json.dumps(unit)}, {target}, {clicks}, {gap}, {json.dumps(reset)}, "
    expr += f"{timeout_s * 1000})"
    r = cdp.call("Runtime.evaluate", timeout=timeout_s + 30, expression=expr, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in r:
        raise RuntimeError(f"JS error: {r['exceptionDetails']}")
    out = r["result"]["value"]
    if "error" in out:
        raise RuntimeError(f"page: {out}")
    return out


# In-process CPU profile of one Step of a page model, run in a subprocess on a checkout (the code under
# test or the baseline): the model step (lying model + truthful twin) and each card's figure, as the
# page builds it (a matplotlib figure is also rendered to PNG at 90 dpi, as solara.FigureMatplotlib does).
PROFILE_SCRIPT = r"""
import io, json, sys, time
from marketsim.analysis.frontends import viz
pages = {"fair-share": (viz.PageModel, {}, ["allocation", "throughput", "gain", "topology"]),
         "auction": (viz.AuctionPageModel, {}, ["timeline", "prices", "auction_gain", "resources"])}
steps = int(sys.argv[1])
out = {}
for page, (make, kw, keys) in pages.items():
    m = make(**kw)
    rows = []
    for _ in range(steps):
        t = time.process_time(); m.step(); row = {"model step": time.process_time() - t}
        for k in keys:
            t = time.process_time()
            fig = getattr(viz, k + "_figure")(m)
            if not isinstance(fig, str):
                buf = io.BytesIO(); fig.savefig(buf, format="png", dpi=90)
            row[k] = time.process_time() - t
        rows.append(row)
    out[page] = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
print(json.dumps(out))
"""


def profile(root: Path, steps: int = 4) -> dict:
    """Mean CPU seconds per Step of the model and of each card's figure (checkout ``root``)."""
    r = subprocess.run([sys.executable, "-c", PROFILE_SCRIPT, str(steps)], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root)}, timeout=600)  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"profile in {root} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _wait_drawn(cdp: tv.CDP, keys: list[str]) -> None:
    """Wait until the page's four cards exist and show a figure; install the JS helpers."""
    titles = [tv.viz.ALL_TITLES[k] for k in keys]
    cdp.wait_for("document.body && " + " && ".join(f"document.body.innerText.includes({json.dumps(t)})"
                                                    for t in titles), 180, f"the titles {titles}")  # fmt: skip
    cdp.js(tv.JS_HELPERS)
    cdp.js(JS_FIGURES)
    cdp.wait_for(f"window.__bench.drawn({json.dumps(keys)})", 120, "every card's figure")


def _round_of(caption: str, unit: str) -> int:
    after = caption.split(f"{unit} ", 1)[1]
    return int(after.split("/", 1)[0])


def measure_page(page: str, rounds: int, root: Path, workdir: Path) -> dict:
    """Per-round seconds and the queued-click check for one page served from checkout ``root``."""
    spec = PAGES[page]
    keys, unit = spec["keys"], spec["unit"]
    out: dict = {"page": page, "target": spec["target"], "load_start": _load()}
    t_start = time.monotonic()
    with _served(workdir, spec["target"], root) as cdp:
        _wait_drawn(cdp, keys)
        q = _call(cdp, keys, unit, 4, clicks=4, gap=50.0, reset=True, timeout_s=90.0)
        out["queued"] = {
            "clicks": 4,
            "clicked": q["clicked"],
            "seconds_to_round_4": None if q["ms"] is None else q["ms"] / 1000,
            "settled_at": max(_round_of(c, unit) for c in q["captions"]),
        }
        _call(cdp, keys, unit, 0, clicks=0, reset=True)  # back to round 0: the auction has only 8 slots
        out["per_round_s"] = [_call(cdp, keys, unit, r)["ms"] / 1000 for r in range(1, min(rounds, spec["max"]) + 1)]
    out["load_end"] = _load()
    out["wall_s"] = time.monotonic() - t_start
    a = np.asarray(out["per_round_s"])
    out["mean_s"], out["median_s"], out["max_s"] = float(a.mean()), float(np.median(a)), float(a.max())
    return out


@contextlib.contextmanager
def _served(workdir: Path, target: str, root: Path):
    """tests/test_viz.py's served page, with the server run from checkout ``root``."""
    saved = tv.ROOT
    tv.ROOT = root
    old_pp = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(root)
    try:
        import pytest

        try:
            with tv._served_page(workdir, target) as (cdp, _log):
                yield cdp
        except pytest.skip.Exception as exc:
            raise SystemExit(f"bench_viz: cannot run: {exc}") from None
    finally:
        tv.ROOT = saved
        if old_pp is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_pp


def _checkout(rev: str, into: Path) -> Path:
    """``git archive REV`` extracted into ``into`` (the baseline page's code)."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True)
    data = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    (into / ".rev").write_text(sha.stdout.strip())
    return into


def screenshots(outdir: Path, steps: int = 4, width: int = 1400, height: int = 1060) -> list[Path]:
    """PNG screenshots of both pages in headless Chromium: right after the defaults load
    (``viz-<page>.png``) and after ``steps`` Step clicks (``viz-<page>-step<steps>.png``)."""
    import base64

    written = []
    outdir.mkdir(parents=True, exist_ok=True)
    for page, spec in PAGES.items():
        keys, unit = spec["keys"], spec["unit"]
        with tempfile.TemporaryDirectory(prefix="bench_viz_shot_") as tmp, _served(Path(tmp), spec["target"], ROOT) as cdp:  # noqa: E501
            cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                     mobile=False)  # fmt: skip
            _wait_drawn(cdp, keys)
            for name, target in ((f"viz-{page}.png", 0), (f"viz-{page}-step{steps}.png", steps)):
                for r in range(1, target + 1):
                    _call(cdp, keys, unit, r)
                time.sleep(1.0)  # let the slider labels and fonts settle
                shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"])
                (outdir / name).write_bytes(shot)
                written.append(outdir / name)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="Step clicks timed one at a time per page")
    ap.add_argument("--baseline", default=None, help="git revision to measure in the same run (e.g. the pre-fix one)")
    ap.add_argument("--pages", nargs="+", choices=list(PAGES), default=list(PAGES))
    ap.add_argument("--quick", action="store_true", help="2 rounds, no results files")
    ap.add_argument("--screenshots", type=Path, default=None, metavar="DIR",
                    help="only write the pages' PNG screenshots into DIR (e.g. docs/) and exit")  # fmt: skip
    args = ap.parse_args(argv)
    if args.screenshots is not None:
        for path in screenshots(args.screenshots):
            print(f"wrote {path}")
        return 0
    rounds = 2 if args.quick else args.rounds
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "analysis/frontends/viz.py"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()  # fmt: skip
    report: dict = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "python": f"{platform.python_implementation()} {platform.python_version()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "goal_s": GOAL_S,
        "current": head.strip() + ("+dirty" if dirty else ""),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench_viz_") as tmp:
        tmp = Path(tmp)
        versions = [("current", ROOT)]
        if args.baseline:
            versions.append((f"baseline {args.baseline}", _checkout(args.baseline, tmp / "baseline")))
        report["profile"] = {}
        for label, root in versions:
            report["profile"][label] = {"cpu_s": profile(root), "load": _load()}
        for page in args.pages:
            for label, root in versions:
                work = tmp / f"{label.split()[0]}-{page}"
                work.mkdir()
                r = measure_page(page, rounds, root, work)
                r["version"] = label
                report["runs"].append(r)
                print(f"{label:>20} {page:>10}: per round mean {r['mean_s']:.2f} s, median {r['median_s']:.2f} s, "
                      f"max {r['max_s']:.2f} s; 4 quick clicks -> round "
                      f"{r['queued']['settled_at']} in {_secs(r['queued']['seconds_to_round_4'])}; load "
                      f"{r['load_start']} -> {r['load_end']}", flush=True)  # fmt: skip
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "viz.json").write_text(json.dumps(report, indent=1) + "\n")
        (RESULTS / "viz.md").write_text(_markdown(report))
        print(f"wrote {RESULTS / 'viz.md'} and viz.json")
    return 0


def _secs(x: float | None) -> str:
    return "never (timed out)" if x is None else f"{x:.2f} s"


def _markdown(rep: dict) -> str:
    lines = [
        "# Live page (`marketsim viz`) benchmark",
        "",
        f"Run: {rep['when']}, {rep['python']}, {rep['cpus']} CPUs shared with other jobs; code {rep['current']}. "
        "Produced by `benchmarks/bench_viz.py`.",
        "",
        "Per round: after a Reset, click Step in headless Chromium and time (browser clock) until every card "
        "shows the new round/slot and every card's chart is the one drawn for it (the SVG's data-round/data-slot; "
        "on a PNG page only the first card's image is checked for a change); "
        f"{rep['rounds']} clicks one after another per page (the auction has 8 slots). Queued: Reset, then 4 Step "
        "clicks 50 ms apart; seconds until round 4 shows, and the round the page settles at (3 s later).",
        "",
        "| version | page | per-round mean s | median s | max s | 4 quick clicks settle at | s to round 4 | "
        "load avg start | load avg end |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep["runs"]:
        q = r["queued"]
        lines.append(
            f"| {r['version']} | {r['page']} ({r['target']}) | {r['mean_s']:.2f} | {r['median_s']:.2f} | "
            f"{r['max_s']:.2f} | {q['settled_at']} | {_secs(q['seconds_to_round_4'])} | "
            f"{'/'.join(map(str, r['load_start']))} | {'/'.join(map(str, r['load_end']))} |"
        )
    lines += ["", f"Goal (issue 20): at most {rep['goal_s']} s per round on the default scenario.", ""]
    by = {(r["version"], r["page"]): r for r in rep["runs"]}
    for page in PAGES:
        cur = by.get(("current", page))
        base = next((r for (v, p), r in by.items() if p == page and v != "current"), None)
        if cur and base:
            lines.append(f"{page}: {base['mean_s'] / cur['mean_s']:.0f}x faster per round than {base['version']} "
                         f"in this run ({cur['mean_s']:.2f} s vs {base['mean_s']:.2f} s).")  # fmt: skip
    if any(r["queued"]["settled_at"] == 4 for r in rep["runs"] if r["version"] != "current"):
        lines.append("\nThe baseline's 4 quick clicks also settled at round 4 in this harness (element clicks 50 ms "
                     "apart): the dropped clicks reported in issue 20 were not reproduced here. solara handles one "
                     "browser message at a time, so clicks queue; with fast Steps the queue drains in well under a "
                     "second.")  # fmt: skip
    lines.append("")
    if rep.get("profile"):
        lines += [
            "## Where a Step's time goes (in-process CPU seconds per Step, mean of 4 Steps)",
            "",
            "The model step (the lying model and its truthful twin, stepped incrementally in lockstep) and each card's "
            "figure as the page builds it (the baseline's matplotlib figures include their PNG rendering at 90 dpi, "
            "as `solara.FigureMatplotlib` does; the current charts are SVG text). The rest of a Step's wall time is "
            "solara's re-render and the websocket, and the load: with a load average near 9 on 2 CPUs a process "
            "gets roughly a fifth of a core.",
            "",
            "| version | page | model step | " + " | ".join(["card 1", "card 2", "card 3", "card 4"]) + " | total |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for label, prof in rep["profile"].items():
            for page, row in prof["cpu_s"].items():
                cards = [(k, v) for k, v in row.items() if k != "model step"]
                cells = " | ".join(f"{k} {v * 1000:.1f} ms" for k, v in cards)
                lines.append(f"| {label} | {page} | {row['model step'] * 1000:.1f} ms | {cells} | "
                             f"{sum(row.values()) * 1000:.0f} ms |")  # fmt: skip
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
