"""Two parts of one preset that declare the same parameter name are an error at registration, unless
the sharing is declared (`Part.shares`, one Param object): a server-side ρ must not silently become
the clients' SAM radius."""
import pytest

from fedflat.training.algorithms import PRESETS, SERVERS
from fedflat.training.algorithms.parts import Param
from fedflat.training.algorithms.perturbations import RHO
from fedflat.training.algorithms.presets import preset
from fedflat.training.algorithms.servers import MeanServer
from fedflat.core.errors import ConfigError


@pytest.fixture
def server(monkeypatch):
    """Register a server class for one test (the registries keep no removal)."""
    def add(name, cls):
        monkeypatch.setitem(SERVERS._items, name, cls)
    monkeypatch.setattr(PRESETS, "_items", dict(PRESETS._items))
    return add


class RhoServer(MeanServer):  # a FedGloSS-style server SAM with a radius of its own
    name = "rho_server"
    params = {"rho": Param(0.5, "server SAM radius", low=0.0)}


class SharingServer(MeanServer):
    name = "sharing_server"
    params = {"rho": RHO}
    shares = ("rho",)


class UndeclaredServer(MeanServer):
    name = "undeclared_server"
    params = {"rho": RHO}  # the same Param, but the sharing is not declared


def test_a_second_rho_is_refused_naming_preset_parameter_and_parts(server):
    server("rho_server", RhoServer)
    with pytest.raises(ConfigError) as err:
        preset("twice", "Twice", "sam", "rho_server", "test")
    msg = str(err.value)
    assert "'twice'" in msg and "'rho'" in msg and "SAMPerturbation" in msg and "RhoServer" in msg
    assert "\n" not in msg and "twice" not in PRESETS


def test_sharing_must_be_declared_and_use_one_param(server):
    server("undeclared_server", UndeclaredServer)
    with pytest.raises(ConfigError, match="shares"):
        preset("undeclared", "U", "sam", "undeclared_server", "test")
    server("sharing_server", SharingServer)
    preset("shared", "S", "sam", "sharing_server", "test")
    assert PRESETS.get("shared").resolve({"rho": 0.2})["rho"] == 0.2


def test_every_registered_preset_registers_and_the_declared_sharings_are_the_known_ones():
    shared = {}
    for name in PRESETS.names():
        classes = PRESETS.get(name).part_classes()
        PRESETS.get(name).param_specs()
        seen: dict = {}
        for cls in classes:
            for k in cls.params:
                if k in seen and seen[k] is not cls:
                    shared.setdefault(k, set()).add(name)
                seen.setdefault(k, cls)
    # FedDyn's α (also FedGloSS's server), FedDC's aggregation, FedTOGA's Δ, FedGMT's aggregation switch
    assert set(shared) == {"alpha", "feddc_agg", "delta_norm", "gmt_agg"}
    assert "fedgloss" in shared["alpha"] and shared["gmt_agg"] == {"fedgmt"}
