"""A small leaderboard config (tiny scale) over a few methods; the rest listed as excluded."""
from pathlib import Path

from fedflat.study import load_config_file

REPO = Path(__file__).resolve().parents[2]


def small_config(methods: dict, seeds=(0,), lr=(0.1,), scale="tiny") -> dict:
    cfg = load_config_file(REPO / "config" / "leaderboard.yaml")
    cfg["scale"] = scale
    cfg["data_root"] = str(REPO / "data")
    lb = cfg["leaderboard"]
    for name in list(lb["methods"]):
        if name not in methods:
            lb["excluded"][name] = "not in this test"
            del lb["methods"][name]
    lb["methods"].update(methods)
    lb["seeds"] = list(seeds)
    lb["tuning"]["lr"] = list(lr)
    return cfg
