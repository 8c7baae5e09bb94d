"""Declarations: one clear line naming the config, the finding and the key for each kind of bad input, before any
compute; `each` products and `method` parts expand as documented."""
from pathlib import Path

import pytest

import fedflat.plugins  # noqa: F401  (the presets a `method` part names)
from fedflat.core.errors import ConfigError
from fedflat.evidence.findings.declared import check, load_all

from .helpers import finding

CLOSES = {"kind": "closes_shortfall", "candidates": {"field": "lr", "values": [0.05, 0.1]}, "baseline": 0.05}


@pytest.mark.parametrize("bad, says", [
    ({"id": "bad-id"}, "needs an `id`"),
    ({"kind": "vote"}, "findings.f.kind: 'vote' is not one of"),
    ({"fixed": "later"}, "findings.f.fixed: 'later' is not one of before_finals, post_hoc"),
    ({"colour": "red"}, "findings.f.colour: unknown key for kind closes_shortfall"),
    ({"page": "docs/p.md"}, "findings.f.page: {file: <page under the repository>, block: <marker name>}"),
    ({"baseline": 0.5}, "findings.f.baseline: 0.5 is none of the candidates' values"),
    ({"closes": "nearby"}, "findings.f.closes: 'nearby' is not one of within, not_below, not_above"),
    ({"spread": "ignored"}, "findings.f.spread: unknown key for kind closes_shortfall"),
    ({"candidates": None}, "findings.f.candidates: missing"),
    ({"units": [{"method": "no_such_preset"}]}, "no_such_preset"),
    ({"records": "all"}, "findings.f.records: unknown key for kind closes_shortfall"),
    ({"words": {"groups": []}}, "findings.f.words.groups: not a sentence of kind closes_shortfall; allowed: closes,"),
    ({"layout": {"kind": "across"}}, "findings.f.layout: 'kind' is not one of columns or the tokens"),
    ({"layout": {"columns": ["method", "@means"]}}, "findings.f.layout: '@means' is not one of columns or the tokens"),
    ({"units": [{"name": "m", "candidates": [{"where": {}}]}]}, "findings.f.units[0]: a unit names no candidates"),
    ({"page": [{"file": "docs/p.md", "block": "b"}, {"file": "README.md"}]}, "findings.f.page: {file: <page under"),
])
def test_bad_input_is_one_line_naming_the_finding_and_the_key(bad, says):
    with pytest.raises(ConfigError) as e:
        finding(**{**CLOSES, **bad})
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kind, bad, says", [
    ("adopt_candidate", {}, "findings.f.kind: 'adopt_candidate' is not one of closes_shortfall, ordering"),
    ("ordering", {"test": "pooled_std"}, "findings.f.test: unknown key for kind ordering"),
    ("ordering", {"versus": {"finding": "g"}}, "findings.f.versus: unknown key for kind ordering"),
    ("paired_claim", {"words": {"result": "{ours}"}}, "findings.f.words.result: not a sentence of kind paired_claim"),
])
def test_a_retired_kind_key_or_sentence_is_one_line_naming_it(kind, bad, says):
    """What only the legacy v2 declarations used (docs/architecture.md) is an error, not silently ignored."""
    spec = {"kind": kind, "treatment": {"preset": "fedsam"}, "baseline": {"preset": "fedavg"}, **bad}
    with pytest.raises(ConfigError) as e:
        finding(**spec)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_sentences_and_tokens_a_declaration_may_name_are_the_rules_own():
    from fedflat.evidence.findings import decide, declared
    from fedflat.evidence.findings.layout import HEADS

    assert declared.WORDS["closes_shortfall"] == set(decide.CLOSES_WORDS) | {"overshoots"}
    assert declared.PAIRED_WORDS == set(decide.CLAIM_WORDS)
    assert declared.LAYOUT_TOKENS == set(HEADS) | {"@candidates"}


def test_a_paired_claim_s_failure_rule_is_one_of_its_choices():
    with pytest.raises(ConfigError, match=r"findings\.f\.failures: 'drop' is not one of rule, pairs_only$"):
        finding(kind="paired_claim", treatment={"preset": "fedsam"}, baseline={"preset": "fedavg"}, failures="drop")
    assert finding(kind="paired_claim", treatment={"preset": "fedsam"}, failures="pairs_only").get("failures")


def test_an_experiment_a_finding_names_must_be_one_of_its_study_s():
    with pytest.raises(ConfigError, match=r"findings.f.experiment: 'nope' is not an experiment of this config"):
        check({**CLOSES, "id": "f", "question": "q", "fixed": "post_hoc", "evidence": "s", "select": {"experiment": "nope"},
               "page": {"file": "p", "block": "b"}}, Path("c.yaml"), experiments={"e1"})


def test_each_is_the_product_of_its_axes_and_a_method_part_names_preset_label_and_paper_row():
    f = finding(**CLOSES, select={"experiment": "e"}, units=[{"each": [
        [{"method": "fedsam"}, {"method": "fedlesam_d"}],
        [{"block": "A", "where": {"uplink": {"kind": "topk"}}}, {"block": "B", "where": {"uplink": {"k": 0.1}}}]],
        "paper": {"table": "t", "column": "c"}}])
    assert [(u["method"], u["block"]) for u in f.units] == [("FedSAM", "A"), ("FedSAM", "B"), ("FedLESAM-D", "A"),
                                                            ("FedLESAM-D", "B")]
    assert f.units[3]["where"] == {"experiment": "e", "preset": "fedlesam_d", "uplink": {"k": 0.1}}
    assert f.units[3]["paper"] == {"row": "FedLESAM-D", "table": "t", "column": "c"}
    assert [c["where"] for c in f.candidates] == [{"lr": 0.05}, {"lr": 0.1}]


def test_two_findings_with_one_id_and_a_file_that_is_not_yaml_are_errors(tmp_path):
    decl = ("findings:\n- {id: f, question: q, kind: ordering, fixed: post_hoc, evidence: s, treatment: {preset: a},\n"
            "   baseline: {preset: b}, page: {file: p, block: b}}\n")
    (tmp_path / "a.yaml").write_text(decl)
    (tmp_path / "b.yaml").write_text(decl)
    with pytest.raises(ConfigError, match="findings.f: id already declared in"):
        load_all(tmp_path)
    (tmp_path / "b.yaml").write_text("findings: [\n  {id: : x}\n")
    with pytest.raises(ConfigError, match=r"b.yaml: not valid YAML at line \d"):
        load_all(tmp_path)


def test_every_declaration_of_the_repository_is_valid_and_its_page_has_its_block():
    from fedflat.evidence.markers import blocks

    import yaml

    root = Path(__file__).resolve().parents[3]
    found = load_all(root / "config")
    studies = {(yaml.safe_load(p.read_text()) or {}).get("study") for p in (root / "config").rglob("*.yaml")}
    assert len(found) >= 14
    for f in found:
        for path, block in f.pages:
            assert block in blocks((root / path).read_text(), path), (f.id, path, block)
        assert f.get("evidence") in studies, (f.id, f.get("evidence"))  # a study some config runs
