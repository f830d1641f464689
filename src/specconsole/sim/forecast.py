"""What the simulated box would do with a deployed configuration, without starting it.

Why its own module: the physics (:mod:`specconsole.sim.physics`) answers for a resolved
launch and never asks which engine resolved it; a deployed
:class:`~specconsole.core.config.model.ServerConfig` names its engine, so it is resolved here
the way that engine's face resolves the command line it would be deployed with — in the
environment and with the side files it would be deployed with — and then handed to the
physics. This sits above the faces (it finds them in :mod:`specconsole.sim.facetable`), so the
physics stays below them. Pure: no I/O beyond reading a profile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from specconsole.core.config.model import ServerConfig
from specconsole.sim.facetable import DEFAULT_FACE, face_for
from specconsole.sim.physics import model
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import (
    CALIBRATION_LADDER,
    DEFAULT_INPUT_LEN,
    DEFAULT_OUTPUT_LEN,
    Prediction,
)
from specconsole.sim.physics.textkind import TextKind
from specconsole.sim.profile import Profile, default_profile_path, load_profile_cached

__all__ = [
    "calibration_config",
    "launch_context",
    "peak_aggregate",
    "predict",
    "profile_for",
    "resolve_config",
]


def launch_context(config: ServerConfig) -> tuple[dict[str, str], Callable[[str], str | None]]:
    """What a deployed ``config`` gives the server besides its flags: its environment as
    deployed (normalized: a what-if key as its variable) and its side files by name."""
    from specconsole.core.config.validation import normalized
    from specconsole.core.engine.registry import engine_for

    files = {f.name: f.text for f in engine_for(config).side_files(config)}
    env = dict(normalized(config)[0].env)
    return env, lambda path: files.get(path.rsplit("/")[-1])


def profile_for(config: ServerConfig | ResolvedArgs) -> Profile:
    """The profile a configuration would run with: its ``--sim-profile`` flag (in
    ``extra_args``) if it has one, else its engine face's packaged profile (the default
    profile for an already resolved launch)."""
    if isinstance(config, ResolvedArgs):
        return load_profile_cached(str(default_profile_path()))
    face = face_for(config.engine)
    parsed = face.parse(face.words(config))
    return load_profile_cached(parsed.values.get("sim_profile") or face.default_profile())


def resolve_config(config: ServerConfig | ResolvedArgs, profile: Profile) -> ResolvedArgs:
    """``config`` resolved as its engine's face resolves the argv it would be deployed with,
    in the environment and with the side files it would be deployed with (raises the face's
    ``SimArgError`` for what the engine would refuse)."""
    if isinstance(config, ResolvedArgs):
        return config
    face = face_for(config.engine)
    parsed = face.parse(face.words(config))
    parsed = face.context(parsed, *launch_context(config))
    return face.resolve(parsed, face.with_release(parsed, profile))


def predict(
    config: ServerConfig | ResolvedArgs,
    concurrency: int,
    input_len: int = DEFAULT_INPUT_LEN,
    output_len: int = DEFAULT_OUTPUT_LEN,
    profile: Profile | None = None,
    kind: TextKind = TextKind.CHAT,
) -> Prediction:
    """:func:`specconsole.sim.physics.model.predict` for a deployed configuration (resolved
    by its face; ``profile`` None: the one it would run with)."""
    if profile is None:
        profile = profile_for(config)
    args = resolve_config(config, profile)
    return model.predict(args, concurrency, input_len, output_len, profile, kind)


def peak_aggregate(
    config: ServerConfig | ResolvedArgs,
    ladder: tuple[int, ...] = CALIBRATION_LADDER,
    input_len: int = DEFAULT_INPUT_LEN,
    output_len: int = DEFAULT_OUTPUT_LEN,
    profile: Profile | None = None,
) -> tuple[int, float]:
    """The best (concurrency, aggregate tok/s) over a ladder, as the sweep's peak."""
    profile = profile if profile is not None else profile_for(config)
    args = resolve_config(config, profile)
    best = (ladder[0], 0.0)
    for c in ladder:
        p = model.predict(args, c, input_len, output_len, profile)
        if p.aggregate_tok_s > best[1]:
            best = (c, p.aggregate_tok_s)
    return best


def calibration_config(
    profile: Profile, steps: int, engine: str = DEFAULT_FACE, **overrides: object
) -> ServerConfig:
    """The configuration ``engine``'s calibration sweep launched at draft length ``steps``
    (the profile's ``[reference_launch]``), with ``overrides`` on top."""
    config = face_for(engine).calibration(profile, steps)
    return dataclasses.replace(config, **overrides) if overrides else config  # type: ignore[arg-type]
