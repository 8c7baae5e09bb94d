"""Figure kind `landscape_overlay` (FedSynSAM Fig. 1): per panel, the 3-D loss surface of one run with
a second run's surface overlaid as a transparent surface of one colour ("w/o comp").

Each surface is its run's own landscape_2d.npz: F(θ + α d₁ + β d₂) around that run's final model,
along Gaussian directions drawn from the study's one `analysis.landscape.direction_seed` and
filter-normalised to that run's weights (Li et al. 2018). The two runs end at different models, so
the overlay shares the (α, β) grid and the raw directions, not the centre: it compares the shapes of
the two minima on common axes, as the paper draws them. Render refuses two files whose grids or
direction settings differ.

Config entry:
  kind: landscape_overlay
  panels:                                  # in the paper's order; each resolves to one run per role
  - {title: '(a) 4 bit Quantization, IID', experiment: t1_iid_q4, overlay_experiment: t1_iid_none}
    (optional `select` / `overlay_select`: {algorithm, preset, dataset, model, partition})
  seed: 0                  # default: the smallest seed among each panel's runs
  data: train              # the surface drawn: train | test
  label: w/ comp           # legend of the main surfaces (colormap `cmap`)
  overlay_label: w/o comp  # legend of the overlaid surfaces (`overlay_color`, `overlay_alpha` < 1)
  annotate: edge           # edge: loss rise from the centre to the grid's edge | hessian: λ_max from each
                           # run's hessian.json as well (adds those files to the inputs) | none
  hessian_value: hessian_clients.json:lambda_max_mean   # annotate: hessian reads this file:key (default
                           # hessian.json:lambda_max; FedSynSAM Fig. 1 uses Table I's stated reading)
  zlim: [0, 4]             # optional; default: the range of all surfaces. Shared by every panel, so
                           # flatness compares across panels; values above it are clipped.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...core.errors import ConfigError, choice_error
from ..report.select import normalise_select, select_runs, target_caption
from ...core.kind_registry import FIGURE_KINDS
from . import paths

PANEL_KEYS = ("title", "experiment", "select", "overlay_experiment", "overlay_select")
ENTRY_KEYS = ("kind", "ref", "title", "scale_info", "panels", "seed", "data", "label", "overlay_label", "cmap",
              "overlay_color", "overlay_alpha", "annotate", "hessian_value", "zlim")
HESSIAN_FILES = (paths.HESSIAN, *paths.HESSIAN_SPLITS)  # what the `hessian` rule writes
ANNOTATE = ("edge", "hessian", "none")
# meta keys of landscape_2d.npz that must agree for two surfaces to share axes
SAME_AXES = ("directions", "direction_seed", "one_d", "range", "points", "train_samples", "test_samples", "subset_seed")


def _role(study, name: str, spec: dict, i: int, panel: dict, prefix: str) -> dict:
    key = f"figures.{name}.panels[{i}]"
    ename = panel.get(f"{prefix}experiment")
    if not isinstance(ename, str):
        raise ConfigError(f"{key}.{prefix}experiment: required (the experiment of the {prefix or 'main '}surface)")
    if ename not in study.experiments:
        raise choice_error(f"{key}.{prefix}experiment", ename, study.experiments)
    sel = normalise_select(panel.get(f"{prefix}select"), f"{key}.{prefix}select", spec.get("scale_info") or {})
    if "experiment" in sel:
        raise ConfigError(f"{key}.{prefix}select.experiment: not allowed here; set {key}.{prefix}experiment")
    runs = select_runs(study, sel, ename, f"{key}.{prefix}select")
    if not runs:
        raise ConfigError(f"{key}.{prefix}select: selects no run of experiment {ename!r}")
    seeds = sorted({lab["seed"] for _, lab in runs})
    seed = spec.get("seed", seeds[0])
    runs = [(rid, lab) for rid, lab in runs if lab["seed"] == seed]
    if not runs:
        raise ConfigError(f"figures.{name}.seed: {seed!r} is not a seed of {key}.{prefix}experiment {ename!r} {seeds}")
    if len(runs) > 1:
        labels = sorted({f"{lab['algorithm']} / {lab['dataset']} / {lab['model']} / {lab['partition']}" for _, lab in runs})
        raise ConfigError(f"{key}.{prefix}select: selects {len(runs)} runs of {ename!r} ({'; '.join(labels)}); "
                          f"narrow it to one (keys algorithm, preset, dataset, model, partition)")
    rid, lab = runs[0]
    d = study.run_dir(rid)
    hfile = _hessian_value(spec)[0]
    return {"file": f"{d}/{paths.LANDSCAPE[2]}", "hessian": f"{d}/{hfile}",
            "algorithm": lab["algorithm"], "partition": lab["partition"], "seed": lab["seed"]}


def _hessian_value(spec: dict) -> tuple[str, str]:
    fname, _, key = str(spec.get("hessian_value", f"{paths.HESSIAN}:lambda_max")).partition(":")
    return fname, key


def _panels(study, name: str, spec: dict) -> list[dict]:
    raw = spec.get("panels")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"figures.{name}.panels: a non-empty list of {{title, experiment, overlay_experiment}}")
    out = []
    for i, panel in enumerate(raw):
        if not isinstance(panel, dict):
            raise ConfigError(f"figures.{name}.panels[{i}]: must be a mapping with title, experiment, overlay_experiment")
        bad = sorted(set(panel) - set(PANEL_KEYS))
        if bad:
            raise ConfigError(f"figures.{name}.panels[{i}]: unknown key {bad[0]!r}; allowed: {', '.join(PANEL_KEYS)}")
        out.append({"title": str(panel.get("title", "")), "main": _role(study, name, spec, i, panel, ""),
                    "overlay": _role(study, name, spec, i, panel, "overlay_")})
    return out


def _check_entry(name: str, spec: dict) -> None:
    bad = sorted(set(spec) - set(ENTRY_KEYS))
    if bad:
        raise ConfigError(f"figures.{name}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(ENTRY_KEYS))}")
    if spec.get("data", "train") not in ("train", "test"):
        raise choice_error(f"figures.{name}.data", spec["data"], ("train", "test"))
    if spec.get("annotate", "edge") not in ANNOTATE:
        raise choice_error(f"figures.{name}.annotate", spec["annotate"], ANNOTATE)
    fname, key = _hessian_value(spec)
    if fname not in HESSIAN_FILES or not key:
        raise ConfigError(f"figures.{name}.hessian_value: '<file>:<key>' with file one of {', '.join(HESSIAN_FILES)}, "
                          f"got {spec.get('hessian_value')!r}")
    alpha = spec.get("overlay_alpha", 0.35)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"figures.{name}.overlay_alpha: a transparency in (0, 1), got {alpha!r}")
    z = spec.get("zlim")
    if z is not None and not (isinstance(z, list) and len(z) == 2 and all(isinstance(v, (int, float)) and not
                                                                          isinstance(v, bool) for v in z) and z[0] < z[1]):
        raise ConfigError(f"figures.{name}.zlim: expected [low, high] with low < high, got {z!r}")
    from matplotlib import colormaps, colors

    if spec.get("cmap", "YlOrRd") not in colormaps:
        raise ConfigError(f"figures.{name}.cmap: {spec['cmap']!r} is not a matplotlib colormap")
    if not colors.is_color_like(spec.get("overlay_color", "purple")):
        raise ConfigError(f"figures.{name}.overlay_color: {spec['overlay_color']!r} is not a matplotlib colour")


@FIGURE_KINDS.register("landscape_overlay")
class LandscapeOverlay:
    @staticmethod
    def check(study, name, spec):
        _check_entry(name, spec)
        _panels(study, name, spec)

    @staticmethod
    def inputs(study, name, spec):
        keys = ("file", "hessian") if spec.get("annotate") == "hessian" else ("file",)
        runs = [p[r] for p in _panels(study, name, spec) for r in ("main", "overlay")]
        return list(dict.fromkeys(run[k] for run in runs for k in keys))

    @staticmethod
    def manifest(study, name, spec):
        return {"name": name, "title": spec.get("title", ""), "caption": target_caption(spec),
                "data": spec.get("data", "train"), "annotate": spec.get("annotate", "edge"),
                "label": spec.get("label", "w/ comp"), "overlay_label": spec.get("overlay_label", "w/o comp"),
                "cmap": spec.get("cmap", "YlOrRd"), "overlay_color": spec.get("overlay_color", "purple"),
                "overlay_alpha": spec.get("overlay_alpha", 0.35), "zlim": spec.get("zlim"),
                "hessian_key": _hessian_value(spec)[1],
                "panels": _panels(study, name, spec)}

    @staticmethod
    def render(m, outs):
        from ..report.style import save_all

        save_all(overlay_figure(m), outs, layout=False)


# --------------------------------------------------------------------------------------------
# numbers and drawing


def edge_rise(axis: np.ndarray, Z: np.ndarray) -> float:
    """Sharpness read off a surface: mean loss on the grid's border minus the loss at the centre."""
    c = int(np.argmin(np.abs(axis)))
    border = np.concatenate([Z[0], Z[-1], Z[1:-1, 0], Z[1:-1, -1]])
    return float(np.mean(border) - Z[c, c])


def _surface(m: dict, i: int, role: str) -> dict:
    run = m["panels"][i][role]
    z = np.load(run["file"])
    meta = json.loads(str(z["meta"])) if "meta" in z else {}
    out = {"axis": z["axis"], "Z": z[f"{m['data']}_loss"], "meta": meta}
    if m["annotate"] == "hessian":
        out["lambda_max"] = json.loads(Path(run["hessian"]).read_text())[m.get("hessian_key", "lambda_max")]
    return out


def _same_axes(m: dict, i: int, a: dict, b: dict) -> None:
    key = f"figures.{m['name']}.panels[{i}]"
    if a["axis"].shape != b["axis"].shape or not np.allclose(a["axis"], b["axis"]):
        raise ConfigError(f"{key}: the two landscape files have different grids; rebuild both with the same "
                          "analysis.landscape settings")
    for k in SAME_AXES:
        if a["meta"].get(k) != b["meta"].get(k):
            raise ConfigError(f"{key}: the two landscape files differ in analysis.landscape.{k} "
                              f"({a['meta'].get(k)!r} vs {b['meta'].get(k)!r}); rebuild both")


def _note(m: dict, a: dict, b: dict) -> str:
    if m["annotate"] == "none":
        return ""
    lab, olab = m["label"], m["overlay_label"]
    lines = [f"Δ edge: {edge_rise(a['axis'], a['Z']):.3g} ({lab}), {edge_rise(b['axis'], b['Z']):.3g} ({olab})"]
    if m["annotate"] == "hessian":
        key = m.get("hessian_key", "lambda_max")
        what = "λ_max" if key == "lambda_max" else f"λ_max ({key.removeprefix('lambda_max_')} over clients)"
        lines.insert(0, f"{what}: {a['lambda_max']:.4g} ({lab}), {b['lambda_max']:.4g} ({olab})")
    return "\n".join(lines)


def overlay_figure(m: dict):
    """The figure (not saved): one 3-D panel per entry, shared z-limits and colour scale."""
    from matplotlib.patches import Patch

    from ..report.style import apply_style, plt

    apply_style()
    n = len(m["panels"])
    surfs = [(_surface(m, i, "main"), _surface(m, i, "overlay")) for i in range(n)]
    for i, (a, b) in enumerate(surfs):
        _same_axes(m, i, a, b)
    finite = np.concatenate([s["Z"][np.isfinite(s["Z"])] for p in surfs for s in p])  # a diverged corner is inf
    lo, hi = m["zlim"] or (float(finite.min()), float(finite.max()))
    fig = plt.figure(figsize=(3.4 * n, 4.0))
    cmap = plt.get_cmap(m["cmap"])
    for i, ((a, b), panel) in enumerate(zip(surfs, m["panels"])):
        ax = fig.add_subplot(1, n, i + 1, projection="3d", computed_zorder=False)
        X, Y = np.meshgrid(a["axis"], a["axis"])
        ax.plot_surface(X, Y, np.clip(a["Z"], lo, hi), cmap=cmap, vmin=lo, vmax=hi, rstride=1, cstride=1,
                        linewidth=0, antialiased=False, zorder=1)
        # the overlay last and transparent: the compressed surface shows through it (the paper's purple veil)
        Zb = np.clip(b["Z"], lo, hi)
        ax.plot_surface(X, Y, Zb, color=m["overlay_color"], alpha=m["overlay_alpha"], rstride=1, cstride=1,
                        edgecolor=m["overlay_color"], linewidth=0.15, zorder=2)
        _axes_style(ax, lo, hi, m["data"])
        _arrow(ax, a["axis"], Zb, m["overlay_label"], m["overlay_color"])
        ax.set_title(panel["title"], y=-0.08, fontsize=9)  # under the panel, as the paper's sub-captions
        note = _note(m, a, b)
        if note:
            ax.text2D(0.5, 1.0, note, transform=ax.transAxes, ha="center", va="top", fontsize=6.5)
    handles = [Patch(facecolor=cmap(0.6), label=m["label"]),
               Patch(facecolor=m["overlay_color"], alpha=m["overlay_alpha"], edgecolor=m["overlay_color"],
                     label=m["overlay_label"])]
    fig.legend(handles=handles, loc="upper right", ncol=2, frameon=False, bbox_to_anchor=(0.99, 0.99))
    head = "\n".join(x for x in (m.get("caption", ""), m.get("title", "")) if x)
    if head:
        fig.suptitle(head, fontsize=9)
    fig.subplots_adjust(left=0.01, right=0.97, bottom=0.1, top=0.86, wspace=0.12)
    return fig


def _axes_style(ax, lo: float, hi: float, data: str) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_zlim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(5))
    ax.set_xlabel("direction 1", labelpad=-6, fontsize=8)
    ax.set_ylabel("direction 2", labelpad=-6, fontsize=8)
    ax.set_zlabel(f"{'training' if data == 'train' else 'test'} loss", labelpad=-4, fontsize=8)
    ax.tick_params(labelsize=6, pad=-3)
    ax.view_init(elev=25, azim=-60)


def _arrow(ax, axis: np.ndarray, Z: np.ndarray, label: str, color) -> None:
    """The paper's arrow: the label outside the box, pointing at the overlaid surface's near edge."""
    from mpl_toolkits.mplot3d import proj3d

    j = len(axis) // 4  # on the front edge (direction 2 lowest in this view), left of the centre
    x, y, _ = proj3d.proj_transform(axis[j], axis[0], Z[0, j], ax.get_proj())
    ax.annotate(label, xy=(x, y), xycoords="data", xytext=(0.0, 0.55), textcoords="axes fraction", color=color,
                fontsize=8, arrowprops={"arrowstyle": "->", "color": color, "lw": 0.9})
