"""SGLang as the core sees it: the :class:`~specconsole.core.engine.Engine` protocol, filled
from this package's modules (flags, releases, rules, normalize, logs, editor)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import python_fingerprint
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import DEFAULT_SGLANG_LAUNCHER, ServerConfig, SpecAlgorithm
from specconsole.core.engine.protocol import EditorField, Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.engines.sglang import adaptive, editor, flags, releases, rules, tuning
from specconsole.engines.sglang.normalize import normalize

if TYPE_CHECKING:
    from specconsole.core.engine.schedule import LevelPick, ScheduleRow, SideFile
    from specconsole.core.logs.grammar import LogGrammar

__all__ = ["ENGINE", "SGLang"]

AUTO_DRAFT_TOKENS = 4
"""SGLang's auto-chosen (steps, topk, draft) is (3, 1, 4) for most models (sglang.md 1.2)."""

SPEC_COUNTERS = SpecCounters(
    drafts="sglang:spec_verify_calls_total",
    output_tokens="sglang:generation_tokens_total",
    gauge="sglang:spec_accept_length",
)
"""Its ``/metrics`` (with ``--enable-metrics``; ``TokenizerMetricsCollector`` in 0.5.14 and
0.5.23): verify steps and generated tokens, both counted as each request finishes (accept
length = tokens / verify steps, SGLang's own ``spec_accept_length``), no draft-token or
per-position counter, and the scheduler's ``spec_accept_length`` gauge of its last interval.
0.5.9 has only the gauges: a level then reads ``/server_info`` after its flush."""


class SGLang:
    """SGLang's flags, releases, rules, log grammar, endpoints and editor fields."""

    name = "sglang"
    title = "SGLang"
    default_launcher = DEFAULT_SGLANG_LAUNCHER
    default_host = "127.0.0.1"
    default_port = 30000
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = (*adaptive.OPTION_FIELDS, *tuning.OPTION_FIELDS)
    releases = releases.TABLE
    endpoints = Endpoints(
        server_info="/server_info",
        flush_cache="/flush_cache",
        apis=("generate", "completions", "chat"),
        bench_backend="sglang",
        spec_counters=SPEC_COUNTERS,
    )

    def launches(self, program: str, module: str | None) -> bool:
        return program == "sglang" or (module or "").startswith("sglang")

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
        rules.check_engine_version(config, report)
        rules.validate_sglang(config, algorithm, bad_ints, report)
        adaptive.check_adaptive(config, algorithm, report)

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        return normalize(tuning.with_simulated_env(config), architecture)

    def verify_tokens(self, config: ServerConfig) -> int:
        """SGLang's rules: no speculation → 0; an explicit draft-token count wins except with
        topk 1, where SGLang forces ``steps + 1``; all three unset → the auto choice (4)."""
        if config.speculative_algorithm is None:
            return 0
        steps = config.speculative_num_steps
        topk = config.speculative_eagle_topk
        if steps is None:
            return config.speculative_num_draft_tokens or AUTO_DRAFT_TOKENS
        if topk in (None, 1):
            return steps + 1
        if config.speculative_num_draft_tokens is not None:
            return config.speculative_num_draft_tokens
        return steps * topk + 1

    def speculation_off(self, config: ServerConfig) -> str | None:
        return None  # it refuses (validation) rather than silently not speculating

    def detect_command(self, python: str) -> list[str] | None:
        return releases.detect_command(python)

    def parse_release(self, output: str) -> str | None:
        return releases.parse_detected(output)

    def release_from_server_info(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("version"), str):
            return releases.parse_detected(body["version"])
        return None

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        if config.engine_version or version is None:
            return config
        return dataclasses.replace(config, engine_version=version)

    def release_line(self, version: str | None, source: str = "") -> str:
        return editor.release_line(version, source)

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        return [*launcher, "--help"]  # argparse's help: a check next to the release table

    def fingerprint_command(self, launcher: Sequence[str]) -> str | None:
        return python_fingerprint(launcher)

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.sglang.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    def editor_fields(self, version: str | None) -> tuple[EditorField, ...]:
        return editor.editor_fields(version)

    def without_speculation(self, config: ServerConfig) -> ServerConfig:
        return tuning.without_speculation(config)

    def schedule(self, picks: Sequence[LevelPick]) -> ServerConfig | Issue:
        return tuning.schedule(picks)

    def scheduled(self, config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
        return tuning.scheduled(config)

    def side_files(self, config: ServerConfig) -> tuple[SideFile, ...]:
        return tuning.side_files(config)

    def fix_acceptance(self, config: ServerConfig, length: float) -> ServerConfig | Issue:
        return tuning.fix_acceptance(config, length)

    def fixed_acceptance(self, config: ServerConfig) -> str | None:
        return tuning.fixed_acceptance(config)


ENGINE = SGLang()
"""The one SGLang engine the registry hands out."""
