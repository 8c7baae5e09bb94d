"""Numerics modes: which CPU kernels a process runs, decided before torch loads (docs/reproducibility.md).

  portable  every kernel choice that depends on the machine is pinned: ATen's vectorised kernels use their AVX2
            build (ATEN_CPU_CAPABILITY), MKL its AVX2 code branch in strict conditional-numerical-reproducibility
            mode (MKL_CBWR), oneDNN no ISA above AVX2, one thread, deterministic algorithms, and local gradients
            run eagerly (inductor compiles its kernels with the host's C++ compiler and -march=native, which
            nothing here can pin). A run then repeats bit for bit on any x86-64 CPU with AVX2 and FMA, given the
            same torch wheel (its MKL and oneDNN are linked into it).
  native    the fastest kernels this CPU has (AVX-512 where present), the compiled backend where it wins: numbers
            may differ between machines.

The environment variables are read once, when torch first dispatches a kernel, so they must be set before torch
is imported: the entry points (`fedflat train`, `python -m fedflat.analysis`, `python -m fedflat.<pkg>`) call
`enter` before they import anything that imports torch, and `fedflat/__init__.py` applies FEDFLAT_NUMERICS
(`portable` | `native`) for any other process (an in-process build, a notebook, the tests). This module must not
import torch at import time.
"""
from __future__ import annotations

import os
import platform
import sys

from ..errors import ConfigError, choice_error

# A change that moves any number of a run (a kernel, an update rule, an RNG stream) bumps this, with the golden
# runs' hashes (tests/golden/), and the commit says why. Every run records it; evidence of another version is not
# reused (fedflat.core.recorded).
NUMERICS_VERSION = 1

MODES = ("portable", "native")
ENV_VAR = "FEDFLAT_NUMERICS"

PORTABLE_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",     # ATen's CPU kernels: the AVX2 build whatever the CPU offers beyond it
    "MKL_CBWR": "AVX2,STRICT",         # MKL's AVX2 branch on every CPU; STRICT: results independent of alignment
    "ONEDNN_MAX_CPU_ISA": "AVX2",      # oneDNN (convolutions): no AVX-512 / AMX kernels
    "DNNL_MAX_CPU_ISA": "AVX2",        # the same knob under oneDNN's older name
    "OMP_NUM_THREADS": "1",            # one thread per job: a reduction's order never depends on the core count
    "MKL_NUM_THREADS": "1",
    "MKL_DYNAMIC": "FALSE",
}
CAPABILITY = "AVX2"  # what torch.backends.cpu.get_cpu_capability() reports once ATEN_CPU_CAPABILITY=avx2 holds

_active: str | None = None  # the mode this process entered (None: never asked)


def check_mode(mode, key: str = "numerics") -> str:
    if mode not in MODES:
        raise choice_error(key, mode, MODES)
    return mode


def enter(mode: str) -> str:
    """Put this process in `mode` before torch loads. Portable after torch has loaded with other kernels cannot be
    honoured: a one-line ConfigError says how to start the process instead. Returns the mode."""
    global _active
    check_mode(mode)
    if mode == "portable":
        if "torch" in sys.modules and not _env_pinned():
            raise ConfigError("numerics: portable needs its kernel settings before torch is imported; run through "
                              f"`fedflat train` / snakemake, or set {ENV_VAR}=portable before starting Python")
        os.environ.update(PORTABLE_ENV)
        if "torch" in sys.modules:
            _pin_torch()
    _active = mode
    os.environ[ENV_VAR] = mode  # child processes (snakemake jobs, pytest workers) inherit it
    return mode


def of_config(config: dict, scale: str | None = None) -> str:
    """A study's mode: its `numerics:` where set; portable at paper scale (every study whose records become
    evidence: the catalogs, the leaderboard, the tuning studies), native at reduced or tiny scale."""
    mode = config.get("numerics")
    if mode is not None:
        return check_mode(mode)
    return "portable" if (scale or config.get("scale", "paper")) == "paper" else "native"


def enter_from_argv(argv: list[str]) -> str:
    """`python -m fedflat.<pkg> ... --numerics MODE`: enter MODE (default: FEDFLAT_NUMERICS, else native) before
    the composition root imports torch."""
    mode = os.environ.get(ENV_VAR) or "native"
    for i, arg in enumerate(argv):
        if arg == "--numerics" and i + 1 < len(argv):
            mode = argv[i + 1]
        elif arg.startswith("--numerics="):
            mode = arg.split("=", 1)[1]
    return enter(mode)


def enter_from_environment() -> None:
    """fedflat/__init__.py: apply FEDFLAT_NUMERICS=portable when torch is not loaded yet (other values: nothing)."""
    if os.environ.get(ENV_VAR) == "portable" and "torch" not in sys.modules:
        os.environ.update(PORTABLE_ENV)


def active() -> str:
    """The mode this process runs in: the one entered, else portable where the environment pins every kernel."""
    if _active is not None:
        return _active
    return "portable" if os.environ.get(ENV_VAR) == "portable" and _env_pinned() else "native"


def _env_pinned() -> bool:
    return all(os.environ.get(k) == v for k, v in PORTABLE_ENV.items())


def _pin_torch() -> None:
    """What portable mode sets inside torch: one thread, deterministic algorithms; the kernels must be AVX2's."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)  # CPU kernels with no deterministic form only warn
    cap = torch.backends.cpu.get_cpu_capability()
    if cap != CAPABILITY:
        raise ConfigError(f"numerics: portable needs a CPU with AVX2 and torch loaded after ATEN_CPU_CAPABILITY=avx2 "
                          f"was set; this process runs {cap} kernels")


def require(mode: str) -> None:
    """Before a run computes anything: the process really is in `mode` (portable: the kernels are pinned)."""
    check_mode(mode)
    if mode == "portable":
        if active() != "portable":
            raise ConfigError(f"numerics: the run asks for portable numerics but this process is {active()}; run "
                              f"through `fedflat train` / snakemake, or set {ENV_VAR}=portable before starting Python")
        _pin_torch()


def mkl_version() -> str | None:
    import torch

    for line in torch.__config__.show().splitlines():
        if "Math Kernel Library Version" in line:
            return line.split("Version", 1)[1].split("Product")[0].strip(" -")
    return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux; platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(mode: str | None = None) -> dict:
    """What a run records about the numerics it ran under (`mode`: the run's own, else the process's)."""
    import torch

    return {"numerics": mode or active(), "numerics_version": NUMERICS_VERSION, "cpu_model": cpu_model(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
            "mkl": mkl_version(), "mkl_cbwr": os.environ.get("MKL_CBWR"), "threads": torch.get_num_threads(),
            "deterministic": torch.are_deterministic_algorithms_enabled()}
