"""SGLang as the core sees it: the engine's knowledge from this package's modules (keys,
flags, releases, rules, normalize, logs, editor, tuning), on :class:`EngineBase`'s defaults."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.capabilities import python_fingerprint
from specconsole.core.config.enginebase import EngineBase
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.protocol import Endpoints
from specconsole.core.measure.acceptance import SpecCounters
from specconsole.engines.sglang import adaptive, editor, flags, keys, routing, rules, tuning
from specconsole.engines.sglang.normalize import normalize
from specconsole.engines.sglang.releases import TABLE, detect_command, parse_detected

if TYPE_CHECKING:
    from specconsole.core.logs.grammar import LogGrammar

__all__ = ["ENGINE", "SGLang"]

AUTO_DRAFT_TOKENS = 4
"""SGLang's auto-chosen (steps, topk, draft) is (3, 1, 4) for most models (sglang.md 1.2)."""

SPEC_COUNTERS = SpecCounters(
    drafts="sglang:spec_verify_calls_total",
    output_tokens="sglang:generation_tokens_total",
    gauge="sglang:spec_accept_length",
    steps_gauge="sglang:spec_num_steps",
)
"""Its ``/metrics`` (with ``--enable-metrics``; ``TokenizerMetricsCollector`` in 0.5.14 and
0.5.23): verify steps and generated tokens, both counted as each request finishes (accept
length = tokens / verify steps, SGLang's own ``spec_accept_length``), no draft-token or
per-position counter, the scheduler's ``spec_accept_length`` gauge of its last interval and
its ``spec_num_steps`` gauge (the draft length it runs now: what an adaptive schedule put in
force).
0.5.9 has only the gauges: a level then reads ``/server_info`` after its flush."""


SERVER_INFO_KEYS: tuple[str, ...] = (
    "version",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "max_total_num_tokens",
    "tp_size",
    "context_length",
    "chunked_prefill_size",
    "attention_backend",
    "avg_spec_accept_length",
)
"""Resolved server arguments kept in each trial record (from ``/server_info``)."""


class SGLang(EngineBase):
    """SGLang's flags, releases, rules, log grammar, endpoints and editor fields."""

    name = "sglang"
    title = "SGLang"
    default_launcher = "python3 -m sglang.launch_server"  # ``sglang serve`` is the newer one
    docker_image = "lmsysorg/sglang:latest"  # the SGLang project's published image
    default_port = 30000
    modelled_flags = flags.MODELLED_FLAGS
    option_fields = (*keys.KEYS, *adaptive.OPTION_FIELDS, *tuning.OPTION_FIELDS)
    ties = keys.TIES
    releases = TABLE
    endpoints = Endpoints(
        server_info="/server_info",
        server_info_keys=SERVER_INFO_KEYS,
        server_info_nested=("server_args", "internal_states"),
        flush_cache="/flush_cache",
        apis=("generate", "completions", "chat"),
        bench_backend="sglang",
        spec_counters=SPEC_COUNTERS,
    )
    detect_command = staticmethod(detect_command)
    parse_release = staticmethod(parse_detected)
    fingerprint_command = staticmethod(python_fingerprint)
    release_line = staticmethod(editor.release_line)
    editor_fields = staticmethod(editor.editor_fields)
    without_speculation = staticmethod(tuning.without_speculation)
    schedule = staticmethod(tuning.schedule)
    scheduled = staticmethod(tuning.scheduled)
    side_files = staticmethod(tuning.side_files)
    fix_acceptance = staticmethod(tuning.fix_acceptance)
    fixed_acceptance = staticmethod(tuning.fixed_acceptance)

    def launches(self, program: str, module: str | None) -> bool:
        return program == "sglang" or (module or "").startswith("sglang")

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        return flags.render_flags(config)

    def check(self, config: ServerConfig, bad_ints: set[str], report: IssueReport) -> None:
        algorithm = config.speculative_algorithm
        if not isinstance(algorithm, keys.SpecAlgorithm):
            algorithm = None  # validation named a value that is not one
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

    def release_from_server_info(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("version"), str):
            return parse_detected(body["version"])
        return None

    @property
    def log_grammar(self) -> LogGrammar:
        from specconsole.engines.sglang.logs import GRAMMAR  # only when a log is read

        return GRAMMAR

    steps_at = staticmethod(routing.steps_at)
    edges = staticmethod(routing.edges)
    adaptive_mode = staticmethod(routing.adaptive_mode)
    adaptive_contender = staticmethod(routing.contender)


ENGINE = SGLang()
"""The one SGLang engine the registry hands out."""
