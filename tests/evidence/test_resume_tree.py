"""`python -m fedflat.evidence worktree`: a study resumes on a new machine at the one commit of its records, with the
records placed where that commit's code reads them and the tree still clean (evidence/resume_tree.py)."""
import subprocess
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.__main__ import main
from fedflat.evidence.resume_tree import PREFIX, seed_worktree, study_commit

HEADER = "run_id,git_commit,numerics,numerics_version,legacy,final_acc\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A clone with two commits: the study's (tracking an older evidence folder, as a study's commit does) and a
    later one."""
    r = tmp_path / "repo"
    (r / "results/evidence/leaderboard").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(r))
    for k, v in (("user.email", "t@t"), ("user.name", "t")):
        _git(r, "config", k, v)
    (r / "results/evidence/leaderboard/runs.csv").write_text(HEADER + "a,old-dirty,,,,1\n")
    (r / "config").mkdir()
    (r / "config/lb.yaml").write_text("study: lb\n")
    _git(r, "add", ".")
    _git(r, "commit", "-qm", "study commit")
    first = _git(r, "rev-parse", "--short=12", "HEAD")
    (r / "later.txt").write_text("x")
    _git(r, "add", ".")
    _git(r, "commit", "-qm", "later")
    return r, first


def _evidence(tmp_path, rows: list[str], study="lb") -> Path:
    root = tmp_path / "evidence"
    (root / study).mkdir(parents=True)
    (root / study / "runs.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    return root


def test_the_worktree_is_the_records_clean_commit_with_the_records_placed_last(tmp_path, repo):
    r, first = repo
    root = _evidence(tmp_path, [f"x,{first},portable,1,,80.0", f"y,{first},portable,1,,81.0",
                                "z,ffffffffffff-dirty,portable,1,made from a modified tree,1.0"])
    dest = tmp_path / "tree"
    commit, placed, n = seed_worktree("lb", dest, root, repo=r)
    assert (commit, n) == (first, 2)  # the legacy record neither counts nor names a commit
    assert _git(dest, "rev-parse", "--short=12", "HEAD") == first
    assert _git(dest, "describe", "--always", "--dirty", "--abbrev=12") == first  # clean: new records name it
    assert placed == dest / "results/evidence" / (PREFIX + "lb") / "runs.csv"
    assert placed.read_text() == (root / "lb/runs.csv").read_text()
    # the code reads every results/evidence/*/runs.csv, the later in name order winning a run id: the placed one last
    assert sorted(p.parent.name for p in (dest / "results/evidence").glob("*/runs.csv"))[-1] == PREFIX + "lb"


@pytest.mark.parametrize("rows, words", [
    (["x,aaaaaaaaaaaa,portable,1,,1", "y,bbbbbbbbbbbb,portable,1,,1"], "2 commits (aaaaaaaaaaaa, bbbbbbbbbbbb)"),
    (["x,aaaaaaaaaaaa-dirty,portable,1,,1"], "0 commits (none)"),
    (["x,aaaaaaaaaaaa,,,,1"], "0 commits (none)"),  # no numerics fields: cannot be regenerated
])
def test_a_study_of_other_than_one_clean_commit_is_refused(tmp_path, rows, words):
    import re

    with pytest.raises(ConfigError, match="lb/runs.csv holds regenerable records of " + re.escape(words)):
        study_commit("lb", _evidence(tmp_path, rows))


def test_refusals_come_before_anything_is_written(tmp_path, repo):
    r, first = repo
    root = _evidence(tmp_path, [f"x,{first},portable,1,,80.0"])
    dest = tmp_path / "tree"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep")
    with pytest.raises(ConfigError, match="exists; name a new directory"):
        seed_worktree("lb", dest, root, repo=r)
    assert [p.name for p in dest.iterdir()] == ["mine.txt"]
    missing = _evidence(tmp_path / "other", ["x,0123456789ab,portable,1,,80.0"])
    with pytest.raises(ConfigError, match="commit 0123456789ab is not in this clone's history"):
        seed_worktree("lb", tmp_path / "new", missing, repo=r)
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigError, match="no committed evidence of study 'nosuch'"):
        seed_worktree("nosuch", tmp_path / "new", root, repo=r)


def test_a_commit_whose_own_folders_sort_last_is_refused(tmp_path, repo):
    r, _ = repo
    (r / "results/evidence/zzzz").mkdir()
    (r / "results/evidence/zzzz/runs.csv").write_text(HEADER)
    _git(r, "add", ".")
    _git(r, "commit", "-qm", "a folder after the placed one")
    head = _git(r, "rev-parse", "--short=12", "HEAD")
    root = _evidence(tmp_path, [f"x,{head},portable,1,,80.0"])
    with pytest.raises(ConfigError, match="tracks results/evidence/zzzz"):
        seed_worktree("lb", tmp_path / "tree", root, repo=r)
    assert not (tmp_path / "tree").exists()


def test_the_command_prints_the_resume_command_with_quoted_paths(tmp_path, repo, monkeypatch, capsys):
    r, first = repo
    _evidence(r / "results", [f"x,{first},portable,1,,80.0"])  # results/evidence/lb/, read from the clone's root
    monkeypatch.chdir(r)
    dest = tmp_path / "a tree"
    assert main(["worktree", "lb", str(dest), "--data-root", str(tmp_path / "my data")]) == 0
    out = capsys.readouterr().out
    assert f"worktree {dest} at commit {first}; 1 committed records placed" in out
    assert f"cd '{dest}' && " in out and "--configfile config/lb.yaml" in out
    assert f"data_root='{tmp_path / 'my data'}'" in out
    assert main(["worktree", "lb", str(dest)]) == 2  # a second call refuses the existing tree
    assert "exists; name a new directory" in capsys.readouterr().err
