"""The commit a results file records (marketsim.analysis.engine.studies.git_commit): the hash, marked when
tracked files differ from it, and a stated default outside a checkout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from marketsim.analysis.engine.studies import git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_a_clean_checkout_gives_its_hash_and_a_changed_tracked_file_says_so(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "f.txt").write_text("a\n")
    _git(tmp_path, "add", "f.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert git_commit(tmp_path) == head
    assert git_commit(tmp_path, short=True) == _git(tmp_path, "rev-parse", "--short", "HEAD")
    (tmp_path / "untracked.txt").write_text("results of a scratch run\n")  # untracked files do not count
    assert git_commit(tmp_path) == head
    (tmp_path / "f.txt").write_text("b\n")
    assert git_commit(tmp_path) == head + " +uncommitted changes"


def test_outside_a_checkout_the_default_is_returned(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == ""
    assert git_commit(tmp_path, default="unknown") == "unknown"
