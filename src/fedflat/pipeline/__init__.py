"""From a config to runs to tables and figures: a study's scale (scale), its expansion into runs (study), the
inputs every entry point checks (inputs), tables and figures (report/), the flatness analysis (analysis/) and the
in-process builder (build). Below the results, above the training core (docs/architecture.md)."""
