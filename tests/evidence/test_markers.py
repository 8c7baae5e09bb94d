"""Generated-block markers: parsing, replacement, and one-line errors naming the file and block."""
import pytest

from fedflat.evidence.markers import NOTE, MarkerError, blocks, outside, replace

PAGE = """# Title
Prose 1.5 here.
<!-- generated:a -->
old
<!-- /generated:a -->
```
code 2.5
```
<!-- generated:b -->
<!-- /generated:b -->
tail
"""


def test_blocks_and_replace():
    assert blocks(PAGE) == {"a": (3, 4), "b": (9, 9)}
    out = replace(PAGE, {"a": "new 1.23", "b": "x"})
    assert "old" not in out and f"{NOTE}\nnew 1.23\n<!-- /generated:a -->" in out
    assert f"<!-- generated:b -->\n{NOTE}\nx\n<!-- /generated:b -->" in out
    assert replace(out, {"a": "new 1.23", "b": "x"}) == out  # idempotent: a re-render is byte-identical


def test_outside_skips_blocks_and_code():
    text = replace(PAGE, {"a": "in 9.99", "b": ""})
    lines = [l for _, l in outside(text)]
    assert "Prose 1.5 here." in lines and "tail" in lines
    assert not any("9.99" in l or "2.5" in l for l in lines)


@pytest.mark.parametrize("text, match", [
    ("<!-- generated:a -->\n", r"page: block 'a' is never closed"),
    ("<!-- generated:a -->\n<!-- generated:b -->\n", r"page: block 'b' opens inside block 'a'"),
    ("<!-- /generated:a -->\n", r"page: end of block 'a' without its begin"),
])
def test_bad_markers_name_the_file_and_block(text, match):
    with pytest.raises(MarkerError, match=match):
        blocks(text, "page")


def test_a_block_without_renderer_and_a_renderer_without_block_are_errors():
    with pytest.raises(MarkerError, match=r"page: no block 'c'"):
        replace(PAGE, {"a": "", "b": "", "c": ""}, "page")
    with pytest.raises(MarkerError, match=r"page: block 'b' has no renderer"):
        replace(PAGE, {"a": ""}, "page")
