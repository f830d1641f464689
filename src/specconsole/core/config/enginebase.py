"""An engine's optional capabilities, with the answers an engine that says nothing gets.

Why: the :class:`~specconsole.core.engine.protocol.Engine` protocol has some thirty slots,
but an engine must say only a few things (:data:`~specconsole.core.engine.protocol.REQUIRED`:
its name, title and launcher, its ``[server]`` keys, its log grammar, its endpoints); the rest
are capabilities most engines answer the same way — no release table, no rules beyond its
keys' bounds, a command line that is ``MODEL_FLAG MODEL``, each key's ``--flag value``,
``--host``, ``--port``, no side files, no schedule. An engine subclasses :class:`EngineBase`
and overrides what it knows; a minimal one is its keys and its log lines.

The defaults are generic, never an engine's: they read the keys an engine declares
(``core.config.options``) and the shared ideas those keys stand for
(``core.config.concepts``) — the draft length, the method, the draft model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import binary_fingerprint
from specconsole.core.config.concepts import Concept, concept_key, concept_keys, concept_value
from specconsole.core.config.flags import flag_value
from specconsole.core.config.issues import Issue, IssueReport, Severity
from specconsole.core.config.model import ServerConfig, parse_value
from specconsole.core.config.options import OptionField, option_words
from specconsole.core.config.releases import ReleaseTable
from specconsole.core.engine.protocol import EditorField, Endpoints

if TYPE_CHECKING:
    from specconsole.core.config.ties import Tie
    from specconsole.core.engine.schedule import Edge, LevelPick, ScheduleRow, SideFile
    from specconsole.core.logs.grammar import LogGrammar
    from specconsole.core.measure.forecast import Forecast, ModelFacts

__all__ = ["EngineBase"]

_DRAFT = (Concept.METHOD, Concept.DRAFT_MODEL, Concept.DRAFT_LENGTH, Concept.DRAFT_SHAPE)
"""What a configuration without speculation leaves unset."""


def _carried(field: OptionField, fields: Sequence[OptionField]) -> str:
    """``KEY in its JSON`` for a key its flag carries with others (vLLM's
    ``--speculative-config``); ``""`` for a flag of its own."""
    shared = sum(1 for f in fields if f.flag and f.flag == field.flag) > 1
    return f"{field.name} in its JSON" if shared else ""


class EngineBase:
    """Every optional slot of the protocol, answered from the engine's declarations.

    A subclass sets the required attributes (``name``, ``title``, ``default_launcher``,
    ``option_fields``, ``log_grammar``, ``endpoints``) and overrides what it knows better.
    """

    # -- what it must say (the protocol's REQUIRED slots) -----------------------------------
    name: str
    title: str
    default_launcher: str
    endpoints: Endpoints
    log_grammar: LogGrammar

    # -- identity --------------------------------------------------------------------------
    default_host: str = "127.0.0.1"
    default_port: int = 8000
    docker_image: str | None = None
    """The image its project publishes (``[service] image`` when a plan names none)."""
    model_flag: str = "--model"
    host_flag: str = "--host"
    port_flag: str = "--port"
    """The flags the default command line names the model and the address with."""

    # -- configuration ---------------------------------------------------------------------
    option_fields: tuple[OptionField, ...] = ()
    releases: ReleaseTable = ReleaseTable()
    ties: tuple[Tie, ...] = ()
    """Keys it derives from others as it starts (``core.config.ties``)."""
    retired_keys: Mapping[str, str] = MappingProxyType({})
    """Keys older plans could hold that it has no key for: dropped as read, with the notice."""
    foreign_keys: Mapping[str, str] = MappingProxyType({})
    """Other engines' keys a table of its own may hold by mistake: refused with the fix."""

    @property
    def modelled_flags(self) -> Mapping[str, str]:
        """Every flag its command line sets a key with: the model, each key's, the address."""
        flags = {self.model_flag: "model_path", self.host_flag: "host", self.port_flag: "port"}
        flags.update({f.flag: f.name for f in self.option_fields if f.flag})
        return flags

    def launches(self, program: str, module: str | None) -> bool:
        """Whether ``program`` is its launcher's program (or ``python -m`` its name)."""
        words = self.default_launcher.split()
        if module is not None:
            return module.split(".")[0] == self.name
        return bool(words) and program == words[0].rsplit("/", 1)[-1]

    def canonical_flag(self, flag: str) -> str:
        return flag

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        """``MODEL_FLAG MODEL``, each set key as ``--flag value`` in its declared order (a
        true ``bool`` as the flag alone), the host and the port, then ``extra_args``."""
        own = [f for f in self.option_fields if f.flag]
        return [
            self.model_flag,
            config.model_path,
            *option_words(config.options, own),
            self.host_flag,
            config.host,
            self.port_flag,
            str(config.port),
            *config.extra_args,
        ]

    def positional_words(self, launcher: Sequence[str]) -> int:
        return 0

    def parse_args(self, launcher: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
        """The inverse of :meth:`render_flags`: its flags (``--flag value`` or
        ``--flag=value``) as keys, every other word kept, in order, in ``extra_args``."""
        flags = self.modelled_flags
        kinds = {f.name: f.kind for f in self.option_fields}
        fields: dict[str, Any] = {"host": self.default_host, "port": self.default_port}
        extra: list[str] = []
        tokens = list(words)
        i = 0
        while i < len(tokens):
            token = tokens[i]
            i += 1
            name, eq, inline = token.partition("=")
            key = flags.get(name) if token.startswith("-") else None
            if key is None:
                extra.append(token)
                continue
            if kinds.get(key) == "bool":  # alone, or --flag=true / --flag=false
                fields[key] = parse_value(self.name, key, inline, key=name) if eq else True
                continue
            value, i = flag_value(name, inline if eq else None, tokens, i)
            fields[key] = parse_value(self.name, key, value, key=name)
        fields["extra_args"] = tuple(extra)
        return fields

    def check(self, config: ServerConfig, bad_ints: set[str], report: IssueReport) -> None:
        """No rules beyond its keys' kinds and bounds (validation's)."""

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        return config, []

    def verify_tokens(self, config: ServerConfig) -> int:
        """A chain: its draft length plus the target's own token, when it speculates (its
        method set, or — an engine without one — a draft length above 0)."""
        length = concept_value(config, Concept.DRAFT_LENGTH)
        method = concept_key(config.engine, Concept.METHOD)
        if method is not None and concept_value(config, Concept.METHOD) in (None, "none"):
            return 0
        return length + 1 if isinstance(length, int) and length > 0 else 0

    def speculation_off(self, config: ServerConfig) -> str | None:
        return None

    # -- releases --------------------------------------------------------------------------
    def detect_command(self, python: str) -> list[str] | None:
        return None

    def parse_release(self, output: str) -> str | None:
        return None

    def release_from_server_info(self, body: Any) -> str | None:
        return None

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        """``config`` in ``version``'s names (its own ``engine_version`` wins)."""
        if config.engine_version or version is None:
            return config
        return dataclasses.replace(config, engine_version=version)

    def release_line(self, version: str | None, source: str = "") -> str:
        return f"{self.title} {version}" if version else ""

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        return [*launcher, "--help"]

    def fingerprint_command(self, launcher: Sequence[str]) -> str | None:
        return binary_fingerprint(launcher[0]) if launcher else None

    # -- editor ----------------------------------------------------------------------------
    def editor_fields(self, version: str | None) -> tuple[EditorField, ...]:
        """Its keys marked for the editor (``OptionField.edit``), then ``extra_args``."""
        fields = [
            EditorField(f.name, f.kind, f.hint, f.flag, _carried(f, self.option_fields))
            for f in self.option_fields
            if f.edit
        ]
        return (*fields, EditorField("extra_args", "args", "further flags, shell-quoted"))

    # -- tuning by level -------------------------------------------------------------------
    def without_speculation(self, config: ServerConfig) -> ServerConfig:
        """``config`` with its method, draft model, draft length and shape unset."""
        keys = [k for concept in _DRAFT for k in concept_keys(config.engine, concept)]
        return dataclasses.replace(config, **dict.fromkeys(keys)) if keys else config

    def schedule(self, picks: Sequence[LevelPick]) -> ServerConfig | Issue:
        key = concept_key(picks[0].config.engine, Concept.DRAFT_LENGTH) if picks else None
        return Issue(
            key,
            Severity.ERROR,
            f"{self.title} drafts one length at every batch size: it has no draft length "
            "per batch size to deploy a schedule with.",
            "deploy the per-level table's best for your traffic (or the single best).",
        )

    def scheduled(self, config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
        return None

    def side_files(self, config: ServerConfig) -> tuple[SideFile, ...]:
        return ()

    def fix_acceptance(self, config: ServerConfig, length: float) -> ServerConfig | Issue:
        return Issue(
            concept_key(config.engine, Concept.DRAFT_LENGTH),
            Severity.ERROR,
            f"{self.title} has no benchmark knob that fixes the acceptance.",
            "measure the real acceptance (remove what_if_accept_length).",
        )

    def fixed_acceptance(self, config: ServerConfig) -> str | None:
        return None

    # -- forecast: none without a reader of the model's own files ----------------------------
    def model_files(self, config: ServerConfig) -> tuple[str, ...]:
        return ()

    def model_facts_command(self, python: str, paths: Sequence[str]) -> list[str] | None:
        return None

    def parse_model_facts(self, output: str) -> tuple[ModelFacts, ...]:
        return ()

    def forecast_load(self, config: ServerConfig, facts: Sequence[ModelFacts]) -> Forecast | None:
        return None

    def steps_at(self, config: ServerConfig, batch: int) -> int | None:
        """One length at every batch size: its draft length when it speculates, else 0
        (``None``: a draft length it does not state)."""
        if self.verify_tokens(config) == 0:
            return 0
        length = concept_value(config, Concept.DRAFT_LENGTH)
        return length if isinstance(length, int) else None

    def edges(self, config: ServerConfig, up_to: int) -> tuple[Edge, ...]:
        return ()  # no length per batch size, no engine limit that switches one

    def adaptive_mode(self, config: ServerConfig) -> str | None:
        return None

    def adaptive_contender(
        self, schedule: ServerConfig, same_candidates: bool
    ) -> ServerConfig | Issue:
        return Issue(
            concept_key(schedule.engine, Concept.DRAFT_LENGTH),
            Severity.ERROR,
            f"{self.title} has no adaptive mode of its own that chooses the draft length at "
            "run time: there is no engine mode to compare the schedule with.",
            "compare the schedule with the best static per level (the per-level table does).",
        )
