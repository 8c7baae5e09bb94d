"""What bench/gpu_check.py writes: the machine it ran on, the published per-round anchors its speed lands beside,
one JSON file (everything) and one Markdown summary (the verdicts, the budget, the ratios), both committable."""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from fedflat.core.util.provenance import source_commit

# CIFAR-10, 100 clients, 10 % per round, 5 local epochs of 500 images at B 50 (K 50): seconds per round as the
# codebases' READMEs publish them (quoted by issue 51). Ours: the same round (10 clients x 50 steps, random
# images already on the device, no evaluation), so data loading and evaluation are not in our figure.
ANCHORS = (
    {"source": "FL-SAM", "gpu": "RTX 4090", "model": "2-layer CNN", "algorithm": "FedAvg", "s_per_round": 2.72,
     "ours": ("cnn_fedavg", "fedavg")},
    {"source": "FL-SAM", "gpu": "RTX 4090", "model": "2-layer CNN", "algorithm": "FedSAM", "s_per_round": 7.64,
     "ours": ("cnn_fedavg", "fedsam")},
    {"source": "FL-SAM", "gpu": "RTX 4090", "model": "ResNet-18", "algorithm": "FedAvg", "s_per_round": 20.1,
     "ours": ("resnet18gn", "fedavg")},
    {"source": "FL-Simulator", "gpu": "V100", "model": "ResNet-18-GN", "algorithm": "FedAvg", "s_per_round": 15.9,
     "ours": ("resnet18gn", "fedavg")},
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(cuda_skip: Optional[str]) -> dict:
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "torch": torch.__version__, "torch_cuda_build": torch.version.cuda,
            "numpy": np.__version__, "git_commit": source_commit(), "cuda": None, "cuda_skip": cuda_skip}
    if cuda_skip is None:
        p = torch.cuda.get_device_properties(0)
        info["cuda"] = {"name": torch.cuda.get_device_name(0), "capability": f"{p.major}.{p.minor}",
                        "memory_gib": round(p.total_memory / 2**30, 1), "count": torch.cuda.device_count(),
                        "cudnn": torch.backends.cudnn.version(),
                        # the defaults the speed section runs under (the correctness section turns TF32 off)
                        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
                        "cudnn_benchmark": torch.backends.cudnn.benchmark}
    return info


def machine_line(m: dict) -> str:
    dev = (f"{m['cuda']['name']} ({m['cuda']['memory_gib']} GiB, CUDA {m['torch_cuda_build']}, cuDNN {m['cuda']['cudnn']})"
           if m["cuda"] else f"no GPU used ({m['cuda_skip']})")
    return (f"{dev}; torch {m['torch']}, Python {m['python']}, {m['cpu']} x {m['cpu_count']}; "
            f"fedflat {m['git_commit'] or 'commit unknown'}")


def anchors_beside(ratios: list[dict]) -> list[dict]:
    by = {(r["workload"], r["algorithm"]): r for r in ratios}
    out = []
    for a in ANCHORS:
        r = by.get(a["ours"], {})
        ours = r.get("s_per_round_10", {})
        out.append({**{k: v for k, v in a.items() if k != "ours"}, "ours_workload": a["ours"][0],
                    "ours_cuda_loop_s": ours.get("cuda_loop"), "ours_cuda_vmap_s": ours.get("cuda_vmap"),
                    "ours_cpu_core_s": ours.get("cpu_core")})
    return out


def write_json(path: Path, result: dict) -> None:
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")


def _f(x, fmt=None) -> str:
    if x is None:
        return "–"
    if fmt:
        return fmt.format(x)
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _check_cell(check: dict) -> str:
    if check["ok"] is None:
        return f"skipped ({check['reason']})"
    if check["ok"]:
        return f"ok (Δacc {check['acc_diff']:.3f}, Δθ {check['param_rel']:.1e})"
    return f"**FAILED**: {check['reason']}"


def _path(row: dict) -> str:
    return "vmapped" if row["vmapped"] else "one at a time"


def _md_correctness(c: dict) -> list[str]:
    t, names = c["tolerance"], list(c["cases"][0]["checks"])
    lines = ["## Correctness: the same seed on CPU and CUDA", "",
             f"Reference: one client at a time on the CPU. A candidate passes with final accuracy within {t['acc']} and "
             f"final parameters within {t['param_rel']:g} of the distance the reference travelled (TF32 off). "
             f"Training: {c['training']}; {c['data']}.", "",
             "| model | algorithm | CPU accuracy | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for case in c["cases"]:
        ref = case["runs"]["cpu"]
        acc = f"{ref['final_acc']:.4f}" if ref.get("status") == "ok" else f"{ref.get('status')}: {ref.get('reason', '')}"
        cells = " | ".join(_check_cell(ch) for ch in case["checks"].values())
        lines.append(f"| {case['model']} | {case['algorithm']} | {acc} | {cells} |")
    return lines


def _md_reductions(r: dict) -> list[str]:
    lines = [f"## Exact rho = 0 reductions on {r['device']}", "",
             f"{r['passed']} of {len(r['rows'])} (preset, path) pairs follow their base preset's trajectory to "
             f"{r['exact']:g} in float64 and leave it at rho = 0.1; {r['failed']} failed."]
    lines += [f"- **FAILED** {x['preset']} → {x['base']} ({_path(x)}): {x['reason']}"
              for x in r["rows"] if x.get("ok") is False]
    other = [x for x in r["rows"] if x["status"] in ("not covered", "stopped")]
    if other:
        lines.append("- not covered or stopped: " + ", ".join(f"{x['preset']} ({_path(x)}: {x['status']})" for x in other))
    if r.get("cuda"):
        lines.append(f"- on CUDA: skipped ({r['cuda']['reason']})")
    return lines


def _md_speed(sp: dict) -> list[str]:
    sizes = "; ".join(f"{k}: {v['what']}" for k, v in sp["workloads"].items())
    lines = ["## Speed: client-rounds per second", "",
             f"Random weights and images at the papers' sizes ({sizes}). CPU: one core, one client. CUDA: 10 clients "
             "a round (the anchors' 10 % of 100), vmapped also at 50. Peak: GPU memory above the round's start over "
             "the clients of the round.", "",
             "| workload | algorithm | CPU core | CUDA one at a time | CUDA vmapped | one at a time ÷ CPU | vmapped ÷ CPU | "
             "vmapped ÷ one at a time | vmapped x50 ÷ one at a time | peak MiB per client |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for x in sp["ratios"]:
        peak = ", ".join(f"{k} {v}" for k, v in x["peak_mib_per_client"].items()) or "–"
        lines.append(f"| {x['workload']} | {x['algorithm']} | {_f(x['cpu_core'])} | {_f(x['cuda_loop'])} | "
                     f"{_f(x['cuda_vmap'])} | {_f(x['loop_over_cpu'], '{:.1f}x')} | {_f(x['vmap_over_cpu'], '{:.1f}x')} | "
                     f"{_f(x['vmap_over_loop'], '{:.2f}x')} | {_f(x['vmap50_over_loop'], '{:.2f}x')} | {peak} |")
    lines += [f"- {x['workload']} {x.get('algorithm', '')} {x['device']} {x.get('path', '')} x{x.get('clients', '')}: "
              f"{x['status']} ({x.get('reason', '')})" for x in sp["rows"] if x.get("status") not in ("ok", "skipped")]
    ext = sum(bool(x.get("extrapolated")) for x in sp["rows"])
    if ext:
        lines.append(f"- {ext} figure(s) extrapolated to the workload's K from fewer steps (see the JSON: `steps`).")
    return lines


def _md_anchors(anchors: list[dict], quick: bool) -> list[str]:
    lines = ["## Beside the published anchors (CIFAR-10, 100 clients, 10 %, 5 local epochs: s/round)", ""]
    if quick:
        lines += ["Quick sizes (batch 8, 2 steps): our figures below are not comparable with the published ones.", ""]
    lines += ["| published | GPU | model | algorithm | s/round | ours | CUDA one at a time | CUDA vmapped | CPU core |",
              "|---|---|---|---|---|---|---|---|---|"]
    for a in anchors:
        lines.append(f"| {a['source']} | {a['gpu']} | {a['model']} | {a['algorithm']} | {a['s_per_round']} | "
                     f"{a['ours_workload']} | {_f(a['ours_cuda_loop_s'])} | {_f(a['ours_cuda_vmap_s'])} | "
                     f"{_f(a['ours_cpu_core_s'])} |")
    return lines


def markdown(result: dict) -> str:
    m, secs = result["machine"], result["sections"]
    lines = [f"# GPU check: {m['cuda']['name'] if m['cuda'] else 'CPU only'}", "",
             f"Machine: {machine_line(m)}.", "",
             f"Command: `{result['command']}`; mode {result['mode']}; budget {result['budget_s']:.0f} s, "
             f"ran {result['elapsed_s']:.0f} s. Verdict: **{result['verdict']}**.", ""]
    if m["cuda_skip"]:
        lines += [f"CUDA parts skipped: {m['cuda_skip']}.", ""]
    lines += ["## Time budget", "", "| section | estimated s | measured s | status |", "|---|---|---|---|"]
    lines += [f"| {name} | {s['estimated_s']:.0f} | {s['measured_s']:.1f} | {s['status']} |" for name, s in secs.items()]
    blocks = []
    if "cases" in secs.get("correctness", {}):
        blocks.append(_md_correctness(secs["correctness"]))
    if "rows" in secs.get("reductions", {}):
        blocks.append(_md_reductions(secs["reductions"]))
    if "ratios" in secs.get("speed", {}):
        blocks += [_md_speed(secs["speed"]), _md_anchors(result["anchors"], result["mode"] == "quick")]
    for b in blocks:
        lines += [""] + b
    return "\n".join(lines) + "\n"
