"""SGLang's (and vLLM's) launch-argument rules, checked before anything is deployed.

Why: a bad configuration costs a ~100 s model load before the server refuses it, or worse,
loads and then crashes with an illegal memory access under load (SGLang does not check
``draft tokens <= steps x topk + 1``). Checking here turns that into an instant message in
the editor, naming the field and the fix.

Two entry points:

* :func:`validate` lists every problem (errors block a deploy; warnings and notices inform).
* :func:`normalize` applies the adjustments the server itself makes (``topk == 1`` forces
  ``draft tokens = steps + 1``; an unset tree gets SGLang's auto sizes; an unset
  ``max_running_requests`` becomes 48 with speculative decoding), returning the configuration
  as the server will actually run it plus a notice per adjustment.

Neither raises on any input, however malformed (wrong types included).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from enum import StrEnum

from specconsole.core.bounds import SERVER_LIMITS, control_char_problem
from specconsole.core.config import Engine, ServerConfig, SpecAlgorithm
from specconsole.core.engine_versions import parse_version, removed_flags, rule_applies

__all__ = [
    "AUTO_TREE",
    "AUTO_TREE_LARGE",
    "MSG_DRAFT_ADJUSTED",
    "MSG_MAX_RUNNING_RESET",
    "Issue",
    "Severity",
    "auto_tree",
    "errors",
    "normalize",
    "validate",
]


class Severity(StrEnum):
    """How much an issue matters: errors block a deploy."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding about a configuration."""

    field: str | None
    """The ``ServerConfig`` field (= TOML key) it is about; ``None`` for the whole config."""
    severity: Severity
    message: str
    """What is wrong, in the server's terms."""
    fix: str
    """What to change."""

    @property
    def blocking(self) -> bool:
        return self.severity is Severity.ERROR

    def __str__(self) -> str:
        where = self.field or "config"
        return f"{self.severity.value}: {where}: {self.message} Fix: {self.fix}"


MSG_DRAFT_ADJUSTED = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
    "speculative_eagle_topk == 1"
)
"""SGLang's own warning text (``_handle_eagle_family``)."""
MSG_MAX_RUNNING_RESET = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by "
    "explicitly setting --max-running-requests."
)
"""SGLang's own warning text."""

AUTO_TREE: tuple[int, int, int] = (3, 1, 4)
"""SGLang's auto (steps, topk, draft tokens) for STANDALONE and every model family but the
few listed in :data:`AUTO_TREE_LARGE`."""
AUTO_TREE_LARGE: tuple[int, int, int] = (5, 4, 8)
"""SGLang's auto tree for ``LlamaForCausalLM`` and Grok-1 targets."""
_LARGE_TREE_ARCHS = frozenset({"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"})

EAGLE_FAMILY = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})
"""Algorithms with a draft tree (NEXTN is rewritten to EAGLE by SGLang)."""
_TREE_ALGOS = EAGLE_FAMILY | {SpecAlgorithm.NEXTN}
_NEEDS_DRAFT_MODEL = frozenset(
    {SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE}
)
_TREE_FIELDS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
_POSITIVE_INTS = (
    *_TREE_FIELDS,
    "cuda_graph_max_bs",
    "max_running_requests",
    "tp_size",
    "context_length",
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\$?\Z")

MODELLED_FLAGS: dict[str, str] = {
    "--model-path": "model_path",
    "--model": "model_path",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-draft-model-path": "speculative_draft_model_path",
    "--speculative-draft-model": "speculative_draft_model_path",
    "--speculative-num-steps": "speculative_num_steps",
    "--speculative-eagle-topk": "speculative_eagle_topk",
    "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "--mem-fraction-static": "mem_fraction_static",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--cuda-graph-max-bs-decode": "cuda_graph_max_bs",
    "--max-running-requests": "max_running_requests",
    "--tp-size": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--tp": "tp_size",
    "--context-length": "context_length",
    "--attention-backend": "attention_backend",
    "--host": "host",
    "--port": "port",
}
"""SGLang flags (with aliases) that map to ``ServerConfig`` fields."""

VLLM_MODELLED_FLAGS: dict[str, str] = {
    "--model": "model_path",
    "--speculative-config": "speculative_algorithm",
    "--gpu-memory-utilization": "mem_fraction_static",
    "--max-num-seqs": "max_running_requests",
    "--tensor-parallel-size": "tp_size",
    "-tp": "tp_size",
    "--max-model-len": "context_length",
    "--host": "host",
    "--port": "port",
}
"""vLLM flags that map to ``ServerConfig`` fields."""


def _flag_name(token: str) -> str:
    return token.split("=", 1)[0]


def _extra_flags(config: ServerConfig) -> list[str]:
    args = config.extra_args if isinstance(config.extra_args, tuple | list) else ()
    return [_flag_name(t) for t in args if isinstance(t, str) and t.startswith("-")]


def _extra_value(config: ServerConfig, flag: str) -> str | None:
    """The value given to ``flag`` in extra_args (``--flag v`` or ``--flag=v``), if any."""
    args = (
        [t for t in config.extra_args if isinstance(t, str)]
        if isinstance(config.extra_args, tuple | list)
        else []
    )
    for i, token in enumerate(args):
        if token == flag:
            return args[i + 1] if i + 1 < len(args) else ""
        if token.startswith(flag + "="):
            return token[len(flag) + 1 :]
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def auto_tree(architecture: str | None = None) -> tuple[int, int, int]:
    """SGLang's auto (steps, topk, draft tokens) for a target architecture (``config.json``'s
    ``architectures[0]``); unknown or ``None`` gives the common (3, 1, 4)."""
    return AUTO_TREE_LARGE if architecture in _LARGE_TREE_ARCHS else AUTO_TREE


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


def validate(config: ServerConfig) -> list[Issue]:
    """Every problem with ``config``, errors first; never raises."""
    try:
        issues = _validate(config)
    except Exception as exc:  # pragma: no cover - defensive: malformed objects of any shape
        issues = [
            Issue(
                None,
                Severity.ERROR,
                f"the configuration cannot be checked ({exc!r}).",
                "rebuild it from a [server] table.",
            )
        ]
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTICE: 2}
    return sorted(issues, key=lambda i: order[i.severity])


def errors(issues: list[Issue]) -> list[Issue]:
    """Only the blocking issues."""
    return [i for i in issues if i.blocking]


class _Report:
    """Collects issues while the rules run."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def err(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.ERROR, message, fix))

    def warn(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.WARNING, message, fix))

    def note(self, field: str | None, message: str, fix: str) -> None:
        self.issues.append(Issue(field, Severity.NOTICE, message, fix))


def _validate(config: ServerConfig) -> list[Issue]:
    r = _Report()
    err = r.err

    engine = config.engine if isinstance(config.engine, Engine) else None
    if engine is None:
        err("engine", f"unknown engine {config.engine!r}.", 'set engine = "sglang" or "vllm".')
        engine = Engine.SGLANG
    algo = config.speculative_algorithm
    if algo is not None and not isinstance(algo, SpecAlgorithm):
        err(
            "speculative_algorithm",
            f"unknown algorithm {algo!r}.",
            "use EAGLE, EAGLE3, NEXTN, STANDALONE or NGRAM, or unset it.",
        )
        algo = None

    # --- types and ranges -----------------------------------------------------------------
    if not isinstance(config.model_path, str):
        err(
            "model_path",
            f"must be a string, got {config.model_path!r}.",
            'set model_path = "/path/to/model" (or a hub id).',
        )
    elif not config.model_path.strip():
        err("model_path", "no model is set.", 'set model_path = "/path/to/model" (or a hub id).')
    elif config.model_path.startswith("-"):
        err("model_path", "looks like a flag.", "set the model's directory or hub id.")
    bad_ints: set[str] = set()
    for name in _POSITIVE_INTS:
        value = getattr(config, name)
        if value is None:
            continue
        if not _is_int(value):
            err(name, f"must be an integer, got {value!r}.", f"set {name} to a whole number.")
            bad_ints.add(name)
        elif value < 1:
            err(
                name,
                f"must be a positive integer, got {value}.",
                f"set {name} to 1 or more, or remove it to let the server choose.",
            )
            bad_ints.add(name)
    _check_bounds(config, bad_ints, r)
    mem = config.mem_fraction_static
    mem_key = "mem_fraction_static"
    if mem is not None:
        if isinstance(mem, bool) or not isinstance(mem, int | float):
            err(mem_key, f"must be a number, got {mem!r}.", "set it to e.g. 0.85.")
        elif not 0.0 < float(mem) < 1.0 or mem != mem:
            what = "gpu_memory_utilization (vLLM)" if engine is Engine.VLLM else "the share"
            err(
                mem_key,
                f"{what} must be between 0 and 1 (exclusive), got {mem}.",
                "set it to e.g. 0.85 (lower it if the server runs out of memory).",
            )
    if not _is_int(config.port) or not 1 <= config.port <= 65535:
        err("port", f"must be a TCP port 1-65535, got {config.port!r}.", "set port = 30000.")
    if not isinstance(config.host, str) or not config.host.strip():
        err("host", "no host is set.", 'set host = "127.0.0.1" (or "0.0.0.0" to listen on all).')
    if not isinstance(config.launcher, str) or not config.launcher.strip():
        err("launcher", "no launcher is set.", 'set launcher = "python3 -m sglang.launch_server".')
    for name in ("speculative_draft_model_path", "attention_backend", "working_directory", "user"):
        value = getattr(config, name)
        if value is not None and not isinstance(value, str):
            err(name, f"must be a string, got {value!r}.", f"set {name} to text or remove it.")
    wd = config.working_directory
    if isinstance(wd, str) and wd and not wd.startswith("/"):
        err(
            "working_directory",
            f"must be an absolute path, got {wd!r}.",
            "write the full path, e.g. /opt/sglang (systemd requires it).",
        )
    if isinstance(wd, str) and (wd.endswith("\\") or any(c in wd for c in "\n\r\x00")):
        err(
            "working_directory",
            "must not end with a backslash or contain line breaks (a unit file cannot hold it).",
            "rename the directory or use another path to it.",
        )
    if isinstance(config.user, str) and not _USER_NAME.match(config.user):
        err("user", f"{config.user!r} is not an account name.", "set the service's user name.")
    if not isinstance(config.env, tuple | list):
        err("env", "must be a table of NAME = value.", 'write env = { NAME = "value" }.')
    else:
        seen: set[str] = set()
        for entry in config.env:
            if not (isinstance(entry, tuple | list) and len(entry) == 2):
                err("env", f"bad entry {entry!r}.", 'write env = { NAME = "value" }.')
                continue
            name, value = entry
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                err(
                    "env",
                    f"{name!r} is not a valid variable name.",
                    "use letters, digits and underscores, not starting with a digit.",
                )
            elif name in seen:
                err("env", f"{name} is set twice.", "keep one of them.")
            else:
                seen.add(name)
            if not isinstance(value, str):
                err("env", f"{name}'s value must be a string, got {value!r}.", "quote it.")
            elif "\n" in value or "\x00" in value:
                err("env", f"{name}'s value contains a newline or NUL.", "remove it.")
    if not isinstance(config.extra_args, tuple | list) or not all(
        isinstance(t, str) for t in config.extra_args
    ):
        err("extra_args", "must be a list of strings.", 'write extra_args = ["--flag", "value"].')

    # --- flags given twice ------------------------------------------------------------------
    modelled = VLLM_MODELLED_FLAGS if engine is Engine.VLLM else MODELLED_FLAGS
    for flag in _extra_flags(config):
        if engine is Engine.VLLM and flag.startswith("--"):
            flag = "--" + flag[2:].replace("_", "-")  # vLLM accepts --max_num_seqs too
        if flag in modelled:
            name = modelled[flag]
            err(
                "extra_args",
                f"{flag} is a modelled setting and must not be in extra_args.",
                f"set {name} instead and remove {flag} from extra_args.",
            )

    if engine is Engine.VLLM:
        _validate_vllm(config, algo, bad_ints, r)
    else:
        _check_engine_version(config, r)
        _validate_sglang(config, algo, bad_ints, r)
    return r.issues


def _valid_version(config: ServerConfig) -> str | None:
    """``engine_version`` when it is a release number, else ``None`` (unknown)."""
    try:
        parse_version(str(config.engine_version))
    except ValueError:
        return None
    return config.engine_version


def _check_engine_version(config: ServerConfig, r: _Report) -> None:
    """``engine_version`` is a release number, and extra_args use no flag it has removed."""
    version = config.engine_version
    if version is None:
        return
    try:
        parse_version(str(version))
    except ValueError:
        r.err(
            "engine_version",
            f"{version!r} is not a release number.",
            'write the SGLang release on the box, e.g. engine_version = "0.5.23", or remove it.',
        )
        return
    removed = removed_flags(version)
    for flag in _extra_flags(config):
        change = removed.get(flag)
        if change is not None:
            r.err(
                "extra_args",
                f"SGLang {version} no longer accepts {flag} ({change.note}).",
                f"use {change.new} instead.",
            )


# --- bounds: every number capped, no control characters in what reaches argv or a unit -----

_COMMAND_STRINGS = (
    "model_path",
    "speculative_draft_model_path",
    "attention_backend",
    "host",
    "launcher",
    "working_directory",
    "user",
    "description",
)
"""String fields that end up on the server's command line or in its unit."""


def _check_bounds(config: ServerConfig, bad_ints: set[str], r: _Report) -> None:
    for name, limit in SERVER_LIMITS.items():
        value = getattr(config, name)
        if name in bad_ints or not _is_int(value) or value <= limit:
            continue
        r.err(
            name,
            f"{value:,} is above the limit of {limit:,}.",
            f"set {name} to at most {limit:,} (a larger value is a typo).",
        )
        bad_ints.add(name)
    for name in _COMMAND_STRINGS:
        value = getattr(config, name)
        if isinstance(value, str) and (problem := control_char_problem(value)):
            r.err(name, f"{problem}.", "remove it: it cannot go on a command line or in a unit.")
    words = config.extra_args if isinstance(config.extra_args, tuple | list) else ()
    for word in words:
        if isinstance(word, str) and (problem := control_char_problem(word)):
            r.err("extra_args", f"{word!r} {problem}.", "remove the control character.")
    pairs = config.env if isinstance(config.env, tuple | list) else ()
    for entry in pairs:
        if not (isinstance(entry, tuple | list) and len(entry) == 2):
            continue
        name, value = entry
        if not isinstance(value, str) or "\n" in value or "\x00" in value:
            continue  # reported with the env rules
        if problem := control_char_problem(value):
            r.err("env", f"{name}'s value {problem}.", "remove the control character.")


def _spec_fields_without_algorithm(config: ServerConfig, r: _Report) -> None:
    set_fields = [
        f for f in (*_TREE_FIELDS, "speculative_draft_model_path") if getattr(config, f) is not None
    ]
    if set_fields:
        r.warn(
            set_fields[0],
            f"{', '.join(set_fields)} {'is' if len(set_fields) == 1 else 'are'} ignored: "
            "speculative decoding is off.",
            'set speculative_algorithm (e.g. "EAGLE3") or remove them.',
        )


def _validate_sglang(
    config: ServerConfig, algo: SpecAlgorithm | None, bad_ints: set[str], r: _Report
) -> None:
    err, warn, note = r.err, r.warn, r.note
    if algo is None:
        _spec_fields_without_algorithm(config, r)
        return
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    dp_attention = "--enable-dp-attention" in _extra_flags(config)
    pp = _extra_value(config, "--pp-size") or _extra_value(config, "--pipeline-parallel-size")
    if (
        pp is not None
        and pp.strip() not in ("", "1")
        and rule_applies("pp_speculative", _valid_version(config))
    ):
        err(
            "extra_args",
            "Pipeline parallelism is not compatible with overlap schedule, "
            "speculative decoding (SGLang refuses it).",
            "remove --pp-size or disable speculative decoding.",
        )
    if algo in _NEEDS_DRAFT_MODEL and not config.speculative_draft_model_path:
        err(
            "speculative_draft_model_path",
            f"{algo.value} needs a draft model.",
            "set speculative_draft_model_path to the draft (EAGLE head) model.",
        )
    if algo is SpecAlgorithm.NGRAM:
        if config.speculative_draft_model_path:
            warn(
                "speculative_draft_model_path",
                "NGRAM drafts from the prompt; the draft model is ignored.",
                "remove speculative_draft_model_path.",
            )
        for name in ("speculative_num_steps", "speculative_eagle_topk"):
            if getattr(config, name) is not None:
                warn(
                    name,
                    f"NGRAM ignores {name}; it is sized by speculative_num_draft_tokens "
                    "(default 12) and the --speculative-ngram-* flags.",
                    f"remove {name}.",
                )
        if dp_attention:
            err(
                "extra_args",
                "NGRAM speculative decoding does not support DP attention.",
                "remove --enable-dp-attention.",
            )
    else:
        if algo is SpecAlgorithm.STANDALONE and dp_attention:
            err(
                "extra_args",
                "Currently standalone speculative decoding does not support dp attention.",
                "remove --enable-dp-attention or use EAGLE/EAGLE3.",
            )
        given = [f for f in _TREE_FIELDS if getattr(config, f) is not None]
        chain_fill = (
            _is_int(steps) and steps >= 1 and topk == 1 and draft is None
        )  # SGLang fills draft tokens = steps + 1 itself
        if chain_fill:
            note(
                "speculative_num_draft_tokens",
                f"{MSG_DRAFT_ADJUSTED} (SGLang will use {steps + 1}).",
                f"nothing to do, or set speculative_num_draft_tokens = {steps + 1} explicitly.",
            )
        elif given and len(given) < 3:
            missing = [f for f in _TREE_FIELDS if f not in given]
            err(
                missing[0],
                f"set all three tree sizes or none: {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} missing (SGLang asserts this).",
                "set speculative_num_steps, speculative_eagle_topk and "
                "speculative_num_draft_tokens together (e.g. 3, 1, 4), or remove all three "
                "for SGLang's auto choice.",
            )
        tree_ok = not (set(_TREE_FIELDS) & bad_ints) and all(
            _is_int(v) for v in (steps, topk, draft)
        )
        if tree_ok and steps is not None and topk is not None and draft is not None:
            if topk == 1 and draft != steps + 1:
                note(
                    "speculative_num_draft_tokens",
                    f"{MSG_DRAFT_ADJUSTED} (SGLang will use {steps + 1}, not {draft}).",
                    f"set speculative_num_draft_tokens = {steps + 1}.",
                )
            elif draft > steps * topk + 1:
                err(
                    "speculative_num_draft_tokens",
                    f"{draft} draft tokens exceed what the tree can hold: steps x topk + 1 = "
                    f"{steps * topk + 1}. SGLang does not check this and crashes later with an "
                    "illegal memory access.",
                    f"set speculative_num_draft_tokens <= {steps * topk + 1}, or raise "
                    "speculative_num_steps / speculative_eagle_topk.",
                )
            if topk > 1:
                note(
                    "speculative_eagle_topk",
                    f"a tree with topk={topk} costs more memory and compute per step than a "
                    "chain (topk=1).",
                    "compare against topk=1 at your target concurrency.",
                )
        backends = {
            config.attention_backend if isinstance(config.attention_backend, str) else None,
            _extra_value(config, "--decode-attention-backend"),
            _extra_value(config, "--prefill-attention-backend"),
        }
        if "trtllm_mha" in backends and _is_int(topk) and topk > 1:
            err(
                "speculative_eagle_topk",
                "trtllm_mha backend only supports topk = 1 for speculative decoding.",
                "set speculative_eagle_topk = 1 or choose another attention_backend "
                "(fa3, flashinfer, triton).",
            )
        page = _extra_value(config, "--page-size")
        if (
            _is_int(topk)
            and topk > 1
            and page is not None
            and page.strip().isdigit()
            and int(page) > 1
            and isinstance(config.attention_backend, str)
            and config.attention_backend not in ("flashinfer", "fa3", "triton")
        ):
            err(
                "attention_backend",
                "speculative_eagle_topk > 1 with page_size > 1 is only supported on flashinfer, "
                "fa3 and triton.",
                "use one of those backends, page_size 1, or topk 1.",
            )
        if "--enable-mixed-chunk" in _extra_flags(config):
            warn(
                "extra_args",
                "Mixed chunked prefill is disabled because of using eagle speculative decoding.",
                "remove --enable-mixed-chunk.",
            )
    if config.max_running_requests is None and algo in _TREE_ALGOS:
        warn(
            "max_running_requests",
            "not set: SGLang caps it at 48 with speculative decoding, "
            "which limits throughput at higher concurrency.",
            "set max_running_requests explicitly (e.g. to your highest benchmark concurrency).",
        )
    cg, mrr = config.cuda_graph_max_bs, config.max_running_requests
    if _is_int(cg) and _is_int(mrr) and cg >= 1 and mrr > cg:
        note(
            "cuda_graph_max_bs",
            f"batches above cuda_graph_max_bs={cg} (up to "
            f"max_running_requests={mrr}) run without CUDA graphs (`cuda graph: False`).",
            "raise cuda_graph_max_bs if memory allows, or accept slower large batches.",
        )


def _validate_vllm(
    config: ServerConfig, algo: SpecAlgorithm | None, bad_ints: set[str], r: _Report
) -> None:
    err, warn = r.err, r.warn
    if config.attention_backend is not None:
        warn(
            "attention_backend",
            "vLLM has no --attention-backend flag here; it is not rendered.",
            "set VLLM_ATTENTION_BACKEND in env instead.",
        )
    if config.cuda_graph_max_bs is not None:
        warn(
            "cuda_graph_max_bs",
            "vLLM has no equivalent flag that specconsole renders; it is ignored.",
            "pass vLLM's own CUDA-graph option through extra_args.",
        )
    if algo is None:
        _spec_fields_without_algorithm(config, r)
        return
    if algo in _NEEDS_DRAFT_MODEL and not config.speculative_draft_model_path:
        err(
            "speculative_draft_model_path",
            f"vLLM's {algo.value.lower()} method needs a draft model.",
            "set speculative_draft_model_path.",
        )
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    if steps is None and "speculative_num_steps" not in bad_ints:
        err(
            "speculative_num_steps",
            "vLLM needs num_speculative_tokens, rendered from speculative_num_steps.",
            "set speculative_num_steps (e.g. 3).",
        )
    if _is_int(topk) and topk > 1:
        err(
            "speculative_eagle_topk",
            "vLLM drafts a chain, not a tree: topk must be 1.",
            "set speculative_eagle_topk = 1 or remove it.",
        )
    if _is_int(draft) and _is_int(steps) and draft != steps + 1:
        warn(
            "speculative_num_draft_tokens",
            "vLLM ignores speculative_num_draft_tokens (it "
            f"verifies num_speculative_tokens + 1 = {steps + 1}).",
            "remove speculative_num_draft_tokens.",
        )


# ---------------------------------------------------------------------------------------------
# normalize
# ---------------------------------------------------------------------------------------------


def normalize(
    config: ServerConfig, architecture: str | None = None
) -> tuple[ServerConfig, list[Issue]]:
    """The configuration as SGLang resolves it, and a notice per adjustment; never raises.

    ``architecture`` (the target's ``config.json`` ``architectures[0]``, if known) selects
    SGLang's auto tree; without it the common (3, 1, 4) is assumed. Values that fail
    :func:`validate` are left alone.
    """
    try:
        return _normalize(config, architecture)
    except Exception:  # pragma: no cover - defensive
        return config, []


def _normalize(config: ServerConfig, architecture: str | None) -> tuple[ServerConfig, list[Issue]]:
    if config.engine is not Engine.SGLANG or not isinstance(
        config.speculative_algorithm, SpecAlgorithm
    ):
        return config, []
    algo = config.speculative_algorithm
    notes: list[Issue] = []
    changes: dict[str, object] = {}
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    if algo in _TREE_ALGOS:
        if steps is None and topk is None and draft is None:
            tree = AUTO_TREE if algo is SpecAlgorithm.STANDALONE else auto_tree(architecture)
            steps, topk, draft = tree
            changes.update(
                speculative_num_steps=steps,
                speculative_eagle_topk=topk,
                speculative_num_draft_tokens=draft,
            )
            notes.append(
                Issue(
                    "speculative_num_steps",
                    Severity.NOTICE,
                    f"tree sizes unset: SGLang chooses steps={steps}, topk={topk}, "
                    f"draft tokens={draft}" + (f" for {architecture}." if architecture else "."),
                    "set all three to tune them.",
                )
            )
        if (
            _is_int(steps)
            and steps >= 1
            and topk == 1
            and (draft is None or (_is_int(draft) and draft != steps + 1))
        ):
            changes["speculative_num_draft_tokens"] = steps + 1
            notes.append(
                Issue(
                    "speculative_num_draft_tokens",
                    Severity.NOTICE,
                    f"{MSG_DRAFT_ADJUSTED} ({draft or 'unset'} -> {steps + 1}).",
                    f"set speculative_num_draft_tokens = {steps + 1}.",
                )
            )
    elif algo is SpecAlgorithm.NGRAM and draft is None:
        changes["speculative_num_draft_tokens"] = 12
        notes.append(
            Issue(
                "speculative_num_draft_tokens",
                Severity.NOTICE,
                "NGRAM draft tokens unset: SGLang uses 12.",
                "set speculative_num_draft_tokens to tune it.",
            )
        )
    if config.max_running_requests is None and algo in _TREE_ALGOS:
        # The reset is part of SGLang's EAGLE-family handling (NEXTN becomes EAGLE).
        changes["max_running_requests"] = 48
        notes.append(
            Issue(
                "max_running_requests",
                Severity.WARNING,
                MSG_MAX_RUNNING_RESET,
                "set max_running_requests explicitly.",
            )
        )
    if not changes:
        return config, notes
    return dataclasses.replace(config, **changes), notes  # type: ignore[arg-type]
