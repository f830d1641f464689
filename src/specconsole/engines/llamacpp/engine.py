"""llama.cpp's ``llama-server`` as the core sees it: the engine's knowledge from this
package's modules (options, flags, rules, logs, tuning), on :class:`EngineBase`'s defaults.

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

from specconsole.core.config.enginebase import EngineBase
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.protocol import Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.engines.llamacpp import editor, flags, limits, rules, tuning
from specconsole.engines.llamacpp.options import OPTION_FIELDS

if TYPE_CHECKING:
    from specconsole.core.engine.schedule import Edge
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


class LlamaCpp(EngineBase):
    """llama-server's keys, flags, rules, log grammar, endpoints and editor fields."""

    name = "llamacpp"
    title = "llama.cpp"
    default_launcher = "llama-server"
    docker_image = "ghcr.io/ggml-org/llama.cpp:server"  # the project's published server image
    default_host = flags.DEFAULT_HOST
    default_port = flags.DEFAULT_PORT
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = OPTION_FIELDS
    foreign_keys = rules.FOREIGN_KEYS
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
    speculation_off = staticmethod(rules.speculation_off)
    release_line = staticmethod(editor.release_line)
    without_speculation = staticmethod(tuning.without_speculation)
    schedule = staticmethod(tuning.schedule)
    fix_acceptance = staticmethod(tuning.fix_acceptance)
    fixed_acceptance = staticmethod(tuning.fixed_acceptance)

    def launches(self, program: str, module: str | None) -> bool:
        return program in ("llama-server", "llama-cpp-server") and module is None

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        return flags.render_flags(config)

    def parse_args(self, launcher: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
        return flags.parse_args(words)

    def check(self, config: ServerConfig, bad_ints: set[str], report: IssueReport) -> None:
        rules.check(config, report)

    def verify_tokens(self, config: ServerConfig) -> int:
        """A chain of up to ``spec_draft_n_max`` drafted tokens (3 when unset) and the
        target's own, when it speculates."""
        if not rules.speculates(config):
            return 0
        n_max = config.spec_draft_n_max
        return (n_max if isinstance(n_max, int) else rules.DEFAULT_N_MAX) + 1

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        return config  # a source build says "build 0": its --help decides, not a release

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.llamacpp.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    # -- the forecast: the models' own limits (optional capabilities) -----------------------
    model_files = staticmethod(limits.model_files)
    parse_model_facts = staticmethod(limits.parse_facts)
    forecast_load = staticmethod(limits.forecast_load)

    def model_facts_command(self, python: str, paths: Sequence[str]) -> list[str]:
        """The stdlib GGUF header reader, run on the box (``gguf.py``)."""
        from specconsole.engines.llamacpp.gguf import box_command

        return box_command(python, list(paths))

    def steps_at(self, config: ServerConfig, batch: int) -> int | None:
        return None  # drafts up to spec_draft_n_max, stopping early by its own rule

    def edges(self, config: ServerConfig, up_to: int) -> tuple[Edge, ...]:
        return ()

    def adaptive_contender(
        self, schedule: ServerConfig, same_candidates: bool
    ) -> ServerConfig | Issue:
        return tuning.no_adaptive_mode()


ENGINE = LlamaCpp()
"""The one llama.cpp engine the registry hands out."""
