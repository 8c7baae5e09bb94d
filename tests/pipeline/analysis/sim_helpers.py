"""A tiny in-memory federated setting for the hook and stability tests."""
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.data import ArrayDataset, make_partition
from fedflat.core.spec import RunSpec, check_training


def synthetic(n_train=96, n_test=40, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, 1, 3, 3, generator=g) * 2
    ytr = torch.randint(0, classes, (n_train,), generator=g)
    yte = torch.randint(0, classes, (n_test,), generator=g)
    xtr = centers[ytr] + torch.randn(n_train, 1, 3, 3, generator=g)
    xte = centers[yte] + torch.randn(n_test, 1, 3, 3, generator=g)
    return ArrayDataset("synthetic", xtr, ytr, xte, yte, classes)


def spec(algorithm="fedsam", model="mlp", rounds=3, analysis=None, hp=None, **training):
    tr = check_training({"num_clients": 4, "participation": 0.5, "rounds": rounds, "local_steps": 3,
                         "batch_size": 8, "lr": 0.1, "eval_every": 1, "checkpoint_every": 0, **training})
    kwargs = {"hidden": 8, "depth": 1} if model == "mlp" else {}
    preset = PRESETS.get(algorithm)
    return RunSpec("synthetic", "iid", model, algorithm, 0, preset.resolve(hp or {}), kwargs, preset.training_for(tr),
                   analysis=analysis or {})


def partition(data, s, spec_str="iid"):
    return make_partition(data.train_y.numpy(), spec_str, s.num_clients, s.seed, num_classes=data.num_classes)



def paired_batches(monkeypatch, s, data, part_a, part_b, out_dir):
    """Run the stability pair (analysis.stability.paired_distance) and return, per (round, client),
    the indices (steps × batch) each run's engine drew: {(t, cid): (batches_a, batches_b)}."""
    import fedflat.training.fl.engine as engine
    from fedflat.pipeline.analysis.stability import paired_distance

    drawn = {}

    class Recording(engine.BatchStream):
        def __init__(self, indices, batch_size, seed, round, cid, **kw):
            super().__init__(indices, batch_size, seed, round, cid, **kw)
            self.record = []
            drawn.setdefault((round, cid), []).append(self.record)  # run a's round comes before run b's

        def next(self):
            b = super().next()
            self.record.append(b.clone())
            return b

    monkeypatch.setattr(engine, "BatchStream", Recording)
    paired_distance(s, data, part_a, part_b, out_dir)
    assert all(len(runs) == 2 for runs in drawn.values())
    return {k: (torch.stack(a), torch.stack(b)) for k, (a, b) in drawn.items()}
