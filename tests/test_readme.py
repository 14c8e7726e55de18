"""The Python examples of the README and the docs pages run as doctests, and the README's quick-start
commands stay true."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_docs_examples_run() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    found = []
    for page in pages:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
        for i, block in enumerate(b for b in blocks if b.lstrip().startswith(">>>")):
            name = f"{page.relative_to(ROOT)}[{i}]"
            found.append(name)
            runner.run(parser.get_doctest(block, {}, name, str(page), 0))
    assert len(found) >= 3, f"the README and docs pages lost their doctest examples: {found}"
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_readme_quick_start_matches_ci() -> None:
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1).splitlines()
    assert first[0].startswith("bash .ci/setup && .venv/bin/marketsim run")
    assert first[1].startswith(".venv/bin/python -m pytest -W error::FutureWarning")
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = first[1].split("#")[0].strip()  # the README's test command is the one CI runs
    assert "bash .ci/setup" in ci and f"\n{test_command} -q\n" in ci
