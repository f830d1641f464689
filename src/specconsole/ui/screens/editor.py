"""The parameter editor: a form over the launch configuration that validates as you type.

Each text box is one SGLang server argument (the ``ServerConfig`` field name, so the label is
the word the user knows from ``--help``). On every change the form is parsed
(``ui.form.parse_form``) and the candidate is checked with the core's validation rules; the
messages appear under the box they are about, the side panel shows what differs from the
deployed configuration and the KV capacity predicted from the trials so far. "Suggest next"
(``ctrl+n``) fills the form with the plan's next trial — what the crash banner's ``r`` resumes
with — or, when the plan has nothing left, the optimiser's proposal over its axes
(``ui.editor_checks.suggest_next``), and shows its one-line reason; it says it is asking at
once, before the answer is worked out. Apply
(``ctrl+s``) is refused while an error stands; it dismisses with the new configuration and the
caller turns it into a deploy-as-next-trial intent — or, while a trial runs, queues it (the
app keeps ``apply_note`` current, so the form says which before the key is pressed). Edits
are never thrown away silently: ``esc`` on a changed form asks first. The capacity line is
the controller's own prediction, and a configuration that already crashed says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.state import CapacityPrediction, ControllerState
from specconsole.present.crashtext import capacity_text
from specconsole.present.editor_fields import default_fields, shown_fields
from specconsole.present.keyboard.actions import apply_block
from specconsole.ui.form import (
    FormField,
    Problem,
    Validator,
    config_diff,
    form_values,
    parse_form,
)
from specconsole.ui.screens.confirm import ConfirmActionScreen
from specconsole.ui.widgets.fieldinput import FieldInput

Predictor = Callable[[ServerConfig], CapacityPrediction | None]
"""Predicted KV capacity for a candidate configuration (None: cannot predict yet)."""
Suggester = Callable[[], tuple[ServerConfig | None, str] | None]
"""The plan's next configuration (else the optimiser's) and why (None: nothing to suggest;
``(None, why)``: not known yet, and why)."""
History = Callable[[ServerConfig], str | None]
"""What the session already knows about a candidate (``steps=10 crashed in trial 6: …``)."""


class EditorScreen(ModalScreen[ServerConfig | None]):
    """Edit the configuration; dismisses with the new one on apply, None on cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "apply",
            "apply (deploy as next trial)",
            id="apply",
            tooltip="deploy this configuration as the next trial (refused while errors stand)",
        ),
        Binding("escape", "cancel", "cancel", id="cancel", tooltip="close without deploying"),
        Binding(
            "ctrl+n",
            "suggest",
            "suggest next",
            id="suggest",
            tooltip="fill in the plan's next trial (else the optimiser's), with its reason",
        ),
        Binding(
            "ctrl+r",
            "revert",
            "revert to deployed",
            id="revert",
            tooltip="put back the deployed configuration's values",
        ),
        Binding(
            "ctrl+w",
            "withdraw",
            "withdraw queued edit",
            id="withdraw",
            tooltip="withdraw the queued edit: nothing will be deployed for it",
        ),
        # Focus moves when the key arrives, not when it has bubbled up: the keys behind it in
        # a burst then go to the field it moved to (each field applies its own editing keys,
        # ui.widgets.fieldinput). Enter moves on like tab.
        Binding("tab", "app.focus_next", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", show=False, priority=True),
        Binding("enter", "app.focus_next", show=False, priority=True),
    ]

    class Checked(Message):
        """The form was re-checked (tests and the status line observe it)."""

        def __init__(self, problems: tuple[Problem, ...], config: ServerConfig | None) -> None:
            super().__init__()
            self.problems = problems
            self.config = config

    def __init__(
        self,
        base: ServerConfig,
        deployed: ServerConfig | None,
        *,
        validate: Validator,
        predict: Predictor,
        suggest: Suggester | None = None,
        title: str = "Parameters",
        fields: Sequence[FormField] | None = None,
        release: str = "",
        history: History | None = None,
        apply_note: str | None = None,
        on_withdraw: Callable[[], None] | None = None,
        axis: str | None = None,
    ) -> None:
        super().__init__(id="editor")
        self._base = base
        self._deployed = deployed
        self._validate = validate
        self._predict = predict
        self._suggest = suggest
        self._title = title
        self._all_fields = tuple(default_fields() if fields is None else fields)
        """Every field, in the edited release's flag names (the diff and parse use them)."""
        self._fields = shown_fields(self._all_fields, base, deployed)
        """The boxes shown: what the release renders, and anything else base or deployed
        sets."""
        self._release = release
        self._candidate: ServerConfig | None = base
        self._problems: tuple[Problem, ...] = ()
        self._history = history
        self._apply_note = apply_note
        """Why ctrl+s would queue rather than deploy now (None: it deploys)."""
        self._on_withdraw = on_withdraw
        """Set when the form shows a queued edit (ctrl+w withdraws it)."""
        self._initial: dict[str, str] = {}
        self._axis = axis
        """The sweep's axis: the capacity line leads with its value."""

    def compose(self) -> ComposeResult:
        values = form_values(self._base, self._all_fields)
        with Horizontal(id="editor-body"):
            with VerticalScroll(id="editor-form") as form:
                form.border_title = self._title
                form.border_subtitle = "ctrl+s apply · esc cancel"
                if self._release:
                    yield Static(self._release, id="editor-release", markup=False)
                for field in self._fields:
                    with Vertical(classes="field-row", id=f"row-{field.name}"):
                        yield Label(field.label, classes="field-label", markup=False)
                        yield FieldInput(
                            value=values[field.name],
                            placeholder=f"{field.hint} (empty: server default)",
                            id=f"field-{field.name}",
                            compact=True,
                        )
                        yield Static("", classes="field-error", id=f"error-{field.name}")
            with VerticalScroll(id="editor-side") as side:
                side.border_title = "Diff against deployed"
                yield Static("", id="editor-diff", markup=False)
                yield Static("", id="editor-capacity", markup=False)
                yield Static("", id="editor-suggestion", markup=False)
                yield Static("", id="editor-problems", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._initial = self.values()
        self.check()
        # focused now, not after a round trip through the app's queue (``Widget.focus``):
        # keys typed right after ``e`` wait in that queue for this form (issue 42)
        self.set_focus(self.query_one(f"#field-{self._fields[0].name}", Input))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "withdraw":
            return self._on_withdraw is not None
        return True

    @property
    def edited(self) -> list[str]:
        """The fields changed since the form opened."""
        now = self.values()
        return [name for name, text in now.items() if self._initial.get(name) != text]

    def render_state(self, state: ControllerState, now: float) -> None:
        """Every new snapshot (``ui.messages.StateView``): whether ``ctrl+s`` deploys now or
        queues the edit."""
        self.set_apply_note(apply_block(state))

    def set_apply_note(self, note: str | None) -> None:
        """What ctrl+s would do now (``render_state`` sets it on every state change)."""
        if note != self._apply_note:
            self._apply_note = note
            if self.is_mounted:
                self.check()

    # ----------------------------------------------------------------------------------------

    @property
    def candidate(self) -> ServerConfig | None:
        """The configuration the form describes now (None while a box does not parse)."""
        return self._candidate

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._problems

    def values(self) -> dict[str, str]:
        return {f.name: self.query_one(f"#field-{f.name}", Input).value for f in self._fields}

    def check(self) -> None:
        """Parse and validate the form; show messages, diff and predicted capacity."""
        candidate, parse_errors = parse_form(self._base, self.values(), self._all_fields)
        problems: list[Problem] = [Problem(name, msg) for name, msg in parse_errors.items()]
        if candidate is not None:
            problems.extend(self._validate(candidate))
        self._candidate = candidate
        self._problems = tuple(problems)
        by_field: dict[str, list[Problem]] = {}
        general: list[Problem] = []
        for problem in problems:
            if problem.field is not None and problem.field in {f.name for f in self._fields}:
                by_field.setdefault(problem.field, []).append(problem)
            else:
                general.append(problem)
        for field in self._fields:
            found = by_field.get(field.name, [])
            box = self.query_one(f"#error-{field.name}", Static)
            box.update("\n".join(p.message for p in found))
            box.display = bool(found)
            box.set_class(any(p.blocking for p in found), "-error")
            self.query_one(f"#field-{field.name}", Input).set_class(
                any(p.blocking for p in found), "-invalid"
            )
        if candidate is not None:
            diff = config_diff(self._deployed, candidate, self._all_fields)
            header = "nothing deployed yet; would deploy:" if self._deployed is None else ""
            lines = ([header] if header else []) + (diff or ["no change from deployed"])
            self.query_one("#editor-diff", Static).update("\n".join(lines))
            capacity = capacity_text(self._predict(candidate), candidate, self._axis)
            seen = self._history(candidate) if self._history is not None else None
            if seen:
                capacity += f"\n{seen}"
            self.query_one("#editor-capacity", Static).update(capacity)
        else:
            self.query_one("#editor-diff", Static).update("(fix the fields marked in red)")
            self.query_one("#editor-capacity", Static).update("")
        summary = [p.message for p in general]
        blocking = sum(p.blocking for p in problems)
        if blocking:
            summary.append(f"{blocking} error(s): fix them to apply")
        elif self._apply_note:
            summary.append(f"Not now — {self._apply_note}")
        else:
            summary.append("ready to apply (ctrl+s deploys it as the next trial)")
        self.query_one("#editor-problems", Static).update("\n".join(summary))
        self.post_message(self.Checked(self._problems, candidate))

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.check()

    def action_apply(self) -> None:
        self.check()
        if self._candidate is None or any(p.blocking for p in self._problems):
            box = self.query_one("#editor-problems", Static)
            box.add_class("-refused")  # the form says why; the edits stay
            return
        self.dismiss(self._candidate)

    def action_cancel(self) -> None:
        """Close; a changed form asks first, so edits are never thrown away silently."""
        changed = self.edited
        if not changed:
            self.dismiss(None)
            return
        lines = (f"Changed: {', '.join(changed)}.", "Nothing was deployed.")

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(
            ConfirmActionScreen("Discard your edits?", lines, "discard", "keep editing"),
            answered,
        )

    def action_withdraw(self) -> None:
        if self._on_withdraw is not None:
            self._on_withdraw()
            self.dismiss(None)

    def action_suggest(self) -> None:
        """Say at once that the suggestion is coming (the optimiser can take a moment), then
        fill the form with it and say why it was chosen."""
        self.query_one("#editor-suggestion", Static).update("suggest next: asking the plan…")
        self.call_after_refresh(self._suggest_now)

    def _suggest_now(self) -> None:
        got = self._suggest() if self._suggest is not None else None
        box = self.query_one("#editor-suggestion", Static)
        if got is None:
            box.update("suggest next: nothing to suggest (no axes, or every point tried)")
            return
        config, reason = got
        if config is None:
            box.update(f"suggest next: {reason}")
            return
        self._fill(config)
        box.update(f"suggested: {reason}")

    def _fill(self, source: ServerConfig) -> None:
        with self.prevent(Input.Changed):
            for name, text in form_values(source, self._all_fields).items():
                if name not in {f.name for f in self._fields}:
                    continue
                self.query_one(f"#field-{name}", Input).value = text
        self.check()

    def action_revert(self) -> None:
        self._fill(self._deployed or self._base)
