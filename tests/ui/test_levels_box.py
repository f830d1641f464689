"""The per-level box in the console at 80×24 and 120×40 with the schedule proof's widest
table (the contenders (a) and (b) beside the schedule): what it leaves out on a narrow pane
is the least wanted (``present.figures.levels.COMPACT_CUT_ORDER``) — never speculation off
for the contenders, never a cell cut — and it ends with the sweep's result."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from specconsole.ui.app import make_app
from tests.ui.doubles import NOW, RecordingController
from tests.ui.schedule_scenes import schedule_proof_state

WANTED: dict[tuple[int, int], tuple[str, ...]] = {
    (80, 24): ("c", "best static", "schedule", "(a)", "(b)", "none"),
    (120, 40): ("c", "best static", "schedule", "vs single", "(a)", "(b)", "none"),
}
"""The columns each size shows, in reading order."""


@pytest.mark.parametrize("size", list(WANTED), ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_per_level_box_keeps_none_and_the_contenders_at_both_sizes(
    size: tuple[int, int],
) -> None:
    controller = RecordingController(schedule_proof_state())
    app = make_app(controller, theme="mono", clock=lambda: NOW, tick_interval=None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.25)
        await pilot.press("3")  # at 80×24 the panes switch: 3 shows the trials
        await pilot.pause()
        box = app.screen.query_one("#levels-box", Static)
        assert box.display and box.has_class("-shown")
        lines = str(box.render()).splitlines()
        width = box.content_size.width
        assert all(len(line) <= width for line in lines), (width, lines)
        header = lines[0]
        assert header.split() == " ".join(WANTED[size]).split(), header
        c64 = next(line for line in lines[1:] if line.split()[0] == "64")
        assert c64.split()[-3:] == ["2,449.6", "2,579.9", "761.6"], c64  # (a), (b), none
        assert any(line.startswith("result: #7") for line in lines), lines
