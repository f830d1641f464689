"""The parameter editor's logic without widgets: fields, parsing, diff against the deployed.

The editor binds one text box per launch parameter, named by its ``ServerConfig`` field
(which fields, and the flag each renders as for the box's release, is
``specconsole.present.editor_fields``'s). Typing produces strings; this module turns them into
a candidate ``ServerConfig`` (or per-field parse errors that name the field and the fix);
``present.deploys.flagdiff`` lists what differs from the deployed configuration. Validation of the
*values* against the release's rules is the core's job
(``specconsole.core.config.validation``), injected by the app.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, option_fields, replace_config
from specconsole.present.deploys.flagdiff import config_diff
from specconsole.present.editor_fields import FormField, default_fields, field_text

__all__ = [
    "FormField",
    "Problem",
    "Validator",
    "config_diff",
    "field_text",
    "form_values",
    "parse_form",
]


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation finding, as the editor shows it."""

    field: str | None
    """The ``ServerConfig`` field it is about (None: the configuration as a whole)."""
    message: str
    """Names the field and the fix."""
    severity: str = "error"
    """``error`` blocks apply; ``warning`` and ``notice`` are shown only."""

    @property
    def blocking(self) -> bool:
        return self.severity == "error"


Validator = Callable[[ServerConfig], Sequence[Problem]]
"""Checks a candidate configuration with the engine's rules."""


def form_values(config: ServerConfig, fields: Sequence[FormField] | None = None) -> dict[str, str]:
    """Text for every field of the form (the edited engine's ``fields``; the default
    engine's when none are given)."""
    shown = default_fields() if fields is None else fields
    return {f.name: field_text(config, f.name) for f in shown}


_NUMBERS: dict[str, tuple[type[int] | type[float], str, str]] = {
    "int": (int, "a whole number", "3"),
    "float": (float, "a number", "0.85"),
}
"""Numeric field kinds: how to convert the text, what it must be, an example."""


def _parse(field: FormField, text: str) -> object:
    raw = text.strip()
    if field.kind == "args":
        try:
            return tuple(shlex.split(raw))
        except ValueError as exc:
            raise ValueError(f"{field.name}: {exc}; close the quote") from None
    if raw == "" or raw.lower() == "none":
        return None
    if field.kind in _NUMBERS:
        convert, what, example = _NUMBERS[field.kind]
        try:
            return convert(raw)
        except ValueError:
            raise ValueError(
                f"{field.name}: {raw!r} is not {what}; type e.g. {example}, or leave it empty"
            ) from None
    raise AssertionError(f"unknown field kind {field.kind}")


def parse_form(
    base: ServerConfig, values: Mapping[str, str], fields: Sequence[FormField] | None = None
) -> tuple[ServerConfig | None, dict[str, str]]:
    """Build the candidate configuration from the text boxes.

    Args:
        base: the configuration the form started from (fields not on the form are kept).
        values: field name → text box content.

    Returns:
        ``(config, {})`` when every box parses, else ``(None, {field: message})``.
    """
    changes: dict[str, object] = {}
    own: dict[str, str] = {}
    errors: dict[str, str] = {}
    keys = option_fields(base.engine)
    for field in default_fields() if fields is None else fields:
        if field.name not in values:
            continue
        key = keys.get(field.name)
        if key is not None and not (key.plain and field.kind in _NUMBERS):
            own[field.name] = values[field.name]  # typed and bounded by its OptionField
            continue
        try:
            changes[field.name] = _parse(field, values[field.name])
        except ValueError as exc:
            errors[field.name] = str(exc)
    candidate = dataclasses.replace(base, **changes)
    for name, text in own.items():
        try:
            candidate = replace_config(candidate, **{name: text})
        except ConfigError as exc:
            errors[name] = f"{name}: {exc.message} {exc.fix}"
    if errors:
        return None, errors
    return candidate, {}
