"""The parameter editor on a llama.cpp configuration: its own keys are the boxes (labelled
with the key and its llama-server flag), typed and bounded by the engine's ``OptionField``s
— ``-ngl all`` is a word it takes, a draft length out of range is an error naming the key —
and ``ctrl+s`` deploys the edited configuration as the next trial.
"""

from __future__ import annotations

import dataclasses

from textual.message import Message
from textual.widgets import Input, Label, Static

from specconsole.core.config.model import config_from_table
from specconsole.core.machine.events import DeployConfig
from specconsole.core.machine.state import Deployed
from specconsole.ui.app import make_app
from specconsole.ui.messages import IntentSent
from specconsole.ui.screens.editor import EditorScreen
from tests.ui.doubles import NOW, RecordingController, idle_state

LLAMA = config_from_table(
    {
        "engine": "llamacpp",
        "launcher": "/opt/llama/bin/llama-server",
        "model_path": "/models/target.gguf",
        "speculative_draft_model_path": "/models/draft.gguf",
        "spec_type": "draft-simple",
        "spec_draft_n_max": 4,
        "ctx_size": 4096,
        "parallel": 2,
        "metrics": True,
        "port": 8080,
    }
)


async def test_the_editor_edits_llama_cpps_own_keys() -> None:
    state = dataclasses.replace(
        idle_state(), deployed=Deployed(config=LLAMA, artifact_hash="ab12", at=NOW, serving=True)
    )
    controller = RecordingController(state)
    app = make_app(controller, theme="dark", clock=lambda: NOW, tick_interval=None)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        labels = [str(label.render()) for label in editor.query(Label)]
        assert any(text.startswith("spec_draft_n_max") for text in labels), labels
        n_max = editor.query_one("#field-spec_draft_n_max", Input)
        assert n_max.value == "4"
        n_max.value = "2000"
        await pilot.pause()
        error = editor.query_one("#error-spec_draft_n_max", Static)
        assert error.display and "between 0 and 1024" in str(error.render())
        n_max.value = "8"
        editor.query_one("#field-n_gpu_layers", Input).value = "all"
        await pilot.pause()
        assert not error.display
        assert editor.candidate is not None
        assert (editor.candidate.spec_draft_n_max, editor.candidate.n_gpu_layers) == (8, "all")
        await pilot.press("ctrl+s")
        await pilot.pause()
    sent = [m.intent for m in messages if isinstance(m, IntentSent)]
    assert len(sent) == 1 and isinstance(sent[0], DeployConfig)
    assert sent[0].config.spec_draft_n_max == 8 and sent[0].config.ctx_size == 4096
