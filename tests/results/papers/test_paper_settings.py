"""Every run of every paper catalog uses exactly the settings its paper states.

The statements live in config/papers/settings/<paper>.yaml (each value with the paper's sentence or,
where the paper is silent, how ours was chosen); `fedflat.results.papers.stated_settings.check` resolves every run
at scale: paper and lists each difference as target, key, paper's value, ours."""
from __future__ import annotations

import textwrap

import pytest
import yaml

from fedflat.core.errors import ConfigError
from fedflat.results.papers.stated_settings import check, load_statement, render_markdown

from .paper_helpers import PAPERS, ROOT


@pytest.mark.parametrize("paper", PAPERS)
def test_catalog_runs_the_papers_settings(paper):
    findings = check(paper, ROOT / "config" / "papers")
    shown = "\n".join(map(str, findings[:60]))
    assert not findings, f"{len(findings)} settings differ from {paper}'s statement:\n{shown}"


@pytest.mark.parametrize("paper", PAPERS)
def test_every_statement_names_its_sources(paper):
    text = render_markdown(paper, ROOT / "config" / "papers")
    assert text.count("\n") > 10


# ------------------------------------------------------------------ the checker itself, on a toy catalog
CATALOG = """
study: toy
paper: {name: Toy}
training: {num_clients: 10, participation: 1.0, rounds: 3, local_steps: 2, batch_size: 8, lr: 0.1,
           lr_decay: 1.0, weight_decay: 0.0, local_momentum: 0.0, dirichlet_variant: lda}
experiments:
  t1_a:
    datasets: [digits]
    models: [mlp]
    partitions: [dir0.1]
    algorithms: [fedavg, {preset: fedsam, params: {rho: 0.1}}]
    seeds: [0, 1]
  f5_rho:
    datasets: [digits]
    models: [mlp]
    partitions: [iid]
    algorithms: [{preset: fedsam, label: r1, params: {rho: 0.01}}, {preset: fedsam, label: r2, params: {rho: 0.1}}]
    seeds: [0]
tables:
  table1: {kind: accuracy, experiment: t1_a}
"""

STATEMENT = """
scopes:
  - experiments: "*"
    training:
      num_clients: {value: 10, source: "Sec. 1"}
      participation: {value: 1.0, source: "Sec. 1"}
      rounds: {value: 3, source: "Sec. 1"}
      local_steps: {value: 2, source: "Sec. 1"}
      batch_size: {value: 8, source: "Sec. 1"}
      lr: {value: 0.1, source: "unstated: tuned on a validation split"}
      lr_decay: {value: 1.0, source: "Sec. 1"}
      weight_decay: {value: 0.0, source: "Sec. 1"}
      local_momentum: {value: 0.0, source: "Sec. 1"}
  - experiments: ["t1_*"]
    partition: {value: dir0.1-lda, source: "Sec. 2"}
    seeds: {value: [0, 1], source: "Sec. 2"}
    algorithms:
      fedsam: {rho: {value: 0.1, source: "Sec. 2"}}
  - experiments: f5_rho
    partition: {value: iid, source: "Fig. 5"}
    seeds: {value: [0], source: "Fig. 5"}
    algorithms:
      fedsam: {rho: {sweep: [0.01, 0.1], source: "Fig. 5"}}
"""


def _toy(tmp_path, statement: str, catalog: str = CATALOG):
    (tmp_path / "settings").mkdir(exist_ok=True)
    (tmp_path / "toy.yaml").write_text(catalog)
    (tmp_path / "settings" / "toy.yaml").write_text(textwrap.dedent(statement))
    return check("toy", tmp_path)


def test_checker_passes_a_faithful_catalog(tmp_path):
    assert _toy(tmp_path, STATEMENT) == []


def test_checker_names_target_key_paper_and_ours(tmp_path):
    found = _toy(tmp_path, STATEMENT.replace("rho: {value: 0.1", "rho: {value: 0.05"))
    assert len(found) == 2  # FedSAM seeds 0 and 1 of t1_a
    msg = str(found[0])
    assert "table1" in msg and "t1_a" in msg and "algorithms.fedsam.rho" in msg and "0.05" in msg and "0.1" in msg


def test_checker_flags_unstated_settings_and_stale_scopes(tmp_path):
    st = STATEMENT.replace('      lr: {value: 0.1, source: "unstated: tuned on a validation split"}\n', "")
    st += '  - experiments: "t9_*"\n    seeds: {value: [0], source: "Table 9"}\n'
    found = [str(f) for f in _toy(tmp_path, st)]
    assert sum("training.lr is not stated" in f for f in found) == 6  # every run of both experiments (4 + 2)
    assert any("matches no experiment" in f for f in found)


def test_checker_compares_sweeps_as_sets(tmp_path):
    found = _toy(tmp_path, STATEMENT.replace("sweep: [0.01, 0.1]", "sweep: [0.01, 0.5]"))
    assert len(found) == 1 and "rho" in str(found[0])


def test_checker_sees_partition_variant(tmp_path):
    found = _toy(tmp_path, STATEMENT, CATALOG.replace("dirichlet_variant: lda", "dirichlet_variant: rep"))
    assert {f.key for f in found} == {"partition"}


def test_statement_errors_name_the_key(tmp_path):
    (tmp_path / "settings").mkdir()
    (tmp_path / "settings" / "toy.yaml").write_text(yaml.safe_dump(
        {"scopes": [{"experiments": "*", "training": {"lr": 0.1}}]}))
    with pytest.raises(ConfigError, match=r"scopes\[0\]\.training\.lr: must be"):
        load_statement("toy", tmp_path)


def test_checker_compares_a_methods_own_uplink_keys(tmp_path):
    """A method's stated uplink keys (how a 2x method sends its second vector) go over the scope's uplink."""
    catalog = CATALOG.replace("    algorithms: [fedavg, {preset: fedsam, params: {rho: 0.1}}]\n    seeds: [0, 1]",
                              "    algorithms: [fedavg, {preset: fedsam, params: {rho: 0.1}, uplink: {other_vectors: raw}}]\n"
                              "    seeds: [0, 1]\n    uplink: {kind: quant, bits: 4}")
    st = STATEMENT.replace('      fedsam: {rho: {value: 0.1, source: "Sec. 2"}}',
                           '      fedsam:\n        rho: {value: 0.1, source: "Sec. 2"}\n'
                           '        uplink: {value: {other_vectors: raw}, source: "unstated: measured"}')
    st = st.replace('    partition: {value: dir0.1-lda, source: "Sec. 2"}',
                    '    partition: {value: dir0.1-lda, source: "Sec. 2"}\n    uplink: {value: {kind: quant, bits: 4}, source: "Sec. 3"}')
    assert _toy(tmp_path, st, catalog) == []
    found = _toy(tmp_path, st.replace("{other_vectors: raw}", "{other_vectors: error_feedback}"), catalog)
    assert len(found) == 2 and {f.key for f in found} == {"uplink"}  # FedSAM's two seeds, FedAvg unaffected
    assert "error_feedback" in str(found[0]) and "raw" in str(found[0])
