"""vLLM as the core sees it: the :class:`~specconsole.core.engine.Engine` protocol, filled
from this package's modules (flags, rules, logs, editor)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import python_fingerprint
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig, SpecAlgorithm
from specconsole.core.engine.protocol import EditorField, Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.engines.vllm import editor, flags, options, releases, rules, tuning

if TYPE_CHECKING:
    from specconsole.core.engine.schedule import LevelPick, ScheduleRow, SideFile
    from specconsole.core.logs.grammar import LogGrammar

__all__ = ["ENGINE", "SPEC_COUNTERS", "VLLM"]

SPEC_COUNTERS = SpecCounters(
    drafts="vllm:spec_decode_num_drafts_total",
    draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    accepted="vllm:spec_decode_num_accepted_tokens_total",
    per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
    position_label="position",
    output_tokens="vllm:generation_tokens_total",
)
"""Its Prometheus counters (``vllm/v1/spec_decode/metrics.py``'s ``SpecDecodingProm``, and
``vllm:generation_tokens`` of ``v1/metrics/loggers.py``; both releases checked): served at
``/metrics`` from the start, never reset, labelled ``engine`` and ``model_name`` (summed)."""


class VLLM:
    """vLLM's flags, rules, log grammar, endpoints and editor fields."""

    name = "vllm"
    title = "vLLM"
    default_launcher = "vllm serve"
    default_host = flags.VLLM_DEFAULT_HOST
    default_port = flags.VLLM_DEFAULT_PORT
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = options.OPTION_FIELDS
    releases = releases.TABLE
    endpoints = Endpoints(
        server_info="/version",  # its release; vLLM serves no resolved-arguments document
        flush_cache=None,  # /reset_prefix_cache exists only with VLLM_SERVER_DEV_MODE=1
        apis=("completions", "chat"),
        bench_backend="vllm",
        spec_counters=SPEC_COUNTERS,
    )

    def launches(self, program: str, module: str | None) -> bool:
        return program == "vllm" or (module or "").startswith("vllm")

    def canonical_flag(self, flag: str) -> str:
        """vLLM accepts ``--max_num_seqs`` as well as ``--max-num-seqs``."""
        return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else flag

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        return flags.vllm_flags(config, launcher)

    def positional_words(self, launcher: Sequence[str]) -> int:
        return 1 if flags.launcher_takes_positional_model(launcher) else 0

    def parse_args(self, launcher: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
        return flags.parse_vllm_args(words, flags.launcher_takes_positional_model(launcher))

    def check(
        self,
        config: ServerConfig,
        algorithm: SpecAlgorithm | None,
        bad_ints: set[str],
        report: IssueReport,
    ) -> None:
        rules.validate_vllm(config, algorithm, bad_ints, report)

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        """The per-batch-size K in its compact form (``1-8:5,9-64:3``): what the command line
        reads back as, so a deployed unit parses back to the configuration it runs."""
        return options.normalized(config), []

    def verify_tokens(self, config: ServerConfig) -> int:
        """A chain of ``num_speculative_tokens`` (the steps) verified with the bonus token."""
        if config.speculative_algorithm is None:
            return 0
        return (config.speculative_num_steps or 0) + 1

    def speculation_off(self, config: ServerConfig) -> str | None:
        return None  # it refuses (validation) rather than silently not speculating

    def detect_command(self, python: str) -> list[str] | None:
        return releases.detect_command(python)

    def parse_release(self, output: str) -> str | None:
        return releases.parse_detected(output)

    def release_from_server_info(self, body: Any) -> str | None:
        """``GET /version``'s ``{"version": "0.11.0"}``."""
        return releases.release_from_version_body(body)

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        if config.engine_version or version is None:
            return config
        return dataclasses.replace(config, engine_version=version)

    def release_line(self, version: str | None, source: str = "") -> str:
        return editor.release_line(version, source)

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        """``--help=all``: vLLM's plain ``--help`` lists its option groups, not its flags
        (``FlexibleArgumentParser``, 0.11 and 0.34); the simulator's face answers it too."""
        return [*launcher, "--help=all"]

    def fingerprint_command(self, launcher: Sequence[str]) -> str | None:
        return python_fingerprint(launcher)

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.vllm.logs import GRAMMAR  # only when a log is read

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
        return ()  # the schedule is inline in --speculative-config

    def fix_acceptance(self, config: ServerConfig, length: float) -> ServerConfig | Issue:
        return tuning.fix_acceptance(config, length)

    def fixed_acceptance(self, config: ServerConfig) -> str | None:
        return tuning.fixed_acceptance(config)


ENGINE = VLLM()
"""The one vLLM engine the registry hands out."""
