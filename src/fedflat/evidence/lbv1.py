"""What changed against leaderboard v1 (25 Nov 2026). v1's run directories were lost before per-run evidence was
kept; what survives are the ranks its pages published for 21 of its 50 methods (README.md and
docs/leaderboard.md at commit ec8faef), committed as results/evidence/leaderboard_v1/ with their source. They are
compared with v2's primary ranks among v1's own 50 methods, so v2's five new methods move no rank."""
from __future__ import annotations

import pandas as pd

from . import lbstats

STUDY = "leaderboard_v1"


def published(ctx) -> pd.DataFrame:
    """v1's published (preset, partition) ranks: v1_rank, v1_final_acc and v1_std where quoted, v1_fallback (yes:
    ranked by re-runs at a lower lr after a seed diverged; no; unknown), source."""
    return pd.read_csv(ctx.root / ctx.evidence_root / STUDY / "published_ranks.csv")


def methods(ctx) -> list[str]:
    """The presets v1 ranked (its config/leaderboard.yaml at ec8faef)."""
    return pd.read_csv(ctx.root / ctx.evidence_root / STUDY / "ranked_methods.csv")["preset"].tolist()


def moves(runs: pd.DataFrame, v1: pd.DataFrame, v1_methods: list[str], lb: dict) -> pd.DataFrame:
    """Per published (preset, partition): v1's rank, v2's primary rank among v1's methods, `up` (v1 rank minus v2
    rank: positive = moved up), v2's cell (mean, std, diverged seeds, no stable setting), and whether v2's pick on
    that partition is the 50-round Dir(0.3) screen's best cell (`screen_pick`, lbstats.picks_against_screen: the
    setting a v1-style rule, short horizon and one partition, takes from v2's grid). `lb`: the leaderboard config."""
    mine = runs[runs["preset"].isin(v1_methods)]
    ranks = lbstats.primary_ranks(mine).set_index(["preset", "partition"])
    kept = lbstats.picks_against_screen(mine, lb).set_index(["preset", "partition"])["screen_pick"]
    rows = []
    for r in v1.itertuples():
        key = (r.preset, r.partition)
        v2 = ranks.loc[key] if key in ranks.index else None
        rows.append({"preset": r.preset, "label": r.label, "partition": r.partition, "v1_rank": float(r.v1_rank),
                     "v1_fallback": r.v1_fallback, "v2_rank": float(v2["rank"]) if v2 is not None else float("nan"),
                     "up": float(r.v1_rank) - float(v2["rank"]) if v2 is not None else float("nan"),
                     "v2_mean": float(v2["mean"]) if v2 is not None else float("nan"),
                     "v2_std": float(v2["std"]) if v2 is not None else float("nan"),
                     "v2_diverged": int(v2["diverged"]) if v2 is not None else 0,
                     "v2_unstable": bool(v2["unstable"]) if v2 is not None else False,
                     "screen_pick": bool(kept.get(key, False))})
    return pd.DataFrame(rows)


def rank_agreement(m: pd.DataFrame) -> list[dict]:
    """Per partition: Kendall's tau between v1's and v2's ranks of the published methods, with its bootstrap
    interval over methods (util.stats.correlation)."""
    from ..core.util.rank_stats import correlation, kendall

    return [{"partition": p, **correlation(g["v1_rank"].to_numpy(), g["v2_rank"].to_numpy(), kendall)}
            for p, g in m.groupby("partition", sort=False)]
