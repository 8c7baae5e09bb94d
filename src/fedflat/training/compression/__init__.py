"""Uplink compressors (FedSynSAM Sec. III-A): stochastic quantization ("quant") and Top-k ("topk"),
registered into compression.interface.COMPRESSORS; optional error feedback. See docs/fedsynsam.md."""
from .uplink_compressor import UplinkCompressor
from .quantization import StochasticQuantizer, num_levels, stochastic_quantize
from .topk import TopK, kept_count

__all__ = ["StochasticQuantizer", "TopK", "UplinkCompressor", "kept_count", "num_levels", "stochastic_quantize"]
