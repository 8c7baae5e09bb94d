"""The training core: data sets (data/) and models (models/), the algorithms' parts and presets (algorithms/),
uplink compressors (compression/), the simulation engine (fl/) and FedSynSAM's server-side distillation (synsam/).
Below the pipeline, above core (docs/architecture.md)."""
