"""FedSynSAM (Gu et al.): trajectory-matching distillation of a synthetic set on the server and the
synthetic-guided SAM local step; DynaFed as its baseline. Presets register from `preset`, which the
composition root (fedflat.plugins) imports. See docs/fedsynsam.md."""
