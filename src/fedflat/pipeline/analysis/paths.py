"""Per-run analysis file names (results/runs/<run>/<name>), shared by the rules and the kinds."""
import re

HESSIAN = "hessian.json"
LANDSCAPE = {1: "landscape_1d.npz", 2: "landscape_2d.npz"}
STABILITY = "stability.json"
# the final model's Hessian on another split (rule hessian, FedSynSAM Table I's protocols (b) and (c))
HESSIAN_SPLITS = {"hessian_clients.json": "clients", "hessian_test.json": "test"}
SNAPSHOT_SPLITS = ("train", "test", "clients", "local")  # FedSynSAM Table I's candidate protocols (a)-(d)
_HESSIAN_AT = re.compile(r"^hessian_r(?P<round>[1-9][0-9]*)_(?P<split>[a-z]+)\.json$")


def hessian_at(t: int, split: str) -> str:
    """The Hessian of the end-of-round-t snapshot under `split` (rule hessian_snapshot)."""
    return f"hessian_r{t}_{split}.json"


def parse_hessian_at(name: str):
    """(round, split) of a hessian_at file name, or None."""
    m = _HESSIAN_AT.match(name)
    return (int(m["round"]), m["split"]) if m and m["split"] in SNAPSHOT_SPLITS else None
