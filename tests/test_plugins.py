"""Plugins through entry points: the papers' own plugins, a package installed on the fly (a real
``*.dist-info`` with ``entry_points.txt`` on ``PYTHONPATH``), broken plugins, name clashes and the
lazy family import. Subprocesses keep the global registry of this test process clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from marketsim.market import plugins
from marketsim.market.errors import InputError
from marketsim.market.plugins import Plugin

ROOT = Path(__file__).resolve().parents[1]
PAPERS = {"oef", "oasis", "pdors", "astraea", "eris"}


def _fake_dist(tmp: Path, name: str, entry: str, files: dict[str, str]) -> Path:
    """A minimal installed distribution ``name`` with one ``marketsim.mechanisms`` entry point."""
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    info = tmp / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[marketsim.mechanisms]\n{entry}\n")
    return tmp


def _run(code: str, path: Path | None = None, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), str(ROOT)])
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)  # fmt: skip


UNIFORM = {
    "uniplug/__init__.py": "",
    "uniplug/plugin.py": """
        from marketsim.market.plugins import Plugin
        PLUGIN = Plugin(name="uniplug", summary="Uniform test plugin",
                        mechanisms={"fair-share": ("uniplug.mech",)}, claims=("uniplug.claims",),
                        studies="uniplug.studies")
    """,
    "uniplug/mech.py": """
        import numpy as np
        from marketsim.market.allocation import Allocation
        from marketsim.market.registry import register

        @register("uniform-test", "fair-share", "Every GPU type split equally (test plugin)", paper="uniplug")
        def uniform(W, m, *, weights=None, caps=None, **options):
            W = np.asarray(W, float)
            X = np.tile(np.asarray(m, float) / W.shape[0], (W.shape[0], 1))
            return Allocation(X, "uniform-test", float((W * X).sum()))
    """,
    "uniplug/claims.py": """
        from marketsim.market.audit.claims import Measurement, register_claim
        from marketsim.market.audit.fairshare import FairShareTarget
        from marketsim.market.audit.search import audit

        @register_claim("uniplug", "U1", "Uniform split is strategy-proof", "audit on W=[[1,2],[1,5]], m=[1,1]")
        def u1(ctx):
            t = FairShareTarget("uniform-test", W=[[1, 2], [1, 5]], m=[1, 1])
            bad = sum(audit(t, i).violated for i in range(2))
            return Measurement(n_instances=1, violations=bad, effect="violating agents")
    """,
    "uniplug/studies/__init__.py": "",
    "uniplug/studies/uniplug_demo.toml": """
        name = "uniplug_demo"
        description = "A fair-share scenario shipped by a plugin"
    """,
}


def test_builtin_plugins_come_from_entry_points() -> None:
    found = plugins.plugins()
    assert PAPERS | {"control"} <= set(found)
    assert not plugins.broken()
    # every paper declares its claims and (auction papers) a market adapter and studies
    for p in PAPERS:
        hunted = (f"marketsim.market.{p}.hunt",) if p in {"oef", "pdors", "oasis", "eris"} else ()  # their hunt spaces
        assert found[p].claims == (f"marketsim.market.{p}.claims", *hunted)
    for p in PAPERS - {"oef"}:
        assert found[p].market == f"marketsim.market.{p}.market"
        assert found[p].studies == f"marketsim.market.{p}.studies"
    from marketsim.market.audit.claims import papers

    assert PAPERS <= set(papers())


def test_studies_live_in_paper_folders() -> None:
    from marketsim.analysis.engine.studies import load_study, study_names

    assert {"oasis_paper", "pdors_paper", "astraea", "eris_paper", "control_auction"} <= set(study_names())
    assert load_study("oasis_paper").source == "market/oasis/studies/oasis_paper.toml"
    assert not list((ROOT / "market" / "audit").glob("*_claims.py"))


def test_installed_plugin_is_discovered_listed_and_audited(tmp_path: Path) -> None:
    path = _fake_dist(tmp_path, "uniplug", "uniplug = uniplug.plugin:PLUGIN", UNIFORM)
    r = _run(
        """
        import json
        from marketsim.market import plugins, registry
        from marketsim.market.audit.claims import run_claims, papers
        from marketsim.scenarios.loader import scenario_names
        info = registry.get("uniform-test")
        res = run_claims("uniplug", size="small", seed=0)
        print(json.dumps({"plugins": sorted(plugins.plugins()), "family": info.family,
                          "papers": papers(), "verdict": res[0].verdict,
                          "scenario": "uniplug_demo" in scenario_names()}))
        """,
        path,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "uniplug" in out["plugins"] and "oef" in out["plugins"]
    assert out["family"] == "fair-share"
    assert "uniplug" in out["papers"]
    assert out["verdict"] == "holds"  # a report-independent split: no lie can gain
    assert out["scenario"]
    cli = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['list']))", path)
    assert cli.returncode == 0, cli.stderr
    assert "uniplug" in cli.stdout and "uniform-test" in cli.stdout


def test_broken_plugin_is_skipped_and_reported(tmp_path: Path) -> None:
    files = {"badplug/__init__.py": "", "badplug/plugin.py": "raise ImportError('no such dependency: foo')\n"}
    path = _fake_dist(tmp_path, "badplug", "badplug = badplug.plugin:PLUGIN", files)
    r = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['list']))", path)
    assert r.returncode == 0, r.stderr
    assert "badplug" in r.stdout and "BROKEN" in r.stdout and "no such dependency: foo" in r.stdout
    assert "maxmin" in r.stdout  # the framework still works
    assert "skipped" not in r.stderr  # `list` shows it as BROKEN instead of warning as well
    r2 = _run("from marketsim.market import plugins; plugins.plugins()", path)
    assert "marketsim plugin 'badplug' skipped" in r2.stderr  # elsewhere: one warning


def test_entry_point_that_is_not_a_plugin(tmp_path: Path) -> None:
    files = {"notplug/__init__.py": "PLUGIN = 42\n"}
    path = _fake_dist(tmp_path, "notplug", "notplug = notplug:PLUGIN", files)
    r = _run("from marketsim.market import plugins; print(plugins.broken())", path)
    assert r.returncode == 0, r.stderr
    assert "not a marketsim.market.plugins.Plugin" in r.stdout


def test_plugin_whose_mechanism_module_fails_is_skipped(tmp_path: Path) -> None:
    files = dict(UNIFORM)
    files["uniplug/mech.py"] = "raise RuntimeError('mechanism module exploded')\n"
    path = _fake_dist(tmp_path, "uniplug", "uniplug = uniplug.plugin:PLUGIN", files)
    r = _run("from marketsim.market import registry, plugins; print(registry.names('fair-share')); "
             "print(plugins.broken())",
             path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "maxmin" in r.stdout and "mechanism module exploded" in r.stdout


def test_scenario_name_clash_names_both_files(tmp_path: Path) -> None:
    files = dict(UNIFORM)
    files["uniplug/studies/default.toml"] = 'name = "default"\n'
    path = _fake_dist(tmp_path, "uniplug", "uniplug = uniplug.plugin:PLUGIN", files)
    r = _run("from marketsim.scenarios.loader import scenario_names; scenario_names()", path)
    assert r.returncode != 0
    assert "'default'" in r.stderr and "is shipped twice" in r.stderr and "uniplug.studies" in r.stderr


def test_fair_share_lookup_does_not_import_the_auction_papers() -> None:
    r = _run(
        """
        import sys
        from marketsim.market import registry
        registry.get("maxmin")
        heavy = [m for m in ("marketsim.market.eris.mechanism", "marketsim.market.astraea.online", "marketsim.market.oasis.mechanism",
                             "marketsim.market.pdors.mechanism") if m in sys.modules]
        print(heavy)
        """  # noqa: E501
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": ""}, "Plugin.name"),
        ({"name": "a b"}, "Plugin.name"),
        ({"name": "x", "mechanisms": {"batch": ("m",)}}, "mechanisms"),
        ({"name": "x", "mechanisms": {"fair-share": "mod.name"}}, "mechanisms['fair-share']"),
        ({"name": "x", "claims": ("not a module",)}, "claims"),
        ({"name": "x", "studies": "1bad.pkg"}, "studies"),
    ],
)
def test_plugin_validation_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        Plugin(**kwargs)


def test_add_plugin_rejects_a_clash() -> None:
    with pytest.raises(InputError, match="already provided"):
        plugins.add_plugin(Plugin(name="oef", summary="impostor"))
    with pytest.raises(InputError, match="must be a marketsim.market.plugins.Plugin"):
        plugins.add_plugin("oef")  # type: ignore[arg-type]


def test_list_marks_a_plugin_broken_when_its_mechanism_module_fails(tmp_path: Path) -> None:
    files = dict(UNIFORM)
    files["uniplug/mech.py"] = "raise RuntimeError('mechanism module exploded')\n"
    path = _fake_dist(tmp_path, "uniplug", "uniplug = uniplug.plugin:PLUGIN", files)
    r = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['list']))", path)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("uniplug "))
    assert "BROKEN" in line and "mechanism module exploded" in line
    assert "Uniform test plugin" not in r.stdout  # listed once, as broken, not with its summary
    assert "maxmin" in r.stdout and "skipped" not in r.stderr  # listed, not warned about as well
    # a later command that looks up a built-in mechanism does not import (nor warn about) the plugin
    r2 = _run("from marketsim.market import registry; print(registry.get('maxmin').family)", path)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.strip() == "fair-share" and "uniplug" not in r2.stderr


CLASH = {
    "clashplug/__init__.py": "",
    "clashplug/plugin.py": """
        from marketsim.market.plugins import Plugin
        PLUGIN = Plugin(name="drf", summary="Clashing test plugin", mechanisms={"fair-share": ("clashplug.mech",)})
    """,
    "clashplug/mech.py": """
        import numpy as np
        from marketsim.market.allocation import Allocation
        from marketsim.market.registry import register

        def _split(W, m, *, weights=None, caps=None, **options):
            W = np.asarray(W, float)
            X = np.tile(np.asarray(m, float) / W.shape[0], (W.shape[0], 1))
            return Allocation(X, "x", float((W * X).sum()))

        register("drf", "fair-share", "clashes with the OASiS baseline")(_split)
        register("maxmin", "fair-share", "clashes with OEF's max-min")(lambda W, m, **kw: _split(W, m))
        register("clash-ok", "fair-share", "a fresh name")(lambda W, m, **kw: _split(W, m))
    """,
}


def test_name_clashes_are_warned_listed_and_builtins_win(tmp_path: Path) -> None:
    path = _fake_dist(tmp_path, "clashplug", "drf = clashplug.plugin:PLUGIN", CLASH)
    r = _run(
        """
        import json
        from marketsim.market import registry
        # the plugin's fair-share family is looked up first: the built-in auction 'drf' must still win
        fresh = registry.get("clash-ok").plugin
        print(json.dumps({"drf": registry.get("drf").family, "maxmin": registry.get("maxmin").fn.__module__,
                          "fresh": fresh, "clashes": registry.check_name_clashes()}))
        """,
        path,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["drf"] == "auction" and out["maxmin"].startswith("marketsim.market.") and out["fresh"] == "drf"
    msgs = " ".join(out["clashes"]["drf"])
    assert "mechanism name 'drf' is already registered" in msgs and "'maxmin'" in msgs
    assert "plugin name 'drf' is also the name of the auction mechanism" in msgs
    assert "mechanism name 'maxmin' is already registered" in r.stderr  # warned
    cli = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['list']))", path)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.count("NAME CLASH") == 3 and "clash-ok" in cli.stdout


def test_register_outside_a_plugin_still_rejects_a_taken_name() -> None:
    from marketsim.market.registry import get, register

    get("maxmin")
    with pytest.raises(InputError, match="already registered"):
        register("maxmin", "fair-share", "impostor")(lambda W, m, **kw: None)


# -- the worked plugins of docs/plugins.md, run from the page itself -------------------------------
DOC = ROOT / "docs" / "plugins.md"


def _doc_files(project: str) -> dict[str, str]:
    """``{path inside the project: text}`` of every code block of docs/plugins.md whose first line is
    ``# file: <project>/<path>`` (the marker line dropped)."""
    import re

    text = DOC.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"```(?:python|toml)\n# file: ([^\n]+)\n(.*?)```", text, re.S):
        proj, _, rel = m.group(1).strip().partition("/")
        if proj == project:
            out[rel] = m.group(2)
    return out


def _install_from_doc(tmp: Path, project: str) -> tuple[Path, dict]:
    """Write the doc's project under ``tmp`` as an installed distribution (its entry points in a
    ``*.dist-info``, empty ``__init__.py`` for every declared package); return the path and its
    parsed pyproject."""
    import tomllib

    files = _doc_files(project)
    meta = tomllib.loads(files.pop("pyproject.toml"))
    for pkg in meta["tool"]["setuptools"]["packages"]:
        files.setdefault(pkg.replace(".", "/") + "/__init__.py", "")
    eps = meta["project"]["entry-points"]["marketsim.mechanisms"]
    return _fake_dist(tmp, meta["project"]["name"].replace("-", "_"),
                      "\n".join(f"{k} = {v}" for k, v in eps.items()), files), meta  # fmt: skip


def test_doc_fair_share_plugin_is_the_shipped_example(tmp_path: Path) -> None:
    files = _doc_files("marketsim-proportional")
    assert {"pyproject.toml", "marketsim_proportional/plugin.py", "marketsim_proportional/mechanism.py",
            "marketsim_proportional/claims.py"} <= set(files)  # fmt: skip
    for rel, text in files.items():
        assert text == (ROOT / "examples" / "marketsim-proportional" / rel).read_text(), rel
    path, _ = _install_from_doc(tmp_path, "marketsim-proportional")
    r = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['audit', '--mechanism', "
             "'proportional-share', '--speedups', '1,2;1,5', '--json']))", path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violations"]["strategyproofness"] > 0.01  # inflating pays (hand: tenant 0 gets 4/9 > 2/7)


@pytest.mark.slow  # about 15-25 s: CI's slow step (the default suite's 10-minute budget)
def test_doc_auction_plugin_runs_lists_audits_and_flags_the_limit(tmp_path: Path) -> None:
    path, meta = _install_from_doc(tmp_path, "reserve-auction")
    # the package-data line that ships the study TOMLs
    assert meta["tool"]["setuptools"]["package-data"] == {"reserve_auction.studies": ["*.toml"]}
    lst = _run("from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['list']))", path)
    assert lst.returncode == 0, lst.stderr
    assert "first-price-reserve" in lst.stdout and "posted-reserve" in lst.stdout and "reserve_demo" in lst.stdout
    assert "BROKEN" not in lst.stdout and "NAME CLASH" not in lst.stdout
    r = _run(
        """
        import json, io, contextlib
        from marketsim.analysis.frontends.cli import main
        from marketsim.market.testing import IncentiveViolation, assert_individually_rational, assert_strategyproof
        from marketsim.market.testing import auction_instance
        out = {}
        for mech in ("first-price-reserve", "posted-reserve"):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main(["audit", "--mechanism", mech, "--json"]) == 0
            out[mech] = json.loads(buf.getvalue())
        inst = auction_instance("reserve_demo")
        assert_individually_rational("posted-reserve", [inst])
        assert_strategyproof("posted-reserve", [inst])
        try:
            assert_strategyproof("first-price-reserve", [inst])
            out["fp_violation"] = None
        except IncentiveViolation as e:
            out["fp_violation"] = e.witness
        print(json.dumps(out))
        """,
        path,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    fp, pr = out["first-price-reserve"], out["posted-reserve"]
    assert pr["violations"]["strategyproofness"] <= 1e-9
    winners = [a for a in fp["agents"] if a["best_gain"] > 0]
    assert winners and fp["violations"]["strategyproofness"] > 0.1
    for a in winners:  # every value is >= 0.5 and the reserve 0.05: the best shading is below the box
        assert a["witness"]["value_scale"] == pytest.approx(0.1) and a["at_limit"]
        assert a["truthful_utility"] == 0.0 and a["relative_gain"] is None and len(a["notes"]) == 2
    assert out["fp_violation"] is not None and out["fp_violation"]["at_limit"]
    run = _run(f"from marketsim.analysis.frontends.cli import main; raise SystemExit(main(['run', 'reserve_demo', "
               f"'--reps', '1', "
               f"'--quiet', '--out', {str(tmp_path / 'out')!r}]))", path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "results.parquet").exists()


def test_plugin_author_api_is_exported_documented_and_described() -> None:
    import marketsim.market.audit as api

    for name in ("FairShareTarget", "random_instance", "FairShareInstance", "AuditConfig", "audit", "Dimension",
                 "register_claim", "ClaimContext", "Measurement"):  # fmt: skip
        assert name in api.__all__ and getattr(api, name).__doc__, name
    fields = ("kind", "truth", "over", "integer", "limit_lower", "limit_upper")
    assert all(f":param {f}:" in api.Dimension.__doc__ for f in fields)
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## 6. `Dimension`", 1)[1].split("## 7.", 1)[0]
    assert all(f"`{f}`" in section for f in fields)
    assert "[audit]" in text and "package-data" in text and "mechanism(name, rng)" in text
    assert "Register a factory" not in text  # the old, wrong description of auction registration
