"""What a journal line means, as the console highlights it: the core's log parser on one line.

Why its own module: the journal pane highlights with the very parser the controller watches a
load with (fatal, warning, capacity, ready, progress), and that parser brings every
registered engine's log grammar. The pane loads this module with its first line to highlight
(``ui.widgets.journal``), not with the console's first frame, which shows none.
"""

from __future__ import annotations

from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    KVCacheAllocated,
    MemoryPoolEnd,
    ProcessStarting,
    Ready,
    TuningWarning,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logs.events import ServiceExited as LogServiceExited
from specconsole.core.logs.parser import LogParser
from specconsole.core.machine.handlers.watch import is_fatal, looks_fatal
from specconsole.ui.viewmodels import LINE_KINDS

_LOAD_PROGRESS = (ProcessStarting, WeightsBegin, WeightsEnd, CudaGraphBegin, CudaGraphEnd)
_CAPACITY = (Capacity, KVCacheAllocated, MemoryPoolEnd)


def classify_line(line: str) -> str | None:
    """The journal highlight kind of one log line, decided by the core's log parser.

    The parser is fed the line alone (and flushed), so a traceback header or a fatal
    signature classifies as ``fatal`` on its own line; multi-line context is the
    controller's business, not the highlighter's.
    """
    parser = LogParser()
    events = parser.feed(line) + parser.flush()
    kinds: set[str] = set()
    for event in events:
        if is_fatal(event):
            kinds.add("fatal")
        elif isinstance(event, LogServiceExited | TuningWarning):
            kinds.add("warning")
        elif isinstance(event, _CAPACITY):
            kinds.add("capacity")
        elif isinstance(event, Ready):
            kinds.add("ready")
        elif isinstance(event, _LOAD_PROGRESS):
            kinds.add("progress")
    if not kinds and looks_fatal(line):
        kinds.add("fatal")
    for kind in LINE_KINDS:
        if kind in kinds:
            return kind
    return None
