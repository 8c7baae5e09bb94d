"""A scratch repository for the findings mechanism: records written as results/evidence/<study>/runs.csv, a
declaration checked as a config would hold it, and a render context pointed at it."""
import math
from pathlib import Path

import pandas as pd

from fedflat.evidence.findings.declared import check
from fedflat.evidence.pages import Context
from fedflat.evidence.records import COLUMNS

STUDY = "study"


def record(preset="fedavg", seed=0, acc=80.0, experiment="e", lr=0.1, hparams="{}", uplink="", **kw) -> dict:
    """One runs.csv row, made at a clean commit in portable numerics (a verdict may read it); acc None: the run
    diverged. `legacy="<why>"` or a dirty `git_commit` makes it a record no verdict reads."""
    r = dict.fromkeys(COLUMNS, "")
    r.update({"git_commit": "abc123", "numerics": "portable"})
    r.update({"run_id": f"{experiment}/{preset}/{lr}/{hparams}/{uplink}/{seed}", "experiments": experiment,
              "label": preset, "preset": preset, "lr": lr, "hparams": hparams, "uplink": uplink, "seed": seed,
              "status": "completed" if acc is not None else "diverged", "up_bytes_total": 100,
              "last10_acc": math.nan if acc is None else acc, "final_acc": math.nan if acc is None else acc, **kw})
    return r


def write_runs(root: Path, rows: list[dict], study: str = STUDY) -> Context:
    d = root / "results/evidence" / study
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(d / "runs.csv", index=False)
    (root / "config").mkdir(exist_ok=True)
    return Context(root=root)


def finding(**kw):
    """A declaration with the keys every finding needs filled in."""
    spec = {"id": "f", "question": "q?", "fixed": "before_finals", "evidence": STUDY, "seeds": [0, 1],
            "metric": "last10_acc", "page": {"file": "docs/p.md", "block": "b"}, **kw}
    return check(spec, Path("test.yaml"))


def grid(accs: dict, preset="fedavg", seeds=(0, 1)) -> list[dict]:
    """Records of one lr grid: accs = {lr: acc for every seed, or [acc per seed]} (None: diverged)."""
    return [record(preset, s, a[i] if isinstance(a, list) else a, lr=lr)
            for lr, a in accs.items() for i, s in enumerate(seeds)]
