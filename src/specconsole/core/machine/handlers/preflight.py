"""The pre-flight: everything a plan references that can be checked before the first deploy.

Why (issue 27 #16): a plan whose dataset file was missing deployed and loaded every trial —
about 100 s each on a real box — and then failed each benchmark with "cannot read …", exiting
1 after the whole grid. Whatever can fail before a trial is worth nothing if it only fails after
one: the box's reach, the configurations each trial will render (validated and rendered in the
box's release), the dataset the benchmark reads, the files the plan names on this machine. The
controller gathers these facts once, before the first deploy (:mod:`specconsole.controller
.preflight` does the I/O), and these pure checks decide: a *blocking* finding stops the run at
once with the reason; a warning is said once and the run goes on.

Extending it: a check is a function ``PreflightFacts -> list[Finding]`` named in
:data:`CHECKS`; a fact it needs is a field of :class:`PreflightFacts` (or an entry of
``extra``) that the controller's side gathers. The engine release (issue 27 #17, issue 33 #5)
is one such row: the probe asked the launcher, then the running server; a box that could not
say is told here once, with what trial 1 leaves out (only flags every release accepts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import missing_values
from specconsole.core.launch.unit_secrets import inline_secrets
from specconsole.core.machine import events as ev
from specconsole.core.machine.common import Result, _notice
from specconsole.core.machine.results import validate_config
from specconsole.core.machine.state import ControllerState
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.plans.workload import workload_warning
from specconsole.core.search.staged import planned as staged_configs

__all__ = [
    "CHECKS",
    "Finding",
    "PreflightFacts",
    "PreflightReport",
    "config_problems",
    "planned_configs",
    "run_checks",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the pre-flight found: what, and the fix, in one sentence."""

    check: str
    message: str
    blocking: bool = True


@dataclass(frozen=True, slots=True)
class PreflightFacts:
    """What the controller learnt before the first deploy (None: not gathered)."""

    plan: SweepPlan
    configs: tuple[ServerConfig, ...] = ()
    """The configurations the sweep will deploy first, as the box's release renders them."""
    reach: str | None = None
    """Why the box cannot be reached ('' or None: it can)."""
    dataset: str | None = None
    """Why the benchmark's dataset cannot be read ('' or None: it can)."""
    files: tuple[tuple[str, str], ...] = ()
    """(what, problem) of each file the plan names on this machine that cannot be read."""
    unit_text: str | None = None
    """The box's unit as it is (a systemd box), for what it holds inline."""
    unit_name: str = ""
    target: str = ""
    """How the user names the box (for the command a finding suggests)."""
    release: str = ""
    """Why the box's engine release is not known and what trial 1 therefore leaves out
    ('' when it is known)."""
    extra: Mapping[str, object] = field(default_factory=dict)
    """Facts of further checks (an engine release, a capability list…)."""


@dataclass(frozen=True, slots=True)
class PreflightReport:
    """Every finding, in the order of :data:`CHECKS`."""

    findings: tuple[Finding, ...] = ()

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.blocking)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.blocking)

    def reason(self) -> str:
        """Why the plan cannot run ('' when it can): every blocking finding."""
        found = self.blocking
        if not found:
            return ""
        head = "the plan cannot run" if len(found) == 1 else f"{len(found)} problems"
        return f"pre-flight: {head}: " + "; ".join(f"{f.check}: {f.message}" for f in found)


def planned_configs(plan: SweepPlan) -> list[ServerConfig]:
    """The configurations the plan deploys: a ``staged`` plan's stages, else its grid, and
    the baseline when the plan measures one (a schedule is derived from the results)."""
    configs = staged_configs(plan) if plan.strategy is StrategyKind.STAGED else plan.grid()
    if plan.wants_baseline:
        from specconsole.core.search.per_level import baseline_config

        configs = [*configs, baseline_config(plan)]
    return configs


def config_problems(
    plan: SweepPlan,
    configs: Sequence[ServerConfig] | None = None,
    label: Callable[[ServerConfig], str] | None = None,
) -> list[str]:
    """Validation errors of the configurations the plan will deploy (default:
    :func:`planned_configs`), each labelled (``label``, default the swept values). An
    ``optimize`` space only needs one valid configuration: the search never proposes an
    invalid one."""
    name = label or (lambda config: _label(plan, config))
    problems: list[str] = []
    for config in planned_configs(plan) if configs is None else configs:
        outcome = validate_config(config)
        if isinstance(outcome, ev.ConfigInvalid):
            problems += [f"{name(config)}: {error}" for error in outcome.errors]
        elif plan.strategy is StrategyKind.OPTIMIZE:
            return []  # the search skips the invalid corners of its space by itself
    if plan.strategy is StrategyKind.OPTIMIZE:
        return ["no configuration of [sweep.axes] is valid", *problems[:5]]
    return problems


def _label(plan: SweepPlan, config: ServerConfig) -> str:
    """The swept values that name a configuration (``speculative_num_steps=10``)."""
    named = [f"{name}={getattr(config, name, '?')}" for name, _values in plan.axes]
    return " ".join(named) or "the base configuration"


def check_reach(facts: PreflightFacts) -> list[Finding]:
    if facts.reach:
        return [Finding("box", f"cannot be reached: {facts.reach}")]
    return []


def check_configurations(facts: PreflightFacts) -> list[Finding]:
    """Each configuration the sweep deploys validates and renders (in the box's release)."""
    configs = facts.configs or None
    out = [Finding("configuration", problem) for problem in config_problems(facts.plan, configs)]
    missing = missing_values(facts.plan.base)
    if missing:
        out.append(
            Finding(
                "secrets",
                f"the values of {', '.join(missing)} are not known here (secrets are never "
                f"stored); fix: export {missing[0]}=... in this shell",
            )
        )
    return out


def check_dataset(facts: PreflightFacts) -> list[Finding]:
    if facts.dataset:
        return [Finding("dataset", facts.dataset)]
    return []


def check_files(facts: PreflightFacts) -> list[Finding]:
    return [Finding("file", f"{what}: {problem}") for what, problem in facts.files]


def check_inline_secrets(facts: PreflightFacts) -> list[Finding]:
    """A secret the user's unit holds inline: said once, never moved without consent."""
    if not facts.unit_text:
        return []
    found = inline_secrets(facts.unit_text, facts.plan.profile.service.secret_env)
    if not found:
        return []
    names = ", ".join(dict.fromkeys(secret.name for secret in found))
    target = facts.target or "HOST"
    return [
        Finding(
            "unit",
            f"{facts.unit_name or 'the unit'} holds {names} inline: the unit file is "
            "world-readable and each deploy's backup copies it; fix: specconsole move-secrets "
            f"{target} moves it to a 0600 EnvironmentFile (it shows the diff and asks first)",
            blocking=False,
        )
    ]


def check_release(facts: PreflightFacts) -> list[Finding]:
    """The release renders every flag whose name changed; unknown, trial 1 gets only the
    flags every release accepts (not blocking: its server reports the release)."""
    return [Finding("release", facts.release, blocking=False)] if facts.release else []


def check_flags(facts: PreflightFacts) -> list[Finding]:
    """The box's binary could not say which flags it accepts (``controller.probe.flagcheck``): not
    blocking — a flag it refuses is a configuration finding when it can say."""
    text = facts.extra.get("flags")
    return [Finding("flags", str(text), blocking=False)] if text else []


def check_gpus(facts: PreflightFacts) -> list[Finding]:
    """GPU memory another process holds before the first deploy (``core.boxfacts``): said,
    never blocking — the memory figures include it."""
    text = facts.extra.get("gpus")
    return [Finding("gpus", str(text), blocking=False)] if text else []


def check_notices(facts: PreflightFacts) -> list[Finding]:
    """What reading the plan noticed (a key under its former name): said, never blocking."""
    return [
        Finding("plan", f"{n.field}: {n.message} Fix: {n.fix}", blocking=False)
        for n in facts.plan.notices
    ]


def check_workload(facts: PreflightFacts) -> list[Finding]:
    """A speculative sweep on random tokens or bare, template-less text: its acceptance
    will read low (``core.plans.workload``); said, never blocking."""
    text = workload_warning(facts.plan)
    return [Finding("workload", text, blocking=False)] if text else []


def on_preflight(state: ControllerState, event: ev.Event) -> Result:
    """The findings, said once as a notice: an error when the plan cannot run."""
    assert isinstance(event, ev.PreflightChecked)
    if not event.findings:
        return state, ()
    level = "error" if event.blocking else "warning"
    text = "pre-flight: " + "; ".join(event.findings)
    return _notice(state, level, text, event.at), ()


Check = Callable[[PreflightFacts], list[Finding]]

CHECKS: tuple[tuple[str, Check], ...] = (
    ("reach", check_reach),
    ("configurations", check_configurations),
    ("dataset", check_dataset),
    ("files", check_files),
    ("inline secrets", check_inline_secrets),
    ("release", check_release),
    ("flags", check_flags),
    ("gpus", check_gpus),
    ("workload", check_workload),
    ("plan notices", check_notices),
)
"""The pre-flight's checks, in the order their findings are told."""


def run_checks(
    facts: PreflightFacts, checks: Sequence[tuple[str, Check]] = CHECKS
) -> PreflightReport:
    """Every check over ``facts``."""
    found: list[Finding] = []
    for _name, check in checks:
        found.extend(check(facts))
    return PreflightReport(tuple(found))
