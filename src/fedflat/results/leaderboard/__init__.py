"""One protocol, every method: the cross-paper leaderboard (config/leaderboard.yaml, docs/leaderboard.md).

protocol -- the `leaderboard:` config section: validation, tuning and final experiments, the targets
flow     -- the tuning choice (a Snakemake checkpoint) and the final runs it selects
results  -- the final runs' outputs as tidy frames (accuracy, costs, curvature, ranks)
stats    -- ranks, Pareto frontier, cost to reach, rank correlations with bootstrap intervals
kinds    -- the table and figure kinds; table/figures render them
plan     -- run counts and wall-time estimates (`python -m fedflat.leaderboard`)
"""
