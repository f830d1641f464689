"""The collector is held while the console starts and released at its first frame, and by
every other way out of the command line (``specconsole.startup``).

Why: holding it saves tens of milliseconds of every start, but a collector left off would
let a long sweep's cycles pile up for hours. These check that each way out turns it back on,
and that nothing is turned on that someone else turned off.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator
from types import ModuleType

import pytest

from specconsole import cli, startup
from specconsole.commands import tui as tui_command
from specconsole.commands import validate as validate_command
from specconsole.ui.app import make_app
from tests.ui.doubles import NOW, RecordingController, idle_state


@pytest.fixture(autouse=True)
def collector_on_after() -> Iterator[None]:
    yield
    startup.release_collection()
    gc.enable()
    gc.unfreeze()  # the rest of the suite's process collects as it did before


def test_hold_then_release_freezes_what_was_built_and_collects_again() -> None:
    startup.hold_collection()
    assert not gc.isenabled()
    frozen_before = gc.get_freeze_count()
    startup.release_collection()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before
    startup.release_collection()  # a second release changes nothing
    assert gc.isenabled()


def test_release_never_turns_on_a_collector_someone_else_turned_off() -> None:
    gc.disable()
    startup.hold_collection()  # already off: not held by us
    startup.release_collection()
    assert not gc.isenabled()


@pytest.mark.parametrize(
    ("module", "handler", "argv", "collecting"),
    [
        # a sweep or a report runs for long: it collects from the start
        (validate_command, "_validate_cmd", ["validate", "plan.toml"], True),
        # the console: held until the app's first frame (or until the command returns)
        (tui_command, "_cmd_demo", ["demo"], False),
    ],
    ids=["validate", "demo"],
)
def test_only_the_console_command_starts_with_the_collector_held(
    monkeypatch: pytest.MonkeyPatch,
    module: ModuleType,
    handler: str,
    argv: list[str],
    collecting: bool,
) -> None:
    seen: list[bool] = []

    def command(args: argparse.Namespace) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(module, handler, command)
    assert cli.main(argv) == 0
    assert seen == [collecting]
    assert gc.isenabled()


@pytest.mark.parametrize("argv", [["--version"], ["--no-such-option"]])
def test_leaving_through_argparse_turns_the_collector_back_on(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert gc.isenabled()


async def test_the_console_collects_again_once_its_first_frame_is_up() -> None:
    startup.hold_collection()
    app = make_app(
        RecordingController(idle_state()), theme="dark", clock=lambda: NOW, tick_interval=None
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert gc.isenabled()
