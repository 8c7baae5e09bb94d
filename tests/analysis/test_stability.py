import numpy as np

from fedflat.analysis.stability import neighbouring_partition, paired_distance

from .sim_helpers import partition, spec, synthetic


def test_neighbouring_partition_differs_in_one_sample_per_client():
    data = synthetic()
    s = spec("fedavg")
    part = partition(data, s)
    labels = data.train_y.numpy()
    for same_label in (False, True):
        neigh, swaps = neighbouring_partition(part, labels, seed=3, same_label=same_label)
        assert len(swaps) == part.num_clients
        for (cid, old, new), a, b in zip(swaps, part.clients, neigh.clients):
            assert len(a) == len(b)
            assert sorted(set(a) - set(b)) == [old] and sorted(set(b) - set(a)) == [new]
            if same_label:
                assert labels[old] == labels[new]
        if same_label:
            np.testing.assert_array_equal(neigh.histogram, part.histogram)


def test_stability_distance_is_zero_for_identical_data_and_positive_for_neighbours(tmp_path):
    data = synthetic()
    for algo in ("fedavg", "fednsam"):
        s = spec(algo, rounds=3)
        part = partition(data, s)
        same = paired_distance(s, data, part, part, tmp_path / algo / "same")
        assert same["per_round"] == [0.0, 0.0, 0.0] and same["distance"] == 0.0
        neigh, _ = neighbouring_partition(part, data.train_y.numpy(), seed=0)
        diff = paired_distance(s, data, part, neigh, tmp_path / algo / "diff")
        assert diff["distance"] > 0 and len(diff["per_round"]) == 3
        assert abs(diff["distance"] - float((diff["theta_a"] - diff["theta_b"]).double().norm())) < 1e-12
