"""What is built on a study: the paper catalogs (papers/) and the cross-paper leaderboard (leaderboard/, above the
catalogs). Below the evidence, above the pipeline (docs/architecture.md)."""
