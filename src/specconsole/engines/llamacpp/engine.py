"""llama.cpp's ``llama-server`` as the core sees it: the :class:`~specconsole.core.engine.Engine`
protocol, filled from this package's modules (options, flags, rules, logs, editor).

What it serves (measured on the real server, docs/llamacpp-testbed.md): ``/health`` answers
503 ``Loading model`` while it loads and 200 once it serves; ``/metrics`` (with ``--metrics``)
counts drafts, draft tokens, accepted tokens per position and generated tokens; the OpenAI
``/v1/completions`` and ``/v1/chat/completions`` stream with a final ``usage`` and
``timings`` (its own ``/completion`` too). It has no ``/server_info`` and no
``/flush_cache``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import binary_fingerprint
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig, SpecAlgorithm
from specconsole.core.config.releases import ReleaseTable
from specconsole.core.engine.protocol import EditorField, Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.core.measure.forecast import Forecast, ModelFacts
from specconsole.engines.llamacpp import editor, flags, limits, rules, tuning
from specconsole.engines.llamacpp.options import OPTION_FIELDS

if TYPE_CHECKING:
    from specconsole.core.engine.schedule import LevelPick, ScheduleRow, SideFile
    from specconsole.core.logs.grammar import LogGrammar

__all__ = ["ENGINE", "LlamaCpp"]

SPEC_COUNTERS = SpecCounters(
    drafts="llamacpp:spec_decode_num_drafts_total",
    draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
    accepted="llamacpp:spec_decode_num_accepted_tokens_total",
    per_position="llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
    position_label="position",
    output_tokens="llamacpp:tokens_predicted_total",
)
"""Its ``/metrics`` counters (the per-position series appear with the first draft)."""


class LlamaCpp:
    """llama-server's keys, flags, rules, log grammar, endpoints and editor fields."""

    name = "llamacpp"
    title = "llama.cpp"
    default_launcher = "llama-server"
    default_host = flags.DEFAULT_HOST
    default_port = flags.DEFAULT_PORT
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = OPTION_FIELDS
    releases = ReleaseTable()
    endpoints = Endpoints(
        health="/health",
        server_info=None,
        flush_cache=None,
        metrics="/metrics",
        apis=("chat", "completions"),
        bench_backend="llamacpp",
        spec_counters=SPEC_COUNTERS,
        chunk_per_step=False,  # a chunk per token, however many a step accepted
    )

    def launches(self, program: str, module: str | None) -> bool:
        return program in ("llama-server", "llama-cpp-server") and module is None

    def canonical_flag(self, flag: str) -> str:
        return flag

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        return flags.render_flags(config)

    def positional_words(self, launcher: Sequence[str]) -> int:
        return 0

    def parse_args(self, launcher: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
        return flags.parse_args(words)

    def check(
        self,
        config: ServerConfig,
        algorithm: SpecAlgorithm | None,
        bad_ints: set[str],
        report: IssueReport,
    ) -> None:
        rules.check(config, algorithm, report)

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        return config, []

    def verify_tokens(self, config: ServerConfig) -> int:
        """A chain of up to ``spec_draft_n_max`` drafted tokens (3 when unset) and the
        target's own, when it speculates."""
        if not rules.speculates(config):
            return 0
        n_max = config.spec_draft_n_max
        return (n_max if isinstance(n_max, int) else rules.DEFAULT_N_MAX) + 1

    def speculation_off(self, config: ServerConfig) -> str | None:
        return rules.speculation_off(config)

    def detect_command(self, python: str) -> list[str] | None:
        return None  # a source build says "build 0, commit unknown": its --help decides

    def parse_release(self, output: str) -> str | None:
        return None

    def release_from_server_info(self, body: Any) -> str | None:
        return None

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        return config

    def release_line(self, version: str | None, source: str = "") -> str:
        return editor.release_line(version, source)

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        return [*launcher, "--help"]

    def fingerprint_command(self, launcher: Sequence[str]) -> str | None:
        return binary_fingerprint(launcher[0]) if launcher else None

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.llamacpp.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    def editor_fields(self, version: str | None) -> tuple[EditorField, ...]:
        return editor.editor_fields(version)

    def without_speculation(self, config: ServerConfig) -> ServerConfig:
        return tuning.without_speculation(config)

    def schedule(self, picks: Sequence[LevelPick]) -> ServerConfig | Issue:
        return tuning.schedule(picks)

    def scheduled(self, config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
        return None  # one n_max at every batch size (tuning.schedule says why)

    def side_files(self, config: ServerConfig) -> tuple[SideFile, ...]:
        return ()

    def fix_acceptance(self, config: ServerConfig, length: float) -> ServerConfig | Issue:
        return tuning.fix_acceptance(config, length)

    def fixed_acceptance(self, config: ServerConfig) -> str | None:
        return tuning.fixed_acceptance(config)

    # -- the forecast: the models' own limits (optional capabilities) -----------------------
    def model_files(self, config: ServerConfig) -> tuple[str, ...]:
        return limits.model_files(config)

    def model_facts_command(self, python: str, paths: Sequence[str]) -> list[str]:
        """The stdlib GGUF header reader, run on the box (``gguf.py``)."""
        from specconsole.engines.llamacpp.gguf import box_command

        return box_command(python, list(paths))

    def parse_model_facts(self, output: str) -> tuple[ModelFacts, ...]:
        return limits.parse_facts(output)

    def forecast_load(self, config: ServerConfig, facts: Sequence[ModelFacts]) -> Forecast | None:
        return limits.forecast_load(config, facts)


ENGINE = LlamaCpp()
"""The one llama.cpp engine the registry hands out."""
