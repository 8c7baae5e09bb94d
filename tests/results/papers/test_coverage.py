"""Class coverage of partitions: the numbers the partition readings are judged by."""
import numpy as np

from fedflat.results.papers.coverage import TRAIN_COUNTS, coverage, training_labels
from fedflat.pipeline.study import load_study


def _study(partition, clients, variant="rep", seeds=(0,)):
    return load_study({"study": "c", "training": {"num_clients": clients, "dirichlet_variant": variant},
                       "experiments": {"e": {"datasets": ["cifar10"], "models": ["mlp"], "partitions": [partition],
                                             "algorithms": ["fedavg"], "seeds": list(seeds)}}})


def test_official_counts_stand_in_for_missing_data():
    y, origin = training_labels("cifar10-plain", "/nonexistent")
    assert origin == "official class counts" and np.bincount(y).tolist() == TRAIN_COUNTS["cifar10"]


def test_one_class_shards_cover_every_class_once_per_client():
    (row,) = coverage(_study("shards1", 10), "/nonexistent")
    assert (row.covered, row.present, row.per_client_min, row.per_client_mean) == (10, 10, 1, 1.0)


def test_per_client_dirichlet_priors_leave_classes_out_at_ten_clients():
    """Dir(0.01) drawn per client (`rep`): ~one class per client, repeats likely, so some classes are missing;
    per-class Dirichlet over clients (`lda`) hands every class to someone."""
    rep = coverage(_study("dir0.01", 10, "rep", seeds=(0, 1, 2)), "/nonexistent")
    lda = coverage(_study("dir0.01", 10, "lda", seeds=(0, 1, 2)), "/nonexistent")
    assert [r.covered for r in rep] == [10, 8, 8] and [r.covered for r in lda] == [10, 10, 10]
