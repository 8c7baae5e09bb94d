"""Figure and table kinds of the analysis (registered into fedflat.core.kind_registry):

  landscape_surface   3-D loss surfaces (FedNSAM Fig. 1/7 style), one panel per run, train and/or test row
  landscape_contour   the same surfaces as contour plots
  landscape_1d        1-D loss curves, one line per algorithm (train solid, test dashed)
  landscape_overlay   one run's surface with another's overlaid, transparent (FedSynSAM Fig. 1; overlay.py)
  hessian_density     Lanczos eigenvalue densities (Gaussian-smoothed), one line per algorithm
  hessian (table)     λ_max, λ_5, λ_max/λ_5 and trace, mean ± std over seeds, per algorithm and setting
  stability (table)   ‖θ_T − θ'_T‖₂ on neighbouring datasets, mean ± std over seeds

Config entry keys: experiment (required), title, and for figures `data` (train | test | both),
`partition`/`dataset`/`model` (filters), `seed` (default: smallest), `algorithms` (labels or presets).
Landscape figures take `annotate: hessian` (also needs each run's hessian.json; writes λ₁ and λ₁/λ₅
under every panel title, FedSOL Fig. 8).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ...core.errors import ConfigError
from ...core.kind_registry import FIGURE_KINDS, TABLE_KINDS, run_entries
from ...core.util.io import write_text
from ...core.util.markdown import md_table
from . import paths
from .hessian import smooth_density

_FILTERS = ("partition", "dataset", "model")


def select(study, spec: dict, all_seeds: bool = False) -> list[dict]:
    entries = run_entries(study, spec["experiment"])
    for k in _FILTERS:
        if k in spec:
            entries = [e for e in entries if str(e[k]) == str(spec[k])]
    if spec.get("algorithms"):
        want = set(spec["algorithms"])
        entries = [e for e in entries if e["algorithm"] in want or e["preset"] in want]
    if not all_seeds and entries:
        seed = spec.get("seed", min(e["seed"] for e in entries))
        entries = [e for e in entries if e["seed"] == seed]
    return entries


def _check(study, name, spec, section="figures"):
    if "experiment" not in spec:
        raise ConfigError(f"{section}.{name}.experiment: required")
    if spec.get("data", "both") not in ("train", "test", "both"):
        raise ConfigError(f"{section}.{name}.data: {spec['data']!r} not allowed; allowed: both, test, train")
    if spec.get("annotate", "none") not in ("none", "hessian"):
        raise ConfigError(f"{section}.{name}.annotate: {spec['annotate']!r} not allowed; allowed: hessian, none")
    if not select(study, spec, all_seeds=section == "tables"):
        raise ConfigError(f"{section}.{name}: no run of experiment {spec['experiment']!r} matches its filters")


def _panel_label(e: dict, entries: list[dict]) -> str:
    parts = [e["algorithm"]] + [str(e[k]) for k in _FILTERS if len({x[k] for x in entries}) > 1]
    return " / ".join(parts)


class _Landscape:
    dims = 2
    style = "surface"

    @classmethod
    def inputs(cls, study, name, spec):
        extra = (paths.HESSIAN,) if spec.get("annotate") == "hessian" else ()  # λ₁ and λ₁/λ₅ (FedSOL Fig. 8)
        return [f"{e['dir']}/{f}" for e in select(study, spec) for f in (paths.LANDSCAPE[cls.dims], *extra)]

    @classmethod
    def manifest(cls, study, name, spec):
        entries = select(study, spec)
        return {"title": spec.get("title", ""), "data": spec.get("data", "both"), "style": cls.style,
                "panels": [{"file": f"{e['dir']}/{paths.LANDSCAPE[cls.dims]}", "label": _panel_label(e, entries),
                            "algorithm": e["algorithm"],
                            "hessian": f"{e['dir']}/{paths.HESSIAN}" if spec.get("annotate") == "hessian" else None}
                           for e in entries]}

    @classmethod
    def check(cls, study, name, spec):
        _check(study, name, spec)

    @staticmethod
    def render(m, outs):
        if m["style"] == "curve":
            landscape_curves(m, outs)
        else:
            landscape_panels(m, outs)


@FIGURE_KINDS.register("landscape_surface")
class LandscapeSurface(_Landscape):
    style = "surface"


@FIGURE_KINDS.register("landscape_contour")
class LandscapeContour(_Landscape):
    style = "contour"


@FIGURE_KINDS.register("landscape_1d")
class Landscape1D(_Landscape):
    dims = 1
    style = "curve"


def _rows(data: str) -> list[str]:
    return ["train", "test"] if data == "both" else [data]


def eigen_note(hessian_file) -> str:
    """FedSOL Fig. 8's annotation: λ₁ and λ₁/λ₅ of the global model's Hessian (from hessian.json)."""
    if not hessian_file:
        return ""
    h = json.loads(Path(hessian_file).read_text())
    ratio = h.get("lambda_ratio_1_5")
    return f"λ₁={h['lambda_max']:.3g}" + ("" if ratio is None else f", λ₁/λ₅={ratio:.3g}")


def landscape_panels(m: dict, outs) -> None:
    from ..report.style import apply_style, plt, save_all

    apply_style()
    rows, panels = _rows(m["data"]), m["panels"]
    surf = m["style"] == "surface"
    fig = plt.figure(figsize=(3.0 * len(panels), 2.8 * len(rows)))
    loaded = [np.load(p["file"]) for p in panels]
    for r, split in enumerate(rows):
        zmax = max(float(np.nanmax(z[f"{split}_loss"])) for z in loaded)
        zmin = min(float(np.nanmin(z[f"{split}_loss"])) for z in loaded)
        for c, (p, z) in enumerate(zip(panels, loaded)):
            axis, Z = z["axis"], z[f"{split}_loss"]
            X, Y = np.meshgrid(axis, axis)
            idx = r * len(panels) + c + 1
            if surf:
                ax = fig.add_subplot(len(rows), len(panels), idx, projection="3d")
                ax.plot_surface(X, Y, Z, cmap="viridis", vmin=zmin, vmax=zmax, linewidth=0, antialiased=True)
                ax.set_zlim(zmin, zmax)
                ax.set_zlabel("loss", labelpad=-2)
            else:
                ax = fig.add_subplot(len(rows), len(panels), idx)
                levels = np.linspace(zmin, zmax, 20)
                cs = ax.contour(X, Y, Z, levels=levels, cmap="viridis", linewidths=0.8)
                ax.clabel(cs, cs.levels[::4], fontsize=6, fmt="%.2g")
                ax.plot(0, 0, "k+", ms=6)
                ax.set_aspect("equal")
            note = eigen_note(p.get("hessian"))
            ax.set_title(f"{p['label']} ({split})" + (f"\n{note}" if note else ""), fontsize=8 if note else None)
            ax.set_xlabel("α (d₁)")
            ax.set_ylabel("β (d₂)")
    if m.get("title"):
        fig.suptitle(m["title"])
    save_all(fig, outs)


def landscape_curves(m: dict, outs) -> None:
    from ..report.style import apply_style, color_for, plt, save_all

    apply_style()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for p in m["panels"]:
        z = np.load(p["file"])
        for split, ls in (("train", "-"), ("test", "--")):
            if split in _rows(m["data"]):
                ax.plot(z["axis"], z[f"{split}_loss"], ls, color=color_for(p["algorithm"]), lw=1.3,
                        label=f"{p['label']} ({split})")
    ax.set_xlabel("α along a filter-normalised direction")
    ax.set_ylabel("loss")
    ax.legend(fontsize=7)
    if m.get("title"):
        ax.set_title(m["title"])
    save_all(fig, outs)


@FIGURE_KINDS.register("hessian_density")
class HessianDensity:
    @staticmethod
    def inputs(study, name, spec):
        return [f"{e['dir']}/{paths.HESSIAN}" for e in select(study, spec)]

    @staticmethod
    def manifest(study, name, spec):
        entries = select(study, spec)
        return {"title": spec.get("title", ""), "sigma": spec.get("sigma", 0.0),
                "lines": [{"file": f"{e['dir']}/{paths.HESSIAN}", "label": _panel_label(e, entries),
                           "algorithm": e["algorithm"]} for e in entries]}

    @staticmethod
    def check(study, name, spec):
        _check(study, name, spec)

    @staticmethod
    def render(m, outs):
        from ..report.style import apply_style, color_for, plt, save_all
        apply_style()
        dens = [(l, json.loads(Path(l["file"]).read_text()).get("density")) for l in m["lines"]]
        dens = [(l, d) for l, d in dens if d]
        if not dens:
            raise ConfigError("hessian_density: no hessian.json has a density (analysis.hessian.density_iters is 0)")
        lo = min(min(d["nodes"]) for _, d in dens)
        hi = max(max(d["nodes"]) for _, d in dens)
        pad = 0.05 * (hi - lo + 1e-12)
        grid = np.linspace(lo - pad, hi + pad, 2000)
        sigma = m["sigma"] or 0.01 * (hi - lo + 1e-12)
        fig, ax = plt.subplots(figsize=(4.2, 3.0))
        for l, d in dens:
            y = smooth_density(np.asarray(d["nodes"]), np.asarray(d["weights"]), grid, sigma)
            ax.semilogy(grid, np.maximum(y, 1e-12), color=color_for(l["algorithm"]), lw=1.2, label=l["label"])
        ax.set_xlabel("eigenvalue")
        ax.set_ylabel("density (log)")
        ax.set_ylim(bottom=1e-6)
        ax.legend(fontsize=7)
        if m.get("title"):
            ax.set_title(m["title"])
        save_all(fig, outs)


def _seed_table(entries: list[dict], fname: str, quantities: dict[str, str], out_base, title: str, caption: str):
    import pandas as pd

    rows = []
    for e in entries:
        d = json.loads((Path(e["dir"]) / fname).read_text())
        rows.append({**{k: e[k] for k in ("algorithm", "dataset", "model", "partition", "seed")},
                     **{q: d.get(q) for q in quantities}})
    df = pd.DataFrame(rows)
    settings = [c for c in _FILTERS if df[c].nunique() > 1] or ["partition"]
    df["setting"] = df[settings].astype(str).agg(" / ".join, axis=1)
    long = []
    for (algo, setting), g in df.groupby(["algorithm", "setting"], sort=False):
        rec = {"algorithm": algo, "setting": setting, "seeds": len(g)}
        for q in quantities:
            v = g[q].astype(float)
            rec[f"{q}_mean"] = v.mean()
            rec[f"{q}_std"] = v.std(ddof=1) if len(v) > 1 else 0.0
        long.append(rec)
    summ = pd.DataFrame(long)

    def cell(r, q):
        m, s = r[f"{q}_mean"], r[f"{q}_std"]
        return "n/a" if not math.isfinite(m) else f"{m:.4g} ± {s:.2g}"

    wide = {}
    for _, r in summ.iterrows():
        for q, label in quantities.items():
            wide.setdefault(r["algorithm"], {})[f"{r['setting']}: {label}"] = cell(r, q)
    table = pd.DataFrame.from_dict(wide, orient="index")
    table.index.name = "Algorithm"
    out_base = Path(out_base)
    write_text(out_base.with_suffix(".md"), (f"# {title}\n\n" if title else "") + md_table(table) + f"\n\n{caption}\n")
    write_text(out_base.with_suffix(".csv"), summ.to_csv(index=False))
    tex = table.to_latex(escape=True, caption=caption, label=f"tab:{out_base.name}")
    write_text(out_base.with_suffix(".tex"), tex.replace("±", r"$\pm$"))
    return summ


class _RunTable:
    fname = ""
    quantities: dict[str, str] = {}
    caption = ""

    @classmethod
    def inputs(cls, study, name, spec):
        return [f"{e['dir']}/{cls.fname}" for e in select(study, spec, all_seeds=True)]

    @classmethod
    def manifest(cls, study, name, spec):
        return {"title": spec.get("title", name), "entries": select(study, spec, all_seeds=True)}

    @classmethod
    def check(cls, study, name, spec):
        _check(study, name, spec, "tables")

    @classmethod
    def render(cls, m, out_base):
        seeds = sorted({e["seed"] for e in m["entries"]})
        _seed_table(m["entries"], cls.fname, cls.quantities, out_base, m.get("title", ""),
                    cls.caption + f" Mean ± std over seeds {seeds}.")


@TABLE_KINDS.register("hessian")
class HessianTable(_RunTable):
    fname = paths.HESSIAN
    quantities = {"lambda_max": "λ_max", "lambda_5": "λ_5", "lambda_ratio_1_5": "λ_max/λ_5", "trace": "trace"}
    caption = ("Hessian of the final global model's training loss (PyHessian power iteration and Hutchinson "
               "trace on a fixed, non-augmented, seeded training subset, eval mode).")


@TABLE_KINDS.register("stability")
class StabilityTable(_RunTable):
    fname = paths.STABILITY
    quantities = {"distance": "‖θ−θ'‖", "relative": "‖θ−θ'‖/‖θ‖"}
    caption = ("Empirical stability: L2 distance between final global models trained with the same seed on "
               "neighbouring datasets (one sample per client, or one whole client with `neighbour: client`; "
               "the run's stability.json records which).")
