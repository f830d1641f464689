"""Which controller notices the console's message line shows, and in what words.

Why: pop-ups that stack over the journal, repeat what the crash banner says and arrive after
the user has decided teach people to ignore them. The console shows a notice only when
nothing else on screen says it: routine news (``info``) is already in the header, the
banner and the tables; a crash, and the capacity warning about the crashed trial, are the
banner's. What is shown is one plain sentence — a refused intent reads "deploying is not
possible while benchmarking", not an internal class name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from specconsole.core.machine.state import Notice
from specconsole.present.labels import notice_text

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

INTENT_WORDS: dict[str, str] = {
    "DeployConfig": "deploying",
    "StartSweep": "starting the sweep",
    "BenchmarkOnly": "benchmarking",
    "Resume": "resuming",
    "Pause": "pausing",
    "Cancel": "cancelling",
    "Quit": "quitting",
    "SetPolicy": "changing the crash policy",
    "FocusBox": "switching boxes",
}
"""Intent class names as the refusal sentence says them."""

_REFUSED = re.compile(
    r"can't handle (?P<intent>\w+) in phase (?P<phase>[\w ]+?)(?:: (?P<why>.*))?$"
)

SHOWN_LEVELS: frozenset[str] = frozenset({"warning", "error"})


def plain(text: str) -> str:
    """``can't handle DeployConfig in phase benchmarking`` →
    ``deploying is not possible while benchmarking``; other texts unchanged."""
    found = _REFUSED.search(text)
    if found is None:
        return text
    what = INTENT_WORDS.get(found["intent"], found["intent"])
    phase = found["phase"].replace("_", " ")
    sentence = f"{what} is not possible while {phase}"
    if found["why"]:
        sentence += f": {found['why']}"
    return text[: found.start()] + sentence


def message_for(notice: Notice, base: ServerConfig | None, *, banner: bool) -> str | None:
    """The message line's text for ``notice``, or None when the screen already says it
    (routine news; a crash or its capacity warning while the crash banner shows)."""
    if notice.level not in SHOWN_LEVELS:
        return None
    text = notice.text
    if banner and (" crashed" in text or "not expected to load" in text):
        return None
    return plain(notice_text(Notice(notice.level, text, notice.at, notice.config), base))
