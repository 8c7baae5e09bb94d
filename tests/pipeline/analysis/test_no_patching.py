"""Analysis plugs into training through its extension points (RoundHook.local_gradient,
Simulation.evaluating_under), never by replacing an attribute of an algorithm part or a simulation:
no attribute assignment, setattr/delattr or __dict__ write in src/fedflat/pipeline/analysis/ except on `self`
and on the few non-engine objects listed here."""
import ast
from pathlib import Path

import fedflat.pipeline.analysis

# (module, target) assignments that touch neither a part nor a simulation
ALLOWED = {
    ("analysis_commands.py", "a.device"),  # the parsed command-line arguments
    ("analysis_kinds.py", "table.index.name"),  # a pandas frame
    ("hessian.py", "p.data"), ("hessian.py", "p.grad"),  # a private copy of the model's parameters
    ("hessian.py", "self.ph.device"),  # the PyHessian object the hook owns
    ("analysis_hooks.py", "cls.name"),  # the registering decorator names the hook class
}


def patches(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store):
                    base = t.value
                    if not (isinstance(base, ast.Name) and base.id == "self") and (path.name, ast.unparse(t)) not in ALLOWED:
                        out.append(f"{path.name}:{node.lineno}: {ast.unparse(t)} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
                out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_analysis_module_assigns_an_attribute_of_a_part_or_a_simulation():
    root = Path(fedflat.pipeline.analysis.__file__).parent
    found = [p for f in sorted(root.glob("*.py")) for p in patches(f)]
    assert not found, "analysis modules patch objects they do not own:\n" + "\n".join(found)


def test_the_check_sees_a_patch(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("def hook(sim, part):\n    part.gradient = None\n    sim.algo.perturbation.gradient = 1\n"
                 "    setattr(sim, 'algo', 2)\n    sim.__dict__['_x'] = 3\n    self.ok = 4\n")
    assert [p.split(": ", 1)[1] for p in patches(f)] == [
        "part.gradient = ...", "sim.algo.perturbation.gradient = ...", "setattr(sim, 'algo', 2)", "sim.__dict__"]
