"""``marketsim viz`` (analysis/frontends/viz.py): the page model without a browser, then the served page
driven in real headless Chromium through the Chrome DevTools Protocol (CDP).

Needs the optional ``viz`` extra (``pip install 'marketsim-cluster[viz]'``); the browser test also needs
``/usr/bin/chromium`` (or ``$CHROMIUM``). Both skip with a reason when missing, except that under CI
(``CI=true``, where ``.ci/setup`` installs Chromium) a missing Chromium fails the browser test.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from marketsim.market.errors import InputError

pytest.importorskip("solara", reason="the viz extra is not installed (pip install 'marketsim-cluster[viz]')")

from marketsim.analysis.frontends import viz  # noqa: E402  (after the importorskip guard)

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def _svg(text: str) -> ET.Element:
    """Parse a chart: it must be one well-formed ``<svg>`` element."""
    assert isinstance(text, str) and text.startswith("<svg"), text[:80]
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    return root


def _title(svg: ET.Element) -> str:
    return next(t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "chart-title")


def _xticks(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "xtick"]


def _points(svg: ET.Element, cls: str) -> list[tuple[float, float]]:
    line = next(p for p in svg.iter(f"{SVG}polyline") if p.get("class") == cls)
    return [tuple(map(float, xy.split(","))) for xy in line.get("data-points").split()]


# ---------------------------------------------------------------------------------------------------
# the page model, no browser


def test_model_steps_and_figures():
    m = viz.MarketVizModel(scenario_name="oef_lying", mechanism="oef-noncoop", liar=1, lie_factor=1.5, seed=3)
    for _ in range(3):
        m.step()
    assert m.steps == 3 and m.twin.steps == 3 and len(m.history) == 3
    assert m.liar_id == m.config.tenants[1].tenant_id
    X = m.allocation_matrix()
    assert X.shape == (6, 3) and X.sum() > 0
    true, reported = m.throughputs()
    liar = m.tenant_ids().index(m.liar_id)
    assert reported[liar] > true[liar] > 0  # inflated reports on the fast types
    others = [i for i in range(len(true)) if i != liar]
    np.testing.assert_allclose(true[others], reported[others])  # everyone else is truthful
    figures = {"allocation": viz.allocation_figure, "throughput": viz.throughput_figure, "gain": viz.gain_figure,
               "topology": viz.topology_figure}  # fmt: skip
    for key, make in figures.items():
        svg = _svg(make(m))
        assert svg.get("data-chart") == key
        assert _title(svg).startswith(viz.TITLES[key])
    # the heat map draws one cell per tenant x GPU type, labelled with the allocation
    cells = [r for r in _svg(viz.allocation_figure(m)).iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(cells) == 6 * 3
    tips = [r.find(f"{SVG}title").text for r in cells]
    assert any(f"{X[0, j]:.3f} GPUs" in tips[j] for j in range(3))


def test_truthful_factor_has_zero_paired_gain():
    m = viz.MarketVizModel(scenario_name="default", mechanism="oef-noncoop", liar=2, lie_factor=1.0, seed=1)
    for _ in range(4):
        m.step()
    assert [h["gain"] for h in m.history] == [0.0] * 4
    assert [h["gain_act"] for h in m.history] == [0.0] * 4
    assert all(h["est"] > 0 for h in m.history)  # the liar does get GPUs: the zero is not vacuous


def test_inflating_liar_gains_under_max_throughput():
    m = viz.MarketVizModel(scenario_name="hedge_tenant", mechanism="max-throughput", liar=0, lie_factor=2.0, seed=0)
    for _ in range(3):
        m.step()
    gains = [h["gain"] for h in m.history]
    assert all(g > 0 for g in gains), gains
    assert m.history[0]["est"] > m.history[0]["twin_est"]


def test_default_lie_visibly_costs_the_liar():
    """The page's default (tenant 0 inflating 2x under default's oef-noncoop) is no flat 0: the
    paired gain is about -1.36 of a truthful 2.86 every round (a hand-checkable loss, not noise)."""
    m = viz.PageModel()
    assert (m.scenario_name, m.mechanism, m.liar_index, m.lie_factor) == ("default", "oef-noncoop", 0, 2.0)
    for _ in range(5):
        m.step()
    for h in m.history:
        assert h["twin_est"] > 2.0 and h["gain"] < -0.3 * h["twin_est"], h
    # and a factor of 1 on the same liar really is flat: the loss comes from the lie
    t = viz.PageModel(lie_factor=1.0)
    t.step()
    assert t.history[0]["gain"] == 0.0


def test_default_auction_lie_is_punished():
    """control_auction's default (job 2 doubling its value under fixed-price) is admitted at a
    posted price above its true value: a negative paired gain from the first slot on."""
    m = viz.AuctionPageModel()
    assert (m.study_name, m.mechanism_name, m.liar_id, m.lie_factor) == ("control_auction", "fixed-price", 2, 2.0)
    while m.running:
        m.step()
    assert all(h["gain"] < -1.0 for h in m.history), m.history
    assert m.twin.bidders[2].decision is not None and not m.twin.bidders[2].decision.admitted  # truthful: rejected


def test_rounds_agree_across_charts_and_ticks_are_integers():
    """After r steps every chart says round r: the heat map's title, the gain chart's last point,
    the caption; the round axis has whole-number ticks only (short and long horizons)."""
    m = viz.PageModel(scenario_name="hedge_tenant", lie_factor=1.5)
    for r in range(1, 4):
        m.step()
        assert f"round {r}/" in m.caption()
        heat, gain = _svg(viz.allocation_figure(m)), _svg(viz.gain_figure(m))
        assert _title(heat).endswith(f"round {r}") and heat.get("data-round") == str(r)
        assert _title(gain).endswith(f"round {r}")
        assert [x for x, _ in _points(gain, "gain")] == [float(i) for i in range(1, r + 1)]
        assert gain.get("data-last-round") == str(r)
    for chart in (_svg(viz.gain_figure(m)), _svg(viz.gain_figure(viz.PageModel()))):
        ticks = _xticks(chart)
        assert ticks and all(t.lstrip("-").isdigit() for t in ticks), ticks
    a = viz.AuctionPageModel()
    a.step()
    assert all(t.isdigit() for t in _xticks(_svg(viz.auction_gain_figure(a))))
    assert viz.nice_ticks(1, 3, 8, integer=True) == [1.0, 2.0, 3.0]
    assert viz.nice_ticks(1, 24, 8, integer=True) == [5.0, 10.0, 15.0, 20.0]
    assert viz.nice_ticks(-1.5, 3.0, 5) == [-1.0, 0.0, 1.0, 2.0, 3.0]
    assert "-0" not in [f"{v:g}" for v in viz.nice_ticks(-1e-12, 1.0)]


def test_rejected_liars_true_value_star_is_its_true_value():
    """A liar that shades itself out (job 3 x0.5 under fixed-price: rejected, its truthful twin is
    admitted) still has its TRUE value starred, not surplus + payment = 0."""
    m = viz.AuctionVizModel(study="control_auction", mechanism="fixed-price", liar=3, lie_factor=0.5, seed=0)
    while m.running:
        m.step()
    liar = m.bidders[3]
    assert liar.decision is not None and not liar.decision.admitted and liar.surplus == 0.0
    true_value = float(liar.bid.value)
    assert true_value > 0 and m.true_value(3) == true_value
    prices = _svg(viz.prices_figure(m))
    star = next(e for e in prices.iter() if e.get("class") == "true-value")
    assert float(star.get("data-y")) == pytest.approx(true_value)
    # an admitted liar: its true value too (here = what it pays + its true surplus)
    a = viz.AuctionPageModel()
    while a.running:
        a.step()
    b = a.bidders[2]
    assert b.decision.admitted and a.true_value(2) == pytest.approx(b.surplus + b.payment) == float(b.bid.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scenario_name": "no_such_scenario"}, "scenario"),
        ({"scenario_name": "eris"}, "scenario"),  # an auction study: out of scope
        ({"scenario_name": "sweep_lie_factor"}, "scenario"),
        ({"mechanism": "no-such-mechanism"}, "mechanism"),
        ({"mechanism": "proportional-share"}, "mechanism"),  # registered, but rejects the round loop's caps
        ({"scenario_name": "hedge_tenant", "liar": 2}, "liar"),
        ({"lie_factor": 0.0}, "lie_factor"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_inputs_name_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        viz.MarketVizModel(**kwargs)
    assert err.value.field == field


def test_page_model_wraps_liar_and_page_builds():
    m = viz.PageModel(scenario_name="hedge_tenant", liar=5)  # 2 tenants: index 5 -> tenant 1
    assert m.liar_index == 1
    assert set(viz.fair_share_scenarios()) >= {"default", "oef_lying"}
    assert "eris" not in viz.fair_share_scenarios()
    assert {"oef-noncoop", "max-throughput"} <= set(viz.viz_mechanisms())
    assert "proportional-share" not in viz.viz_mechanisms()
    page = viz.build_page("oef_lying")
    assert page is not None


def test_cli_viz_without_solara_exits_2(tmp_path):
    """The extra stays optional: the CLI imports no solara, and `viz` without it is one line + exit 2."""
    probe = (
        "import sys\n"
        "import marketsim.analysis.frontends.cli as cli\n"
        "assert 'solara' not in sys.modules and 'mesa.visualization' not in sys.modules\n"
        "sys.modules['solara'] = None  # as if the extra were not installed\n"
        "sys.exit(cli.main(['viz', '--no-browser']))\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'marketsim-cluster[viz]'" in lines[0]


def test_cli_viz_rejects_unknown_name(capsys):
    """An unknown name: one line, exit 2, listing the fair-share scenarios AND the auction studies."""
    from marketsim.analysis.frontends.cli import main

    assert main(["viz", "no_such_study_or_scenario", "--no-browser"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such_study_or_scenario" in err[0]
    for name in ("default", "oef_lying", "control_auction", "oasis", "eris"):
        assert f"'{name}'" in err[0], err[0]


# ---------------------------------------------------------------------------------------------------
# the auction page model, no browser


@pytest.mark.parametrize("study", ["control_auction", "oasis", "eris", "pdors"])
def test_auction_model_steps_to_horizon_with_titled_figures(study):
    m = viz.AuctionVizModel(study=study, liar=1, lie_factor=1.5, seed=0)
    assert m.twin.mechanism_seed == m.mechanism_seed
    while m.running:
        m.step()
    assert m.slot == m.T - 1 and len(m.history) == m.T and m.twin.slot == m.T - 1
    m.step()  # past the horizon: a no-op, not an error
    assert len(m.history) == m.T
    assert all(m.job_state(j) in ("admitted", "rejected") for j in m.job_ids())
    figures = {
        "timeline": viz.timeline_figure,
        "prices": viz.prices_figure,
        "auction_gain": viz.auction_gain_figure,
        "resources": viz.resources_figure,
    }
    for key, make in figures.items():
        svg = _svg(make(m))
        assert svg.get("data-chart") == key and _title(svg).startswith(viz.AUCTION_TITLES[key])
    assert len(set(viz.AUCTION_TITLES.values()) | set(viz.TITLES.values())) == 8  # distinct titles


@pytest.mark.parametrize("mechanism", ["fixed-price", "pay-your-bid"])
def test_auction_truthful_factor_has_zero_gain(mechanism):
    for liar in range(8):
        m = viz.AuctionVizModel(study="control_auction", mechanism=mechanism, liar=liar, lie_factor=1.0, seed=0)
        while m.running:
            m.step()
        assert [h["gain"] for h in m.history] == [0.0] * m.T


def _final_gain(mechanism: str, liar: int, factor: float) -> tuple[float, bool]:
    m = viz.AuctionVizModel(study="control_auction", mechanism=mechanism, liar=liar, lie_factor=factor, seed=0)
    while m.running:
        m.step()
    return m.history[-1]["gain"], m.twin.bidders[liar].admitted


def test_shading_pays_under_pay_your_bid_not_under_fixed_price():
    # seed 0's winners value their bundles at 1.17-1.26x the posted cost: shading by 0.85 stays above it
    gains = {j: _final_gain("pay-your-bid", j, 0.85) for j in range(8)}
    winners = [j for j, (_, won) in gains.items() if won]
    assert winners and any(gains[j][0] > 0 for j in winners), gains
    for j in range(8):
        for factor in (0.6, 0.85, 2.0):
            assert _final_gain("fixed-price", j, factor)[0] <= 1e-12


def test_auction_page_model_is_lenient_and_page_builds():
    m = viz.AuctionPageModel(study="control_auction", mechanism="oasis", liar=100, lie_factor=9.0)
    assert m.mechanism_name == "fixed-price" and m.liar_id in m.bidders and m.lie_factor == 4.0
    assert {"control_auction", "oasis"} <= set(viz.auction_studies())
    assert viz.is_auction_study("eris") and not viz.is_auction_study("default")
    assert viz.build_auction_page("control_auction") is not None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"study": "no_such_study"}, "study"),
        ({"study": "default"}, "study"),  # a fair-share scenario: the other page
        ({"mechanism": "oasis"}, "mechanism"),  # not a control mechanism
        ({"liar": 999}, "liar"),
        ({"lie_factor": 0.0}, "lie_factor"),
        ({"seed": -1}, "seed"),
    ],
)
def test_auction_bad_inputs_name_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        viz.AuctionVizModel(**kwargs)
    assert err.value.field == field


# ---------------------------------------------------------------------------------------------------
# the served page in headless Chromium

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, proc: subprocess.Popen, what: str) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with status {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.read()
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{what} did not answer {url} within {timeout:.0f} s")


def _kill(proc: subprocess.Popen | None) -> None:
    """Stop a process started in its own session, with everything it started."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


class CDP:
    """A minimal Chrome DevTools Protocol client over one page target's websocket."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.last_id = 0
        self.events: list[dict] = []

    def call(self, method: str, timeout: float = 30.0, **params):
        self.last_id += 1
        self.ws.send(json.dumps({"id": self.last_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"CDP {method} got no answer within {timeout:.0f} s")
            msg = json.loads(self.ws.recv(timeout=left))
            if msg.get("id") == self.last_id:
                if "error" in msg:
                    raise AssertionError(f"CDP {method} failed: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)  # an event (or a late answer): keep for diagnostics

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"JS error in {expression[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        text = self.js("document.body ? document.body.innerText.slice(0, 1500) : ''")
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; page text:\n{text}")


JS_HELPERS = r"""
window.__mk = {
  text: () => document.body ? document.body.innerText : '',
  button: (label) => Array.from(document.querySelectorAll('button'))
      .find(b => b.textContent.trim().toLowerCase() === label.toLowerCase()),
  click: (label) => {
    const b = window.__mk.button(label);
    if (!b || b.disabled) return false;
    b.click();
    return true;
  },
  caption: (key) => { const e = document.querySelector('.marketsim-' + key + ' .marketsim-caption');
                      return e ? e.textContent.trim() : ''; },
  imageSum: (key) => {  // a checksum of the card's chart (its inline SVG); null until drawn
    const svg = document.querySelector('.marketsim-' + key + ' svg.marketsim-chart');
    if (!svg || !svg.getBoundingClientRect().width) return null;
    const t = svg.outerHTML;
    let h = 0; for (let i = 0; i < t.length; i++) { h = (h * 31 + t.charCodeAt(i)) >>> 0; }
    return t.length + ':' + h;
  },
  chart: (key) => document.querySelector('.marketsim-' + key + ' svg.marketsim-chart'),
  chartTitle: (key) => { const t = window.__mk.chart(key); const e = t && t.querySelector('.chart-title');
                         return e ? e.textContent : ''; },
  data: (key, name) => { const t = window.__mk.chart(key); return t ? t.getAttribute('data-' + name) : null; },
  sliderLabels: () => Array.from(document.querySelectorAll('.v-slider')).map(s => {
    const lab = s.closest('.v-input') && s.closest('.v-input').querySelector('label');
    const v = s.querySelector('.v-slider__thumb-label');
    const shown = v && v.offsetParent !== null && v.getBoundingClientRect().width > 0
      && getComputedStyle(v.parentElement).display !== 'none';
    return [lab ? lab.textContent.trim() : '', shown ? v.textContent.trim() : null];
  }),
  mouseTarget: (label) => {  // centre of a button, for a real (CDP) mouse click
    const b = window.__mk.button(label);
    if (!b) return null;
    const r = b.getBoundingClientRect();
    return [r.x + r.width / 2, r.y + r.height / 2];
  },
  selectOpen: (label) => {
    const sel = Array.from(document.querySelectorAll('.v-select'))
      .find(s => { const l = s.querySelector('label'); return l && l.textContent.trim() === label; });
    if (!sel) return false;
    const slot = sel.querySelector('.v-input__slot') || sel;
    slot.dispatchEvent(new MouseEvent('mousedown', {bubbles: true}));
    slot.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
    slot.click();
    return true;
  },
  selectPick: (value) => {
    const item = Array.from(document.querySelectorAll('.menuable__content__active .v-list-item'))
      .find(i => i.textContent.trim() === value);
    if (!item) return false;
    item.click();
    return true;
  },
  selectValue: (label) => {
    const sel = Array.from(document.querySelectorAll('.v-select'))
      .find(s => { const l = s.querySelector('label'); return l && l.textContent.trim() === label; });
    const v = sel && sel.querySelector('.v-select__selection');
    return v ? v.textContent.trim() : '';
  },
};
true
"""


@contextlib.contextmanager
def _served_page(tmp_path: Path, target: str):
    """Serve ``marketsim viz target``, open it in headless Chromium; yield (CDP client, server log)."""
    ws_client = pytest.importorskip("websockets.sync.client", reason="websockets (viz extra) is not installed")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and shutil.which(CHROMIUM) is None:
        why = f"no Chromium at {CHROMIUM} (set $CHROMIUM or apt-get install chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{why}: .ci/setup should have installed it; CI does not skip the browser test")
        pytest.skip(why)
    server = chrome = None
    page_port, cdp_port = _free_port(), _free_port()
    server_log = tmp_path / "server.log"
    try:
        with open(server_log, "wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "marketsim.analysis.frontends.cli", "viz", target, "--host", "127.0.0.1",
                 "--port", str(page_port), "--no-browser"],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "PYTHONWARNINGS": "always::FutureWarning,always::DeprecationWarning"},
            )  # fmt: skip
        url = f"http://127.0.0.1:{page_port}/"
        try:
            _wait_http(url, 90, server, "the page server")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nserver log:\n{server_log.read_text(errors='replace')[-3000:]}") from None
        chrome = subprocess.Popen(
            [CHROMIUM, "--headless=new", f"--remote-debugging-port={cdp_port}", "--no-sandbox",
             f"--user-data-dir={tmp_path / 'chrome-profile'}", "--window-size=1400,1000", "--no-first-run",
             "--disable-dev-shm-usage", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        targets = json.loads(_wait_http(f"http://127.0.0.1:{cdp_port}/json/list", 60, chrome, "chromium"))
        page = next(t for t in targets if t.get("type") == "page")
        with ws_client.connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30) as ws:
            cdp = CDP(ws)
            cdp.call("Page.enable")
            cdp.call("Runtime.enable")
            cdp.call("Page.navigate", url=url)
            yield cdp, server_log
    finally:
        _kill(chrome)
        _kill(server)


def _check_shot_and_log(shot: bytes, server_log: Path, out: Path) -> None:
    """Mesa deprecations must fail here too (the server runs in its own process); the PNG is real."""
    from PIL import Image

    log_text = server_log.read_text(errors="replace")
    mesa_warnings = [line for line in log_text.splitlines() if "Warning" in line and "mesa" in line.lower()]
    assert not mesa_warnings, "\n".join(mesa_warnings)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(shot) > 20_000, len(shot)
    out.write_bytes(shot)
    img = Image.open(io.BytesIO(shot)).convert("RGB")
    assert img.size[0] >= 1000 and img.size[1] >= 600, img.size
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is None or len(colours) > 50, "the screenshot is (nearly) uniform"


def _wait_for_cards(cdp, titles: dict[str, str], image_key: str) -> None:
    """Wait until every figure title is on the page, install the JS helpers and wait for the
    ``image_key`` card's image."""
    shown = list(titles.values())
    cdp.wait_for(
        "document.body && " + " && ".join(f"document.body.innerText.includes({json.dumps(t)})" for t in shown),
        120,
        f"the figure titles {shown}",
    )
    cdp.js(JS_HELPERS)
    cdp.wait_for(f"window.__mk.imageSum({json.dumps(image_key)})", 60, f"the {image_key} image")


def _assert_no_mesa_leftovers(cdp) -> None:
    """SolaraViz's leftovers are gone: no tab bar (a lone "PAGE 0" tab), no "Render Interval" slider,
    no "Use Threads" box; Mesa's own controls (play interval, Reset / play / Step) are still there."""
    text = cdp.js("window.__mk.text()").lower()
    for gone in ("page 0", "render interval", "use threads"):
        assert gone not in text, f"{gone!r} is still on the page"
    assert cdp.js("document.querySelectorAll('.v-tabs, .v-tab, .v-input--checkbox').length") == 0
    assert "play interval" in text
    assert all(cdp.js(f"!!window.__mk.button({json.dumps(b)})") for b in ("Reset", "Step"))


def _mouse_click(cdp, label: str) -> None:
    """A real mouse click (CDP Input events, press + release) at the centre of button ``label``."""
    at = cdp.js(f"window.__mk.mouseTarget({json.dumps(label)})")
    assert at, f"no {label} button"
    for kind in ("mousePressed", "mouseReleased"):
        cdp.call("Input.dispatchMouseEvent", type=kind, x=at[0], y=at[1], button="left", clickCount=1)


def _round_in(caption: str, unit: str = "round") -> int:
    return int(caption.split(f"{unit} ", 1)[1].split("/", 1)[0])


def test_page_in_headless_chromium(tmp_path):
    """Serve the page, open it in headless Chromium: slider values shown, Step moves every card with
    one consistent round, 4 quick clicks after Reset reach round 4, switch the mechanism, screenshot."""
    with _served_page(tmp_path, "default") as (cdp, server_log):
        _wait_for_cards(cdp, viz.TITLES, "allocation")
        _assert_no_mesa_leftovers(cdp)
        assert "Time: 0.0" in cdp.js("window.__mk.text()")
        assert "round 0/24" in cdp.js("window.__mk.caption('allocation')")
        before = cdp.js("window.__mk.imageSum('allocation')")

        # every slider shows its value without being focused (the defaults: liar 0, factor 2, seed 0)
        sliders = dict(map(tuple, cdp.js("window.__mk.sliderLabels()")))
        assert sliders.get("liar (tenant index)") == str(viz.DEFAULT_LIAR), sliders
        assert float(sliders.get("lie factor on fast GPU types") or "nan") == viz.DEFAULT_LIE_FACTOR, sliders
        assert sliders.get("seed") == "0", sliders

        # Step: the step counter, the captions and the heat map all move on
        assert cdp.js("window.__mk.click('Step')"), "no enabled Step button"
        cdp.wait_for("window.__mk.text().includes('Time: 1.0')", 60, "the step counter to reach 1")
        cdp.wait_for("window.__mk.caption('allocation').includes('round 1/24')", 60, "the round-1 caption")
        after = cdp.wait_for(
            f"(async () => {{ const s = await window.__mk.imageSum('allocation'); "
            f"return s && s !== {json.dumps(before)} ? s : null; }})()",
            60,
            "the heat map to change after Step",
        )
        assert after != before
        cdp.wait_for("window.__mk.data('gain', 'last-round') === '1'", 60, "the gain chart's round-1 point")
        # one round everywhere: the heat map's title, the gain chart's last point, every caption
        assert "round 1" in cdp.js("window.__mk.chartTitle('allocation')")
        assert cdp.js("window.__mk.data('allocation', 'round')") == "1"
        assert all(_round_in(cdp.js(f"window.__mk.caption({json.dumps(k)})")) == 1 for k in viz.TITLES)
        # the default lie visibly costs the liar (paired gain about -1.36 of 2.86)
        assert float(cdp.js("window.__mk.data('gain', 'last-gain')")) < -0.5

        # Reset, then 4 quick real mouse clicks on Step: every click counts (round 4, not fewer or more)
        _mouse_click(cdp, "Reset")
        for _ in range(4):
            time.sleep(0.05)
            _mouse_click(cdp, "Step")
        for key in viz.TITLES:
            cdp.wait_for(f"window.__mk.caption({json.dumps(key)}).includes('round 4/24')", 120, f"{key} at round 4")
        time.sleep(2.0)  # a dropped or doubled click would show up by now
        assert _round_in(cdp.js("window.__mk.caption('allocation')")) == 4
        assert cdp.js("window.__mk.data('gain', 'last-round')") == "4"
        assert "Time: 4.0" in cdp.js("window.__mk.text()")

        # switch the mechanism, Reset (Mesa applies parameters on Reset), then step under it
        assert "oef-noncoop" in cdp.js("window.__mk.caption('gain')")
        assert cdp.js("window.__mk.selectOpen('mechanism')"), "no mechanism select"
        cdp.wait_for("window.__mk.selectPick('max-throughput')", 30, "the max-throughput menu item")
        cdp.wait_for("window.__mk.selectValue('mechanism') === 'max-throughput'", 30, "the select to show it")
        assert cdp.js("window.__mk.click('Reset')"), "no Reset button"
        for key in viz.TITLES:
            cdp.wait_for(
                f"window.__mk.caption({json.dumps(key)}).includes('max-throughput · round 0/24')",
                60,
                f"the {key} card to show max-throughput after Reset",
            )
        assert cdp.js("window.__mk.click('Step')")
        cdp.wait_for("window.__mk.caption('allocation').includes('max-throughput · round 1/24')", 60, "a step")
        switched = cdp.wait_for(
            "window.__mk.chartTitle('allocation').includes('max-throughput') && window.__mk.imageSum('allocation')",
            60,
            "the heat map under max-throughput",
        )
        assert switched not in (before, after)

        shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"])
    _check_shot_and_log(shot, server_log, tmp_path / "page.png")


def test_auction_page_in_headless_chromium(tmp_path):
    """Serve control_auction: the auction figure titles appear, Step moves a chart, the default lie
    shows a non-zero paired gain and the liar's true-value star, screenshot."""
    with _served_page(tmp_path, "control_auction") as (cdp, server_log):
        _wait_for_cards(cdp, viz.AUCTION_TITLES, "timeline")
        _assert_no_mesa_leftovers(cdp)
        assert "slot 0/8" in cdp.js("window.__mk.caption('timeline')")
        sliders = dict(map(tuple, cdp.js("window.__mk.sliderLabels()")))
        assert sliders.get("liar (job id)") == str(viz.DEFAULT_AUCTION_LIAR), sliders
        before = cdp.js("window.__mk.imageSum('timeline')")
        assert cdp.js("window.__mk.click('Step')"), "no enabled Step button"
        cdp.wait_for("window.__mk.caption('timeline').includes('slot 1/8')", 90, "the slot-1 caption")
        after = cdp.wait_for(
            f"(async () => {{ const s = await window.__mk.imageSum('timeline'); "
            f"return s && s !== {json.dumps(before)} ? s : null; }})()",
            90,
            "the timeline to change after Step",
        )
        assert after != before
        cdp.wait_for("window.__mk.data('auction_gain', 'slot') === '1'", 60, "the gain chart at slot 1")
        assert float(cdp.js("window.__mk.data('auction_gain', 'last-gain')")) < -1.0  # decided in slot 0: a loss
        star = cdp.js("(() => { const e = window.__mk.chart('prices').querySelector('.true-value'); "
                      "return e ? e.getAttribute('data-y') : null; })()")  # fmt: skip
        assert star is not None and float(star) > 0
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"])
    _check_shot_and_log(shot, server_log, tmp_path / "auction.png")


def test_page_builds_without_the_shared_data(monkeypatch) -> None:
    """A scenario that cannot load here (gavel_table without ../shared/data) is left out of the
    page's scenario list instead of breaking the page."""
    real = viz.load_scenario

    def no_data(name, *a, **k):
        if name == "gavel_table":
            raise viz.InputError("scenario gavel_table.profiles.file", "../../shared/data/x.csv", "does not exist")
        return real(name, *a, **k)

    monkeypatch.setattr(viz, "load_scenario", no_data)
    loaded = viz.loadable_scenarios()
    assert "gavel_table" not in loaded and "default" in loaded
    assert viz.build_page("default") is not None
