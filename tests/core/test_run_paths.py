"""Run ids map to output paths and back through one function (fedflat.core.run_paths); the ids are pinned, so a
change to how they are made (which would retrain every result) fails here."""
from fedflat.core.run_paths import RUNS_DIR, run_dir, run_of_file
from fedflat.pipeline.study import load_config_file, load_study

# the default study's first run id, as made before run_paths existed (results of earlier runs keep their ids)
PINNED = "digits/dir0.1-rep/cnn_small/fedasam/1162220a5e/seed0"


def test_run_ids_of_the_default_study_are_unchanged(repo):
    study = load_study(load_config_file(repo / "config" / "config.yaml"))
    assert sorted(study.runs)[0] == PINNED and len(study.runs) == 40
    assert study.run_dir(PINNED) == f"results/runs/{PINNED}" == run_dir(PINNED)


def test_run_of_file_inverts_run_dir():
    assert RUNS_DIR == "results/runs"
    assert run_of_file(f"{run_dir(PINNED)}/summary.json") == PINNED
    assert run_of_file(f"{run_dir(PINNED)}/hessian.json") == PINNED
    assert run_of_file("results/partitions/digits-iid-seed0.npz") is None
    assert run_of_file("results/tables/accuracy.md") is None
    assert run_of_file("results/runs") is None
