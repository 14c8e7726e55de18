"""The README's Python examples run as doctests, and its quick-start commands stay true."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_examples_run() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    examples = [b for b in blocks if b.lstrip().startswith(">>>")]
    assert examples, "README has no doctest examples"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(examples):
        runner.run(parser.get_doctest(block, {}, f"README[{i}]", "README.md", 0))
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_readme_quick_start_matches_ci() -> None:
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1).splitlines()
    assert first[0].startswith("bash .ci/setup && .venv/bin/marketsim run")
    assert first[1].startswith(".venv/bin/python -m pytest -W error::FutureWarning")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/setup" in ci and ".venv/bin/python -m pytest -W error::FutureWarning" in ci
