"""Portable numerics (src/fedflat/core/util/numerics.py): the weights do not depend on what the environment asks of the
kernels, while native kernels give different weights under two capability settings; a process that loaded torch
natively cannot claim to be portable; a run records the numerics it ran under."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.core.util import numerics

PROBE = Path(__file__).with_name("numerics_probe.py")
KNOBS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS",
         "MKL_NUM_THREADS", "MKL_DYNAMIC", numerics.ENV_VAR)


@functools.lru_cache(maxsize=None)
def _probe_once(mode: str, env: tuple) -> tuple[str, str]:
    return _run_probe(mode, dict(env))


def _probe(mode: str, **env) -> tuple[str, str]:
    """(capability, weights digest) of the probe in a fresh process; one process per distinct setting."""
    return _probe_once(mode, tuple(sorted(env.items())))


def _run_probe(mode: str, env: dict) -> tuple[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in KNOBS}
    out = subprocess.run([sys.executable, str(PROBE), mode], env={**clean, **env}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    cap, digest = out.stdout.split()
    return cap, digest


def test_native_weights_depend_on_the_kernels_the_environment_picks():
    """The premise: without pinning, two capability settings of the same machine train to different weights."""
    default, avx2 = _probe("native", ATEN_CPU_CAPABILITY="default"), _probe("native", ATEN_CPU_CAPABILITY="avx2")
    assert (default[0], avx2[0]) == ("DEFAULT", "AVX2")
    assert default[1] != avx2[1]


def test_portable_weights_are_the_same_whatever_the_environment_asks():
    runs = [_probe("portable"), _probe("portable", ATEN_CPU_CAPABILITY="default", ONEDNN_MAX_CPU_ISA="ALL"),
            _probe("portable", ATEN_CPU_CAPABILITY="avx512", MKL_CBWR="COMPATIBLE", OMP_NUM_THREADS="2",
                   MKL_NUM_THREADS="2")]
    assert {cap for cap, _ in runs} == {numerics.CAPABILITY}
    assert len({digest for _, digest in runs}) == 1, runs


def test_portable_and_native_differ_here():
    """Portable mode really changes the kernels on this machine (else the test above proves nothing): AVX2 kernels
    with MKL's strict AVX2 branch versus an unpinned process asked for unvectorised ATen kernels."""
    assert _probe("portable")[1] != _probe("native", ATEN_CPU_CAPABILITY="default")[1]


def test_a_process_that_loaded_torch_natively_cannot_enter_portable(monkeypatch):
    for k in KNOBS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(numerics, "_active", None)
    assert "torch" in sys.modules  # conftest imported it: the kernels are already chosen
    with pytest.raises(ConfigError, match="before torch is imported"):
        numerics.enter("portable")
    with pytest.raises(ConfigError, match="asks for portable numerics but this process is native"):
        numerics.require("portable")
    numerics.require("native")  # no promise, nothing to check
    with pytest.raises(ConfigError, match="numerics: unknown value 'fast'"):
        numerics.enter("fast")


def test_mode_of_a_config():
    assert numerics.of_config({}) == "portable"  # paper scale, the default scale
    assert numerics.of_config({"scale": "tiny"}) == "native"
    assert numerics.of_config({"scale": "paper", "numerics": "native"}) == "native"
    assert numerics.of_config({"scale": "tiny"}, scale="paper") == "portable"
    with pytest.raises(ConfigError, match="numerics"):
        numerics.of_config({"numerics": "fast"})


def test_a_portable_run_records_its_numerics_whatever_the_environment(tmp_path):
    """`fedflat train --numerics portable` under an environment asking for AVX-512 and 2 threads: the run's
    config.json says AVX2 kernels, one thread, MKL's strict AVX2 branch, portable, this numerics version, the CPU;
    the compiled backend, asked for, is refused in one line."""
    from tests.faults.helpers import make_partition_file, make_spec

    part = make_partition_file(tmp_path / "p.npz")
    spec = make_spec("fedavg", rounds=2)
    env = {**{k: v for k, v in os.environ.items() if k not in KNOBS}, "ATEN_CPU_CAPABILITY": "avx512",
           "OMP_NUM_THREADS": "2"}
    cmd = [sys.executable, "-m", "fedflat", "train", "--spec", json.dumps(spec.to_dict()), "--partition", str(part),
           "--out-dir", str(tmp_path / "run"), "--threads", "2", "--numerics", "portable", "--quiet"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cfg = json.loads((tmp_path / "run/config.json").read_text())
    e = cfg["environment"]
    assert (e["numerics"], e["numerics_version"], e["cpu_capability"], e["threads"], e["mkl_cbwr"]) == (
        "portable", numerics.NUMERICS_VERSION, "AVX2", 1, "AVX2,STRICT")
    assert e["cpu_model"] and e["mkl"] and e["torch"] and e["deterministic"] is True
    assert cfg["backend"] == "eager"
    assert json.loads((tmp_path / "run/summary.json").read_text())["numerics"] == "portable"
    compiled = make_spec("fedavg", rounds=2, backend="compile")
    cmd[cmd.index("--spec") + 1] = json.dumps(compiled.to_dict())
    cmd[cmd.index("--out-dir") + 1] = str(tmp_path / "run2")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "'compile' is not portable" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_only_paper_scale_studies_refuse_a_modified_tree():
    from fedflat.pipeline.study import Study

    assert Study({}).requires_clean and Study({"scale": "paper"}).requires_clean
    assert not Study({"scale": "tiny"}).requires_clean and not Study({"scale": "reduced"}).requires_clean
    assert not Study({"allow_dirty": "true"}).requires_clean and not Study({"allow_dirty": True}).requires_clean
    assert (Study({}).numerics, Study({"scale": "tiny"}).numerics) == ("portable", "native")
