"""Run descriptions, registries and plain helpers, below everything: a run's spec and id (spec), run id <-> output
path (run_paths), the table and figure kind registry (kind_registry), a run's outcome read back from the committed
evidence (recorded), the generic name -> object registry (registry), helpers (util/) and ConfigError (errors)."""
