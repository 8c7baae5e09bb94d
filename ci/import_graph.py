"""Summarise fedflat's module import graph: cycles, imports that run up the layers, largest modules.

Used to record the graph before and after a structural change (docs/architecture.md); the layers
themselves are enforced by import-linter (.importlinter), this script only reports figures.
Run: python ci/import_graph.py [--src path/to/src] [--layers a,b,c] (top layer first).
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1] / "src" / "fedflat"


def allowed(a: str, b: str) -> bool:
    """The imports .importlinter ignores: a `python -m` main loading the composition root."""
    return a.endswith(".__main__") and b == "fedflat.plugins"


# Top layer first; a module imports only from its own layer or below. Mirrors .importlinter: the top-level folders
# in order, each folder's own layers in order within it (a name covers the module or package and everything below).
DEFAULT_LAYERS = [
    "analysis|papers|leaderboard",
    "__main__|cli|plugins",
    "evidence",
    "results.leaderboard",
    "results.papers",
    "pipeline.build",
    "pipeline.analysis",
    "pipeline.report",
    "pipeline.inputs",
    "pipeline.study",
    "pipeline.scale",
    "training.synsam",
    "training.fl",
    "training.compression",
    "training.algorithms",
    "training.models|training.data",
    "core.spec|core.run_paths|core.kind_registry|core.recorded",
    "core.registry|core.util",
    "core.errors",
]


def module_name(path: Path, root: Path) -> str:
    parts = ("fedflat",) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Every fedflat module the file imports, at any depth in the file (lazy imports count; imports under
    `if TYPE_CHECKING:` do not, as in .importlinter: they run nothing at import time)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for t in ast.walk(tree) if isinstance(t, ast.If) and getattr(t.test, "id", "") == "TYPE_CHECKING"
                   for b in t.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph(root: Path = ROOT) -> tuple[nx.DiGraph, dict[str, int]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    g = nx.DiGraph()
    for name, path in files.items():
        g.add_node(name)
        for t in imports_of(path, name, set(files)):
            # "from fedflat import x" names the package: count it only where x is not a module
            g.add_edge(name, t)
    g.remove_edges_from([(a, b) for a, b in list(g.edges) if b == "fedflat"])
    sizes = {n: len(files[n].read_text().splitlines()) for n in files}
    return g, sizes


def layer_of(module: str, layers: list[str]) -> int:
    rel = module.partition(".")[2] or "__init__"
    for i, layer in enumerate(layers):
        if any(rel == name or rel.startswith(name + ".") for name in layer.split("|")):
            return i
    return -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=",".join(DEFAULT_LAYERS))
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--src", type=Path, default=ROOT.parent, help="the src folder holding fedflat/")
    args = ap.parse_args()
    layers = args.layers.split(",")
    g, sizes = graph(args.src / "fedflat")
    cyclic = sorted((c for c in nx.strongly_connected_components(g) if len(c) > 1), key=len, reverse=True)
    print(f"modules {g.number_of_nodes()}, import edges {g.number_of_edges()}")
    print(f"cycles (strongly connected groups of >1 module): {len(cyclic)}")
    for c in cyclic:
        print(f"  {len(c):3d} modules: {', '.join(sorted(c))}")
    pkg = nx.DiGraph()
    for a, b in g.edges:
        if allowed(a, b):
            continue  # ignored in .importlinter as well
        pa, pb = (m.split(".")[1] if m.count(".") else m for m in (a, b))
        if pa != pb:
            pkg.add_edge(pa, pb)
    pcyc = [sorted(c) for c in nx.strongly_connected_components(pkg) if len(c) > 1]
    print(f"cycles between top-level subpackages/modules: {pcyc}")
    upward = []
    for a, b in g.edges:
        la, lb = layer_of(a, layers), layer_of(b, layers)
        if la >= 0 and lb >= 0 and lb < la:
            upward.append((a, b))
    print(f"upward imports (layers, top first: {' > '.join(layers)}): {len(upward)}")
    for a, b in sorted(upward):
        print(f"  {a} -> {b}" + ("  (an entry point, ignored in .importlinter: allowed)" if allowed(a, b) else ""))
    print(f"largest modules (lines):")
    for n in sorted(sizes, key=sizes.get, reverse=True)[: args.top]:
        print(f"  {sizes[n]:4d} {n}")


if __name__ == "__main__":
    main()
