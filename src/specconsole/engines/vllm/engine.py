"""vLLM as the core sees it: the :class:`~specconsole.core.engine.Engine` protocol, filled
from this package's modules (flags, rules, logs, editor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig, SpecAlgorithm
from specconsole.core.config.releases import ReleaseTable
from specconsole.core.engine.protocol import EditorField, Endpoints
from specconsole.engines.vllm import editor, flags, rules

if TYPE_CHECKING:
    from specconsole.core.logs.grammar import LogGrammar

__all__ = ["ENGINE", "VLLM"]


class VLLM:
    """vLLM's flags, rules, log grammar, endpoints and editor fields."""

    name = "vllm"
    title = "vLLM"
    default_launcher = "vllm serve"
    default_host = flags.VLLM_DEFAULT_HOST
    default_port = flags.VLLM_DEFAULT_PORT
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = ()
    releases = ReleaseTable()
    endpoints = Endpoints(apis=("completions", "chat"), bench_backend="vllm")

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
        return config, []

    def verify_tokens(self, config: ServerConfig) -> int:
        """A chain of ``num_speculative_tokens`` (the steps) verified with the bonus token."""
        if config.speculative_algorithm is None:
            return 0
        return (config.speculative_num_steps or 0) + 1

    def detect_command(self, python: str) -> list[str] | None:
        return None

    def parse_release(self, output: str) -> str | None:
        return None

    def release_from_server_info(self, body: Any) -> str | None:
        return None

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        return config

    def release_line(self, version: str | None, source: str = "") -> str:
        return editor.release_line(version, source)

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.vllm.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    def editor_fields(self, version: str | None) -> tuple[EditorField, ...]:
        return editor.editor_fields(version)


ENGINE = VLLM()
"""The one vLLM engine the registry hands out."""
