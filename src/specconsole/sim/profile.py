"""Simulator profiles: the typed description of one model on one GPU box.

A profile holds every number the simulator's physics needs (GPU memory, weight sizes, KV bytes
per token, acceptance and step-time coefficients), so that the memory and performance models
in :mod:`specconsole.sim.physics.model` contain equations only and every behaviour of the simulated
box
follows from a readable TOML file. Profiles are pure data: loading one does no other I/O, and
a wrong file fails with a :class:`ProfileError` that names the table, the key and the fix.

Units follow SGLang's logs: ``*_gb`` are GiB (2**30 bytes, what SGLang prints as "GB"),
``*_mb`` are MiB, ``*_ms`` milliseconds, memory figures are per GPU.
"""

from __future__ import annotations

import types
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from specconsole.core.config.inputs import load_toml

DEFAULT_PROFILE_NAME = "qwen3.5-122b-a10b-eagle3.toml"
"""File name of the packaged default profile under ``examples/sim/``."""


class ProfileError(ValueError):
    """A profile file is missing, not TOML, or has a wrong key or value."""


@dataclass(frozen=True, slots=True)
class ModelSection:
    """What the served model is called and how SGLang would describe it."""

    name: str
    """Served model name and the default ``--model-path``."""
    architecture: str
    """``type=`` in the target's ``Load weight end`` line (the HF architecture class)."""
    draft_name: str
    """Default ``--speculative-draft-model-path``."""
    draft_architecture: str
    """``type=`` in the draft's ``Load weight end`` line."""
    context_length: int
    """``context_len`` when ``--context-length`` is not given (from the model's config.json)."""
    kv_dtype: str = "torch.bfloat16"
    """``dtype:`` in the ``KV Cache is allocated`` lines."""
    quantization: str = ""
    """Shown in the target's ``Load weight end`` line when non-empty (e.g. ``fp8``)."""
    model_type: str = "qwen3_5_moe"
    """``model_type`` in ``/model_info``."""
    auto_num_steps: int = 3
    """SGLang's auto ``speculative_num_steps`` for this architecture (3 for most; 5 for
    ``LlamaForCausalLM`` and Grok)."""
    auto_eagle_topk: int = 1
    """SGLang's auto ``speculative_eagle_topk`` (1 for most; 4 for Llama and Grok)."""
    auto_num_draft_tokens: int = 4
    """SGLang's auto ``speculative_num_draft_tokens`` (4 for most; 8 for Llama and Grok)."""


@dataclass(frozen=True, slots=True)
class GpuSection:
    """The box's GPUs."""

    count: int
    """Number of GPUs; ``--tp-size`` may not exceed it."""
    memory_gb: float
    """Memory of one GPU in GiB; it drives SGLang's auto chunked-prefill and graph sizes."""
    name: str = "NVIDIA GPU"
    """Device name (reported in ``/server_info``)."""
    power_idle_w: float = 30.0
    """Power draw of an idle GPU (the box's ``nvidia-smi``, :mod:`specconsole.sim.gpu.gpustate`)."""
    power_max_w: float = 300.0
    """Its power limit: what a fully busy GPU at the largest batch draws."""


@dataclass(frozen=True, slots=True)
class MemorySection:
    """Per-GPU memory consumers at tensor-parallel size ``reference_tp``.

    Weights and KV bytes scale with ``reference_tp / tp_size`` (tensor parallelism shards
    them); the CUDA context, workspaces and graph pools do not.
    """

    reference_tp: int
    """The TP size the per-GPU figures below were taken at."""
    cuda_context_gb: float
    """Taken by the CUDA context and NCCL before any weight loads."""
    target_weights_gb: float
    """Target model weights per GPU."""
    draft_weights_gb: float
    """Draft (EAGLE head) weights per GPU, counted inside the static budget."""
    target_kv_bytes_per_token: int
    """Target KV cache bytes (K plus V, all layers) per token per GPU."""
    draft_kv_bytes_per_token: int
    """Draft KV cache bytes per token per GPU (the draft shares the token pool)."""
    spec_workspace_mb_per_slot: float
    """Speculative buffers carved out of the static budget before KV sizing, per captured
    batch slot per verify token (``cuda_graph_bs x num_draft_tokens`` slots)."""
    graph_base_gb: float
    """CUDA-graph memory pool needed outside the static budget regardless of size."""
    graph_mb_per_slot: float
    """CUDA-graph pool growth per captured batch slot per verify token."""
    activation_reserve_gb: float
    """Activations and allocator slack that must stay free outside the static budget."""


@dataclass(frozen=True, slots=True)
class PerfSection:
    """Coefficients of the acceptance and step-time model (see docs/simulator.md)."""

    accept_first: float
    """Probability that the first drafted token is accepted (chain, topk 1)."""
    accept_later: float
    """Asymptotic conditional acceptance of deeper draft tokens."""
    accept_decay: float
    """How fast conditional acceptance moves from ``accept_first`` to ``accept_later``
    per depth (0: immediately, 1: never)."""
    accept_horizon: int
    """Depth the draft head was trained to unroll (EAGLE-3's training-time test); beyond it
    the draft's guesses degrade sharply."""
    accept_beyond_horizon: float
    """Conditional acceptance of draft tokens deeper than ``accept_horizon``."""
    tree_branch_gain: float
    """Value of extra tree branches at one depth: the miss probability with m candidates is
    ``(1 - q) ** (1 + gain * (m - 1))`` (0: useless, 1: independent guesses)."""
    verify_base_ms: float
    """Fixed cost of one target (verify or decode) forward."""
    verify_ms_per_token: float
    """Compute-bound target forward cost per token in the forward
    (``batch x num_draft_tokens``)."""
    verify_knee_sharpness: float
    """How sharply the target forward turns from memory-bound (``verify_base_ms``) to
    compute-bound (``verify_ms_per_token x tokens``): the p of a p-norm of the two."""
    verify_ms_per_token_sq: float
    """Quadratic growth of the target forward once it leaves the memory-bound regime."""
    attention_ms_per_token_per_kctx: float
    """Attention cost per forward token per 1000 tokens of context."""
    draft_step_base_ms: float
    """Fixed cost of one draft step."""
    draft_step_ms_per_token: float
    """Draft step cost per drafted token (``batch x topk``)."""
    scheduler_ms_per_req: float
    """CPU scheduling overhead per running request per step."""
    tree_ms_per_req: float
    """Per running request: verify-side cost (tree mask, speculative sampling, KV writes of
    rejected drafts) that grows geometrically with the verify width — an empirical term."""
    tree_growth: float
    """Growth factor of that cost per extra verify token."""
    prefill_base_ms: float
    """Fixed cost of one prefill forward (one chunk)."""
    prefill_ms_per_token: float
    """Prefill cost per input token (target plus draft extend)."""
    no_cuda_graph_factor: float = 1.3
    """Step-time factor when the batch exceeds the captured CUDA-graph sizes."""


@dataclass(frozen=True, slots=True)
class LoadSection:
    """How a load is paced: shares of the total load time per phase."""

    seconds: float = 100.0
    """Total load time when ``--sim-load-seconds`` is not given (a real box: ~100 s)."""
    distributed: float = 0.03
    target_weights: float = 0.55
    draft_weights: float = 0.06
    kv_cache: float = 0.02
    graph_target: float = 0.18
    graph_draft: float = 0.10
    warmup: float = 0.06


@dataclass(frozen=True, slots=True)
class ReferenceLaunch:
    """How the calibration sweep was launched (explicit flags besides the tree sizes)."""

    algorithm: str = "EAGLE3"
    topk: int = 1
    tp_size: int = 4
    mem_fraction_static: float = 0.88
    cuda_graph_max_bs: int = 64
    max_running_requests: int = 64


@dataclass(frozen=True, slots=True)
class SimSection:
    """Simulator behaviour that is not physics."""

    seed: int = 20260720
    """Seeds the accepted-token sequences and the generated words."""
    version: str = "0.5.14"
    """SGLang version the simulator claims in ``/server_info``; versions up to 0.5.9 also
    switch the log lines to that release's wording."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One simulated model on one simulated box."""

    model: ModelSection
    gpu: GpuSection
    memory: MemorySection
    perf: PerfSection
    load: LoadSection = field(default_factory=LoadSection)
    reference_launch: ReferenceLaunch = field(default_factory=ReferenceLaunch)
    sim: SimSection = field(default_factory=SimSection)
    source: str = ""
    """Where the profile was loaded from (for messages)."""


_SECTIONS: dict[str, type] = {
    "model": ModelSection,
    "gpu": GpuSection,
    "memory": MemorySection,
    "perf": PerfSection,
    "load": LoadSection,
    "reference_launch": ReferenceLaunch,
    "sim": SimSection,
}


def _check_value(section: str, key: str, expected: Any, value: Any, source: str) -> Any:
    """Coerce ``value`` to the annotated type or raise a ProfileError that names the fix."""
    where = f"{source}: [{section}] {key}"
    origin = get_origin(expected)
    if origin in (Union, types.UnionType):
        expected = next(a for a in get_args(expected) if a is not type(None))
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ProfileError(f"{where} must be a number, got {value!r}")
        return float(value)
    if expected is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError(f"{where} must be an integer, got {value!r}")
        return value
    if expected is str:
        if not isinstance(value, str):
            raise ProfileError(f"{where} must be a string, got {value!r}")
        return value
    raise ProfileError(f"{where}: unsupported type {expected!r}")  # pragma: no cover


def _build_section(name: str, cls: type, table: Any, source: str) -> Any:
    if not isinstance(table, dict):
        raise ProfileError(f"{source}: [{name}] must be a table, got {table!r}")
    hints = get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ProfileError(
            f"{source}: unknown key(s) {', '.join(unknown)} in [{name}]; "
            f"known keys: {', '.join(sorted(known))}"
        )
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in table:
            values[f.name] = _check_value(name, f.name, hints[f.name], table[f.name], source)
    try:
        return cls(**values)
    except TypeError:
        missing = [
            f.name
            for f in fields(cls)
            if f.name not in values and f.default is MISSING and f.default_factory is MISSING
        ]
        raise ProfileError(
            f"{source}: [{name}] is missing required key(s): {', '.join(missing)}"
        ) from None


def _validate(profile: Profile) -> None:
    src = profile.source
    positive = {
        ("gpu", "count"): profile.gpu.count,
        ("gpu", "memory_gb"): profile.gpu.memory_gb,
        ("memory", "reference_tp"): profile.memory.reference_tp,
        ("memory", "target_kv_bytes_per_token"): profile.memory.target_kv_bytes_per_token,
        ("model", "context_length"): profile.model.context_length,
        ("perf", "verify_base_ms"): profile.perf.verify_base_ms,
    }
    for (section, key), value in positive.items():
        if value <= 0:
            raise ProfileError(f"{src}: [{section}] {key} must be > 0, got {value}")
    for key in (
        "accept_first",
        "accept_later",
        "accept_decay",
        "accept_beyond_horizon",
        "tree_branch_gain",
    ):
        value = getattr(profile.perf, key)
        if not 0.0 <= value <= 1.0:
            raise ProfileError(f"{src}: [perf] {key} must be between 0 and 1, got {value}")
    if profile.load.seconds < 0:
        raise ProfileError(f"{src}: [load] seconds must be >= 0, got {profile.load.seconds}")


def profile_from_dict(data: dict[str, Any], source: str = "<profile>") -> Profile:
    """Build and validate a profile from parsed TOML data."""
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise ProfileError(
            f"{source}: unknown table(s) {', '.join(unknown)}; known tables: {', '.join(_SECTIONS)}"
        )
    sections: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        if name in data:
            sections[name] = _build_section(name, cls, data[name], source)
        elif name in ("model", "gpu", "memory", "perf"):
            raise ProfileError(f"{source}: required table [{name}] is missing")
    profile = Profile(**sections, source=source)
    _validate(profile)
    return profile


def load_profile(path: str | Path) -> Profile:
    """Read a profile TOML file; every problem is a :class:`ProfileError` naming the fix."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ProfileError(
            f"cannot read simulator profile {p}: {exc.strerror or exc}; "
            "pass an existing file to --sim-profile"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{p} is not UTF-8 text: {exc}") from None
    data = load_toml(text, str(p), ProfileError)
    return profile_from_dict(data, source=str(p))


_CACHE: dict[tuple[str, int, int], Profile] = {}


def load_profile_cached(path: str | Path) -> Profile:
    """:func:`load_profile`, memoised on (path, mtime, size) so repeated predictions do not
    re-read the file; an edited file is read again."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return load_profile(p)  # raises the ProfileError that names the fix
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    profile = _CACHE.get(key)
    if profile is None:
        profile = _CACHE[key] = load_profile(p)
    return profile


def default_profile_path() -> Path:
    """The packaged default profile (``examples/sim/qwen3.5-122b-a10b-eagle3.toml``)."""
    from specconsole.paths import examples_dir

    return examples_dir() / "sim" / DEFAULT_PROFILE_NAME


def load_default_profile() -> Profile:
    """Load the packaged default profile."""
    return load_profile_cached(default_profile_path())
