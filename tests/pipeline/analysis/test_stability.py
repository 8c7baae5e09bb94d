import numpy as np
import pytest
import torch

from fedflat.pipeline.analysis.stability import neighbouring_partition, paired_distance

from .sim_helpers import paired_batches, partition, spec, synthetic


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


@pytest.mark.parametrize("same_label", [False, True])
def test_sample_neighbour_batches_differ_only_where_the_swapped_sample_is_drawn(monkeypatch, tmp_path, same_label):
    """Issue 13 (7): the swap is in place, so the engine's mini-batches of the two runs are identical
    slot for slot except where the original run draws the swapped sample (there: the new one)."""
    data = synthetic()
    s = spec("fedavg", rounds=3, participation=1.0, local_steps=7)  # 24 samples, B=8: 2⅓ epochs a round
    part = partition(data, s)
    neigh, swaps = neighbouring_partition(part, data.train_y.numpy(), seed=3, same_label=same_label)
    drawn = paired_batches(monkeypatch, s, data, part, neigh, tmp_path)
    assert sorted(drawn) == [(t, c) for t in (1, 2, 3) for c in range(4)]
    for cid, old, new in swaps:
        for t in (1, 2, 3):
            a, b = drawn[(t, cid)]
            assert (a == old).sum() >= 2  # every full epoch draws it
            assert torch.equal(a != b, a == old) and bool((b[a == old] == new).all())
