"""SGLang's adaptive speculative decoding: its ``[server]`` keys, its config file, its rules.

Why its own module: SGLang can switch the draft length at run time (``--speculative-adaptive``
with ``--speculative-adaptive-config FILE``), and that is how a sweep's per-level answer is
deployed as one configuration. What the real releases do (read from their wheels —
``sglang/srt/speculative/adaptive_spec_params.py``, ``adaptive_runtime_state.py``,
``eagle_worker_v2.py``, ``arg_groups/speculative_hook.py`` — never imported):

* 0.5.9 and 0.5.10 have no adaptive mode. 0.5.11 and 0.5.12 adapt one list of candidate steps
  to the acceptance only (a flat file, at least two candidates; 0.5.11 only without the
  overlap scheduler). From **0.5.13** the file holds **candidate steps per batch-size
  bucket** (``{"1": {"candidate_steps": [5]}, "9": {"candidate_steps": [3]}}``: integer keys,
  each a bucket's smallest batch size; the other keys are knobs every bucket inherits), the
  form a per-level schedule needs; from **0.5.14** a candidate may be 0 (no draft at all).
* A decode batch is routed by its size rounded up to a captured CUDA-graph batch size, to the
  bucket with the largest key not above it (the first bucket below every key). Each bucket
  keeps an EMA of accepted drafts and, after ``warmup_batches`` verify steps and then every
  ``update_interval``, moves one candidate down while the EMA is at most the next lower
  candidate less 0.5 (plus ``down_hysteresis``; 0.5 for a 0 candidate) and otherwise up
  while it exceeds its own step less 0.5 (plus ``up_hysteresis``): acceptance decides, not
  speed — so a bucket with one candidate is exactly what a measurement chose.
* Every candidate gets its own runtime state built at load (its attention backends and
  CUDA graphs, captured only for the graph batch sizes that route to a bucket holding it);
  a switch swaps states. The KV pool's per-request slots are sized for the largest
  candidate (``max_speculative_num_draft_tokens`` = largest candidate + 1).
* Only EAGLE/EAGLE3, topk 1 (the default then), no DP attention, multi-layer EAGLE,
  two-batch overlap or PD multiplexing; otherwise SGLang logs ``speculative_adaptive
  disabled: ...`` and runs static — a schedule that would do nothing, so it is refused here.
  ``--speculative-num-steps`` must be one of the candidates (unset: the middle one), and draft
  tokens are then ``steps + 1``.

Keys: ``speculative_adaptive`` and ``speculative_adaptive_config`` are SGLang's own flags (a
file the user keeps on the box); ``speculative_adaptive_schedule`` is specconsole's: the file's
content, written compactly (``"1:5,3:4,9:3"``: bucket key, colon, candidates joined by ``/``)
or as SGLang's JSON; it renders as both flags with the file deployed beside the unit
(``Engine.side_files``, a content-addressed name in ``config.side_dir``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from specconsole.core.config.bounds import is_int
from specconsole.core.config.flags import extra_flags
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField
from specconsole.core.config.releases import has_feature
from specconsole.core.engine.schedule import ScheduleRow, SideFile, merged
from specconsole.engines.sglang.keys import LIMITS as SERVER_LIMITS
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.engines.sglang.releases import FEATURES_SINCE, TABLE

__all__ = [
    "ADAPTIVE",
    "ADAPTIVE_CONFIG",
    "ADAPTIVE_SINCE",
    "BY_BATCH_SINCE",
    "FLAG_FEATURES",
    "OPTION_FIELDS",
    "SCHEDULE",
    "ZERO_STEP_SINCE",
    "AdaptiveError",
    "AdaptiveFile",
    "adaptive_on",
    "check_adaptive",
    "config_path",
    "parse_adaptive",
    "schedule_of",
    "side_file",
    "supports",
]

ADAPTIVE = "speculative_adaptive"
ADAPTIVE_CONFIG = "speculative_adaptive_config"
SCHEDULE = "speculative_adaptive_schedule"

FLAG_FEATURES: dict[str, str] = {
    "--speculative-adaptive": "adaptive",
    "--speculative-adaptive-config": "adaptive",
}
"""The adaptive mode's flags and the release feature that brought them
(``releases.FEATURES_SINCE``): older releases refuse them as unrecognized arguments."""

ADAPTIVE_SINCE = FEATURES_SINCE["adaptive"]
"""First release with ``--speculative-adaptive`` (0.5.10 has none)."""
BY_BATCH_SINCE = FEATURES_SINCE["adaptive_by_batch"]
"""First release whose adaptive file holds candidate steps per batch-size bucket."""
ZERO_STEP_SINCE = FEATURES_SINCE["adaptive_zero_step"]
"""First release that takes 0 among the candidates (no draft in that bucket)."""

KNOBS: tuple[str, ...] = (
    "ema_alpha",
    "update_interval",
    "warmup_batches",
    "down_hysteresis",
    "up_hysteresis",
    "ceiling_coeff",
)
"""The tuning knobs a bucket reads (its own, else the file's top level, else the default)."""

OPTION_FIELDS: tuple[OptionField, ...] = (
    OptionField(
        ADAPTIVE,
        "bool",
        "--speculative-adaptive",
        "switch the draft length at run time (SGLang 0.5.11+)",
        example="true",
        short="adaptive",
    ),
    OptionField(
        ADAPTIVE_CONFIG,
        "str",
        "--speculative-adaptive-config",
        "a JSON file on the box: candidate steps per batch-size bucket",
        example='"/etc/sglang/adaptive.json"',
        short="adaptive-config",
    ),
    OptionField(
        SCHEDULE,
        "str",
        "--speculative-adaptive-config",
        "candidate steps per batch-size bucket, e.g. 1:5,3:4,9:3 (deployed as the file)",
        example='"1:5,3:4,9:3"',
        short="schedule",
    ),
)
"""SGLang's own ``[server]`` keys (the adaptive mode), in the order files and editors show."""


class AdaptiveError(ValueError):
    """An adaptive config SGLang would refuse; the message is SGLang's (or as close)."""


@dataclass(frozen=True, slots=True)
class AdaptiveFile:
    """An adaptive config: candidate steps per bucket (its smallest batch size) and knobs."""

    buckets: tuple[tuple[int, tuple[int, ...]], ...]
    """(bucket key, sorted distinct candidates), keys ascending."""
    knobs: tuple[tuple[str, object], ...] = ()
    """Top-level keys other than the buckets, as written (every bucket inherits them)."""
    bucket_knobs: tuple[tuple[int, tuple[tuple[str, object], ...]], ...] = ()
    """A bucket's own knobs, where it has some."""

    @property
    def candidates(self) -> tuple[int, ...]:
        """Every bucket's candidates together: the runtime states SGLang builds."""
        return tuple(sorted({s for _key, steps in self.buckets for s in steps}))

    def text(self) -> str:
        """SGLang's JSON (the deployed file), canonical: same schedule, same bytes."""
        own = dict(self.bucket_knobs)
        document: dict[str, object] = dict(self.knobs)
        for key, steps in self.buckets:
            document[str(key)] = {"candidate_steps": list(steps), **dict(own.get(key, ()))}
        lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in document.items()]
        return "{\n" + ",\n".join(lines) + "\n}\n"  # a bucket per line: readable diffs

    def compact(self) -> str:
        """``1:5,3:4,9:0/1/3``; the JSON text when it holds knobs (the compact form has none)."""
        if self.knobs or self.bucket_knobs:
            return json.dumps(json.loads(self.text()), separators=(",", ":"))
        return ",".join(f"{k}:{'/'.join(map(str, s))}" for k, s in self.buckets)


MAX_BUCKETS = 256
"""More buckets than any batch-size ladder needs: a bound on what a file may hold."""


def _checked_steps(key: str, steps: object) -> tuple[int, ...]:
    if (
        not isinstance(steps, list)
        or not steps
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in steps)
    ):
        raise AdaptiveError(
            f"BS {key}: candidate_steps must be a list of non-negative ints, got {steps!r}"
        )
    if (
        int(key) > SERVER_LIMITS["max_running_requests"]
        or max(steps) > SERVER_LIMITS["speculative_num_steps"]
    ):
        raise AdaptiveError(
            f"BS {key}: a batch size above {SERVER_LIMITS['max_running_requests']:,} or a step "
            f"above {SERVER_LIMITS['speculative_num_steps']} is beyond any real box"
        )
    return tuple(sorted(set(steps)))


def _from_json(text: str) -> AdaptiveFile:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise AdaptiveError(f"not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise AdaptiveError("the adaptive config must be a JSON object")
    buckets: list[tuple[int, tuple[int, ...]]] = []
    own: list[tuple[int, tuple[tuple[str, object], ...]]] = []
    knobs: list[tuple[str, object]] = []
    for key, entry in document.items():
        if not key.isdigit():
            knobs.append((key, entry))
            continue
        if not isinstance(entry, dict):
            raise AdaptiveError(f"BS {key}: expected an object with candidate_steps")
        buckets.append((int(key), _checked_steps(key, entry.get("candidate_steps"))))
        extra = tuple((k, v) for k, v in entry.items() if k != "candidate_steps")
        if extra:
            own.append((int(key), extra))
    return _file(buckets, tuple(knobs), tuple(own), list(document))


def _file(
    buckets: list[tuple[int, tuple[int, ...]]],
    knobs: tuple[tuple[str, object], ...],
    own: tuple[tuple[int, tuple[tuple[str, object], ...]], ...],
    keys: list[str],
) -> AdaptiveFile:
    if len(buckets) > MAX_BUCKETS:
        raise AdaptiveError(f"{len(buckets)} buckets: give at most {MAX_BUCKETS}")
    if not buckets:
        raise AdaptiveError(
            "speculative_adaptive_config must contain at least one integer-string BS key, "
            f'e.g. {{"1": {{"candidate_steps": [1,3,7]}}}}. Got keys: {keys}'
        )
    if len({k for k, _s in buckets}) != len(buckets):
        raise AdaptiveError("a batch-size key appears twice")
    return AdaptiveFile(tuple(sorted(buckets)), knobs, tuple(sorted(own, key=lambda e: e[0])))


def parse_adaptive(text: str) -> AdaptiveFile:
    """The adaptive config ``text`` says (compact form or SGLang's JSON), checked by SGLang's
    loading rules; raises :class:`AdaptiveError` with its message."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return _from_json(stripped)
    buckets: list[tuple[int, tuple[int, ...]]] = []
    for piece in stripped.split(","):
        key, colon, steps = piece.strip().partition(":")
        try:
            if not colon or not key.strip().isdigit():
                raise ValueError
            values = [int(s) for s in steps.split("/")]
        except ValueError:
            raise AdaptiveError(
                f"{piece.strip()!r} is not BATCH:STEPS[/STEPS...] (e.g. 1:5 or 8:1/3)"
            ) from None
        buckets.append((int(key), _checked_steps(key.strip(), values)))
    return _file(buckets, (), (), [k for k, _s in buckets])  # type: ignore[misc]


def side_file(adaptive: AdaptiveFile) -> SideFile:
    """The deployed file: its canonical JSON under a content-addressed name."""
    text = adaptive.text()
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return SideFile(f"sglang-adaptive-{digest}.json", text)


def schedule_of(config: ServerConfig) -> AdaptiveFile | None:
    """The adaptive file ``config``'s schedule key holds (None: unset or unreadable —
    validation names the latter)."""
    text = dict(config.options).get(SCHEDULE)
    if not isinstance(text, str):
        return None
    try:
        return parse_adaptive(text)
    except AdaptiveError:
        return None


def config_path(config: ServerConfig) -> str | None:
    """The path ``--speculative-adaptive-config`` names: the deployed schedule's file in
    ``config.side_dir`` (its bare name when none is known), else the user's own file."""
    adaptive = schedule_of(config)
    if adaptive is not None:
        name = side_file(adaptive).name
        return f"{config.side_dir.rstrip('/')}/{name}" if config.side_dir else name
    value = dict(config.options).get(ADAPTIVE_CONFIG)
    return value if isinstance(value, str) else None


def rows(adaptive: AdaptiveFile) -> tuple[ScheduleRow, ...] | None:
    """The draft length per batch-size range when every bucket has one candidate (a
    measured schedule); None when the EMA chooses among several at run time."""
    if any(len(steps) != 1 for _k, steps in adaptive.buckets):
        return None
    keys = [k for k, _s in adaptive.buckets]
    out = []
    for i, (key, steps) in enumerate(adaptive.buckets):
        start = 1 if i == 0 else key
        end = keys[i + 1] - 1 if i + 1 < len(keys) else None
        out.append(ScheduleRow(start, end, steps[0]))
    return merged(out)


def supports(version: str | None, feature: str) -> bool | None:
    """Whether release ``version`` has ``feature`` (``releases.FEATURES_SINCE``; None:
    unknown or unreadable)."""
    return has_feature(TABLE, feature, version)


UNSUPPORTED_FLAGS: dict[str, str] = {
    "--enable-dp-attention": "attention DP is not supported (adaptive tier decisions are "
    "not synchronized across DP ranks)",
    "--enable-multi-layer-eagle": "enable_multi_layer_eagle=True is not supported "
    "(MultiLayerEagleWorkerV2 does not implement adaptive)",
    "--enable-two-batch-overlap": "enable_two_batch_overlap=True is not supported (adaptive "
    "state swap would discard the TboAttnBackend wrapper)",
    "--enable-pdmux": "enable_pdmux=True is not supported (adaptive state swap does not "
    "update decode_attn_backend_group)",
}
"""Flags with which SGLang turns the adaptive mode off (``adaptive_unsupported_reason``),
with its reason."""


def adaptive_on(config: ServerConfig) -> bool:
    """Whether ``config`` asks for the adaptive mode (its flag, its file or a schedule)."""
    opts = dict(config.options)
    return opts.get(ADAPTIVE) is True or SCHEDULE in opts or ADAPTIVE_CONFIG in opts


def _check_release(config: ServerConfig, adaptive: AdaptiveFile | None, r: IssueReport) -> None:
    version = config.engine_version
    key = SCHEDULE if SCHEDULE in dict(config.options) else ADAPTIVE
    if supports(version, "adaptive") is False:
        r.err(
            key,
            f"SGLang {version} has no --speculative-adaptive (it arrived in {ADAPTIVE_SINCE}); "
            "the draft length cannot switch at run time.",
            f"use SGLang {BY_BATCH_SINCE} or later for a schedule by batch size, or remove {key}.",
        )
    elif adaptive is not None and supports(version, "adaptive_by_batch") is False:
        r.err(
            SCHEDULE,
            f"SGLang {version} adapts one list of candidate steps to the acceptance only; "
            f"candidate steps per batch-size bucket arrived in {BY_BATCH_SINCE}.",
            f"use SGLang {BY_BATCH_SINCE} or later, or remove {SCHEDULE}.",
        )
    elif (
        adaptive is not None
        and 0 in adaptive.candidates
        and supports(version, "adaptive_zero_step") is False
    ):
        r.err(
            SCHEDULE,
            f"SGLang {version} refuses a 0 candidate (candidate_steps must be a list of "
            f"positive ints); a bucket without a draft arrived in {ZERO_STEP_SINCE}.",
            f"use SGLang {ZERO_STEP_SINCE} or later, or give that bucket 1 step.",
        )


def check_adaptive(config: ServerConfig, algo: SpecAlgorithm | None, r: IssueReport) -> None:
    """SGLang's rules for the adaptive mode (its own texts), and the release that reads it."""
    if not adaptive_on(config):
        return
    opts = dict(config.options)
    adaptive: AdaptiveFile | None = None
    if SCHEDULE in opts:
        try:
            adaptive = parse_adaptive(str(opts[SCHEDULE]))
        except AdaptiveError as exc:
            r.err(SCHEDULE, f"SGLang refuses it: {exc}.", 'write e.g. "1:5,3:4,9:3".')
        if ADAPTIVE_CONFIG in opts:
            r.err(
                ADAPTIVE_CONFIG,
                f"both {SCHEDULE} (deployed as the file) and your own file are given.",
                f"keep one: {SCHEDULE} or {ADAPTIVE_CONFIG}.",
            )
    elif opts.get(ADAPTIVE) is not True:
        r.warn(
            ADAPTIVE_CONFIG,
            "SGLang reads --speculative-adaptive-config only with --speculative-adaptive.",
            f"set {ADAPTIVE} = true, or remove {ADAPTIVE_CONFIG}.",
        )
    _check_release(config, adaptive, r)
    if algo not in (SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3):
        said = "unset" if algo is None else algo.value
        r.err(
            "speculative_algorithm",
            f"SGLang's adaptive mode runs EAGLE/EAGLE3 only (speculative_algorithm={said}): "
            "it would log 'speculative_adaptive disabled' and draft one length.",
            "use EAGLE or EAGLE3, or remove the adaptive keys.",
        )
        return
    topk = config.speculative_eagle_topk
    if topk is not None and topk != 1:
        r.err(
            "speculative_eagle_topk",
            f"speculative_eagle_topk={topk} (only topk=1 is supported): SGLang would turn the "
            "adaptive mode off.",
            "set speculative_eagle_topk = 1 (or leave it unset: 1 is the default then).",
        )
    for flag in extra_flags(config):
        if flag in UNSUPPORTED_FLAGS:
            r.err(
                "extra_args",
                f"{UNSUPPORTED_FLAGS[flag]}: SGLang would turn the adaptive mode off.",
                f"remove {flag}, or the adaptive keys.",
            )
    steps = config.speculative_num_steps
    if adaptive is not None and is_int(steps) and steps not in adaptive.candidates:
        cands = list(adaptive.candidates)
        r.err(
            "speculative_num_steps",
            f"--speculative-num-steps={steps} is not in the adaptive config candidate_steps "
            f"{cands}. Pass one of those values.",
            f"set speculative_num_steps to one of {cands}, or leave it unset.",
        )
