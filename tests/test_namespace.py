"""One import namespace (issue 34 item 2). The layers are imported as ``marketsim.market``, ``marketsim.agents``,
``marketsim.scenarios`` and ``marketsim.analysis``, so a user's own ``agents.py`` or ``model.py`` beside a script
(Mesa's usual layout) shadows nothing of ours; no file of the project imports a layer by its bare name (that
would load a second copy of every module), and the bare names refuse to load."""

# ns_rewrite: skip-file (its negative controls name the layers bare on purpose; it is written in the final form)
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("market", "agents", "scenarios", "analysis")
_BARE = "|".join(LAYERS)
SKIP = {".git", ".venv", "__pycache__", "site", "build", "dist", "results", ".pytest_cache", ".ruff_cache"}
# text: an import statement in a code block or notebook cell, a mkdocstrings identifier, `python -m`
_TEXT = re.compile(
    rf"""(?:^[ \t]*(?:>>> |"|\$ )?|[`;][ \t]*)"""
    rf"(?:from[ \t]+(?:{_BARE})(?:\.\w+)*[ \t]+import|import[ \t]+(?:{_BARE})\b(?!\w))"
    rf"|^[ \t]*:::[ \t]+(?:{_BARE})\b|-m[ \t]+(?:{_BARE})\.",
    re.M,
)
# Python: an import statement (at any depth), a string that is one of our modules ("market.oef.plugin:PLUGIN")
_PY_IMPORT = re.compile(
    rf"^[ \t]*(?:from[ \t]+((?:{_BARE})(?:\.\w+)*)[ \t]+import|import[ \t]+((?:{_BARE})\b(?:\.\w+)*))", re.M
)
_PY_STRING = re.compile(rf"(?<![\w.])[\"']((?:{_BARE})(?:\.\w+)+)(?::[\w.]+)?[\"']")
_OFF = re.compile(r"ns_rewrite: off.*?(?:ns_rewrite: on|\Z)", re.S)


def _files(root: Path, suffixes: set[str]) -> list[Path]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP and not x.startswith(".") and not x.endswith(".egg-info"))
        out += [Path(d) / f for f in files if Path(f).suffix in suffixes and Path(d) / f != Path(__file__).resolve()]
    return sorted(out)


def _is_module(root: Path, dotted: str) -> bool:
    parts = dotted.split(".")
    return len(parts) > 1 and ((root.joinpath(*parts[:2]).with_suffix(".py")).is_file()
                               or (root.joinpath(*parts[:2]) / "__init__.py").is_file())  # fmt: skip


def bare_references(root: Path) -> list[str]:
    """``file:line: what`` for each reference to a layer by its bare name: an import statement (at any depth) or a
    string naming one of our modules (``"market.oef.plugin:PLUGIN"``, ``-m analysis.frontends.cli``) in Python;
    an import, a ``::: market...`` identifier or a ``-m`` command in docs, notebooks, TOML and CI scripts."""
    bad = []
    for f in _files(root, {".py"}):
        text = f.read_text(encoding="utf-8")
        for m in _PY_IMPORT.finditer(text):
            bad.append(f"{f.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1) or m.group(2)}")
        for m in _PY_STRING.finditer(text):
            if _is_module(root, m.group(1)):
                bad.append(f"{f.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}")
    for f in _files(root, {".md", ".ipynb", ".toml", ".yml", ".cfg"}) + sorted((root / ".ci").glob("*")):
        # a section between "ns_rewrite: off" and "ns_rewrite: on" names the old imports on purpose (the docs page
        # that explains the namespace): blanked, line numbers kept
        text = _OFF.sub(lambda m: "\n" * m.group(0).count("\n"), f.read_text(encoding="utf-8"))
        for m in _TEXT.finditer(text):
            bad.append(f"{f.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}")
    return bad


def test_no_file_names_a_layer_by_its_bare_name() -> None:
    bad = bare_references(ROOT)
    assert not bad, "bare layer names (use marketsim.<layer>; /work/helpers/ns_rewrite.py rewrites a tree):\n" + \
        "\n".join(bad)  # fmt: skip


def test_the_check_finds_bare_names(tmp_path: Path) -> None:
    for rel in ("market/__init__.py", "market/oef/__init__.py", "market/oef/plugin.py", "agents/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(
        "import marketsim.agents\nfrom marketsim.market.oef import plugin\n"
        "def f():\n    import agents.model\n"
        'EP = "market.oef.plugin:PLUGIN"\nOK = ("market.bids", "agents", "marketsim.market.oef.plugin")\n'
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "The market import works.\n```python\nfrom market.oef import plugin\nfrom marketsim.agents import x\n```\n"
        "::: agents\n::: marketsim.market.oef\n`python -m analysis.frontends.cli`\n"
        "<!-- ns_rewrite: off -->\n`import market` was the old way\n<!-- ns_rewrite: on -->\n`import agents`\n"
    )
    assert bare_references(tmp_path) == [
        "tests/t.py:4: agents.model",
        "tests/t.py:5: market.oef.plugin",
        "docs/a.md:3: from market.oef import",
        "docs/a.md:6: ::: agents",
        "docs/a.md:8: -m analysis.",
        "docs/a.md:12: `import agents",
    ]


def _env(**extra: str) -> dict[str, str]:
    """The test's environment with the checkout on PYTHONPATH (after the working directory, as for a clone that
    is not installed); coverage or xdist variables pass through."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def test_bare_layer_names_refuse_to_load() -> None:
    """``import market`` from the checkout's root would load a second copy of every module (``market.errors`` and
    ``marketsim.market.errors``, two InputError classes): each layer refuses, naming the import to use."""
    code = (
        "import importlib\n"
        "for name in ('market', 'agents', 'scenarios', 'analysis'):\n"
        "    try:\n        importlib.import_module(name)\n    except ImportError as exc:\n        print(exc)\n"
        "    else:\n        print(name, 'loaded')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         check=True).stdout.splitlines()  # fmt: skip
    assert [line.split(":")[0] for line in out] == [f"import marketsim.{n}, not {n}" for n in LAYERS]


def test_a_plain_checkout_on_the_path_imports_the_namespace(tmp_path: Path) -> None:
    """Without the editable install's finder (a clone on PYTHONPATH): ``marketsim/__init__.py`` maps the
    top-level folders as its subpackages, and a module has exactly one name."""
    code = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]\n"
        "import marketsim.market.errors, marketsim.scenarios.catalog\n"
        "print(marketsim.market.errors.__file__)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('market', 'agents', 'scenarios', 'analysis')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         check=True).stdout.splitlines()  # fmt: skip
    assert Path(out[0]) == ROOT / "market" / "errors.py" and out[1] == "[]"


# a Mesa project's own files, in the working directory of the user's script
USER_AGENTS = "import mesa\n\n\nclass Walker(mesa.Agent):\n    pass\n"
USER_MODEL = (
    "import mesa\nfrom agents import Walker\n\n\nclass WalkModel(mesa.Model):\n"
    "    def __init__(self):\n        super().__init__(rng=0)\n        Walker.create_agents(self, 3)\n"
)
TRAP = 'raise ImportError("a bare name reached the user\'s own {0}.py")\n'


def _user_folder(tmp_path: Path) -> Path:
    d = tmp_path / "user"
    d.mkdir()
    (d / "agents.py").write_text(USER_AGENTS)
    (d / "model.py").write_text(USER_MODEL)
    for name in ("market", "scenarios", "analysis"):
        (d / f"{name}.py").write_text(TRAP.format(name))
    return d


def test_a_users_own_agents_py_and_model_py_shadow_nothing(tmp_path: Path) -> None:
    """The issue's case: ``from scenarios.model import ScenarioModel`` beside a user's agents.py failed with
    "'agents' is not a package". Now the user's model imports the user's agents.py and ours imports
    marketsim.agents, in one process, with the user's folder first on sys.path."""
    d = _user_folder(tmp_path)
    code = (
        "from model import WalkModel\n"
        "from marketsim.scenarios.model import ScenarioModel\n"
        "import agents, marketsim.agents\n"
        "assert len(WalkModel().agents) == 3 and agents.__file__ != marketsim.agents.__file__\n"
        "m = ScenarioModel('default', 'maxmin', seed=0, rounds=2)\n"
        "m.step()\n"
        "print(type(m).__module__, len(m.agents) > 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=d, env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["marketsim.scenarios.model", "True"]


@pytest.mark.slow
def test_marketsim_run_beside_a_users_agents_py_with_process_workers(tmp_path: Path) -> None:
    """``python -m marketsim run`` (the user's folder first on sys.path) and the ``marketsim`` command from that
    folder, with process workers (they unpickle the run function by its module name, marketsim.analysis...):
    both write results, and the two agree (same seed)."""
    d = _user_folder(tmp_path)
    args = ["run", "default", "--policies", "maxmin", "--reps", "2", "--quiet", "--executor", "process",
            "--workers", "2"]  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "marketsim", *args, "--out", str(tmp_path / "a")], cwd=d, env=_env(),
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    exe = Path(sys.executable).with_name("marketsim")
    if not exe.is_file():
        pytest.skip("no marketsim console script beside this interpreter (the package is not installed)")
    r = subprocess.run([str(exe), *args, "--out", str(tmp_path / "b")], cwd=d, env=_env(), capture_output=True,
                       text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    import pandas as pd

    a, b = (pd.read_parquet(tmp_path / x / "results.parquet") for x in ("a", "b"))
    assert len(a) > 0
    pd.testing.assert_frame_equal(a, b)
