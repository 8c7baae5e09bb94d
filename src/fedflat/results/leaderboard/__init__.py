"""One protocol, every method: the cross-paper leaderboard (config/leaderboard.yaml, docs/leaderboard.md).

protocol        -- the `leaderboard:` config section: validation, tuning and final experiments, the targets
flow            -- the tuning choice (a Snakemake checkpoint) and the final runs it selects
results         -- the final runs' outputs as tidy frames (accuracy, costs, curvature, ranks)
stats           -- ranks, Pareto frontier, cost to reach, rank correlations with bootstrap intervals
kinds           -- the table and figure kinds; table/figures render them
plan            -- run counts and wall-time estimates (`python -m fedflat.leaderboard`)
page_records    -- the committed evidence (runs.csv) read by stage for the result pages
page_blocks     -- the pages' generated blocks: status, screen, choice, ranking, stability, cost, figures
page_verdicts   -- the pages' verdict blocks: the rho = 0 ablation, the papers' headline claims, the statistics
headline_claims -- each proposed method against the baselines of its paper's headline table
"""
