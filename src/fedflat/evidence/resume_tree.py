"""A long study resumes on any machine from its committed evidence (`python -m fedflat.evidence worktree STUDY DEST`).

A study runs from its own worktree at one clean commit (docs/reproducibility.md), and its run directories stay out
of git, so a new machine has only what the last export committed. Re-creating the worktree at that commit is not
enough: the commit's own `results/evidence/` predates the records made from it, so every recorded run would run
again (hours of screen runs for the leaderboard). This places the study's committed records where that commit's code
reads them (fedflat's `recorded`: every `results/evidence/*/runs.csv`, the later file in name order winning a run id
that two hold), as an untracked file, so `git describe --dirty` still names the clean commit and every new record
does too. A record stands in for its run only in the study's numerics (portable: a portable record of the same
numerics version at a clean commit), so a legacy record never replaces a run.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from ..core.errors import ConfigError
from ..core.util.io import copy_file
from .export import EVIDENCE
from .legacy import reason

PREFIX = "zz_resumed_"  # sorts after every study folder, so its record wins a run id an older file also holds


def study_commit(study: str, root: Path = EVIDENCE) -> tuple[str, int]:
    """(the one clean commit, the number of records) of a study's committed evidence, legacy records aside; a
    study of several commits, or of none that can be regenerated, is refused in one line."""
    import pandas as pd

    path = Path(root) / study / "runs.csv"
    if not path.exists():
        raise ConfigError(f"worktree: {path} not found: no committed evidence of study {study!r}")
    runs = pd.read_csv(path, dtype=str, keep_default_na=False)
    usable = [r for r in runs.to_dict("records") if reason(r) is None]
    commits = sorted({r["git_commit"] for r in usable})
    if len(commits) != 1:
        raise ConfigError(f"worktree: {path} holds regenerable records of {len(commits)} commits "
                          f"({', '.join(commits) or 'none'}): a study resumes at exactly one")
    return commits[0], len(usable)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def seed_worktree(study: str, dest: Path, root: Path = EVIDENCE, repo: Path = Path(".")) -> tuple[str, Path, int]:
    """Check out the study's commit at `dest` (a new worktree of `repo`) and place its committed records there;
    returns (commit, the placed runs.csv, records). Refuses, before it writes anything, an existing `dest`, a
    commit this clone lacks, or a commit whose own evidence folders would sort after the placed one."""
    commit, n = study_commit(study, root)
    dest = Path(dest)
    if dest.exists():
        raise ConfigError(f"worktree: {dest} exists; name a new directory (nothing there is touched)")
    if _git(repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode:
        raise ConfigError(f"worktree: commit {commit} is not in this clone's history (a shallow clone? "
                          "`git fetch --unshallow`)")
    folder = PREFIX + study
    tracked = _git(repo, "ls-tree", "--name-only", f"{commit}:results/evidence").stdout.split()
    if any(name >= folder for name in tracked):
        raise ConfigError(f"worktree: commit {commit} tracks results/evidence/{max(tracked)}, which its code would "
                          f"read after {folder}")
    done = _git(repo, "worktree", "add", "--detach", str(dest), commit)
    if done.returncode:
        raise ConfigError(f"worktree: git worktree add failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    placed = dest / "results" / "evidence" / folder / "runs.csv"
    copy_file(Path(root) / study / "runs.csv", placed)
    head = _git(dest, "rev-parse", "HEAD").stdout.strip()
    described = _git(dest, "describe", "--always", "--dirty", "--abbrev=12").stdout.strip()  # what records name
    if described.endswith("-dirty") or not head.startswith(commit):
        raise ConfigError(f"worktree: {dest} is at {head[:12]} ({described}), not the clean {commit}")
    return commit, placed, n
