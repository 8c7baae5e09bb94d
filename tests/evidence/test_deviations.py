"""The deviations file (fedflat.evidence.deviations): its shape is checked in one line naming the key, and the block
lists every deviation with the paper's sentence it departs from."""
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.deviations import block_for, load_deviations

REPO = Path(__file__).resolve().parents[2]
GOOD = ("deviations: {d: {kind: text_contradicted, paper: {section: VI-A, quote: q}, primary: p, variant: v, why: w, "
        "experiments: [e], table: t}}\n")


@pytest.mark.parametrize("body, key", [
    (GOOD.replace("why: w, ", ""), "deviations.d: missing why"),
    (GOOD.replace("text_contradicted", "guess"), "deviations.d.kind"),
    (GOOD.replace("quote: q", "quote: ''"), "deviations.d.paper: needs section and quote"),
    (GOOD.replace("experiments: [e]", "experiments: []"), "names its experiments and table"),
])
def test_a_bad_deviations_file_is_refused_in_one_line(tmp_path, body, key):
    f = tmp_path / "d.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError) as e:
        load_deviations(f)
    assert key in str(e.value) and "\n" not in str(e.value)


def test_the_block_lists_every_deviation_with_its_sentence():
    from fedflat.evidence.pages import Context

    text = block_for("fedsynsam")(Context(root=REPO))
    raw = load_deviations(REPO / "config/papers/deviations/fedsynsam.yaml")
    for name, d in raw["deviations"].items():
        assert f"| {name} |" in text and d["paper"]["quote"] in text
