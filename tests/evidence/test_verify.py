"""`python -m fedflat.evidence verify` (evidence/verify.py): a committed record re-run from scratch comes back
identical; an edited record is reported within 0.1 point or different, with the fields; the spec of a run the
study no longer expands is rebuilt from the record only when it hashes to the record's settings hash."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import fedflat
from fedflat.core.errors import ConfigError
from fedflat.pipeline.build import build
from fedflat.evidence.export import export_study
from fedflat.evidence.verify import Rerunner, compare, pick, spec_from_fields, spec_of, verify
from fedflat.pipeline.study import load_study

REPO = Path(__file__).resolve().parents[2]
CONFIG = {"study": "vtiny", "scale": "tiny", "data_root": "data",
          "training": {"num_clients": 4, "participation": 0.5, "rounds": 3, "local_steps": 2, "batch_size": 16,
                       "eval_every": 1},
          "experiments": {"e": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["dir0.5"], "seeds": [0],
                                "algorithms": ["fedsam"]}},
          "tables": {"acc": {"experiment": "e"}}}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """One tiny run made in-process and exported with its config snapshot, as a session commits it."""
    root = tmp_path_factory.mktemp("v")
    (root / "config").mkdir()
    (root / "config/vtiny.yaml").write_text(yaml.safe_dump(CONFIG))
    study = load_study(CONFIG)
    import os

    old = os.getcwd()
    os.chdir(root)
    try:
        build(study, "acc", root)
        export_study(study, root=root / "results/evidence", keep_legacy=True, config_path="config/vtiny.yaml")
    finally:
        os.chdir(old)
    return root


def _record(root):
    return pd.read_csv(root / "results/evidence/vtiny/runs.csv", dtype=str, keep_default_na=False).iloc[0].to_dict()


def test_compare_at_the_precision_a_record_keeps():
    rec = {"status": "completed", "rounds_completed": "3", "final_acc": "80.1234", "last10_acc": "80", "best_acc": "81",
           "final_loss": "0.5", "flatness_mean": "1", "lambda_max": "", "trace": ""}
    same = {**rec, "final_acc": 80.12341, "lambda_max": 5.0}  # beyond 6 digits; no Hessian recorded: not compared
    assert compare(rec, same)[0] == "identical"
    assert compare(rec, {**rec, "final_acc": 80.2})[0] == "within 0.1"
    assert compare(rec, {**rec, "final_acc": 80.3})[0] == "different"
    verdict, differs, _ = compare(rec, {**rec, "status": "diverged", "final_acc": ""})
    assert verdict == "different" and set(differs) == {"status", "final_acc"}
    assert compare(rec, {**rec, "final_loss": 0.6})[0] == "within 0.1"  # accuracies equal, the loss moved


def test_a_record_re_runs_identical_and_an_edited_one_does_not(evidence, tmp_path):
    root = evidence / "results/evidence"
    rec = _record(evidence)
    chosen = pick([rec["run_id"]], None, None, 0, root)
    import os

    old = os.getcwd()
    os.chdir(evidence)  # the study's config is found by its snapshot, from the repository root
    try:
        out = verify(chosen, tmp_path / "s", Path("data"), at="head", root=root, progress=lambda s: None)
        assert [o.verdict for o in out] == ["identical"], out
        edited = copy.deepcopy(chosen)
        edited[0][1]["final_acc"] = f"{float(rec['final_acc']) + 0.05:.6g}"
        edited[0][1]["last10_acc"] = f"{float(rec['last10_acc']) + 2:.6g}"
        out = verify(edited, tmp_path / "s2", Path("data"), at="head", root=root, progress=lambda s: None)
        assert out[0].verdict == "different" and set(out[0].differs) == {"final_acc", "last10_acc"}
        assert out[0].max_acc_diff == pytest.approx(2.0, abs=1e-3)
    finally:
        os.chdir(old)


def test_a_spec_is_rebuilt_from_a_record_only_when_it_hashes_to_the_settings_hash(evidence):
    rec = _record(evidence)
    spec = spec_from_fields(rec, CONFIG)
    assert spec is not None and spec.run_id() == rec["run_id"]
    assert spec_from_fields({**rec, "lr": "0.07"}, CONFIG) is None  # a setting that is not the run's
    assert spec_from_fields({**rec, "hparams": '{"rho": 0.5}'}, CONFIG) is None


def test_a_modified_tree_is_re_run_at_its_base_commit_and_says_so(tmp_path):
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    r = Rerunner(tmp_path, Path("data"), at="record", repo=REPO)
    src, commit, note = r.code({"git_commit": f"{head}-dirty"})
    assert commit in (head, f"{head}") and "modified tree" in note and "base commit" in note
    with pytest.raises(Exception, match="cannot check out commit"):
        r.code({"git_commit": "0000000000ff"})
    for tree in tmp_path.glob("code-*"):
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)


def test_a_shallow_clone_stands_in_for_a_missing_commit_only_at_the_records_numerics_version(tmp_path):
    """--at available (ci/verify_cross_machine.sh): a commit the clone lacks is re-run with this checkout when the
    record's numerics version is today's, and refused otherwise; --at record refuses it either way."""
    from fedflat.core.util.numerics import NUMERICS_VERSION

    here = Path(fedflat.__file__).resolve().parent.parent
    missing = {"git_commit": "0000000000ff", "numerics_version": str(NUMERICS_VERSION)}
    src, _, note = Rerunner(tmp_path, Path("data"), at="available", repo=REPO).code(missing)
    assert src == here and "0000000000ff not in this clone's history" in note
    with pytest.raises(ConfigError, match=r"numerics version \(\d+\) is not the record's \(0\)"):
        Rerunner(tmp_path, Path("data"), at="available", repo=REPO).code({**missing, "numerics_version": "0"})
    with pytest.raises(ConfigError, match="cannot check out commit"):
        Rerunner(tmp_path, Path("data"), at="record", repo=REPO).code(missing)
    assert not list(tmp_path.glob("code-*"))


def test_verify_names_what_is_missing_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedflat.evidence", "verify"], capture_output=True, text=True,
                         cwd=REPO)
    assert out.returncode == 2 and "name run ids, or --sample K" in out.stderr
    out = subprocess.run([sys.executable, "-m", "fedflat.evidence", "verify", "no/such/run"], capture_output=True,
                         text=True, cwd=REPO)
    assert out.returncode == 2 and "no committed record of run 'no/such/run'" in out.stderr


def test_the_reproducibility_page_counts_each_committed_report_s_verdicts(tmp_path):
    from fedflat.evidence.pages import Context
    from fedflat.evidence.verify import reports_block

    ctx = Context(root=tmp_path)
    assert reports_block(ctx).startswith("No verification report committed yet")
    folder = tmp_path / "results/evidence/verification"
    folder.mkdir(parents=True)
    pd.DataFrame([{"study": "s", "run_id": "a", "verdict": "identical", "code": "c", "max_acc_diff": 0.0},
                  {"study": "s", "run_id": "b", "verdict": "different", "code": "c", "max_acc_diff": 4.42},
                  {"study": "s", "run_id": "c", "verdict": "different", "code": "c", "max_acc_diff": 0.2},
                  {"study": "s", "run_id": "d", "verdict": "not re-run", "code": "", "max_acc_diff": 9.0}]
                 ).to_csv(folder / "s.csv", index=False)
    (folder / "s.md").write_text("report")
    rows = reports_block(ctx).splitlines()
    # records, identical, within 0.1, different, not re-run; the record not re-run never sets the largest difference
    assert rows[2] == "| [s](../results/evidence/verification/s.md) | 4 | 1 | 0 | 2 | 1 | 4.42 |"
