"""Figures in README.md and docs/*.md come from committed results files (benchmarks/figures.py).

The guards: every figure marker of README.md and docs/ shows what its results file gives today
(the same check ``mkdocs build --strict`` makes through docs/_hooks/hooks.py); no page outside the
shrinking ``PENDING`` list states a number outside a marker; and the engine itself reads JSON, CSV,
markdown tables and TOML by the documented rules and refuses what it cannot read, with a message
naming the figure."""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


F = _load("figures_under_test", ROOT / "benchmarks" / "figures.py")


# ------------------------------------------------------------------------------ the project's pages


def test_readme_and_docs_figures_agree_with_their_results_files() -> None:
    """Every figure marker of README.md and docs/**/*.md shows exactly what its committed source gives.
    Refresh after a benchmark re-run with ``python benchmarks/figures.py --write``."""
    problems = F.check(F.pages())
    assert not problems, "figures that disagree with their results files:\n" + "\n".join(problems)


def test_no_hand_typed_figures_outside_pending_pages() -> None:
    """README.md and the converted docs pages state no ratio, percentage, duration, size, count
    triple or decimal outside a figure marker (versions, paper quotes, defaults and confidence levels
    excepted; definitions go in ``<!--nofig REASON-->`` regions)."""
    found = []
    for path in F.pages():
        page = path.relative_to(ROOT).as_posix()
        if page not in F.PENDING:
            found += F.scan(path.read_text(encoding="utf-8"), page)
    assert not found, "numbers typed by hand (make them figures: docs/figures.md):\n" + "\n".join(found)


def test_pending_list_only_shrinks_to_real_pages() -> None:
    """Each page of ``PENDING`` exists and still has hand-typed figures: a converted page leaves the list."""
    pages = {p.relative_to(ROOT).as_posix(): p for p in F.pages()}
    missing = sorted(set(F.PENDING) - set(pages))
    assert not missing, f"PENDING names pages that do not exist: {missing}"
    clean = sorted(p for p in F.PENDING if not F.scan(pages[p].read_text(encoding="utf-8"), p))
    assert not clean, f"these pages have no hand-typed figure left: remove them from PENDING: {clean}"


# ----------------------------------------------------------------------------------- the engine


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A miniature repository: results files of every kind and a scenario."""
    res = tmp_path / "benchmarks" / "results"
    (res / "study").mkdir(parents=True)
    (res / "speed.json").write_text(
        '{"pairs": [{"ratio": 13.48, "cpu": 4.5}, {"ratio": 13.58, "cpu": 4.8}, {"ratio": 11.96, "cpu": 5.2}],'
        ' "runs": {"gavel-max-min-perf": {"jct": 165660.06}}, "n": 1301}'
    )
    (res / "study" / "headlines.csv").write_text(
        "id,panel,verdict,ours,paper\n"
        "a,0,reproduced,1.046,\n"
        "b,0,not reproduced,0.987,0.9\n"
        "c,1,reproduced,0.8586,\n"
        "d,1,direction only,0.945,0.81\n"
    )
    (res / "scale.md").write_text(
        "# Scale\n\n## 1. Small\n\n| jobs | CPU s |\n|---|---|\n| 1,000 | **2.9** |\n\n"
        "## 2. Large\n\n| jobs | policy | CPU s |\n|---|---|---|\n| 100,000 | maxmin | 43.2 |\n"
        "| 100,000 | gavel | 471.6 |\n\nMedian ratio: **13.5x**.\n"
        "\n## Smallest\n\n| a |\n|---|\n| 1 |\n\n### Small\n\n| a |\n|---|\n| 2 |\n"
    )
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "trace.toml").write_text("[workload]\narrival_scale = 0.125\n")
    return tmp_path


@pytest.mark.parametrize(
    ("source", "expr", "spec", "want"),
    [
        ("speed.json", "median(pairs.ratio)", ".1f", "13.5"),  # a key of every element of a list
        ("speed.json", "min(pairs.ratio)", ".1f", "12.0"),
        ("speed.json", "pairs[0].cpu / pairs[2].cpu", ".3f", "0.865"),
        ("speed.json", 'runs["gavel-max-min-perf"].jct', ",.0f", "165,660"),
        ("speed.json", "n", ",d", "1,301"),
        ("speed.json", "data.n", "", "1301"),
        ("speed.json", "max(each([[1, 5], [3, 4]], 0))", "", "3"),
        ("speed.json", "ci95([1, 2, 3])[1]", ".4f", "4.4841"),  # 2 + t(0.975, 2) * 1 / sqrt(3)
        ("speed.json", 'mean_ci([1, 2, 3], ".2f")', "", "2.00 [-0.48, 4.48]"),
        ("speed.json", 'mean_ci_cols([{"a": [1, 2, 3], "b": 7}], {"a": ".1f"})[0].a', "", "2.0 [-0.5, 4.5]"),
        ("study/headlines.csv", 'len(where(verdict="reproduced"))', "", "2"),
        ("study/headlines.csv", 'count(where(panel=0).verdict, "not reproduced")', "", "1"),
        ("study/headlines.csv", 'row(id="d").ours - 1', "+.1%", "-5.5%"),
        ("study/headlines.csv", 'row({"id": "b"}).paper', ".2f", "0.90"),
        ("study/headlines.csv", "mean(rows.ours)", ".3f", "0.959"),
        ("study/headlines.csv", "len(unique(rows.panel))", "", "2"),
        ("study/headlines.csv", 'rows.without(verdict="reproduced")[1].id', "", "d"),
        ("speed.json", "max(means([[1, 2], [5, 7]]))", "", "6.0"),
        ("study/headlines.csv", r'match(r"(\d+) reproduced", "of 12 reproduced") + 1', "", "13"),
        ("scale.md", 'table("1. Small")[0]["CPU s"]', ".1f", "2.9"),  # '**' stripped, number parsed
        ("scale.md", "table(1).row(policy=\"gavel\")['CPU s']", ".0f", "472"),
        ("scale.md", "table(1)[0].jobs", ",d", "100,000"),
        ("scale.md", 'table("Small")[0].a', "", "2"),  # the exact heading before a containing one
        ("scale.md", 'table("Smallest")[0].a', "", "1"),
        ("scale.md", r'grep(r"Median ratio: \*\*([\d.]+)x")', ".1f", "13.5"),
        ("scale.md", 'num("about 13.5x")', "", "13.5"),
        ("/scenarios/trace.toml", "1 / workload.arrival_scale", ".0f", "8"),
    ],
)
def test_expressions_read_each_kind_of_source(repo: Path, source: str, expr: str, spec: str, want: str) -> None:
    assert F.fmt(F.evaluate(source, expr, repo), spec) == want


@pytest.mark.parametrize(
    ("source", "expr", "message"),
    [
        ("missing.json", "n", "no such file"),
        ("../../../etc/passwd", "text", "outside the repository"),
        ("speed.json", "pairz", "unknown name 'pairz'"),
        ("speed.json", "runs.gavel", "no key 'gavel' (keys: gavel-max-min-perf)"),
        ("speed.json", "pairs[3]", "index 3 out of range"),
        ("speed.json", "median(pairs)", "needs numbers"),
        ("speed.json", "pairs.ratio", "reduce it to one value"),
        ("study/headlines.csv", 'row(verdict="reproduced")', "2 rows match, expected exactly 1"),
        ("study/headlines.csv", 'where(verdikt="x")', "no column 'verdikt'"),
        ("study/headlines.csv", 'row(id="a").paper', "empty value"),
        ("study/headlines.csv", '__import__("os")', "unknown function '__import__'"),
        ("study/headlines.csv", "rows[0].__class__", "no key '__class__'"),
        ("study/headlines.csv", "[x for x in rows]", "is not allowed"),
        ("scale.md", "table(5)", "the source has 4 tables"),
        ("speed.json", "n +", "does not parse"),
        ("scale.md", r'grep("\d+")', "does not parse"),  # an invalid escape: write r"\d+"
    ],
)
def test_unreadable_figures_are_errors_naming_what_is_missing(repo: Path, source: str, expr: str, message: str) -> None:
    with pytest.raises(F.FigureError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        F.fmt(F.evaluate(source, expr, repo), "")


@pytest.mark.parametrize(
    ("df", "q"), [(1, 12.706204736), (2, 4.302652730), (4, 2.776445105), (19, 2.093024054), (1000, 1.962339)]
)
def test_t_quantile_matches_the_tables(df: int, q: float) -> None:
    """The 97.5% t quantile behind ci95 (stdlib only, so the docs build never imports scipy)."""
    assert F.t_quantile(0.975, df) == pytest.approx(q, rel=1e-7)
    assert F.t_quantile(0.025, df) == pytest.approx(-q, rel=1e-7)


def test_render_fills_checks_and_strips_markers(repo: Path) -> None:
    text = (
        "Ours is <!--fig speed.json median(pairs.ratio):.1f-->13.5<!--/fig-->x faster and\n"
        "| study | reproduced |\n|---|---|\n"
        '| a | <!--fig study/headlines.csv len(where(verdict="reproduced"))-->3<!--/fig--> |\n'
    )
    written, errors, diffs = F.render(text, "page.md", strip=False, root=repo)
    assert errors == []
    assert diffs == ["page.md:4: shows '3', study/headlines.csv gives '2' (len(where(verdict=\"reproduced\")))"]
    assert '<!--fig study/headlines.csv len(where(verdict="reproduced"))-->2<!--/fig-->' in written
    assert F.render(written, "page.md", strip=False, root=repo)[1:] == ([], [])  # --write is a fixed point
    site, errors, diffs = F.render(written, "page.md", strip=True, root=repo)
    assert (errors, diffs) == ([], [])
    assert site == "Ours is 13.5x faster and\n| study | reproduced |\n|---|---|\n| a | 2 |\n"
    region = "a <!--nofig a limit-->1e9 s<!--/nofig--> b\n<!--nofig a table-->\n\n| x |\n|---|\n| 1.5 |\n\n"
    region += "<!--/nofig-->\nc\n"
    assert F.render(region, "p.md", strip=True, root=repo)[0] == "a 1e9 s b\n\n| x |\n|---|\n| 1.5 |\n\nc\n"


def test_figtable_renders_a_results_table_and_checks_it(repo: Path) -> None:
    """A whole table from a results file: written, checked and put on the site like a figure."""
    spec = 'study/headlines.csv select(where(panel=1), "id", {"ours (x)": "ours"}, "verdict"):.2f'
    text = f"Rows:\n\n<!--figtable {spec}-->\n| stale |\n<!--/figtable-->\n\nafter\n"
    written, errors, diffs = F.render(text, "p.md", strip=False, root=repo)
    table = "| id | ours (x) | verdict |\n|---|---|---|\n| c | 0.86 | reproduced |\n| d | 0.94 | direction only |"
    assert errors == [] and len(diffs) == 1 and diffs[0].startswith("p.md:3: shows '| stale |'")
    assert written == f"Rows:\n\n<!--figtable {spec}-->\n\n{table}\n\n<!--/figtable-->\n\nafter\n"
    assert F.render(written, "p.md", strip=False, root=repo)[1:] == ([], [])
    assert F.render(written, "p.md", strip=True, root=repo)[0] == f"Rows:\n\n\n{table}\n\n\nafter\n"
    assert F.scan(written, "p.md") == []  # a table read from a file is no hand-typed figure
    fmt_spec = 'study/headlines.csv format_cols(select(where(id="b"), "ours", "paper"), {"ours": ".1%"})'
    assert F.md_table(F.evaluate("study/headlines.csv", fmt_spec.split(" ", 1)[1], repo), "") == (
        "| ours | paper |\n|---|---|\n| 98.7% | 0.9 |"
    )
    _, errors = F.parse("<!--figtable a b-->\n| x |\n", "q.md")
    assert errors == ["q.md:1: opening <!--figtable without its pair (each on a line of its own)"]
    with pytest.raises(F.FigureError, match="non-empty list of rows"):
        F.md_table([], "")
    with pytest.raises(F.FigureError, match="select\\(\\): no column 'x'"):
        F.evaluate("study/headlines.csv", 'select(rows, "x")', repo)


def test_markers_that_github_would_mangle_are_refused(repo: Path) -> None:
    text = (
        "<!--fig speed.json n-->1301<!--/fig--> jobs\n"  # opens a line: an HTML block on GitHub
        "* <!--fig speed.json n-->1301<!--/fig--> jobs\n"  # opens a list item: same
        "```\nx = <!--fig speed.json n-->1301<!--/fig-->\n```\n"  # in code: literal text, not a figure
        "a <!--fig speed.json n-->1301\n<!--/fig-->\n"  # split over two lines
        "b <!--fig speed.json-->1<!--/fig-->\n"  # no expression
    )
    _, errors = F.parse(text, "p.md")
    assert any("p.md:1: a figure marker opens the line" in e for e in errors)
    assert any("p.md:2: a figure marker opens the line" in e for e in errors)
    assert not any(e.startswith("p.md:4:") for e in errors)
    assert any("p.md:6: opening <!--fig without its pair" in e for e in errors)
    assert any("p.md:7: closing <!--/fig--> without its pair" in e for e in errors)
    assert any("p.md:8: figure 'speed.json': expected 'SOURCE EXPRESSION[:FORMAT]'" in e for e in errors)
    assert len(F.parse("see | <!--fig speed.json n-->1301<!--/fig--> | and x <!--fig a b-->1<!--/fig-->", "q")[1]) == 0
    literal = "write `<!--fig speed.json n-->7<!--/fig-->` and\n```\na <!--fig speed.json n-->7<!--/fig-->\n```\n"
    assert F.parse(literal, "q") == ([], [])
    assert F.render(literal, "q", strip=True, root=repo) == (literal, [], [])


def test_nofig_tags_that_open_a_line_of_text_are_refused() -> None:
    """A ``<!--nofig-->`` tag before text at the start of a line turns the line into raw HTML on GitHub
    (an HTML comment can interrupt a paragraph); alone on its line (around a table) it is a block."""
    text = (
        "a paragraph\n"
        "  <!--nofig input-->1e-7<!--/nofig--> GPUs\n"  # opens a continuation line
        "and 1% of <!--nofig input-->f<!--/nofig-->\n"  # inside the line: fine
        "\n<!--nofig example-->\n\n| x |\n|---|\n| 1.5 |\n\n<!--/nofig-->\n"  # blocks of their own: fine
        "* <!--nofig input-->2.5<!--/nofig--> s\n"  # opens a list item
        "`<!--nofig x-->1.0<!--/nofig-->` in code\n"  # literal
    )
    errors = F.parse(text, "p.md")[1]
    assert [e.split(":")[1] for e in errors] == ["2", "12"], errors
    assert all("a nofig tag opens a line of text" in e for e in errors)


def test_write_joins_continuation_lines_that_open_with_a_marker() -> None:
    text = (
        "A paragraph of\n  <!--fig a b-->1<!--/fig-->x and\n<!--fig a b-->2<!--/fig--> more.\n\n"
        "<!--fig a b-->3<!--/fig--> opens a paragraph\n# Head\n<!--fig a b-->4<!--/fig--> after a heading\n"
        "```\ncode\n<!--fig a b-->5<!--/fig-->\n```\n"
    )
    assert F.join_opening_markers(text) == (
        "A paragraph of <!--fig a b-->1<!--/fig-->x and <!--fig a b-->2<!--/fig--> more.\n\n"
        "<!--fig a b-->3<!--/fig--> opens a paragraph\n# Head\n<!--fig a b-->4<!--/fig--> after a heading\n"
        "```\ncode\n<!--fig a b-->5<!--/fig-->\n```\n"
    )


def test_format_split_takes_the_last_colon_that_leaves_an_expression() -> None:
    assert F.split_spec('study/h.csv row(id="a:b").ours:+.1%') == ("study/h.csv", 'row(id="a:b").ours', "+.1%")
    assert F.split_spec('study/h.csv row(id="a:b").ours') == ("study/h.csv", 'row(id="a:b").ours', "")


def test_check_reports_uncommitted_sources(repo: Path) -> None:
    """A figure must come from a committed file: an untracked results file is reported."""
    page = repo / "README.md"
    page.write_text("It is <!--fig speed.json n:,d-->1,301<!--/fig--> jobs.\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    assert F.check([page], repo) == ["README.md:1: source benchmarks/results/speed.json is not committed (git add it)"]
    subprocess.run([*git, "add", "benchmarks/results/speed.json"], cwd=repo, check=True)
    assert F.check([page], repo) == []


def test_write_command_refreshes_a_stale_figure(repo: Path) -> None:
    page = repo / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("Median <!--fig speed.json median(pairs.ratio):.1f-->12.0<!--/fig-->x.\n")
    assert F.main(["--check", str(page)], root=repo) == 1
    assert F.main(["--write", str(page)], root=repo) == 0
    assert F.main(["--check", str(page)], root=repo) == 0  # no git checkout here: commits are not checked
    assert page.read_text() == "Median <!--fig speed.json median(pairs.ratio):.1f-->13.5<!--/fig-->x.\n"


def test_scan_command_skips_pending_pages_only_when_no_page_is_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = repo / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("It took 4.5 s.\n")
    (repo / "README.md").write_text("Nothing measured.\n")
    monkeypatch.setattr(F, "PENDING", frozenset({"docs/p.md"}))
    assert F.main(["--scan"], root=repo) == 0  # the pending page is left out of the whole-repository scan
    assert F.main(["--scan", str(page)], root=repo) == 1  # but a page named on the command line is scanned
    assert "docs/p.md:1: '4.5 s'" in capsys.readouterr().err


def test_eval_prints_the_value_and_the_marker(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert F.main(["--eval", "speed.json median(pairs.ratio):.1f"], root=repo) == 0
    assert capsys.readouterr().out == "13.5\n<!--fig speed.json median(pairs.ratio):.1f-->13.5<!--/fig-->\n"
    assert F.main(["--eval", "speed.json pairz"], root=repo) == 1
    assert "unknown name 'pairz'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ the scan


def test_scan_flags_typed_figures_and_passes_the_allowed_contexts() -> None:
    text = (
        "Ours is 13.5x faster and 4.3% better: 13 / 4 / 17 reproduced, 472 s CPU, 330 MB, in 18 of 60 cells, "
        "a 0.945 ratio and 7.5e-10 error.\n"
        "Python >= 3.12, Mesa 3.5, CC BY 4.0; the paper reports +20% (paper 0.81x); 95% CI; default 1e-3; "
        "<!--fig a.json n-->13.5<!--/fig-->x; `--rate 0.5`; [link](v1.2.md); 20 seeds on 2 cores.\n"
        "```bash\nrun --factor 1.5   # 3.2x\n```\n"
        "<!--nofig input limits, defined in the code-->| limit | 1e9 s |<!--/nofig-->\n"
        "<!--nofig -->2.5x<!--/nofig-->\n"
    )
    found = F.scan(text, "p.md")
    flagged = [p.split(": ", 1)[1].split(" in: ")[0] for p in found if p.startswith("p.md:1:")]
    assert flagged == [
        "'13.5x'",
        "'4.3%'",
        "'13 / 4 / 17'",
        "'472 s'",
        "'330 MB'",
        "'18 of 60'",
        "'0.945'",
        "'7.5e-10'",
    ]
    assert not [p for p in found if p.startswith(("p.md:2:", "p.md:3:", "p.md:4:", "p.md:5:", "p.md:6:"))]
    assert "p.md:7: <!--nofig--> without a reason" in found


# ------------------------------------------------------------------------------- the mkdocs hook


def test_mkdocs_hook_fills_figures_and_fails_on_a_stale_one(
    repo: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The site's pages get the values; a stale or unreadable figure is logged as an error under the
    ``mkdocs`` logger (``--strict`` fails, even with ``--quiet``, which drops warnings)."""
    hooks = _load("docs_hooks_figures", ROOT / "docs" / "_hooks" / "hooks.py")
    (repo / "docs").mkdir()
    config = {"docs_dir": str(repo / "docs")}
    page = SimpleNamespace(file=SimpleNamespace(src_path="bench.md"))
    good = "Ours is <!--fig speed.json median(pairs.ratio):.1f-->13.5<!--/fig-->x faster.\n"
    with caplog.at_level(logging.INFO, logger="mkdocs"):
        assert hooks.on_page_markdown(good, page, config, None) == "Ours is 13.5x faster.\n"
        assert not caplog.records
        stale = good.replace("13.5<", "12.0<") + "See <!--fig gone.json n-->3<!--/fig-->.\n"
        assert hooks.on_page_markdown(stale, page, config, None) == "Ours is 13.5x faster.\nSee 3.\n"
    messages = [r.getMessage() for r in caplog.records]
    assert all(r.name.startswith("mkdocs.") and r.levelno == logging.ERROR for r in caplog.records)
    assert any("docs/bench.md:1: shows '12.0', speed.json gives '13.5'" in m for m in messages)
    assert any("docs/bench.md:2: gone.json 'n': source 'gone.json': no such file" in m for m in messages)
