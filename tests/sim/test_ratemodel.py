"""The simulator's model under Poisson arrivals (``sim.physics.ratemodel``): a request decodes
slower as the rate rises, no steady state past what the box can finish, and ``max_rate`` is the
boundary ``predict_rate`` draws for a per-request speed SLO."""

from __future__ import annotations

from specconsole.sim.forecast import calibration_config, predict, resolve_config
from specconsole.sim.physics.ratemodel import max_rate, predict_rate
from specconsole.sim.profile import default_profile_path, load_profile

PROFILE = load_profile(default_profile_path())
CONFIG = calibration_config(PROFILE, 3)
ARGS = resolve_config(CONFIG, PROFILE)


def test_speed_falls_with_the_rate_and_saturates() -> None:
    speeds = [
        predict_rate(ARGS, PROFILE, r, 128, 64, 64).decode_tok_s_per_request  # type: ignore[union-attr]
        for r in (0.5, 4.0, 8.0, 12.0, 16.0)
    ]
    assert speeds == sorted(speeds, reverse=True)
    lone = predict(CONFIG, 1, 128, 64, PROFILE).decode_tok_s_per_request
    assert abs(speeds[0] - lone) / lone < 0.02  # a trickle of traffic: one request alone
    assert predict_rate(ARGS, PROFILE, 500.0, 128, 64, 64) is None  # no steady state


def test_max_rate_is_the_boundary_of_the_slo() -> None:
    rate = max_rate(ARGS, PROFILE, 130.0, 128, 64, 64, high=64.0)
    below = predict_rate(ARGS, PROFILE, rate * 0.99, 128, 64, 64)
    above = predict_rate(ARGS, PROFILE, rate * 1.01, 128, 64, 64)
    assert below is not None and below.decode_tok_s_per_request >= 130.0
    assert above is None or above.decode_tok_s_per_request < 130.0
    assert max_rate(ARGS, PROFILE, 10_000.0, 128, 64, 64) == 0.0  # not even alone
