"""A split that leaves a class with no sample in the federation is refused unless the experiment allows it."""
import numpy as np
import pytest

from fedflat.training.data.partition import make_partition
from fedflat.core.errors import ConfigError


def test_a_class_missing_from_the_federation_is_an_error_unless_allowed():
    labels = np.repeat(np.arange(3), 10)  # 3 classes; path1 gives each of 2 clients one class: one is missing
    with pytest.raises(ConfigError, match=r"partition path1 with 2 clients \(seed 0\) leaves class\(es\) [0-9, ]+ with no "
                                          r"sample in the federation; set missing_classes: allow"):
        make_partition(labels, "path1", 2, seed=0)
    p = make_partition(labels, "path1", 2, seed=0, missing_classes="allow")
    assert (p.histogram.sum(0) > 0).sum() <= 2
    full = make_partition(labels, "shards1", 2, seed=0)  # shards split every sample: every class is held
    assert (full.histogram.sum(0) > 0).all()


def test_the_experiment_key_reaches_the_partition_job():
    from fedflat.core.errors import ConfigError as CE
    from fedflat.pipeline.study import load_study

    def cfg(flag):
        exp = {"datasets": ["digits"], "models": ["mlp"], "partitions": ["path1"], "algorithms": ["fedavg"],
               "seeds": [0], "training": {"num_clients": 2, "rounds": 1}}
        if flag is not None:
            exp["missing_classes"] = flag
        return {"study": "t", "experiments": {"e": exp}}

    assert all("missing_classes" not in p for p in load_study(cfg(None)).partitions.values())
    assert all(p["missing_classes"] == "allow" for p in load_study(cfg("allow")).partitions.values())
    with pytest.raises(CE, match=r"experiments.e.missing_classes"):
        load_study(cfg("sometimes"))


def test_a_stand_in_at_tiny_scale_is_not_refused():
    labels = np.repeat(np.arange(3), 10)
    p = make_partition(labels, "path1", 2, seed=0, standin=True)  # the DAG's smoke scale: no refusal
    assert (p.histogram.sum(0) > 0).sum() <= 2
