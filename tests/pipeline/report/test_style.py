"""One colour per algorithm across every figure: every preset's label has its own colour."""
from fedflat.training.algorithms import PRESETS
from fedflat.pipeline.report.style import color_for, marker_for


def test_every_preset_label_has_a_distinct_colour():
    labels = sorted({PRESETS.get(n).label for n in PRESETS.names()})
    colours = {}
    for lab in labels:
        colours.setdefault(str(color_for(lab)), []).append(lab)
    shared = {c: labs for c, labs in colours.items() if len(labs) > 1}
    assert not shared, f"labels sharing a colour: {shared}"


def test_colour_and_marker_are_stable_for_unknown_labels():
    assert color_for("FedSAM rho=0.1") == color_for("FedSAM")  # a labelled variant keeps its method's colour
    assert color_for("SomethingNew") == color_for("SomethingNew") and marker_for("SomethingNew") == marker_for("SomethingNew")
