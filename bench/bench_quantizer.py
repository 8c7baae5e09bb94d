"""The stochastic quantizer per call on the FMNIST MLP's update (199,210 values; FedSynSAM Table II's Q columns)
under each norm scope of stage S: one norm (global), one per tensor, one per 512-value bucket. `layout` times the
bucketed segment index built on every call (before 27 Nov 2026) against the cached one (the same values), in
alternating chunks of one process.

  python -m bench.bench_quantizer [--calls 200] [--chunks 5]
"""
from __future__ import annotations

import argparse
import time

import torch

from fedflat.training.compression.quantization import _segment_ids, segment_norms, stochastic_quantize
from fedflat.core.util.malloc import tune_allocator

torch.set_num_threads(1)
MLP = (784 * 200, 200, 200 * 200, 200, 200 * 10, 10)  # mlp2's tensors, in order


def layouts(d: int) -> dict[str, list[tuple[int, int]]]:
    ends = torch.tensor(MLP).cumsum(0).tolist()
    return {"global": [(0, d)], "per_tensor": list(zip([0] + ends[:-1], ends)),
            "bucket512": [(s, min(s + 512, d)) for s in range(0, d, 512)]}


def _per_call(fn, calls: int) -> float:
    t = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - t) / calls * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--chunks", type=int, default=5)
    a = ap.parse_args(argv)
    tune_allocator()  # as every training process does (training/fl/engine.py)
    d = sum(MLP)
    v, gen = torch.randn(d), torch.Generator().manual_seed(0)
    lay = layouts(d)
    for name, segs in lay.items():
        ms = min(_per_call(lambda: stochastic_quantize(v, 17, segs, gen), a.calls) for _ in range(a.chunks))
        print(f"quantize {name:10s} {len(segs):4d} segments  {ms:.2f} ms/call (CPU time, best of {a.chunks} chunks)")
    segs = lay["bucket512"]

    def rebuilt():  # the index built on every call, as before the cache
        _segment_ids.cache_clear()
        return segment_norms(v, segs)

    def cached():
        return segment_norms(v, segs)

    old = new = 0.0
    for _ in range(a.chunks):  # alternate so that load hits both sides alike
        old += _per_call(rebuilt, a.calls)
        new += _per_call(cached, a.calls)
    print(f"layout bucket512 segment norms: index rebuilt {old / a.chunks:.2f} ms/call, cached {new / a.chunks:.2f} "
          f"ms/call, speed-up {old / new:.1f}x")


if __name__ == "__main__":
    main()
