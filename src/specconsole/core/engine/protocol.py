"""What an inference-server engine provides: one protocol, grouped by concern.

Why one protocol: another engine must be addable as one package, without an ``if engine ==
...`` anywhere else. Every slot is either plain data (its keys, the log grammar, the
endpoints) or a pure function of a configuration; an engine performs no I/O, so its package
is as testable as the core (``tests/engines/test_protocol.py`` checks every registered engine).

An engine must say only a few things (:data:`REQUIRED`: its name, title and launcher, its
``[server]`` keys, its log grammar, its endpoints); every other slot (:data:`OPTIONAL`) is a
capability with an answer from its declarations, :class:`~specconsole.core.config.enginebase
.EngineBase`, which an engine subclasses and overrides where it knows better (its own
command line, rules, releases, schedule...).

The slots, in the order a trial meets them:

* **identity** — the registry key, the name people read, the launcher and address a
  configuration gets when it names none;
* **configuration** — the flags it renders for a :class:`ServerConfig` (for its release), the
  flags it reads back from a command line or unit, its rules (what it refuses, what it
  silently changes: :meth:`Engine.normalize`), the per-request KV slots a verify step takes
  (the capacity model's x) and when it silently runs without speculation;
* **releases** — how its release is asked of the box and of the running server, which
  spellings that release wants, and how the box's binary is asked which flags it accepts
  (its ``--help``);
* **logs** — its :class:`~specconsole.core.logs.grammar.LogGrammar`: ready and capacity lines,
  statistics, tuning warnings, fatal causes with their fixes;
* **endpoints** — where health, acceptance and capacity are read, the benchmark APIs it serves;
* **editor** — the fields the console's editor shows for it, in its own vocabulary;
* **tuning by level** — what it runs without speculation (the baseline a sweep compares
  against), the one configuration that drafts each level's best length at that level's batch
  sizes (or why it cannot: ``core.engine.schedule``), the files such a configuration needs
  beside its unit, and the what-if that fixes the acceptance (a benchmark knob of its own:
  SGLang's ``SGLANG_SIMULATE_ACC_LEN``, vLLM's synthetic rejection sampler, llama.cpp's
  ``--spec-synth-len``);
* **forecast** — the model files whose own headers tell whether a configuration loads and
  what it holds, how the box is asked for them, and the forecast from what it answered
  (llama.cpp's GGUF headers: ``core.search.forecasting``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from specconsole.core.config.issues import Issue, IssueReport
    from specconsole.core.config.model import ServerConfig
    from specconsole.core.config.options import OptionField
    from specconsole.core.config.releases import ReleaseTable
    from specconsole.core.config.ties import Tie
    from specconsole.core.engine.schedule import Edge, LevelPick, ScheduleRow, SideFile
    from specconsole.core.logs.grammar import LogGrammar
    from specconsole.core.measure.acceptance import SpecCounters
    from specconsole.core.measure.forecast import Forecast, ModelFacts

__all__ = ["OPTIONAL", "REQUIRED", "EditorField", "Endpoints", "Engine"]


@dataclass(frozen=True, slots=True)
class EditorField:
    """One editable ``[server]`` key as the edited engine release spells it."""

    name: str
    """The ``[server]`` key (the engine's own name for it)."""
    kind: str
    """``int``, ``float``, ``algorithm`` or ``args``."""
    hint: str
    """What the field does, one short line."""
    flag: str = ""
    """The flag it renders as for the edited release (``""``: the engine renders none)."""
    note: str = ""
    """Why the field is flagged (renamed in this release, carried inside another flag, not
    rendered by this engine)."""

    @property
    def rendered(self) -> bool:
        """Whether the edited engine's command line carries this field."""
        return bool(self.flag) or self.kind == "args"

    @property
    def label(self) -> str:
        """The box's label: the key, and the flag only where it is not the key's own
        spelling (``cuda_graph_max_bs → --cuda-graph-max-bs-decode``), and why."""
        text = self.name
        if self.flag and self.flag != "--" + self.name.replace("_", "-"):
            text += f" → {self.flag}"
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True, slots=True)
class Endpoints:
    """The HTTP surface of a running server, as plain data the controller and the (stdlib,
    possibly remote) load generator follow."""

    health: str = "/health"
    """200 once the server serves (a 503 while loading is "not yet", not an error)."""
    server_info: str | None = None
    """A JSON document of the resolved arguments, the release and the acceptance so far
    (SGLang's ``/server_info``); ``None`` when the engine has none."""
    server_info_keys: tuple[str, ...] = ("version",)
    """The entries of :attr:`server_info` a trial record keeps (resolved arguments, the
    release, the acceptance so far)."""
    server_info_nested: tuple[str, ...] = ()
    """Entries of :attr:`server_info` whose own entries count as top-level ones (SGLang's
    ``server_args``, ``internal_states``)."""
    flush_cache: str | None = None
    """POSTed before each measured level to empty the prefix cache; ``None``: not served."""
    metrics: str | None = "/metrics"
    """Prometheus text (counters are snapshotted around a level)."""
    apis: tuple[str, ...] = ("completions", "chat")
    """The benchmark APIs it serves (``specconsole.bench.api``'s names), preferred first."""
    bench_backend: str = ""
    """bench_serving's ``--backend`` family name for its records (``sglang``, ``vllm``)."""
    spec_counters: SpecCounters | None = None
    """Its speculative-decoding counters in :attr:`metrics` (drafts, draft tokens, accepted,
    accepted per position, output tokens; ``core.measure.acceptance``): the load generator
    snapshots them around each level and records the deltas. ``None``: it keeps none."""
    chunk_per_step: bool = True
    """Each streamed chunk carries one decode step's tokens (SGLang, vLLM), so the client's
    tokens per chunk is an acceptance length that cross-checks the counters. False: the
    stream sends more chunks than decode steps (llama-server sends every token of an
    accepted draft in a chunk of its own), and tokens per chunk says nothing about
    acceptance — no cross-check, no warning."""


@runtime_checkable
class Engine(Protocol):
    """An inference server specconsole can deploy, watch, measure and tune."""

    # -- identity ------------------------------------------------------------------------------
    name: str
    """The registry key and the ``[server] engine`` value (``sglang``)."""
    title: str
    """How people write it (``SGLang``)."""
    default_launcher: str
    """The command prefix that starts it when ``[server] launcher`` names none."""
    default_host: str
    """The address it binds when the command line names none."""
    default_port: int
    """The port it listens on when the command line names none."""

    # -- configuration -------------------------------------------------------------------------
    modelled_flags: Mapping[str, str]
    """Its flags (aliases included) that are ``ServerConfig`` fields: flag -> field. The
    validator refuses them in ``extra_args`` and the unit editor never writes them twice."""
    option_fields: tuple[OptionField, ...]
    """Its own ``[server]`` keys beyond the shared fields (``core.config.options``), in the
    order files, editors and command lines show them; ``()`` when it has none."""

    def launches(self, program: str, module: str | None) -> bool:
        """Whether a command line whose program is ``program`` (its basename) or, for
        ``python -m``, module ``module``, starts this engine."""
        ...

    def canonical_flag(self, flag: str) -> str:
        """``flag`` as its table spells it (``--max_num_seqs`` -> ``--max-num-seqs`` where the
        engine accepts both)."""
        ...

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        """Its arguments after the launcher words: modelled fields in the spelling of
        ``config.engine_version``, then ``extra_args`` verbatim."""
        ...

    def positional_words(self, launcher: Sequence[str]) -> int:
        """How many of :meth:`render_flags`' first words belong with the launcher on a unit's
        first ``ExecStart`` line (``vllm serve MODEL``: 1)."""
        ...

    def parse_args(self, launcher: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
        """``ServerConfig`` fields from the words after the launcher; flags it does not model
        are kept, in order, in ``extra_args``. Raises ``ConfigError`` naming the flag."""
        ...

    def check(self, config: ServerConfig, bad_ints: set[str], report: IssueReport) -> None:
        """Add its own rules' findings to ``report`` (the engine-independent checks ran
        already; ``bad_ints`` names the fields that failed them)."""
        ...

    def normalize(
        self, config: ServerConfig, architecture: str | None = None
    ) -> tuple[ServerConfig, list[Issue]]:
        """The configuration as the engine will really run it, and a notice per change it
        makes silently (SGLang's ``draft tokens = steps + 1`` at topk 1)."""
        ...

    def verify_tokens(self, config: ServerConfig) -> int:
        """KV slots one request takes per verify step (0 without speculation): the x of the
        capacity model (``core.search.capacity``)."""
        ...

    def speculation_off(self, config: ServerConfig) -> str | None:
        """Why ``config`` will run without the speculation it names (a draft the engine
        loads and never uses, a speculative type without its draft), in the engine's words;
        ``None``: it speculates, or asks for none. A trial so marked is neither a crash nor
        an ordinary success, and never wins a sweep (``TrialRecord.speculation_off``)."""
        ...

    # -- releases ------------------------------------------------------------------------------
    releases: ReleaseTable
    """Which spellings each of its releases wants (``core.config.releases`` reads it)."""

    def detect_command(self, python: str) -> list[str] | None:
        """The argv that prints its release through the launcher's interpreter ``python``;
        ``None`` when it cannot be asked that way."""
        ...

    def parse_release(self, output: str) -> str | None:
        """The release in :meth:`detect_command`'s output (``None``: not a release number)."""
        ...

    def release_from_server_info(self, body: Any) -> str | None:
        """The release a running server reports in :attr:`Endpoints.server_info`."""
        ...

    def with_release(self, config: ServerConfig, version: str | None) -> ServerConfig:
        """``config`` rendered and checked in ``version``'s names (its own
        ``engine_version`` wins; an engine without release tables returns it as is)."""
        ...

    def release_line(self, version: str | None, source: str = "") -> str:
        """What the editor says about the release whose names and rules it uses."""
        ...

    def help_command(self, launcher: Sequence[str]) -> list[str] | None:
        """The argv that prints the flags the box's binary accepts (its ``--help``, read by
        ``core.config.capabilities``); ``None``: it is not asked."""
        ...

    def fingerprint_command(self, launcher: Sequence[str]) -> str | None:
        """A shell command whose output changes when the binary behind ``launcher`` changes
        (its hash): the ``--help`` answer is cached per fingerprint in the session; ``None``:
        asked once per session."""
        ...

    # -- logs ----------------------------------------------------------------------------------
    log_grammar: LogGrammar
    """What its log says and how to read it."""

    # -- endpoints -----------------------------------------------------------------------------
    endpoints: Endpoints

    # -- editor --------------------------------------------------------------------------------
    def editor_fields(self, version: str | None) -> tuple[EditorField, ...]:
        """The editor's fields, in display order, spelled for release ``version``."""
        ...

    # -- tuning by level -----------------------------------------------------------------------
    def without_speculation(self, config: ServerConfig) -> ServerConfig:
        """``config`` drafting nothing and loading no draft: the baseline a sweep measures
        speculation against (``[sweep] baseline``)."""
        ...

    def schedule(self, picks: Sequence[LevelPick]) -> ServerConfig | Issue:
        """One configuration that drafts, at each pick's batch sizes
        (``core.engine.schedule.level_ranges``), what that pick's configuration drafts — a
        pick without speculation drafting nothing there — or the finding (field, message,
        fix) why this engine cannot say it (the picks differ in more than the draft length,
        it has no per-batch-size draft length). The release's rules are checked by
        :meth:`check` like any configuration's."""
        ...

    def scheduled(self, config: ServerConfig) -> tuple[ScheduleRow, ...] | None:
        """The draft length ``config`` runs per batch-size range when it switches by batch
        size (a schedule), ``None`` when it drafts one length at every size."""
        ...

    def side_files(self, config: ServerConfig) -> tuple[SideFile, ...]:
        """Files ``config``'s command line names that the deploy must put in
        ``config.side_dir`` on the box first (``()``: none)."""
        ...

    def fix_acceptance(self, config: ServerConfig, length: float) -> ServerConfig | Issue:
        """``config`` with its acceptance fixed at ``length`` tokens per verify step (bonus
        included) by the engine's own benchmark knob, or why it has none (for its release)."""
        ...

    def fixed_acceptance(self, config: ServerConfig) -> str | None:
        """How ``config`` fixes its acceptance (``accept length 4.5
        (SGLANG_SIMULATE_ACC_LEN)``), ``None`` when it drafts with the real one. A trial so
        fixed is a what-if: recorded as such, never mixed with measured acceptance."""
        ...

    # -- forecast: a model's own limits ---------------------------------------------------
    def model_files(self, config: ServerConfig) -> tuple[str, ...]:
        """The model files whose own headers tell what ``config`` needs (``()``: none read)."""
        ...

    def model_facts_command(self, python: str, paths: Sequence[str]) -> list[str] | None:
        """The box's command (run with its ``python``) that prints those files' facts
        (``None``: it is not asked)."""
        ...

    def parse_model_facts(self, output: str) -> tuple[ModelFacts, ...]:
        """The facts in :meth:`model_facts_command`'s output."""
        ...

    def forecast_load(self, config: ServerConfig, facts: Sequence[ModelFacts]) -> Forecast | None:
        """Whether ``config`` loads and what it holds, from the models' ``facts`` (``None``:
        nothing to say; the capacity line over earlier trials then predicts)."""
        ...

    def steps_at(self, config: ServerConfig, batch: int) -> int | None:
        """The draft length ``config`` drafts in a decode step of ``batch`` requests, by the
        engine's own routing (0: none); ``None`` when the engine chooses it at run time or
        cannot say."""
        ...

    def edges(self, config: ServerConfig, up_to: int) -> tuple[Edge, ...]:
        """The batch sizes up to ``up_to`` where ``config`` changes how it decodes: where its
        draft length switches (a schedule's edges, as the engine routes a batch) and where
        an engine limit changes it (the largest captured CUDA-graph batch)."""
        ...

    def adaptive_mode(self, config: ServerConfig) -> str | None:
        """How ``config`` chooses its draft length at run time by the engine's own rule
        (``SGLang's adaptive mode (EMA of acceptance), candidates 1/3/7 ...``); ``None`` when
        it does not (a static length, or a schedule fixed per batch size)."""
        ...

    def adaptive_contender(
        self, schedule: ServerConfig, same_candidates: bool
    ) -> ServerConfig | Issue:
        """The engine's own adaptive mode as a contender for ``schedule`` (a configuration
        its :meth:`schedule` made): with the engine's defaults, or (``same_candidates``)
        choosing at run time among the draft lengths the schedule pins per batch size — or
        the finding (field, message, fix) that it has no such mode."""
        ...

    # -- further declarations ------------------------------------------------------------------
    ties: tuple[Tie, ...]
    """Keys it derives from others as it starts (``core.config.ties``: SGLang's draft tokens)."""
    retired_keys: Mapping[str, str]
    """Keys older plans could hold that it has no key for: dropped as read, with the notice."""
    foreign_keys: Mapping[str, str]
    """Other engines' keys a table of its own may hold by mistake: refused with the fix."""
    docker_image: str | None
    """The image its project publishes (``[service] image`` when a plan names none)."""


REQUIRED: tuple[str, ...] = (
    "name",
    "title",
    "default_launcher",
    "option_fields",
    "log_grammar",
    "endpoints",
)
"""What every engine must say itself: who it is, its keys, its log, its HTTP surface."""

OPTIONAL: tuple[str, ...] = tuple(
    sorted(
        name
        for name in {*Engine.__annotations__, *vars(Engine)}
        if not name.startswith("_") and name not in REQUIRED
    )
)
"""Every other slot: answered by ``EngineBase`` from the engine's declarations unless the
engine overrides it."""
