"""FedSAGD Definition 3.4: neighbouring client sets that differ in one whole client."""
import numpy as np
import pytest

from fedflat.pipeline.analysis.params import resolve
from fedflat.pipeline.analysis.stability import neighbouring_partition, paired_distance
from fedflat.core.errors import ConfigError

from .sim_helpers import paired_batches, partition, spec, synthetic


@pytest.mark.parametrize("same_label", [False, True])
def test_client_neighbour_replaces_exactly_one_whole_client(same_label):
    data = synthetic()
    part = partition(data, spec("fedavg"), "iid")
    labels = data.train_y.numpy()
    neigh, swaps = neighbouring_partition(part, labels, seed=1, same_label=same_label, neighbour="client")
    changed = [i for i, (a, b) in enumerate(zip(part.clients, neigh.clients)) if not np.array_equal(a, b)]
    assert len(changed) == 1
    cid = changed[0]
    old, new = part.clients[cid], neigh.clients[cid]
    assert len(new) == len(old) and len(set(new)) == len(new) and not set(old) & set(new)  # enough samples: no repeats
    assert len(swaps) == len(old) and {s[0] for s in swaps} == {cid}
    if same_label:
        np.testing.assert_array_equal(neigh.histogram, part.histogram)
        assert all(labels[o] == labels[w] for _, o, w in swaps)
    assert neigh.meta["neighbour"] == "client"
    again, _ = neighbouring_partition(part, labels, seed=1, same_label=same_label, neighbour="client")
    assert all(np.array_equal(a, b) for a, b in zip(neigh.clients, again.clients))  # seeded


def test_client_neighbour_moves_the_model_and_bad_mode_is_refused(tmp_path):
    data = synthetic()
    s = spec("fedavg", rounds=2, participation=1.0)
    part = partition(data, s)
    neigh, _ = neighbouring_partition(part, data.train_y.numpy(), seed=0, neighbour="client")
    res = paired_distance(s, data, part, neigh, tmp_path)
    assert 0 < res["per_round"][0] <= res["per_round"][1] * 10 and res["distance"] > 0
    with pytest.raises(ConfigError, match="analysis.stability.neighbour: 'both' not allowed"):
        resolve("stability", {"neighbour": "both"})
    with pytest.raises(ConfigError, match="neighbour"):
        neighbouring_partition(part, data.train_y.numpy(), seed=0, neighbour="both")


def test_client_neighbour_when_the_client_holds_most_of_a_class():
    data = synthetic()
    labels = data.train_y.numpy()
    part = partition(data, spec("fedavg"), "dir0.05")  # near one class per client
    for same_label in (False, True):
        neigh, swaps = neighbouring_partition(part, labels, seed=2, same_label=same_label, neighbour="client")
        cid = swaps[0][0]
        assert len(neigh.clients[cid]) == len(part.clients[cid])
        assert not set(part.clients[cid]) & set(neigh.clients[cid])


def test_client_neighbour_picks_among_candidates():
    data = synthetic()
    part = partition(data, spec("fedavg"), "iid")
    picked = {neighbouring_partition(part, data.train_y.numpy(), seed=k, neighbour="client", candidates=[1, 3])[1][0][0]
              for k in range(8)}
    assert picked == {1, 3}


@pytest.mark.parametrize("same_label", [False, True])
def test_client_neighbour_batches_map_position_by_position(monkeypatch, tmp_path, same_label):
    """Issue 13 (7), Def. 3.4: other clients draw identical batches; the replaced client draws new[j]
    in exactly the slots where the original run draws old[j] (same labels slot by slot with same_label)."""
    import torch

    data = synthetic()
    labels = data.train_y.numpy()
    s = spec("fedavg", rounds=3, participation=1.0, local_steps=7)
    part = partition(data, s)
    neigh, swaps = neighbouring_partition(part, labels, seed=1, same_label=same_label, neighbour="client")
    cid = swaps[0][0]
    to_new = {old: new for _, old, new in swaps}
    drawn = paired_batches(monkeypatch, s, data, part, neigh, tmp_path)
    for (t, c), (a, b) in drawn.items():
        if c != cid:
            assert torch.equal(a, b)
            continue
        assert torch.equal(b, a.clone().apply_(to_new.__getitem__))
        if same_label:
            assert np.array_equal(labels[a.numpy()], labels[b.numpy()])
