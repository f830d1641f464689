"""vLLM as the core sees it: the engine's knowledge from this package's modules (keys,
flags, releases, rules, logs, editor, tuning), on :class:`EngineBase`'s defaults."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import python_fingerprint
from specconsole.core.config.enginebase import EngineBase
from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.protocol import Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.engines.vllm import editor, flags, options, rules, tuning
from specconsole.engines.vllm.releases import (
    TABLE,
    detect_command,
    parse_detected,
    release_from_version_body,
)

if TYPE_CHECKING:
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


class VLLM(EngineBase):
    """vLLM's keys, flags, rules, log grammar, endpoints and editor fields."""

    name = "vllm"
    title = "vLLM"
    default_launcher = "vllm serve"
    docker_image = "vllm/vllm-openai:latest"  # the vLLM project's published image
    default_host = flags.VLLM_DEFAULT_HOST
    default_port = flags.VLLM_DEFAULT_PORT
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = options.OPTION_FIELDS
    retired_keys = options.RETIRED
    releases = TABLE
    endpoints = Endpoints(
        server_info="/version",  # its release; vLLM serves no resolved-arguments document
        flush_cache=None,  # /reset_prefix_cache exists only with VLLM_SERVER_DEV_MODE=1
        apis=("completions", "chat"),
        bench_backend="vllm",
        spec_counters=SPEC_COUNTERS,
    )
    check = staticmethod(rules.validate_vllm)
    detect_command = staticmethod(detect_command)
    parse_release = staticmethod(parse_detected)
    release_from_server_info = staticmethod(release_from_version_body)  # GET /version
    fingerprint_command = staticmethod(python_fingerprint)
    release_line = staticmethod(editor.release_line)
    without_speculation = staticmethod(tuning.without_speculation)
    schedule = staticmethod(tuning.schedule)
    scheduled = staticmethod(tuning.scheduled)
    fix_acceptance = staticmethod(tuning.fix_acceptance)
    fixed_acceptance = staticmethod(tuning.fixed_acceptance)

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

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        """The per-batch-size K in its compact form (``1-8:5,9-64:3``): what the command line
        reads back as, so a deployed unit parses back to the configuration it runs."""
        return options.normalized(config), []

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        """``--help=all``: vLLM's plain ``--help`` lists its option groups, not its flags
        (``FlexibleArgumentParser``, 0.11 and 0.34); the simulator's face answers it too."""
        return [*launcher, "--help=all"]

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.vllm.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    steps_at = staticmethod(tuning.steps_at)
    edges = staticmethod(tuning.edges)

    def adaptive_contender(
        self, schedule: ServerConfig, same_candidates: bool
    ) -> ServerConfig | Issue:
        return tuning.no_adaptive_mode(schedule)


ENGINE = VLLM()
"""The one vLLM engine the registry hands out."""
