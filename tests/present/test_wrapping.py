"""Wrapping without cutting a figure or a name mid-token (issue 42: the details pane folded
``steps/topk/draft=7/1/`` ⏎ ``8`` and left a lone ``)``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from specconsole.present.wrapping import wrap_line, wrap_lines


def test_a_long_word_breaks_at_its_seam_and_its_figures_stay_whole() -> None:
    assert wrap_line("#4 EAGLE3 steps/topk/draft=7/1/8", 21) == [
        "#4 EAGLE3",
        "steps/topk/draft=",
        "7/1/8",
    ]
    lines = wrap_line("capacity: 370,000 tokens (max_total_num_tokens)", 21)
    assert lines[:2] == ["capacity: 370,000", "tokens"] and ")" not in lines
    assert wrap_line("  the draft costs 70,000 KV tokens, 16 %", 21) == [
        "  the draft costs",
        "  70,000 KV tokens,",
        "  16 %",
    ]
    assert wrap_line("short", 21) == ["short"] and wrap_lines(["a b", "c"], 40) == ["a b", "c"]


words = st.text(alphabet="abc=/_,:0123456789.", min_size=1, max_size=30)


@given(st.lists(words, min_size=1, max_size=8), st.integers(min_value=8, max_value=40))
def test_every_line_fits_and_nothing_is_lost(parts: list[str], width: int) -> None:
    line = " ".join(parts)
    out = wrap_line(line, width)
    assert all(len(piece) <= width for piece in out), out
    assert "".join(out).replace(" ", "") == line.replace(" ", "")
