"""Pilot tests: the parameter editor follows the SGLang release the controller found on the box
(``ControllerState.engine_version``): its flag names in the labels and the diff, its rules in
the messages; what it applies keeps the trial's identity (no release stamped into it)."""

from __future__ import annotations

import dataclasses

from textual.widgets import Input, Label, Static

from specconsole.core.machine.events import DeployConfig
from specconsole.core.machine.state import ControllerState
from specconsole.ui.app import SpecConsoleApp, make_app
from specconsole.ui.screens.editor import EditorScreen
from tests.ui.doubles import NOW, RecordingController, idle_state


def _app(state: ControllerState) -> tuple[SpecConsoleApp, RecordingController]:
    controller = RecordingController(state)
    return make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None), controller


def _on(version: str | None, source: str = "detected") -> ControllerState:
    return dataclasses.replace(
        idle_state(), engine_version=version, engine_version_source=source if version else ""
    )


def _text(editor: EditorScreen, selector: str) -> str:
    widget = editor.query_one(selector)
    assert isinstance(widget, Label | Static)
    return str(widget.render())


async def _type(editor: EditorScreen, pilot: object, name: str, text: str) -> None:
    editor.query_one(f"#field-{name}", Input).value = text
    await pilot.pause()  # type: ignore[attr-defined]


async def test_on_0_5_23_the_editor_shows_and_checks_the_new_flag_names() -> None:
    app, controller = _app(_on("0.5.23"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        assert _text(editor, "#editor-release") == (
            "SGLang 0.5.23 (detected): its flag names and rules"
        )
        label = _text(editor, "#row-cuda_graph_max_bs .field-label")
        assert "cuda_graph_max_bs → --cuda-graph-max-bs-decode" in label
        await _type(editor, pilot, "cuda_graph_max_bs", "32")
        diff = _text(editor, "#editor-diff")
        assert "--cuda-graph-max-bs-decode: 64 → 32" in diff
        # the old name in extra_args: 0.5.23's argparse refuses it, so apply is refused
        await _type(editor, pilot, "extra_args", "--cuda-graph-max-bs 8")
        error = _text(editor, "#error-extra_args")
        assert "SGLang 0.5.23 no longer accepts --cuda-graph-max-bs" in error
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is editor and controller.intents == []
        # pipeline parallelism with speculation: 0.5.23 dropped that check
        await _type(editor, pilot, "extra_args", "--pp-size 2")
        assert not any(p.blocking for p in editor.problems), editor.problems
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen)
    (sent,) = controller.intents
    assert isinstance(sent, DeployConfig)
    assert sent.config.cuda_graph_max_bs == 32 and sent.config.extra_args == ("--pp-size", "2")
    assert sent.config.engine_version is None  # the runtime spells it for the box


async def test_on_0_5_9_the_editor_keeps_the_old_names_and_rules() -> None:
    app, controller = _app(_on("0.5.9", "server_info"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        assert _text(editor, "#editor-release").startswith("SGLang 0.5.9 (server_info)")
        assert _text(editor, "#row-cuda_graph_max_bs .field-label") == "cuda_graph_max_bs"
        await _type(editor, pilot, "cuda_graph_max_bs", "32")
        assert "--cuda-graph-max-bs: 64 → 32" in _text(editor, "#editor-diff")
        await _type(editor, pilot, "extra_args", "--pp-size 2")
        error = _text(editor, "#error-extra_args")
        assert "Pipeline parallelism is not compatible" in error
        assert any(p.blocking for p in editor.problems)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is editor and controller.intents == []


async def test_a_declared_release_wins_and_an_unknown_one_shows_the_default_names() -> None:
    declared = _on("0.5.23")
    assert declared.deployed is not None
    base = dataclasses.replace(declared.deployed.config, engine_version="0.5.9")
    declared = dataclasses.replace(
        declared, deployed=dataclasses.replace(declared.deployed, config=base)
    )
    for state, flag in ((declared, "--cuda-graph-max-bs"), (_on(None), "--cuda-graph-max-bs")):
        app, _controller = _app(state)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("e")
            await pilot.pause()
            editor = app.screen
            assert isinstance(editor, EditorScreen)
            await _type(editor, pilot, "cuda_graph_max_bs", "32")
            assert f"{flag}: 64 → 32" in _text(editor, "#editor-diff")
            assert "decode" not in _text(editor, "#row-cuda_graph_max_bs .field-label")
            if state is declared:
                assert _text(editor, "#editor-release").startswith("SGLang 0.5.9 (declared)")
            else:
                assert not editor.query("#editor-release")
